/* backend.h - the driver table every backend fills (internal), in the manner of StarPU's
 * driver structures: prepare once, launch asynchronously, post completions to the sink. */
#ifndef TP__BACKEND_H
#define TP__BACKEND_H

#include <pthread.h>
#include <stdatomic.h>
#include "turnip/exec.h"

/* One completion, posted by a backend thread. */
typedef struct tp__done {
    uint32_t vertex;
    tp_status status;
    double t0, t1;        /* start and end, seconds on the executor's clock (tp__now) */
    const tp_error *err;  /* details when status != TP_OK; owned by the backend's unit */
} tp__done;

/* The completion queue (src/exec/sink.c): multi-producer, one consumer. */
typedef struct tp__sink tp__sink;
void tp__sink_post(tp__sink *s, const tp__done *d);

/* What the executor tells a backend about the plan it will run. */
typedef struct tp__plan_info {
    const tp_memgraph *mg;
    const tp_run_opts *opts;
    tp__sink *sink;
    const uint8_t *engine; /* per MemGraph vertex: tp_engine (or TP_ENG_COUNT for inputs) */
    const int16_t *device; /* per MemGraph vertex: device whose engine runs it */
} tp__plan_info;

typedef struct tp__backend_ops {
    const char *name;
    /* allocates memory, checks kernels, starts threads */
    tp_status (*prepare)(tp_backend *be, const tp__plan_info *pi, tp_error *err);
    /* starts vertex v on unit `unit` of its engine; completes through the sink */
    void (*launch)(tp_backend *be, uint32_t v, int unit);
    tp_status (*write)(tp_backend *be, const tp_region *r, const void *src, tp_error *err);
    tp_status (*read)(tp_backend *be, const tp_region *r, void *dst, tp_error *err);
    /* stops threads, frees memory (after every launch has completed) */
    void (*release)(tp_backend *be);
    void (*destroy)(tp_backend *be);
    /* Simulating backends only (NULL otherwise): the clock the executor should use, and a
     * step that moves virtual time to the next event and posts the completions due then
     * (returns 0 when nothing is in flight). Real backends post from their own threads. */
    double (*now)(tp_backend *be);
    int (*advance)(tp_backend *be);
    /* lower bound of the last run's makespan, 0 if the backend cannot tell */
    double (*bound)(tp_backend *be);
} tp__backend_ops;

/* TP_OK if r lies inside its memory: the host block of host_bytes, or device r->device's
 * cap[] (nd devices); else TP_ERR_ARG. For backends' write and read. */
tp_status tp__region_check(const tp_region *r, uint64_t host_bytes, const uint64_t *cap, int nd, tp_error *err);

/* Backend threads that spin, then sleep on a condition variable with `sleeping` set: wake one
 * after queueing work for it (no lost wake-up: both sides use sequentially consistent
 * atomics), or tell it to stop. */
static inline void tp__wake_sleeper(atomic_int *sleeping, pthread_mutex_t *mu, pthread_cond_t *cv)
{
    if (atomic_load(sleeping)) {
        pthread_mutex_lock(mu);
        pthread_cond_signal(cv);
        pthread_mutex_unlock(mu);
    }
}
static inline void tp__stop_sleeper(atomic_int *stop, pthread_mutex_t *mu, pthread_cond_t *cv)
{
    pthread_mutex_lock(mu);
    atomic_store(stop, 1);
    pthread_cond_signal(cv);
    pthread_mutex_unlock(mu);
}

struct tp_backend {
    const tp__backend_ops *ops;
};

#endif
