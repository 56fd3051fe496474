/* bench_dispatch - executor overhead: microseconds per vertex for 10^5 no-op kernels, independent
 * and chained, on the cpu backend, in 10 repetitions (each printed, then min / median / max);
 * side by side in the same run with StarPU 1.3 executing the same DAG of empty tasks (when built
 * with StarPU: Debian's libstarpu-dev, scripts/install-deps.sh --bench). Task creation is
 * excluded on both sides: turnip's figure is tp_exec_run's makespan (graph, plan and
 * tp_exec_new before it), StarPU's the submission of tasks created (and tag deps declared)
 * beforehand, to starpu_task_wait_for_all.
 *
 * It first measures what a cross-thread wake-up costs on this machine (one thread sleeping on
 * a condition variable, woken by another; median and 90th percentile of 2000): the stall the
 * executor paid twice per kernel when it and the worker had both gone to sleep; then the gap
 * between chained kernels of 64x64 and 128x128 matmuls (tens of us: long enough that a waiting
 * thread stops spinning), the case where those wake-ups showed.
 *
 * usage: bench_dispatch [N] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "turnip/turnip.h"
#include "bench_common.h"
#ifdef TP_HAVE_STARPU
#include <starpu.h>
#endif

/* Finalizes g, plans it on one device of `cap` bytes, runs it on the cpu backend with
 * `streams` compute streams, frees everything; exits on an error. */
static tp_run_summary plan_and_run(tp_graph *g, uint64_t cap, int streams)
{
    tp_error e;
    tp_plan_opts po;
    tp_plan_opts_init(&po, 1, cap);
    tp_memgraph *mg = NULL;
    tp_backend *be = NULL;
    tp_exec *x = NULL;
    tp_run_summary s;
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    ro.streams = streams;
    if (tp_graph_finalize(g, &e) || tp_plan(g, &po, &mg, &e) || tp_backend_cpu_new(NULL, &be, &e) ||
        tp_exec_new(mg, be, &ro, &x, &e) || tp_exec_run(x, &s, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        exit(1);
    }
    tp_exec_free(x);
    tp_backend_free(be);
    tp_memgraph_free(mg);
    tp_graph_free(g);
    return s;
}

static double ours(uint32_t n, int chained, int streams)
{
    tp_graph *g = tp_graph_new(1);
    tp_error e;
    uint32_t prev = 0, v;
    char id[32];
    for (uint32_t i = 0; i < n; i++) {
        snprintf(id, sizeof id, "k%u", i);
        tp_graph_add_kernel(g, id, 0, "opaque", chained && i ? 1 : 0, &prev, TP_DT_NONE, -1, NULL, 4, NULL, 0, &v, &e);
        prev = v;
        if (!chained || i + 1 == n) tp_graph_add_output(g, v, &e);
    }
    tp_run_summary s = plan_and_run(g, (uint64_t)n * 8 + 64, streams);
    return s.makespan * 1e6 / n;
}

/* A chain of n S x S f32 matmuls (h = h @ w, zeros): kernels of tens of us, long enough that a
 * thread waiting for the next step would give up spinning (TP__SPIN_US, 20 us) and sleep. Returns
 * the gap per kernel, (makespan - compute busy) / n, in us, and the mean kernel in *kernel_us. */
static double matmul_gaps(uint32_t n, int64_t S, double *kernel_us)
{
    tp_graph *g = tp_graph_new(1);
    tp_error e;
    int64_t shp[2] = {S, S};
    uint32_t h, w, in[2];
    char id[32];
    tp_graph_add_input(g, "x", 0, TP_DT_F32, 2, shp, 0, &h, &e);
    tp_graph_add_input(g, "w", 0, TP_DT_F32, 2, shp, 0, &w, &e);
    for (uint32_t i = 0; i < n; i++) {
        snprintf(id, sizeof id, "mm%u", i);
        in[0] = h, in[1] = w;
        tp_graph_add_kernel(g, id, 0, "matmul", 2, in, TP_DT_F32, 2, shp, 0, NULL, 0, &h, &e);
    }
    tp_graph_add_output(g, h, &e);
    tp_run_summary s = plan_and_run(g, (uint64_t)(S * S * 4) * 8, 1);
    *kernel_us = s.dev[0].compute_busy * 1e6 / n;
    return (s.makespan - s.dev[0].compute_busy) * 1e6 / n;
}

#ifdef TP_HAVE_STARPU
static void empty(void *buffers[], void *arg)
{
    (void)buffers;
    (void)arg;
}

static double starpu(uint32_t n, int chained)
{
    static struct starpu_codelet cl;
    memset(&cl, 0, sizeof cl);
    cl.cpu_funcs[0] = empty;
    cl.nbuffers = 0;
    struct starpu_task **ts = malloc((size_t)n * sizeof *ts);
    for (uint32_t i = 0; i < n; i++) { /* created outside the timed part, as turnip's plan is */
        struct starpu_task *t = ts[i] = starpu_task_create();
        t->cl = &cl;
        if (chained) {
            t->use_tag = 1;
            t->tag_id = (starpu_tag_t)i + 1;
            if (i) starpu_tag_declare_deps((starpu_tag_t)i + 1, 1, (starpu_tag_t)i);
        }
    }
    starpu_resume(); /* its workers poll a core while running: paused while turnip is measured */
    double t0 = tp_now_seconds();
    for (uint32_t i = 0; i < n; i++)
        if (starpu_task_submit(ts[i])) {
            fprintf(stderr, "starpu_task_submit failed\n");
            exit(1);
        }
    starpu_task_wait_for_all();
    double us = (tp_now_seconds() - t0) * 1e6 / n;
    starpu_pause();
    free(ts);
    if (chained)
        for (uint32_t i = 0; i < n; i++) starpu_tag_remove((starpu_tag_t)i + 1);
    return us;
}
#endif

/* ---- the cost of a wake-up: thread B sleeps on a condition variable (no spinning), thread A
 * stamps the time and signals; B reads the clock when it runs again ---- */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int seq, done;
    double sent;
} pp = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0};
static double lat[2000];

static void *sleeper_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&pp.mu);
    for (int k = 0; k < 2000; k++) {
        while (pp.seq == k) pthread_cond_wait(&pp.cv, &pp.mu);
        lat[k] = tp_now_seconds() - pp.sent;
        pp.done = k + 1;
        pthread_cond_signal(&pp.cv);
    }
    pthread_mutex_unlock(&pp.mu);
    return NULL;
}

static void wakeup_cost(void)
{
    pthread_t th;
    pthread_create(&th, NULL, sleeper_main, NULL);
    for (int k = 0; k < 2000; k++) {
        struct timespec ts = {0, 200000}; /* let B go to sleep */
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&pp.mu);
        pp.sent = tp_now_seconds();
        pp.seq = k + 1;
        pthread_cond_signal(&pp.cv);
        while (pp.done < k + 1) pthread_cond_wait(&pp.cv, &pp.mu);
        pthread_mutex_unlock(&pp.mu);
    }
    pthread_join(th, NULL);
    qsort(lat, 2000, sizeof *lat, bench_cmp_double);
    printf("wake-up of a sleeping thread (condition variable, 2000 times): median %.1f us, p90 %.1f us, max %.1f us\n",
           lat[1000] * 1e6, lat[1800] * 1e6, lat[1999] * 1e6);
}

static void mmm(const double *a, int k, double *out)
{
    double t[16];
    memcpy(t, a, (size_t)k * sizeof *t);
    qsort(t, (size_t)k, sizeof *t, bench_cmp_double);
    out[0] = t[0], out[1] = k % 2 ? t[k / 2] : (t[k / 2 - 1] + t[k / 2]) / 2, out[2] = t[k - 1];
}

int main(int argc, char **argv)
{
    enum { REPS = 10 };
    uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 100000;
    if (n < 1 || n > 10000000) {
        fprintf(stderr, "usage: bench_dispatch [N in 1..10^7]\n");
        return 2;
    }
    FILE *la = fopen("/proc/loadavg", "r");
    char load[64] = "?";
    if (la && fgets(load, sizeof load, la)) load[strcspn(load, "\n")] = 0;
    if (la) fclose(la);
    printf("%ld cores online, load average %s\n", sysconf(_SC_NPROCESSORS_ONLN), load);
    wakeup_cost();
    for (int64_t S = 64; S <= 128; S *= 2) {
        double gap[5], ku[5], m[3], mk[3];
        for (int rep = 0; rep < 5; rep++) gap[rep] = matmul_gaps(2000, S, &ku[rep]);
        mmm(gap, 5, m);
        mmm(ku, 5, mk);
        printf("2000 chained %lldx%lld matmuls (%.1f us each, median): gap between kernels min / median / max %.2f / %.2f / "
               "%.2f us (5 runs)\n", (long long)S, (long long)S, mk[1], m[0], m[1], m[2]);
    }
    printf("%u no-op kernels on one emulated device, 1 stream; microseconds per vertex, task creation excluded on both "
           "sides\n", n);
#ifdef TP_HAVE_STARPU
    setenv("STARPU_NCPU", "1", 0);
    setenv("STARPU_SILENT", "1", 0);
    struct starpu_conf conf;
    starpu_conf_init(&conf);
    conf.ncpus = 1;
    conf.ncuda = 0;
    conf.nopencl = 0;
    if (starpu_init(&conf)) {
        fprintf(stderr, "starpu_init failed\n");
        return 1;
    }
    starpu_pause();
    int have = 1;
#else
    printf("(built without StarPU: scripts/install-deps.sh --bench, then reconfigure, to compare)\n");
    int have = 0;
#endif
    double t[4][REPS];
    printf("%-4s %14s %14s %14s %14s\n", "rep", "turnip indep", "turnip chain", "StarPU indep", "StarPU chain");
    for (int rep = 0; rep < REPS; rep++) {
        t[0][rep] = ours(n, 0, 1);
        t[1][rep] = ours(n, 1, 1);
        t[2][rep] = t[3][rep] = 0;
#ifdef TP_HAVE_STARPU
        t[2][rep] = starpu(n, 0);
        t[3][rep] = starpu(n, 1);
#endif
        printf("%-4d %14.3f %14.3f", rep + 1, t[0][rep], t[1][rep]);
        if (have) printf(" %14.3f %14.3f", t[2][rep], t[3][rep]);
        printf("\n");
    }
    double m[4][3];
    for (int c = 0; c < 4; c++) mmm(t[c], REPS, m[c]);
    for (int k = 0; k < 3; k++) {
        printf("%-4s %14.3f %14.3f", k == 0 ? "min" : k == 1 ? "med" : "max", m[0][k], m[1][k]);
        if (have) printf(" %14.3f %14.3f", m[2][k], m[3][k]);
        printf("\n");
    }
    int ok = m[0][2] <= 1.0 && m[1][2] <= 1.0;
    printf("target: at most 1 us per vertex in every repetition: %s (worst %.3f)\n", ok ? "met" : "NOT met",
           m[0][2] > m[1][2] ? m[0][2] : m[1][2]);
    if (have)
        printf("ratio turnip/StarPU (medians)   independent %.3f, chained %.3f\n", m[0][1] / m[2][1], m[1][1] / m[3][1]);
#ifdef TP_HAVE_STARPU
    starpu_resume();
    starpu_shutdown();
#endif
    return 0;
}
