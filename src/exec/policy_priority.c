/* policy_priority.c - `priority`: each queue starts its ready vertices highest priority first,
 * a vertex's priority being its bottom level: the longest path from it to the end of the
 * MemGraph over data and memory edges, each vertex on it (itself included) weighted by its
 * estimated duration (tp__policy_env.cost: the backend's cost model, or the executor's generic
 * estimate from the MemGraph). Equal priorities go to the smaller vertex id (the planner's
 * serial order), so which vertex starts is a function of the ready set: deterministic.
 *
 * It only reorders what is ready: whenever an engine has a free unit and a vertex of its queue
 * is ready, one starts, as under `any`. Nothing waits on a vertex the policy has not started,
 * so it cannot deadlock and needs no ordered locks. Sum-into members enter their queue only
 * while they hold their group's lock (the executor's; first come, or member order with
 * tp_run_opts.deterministic), and are started like any other ready vertex; the priorities
 * know the MemGraph's edges only, not that a group's members run one at a time.
 *
 * Bottom levels in one reverse pass over a topological order (Kahn, io/topo.h): linear in the
 * MemGraph. (A vertex on a cycle, which no valid plan has, keeps its own cost: the run then
 * stalls and the executor says so, as under `any`.) A queue's ready vertices are a binary heap
 * (io/heap.h) in slots of the size of the vertices that ever enter that queue. */
#include <stdlib.h>
#include <string.h>
#include "exec/policy.h"
#include "io/heap.h"
#include "io/topo.h"
#include "io/util.h"

typedef struct {
    uint32_t nq;
    double *prio;   /* per vertex: its bottom level, seconds */
    uint32_t *slot; /* every queue's heap, back to back */
    uint32_t *off;  /* per queue: its heap's first slot */
    size_t *len;    /* per queue: vertices in its heap */
} prio_state;

/* a goes first: higher priority, then smaller id (a total order: pops depend on pushes only) */
static int prio_first(const uint32_t *a, const uint32_t *b, const void *ctx)
{
    const double *p = ctx;
    return p[*a] > p[*b] || (p[*a] == p[*b] && *a < *b);
}
TP__HEAP_DEFINE(pheap, uint32_t, prio_first)

static void prio_free(void *state)
{
    prio_state *st = state;
    if (!st) return;
    free(st->prio);
    free(st->slot);
    free(st->off);
    free(st->len);
    free(st);
}

/* prio[v] = cost[v] + the largest prio of v's successors, in reverse topological order */
static void bottom_levels(const tp__policy_env *env, double *prio)
{
    for (uint32_t v = 0; v < env->n; v++) prio[v] = env->cost[v]; /* needs_cost: always there; a vertex the order never
                                                                      reaches (on a cycle) keeps its own cost */
    tp__bottom_levels(env->succ_off, env->succ, env->order, env->nordered, env->cost, prio);
}

static tp_status prio_init(const tp__policy_env *env, void **state, tp_error *err)
{
    prio_state *st = calloc(1, sizeof *st);
    if (st) {
        st->nq = env->nqueues;
        st->prio = malloc(((size_t)env->n + 1) * sizeof *st->prio);
        st->off = malloc(((size_t)env->nqueues + 1) * sizeof *st->off);
        st->len = calloc((size_t)env->nqueues + 1, sizeof *st->len);
    }
    if (!st || !st->prio || !st->off || !st->len) {
        prio_free(st);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    size_t total = tp__queue_offsets(env, st->off);
    st->slot = malloc((total + 1) * sizeof *st->slot);
    if (!st->slot) {
        prio_free(st);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    bottom_levels(env, st->prio);
    *state = st;
    return TP_OK;
}

static void prio_reset(void *state, uint64_t seed)
{
    (void)seed;
    prio_state *st = state;
    memset(st->len, 0, st->nq * sizeof *st->len);
}

static void prio_push(void *state, uint32_t q, uint32_t v)
{
    prio_state *st = state;
    pheap_push(st->slot + st->off[q], &st->len[q], v, st->prio);
}

static uint32_t prio_pop(void *state, uint32_t q)
{
    prio_state *st = state;
    return st->len[q] ? pheap_pop(st->slot + st->off[q], &st->len[q], st->prio) : TP__NONE;
}

const tp__policy tp__policy_priority = {
    .name = "priority",
    .help = "the ready vertex with the longest estimated path to the end first (critical path)",
    .init = prio_init,
    .reset = prio_reset,
    .push = prio_push,
    .pop = prio_pop,
    .free = prio_free,
    .needs_cost = 1,
};
