/* cmd_train.c - turnip train: LoRA fine-tuning of a LLaMA model under a memory cap (issue 13; the
 * workflow is src/app/train.c, the step graph src/models/llama_train.c), on the cpu, cuda or sim
 * backend; writes the adapters in PEFT's format. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"
#include "turnip/app.h"
#include "turnip/safetensors.h"

typedef struct {
    cli_exec_flags x;
    cli_backend_flags b;
    const char *model, *preset, *data, *device_mem, *machine, *targets, *out, *dump, *plan_order, *init, *resident, *wdtype,
        *taskgraph;
    long long seq_len, batch, steps, devices, rank, blocks, vocab_chunks;
    double alpha, lr, weight_decay;
    int no_sum_into, quiet, no_verify;
} flags;

static const char *const init_names[] = {"peft", "nonzero", NULL};
static const char *const resident_names[] = {"auto", "device", "host", NULL};
static const char *const wdtype_names[] = {"f32", "f16", "bf16", NULL};

static const cli_opt opts[] = {
    CLI_O_STR("--model", "DIR", flags, model, "a Hugging Face checkpoint: config.json and model.safetensors (or shards)"),
    CLI_O_STR("--preset", "NAME", flags, preset, "tiny, 7b, 13b, 65b, llama3-8b, llama2-70b: random weights made in-process"),
    CLI_O_CHOICE("--weights-dtype", "f32|f16|bf16", flags, wdtype, wdtype_names,
                 "--preset: the frozen weights' storage dtype (default the preset's: f32 for tiny, f16 for the\nothers; the paper trains with f32)"),
    CLI_O_STR("--data", "FILE", flags, data,
              "token ids (decimal, separated by whitespace or commas), cut into sequences of\n"
              "--seq-len consecutive ids; step k trains on sequences kB..kB+B-1 (modulo\n"
              "their number); without it: one batch of random ids (from --seed), every step"),
    CLI_O_INT("--seq-len", "T", flags, seq_len, 2, INT32_MAX, "tokens per sequence (required)"),
    CLI_O_INT("--batch", "B", flags, batch, 1, 1 << 20, "sequences per step (default 1)"),
    CLI_O_INT("--steps", "N", flags, steps, 1, 10000000, "optimizer steps (required)"),
    CLI_O_INT("--seed", "N", flags, x.seed, 0, LLONG_MAX,
              "seed of the initial adapters, the random data (without --data), a preset's weights,\n"
              "the random order and the jitter (default 0)"),
    CLI_O_STR("--device-mem", "SIZE|P%", flags, device_mem,
              "each device's memory: a size, or a percentage of what a step needs with\n"
              "nothing evicted (printed) (required but with --backend sim: the machine's)"),
    CLI_O_INT("--devices", "D", flags, devices, 1, TP_MAX_DEVICES, "data parallel: sequence b on device b mod D (default 1; at most B)"),
    CLI_O_INT("--lora-rank", "R", flags, rank, 1, 1 << 20, "LoRA rank r (default 16)"),
    CLI_O_NUM("--lora-alpha", "A", flags, alpha, 1e-30, 1e30, "LoRA alpha: the adapters are scaled by alpha / r (default 32)"),
    CLI_O_STR("--lora-targets", "q,k,..", flags, targets,
              "modules with adapters: q, k, v, o, gate, up, down (or q_proj ..), all\n"
              "(default all)"),
    CLI_O_CHOICE("--lora-init", "peft|nonzero", flags, init, init_names,
                 "peft (default): A Kaiming-uniform, B zero; nonzero: B uniform in\n+-0.5/sqrt(r) too (for tests)"),
    CLI_O_NUM("--lr", "LR", flags, lr, 0, 1e6, "AdamW's learning rate (default 1e-4)"),
    CLI_O_NUM("--weight-decay", "W", flags, weight_decay, 0, 1e6, "AdamW's decoupled weight decay (default 0)"),
    CLI_O_INT("--blocks", "N", flags, blocks, 1, INT32_MAX,
              "attention query blocks per sequence (default: scores of a block at most 1/16\nof the cap; more than --seq-len are cut to it)"),
    CLI_O_INT("--vocab-chunks", "C", flags, vocab_chunks, 1, 1 << 20,
              "lm_head and embedding row chunks (default: a weight chunk at most 1/8 and\na logits chunk at most 1/16 of the cap; more than the vocabulary are cut to it)"),
    CLI_O_CHOICE("--resident", "MODE", flags, resident, resident_names,
                 "where adapters and moments live between steps: device (0), host, or auto\n"
                 "(the default: device when they take at most 1/4 of the cap and fit)"),
    CLI_O_STR("--out", "DIR", flags, out, "write adapter_model.safetensors and adapter_config.json (PEFT) there"),
    CLI_O_STR("--dump-grads", "FILE", flags, dump,
              "write the first step's gradients (NAME.grad), the initial adapters\n(NAME.init) and the losses (loss, [steps]) there (safetensors)"),
    CLI_O_STR("--taskgraph-out", "FILE", flags, taskgraph,
              "write the step's TaskGraph there as the builder makes it (turnip.taskgraph/1,\n"
              "before the session's keep and resident marks), then train as asked"),
    CLI_O_POLICY(flags, x),
    CLI_O_DETERMINISTIC(flags, x),
    CLI_O_SWITCH("--no-sum-into", flags, no_sum_into, "plan the gradient sums as kernels (all parts on the device at once)"),
    CLI_O_STREAMS(flags, x),
    CLI_O_CHOICE("--plan-order", "NAME", flags, plan_order, cli_plan_order_names,
                 "serial order the plans simulate: topo (default: the builder's), dfs or greedy"),
    CLI_O_STR("--backend", "cpu|cuda|sim", flags, b.name, "where to run (default cpu); sim: timings and bytes only, no losses"),
    CLI_O_STR("--machine", "NAME", flags, machine, "sim: the machine profile (default a100x8)"),
    CLI_O_LINK_BANDWIDTH(flags, b, "cpu: throttle host-device and peer copies"),
    CLI_O_JITTER(flags, b),
    CLI_O_CHOICE("--matmul", "MODE", flags, b.matmul, cli_matmul_names, "cuda: fast (default) or exact (see turnip run --help)"),
    CLI_O_SWITCH("--no-verify", flags, no_verify, "skip the independent check of every plan"),
    CLI_O_SWITCH("--quiet", flags, quiet, "no line per step"),
    CLI_O_END,
};

static void help(FILE *f)
{
    cli_print_help(
        f,
        "usage: turnip train (--model DIR | --preset NAME) (--data FILE | --seed S) --seq-len T [--batch B] --steps N\n"
        "                    --device-mem SIZE|P% [--devices D] [--lora-rank R] [--lora-alpha A] [--lora-targets q,k,v,..]\n"
        "                    [--lr LR] [--weight-decay W] [--lora-init peft|nonzero] [--blocks N] [--vocab-chunks C]\n"
        "                    [--resident auto|device|host] [--backend cpu|cuda|sim [--machine NAME]] [--order POLICY]\n"
        "                    [--deterministic] [--no-sum-into] [--weights-dtype f32|f16|bf16] [--link-bandwidth GB/s]\n"
        "                    [--jitter F] [--streams N] [--matmul fast|exact] [--plan-order topo|dfs|greedy] [--out DIR]\n"
        "                    [--dump-grads FILE] [--taskgraph-out FILE] [--no-verify] [--quiet]\n"
        "\n"
        "LoRA fine-tuning: every step is one plan of one TaskGraph (forward with adapters, next-token\n"
        "cross-entropy, backward with activation checkpointing per layer, AdamW on the adapters), run\n"
        "in one session so the frozen weights, adapters and Adam moments stay on the devices where they\n"
        "fit. Prints each step's loss and time, the planning time, tokens/s and bytes moved; --out\n"
        "writes the adapters as PEFT loads them.\n"
        "\n",
        opts,
        "exit: 0 ok, 2 bad flags or data, a cap below the smallest feasible (said before the work), or\n"
        "more host memory than the machine has\n");
}

/* the ids of a text file (decimal, separated by whitespace or commas), each in [0, vocab), into
 * a new array (*ids, the caller's); 0 or the exit code after printing why */
static int read_data(const char *path, int64_t vocab, int32_t **ids, int64_t *n)
{
    struct stat sb;
    if (stat(path, &sb)) return cli_errorf("train", 2, "--data %s: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode)) return cli_errorf("train", 2, "--data %s: not a regular file", path);
    if ((uint64_t)sb.st_size > tp_host_mem_limit() / 4)
        return cli_errorf("train", 2, "--data %s: %lld bytes, more than a quarter of the host memory available", path, (long long)sb.st_size);
    char *text;
    size_t len;
    tp_error e;
    tp_status s = tp_read_text_file(path, &text, &len, &e);
    if (s) return cli_fail("train", s, &e);
    *ids = malloc(sizeof **ids * (len / 2 + 1));
    if (!*ids) {
        free(text);
        return cli_errorf("train", 3, "out of memory");
    }
    int64_t k = 0, line = 1;
    const char *p = text;
    int rc = 0;
    while (!rc) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == ',') line += *p++ == '\n';
        if (!*p) {
            if (p < text + len) rc = cli_errorf("train", 2, "--data %s:%lld: a NUL byte (not a text file)", path, (long long)line);
            break;
        }
        char *end;
        errno = 0;
        long long v = *p >= '0' && *p <= '9' ? strtoll(p, &end, 10) : (end = (char *)p, 0);
        if (end == p || (*end && !strchr(" \t\r\n,", *end)))
            rc = cli_errorf("train", 2, "--data %s:%lld: token %lld is not a decimal id", path, (long long)line, (long long)k);
        else if (errno || v >= vocab)
            rc = cli_errorf("train", 2, "--data %s:%lld: token %lld is outside the vocabulary [0, %lld)", path, (long long)line, (long long)k,
                            (long long)vocab);
        else (*ids)[k++] = (int32_t)v, p = end;
    }
    free(text);
    if (!rc && !k) rc = cli_errorf("train", 2, "--data %s: no token ids", path);
    if (rc) {
        free(*ids);
        *ids = NULL;
    }
    *n = k;
    return rc;
}

typedef struct {
    const flags *fl;
    int64_t tokens; /* per step */
} report;

static void on_step(void *ctx, const tp_train_step *st)
{
    report *r = ctx;
    if (r->fl->quiet) return;
    char b1[32];
    if (isnan(st->loss)) printf("step %lld: %.3f s (", (long long)st->step, st->seconds);
    else printf("step %lld: loss %.6f, %.3f s (", (long long)st->step, st->loss, st->seconds);
    if (st->plan_seconds > 0) printf("plan %.3f s, ", st->plan_seconds);
    printf("run %.3f s), moved %s\n", st->run_seconds, cli_bytes_str((double)st->bytes_moved, b1, sizeof b1));
    fflush(stdout);
}

/* --dump-grads: NAME.grad, NAME.init and loss [steps] */
static tp_status dump(const char *path, const tp_train_result *r, int64_t steps, tp_error *e)
{
    size_t n = (size_t)r->n * 2 + 1;
    tp_st_tensor *t = calloc(n, sizeof *t);
    char(*names)[TP_LLAMA_ID_MAX + 8] = calloc(n, sizeof *names);
    float *loss = malloc(sizeof(float) * (size_t)steps);
    tp_status s = t && names && loss ? TP_OK : cli_set_error(e, TP_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < r->n && !s; i++)
        for (int q = 0; q < 2; q++) {
            size_t k = (size_t)i * 2 + (size_t)q;
            snprintf(names[k], sizeof names[k], "%s.%s", r->t[i].name, q ? "init" : "grad");
            t[k] = (tp_st_tensor){names[k], TP_DT_F32, 2, {r->t[i].shape[0], r->t[i].shape[1]},
                                  (uint64_t)(r->t[i].shape[0] * r->t[i].shape[1]) * 4, (q ? r->initial : r->grads) + r->t[i].offset};
        }
    if (!s) {
        for (int64_t k = 0; k < steps; k++) loss[k] = (float)r->loss[k];
        t[n - 1] = (tp_st_tensor){"loss", TP_DT_F32, 1, {steps}, sizeof(float) * (uint64_t)steps, loss};
        s = tp_st_write(path, n, t, e);
    }
    free(t);
    free(names);
    free(loss);
    return s;
}

/* the step graph's options for cap (the defaults, then the flags) and its need; 0 or the exit code */
static int step_need(const flags *fl, const tp_llama_config *c, unsigned targets, tp_order order, uint64_t cap, tp_train_opts *go,
                     tp_train_need *need)
{
    tp_llama_train_opts_default(go, c, (int)fl->devices, fl->batch, fl->seq_len, cap);
    go->rank = fl->rank;
    go->alpha = fl->alpha;
    go->targets = targets;
    go->weight_decay = fl->weight_decay;
    go->grads_out = fl->dump != NULL;
    if (fl->blocks) go->blocks = (int)(fl->blocks > fl->seq_len ? fl->seq_len : fl->blocks);
    if (fl->vocab_chunks) go->vocab_chunks = (int)(fl->vocab_chunks > c->vocab ? c->vocab : fl->vocab_chunks);
    tp_build_estimate est;
    tp_llama_train_estimate(c, go, &est);
    int rc = cli_refuse_host("train", "", "the step's TaskGraph and its plan need", est.plan_bytes, &est);
    if (rc) return rc;
    tp_error e;
    tp_status s = tp_llama_train_need(c, go, order, need, &e);
    return s ? cli_fail("train", s, &e) : 0;
}

/* made: the --out directory when this run created it (train removes it again, if still empty,
 * when writing into it fails). A missing --out directory is made only when the adapters are
 * written, after the training: an interrupted or failed run leaves none behind. */
static int train(int argc, char **argv, const char **made)
{
    flags fl = {.x = {.streams = 1, .fail_vertex = -1, .repeat = 1}, .devices = 1, .batch = 1, .rank = 16, .alpha = 32, .lr = 1e-4};
    int npos, rc = cli_parse("train", opts, &fl, argc, argv, 2, NULL, 0, &npos, NULL);
    if (rc) return rc;
    if (npos) return cli_usage_error("train", "no positional arguments", NULL);
    if (!fl.model == !fl.preset) return cli_usage_error("train", "give one of --model DIR and --preset NAME", NULL);
    cli_note_model(fl.model);
    if ((rc = cli_backend_known("train", fl.b.name))) return rc;
    cli_note_input("--data", fl.data);
    if (!fl.seq_len) return cli_usage_error("train", "--seq-len is required", NULL);
    if (!fl.steps) return cli_usage_error("train", "--steps is required", NULL);
    if (fl.devices > fl.batch)
        return cli_usage_error("train", "--devices: at most --batch (each device trains whole sequences)", NULL);
    int use_sim = fl.b.name && !strcmp(fl.b.name, "sim");
    if (fl.machine && !use_sim) return cli_usage_error("train", "--machine is for --backend sim", NULL);
    if (!use_sim && !fl.device_mem) return cli_usage_error("train", "--device-mem is required", NULL);
    if (use_sim && (fl.out || fl.dump)) return cli_usage_error("train", "--out and --dump-grads need data: not with --backend sim", NULL);
    unsigned targets = TP_LORA_ALL;
    tp_error e;
    tp_status s;
    if (fl.targets && (s = tp_lora_targets_parse(fl.targets, &targets, &e))) return cli_usage_error("train", e.msg, NULL);
    tp_llama_config c;
    if (fl.wdtype && fl.model) return cli_usage_error("train", "--weights-dtype is for --preset (a checkpoint's weights keep their dtype)", NULL);
    if ((s = cli_llama_config(fl.model, fl.preset, &c, &e))) return cli_fail("train", s, &e);
    if (fl.wdtype && tp_dtype_parse(fl.wdtype, &c.dtype)) return cli_usage_error("train", "--weights-dtype: f32, f16 or bf16", NULL);
    struct stat sb;
    int existed = fl.out && stat(fl.out, &sb) == 0;
    if ((fl.out && (rc = cli_writable_dir("train", "--out", fl.out, existed ? 1 : 2))) ||
        (rc = cli_writable_files("train", "--dump-grads", fl.dump, "--taskgraph-out", fl.taskgraph, (char *)NULL)))
        return rc;
    tp_sim_profile prof;
    if (use_sim && (s = tp_sim_profile_read(fl.machine ? fl.machine : "a100x8", &prof, &e))) return cli_fail("train", s, &e);
    if (use_sim && fl.devices > prof.devices)
        return cli_errorf("train", 2, "--devices %lld: machine '%s' has %d", fl.devices, prof.name, prof.devices);
    /* the cap: a size, a percentage of the step's need, or the machine's */
    double pct = 0;
    uint64_t cap = use_sim ? prof.device_mem : UINT64_MAX;
    if (fl.device_mem) {
        size_t n = strlen(fl.device_mem);
        if (n && fl.device_mem[n - 1] == '%') {
            char *end;
            errno = 0;
            pct = strtod(fl.device_mem, &end);
            if (end != fl.device_mem + n - 1 || errno || !(pct > 0 && pct <= 1000))
                return cli_usage_error("train", "--device-mem: a size or a percentage in (0, 1000]%", fl.device_mem);
        } else if (tp_parse_size(fl.device_mem, &cap) || !cap) {
            return cli_usage_error("train", "--device-mem: a size (4GiB, 512MiB, ..) or a percentage", fl.device_mem);
        }
    }
    tp_order order = TP_ORDER_TOPO;
    if (fl.plan_order) tp_order_parse(fl.plan_order, &order);
    tp_train_opts go;
    tp_train_need need = {0}, nd;
    char b1[32], b2[32], b3[32];
    /* with a percentage: the need at the defaults first, then the graph for the cap it gives */
    if (pct > 0) {
        if ((rc = step_need(&fl, &c, targets, order, UINT64_MAX, &go, &need))) return rc;
        double want = (double)need.need * pct / 100.0;
        if (want >= 0x1p63) return cli_errorf("train", 2, "--device-mem %s: %.3g bytes per device, more than 2^63", fl.device_mem, want);
        cap = (uint64_t)want;
    }
    if ((rc = step_need(&fl, &c, targets, order, cap, &go, &nd))) return rc;
    if (!(pct > 0)) need = nd;
    need.min_cap = nd.min_cap, need.min_device = nd.min_device, need.vertices = nd.vertices, need.edges = nd.edges;
    printf("model: %s; %lld layers, hidden %lld, %lld heads (%lld KV), vocab %lld, %s weights; batch %lld x %lld tokens, "
           "%lld devices; LoRA r %lld, alpha %g on",
           fl.model ? fl.model : fl.preset, (long long)c.layers, (long long)c.hidden, (long long)c.heads, (long long)c.kv_heads,
           (long long)c.vocab, tp_dtype_name(c.dtype), fl.batch, fl.seq_len, fl.devices, fl.rank, fl.alpha);
    for (int k = 0; k < TP_LORA_NTARGETS; k++)
        if (targets >> k & 1) printf(" %s", tp_lora_target_name(k));
    printf("\nstep graph: %llu vertices, %llu edges; %d query blocks, %d vocabulary chunks\n", (unsigned long long)need.vertices,
           (unsigned long long)need.edges, go.blocks, go.vocab_chunks);
    printf("memory: a step needs %s per device with nothing evicted, at least %s (one kernel, device %d); cap %s (%.0f%%)\n",
           tp_format_size(need.need, b1, sizeof b1), tp_format_size(need.min_cap, b2, sizeof b2), need.min_device,
           tp_format_size(cap, b3, sizeof b3), 100.0 * (double)cap / (double)(need.need ? need.need : 1));
    if (cap < need.min_cap) { /* the smallest cap whose own blocks and chunks fit it: down from this need while it fits */
        uint64_t best = 0, at = need.min_cap;
        tp_train_opts g2;
        for (int k = 0; k < 8 && !rc; k++) {
            rc = step_need(&fl, &c, targets, order, at, &g2, &nd);
            if (rc || nd.min_cap > at) break;
            best = at;
            if (nd.min_cap == at) break;
            at = nd.min_cap;
        }
        if (rc) return rc;
        if (!best) return cli_errorf("train", 2, "--device-mem %s: below what one kernel needs, %s", tp_format_size(cap, b1, sizeof b1),
                                     tp_format_size(need.min_cap, b2, sizeof b2));
        return cli_errorf("train", 2, "--device-mem %s: below the smallest feasible cap, %s = %llu bytes (the largest kernel's inputs and output%s)",
                          tp_format_size(cap, b1, sizeof b1), tp_format_size(best, b2, sizeof b2), (unsigned long long)best,
                          fl.blocks && fl.vocab_chunks ? "" : ", with the blocks and chunks chosen for it");
    }
    /* host memory: the session's host block (every input, each device's weights its own, and room
     * to offload), the cpu backend's device arenas, the adapters' host copies */
    double host_need = (double)need.input_bytes + (double)fl.devices * (double)cap * (fl.b.name && !strcmp(fl.b.name, "cuda") ? 1 : 2) +
                       8.0 * (double)need.adapter_bytes;
    if (!use_sim && host_need > (double)tp_host_mem_limit())
        return cli_errorf("train", 2, "needs about %s of host memory (inputs, device arenas and offload room), %s are available",
                          cli_bytes_str(host_need, b1, sizeof b1), tp_format_size(tp_host_mem_limit(), b2, sizeof b2));
    int32_t *ids = NULL;
    int64_t nids = 0;
    if (fl.data && (rc = read_data(fl.data, c.vocab, &ids, &nids))) return rc;
    if (fl.data && nids < fl.batch * fl.seq_len) {
        free(ids);
        return cli_errorf("train", 2, "--data %s: %lld ids, a batch of %lld x %lld needs %lld", fl.data, (long long)nids, fl.batch, fl.seq_len,
                          fl.batch * fl.seq_len);
    }
    if (fl.data) printf("data: %s, %lld ids: %lld sequences of %lld\n", fl.data, (long long)nids, (long long)(nids / fl.seq_len), fl.seq_len);
    /* the backend before any output: a missing GPU or an unknown name writes nothing */
    tp_backend *be = use_sim ? cli_sim_backend("train", &prof, &fl.b, &rc) : cli_backend("train", &fl.b, &rc);
    if (be && fl.taskgraph) { /* the graph every step plans, before the session's marks (scripts/chain_from_taskgraph.py reads it) */
        tp_graph *g = NULL;
        if ((s = tp_llama_train_build(&c, &go, &g, &e))) rc = cli_fail("train", s, &e);
        else if (!(rc = cli_write_graph("train", g, fl.taskgraph))) printf("wrote %s\n", fl.taskgraph);
        if (rc) {
            tp_backend_free(be);
            free(ids);
            return rc;
        }
        fflush(stdout);
    }
    tp_llama_weights *w = NULL;
    s = TP_OK;
    if (be && !use_sim) s = tp_llama_weights_open(&c, fl.model, (uint64_t)fl.x.seed, &w, &e);
    tp_train_run_opts to = {0};
    to.config = &c;
    to.weights = w;
    to.backend = be;
    to.graph = go;
    to.device_mem = cap;
    to.steps = fl.steps;
    to.tokens = ids;
    to.ntokens = nids;
    to.lr = fl.lr;
    to.init = fl.init && !strcmp(fl.init, "nonzero") ? TP_LORA_INIT_NONZERO : TP_LORA_INIT_PEFT;
    to.seed = (uint64_t)fl.x.seed;
    to.resident = !fl.resident || !strcmp(fl.resident, "auto") ? TP_TRAIN_RESIDENT_AUTO
                  : !strcmp(fl.resident, "device")             ? TP_TRAIN_RESIDENT_DEVICE
                                                               : TP_TRAIN_RESIDENT_HOST;
    cli_run_opts(&fl.x, &to.run);
    to.no_sum_into = fl.no_sum_into;
    to.plan_order = order;
    to.verify = !fl.no_verify;
    to.data = !use_sim;
    report rp = {&fl, fl.batch * fl.seq_len};
    to.on_step = on_step;
    to.ctx = &rp;
    tp_train_result r = {0};
    if (!s && be) {
        printf("running on the %s backend%s\n", tp_backend_name(be), use_sim ? " (simulated: no losses)" : "");
        fflush(stdout);
        s = tp_llama_train(&to, &r, &e);
    }
    if (!s && be) {
        double tok = (double)fl.steps * (double)rp.tokens;
        printf("planning: %lld plan%s, the first %.3f s, %.3f s in all; adapters and moments %s between steps\n", (long long)r.plans,
               r.plans == 1 ? "" : "s", r.first_plan_seconds, r.plan_seconds, r.resident ? "on device 0" : "through the host");
        printf("first plan: %llu offloads (%s), %llu drops, %llu reloads; sum-into: %u of %u gradient sums lowered%s\n",
               (unsigned long long)r.offloads, cli_bytes_str((double)r.offload_bytes, b1, sizeof b1), (unsigned long long)r.drops,
               (unsigned long long)r.reloads, r.sum_groups, r.sums_marked,
               r.sum_into_fallback ? " (infeasible with it: planned without)" : "");
        if (use_sim) /* the runs' time is simulated; the wall time is the simulator's own */
            printf("simulated: %lld steps, %.3f s of simulated runs: %.1f tokens/s (%.3f s wall); moved %s (%s per step)\n",
                   (long long)fl.steps, r.run_seconds, tok / r.run_seconds, r.seconds, cli_bytes_str((double)r.bytes_moved, b1, sizeof b1),
                   cli_bytes_str((double)r.bytes_moved / (double)fl.steps, b2, sizeof b2));
        else
            printf("trained: %lld steps in %.3f s wall (%.3f s in runs): %.1f tokens/s (%.1f by run time); moved %s (%s per step)\n",
                   (long long)fl.steps, r.seconds, r.run_seconds, tok / r.seconds, tok / r.run_seconds,
                   cli_bytes_str((double)r.bytes_moved, b1, sizeof b1), cli_bytes_str((double)r.bytes_moved / (double)fl.steps, b2, sizeof b2));
        if (use_sim) printf("simulated step time: %.4f s (mean of %lld)\n", r.run_seconds / (double)fl.steps, (long long)fl.steps);
        else printf("loss: first %.6f, last %.6f\n", r.loss[0], r.loss[fl.steps - 1]);
        if (fl.out && !existed) {
            if (mkdir(fl.out, 0777) && errno != EEXIST) rc = cli_errorf("train", 2, "--out %s: cannot create it: %s", fl.out, strerror(errno));
            else *made = fl.out;
        }
        if (fl.out && !rc) {
            s = tp_lora_write_peft(fl.out, &r, r.adapters, &go, fl.model ? fl.model : fl.preset, &e);
            if (!s) printf("wrote %s/adapter_model.safetensors and %s/adapter_config.json\n", fl.out, fl.out);
        }
        if (!s && !rc && fl.dump) {
            s = dump(fl.dump, &r, fl.steps, &e);
            if (!s) printf("wrote %s\n", fl.dump);
        }
    }
    if (s && !rc) rc = cli_fail("train", s, &e);
    tp_train_result_free(&r);
    tp_llama_weights_close(w);
    tp_backend_free(be);
    free(ids);
    return rc;
}

static int run(int argc, char **argv)
{
    const char *made = NULL;
    int rc = train(argc, argv, &made);
    if (rc && made) rmdir(made); /* a failed run leaves no empty --out directory of its own making */
    return rc;
}

const cli_cmd cmd_train = {"train", "LoRA fine-tuning of a LLaMA checkpoint (or a preset) under a memory cap", run, help};
