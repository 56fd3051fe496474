/* sweep.c - LLaMA prefill over prompt lengths and device caps on one backend (the sim, in
 * practice): build, plan, run once per point, one CSV row each, and a gnuplot PNG of latency
 * against length. The backend is the caller's, so which backend and with which options is
 * decided in one place, by the caller; every point reuses it (tp_exec_new prepares it anew).
 * The gnuplot script is never built from a path the user gave (see tp_sweep_plot). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "turnip/app.h"
#include "io/util.h"

#define PATH_LEN 4096 /* temporary file paths, with the NUL */

/* one point: plan and run, or an OOM row when no plan fits */
static tp_status point(const tp_sweep_opts *o, FILE *csv, int64_t T, uint64_t mem, tp_error *e)
{
    tp_llama_opts lo;
    tp_llama_opts_default(&lo, o->config, o->devices, T, mem);
    tp_llama_opts_attention(&lo, o->config, mem, o->attention);
    tp_llama_opts_residual(&lo, o->residual);
    tp_graph *g;
    tp_status s = tp_llama_build(o->config, &lo, &g, e);
    if (s) return s;
    tp_plan_opts po;
    tp_plan_opts_init(&po, o->devices, mem);
    po.order = tp_llama_plan_order(&lo);
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

/* Writes s into buf (cap bytes) as a gnuplot single-quoted string. Inside '...' gnuplot
 * expands nothing (no `command` substitution, no @macros, no backslash escapes) and '' is
 * one quote, so every byte but a control character (a newline would end the command) can be
 * written; a control character, or a buf too small, returns 0 and leaves no string. */
static int gp_quote(char *buf, size_t cap, const char *s)
{
    size_t n = 0;
    if (cap < 3) return 0;
    buf[n++] = '\'';
    for (const char *c = s; *c; c++) {
        if ((unsigned char)*c < 0x20 || *c == 0x7f) return 0;
        if (n + (*c == '\'' ? 2 : 1) + 2 > cap) return 0;
        if (*c == '\'') buf[n++] = '\'';
        buf[n++] = *c;
    }
    buf[n++] = '\'';
    buf[n] = 0;
    return 1;
}

/* copies the whole regular file from to a new file to (created, or truncated) */
/* copies from into to, whole or not at all (tp_outfile: a temporary beside `to`, renamed) */
static tp_status copy_file(const char *from, const char *to, tp_error *err)
{
    char *data;
    size_t len;
    tp_status s = tp__read_file(from, &data, &len, err);
    if (s) return s;
    tp_outfile *o;
    if (!(s = tp_outfile_open(to, &o, err))) {
        if (fwrite(data, 1, len, tp_outfile_stream(o)) != len) {
            tp_outfile_abort(o);
            s = tp__fail(err, TP_ERR_IO, "%s: write error", to);
        } else {
            s = tp_outfile_commit(o, err);
        }
    }
    free(data);
    return s;
}

/* The script gnuplot runs is built from fixed text, numbers and names this function makes:
 * the CSV is copied to data.csv in a new private directory (mkdtemp, mode 0700), gnuplot
 * writes plot.png there, and the PNG is then copied to png_path through tp_outfile (whole or
 * not at all). No path the user gave reaches gnuplot; the labels (model, machine) only through
 * gp_quote, and a label it cannot quote is left out of the title. */
tp_status tp_sweep_plot(const tp_sweep_opts *o, const char *csv_path, const char *png_path, tp_error *err)
{
    char dir[PATH_LEN], data[PATH_LEN + 16], png[PATH_LEN + 16], qdata[2 * PATH_LEN + 40], qpng[2 * PATH_LEN + 40];
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp || (size_t)snprintf(dir, sizeof dir, "%s/turnip-plot-XXXXXX", tmp) >= sizeof dir || !gp_quote(qdata, sizeof qdata, dir))
        snprintf(dir, sizeof dir, "/tmp/turnip-plot-XXXXXX");
    if (!mkdtemp(dir)) return tp__fail(err, TP_ERR_IO, "%s: cannot make a temporary directory for gnuplot: %s", dir, strerror(errno));
    snprintf(data, sizeof data, "%s/data.csv", dir);
    snprintf(png, sizeof png, "%s/plot.png", dir);
    /* removed by the command's signal handler if it is interrupted here */
    int sd = tp__scratch_claim(dir, 1), sdata = tp__scratch_claim(data, 0), spng = tp__scratch_claim(png, 0);
    tp_status s = TP_OK;
    if (!gp_quote(qdata, sizeof qdata, data) || !gp_quote(qpng, sizeof qpng, png))
        s = tp__fail(err, TP_ERR_IO, "%s: a temporary directory gnuplot cannot be given", dir);
    if (!s) s = copy_file(csv_path, data, err);
    if (!s) {
        char qmodel[1024], qmachine[512];
        int labels = gp_quote(qmodel, sizeof qmodel, o->model ? o->model : "") && gp_quote(qmachine, sizeof qmachine, o->machine ? o->machine : "");
        FILE *gp = popen("gnuplot 2>&1", "w");
        if (!gp) s = tp__fail(err, TP_ERR_IO, "cannot run gnuplot for %s", png_path);
        else {
            fprintf(gp, "set terminal png size 900,560\nset output %s\nset datafile separator ','\nset logscale x 2\n"
                        "set xlabel 'prompt tokens'\nset ylabel 'first-token latency (s)'\nset key left top noenhanced\nset grid\n",
                    qpng);
            if (labels)
                fprintf(gp, "set title %s.' prefill on '.%s.', %d devices (simulated)' noenhanced\n", qmodel, qmachine, o->devices);
            else fprintf(gp, "set title 'prefill, %d devices (simulated)' noenhanced\n", o->devices);
            fprintf(gp, "plot");
            for (int m = 0; m < o->nmems; m++) {
                char b1[32];
                fprintf(gp, "%s %s using ($5==%llu && strcol(6) eq 'ok' ? $4 : 1/0):7 with linespoints title '%s per device'",
                        m ? "," : "", qdata, (unsigned long long)o->mems[m], tp_format_size(o->mems[m], b1, sizeof b1));
            }
            fprintf(gp, "\n");
            if (pclose(gp)) s = tp__fail(err, TP_ERR_IO, "gnuplot failed (install gnuplot-nox)");
        }
    }
    if (!s) s = copy_file(png, png_path, err); /* whole or not at all, any file system, any target */
    unlink(png);
    unlink(data);
    rmdir(dir);
    tp__scratch_release(spng);
    tp__scratch_release(sdata);
    tp__scratch_release(sd);
    return s;
}
