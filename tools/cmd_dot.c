/* cmd_dot.c - turnip dot: a MemGraph as Graphviz DOT. */
#include <stdlib.h>
#include "cli.h"

typedef struct {
    const char *out;
} flags;

static const cli_opt opts[] = {
    CLI_O_STR("-o|--output", "FILE", flags, out, "write the DOT there (default: standard output)"),
    CLI_O_END,
};

static void help(FILE *f)
{
    cli_print_help(f,
                   "usage: turnip dot MEMGRAPH [-o FILE]\n"
                   "\n"
                   "Writes Graphviz DOT: data dependencies solid, memory dependencies dashed red,\n"
                   "offload (red) and reload (green) vertices as boxes, one cluster per device.\n"
                   "Render with: dot -Tpng FILE -o plan.png\n"
                   "\n",
                   opts, NULL);
}

static int run(int argc, char **argv)
{
    flags fl = {0};
    const char *mgp;
    int npos, rc = cli_parse("dot", opts, &fl, argc, argv, 2, &mgp, 1, &npos, "MemGraph");
    if (rc) return rc;
    if (!npos) return cli_usage_error("dot", "no MemGraph given", NULL);
    cli_note_input("the MemGraph", mgp);
    if ((rc = cli_out_check("dot", "-o", fl.out))) return rc;
    if ((rc = cli_json_plan("dot", mgp))) return rc;
    char *text = NULL;
    size_t len = 0;
    tp_error e;
    tp_status s = tp_read_text_file(mgp, &text, &len, &e); /* before the output: a bad input writes nothing */
    if (s) return cli_fail(NULL, s, &e);
    cli_out out;
    if ((rc = cli_out_open("dot", fl.out, &out))) {
        free(text);
        return rc;
    }
    s = tp_dot_json(text, len, mgp, out.f, &e);
    free(text);
    return cli_out_finish("dot", &out, s, &e); /* a MemGraph that cannot be drawn leaves -o as it was */
}

const cli_cmd cmd_dot = {"dot", "draw a MemGraph as Graphviz DOT", run, help};
