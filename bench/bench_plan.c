/* bench_plan - planning speed on transformer-like layered graphs under memory pressure.
 *
 * Builds tp_model_layered graphs of about 10^4 .. 10^6 vertices, computes each device's
 * unconstrained peak along the planner's order (values loaded at first use, freed after
 * last use), and plans with every device capped at 50% and 20% of that peak. Prints
 * vertices per second and, side by side from the same run, time(2N)/time(N). Then the same
 * for the training-shaped graph (tp_layered_opts.backward: forward, then backward in reverse
 * reading saved activations), 3 runs each, min / median / max, with the default eviction search
 * and with --evict-budget 64, each plan's bytes moved over the exact windows' (one run of
 * --exact-windows up to 250,000 vertices: it is quadratic on this graph).
 *
 * usage: bench_plan [--quick] [--max N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "turnip/turnip.h"
#include "bench_common.h"

typedef struct {
    double secs[2];       /* the best (forward) or the median (backward) */
    double lo[2], hi[2];  /* min and max over the runs */
    uint64_t nv, nmv[2];
    uint64_t moved[2];    /* offload + reload bytes of the plan */
} result;

static uint32_t evict_budget; /* tp_plan_opts.evict_budget of every plan (0: the default search) */

/* plans lo's graph at both caps, `reps` times each (0: 3, or 1 for a long forward graph);
 * verbose prints the plan's offloads and reloads */
static int run(const tp_layered_opts *lo, result *r, int reps_asked, int verbose)
{
    tp_error e;
    tp_graph *g;
    double t0 = tp_now_seconds();
    if (tp_model_layered(lo, &g, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    double tb = tp_now_seconds() - t0;
    int nd = tp_graph_devices(g);
    uint64_t minf[TP_MAX_DEVICES], peak[TP_MAX_DEVICES];
    tp_order order = TP_ORDER_TOPO; /* the generator's stage-by-stage order, as the paper's V */
    if (tp_plan_bounds(g, order, minf, peak, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    r->nv = tp_graph_size(g);
    const double frac[2] = {0.5, 0.2};
    for (int i = 0; i < 2; i++) {
        tp_plan_opts o;
        tp_plan_opts_init(&o, nd, 0);
        o.order = order;
        o.evict_budget = evict_budget;
        for (int d = 0; d < nd; d++) {
            uint64_t c = (uint64_t)((double)peak[d] * frac[i]);
            o.device_mem[d] = c > minf[d] ? c : minf[d];
        }
        tp_memgraph *mg = NULL;
        double ts[3];
        int reps = reps_asked ? reps_asked : lo->backward || r->nv < 300000 ? 3 : 1; /* forward: best of 3 where a run is short and noisy */
        if (reps < 1 || reps > (int)(sizeof ts / sizeof *ts)) {
            fprintf(stderr, "bench_plan: %d repetitions, at most %zu\n", reps, sizeof ts / sizeof *ts);
            return 1;
        }
        for (int rep = 0; rep < reps; rep++) {
            tp_memgraph_free(mg);
            double t1 = tp_now_seconds();
            if (tp_plan(g, &o, &mg, &e)) {
                fprintf(stderr, "plan: %s\n", e.msg);
                return 1;
            }
            ts[rep] = tp_now_seconds() - t1;
        }
        qsort(ts, (size_t)reps, sizeof *ts, bench_cmp_double);
        r->lo[i] = ts[0];
        r->hi[i] = ts[reps - 1];
        r->secs[i] = lo->backward ? ts[reps / 2] : ts[0];
        r->nmv[i] = tp_memgraph_size(mg);
        tp_plan_stats st;
        tp_memgraph_stats(mg, &st);
        r->moved[i] = 0;
        for (int d = 0; d < nd; d++) r->moved[i] += st.dev[d].offload_bytes + st.dev[d].reload_bytes;
        if (verbose) {
            uint64_t off = 0, rel = 0;
            for (int d = 0; d < nd; d++) {
                off += st.dev[d].offload_count;
                rel += st.dev[d].reload_count;
            }
            char b1[32], b2[32];
            printf("  %2.0f%% cap (%s of peak %s per device): %llu offloads, %llu reloads\n", frac[i] * 100,
                   tp_format_size(o.device_mem[0], b1, sizeof b1), tp_format_size(peak[0], b2, sizeof b2),
                   (unsigned long long)off, (unsigned long long)rel);
        }
        tp_memgraph_free(mg);
    }
    if (verbose) printf("  (graph built in %.2f s)\n", tb);
    tp_graph_free(g);
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t max = 1000000;
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--max") && i + 1 < argc) max = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: bench_plan [--quick] [--max N]\n");
            return 2;
        }
    }
    if (quick) max = 20000;
    bench_machine("planner is single-threaded");
    tp_layered_opts lo;
    tp_layered_opts_init(&lo);
    lo.devices = 2;
    lo.heads = 16;
    lo.chunks = 8;
    lo.seq = 4096;
    lo.head_dim = 64;
    lo.layers = 1;
    uint64_t per = tp_layered_vertices(&lo) - (uint64_t)lo.devices;
    printf("graph: %d devices, %d heads and %d MLP chunks per device, T=%lld, %llu vertices per layer, order topo\n",
           lo.devices, lo.heads, lo.chunks, (long long)lo.seq, (unsigned long long)per);
    const uint64_t sizes[] = {10000, 20000, 100000, 200000, 500000, 1000000};
    result res[6];
    int n = 0;
    printf("%10s %10s | %10s %12s | %10s %12s\n", "vertices", "memgraph", "50%: s", "vertices/s", "20%: s", "vertices/s");
    for (int i = 0; i < 6 && sizes[i] <= max; i++) {
        lo.layers = (int)(sizes[i] / per);
        if (lo.layers < 1) lo.layers = 1;
        if (run(&lo, &res[i], 0, 0)) return 1;
        printf("%10llu %10llu | %10.3f %12.0f | %10.3f %12.0f\n", (unsigned long long)res[i].nv,
               (unsigned long long)res[i].nmv[1], res[i].secs[0], (double)res[i].nv / res[i].secs[0], res[i].secs[1],
               (double)res[i].nv / res[i].secs[1]);
        fflush(stdout);
        n = i + 1;
    }
    printf("scaling, time(2N)/time(N) at 50%% and 20%% caps (target <= 2.3):\n");
    const int pairs[3][2] = {{0, 1}, {2, 3}, {4, 5}};
    for (int p = 0; p < 3; p++) {
        int a = pairs[p][0], b = pairs[p][1];
        if (b >= n) break;
        printf("  N=%-8llu %.2f  %.2f\n", (unsigned long long)res[a].nv, res[b].secs[0] / res[a].secs[0],
               res[b].secs[1] / res[a].secs[1]);
    }
    if (n == 6) printf("10^6 vertices planned in %.2f s (50%%) and %.2f s (20%%); target < 5 s\n", res[5].secs[0], res[5].secs[1]);
    lo.layers = 4;
    printf("detail, %llu vertices:\n", (unsigned long long)tp_layered_vertices(&lo));
    if (run(&lo, &res[0], 0, 1)) return 1;

    /* training-shaped: forward, then backward reading the saved activations; the default
     * eviction search, then tp_plan_opts.evict_budget 64, side by side, each plan's bytes moved
     * over those of the exact windows (TP_EVICT_EXACT, quadratic here: one run, up to 250,000
     * vertices) */
    lo.backward = 1;
    lo.layers = 1;
    per = tp_layered_vertices(&lo) - (uint64_t)lo.devices;
    const uint64_t bsizes[] = {10000, 20000, 125000, 250000, 500000, 1000000};
    enum { NEXACT = 4 }; /* the exact windows for the sizes up to 250,000 vertices only: quadratic here */
    static result bres[2][6], exact[NEXACT];
    const uint32_t budgets[2] = {0, 64};
    evict_budget = TP_EVICT_EXACT;
    printf("training-shaped (--backward), %llu vertices per layer; exact windows (--exact-windows), one run, s:",
           (unsigned long long)per);
    for (int i = 0; i < NEXACT && bsizes[i] <= max; i++) {
        lo.layers = (int)(bsizes[i] / per);
        if (lo.layers < 1) lo.layers = 1;
        if (run(&lo, &exact[i], 1, 0)) return 1;
        printf(" %llu: %.3f / %.3f;", (unsigned long long)exact[i].nv, exact[i].secs[0], exact[i].secs[1]);
        fflush(stdout);
    }
    printf("\n");
    for (int pass = 0; pass < 2; pass++) {
        evict_budget = budgets[pass];
        if (pass == 0)
            printf("training-shaped, the default eviction search, 3 runs, median (min-max) s; bytes moved (offload + reload) over the exact plan's\n");
        else
            printf("training-shaped, --evict-budget %u, the same columns\n", evict_budget);
        int nb = 0;
        printf("%10s %10s | %24s | %24s | moved 50%%  moved 20%%\n", "vertices", "memgraph", "50%: s", "20%: s");
        for (int i = 0; i < 6 && bsizes[i] <= max; i++) {
            result *r = &bres[pass][i];
            lo.layers = (int)(bsizes[i] / per);
            if (lo.layers < 1) lo.layers = 1;
            if (run(&lo, r, 0, 0)) return 1;
            char c0[40], c1[40];
            snprintf(c0, sizeof c0, "%.3f (%.3f-%.3f)", r->secs[0], r->lo[0], r->hi[0]);
            snprintf(c1, sizeof c1, "%.3f (%.3f-%.3f)", r->secs[1], r->lo[1], r->hi[1]);
            printf("%10llu %10llu | %24s | %24s |", (unsigned long long)r->nv, (unsigned long long)r->nmv[1], c0, c1);
            for (int c = 0; c < 2; c++)
                if (i < NEXACT && exact[i].nv) printf(" %9.4f", exact[i].moved[c] ? (double)r->moved[c] / (double)exact[i].moved[c] : 1.0);
                else printf(" %9s", "-");
            printf("\n");
            fflush(stdout);
            nb = i + 1;
        }
        printf("scaling, time(2N)/time(N) of medians at 50%% and 20%% caps (target <= 2.3):\n");
        for (int i = 1; i < nb; i++)
            if (i != 2)
                printf("  N=%-8llu %.2f  %.2f\n", (unsigned long long)bres[pass][i - 1].nv,
                       bres[pass][i].secs[0] / bres[pass][i - 1].secs[0], bres[pass][i].secs[1] / bres[pass][i - 1].secs[1]);
        if (nb == 6)
            printf("training-shaped 10^6 vertices planned in %.2f s (50%%) and %.2f s (20%%)%s; target < 5 s\n",
                   bres[pass][5].secs[0], bres[pass][5].secs[1], pass ? " with --evict-budget 64" : " by default");
    }
    return 0;
}
