/* cmd_plan.c - turnip plan: a TaskGraph into a MemGraph under memory caps. */
#include <string.h>
#include <stdlib.h>
#include "cli.h"

typedef struct {
    cli_plan_flags p;
    const char *out, *format;
    int stats;
} flags;

static const char *const format_names[] = {"json", "binary", NULL};

static const cli_opt opts[] = {
    CLI_O_DEVICE_MEM(flags, p, "device capacity (required): one size for all devices, or one per device"),
    CLI_O_HOST_MEM(flags, p),
    CLI_O_PLAN_ORDER("--order", flags, p),
    CLI_O_NO_SUM_INTO(flags, p),
    CLI_O_WEIGHT_OFFLOAD(flags, p),
    CLI_O_EVICT_BUDGET(flags, p),
    CLI_O_EXACT_WINDOWS(flags, p),
    CLI_O_STR("-o|--output", "FILE", flags, out, "write the MemGraph there (default: standard output)"),
    CLI_O_CHOICE("--format", "json|binary", flags, format, format_names,
                 "json (turnip.memgraph/1, the default) or binary (the same plan, smaller and faster\nto load; turnip run --plan reads either, turnip convert turns one into the other)"),
    CLI_O_SWITCH("--stats", flags, stats, "print plan statistics (to standard error when the MemGraph\n"
                 "goes to standard output); a device's peak is the memory the plan\n"
                 "occupies, which under a loose cap can exceed the unconstrained peak\n"
                 "(live values only): unused memory is taken before memory whose reuse\n"
                 "would add a dependency"),
    CLI_O_END,
};

static void help(FILE *f)
{
    cli_print_help(f,
                   "usage: turnip plan TASKGRAPH --device-mem SIZE[,SIZE...] [--host-mem SIZE]\n"
                   "                   [--order topo|dfs|greedy] [--no-sum-into] [--evict-budget N | --exact-windows]\n"
                   "                   [--weight-offload greedy|greedy-star|l2l|l2l-sync]\n"
                   "                   [-o MEMGRAPH] [--format json|binary] [--stats]\n"
                   "\n"
                   "Compiles TASKGRAPH (turnip.taskgraph/1 JSON) into a MemGraph (turnip.memgraph/1) that\n"
                   "fits each device in --device-mem (one size for all devices, or one per device),\n"
                   "adding offloads, reloads and memory dependencies so every execution order is race-free.\n"
                   "\n",
                   opts, NULL);
    fprintf(f, "\nThe default order is %s.\nexit: 0 planned, 2 unusable input or infeasible (the message names the vertex)\n",
            tp_order_name(TP_ORDER_DEFAULT));
}

/* statistics and memory bounds, to sf */
static void print_stats(FILE *sf, const tp_graph *g, const tp_memgraph *mg, const tp_plan_opts *o)
{
    tp_plan_stats st;
    tp_memgraph_stats_audit(mg, &st); /* asked for: the implied-dependency audit too */
    tp_plan_stats_print(&st, sf);
    uint64_t minf[TP_MAX_DEVICES], peak[TP_MAX_DEVICES];
    tp_error e;
    if (tp_plan_bounds(g, o->order, minf, peak, &e) == TP_OK) {
        char b1[32], b2[32];
        fprintf(sf, "order %s; per device smallest feasible capacity / unconstrained peak:", tp_order_name(o->order));
        for (int d = 0; d < o->ndevices; d++)
            fprintf(sf, " %s / %s%s", tp_format_size(minf[d], b1, sizeof b1), tp_format_size(peak[d], b2, sizeof b2),
                    d + 1 < o->ndevices ? "," : "\n");
    }
}

static int run(int argc, char **argv)
{
    flags fl = {0};
    const char *in;
    int npos, rc = cli_parse("plan", opts, &fl, argc, argv, 2, &in, 1, &npos, "TaskGraph");
    if (rc) return rc;
    if (!npos) return cli_usage_error("plan", "no TaskGraph given", NULL);
    cli_note_input("the TaskGraph", in);
    if ((rc = cli_out_check("plan", "-o", fl.out))) return rc;
    if (!fl.p.device_mem.n) return cli_usage_error("plan", "--device-mem is required", NULL);
    tp_error e;
    tp_graph *g;
    tp_status s = tp_graph_read_file(in, &g, &e);
    if (s) return cli_fail(NULL, s, &e);
    tp_plan_opts o;
    tp_plan_opts_init(&o, tp_graph_devices(g), 0);
    tp_memgraph *mg = NULL;
    tp_plan_evict *ev = NULL;
    if ((rc = cli_plan_opts("plan", &fl.p, o.ndevices, &o))) goto done;
    if ((rc = cli_plan_evictions("plan", &fl.p, g, &o, NULL, &ev))) goto done;
    if ((s = tp_plan(g, &o, &mg, &e))) {
        rc = cli_fail_file(NULL, in, s, &e);
        goto done;
    }
    cli_out out;
    if ((rc = cli_out_open("plan", fl.out, &out))) goto done;
    s = fl.format && !strcmp(fl.format, "binary") ? tp_memgraph_write_binary(mg, out.f, &e) : tp_memgraph_write(mg, out.f, &e);
    if ((rc = cli_out_finish("plan", &out, s, &e))) goto done;
    if (fl.stats) print_stats(cli_is_stdout(fl.out) ? stderr : stdout, g, mg, &o); /* the MemGraph went to standard output */
done:
    free(ev);
    tp_memgraph_free(mg);
    tp_graph_free(g);
    return rc;
}

const cli_cmd cmd_plan = {"plan", "compile a TaskGraph into a MemGraph under memory caps", run, help};
