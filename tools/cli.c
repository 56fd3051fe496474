/* cli.c - helpers every turnip command shares (see cli.h): exit codes, error printing, the
 * planning flags, and the one place each for making backends and driving the executor. */
#include "cli.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const cli_prog = "turnip";

int cli_exit_code(tp_status s)
{
    switch (s) {
    case TP_OK: return 0;
    case TP_ERR_CHECK: return 1;
    case TP_ERR_PARSE:
    case TP_ERR_INVALID:
    case TP_ERR_INFEASIBLE:
    case TP_ERR_ARG:
    case TP_ERR_DEVICE:
    case TP_ERR_IO: return 2;
    case TP_ERR_NOMEM: return 3;
    }
    return 3;
}

int cli_fail(const char *cmd, tp_status s, const tp_error *e)
{
    fprintf(stderr, "%s%s%s: %s\n", cli_prog, cmd ? " " : "", cmd ? cmd : "", e->msg);
    return cli_exit_code(s);
}

int cli_usage_error(const char *cmd, const char *msg, const char *arg)
{
    fprintf(stderr, "%s %s: %s%s%s\nTry '%s %s --help'.\n", cli_prog, cmd, msg, arg ? ": " : "", arg ? arg : "", cli_prog, cmd);
    return 2;
}

int cli_errorf(const char *cmd, int code, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s%s%s: ", cli_prog, cmd ? " " : "", cmd ? cmd : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return code;
}

tp_status cli_set_error(tp_error *e, tp_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    e->code = s;
    return s;
}

int cli_plan_opts(const char *cmd, const cli_plan_flags *f, int ndevices, tp_plan_opts *o)
{
    int n = f->device_mem.n;
    if (n) {
        if (n != 1 && n != ndevices)
            return cli_errorf(cmd, 2, "--device-mem lists %d sizes, the graph has %d devices", n, ndevices);
        for (int d = 0; d < ndevices; d++) o->device_mem[d] = f->device_mem.v[n == 1 ? 0 : d];
    }
    if (f->host_mem) o->host_mem = f->host_mem;
    if (f->order) tp_order_parse(f->order, &o->order); /* a name of cli_plan_order_names: cannot fail */
    return 0;
}

static tp_backend *make_backend(const char *cmd, const cli_backend_flags *f, int *rc)
{
    const char *name = f->name ? f->name : "cpu";
    tp_backend *be = NULL;
    *rc = 2;
    if (!strcmp(name, "sim") && f->machine) {
        if (!(be = tp_backend_sim_new(f->machine, f->jitter))) *rc = cli_errorf(cmd, 3, "out of memory");
        return be;
    }
    if (!strcmp(name, "cpu")) {
        if (f->completion) {
            cli_usage_error(cmd, "--completion is for --backend cuda", f->completion);
            return NULL;
        }
        tp_cpu_opts co;
        tp_cpu_opts_init(&co);
        co.link_gbps = f->link_gbps;
        co.link_latency_us = f->link_latency_us;
        co.jitter = f->jitter;
        if (!(be = tp_backend_cpu_new(&co))) *rc = cli_errorf(cmd, 3, "out of memory");
        return be;
    }
    if (!strcmp(name, "cuda") && (f->link_gbps > 0 || f->link_latency_us > 0 || f->jitter > 0)) {
        cli_usage_error(cmd, "--link-bandwidth, --link-latency and --jitter emulate links on the cpu backend; a GPU has its own", name);
        return NULL;
    }
    if (strcmp(name, "cuda")) {
        char b[160];
        tp_cuda_describe(b, sizeof b);
        cli_errorf(cmd, 2, "--backend %s is not built in (backends: cpu, sim%s%s)", name, *b ? ", " : "", b);
        return NULL;
    }
    tp_cuda_opts uo;
    tp_cuda_opts_init(&uo);
    if (f->completion && !strcmp(f->completion, "callback")) uo.completion = TP_CUDA_CALLBACK;
    else if (f->completion && !strcmp(f->completion, "poll")) uo.completion = TP_CUDA_POLL;
    tp_error e;
    if (!(be = tp_backend_cuda_new(&uo, &e))) *rc = cli_fail(cmd, TP_ERR_DEVICE, &e);
    return be;
}

tp_backend *cli_backend(const char *cmd, const cli_backend_flags *f, int *rc)
{
    tp_backend *be = make_backend(cmd, f, rc);
    if (be) *rc = 0;
    return be;
}

static void progress_line(void *ctx, uint64_t done, uint64_t total)
{
    (void)ctx;
    fprintf(stderr, "\r  running: %llu / %llu vertices (%.0f%%)   ", (unsigned long long)done, (unsigned long long)total,
            100.0 * (double)done / (double)(total ? total : 1));
}

void cli_run_opts(const cli_exec_flags *f, tp_run_opts *ro)
{
    tp_run_opts_init(ro);
    if (f->order) tp_policy_parse(f->order, &ro->policy); /* a name of cli_policy_names: cannot fail */
    ro->seed = (uint64_t)f->seed;
    ro->streams = (int)f->streams;
    ro->fail_vertex = f->fail_vertex;
    if (f->progress) ro->progress = progress_line;
}

tp_status cli_exec_new(const tp_memgraph *mg, tp_backend *be, const cli_exec_flags *f, tp_exec **x, tp_error *e)
{
    tp_run_opts ro;
    cli_run_opts(f, &ro);
    ro.trace_path = f->trace;
    *x = NULL;
    return tp_exec_new(mg, be, &ro, x, e);
}

tp_status cli_exec_run(tp_exec *x, const cli_exec_flags *f, tp_run_summary *sum, tp_error *e)
{
    long long n = f->repeat > 1 ? f->repeat : 1;
    double best = 0;
    tp_status s = TP_OK;
    for (long long rep = 0; rep < n && !s; rep++) { /* inputs stay: runs repeat */
        s = tp_exec_run(x, sum, e);
        if (!s && n > 1) {
            best = rep == 0 || sum->makespan < best ? sum->makespan : best;
            printf("run %lld of %lld: makespan %.4f s\n", rep + 1, n, sum->makespan);
            fflush(stdout);
        }
    }
    if (!s && n > 1) printf("best makespan of %lld runs: %.4f s\n", n, best);
    if (f->progress) fputs("\r\033[K", stderr);
    return s;
}

int cli_sim_run(const char *cmd, const tp_memgraph *mg, const tp_sim_profile *prof, const cli_exec_flags *xf,
                const cli_backend_flags *bf)
{
    cli_backend_flags b = *bf;
    b.name = "sim";
    b.machine = prof;
    int rc;
    tp_backend *be = cli_backend(cmd, &b, &rc);
    if (!be) return rc;
    tp_exec *x = NULL;
    tp_error e;
    tp_run_summary sum;
    double t0 = tp_now_seconds();
    tp_status s = cli_exec_new(mg, be, xf, &x, &e);
    if (!s) s = cli_exec_run(x, xf, &sum, &e);
    if (!s) {
        printf("simulated on %s (%.2f s of real time):\n", prof->name, tp_now_seconds() - t0);
        tp_run_summary_print(&sum, stdout);
    }
    tp_exec_free(x);
    tp_backend_free(be);
    return s ? cli_fail(cmd, s, &e) : 0;
}
