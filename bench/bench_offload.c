/* bench_offload - offload efficiency and the nondeterminism ablation on the cpu backend.
 *
 * Workload: a chain of layers h' = relu(concat_k(h @ W_k)), each contraction decomposed into
 * row blocks and column chunks emitted together (the paper's V for decomposed contractions),
 * f32, weights as inputs in host memory, one device; the link is throttled so that transfers
 * matter. Caps are fractions of two "unconstrained peaks": `resident`, what a run without
 * offload holds (every weight resident plus the live activations: PyTorch's footprint), and
 * `live`, the most bytes live at once when every value is loaded at first use and freed after
 * its last use (at 100% of it nothing can be prefetched, so transfers cannot overlap compute).
 *
 * The grid: the compute time of an unthrottled run at the resident peak is measured first, then
 * the link is throttled so that moving that run's bytes takes 0.5x, 1x and 2x of it, and at
 * 100%, 50% and 25% of the resident peak it prints the makespan over the lower bound
 * max(device compute time, busiest link's bytes / bandwidth), both measured in the same run
 * (target: at most 1.10 everywhere). Then, at 50% with copy jitter and the link at 0.25 GB/s
 * (TP_BENCH_GBPS), `any` over `fixed` makespan across seeds (the paper's ablation).
 *
 * usage: bench_offload [--quick] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kernels/kernels.h"
#include "turnip/turnip.h"
#include "bench_common.h"

enum { T = 256, H = 512, B = 4, K = 4, LAYERS = 24 };

/* layer: out[b][k] = h_b @ W_k for B row blocks and K column chunks, all B*K emitted together;
 * h'_b = relu(concat_k out[b][k]) */
static tp_graph *build(void)
{
    tp_graph *g = tp_graph_new(1);
    tp_error e;
    int64_t hs[2] = {T / B, H}, ws[2] = {H, H / K}, os[2] = {T / B, H / K};
    uint32_t h[B], w[K], parts[B][K], c;
    char id[32];
    for (int b = 0; b < B; b++) {
        snprintf(id, sizeof id, "x.%d", b);
        tp_graph_add_input(g, id, 0, TP_DT_F32, 2, hs, 0, &h[b], &e);
    }
    for (int l = 0; l < LAYERS; l++) {
        for (int k = 0; k < K; k++) {
            snprintf(id, sizeof id, "w%d.%d", l, k);
            tp_graph_add_input(g, id, 0, TP_DT_F32, 2, ws, 0, &w[k], &e);
        }
        for (int k = 0; k < K; k++)
            for (int b = 0; b < B; b++) {
                uint32_t in[2] = {h[b], w[k]};
                snprintf(id, sizeof id, "mm%d.%d.%d", l, b, k);
                tp_graph_add_kernel(g, id, 0, "matmul", 2, in, TP_DT_F32, 2, os, 0, NULL, 2.0 * (T / B) * H * (H / K), &parts[b][k], &e);
            }
        for (int b = 0; b < B; b++) {
            snprintf(id, sizeof id, "cat%d.%d", l, b);
            tp_graph_add_kernel(g, id, 0, "concat", K, parts[b], TP_DT_F32, 2, hs, 0, "{\"axis\":1}", 0, &c, &e);
            snprintf(id, sizeof id, "relu%d.%d", l, b);
            tp_graph_add_kernel(g, id, 0, "relu", 1, &c, TP_DT_F32, 2, hs, 0, NULL, 0, &h[b], &e);
        }
    }
    for (int b = 0; b < B; b++) tp_graph_add_output(g, h[b], &e);
    if (tp_graph_finalize(g, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        exit(1);
    }
    return g;
}

typedef struct {
    double makespan, bound, compute, link;
    uint64_t moved;
} res;

static res run(const tp_graph *g, uint64_t cap, double gbps, const char *pol, uint64_t seed, double jitter, int streams)
{
    tp_plan_opts po;
    tp_plan_opts_init(&po, 1, cap);
    po.order = TP_ORDER_TOPO;
    tp_memgraph *mg;
    tp_error e;
    if (tp_plan(g, &po, &mg, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        exit(1);
    }
    tp_cpu_opts co;
    tp_cpu_opts_init(&co);
    co.link_gbps = gbps;
    co.jitter = jitter;
    tp_backend *be = NULL;
    tp_backend_cpu_new(&co, &be, NULL);
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    ro.policy = pol;
    ro.seed = seed;
    ro.streams = streams;
    tp_exec *x;
    if (tp_exec_new(mg, be, &ro, &x, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        exit(1);
    }
    float *buf = malloc((size_t)H * H * 4 + (size_t)T * H * 4);
    for (size_t i = 0; i < (size_t)H * H + (size_t)T * H; i++) buf[i] = ((float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f) * 0.08f;
    for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        if (v.kind == TP_M_INPUT) tp_exec_write(x, &v.write, buf, &e);
    }
    free(buf);
    tp_run_summary s;
    if (tp_exec_run(x, &s, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        exit(1);
    }
    res r = {s.makespan, 0, s.dev[0].compute_busy / streams, 0, 0};
    for (int k = 0; k < s.nengines; k++) {
        if (!s.engine_moves[k]) continue;
        double l = gbps > 0 ? (double)s.dev[0].bytes[k] / (gbps * 1e9) : 0;
        if (l > r.link) r.link = l;
        r.moved += s.dev[0].bytes[k];
    }
    r.bound = r.compute > r.link ? r.compute : r.link;
    tp_exec_free(x);
    tp_backend_free(be);
    tp_memgraph_free(mg);
    return r;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    long cores = sysconf(_SC_NPROCESSORS_ONLN); /* the cpu backend's choice for one stream */
    tp__blas_threads(cores > 2 ? (int)cores - 1 : 1);
    int nthr = 0;
    const char *cfg = tp__blas_info(&nthr);
    printf("BLAS: %s; %d threads; OPENBLAS_CORETYPE=%s\n", cfg, nthr,
           getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "(unset)");
    tp_graph *g = build();
    if (getenv("TP_BENCH_DUMP")) { /* write the workload as a TaskGraph, for turnip run --trace */
        FILE *f = fopen(getenv("TP_BENCH_DUMP"), "w");
        tp_graph_write(g, f, NULL);
        fclose(f);
    }
    uint64_t minf, peak;
    tp_error e;
    tp_plan_bounds(g, TP_ORDER_TOPO, &minf, &peak, &e);
    double gbps = getenv("TP_BENCH_GBPS") ? atof(getenv("TP_BENCH_GBPS")) : 0.25;
    char b1[32], b2[32];
    printf("workload: %d layers of %dx%d @ %dx%d matmul in %d row blocks x %d column chunks, concat, relu; f32, 1 device\n",
           LAYERS, T, H, H, H, B, K);
    printf("live peak %s, smallest feasible %s; link throttled to %.2f GB/s\n", tp_format_size(peak, b1, sizeof b1),
           tp_format_size(minf, b2, sizeof b2), gbps);
    uint64_t inputs = 0;
    for (uint32_t i = 0; i < tp_graph_size(g); i++)
        if (tp_graph_vertex(g, i)->kind == TP_V_INPUT) inputs += tp_graph_vertex(g, i)->bytes;
    const char *defs[2] = {"resident", "live"};
    uint64_t peaks[2] = {inputs + peak, peak};
    const double fr[3] = {1.0, 0.5, 0.25};
    /* the link set from a measured compute time: the compute time of an unthrottled run at the
     * resident peak (median of 3), and the bytes that run moves; link time = f x compute for f
     * in 0.5, 1, 2 (the hard case is 1: neither side hides the other) */
    double ct[3];
    uint64_t moved = 0;
    for (int rep = 0; rep < 3; rep++) {
        res r = run(g, peaks[0], 0, "any", 0, 0, 1);
        ct[rep] = r.compute;
        moved = r.moved;
    }
    qsort(ct, 3, sizeof *ct, bench_cmp_double);
    double compute = ct[1];
    printf("compute time (unthrottled run at 100%% of the resident peak, median of 3) %.2f ms; it moves %s\n", compute * 1e3,
           tp_format_size(moved, b1, sizeof b1));
    printf("grid: makespan / bound, bound = max(compute, busiest link), best of %d, 1 stream\n", quick ? 1 : 3);
    printf("%-9s %5s %9s %9s %12s %12s %12s %12s %10s\n", "peak", "cap", "link/comp", "GB/s", "makespan ms", "compute ms",
           "link ms", "moved", "ratio");
    const double lf[3] = {0.5, 1.0, 2.0};
    double worst = 0;
    for (int f = 0; f < 3; f++) {
        double bw = (double)moved / (lf[f] * compute) / 1e9;
        if (bw < TP_CPU_LINK_GBPS_MIN) bw = TP_CPU_LINK_GBPS_MIN;
        for (int i = 0; i < 3; i++) {
            uint64_t cap = (uint64_t)(fr[i] * (double)peaks[0]);
            if (cap < minf) cap = minf;
            res best = {1e30, 0, 0, 0, 0};
            for (int rep = 0; rep < (quick ? 1 : 3); rep++) {
                res r = run(g, cap, bw, "any", 0, 0, 1);
                if (r.makespan < best.makespan) best = r;
            }
            double ratio = best.makespan / best.bound;
            if (ratio > worst) worst = ratio;
            printf("%-9s %4.0f%% %9.1f %9.4f %12.2f %12.2f %12.2f %12s %10.3f\n", defs[0], fr[i] * 100, lf[f], bw,
                   best.makespan * 1e3, best.compute * 1e3, best.link * 1e3, tp_format_size(best.moved, b1, sizeof b1), ratio);
        }
    }
    printf("target: makespan / bound at most 1.10 in every cell: %s (worst %.3f)\n", worst <= 1.10 ? "met" : "NOT met", worst);
    int seeds = quick ? 4 : 20;
    for (int p = 0; p < 2; p++) {
        double ratio[64];
        uint64_t cap = (uint64_t)(0.5 * (double)peaks[p]);
        if (cap < minf) cap = minf;
        for (int s = 0; s < seeds; s++) {
            res a = run(g, cap, gbps, "any", (uint64_t)s + 1, 0.5, 1);
            res f = run(g, cap, gbps, "fixed", (uint64_t)s + 1, 0.5, 1);
            ratio[s] = a.makespan / f.makespan;
        }
        qsort(ratio, (size_t)seeds, sizeof *ratio, bench_cmp_double);
        double mean = 0, sd = 0;
        for (int s = 0; s < seeds; s++) mean += ratio[s] / seeds;
        for (int s = 0; s < seeds; s++) sd += (ratio[s] - mean) * (ratio[s] - mean) / (seeds > 1 ? seeds - 1 : 1);
        printf("ablation, 50%% of %s peak, copy jitter 0.5, %d seeds: makespan(any)/makespan(fixed) mean %.3f, sd %.3f, "
               "min %.3f, median %.3f, max %.3f\n",
               defs[p], seeds, mean, sqrt(sd), ratio[0], ratio[seeds / 2], ratio[seeds - 1]);
    }
    tp_graph_free(g);
    return 0;
}
