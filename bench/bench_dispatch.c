/* bench_dispatch - executor overhead: microseconds per vertex for 10^5 no-op kernels, independent
 * and chained, on the cpu backend; side by side in the same run with StarPU 1.3 executing the
 * same DAG of empty tasks (when built with StarPU: Debian's libstarpu-dev).
 *
 * usage: bench_dispatch [N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "turnip/turnip.h"
#ifdef TP_HAVE_STARPU
#include <starpu.h>
#endif

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
    if (tp_graph_finalize(g, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        exit(1);
    }
    tp_plan_opts po;
    tp_plan_opts_init(&po, 1, (uint64_t)n * 8 + 64);
    tp_memgraph *mg;
    if (tp_plan(g, &po, &mg, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        exit(1);
    }
    tp_backend *be = NULL;
    tp_backend_cpu_new(NULL, &be, NULL);
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    ro.streams = streams;
    tp_exec *x;
    tp_run_summary s;
    if (tp_exec_new(mg, be, &ro, &x, &e) || tp_exec_run(x, &s, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        exit(1);
    }
    tp_exec_free(x);
    tp_backend_free(be);
    tp_memgraph_free(mg);
    tp_graph_free(g);
    return s.makespan * 1e6 / n;
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
    starpu_resume(); /* its workers poll a core while running: paused while turnip is measured */
    double t0 = tp_now_seconds();
    for (uint32_t i = 0; i < n; i++) {
        struct starpu_task *t = starpu_task_create();
        t->cl = &cl;
        if (chained) {
            t->use_tag = 1;
            t->tag_id = (starpu_tag_t)i + 1;
            if (i) starpu_tag_declare_deps((starpu_tag_t)i + 1, 1, (starpu_tag_t)i);
        }
        if (starpu_task_submit(t)) {
            fprintf(stderr, "starpu_task_submit failed\n");
            exit(1);
        }
    }
    starpu_task_wait_for_all();
    double us = (tp_now_seconds() - t0) * 1e6 / n;
    starpu_pause();
    if (chained)
        for (uint32_t i = 0; i < n; i++) starpu_tag_remove((starpu_tag_t)i + 1);
    return us;
}
#endif

int main(int argc, char **argv)
{
    uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 100000;
    printf("%u no-op kernels on one emulated device; microseconds per vertex (best of 3)\n", n);
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
    printf("%-28s %12s %12s\n", "", "independent", "chained");
#else
    printf("(built without StarPU: install libstarpu-dev and rebuild to compare)\n%-28s %12s %12s\n", "", "independent", "chained");
#endif
    double best[4] = {1e9, 1e9, 1e9, 1e9};
    for (int rep = 0; rep < 3; rep++) {
        double a = ours(n, 0, 1), b = ours(n, 1, 1);
        if (a < best[0]) best[0] = a;
        if (b < best[1]) best[1] = b;
#ifdef TP_HAVE_STARPU
        double c = starpu(n, 0), d = starpu(n, 1);
        if (c < best[2]) best[2] = c;
        if (d < best[3]) best[3] = d;
#endif
    }
    printf("%-28s %12.3f %12.3f\n", "turnip executor (1 stream)", best[0], best[1]);
#ifdef TP_HAVE_STARPU
    printf("%-28s %12.3f %12.3f\n", "StarPU 1.3 (1 CPU worker)", best[2], best[3]);
    printf("ratio turnip/StarPU           %12.3f %12.3f\n", best[0] / best[2], best[1] / best[3]);
    starpu_resume();
    starpu_shutdown();
#endif
    return 0;
}
