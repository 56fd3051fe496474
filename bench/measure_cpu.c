/* measure_cpu - measures this machine for the sim backend's `cpu-local` profile and prints it
 * as JSON (profiles/cpu-local.json): OpenBLAS sgemm rate on the shapes the benchmarks use,
 * memory bandwidth of memcpy, and the cpu backend's per-kernel overhead (no-op kernels).
 *
 * usage: measure_cpu [--link-gbps G] > profiles/cpu-local.json
 * (--link-gbps: the --link-bandwidth the cpu backend will be run with; default 0.25) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "turnip/turnip.h"
#include <unistd.h>
#include "kernels/kernels.h"

/* FLOP/s of the cpu backend's non-matmul kernels, counted as the LLaMA builder counts them
 * (softmax 5, rmsnorm 4, silu 4, rope 6 per element), over a 128 x 512 f32 tensor */
static double vector_rate(void)
{
    static const struct {
        const char *op, *attrs;
        double per_elem;
        int nin;
    } ops[] = {{"softmax", "{\"causal\":true}", 5, 1}, {"rmsnorm", NULL, 4, 2}, {"silu", NULL, 4, 1}, {"rope", NULL, 6, 1}};
    double total_flops = 0, total_s = 0;
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        tp_graph *g = tp_graph_new(1);
        tp_error e;
        int64_t shp[2] = {128, 512}, wshp[1] = {512};
        uint32_t in[2], k;
        tp_graph_add_input(g, "x", 0, TP_DT_F32, 2, shp, 0, &in[0], &e);
        tp_graph_add_input(g, "w", 0, TP_DT_F32, 1, wshp, 0, &in[1], &e);
        tp_graph_add_kernel(g, "k", 0, ops[i].op, (uint32_t)ops[i].nin, in, TP_DT_F32, 2, shp, 0, ops[i].attrs, 0, &k, &e);
        tp_graph_finalize(g, &e);
        tp__kplan kp;
        if (tp__kernel_prepare(g, k, &kp, &e)) {
            fprintf(stderr, "%s\n", e.msg);
            exit(1);
        }
        float *x = calloc(128 * 512, 4), *w = calloc(512, 4), *o = calloc(128 * 512, 4);
        const void *ins[2] = {x, w};
        double best = 1e9;
        for (int rep = 0; rep < 20; rep++) {
            double t0 = tp_now_seconds();
            tp__kernel_run(g, k, &kp, ins, o, NULL, &e);
            double t = tp_now_seconds() - t0;
            if (t < best) best = t;
        }
        total_flops += ops[i].per_elem * 128 * 512;
        total_s += best;
        free(x);
        free(w);
        free(o);
        tp_graph_free(g);
    }
    return total_flops / total_s;
}

static double gemm_rate(int m, int n, int k)
{
    float *a = calloc((size_t)m * k, 4), *b = calloc((size_t)k * n, 4), *c = calloc((size_t)m * n, 4);
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = tp_now_seconds();
        int it = 0;
        while (tp_now_seconds() - t0 < 0.2) {
            tp__sgemm(0, 1, m, n, k, 1.0f, a, k, b, k, c, n);
            it++;
        }
        double r = 2.0 * m * n * (double)k * it / (tp_now_seconds() - t0);
        if (r > best) best = r;
    }
    free(a);
    free(b);
    free(c);
    return best;
}

#include <pthread.h>

/* one blocking cross-thread wake-up: half a condition-variable ping-pong round trip */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int turn, rounds = 2000;

static void *pong(void *arg)
{
    (void)arg;
    for (int i = 0; i < rounds; i++) {
        pthread_mutex_lock(&mu);
        while (turn != 1) pthread_cond_wait(&cv, &mu);
        turn = 0;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
    }
    return NULL;
}

static double wake_latency(void)
{
    pthread_t th;
    turn = 0;
    pthread_create(&th, NULL, pong, NULL);
    double t0 = tp_now_seconds();
    for (int i = 0; i < rounds; i++) {
        pthread_mutex_lock(&mu);
        turn = 1;
        pthread_cond_broadcast(&cv);
        while (turn != 0) pthread_cond_wait(&cv, &mu);
        pthread_mutex_unlock(&mu);
    }
    double t = (tp_now_seconds() - t0) / (2.0 * rounds);
    pthread_join(th, NULL);
    return t;
}

static volatile char sink_byte; /* keeps the copies from being optimized away */

static double copy_rate(size_t bytes)
{
    char *a = malloc(bytes), *b = malloc(bytes);
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = tp_now_seconds();
        int it = 0;
        while (tp_now_seconds() - t0 < 0.1) {
            memcpy(b, a, bytes);
            sink_byte = b[(size_t)it * 4099 % bytes];
            a[(size_t)it * 8191 % bytes]++;
            it++;
        }
        double r = (double)bytes * it / (tp_now_seconds() - t0);
        if (r > best) best = r;
    }
    free(a);
    free(b);
    return best;
}


/* g (one device) finalized and planned under cap; exits on failure */
static tp_memgraph *plan_or_die(tp_graph *g, uint64_t cap)
{
    tp_error e;
    tp_plan_opts po;
    tp_plan_opts_init(&po, 1, cap);
    tp_memgraph *mg = NULL;
    if (tp_graph_finalize(g, &e) || tp_plan(g, &po, &mg, &e)) {
        fprintf(stderr, "measure_cpu: %s\n", e.msg);
        exit(1);
    }
    return mg;
}

/* The weight-streaming graph fit_stream runs: `n` inputs of 256 KiB, each loaded
 * (host to device) and added into a running sum, under a cap of three such tensors (the old
 * sum, the input, the new sum), so each load waits for the add that frees its space: copy,
 * kernel, copy, ... strictly in turn. */
static tp_memgraph *stream_graph(tp_graph **gp, int n)
{
    tp_graph *g = tp_graph_new(1);
    tp_error e;
    int64_t shp[1] = {65536};
    uint32_t x, k = 0, prev = 0;
    char id[32];
    for (int i = 0; i < n; i++) {
        snprintf(id, sizeof id, "x%d", i);
        tp_graph_add_input(g, id, 0, TP_DT_F32, 1, shp, 0, &x, &e);
        uint32_t in[2] = {x, prev};
        snprintf(id, sizeof id, "k%d", i);
        tp_graph_add_kernel(g, id, 0, i ? "add" : "scale", i ? 2 : 1, in, TP_DT_F32, 1, shp, 0, NULL, 0, &k, &e);
        prev = k;
    }
    tp_graph_add_output(g, k, &e);
    *gp = g;
    return plan_or_die(g, 3 * (256 << 10));
}

/* best of `reps` cpu-backend runs of mg at link rate gbps */
static tp_run_summary run_cpu(const tp_memgraph *mg, double gbps, int reps)
{
    tp_cpu_opts co;
    tp_cpu_opts_init(&co);
    co.link_gbps = gbps;
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    tp_run_summary best;
    best.makespan = 1e9;
    for (int rep = 0; rep < reps; rep++) {
        tp_error e;
        tp_backend *be = NULL;
        tp_backend_cpu_new(&co, &be, NULL);
        tp_exec *x;
        tp_run_summary s;
        tp_exec_new(mg, be, &ro, &x, &e);
        tp_exec_run(x, &s, &e);
        if (s.makespan < best.makespan) best = s;
        tp_exec_free(x);
        tp_backend_free(be);
    }
    return best;
}

/* the cpu backend's makespan per chained no-op kernel */
static double kernel_overhead(void)
{
    uint32_t n = 20000, prev = 0, v;
    tp_graph *g = tp_graph_new(1);
    tp_error e;
    char id[16];
    for (uint32_t i = 0; i < n; i++) {
        snprintf(id, sizeof id, "k%u", i);
        tp_graph_add_kernel(g, id, 0, "opaque", i ? 1 : 0, &prev, TP_DT_NONE, -1, NULL, 4, NULL, 0, &v, &e);
        prev = v;
    }
    tp_graph_add_output(g, v, &e);
    tp_memgraph *mg = plan_or_die(g, 1 << 20);
    double t = run_cpu(mg, 0, 1).makespan / n;
    tp_memgraph_free(mg);
    tp_graph_free(g);
    return t;
}

static double sim_makespan(const tp_memgraph *mg, const tp_sim_profile *p)
{
    tp_error e;
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    tp_run_summary s;
    tp_exec *x;
    tp_backend *be = NULL;
    tp_backend_sim_new(p, 0, &be, NULL);
    tp_exec_new(mg, be, &ro, &x, &e);
    tp_exec_run(x, &s, &e);
    tp_exec_free(x);
    tp_backend_free(be);
    return s.makespan;
}

/* Runs the streaming graph on the cpu backend (best of 5) and fits two numbers of p to it: the
 * copy overshoot (what an emulated 256 KiB copy takes beyond bytes / link rate: the timer's
 * overshoot at the end of each copy, from the run's copy busy time) and then the cost of one
 * wake-up, the wake_s at which the model's makespan equals the run's, by bisection. In that
 * graph every load and every add start on a sleeping engine and end with the executor asleep,
 * the places the model charges wake_s. Returns the run's makespan. */
static double fit_stream(tp_sim_profile *p, double gbps)
{
    tp_graph *g;
    tp_memgraph *mg = stream_graph(&g, 40);
    tp_run_summary s = run_cpu(mg, gbps, 5);
    int h2d = tp_run_summary_engine(&s, "h2d");
    double over = (s.dev[0].busy[h2d] - (double)s.dev[0].bytes[h2d] / (gbps * 1e9)) / (double)s.dev[0].count[h2d];
    p->copy_latency_s = over > 0 ? over : 0;
    double lo = 0, hi = 1e-3;
    for (int it = 0; it < 40; it++) {
        p->wake_s = (lo + hi) / 2;
        if (sim_makespan(mg, p) < s.makespan) lo = p->wake_s;
        else hi = p->wake_s;
    }
    p->wake_s = (lo + hi) / 2;
    tp_memgraph_free(mg);
    tp_graph_free(g);
    return s.makespan;
}

int main(int argc, char **argv)
{
    double link = argc > 2 && !strcmp(argv[1], "--link-gbps") ? atof(argv[2]) : 0.25;
    /* BLAS threads as the cpu backend takes them for one device and one stream */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    tp__blas_threads(cores > 2 ? (int)cores - 1 : 1);
    double g = gemm_rate(64, 128, 512); /* the shapes of bench_offload's chunks (T/B x H/K x H) */
    double m = copy_rate(64u << 20);
    double o = kernel_overhead();
    double vr = vector_rate();
    double wk = wake_latency();
    /* the overshoot and the wake-up cost, with the model's other numbers as measured above */
    tp_sim_profile prof;
    memset(&prof, 0, sizeof prof);
    prof.devices = 1;
    prof.device_mem = 1 << 30;
    prof.peak_flops = g;
    prof.vector_flops = vr;
    prof.efficiency = 1;
    prof.mem_bw = m;
    prof.launch_s = o;
    prof.wake_after_s = 20e-6;
    prof.h2d_bw = prof.d2h_bw = prof.peer_bw = link * 1e9;
    double real_ms = fit_stream(&prof, link) * 1e3;
    int nthr = 0;
    const char *cfg = tp__blas_info(&nthr);
    printf("{\"name\": \"cpu-local\",\n"
           " \"comment\": \"this machine as the cpu backend: measured by build/bench/measure_cpu on 2026-11-22 (%s, %d BLAS threads, "
           "OPENBLAS_CORETYPE=%s)\",\n",
           cfg, nthr, getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "unset");
    printf(" \"devices\": {\"value\": 8, \"comment\": \"emulated devices share the host; no limit of their own\"},\n");
    printf(" \"device_mem\": {\"value\": \"16GiB\", \"comment\": \"arenas are host memory; bounded by the 24 GiB machine\"},\n");
    printf(" \"peak_flops\": {\"value\": %.4g, \"comment\": \"measured: cblas_sgemm 64x128x512 (B transposed), best of 5\"},\n", g);
    printf(" \"vector_flops\": {\"value\": %.4g, \"comment\": \"measured: softmax, rmsnorm, silu and rope kernels on 128x512 f32, "
           "counted as the LLaMA builder counts their flops\"},\n", vr);
    printf(" \"efficiency\": {\"value\": 1.0, \"comment\": \"peak_flops is already the measured rate\"},\n");
    printf(" \"mem_bw\": {\"value\": %.4g, \"comment\": \"measured: memcpy of 64 MiB, best of 5 (elementwise kernels read and write at about this rate)\"},\n", m);
    printf(" \"launch_s\": {\"value\": %.4g, \"comment\": \"measured: cpu backend makespan per chained no-op kernel\"},\n", o);
    printf(" \"wake_s\": {\"value\": %.4g, \"comment\": \"measured: one wake-up of a sleeping thread as the cpu backend pays it: the "
           "value at which the model predicts the cpu backend's makespan (%.2f ms, best of 5) of 40 256 KiB inputs streamed through a "
           "cap of three (load, add into a running sum, load, ... strictly in turn: every copy and kernel starts on a sleeping thread "
           "and ends with the executor asleep); a condition-variable ping-pong between two busy threads is %.3g us per wake-up\"},\n",
           prof.wake_s, real_ms, wk * 1e6);
    printf(" \"wake_after_s\": {\"value\": 20e-6, \"comment\": \"the cpu backend's spin window (src/backend/cpu, src/exec/sink.c)\"},\n");
    printf(" \"h2d_bw\": {\"value\": %.4g, \"comment\": \"the cpu backend's --link-bandwidth for validation runs\"},\n", link * 1e9);
    printf(" \"d2h_bw\": {\"value\": %.4g, \"comment\": \"as h2d_bw\"},\n", link * 1e9);
    printf(" \"host_bus_bw\": {\"value\": 0, \"comment\": \"the cpu backend throttles each engine separately\"},\n");
    printf(" \"peer_bw\": {\"value\": %.4g, \"comment\": \"as h2d_bw (--link-bandwidth applies to peer copies too)\"},\n", link * 1e9);
    printf(" \"copy_latency_s\": {\"value\": %.4g, \"comment\": \"measured: what an emulated 256 KiB copy takes beyond bytes / "
           "link rate (the end-of-copy timer overshoot; --link-latency 0), from the same run\"}}\n", prof.copy_latency_s);
    return 0;
}
