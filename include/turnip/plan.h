/* turnip/plan.h - compiling a TaskGraph into a MemGraph, checking it, describing it.
 *
 * tp_plan runs BUILDMEMGRAPH (docs/planner.md): a simulated execution along a serial order V
 * with a simulated allocator per device and one for host memory, an allocation horizon that
 * runs ahead of the execution horizon as far as memory allows, and offload/reload vertices
 * and memory-dependency edges that make every execution order race-free. Every tensor gets
 * a fixed (space, device, offset, bytes); nothing is allocated when the plan runs.
 *
 * tp_verify checks a MemGraph given as "turnip.memgraph/1" JSON against its TaskGraph. It
 * shares no code with the planner: it reads the JSON itself and re-derives everything. */
#ifndef TURNIP_PLAN_H
#define TURNIP_PLAN_H

#include <stdint.h>
#include <stdio.h>
#include "turnip/error.h"
#include "turnip/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tp_mkind {
    TP_M_INPUT = 0,
    TP_M_KERNEL,
    TP_M_TRANSFER,
    TP_M_OFFLOAD,
    TP_M_RELOAD,
    TP_M_RESIDENT, /* a resident input already on its device at the start (sessions) */
    TP_M_ACCUMULATE, /* sum-into: adds reads[1] into its group's region (reads[0] is the init) */
    TP_M_JOIN        /* sum-into: no-op after every member of its group; producer of the sum */
} tp_mkind;
const char *tp_mkind_name(tp_mkind k);

typedef enum tp_space { TP_SPACE_HOST = 0, TP_SPACE_DEVICE = 1 } tp_space;

typedef struct tp_region {
    tp_space space;
    int device; /* -1 for host */
    uint64_t offset;
    uint64_t bytes;
} tp_region;

/* Read-only view of one MemGraph vertex; arrays are owned by the MemGraph. */
typedef struct tp_mvertex {
    tp_mkind kind;
    uint32_t task;   /* TaskGraph vertex index whose value it produces or moves */
    int device;      /* kernels/transfers: where it runs; offload: source; reload: destination;
                        inputs: -1 */
    tp_region write;
    uint32_t nreads;
    const uint32_t *reads; /* producers of each region read, in argument order; the region
                              read is the producer's `write` */
    uint32_t ndeps;
    const uint32_t *deps;  /* every incoming edge, data and memory, sorted, no repeats */
    int inplace;           /* kernels: index into reads whose region this one overwrites, or -1;
                              accumulate: 0 (it adds into the region of reads[0], the init's) */
    int32_t group;         /* accumulate and join: their group (0, 1, ...), -1 for every other kind */
} tp_mvertex;

typedef struct tp_memgraph tp_memgraph;

/* A directed eviction (weight-offload strategies, docs/weight-offload.md "Inside turnip"): once
 * the execution horizon has run TaskGraph vertex `after` (a kernel or transfer), value `value`
 * leaves its device if it is there, is not pinned, and is still needed later or is an output or
 * kept: dropped when its host copy is valid, else offloaded. Its next use reloads it as early as
 * memory allows (the allocation horizon: a prefetch). A value the allocation horizon has already
 * placed for a position at or before its own is left where it is (its prefetch has happened). */
typedef struct tp_plan_evict {
    uint32_t value, after; /* TaskGraph vertex indices */
} tp_plan_evict;

typedef struct tp_plan_opts {
    int ndevices;                /* must equal the graph's */
    uint64_t device_mem[TP_MAX_DEVICES];
    uint64_t host_mem;           /* 0: unlimited (the plan reports what it used) */
    tp_order order;
    int sum_into;                /* 1 (default): lower sums marked "accumulate": true into accumulate
                                    groups (docs/planner.md "Sum-into"); 0: plan every sum as a kernel */
    uint32_t evict_budget;       /* 0 (default): each eviction window is the best (docs/planner.md
                                    "The allocator's cost"), while the full scans that finding it can take
                                    stay within their credit (TP_PLAN_SCAN_BASE, TP_PLAN_SCAN_CREDIT);
                                    past it, as with a budget of TP_PLAN_WINDOW_WALK. TP_EVICT_EXACT:
                                    always the best (quadratic at worst). N in 1..UINT32_MAX-1: a search
                                    that walks N blocks by next use without a fit evicts the furthest
                                    first (Belady) and searches again: bounded time, a different plan */
    const tp_plan_evict *evictions; /* borrowed, may be NULL: directed evictions, any order; with
                                       sums to lower (sum_into and marked sums) TP_ERR_ARG */
    uint32_t nevictions;
    uint64_t pack_below;         /* 0 (default): every device allocation goes to the free run whose
                                    bytes were released longest ago (fewest waits on recent
                                    kernels). N > 0: an allocation of fewer than N bytes (an
                                    activation, a small tensor) goes to the lowest address that
                                    holds it instead, one of N bytes or more to the highest, so
                                    small values pack at the bottom, large ones stack down from
                                    the top and the runs between stay whole: room for two large
                                    tensors at once where a plan streams them (docs/planner.md
                                    "Packing small values") */
} tp_plan_opts;

/* tp_plan_opts.evict_budget: the best eviction window at every step, whatever it costs. */
#define TP_EVICT_EXACT UINT32_MAX
/* Blocks the default eviction search may scan: TP_PLAN_SCAN_BASE, plus TP_PLAN_SCAN_CREDIT per
 * position of the serial order planned so far. What keeps planning near-linear where the best
 * window is costly to find, while small plans (a few milliseconds of scans) always get it. */
#define TP_PLAN_SCAN_CREDIT 8
#define TP_PLAN_SCAN_BASE (1u << 22)
/* Blocks the default search walks by next use before a scan (or, past the credit, Belady). */
#define TP_PLAN_WINDOW_WALK 64

/* Fills opts with defaults: every device `device_mem`, host unlimited, default order, sum_into. */
void tp_plan_opts_init(tp_plan_opts *opts, int ndevices, uint64_t device_mem);

/* Plans g (finalized) under opts. On success *out is a new MemGraph the caller frees.
 * TP_ERR_INFEASIBLE names the vertex, bytes needed and bytes available. */
tp_status tp_plan(const tp_graph *g, const tp_plan_opts *opts, tp_memgraph **out, tp_error *err);
void tp_memgraph_free(tp_memgraph *mg);

uint32_t tp_memgraph_size(const tp_memgraph *mg);
const tp_graph *tp_memgraph_taskgraph(const tp_memgraph *mg);
/* Plan reuse: points mg at g in place of the TaskGraph it was planned from (which must still be
 * alive for the check; the caller may free it afterwards), so mg runs g's kernels with g's
 * attributes. Only where tp_graph_same_plan(that graph, g) holds, so that mg is the plan
 * tp_plan would make of g under the same options: else TP_ERR_ARG, mg unchanged. */
tp_status tp_memgraph_rebind(tp_memgraph *mg, const tp_graph *g, tp_error *err);
void tp_memgraph_vertex(const tp_memgraph *mg, uint32_t i, tp_mvertex *out);
/* The work of kernel or accumulate vertex i, what cost models weigh: its flops (the TaskGraph
 * kernel's; an accumulate, an elementwise add, one per element) into *flops, and the bytes it
 * touches (its write and every region it reads; a write_slice in place, its part read and the
 * part's elements written in the base's dtype) into *bytes. Both 0 for other kinds. */
void tp_memgraph_work(const tp_memgraph *mg, uint32_t i, double *flops, double *bytes);
uint64_t tp_memgraph_host_bytes(const tp_memgraph *mg);
uint64_t tp_memgraph_device_capacity(const tp_memgraph *mg, int device);
/* Where each TaskGraph output can be read when the run ends: the MemGraph vertex whose write
 * holds it. out_from has tp_graph_num_outputs entries (same order). */
const uint32_t *tp_memgraph_outputs(const tp_memgraph *mg);
/* The values declared "keep" (TaskGraph) that are on a device when the run ends: the MemGraph
 * vertices whose writes hold them (kept outputs always; kept inputs where they stayed). *n
 * gets the count; the array is owned by the MemGraph (NULL when none). */
const uint32_t *tp_memgraph_kept(const tp_memgraph *mg, uint32_t *n);
/* Sessions: declares resident in g (mg's TaskGraph, which the caller owns and may change) each
 * input mg leaves on a device, at that region, with a host copy where mg had one, and no other
 * input; *resident_bytes (may be NULL) gets their total. The next plan of g in the same
 * session then starts with them loaded. */
tp_status tp_plan_carry_inputs(tp_graph *g, const tp_memgraph *mg, uint64_t *resident_bytes, tp_error *err);
/* Position of each TaskGraph vertex in the serial order V the plan used (inputs: their
 * position too). Array of tp_graph_size entries; NULL for a plan read from a file. */
const uint32_t *tp_memgraph_order(const tp_memgraph *mg);

/* Memory bounds of g along an order, per device (arrays of tp_graph_devices entries):
 * min_feasible[d], the largest distinct-inputs-plus-output need of one vertex, with no output
 * bytes for a kernel the planner runs in place along that order (no smaller capacity can
 * plan); peak_live[d], the most bytes live at once when values are loaded at first use and
 * freed after last use (no capacity at or above it needs an eviction, up to fragmentation).
 * Either pointer may be NULL. */
tp_status tp_plan_bounds(const tp_graph *g, tp_order order, uint64_t *min_feasible, uint64_t *peak_live,
                         tp_error *err);

/* Writes "turnip.memgraph/1" JSON. */
tp_status tp_memgraph_write(const tp_memgraph *mg, FILE *f, tp_error *err);
/* Same, into a new malloc'd string the caller frees. */
tp_status tp_memgraph_to_string(const tp_memgraph *mg, char **text, size_t *len, tp_error *err);

/* Plan files (docs/formats.md "Plan files"): plan once, run many times. The binary MemGraph
 * holds what the JSON holds, in fixed little-endian records with a versioned header and a
 * checksum; a writer of either streams. */
tp_status tp_memgraph_write_binary(const tp_memgraph *mg, FILE *f, tp_error *err);
/* 1 when the file at path starts with the binary format's magic ("TURNIPMG"), else 0. */
int tp_memgraph_file_is_binary(const char *path);
/* Reads a MemGraph file, JSON or binary (told apart by the magic). With tg (finalized): the
 * plan must belong to it (every task a vertex of tg of the kind and size the MemGraph vertex
 * needs, tg's outputs in order with their keep flags; TP_ERR_INVALID naming the place
 * otherwise) and the MemGraph borrows tg; names may be NULL. With tg NULL (conversion), *names
 * gets a stand-in TaskGraph holding only the task names (inputs of one byte), which the
 * MemGraph borrows: free it after the MemGraph. Every count, index, offset and region is
 * range-checked before use (TP_ERR_PARSE / TP_ERR_INVALID naming the file and place). A plan
 * read from a file has no planner statistics: tp_memgraph_stats gives its size and capacities,
 * and tp_memgraph_order returns NULL. Caller frees *out. */
tp_status tp_memgraph_read_file(const char *path, const tp_graph *tg, tp_memgraph **out, tp_graph **names,
                                tp_error *err);

typedef struct tp_device_stats {
    uint64_t capacity;
    uint64_t peak_bytes;        /* most bytes allocated at once */
    uint64_t load_count, load_bytes;       /* first loads of input tensors */
    uint64_t resident_count, resident_bytes; /* inputs already on the device (sessions) */
    uint64_t reload_count, reload_bytes;   /* reloads of evicted values */
    uint64_t offload_count, offload_bytes;
    uint64_t drop_count;        /* evictions that needed no offload (host copy still valid) */
    uint64_t mem_deps;          /* memory-dependency edges into vertices on this device */
    uint64_t mem_deps_superfluous; /* ...of which already implied by other paths (audited only) */
    uint64_t mem_deps_unchecked;   /* ...of which the implied-check gave up (search budget; audited only) */
    uint64_t window_scans;     /* eviction-window searches the keyed search handed to the scan */
    uint64_t window_belady;    /* evictions of the furthest next use before a window fit (over the scan
                                  credit or an evict_budget) */
    uint64_t directed_count, directed_bytes; /* tp_plan_opts.evictions carried out (drops and offloads) */
} tp_device_stats;

typedef struct tp_plan_stats {
    int ndevices;
    tp_device_stats dev[TP_MAX_DEVICES];
    uint64_t host_bytes;        /* host memory the plan uses (inputs and offloaded values) */
    uint64_t host_mem_deps;     /* memory dependencies added for host-region reuse */
    uint64_t vertices, edges;   /* MemGraph size */
    double plan_seconds;
    /* sum-into (docs/planner.md): TaskGraph sums marked "accumulate", how many became groups,
     * their accumulate vertices, and whether lowering made the caps infeasible so that the
     * plan was made again without it (then groups is 0) */
    uint32_t sums_marked, sum_groups, sum_members;
    int sum_into_fallback;
    int audited;                /* 1: the mem_deps_superfluous / _unchecked counts were computed */
} tp_plan_stats;

/* Statistics of a plan in O(V + E): the planner's counters and the memory-dependency counts,
 * without the implied-dependency audit (audited = 0; printed as "-"). */
void tp_memgraph_stats(const tp_memgraph *mg, tp_plan_stats *out);
/* Same, plus the audit: which memory dependencies other paths already imply, a backward search
 * per edge bounded to 2000 visits (those that hit the bound are counted as unchecked). At most
 * O(E * 2000); near O(V + E) when dependencies are short-range. audited = 1. */
void tp_memgraph_stats_audit(const tp_memgraph *mg, tp_plan_stats *out);
void tp_plan_stats_print(const tp_plan_stats *st, FILE *f);

/* Verifies MemGraph JSON text against a finalized TaskGraph. TP_OK: valid. TP_ERR_CHECK: the
 * first violation, in words, in err. TP_ERR_PARSE / TP_ERR_INVALID: unusable input. */
tp_status tp_verify_json(const char *text, size_t len, const char *name, const tp_graph *tg,
                         tp_error *err);
tp_status tp_verify_file(const char *path, const tp_graph *tg, tp_error *err);

/* Graphviz DOT of a MemGraph JSON text: data edges solid, memory edges dashed red,
 * offload/reload vertices as colored boxes. `tg` may be NULL (labels use task names stored in
 * the JSON). */
tp_status tp_dot_json(const char *text, size_t len, const char *name, FILE *out, tp_error *err);

#ifdef __cplusplus
}
#endif
#endif
