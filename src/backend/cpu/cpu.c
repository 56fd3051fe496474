/* cpu.c - the cpu backend: emulated GPUs on the host.
 *
 * A device is one memory arena of exactly its capacity; its compute streams are worker
 * threads that run the CPU kernels of src/kernels; its host-to-device, device-to-host and
 * peer-in copy engines are worker threads that memcpy and then, to emulate a PCIe link,
 * wait until latency + bytes / bandwidth has passed, stretched by a seeded log-normal jitter
 * (the nondeterminism the paper is about). A worker takes jobs from a small in-order queue
 * (one slot per executor unit it serves: a compute stream has one, a copy engine
 * `copy_depth`, so the next copy is already queued when one ends, as on a CUDA stream) and
 * posts each completion to the executor's sink. Workers spin briefly before they sleep.
 *
 * BLAS threads: OpenBLAS's helpers spin between calls and take the cores the executor and the
 * workers need (src/kernels/blas.c), so prepare gives each compute stream an equal share of
 * the cores left after one for the executor and the copy engines: max(1, (cores - 1) /
 * compute streams in all), unless OPENBLAS_NUM_THREADS is set. */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "exec/backend.h"
#include "io/util.h"
#include "kernels/kernels.h"
#include "turnip/io.h"

#define NO_JOB UINT32_MAX

typedef struct worker {
    struct cpu *cpu;
    int device, engine, unit;
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_uint ring[4];    /* queued vertices; producer: the executor, consumer: the worker */
    atomic_uint wpos, rpos;
    atomic_int sleeping, stop;
    float *scratch;
    tp_error err;
} worker;

typedef struct cpu {
    tp_backend base;
    tp_cpu_opts o;
    tp__plan_info pi;
    tp_run_opts ro;
    const tp_graph *g;
    int nd;
    uint8_t *dev[TP_MAX_DEVICES];
    uint64_t cap[TP_MAX_DEVICES];
    uint8_t *host;
    uint64_t host_bytes;
    tp__kplan *kp; /* per TaskGraph vertex */
    worker *w;
    int nw, per_dev;
} cpu;

static uint8_t *region_ptr(cpu *c, const tp_region *r)
{
    return r->space == TP_SPACE_HOST ? c->host + r->offset : c->dev[r->device] + r->offset;
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
            struct timespec ts = {(time_t)(left - 100e-6), 0};
            ts.tv_nsec = (long)((left - 100e-6 - (double)ts.tv_sec) * 1e9);
            nanosleep(&ts, NULL);
        } else {
            sched_yield();
        }
    }
}

static tp_status run_vertex(worker *w, uint32_t v)
{
    cpu *c = w->cpu;
    tp_mvertex mv;
    tp_memgraph_vertex(c->pi.mg, v, &mv);
    if ((int64_t)v == c->ro.fail_vertex) return tp__fail(&w->err, TP_ERR_INVALID, "injected fault (test hook)");
    uint8_t *out = region_ptr(c, &mv.write);
    if (mv.kind == TP_M_KERNEL) {
        const void *inb[16], **in = mv.nreads <= 16 ? inb : malloc(mv.nreads * sizeof *in);
        if (!in) return tp__fail(&w->err, TP_ERR_NOMEM, "out of memory");
        for (uint32_t k = 0; k < mv.nreads; k++) {
            tp_mvertex src;
            tp_memgraph_vertex(c->pi.mg, mv.reads[k], &src);
            in[k] = region_ptr(c, &src.write);
        }
        tp_status s = tp__kernel_run(c->g, mv.task, &c->kp[mv.task], in, out, w->scratch, &w->err);
        if (in != inb) free(in);
        return s;
    }
    /* a copy: transfer, offload or reload */
    tp_mvertex src;
    tp_memgraph_vertex(c->pi.mg, mv.reads[0], &src);
    double t0 = tp__now();
    memcpy(out, region_ptr(c, &src.write), mv.write.bytes);
    double modeled = tp__now() - t0;
    if (c->o.link_gbps > 0) modeled = c->o.link_latency_us * 1e-6 + (double)mv.write.bytes / (c->o.link_gbps * 1e9);
    else modeled += c->o.link_latency_us * 1e-6;
    if (c->o.jitter > 0) modeled *= exp(c->o.jitter * tp__normal(c->ro.seed * 1000003ull + v));
    wait_until(t0 + modeled);
    return TP_OK;
}

static int has_job(worker *w)
{
    return atomic_load(&w->rpos) != atomic_load(&w->wpos);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    for (;;) {
        if (!has_job(w)) {
            double until = tp__now() + 20e-6;
            for (unsigned k = 1; !has_job(w) && !atomic_load(&w->stop); k++)
                if (!(k & 63) && tp__now() >= until) break; /* read the clock every 64 polls */
        }
        if (!has_job(w)) {
            pthread_mutex_lock(&w->mu);
            atomic_store(&w->sleeping, 1);
            while (!has_job(w) && !atomic_load(&w->stop)) pthread_cond_wait(&w->cv, &w->mu);
            atomic_store(&w->sleeping, 0);
            pthread_mutex_unlock(&w->mu);
        }
        if (!has_job(w)) break; /* stop */
        unsigned r = atomic_load(&w->rpos);
        uint32_t v = atomic_load(&w->ring[r % 4]);
        tp__done d;
        d.vertex = v;
        d.t0 = tp__now();
        d.status = run_vertex(w, v);
        d.t1 = tp__now();
        d.err = &w->err;
        atomic_store(&w->rpos, r + 1);
        tp__sink_post(w->cpu->pi.sink, &d);
    }
    return NULL;
}

static void cpu_launch(tp_backend *be, uint32_t v, int unit)
{
    cpu *c = (cpu *)be;
    int d = c->pi.device[v], e = c->pi.engine[v];
    worker *w = &c->w[d * c->per_dev + (e == TP_ENG_COMPUTE ? unit : c->ro.streams + e - 1)];
    unsigned p = atomic_load(&w->wpos);
    atomic_store(&w->ring[p % 4], v);
    atomic_store(&w->wpos, p + 1);
    tp__wake_sleeper(&w->sleeping, &w->mu, &w->cv);
}

static void cpu_release(tp_backend *be)
{
    cpu *c = (cpu *)be;
    for (int i = 0; i < c->nw; i++) {
        worker *w = &c->w[i];
        if (!w->started) continue;
        tp__stop_sleeper(&w->stop, &w->mu, &w->cv);
        pthread_join(w->th, NULL);
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
    }
    for (int i = 0; i < c->nw; i++) free(c->w[i].scratch);
    free(c->w);
    c->w = NULL;
    c->nw = 0;
    for (int d = 0; d < c->nd; d++) {
        free(c->dev[d]);
        c->dev[d] = NULL;
    }
    free(c->host);
    c->host = NULL;
    free(c->kp);
    c->kp = NULL;
}

static tp_status cpu_prepare(tp_backend *be, const tp__plan_info *pi, tp_error *err)
{
    cpu *c = (cpu *)be;
    if (c->w) return tp__fail(err, TP_ERR_ARG, "cpu backend: already prepared");
    c->pi = *pi;
    c->ro = *pi->opts;
    c->pi.opts = &c->ro;
    const tp_memgraph *mg = pi->mg;
    c->g = tp_memgraph_taskgraph(mg);
    c->nd = tp_graph_devices(c->g);
    uint64_t scratch[TP_MAX_DEVICES];
    tp_status ks = tp__kernels_prepare(mg, &c->kp, scratch, NULL, err);
    if (ks) {
        cpu_release(be);
        return ks;
    }
    /* all memory, once, before anything runs */
    for (int d = 0; d < c->nd; d++) {
        c->cap[d] = tp_memgraph_device_capacity(mg, d);
        void *p = NULL;
        if (posix_memalign(&p, 256, c->cap[d] ? c->cap[d] : 1)) {
            char b[32];
            cpu_release(be);
            return tp__fail(err, TP_ERR_NOMEM, "cpu backend: cannot allocate device %d's %s", d,
                            tp_format_size(c->cap[d], b, sizeof b));
        }
        memset(p, 0, c->cap[d]);
        c->dev[d] = p;
    }
    c->host_bytes = tp_memgraph_host_bytes(mg);
    void *hp = NULL;
    if (posix_memalign(&hp, 256, c->host_bytes ? c->host_bytes : 1)) {
        cpu_release(be);
        return tp__fail(err, TP_ERR_NOMEM, "cpu backend: cannot allocate %llu bytes of host memory",
                        (unsigned long long)c->host_bytes);
    }
    memset(hp, 0, c->host_bytes);
    c->host = hp;
    long cores = sysconf(_SC_NPROCESSORS_ONLN), share = (cores - 1) / (c->nd * c->ro.streams);
    tp__blas_threads(share < 1 ? 1 : (int)share);
    c->per_dev = c->ro.streams + 3;
    c->nw = c->nd * c->per_dev;
    c->w = calloc((size_t)c->nw, sizeof *c->w);
    if (!c->w) {
        cpu_release(be);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < c->nw; i++) {
        worker *w = &c->w[i];
        w->cpu = c;
        w->device = i / c->per_dev;
        int k = i % c->per_dev;
        w->engine = k < c->ro.streams ? TP_ENG_COMPUTE : k - c->ro.streams + 1;
        w->unit = k < c->ro.streams ? k : 0;
        for (int q = 0; q < 4; q++) atomic_init(&w->ring[q], NO_JOB);
        atomic_init(&w->wpos, 0);
        atomic_init(&w->rpos, 0);
        atomic_init(&w->sleeping, 0);
        atomic_init(&w->stop, 0);
        if (w->engine == TP_ENG_COMPUTE && scratch[w->device]) {
            w->scratch = malloc(scratch[w->device] * sizeof(float));
            if (!w->scratch) {
                cpu_release(be);
                return tp__fail(err, TP_ERR_NOMEM, "out of memory");
            }
        }
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->cv, NULL);
        if (pthread_create(&w->th, NULL, worker_main, w)) {
            pthread_mutex_destroy(&w->mu);
            pthread_cond_destroy(&w->cv);
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
    tp_status s = tp__region_check(r, c->host_bytes, c->cap, c->nd, err);
    if (!s) memcpy(region_ptr(c, r), src, r->bytes);
    return s;
}

static tp_status cpu_read(tp_backend *be, const tp_region *r, void *dst, tp_error *err)
{
    cpu *c = (cpu *)be;
    tp_status s = tp__region_check(r, c->host_bytes, c->cap, c->nd, err);
    if (!s) memcpy(dst, region_ptr(c, r), r->bytes);
    return s;
}

static void cpu_destroy(tp_backend *be)
{
    cpu_release(be);
    free(be);
}

static const tp__backend_ops cpu_ops = {"cpu", cpu_prepare, cpu_launch, cpu_write, cpu_read, cpu_release, cpu_destroy, NULL, NULL, NULL};

void tp_cpu_opts_init(tp_cpu_opts *o)
{
    memset(o, 0, sizeof *o);
}

tp_backend *tp_backend_cpu_new(const tp_cpu_opts *o)
{
    cpu *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->base.ops = &cpu_ops;
    if (o) c->o = *o;
    return &c->base;
}

void tp_backend_free(tp_backend *be)
{
    if (be) be->ops->destroy(be);
}

const char *tp_backend_name(const tp_backend *be)
{
    return be->ops->name;
}
