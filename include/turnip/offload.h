/* turnip/offload.h - weight offloading for a training chain: the OFF(L, M_GPU, beta) model of
 * shared/papers/weight-offloading-strategies.txt (issue 14; docs/weight-offload.md).
 *
 * A chain is layers F_1..F_L then B_L..B_1 on one GPU. Layer i has forward and backward times,
 * a weight of |w_i| bytes and an activation a^i of |a^i| bytes (a^0 the input); during F_i the
 * GPU holds |w_i| + sum_{k<=i} |a^k| and during B_i 2|w_i| + sum_{k<=i} |a^k| (the paper's
 * equation 1), plus every other weight then resident. Weights move over a full-duplex link of
 * beta bytes/s each way. The strategies (greedy selection and scheduling with the discount,
 * Greedy* without it, L2L) and the schedule checker are in src/plan/offload*.c; the MILP lower
 * bound of the paper's section 6 in src/plan/offload_bound.c. */
#ifndef TURNIP_OFFLOAD_H
#define TURNIP_OFFLOAD_H

#include <stdint.h>
#include <stdio.h>
#include "turnip/error.h"
#include "turnip/graph.h"
#include "turnip/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Arrays indexed by layer, 0..layers-1 for layers 1..L, except a (layers + 1 entries, a[0] the
 * input a^0). A chain from tp_chain_new or tp_chain_read_file owns its arrays (tp_chain_free);
 * one a caller puts together itself owns nothing here. */
typedef struct tp_chain {
    uint32_t layers; /* L >= 1 */
    double *uf, *ub; /* forward / backward time of each layer, seconds (finite, >= 0) */
    uint64_t *w;     /* |w_i|, bytes */
    uint64_t *a;     /* |a^i|, bytes, i = 0..L */
    uint64_t mgpu;   /* GPU memory, bytes */
    double beta;     /* link bandwidth each way, bytes per second (finite, > 0) */
    uint8_t *frozen; /* may be NULL (no layer frozen); else per layer 1 when w_i is not trained
                        (LoRA's base weights): B_i neither changes w_i, so its host copy stays
                        valid and every removal is a delete, nor holds a gradient of it (B_i's
                        memory is |w_i| + the activations). tp_chain_new allocates it zeroed */
} tp_chain;

/* Whether layer i (0-based) of c is frozen. */
static inline int tp_chain_frozen(const tp_chain *c, uint32_t i)
{
    return c->frozen && c->frozen[i];
}

/* The gradient B_i holds besides w_i (equation 1: M_B_i = |w_i| + this + the activations): |w_i|,
 * 0 for a frozen layer. What the strategies and the bound charge; the checker counts its own. */
static inline uint64_t tp_chain_grad_bytes(const tp_chain *c, uint32_t i)
{
    return tp_chain_frozen(c, i) ? 0 : c->w[i];
}

/* A chain of 1..2^20 layers with every array allocated and zeroed (mgpu and beta 0) for the
 * caller to fill; NULL for a count out of range or out of memory. Free with tp_chain_free. */
tp_chain *tp_chain_new(uint32_t layers);
/* Reads a "turnip.chain/1" JSON file (docs/weight-offload.md); every number range-checked. */
tp_status tp_chain_read_file(const char *path, tp_chain **out, tp_error *err);
void tp_chain_free(tp_chain *c);
/* The rules the reader enforces, for a chain a caller filled in (every entry point below calls
 * it): 1..2^20 layers; uf, ub in [1e-9, 1e9] s (a computation takes time, so the memory it holds
 * is checked at an instant of its own); beta in [1, 1e18] bytes/s; each weight's transfer at
 * most 1e9 s; all weights and activations together at most 2^53 bytes. TP_ERR_ARG otherwise. */
tp_status tp_chain_check(const tp_chain *c, tp_error *err);

/* The MILP lower bound on the makespan of one training iteration (section 6). The solver's best
 * bound is a valid lower bound whether or not it proved optimality within time_limit_s. */
typedef struct tp_chain_bound_result {
    double bound;     /* a valid lower bound on the makespan, seconds */
    double incumbent; /* the best MILP solution found (>= bound; bound when proved optimal) */
    double gap;       /* (incumbent - bound) / incumbent, 0 when optimal */
    double seconds;   /* solver wall time */
    int optimal;      /* 1: the solver proved the MILP optimum */
    const char *solver; /* static string: which solver and version */
} tp_chain_bound_result;
tp_status tp_chain_bound(const tp_chain *c, double time_limit_s, tp_chain_bound_result *out, tp_error *err);
/* The MILP's layers (it has about 10 L^2 columns; the paper's chains have 36-144): more is
 * TP_ERR_ARG, for the bound and for the milp strategy. */
#define TP_CHAIN_BOUND_MAX_LAYERS 160u
/* The ranges every chain and machine rate is checked against: a link's bytes/s and a kernel
 * rate's flops/s in [TP_CHAIN_RATE_MIN, TP_CHAIN_RATE_MAX]; a solver time limit at most
 * TP_CHAIN_TIME_LIMIT_MAX seconds. */
#define TP_CHAIN_RATE_MIN 1.0
#define TP_CHAIN_RATE_MAX 1e18
#define TP_CHAIN_TIME_LIMIT_MAX 1e6
/* tp_chain_bound, and the choices of the solver's incumbent (the MILP solution behind
 * out->incumbent: D1 as TP_OFFLOAD_SEL1, D0 as TP_OFFLOAD_SEL0) in sel, the caller's c->layers
 * bytes; all 0 when the time limit left no incumbent (out->incumbent is then HUGE_VAL). */
tp_status tp_chain_bound_select(const tp_chain *c, double time_limit_s, tp_chain_bound_result *out, uint8_t *sel,
                                tp_error *err);


/* ---- Selection, schedules, the checker and the strategies (src/plan/offload.c,
 * src/plan/offload_greedy.c; docs/weight-offload.md). The algorithms accept 1..TP_OFFLOAD_MAX_LAYERS
 * layers (they are O(L^3) to O(L^4)); the reader and the checker take any chain it reads. */
#define TP_OFFLOAD_MAX_LAYERS 512u

/* Offload choices of one layer k, as bits of a byte (the paper's section 5):
 * TP_OFFLOAD_SEL1 = choice (k,1): w_k is away between F_k and B_k (offloaded after F_k,
 * prefetched before B_k); TP_OFFLOAD_SEL0 = choice (k,0): away between B_k and the next
 * iteration's F_k (offloaded after B_k, prefetched before F_k). */
#define TP_OFFLOAD_SEL0 1u
#define TP_OFFLOAD_SEL1 2u

/* Algorithm 1: greedy selection by profit (memory saved over the operations a choice covers,
 * per byte moved; a frozen layer's choices move |w_k| each, whatever the discount) until no
 * operation exceeds mgpu, with the paper's excess (which keeps the
 * operation's own weight free again: room for a prefetch) and the exact one where that cannot
 * be met; nothing when everything fits (docs/weight-offload.md). discount 1: the second choice of a layer
 * costs one transfer (|w_k|), the first two (2|w_k|); discount 0 (Greedy*): every choice
 * costs 2|w_k|. sel: caller's array of c->layers bytes, filled with SEL bits.
 * TP_ERR_INFEASIBLE when some operation exceeds mgpu even with every useful choice taken. */
tp_status tp_offload_select(const tp_chain *c, int discount, uint8_t *sel, tp_error *err);

/* One steady-state iteration. The computations run in the order B_L, ..., B_1, F_1, ..., F_L
 * (the iteration starts at B_L, as in the paper's Algorithm 2); the schedule gives which weights
 * are on the GPU at time 0 (resident0) and which have a valid host copy (valid0), and the
 * iteration must end in that same state (the wrap: the next iteration starts where this one
 * began). All times are within [0, makespan]. */
typedef enum tp_offload_op_kind {
    TP_OFFOP_F = 0,   /* F_layer on the GPU, uf seconds */
    TP_OFFOP_B,       /* B_layer on the GPU, ub seconds; changes w_layer (the host copy goes stale) */
    TP_OFFOP_PREFETCH, /* host to GPU, |w|/beta; the buffer is reserved from its start */
    TP_OFFOP_OFFLOAD, /* GPU to host, |w|/beta; the host copy is valid and the buffer freed at its end */
    TP_OFFOP_UPLOAD,  /* GPU to host, |w|/beta, keeping the GPU copy (the paper's "uploading") */
    TP_OFFOP_DELETE,  /* frees the buffer at start (== end); needs a valid host copy */
} tp_offload_op_kind;

typedef struct tp_offload_op {
    tp_offload_op_kind kind;
    uint32_t layer; /* 0..L-1 */
    double start, end; /* seconds */
} tp_offload_op;

/* Owns resident0, valid0 and ops (tp_offload_schedule_free). */
typedef struct tp_offload_schedule {
    uint32_t layers;
    uint8_t *resident0; /* [layers]: 1 if w_k is on the GPU at time 0 */
    uint8_t *valid0;    /* [layers]: 1 if the host copy of w_k is valid at time 0 */
    uint32_t nops;
    tp_offload_op *ops; /* any order; the operations of one weight that start at one instant are
                         * taken in array order (a zero-byte prefetch before its computation) */
    double makespan;    /* the scheduler's claim; tp_offload_check computes its own */
} tp_offload_schedule;
void tp_offload_schedule_free(tp_offload_schedule *s);

/* Algorithm 2: greedy scheduling of a selection (sel as from tp_offload_select), trying every
 * cutoff (how many of the backward prefetches were done at the end of the previous iteration)
 * and keeping the shortest. discount 1: a weight whose host copy is valid is deleted after F_k
 * without a transfer, and idle offload-link time during the backward phase uploads the weights
 * of (k,1)-only layers early (best effort); discount 0 (Greedy*): every choice offloads. Either
 * way a frozen weight is deleted, never offloaded (its host copy is always valid).
 * *out owned by the caller. TP_ERR_INFEASIBLE when no cutoff fits in mgpu. */
tp_status tp_offload_schedule_greedy(const tp_chain *c, const uint8_t *sel, int discount, tp_offload_schedule **out,
                                     tp_error *err);

/* L2L (the paper's section 2 and 7, after Pudipeddi et al.): only the weight in use stays on
 * the GPU, the next one is prefetched during the current operation, each weight is offloaded
 * after its B (a frozen one deleted) and deleted after its F. *out owned by the caller. */
tp_status tp_offload_schedule_l2l(const tp_chain *c, tp_offload_schedule **out, tp_error *err);

/* TP_OFFLOAD_MILP: Algorithm 2 (with the discount) on the selection of the MILP's incumbent
 * (tp_chain_bound_select), with TP_OFFLOAD_MILP_TIME_LIMIT s for the solver in tp_offload_plan. */
typedef enum tp_offload_algo {
    TP_OFFLOAD_GREEDY = 0,
    TP_OFFLOAD_GREEDY_STAR,
    TP_OFFLOAD_L2L,
    TP_OFFLOAD_MILP,
    TP_OFFLOAD_L2L_SYNC /* L2L whose next weight's prefetch starts when the current operation
                         * ends (a model of the paper's "synchronous parameter-server" L2L:
                         * T = L (f + b) + 2 (L-1) t on identical layers); as a planner's directed
                         * evictions, L2L's (only the timing differs) */
} tp_offload_algo;
#define TP_OFFLOAD_MILP_TIME_LIMIT 60.0
/* Selection then schedule for greedy and greedy-star; l2l and l2l-sync directly; milp as
 * tp_offload_plan_milp with TP_OFFLOAD_MILP_TIME_LIMIT. *out owned by the caller. */
tp_status tp_offload_plan(const tp_chain *c, tp_offload_algo algo, tp_offload_schedule **out, tp_error *err);

/* The MILP's selection: the bound (tp_chain_bound_select, time_limit_s for the solver; *bound,
 * may be NULL, receives it, also when no selection follows) and its incumbent's choices, less every choice whose removal leaves
 * Algorithm 2's makespan unchanged (the MILP minimises idle alone, so transfers that cost none
 * are arbitrary there). On the paper's chains where Algorithm 1's selection is weak (link-bound
 * ones) this is the better selection (docs/weight-offload.md); it costs the solver's time.
 * sel: the caller's c->layers bytes. TP_ERR_INFEASIBLE when the time limit left no incumbent or
 * Algorithm 2 fits no schedule to it (the MILP checks memory at operation starts only). */
tp_status tp_offload_select_milp(const tp_chain *c, double time_limit_s, uint8_t *sel, tp_chain_bound_result *bound,
                                 tp_error *err);
/* The milp strategy: tp_offload_select_milp, then Algorithm 2 with the discount on it. *out
 * owned by the caller. */
tp_status tp_offload_plan_milp(const tp_chain *c, double time_limit_s, tp_offload_schedule **out,
                               tp_chain_bound_result *bound, tp_error *err);

/* What the checker measured. */
typedef struct tp_offload_report {
    double makespan;      /* the last end of any operation */
    double compute;       /* sum of uf + ub: no schedule is shorter */
    uint64_t peak;        /* largest GPU memory use at any instant, bytes */
    uint64_t bytes_moved; /* prefetched + offloaded + uploaded bytes */
} tp_offload_report;

/* Replays s against c (independently of the schedulers) and fills *rep. TP_ERR_CHECK with the
 * first violation in err: a wrong duration or compute order, overlap on the GPU or on one link
 * direction, a computation on a weight not fully resident, a prefetch of a resident weight or
 * of a stale host copy, a transfer of a weight during its B, a delete with a stale host copy,
 * memory over mgpu at any instant, or an end state other than the start state.
 * TP_ERR_INVALID when s does not match c (layers, layer index). */
tp_status tp_offload_check(const tp_chain *c, const tp_offload_schedule *s, tp_offload_report *rep, tp_error *err);

/* Writes s as "turnip.offload-schedule/1" JSON (docs/weight-offload.md) to f (the caller's).
 * TP_ERR_IO when the stream reports an error. */
tp_status tp_offload_schedule_write(const tp_offload_schedule *s, FILE *f, tp_error *err);

/* ---- Inside turnip (src/plan/offload_graph.c; docs/weight-offload.md "Inside turnip") ---- */

/* One steady-state iteration of c as a one-device TaskGraph of opaque kernels: inputs a0..aL
 * (the activations, resident at the start without a host copy) and w1..wL (the weights; those
 * start->resident0 marks resident, with a host copy where start->valid0 says, the others on the
 * host; start NULL: all on the host), then per layer k = L..1 kernels Xk (a(k-1), wk, dk) -> d(k-1)
 * in place on a(k-1) (k >= 2; dL is aL), Gk (dk, d(k-1)) -> the weight gradient (d0 is a0),
 * Uk (wk, Gk) -> the updated weight in place on wk, then per layer k = 1..L Fk (previous
 * activation, Uk) -> the next activation (equation 1's memory at each operation).
 * Every Fk and Uk is an output; the Fk are kept, and the Uk of the weights that start resident
 * (so the iteration ends in the state it began in). Flops are seconds x flops_per_s (B_k split
 * 0.5 / 0.45 / 0.05 over Xk, Gk, Uk; 0.95 / 0.05 over G1, U1); an activation of 0 bytes becomes
 * 1 byte, a weight of 0 bytes is TP_ERR_ARG (a stand-in would be selected, a 0 never is). A
 * frozen layer has no gradient and no update: Gk (dk, d(k-1), wk), in place on dk, takes the
 * rest of B_k (all of B_1), there is no Uk, Fk reads wk, and wk (its host copy always valid) is
 * an output, kept, where it starts resident. 1..TP_OFFLOAD_MAX_LAYERS layers. *out finalized,
 * owned by the caller. */
tp_status tp_chain_taskgraph(const tp_chain *c, double flops_per_s, const tp_offload_schedule *start, tp_graph **out,
                             tp_error *err);

/* The strategy algo as directed evictions (tp_plan_opts.evictions) for a graph of
 * tp_chain_taskgraph's naming (read back from a file too): the selection of Algorithm 1 on the
 * chain of the graph's sizes with M_GPU = mgpu (the device's capacity), (k,0) evicting U_k
 * after U_k and (k,1) after F_k (a frozen layer, one without U_k whose G_k and F_k read w_k:
 * w_k after G_k and after F_k); for l2l every weight both, w_L kept between F_L and B_L. The
 * prefetches are the planner's (each reload as early as memory allows, in the order of use, as
 * Algorithm 2 orders them); so are the times. milp: tp_offload_select_milp on the chain whose
 * times are the kernels' flops / machine->flops_per_s (B_k: X_k + G_k + U_k) and whose link is
 * machine->beta (each in [1, 1e18], the time limit in [0, 1e6]; TP_ERR_ARG otherwise, or for a
 * NULL machine; the other strategies ignore it). *out (malloc'd, *n entries) owned by the caller.
 * TP_ERR_INVALID when g is not such a graph; TP_ERR_INFEASIBLE when no selection fits mgpu. */
typedef struct tp_chain_machine {
    double flops_per_s;  /* the kernels' rate: a kernel of F flops takes F / flops_per_s s */
    double beta;         /* the link, bytes/s each way */
    double time_limit_s; /* the MILP solver's; 0: TP_OFFLOAD_MILP_TIME_LIMIT */
} tp_chain_machine;
tp_status tp_chain_graph_evictions(const tp_graph *g, tp_offload_algo algo, uint64_t mgpu, const tp_chain_machine *machine,
                                   tp_plan_evict **out, uint32_t *n, tp_error *err);

#ifdef __cplusplus
}
#endif
#endif
