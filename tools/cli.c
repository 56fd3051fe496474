/* cli.c - helpers every turnip command shares (see cli.h): exit codes, error printing, the
 * planning flags, and the one place each for making backends and driving the executor. */
#include "cli.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* s with control characters escaped (\n, \t, \r, \xNN), so an error stays one line whatever
 * names a file or a TaskGraph holds */
void cli_put_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != 0x7f) fputc(c, f);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c == '\r') fputs("\\r", f);
        else fprintf(f, "\\x%02x", c);
    }
}

/* "turnip: " or "turnip CMD: " */
static void prefix(const char *cmd)
{
    fprintf(stderr, "%s%s%s: ", cli_prog, cmd ? " " : "", cmd ? cmd : "");
}

int cli_fail(const char *cmd, tp_status s, const tp_error *e)
{
    prefix(cmd);
    cli_put_escaped(stderr, e->msg);
    fputc('\n', stderr);
    return cli_exit_code(s);
}

int cli_fail_file(const char *cmd, const char *path, tp_status s, const tp_error *e)
{
    prefix(cmd);
    cli_put_escaped(stderr, path);
    fputs(": ", stderr);
    cli_put_escaped(stderr, e->msg);
    fputc('\n', stderr);
    return cli_exit_code(s);
}

int cli_usage_error(const char *cmd, const char *msg, const char *arg)
{
    prefix(cmd);
    cli_put_escaped(stderr, msg);
    if (arg) {
        fputs(": ", stderr);
        cli_put_escaped(stderr, arg);
    }
    fprintf(stderr, "\nTry '%s %s --help'.\n", cli_prog, cmd);
    return 2;
}

int cli_errorf(const char *cmd, int code, const char *fmt, ...)
{
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    prefix(cmd);
    cli_put_escaped(stderr, msg);
    fputc('\n', stderr);
    return code;
}

/* The regular files a command reads (cli_note_input): an output that names one of them is refused
 * before the work, so no run replaces its own input with its output. */
#define CLI_NINPUTS 16
static struct {
    dev_t dev;
    ino_t ino;
    const char *what; /* the flag or operand that names it (static) */
} cli_inputs[CLI_NINPUTS];
static int cli_ninputs;

void cli_note_input(const char *what, const char *path)
{
    struct stat st;
    if (!path || cli_ninputs == CLI_NINPUTS || stat(path, &st) || !S_ISREG(st.st_mode)) return;
    cli_inputs[cli_ninputs].dev = st.st_dev;
    cli_inputs[cli_ninputs].ino = st.st_ino;
    cli_inputs[cli_ninputs++].what = what;
}

void cli_note_model(const char *dir)
{
    static const char *const names[] = {"config.json", "model.safetensors", "model.safetensors.index.json"};
    char path[4096];
    for (size_t k = 0; dir && k < sizeof names / sizeof *names; k++)
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[k]) < sizeof path) cli_note_input("--model", path);
}

/* 0, or exit code 2 after one line when path (an output named by flag, or NULL) is a file the
 * command reads */
static int cli_not_input(const char *cmd, const char *flag, const char *path)
{
    struct stat st;
    if (!path || stat(path, &st) || !S_ISREG(st.st_mode)) return 0;
    for (int k = 0; k < cli_ninputs; k++)
        if (cli_inputs[k].dev == st.st_dev && cli_inputs[k].ino == st.st_ino)
            return cli_errorf(cmd, 2, "%s%s%s: is this command's input (%s); an output never replaces an input: name another file",
                              flag ? flag : "", flag ? " " : "", path, cli_inputs[k].what);
    return 0;
}

int cli_bad_item(const char *cmd, const char *flag, const char *item, long long index, const char *want)
{
    size_t n = strcspn(item, ",;");
    return cli_errorf(cmd, 2, "%s: item %lld, '%.*s', is not %s", flag, index + 1, n > 40 ? 40 : (int)n, item, want);
}

int cli_out_open(const char *cmd, const char *path, cli_out *o)
{
    o->path = path;
    o->of = NULL;
    o->f = stdout;
    if (!path || !strcmp(path, "-")) { /* "-": standard output, as with no path */
        o->path = NULL;
        return 0;
    }
    tp_error e; /* an input named as the output: refused before the work (cli_out_check) */
    tp_status s = tp_outfile_open(path, &o->of, &e);
    if (s) return cli_fail(cmd, s, &e);
    o->f = tp_outfile_stream(o->of);
    return 0;
}

int cli_out_close(const char *cmd, cli_out *o, int keep)
{
    if (!o->path) {
        if (fflush(stdout) || ferror(stdout)) return keep ? cli_errorf(cmd, 2, "writing standard output failed") : 0;
        return 0;
    }
    if (!keep) {
        tp_outfile_abort(o->of);
        o->of = NULL;
        return 0;
    }
    tp_error e;
    tp_status s = tp_outfile_commit(o->of, &e);
    o->of = NULL;
    if (!s) return 0;
    size_t n = strlen(o->path); /* the library's message starts with the path: said once */
    const char *why = !strncmp(e.msg, o->path, n) && !strncmp(e.msg + n, ": ", 2) ? e.msg + n + 2 : e.msg;
    return cli_errorf(cmd, cli_exit_code(s), "writing %s failed: %s", o->path, why);
}

int cli_out_finish(const char *cmd, cli_out *o, tp_status s, const tp_error *e)
{
    if (!s) return cli_out_close(cmd, o, 1);
    cli_out_close(cmd, o, 0);
    if (s == TP_ERR_IO)
        return cli_errorf(cmd, cli_exit_code(s), "writing %s failed: %s", o->path ? o->path : "standard output", e->msg);
    return cli_fail(NULL, s, e);
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
    if (f->no_sum_into) o->sum_into = 0;
    if (f->evict_budget && f->exact_windows) return cli_errorf(cmd, 2, "--evict-budget and --exact-windows: give one");
    if (f->evict_budget) o->evict_budget = (uint32_t)f->evict_budget; /* 1..10^6 by the table */
    if (f->exact_windows) o->evict_budget = TP_EVICT_EXACT;
    return 0;
}

/* indexed by tp_offload_algo, so a name's index is its strategy (a new strategy: a name here) */
_Static_assert(TP_OFFLOAD_L2L_SYNC == 4, "l2l-sync is the fifth strategy (a strategy after it: a name here and a new bound)");
const char *const cli_weight_offload_names[] = {[TP_OFFLOAD_GREEDY] = "greedy", [TP_OFFLOAD_GREEDY_STAR] = "greedy-star",
                                                [TP_OFFLOAD_L2L] = "l2l", [TP_OFFLOAD_MILP] = "milp",
                                                [TP_OFFLOAD_L2L_SYNC] = "l2l-sync", [TP_OFFLOAD_L2L_SYNC + 1] = NULL};

tp_offload_algo cli_offload_algo(const char *name)
{
    for (int i = 0; name && cli_weight_offload_names[i]; i++)
        if (!strcmp(name, cli_weight_offload_names[i])) return (tp_offload_algo)i;
    return TP_OFFLOAD_GREEDY;
}

int cli_plan_evictions(const char *cmd, const cli_plan_flags *f, const tp_graph *g, tp_plan_opts *o,
                       const tp_chain_machine *machine, tp_plan_evict **owned)
{
    *owned = NULL;
    tp_offload_algo a = cli_offload_algo(f->weight_offload);
    if (f->milp_time_limit && (!f->weight_offload || a != TP_OFFLOAD_MILP))
        return cli_errorf(cmd, 2, "--milp-time-limit is for --weight-offload milp");
    if (!f->weight_offload) return 0;
    /* the chain's operation order is the graph's file order (topo); another order interleaves
     * the backward with the forward, a schedule the selection was not made for */
    if (f->order && strcmp(f->order, "topo"))
        return cli_errorf(cmd, 2, "--weight-offload plans in the chain's own order: give --%s topo or leave it out",
                          !strcmp(cmd, "plan") ? "order" : "plan-order");
    o->order = TP_ORDER_TOPO;
    o->sum_into = 0; /* the evictions name the graph's vertices as given */
    tp_chain_machine m = {0, 0, f->milp_time_limit};
    if (machine) m.flops_per_s = machine->flops_per_s, m.beta = machine->beta;
    if (a == TP_OFFLOAD_MILP && !(m.flops_per_s > 0 && m.beta > 0))
        return cli_errorf(cmd, 2,
                          "--weight-offload milp needs the kernels' rate and the link's bandwidth: %s",
                          machine ? "give --opaque-rate and --link-bandwidth"
                                  : "use turnip sim --machine (or turnip run with --opaque-rate and --link-bandwidth)");
    if (a == TP_OFFLOAD_MILP && tp_graph_find(g, "w1") >= 0) /* progress on a chain graph (others fail at once) */
        fprintf(stderr, "turnip %s: --weight-offload milp: solving the chain's MILP (at most %g s)\n", cmd,
                m.time_limit_s > 0 ? m.time_limit_s : TP_OFFLOAD_MILP_TIME_LIMIT);
    tp_error e;
    uint32_t n = 0;
    tp_status s = tp_chain_graph_evictions(g, a, o->device_mem[0], &m, owned, &n, &e);
    if (s) return cli_errorf(cmd, 2, "--weight-offload %s: %s", f->weight_offload, e.msg);
    o->evictions = *owned;
    o->nevictions = n;
    return 0;
}

/* The command-line flags that are backend options (registry keys, turnip/backend.h). */
static const struct {
    const char *flag, *key;
} backend_flags[] = {{"--link-bandwidth", "link-bandwidth"}, {"--link-latency", "link-latency"},
                     {"--jitter", "jitter"},                 {"--completion", "completion"},
                     {"--matmul", "matmul"},                 {"--opaque-rate", "opaque-rate"}};
enum { NBFLAGS = sizeof backend_flags / sizeof backend_flags[0] };

static int accepts(const tp_backend_info *bi, const char *key)
{
    for (int k = 0; bi->keys[k]; k++)
        if (!strcmp(bi->keys[k], key)) return 1;
    return 0;
}

/* "--completion is for --backend cuda": the backends that take key */
static int not_an_option(const char *cmd, const char *flag, const char *key, const char *value)
{
    char msg[256];
    size_t o = (size_t)snprintf(msg, sizeof msg, "%s is for --backend ", flag);
    int first = 1;
    for (int i = 0; tp_backend_info_at(i) && o < sizeof msg; i++)
        if (accepts(tp_backend_info_at(i), key)) {
            o += (size_t)snprintf(msg + o, sizeof msg - o, "%s%s", first ? "" : " or ", tp_backend_info_at(i)->name);
            first = 0;
        }
    return cli_usage_error(cmd, msg, value);
}

/* The flags f gives as options of backend bi (into opts, text in num); 0, or the exit code
 * after printing which flag bi does not take. */
static int backend_opts(const char *cmd, const cli_backend_flags *f, const tp_backend_info *bi, tp_backend_opt *opts,
                        char num[][32], int *n)
{
    const char *given[NBFLAGS] = {NULL};
    if (f->link_gbps > 0) given[0] = (snprintf(num[0], 32, "%.17g", f->link_gbps), num[0]);
    if (f->link_latency_us > 0) given[1] = (snprintf(num[1], 32, "%.17g", f->link_latency_us), num[1]);
    if (f->jitter > 0) given[2] = (snprintf(num[2], 32, "%.17g", f->jitter), num[2]);
    given[3] = f->completion;
    given[4] = f->matmul;
    if (f->opaque_rate > 0) given[5] = (snprintf(num[5], 32, "%.17g", f->opaque_rate), num[5]);
    *n = 0;
    for (int k = 0; k < NBFLAGS; k++) {
        if (!given[k]) continue;
        if (!accepts(bi, backend_flags[k].key)) return not_an_option(cmd, backend_flags[k].flag, backend_flags[k].key, given[k]);
        opts[(*n)++] = (tp_backend_opt){backend_flags[k].key, given[k]};
    }
    return 0;
}

int cli_backend_known(const char *cmd, const char *name)
{
    if (!name || !strcmp(name, "sim") || tp_backend_find(name)) return 0;
    char list[256], b[160];
    size_t o = 0;
    for (int i = 0; tp_backend_info_at(i) && o < sizeof list; i++) { /* as --version lists them */
        const tp_backend_info *k = tp_backend_info_at(i);
        if (k->describe && !k->describe(b, sizeof b)) continue;
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", o ? ", " : "", k->describe ? b : k->name);
    }
    return cli_errorf(cmd, 2, "--backend %s is not built in (backends: %s)", name, list);
}

tp_backend *cli_backend(const char *cmd, const cli_backend_flags *f, int *rc)
{
    const char *name = f->name ? f->name : "cpu";
    const tp_backend_info *bi = tp_backend_find(name);
    if (!bi) {
        *rc = cli_backend_known(cmd, name);
        return NULL;
    }
    char num[NBFLAGS][32];
    tp_backend_opt opts[NBFLAGS];
    int n;
    if ((*rc = backend_opts(cmd, f, bi, opts, num, &n))) return NULL;
    tp_backend *be = NULL;
    tp_error e;
    tp_status s = tp_backend_new(name, opts, n, &be, &e);
    *rc = s ? cli_fail(cmd, s, &e) : 0;
    return be;
}

tp_backend *cli_sim_backend(const char *cmd, const tp_sim_profile *prof, const cli_backend_flags *f, int *rc)
{
    char num[NBFLAGS][32];
    tp_backend_opt opts[NBFLAGS];
    int n;
    if ((*rc = backend_opts(cmd, f, tp_backend_find("sim"), opts, num, &n))) return NULL; /* flags the sim takes */
    tp_backend *be = NULL;
    tp_error e;
    tp_status s = tp_backend_sim_new(prof, f->jitter, &be, &e);
    *rc = s ? cli_fail(cmd, s, &e) : 0;
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
    ro->policy = f->order; /* a name of cli_policy_names, checked by the parser */
    ro->seed = (uint64_t)f->seed;
    ro->streams = (int)f->streams;
    ro->fail_vertex = f->fail_vertex;
    ro->deterministic = f->deterministic;
    if (f->progress) ro->progress = progress_line;
}

tp_status cli_exec_new(const tp_memgraph *mg, tp_backend *be, const cli_exec_flags *f, tp_exec **x, tp_error *e)
{
    tp_run_opts ro;
    cli_run_opts(f, &ro);
    *x = NULL;
    return tp_exec_new(mg, be, &ro, x, e);
}

/* A plan whose TaskGraph declares resident inputs (TP_M_RESIDENT: a chain graph of turnip
 * offload-plan --taskgraph) runs only in a session; cli_exec_open opens one of the plan's own
 * sizes (its device capacities and host bytes). The session's memory is zeroed when it opens
 * and nothing is written into it before the run, so a resident input holds zeros (the sim
 * holds no data at all). */
int cli_has_resident(const tp_memgraph *mg)
{
    for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        if (v.kind == TP_M_RESIDENT) return 1;
    }
    return 0;
}

tp_status cli_exec_open(const tp_memgraph *mg, tp_backend *be, const cli_exec_flags *f, tp_session **sess, tp_exec **x,
                        tp_error *e)
{
    *sess = NULL;
    *x = NULL;
    if (!cli_has_resident(mg)) return cli_exec_new(mg, be, f, x, e);
    int nd = tp_graph_devices(tp_memgraph_taskgraph(mg));
    uint64_t cap[TP_MAX_DEVICES];
    for (int d = 0; d < nd; d++) cap[d] = tp_memgraph_device_capacity(mg, d);
    tp_run_opts ro;
    cli_run_opts(f, &ro);
    tp_status s = tp_session_new(be, nd, cap, tp_memgraph_host_bytes(mg), sess, e);
    if (!s) s = tp_exec_new_in(*sess, mg, &ro, x, e);
    return s;
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
    if (!s && f->trace) s = tp_exec_trace_write(x, f->trace, e); /* after the run: no file I/O inside it */
    return s;
}

int cli_sim_run(const char *cmd, const tp_memgraph *mg, tp_backend *be, const tp_sim_profile *prof, const cli_exec_flags *xf)
{
    tp_exec *x = NULL;
    tp_session *sess = NULL;
    tp_error e;
    tp_run_summary sum;
    double t0 = tp_now_seconds();
    tp_status s = cli_exec_open(mg, be, xf, &sess, &x, &e); /* a session when mg has resident inputs */
    if (!s) s = cli_exec_run(x, xf, &sum, &e);
    if (!s) {
        printf("simulated on %s (%.2f s of real time):\n", prof->name, tp_now_seconds() - t0);
        tp_run_summary_print(&sum, stdout);
    }
    tp_exec_free(x);
    tp_session_free(sess);
    return s ? cli_fail(cmd, s, &e) : 0;
}

const char *cli_bytes_str(double b, char *buf, size_t len)
{
    if (b < 0x1p64) return tp_format_size((uint64_t)b, buf, len);
    snprintf(buf, len, "%.3g B", b);
    return buf;
}

int cli_refuse_host(const char *cmd, const char *prefix, const char *subject, double bytes, const tp_build_estimate *est)
{
    uint64_t limit = tp_host_mem_limit();
    if (bytes <= (double)limit) return 0;
    char b1[32], b2[32];
    return cli_errorf(cmd, 2, "%s%s about %s of host memory (%.3g vertices, %.3g edges), more than the %s available", prefix,
                      subject, cli_bytes_str(bytes, b1, sizeof b1), est->vertices, est->edges,
                      cli_bytes_str((double)limit, b2, sizeof b2));
}

int cli_readable_file(const char *cmd, const char *flag, const char *path)
{
    struct stat st;
    if (!path) return 0;
    const char *why = stat(path, &st) ? strerror(errno) : S_ISDIR(st.st_mode) ? "is a directory"
                    : !S_ISREG(st.st_mode)                                   ? "not a regular file"
                    : access(path, R_OK)                                     ? strerror(errno)
                                                                             : NULL;
    return why ? cli_errorf(cmd, 2, "%s %s: cannot read: %s", flag, path, why) : 0;
}

tp_status cli_llama_config(const char *model, const char *preset, tp_llama_config *c, tp_error *e)
{
    if (!model) return tp_llama_preset(preset, c, e);
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/config.json", model) >= sizeof path)
        return cli_set_error(e, TP_ERR_ARG, "--model: the directory name is too long");
    return tp_llama_config_read(path, c, e);
}

int cli_write_graph(const char *cmd, tp_graph *g, const char *path)
{
    cli_out out;
    int rc = cli_out_open(cmd, path, &out);
    if (rc) {
        tp_graph_free(g);
        return rc;
    }
    tp_error e;
    tp_status s = tp_graph_write(g, out.f, &e);
    tp_graph_free(g);
    return cli_out_finish(cmd, &out, s, &e);
}

int cli_writable_dir(const char *cmd, const char *flag, const char *path, int is_dir)
{
    char dir[4096];
    struct stat sb;
    if (!*path) return cli_errorf(cmd, 2, "%s '': an empty name; name a %s", flag, is_dir ? "directory" : "file");
    size_t len = strlen(path);
    char *final = NULL; /* a file: the one replaced (the target of a symlink), in whose directory its temporary goes */
    if (is_dir == 1) {
        snprintf(dir, sizeof dir, "%s", path);
    } else {
        if (!is_dir && !stat(path, &sb) && S_ISDIR(sb.st_mode))
            return cli_errorf(cmd, 2, "%s %s: cannot write: is a directory", flag, path);
        if (!is_dir && path[len - 1] == '/') return cli_errorf(cmd, 2, "%s %s: names a directory; name a file", flag, path);
        if (!is_dir) { /* as tp_outfile_open will write it */
            int fd;
            tp_error e;
            if (tp_outfile_target(path, &fd, &final, &e)) return cli_errorf(cmd, 2, "%s %s", flag, e.msg);
            if (fd == 0) return 0; /* a device or a FIFO: written in place, where it is */
            int rc = cli_not_input(cmd, flag, path);
            if (rc || fd > 0) { /* fd 1 or 2: the file a standard stream goes to, written through it */
                free(final);
                return rc;
            }
        }
        const char *name = final ? final : path;
        len = strlen(name);
        while (len > 1 && name[len - 1] == '/') len--; /* a directory to make: "new/" is "new" */
        const char *slash = NULL;
        for (size_t k = 0; k < len; k++)
            if (name[k] == '/') slash = name + k;
        size_t n = slash ? (size_t)(slash - name) : 1;
        if (n >= sizeof dir) n = sizeof dir - 1;
        memcpy(dir, slash ? name : ".", n);
        dir[n] = 0;
        if (slash && n == 0) snprintf(dir, sizeof dir, "/");
        free(final);
    }
    const char *why = stat(dir, &sb) ? strerror(errno) : !S_ISDIR(sb.st_mode) ? "not a directory"
                    : access(dir, W_OK | X_OK)      ? strerror(errno)
                                                    : NULL;
    return why ? cli_errorf(cmd, 2, "%s %s: cannot write into %s: %s", flag, path, dir, why) : 0;
}

int cli_out_check(const char *cmd, const char *flag, const char *path)
{
    return !path || !strcmp(path, "-") ? 0 : cli_writable_dir(cmd, flag, path, 0);
}

int cli_is_stdout(const char *path)
{
    struct stat a, b;
    if (!path) return 1;
    if (!strcmp(path, "-")) return 1;
    if (stat(path, &a) || fstat(1, &b) || a.st_dev != b.st_dev || a.st_ino != b.st_ino) return 0;
    struct stat n; /* /dev/null with standard output there too: nothing to mix */
    return !(S_ISCHR(a.st_mode) && !stat("/dev/null", &n) && a.st_rdev == n.st_rdev);
}

/* "-", or a name of the file standard output goes to (/dev/stdout), for an output of a command
 * whose report goes to standard output: exit code 2 after one line (the data would be mixed
 * into the report); else 0 */
static int cli_file_only(const char *cmd, const char *flag, const char *path)
{
    if (!cli_is_stdout(path)) return 0;
    return cli_errorf(cmd, 2, "%s %s: standard output carries this command's report; name a file", flag, path);
}

int cli_writable_files(const char *cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    int rc = 0;
    for (const char *flag; !rc && (flag = va_arg(ap, const char *));) {
        const char *path = va_arg(ap, const char *);
        if (!path) continue;
        rc = cli_file_only(cmd, flag, path); /* these commands print their report on standard output */
        if (!rc) rc = cli_writable_dir(cmd, flag, path, 0);
    }
    va_end(ap);
    return rc;
}

int cli_json_plan(const char *cmd, const char *path)
{
    if (!tp_memgraph_file_is_binary(path)) return 0;
    return cli_errorf(cmd, 2, "%s is a binary plan; `turnip convert %s OUT.json` writes it as JSON", path, path);
}

