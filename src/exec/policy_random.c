/* policy_random.c - `random`: a seeded uniform choice among the ready vertices of a queue
 * (for tests: nondeterminism on demand, reproducible by its seed). */
#include <stdlib.h>
#include "exec/policy.h"
#include "io/util.h"

typedef struct {
    tp__rings r;
    uint64_t rng;
} rnd_state;

static tp_status rnd_init(const tp__policy_env *env, void **state, tp_error *err)
{
    rnd_state *st = calloc(1, sizeof *st);
    if (!st) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    tp_status s = tp__rings_init(&st->r, env, err);
    if (s) free(st);
    else *state = st;
    return s;
}

static void rnd_reset(void *state, uint64_t seed)
{
    rnd_state *st = state;
    tp__rings_reset(&st->r);
    st->rng = seed * 0x2545f4914f6cdd1dull + 1;
}

static void rnd_push(void *state, uint32_t q, uint32_t v)
{
    tp__rings_push(&((rnd_state *)state)->r, q, v);
}

static uint32_t rnd_pop(void *state, uint32_t q)
{
    rnd_state *st = state;
    uint32_t n = st->r.count[q];
    if (!n) return TP__NONE;
    uint64_t z = tp__mix64(st->rng); /* counter-based: the k-th draw is mix64(start + k x golden) */
    st->rng += 0x9e3779b97f4a7c15ull;
    return tp__rings_take(&st->r, q, (uint32_t)(z % n));
}

static void rnd_free(void *state)
{
    rnd_state *st = state;
    if (st) tp__rings_free(&st->r);
    free(st);
}

const tp__policy tp__policy_random = {
    .name = "random",
    .help = "seeded random choice among the ready (--seed)",
    .init = rnd_init,
    .reset = rnd_reset,
    .push = rnd_push,
    .pop = rnd_pop,
    .free = rnd_free,
};
