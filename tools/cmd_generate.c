/* cmd_generate.c - turnip generate: LLaMA text generation with a KV cache on the tensor cache
 * (issue 12; the workflow is src/app/generate.c), on the cpu, cuda or sim backend. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "turnip/app.h"
#include "turnip/safetensors.h"
#include "turnip/cache.h"

typedef struct {
    cli_exec_flags x;
    cli_backend_flags b;
    const char *model, *preset, *prompt_ids, *device_mem, *policy, *out, *machine, *plan_order, *plans, *plan_out;
    long long seq_len, max_new, devices, batch, top_k, prefetch, vocab_chunks, lookahead;
    double temperature;
    int no_verify, quiet;
} flags;

static const char *const prefetch_help = "--plans layer, latency policy: 0 none, 1 into free memory (the default),\n"
                                         "2 also evicting tensors hinted later than the prefetched one";

static const char *const plans_names[] = {"token", "layer", NULL};

static const cli_opt opts[] = {
    CLI_O_STR("--model", "DIR", flags, model, "a Hugging Face checkpoint: config.json and model.safetensors (or shards)"),
    CLI_O_STR("--preset", "NAME", flags, preset, "tiny, 7b, 13b, 65b, llama3-8b, llama2-70b: random weights made in-process"),
    CLI_O_STR("--prompt-ids", "1,2;3,4", flags, prompt_ids,
              "the prompt's token ids; several prompts (one per sequence, all of one length)\n"
              "separated by ';'"),
    CLI_O_INT("--seq-len", "N", flags, seq_len, 1, INT32_MAX, "a random prompt of N tokens per sequence (from --seed and the sequence)"),
    CLI_O_INT("--max-new-tokens", "N", flags, max_new, 1, 1000000, "tokens to generate per sequence (required)"),
    CLI_O_STR("--device-mem", "SIZE|P%", flags, device_mem,
              "each device's memory: a size, or a percentage of what the weights, the whole\n"
              "KV cache and a step's working memory need (printed) (required but with sim)"),
    CLI_O_INT("--devices", "D", flags, devices, 1, TP_MAX_DEVICES, "devices the layers are spread over (default 1)"),
    CLI_O_INT("--batch", "B", flags, batch, 1, 1 << 20, "sequences generated together (default: the prompts given, or 1)"),
    CLI_O_STR("--policy", "NAME", flags, policy, "the tensor cache's eviction: fifo, lru, size or latency (the default)"),
    CLI_O_INT("--prefetch", "0|1|2", flags, prefetch, 0, 2, prefetch_help),
    CLI_O_CHOICE("--plans", "token|layer", flags, plans, plans_names,
                 "token (the default): a decode step is one plan; each of its tensors, in layer\n"
                 "order, stays in the cache's range if it fits, else it is streamed through the\n"
                 "plan's own memory, loaded beside the compute of the layers before it (every\n"
                 "policy then keeps the same tensors); layer: a plan per layer and one for the\n"
                 "head, the policy deciding what stays between them"),
    CLI_O_INT("--lookahead", "0|1", flags, lookahead, 0, 1,
              "--plans layer: 1: each step also pins the next step's tensors, so their loads\n"
              "overlap its compute (one step more pinned); 0 (the default): only its own"),
    CLI_O_NUM("--temperature", "T", flags, temperature, 0, 100, "0 (the default): greedy; else sample from softmax(logits / T)"),
    CLI_O_INT("--top-k", "K", flags, top_k, 0, INT32_MAX, "sample among the K likeliest tokens (0: all; default 0)"),
    CLI_O_INT("--seed", "N", flags, x.seed, 0, LLONG_MAX,
              "seed of the sampling, the random prompt (--seq-len), a preset's weights, the random\n"
              "order (--order random) (default 0)"),
    CLI_O_INT("--vocab-chunks", "C", flags, vocab_chunks, 1, 1 << 20,
              "lm_head in C row chunks, each a cache tensor (default: 1, or as many as keep\n"
              "a chunk within an eighth of the cap)"),
    CLI_O_STR("--out", "FILE", flags, out, "write tokens [B, N] and logits.S [B, vocab] for every step S there (safetensors)"),
    CLI_O_POLICY(flags, x),
    CLI_O_STREAMS(flags, x),
    CLI_O_STR("--trace", "FILE", flags, x.trace,
              "Chrome trace-event JSON of the last decode step's plan (with --plans layer,\n"
              "of its last plan, the head's); open it in Perfetto"),
    CLI_O_STR("--plan-out", "FILE", flags, plan_out, "that plan's MemGraph (turnip.memgraph/1 JSON)"),
    CLI_O_LINK_BANDWIDTH(flags, b, "cpu: throttle host-device copies (default: unthrottled memcpy)"),
    CLI_O_LINK_LATENCY(flags, b),
    CLI_O_STR("--backend", "cpu|cuda|sim", flags, b.name, "where to run (default cpu); sim: timings and bytes only, no tokens"),
    CLI_O_STR("--machine", "NAME", flags, machine, "sim: the machine profile (default a100x8)"),
    CLI_O_CHOICE("--matmul", "MODE", flags, b.matmul, cli_matmul_names, "cuda: fast (default) or exact (see turnip run --help)"),
    CLI_O_SWITCH("--no-verify", flags, no_verify, "skip the independent check of every step's plan"),
    CLI_O_SWITCH("--quiet", flags, quiet, "no line per step"),
    CLI_O_END,
};

static void help(FILE *f)
{
    cli_print_help(
        f,
        "usage: turnip generate (--model DIR | --preset NAME) (--prompt-ids 1,2,3[;4,5,6..] | --seq-len N)\n"
        "                       --max-new-tokens N --device-mem SIZE|P% [--devices D] [--batch B]\n"
        "                       [--policy fifo|lru|size|latency]\n"
        "                       [--plans token | --plans layer [--prefetch 0|1|2] [--lookahead 0|1]]\n"
        "                       [--temperature T --top-k K] [--seed S] [--out FILE] [--order POLICY]\n"
        "                       [--trace FILE] [--plan-out FILE] [--backend cpu|cuda|sim] [--machine NAME]\n"
        "                       [--link-bandwidth GB/s] [--link-latency us] [--streams N] [--matmul fast|exact]\n"
        "                       [--vocab-chunks C] [--no-verify] [--quiet]\n"
        "\n"
        "Generates text: the prompt is prefilled by one plan, then every new token is one decode step:\n"
        "one plan (--plans token, the default) or a plan per layer and one for the head (--plans\n"
        "layer). Weights and the K/V cache live in a tensor cache: what stays on the devices between\n"
        "plans is the cache's, the rest is loaded inside the plans, beside the compute, and the K/V\n"
        "append writes one row in place. Prints the tokens, the time to first token, decode tokens/s\n"
        "and bytes moved per token against the bound (weights + KV cache - capacity, when positive).\n"
        "\n",
        opts, "exit: 0 ok, 2 unusable input or a cap below the smallest step (said before it starts)\n");
}

/* "1,2;3,4" into a new array (the caller's) of *nseq prompts of *T ids each; 0 or the exit code */
static int parse_prompts(const char *text, int64_t vocab, int32_t **ids, int64_t *nseq, int64_t *T)
{
    int64_t n = 1, seqs = 1;
    for (const char *p = text; *p; p++) {
        n += *p == ',' || *p == ';';
        seqs += *p == ';';
    }
    if (!(*ids = malloc(sizeof **ids * (size_t)n))) return cli_errorf("generate", 3, "out of memory");
    const char *p = text;
    int64_t len = 0, k = 0;
    *T = -1;
    for (;;) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 0 || v >= vocab || (*end && *end != ',' && *end != ';')) {
            char want[64];
            snprintf(want, sizeof want, "a token id in [0, %lld)", (long long)vocab);
            return cli_bad_item("generate", "--prompt-ids", p, k, want);
        }
        (*ids)[k++] = (int32_t)v;
        len++;
        if (*end != ',') {
            if (*T >= 0 && len != *T) return cli_errorf("generate", 2, "--prompt-ids: the prompts differ in length (%lld and %lld)", (long long)*T, (long long)len);
            *T = len;
            len = 0;
        }
        if (!*end) break;
        p = end + 1;
    }
    *nseq = seqs;
    return 0;
}

typedef struct {
    const flags *fl;
    int64_t B, V, N;
    float *logits; /* [N, B, V] for --out */
    int32_t *tokens;
    int sim; /* --backend sim: no tokens to print */
} report;

static void on_step(void *ctx, const tp_gen_step *st)
{
    report *r = ctx;
    if (r->logits && st->logits)
        memcpy(r->logits + (size_t)st->step * (size_t)(r->B * r->V), st->logits, sizeof(float) * (size_t)(r->B * r->V));
    if (r->fl->quiet) return;
    char b1[32];
    printf("step %lld: %s %.3f s (run %.3f s), moved %s", (long long)st->step, st->step ? "decode" : "prefill", st->seconds,
           st->run_seconds, cli_bytes_str((double)st->bytes_moved, b1, sizeof b1));
    if (!r->sim) {
        printf(", token%s", r->B > 1 ? "s" : "");
        for (int64_t b = 0; b < r->B && b < 8; b++) printf(" %d", (int)st->tokens[b]);
        if (r->B > 8) printf(" ...");
    }
    printf("\n");
    fflush(stdout);
}

/* tokens [B, N] and logits.S [B, V] for S = 0..N-1 (tp_st_write writes a temporary file and
 * renames it into place) */
static tp_status write_out(const char *path, const report *rp, const int32_t *tokens, tp_error *e)
{
    int64_t B = rp->B, V = rp->V, N = rp->N;
    tp_st_tensor *t = calloc((size_t)N + 1, sizeof *t);
    char(*names)[32] = calloc((size_t)N + 1, sizeof *names);
    tp_status s = TP_OK;
    if (!t || !names) s = cli_set_error(e, TP_ERR_NOMEM, "out of memory");
    if (!s) {
        t[0] = (tp_st_tensor){"tokens", TP_DT_I32, 2, {B, N}, sizeof(int32_t) * (uint64_t)(B * N), tokens};
        for (int64_t st = 0; st < N; st++) {
            snprintf(names[st], sizeof names[st], "logits.%lld", (long long)st);
            t[st + 1] = (tp_st_tensor){names[st], TP_DT_F32, 2, {B, V}, sizeof(float) * (uint64_t)(B * V), rp->logits + (size_t)st * (size_t)(B * V)};
        }
        s = tp_st_write(path, (size_t)N + 1, t, e);
    }
    free(t);
    free(names);
    return s;
}

static int run(int argc, char **argv)
{
    flags fl = {.x = {.streams = 1, .fail_vertex = -1, .repeat = 1}, .devices = 1, .prefetch = 1, .lookahead = 0};
    int npos, rc = cli_parse("generate", opts, &fl, argc, argv, 2, NULL, 0, &npos, NULL);
    if (rc) return rc;
    if (npos) return cli_usage_error("generate", "no positional arguments", NULL);
    if (!fl.model == !fl.preset) return cli_usage_error("generate", "give one of --model DIR and --preset NAME", NULL);
    cli_note_model(fl.model);
    if ((rc = cli_backend_known("generate", fl.b.name))) return rc;
    if (!fl.prompt_ids == !fl.seq_len) return cli_usage_error("generate", "give one of --prompt-ids and --seq-len", NULL);
    if (!fl.max_new) return cli_usage_error("generate", "--max-new-tokens is required", NULL);
    if (fl.policy) {
        int ok = 0;
        for (int i = 0; tp_cache_policy_names[i]; i++) ok |= !strcmp(fl.policy, tp_cache_policy_names[i]);
        if (!ok) return cli_usage_error("generate", "--policy: one of fifo, lru, size, latency", fl.policy);
    }
    int use_sim = fl.b.name && !strcmp(fl.b.name, "sim");
    if (fl.machine && !use_sim) return cli_usage_error("generate", "--machine is for --backend sim", NULL);
    int per_token = !fl.plans || !strcmp(fl.plans, "token");
    if (fl.lookahead && per_token)
        return cli_usage_error("generate", "--lookahead 1 pins the next layer's tensors: it needs --plans layer", NULL);
    if (fl.prefetch != 1 && per_token)
        return cli_usage_error("generate", "--prefetch chooses loads between the plans of layers: it needs --plans layer", NULL);
    int latency = !fl.policy || !strcmp(fl.policy, "latency");
    if (fl.prefetch != 1 && !latency) /* the hints it follows are the latency policy's */
        return cli_usage_error("generate", "--prefetch is the latency policy's: the other policies never prefetch", NULL);
    if (fl.top_k && fl.temperature == 0)
        return cli_usage_error("generate", "--top-k samples: it needs --temperature T above 0 (without it every token is the likeliest)", NULL);
    if (fl.max_new < 2 && (fl.x.trace || fl.plan_out))
        return cli_usage_error("generate", fl.x.trace ? "--trace shows a decode step: it needs --max-new-tokens 2 or more"
                                                      : "--plan-out writes a decode step's plan: it needs --max-new-tokens 2 or more",
                               NULL);
    if (!use_sim && !fl.device_mem) return cli_usage_error("generate", "--device-mem is required", NULL);
    if (use_sim && fl.out) return cli_usage_error("generate", "--out needs data: not with --backend sim", NULL);
    tp_error e;
    tp_status s = TP_OK;
    tp_llama_config c;
    if ((s = cli_llama_config(fl.model, fl.preset, &c, &e))) return cli_fail("generate", s, &e);
    if (fl.devices > c.layers + 1)
        return cli_errorf("generate", 2, "--devices %lld: the model has %lld layers and a head to spread", fl.devices, (long long)c.layers);
    int32_t *ids = NULL;
    int64_t nseq = 1, T = fl.seq_len;
    if (fl.prompt_ids && (rc = parse_prompts(fl.prompt_ids, c.vocab, &ids, &nseq, &T))) {
        free(ids);
        return rc;
    }
    int64_t B = fl.batch ? fl.batch : nseq;
    if (nseq > 1 && B != nseq) {
        free(ids);
        return cli_errorf("generate", 2, "--batch %lld, but %lld prompts were given", (long long)B, (long long)nseq);
    }
    if (T > (int64_t)INT32_MAX - fl.max_new) {
        free(ids);
        return cli_errorf("generate", 2, "prompt plus new tokens exceed 2^31-1 positions");
    }
    /* fail before the work, not after it: the directories the outputs go into */
    if ((rc = cli_writable_files("generate", "--out", fl.out, "--trace", fl.x.trace, "--plan-out", fl.plan_out, (char *)NULL))) {
        free(ids);
        return rc;
    }
    tp_gen_need need;
    if ((s = tp_llama_generate_need(&c, (int)fl.devices, B, T + fl.max_new, fl.vocab_chunks ? (int)fl.vocab_chunks : 1, &need, &e))) {
        free(ids);
        return cli_fail("generate", s, &e);
    }
    tp_sim_profile prof;
    if (use_sim && (s = tp_sim_profile_read(fl.machine ? fl.machine : "a100x8", &prof, &e))) {
        free(ids);
        return cli_fail("generate", s, &e);
    }
    uint64_t cap = use_sim ? prof.device_mem : 0;
    if (fl.device_mem) {
        size_t n = strlen(fl.device_mem);
        if (n && fl.device_mem[n - 1] == '%') {
            char *end;
            errno = 0;
            double p = strtod(fl.device_mem, &end);
            if (end != fl.device_mem + n - 1 || errno || !(p > 0 && p <= 1000)) {
                free(ids);
                return cli_usage_error("generate", "--device-mem: a size or a percentage in (0, 1000]%", fl.device_mem);
            }
            double want = (double)need.need * p / 100.0;
            if (want >= 0x1p63) {
                free(ids);
                return cli_errorf("generate", 2, "--device-mem %s: %.3g bytes per device, more than 2^63", fl.device_mem, want);
            }
            cap = (uint64_t)want;
        } else if (tp_parse_size(fl.device_mem, &cap) || !cap) {
            free(ids);
            return cli_usage_error("generate", "--device-mem: a size (4GiB, 512MiB, ..) or a percentage", fl.device_mem);
        }
    }
    /* without --vocab-chunks: the lm_head in chunks of at most an eighth of the cap, so a tight
     * cap is not refused for the head alone (the percentage stays of the unchunked need), and with
     * a plan per step no larger than the chunks its weights stream in */
    int whole_head = 0; /* need.need counts the lm_head in one piece, the rest in chunks */
    if (!fl.vocab_chunks) {
        fl.vocab_chunks = tp_llama_generate_vocab_chunks(&c, cap, per_token ? need.split_bytes : 0);
        if (fl.vocab_chunks > 1) {
            tp_gen_need n2;
            if ((s = tp_llama_generate_need(&c, (int)fl.devices, B, T + fl.max_new, (int)fl.vocab_chunks, &n2, &e))) {
                free(ids);
                return cli_fail("generate", s, &e);
            }
            n2.need = need.need;
            need = n2;
            whole_head = 1;
        }
    }
    char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];
    printf("model: %s; %lld layers, hidden %lld, %lld heads (%lld KV), vocab %lld, %s weights; batch %lld, prompt %lld, %lld new tokens\n",
           fl.model ? fl.model : fl.preset, (long long)c.layers, (long long)c.hidden, (long long)c.heads, (long long)c.kv_heads,
           (long long)c.vocab, tp_dtype_name(c.dtype), (long long)B, (long long)T, fl.max_new);
    printf("memory: weights %s, KV cache %s, step work %s; everything resident needs %s per device%s, a step at least %s; cap %s (%.0f%%)\n",
           tp_format_size(need.model_bytes, b1, sizeof b1), tp_format_size(need.kv_bytes, b2, sizeof b2),
           tp_format_size(need.work_bytes, b3, sizeof b3), tp_format_size(need.need, b4, sizeof b4),
           whole_head ? " (its step work with the lm_head in one piece)" : "", tp_format_size(need.min_cap, b5, sizeof b5),
           tp_format_size(cap, b6, sizeof b6), 100.0 * (double)cap / (double)need.need);
    if (cap < need.min_cap) {
        free(ids);
        return cli_errorf("generate", 2, "--device-mem %s: below the %s a decode step needs (its tensors pinned and its work)",
                          tp_format_size(cap, b1, sizeof b1), tp_format_size(need.min_cap, b2, sizeof b2));
    }
    /* host memory, at least: the session's host block holds the host copies of the weights and
     * the KV cache and the embedding table (and the plans' own host memory, which the session
     * counts when it is made, from the prefill's plan); the tokens, and every step's logits for
     * --out */
    double host_need = (double)(need.model_bytes + need.kv_bytes) + (double)c.vocab * (double)c.hidden * (double)tp_dtype_size(c.dtype) +
                       (double)B * (double)fl.max_new * 4.0 * (1.0 + (fl.out ? (double)c.vocab : 0.0));
    if (!use_sim && host_need > (double)tp_host_mem_limit()) {
        free(ids);
        return cli_errorf("generate", 2, "needs about %s of host memory, %s are available",
                          cli_bytes_str(host_need, b1, sizeof b1), tp_format_size(tp_host_mem_limit(), b2, sizeof b2));
    }
    int32_t *prompts = malloc(sizeof *prompts * (size_t)(B * T) + 1);
    if (!prompts) {
        free(ids);
        return cli_errorf("generate", 3, "out of memory");
    }
    for (int64_t b = 0; b < B && !s; b++) {
        if (ids) memcpy(prompts + b * T, ids + (nseq > 1 ? b * T : 0), sizeof *prompts * (size_t)T);
        else s = tp_llama_random_prompt((uint64_t)fl.x.seed + (uint64_t)b, T, c.vocab, prompts + b * T, &e);
    }
    free(ids);
    tp_backend *be = NULL;
    if (!s) be = use_sim ? cli_sim_backend("generate", &prof, &fl.b, &rc) : cli_backend("generate", &fl.b, &rc);
    tp_llama_weights *w = NULL;
    if (!s && be && !use_sim) s = tp_llama_weights_open(&c, fl.model, (uint64_t)fl.x.seed, &w, &e);
    report rp = {&fl, B, c.vocab, fl.max_new, NULL, NULL, use_sim};
    if (!s && be && fl.out && !(rp.logits = malloc(sizeof(float) * (size_t)(B * c.vocab) * (size_t)fl.max_new)))
        s = cli_set_error(&e, TP_ERR_NOMEM, "out of memory for the logits of --out");
    tp_gen_opts go = {0};
    go.config = &c;
    go.weights = w;
    go.backend = be;
    go.devices = (int)fl.devices;
    go.device_mem = cap;
    go.batch = B;
    go.prompt_len = T;
    go.max_new = fl.max_new;
    go.prompts = prompts;
    go.policy = fl.policy;
    go.prefetch = (int)fl.prefetch;
    go.temperature = fl.temperature;
    go.top_k = (int)fl.top_k;
    go.seed = (uint64_t)fl.x.seed;
    go.vocab_chunks = (int)fl.vocab_chunks;
    cli_run_opts(&fl.x, &go.run);
    go.plan_order = TP_ORDER_DEFAULT;
    go.verify = !fl.no_verify;
    go.lookahead = (int)fl.lookahead;
    go.per_token = per_token;
    go.data = !use_sim;
    go.trace = fl.x.trace;
    go.plan_out = fl.plan_out;
    go.on_step = on_step;
    go.ctx = &rp;
    tp_gen_result r = {0};
    if (!s && be) {
        printf("running on the %s backend, a plan per %s, cache policy %s", tp_backend_name(be), per_token ? "decode step" : "layer",
               fl.policy ? fl.policy : "latency");
        if (!per_token && latency) printf(" (prefetch %lld)", fl.prefetch);
        printf("\n");
        fflush(stdout);
        s = tp_llama_generate(&go, &r, &e);
    }
    if (!s && be) {
        for (int64_t b = 0; b < B && !use_sim; b++) {
            printf("tokens[%lld]:", (long long)b);
            for (int64_t k = 0; k < fl.max_new; k++) printf(" %d", (int)r.tokens[b * fl.max_new + k]);
            printf("\n");
        }
        double bound = (double)need.model_bytes + (double)need.kv_bytes - (double)fl.devices * (double)cap; /* all devices' memory */
        if (bound < 0) bound = 0;
        double per = r.decode_steps ? (double)r.decode_bytes / (double)r.decode_steps : 0;
        char unit[64] = "token"; /* a decode step makes one token per sequence and moves the weights once for all */
        if (B > 1) snprintf(unit, sizeof unit, "step (%lld tokens, one per sequence)", (long long)B);
        printf("time to first token: %.3f s (prefill run %.3f s, moved %s)\n", r.ttft, r.prefill_run_seconds,
               cli_bytes_str((double)r.prefill_bytes, b1, sizeof b1));
        if (r.decode_steps) {
            printf("decode: %lld steps x %lld sequences in %.3f s wall (%.3f s in runs): %.2f tokens/s (%.2f by run time)\n",
                   (long long)r.decode_steps, (long long)B, r.decode_seconds, r.decode_run_seconds,
                   (double)(r.decode_steps * B) / r.decode_seconds, (double)(r.decode_steps * B) / r.decode_run_seconds);
            printf("bytes moved per %s: %s; bound (weights + KV - devices x cap): %s%s\n", unit, cli_bytes_str(per, b1, sizeof b1),
                   cli_bytes_str(bound, b2, sizeof b2), bound > 0 ? "" : " (everything fits)");
            if (r.decode_steps > 1) { /* the first decode step fills the empty cache */
                double steady = (double)(r.decode_bytes - r.first_decode_bytes) / (double)(r.decode_steps - 1);
                double ts = (r.decode_seconds - r.first_decode_seconds) / (double)(r.decode_steps - 1);
                printf("steady state (after the first decode step): %s per %s, %.4f s per step", cli_bytes_str(steady, b3, sizeof b3),
                       B > 1 ? "step" : "token", ts);
                if (bound > 0) printf(", bytes / bound %.3f", steady / bound);
                printf("\n");
            }
            if (bound > 0) printf("bytes / bound: %.3f\n", per / bound);
            if (r.decode_plans) /* a plan per step */
                printf("decode plans: %llu made, %llu steps reused the last one (the same graph but for positions)\n",
                       (unsigned long long)r.decode_plans, (unsigned long long)r.decode_plans_reused);
        }
        printf("cache: %llu hits, %llu misses, %llu loads (%s), %llu evictions (%s), prefetches %llu (used %llu, wasted %llu)\n",
               (unsigned long long)r.cache.hits, (unsigned long long)r.cache.misses, (unsigned long long)r.cache.loads,
               cli_bytes_str((double)r.cache.bytes_loaded, b1, sizeof b1), (unsigned long long)r.cache.evictions,
               cli_bytes_str((double)r.cache.bytes_evicted, b2, sizeof b2), (unsigned long long)r.cache.prefetches,
               (unsigned long long)r.cache.prefetch_used, (unsigned long long)r.cache.prefetch_wasted);
        if (!use_sim)
            printf("host memory: %s (the host copies of the weights and the KV cache, the embedding table, the plans' own)\n",
                   tp_format_size(r.host_bytes, b1, sizeof b1));
        if (fl.out) {
            s = write_out(fl.out, &rp, r.tokens, &e);
            if (!s) printf("wrote %s\n", fl.out);
        }
    }
    if (s && !rc) rc = cli_fail("generate", s, &e);
    tp_gen_result_free(&r);
    tp_llama_weights_close(w);
    tp_backend_free(be);
    free(prompts);
    free(rp.logits);
    return rc;
}

const cli_cmd cmd_generate = {"generate", "LLaMA text generation with a KV cache on a tensor cache, under a memory cap", run, help};
