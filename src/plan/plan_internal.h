/* plan_internal.h - the tp_memgraph record (internal to src/plan, not to the verifier). */
#ifndef TP__PLAN_INTERNAL_H
#define TP__PLAN_INTERNAL_H

#include "turnip/plan.h"
#include "io/util.h"

/* the MemGraph's JSON format name, as the writer, the reader and dot see it (the verifier
 * spells it on its own) */
#define TP__MG_FORMAT "turnip.memgraph/1"

typedef struct tp__mv {
    uint8_t kind;      /* tp_mkind */
    uint8_t space;     /* tp_space of the write */
    int16_t device;
    uint32_t task;
    uint32_t inplace;  /* kernels (and accumulate members: 1): 1 + index of the read overwritten in place, 0: none */
    int32_t group;     /* accumulate and join: their group; -1 otherwise */
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

/* Sum-into (sumlower.c): what the planner needs to know about the rewritten TaskGraph it plans
 * when sums are lowered (NULL when none is): per vertex of that graph, `hold` marks the
 * intermediate values of an accumulation chain (never evicted, moved or freed while the group
 * is open), `chain` the chain's in-place adds (their in-place read is never used to prune an
 * implied dependency: that edge disappears when the chain becomes a group). */
typedef struct tp__lower_view {
    const uint8_t *hold, *chain;
} tp__lower_view;

/* The planner proper (planner.c): plans g under opts (whose sum_into it ignores) with the
 * chain marks of lv (NULL: none). */
tp_status tp__plan_graph(const tp_graph *g, const tp_plan_opts *opts, const tp__lower_view *lv, tp_memgraph **out,
                         tp_error *err);
/* Sum-into (sumlower.c, which also holds tp_plan, the entry that calls it or tp__plan_graph):
 * when sums marked "accumulate" are lowered: rewrites g, plans
 * the rewrite, converts the plan back onto g (groups), falls back to plain planning when the
 * rewrite is infeasible. *done is 0 (and nothing else happens) when g has no sum to lower.
 * marked: tp__count_marked_sums(g), which the caller has counted. */
tp_status tp__plan_sum_into(const tp_graph *g, const tp_plan_opts *opts, uint32_t marked, tp_memgraph **out, int *done,
                            tp_error *err);
/* Marked sums ("op": "sum", "attrs": {"accumulate": true}) in g. */
uint32_t tp__count_marked_sums(const tp_graph *g);

/* The in-place rule (bounds.c), one for the planner's setup and tp_plan_bounds: kernel t, whose
 * argument k is the one it may overwrite (k = tp_graph_inplace(g, t) >= 0), overwrites it when t
 * reads it once, it is not an output (is_out, by vertex) nor kept unless pinned, it has t's bytes,
 * and t is its last reader along the order (last). TP__INPLACE_OK, or the first reason not. */
typedef enum {
    TP__INPLACE_OK,
    TP__INPLACE_READ_TWICE, /* also another argument of t */
    TP__INPLACE_OUTPUT,
    TP__INPLACE_KEPT,       /* kept and not pinned: its region outlives the run */
    TP__INPLACE_SIZE,       /* of another size than t's output */
    TP__INPLACE_READ_AFTER, /* read after t along the order */
} tp__inplace_why;
tp__inplace_why tp__inplace_rule(const tp_graph *g, uint32_t t, int k, const uint8_t *is_out, int last);
/* Bytes of t's distinct inputs; marks them with `stamp` in mark[] (a per-vertex array). */
void tp__vertex_need(const tp_graph *g, uint32_t t, uint32_t *mark, uint32_t stamp, uint64_t *in_bytes);

#endif
