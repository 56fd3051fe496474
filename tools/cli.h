/* cli.h - what every turnip command shares: the command table's entry type, statuses to exit
 * codes, error and usage-error printing, and the three places that touch the executor and the
 * backends (cli_backend, cli_exec_new, cli_exec_run), so changes to those APIs land here only.
 * Tools use the public API in include/turnip/ and nothing else. The option parser (opts.c)
 * sits on top of this file: cli.c uses opts.h's types but calls nothing in opts.c. */
#ifndef CLI_CLI_H
#define CLI_CLI_H

#include <stdio.h>
#include "turnip/turnip.h"
#include "opts.h"

/* One command: `turnip NAME ...` calls run(argc, argv) (argv[1] is NAME); `turnip NAME --help`
 * calls help(stdout). Adding a command: a cmd_NAME.c defining one of these, and an entry in
 * main.c's table. */
typedef struct cli_cmd {
    const char *name;
    const char *summary; /* one line for `turnip --help` */
    int (*run)(int argc, char **argv);
    void (*help)(FILE *f);
} cli_cmd;

#if defined(__GNUC__)
#define CLI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CLI_PRINTF(a, b)
#endif

extern const char *const cli_prog; /* "turnip" */

/* Exit codes: 0 ok, 1 failed check, 2 unusable input, infeasible plan or unusable device,
 * 3 internal failure (out of memory). */
int cli_exit_code(tp_status s);
/* Prints "turnip: MSG" (cmd NULL) or "turnip CMD: MSG" with e's message; returns the exit code
 * of s. */
int cli_fail(const char *cmd, tp_status s, const tp_error *e);
/* Writes s with control characters escaped (\n, \t, \r, \xNN): a message stays one line
 * whatever names a file or a TaskGraph holds. */
void cli_put_escaped(FILE *f, const char *s);
/* Prints "turnip CMD: MSG[: ARG]" and "Try 'turnip CMD --help'."; returns 2. */
int cli_usage_error(const char *cmd, const char *msg, const char *arg);
/* Prints "turnip CMD: " ("turnip: " when cmd is NULL) and the formatted line; returns code. */
int cli_errorf(const char *cmd, int code, const char *fmt, ...) CLI_PRINTF(3, 4);
/* Notes a file the command reads (what: the flag or operand naming it, a static string; path
 * NULL or not a regular file: nothing noted): cli_writable_dir, cli_writable_files and
 * cli_out_open then refuse an output that is the same file (exit 2), so a run never replaces
 * its own input. cli_note_model notes a checkpoint directory's config.json, model.safetensors
 * and model.safetensors.index.json (shards named by the index are not noted). */
void cli_note_input(const char *what, const char *path);
void cli_note_model(const char *dir);
/* 0 when name (NULL: the default) names a backend built in, or "sim"; else exit code 2 after
 * one line listing the backends (as cli_backend says it, but before any work). */
int cli_backend_known(const char *cmd, const char *name);
/* A list flag's bad item (index from 0; item points at its text, which ends at ',', ';' or the
 * string's end): prints "turnip CMD: FLAG: item N, 'TEXT', is not WANT", N counting from 1;
 * returns 2. */
int cli_bad_item(const char *cmd, const char *flag, const char *item, long long index, const char *want);
/* Before the work: the directory an output named by `flag` goes into must be a writable
 * directory; 0, or exit code 2 after one line. is_dir 0: a file, checked as tp_outfile_open
 * will write it (tp_outfile_target): not a directory, a read-only file or a symlink to nothing,
 * not an input the command noted, no trailing '/', and the directory of the file replaced (a
 * symlink's target) writable; a device, a FIFO or the file standard output or error goes to
 * passes, as it is written in place; 1: an existing directory, the path itself; 2: a directory
 * to be made, so its parent ("new/" is "new"). An empty path is refused. */
int cli_writable_dir(const char *cmd, const char *flag, const char *path, int is_dir);
/* Whether an output path is standard output: NULL or "-", or a name of the file standard output
 * is (/dev/stdout, /proc/self/fd/1, or the file it is redirected to). */
int cli_is_stdout(const char *path);
/* cli_writable_dir (a file) for an output that may be "-" (standard output) or NULL (not given:
 * standard output), as cli_out_open takes it: 0 for those, else cli_writable_dir's answer. */
int cli_out_check(const char *cmd, const char *flag, const char *path);
/* cli_writable_dir for output files given as (flag, path) pairs, a NULL flag last; a NULL path
 * (the flag not given) is skipped. Also refuses "-" and other names of standard output such as
 * /dev/stdout (cli_file_only, cli_is_stdout: the commands that call it
 * print their report on standard output, so "-" would mix data into the report). */
int cli_writable_files(const char *cmd, ...);
/* A command that reads a MemGraph as JSON only: 0, or exit code 2 after one line when path is
 * a binary plan (naming `turnip convert`, which gives its JSON). */
int cli_json_plan(const char *cmd, const char *path);
/* Fills the caller's e with status s and the formatted message; returns s. */
tp_status cli_set_error(tp_error *e, tp_status s, const char *fmt, ...) CLI_PRINTF(3, 4);

/* Prints "turnip: PATH: MSG" (cmd NULL) or "turnip CMD: PATH: MSG" with e's message (a
 * planner's error names the vertex, this the TaskGraph); returns the exit code of s. */
int cli_fail_file(const char *cmd, const char *path, tp_status s, const tp_error *e);

/* ---- output files -------------------------------------------------------------------------
 * Every file a command writes goes through these: a named file appears whole or not at all
 * (tp_outfile: a temporary file renamed into place), so a failing command leaves an existing
 * file untouched; NULL path: standard output. */
typedef struct cli_out {
    const char *path; /* NULL: standard output */
    tp_outfile *of;
    FILE *f;
} cli_out;
/* 0, or 2 after printing "turnip CMD: PATH: cannot write: why". path NULL or "-": standard
 * output. */
int cli_out_open(const char *cmd, const char *path, cli_out *o);
/* keep: commits the file (flush, sync, rename into place); returns 0, or 2 after printing
 * "turnip CMD: writing PATH failed: why" (a full disk). !keep: drops it (an existing file
 * stays as it was); returns 0. */
int cli_out_close(const char *cmd, cli_out *o, int keep);
/* Ends an output whose producer returned s (e its error): TP_OK keeps it (cli_out_close);
 * TP_ERR_IO drops it and prints "turnip CMD: writing PATH failed: why"; any other status
 * drops it and prints e as cli_fail does. Returns the exit code. */
int cli_out_finish(const char *cmd, cli_out *o, tp_status s, const tp_error *e);

/* A byte count that may exceed 64 bits, as "4.5 TiB" (into buf, the caller's; returns it). */
const char *cli_bytes_str(double b, char *buf, size_t len);
/* 0 when `bytes` (of a graph about to be built, est its size) fits the host memory left
 * (tp_host_mem_limit); else prints "PREFIX SUBJECT about N of host memory (V vertices, E
 * edges), more than the M available" and returns 2. */
int cli_refuse_host(const char *cmd, const char *prefix, const char *subject, double bytes, const tp_build_estimate *est);
/* Before the work: an input file named by flag (NULL: not given) must be a readable regular
 * file; 0, or one line and 2. (Its reader checks it again when it opens it.) */
int cli_readable_file(const char *cmd, const char *flag, const char *path);
/* The LLaMA config of --model DIR (DIR/config.json) or, when model is NULL, of --preset NAME. */
tp_status cli_llama_config(const char *model, const char *preset, tp_llama_config *c, tp_error *e);
/* Writes g as TaskGraph JSON to path (cli_out: a temporary file renamed into place; "-" or
 * NULL: stdout), frees g, and returns the exit code (errors printed as cmd's). */
int cli_write_graph(const char *cmd, tp_graph *g, const char *path);

/* ---- planning flags ---------------------------------------------------------------------- */

typedef struct cli_plan_flags {
    cli_sizes device_mem; /* --device-mem: one size for all devices or one per device */
    uint64_t host_mem;    /* --host-mem, 0: not given (unlimited) */
    const char *order;    /* the planner's serial order (cli_plan_order_names), NULL: default */
    int no_sum_into;      /* --no-sum-into: plan marked sums as kernels (tp_plan_opts.sum_into 0) */
    long long evict_budget; /* --evict-budget N (tp_plan_opts.evict_budget), 0: not given (the default search) */
    int exact_windows;      /* --exact-windows: tp_plan_opts.evict_budget TP_EVICT_EXACT */
    const char *weight_offload; /* --weight-offload greedy|greedy-star|l2l|l2l-sync|milp (a chain graph's directed evictions), NULL: none */
    double milp_time_limit;     /* --milp-time-limit S (sim, run), 0: not given (TP_OFFLOAD_MILP_TIME_LIMIT) */
} cli_plan_flags;

/* Table entries of the planning flags (S: the command's flag struct, F: its cli_plan_flags
 * member; ORDER: the flag naming the planner's order, --order or --plan-order). */
#define CLI_O_DEVICE_MEM(S, F, help) CLI_O_SIZES("--device-mem", "SIZE[,..]", S, F.device_mem, help)
#define CLI_O_HOST_MEM(S, F) \
    CLI_O_SIZE("--host-mem", "SIZE", S, F.host_mem, "host memory for inputs and offloaded values (default: unlimited)")
#define CLI_O_NO_SUM_INTO(S, F)                                                                          \
    CLI_O_SWITCH("--no-sum-into", S, F.no_sum_into,                                                       \
                 "plan sums marked \"accumulate\" as kernels (default: lowered to\naccumulate groups, docs/planner.md)")
#define CLI_O_EVICT_BUDGET(S, F)                                                                          \
    CLI_O_INT("--evict-budget", "N", S, F.evict_budget, 1, 1000000,                                         \
              "bounded eviction search: after N blocks by next use without a fit, evict\nthe furthest first (default: the best window while its scans stay within a\ncredit of 2^22 blocks plus 8 per position; docs/planner.md \"The allocator's cost\")")
#define CLI_O_EXACT_WINDOWS(S, F)                                                                 \
    CLI_O_SWITCH("--exact-windows", S, F.exact_windows,                                             \
                 "the best eviction window at every step, whatever its search costs (quadratic\nat worst; instead of --evict-budget)")
extern const char *const cli_weight_offload_names[]; /* greedy greedy-star l2l milp l2l-sync */
/* The strategy a --weight-offload or --algo name names (cli_weight_offload_names, in the
 * order of tp_offload_algo); greedy for NULL or another name. */
tp_offload_algo cli_offload_algo(const char *name);
#define CLI_O_WEIGHT_OFFLOAD(S, F)                                                                                 \
    CLI_O_CHOICE("--weight-offload", "NAME", S, F.weight_offload, cli_weight_offload_names,                          \
                 "a training chain's graph (turnip offload-plan --taskgraph): the weight-offload\n"                    \
                 "strategy greedy, greedy-star, l2l, l2l-sync (l2l's evictions) or milp decides\n"                     \
                 "which weights leave the device and when (docs/weight-offload.md \"Inside turnip\");\n"              \
                 "milp solves the chain's MILP (GLPK, --milp-time-limit) with the machine's kernel\n"             \
                 "rate and link, so only sim and run (with --opaque-rate and --link-bandwidth) take it;\n"         \
                 "plans in the graph's order (topo), without sum-into; default: the planner's own eviction")
#define CLI_O_MILP_TIME_LIMIT(S, F)                                                                   \
    CLI_O_NUM("--milp-time-limit", "S", S, F.milp_time_limit, 0.01, 86400,                              \
              "--weight-offload milp: the MILP solver's time limit in seconds (default 60)")
#define CLI_O_PLAN_ORDER(ORDER, S, F) \
    CLI_O_CHOICE(ORDER, "NAME", S, F.order, cli_plan_order_names, "serial order the plan simulates: topo, dfs or greedy")

/* Applies f to o (already initialised for ndevices): device capacities when given, host
 * memory, order, sum-into. On a list of the wrong length prints the error and returns 2; else 0. */
int cli_plan_opts(const char *cmd, const cli_plan_flags *f, int ndevices, tp_plan_opts *o);
/* --weight-offload: the strategy's directed evictions for g into o (after cli_plan_opts: they
 * depend on the device's capacity); *owned gets the array to free after planning (NULL when
 * the flag is not given). Prints the error and returns its exit code (2) when g is not a
 * chain graph or no selection fits; else 0. machine (the kernels' rate and the link; NULL when the
 * command has no machine, a rate of 0 when it lacks one) is for milp, which needs the chain's
 * times; its time limit is taken from f. */
int cli_plan_evictions(const char *cmd, const cli_plan_flags *f, const tp_graph *g, tp_plan_opts *o,
                       const tp_chain_machine *machine, tp_plan_evict **owned);

/* ---- backends ---------------------------------------------------------------------------- */

typedef struct cli_backend_flags {
    const char *name;               /* --backend: cpu (NULL: cpu), cuda or sim */
    double link_gbps;               /* cpu: --link-bandwidth */
    double link_latency_us;         /* cpu: --link-latency */
    double jitter;                  /* cpu and sim: --jitter */
    double opaque_rate;             /* cpu: --opaque-rate (flops/s of opaque kernels), 0: not given */
    const char *completion;         /* cuda: --completion callback|poll */
    const char *matmul;             /* cuda: --matmul fast|exact */
} cli_backend_flags;

/* Table entries of the cpu backend's link flags, in its ranges (turnip/backend.h). */
#define CLI_O_LINK_BANDWIDTH(S, F, help) \
    CLI_O_NUM("--link-bandwidth", "GB/s", S, F.link_gbps, TP_CPU_LINK_GBPS_MIN, TP_CPU_LINK_GBPS_MAX, help)
/* --jitter for commands that run on cpu or sim (the cpu backend refuses F above TP_CPU_JITTER_MAX) */
#define CLI_O_JITTER(S, F)                                                  \
    CLI_O_NUM("--jitter", "F", S, F.jitter, 0, TP_SIM_JITTER_MAX,          \
              "cpu: copy times (F at most 4), sim: kernel times and copy sizes\nx exp(F x N(0,1))")
#define CLI_O_LINK_LATENCY(S, F) \
    CLI_O_NUM("--link-latency", "us", S, F.link_latency_us, 0, TP_CPU_LATENCY_US_MAX, "add a fixed latency to every copy")
#define CLI_O_OPAQUE_RATE(S, F)                                                                                       \
    CLI_O_NUM("--opaque-rate", "FLOPS/s", S, F.opaque_rate, TP_CPU_OPAQUE_RATE_MIN, TP_CPU_OPAQUE_RATE_MAX,         \
              "cpu: an opaque kernel of F flops takes F / FLOPS seconds, asleep on its\nstream's worker (default: no time: opaque kernels touch no data)")

/* Every backend the command line makes is made here, by name through the registry
 * (turnip/backend.h), the flags above passed as the options of the backends that take them
 * ("--completion is for --backend cuda" otherwise). Returns the backend (the caller frees
 * it with tp_backend_free) with *rc = 0, or NULL after printing why, with *rc the exit code. */
tp_backend *cli_backend(const char *cmd, const cli_backend_flags *f, int *rc);
/* The sim backend on a profile the command has read already (so it is read once), after the
 * same check of f against the options the sim takes. */
tp_backend *cli_sim_backend(const char *cmd, const tp_sim_profile *prof, const cli_backend_flags *f, int *rc);

/* ---- runs -------------------------------------------------------------------------------- */

typedef struct cli_exec_flags {
    const char *order;       /* dispatch policy (cli_policy_names), NULL: any */
    long long seed;          /* --seed */
    long long streams;       /* --streams, >= 1 */
    long long fail_vertex;   /* test hook, -1: none */
    long long repeat;        /* runs of the plan (0 or 1: one) */
    const char *trace;       /* --trace FILE or NULL */
    int progress;            /* report progress on standard error */
    int deterministic;       /* --deterministic: sum-into groups accumulate in member order */
} cli_exec_flags;

/* Table entries of the run flags (S: the command's flag struct, F: its cli_exec_flags member). */
#define CLI_O_POLICY(S, F)                                                                                    \
    CLI_O_CHOICE("--order", "POLICY", S, F.order, cli_policy_names,                                          \
                 "any (default): whatever is ready; fixed: each engine in plan order;\nrandom: seeded random " \
                 "choice among the ready (--seed);\npriority: the ready vertex with the longest estimated path to " \
                 "the end first")
#define CLI_O_SEED(S, F) CLI_O_INT("--seed", "N", S, F.seed, 0, LLONG_MAX, "seed of the random order and the jitter (default 0)")
#define CLI_O_STREAMS(S, F) CLI_O_INT("--streams", "N", S, F.streams, 1, 64, "compute streams per device (default 1)")
#define CLI_O_TRACE(S, F) CLI_O_STR("--trace", "FILE", S, F.trace, "Chrome trace-event JSON of the run (open in Perfetto)")
#define CLI_O_DETERMINISTIC(S, F)                                                                          \
    CLI_O_SWITCH("--deterministic", S, F.deterministic,                                                   \
                 "sum-into groups add in member order: results bit-identical across\n"     \
                 "dispatch orders (--order, and --order random's seed where --seed\n"     \
                 "sets nothing else)")

/* The run options f stands for (no trace). */
void cli_run_opts(const cli_exec_flags *f, tp_run_opts *ro);
/* Prepares an executor for mg on be under f (tp_exec_new); *x is the caller's to tp_exec_free
 * (set to NULL on failure). */
tp_status cli_exec_new(const tp_memgraph *mg, tp_backend *be, const cli_exec_flags *f, tp_exec **x, tp_error *e);
/* Runs x once, or f->repeat times printing each makespan and the best; then writes the trace
 * when asked. *sum is the last run's. */
tp_status cli_exec_run(tp_exec *x, const cli_exec_flags *f, tp_run_summary *sum, tp_error *e);

/* ---- sessions (cli_session.c) ----------------------------------------------------------- */

/* The plan's independent check (tp_verify_json of its JSON); TP_ERR_CHECK is a planner bug. */
tp_status cli_verify(const tp_memgraph *mg, const tp_graph *g, tp_error *e);
/* Loads a run's inputs into x (the checkpoint, a safetensors file, random weights). */
typedef tp_status (*cli_load_fn)(tp_exec *x, void *ctx, tp_error *e);
/* 1 when mg starts with inputs on a device (TP_M_RESIDENT), which only a session runs. */
int cli_has_resident(const tp_memgraph *mg);
/* Prepares an executor for mg on be under f: when mg has resident inputs, in a new session of
 * mg's own sizes (its device capacities and host bytes) into *sess, zeroed (so each resident
 * input holds zeros; nothing is written into it); else as cli_exec_new, *sess NULL. The
 * caller frees *x, then *sess (both NULL or partly made on failure). */
tp_status cli_exec_open(const tp_memgraph *mg, tp_backend *be, const cli_exec_flags *f, tp_session **sess, tp_exec **x,
                        tp_error *e);
/* Declares every input of g "keep" (before planning the first of repeated runs); 0, or exit
 * code 2 after saying why when g declares resident inputs itself (run 1 starts empty). */
int cli_keep_inputs(const char *cmd, tp_graph *g);
/* f->repeat runs of g in one session on be: *mg (planned under po with cli_keep_inputs) is the
 * first run's plan; each later run is planned with what the last one left on the devices
 * resident (*mg replaced, the caller frees the last; each verified when check is set). Prints each run's makespan and bytes
 * moved beside the input bytes that were not resident at its start. *sess and *x (the last
 * run's executor) are the caller's to free, x first; *sum is the last run's. */
tp_status cli_session_runs(tp_graph *g, tp_memgraph **mg, const tp_plan_opts *po, tp_backend *be, const cli_exec_flags *f,
                           int check, cli_load_fn load, void *ctx, tp_session **sess, tp_exec **x, tp_run_summary *sum,
                           tp_error *e);

/* Runs mg on be, a sim backend of machine prof (cli_sim_backend; the caller's), under xf and
 * prints the summary; returns 0, or the exit code after printing why ("turnip CMD: ..."; cmd
 * may be NULL). */
int cli_sim_run(const char *cmd, const tp_memgraph *mg, tp_backend *be, const tp_sim_profile *prof, const cli_exec_flags *xf);

#endif
