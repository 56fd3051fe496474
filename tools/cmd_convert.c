/* cmd_convert.c - turnip convert: a MemGraph file from JSON to the binary format or back. The
 * direction is the input's (its first bytes say binary or not) unless --to says it; the
 * MemGraph's task names travel in both formats, so no TaskGraph is needed. */
#include <string.h>
#include "cli.h"

typedef struct {
    const char *to;
} flags;

static const char *const to_names[] = {"json", "binary", NULL};

static const cli_opt opts[] = {
    CLI_O_CHOICE("--to", "json|binary", flags, to, to_names, "the output's format (default: the other one than the input's)"),
    CLI_O_END,
};

static void help(FILE *f)
{
    cli_print_help(f,
                   "usage: turnip convert IN OUT [--to json|binary]\n"
                   "\n"
                   "Converts a MemGraph between turnip.memgraph/1 JSON and the binary format\n"
                   "(docs/formats.md): JSON -> binary -> JSON gives back the same bytes. IN is checked\n"
                   "as turnip run --plan checks a plan (counts, indices, regions), without a TaskGraph.\n"
                   "\n",
                   opts, "exit: 0 converted, 2 unusable input (the message names the place)\n");
}

static int run(int argc, char **argv)
{
    flags fl = {0};
    const char *pos[2];
    int npos, rc = cli_parse("convert", opts, &fl, argc, argv, 2, pos, 2, &npos, "file");
    if (!rc && npos) cli_note_input("the MemGraph", pos[0]);
    if (rc) return rc;
    if (npos != 2) return cli_usage_error("convert", "needs IN and OUT", NULL);
    if ((rc = cli_out_check("convert", "OUT", pos[1]))) return rc;
    int binary_out = fl.to ? !strcmp(fl.to, "binary") : !tp_memgraph_file_is_binary(pos[0]);
    tp_error e;
    tp_memgraph *mg = NULL;
    tp_graph *names = NULL;
    tp_status s = tp_memgraph_read_file(pos[0], NULL, &mg, &names, &e);
    if (s) return cli_fail(NULL, s, &e);
    cli_out out;
    if (!(rc = cli_out_open("convert", pos[1], &out))) {
        s = binary_out ? tp_memgraph_write_binary(mg, out.f, &e) : tp_memgraph_write(mg, out.f, &e);
        rc = cli_out_finish("convert", &out, s, &e);
    }
    tp_memgraph_free(mg);
    tp_graph_free(names);
    return rc;
}

const cli_cmd cmd_convert = {"convert", "convert a MemGraph between JSON and the binary format", run, help};
