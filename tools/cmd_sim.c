/* cmd_sim.c - turnip sim: a TaskGraph's plan run in simulated time on a machine profile. */
#include <stdlib.h>
#include "cli.h"

typedef struct {
    cli_plan_flags p;
    cli_exec_flags x;
    cli_backend_flags b;
    const char *machine;
} flags;

static const cli_opt opts[] = {
    CLI_O_STR("--machine", "NAME|FILE", flags, machine, "machine profile (required): profiles/NAME.json or a file"),
    CLI_O_DEVICE_MEM(flags, p, "device capacity: one size for all devices, or one per device\n(default: the machine's memory)"),
    CLI_O_HOST_MEM(flags, p),
    CLI_O_PLAN_ORDER("--plan-order", flags, p),
    CLI_O_NO_SUM_INTO(flags, p),
    CLI_O_WEIGHT_OFFLOAD(flags, p),
    CLI_O_MILP_TIME_LIMIT(flags, p),
    CLI_O_POLICY(flags, x),
    CLI_O_DETERMINISTIC(flags, x),
    CLI_O_SEED(flags, x),
    CLI_O_NUM("--jitter", "F", flags, b.jitter, 0, TP_SIM_JITTER_MAX, "kernel times and copy sizes x exp(F x N(0,1)), seeded by --seed"),
    CLI_O_STREAMS(flags, x),
    CLI_O_TRACE(flags, x),
    CLI_O_END,
};

static void help(FILE *f)
{
    cli_print_help(f,
                   "usage: turnip sim TASKGRAPH --machine NAME|FILE [--device-mem SIZE[,..]] [--host-mem SIZE]\n"
                   "                  [--plan-order topo|dfs|greedy] [--order any|fixed|random|priority] [--seed N] [--jitter F]\n"
                   "                  [--streams N] [--trace FILE] [--no-sum-into] [--deterministic]\n"
                   "                  [--weight-offload greedy|greedy-star|l2l|l2l-sync|milp [--milp-time-limit S]]\n"
                   "\n"
                   "Plans TASKGRAPH (capacities default to the machine's memory) and runs the plan on the sim\n"
                   "backend: virtual time from the profile's cost model (profiles/NAME.json: a100x8, p100x4, h100,\n"
                   "cpu-local: the cpu backend of the machine it was measured on),\n"
                   "the same executor and policies as the real backends. Prints the run summary with the makespan\n"
                   "over the lower bound, the larger of resources (busiest device's kernel time over its streams,\n"
                   "or busiest link's bytes / bandwidth) and the critical path (longest chain of dependencies,\n"
                   "each vertex at its time in this run without contention).\n"
                   "\n",
                   opts, NULL);
}

static int run(int argc, char **argv)
{
    flags fl = {.x = {.streams = 1, .fail_vertex = -1}};
    const char *in;
    int npos, rc = cli_parse("sim", opts, &fl, argc, argv, 2, &in, 1, &npos, "TaskGraph");
    if (rc) return rc;
    if (!npos) return cli_usage_error("sim", "no TaskGraph given", NULL);
    cli_note_input("the TaskGraph", in);
    cli_note_input("--machine", fl.machine);
    if (!fl.machine) return cli_usage_error("sim", "--machine is required", NULL);
    if ((rc = cli_writable_files("sim", "--trace", fl.x.trace, (char *)NULL))) return rc;
    tp_error e;
    tp_sim_profile prof;
    tp_status s = tp_sim_profile_read(fl.machine, &prof, &e);
    if (s) return cli_fail(NULL, s, &e);
    tp_graph *g;
    if ((s = tp_graph_read_file(in, &g, &e))) return cli_fail(NULL, s, &e);
    tp_plan_opts o;
    tp_plan_opts_init(&o, tp_graph_devices(g), prof.device_mem);
    rc = cli_plan_opts("sim", &fl.p, o.ndevices, &o);
    tp_backend *be = rc ? NULL : cli_sim_backend("sim", &prof, &fl.b, &rc);
    /* the machine holds the graph, before planning (the backend checks the plan again) */
    if (be && (s = tp_backend_fits(be, o.ndevices, o.device_mem, 0, &e))) rc = cli_fail("sim", s, &e);
    tp_plan_evict *ev = NULL;
    tp_chain_machine m = {0, 0, 0}; /* milp's chain: the sim's own rates (exact for offload-plan --sim-profile) */
    tp_sim_profile_rates(&prof, &m.flops_per_s, &m.beta);
    if (!rc) rc = cli_plan_evictions("sim", &fl.p, g, &o, &m, &ev);
    tp_memgraph *mg;
    if (!rc && (s = tp_plan(g, &o, &mg, &e))) rc = cli_fail_file(NULL, in, s, &e);
    else if (!rc) {
        tp_plan_stats st;
        tp_memgraph_stats(mg, &st);
        tp_plan_stats_print(&st, stdout);
        rc = cli_sim_run(NULL, mg, be, &prof, &fl.x);
        tp_memgraph_free(mg);
    }
    tp_backend_free(be);
    free(ev);
    tp_graph_free(g);
    return rc;
}

const cli_cmd cmd_sim = {"sim", "run a TaskGraph's plan in simulated time on a machine profile", run, help};
