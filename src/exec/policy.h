/* policy.h - dispatch policies as a table (internal), in the manner of StarPU's sched
 * policies: each policy is one file with init / reset / push / pop / free, and one entry in
 * src/exec/policy.c. The executor keeps one ready queue per (device, engine); it pushes a
 * vertex into its queue when its last dependency completes and pops while the engine has a
 * free unit. A policy decides which of the ready vertices of a queue starts next (or that
 * none may start yet: `fixed` waits for the next vertex of its sequence).
 *
 * Reentrant: every state lives in the handle init returns; nothing file-static. */
#ifndef TP__POLICY_H
#define TP__POLICY_H

#include <stdint.h>
#include "turnip/exec.h"

#define TP__NONE UINT32_MAX   /* pop: nothing may start */
#define TP__NO_QUEUE UINT32_MAX

/* What the executor knows about the plan, for a policy's init (all borrowed). */
typedef struct tp__policy_env {
    uint32_t n;                     /* MemGraph vertices */
    const uint32_t *succ_off, *succ; /* CSR of successors (data and memory edges) */
    const uint32_t *order;          /* a topological order (Kahn, FIFO) of its nordered vertices;
                                       NULL unless the policy has needs_cost or the backend bound */
    uint32_t nordered;
    const uint32_t *ndeps;          /* incoming edges per vertex */
    const uint32_t *queue;          /* per vertex: its ready queue, or TP__NO_QUEUE (inputs) */
    uint32_t nqueues;
    const uint32_t *qsize;          /* per queue: vertices that ever enter it */
    const uint32_t *group_next;     /* per vertex: the next member (ascending index) of its sum-into
                                       group, TP__NONE for the last member and every other vertex */
    const double *cost;             /* per vertex: estimated seconds it runs, alone (the backend's
                                       cost model, or the executor's generic estimate; 0 for what
                                       runs on no engine); NULL unless the policy has needs_cost;
                                       valid during init only */
} tp__policy_env;

typedef struct tp__policy {
    const char *name;
    const char *help;
    /* *state gets the policy's state for every queue of one executor */
    tp_status (*init)(const tp__policy_env *env, void **state, tp_error *err);
    /* before each run: every queue empty; seed is the run's */
    void (*reset)(void *state, uint64_t seed);
    /* v (of queue q) has all its dependencies done */
    void (*push)(void *state, uint32_t q, uint32_t v);
    /* the vertex of queue q to start now, removed from it, or TP__NONE */
    uint32_t (*pop)(void *state, uint32_t q);
    void (*free)(void *state);
    /* 1: the executor serves every sum-into group's lock in member order (a policy whose order
     * is fixed in advance puts the members in that order: a lock served otherwise could wait
     * on a member the policy will only start later) */
    int ordered_locks;
    /* 1: init wants tp__policy_env.cost (the executor computes it only then) */
    int needs_cost;
} tp__policy;

/* The policy of that name (NULL or "": the default), or NULL. */
const tp__policy *tp__policy_find(const char *name);

/* A FIFO ring per queue, for the policies built on one (any, random). */
typedef struct tp__rings {
    uint32_t nq;
    uint32_t *v;                  /* every queue's slots, back to back */
    uint32_t *off, *cap, *head, *count;
} tp__rings;
tp_status tp__rings_init(tp__rings *r, const tp__policy_env *env, tp_error *err);
void tp__rings_reset(tp__rings *r);
void tp__rings_push(tp__rings *r, uint32_t q, uint32_t v);
/* removes the element k places behind the head (0: the head) after swapping it there */
uint32_t tp__rings_take(tp__rings *r, uint32_t q, uint32_t k);
void tp__rings_free(tp__rings *r);

/* Each queue's offset in one array of all queues' vertices (env->qsize laid end to end) into
 * off[0..nqueues); returns the total. */
size_t tp__queue_offsets(const tp__policy_env *env, uint32_t *off);

#endif
