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
#include "turnip/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Arrays indexed by layer, 0..layers-1 for layers 1..L, except a (layers + 1 entries, a[0] the
 * input a^0). A chain from tp_chain_read_file owns its arrays (tp_chain_free); one a caller
 * fills in owns nothing here. */
typedef struct tp_chain {
    uint32_t layers; /* L >= 1 */
    double *uf, *ub; /* forward / backward time of each layer, seconds (finite, >= 0) */
    uint64_t *w;     /* |w_i|, bytes */
    uint64_t *a;     /* |a^i|, bytes, i = 0..L */
    uint64_t mgpu;   /* GPU memory, bytes */
    double beta;     /* link bandwidth each way, bytes per second (finite, > 0) */
} tp_chain;

/* Reads a "turnip.chain/1" JSON file (docs/weight-offload.md); every number range-checked. */
tp_status tp_chain_read_file(const char *path, tp_chain **out, tp_error *err);
void tp_chain_free(tp_chain *c);

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

#ifdef __cplusplus
}
#endif
#endif
