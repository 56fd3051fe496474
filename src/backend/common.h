/* common.h - what every backend shares (internal): the plan it was given, where a region's
 * bytes are, which lane a unit is, the inputs of a kernel, the fault-injection hook, failed
 * completions that carry their own error, the standard GPU-like engine table, kernel
 * preparation over a MemGraph, and parsing of text options for the registry. A backend is one
 * file under src/backend/ that fills a tp__backend_ops (exec/backend.h) with designated
 * initializers, plus one entry in registry.c. */
#ifndef TP__BACKEND_COMMON_H
#define TP__BACKEND_COMMON_H

#include <stdint.h>
#include "exec/backend.h"
#include "turnip/backend.h"
#include "kernels/kernels.h"

/* The plan a backend was prepared for: its own copy of the executor's info and options. */
typedef struct tp__plan_ctx {
    tp__plan_info pi;
    tp_run_opts ro;          /* pi.opts points here */
    const tp_graph *g;
    int nd;                  /* devices */
    int lane_base[TP_MAX_ENGINES], lanes; /* lanes of one device: engine e's start, and in all */
} tp__plan_ctx;
void tp__plan_ctx_set(tp__plan_ctx *c, const tp__plan_info *pi);
/* Lane of unit `unit` of v's engine, counted over all devices: device * lanes + the engine's
 * base + (the unit, for an engine whose units are lanes of their own; 0 for an in-order
 * queue). A backend runs one worker/stream per lane. */
static inline int tp__lane(const tp__plan_ctx *c, uint32_t v, int unit)
{
    int e = c->pi.engine[v];
    return c->pi.device[v] * c->lanes + c->lane_base[e] + (c->pi.engines[e].lanes ? 0 : unit);
}
/* Engine of lane index k within a device, and whether it computes. */
int tp__lane_engine(const tp__plan_ctx *c, int k);

/* The engines of the cpu, sim and cuda backends: per device `streams` compute streams (kernels
 * and sum-into accumulates; joins run on no engine) and one
 * in-order copy engine each for host-to-device (reloads), device-to-host (offloads) and
 * peer-in (transfers into the device), each taking copy_depth vertices at once. Returns 4. */
int tp__engines_gpu_like(const tp_run_opts *o, tp__engine *out);
enum { TP__ENG_COMPUTE = 0, TP__ENG_H2D, TP__ENG_D2H, TP__ENG_PEER, TP__ENG_GPU_LIKE };

/* How a backend takes and gives back its memory (tp__mem). The allocators set *out to what
 * they allocated even when they then fail (NULL if nothing), so it is freed. */
typedef struct tp__mem_alloc {
    /* before anything is allocated (NULL: no check): whether the machine can back nd arenas
     * of cap[] and a host block; `what` names the asker in messages ("the plan", "the session") */
    tp_status (*fits)(void *ctx, int nd, const uint64_t *cap, uint64_t host_bytes, const char *what, tp_error *err);
    tp_status (*dev)(void *ctx, int d, uint64_t bytes, uint8_t **out, tp_error *err); /* zeroed */
    tp_status (*host)(void *ctx, uint64_t bytes, int zero, uint8_t **out, tp_error *err);
    void (*dev_free)(void *ctx, int d, uint8_t *p);
    void (*host_free)(void *ctx, uint8_t *p);
    int zero_host; /* memory per plan: the host block is zeroed too (a session's always is) */
} tp__mem_alloc;

/* Device and host memory as base pointers and sizes, and whose it is: a plan's (prepare to
 * release) or an open session's (open to close; plans are checked against it). */
typedef struct tp__mem {
    uint8_t *dev[TP_MAX_DEVICES];
    uint64_t cap[TP_MAX_DEVICES];
    uint8_t *host;
    uint64_t host_bytes;
    int nd;
    int session;  /* a session is open: the memory is kept across plans */
    int plan;     /* a plan is prepared on it */
    const char *backend;         /* for messages ("cpu") */
    const tp__mem_alloc *alloc;  /* NULL: a backend with no data (sim) keeps sizes only */
    void *ctx;                   /* the allocators' */
} tp__mem;
/* Once, when the backend is made. */
void tp__mem_init(tp__mem *m, const char *backend, const tp__mem_alloc *a, void *ctx);
/* Opens a session: nd arenas of cap[] bytes and a host block, zeroed, kept until
 * tp__mem_close. TP_ERR_ARG while a session is open or a plan prepared; on failure nothing is
 * kept. */
tp_status tp__mem_open(tp__mem *m, int nd, const uint64_t *cap, uint64_t host_bytes, tp_error *err);
/* The memory of plan mg. In a session (session: the executor says it runs in one; it must
 * agree with the backend, TP_ERR_ARG otherwise) checks that mg fits: the same number of
 * devices, each capacity and the host bytes at most the session's (TP_ERR_ARG naming the
 * device or host memory, the plan's size and the session's); nothing is allocated or cleared.
 * Otherwise allocates arenas of exactly mg's capacities, zeroed, and its host block; after a
 * failure tp__mem_release frees what was taken. */
tp_status tp__mem_prepare(tp__mem *m, const tp_memgraph *mg, int session, tp_error *err);
/* The plan is done: frees its memory, unless a session keeps it. */
void tp__mem_release(tp__mem *m);
/* Closes the session (after tp__mem_release of any plan): frees everything. */
void tp__mem_close(tp__mem *m);
/* The open session's host block, NULL when none is open (a backend's host_block op). */
static inline void *tp__mem_session_host(const tp__mem *m)
{
    return m->session ? m->host : NULL;
}
static inline uint8_t *tp__mem_ptr(const tp__mem *m, const tp_region *r)
{
    return r->space == TP_SPACE_HOST ? m->host + r->offset : m->dev[r->device] + r->offset;
}
/* TP_OK if r lies inside its memory, else TP_ERR_ARG (for write and read). */
tp_status tp__mem_check(const tp__mem *m, const tp_region *r, tp_error *err);
/* Pointers to the regions kernel mv reads, in argument order: into inb (room for `room`) or a
 * malloc'd array (*heap set; the caller frees it). NULL on OOM. */
const void **tp__gather_inputs(const tp__mem *m, const tp_memgraph *mg, const tp_mvertex *mv, const void **inb, uint32_t room,
                               int *heap);

/* The fault-injection hook (tp_run_opts.fail_vertex): TP_OK, or the injected failure in err. */
tp_status tp__fault_injected(tp_error *err);
static inline tp_status tp__fault(const tp__plan_ctx *c, uint32_t v, tp_error *err)
{
    return (int64_t)v == c->ro.fail_vertex ? tp__fault_injected(err) : TP_OK;
}

/* Fills a completion; a failure takes a malloc'd copy of e (see tp__done). */
void tp__done_fail(tp__done *d, const tp_error *e);
static inline void tp__done_set(tp__done *d, uint32_t v, tp_status s, double t0, double t1, const tp_error *e)
{
    d->vertex = v;
    d->status = s;
    d->t0 = t0;
    d->t1 = t1;
    d->err = NULL;
    if (s != TP_OK) tp__done_fail(d, e);
}

/* Prepares every kernel of mg: *kp gets a new array (caller frees) indexed by TaskGraph
 * vertex, scratch[d] the most f32 scratch one kernel on device d needs, as `need` counts it
 * (NULL: the cpu kernels' kp->scratch_floats). */
tp_status tp__kernels_prepare(const tp_memgraph *mg, tp__kplan **kp, uint64_t scratch[TP_MAX_DEVICES],
                              uint64_t (*need)(const tp_graph *g, uint32_t v, const tp__kplan *kp), tp_error *err);


/* ---- the registry (registry.c) ------------------------------------------------------------ */

typedef struct tp__backend_entry {
    tp_backend_info info;
    tp_status (*make)(const tp_backend_opt *opts, int nopts, tp_backend **out, tp_error *err);
} tp__backend_entry;
/* A number option in [lo, hi]; TP_ERR_ARG naming backend and key otherwise. */
tp_status tp__opt_number(const char *backend, const tp_backend_opt *o, double lo, double hi, double *out, tp_error *err);
/* TP_OK if every option's key is one of `keys` (NULL-terminated), else TP_ERR_ARG. */
tp_status tp__opt_known(const char *backend, const char *const *keys, const tp_backend_opt *opts, int nopts, tp_error *err);

#endif
