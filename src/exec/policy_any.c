/* policy_any.c - `any`: whatever is ready, first come first served (the default). */
#include <stdlib.h>
#include "exec/policy.h"
#include "io/util.h"

static tp_status any_init(const tp__policy_env *env, void **state, tp_error *err)
{
    tp__rings *r = malloc(sizeof *r);
    if (!r) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    tp_status s = tp__rings_init(r, env, err);
    if (s) free(r);
    else *state = r;
    return s;
}

static void any_reset(void *state, uint64_t seed)
{
    (void)seed;
    tp__rings_reset(state);
}

static void any_push(void *state, uint32_t q, uint32_t v)
{
    tp__rings_push(state, q, v);
}

static uint32_t any_pop(void *state, uint32_t q)
{
    return tp__rings_take(state, q, 0);
}

static void any_free(void *state)
{
    if (state) tp__rings_free(state);
    free(state);
}

const tp__policy tp__policy_any = {
    .name = "any",
    .help = "whatever is ready, first come first served (the default)",
    .init = any_init,
    .reset = any_reset,
    .push = any_push,
    .pop = any_pop,
    .free = any_free,
};
