/* cmd_run.c - turnip run: plan, verify and execute a TaskGraph on the cpu or cuda backend.
 *
 * A plan with resident inputs (a chain graph of turnip offload-plan --taskgraph) runs in a
 * session of its own sizes, as turnip sim runs it (cli_exec_open); the session is zeroed, so a
 * resident input holds zeros. That is exact for sized-only inputs (no dtype: no kernel but
 * `opaque` reads them, and opaque reads nothing); a resident input with a dtype is refused
 * with --inputs (the file's values would not reach it) and allowed with --zero-inputs. */
#include <stdlib.h>
#include <string.h>
#include "cli.h"

typedef struct {
    cli_plan_flags p;
    cli_exec_flags x;
    cli_backend_flags b;
    const char *inputs, *out, *plan;
    int no_verify, zero_inputs;
} flags;

static const cli_opt opts[] = {
    CLI_O_DEVICE_MEM(flags, p, "device capacity (required): one size for all devices, or one per device"),
    CLI_O_STR("--inputs", "FILE", flags, inputs,
              "safetensors holding every TaskGraph input, by id (dtype, shape checked;\nrequired unless --zero-inputs)"),
    CLI_O_SWITCH("--zero-inputs", flags, zero_inputs,
                 "every input holds zeros, no --inputs file (timing runs of sized-only graphs:\nturnip gen, offload-plan --taskgraph)"),
    CLI_O_STR("--out", "FILE", flags, out, "safetensors the outputs go to, by output id (default: not written)"),
    CLI_O_HOST_MEM(flags, p),
    CLI_O_STR("--plan", "MEMGRAPH", flags, plan,
              "run this plan (turnip plan -o, JSON or binary) instead of planning: it must be\n"
              "for TASKGRAPH and exactly these --device-mem caps (and fit --host-mem);\n"
              "--plan-order and --no-sum-into then change nothing"),
    CLI_O_PLAN_ORDER("--plan-order", flags, p),
    CLI_O_NO_SUM_INTO(flags, p),
    CLI_O_WEIGHT_OFFLOAD(flags, p),
    CLI_O_MILP_TIME_LIMIT(flags, p),
    CLI_O_POLICY(flags, x),
    CLI_O_DETERMINISTIC(flags, x),
    CLI_O_SEED(flags, x),
    CLI_O_STREAMS(flags, x),
    CLI_O_LINK_BANDWIDTH(flags, b, "throttle host-device and peer copies (default: unthrottled memcpy)"),
    CLI_O_LINK_LATENCY(flags, b),
    CLI_O_NUM("--jitter", "F", flags, b.jitter, 0, TP_CPU_JITTER_MAX, "copy time x exp(F x N(0,1)), seeded by --seed and the vertex"),
    CLI_O_OPAQUE_RATE(flags, b),
    CLI_O_TRACE(flags, x),
    CLI_O_SWITCH("--no-verify", flags, no_verify, "skip the independent check of the plan"),
    CLI_O_INT("--repeat", "N", flags, x.repeat, 0, 1000000,
              "N runs in one session: the inputs that fit stay on the devices from one run to\n"
              "the next (each later plan declares them resident and is verified too); each run\n"
              "prints the bytes it moved; the outputs are the last run's"),
    CLI_O_STR("--backend", "cpu|cuda", flags, b.name,
              "cuda: run on GPUs: MemGraph device d on GPU d mod (GPUs visible); the link\n"
              "and jitter flags and --opaque-rate are cpu-backend only"),
    CLI_O_CHOICE("--completion", "MODE", flags, b.completion, cli_completion_names,
                 "cuda: how completions reach the executor: callback (cudaLaunchHostFunc)\n"
                 "or poll (a thread polling events, the default: it also reports GPU faults)"),
    CLI_O_CHOICE("--matmul", "MODE", flags, b.matmul, cli_matmul_names,
                 "cuda: fast (the default: tensor cores; an f32 operand beside a bf16/f16 one is\n"
                 "rounded to that type, f32 x f32 runs as TF32) or exact (f32 arithmetic throughout)"),
    CLI_O_INT("--fail-vertex", "V", flags, x.fail_vertex, 0, LLONG_MAX, NULL), /* test hook */
    CLI_O_END,
};

static void help(FILE *f)
{
    cli_print_help(f,
                   "usage: turnip run TASKGRAPH --device-mem SIZE[,SIZE...] (--inputs IN.safetensors | --zero-inputs)\n"
                   "                  [--out OUT.safetensors] [--host-mem SIZE] [--plan MEMGRAPH] [--plan-order topo|dfs|greedy]\n"
                   "                  [--order any|fixed|random|priority] [--seed N]\n"
                   "                  [--streams N] [--link-bandwidth GB/s] [--link-latency us] [--jitter F] [--opaque-rate FLOPS/s]\n"
                   "                  [--trace FILE] [--no-verify] [--repeat N] [--backend cpu|cuda] [--completion callback|poll]\n"
                   "                  [--matmul fast|exact] [--no-sum-into] [--deterministic] [--weight-offload greedy|greedy-star|l2l|l2l-sync|milp [--milp-time-limit S]]\n"
                   "\n"
                   "Plans TASKGRAPH under the caps (or loads --plan), verifies the plan (unless --no-verify), runs it on the cpu\n"
                   "backend (emulated GPUs: memory arenas of exactly the cap, worker threads for compute streams\n"
                   "and copy engines) or on NVIDIA GPUs (--backend cuda) and writes the outputs, named by output\n"
                   "id, to OUT. A plan with resident inputs (a chain graph) runs in a session of its sizes, where\n"
                   "each resident input holds zeros.\n"
                   "\n",
                   opts, "exit: 0 ok, 2 unusable input (a --plan file that fails verification too), infeasible plan, failed vertex\n(named) or no usable GPU\n");
}

static tp_status load_file(tp_exec *x, void *path, tp_error *e)
{
    return tp_exec_load_inputs(x, path, e);
}

/* --zero-inputs: zeros into every input's host region (a fresh executor's host memory need
 * not be zeroed; a session's is, and its resident inputs are left as they are) */
static tp_status load_zeros(tp_exec *x, void *ctx, tp_error *e)
{
    (void)ctx;
    const tp_memgraph *mg = tp_exec_memgraph(x);
    uint64_t most = 0;
    for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        if (v.kind == TP_M_INPUT && v.write.bytes > most) most = v.write.bytes;
    }
    if (!most) return TP_OK;
    void *z = most <= SIZE_MAX ? calloc(1, (size_t)most) : NULL;
    if (!z) return cli_set_error(e, TP_ERR_NOMEM, "out of memory (%llu bytes of zeros)", (unsigned long long)most);
    tp_status s = TP_OK;
    for (uint32_t i = 0; i < tp_memgraph_size(mg) && !s; i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        if (v.kind == TP_M_INPUT) s = tp_exec_write(x, &v.write, z, e);
    }
    free(z);
    return s;
}

/* With --inputs, a resident input must be sized only: the session starts it at zeros, which
 * carry no meaning only when no kernel reads values from it; 0, or 2 after saying why */
static int check_resident(const tp_graph *g)
{
    const tp_vertex *gv = tp_graph_vertices(g);
    for (uint32_t v = 0; v < tp_graph_size(g); v++)
        if (gv[v].kind == TP_V_INPUT && gv[v].dtype != TP_DT_NONE && tp_graph_resident(g, v, NULL, NULL))
            return cli_errorf("run", 2,
                              "input '%s' is resident with dtype %s: run starts resident inputs at zeros and loads no "
                              "values into them (--inputs cannot reach it); give --zero-inputs, or declare no input resident",
                              gv[v].id, tp_dtype_name(gv[v].dtype));
    return 0;
}

/* --plan FILE: a plan for g under exactly o's caps; 0, or 2 after printing why not */
static int load_plan(const char *path, const tp_graph *g, const tp_plan_opts *o, tp_memgraph **mg)
{
    tp_error e;
    tp_status s = tp_memgraph_read_file(path, g, mg, NULL, &e);
    if (s) return cli_fail("run", s, &e);
    char a[32], b[32];
    for (int d = 0; d < o->ndevices; d++) {
        uint64_t c = tp_memgraph_device_capacity(*mg, d);
        if (c != o->device_mem[d])
            return cli_errorf("run", 2, "%s: the plan is for device %d of %s, --device-mem says %s (plan again, or run with its caps)",
                              path, d, tp_format_size(c, a, sizeof a), tp_format_size(o->device_mem[d], b, sizeof b));
    }
    uint64_t h = tp_memgraph_host_bytes(*mg);
    if (o->host_mem && h > o->host_mem)
        return cli_errorf("run", 2, "%s: the plan uses %s of host memory, --host-mem is %s", path, tp_format_size(h, a, sizeof a),
                          tp_format_size(o->host_mem, b, sizeof b));
    printf("plan: %u vertices, loaded from %s (not planned here)\n", tp_memgraph_size(*mg), path);
    return 0;
}

static int run(int argc, char **argv)
{
    flags fl = {.x = {.streams = 1, .fail_vertex = -1}};
    const char *in;
    int npos, rc = cli_parse("run", opts, &fl, argc, argv, 2, &in, 1, &npos, "TaskGraph");
    if (rc) return rc;
    if (!npos) return cli_usage_error("run", "no TaskGraph given", NULL);
    if (fl.b.name && !strcmp(fl.b.name, "sim")) /* run has no --machine: sim is its own command */
        return cli_usage_error("run", "--backend is cpu or cuda here; a simulated run is `turnip sim TASKGRAPH --machine NAME`", NULL);
    if (!fl.p.device_mem.n) return cli_usage_error("run", "--device-mem is required", NULL);
    if (!fl.inputs && !fl.zero_inputs) return cli_usage_error("run", "--inputs is required (or --zero-inputs)", NULL);
    cli_note_input("the TaskGraph", in);
    cli_note_input("--inputs", fl.inputs);
    cli_note_input("--plan", fl.plan);
    if (fl.inputs && fl.zero_inputs) return cli_usage_error("run", "--inputs and --zero-inputs exclude each other", NULL);
    if (fl.plan && fl.x.repeat > 1) return cli_usage_error("run", "--plan does not combine with --repeat (each later run plans again)", NULL);
    if (fl.plan && fl.p.weight_offload)
        return cli_usage_error("run", "--weight-offload plans; --plan runs a plan as it is (plan with turnip plan --weight-offload)", NULL);
    /* an output that cannot be written is refused before any work */
    if ((rc = cli_writable_files("run", "--out", fl.out, "--trace", fl.x.trace, (char *)NULL))) return rc;
    tp_backend *be = cli_backend("run", &fl.b, &rc); /* first: a missing GPU is reported before any work */
    if (!be) return rc;
    /* then an input that cannot be read (found by its reader only after planning and verifying) */
    if ((rc = cli_readable_file("run", "--inputs", fl.inputs)) || (rc = cli_readable_file("run", "--plan", fl.plan))) {
        tp_backend_free(be);
        return rc;
    }
    tp_error e;
    tp_graph *g;
    tp_status s = tp_graph_read_file(in, &g, &e);
    if (s) {
        tp_backend_free(be);
        return cli_fail(NULL, s, &e);
    }
    tp_plan_opts o;
    tp_plan_opts_init(&o, tp_graph_devices(g), 0);
    tp_memgraph *mg = NULL;
    tp_exec *x = NULL;
    tp_session *sess = NULL;
    tp_plan_evict *ev = NULL;
    cli_load_fn load = fl.zero_inputs ? load_zeros : load_file;
    if ((rc = cli_plan_opts("run", &fl.p, o.ndevices, &o))) goto done;
    if ((s = tp_backend_fits(be, o.ndevices, o.device_mem, 0, &e))) { /* before planning: arenas the machine cannot back */
        rc = cli_fail("run", s, &e);
        goto done;
    }
    int session = fl.x.repeat > 1; /* the cheap refusals first, before a strategy's MILP may solve */
    if (session && (rc = cli_keep_inputs("run", g))) goto done;
    if (fl.inputs && (rc = check_resident(g))) goto done;
    tp_chain_machine cm = {fl.b.opaque_rate, fl.b.link_gbps * 1e9, 0}; /* milp's chain: the run's rates */
    if ((rc = cli_plan_evictions("run", &fl.p, g, &o, &cm, &ev))) goto done;
    double t0 = tp_now_seconds();
    if (fl.plan) {
        if ((rc = load_plan(fl.plan, g, &o, &mg))) goto done;
    } else {
        if ((s = tp_plan(g, &o, &mg, &e))) {
            rc = cli_fail_file("run", in, s, &e);
            goto done;
        }
        tp_plan_stats st;
        tp_memgraph_stats(mg, &st);
        tp_plan_stats_print(&st, stdout);
    }
    if (!fl.no_verify) {
        /* a JSON plan file is verified as it is; a binary one (or a fresh plan) as its JSON */
        s = fl.plan && !tp_memgraph_file_is_binary(fl.plan) ? tp_verify_file(fl.plan, g, &e) : cli_verify(mg, g, &e);
        if (s == TP_ERR_CHECK) rc = fl.plan ? 2 : 3; /* a planner bug, or a --plan file that is not a plan for this graph */
        else if (!s) printf("plan verified\n");
    }
    tp_run_summary sum;
    if (!s) {
        printf("running on %s backend: %d device%s, %lld stream%s each, order %s\n", tp_backend_name(be), o.ndevices,
               o.ndevices > 1 ? "s" : "", fl.x.streams, fl.x.streams > 1 ? "s" : "", fl.x.order ? fl.x.order : "any");
        fflush(stdout);
        if (session) {
            s = cli_session_runs(g, &mg, &o, be, &fl.x, !fl.no_verify, load, (void *)fl.inputs, &sess, &x, &sum, &e);
            if (s == TP_ERR_CHECK) rc = 3;
        } else {
            s = cli_exec_open(mg, be, &fl.x, &sess, &x, &e); /* in a session when the plan has resident inputs */
            if (!s) s = load(x, (void *)fl.inputs, &e);
            if (!s) s = cli_exec_run(x, &fl.x, &sum, &e);
        }
        if (!s) tp_run_summary_print(&sum, stdout);
    }
    if (!s && fl.out) s = tp_exec_save_outputs(x, fl.out, &e);
    if (!s) printf("outputs: %s (%.3f s in all)\n", fl.out ? fl.out : "not written (no --out)", tp_now_seconds() - t0);
    if (s) rc = rc ? cli_errorf("run", rc, "%s", e.msg) : cli_fail("run", s, &e);
done:
    free(ev);
    tp_exec_free(x);
    tp_session_free(sess);
    tp_backend_free(be);
    tp_memgraph_free(mg);
    tp_graph_free(g);
    return rc;
}

const cli_cmd cmd_run = {"run", "plan, verify and execute a TaskGraph on the cpu or cuda backend", run, help};
