/* policy_fixed.c - `fixed`: each queue starts its vertices in one global order, the paper's
 * ablation of nondeterministic execution. The order is a topological order of the whole
 * MemGraph that follows the planner's creation (simulation) order: Kahn's algorithm taking the
 * smallest vertex id first. Every wait is on something earlier in it, so it cannot deadlock.
 * A queue's sequence is its vertices in that order; pop starts the next one only when it is
 * ready. Sum-into members of one group are in the order in it, by an added edge from each to
 * the next, and the executor serves their lock in that order (ordered_locks): the earliest
 * unfinished vertex of the order can always start. */
#include <stdlib.h>
#include <string.h>
#include "exec/policy.h"
#include "io/topo.h"
#include "io/util.h"

typedef struct {
    uint32_t nq;
    uint32_t *seq, *off, *len, *cursor; /* per queue: its sequence, back to back */
    uint8_t *ready;                     /* per vertex */
    uint32_t n;
} fixed_state;

static void fixed_free(void *state)
{
    fixed_state *st = state;
    if (!st) return;
    free(st->seq);
    free(st->off);
    free(st->len);
    free(st->cursor);
    free(st->ready);
    free(st);
}

/* topological order following creation order: Kahn by smallest id, with an edge from each
 * sum-into member to the next of its group (the executor serves a group's lock in that order
 * under this policy, so the sequence never waits on a member the lock will only serve later) */
static tp_status global_order(const tp__policy_env *env, uint32_t *order, tp_error *err)
{
    uint32_t n = env->n, reached = 0, *deg = malloc((n + 1) * sizeof *deg);
    uint32_t *off = malloc(((size_t)n + 2) * sizeof *off), *succ = NULL;
    if (!deg || !off) {
        free(deg);
        free(off);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    memcpy(deg, env->ndeps, n * sizeof *deg);
    size_t extra = 0;
    off[0] = 0;
    for (uint32_t v = 0; v < n; v++) {
        int e = env->group_next && env->group_next[v] != TP__NONE;
        extra += (size_t)e;
        off[v + 1] = off[v] + (env->succ_off[v + 1] - env->succ_off[v]) + (uint32_t)e;
    }
    succ = malloc(((size_t)env->succ_off[n] + extra + 1) * sizeof *succ);
    if (!succ) {
        free(deg);
        free(off);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    for (uint32_t v = 0; v < n; v++) {
        uint32_t k = off[v];
        for (uint32_t j = env->succ_off[v]; j < env->succ_off[v + 1]; j++) succ[k++] = env->succ[j];
        if (env->group_next && env->group_next[v] != TP__NONE) {
            succ[k++] = env->group_next[v];
            deg[env->group_next[v]]++;
        }
    }
    tp_status s = tp__topo_sort(n, off, succ, deg, TP__TOPO_SMALLEST, order, &reached);
    free(deg);
    free(off);
    free(succ);
    if (s) return tp__fail(err, s, "out of memory");
    return reached == n ? TP_OK
                        : tp__fail(err, TP_ERR_INVALID, "MemGraph has a cycle (or a sum-into member after a later one of its group)");
}

static tp_status fixed_init(const tp__policy_env *env, void **state, tp_error *err)
{
    fixed_state *st = calloc(1, sizeof *st);
    uint32_t *order = malloc((env->n + 1) * sizeof *order);
    if (st) {
        st->nq = env->nqueues;
        st->n = env->n;
        st->seq = malloc((env->n + 1) * sizeof *st->seq);
        st->off = malloc((env->nqueues + 1) * sizeof *st->off);
        st->len = calloc(env->nqueues + 1, sizeof *st->len);
        st->cursor = calloc(env->nqueues + 1, sizeof *st->cursor);
        st->ready = calloc(env->n + 1, 1);
    }
    if (!st || !order || !st->seq || !st->off || !st->len || !st->cursor || !st->ready) {
        free(order);
        fixed_free(st);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    tp_status s = global_order(env, order, err);
    if (s) {
        free(order);
        fixed_free(st);
        return s;
    }
    tp__queue_offsets(env, st->off);
    for (uint32_t r = 0; r < env->n; r++) { /* each queue's vertices, in the global order */
        uint32_t v = order[r], q = env->queue[v];
        if (q != TP__NO_QUEUE) st->seq[st->off[q] + st->len[q]++] = v;
    }
    free(order);
    *state = st;
    return TP_OK;
}

static void fixed_reset(void *state, uint64_t seed)
{
    (void)seed;
    fixed_state *st = state;
    memset(st->cursor, 0, st->nq * sizeof *st->cursor);
    memset(st->ready, 0, st->n);
}

static void fixed_push(void *state, uint32_t q, uint32_t v)
{
    (void)q;
    ((fixed_state *)state)->ready[v] = 1;
}

static uint32_t fixed_pop(void *state, uint32_t q)
{
    fixed_state *st = state;
    if (st->cursor[q] < st->len[q]) {
        uint32_t v = st->seq[st->off[q] + st->cursor[q]];
        if (st->ready[v]) {
            st->cursor[q]++;
            return v;
        }
    }
    return TP__NONE;
}

const tp__policy tp__policy_fixed = {
    .name = "fixed",
    .help = "each engine in plan order (the paper's ablation)",
    .init = fixed_init,
    .reset = fixed_reset,
    .push = fixed_push,
    .pop = fixed_pop,
    .free = fixed_free,
    .ordered_locks = 1,
};
