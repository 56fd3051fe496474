/* cmd_dot.c - turnip dot: a MemGraph as Graphviz DOT. */
#include <stdlib.h>
#include "cli.h"

typedef struct {
    const char *out;
} flags;

static const cli_opt opts[] = {
    CLI_O_STR("-o", "FILE", flags, out, "write the DOT there (default: standard output)"),
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

/* the whole file into a new malloc'd buffer (*text, the caller's); 2 or 3 after printing why */
static int slurp(const char *path, char **text, size_t *len)
{
    FILE *rf = fopen(path, "rb");
    if (!rf) return cli_errorf("dot", 2, "%s: cannot open", path);
    fseek(rf, 0, SEEK_END);
    long sz = ftell(rf);
    fseek(rf, 0, SEEK_SET);
    *text = malloc((size_t)(sz > 0 ? sz : 0) + 1);
    *len = *text ? fread(*text, 1, (size_t)(sz > 0 ? sz : 0), rf) : 0;
    fclose(rf);
    return *text ? 0 : cli_errorf("dot", 3, "out of memory");
}

static int run(int argc, char **argv)
{
    flags fl = {0};
    const char *mgp;
    int npos, rc = cli_parse("dot", opts, &fl, argc, argv, 2, &mgp, 1, &npos, "MemGraph");
    if (rc) return rc;
    if (!npos) return cli_usage_error("dot", "no MemGraph given", NULL);
    char *text;
    size_t len;
    if ((rc = slurp(mgp, &text, &len))) return rc;
    FILE *f = fl.out ? fopen(fl.out, "w") : stdout;
    if (!f) {
        free(text);
        return cli_errorf("dot", 2, "cannot write %s", fl.out);
    }
    tp_error e;
    tp_status s = tp_dot_json(text, len, mgp, f, &e);
    free(text);
    if (fl.out && fclose(f) && !s) s = cli_set_error(&e, TP_ERR_IO, "writing %s failed", fl.out);
    return s ? cli_fail(NULL, s, &e) : 0;
}

const cli_cmd cmd_dot = {"dot", "draw a MemGraph as Graphviz DOT", run, help};
