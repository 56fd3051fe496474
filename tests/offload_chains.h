/* offload_chains.h - test helpers for training chains (include/turnip/offload.h): a chain on
 * arrays of the test's own, and the memory bounds every offload test sets M_GPU between.
 * Computed here from the paper's equation 1, sharing nothing with src/plan/offload*.c. */
#ifndef TP_TESTS_OFFLOAD_CHAINS_H
#define TP_TESTS_OFFLOAD_CHAINS_H

#include <stdint.h>
#include <string.h>
#include "turnip/offload.h"

#define TPT_CHAIN_MAXL 36 /* the largest chain a test builds on an owned */

/* a chain whose arrays it holds (no tp_chain_free) */
typedef struct tpt_chain {
    tp_chain c;
    double uf[TPT_CHAIN_MAXL], ub[TPT_CHAIN_MAXL];
    uint64_t w[TPT_CHAIN_MAXL], a[TPT_CHAIN_MAXL + 1];
    uint8_t frozen[TPT_CHAIN_MAXL]; /* c.frozen points here only where a test freezes layers */
} tpt_chain;

/* points o->c at o's arrays, L layers (at most TPT_CHAIN_MAXL) */
static inline void tpt_chain_wire(tpt_chain *o, uint32_t L)
{
    o->c.layers = L;
    o->c.uf = o->uf;
    o->c.ub = o->ub;
    o->c.w = o->w;
    o->c.a = o->a;
    o->c.frozen = NULL; /* none; a test that freezes layers points it at an array of its own */
}

/* The two-layer chain the bound and brute-force tests solve in closed form: |w| = 1000 each, no
 * activations, every computation 1 s, mgpu = 2000, W/beta = x s. */
static inline void tpt_chain_two_layer(tpt_chain *o, double x)
{
    memset(o, 0, sizeof *o);
    tpt_chain_wire(o, 2);
    for (int i = 0; i < 2; i++) {
        o->uf[i] = o->ub[i] = 1;
        o->w[i] = 1000;
    }
    o->c.mgpu = 2000;
    o->c.beta = 1000 / x;
}

/* M_k of eq. (1), the most over ops with no other weight resident: the least memory any
 * schedule needs (a frozen layer's B holds no gradient) */
static inline uint64_t tpt_need_alone(const tp_chain *c)
{
    uint64_t acc = c->a[0], mx = 0;
    for (uint32_t i = 0; i < c->layers; i++) {
        acc += c->a[i + 1];
        uint64_t m = (tp_chain_frozen(c, i) ? 1 : 2) * c->w[i] + acc; /* B: + the gradient, unless frozen */
        if (m > mx) mx = m;
    }
    return mx;
}

/* memory that holds every weight at every op: max_i (M_{B_i} + sum_{j != i} w_j) */
static inline uint64_t tpt_need_all(const tp_chain *c)
{
    uint64_t acc = c->a[0], mx = 0, sw = 0;
    for (uint32_t i = 0; i < c->layers; i++) sw += c->w[i];
    for (uint32_t i = 0; i < c->layers; i++) {
        acc += c->a[i + 1];
        uint64_t m = (tp_chain_frozen(c, i) ? 1 : 2) * c->w[i] + acc + (sw - c->w[i]);
        if (m > mx) mx = m;
    }
    return mx;
}

/* the compute sum, sum of uf + ub: no schedule is shorter */
static inline double tpt_sum_u(const tp_chain *c)
{
    double s = 0;
    for (uint32_t i = 0; i < c->layers; i++) s += c->uf[i] + c->ub[i];
    return s;
}

#endif
