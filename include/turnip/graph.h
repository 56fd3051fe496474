/* turnip/graph.h - the TaskGraph: what the user wants computed.
 *
 * A TaskGraph is a DAG whose vertices are input tensors (on the host at the start, or resident),
 * kernel calls pinned to a device, and device-to-device transfers. It is built with the
 * tp_graph_add_* calls or read from "turnip.taskgraph/1" JSON (docs/formats.md), then
 * finalized: tp_graph_finalize validates it and derives sizes and consumer lists. Every
 * vertex is addressed by its index, 0..n-1, in the order it was added (file order for JSON).
 *
 * Ownership: a tp_graph owns all of its strings and arrays; pointers returned by the
 * accessors stay valid until tp_graph_free. */
#ifndef TURNIP_GRAPH_H
#define TURNIP_GRAPH_H

#include <stdint.h>
#include <stdio.h>
#include "turnip/dtype.h" /* tp_dtype, TP_MAX_DIMS */
#include "turnip/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most devices a graph spans (graph layer; plans and runs size per-device arrays by it). */
#define TP_MAX_DEVICES 64

typedef enum tp_vkind { TP_V_INPUT = 0, TP_V_KERNEL = 1, TP_V_TRANSFER = 2 } tp_vkind;

/* Read-only view of one vertex; owned by the graph. */
typedef struct tp_vertex {
    const char *id;
    tp_vkind kind;
    int device;          /* where it runs / where an input is consumed / transfer destination */
    const char *op;      /* kernels: operation name ("opaque" when none given); else NULL */
    tp_dtype dtype;      /* TP_DT_NONE when only bytes were given */
    int ndim;            /* -1 when no shape was given */
    int64_t shape[TP_MAX_DIMS];
    uint64_t bytes;      /* size of the value it produces (after finalize) */
    double flops;        /* 0 when not given */
    uint32_t ninputs;
    const uint32_t *inputs; /* indices of producers, in argument order (may repeat) */
    const char *attrs_json; /* kernels: the "attrs" object as compact JSON, or NULL */
} tp_vertex;

typedef struct tp_graph tp_graph;

/* New empty graph over `ndevices` devices (1..TP_MAX_DEVICES). Caller frees. NULL on OOM. */
tp_graph *tp_graph_new(int ndevices);
void tp_graph_free(tp_graph *g);

/* Builders. `id` is copied. Sizes: give bytes, or dtype and shape (ndim >= 0), or both
 * (then they must agree; checked by finalize). Returns the new vertex index in *out.
 * Inputs are indices of vertices added earlier. */
tp_status tp_graph_add_input(tp_graph *g, const char *id, int device, tp_dtype dtype, int ndim,
                             const int64_t *shape, uint64_t bytes, uint32_t *out, tp_error *err);
tp_status tp_graph_add_kernel(tp_graph *g, const char *id, int device, const char *op,
                              uint32_t ninputs, const uint32_t *inputs, tp_dtype dtype, int ndim,
                              const int64_t *shape, uint64_t bytes, const char *attrs_json,
                              double flops, uint32_t *out, tp_error *err);
tp_status tp_graph_add_transfer(tp_graph *g, const char *id, int device, uint32_t input,
                                uint32_t *out, tp_error *err);
tp_status tp_graph_add_output(tp_graph *g, uint32_t vertex, tp_error *err);

/* Validates (devices, sizes, cycles, placement rules) and derives sizes and consumers.
 * Must be called once after building and before any use below. */
tp_status tp_graph_finalize(tp_graph *g, tp_error *err);

int tp_graph_devices(const tp_graph *g);
uint32_t tp_graph_size(const tp_graph *g);
const tp_vertex *tp_graph_vertex(const tp_graph *g, uint32_t i);
/* Index of the vertex with this id, or -1. */
int64_t tp_graph_find(const tp_graph *g, const char *id);
/* Distinct consumers of vertex i, in increasing index order; *n gets the count. */
const uint32_t *tp_graph_consumers(const tp_graph *g, uint32_t i, uint32_t *n);
/* Read-only views for whole-graph passes (the planner's, with no call per vertex): all n
 * vertex views as one array indexed by vertex, and the consumer lists as one CSR, the
 * consumers of i being cons[off[i] .. off[i+1]-1] (off has n+1 entries). Owned by the graph
 * (after finalize), valid until tp_graph_free. */
const tp_vertex *tp_graph_vertices(const tp_graph *g);
void tp_graph_consumer_csr(const tp_graph *g, const uint32_t **off, const uint32_t **cons);
uint32_t tp_graph_num_outputs(const tp_graph *g);
const uint32_t *tp_graph_outputs(const tp_graph *g);
/* The device a vertex's inputs are read on: its own device, or the source device of a
 * transfer. */
int tp_graph_read_device(const tp_graph *g, uint32_t i);
/* 1 when finalized graphs a and b differ at most in what no plan depends on: kernel attributes
 * (except a sum's, which sum-into reads) and flops. Everything else must be equal: devices,
 * vertices in order (id, kind, device, op, dtype, shape, bytes, inputs), outputs, the keep list,
 * every session declaration (resident offsets and flags, in-place arguments, host placements)
 * and the reserved host bytes. A plan of a is then a plan of b (tp_memgraph_rebind). 0 for
 * NULL or unfinalized graphs. */
int tp_graph_same_plan(const tp_graph *a, const tp_graph *b);

/* Sessions (issue 11). All optional; defaults: not resident, not in place, not kept. */
/* 1 when input vertex v is declared resident: on its device at [*offset, *offset + bytes) when the
 * plan starts; *host_copy 1 when the host also holds a valid copy (default). */
int tp_graph_resident(const tp_graph *g, uint32_t v, uint64_t *offset, int *host_copy);
/* Kernel v's declared in-place argument (0 <= K < ninputs), or -1. */
int tp_graph_inplace(const tp_graph *g, uint32_t v);
/* 1 when v is in the top-level "keep" list. */
int tp_graph_keep(const tp_graph *g, uint32_t v);
/* Setters, returning TP_ERR_ARG on misuse with err filled. inplace only before finalize;
 * resident and keep also after it (a session plans the same graph again with what the last run
 * left on the devices; tp_graph_clear_resident undeclares every resident input first), then
 * checked at once (kind, overflow, alignment; overlaps between resident regions are checked by
 * the planner). */
tp_status tp_graph_set_resident(tp_graph *g, uint32_t v, uint64_t offset, int host_copy, tp_error *err);
tp_status tp_graph_set_inplace(tp_graph *g, uint32_t v, int k, tp_error *err);
tp_status tp_graph_set_keep(tp_graph *g, uint32_t v, tp_error *err);
void tp_graph_clear_resident(tp_graph *g);
/* Cache tensors (issue 12): flags of a resident input, set after tp_graph_set_resident
 * (tp_graph_clear_resident clears them). LOAD: its bytes are not on the device yet; the plan
 * loads them from the input's host copy into exactly its region before any use (the host copy
 * must be valid). PIN: it holds its region through the whole plan and after it: never evicted,
 * moved or freed, whether or not anything reads it (a kernel declared in place on it takes the
 * region over, and that value is pinned in turn: a KV-cache append). A pinned input needs no
 * "keep". TP_ERR_ARG when v is not declared resident, LOAD without a host copy, or unknown bits. */
#define TP_RESIDENT_LOAD 1u
#define TP_RESIDENT_PIN 2u
tp_status tp_graph_set_resident_flags(tp_graph *g, uint32_t v, unsigned flags, tp_error *err);
/* The flags of a resident input (0 when none or not resident). */
unsigned tp_graph_resident_flags(const tp_graph *g, uint32_t v);
/* Before finalize the setters check only that v exists, k >= 0 and that v is not
 * kept twice; tp_graph_finalize checks the rest (TP_ERR_INVALID, naming the vertex): resident
 * only on inputs, offset a multiple of the alignment of the input's bytes (docs/formats.md)
 * and offset + bytes within 64 bits, no two resident regions overlapping on one device;
 * in-place only on kernels, K < ninputs, input K of the kernel's size and device and not also
 * another argument; kept vertices outputs or inputs. */

/* Host-placed inputs (zero-copy loads, issue 12). Host bytes [0, R) of the memory a plan runs
 * with (a session's host block, tp_session_host) are the caller's, R = tp_graph_host_reserved: the
 * plan puts nothing there. An input declared there with tp_graph_set_host has its host copy at
 * [offset, offset + bytes) before the run, written by the caller (not through tp_exec_write), and
 * the plan reads or loads it from there; the caller keeps it unchanged while a plan runs. Every
 * other host region of the plan (inputs not declared there, offloads) lies at or above R.
 * Setters return TP_ERR_ARG for a vertex that does not exist, for R or an offset above 2^63-1
 * (what JSON carries), and for tp_graph_set_resident without a host copy on a placed input;
 * tp_graph_finalize checks the rest (TP_ERR_INVALID, naming the vertex): inputs only, not
 * resident without a host copy, offset a multiple of the alignment of the input's bytes,
 * offset + bytes within R, no two overlapping. A placement set after finalize is checked at once
 * against the R of that moment; overlaps, and placements that a later, smaller R leaves outside,
 * are refused by the planner (TP_ERR_ARG) and the verifier. tp_graph_clear_resident keeps
 * placements and R. JSON: top-level "host_reserved": R, per input "host": offset. */
tp_status tp_graph_set_host_reserved(tp_graph *g, uint64_t bytes, tp_error *err);
uint64_t tp_graph_host_reserved(const tp_graph *g);
tp_status tp_graph_set_host(tp_graph *g, uint32_t v, uint64_t offset, tp_error *err);
/* 1 and *offset (may be NULL) when input v's host copy is declared at a caller's offset, else 0. */
int tp_graph_host(const tp_graph *g, uint32_t v, uint64_t *offset);

/* JSON ("turnip.taskgraph/1"). `name` names the source in error messages. */
tp_status tp_graph_read_file(const char *path, tp_graph **out, tp_error *err);
tp_status tp_graph_read_string(const char *text, const char *name, tp_graph **out, tp_error *err);
tp_status tp_graph_write(const tp_graph *g, FILE *f, tp_error *err);

/* Serial orders V over all vertices (inputs included; they are where they were needed). */
typedef enum tp_order {
    TP_ORDER_TOPO = 0, /* Kahn's algorithm, smallest index first: file order when it is one */
    TP_ORDER_DFS = 1,  /* depth-first from the sinks: each operand finished before the next */
    TP_ORDER_GREEDY = 2 /* among ready vertices, the smallest memory delta first */
} tp_order;
#define TP_ORDER_DEFAULT TP_ORDER_DFS
const char *tp_order_name(tp_order o);
tp_status tp_order_parse(const char *name, tp_order *out);
/* Fills out[0..n-1] with a topological order of all n vertices. */
tp_status tp_graph_order(const tp_graph *g, tp_order o, uint32_t *out, tp_error *err);

#ifdef __cplusplus
}
#endif
#endif
