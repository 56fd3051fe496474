/* cmd_offload_plan.c - turnip offload-plan: a weight-offload strategy for a training chain
 * (issue 14; docs/weight-offload.md): plans it, replays it through the independent checker
 * and prints what the checker measured. */
#include <math.h>
#include <string.h>
#include "cli.h"

typedef struct {
    const char *algo, *schedule, *taskgraph, *profile;
    int bound;
    double time_limit, flops;
} flags;

static const cli_opt opts[] = {
    CLI_O_CHOICE("--algo", "greedy|greedy-star|l2l|l2l-sync|milp", flags, algo, cli_weight_offload_names,
                 "greedy: Algorithm 1 and 2 with the discount (default); greedy-star: without it;\n"
                 "l2l: only the layer in use on the GPU, the next one prefetched;\n"
                 "l2l-sync: the same, each prefetch after the operation before it (a model of the\n"
                 "paper's L2L column);\n"
                 "milp: Algorithm 2 on the selection of the section 6 MILP's solution (GLPK; implies\n"
                 "--bound; the solver's time)"),
    CLI_O_STR("--schedule", "FILE", flags, schedule, "write the schedule there (turnip.offload-schedule/1 JSON)"),
    CLI_O_SWITCH("--bound", flags, bound, "also solve the MILP lower bound and print the makespan over it"),
    CLI_O_NUM("--time-limit", "S", flags, time_limit, 0.01, 86400,
              "the MILP solver's time limit in seconds (default 60); past it the solver's proven\n"
              "bound is printed with its gap"),
    CLI_O_STR("--taskgraph", "FILE", flags, taskgraph,
              "write the chain's steady-state iteration as a TaskGraph (turnip.taskgraph/1), in the\n"
              "start state of the schedule, for turnip plan and sim (with --weight-offload)"),
    CLI_O_STR("--sim-profile", "FILE", flags, profile,
              "write a one-device machine profile that replays the chain's times and link in turnip sim"),
    CLI_O_NUM("--flops", "R", flags, flops, TP_CHAIN_RATE_MIN, TP_CHAIN_RATE_MAX,
              "the TaskGraph's kernel flops per second of the chain's times, and the profile's\n"
              "peak (default 1e12)"),
    CLI_O_END,
};

static void help(FILE *f)
{
    cli_print_help(f,
                   "usage: turnip offload-plan CHAIN [--algo greedy|greedy-star|l2l|l2l-sync|milp] [--schedule FILE]\n"
                   "                          [--bound] [--time-limit S] [--taskgraph FILE] [--sim-profile FILE]\n"
                   "                          [--flops R]\n"
                   "\n"
                   "Plans which weights of a training chain (turnip.chain/1 JSON) leave the GPU and when\n"
                   "they move (shared/papers/weight-offloading-strategies.txt), checks the schedule\n"
                   "and prints its makespan, the compute sum (sum of uf + ub: no schedule is shorter),\n"
                   "their ratio, the bytes moved per iteration and the memory peak; with --bound (or\n"
                   "--algo milp) the MILP lower bound of the paper's section 6, its gap and time.\n"
                   "Greedy is the paper's choice; milp schedules the MILP's own selection, the better one\n"
                   "where the link is the bottleneck (docs/weight-offload.md, Table 1). A layer marked\n"
                   "\"frozen\": true (LoRA's base weights) has no gradient and is never written back.\n"
                   "With --taskgraph and --sim-profile, the chain inside turnip: plan and simulate it with\n"
                   "  turnip sim FILE --machine PROFILE --plan-order topo [--weight-offload greedy]\n"
                   "(docs/weight-offload.md \"Inside turnip\").\n"
                   "\n",
                   opts, "exit: 0 planned, 2 unusable input or no schedule fits, 3 internal failure\n");
}

/* the bound's lines: bound, bound over the compute sum, the solver's incumbent, gap and time */
static void print_bound(const tp_chain_bound_result *b, double compute)
{
    printf("bound %.9g s (%s)\nbound/compute %.6f\n", b->bound, b->optimal ? "proved optimal" : "time limit: the solver's proven bound",
           compute > 0 ? b->bound / compute : 1.0);
    if (isfinite(b->incumbent)) printf("incumbent %.9g s\n", b->incumbent);
    else printf("incumbent none (the solver found no schedule within the time limit)\n");
    printf("gap %.6f\nsolver %s, %.3f s\n", b->gap, b->solver, b->seconds);
}

/* the schedule as turnip.offload-schedule/1 JSON */
static int write_schedule(const tp_offload_schedule *sc, const char *path)
{
    cli_out out;
    int rc = cli_out_open("offload-plan", path, &out);
    if (rc) return rc;
    tp_error e;
    tp_status s = tp_offload_schedule_write(sc, out.f, &e);
    return cli_out_finish("offload-plan", &out, s, &e);
}

/* the chain's iteration as a TaskGraph, in the start state of sc */
static int write_taskgraph(const tp_chain *c, const tp_offload_schedule *sc, double flops, const char *path)
{
    tp_error e;
    tp_graph *g;
    tp_status s = tp_chain_taskgraph(c, flops, sc, &g, &e);
    return s ? cli_fail("offload-plan", s, &e) : cli_write_graph("offload-plan", g, path);
}

/* a one-device machine whose kernel time is flops / rate exactly and whose link is beta each way */
static int write_profile(const tp_chain *c, double flops, const char *path)
{
    cli_out out;
    int rc = cli_out_open("offload-plan", path, &out);
    if (rc) return rc;
    fprintf(out.f,
            "{\"name\": \"chain\", \"comment\": \"turnip offload-plan --sim-profile: a training chain's machine\",\n"
            " \"devices\": 1,\n \"device_mem\": %llu,\n \"peak_flops\": %.17g,\n \"efficiency\": 1,\n"
            " \"mem_bw\": 1e18,\n \"launch_s\": 0,\n \"h2d_bw\": %.17g,\n \"d2h_bw\": %.17g,\n \"peer_bw\": %.17g,\n"
            " \"copy_latency_s\": 0}\n",
            (unsigned long long)c->mgpu, flops, c->beta, c->beta, c->beta);
    return cli_out_finish("offload-plan", &out, TP_OK, NULL); /* closing checks the stream */
}

static int run(int argc, char **argv)
{
    flags fl = {0};
    fl.time_limit = -1; /* not given: 60 s, once it is known a solver runs */
    const char *path;
    int npos, rc = cli_parse("offload-plan", opts, &fl, argc, argv, 2, &path, 1, &npos, "chain");
    if (rc) return rc;
    if (!npos) return cli_usage_error("offload-plan", "no chain given", NULL);
    cli_note_input("the chain", path);
    if ((rc = cli_writable_files("offload-plan", "--schedule", fl.schedule, "--taskgraph", fl.taskgraph, "--sim-profile", fl.profile,
                                 (char *)NULL)))
        return rc;
    if (fl.flops && !fl.taskgraph && !fl.profile)
        return cli_usage_error("offload-plan", "--flops is for --taskgraph and --sim-profile", NULL);
    if (!fl.flops) fl.flops = 1e12;
    tp_offload_algo algo = cli_offload_algo(fl.algo);
    if (algo == TP_OFFLOAD_MILP) fl.bound = 1;
    if (fl.time_limit >= 0 && !fl.bound) return cli_usage_error("offload-plan", "--time-limit is the solver's: it needs --bound or --algo milp", NULL);
    if (fl.time_limit < 0) fl.time_limit = 60;
    tp_error e;
    tp_chain *c;
    tp_status s = tp_chain_read_file(path, &c, &e);
    if (s) return cli_fail("offload-plan", s, &e);
    tp_chain_bound_result b = {0};
    tp_offload_schedule *sc = NULL;
    tp_offload_report r;
    if (algo == TP_OFFLOAD_MILP) {
        s = tp_offload_plan_milp(c, fl.time_limit, &sc, &b, &e); /* the bound comes with it */
    } else {
        if (fl.bound) s = tp_chain_bound(c, fl.time_limit, &b, &e);
        if (!s) s = tp_offload_plan(c, algo, &sc, &e);
    }
    if (s) goto failed;
    if (tp_offload_check(c, sc, &r, &e)) { /* a schedule the checker refuses is a bug in the scheduler */
        rc = cli_errorf("offload-plan", 3, "internal error: the schedule fails the check: %s", e.msg);
        goto done;
    }
    if (fl.schedule && (rc = write_schedule(sc, fl.schedule))) goto done;
    if (fl.taskgraph && (rc = write_taskgraph(c, sc, fl.flops, fl.taskgraph))) goto done;
    if (fl.profile && (rc = write_profile(c, fl.flops, fl.profile))) goto done;
    char pb[64];
    printf("algo %s\nmakespan %.9g s\ncompute %.9g s\nratio %.6f\nmoved %llu bytes\npeak %llu bytes (%s)\n",
           fl.algo ? fl.algo : "greedy", r.makespan, r.compute, r.compute > 0 ? r.makespan / r.compute : 1.0,
           (unsigned long long)r.bytes_moved, (unsigned long long)r.peak, cli_bytes_str((double)r.peak, pb, sizeof pb));
    uint32_t nfrozen = 0;
    for (uint32_t k = 0; k < c->layers; k++) nfrozen += (uint32_t)tp_chain_frozen(c, k);
    if (nfrozen) printf("frozen %u of %u layers\n", nfrozen, c->layers);
    if (fl.bound) {
        print_bound(&b, r.compute);
        printf("makespan/bound %.6f\n", b.bound > 0 ? r.makespan / b.bound : 1.0);
    }
    goto done;
failed:
    if (s == TP_ERR_ARG) s = TP_ERR_INVALID; /* too many layers: the input, not the call */
    rc = cli_fail_file("offload-plan", path, s, &e);
done:
    tp_chain_free(c);
    tp_offload_schedule_free(sc);
    return rc;
}

const cli_cmd cmd_offload_plan = {"offload-plan", "plan weight offloading for a training chain", run, help};
