/* gen.h - random TaskGraphs for property tests and the verifier's mutation tests. */
#ifndef TP_GEN_H
#define TP_GEN_H
#include <stdint.h>
#include "turnip/turnip.h"

enum { GEN_CHAIN, GEN_DIAMOND, GEN_FANIN, GEN_FANOUT, GEN_MULTIDEV, GEN_RANDOM, GEN_TINY, GEN_BIG, GEN_NFAMILIES };
extern const char *gen_family_name[GEN_NFAMILIES];

typedef struct {
    uint64_t s;
} rng;
uint64_t rng_next(rng *r);
uint64_t rng_below(rng *r, uint64_t n); /* uniform in [0, n) */

/* A finalized random graph of the family; caller frees. */
tp_graph *gen_graph(uint64_t seed, int family);
#endif
