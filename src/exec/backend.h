/* backend.h - the driver table every backend fills (internal), in the manner of StarPU's
 * driver structures: describe its engines, prepare once, launch asynchronously, post
 * completions to the sink.
 *
 * Contract with the executor (src/exec/exec.c):
 * - engines() describes the engines every device has; the executor maps each MemGraph vertex
 *   to the first engine whose `kinds` include its kind, keeps one ready queue per (device,
 *   engine), and never has more than `units` vertices of one queue in flight.
 * - launch(v, unit) starts v on that unit; the backend posts exactly one completion for it,
 *   from any thread (or from advance() on a simulating backend). The sink holds one slot per
 *   unit of every engine of every device, and a unit is launched again only after the loop
 *   has taken its completion, so posting never finds the ring full. A backend that posts more
 *   than that (a completion nobody launched, two for one launch, an overflowing ring) fails
 *   the run; after an overflow the executor refuses further runs, reads and writes until it is
 *   freed (vertices may still be running). A simulating backend whose advance() leaves the
 *   sink empty while vertices are in flight fails the run naming one. What the executor cannot
 *   detect is a real backend that never posts a completion: that run waits.
 * - A completion carries its own error (tp__done.err, owned by the completion; the executor
 *   frees it), so a backend may reuse its unit's storage at once.
 * - Sessions (exec/session.c): open() takes device arenas and a host block once, zeroed, and
 *   keeps them until close(); while a backend is open, prepare() allocates and clears neither,
 *   only checks that the plan fits them (and that its executor is the session's:
 *   tp__plan_info.session), and release() keeps them. Without a session, prepare() allocates
 *   memory of exactly the plan's sizes, zeroed, and release() frees it. */
#ifndef TP__BACKEND_H
#define TP__BACKEND_H

#include <stdint.h>
#include "turnip/exec.h"

#define TP__NO_ENGINE 0xFF /* tp__plan_info.engine of vertices nothing runs (inputs) */

/* One engine of every device. */
typedef struct tp__engine {
    const char *name;  /* "stream", "h2d", ...: trace tracks and summary columns (static) */
    const char *tag;   /* short name for the totals line ("peer") (static) */
    uint32_t kinds;    /* MemGraph vertex kinds it runs: bits (1u << tp_mkind) */
    int units;         /* vertices in flight at once (>= 1) */
    int lanes;         /* 1: its units run in order on one lane (a copy queue); 0: each unit is
                          its own lane (compute streams) */
    int moves;         /* 1: it moves bytes (copies are counted), 0: it computes */
} tp__engine;

/* One completion, posted by a backend thread. */
typedef struct tp__done {
    uint32_t vertex;
    tp_status status;
    double t0, t1;  /* start and end, seconds on the executor's clock (tp__now, or the
                       simulating backend's now()) */
    tp_error *err;  /* NULL when ok; else details, malloc'd, owned by the completion (the
                       executor frees it); NULL too when even that allocation failed */
} tp__done;

/* The completion queue (src/exec/sink.c): multi-producer, one consumer. */
typedef struct tp__sink tp__sink;
void tp__sink_post(tp__sink *s, const tp__done *d);

/* What the executor tells a backend about the plan it will run. */
typedef struct tp__plan_info {
    const tp_memgraph *mg;
    const tp_run_opts *opts;
    tp__sink *sink;
    int nengines;
    const tp__engine *engines; /* the backend's own table, as engines() gave it */
    const uint8_t *engine;     /* per MemGraph vertex: index into engines, or TP__NO_ENGINE */
    const int16_t *device;     /* per MemGraph vertex: device whose engine runs it */
    int session;               /* 1: the executor runs in the session open on the backend
                                  (tp_exec_new_in): its memory is the session's */
    const uint32_t *succ_off, *succ; /* CSR of every vertex's successors (data and memory edges),
                                        the executor's: valid while the backend is prepared */
    const uint32_t *order;     /* the executor's topological order (Kahn, FIFO) of nordered vertices, as long
                                  as succ; made only for a backend with `bound` or a policy with
                                  needs_cost, else NULL (nordered 0) */
    uint32_t nordered;
} tp__plan_info;

typedef struct tp__backend_ops {
    const char *name;
    /* fills out[0..TP_MAX_ENGINES-1] with the engines of one device for a run with options o;
     * returns how many */
    int (*engines)(tp_backend *be, const tp_run_opts *o, tp__engine *out);
    /* allocates memory (or, in a session, checks that the plan fits the session's), checks
     * kernels, starts threads */
    tp_status (*prepare)(tp_backend *be, const tp__plan_info *pi, tp_error *err);
    /* starts vertex v on unit `unit` of its engine; completes through the sink */
    void (*launch)(tp_backend *be, uint32_t v, int unit);
    tp_status (*write)(tp_backend *be, const tp_region *r, const void *src, tp_error *err);
    tp_status (*read)(tp_backend *be, const tp_region *r, void *dst, tp_error *err);
    /* stops threads (letting what they run finish), frees memory (not a session's); normally
     * every launch has completed, but after a broken run some may still be running */
    void (*release)(tp_backend *be);
    /* closes an open session (frees its memory), then frees the backend */
    void (*destroy)(tp_backend *be);
    /* Sessions (NULL: the backend has none). open: device arenas of cap[d] bytes for devices
     * 0..ndevices-1 (1..TP_MAX_DEVICES, checked by the caller) and a host block of host_bytes,
     * zeroed once, kept until close; TP_ERR_ARG while a session is open or an executor is
     * prepared on the backend. close: frees them; nothing may be prepared then. */
    tp_status (*open)(tp_backend *be, int ndevices, const uint64_t *cap, uint64_t host_bytes, tp_error *err);
    void (*close)(tp_backend *be);
    /* Optional (NULL: not addressable, e.g. a backend that holds no data): the open session's host
     * block, which the caller may read and write directly while no plan runs (pinned memory on
     * cuda, so loads from it need no staging); NULL when no session is open. */
    void *(*host_block)(tp_backend *be);
    /* a run starts (NULL: nothing to do): a backend resets what it counts per run (the
     * lower bound's sums), so every run of one executor is reported on its own */
    void (*begin)(tp_backend *be);
    /* Simulating backends only (NULL otherwise): the clock the executor should use, and a
     * step that moves virtual time to the next event and posts the completions due then;
     * returns 0 when it posted nothing (nothing in flight, or a backend that lost track: the
     * executor then fails the run naming a vertex in flight). Real backends post from their
     * own threads. */
    double (*now)(tp_backend *be);
    int (*advance)(tp_backend *be);
    /* Optional (NULL: the backend's own threads run everything). Called by the executor when it
     * would otherwise wait for a completion: runs one launched vertex that no backend thread
     * has started yet on the calling thread, posts its completion to the sink before it
     * returns, and returns 1; returns 0 when there is none. A backend with help() may leave a
     * launched compute vertex to it instead of waking a sleeping worker (the executor calls it
     * before every wait), so a kernel that follows a completion starts without a cross-thread
     * wake-up; it must wake the workers of other vertices still queued before it runs one.
     * With run 0 it only wakes the workers of launched vertices nobody has started and returns
     * 0: the executor asks this after handling completions, so a kernel launched while
     * completions keep coming is not left waiting for a pause in them. */
    int (*help)(tp_backend *be, int run);
    /* lower bound of the last run's makespan, 0 if the backend cannot tell; its two parts into
     * *resources (what the busiest resource had to do) and *critical (the longest path of
     * dependencies), 0 for a part the backend cannot tell; the bound is the larger */
    double (*bound)(tp_backend *be, double *resources, double *critical);
    /* Optional (NULL: the executor estimates from the MemGraph, exec.c generic_cost). Seconds
     * vertex v of mg (a vertex that runs on an engine) takes on this backend alone: no jitter,
     * no contention, no wake-ups. For the policies that rank by duration (tp__policy.needs_cost);
     * tp_exec_new calls it before prepare(), so it reads only the backend's own model and mg. */
    double (*cost)(tp_backend *be, const tp_memgraph *mg, uint32_t v);
    /* Optional (NULL: nothing known to check). Before planning: whether the backend could hold
     * nd device arenas of cap[] bytes and a host block of host_bytes (the same check prepare and
     * open make, named after the caps); TP_OK, or why not. */
    tp_status (*fits)(tp_backend *be, int nd, const uint64_t *cap, uint64_t host_bytes, tp_error *err);
} tp__backend_ops;

struct tp_backend {
    const tp__backend_ops *ops;
};

#endif
