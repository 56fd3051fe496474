/* plan_internal.h - the tp_memgraph record (internal to src/plan, not to the verifier). */
#ifndef TP__PLAN_INTERNAL_H
#define TP__PLAN_INTERNAL_H

#include "turnip/plan.h"
#include "io/util.h"

typedef struct tp__mv {
    uint8_t kind;      /* tp_mkind */
    uint8_t space;     /* tp_space of the write */
    int16_t device;
    uint32_t task;
    uint32_t inplace;  /* kernels: 1 + index of the read overwritten in place, 0: none */
    uint64_t offset, bytes;
    uint32_t reads_off, nreads; /* into mg->reads */
    uint32_t mdeps_off, nmdeps; /* memory deps, into mg->mdeps */
} tp__mv;

_Static_assert(TP_MAX_DEVICES <= INT16_MAX, "tp__mv.device holds any device index");

struct tp_memgraph {
    const tp_graph *g; /* borrowed: must outlive the MemGraph */
    int ndevices;
    uint64_t cap[TP_MAX_DEVICES];
    uint64_t host_bytes;
    tp__mv *v;
    size_t n, capv;
    uint32_t *reads;
    size_t nreads, capreads;
    uint32_t *mdeps;
    size_t nmdeps, capmdeps;
    uint32_t *deps_off, *deps; /* final CSR: reads' producers and memory deps, sorted */
    uint32_t *outputs;         /* per TaskGraph output: MemGraph vertex holding it */
    uint32_t *kept;            /* kept values on a device at the end (NULL: none) */
    uint32_t nkept;
    uint32_t *order_pos;       /* per TaskGraph vertex: position in V */
    tp_plan_stats counters;    /* the planner's own counts (loads, offloads, peaks, time) */
};

/* Bytes of t's distinct inputs; marks them with `stamp` in mark[] (a per-vertex array). */
void tp__vertex_need(const tp_graph *g, uint32_t t, uint32_t *mark, uint32_t stamp, uint64_t *in_bytes);

#endif
