/* gen.h - random TaskGraphs for property tests and the verifier's mutation tests. */
#ifndef TP_GEN_H
#define TP_GEN_H
#include <stdint.h>
#include "turnip/turnip.h"

/* GEN_ACCUM: random DAGs with sum-into candidates (gen_graph_opt's `accumulate`, always on) */
enum { GEN_CHAIN, GEN_DIAMOND, GEN_FANIN, GEN_FANOUT, GEN_MULTIDEV, GEN_RANDOM, GEN_TINY, GEN_BIG, GEN_ACCUM, GEN_NFAMILIES };
extern const char *gen_family_name[GEN_NFAMILIES];

typedef struct {
    uint64_t s;
} rng;
uint64_t rng_next(rng *r);
uint64_t rng_below(rng *r, uint64_t n); /* uniform in [0, n) */

/* A finalized random graph of the family; caller frees. */
tp_graph *gen_graph(uint64_t seed, int family);
/* The same, and with `accumulate` about one step in three instead builds a sum of 3-8
 * partials of one size (each from its own small subtree, some on other devices through
 * transfers, some read elsewhere too, some sums of sums), most marked "accumulate": true, a few
 * with a repeated input (not lowerable). gen_graph(seed, GEN_ACCUM) has it on. */
tp_graph *gen_graph_opt(uint64_t seed, int family, int accumulate);
/* Plans g with every device at its smallest feasible capacity along the default order (dfs):
 * the tightest plan, offloading wherever anything must move. Caller frees *mg. */
tp_status gen_plan_min(const tp_graph *g, tp_memgraph **mg, tp_error *e);
#endif
