/* cmd_gen.c - turnip gen: a synthetic transformer-like TaskGraph (gen layered), LLaMA graphs
 * from a config (gen llama: the batched prefill; gen decode: one layer or the head of a decode
 * step), or random inputs for a TaskGraph (gen inputs). */
#include <string.h>
#include "cli.h"

typedef struct {
    long long devices, layers, heads, chunks, seq, head_dim, dtype_bytes;
    const char *out;
    int backward;
} layered_flags;

static const cli_opt layered_opts[] = {
    CLI_O_INT("--devices", "D", layered_flags, devices, 1, TP_MAX_DEVICES, "devices (default 2)"),
    CLI_O_INT("--layers", "L", layered_flags, layers, 1, INT_MAX, "layers (default 2)"),
    CLI_O_INT("--heads", "K", layered_flags, heads, 1, INT_MAX, "attention heads per device (default 4)"),
    CLI_O_INT("--chunks", "C", layered_flags, chunks, 1, INT_MAX, "MLP column chunks per device (default 2)"),
    CLI_O_INT("--seq", "T", layered_flags, seq, 1, LLONG_MAX, "tokens (default 512)"),
    CLI_O_INT("--head-dim", "E", layered_flags, head_dim, 1, LLONG_MAX, "head dimension (default 64)"),
    CLI_O_INT("--dtype-bytes", "B", layered_flags, dtype_bytes, 1, INT_MAX, "bytes per element (default 2)"),
    CLI_O_SWITCH("--backward", layered_flags, backward, "training-shaped: then the layers in reverse, reading the\nactivations the forward pass saved"),
    CLI_O_STR("-o|--output", "FILE", layered_flags, out, "write the TaskGraph there (default: standard output)"),
    CLI_O_END,
};

typedef struct {
    long long seed, int_max;
    const char *out;
} inputs_flags;

static const cli_opt inputs_opts[] = {
    CLI_O_STR("-o|--output", "FILE", inputs_flags, out, "the safetensors file to write (required)"),
    CLI_O_INT("--seed", "S", inputs_flags, seed, 0, LLONG_MAX, "seed (default 0)"),
    CLI_O_INT("--int-max", "N", inputs_flags, int_max, 1, 2147483648LL,
              "integers are uniform in [0, N) (default 10; at most 2^31, so every\nvalue fits an i32 input)"),
    CLI_O_END,
};

typedef struct {
    const char *model, *preset, *out, *residual, *attention;
    long long seq, batch, devices, blocks, mlp_chunks, vocab_chunks, layer, pos, max_len, device;
    int kv_out, all_logits, head;
} llama_flags;

static const cli_opt llama_opts[] = {
    CLI_O_STR("--model", "DIR", llama_flags, model, "the model's config.json is DIR/config.json"),
    CLI_O_STR("--preset", "NAME", llama_flags, preset, "or a built-in shape: tiny, 7b, 13b, 65b, llama3-8b, llama2-70b"),
    CLI_O_INT("--batch", "B", llama_flags, batch, 1, TP_LLAMA_MAX_BATCH, "sequences (default 1)"),
    CLI_O_INT("--devices", "D", llama_flags, devices, 1, TP_MAX_DEVICES, "devices of the graph (default 1)"),
    CLI_O_INT("--vocab-chunks", "C", llama_flags, vocab_chunks, 1, 65536, "row chunks of lm_head (per device for llama; default 1)"),
    CLI_O_INT("--seq", "T", llama_flags, seq, 1, LLONG_MAX, "llama: prompt tokens of each sequence (required)"),
    CLI_O_SWITCH("--kv-out", llama_flags, kv_out, "llama: every layer's keys and values are outputs (kv.L.k.bB.gG, ...)"),
    CLI_O_SWITCH("--all-logits", llama_flags, all_logits, "llama: logits of every position, not just the last"),
    CLI_O_INT("--blocks", "N", llama_flags, blocks, 1, INT_MAX,
              "llama: query blocks (default: fused attention, blocks of at most 8192 rows;\n"
              "scores, 1; --residual scatter raises it as turnip llama does)"),
    CLI_O_ATTENTION(llama_flags, attention),
    CLI_O_INT("--mlp-chunks", "C", llama_flags, mlp_chunks, 1, INT_MAX, "llama: column chunks of each device's MLP (default 1)"),
    CLI_O_CHOICE("--residual", "gather|scatter", llama_flags, residual, cli_residual_names,
                 "llama: where the residual stream lives (see turnip llama --help)"),
    CLI_O_INT("--layer", "L", llama_flags, layer, 0, LLONG_MAX, "decode: the layer (default 0)"),
    CLI_O_SWITCH("--head", llama_flags, head, "decode: the final norm and lm_head instead of a layer"),
    CLI_O_INT("--pos", "P", llama_flags, pos, 0, LLONG_MAX, "decode: position of the new token (default 0)"),
    CLI_O_INT("--max-len", "M", llama_flags, max_len, 1, LLONG_MAX, "decode: positions the KV cache holds (default P + 1)"),
    CLI_O_INT("--device", "N", llama_flags, device, 0, TP_MAX_DEVICES - 1, "decode: the device every vertex is on (default 0)"),
    CLI_O_STR("-o|--output", "FILE", llama_flags, out, "write the TaskGraph there (default: standard output)"),
    CLI_O_END,
};

static void help(FILE *f)
{
    cli_print_help(f,
                   "usage: turnip gen layered [--devices D] [--layers L] [--heads K] [--chunks C]\n"
                   "                          [--seq T] [--head-dim E] [--dtype-bytes B] [--backward] [-o TASKGRAPH]\n"
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
    cli_print_help(f,
                   "\n"
                   "usage: turnip gen llama (--model DIR | --preset NAME) --seq T [--batch B] [--kv-out] [--all-logits]\n"
                   "                        [--devices D] [--blocks N] [--mlp-chunks C] [--vocab-chunks C]\n"
                   "                        [--residual gather|scatter] [--attention fused|scores] [-o TASKGRAPH]\n"
                   "       turnip gen decode (--model DIR | --preset NAME) [--layer L | --head] [--batch B] [--pos P]\n"
                   "                         [--max-len M] [--vocab-chunks C] [--devices D] [--device N] [-o TASKGRAPH]\n"
                   "\n"
                   "llama writes the LLaMA prefill TaskGraph of B prompts of T tokens (tp_llama_build: input_ids\n"
                   "i32 [B*T], logits f32 [B, vocab], weights named after the Hugging Face tensors, sliced).\n"
                   "decode writes one layer of one decode step with a KV cache (tp_llama_decode_layer: inputs x,\n"
                   "the layer's weights and the caches kv.L.k, kv.L.v [B, kv_heads, M, head_dim]; outputs x.out,\n"
                   "k_new, v_new) or with --head the final norm and lm_head (tp_llama_decode_head: logits).\n"
                   "Run them with turnip run and inputs by name (turnip gen inputs makes random ones).\n"
                   "\n",
                   llama_opts, NULL);
}

/* gen llama | gen decode */
static int gen_llama(int argc, char **argv, int decode)
{
    const char *cmd = decode ? "gen decode" : "gen llama";
    llama_flags fl = {.batch = 1, .devices = 1, .vocab_chunks = 1, .mlp_chunks = 1};
    int npos, rc = cli_parse("gen", llama_opts, &fl, argc, argv, 3, NULL, 0, &npos, NULL);
    if (rc) return rc;
    if (!fl.model == !fl.preset) return cli_usage_error("gen", "name one of --model DIR and --preset NAME", NULL);
    cli_note_model(fl.model);
    if ((rc = cli_out_check("gen", "-o", fl.out))) return rc;
    if (!decode && !fl.seq) return cli_usage_error("gen", "gen llama needs --seq T", NULL);
    /* the other mode's flags would be ignored: refused by name */
    const char *other = decode ? (fl.seq ? "--seq" : fl.kv_out ? "--kv-out" : fl.all_logits ? "--all-logits" : fl.blocks ? "--blocks"
                                  : fl.mlp_chunks != 1 ? "--mlp-chunks" : fl.residual ? "--residual" : fl.attention ? "--attention" : NULL)
                               : (fl.layer ? "--layer" : fl.head ? "--head" : fl.pos ? "--pos" : fl.max_len ? "--max-len"
                                  : fl.device ? "--device" : NULL);
    if (other) return cli_errorf("gen", 2, "%s is for gen %s, not %s", other, decode ? "llama" : "decode", cmd);
    if (decode && fl.head && fl.layer) return cli_usage_error("gen", "gen decode: give --layer L or --head, not both", NULL);
    tp_error e;
    tp_llama_config c;
    tp_status s = cli_llama_config(fl.model, fl.preset, &c, &e);
    if (s) return cli_fail("gen", s, &e);
    tp_graph *g = NULL;
    if (decode) {
        tp_llama_decode_opts o = {.devices = (int)fl.devices, .device = (int)fl.device, .layer = fl.layer, .batch = fl.batch,
                                  .pos = fl.pos, .max_len = fl.max_len ? fl.max_len : fl.pos < LLONG_MAX ? fl.pos + 1 : fl.pos,
                                  .vocab_chunks = (int)fl.vocab_chunks};
        s = fl.head ? tp_llama_decode_head(&c, &o, &g, &e) : tp_llama_decode_layer(&c, &o, &g, &e);
        if (!s && (s = tp_graph_finalize(g, &e))) tp_graph_free(g);
    } else {
        tp_llama_opts lo;
        tp_llama_opts_default(&lo, &c, (int)fl.devices, fl.seq, UINT64_MAX);
        tp_llama_opts_attention(&lo, &c, UINT64_MAX, cli_attention(fl.attention));
        lo.batch = fl.batch;
        lo.kv_out = fl.kv_out;
        lo.all_logits = fl.all_logits;
        tp_llama_opts_residual(&lo, cli_residual(fl.residual)); /* scatter: more blocks, as llama's */
        if (fl.blocks) lo.blocks = (int)fl.blocks;
        lo.mlp_chunks = (int)fl.mlp_chunks;
        lo.vocab_chunks = (int)fl.vocab_chunks;
        tp_build_estimate est; /* refuse a graph the machine cannot hold before building it */
        tp_llama_estimate(&c, &lo, &est);
        if ((rc = cli_refuse_host("gen", "", "the TaskGraph needs", est.graph_bytes, &est))) return rc;
        s = tp_llama_build(&c, &lo, &g, &e);
    }
    if (s) return cli_fail(cmd, s, &e);
    return cli_write_graph("gen", g, fl.out);
}

static int gen_inputs(int argc, char **argv)
{
    inputs_flags fl = {.int_max = 10};
    const char *tgp;
    int npos, rc = cli_parse("gen", inputs_opts, &fl, argc, argv, 3, &tgp, 1, &npos, "TaskGraph");
    if (rc) return rc;
    if (!npos || !fl.out) return cli_usage_error("gen", "gen inputs needs a TaskGraph and -o FILE", NULL);
    if (!strcmp(fl.out, "-")) return cli_errorf("gen", 2, "-o -: gen inputs writes a safetensors file, not standard output; name a file");
    cli_note_input("the TaskGraph", tgp);
    if ((rc = cli_writable_dir("gen", "-o", fl.out, 0))) return rc;
    tp_error e;
    tp_graph *g;
    tp_status s = tp_graph_read_file(tgp, &g, &e);
    if (s) return cli_fail("gen", s, &e); /* g was never made */
    double need = 0; /* every input is made in memory before the file is written */
    for (uint32_t v = 0; v < tp_graph_size(g); v++)
        if (tp_graph_vertex(g, v)->kind == TP_V_INPUT) need += (double)tp_graph_vertex(g, v)->bytes;
    if (need > (double)tp_host_mem_limit()) {
        char b1[32], b2[32];
        tp_graph_free(g);
        return cli_errorf("gen", 2, "gen inputs: the inputs need %s of host memory, more than the %s available",
                          cli_bytes_str(need, b1, sizeof b1), cli_bytes_str((double)tp_host_mem_limit(), b2, sizeof b2));
    }
    s = tp_random_inputs(g, (uint64_t)fl.seed, fl.int_max, fl.out, &e);
    tp_graph_free(g);
    return s ? cli_fail("gen", s, &e) : 0;
}

static int run(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[2], "inputs")) return gen_inputs(argc, argv);
    if (argc > 2 && (!strcmp(argv[2], "llama") || !strcmp(argv[2], "decode"))) return gen_llama(argc, argv, !strcmp(argv[2], "decode"));
    tp_layered_opts lo;
    tp_layered_opts_init(&lo);
    layered_flags fl = {lo.devices, lo.layers, lo.heads, lo.chunks, lo.seq, lo.head_dim, lo.dtype_bytes, NULL, 0};
    const char *model;
    int npos, rc = cli_parse("gen", layered_opts, &fl, argc, argv, 2, &model, 1, &npos, NULL);
    if (rc) return rc;
    if (npos && strcmp(model, "layered")) return cli_usage_error("gen", "unknown argument", model);
    if (!npos) return cli_usage_error("gen", "name a model: layered, llama, decode or inputs", NULL);
    if ((rc = cli_out_check("gen", "-o", fl.out))) return rc;
    lo.devices = (int)fl.devices;
    lo.layers = (int)fl.layers;
    lo.heads = (int)fl.heads;
    lo.chunks = (int)fl.chunks;
    lo.seq = fl.seq;
    lo.head_dim = fl.head_dim;
    lo.dtype_bytes = (int)fl.dtype_bytes;
    lo.backward = fl.backward;
    tp_build_estimate est; /* refuse a graph the machine cannot hold before building it */
    tp_layered_estimate(&lo, &est);
    if ((rc = cli_refuse_host("gen", "", "the TaskGraph needs", est.graph_bytes, &est))) return rc;
    tp_error e;
    tp_graph *g;
    tp_status s = tp_model_layered(&lo, &g, &e);
    if (s) return cli_fail("gen", s, &e);
    return cli_write_graph("gen", g, fl.out);
}

const cli_cmd cmd_gen = {"gen", "write a synthetic or LLaMA (prefill, decode) TaskGraph, or random inputs", run, help};
