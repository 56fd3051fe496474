/* cmd_llama.c - turnip llama: LLaMA prefill from a Hugging Face checkpoint (or a preset) under a
 * memory cap, on the cpu, cuda or sim backend, or a simulated sweep over prompt lengths. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "turnip/app.h"

typedef struct {
    cli_plan_flags p;
    cli_exec_flags x;
    cli_backend_flags b;
    const char *model, *preset, *prompt_ids, *out, *machine, *sweep_seq, *csv, *png, *residual, *attention;
    long long seq_len, devices, blocks, mlp_chunks, vocab_chunks;
    cli_sizes sweep_mem;
    int all_logits, no_data, print_prompt;
} flags;

static const cli_opt opts[] = {
    CLI_O_STR("--model", "DIR", flags, model,
              "config.json and model.safetensors (or shards with model.safetensors.index.json)"),
    CLI_O_STR("--preset", "NAME", flags, preset, "tiny, 7b, 13b, 65b, llama3-8b, llama2-70b: random weights made in-process"),
    CLI_O_STR("--prompt-ids", "1,2,3", flags, prompt_ids, "the prompt's token ids"),
    CLI_O_INT("--seq-len", "N", flags, seq_len, 1, LLONG_MAX,
              "a random prompt of N tokens, uniform over the vocabulary, a function of\n"
              "--seed and the position (tp_llama_random_prompt; --print-prompt shows it)"),
    CLI_O_INT("--seed", "S", flags, x.seed, 0, LLONG_MAX, "seed of the prompt, the preset's weights, the random order and the jitter"),
    CLI_O_SWITCH("--print-prompt", flags, print_prompt, "print the prompt's ids (\"prompt ids: 1,2,3\") before planning"),
    CLI_O_DEVICE_MEM(flags, p, "device capacity (required, but for --backend sim: the machine's): one\nsize for all devices, or one per device"),
    CLI_O_HOST_MEM(flags, p),
    CLI_O_INT("--devices", "D", flags, devices, 1, TP_MAX_DEVICES, "devices the model is split over (default 1)"),
    CLI_O_INT("--blocks", "B", flags, blocks, 0, INT_MAX,
              "query blocks (default: fused attention, blocks of at most 8192 rows and\n"
              "one block of the residual stream at most 1/64 of the cap; scores, enough that\n"
              "one head's scores use ~1/16 of the cap; more than the prompt's tokens are cut\n"
              "to them)"),
    CLI_O_ATTENTION(flags, attention),
    CLI_O_INT("--mlp-chunks", "C", flags, mlp_chunks, 0, INT_MAX,
              "column chunks of each device's MLP (default: enough that one weight chunk\nis at most 1/8 of the cap)"),
    CLI_O_INT("--vocab-chunks", "C", flags, vocab_chunks, 0, INT_MAX, "row chunks of each device's vocabulary (default: as --mlp-chunks)"),
    CLI_O_CHOICE("--residual", "gather|scatter", flags, residual, cli_residual_names,
              "where the residual stream lives: gather (default: on device 0, the devices'\n"
              "partial sums gathered there) or scatter (row slices on every device: partial\n"
              "sums reduce-scattered, normed rows all-gathered; no link carries O(D) blocks).\n"
              "scatter also raises the blocks to min(D, tokens / 1024) unless --blocks is given,\n"
              "and plans in the builder's order (topo) unless --plan-order is given"),
    CLI_O_STR("--out", "FILE", flags, out, "write the logits there (safetensors)"),
    CLI_O_SWITCH("--all-logits", flags, all_logits, "logits of every position, not just the last"),
    CLI_O_TRACE(flags, x),
    CLI_O_POLICY(flags, x),
    CLI_O_PLAN_ORDER("--plan-order", flags, p),
    CLI_O_DETERMINISTIC(flags, x),
    CLI_O_NO_SUM_INTO(flags, p),
    CLI_O_STREAMS(flags, x),
    CLI_O_LINK_BANDWIDTH(flags, b, "cpu: throttle host-device and peer copies"),
    CLI_O_JITTER(flags, b),
    CLI_O_SWITCH("--no-data", flags, no_data, "plan only (for the big presets): graph sizes and plan statistics"),
    CLI_O_INT("--repeat", "N", flags, x.repeat, 1, LLONG_MAX,
              "N runs in one session: what fits of the weights stays on the devices from one\n"
              "run to the next (each run prints the bytes it moved), print each makespan and the best"),
    CLI_O_STR("--backend", "cpu|cuda|sim", flags, b.name,
              "cuda: run on GPUs (see turnip run --help); sim: simulate instead: latency,\n"
              "bytes moved, makespan over the lower bound"),
    CLI_O_CHOICE("--completion", "MODE", flags, b.completion, cli_completion_names, "cuda: callback or poll (see turnip run --help)"),
    CLI_O_CHOICE("--matmul", "MODE", flags, b.matmul, cli_matmul_names, "cuda: fast (default) or exact (see turnip run --help)"),
    CLI_O_STR("--machine", "NAME", flags, machine,
              "sim: profiles/NAME.json (default a100x8); --device-mem defaults to its memory"),
    CLI_O_STR("--sweep-seq", "1024,2048,..", flags, sweep_seq,
              "with --backend sim: one simulated point per prompt length (and cap), OOM\n"
              "where no plan fits, into --csv"),
    CLI_O_SIZES("--sweep-mem", "SIZE,..", flags, sweep_mem, "the caps of the sweep (default: --device-mem or the machine's)"),
    CLI_O_STR("--csv", "FILE", flags, csv, "the sweep's CSV (required with --sweep-seq)"),
    CLI_O_STR("--png", "FILE", flags, png, "plot the sweep's latency against length there with gnuplot"),
    CLI_O_END,
};

static void help(FILE *f)
{
    cli_print_help(
        f,
        "usage: turnip llama (--model DIR | --preset NAME) (--prompt-ids 1,2,3 | --seq-len N [--seed S])\n"
        "                    --device-mem SIZE[,..] [--devices D] [--backend cpu|cuda|sim] [--blocks B] [--mlp-chunks C] [--vocab-chunks C]\n"
        "                    [--host-mem SIZE]\n"
        "                    [--out logits.safetensors] [--all-logits] [--trace FILE] [--order POLICY]\n"
        "                    [--streams N] [--link-bandwidth GB/s] [--jitter F] [--no-data] [--repeat N] [--print-prompt]\n"
        "                    [--deterministic] [--no-sum-into] [--residual gather|scatter] [--attention fused|scores]\n"
        "                    [--plan-order topo|dfs|greedy]\n"
        "       turnip llama (--model DIR | --preset NAME) --backend sim [--machine NAME] [--devices D] [--residual R] [--attention A]\n"
        "                    --sweep-seq 1024,2048,.. [--sweep-mem SIZE,..] --csv FILE [--png FILE]\n"
        "\n"
        "Builds the prefill TaskGraph of a LLaMA model (Hugging Face semantics: RMSNorm, RoPE,\n"
        "grouped-query causal attention, SwiGLU MLP) for the prompt, split over D devices (KV groups,\n"
        "or query heads when D exceeds them, MLP columns and vocabulary per device), with attention in\n"
        "B query blocks; plans it under the\n"
        "cap (fused attention and scatter in the builder's order, topo, unless --plan-order is given)\n"
        "and runs it on the cpu backend (or --backend cuda: NVIDIA GPUs). Prints plan statistics,\n"
        "the run summary and the top-5 next-token ids.\n"
        "\n",
        opts, NULL);
}

/* "1,2,3" into a new array (the caller frees) of *n numbers in [lo, hi]; NULL with *bad the
 * index of the first that is not one (or -1: out of memory) */
static int64_t *parse_list(const char *text, int64_t lo, int64_t hi, int64_t *n, int64_t *bad, const char **badp)
{
    *n = 1;
    for (const char *p = text; *p; p++) *n += *p == ',';
    int64_t *v = malloc(sizeof *v * (size_t)*n);
    *bad = -1;
    if (!v) return NULL;
    const char *p = text;
    for (int64_t k = 0; k < *n; k++) {
        char *end;
        errno = 0;
        long long x = strtoll(p, &end, 10);
        if (end == p || errno || x < lo || x > hi || (*end && *end != ',')) {
            free(v);
            *bad = k;
            *badp = p;
            return NULL;
        }
        v[k] = x;
        p = *end ? end + 1 : end;
    }
    return v;
}

/* the ids of "1,2,3" into a new array (*ids, the caller's); 0 or the exit code after printing why */
static int parse_prompt(const char *text, int64_t vocab, int32_t **ids, int64_t *T)
{
    const char *badp;
    int64_t bad, *v = parse_list(text, 0, vocab - 1, T, &bad, &badp);
    if (!v && bad < 0) return cli_errorf("llama", 3, "out of memory");
    if (!v) {
        char want[64];
        snprintf(want, sizeof want, "a token id in [0, %lld)", (long long)vocab);
        return cli_bad_item("llama", "--prompt-ids", badp, bad, want);
    }
    if (!(*ids = malloc(sizeof **ids * (size_t)*T))) {
        free(v);
        return cli_errorf("llama", 3, "out of memory");
    }
    for (int64_t k = 0; k < *T; k++) (*ids)[k] = (int32_t)v[k]; /* vocab <= 2^31: fits */
    free(v);
    return 0;
}

/* Refuses (exit 2, the numbers in one line) a build the machine cannot hold, before building:
 * the TaskGraph and its plan against the host memory left (tp_host_mem_limit), and the first
 * embedding, whose [T, hidden] output grows with the prompt, against device 0's capacity
 * `cap`. `what` names the prompt in the message ("" or "--sweep-seq 64: "). */
static int check_build(const tp_llama_config *c, const tp_llama_opts *lo, uint64_t cap, const char *what)
{
    tp_build_estimate est;
    tp_llama_estimate(c, lo, &est);
    int rc = cli_refuse_host("llama", what, "the TaskGraph and its plan need", est.plan_bytes, &est);
    if (rc) return rc;
    char b1[32], b2[32];
    if (est.vertex && est.vertex_bytes > (double)cap)
        return cli_errorf("llama", 2, "%svertex '%s' needs %s of inputs and output on device %d, more than the capacity %s", what,
                          est.vertex, cli_bytes_str(est.vertex_bytes, b1, sizeof b1), est.device, cli_bytes_str((double)cap, b2, sizeof b2));
    if (lo->seq > TP_LLAMA_MAX_SEQ)
        return cli_errorf("llama", 2, "%s%lld tokens, at most %lld", what, (long long)lo->seq, (long long)TP_LLAMA_MAX_SEQ);
    return 0;
}

/* --backend sim --sweep-seq: one simulated point per length and cap, a CSV and a plot */
static int sweep(const flags *fl, const char *label)
{
    if (!fl->b.name || strcmp(fl->b.name, "sim")) return cli_usage_error("llama", "--sweep-seq needs --backend sim", NULL);
    if (!fl->csv) return cli_usage_error("llama", "--sweep-seq needs --csv FILE", NULL);
    if (!fl->sweep_mem.n && fl->p.device_mem.n > 1) /* a list here would be every device's caps, not points */
        return cli_usage_error("llama", "--sweep-seq takes one --device-mem (every device's cap); give the caps to sweep with --sweep-mem", NULL);
    int rc = cli_writable_files("llama", "--csv", fl->csv, "--png", fl->png, (char *)NULL);
    if (rc) return rc;
    tp_error e;
    tp_llama_config c;
    tp_sim_profile prof;
    tp_status s = cli_llama_config(fl->model, fl->preset, &c, &e);
    if (!s) s = tp_sim_profile_read(fl->machine, &prof, &e);
    if (s) return cli_fail("llama", s, &e);
    const char *badp;
    int64_t nseq64, bad, *seqs = parse_list(fl->sweep_seq, 1, INT64_MAX, &nseq64, &bad, &badp); /* sizes: check_build */
    if (!seqs && bad < 0) return cli_errorf("llama", 3, "out of memory");
    if (!seqs) return cli_bad_item("llama", "--sweep-seq", badp, bad, "a token count (a comma-separated list of them)");
    int nseq = (int)nseq64; /* at most one per character of an argument */
    const cli_sizes *ms = fl->sweep_mem.n ? &fl->sweep_mem : &fl->p.device_mem;
    for (int k = 0; k < nseq; k++) /* every point fits the machine, before any runs */
        for (int m = 0; m < (ms->n ? ms->n : 1); m++) {
            uint64_t mem = ms->n ? ms->v[m] : prof.device_mem;
            tp_llama_opts lo;
            char what[64];
            tp_llama_opts_default(&lo, &c, (int)fl->devices, seqs[k], mem);
            tp_llama_opts_attention(&lo, &c, mem, cli_attention(fl->attention));
            tp_llama_opts_residual(&lo, cli_residual(fl->residual));
            snprintf(what, sizeof what, "--sweep-seq %lld: ", (long long)seqs[k]);
            int r = check_build(&c, &lo, UINT64_MAX, what); /* a cap too small is a point of the sweep (OOM) */
            if (r) {
                free(seqs);
                return r;
            }
        }
    tp_sweep_opts so = {.model = label, .machine = prof.name, .config = &c, .devices = (int)fl->devices,
                        .residual = cli_residual(fl->residual), .attention = cli_attention(fl->attention), .seqs = seqs,
                        .nseqs = nseq, .mems = ms->n ? ms->v : &prof.device_mem, .nmems = ms->n ? ms->n : 1, .log = stdout};
    cli_exec_flags xf = fl->x;
    xf.streams = 1; /* as ever: the sweep's runs use one stream */
    cli_run_opts(&xf, &so.run);
    cli_out csv; /* whole or not at all */
    if ((rc = cli_out_open("llama", fl->csv, &csv))) {
        free(seqs);
        return rc;
    }
    if (!(so.backend = cli_sim_backend("llama", &prof, &fl->b, &rc))) { /* the profile read above, once */
        cli_out_close("llama", &csv, 0);
        free(seqs);
        return rc;
    }
    s = tp_sweep_llama(&so, csv.f, &e);
    rc = s ? cli_fail("llama", s, &e) : 0;
    int wrc = cli_out_close("llama", &csv, !s);
    rc = rc ? rc : wrc;
    if (!rc) printf("wrote %s\n", fl->csv);
    if (!rc && fl->png) {
        if ((s = tp_sweep_plot(&so, fl->csv, fl->png, &e))) rc = cli_fail("llama", s, &e);
        else printf("wrote %s\n", fl->png);
    }
    tp_backend_free(so.backend);
    free(seqs);
    return rc;
}

/* prints the plan's sizes, statistics and memory bounds */
static void print_plan(const tp_graph *g, const tp_memgraph *mg, const tp_plan_opts *o)
{
    tp_plan_stats st;
    tp_memgraph_stats(mg, &st);
    tp_graph_counts n;
    tp_count_memgraph(mg, &n);
    printf("MemGraph: %llu non-input vertices, %llu input vertices, %llu edges\n", (unsigned long long)(n.vertices - n.inputs),
           (unsigned long long)n.inputs, (unsigned long long)n.edges);
    tp_plan_stats_print(&st, stdout);
    uint64_t minf[TP_MAX_DEVICES], peak[TP_MAX_DEVICES];
    tp_error e;
    if (tp_plan_bounds(g, o->order, minf, peak, &e) == TP_OK) {
        char c1[32], c2[32];
        printf("bytes per device, smallest feasible capacity / unconstrained peak:");
        for (int d = 0; d < o->ndevices; d++)
            printf(" %llu / %llu (%s / %s)%s", (unsigned long long)minf[d], (unsigned long long)peak[d],
                   tp_format_size(minf[d], c1, sizeof c1), tp_format_size(peak[d], c2, sizeof c2), d + 1 < o->ndevices ? "," : "\n");
    }
}

/* prints the 5 likeliest next tokens from the last row of the logits */
static tp_status print_next_tokens(tp_exec *x, const tp_memgraph *mg, int64_t vocab, tp_error *e)
{
    tp_mvertex lv;
    tp_memgraph_vertex(mg, tp_memgraph_outputs(mg)[0], &lv);
    float *lg = malloc(lv.write.bytes);
    if (!lg) return cli_set_error(e, TP_ERR_NOMEM, "out of memory reading the logits");
    tp_status s = tp_exec_read(x, &lv.write, lg, e);
    if (!s) {
        const float *last = lg + (lv.write.bytes / 4 - (uint64_t)vocab);
        int32_t top[5];
        int n = tp_llama_top_k(last, vocab, 5, top);
        printf("next token, top 5 (id: logit):");
        for (int j = 0; j < n; j++) printf(" %d: %.4f%s", (int)top[j], last[top[j]], j + 1 < n ? "," : "\n");
    }
    free(lg);
    return s;
}

/* the weights and prompt of a run: from the checkpoint, or the preset's random weights */
typedef struct {
    const tp_llama_config *c;
    const char *model;
    const int32_t *ids;
    uint64_t seed;
} loader;

static tp_status load(tp_exec *x, void *ctx, tp_error *e)
{
    const loader *l = ctx;
    return l->model ? tp_llama_load(x, l->c, l->model, l->ids, e) : tp_llama_random(x, l->c, l->seed, l->ids, e);
}

static int run(int argc, char **argv)
{
    flags fl = {.x = {.streams = 1, .fail_vertex = -1, .repeat = 1}, .devices = 1};
    int npos, rc = cli_parse("llama", opts, &fl, argc, argv, 2, NULL, 0, &npos, NULL);
    if (rc) return rc;
    if (!fl.model == !fl.preset) return cli_usage_error("llama", "give one of --model DIR and --preset NAME", NULL);
    cli_note_model(fl.model);
    if ((rc = cli_backend_known("llama", fl.b.name))) return rc;
    const char *label = fl.model ? fl.model : fl.preset;
    if (!fl.machine) fl.machine = "a100x8"; /* the default machine of --backend sim */
    if (fl.sweep_seq) { /* a sweep writes --csv (and --png) and prints its points; a single run's flags do nothing there */
        const char *bad = fl.out ? "--out" : fl.x.trace ? "--trace" : fl.prompt_ids ? "--prompt-ids" : fl.seq_len ? "--seq-len"
                        : fl.x.repeat > 1 ? "--repeat" : fl.no_data ? "--no-data" : NULL;
        if (bad) return cli_errorf("llama", 2, "%s does not apply to a sweep (--sweep-seq gives the lengths; it writes --csv and --png)", bad);
        return sweep(&fl, label);
    }
    if (fl.csv || fl.png || fl.sweep_mem.n) /* the sweep's outputs and caps, given without a sweep */
        return cli_usage_error("llama", fl.csv ? "--csv needs --sweep-seq" : fl.png ? "--png needs --sweep-seq" : "--sweep-mem needs --sweep-seq",
                               NULL);
    if (!fl.prompt_ids == !fl.seq_len) return cli_usage_error("llama", "give one of --prompt-ids and --seq-len", NULL);
    int use_sim = fl.b.name && !strcmp(fl.b.name, "sim");
    if (fl.out && (use_sim || fl.no_data))
        return cli_usage_error("llama", use_sim ? "--out needs data: not with --backend sim" : "--out needs data: not with --no-data",
                               NULL);
    if (fl.x.trace && fl.no_data) return cli_usage_error("llama", "--trace needs a run: not with --no-data", NULL);
    if (fl.x.repeat > 1 && (use_sim || fl.no_data))
        return cli_usage_error("llama", use_sim ? "--repeat is for a real run: a simulated run is the same every time" : "--repeat needs a run: not with --no-data",
                               NULL);
    /* an output that cannot be written is refused before any work */
    if ((rc = cli_writable_files("llama", "--out", fl.out, "--trace", fl.x.trace, (char *)NULL))) return rc;
    tp_sim_profile prof;
    tp_error e;
    tp_status s = TP_OK;
    if (use_sim && (s = tp_sim_profile_read(fl.machine, &prof, &e))) return cli_fail("llama", s, &e);
    if (!use_sim && !fl.p.device_mem.n) return cli_usage_error("llama", "--device-mem is required", NULL);
    tp_backend *be = NULL;
    if (!fl.no_data && !(be = use_sim ? cli_sim_backend("llama", &prof, &fl.b, &rc) : cli_backend("llama", &fl.b, &rc)))
        return rc; /* a missing GPU before any work */
    tp_llama_config c;
    if ((s = cli_llama_config(fl.model, fl.preset, &c, &e))) {
        tp_backend_free(be);
        return cli_fail("llama", s, &e);
    }
    /* the prompt: its length first, the random one made once the build is known to fit */
    int64_t T = fl.seq_len;
    int32_t *ids = NULL;
    tp_graph *g = NULL;
    tp_memgraph *mg = NULL;
    tp_exec *x = NULL;
    tp_session *sess = NULL;
    if (fl.prompt_ids) rc = parse_prompt(fl.prompt_ids, c.vocab, &ids, &T);
    tp_plan_opts o;
    tp_plan_opts_init(&o, (int)fl.devices, use_sim ? prof.device_mem : 0);
    if (rc || (rc = cli_plan_opts("llama", &fl.p, o.ndevices, &o))) goto done;
    uint64_t mincap = o.device_mem[0];
    for (int d = 1; d < o.ndevices; d++) mincap = o.device_mem[d] < mincap ? o.device_mem[d] : mincap;
    tp_llama_opts lo;
    tp_llama_opts_default(&lo, &c, o.ndevices, T, mincap);
    tp_llama_opts_attention(&lo, &c, mincap, cli_attention(fl.attention));
    tp_llama_opts_residual(&lo, cli_residual(fl.residual));
    if (!fl.p.order) o.order = tp_llama_plan_order(&lo);
    if (fl.blocks) lo.blocks = (int)(fl.blocks > T ? T : fl.blocks);
    if (fl.mlp_chunks) lo.mlp_chunks = (int)fl.mlp_chunks;
    if (fl.vocab_chunks) lo.vocab_chunks = (int)fl.vocab_chunks;
    lo.all_logits = fl.all_logits;
    if ((rc = check_build(&c, &lo, o.device_mem[0], ""))) goto done;
    if (!ids && !(ids = malloc(sizeof *ids * (size_t)T))) rc = cli_errorf("llama", 3, "out of memory");
    else if (!fl.prompt_ids && (s = tp_llama_random_prompt((uint64_t)fl.x.seed, T, c.vocab, ids, &e))) rc = cli_fail("llama", s, &e);
    if (rc) goto done;
    printf("model: %s; %lld layers, hidden %lld, %lld heads (%lld KV), vocab %lld, %s weights; prompt %lld tokens; "
           "%d devices (residual %s), %d query blocks (attention %s), %d MLP and %d vocabulary chunks per device\n",
           label, (long long)c.layers, (long long)c.hidden, (long long)c.heads, (long long)c.kv_heads, (long long)c.vocab,
           tp_dtype_name(c.dtype), (long long)T, o.ndevices, cli_residual_names[lo.residual], lo.blocks,
           cli_attention_names[lo.attention], lo.mlp_chunks,
           lo.vocab_chunks);
    if (fl.print_prompt) {
        printf("prompt ids:");
        for (int64_t k = 0; k < T; k++) printf("%s%d", k ? "," : " ", (int)ids[k]);
        printf("\n");
    }
    double t0 = tp_now_seconds();
    if ((s = tp_llama_build(&c, &lo, &g, &e))) goto done;
    tp_graph_counts gn;
    tp_count_taskgraph(g, &gn);
    printf("TaskGraph: %llu non-input vertices, %llu input vertices, %llu edges (built in %.2f s)\n",
           (unsigned long long)(gn.vertices - gn.inputs), (unsigned long long)gn.inputs, (unsigned long long)gn.edges,
           tp_now_seconds() - t0);
    int session = fl.x.repeat > 1 && !use_sim && !fl.no_data;
    if (session && (rc = cli_keep_inputs("llama", g))) goto done; /* what fits stays for the next run */
    if ((s = tp_plan(g, &o, &mg, &e))) goto done;
    print_plan(g, mg, &o);
    if (fl.no_data) goto done;
    if (use_sim) {
        cli_exec_flags xf = fl.x;
        xf.repeat = 1; /* as ever: one simulated run */
        rc = cli_sim_run("llama", mg, be, &prof, &xf);
        goto done;
    }
    fl.x.progress = isatty(2);
    printf("running on the %s backend\n", tp_backend_name(be));
    loader ld = {&c, fl.model, ids, (uint64_t)fl.x.seed};
    tp_run_summary sum;
    if (session) {
        s = cli_session_runs(g, &mg, &o, be, &fl.x, 0, load, &ld, &sess, &x, &sum, &e);
    } else {
        s = cli_exec_new(mg, be, &fl.x, &x, &e);
        if (!s) s = load(x, &ld, &e);
        if (!s) s = cli_exec_run(x, &fl.x, &sum, &e);
    }
    if (!s) {
        tp_run_summary_print(&sum, stdout);
        s = print_next_tokens(x, mg, c.vocab, &e);
        if (!s && fl.out) s = tp_exec_save_outputs(x, fl.out, &e);
    }
    printf("total %.3f s\n", tp_now_seconds() - t0);
done:
    if (s && !rc) rc = cli_fail("llama", s, &e);
    tp_exec_free(x);
    tp_session_free(sess);
    tp_backend_free(be);
    tp_memgraph_free(mg);
    tp_graph_free(g);
    free(ids);
    return rc;
}

const cli_cmd cmd_llama = {"llama", "LLaMA prefill from a Hugging Face checkpoint (or a preset) under a memory cap", run, help};
