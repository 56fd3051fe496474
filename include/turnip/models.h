/* turnip/models.h - workload builders that produce TaskGraphs. */
#ifndef TURNIP_MODELS_H
#define TURNIP_MODELS_H

#include <stdint.h>
#include "turnip/error.h"
#include "turnip/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A transformer-like layered graph of opaque kernels (sizes and flops only), decomposed
 * over `devices` the way the paper decomposes attention: per layer and device, `heads`
 * attention heads as parallel lanes (q, k, v projections; T x T scores; softmax; weighted
 * sum; output projection) accumulated in a chain, then an MLP in `chunks` column chunks,
 * each stage emitted for all lanes before the next (the order the paper feeds its planner,
 * so decomposed contractions sit together in V). Partial sums are reduced on device 0 and
 * broadcast back with transfers. Weights are inputs. */
typedef struct tp_layered_opts {
    int devices;      /* 1..TP_MAX_DEVICES */
    int layers;       /* >= 1 */
    int heads;        /* attention heads per device, >= 1 */
    int chunks;       /* MLP column chunks per device, >= 1 */
    int64_t seq;      /* tokens T */
    int64_t head_dim; /* hidden size is devices * heads * head_dim */
    int dtype_bytes;  /* 2 for 16-bit */
} tp_layered_opts;

void tp_layered_opts_init(tp_layered_opts *o);
/* Vertices the graph will have. */
uint64_t tp_layered_vertices(const tp_layered_opts *o);
tp_status tp_model_layered(const tp_layered_opts *o, tp_graph **out, tp_error *err);

#ifdef __cplusplus
}
#endif
#endif
