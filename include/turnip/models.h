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
 * Megatron-style over `devices`: per layer and device a QKV projection, attention split into
 * `blocks` query blocks (scores, softmax, weighted sum), an output projection, an MLP, and
 * partial sums reduced on device 0 and broadcast back with transfers. Weights are inputs. */
typedef struct tp_layered_opts {
    int devices;     /* 1..TP_MAX_DEVICES */
    int layers;      /* >= 1 */
    int blocks;      /* attention query blocks per device, >= 1 */
    int64_t seq;     /* tokens */
    int64_t hidden;  /* model width */
    int dtype_bytes; /* 2 for 16-bit */
} tp_layered_opts;

void tp_layered_opts_init(tp_layered_opts *o);
/* Vertices the graph will have (to size a graph before building it). */
uint64_t tp_layered_vertices(const tp_layered_opts *o);
tp_status tp_model_layered(const tp_layered_opts *o, tp_graph **out, tp_error *err);

#ifdef __cplusplus
}
#endif
#endif
