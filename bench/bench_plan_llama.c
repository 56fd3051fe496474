/* bench_plan_llama - planning time of 65B LLaMA prefill on 8 devices at long prompts.
 *
 * Builds the graph `turnip llama --preset 65b --devices 8 --device-mem CAP --no-data
 * --seq-len T [--attention A]` builds (tp_llama_opts_default, tp_llama_opts_attention) for T =
 * 16K, 32K, 64K, 128K and plans it in the order `turnip llama` plans it (tp_llama_plan_order)
 * 3 times, in three configurations, one after another in the same run:
 *   default  fused attention at 40 GiB (the issue-15 target: the command as a user types it);
 *   6 GiB    fused attention at 6 GiB, where device 0 offloads the residual stream: the
 *            allocator's eviction at scale;
 *   scores   the scores attention at 40 GiB (the default before fused attention), whose blocks
 *            and graph grow with T^2.
 * Per configuration it prints min / median / max seconds, MemGraph vertices and edges, the
 * median time per vertex and per edge, and per position of the serial order (the TaskGraph's
 * kernels and transfers, which the planner steps through: the MemGraph's vertices also count
 * each weight's input and first load, 38,422 at every T, which take little time, so per vertex
 * the time rises with T as their share falls), time(2T)/time(T) of medians (target <= 2.3), the
 * growth of the vertices and of the positions per doubling with the exponent e of time ~ n^e
 * between neighbouring prompts (1 is linear), and whether 64K plans in under 10 s. Before starting it compares the
 * largest estimated graph + planner bytes with MemAvailable and exits 2 if they do not fit.
 *
 * usage: bench_plan_llama [--max-seq T] [--runs R] [--config default|6gib|scores] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "turnip/turnip.h"
#include "bench_common.h"

/* MemAvailable in bytes, 0 if unknown */
static double mem_available(void)
{
    char line[256];
    double kb = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb * 1024;
}

#define NDEV 8

typedef struct {
    const char *name, *flags;
    int attention;
    unsigned long long cap_gib;
} config;

static const config configs[] = {
    {"default", "", TP_LLAMA_FUSED, 40},
    {"6gib", "", TP_LLAMA_FUSED, 6},
    {"scores", " --attention scores", TP_LLAMA_SCORES, 40},
};
#define NCONF (int)(sizeof configs / sizeof *configs)

static void opts_for(const tp_llama_config *c, const config *cf, long long T, tp_llama_opts *lo)
{
    uint64_t cap = cf->cap_gib << 30;
    tp_llama_opts_default(lo, c, NDEV, T, cap);
    tp_llama_opts_attention(lo, c, cap, cf->attention);
}

/* one configuration over the first n prompts; 0, or 1 on a failure (printed) */
static int run_config(const tp_llama_config *c, const config *cf, const long long *seqs, int n, int runs)
{
    tp_error e;
    printf("\n== %s: turnip llama --preset 65b --devices %d --device-mem %lluGiB --no-data --seq-len T%s; %d runs per T\n",
           cf->name, NDEV, cf->cap_gib, cf->flags, runs);
    printf("%7s %6s %10s %10s %10s | %8s %8s %8s | %9s %8s | %9s %8s\n", "T", "blocks", "taskgraph", "memgraph", "edges", "min s",
           "median s", "max s", "us/vertex", "us/edge", "positions", "us/pos");
    double med[4] = {0}, nv[4] = {0}, np[4] = {0};
    for (int k = 0; k < n; k++) {
        tp_llama_opts lo;
        opts_for(c, cf, seqs[k], &lo);
        tp_graph *g;
        if (tp_llama_build(c, &lo, &g, &e)) {
            fprintf(stderr, "T=%lld: %s\n", seqs[k], e.msg);
            return 1;
        }
        tp_plan_opts o;
        tp_plan_opts_init(&o, NDEV, cf->cap_gib << 30);
        o.order = tp_llama_plan_order(&lo);
        double t[9];
        uint64_t nmv = 0, nme = 0;
        for (int r = 0; r < runs; r++) {
            tp_memgraph *mg;
            double t0 = tp_now_seconds();
            if (tp_plan(g, &o, &mg, &e)) {
                fprintf(stderr, "T=%lld: plan: %s\n", seqs[k], e.msg);
                return 1;
            }
            t[r] = tp_now_seconds() - t0;
            if (r == runs - 1) { /* the planner is deterministic: every run's plan is this one */
                tp_plan_stats st;
                tp_memgraph_stats(mg, &st);
                nmv = st.vertices;
                nme = st.edges;
            }
            tp_memgraph_free(mg);
        }
        qsort(t, (size_t)runs, sizeof *t, bench_cmp_double);
        med[k] = t[runs / 2];
        nv[k] = (double)nmv;
        uint64_t npos = 0; /* the serial order's positions: every vertex but the inputs */
        for (uint32_t x = 0; x < tp_graph_size(g); x++) npos += tp_graph_vertex(g, x)->kind != TP_V_INPUT;
        np[k] = (double)npos;
        printf("%7lld %6d %10llu %10llu %10llu | %8.3f %8.3f %8.3f | %9.3f %8.3f | %9llu %8.3f\n", seqs[k], lo.blocks,
               (unsigned long long)tp_graph_size(g), (unsigned long long)nmv, (unsigned long long)nme, t[0], med[k],
               t[runs - 1], med[k] / (double)nmv * 1e6, med[k] / (double)nme * 1e6, (unsigned long long)npos,
               med[k] / (double)npos * 1e6);
        fflush(stdout);
        tp_graph_free(g);
    }
    printf("scaling, time(2T)/time(T) of medians (target <= 2.3):");
    for (int k = 1; k < n; k++) printf("  %lldK->%lldK %.2f", seqs[k - 1] / 1024, seqs[k] / 1024, med[k] / med[k - 1]);
    printf("\n");
    printf("vertices x per doubling, and the exponent e of time ~ vertices^e between them (1: linear):");
    for (int k = 1; k < n; k++)
        printf("  %lldK->%lldK %.2fx e=%.2f", seqs[k - 1] / 1024, seqs[k] / 1024, nv[k] / nv[k - 1],
               log(med[k] / med[k - 1]) / log(nv[k] / nv[k - 1]));
    printf("\n");
    printf("positions x per doubling, and e of time ~ positions^e:");
    for (int k = 1; k < n; k++)
        printf("  %lldK->%lldK %.2fx e=%.2f", seqs[k - 1] / 1024, seqs[k] / 1024, np[k] / np[k - 1],
               log(med[k] / med[k - 1]) / log(np[k] / np[k - 1]));
    printf("\n");
    if (n >= 3) printf("64K in %.2f s (target < 10 s): %s\n", med[2], med[2] < 10 ? "yes" : "NO");
    return 0;
}

int main(int argc, char **argv)
{
    long long max_seq = 131072;
    int runs = 3, only = -1;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (!strcmp(argv[i], "--max-seq") && i + 1 < argc) {
            max_seq = strtoll(argv[++i], &end, 10);
            if (*end || max_seq < 16384 || max_seq > 131072) goto usage;
        } else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
            long r = strtol(argv[++i], &end, 10);
            if (*end || r < 1 || r > 9) goto usage;
            runs = (int)r;
        } else if (!strcmp(argv[i], "--config") && i + 1 < argc) {
            i++;
            for (int k = 0; k < NCONF; k++)
                if (!strcmp(argv[i], configs[k].name)) only = k;
            if (only < 0) goto usage;
        } else {
        usage:
            fprintf(stderr, "usage: bench_plan_llama [--max-seq 16384..131072] [--runs 1..9] [--config default|6gib|scores]\n");
            return 2;
        }
    }
    tp_error e;
    tp_llama_config c;
    if (tp_llama_preset("65b", &c, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    const long long seqs[] = {16384, 32768, 65536, 131072};
    int n = 0;
    while (n < 4 && seqs[n] <= max_seq) n++;
    for (int k = 0; k < NCONF; k++) { /* the largest build of each configuration must fit this machine's free memory */
        if (only >= 0 && k != only) continue;
        tp_llama_opts lo;
        opts_for(&c, &configs[k], seqs[n - 1], &lo);
        tp_build_estimate est;
        tp_llama_estimate(&c, &lo, &est);
        double need = est.graph_bytes + est.plan_bytes, avail = mem_available();
        if (avail > 0 && need > avail) {
            printf("%s, T=%lld needs about %.1f GiB (graph %.1f + planner %.1f), MemAvailable is %.1f GiB: "
                   "not run (--max-seq %lld runs the smaller ones)\n",
                   configs[k].name, seqs[n - 1], need / (1 << 30), est.graph_bytes / (1 << 30), est.plan_bytes / (1 << 30),
                   avail / (1 << 30), n > 1 ? seqs[n - 2] : 16384);
            return 2;
        }
    }
    bench_machine("planner is single-threaded");
    for (int k = 0; k < NCONF; k++)
        if ((only < 0 || k == only) && run_config(&c, &configs[k], seqs, n, runs)) return 1;
    return 0;
}
