/* cpu.c - the cpu backend: emulated GPUs on the host.
 *
 * A device is one memory arena of exactly its capacity (or, in a session, of the session's,
 * taken and zeroed once at open and kept across plans: backend/common.h tp__mem); its
 * compute streams are worker threads that run the CPU kernels of src/kernels; its
 * host-to-device, device-to-host and peer-in copy engines are worker threads that memcpy and
 * then, to emulate a PCIe link, wait until latency + bytes / bandwidth has passed since the
 * transfer began, stretched by a seeded log-normal jitter (the nondeterminism the paper is
 * about); a copy queued while the one before it was moving begins when that one ends, as on
 * a DMA engine, not when the worker comes back for it (run_vertex). A worker takes jobs
 * from a small in-order queue (one slot per executor unit it serves: a compute stream has
 * one, a copy engine `copy_depth`, so the next copy is already queued when one ends, as on a
 * CUDA stream) and posts each completion to the executor's sink. Workers spin briefly before
 * they sleep. A kernel's launch wakes no worker: a compute worker still spinning claims it,
 * else the executor claims it in help() when it would wait and runs it on its own thread
 * (docs/benchmarks.md "Wake-up stalls": a futex wake-up costs tens of us on 2 busy cores).
 *
 * BLAS threads: OpenBLAS's helpers spin between calls and take the cores the executor and the
 * workers need (src/kernels/blas.c), so prepare gives each compute stream an equal share of
 * the cores left after one for the executor and the copy engines: max(1, (cores - 1) /
 * compute streams in all), unless OPENBLAS_NUM_THREADS is set.
 *
 * Opaque kernels (sizes and flops only) do nothing unless tp_cpu_opts.opaque_rate is set; then
 * one of F flops sleeps until F / rate seconds after its start (clock_nanosleep to an absolute
 * time on tp__now's clock; the compute workers' timer slack lowered to 1 ns on Linux, so the
 * wake-up comes tens of microseconds late, not the default 50 us plus), on its stream's
 * worker: help() then never runs a kernel on the executor's thread, which must stay free to
 * launch the copies that overlap the "computation". */
#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include "backend/common.h"
#include "exec/sleeper.h"
#include "io/util.h"
#include "turnip/io.h"

#define NO_JOB UINT32_MAX
#define RING 4 /* queued vertices per worker */
_Static_assert(RING >= TP_MAX_COPY_DEPTH, "a copy worker holds every vertex the executor queues on its engine");

typedef struct worker {
    struct cpu *cpu;
    int device, engine;
    pthread_t th;
    int started;
    tp__sleeper sl;
    atomic_uint ring[RING]; /* queued vertices; producer: the executor, consumer: the worker (or,
                               for a compute lane, the executor's help(), whichever claims it) */
    _Atomic double queued[RING]; /* a copy lane's on a throttled link: when each was queued (tp__now); else 0 */
    atomic_uint wpos, cpos; /* next position written; next position to claim (a CAS claims) */
    double link_free;       /* a copy lane's worker only: when its last emulated transfer ended */
    int compute;            /* a compute stream: launch leaves its job to whichever claims it first */
    float *scratch;
    tp_error err;
} worker;

typedef struct cpu {
    tp_backend base;
    tp_cpu_opts o;
    tp__plan_ctx pc;
    tp__mem mem;
    tp__kplan *kp; /* per TaskGraph vertex */
    double *opaque_s; /* with an opaque rate (else NULL), per TaskGraph vertex: the seconds an opaque
                         kernel sleeps (opaque_seconds), 0 for the rest */
    worker *w;
    int nw;
} cpu;

/* t >= 0 seconds as a timespec, at most 10^9 s (an emulated copy's time has no cap of its own:
 * bytes over the slowest link, stretched by the jitter, can exceed what a time_t holds) */
static struct timespec ts_of(double t)
{
    if (!(t < 1e9)) t = 1e9;
    struct timespec ts = {(time_t)t, 0};
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec < 0) ts.tv_nsec = 0;
    if (ts.tv_nsec > 999999999L) ts.tv_nsec = 999999999L;
    return ts;
}

/* Waits until t on tp__now's clock (CLOCK_MONOTONIC): sleeps to 100 us before t (sleeps
 * overshoot by tens of us), then polls, yielding the core at each poll: a copy engine that
 * spun out the end of each emulated transfer held a core the executor and the compute workers
 * needed (on 2 cores, 0.4 ms between a reload's end and the next kernel). */
static void wait_until(double t)
{
    for (;;) {
        double left = t - tp__now();
        if (left <= 0) return;
        if (left > 200e-6) {
            struct timespec ts = ts_of(left - 100e-6);
            nanosleep(&ts, NULL);
        } else {
            sched_yield();
        }
    }
}

/* Sleeps until t on tp__now's clock (CLOCK_MONOTONIC), without polling. t is at most
 * TP_CPU_OPAQUE_WAIT_MAX seconds after now (checked in prepare), so it fits a time_t. */
static void sleep_until(double t)
{
    struct timespec ts = ts_of(t);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* The seconds opaque kernel `task` (a TaskGraph vertex) sleeps: flops / opaque_rate; 0 without
 * a rate, for other ops and for other kinds of vertex */
static double opaque_seconds(const cpu *c, uint32_t task)
{
    const tp_vertex *t = tp_graph_vertex(c->pc.g, task);
    if (!(c->o.opaque_rate > 0) || t->kind != TP_V_KERNEL || c->kp[task].op != TP__OP_OPAQUE) return 0;
    return t->flops / c->o.opaque_rate;
}

/* Runs vertex v, queued at time `queued` (a copy lane's; 0 for kernels); *begin is when it began:
 * the time of the call, or for a copy on a throttled link, when its transfer began in the model
 * (below). */
static tp_status run_vertex(worker *w, uint32_t v, double queued, double *begin)
{
    cpu *c = w->cpu;
    tp_mvertex mv;
    tp_memgraph_vertex(c->pc.pi.mg, v, &mv);
    tp_status s = tp__fault(&c->pc, v, &w->err);
    if (s) return s;
    if (mv.kind == TP_M_KERNEL && c->opaque_s && c->kp[mv.task].op == TP__OP_OPAQUE) {
        sleep_until(tp__now() + c->opaque_s[mv.task]); /* an opaque kernel touches no data */
        return TP_OK;
    }
    uint8_t *out = tp__mem_ptr(&c->mem, &mv.write);
    if (mv.kind == TP_M_ACCUMULATE) { /* sum-into: R += a_i (reads[1]); R holds the group's running sum */
        tp_mvertex src;
        tp_memgraph_vertex(c->pc.pi.mg, mv.reads[1], &src);
        const tp_vertex *t = tp_graph_vertex(c->pc.g, mv.task), *a = tp_graph_vertex(c->pc.g, src.task);
        tp__accumulate(t->dtype, out, a->dtype, tp__mem_ptr(&c->mem, &src.write), tp__numel(t));
        return TP_OK;
    }
    if (mv.kind == TP_M_KERNEL) {
        const void *inb[16];
        int heap;
        const void **in = tp__gather_inputs(&c->mem, c->pc.pi.mg, &mv, inb, 16, &heap);
        if (!in) return tp__fail(&w->err, TP_ERR_NOMEM, "out of memory");
        s = tp__kernel_run(c->pc.g, mv.task, &c->kp[mv.task], in, out, w->scratch, &w->err);
        if (heap) free(in);
        return s;
    }
    /* a copy: transfer, offload or reload */
    tp_mvertex src;
    tp_memgraph_vertex(c->pc.pi.mg, mv.reads[0], &src);
    double t0 = tp__now();
    memcpy(out, tp__mem_ptr(&c->mem, &src.write), mv.write.bytes);
    double modeled = tp__now() - t0;
    if (c->o.link_gbps > 0) {
        modeled = c->o.link_latency_us * 1e-6 + (double)mv.write.bytes / (c->o.link_gbps * 1e9);
        /* A throttled link is a DMA queue: a copy queued while the one before was still
         * moving starts when that one's transfer ends, not when this thread has posted its
         * completion and come back for the next (several us on 2 busy cores, paid once per
         * copy, which no copy engine pays). A copy queued on an idle link starts when it was
         * queued. Never later than now, never before it was queued: the executor's own
         * reaction stays in the time. */
        double b = queued > w->link_free ? queued : w->link_free;
        if (b > 0 && b < t0) *begin = t0 = b;
    } else {
        modeled += c->o.link_latency_us * 1e-6;
    }
    if (c->o.jitter > 0) modeled *= exp(c->o.jitter * tp__normal(c->pc.ro.seed * 1000003ull + v));
    wait_until(t0 + modeled);
    w->link_free = t0 + modeled;
    return TP_OK;
}

static int has_job(void *ctx)
{
    worker *w = ctx;
    return atomic_load(&w->cpos) != atomic_load(&w->wpos);
}

/* claims lane w's next job: 1 and *v when this thread got it (a slot is rewritten only after
 * its job's completion was taken, so reading it after the claim is safe) */
static int claim(worker *w, uint32_t *v, double *queued)
{
    unsigned r = atomic_load(&w->cpos);
    if (r == atomic_load(&w->wpos) || !atomic_compare_exchange_strong(&w->cpos, &r, r + 1)) return 0;
    *v = atomic_load(&w->ring[r % RING]);
    *queued = atomic_load(&w->queued[r % RING]);
    return 1;
}

static void run_post(worker *w, uint32_t v, double queued)
{
    double t0 = tp__now();
    tp_status s = run_vertex(w, v, queued, &t0);
    tp__done d;
    tp__done_set(&d, v, s, t0, tp__now(), &w->err);
    tp__sink_post(w->cpu->pc.pi.sink, &d);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    uint32_t v;
    double queued;
#ifdef __linux__
    if (w->compute && w->cpu->o.opaque_rate > 0) prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); /* this thread's timed sleeps */
#endif
    while (tp__sleeper_wait(&w->sl, has_job, w, TP__SPIN_US))
        if (claim(w, &v, &queued)) run_post(w, v, queued); /* 0 on a compute lane: never set */
    return NULL;
}

/* A copy wakes its worker. A kernel only wakes nothing: a worker still spinning takes it, else
 * the executor runs it in cpu_help before it waits (no futex wake-up on the critical path). */
static void cpu_launch(tp_backend *be, uint32_t v, int unit)
{
    cpu *c = (cpu *)be;
    worker *w = &c->w[tp__lane(&c->pc, v, unit)];
    unsigned p = atomic_load(&w->wpos);
    atomic_store(&w->ring[p % RING], v);
    if (!w->compute && c->o.link_gbps > 0) atomic_store(&w->queued[p % RING], tp__now()); /* read by a throttled link only */
    atomic_store(&w->wpos, p + 1);
    if (!w->compute) tp__sleeper_wake(&w->sl);
}

/* The executor would wait: it claims the first unclaimed kernel and runs it itself, after
 * waking the workers of the other unclaimed kernels so that they run beside it. With an opaque
 * rate it only wakes them: a sleeping kernel must not hold the executor's thread. */
static int cpu_help(tp_backend *be, int run)
{
    cpu *c = (cpu *)be;
    worker *mine = NULL;
    uint32_t v = 0;
    double queued;
    if (c->o.opaque_rate > 0) run = 0;
    for (int i = 0; i < c->nw; i++) {
        worker *w = &c->w[i];
        if (!w->compute || !has_job(w)) continue;
        if (run && !mine && claim(w, &v, &queued)) mine = w;
        else tp__sleeper_wake(&w->sl);
    }
    if (!mine) return 0;
    run_post(mine, v, 0);
    return 1;
}

static void cpu_release(tp_backend *be)
{
    cpu *c = (cpu *)be;
    for (int i = 0; i < c->nw; i++) {
        worker *w = &c->w[i];
        if (!w->started) continue;
        tp__sleeper_stop(&w->sl);
        pthread_join(w->th, NULL);
        tp__sleeper_destroy(&w->sl);
    }
    for (int i = 0; i < c->nw; i++) free(c->w[i].scratch);
    free(c->w);
    c->w = NULL;
    c->nw = 0;
    tp__mem_release(&c->mem);
    free(c->kp);
    c->kp = NULL;
    free(c->opaque_s);
    c->opaque_s = NULL;
}

/* ---- memory: posix_memalign'ed blocks (tp__mem, backend/common.h) ---- */

/* address space a device's threads may map under ulimit -v (cpu_fits): OpenBLAS's 128 MiB buffer
 * of a thread in sgemm, and a malloc arena (64 MiB reserved) for its worker threads; one more
 * for the executor's thread and OpenBLAS's own. Measured: 3 devices hung at a limit of 488 MiB,
 * 1 device below 244 MiB (tiny LLaMA prefill, one run each, before this check). */
#define TP__CPU_AS_PER_DEVICE (192ull << 20)

/* whether the machine can back the arenas and the host block: an arena posix_memalign grants
 * but RAM cannot back meets the OOM killer while it is cleared */
static tp_status cpu_fits(void *ctx, int nd, const uint64_t *cap, uint64_t host, const char *what, tp_error *err)
{
    (void)ctx;
    uint64_t need = host, avail = tp_host_mem_limit();
    for (int d = 0; d < nd; d++) need = need > UINT64_MAX - cap[d] ? UINT64_MAX : need + cap[d];
    uint64_t as = tp__address_space_left();
    if (as != UINT64_MAX) {
        /* Under ulimit -v the threads' address space counts too: OpenBLAS maps a 128 MiB buffer
         * for each thread in sgemm and, short of it, retries forever (a run that hangs), and
         * each worker has its stack and a malloc arena. Room for them per device, or exit 2;
         * memory itself (MemAvailable) is checked below with its own message. */
        uint64_t r = (uint64_t)(nd + 1) * TP__CPU_AS_PER_DEVICE;
        if (need > UINT64_MAX - r || need + r > as) {
            char a[32], b[32], h[32], q[32];
            return tp__fail(err, TP_ERR_DEVICE,
                            "cpu backend: %s needs %s of device arenas and %s of host memory, and about %s of address space "
                            "for its threads (OpenBLAS's buffers, stacks) under the address-space limit (ulimit -v), "
                            "which leaves %s",
                            what, tp_format_size(need - host, a, sizeof a), tp_format_size(host, h, sizeof h),
                            tp_format_size(r, q, sizeof q), tp_format_size(as, b, sizeof b));
        }
    }
    if (need <= avail) return TP_OK;
    char a[32], b[32], h[32];
    return tp__fail(err, TP_ERR_DEVICE,
                    "cpu backend: %s needs %s of device arenas and %s of host memory, the machine has %s available", what,
                    tp_format_size(need - host, a, sizeof a), tp_format_size(host, h, sizeof h),
                    tp_format_size(avail, b, sizeof b));
}

static tp_status cpu_dev_alloc(void *ctx, int d, uint64_t bytes, uint8_t **out, tp_error *err)
{
    (void)ctx;
    void *p = NULL;
    if (posix_memalign(&p, 256, bytes ? bytes : 1)) {
        char b[32];
        return tp__fail(err, TP_ERR_NOMEM, "cpu backend: cannot allocate device %d's %s", d, tp_format_size(bytes, b, sizeof b));
    }
    memset(p, 0, bytes);
    *out = p;
    return TP_OK;
}

static tp_status cpu_host_alloc(void *ctx, uint64_t bytes, int zero, uint8_t **out, tp_error *err)
{
    (void)ctx;
    void *p = NULL;
    if (posix_memalign(&p, 256, bytes ? bytes : 1))
        return tp__fail(err, TP_ERR_NOMEM, "cpu backend: cannot allocate %llu bytes of host memory", (unsigned long long)bytes);
    if (zero) memset(p, 0, bytes);
    *out = p;
    return TP_OK;
}

static void cpu_dev_free(void *ctx, int d, uint8_t *p)
{
    (void)ctx, (void)d;
    free(p);
}

static void cpu_host_free(void *ctx, uint8_t *p)
{
    (void)ctx;
    free(p);
}

static tp_status cpu_fits_op(tp_backend *be, int nd, const uint64_t *cap, uint64_t host_bytes, tp_error *err)
{
    (void)be;
    return cpu_fits(NULL, nd, cap, host_bytes, "a run at these caps", err);
}

static const tp__mem_alloc cpu_alloc = {cpu_fits, cpu_dev_alloc, cpu_host_alloc, cpu_dev_free, cpu_host_free, 1};

static tp_status cpu_prepare(tp_backend *be, const tp__plan_info *pi, tp_error *err)
{
    cpu *c = (cpu *)be;
    if (c->w) return tp__fail(err, TP_ERR_ARG, "cpu backend: already prepared");
    tp__plan_ctx_set(&c->pc, pi);
    for (int e = 0; e < pi->nengines; e++) /* a lane's worker queues every unit of its engine */
        if ((pi->engines[e].lanes ? pi->engines[e].units : 1) > RING)
            return tp__fail(err, TP_ERR_ARG, "cpu backend: engine %s queues %d vertices, a worker holds %d", pi->engines[e].name,
                            pi->engines[e].units, RING);
    const tp_memgraph *mg = pi->mg;
    uint64_t scratch[TP_MAX_DEVICES];
    tp_status ks = tp__kernels_prepare(mg, &c->kp, scratch, NULL, err);
    if (ks) {
        cpu_release(be);
        return ks;
    }
    if (c->o.opaque_rate > 0 && !(c->opaque_s = malloc(((size_t)tp_graph_size(c->pc.g) + 1) * sizeof *c->opaque_s))) {
        cpu_release(be);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    for (uint32_t t = 0; t < tp_graph_size(c->pc.g) && c->opaque_s; t++) { /* every sleep ends, its deadline fits a time_t */
        double sec = c->opaque_s[t] = opaque_seconds(c, t);
        if (sec > TP_CPU_OPAQUE_WAIT_MAX) {
            const tp_vertex *tv = tp_graph_vertex(c->pc.g, t);
            cpu_release(be);
            return tp__fail(err, TP_ERR_ARG,
                            "cpu backend: vertex '%s' (opaque, %g flops) would take %g s at --opaque-rate %g, more than %g s",
                            tv->id, tv->flops, sec, c->o.opaque_rate, TP_CPU_OPAQUE_WAIT_MAX);
        }
    }
    /* all memory, once, before anything runs (or the session's, checked) */
    tp_status ms = tp__mem_prepare(&c->mem, mg, pi->session, err);
    if (ms) {
        cpu_release(be);
        return ms;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN), share = (cores - 1) / (c->pc.nd * c->pc.ro.streams);
    if (!tp__blas_threads(share < 1 ? 1 : (int)share)) {
        cpu_release(be);
        return tp__fail(err, TP_ERR_DEVICE, "cpu backend: cannot load OpenBLAS (libopenblas.so.0; scripts/install-deps.sh)");
    }
    c->nw = c->pc.nd * c->pc.lanes; /* one worker per lane: a compute stream or a copy engine */
    c->w = calloc((size_t)c->nw, sizeof *c->w);
    if (!c->w) {
        cpu_release(be);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < c->nw; i++) {
        worker *w = &c->w[i];
        w->cpu = c;
        w->device = i / c->pc.lanes;
        w->engine = tp__lane_engine(&c->pc, i % c->pc.lanes);
        for (int q = 0; q < RING; q++) {
            atomic_init(&w->ring[q], NO_JOB);
            atomic_init(&w->queued[q], 0.0);
        }
        atomic_init(&w->wpos, 0);
        atomic_init(&w->cpos, 0);
        /* help() runs a compute lane's job with that lane's scratch: only lanes of one job at a
         * time (engines without queued lanes) qualify, or a worker and the executor could overlap */
        w->compute = !pi->engines[w->engine].moves && !pi->engines[w->engine].lanes;
        if (!pi->engines[w->engine].moves && scratch[w->device]) {
            w->scratch = malloc(scratch[w->device] * sizeof(float));
            if (!w->scratch) {
                cpu_release(be);
                return tp__fail(err, TP_ERR_NOMEM, "out of memory");
            }
        }
        tp__sleeper_init(&w->sl);
        if (pthread_create(&w->th, NULL, worker_main, w)) {
            tp__sleeper_destroy(&w->sl);
            cpu_release(be);
            return tp__fail(err, TP_ERR_NOMEM, "cpu backend: cannot start a worker thread");
        }
        w->started = 1;
    }
    return TP_OK;
}

static tp_status cpu_write(tp_backend *be, const tp_region *r, const void *src, tp_error *err)
{
    cpu *c = (cpu *)be;
    tp_status s = tp__mem_check(&c->mem, r, err);
    if (!s) memcpy(tp__mem_ptr(&c->mem, r), src, r->bytes);
    return s;
}

static tp_status cpu_read(tp_backend *be, const tp_region *r, void *dst, tp_error *err)
{
    cpu *c = (cpu *)be;
    tp_status s = tp__mem_check(&c->mem, r, err);
    if (!s) memcpy(dst, tp__mem_ptr(&c->mem, r), r->bytes);
    return s;
}

static int cpu_engines(tp_backend *be, const tp_run_opts *o, tp__engine *out)
{
    (void)be;
    return tp__engines_gpu_like(o, out);
}

static tp_status cpu_open(tp_backend *be, int ndevices, const uint64_t *cap, uint64_t host_bytes, tp_error *err)
{
    return tp__mem_open(&((cpu *)be)->mem, ndevices, cap, host_bytes, err);
}

static void cpu_close(tp_backend *be)
{
    tp__mem_close(&((cpu *)be)->mem);
}

static void *cpu_host_block(tp_backend *be)
{
    return tp__mem_session_host(&((cpu *)be)->mem);
}

static void cpu_destroy(tp_backend *be)
{
    cpu_release(be);
    cpu_close(be);
    free(be);
}

static const tp__backend_ops cpu_ops = {
    .name = "cpu",
    .engines = cpu_engines,
    .prepare = cpu_prepare,
    .launch = cpu_launch,
    .help = cpu_help,
    .write = cpu_write,
    .read = cpu_read,
    .release = cpu_release,
    .destroy = cpu_destroy,
    .open = cpu_open,
    .fits = cpu_fits_op,
    .close = cpu_close,
    .host_block = cpu_host_block,
};

void tp_cpu_opts_init(tp_cpu_opts *o)
{
    memset(o, 0, sizeof *o);
}

tp_status tp_backend_cpu_new(const tp_cpu_opts *o, tp_backend **out, tp_error *err)
{
    *out = NULL;
    if (o && !(o->link_gbps == 0 || (o->link_gbps >= TP_CPU_LINK_GBPS_MIN && o->link_gbps <= TP_CPU_LINK_GBPS_MAX)))
        return tp__fail(err, TP_ERR_ARG, "cpu backend: link bandwidth must be 0 (none) or in [%g, %g] GB/s, not %g",
                        TP_CPU_LINK_GBPS_MIN, TP_CPU_LINK_GBPS_MAX, o->link_gbps);
    if (o && !(o->link_latency_us >= 0 && o->link_latency_us <= TP_CPU_LATENCY_US_MAX))
        return tp__fail(err, TP_ERR_ARG, "cpu backend: link latency must be in [0, %g] us, not %g", TP_CPU_LATENCY_US_MAX,
                        o->link_latency_us);
    if (o && !(o->jitter >= 0 && o->jitter <= TP_CPU_JITTER_MAX))
        return tp__fail(err, TP_ERR_ARG, "cpu backend: jitter must be in [0, %g], not %g", TP_CPU_JITTER_MAX, o->jitter);
    if (o && !(o->opaque_rate == 0 || (o->opaque_rate >= TP_CPU_OPAQUE_RATE_MIN && o->opaque_rate <= TP_CPU_OPAQUE_RATE_MAX)))
        return tp__fail(err, TP_ERR_ARG, "cpu backend: opaque rate must be 0 (none) or in [%g, %g] flops/s, not %g",
                        TP_CPU_OPAQUE_RATE_MIN, TP_CPU_OPAQUE_RATE_MAX, o->opaque_rate);
    cpu *c = calloc(1, sizeof *c);
    if (!c) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    c->base.ops = &cpu_ops;
    if (o) c->o = *o;
    tp__mem_init(&c->mem, "cpu", &cpu_alloc, c);
    *out = &c->base;
    return TP_OK;
}

/* the backend's options: key, field of tp_cpu_opts, range (cpu_keys and cpu_helps in this order) */
static const struct {
    size_t field;
    double lo, hi;
} cpu_opt_fields[] = {
    {offsetof(tp_cpu_opts, link_gbps), TP_CPU_LINK_GBPS_MIN, TP_CPU_LINK_GBPS_MAX},
    {offsetof(tp_cpu_opts, link_latency_us), 0, TP_CPU_LATENCY_US_MAX},
    {offsetof(tp_cpu_opts, jitter), 0, TP_CPU_JITTER_MAX},
    {offsetof(tp_cpu_opts, opaque_rate), TP_CPU_OPAQUE_RATE_MIN, TP_CPU_OPAQUE_RATE_MAX},
};
static const char *const cpu_keys[] = {"link-bandwidth", "link-latency", "jitter", "opaque-rate", NULL};
static const char *const cpu_helps[] = {"GB/s cap of host-device and peer copies (default: unthrottled memcpy)",
                                        "microseconds added to every copy", "copy time x exp(F x N(0,1)), seeded per vertex",
                                        "flops/s of opaque kernels: one of F flops sleeps F / R s (default: no time)", NULL};
_Static_assert(sizeof cpu_opt_fields / sizeof cpu_opt_fields[0] == sizeof cpu_keys / sizeof cpu_keys[0] - 1,
               "a field and a range for every cpu key");

static tp_status cpu_make(const tp_backend_opt *opts, int nopts, tp_backend **out, tp_error *err)
{
    tp_cpu_opts o;
    tp_cpu_opts_init(&o);
    for (int i = 0; i < nopts; i++) { /* the registry passes only cpu_keys */
        int k = 0;
        while (cpu_keys[k] && strcmp(opts[i].key, cpu_keys[k])) k++;
        if (!cpu_keys[k]) return tp__fail(err, TP_ERR_ARG, "cpu backend: no option '%s'", opts[i].key);
        double *dst = (double *)((char *)&o + cpu_opt_fields[k].field);
        tp_status s = tp__opt_number("cpu", &opts[i], cpu_opt_fields[k].lo, cpu_opt_fields[k].hi, dst, err);
        if (s) return s;
    }
    return tp_backend_cpu_new(&o, out, err);
}

const tp__backend_entry tp__backend_cpu = {
    {"cpu", "emulated GPUs: memory arenas of exactly the cap, worker threads for streams and copy engines", cpu_keys,
     cpu_helps, NULL},
    cpu_make,
};
