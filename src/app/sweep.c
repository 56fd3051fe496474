/* sweep.c - LLaMA prefill over prompt lengths and device caps on one backend (the sim, in
 * practice): build, plan, run once per point, one CSV row each, and a gnuplot PNG of latency
 * against length. The backend is the caller's, so which backend and with which options is
 * decided in one place, by the caller; every point reuses it (tp_exec_new prepares it anew). */
#include "turnip/app.h"
#include "io/util.h"

/* one point: plan and run, or an OOM row when no plan fits */
static tp_status point(const tp_sweep_opts *o, FILE *csv, int64_t T, uint64_t mem, tp_error *e)
{
    tp_llama_opts lo;
    tp_llama_opts_default(&lo, o->config, o->devices, T, mem);
    tp_graph *g;
    tp_status s = tp_llama_build(o->config, &lo, &g, e);
    if (s) return s;
    tp_plan_opts po;
    tp_plan_opts_init(&po, o->devices, mem);
    tp_memgraph *mg;
    s = tp_plan(g, &po, &mg, e);
    if (s == TP_ERR_INFEASIBLE) {
        fprintf(csv, "%s,%s,%d,%lld,%llu,OOM,,,,,,\n", o->model, o->machine, o->devices, (long long)T, (unsigned long long)mem);
        if (o->log) fprintf(o->log, "  T=%-6lld OOM: %s\n", (long long)T, e->msg);
        tp_graph_free(g);
        return TP_OK;
    }
    if (!s) {
        tp_plan_stats st;
        tp_memgraph_stats(mg, &st);
        uint64_t off = 0, rel = 0;
        for (int d = 0; d < o->devices; d++) {
            off += st.dev[d].offload_bytes;
            rel += st.dev[d].reload_bytes;
        }
        tp_exec *x = NULL;
        tp_run_opts ro = o->run;
        tp_run_summary sum;
        s = tp_exec_new(mg, o->backend, &ro, &x, e);
        if (!s) s = tp_exec_run(x, &sum, e);
        if (!s) {
            fprintf(csv, "%s,%s,%d,%lld,%llu,ok,%.6f,%.6f,%.4f,%llu,%llu,%llu\n", o->model, o->machine, o->devices, (long long)T,
                    (unsigned long long)mem, sum.makespan, sum.lower_bound, sum.makespan / sum.lower_bound,
                    (unsigned long long)off, (unsigned long long)rel, (unsigned long long)st.vertices);
            char b1[32], b2[32];
            if (o->log)
                fprintf(o->log, "  T=%-6lld latency %9.3f s, bound %9.3f s (ratio %.3f), offloaded %s, reloaded %s\n", (long long)T,
                        sum.makespan, sum.lower_bound, sum.makespan / sum.lower_bound, tp_format_size(off, b1, sizeof b1),
                        tp_format_size(rel, b2, sizeof b2));
        }
        tp_exec_free(x);
        tp_memgraph_free(mg);
    }
    tp_graph_free(g);
    return s;
}

tp_status tp_sweep_llama(const tp_sweep_opts *o, FILE *csv, tp_error *err)
{
    if (!o->backend || !o->config || o->devices < 1 || o->devices > TP_MAX_DEVICES || o->nseqs < 0 || o->nmems < 0)
        return tp__fail(err, TP_ERR_ARG, "sweep: no backend or model, or %d devices", o->devices);
    for (int k = 0; k < o->nseqs; k++)
        if (o->seqs[k] < 1) return tp__fail(err, TP_ERR_ARG, "sweep: prompt length %lld", (long long)o->seqs[k]);
    fprintf(csv, "model,machine,devices,seq,device_mem,status,latency_s,bound_s,ratio,offloaded_bytes,reloaded_bytes,memgraph_vertices\n");
    tp_status s = TP_OK;
    for (int m = 0; m < o->nmems && !s; m++) {
        char b1[32];
        if (o->log)
            fprintf(o->log, "%s on %s, %d devices, %s each:\n", o->model, o->machine, o->devices,
                    tp_format_size(o->mems[m], b1, sizeof b1));
        for (int k = 0; k < o->nseqs && !s; k++) {
            s = point(o, csv, o->seqs[k], o->mems[m], err);
            if (o->log) fflush(o->log);
        }
    }
    return s;
}

tp_status tp_sweep_plot(const tp_sweep_opts *o, const char *csv_path, const char *png_path, tp_error *err)
{
    FILE *gp = popen("gnuplot 2>&1", "w");
    if (!gp) return tp__fail(err, TP_ERR_IO, "cannot run gnuplot for %s", png_path);
    fprintf(gp, "set terminal png size 900,560\nset output '%s'\nset datafile separator ','\nset logscale x 2\n"
                "set xlabel 'prompt tokens'\nset ylabel 'first-token latency (s)'\nset key left top\nset grid\n"
                "set title '%s prefill on %s, %d devices (simulated)'\n",
            png_path, o->model, o->machine, o->devices);
    fprintf(gp, "plot");
    for (int m = 0; m < o->nmems; m++) {
        char b1[32];
        fprintf(gp, "%s '%s' using ($5==%llu && strcol(6) eq 'ok' ? $4 : 1/0):7 with linespoints title '%s per device'",
                m ? "," : "", csv_path, (unsigned long long)o->mems[m], tp_format_size(o->mems[m], b1, sizeof b1));
    }
    fprintf(gp, "\n");
    if (pclose(gp)) return tp__fail(err, TP_ERR_IO, "gnuplot failed (install gnuplot-nox)");
    return TP_OK;
}
