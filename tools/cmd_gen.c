/* cmd_gen.c - turnip gen: a synthetic transformer-like TaskGraph (gen layered), or random
 * inputs for a TaskGraph (gen inputs). */
#include <string.h>
#include "cli.h"

typedef struct {
    long long devices, layers, heads, chunks, seq, head_dim, dtype_bytes;
    const char *out;
} layered_flags;

static const cli_opt layered_opts[] = {
    CLI_O_INT("--devices", "D", layered_flags, devices, 1, TP_MAX_DEVICES, "devices (default 2)"),
    CLI_O_INT("--layers", "L", layered_flags, layers, 1, INT_MAX, "layers (default 2)"),
    CLI_O_INT("--heads", "K", layered_flags, heads, 1, INT_MAX, "attention heads per device (default 4)"),
    CLI_O_INT("--chunks", "C", layered_flags, chunks, 1, INT_MAX, "MLP column chunks per device (default 2)"),
    CLI_O_INT("--seq", "T", layered_flags, seq, 1, LLONG_MAX, "tokens (default 512)"),
    CLI_O_INT("--head-dim", "E", layered_flags, head_dim, 1, LLONG_MAX, "head dimension (default 64)"),
    CLI_O_INT("--dtype-bytes", "B", layered_flags, dtype_bytes, 1, INT_MAX, "bytes per element (default 2)"),
    CLI_O_STR("-o", "FILE", layered_flags, out, "write the TaskGraph there (default: standard output)"),
    CLI_O_END,
};

typedef struct {
    long long seed, int_max;
    const char *out;
} inputs_flags;

static const cli_opt inputs_opts[] = {
    CLI_O_STR("-o", "FILE", inputs_flags, out, "the safetensors file to write (required)"),
    CLI_O_INT("--seed", "S", inputs_flags, seed, 0, LLONG_MAX, "seed (default 0)"),
    CLI_O_INT("--int-max", "N", inputs_flags, int_max, 1, 2147483648LL,
              "integers are uniform in [0, N) (default 10; at most 2^31, so every\nvalue fits an i32 input)"),
    CLI_O_END,
};

static void help(FILE *f)
{
    cli_print_help(f,
                   "usage: turnip gen layered [--devices D] [--layers L] [--heads K] [--chunks C]\n"
                   "                          [--seq T] [--head-dim E] [--dtype-bytes B] [-o TASKGRAPH]\n"
                   "\n"
                   "Writes a transformer-like TaskGraph of opaque kernels (sizes and flops only): per layer\n"
                   "and device, K attention heads as parallel lanes (q/k/v projections, T x T scores,\n"
                   "softmax, weighted sum, output projection) summed in a chain, then an MLP in C column\n"
                   "chunks; partial sums are reduced on device 0 and broadcast back. Hidden size is\n"
                   "D*K*E. Defaults: D=2 L=2 K=4 C=2 T=512 E=64 B=2.\n"
                   "\n",
                   layered_opts, NULL);
    cli_print_help(f,
                   "\n"
                   "usage: turnip gen inputs TASKGRAPH -o IN.safetensors [--seed S] [--int-max N]\n"
                   "\n"
                   "Writes a random tensor for every input of TASKGRAPH, named by id, in its dtype and shape:\n"
                   "floats from N(0, 0.5^2), integers uniform in [0, N) (default 10), bytes-only inputs as u8.\n"
                   "\n",
                   inputs_opts, NULL);
}

static int gen_inputs(int argc, char **argv)
{
    inputs_flags fl = {.int_max = 10};
    const char *tgp;
    int npos, rc = cli_parse("gen", inputs_opts, &fl, argc, argv, 3, &tgp, 1, &npos, "TaskGraph");
    if (rc) return rc;
    if (!npos || !fl.out) return cli_usage_error("gen", "gen inputs needs a TaskGraph and -o FILE", NULL);
    tp_error e;
    tp_graph *g;
    tp_status s = tp_graph_read_file(tgp, &g, &e);
    if (s) return cli_fail(NULL, s, &e); /* g was never made */
    s = tp_random_inputs(g, (uint64_t)fl.seed, fl.int_max, fl.out, &e);
    tp_graph_free(g);
    return s ? cli_fail(NULL, s, &e) : 0;
}

static int run(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[2], "inputs")) return gen_inputs(argc, argv);
    tp_layered_opts lo;
    tp_layered_opts_init(&lo);
    layered_flags fl = {lo.devices, lo.layers, lo.heads, lo.chunks, lo.seq, lo.head_dim, lo.dtype_bytes, NULL};
    const char *model;
    int npos, rc = cli_parse("gen", layered_opts, &fl, argc, argv, 2, &model, 1, &npos, NULL);
    if (rc) return rc;
    if (npos && strcmp(model, "layered")) return cli_usage_error("gen", "unknown argument", model);
    if (!npos) return cli_usage_error("gen", "name a model: layered", NULL);
    lo.devices = (int)fl.devices;
    lo.layers = (int)fl.layers;
    lo.heads = (int)fl.heads;
    lo.chunks = (int)fl.chunks;
    lo.seq = fl.seq;
    lo.head_dim = fl.head_dim;
    lo.dtype_bytes = (int)fl.dtype_bytes;
    tp_build_estimate est; /* refuse a graph the machine cannot hold before building it */
    tp_layered_estimate(&lo, &est);
    if ((rc = cli_refuse_host("gen", "", "the TaskGraph needs", est.graph_bytes, &est))) return rc;
    tp_error e;
    tp_graph *g;
    tp_status s = tp_model_layered(&lo, &g, &e);
    if (s) return cli_fail(NULL, s, &e);
    cli_out out;
    if ((rc = cli_out_open("gen", fl.out, &out))) {
        tp_graph_free(g);
        return rc;
    }
    s = tp_graph_write(g, out.f, &e);
    tp_graph_free(g);
    return cli_out_finish("gen", &out, s, &e);
}

const cli_cmd cmd_gen = {"gen", "write a synthetic transformer-like TaskGraph", run, help};
