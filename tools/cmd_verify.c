/* cmd_verify.c - turnip verify: check a MemGraph against its TaskGraph. */
#include "cli.h"

typedef struct {
    const char *taskgraph;
} flags;

static const cli_opt opts[] = {
    CLI_O_STR("--taskgraph", "FILE", flags, taskgraph, "the TaskGraph the MemGraph was planned from (required)"),
    CLI_O_END,
};

static void help(FILE *f)
{
    cli_print_help(f,
                   "usage: turnip verify MEMGRAPH --taskgraph TASKGRAPH\n"
                   "\n"
                   "Checks every condition of a correct MemGraph: acyclic, regions within capacity, each\n"
                   "TaskGraph kernel and transfer present once reading its inputs (through offload/reload\n"
                   "chains), no read can see an overwritten region, overlapping writers are ordered, and\n"
                   "outputs are never overwritten. Prints the first violation.\n"
                   "\n",
                   opts, "exit: 0 valid, 1 invalid, 2 unusable input\n");
}

static int run(int argc, char **argv)
{
    flags fl = {0};
    const char *mgp;
    int npos, rc = cli_parse("verify", opts, &fl, argc, argv, 2, &mgp, 1, &npos, "MemGraph");
    if (rc) return rc;
    if (!npos) return cli_usage_error("verify", "no MemGraph given", NULL);
    if (!fl.taskgraph) return cli_usage_error("verify", "--taskgraph is required", NULL);
    if ((rc = cli_json_plan("verify", mgp))) return rc;
    tp_error e;
    tp_graph *g;
    tp_status s = tp_graph_read_file(fl.taskgraph, &g, &e);
    if (s) return cli_fail(NULL, s, &e);
    s = tp_verify_file(mgp, g, &e);
    tp_graph_free(g);
    if (s == TP_ERR_CHECK) {
        fputs("INVALID: ", stdout);
        cli_put_escaped(stdout, e.msg);
        putchar('\n');
        return cli_exit_code(s);
    }
    if (s) return cli_fail(NULL, s, &e);
    printf("valid: %s\n", mgp);
    return 0;
}

const cli_cmd cmd_verify = {"verify", "check a MemGraph against its TaskGraph", run, help};
