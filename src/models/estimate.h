/* estimate.h - what one vertex and one edge of a built graph cost in host memory (internal to
 * the models layer), shared by the builders' estimates (tp_layered_estimate,
 * tp_llama_estimate).
 *
 * Measured (peak RSS over vertices and edges, turnip llama --no-data and turnip gen layered,
 * x86-64 glibc) and rounded down, so an estimate errs low and never refuses a build the
 * machine could hold: the TaskGraph's record, id, inputs and attrs per vertex and its
 * consumer lists per edge; the planner's arrays and the MemGraph on top. */
#ifndef TP__MODELS_ESTIMATE_H
#define TP__MODELS_ESTIMATE_H

#include "turnip/models.h"

#define TP__GRAPH_VERTEX_BYTES 200.0 /* 240 before ids and input lists moved to an arena (issue 15): 217-232 measured with edges */
#define TP__GRAPH_EDGE_BYTES 8.0
#define TP__PLAN_VERTEX_BYTES 140.0
#define TP__PLAN_EDGE_BYTES 8.0

/* fills e's graph_bytes and plan_bytes from its vertices and edges, plus `extra` bytes the
 * builder allocates itself */
void tp__estimate_bytes(tp_build_estimate *e, double extra);

#endif
