/* turnip - command-line front end. Thin: parses flags, calls the library, maps statuses to
 * exit codes (0 ok, 1 failed check, 2 unusable input or infeasible plan, 3 internal). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "turnip/turnip.h"

/* a usage problem found after parsing, as a status */
static tp_status tp__fail_public(tp_error *e, const char *msg)
{
    snprintf(e->msg, sizeof e->msg, "%s", msg);
    e->code = TP_ERR_ARG;
    return TP_ERR_ARG;
}

static const char *prog = "turnip";

static const char *g_trace; /* temporary until the CLI split lands */
static int set_policy(tp_run_opts *ro, const char *pol)
{
    if (tp_policy_check(pol, NULL)) return 1;
    ro->policy = pol;
    return 0;
}

static void usage_main(FILE *f)
{
    fprintf(f,
            "usage: turnip COMMAND [ARGS]\n"
            "\n"
            "Plans and checks computations larger than GPU memory (docs/ARCHITECTURE.md).\n"
            "\n"
            "commands:\n"
            "  plan     compile a TaskGraph into a MemGraph under memory caps\n"
            "  verify   check a MemGraph against its TaskGraph\n"
            "  run      plan, verify and execute a TaskGraph on the cpu or cuda backend\n"
            "  llama    LLaMA prefill from a Hugging Face checkpoint (or a preset) under a memory cap\n"
            "  sim      run a TaskGraph's plan in simulated time on a machine profile\n"
            "  dot      draw a MemGraph as Graphviz DOT\n"
            "  gen      write a synthetic transformer-like TaskGraph\n"
            "\n"
            "Run 'turnip COMMAND --help' for a command's flags. Sizes take plain bytes or\n"
            "KiB/MiB/GiB (powers of 1024) and KB/MB/GB (powers of 1000).\n"
            "  --version   print the version and the backends built in\n");
}

static const char *plan_help =
    "usage: turnip plan TASKGRAPH --device-mem SIZE[,SIZE...] [--host-mem SIZE]\n"
    "                   [--order topo|dfs|greedy] [-o MEMGRAPH] [--stats]\n"
    "\n"
    "Compiles TASKGRAPH (turnip.taskgraph/1 JSON) into a MemGraph (turnip.memgraph/1) that\n"
    "fits each device in --device-mem (one size for all devices, or one per device),\n"
    "adding offloads, reloads and memory dependencies so every execution order is race-free.\n"
    "\n"
    "  --device-mem SIZE[,..]  device capacity (required)\n"
    "  --host-mem SIZE         host memory for inputs and offloaded values (default: unlimited)\n"
    "  --order NAME            serial order the plan simulates (default: %s)\n"
    "  -o FILE                 write the MemGraph there (default: standard output)\n"
    "  --stats                 print plan statistics (to standard error when the MemGraph\n"
    "                          goes to standard output)\n"
    "exit: 0 planned, 2 unusable input or infeasible (the message names the vertex)\n";

static const char *verify_help =
    "usage: turnip verify MEMGRAPH --taskgraph TASKGRAPH\n"
    "\n"
    "Checks every condition of a correct MemGraph: acyclic, regions within capacity, each\n"
    "TaskGraph kernel and transfer present once reading its inputs (through offload/reload\n"
    "chains), no read can see an overwritten region, overlapping writers are ordered, and\n"
    "outputs are never overwritten. Prints the first violation.\n"
    "exit: 0 valid, 1 invalid, 2 unusable input\n";

static const char *dot_help =
    "usage: turnip dot MEMGRAPH [-o FILE]\n"
    "\n"
    "Writes Graphviz DOT: data dependencies solid, memory dependencies dashed red,\n"
    "offload (red) and reload (green) vertices as boxes, one cluster per device.\n"
    "Render with: dot -Tpng FILE -o plan.png\n";

static const char *gen_help =
    "usage: turnip gen layered [--devices D] [--layers L] [--heads K] [--chunks C]\n"
    "                          [--seq T] [--head-dim E] [--dtype-bytes B] [-o TASKGRAPH]\n"
    "\n"
    "Writes a transformer-like TaskGraph of opaque kernels (sizes and flops only): per layer\n"
    "and device, K attention heads as parallel lanes (q/k/v projections, T x T scores,\n"
    "softmax, weighted sum, output projection) summed in a chain, then an MLP in C column\n"
    "chunks; partial sums are reduced on device 0 and broadcast back. Hidden size is\n"
    "D*K*E. Defaults: D=2 L=2 K=4 C=2 T=512 E=64 B=2.\n"
    "\n"
    "usage: turnip gen inputs TASKGRAPH -o IN.safetensors [--seed S] [--int-max N]\n"
    "\n"
    "Writes a random tensor for every input of TASKGRAPH, named by id, in its dtype and shape:\n"
    "floats from N(0, 0.5^2), integers uniform in [0, N) (default 10), bytes-only inputs as u8.\n";

static const char *run_help =
    "usage: turnip run TASKGRAPH --device-mem SIZE[,SIZE...] --inputs IN.safetensors --out OUT.safetensors\n"
    "                  [--host-mem SIZE] [--plan-order topo|dfs|greedy] [--order any|fixed|random] [--seed N]\n"
    "                  [--streams N] [--link-bandwidth GB/s] [--link-latency us] [--jitter F]\n"
    "                  [--trace FILE] [--no-verify] [--backend cpu|cuda] [--completion callback|poll]\n"
    "\n"
    "Plans TASKGRAPH under the caps, verifies the plan (unless --no-verify), runs it on the cpu\n"
    "backend (emulated GPUs: memory arenas of exactly the cap, worker threads for compute streams\n"
    "and copy engines) or on NVIDIA GPUs (--backend cuda) and writes the outputs, named by output\n"
    "id, to OUT.\n"
    "  --inputs FILE          safetensors holding every TaskGraph input, by id (dtype, shape checked)\n"
    "  --order POLICY         any (default): whatever is ready; fixed: each engine in plan order;\n"
    "                         random: seeded random choice among the ready (--seed)\n"
    "  --streams N            compute streams per device (default 1)\n"
    "  --link-bandwidth GB/s  throttle host-device and peer copies (default: unthrottled memcpy)\n"
    "  --link-latency us      add a fixed latency to every copy\n"
    "  --jitter F             copy time x exp(F x N(0,1)), seeded by --seed and the vertex\n"
    "  --trace FILE           Chrome trace-event JSON of the run (open in Perfetto)\n"
    "  --backend cuda         run on GPUs: MemGraph device d on GPU d mod (GPUs visible); the link\n"
    "                         and jitter flags are cpu-backend only\n"
    "  --completion MODE      cuda: how completions reach the executor: callback (cudaLaunchHostFunc)\n"
    "                         or poll (a thread polling events, the default: it also reports GPU faults)\n"
    "exit: 0 ok, 2 unusable input, infeasible plan, failed vertex (named) or no usable GPU\n";

static const char *llama_help =
    "usage: turnip llama (--model DIR | --preset NAME) (--prompt-ids 1,2,3 | --seq-len N [--seed S])\n"
    "                    --device-mem SIZE[,..] [--devices D] [--backend cpu|cuda|sim] [--blocks B] [--mlp-chunks C] [--vocab-chunks C]\n"
    "                    [--host-mem SIZE]\n"
    "                    [--out logits.safetensors] [--all-logits] [--trace FILE] [--order POLICY]\n"
    "                    [--streams N] [--link-bandwidth GB/s] [--jitter F] [--no-data] [--repeat N]\n"
    "\n"
    "Builds the prefill TaskGraph of a LLaMA model (Hugging Face semantics: RMSNorm, RoPE,\n"
    "grouped-query causal attention, SwiGLU MLP) for the prompt, split over D devices (KV groups,\n"
    "MLP columns and vocabulary per device), with attention in B query blocks; plans it under the\n"
    "cap and runs it on the cpu backend (or --backend cuda: NVIDIA GPUs). Prints plan statistics,\n"
    "the run summary and the top-5 next-token ids.\n"
    "  --model DIR    config.json and model.safetensors (or shards with model.safetensors.index.json)\n"
    "  --preset NAME  tiny, 7b, 13b, 65b, llama3-8b, llama2-70b: random weights made in-process\n"
    "  --seq-len N    a random prompt of N tokens (seeded by --seed: id_k = (s_k >> 33) mod vocab,\n"
    "                 s_0 = seed x 0x9e3779b97f4a7c15 + 12345, s_k+1 = s_k x 6364136223846793005 + 1442695040888963407)\n"
    "  --blocks B     query blocks (default: enough that one head's scores use ~1/16 of the cap)\n"
    "  --mlp-chunks C, --vocab-chunks C  column chunks of each device's MLP and vocabulary rows\n"
    "                 (default: enough that one weight chunk is at most 1/8 of the cap)\n"
    "  --no-data      plan only (for the big presets): graph sizes and plan statistics\n"
    "  --repeat N     run the plan N times (weights stay loaded), print each makespan and the best\n"
    "  --backend cuda [--completion callback|poll]   run on GPUs (see turnip run --help)\n"
    "  --backend sim --machine NAME   simulate instead (profiles/NAME.json; --device-mem defaults\n"
    "                 to the machine's): latency, bytes moved, makespan over the lower bound\n"
    "  --sweep-seq 1024,2048,..  [--sweep-mem SIZE,..] --csv FILE [--png FILE]   with --backend sim:\n"
    "                 one simulated point per length (and cap), OOM where no plan fits; the PNG plots\n"
    "                 latency against length with gnuplot\n";

static const char *sim_help =
    "usage: turnip sim TASKGRAPH --machine NAME|FILE [--device-mem SIZE[,..]] [--host-mem SIZE]\n"
    "                  [--plan-order topo|dfs|greedy] [--order any|fixed|random] [--seed N] [--jitter F]\n"
    "                  [--streams N] [--trace FILE]\n"
    "\n"
    "Plans TASKGRAPH (capacities default to the machine's memory) and runs the plan on the sim\n"
    "backend: virtual time from the profile's cost model (profiles/NAME.json: a100x8, p100x4, h100),\n"
    "the same executor and policies as the real backends. Prints the run summary with the makespan\n"
    "over the lower bound (busiest device's kernel time or busiest link's bytes / bandwidth).\n";

static int fail(tp_status s, const tp_error *e)
{
    fprintf(stderr, "%s: %s\n", prog, e->msg);
    return tp_status_exit_code(s);
}

static int usage_error(const char *cmd, const char *msg, const char *arg)
{
    fprintf(stderr, "%s %s: %s%s%s\nTry '%s %s --help'.\n", prog, cmd, msg, arg ? ": " : "", arg ? arg : "", prog, cmd);
    return 2;
}

/* matches "--name VALUE" or "--name=VALUE"; advances *i */
static int opt_val(int argc, char **argv, int *i, const char *name, const char **val)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0) return 0;
    if (argv[*i][n] == '=') {
        *val = argv[*i] + n + 1;
        return 1;
    }
    if (argv[*i][n] != 0) return 0;
    if (*i + 1 >= argc) {
        *val = NULL;
        return 1;
    }
    *val = argv[++*i];
    return 1;
}

/* Sets o's device capacities from --device-mem (one size for all, or one per device; NULL
 * keeps them), its host memory from --host-mem and its serial order from the plan-order flag.
 * On bad input prints the error and returns 2; else 0. */
static int plan_flags(const char *cmd, const char *dm, const char *hm, const char *ord, tp_plan_opts *o)
{
    int n;
    if (dm) {
        if (tp_parse_size_list(dm, o->device_mem, TP_MAX_DEVICES, &n))
            return usage_error(cmd, "--device-mem: not a size or a comma-separated list of sizes", dm);
        if (n != 1 && n != o->ndevices) {
            fprintf(stderr, "%s %s: --device-mem lists %d sizes, the graph has %d devices\n", prog, cmd, n, o->ndevices);
            return 2;
        }
        for (int d = n; d < o->ndevices; d++) o->device_mem[d] = o->device_mem[0];
    }
    if (hm && (tp_parse_size(hm, &o->host_mem) || !o->host_mem)) return usage_error(cmd, "--host-mem: not a positive size", hm);
    if (ord && tp_order_parse(ord, &o->order)) return usage_error(cmd, "the plan order must be topo, dfs or greedy", ord);
    return 0;
}

/* Parses v as an integer in [lo, hi] into *out; on failure prints "CMD: FLAG needs ..." and
 * returns 2. */
static int int_flag(const char *cmd, const char *flag, const char *v, long long lo, long long hi, long long *out)
{
    char *end = NULL, msg[96];
    long long x = v ? strtoll(v, &end, 10) : 0;
    if (v && end != v && !*end && x >= lo && x <= hi) {
        *out = x;
        return 0;
    }
    if (hi == LLONG_MAX) snprintf(msg, sizeof msg, "%s needs an integer >= %lld", flag, lo);
    else snprintf(msg, sizeof msg, "%s needs an integer in %lld..%lld", flag, lo, hi);
    return usage_error(cmd, msg, v);
}

/* Parses v as a number >= 0 into *out; on failure prints the error and returns 2. */
static int num_flag(const char *cmd, const char *flag, const char *v, double *out)
{
    char *end = NULL;
    double x = v ? strtod(v, &end) : -1;
    if (v && end != v && !*end && x >= 0) {
        *out = x;
        return 0;
    }
    char msg[96];
    snprintf(msg, sizeof msg, "%s needs a non-negative number", flag);
    return usage_error(cmd, msg, v);
}

/* The real backend --backend names (cpu, the default, or cuda) with the cpu link flags and
 * the cuda completion mode; NULL after printing why (*rc = 2). */
static tp_backend *real_backend(const char *cmd, const char *name, const tp_cpu_opts *co, const char *completion, int *rc)
{
    *rc = 2;
    if (!name || !strcmp(name, "cpu")) {
        if (completion) {
            usage_error(cmd, "--completion is for --backend cuda", completion);
            return NULL;
        }
        tp_backend *be;
        tp_error ce;
        if (tp_backend_cpu_new(co, &be, &ce)) {
            fprintf(stderr, "%s %s: %s\n", prog, cmd, ce.msg);
            *rc = 2;
        }
        return be;
    }
    if (!strcmp(name, "cuda") && (co->link_gbps > 0 || co->link_latency_us > 0 || co->jitter > 0)) {
        usage_error(cmd, "--link-bandwidth, --link-latency and --jitter emulate links on the cpu backend; a GPU has its own", name);
        return NULL;
    }
    if (strcmp(name, "cuda")) {
        char b[160];
        tp_cuda_describe(b, sizeof b);
        fprintf(stderr, "%s %s: --backend %s is not built in (backends: cpu, sim%s%s)\n", prog, cmd, name, *b ? ", " : "", b);
        return NULL;
    }
    tp_cuda_opts uo;
    tp_cuda_opts_init(&uo);
    if (completion && !strcmp(completion, "callback")) uo.completion = TP_CUDA_CALLBACK;
    else if (completion && !strcmp(completion, "poll")) uo.completion = TP_CUDA_POLL;
    else if (completion) {
        usage_error(cmd, "--completion must be callback or poll", completion);
        return NULL;
    }
    tp_error e;
    tp_backend *be;
    if (tp_backend_cuda_new(&uo, &be, &e)) fprintf(stderr, "%s %s: %s\n", prog, cmd, e.msg);
    return be;
}

static int wants_help(int argc, char **argv)
{
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
    return 0;
}

static int cmd_plan(int argc, char **argv)
{
    const char *in = NULL, *out = NULL, *dm = NULL, *hm = NULL, *ord = NULL, *v;
    int stats = 0;
    if (wants_help(argc, argv)) {
        printf(plan_help, tp_order_name(TP_ORDER_DEFAULT));
        return 0;
    }
    for (int i = 2; i < argc; i++) {
        if (opt_val(argc, argv, &i, "--device-mem", &v)) {
            if (!v) return usage_error("plan", "--device-mem needs a value", NULL);
            dm = v;
        } else if (opt_val(argc, argv, &i, "--host-mem", &v)) {
            if (!v) return usage_error("plan", "--host-mem needs a value", NULL);
            hm = v;
        } else if (opt_val(argc, argv, &i, "--order", &v)) {
            if (!v) return usage_error("plan", "--order needs a value", NULL);
            ord = v;
        } else if (opt_val(argc, argv, &i, "-o", &v) || opt_val(argc, argv, &i, "--output", &v)) {
            if (!v) return usage_error("plan", "-o needs a file name", NULL);
            out = v;
        } else if (!strcmp(argv[i], "--stats")) {
            stats = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return usage_error("plan", "unknown option", argv[i]);
        } else if (!in) {
            in = argv[i];
        } else {
            return usage_error("plan", "more than one TaskGraph given", argv[i]);
        }
    }
    if (!in) return usage_error("plan", "no TaskGraph given", NULL);
    if (!dm) return usage_error("plan", "--device-mem is required", NULL);
    tp_error e;
    tp_graph *g;
    tp_status s = tp_graph_read_file(in, &g, &e);
    if (s) return fail(s, &e);
    tp_plan_opts o;
    tp_plan_opts_init(&o, tp_graph_devices(g), 0);
    int rc = plan_flags("plan", dm, hm, ord, &o);
    if (rc) {
        tp_graph_free(g);
        return rc;
    }
    tp_memgraph *mg;
    s = tp_plan(g, &o, &mg, &e);
    if (s) {
        tp_graph_free(g);
        return fail(s, &e);
    }
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
        fprintf(stderr, "%s plan: cannot write %s\n", prog, out);
        tp_memgraph_free(mg);
        tp_graph_free(g);
        return 2;
    }
    s = tp_memgraph_write(mg, f, &e);
    if (out && fclose(f) && !s) s = tp_status_exit_code(TP_ERR_IO) ? TP_ERR_IO : s;
    if (s) {
        fprintf(stderr, "%s plan: writing %s failed\n", prog, out ? out : "standard output");
    } else if (stats) {
        FILE *sf = out ? stdout : stderr;
        tp_plan_stats st;
        tp_memgraph_stats(mg, &st);
        tp_plan_stats_print(&st, sf);
        uint64_t minf[TP_MAX_DEVICES], peak[TP_MAX_DEVICES];
        if (tp_plan_bounds(g, o.order, minf, peak, &e) == TP_OK) {
            char b1[32], b2[32];
            fprintf(sf, "order %s; per device smallest feasible capacity / unconstrained peak:", tp_order_name(o.order));
            for (int d = 0; d < o.ndevices; d++)
                fprintf(sf, " %s / %s%s", tp_format_size(minf[d], b1, sizeof b1), tp_format_size(peak[d], b2, sizeof b2),
                        d + 1 < o.ndevices ? "," : "\n");
        }
    }
    tp_memgraph_free(mg);
    tp_graph_free(g);
    return s ? 3 : 0;
}

static int cmd_verify(int argc, char **argv)
{
    const char *mgp = NULL, *tgp = NULL, *v;
    if (wants_help(argc, argv)) {
        fputs(verify_help, stdout);
        return 0;
    }
    for (int i = 2; i < argc; i++) {
        if (opt_val(argc, argv, &i, "--taskgraph", &v)) {
            if (!v) return usage_error("verify", "--taskgraph needs a file", NULL);
            tgp = v;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return usage_error("verify", "unknown option", argv[i]);
        } else if (!mgp) {
            mgp = argv[i];
        } else {
            return usage_error("verify", "more than one MemGraph given", argv[i]);
        }
    }
    if (!mgp) return usage_error("verify", "no MemGraph given", NULL);
    if (!tgp) return usage_error("verify", "--taskgraph is required", NULL);
    tp_error e;
    tp_graph *g;
    tp_status s = tp_graph_read_file(tgp, &g, &e);
    if (s) return fail(s, &e);
    s = tp_verify_file(mgp, g, &e);
    tp_graph_free(g);
    if (s == TP_ERR_CHECK) {
        printf("INVALID: %s\n", e.msg);
        return 1;
    }
    if (s) return fail(s, &e);
    printf("valid: %s\n", mgp);
    return 0;
}

static int cmd_dot(int argc, char **argv)
{
    const char *mgp = NULL, *out = NULL, *v;
    if (wants_help(argc, argv)) {
        fputs(dot_help, stdout);
        return 0;
    }
    for (int i = 2; i < argc; i++) {
        if (opt_val(argc, argv, &i, "-o", &v)) {
            if (!v) return usage_error("dot", "-o needs a file name", NULL);
            out = v;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return usage_error("dot", "unknown option", argv[i]);
        } else if (!mgp) {
            mgp = argv[i];
        } else {
            return usage_error("dot", "more than one MemGraph given", argv[i]);
        }
    }
    if (!mgp) return usage_error("dot", "no MemGraph given", NULL);
    char *text;
    size_t len;
    FILE *rf = fopen(mgp, "rb");
    if (!rf) {
        fprintf(stderr, "%s dot: %s: cannot open\n", prog, mgp);
        return 2;
    }
    fseek(rf, 0, SEEK_END);
    long sz = ftell(rf);
    fseek(rf, 0, SEEK_SET);
    text = malloc((size_t)(sz > 0 ? sz : 0) + 1);
    len = text ? fread(text, 1, (size_t)(sz > 0 ? sz : 0), rf) : 0;
    fclose(rf);
    if (!text) return 3;
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
        free(text);
        fprintf(stderr, "%s dot: cannot write %s\n", prog, out);
        return 2;
    }
    tp_error e;
    tp_status s = tp_dot_json(text, len, mgp, f, &e);
    free(text);
    if (out) fclose(f);
    if (s) return fail(s, &e);
    return 0;
}

static int cmd_run(int argc, char **argv)
{
    if (wants_help(argc, argv)) {
        fputs(run_help, stdout);
        return 0;
    }
    const char *in = NULL, *dm = NULL, *hm = NULL, *pord = NULL, *inputs = NULL, *outp = NULL, *pol = NULL, *trace = NULL, *v;
    const char *bname = NULL, *compl = NULL;
    double bw = 0, lat = 0, jit = 0;
    long long seed = 0, streams = 1, failv = -1;
    int verify = 1, rc;
    for (int i = 2; i < argc; i++) {
        if (opt_val(argc, argv, &i, "--device-mem", &v)) dm = v;
        else if (opt_val(argc, argv, &i, "--backend", &v)) bname = v;
        else if (opt_val(argc, argv, &i, "--completion", &v)) compl = v;
        else if (opt_val(argc, argv, &i, "--host-mem", &v)) hm = v;
        else if (opt_val(argc, argv, &i, "--plan-order", &v)) pord = v;
        else if (opt_val(argc, argv, &i, "--inputs", &v)) inputs = v;
        else if (opt_val(argc, argv, &i, "--out", &v)) outp = v;
        else if (opt_val(argc, argv, &i, "--order", &v)) pol = v;
        else if (opt_val(argc, argv, &i, "--trace", &v)) trace = v;
        else if (opt_val(argc, argv, &i, "--seed", &v)) {
            if ((rc = int_flag("run", "--seed", v, 0, LLONG_MAX, &seed))) return rc;
            continue;
        } else if (opt_val(argc, argv, &i, "--streams", &v)) {
            if ((rc = int_flag("run", "--streams", v, 1, 64, &streams))) return rc;
            continue;
        } else if (opt_val(argc, argv, &i, "--fail-vertex", &v)) { /* test hook */
            if ((rc = int_flag("run", "--fail-vertex", v, 0, LLONG_MAX, &failv))) return rc;
            continue;
        } else if (opt_val(argc, argv, &i, "--link-bandwidth", &v)) {
            if ((rc = num_flag("run", "--link-bandwidth", v, &bw))) return rc;
            continue;
        } else if (opt_val(argc, argv, &i, "--link-latency", &v)) {
            if ((rc = num_flag("run", "--link-latency", v, &lat))) return rc;
            continue;
        } else if (opt_val(argc, argv, &i, "--jitter", &v)) {
            if ((rc = num_flag("run", "--jitter", v, &jit))) return rc;
            continue;
        } else if (!strcmp(argv[i], "--no-verify")) {
            verify = 0;
            continue;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return usage_error("run", "unknown option", argv[i]);
        } else if (!in) {
            in = argv[i];
            continue;
        } else {
            return usage_error("run", "more than one TaskGraph given", argv[i]);
        }
        if (!v) return usage_error("run", "option needs a value", argv[i]);
    }
    if (!in) return usage_error("run", "no TaskGraph given", NULL);
    if (!dm) return usage_error("run", "--device-mem is required", NULL);
    if (!inputs) return usage_error("run", "--inputs is required", NULL);
    if (!outp) return usage_error("run", "--out is required", NULL);
    tp_cpu_opts co;
    tp_cpu_opts_init(&co);
    co.link_gbps = bw;
    co.link_latency_us = lat;
    co.jitter = jit;
    tp_backend *be = real_backend("run", bname, &co, compl, &rc);
    if (!be) return rc;
    tp_error e;
    tp_graph *g;
    tp_status s = tp_graph_read_file(in, &g, &e);
    if (s) {
        tp_backend_free(be);
        return fail(s, &e);
    }
    tp_plan_opts o;
    tp_plan_opts_init(&o, tp_graph_devices(g), 0);
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    rc = plan_flags("run", dm, hm, pord, &o);
    if (!rc && pol && set_policy(&ro, pol)) rc = usage_error("run", "--order must be any, fixed or random", pol);
    if (rc) {
        tp_graph_free(g);
        tp_backend_free(be);
        return rc;
    }
    ro.seed = (uint64_t)seed;
    ro.streams = (int)streams;
    g_trace = trace;
    ro.fail_vertex = failv;
    tp_memgraph *mg = NULL;
    tp_exec *x = NULL;
    double t0 = tp_now_seconds();
    s = tp_plan(g, &o, &mg, &e);
    if (!s) {
        tp_plan_stats st;
        tp_memgraph_stats(mg, &st);
        tp_plan_stats_print(&st, stdout);
    }
    if (!s && verify) {
        char *text;
        size_t len;
        s = tp_memgraph_to_string(mg, &text, &len, &e);
        if (!s) {
            s = tp_verify_json(text, len, "plan", g, &e);
            free(text);
            if (s == TP_ERR_CHECK) rc = 3; /* a planner bug, not the user's input */
            else if (!s) printf("plan verified\n");
        }
    }
    if (!s) s = tp_exec_new(mg, be, &ro, &x, &e);
    if (!s) s = tp_exec_load_inputs(x, inputs, &e);
    tp_run_summary sum;
    if (!s) {
        printf("running on %s backend: %d device%s, %d stream%s each, order %s\n", tp_backend_name(be), o.ndevices,
               o.ndevices > 1 ? "s" : "",
               ro.streams, ro.streams > 1 ? "s" : "", (ro.policy ? ro.policy : "any"));
        fflush(stdout);
        { s = tp_exec_run(x, &sum, &e); if (!s && g_trace) s = tp_exec_trace_write(x, g_trace, &e); }
        if (!s) tp_run_summary_print(&sum, stdout);
    }
    if (!s) s = tp_exec_save_outputs(x, outp, &e);
    if (!s) printf("outputs: %s (%.3f s in all)\n", outp, tp_now_seconds() - t0);
    tp_exec_free(x);
    tp_backend_free(be);
    tp_memgraph_free(mg);
    tp_graph_free(g);
    if (s) {
        fprintf(stderr, "%s run: %s\n", prog, e.msg);
        return rc ? rc : tp_status_exit_code(s);
    }
    return 0;
}

/* runs mg on the sim backend and prints the summary */
static tp_status run_sim(const tp_memgraph *mg, const tp_sim_profile *prof, tp_run_opts *ro, double jitter, tp_error *e)
{
    tp_backend *be;
    tp_status bs = tp_backend_sim_new(prof, jitter, &be, e);
    if (bs) return bs;
    tp_exec *x = NULL;
    double t0 = tp_now_seconds();
    tp_status s = tp_exec_new(mg, be, ro, &x, e);
    tp_run_summary sum;
    if (!s) s = tp_exec_run(x, &sum, e);
    if (!s && g_trace) s = tp_exec_trace_write(x, g_trace, e);
    if (!s) {
        printf("simulated on %s (%.2f s of real time):\n", prof->name, tp_now_seconds() - t0);
        tp_run_summary_print(&sum, stdout);
    }
    tp_exec_free(x);
    tp_backend_free(be);
    return s;
}

/* one point of a simulated sweep: plan and simulate, or "OOM" when no plan fits */
static tp_status sweep_point(FILE *csv, const char *model, const tp_llama_config *c, int devices, int64_t T, uint64_t mem,
                             const tp_sim_profile *prof, const tp_run_opts *ro0, double jitter, double *latency, tp_error *e)
{
    tp_llama_opts lo;
    tp_llama_opts_default(&lo, c, devices, T, mem);
    tp_graph *g;
    tp_status s = tp_llama_build(c, &lo, &g, e);
    if (s) return s;
    tp_plan_opts o;
    tp_plan_opts_init(&o, devices, mem);
    tp_memgraph *mg;
    *latency = -1;
    s = tp_plan(g, &o, &mg, e);
    if (s == TP_ERR_INFEASIBLE) {
        fprintf(csv, "%s,%s,%d,%lld,%llu,OOM,,,,,,\n", model, prof->name, devices, (long long)T, (unsigned long long)mem);
        printf("  T=%-6lld OOM: %s\n", (long long)T, e->msg);
        tp_graph_free(g);
        return TP_OK;
    }
    if (!s) {
        tp_plan_stats st;
        tp_memgraph_stats(mg, &st);
        uint64_t off = 0, rel = 0;
        for (int d = 0; d < devices; d++) {
            off += st.dev[d].offload_bytes;
            rel += st.dev[d].reload_bytes;
        }
        tp_backend *be;
        tp_exec *x = NULL;
        tp_run_opts ro = *ro0;
        tp_run_summary sum;
        s = tp_backend_sim_new(prof, jitter, &be, e);
        if (!s) s = tp_exec_new(mg, be, &ro, &x, e);
        if (!s) s = tp_exec_run(x, &sum, e);
    if (!s && g_trace) s = tp_exec_trace_write(x, g_trace, e);
        if (!s) {
            *latency = sum.makespan;
            fprintf(csv, "%s,%s,%d,%lld,%llu,ok,%.6f,%.6f,%.4f,%llu,%llu,%llu\n", model, prof->name, devices, (long long)T,
                    (unsigned long long)mem, sum.makespan, sum.lower_bound, sum.makespan / sum.lower_bound,
                    (unsigned long long)off, (unsigned long long)rel, (unsigned long long)st.vertices);
            char b1[32], b2[32];
            printf("  T=%-6lld latency %9.3f s, bound %9.3f s (ratio %.3f), offloaded %s, reloaded %s\n", (long long)T, sum.makespan,
                   sum.lower_bound, sum.makespan / sum.lower_bound, tp_format_size(off, b1, sizeof b1), tp_format_size(rel, b2, sizeof b2));
        }
        tp_exec_free(x);
        tp_backend_free(be);
        tp_memgraph_free(mg);
    }
    tp_graph_free(g);
    return s;
}

static void progress_line(void *ctx, uint64_t done, uint64_t total)
{
    (void)ctx;
    fprintf(stderr, "\r  running: %llu / %llu vertices (%.0f%%)   ", (unsigned long long)done, (unsigned long long)total,
            100.0 * (double)done / (double)(total ? total : 1));
}

static int cmd_llama(int argc, char **argv)
{
    if (wants_help(argc, argv)) {
        fputs(llama_help, stdout);
        return 0;
    }
    const char *model = NULL, *preset = NULL, *pids = NULL, *dm = NULL, *hm = NULL, *outp = NULL, *trace = NULL, *pol = NULL, *v;
    long long seq = 0, seed = 0, devices = 1, blocks = 0, streams = 1, mchunks = 0, vchunks = 0, repeat = 1;
    double bw = 0, jit = 0;
    int all = 0, nodata = 0, use_sim = 0, prc;
    const char *bname = NULL, *compl = NULL;
    const char *machine = NULL, *sweep_seq = NULL, *sweep_mem = NULL, *csvp = NULL, *pngp = NULL;
    for (int i = 2; i < argc; i++) {
        const char *tok = argv[i]; /* the flag, for messages */
        long long *iv = NULL;
        if (opt_val(argc, argv, &i, "--model", &v)) model = v;
        else if (opt_val(argc, argv, &i, "--preset", &v)) preset = v;
        else if (opt_val(argc, argv, &i, "--prompt-ids", &v)) pids = v;
        else if (opt_val(argc, argv, &i, "--device-mem", &v)) dm = v;
        else if (opt_val(argc, argv, &i, "--host-mem", &v)) hm = v;
        else if (opt_val(argc, argv, &i, "--out", &v)) outp = v;
        else if (opt_val(argc, argv, &i, "--trace", &v)) trace = v;
        else if (opt_val(argc, argv, &i, "--order", &v)) pol = v;
        else if (opt_val(argc, argv, &i, "--machine", &v)) machine = v;
        else if (opt_val(argc, argv, &i, "--sweep-seq", &v)) sweep_seq = v;
        else if (opt_val(argc, argv, &i, "--sweep-mem", &v)) sweep_mem = v;
        else if (opt_val(argc, argv, &i, "--csv", &v)) csvp = v;
        else if (opt_val(argc, argv, &i, "--png", &v)) pngp = v;
        else if (opt_val(argc, argv, &i, "--completion", &v)) compl = v;
        else if (opt_val(argc, argv, &i, "--backend", &v)) {
            if (v && !strcmp(v, "sim")) use_sim = 1;
            else bname = v;
        } else if (opt_val(argc, argv, &i, "--seq-len", &v)) iv = &seq;
        else if (opt_val(argc, argv, &i, "--seed", &v)) iv = &seed;
        else if (opt_val(argc, argv, &i, "--devices", &v)) iv = &devices;
        else if (opt_val(argc, argv, &i, "--blocks", &v)) iv = &blocks;
        else if (opt_val(argc, argv, &i, "--mlp-chunks", &v)) iv = &mchunks;
        else if (opt_val(argc, argv, &i, "--vocab-chunks", &v)) iv = &vchunks;
        else if (opt_val(argc, argv, &i, "--streams", &v)) iv = &streams;
        else if (opt_val(argc, argv, &i, "--repeat", &v)) iv = &repeat;
        else if (opt_val(argc, argv, &i, "--link-bandwidth", &v)) {
            if ((prc = num_flag("llama", "--link-bandwidth", v, &bw))) return prc;
            continue;
        } else if (opt_val(argc, argv, &i, "--jitter", &v)) {
            if ((prc = num_flag("llama", "--jitter", v, &jit))) return prc;
            continue;
        } else if (!strcmp(argv[i], "--all-logits")) {
            all = 1;
            continue;
        } else if (!strcmp(argv[i], "--no-data")) {
            nodata = 1;
            continue;
        } else return usage_error("llama", "unknown argument", argv[i]);
        if (!v) return usage_error("llama", "option needs a value", argv[i]);
        if (iv && (prc = int_flag("llama", tok, v, 0, LLONG_MAX, iv))) return prc;
    }
    if (!model == !preset) return usage_error("llama", "give one of --model DIR and --preset NAME", NULL);
    if (sweep_seq) { /* a simulated sweep over sequence lengths (and caps): CSV, and a plot */
        if (!use_sim) return usage_error("llama", "--sweep-seq needs --backend sim", NULL);
        if (!csvp) return usage_error("llama", "--sweep-seq needs --csv FILE", NULL);
        tp_error e;
        tp_llama_config c;
        tp_sim_profile prof;
        char path[4096];
        tp_status s = model ? (snprintf(path, sizeof path, "%s/config.json", model), tp_llama_config_read(path, &c, &e))
                            : tp_llama_preset(preset, &c, &e);
        if (!s) s = tp_sim_profile_read(machine ? machine : "a100x8", &prof, &e);
        if (s) return fail(s, &e);
        uint64_t mems[16];
        int nm = 1;
        mems[0] = prof.device_mem;
        if ((sweep_mem ? sweep_mem : dm) && tp_parse_size_list(sweep_mem ? sweep_mem : dm, mems, 16, &nm))
            return usage_error("llama", "--sweep-mem: a comma-separated list of sizes", sweep_mem);
        FILE *csv = fopen(csvp, "w");
        if (!csv) return usage_error("llama", "cannot write", csvp);
        fprintf(csv, "model,machine,devices,seq,device_mem,status,latency_s,bound_s,ratio,offloaded_bytes,reloaded_bytes,memgraph_vertices\n");
        tp_run_opts ro;
        tp_run_opts_init(&ro);
        ro.seed = (uint64_t)seed;
        if (pol && set_policy(&ro, pol)) {
            fclose(csv);
            return usage_error("llama", "--order must be any, fixed or random", pol);
        }
        for (int k = 0; k < nm && !s; k++) {
            char b1[32];
            printf("%s on %s, %lld devices, %s each:\n", model ? model : preset, prof.name, devices, tp_format_size(mems[k], b1, sizeof b1));
            for (const char *p = sweep_seq; *p && !s;) {
                char *end;
                long long T = strtoll(p, &end, 10);
                if (T < 1 || end == p) {
                    fclose(csv);
                    return usage_error("llama", "--sweep-seq: a comma-separated list of token counts", sweep_seq);
                }
                double lat;
                s = sweep_point(csv, model ? model : preset, &c, (int)devices, T, mems[k], &prof, &ro, jit, &lat, &e);
                fflush(stdout);
                p = *end ? end + 1 : end;
            }
        }
        fclose(csv);
        if (s) return fail(s, &e);
        printf("wrote %s\n", csvp);
        if (pngp) {
            FILE *gp = popen("gnuplot 2>&1", "w");
            if (!gp) return usage_error("llama", "cannot run gnuplot for --png", NULL);
            fprintf(gp, "set terminal png size 900,560\nset output '%s'\nset datafile separator ','\nset logscale x 2\n"
                        "set xlabel 'prompt tokens'\nset ylabel 'first-token latency (s)'\nset key left top\nset grid\n"
                        "set title '%s prefill on %s, %lld devices (simulated)'\n",
                    pngp, model ? model : preset, prof.name, devices);
            fprintf(gp, "plot");
            for (int k = 0; k < nm; k++) {
                char b1[32];
                fprintf(gp, "%s '%s' using ($5==%llu && strcol(6) eq 'ok' ? $4 : 1/0):7 with linespoints title '%s per device'",
                        k ? "," : "", csvp, (unsigned long long)mems[k], tp_format_size(mems[k], b1, sizeof b1));
            }
            fprintf(gp, "\n");
            if (pclose(gp)) return usage_error("llama", "gnuplot failed (install gnuplot-nox)", NULL);
            printf("wrote %s\n", pngp);
        }
        return 0;
    }
    if (!pids == !seq) return usage_error("llama", "give one of --prompt-ids and --seq-len", NULL);
    tp_sim_profile prof;
    if (use_sim) {
        tp_error pe;
        tp_status ps = tp_sim_profile_read(machine ? machine : "a100x8", &prof, &pe);
        if (ps) return fail(ps, &pe);
        if (!dm) { /* the machine's memory */
            static char mem[32];
            snprintf(mem, sizeof mem, "%llu", (unsigned long long)prof.device_mem);
            dm = mem;
        }
    }
    if (!dm) return usage_error("llama", "--device-mem is required", NULL);
    if (devices < 1 || devices > TP_MAX_DEVICES) return usage_error("llama", "--devices must be 1..64", NULL);
    tp_backend *be = NULL;
    if (!use_sim && !nodata) { /* the backend first: a missing GPU is reported before any work */
        tp_cpu_opts co;
        tp_cpu_opts_init(&co);
        co.link_gbps = bw;
        co.jitter = jit;
        if (!(be = real_backend("llama", bname, &co, compl, &prc))) return prc;
    }
    tp_error e;
    tp_llama_config c;
    tp_status s;
    if (model) {
        char path[4096];
        snprintf(path, sizeof path, "%s/config.json", model);
        s = tp_llama_config_read(path, &c, &e);
    } else {
        s = tp_llama_preset(preset, &c, &e);
    }
    if (s) {
        tp_backend_free(be);
        return fail(s, &e);
    }
    /* the prompt */
    int64_t T = seq;
    int32_t *ids = NULL;
    if (pids) {
        T = 1;
        for (const char *p = pids; *p; p++) T += *p == ',';
    }
    ids = malloc(sizeof *ids * (size_t)T);
    if (!ids) {
        tp_backend_free(be);
        return 3;
    }
    if (pids) {
        const char *p = pids;
        for (int64_t k = 0; k < T; k++) {
            char *end;
            long long id = strtoll(p, &end, 10);
            if (end == p || id < 0 || id >= c.vocab || (*end && *end != ',')) {
                free(ids);
                tp_backend_free(be);
                fprintf(stderr, "%s llama: --prompt-ids: token %lld is not an id in [0, %lld)\n", prog, (long long)k, (long long)c.vocab);
                return 2;
            }
            ids[k] = (int32_t)id;
            p = *end ? end + 1 : end;
        }
    } else {
        uint64_t st = (uint64_t)seed * 0x9e3779b97f4a7c15ull + 12345;
        for (int64_t k = 0; k < T; k++) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            ids[k] = (int32_t)((st >> 33) % (uint64_t)c.vocab);
        }
    }
    tp_plan_opts o;
    tp_plan_opts_init(&o, (int)devices, 0);
    prc = plan_flags("llama", dm, hm, NULL, &o);
    if (prc) {
        free(ids);
        tp_backend_free(be);
        return prc;
    }
    uint64_t mincap = o.device_mem[0];
    for (int d = 1; d < o.ndevices; d++) mincap = o.device_mem[d] < mincap ? o.device_mem[d] : mincap;
    tp_llama_opts lo;
    tp_llama_opts_default(&lo, &c, (int)devices, T, mincap);
    if (blocks) lo.blocks = (int)(blocks > T ? T : blocks);
    if (mchunks) lo.mlp_chunks = (int)mchunks;
    if (vchunks) lo.vocab_chunks = (int)vchunks;
    lo.all_logits = all;
    blocks = lo.blocks;
    printf("model: %s; %lld layers, hidden %lld, %lld heads (%lld KV), vocab %lld, %s weights; prompt %lld tokens; "
           "%lld devices, %lld query blocks, %d MLP and %d vocabulary chunks per device\n",
           model ? model : preset, (long long)c.layers, (long long)c.hidden, (long long)c.heads, (long long)c.kv_heads,
           (long long)c.vocab, tp_dtype_name(c.dtype), (long long)T, devices, blocks, lo.mlp_chunks, lo.vocab_chunks);
    double t0 = tp_now_seconds();
    tp_graph *g;
    s = tp_llama_build(&c, &lo, &g, &e);
    if (s) {
        free(ids);
        tp_backend_free(be);
        return fail(s, &e);
    }
    uint64_t nin = 0, edges = 0;
    for (uint32_t i = 0; i < tp_graph_size(g); i++) {
        uint32_t nc;
        tp_graph_consumers(g, i, &nc);
        edges += nc;
        nin += tp_graph_vertex(g, i)->kind == TP_V_INPUT;
    }
    printf("TaskGraph: %llu non-input vertices, %llu input vertices, %llu edges (built in %.2f s)\n",
           (unsigned long long)(tp_graph_size(g) - nin), (unsigned long long)nin, (unsigned long long)edges, tp_now_seconds() - t0);
    tp_memgraph *mg = NULL;
    s = tp_plan(g, &o, &mg, &e);
    int rc = 0;
    if (!s) {
        tp_plan_stats st;
        tp_memgraph_stats(mg, &st);
        uint64_t mnin = 0;
        for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
            tp_mvertex mv;
            tp_memgraph_vertex(mg, i, &mv);
            mnin += mv.kind == TP_M_INPUT;
        }
        printf("MemGraph: %llu non-input vertices, %llu input vertices, %llu edges\n", (unsigned long long)(st.vertices - mnin),
               (unsigned long long)mnin, (unsigned long long)st.edges);
        tp_plan_stats_print(&st, stdout);
        uint64_t minf[TP_MAX_DEVICES], peak[TP_MAX_DEVICES];
        if (tp_plan_bounds(g, o.order, minf, peak, &e) == TP_OK) {
            char c1[32], c2[32];
            printf("bytes per device, smallest feasible capacity / unconstrained peak:");
            for (int d = 0; d < o.ndevices; d++)
                printf(" %llu / %llu (%s / %s)%s", (unsigned long long)minf[d], (unsigned long long)peak[d],
                       tp_format_size(minf[d], c1, sizeof c1), tp_format_size(peak[d], c2, sizeof c2), d + 1 < o.ndevices ? "," : "\n");
        }
    }
    tp_exec *x = NULL;
    if (!s && use_sim && !nodata) {
        tp_run_opts ro;
        tp_run_opts_init(&ro);
        ro.seed = (uint64_t)seed;
        ro.streams = (int)streams;
        g_trace = trace;
        if (pol && set_policy(&ro, pol)) s = tp__fail_public(&e, "--order must be any, fixed or random");
        if (!s) s = run_sim(mg, &prof, &ro, jit, &e);
        nodata = 1;
    }
    if (!s && !nodata) {
        tp_run_opts ro;
        tp_run_opts_init(&ro);
        ro.streams = (int)streams;
        ro.seed = (uint64_t)seed;
        g_trace = trace;
        if (pol && set_policy(&ro, pol)) s = tp__fail_public(&e, "--order must be any, fixed or random");
        if (isatty(2)) ro.progress = progress_line;
        printf("running on the %s backend\n", tp_backend_name(be));
        if (!s) s = tp_exec_new(mg, be, &ro, &x, &e);
        if (!s) s = model ? tp_llama_load(x, &c, model, ids, &e) : tp_llama_random(x, &c, (uint64_t)seed, ids, &e);
        tp_run_summary sum;
        double best = 0;
        for (long long rep = 0; rep < (repeat > 0 ? repeat : 1) && !s; rep++) { /* inputs stay: runs repeat */
            { s = tp_exec_run(x, &sum, &e); if (!s && g_trace) s = tp_exec_trace_write(x, g_trace, &e); }
            if (!s && repeat > 1) {
                best = rep == 0 || sum.makespan < best ? sum.makespan : best;
                printf("run %lld of %lld: makespan %.4f s\n", rep + 1, repeat, sum.makespan);
                fflush(stdout);
            }
        }
        if (!s && repeat > 1) printf("best makespan of %lld runs: %.4f s\n", repeat, best);
        if (ro.progress) fputs("\r\033[K", stderr);
        if (!s) {
            tp_run_summary_print(&sum, stdout);
            tp_mvertex lv;
            tp_memgraph_vertex(mg, tp_memgraph_outputs(mg)[0], &lv);
            float *lg = malloc(lv.write.bytes);
            if (!lg) s = TP_ERR_NOMEM;
            if (!s) s = tp_exec_read(x, &lv.write, lg, &e);
            if (!s) {
                const float *last = lg + (lv.write.bytes / 4 - (uint64_t)c.vocab);
                int top[5] = {-1, -1, -1, -1, -1};
                for (int64_t k = 0; k < c.vocab; k++)
                    for (int j = 0; j < 5; j++)
                        if (top[j] < 0 || last[k] > last[top[j]]) {
                            for (int q = 4; q > j; q--) top[q] = top[q - 1];
                            top[j] = (int)k;
                            break;
                        }
                printf("next token, top 5 (id: logit):");
                for (int j = 0; j < 5 && top[j] >= 0; j++) printf(" %d: %.4f%s", top[j], last[top[j]], j < 4 ? "," : "\n");
                if (outp) s = tp_exec_save_outputs(x, outp, &e);
            }
            free(lg);
        }
        printf("total %.3f s\n", tp_now_seconds() - t0);
    }
    tp_exec_free(x);
    tp_backend_free(be);
    tp_memgraph_free(mg);
    tp_graph_free(g);
    free(ids);
    if (s) {
        fprintf(stderr, "%s llama: %s\n", prog, e.msg);
        return rc ? rc : tp_status_exit_code(s);
    }
    return 0;
}

static int cmd_sim(int argc, char **argv)
{
    if (wants_help(argc, argv)) {
        fputs(sim_help, stdout);
        return 0;
    }
    const char *in = NULL, *mach = NULL, *dm = NULL, *hm = NULL, *pord = NULL, *pol = NULL, *trace = NULL, *v;
    long long seed = 0, streams = 1;
    double jit = 0;
    int rc;
    for (int i = 2; i < argc; i++) {
        if (opt_val(argc, argv, &i, "--machine", &v)) mach = v;
        else if (opt_val(argc, argv, &i, "--device-mem", &v)) dm = v;
        else if (opt_val(argc, argv, &i, "--host-mem", &v)) hm = v;
        else if (opt_val(argc, argv, &i, "--plan-order", &v)) pord = v;
        else if (opt_val(argc, argv, &i, "--order", &v)) pol = v;
        else if (opt_val(argc, argv, &i, "--trace", &v)) trace = v;
        else if (opt_val(argc, argv, &i, "--seed", &v)) {
            if ((rc = int_flag("sim", "--seed", v, 0, LLONG_MAX, &seed))) return rc;
            continue;
        } else if (opt_val(argc, argv, &i, "--streams", &v)) {
            if ((rc = int_flag("sim", "--streams", v, 1, 64, &streams))) return rc;
            continue;
        } else if (opt_val(argc, argv, &i, "--jitter", &v)) {
            if ((rc = num_flag("sim", "--jitter", v, &jit))) return rc;
            continue;
        } else if (argv[i][0] == '-' && argv[i][1]) return usage_error("sim", "unknown option", argv[i]);
        else if (!in) {
            in = argv[i];
            continue;
        } else return usage_error("sim", "more than one TaskGraph given", argv[i]);
        if (!v) return usage_error("sim", "option needs a value", argv[i]);
    }
    if (!in) return usage_error("sim", "no TaskGraph given", NULL);
    if (!mach) return usage_error("sim", "--machine is required", NULL);
    tp_error e;
    tp_sim_profile prof;
    tp_status s = tp_sim_profile_read(mach, &prof, &e);
    if (s) return fail(s, &e);
    tp_graph *g;
    if ((s = tp_graph_read_file(in, &g, &e))) return fail(s, &e);
    tp_plan_opts o;
    tp_plan_opts_init(&o, tp_graph_devices(g), prof.device_mem);
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    rc = plan_flags("sim", dm, hm, pord, &o);
    if (!rc && pol && set_policy(&ro, pol)) rc = usage_error("sim", "--order must be any, fixed or random", pol);
    if (rc) {
        tp_graph_free(g);
        return rc;
    }
    ro.seed = (uint64_t)seed;
    ro.streams = (int)streams;
    g_trace = trace;
    tp_memgraph *mg;
    s = tp_plan(g, &o, &mg, &e);
    if (!s) {
        tp_plan_stats st;
        tp_memgraph_stats(mg, &st);
        tp_plan_stats_print(&st, stdout);
        s = run_sim(mg, &prof, &ro, jit, &e);
        tp_memgraph_free(mg);
    }
    tp_graph_free(g);
    return s ? fail(s, &e) : 0;
}

static int cmd_gen(int argc, char **argv)
{
    if (wants_help(argc, argv)) {
        fputs(gen_help, stdout);
        return 0;
    }
    tp_layered_opts lo;
    tp_layered_opts_init(&lo);
    const char *out = NULL, *v;
    int model = 0;
    if (argc > 2 && !strcmp(argv[2], "inputs")) {
        const char *tgp = NULL;
        long long seed = 0, imax = 10;
        for (int i = 3; i < argc; i++) {
            char *end;
            if (opt_val(argc, argv, &i, "-o", &v)) out = v;
            else if (opt_val(argc, argv, &i, "--seed", &v)) {
                if (!v || (seed = strtoll(v, &end, 10)) < 0 || *end) return usage_error("gen", "--seed needs a non-negative integer", v);
            } else if (opt_val(argc, argv, &i, "--int-max", &v)) {
                if (!v || (imax = strtoll(v, &end, 10)) < 1 || *end) return usage_error("gen", "--int-max needs a positive integer", v);
            } else if (argv[i][0] == '-' && argv[i][1]) return usage_error("gen", "unknown option", argv[i]);
            else tgp = argv[i];
        }
        if (!tgp || !out) return usage_error("gen", "gen inputs needs a TaskGraph and -o FILE", NULL);
        tp_error e;
        tp_graph *g;
        tp_status s = tp_graph_read_file(tgp, &g, &e);
        if (!s) s = tp_random_inputs(g, (uint64_t)seed, imax, out, &e);
        tp_graph_free(g);
        return s ? fail(s, &e) : 0;
    }
    for (int i = 2; i < argc; i++) {
        long long x = 0;
        const char *names[] = {"--devices", "--layers", "--heads", "--chunks", "--seq", "--head-dim", "--dtype-bytes"};
        int hit = -1;
        for (int k = 0; k < 7 && hit < 0; k++)
            if (opt_val(argc, argv, &i, names[k], &v)) hit = k;
        if (hit >= 0) {
            char *end;
            if (!v || (x = strtoll(v, &end, 10)) < 1 || *end) return usage_error("gen", "needs a positive integer", names[hit]);
            if (hit == 0) lo.devices = (int)x;
            if (hit == 1) lo.layers = (int)x;
            if (hit == 2) lo.heads = (int)x;
            if (hit == 3) lo.chunks = (int)x;
            if (hit == 4) lo.seq = x;
            if (hit == 5) lo.head_dim = x;
            if (hit == 6) lo.dtype_bytes = (int)x;
        } else if (opt_val(argc, argv, &i, "-o", &v)) {
            if (!v) return usage_error("gen", "-o needs a file name", NULL);
            out = v;
        } else if (!strcmp(argv[i], "layered")) {
            model = 1;
        } else {
            return usage_error("gen", "unknown argument", argv[i]);
        }
    }
    if (!model) return usage_error("gen", "name a model: layered", NULL);
    tp_error e;
    tp_graph *g;
    tp_status s = tp_model_layered(&lo, &g, &e);
    if (s) return fail(s, &e);
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
        tp_graph_free(g);
        fprintf(stderr, "%s gen: cannot write %s\n", prog, out);
        return 2;
    }
    s = tp_graph_write(g, f, &e);
    if (out) fclose(f);
    tp_graph_free(g);
    return s ? 3 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage_main(stderr);
        return 2;
    }
    const char *c = argv[1];
    if (!strcmp(c, "--help") || !strcmp(c, "-h") || !strcmp(c, "help")) {
        usage_main(stdout);
        return 0;
    }
    if (!strcmp(c, "--version")) {
        char b[256];
        tp_cuda_describe(b, sizeof b);
        printf("turnip %s\nbackends: cpu, sim%s%s\n", TP_VERSION, *b ? ", " : "", b);
        return 0;
    }
    if (!strcmp(c, "plan")) return cmd_plan(argc, argv);
    if (!strcmp(c, "verify")) return cmd_verify(argc, argv);
    if (!strcmp(c, "dot")) return cmd_dot(argc, argv);
    if (!strcmp(c, "gen")) return cmd_gen(argc, argv);
    if (!strcmp(c, "run")) return cmd_run(argc, argv);
    if (!strcmp(c, "llama")) return cmd_llama(argc, argv);
    if (!strcmp(c, "sim")) return cmd_sim(argc, argv);
    fprintf(stderr, "%s: unknown command '%s'\n", prog, c);
    usage_main(stderr);
    return 2;
}
