/* llama.c - LLaMA prefill TaskGraphs with Hugging Face semantics (issue 4; paper section 8).
 *
 * Decomposition over D devices, Megatron-style: each device owns a contiguous range of KV
 * groups (with their query heads) — or of query heads when D exceeds the KV heads, a group
 * shared by devices having its keys and values computed on each (as vLLM replicates KV heads)
 * — of MLP columns and of vocabulary rows. The residual stream is B row blocks (f32): with
 * TP_LLAMA_GATHER it lives on device 0 and is broadcast by transfers, per-device partial sums
 * return by transfers and are summed with the residual on device 0; with TP_LLAMA_SCATTER each
 * block's rows are split over the devices, normed where they live, all-gathered, and the
 * partial sums reduce-scattered back to the rows' owners (no device gathers everything). Attention
 * runs per (query head, row block): the scores of block b cover keys 0..end of b only (the
 * rest is causally masked), T/B x (b+1)T/B at a time, which is what bounds the memory of
 * long prompts. Keys and values of a group grow block by block by concatenation, or with fused
 * attention fill a cache of all T rows: the first block's padded, each next written in place.
 *
 * A batch of S prompts (issue 12) is S sequences of row blocks over one embedding of all S x T
 * ids: every per-block vertex exists per (sequence, block), keys and values per sequence, and
 * every weight input is shared. The prompt's keys and values per layer and group can be outputs
 * (kv_out), named for the generation driver, which fills its KV cache from them. */
#include <float.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "turnip/models.h"
#include "io/util.h"
#include "models/estimate.h"
#include "models/llama_int.h"

/* ---- configs ------------------------------------------------------------------------------ */

/* config.json is hostile until checked: every field the builder uses is range-checked here, and
 * the products of sizes that make tensors are checked against int64, so the builder's int64
 * index arithmetic cannot overflow (resources are the estimate's, tp_llama_estimate). */
#define CFG_MAX INT32_MAX /* sizes, heads and layers: 2^31-1 */
#define CFG_EPS_MAX 1.0
#define CFG_THETA_MAX FLT_MAX /* the kernels' theta is an f32 */

/* The integer fields of a config and their ranges [1, max], in the order the reader checks
 * them; tp_llama_build checks a config made in code against the same table. */
static const struct {
    const char *key;
    size_t off;
    int64_t max;
    int optional; /* absent: the number of attention heads (LLaMA 1 configs have no grouping) */
} int_fields[] = {
    {"hidden_size", offsetof(tp_llama_config, hidden), CFG_MAX, 0},
    {"intermediate_size", offsetof(tp_llama_config, intermediate), CFG_MAX, 0},
    {"num_attention_heads", offsetof(tp_llama_config, heads), CFG_MAX, 0},
    {"num_hidden_layers", offsetof(tp_llama_config, layers), CFG_MAX, 0},
    {"vocab_size", offsetof(tp_llama_config, vocab), (int64_t)INT32_MAX + 1, 0}, /* ids are i32 */
    {"num_key_value_heads", offsetof(tp_llama_config, kv_heads), CFG_MAX, 1},
};

static tp_status cfg_int(json_t *j, const char *path, const char *name, int64_t max, int64_t *out, tp_error *err)
{
    json_t *v = json_object_get(j, name);
    if (!v) return tp__fail(err, TP_ERR_INVALID, "%s: config field '%s' is missing", path, name);
    if (!json_is_integer(v)) return tp__fail(err, TP_ERR_INVALID, "%s: config field '%s' must be an integer", path, name);
    json_int_t x = json_integer_value(v);
    if (x < 1 || x > max)
        return tp__fail(err, TP_ERR_INVALID, "%s: config field '%s' %lld is outside [1, %lld]", path, name, (long long)x,
                        (long long)max);
    *out = (int64_t)x;
    return TP_OK;
}

/* an optional number in (0, max], *out untouched when absent */
static tp_status cfg_num(json_t *j, const char *path, const char *name, double max, double *out, tp_error *err)
{
    json_t *v = json_object_get(j, name);
    if (!v) return TP_OK;
    if (!json_is_number(v)) return tp__fail(err, TP_ERR_INVALID, "%s: config field '%s' must be a number", path, name);
    double x = json_number_value(v);
    if (!(x > 0 && x <= max))
        return tp__fail(err, TP_ERR_INVALID, "%s: config field '%s' %g is outside (0, %g]", path, name, x, max);
    *out = x;
    return TP_OK;
}

/* an optional boolean that must be false (a feature the builder does not have) */
static tp_status cfg_false(json_t *j, const char *path, const char *name, tp_error *err)
{
    json_t *v = json_object_get(j, name);
    if (v && !json_is_false(v))
        return tp__fail(err, TP_ERR_INVALID, "%s: config field '%s' must be false (not supported)", path, name);
    return TP_OK;
}

/* a * b * c fits int64 (all positive) */
static int fits3(int64_t a, int64_t b, int64_t c)
{
    int64_t p;
    return !__builtin_mul_overflow(a, b, &p) && !__builtin_mul_overflow(p, c, &p);
}

static tp_status check(const tp_llama_config *c, const char *where, tp_error *err)
{
    if (c->hidden % c->heads || c->heads % c->kv_heads || (c->hidden / c->heads) % 2)
        return tp__fail(err, TP_ERR_INVALID,
                        "%s: hidden_size %lld, num_attention_heads %lld and num_key_value_heads %lld do not divide "
                        "(head_dim must be even, heads a multiple of KV heads)",
                        where, (long long)c->hidden, (long long)c->heads, (long long)c->kv_heads);
    /* the largest tensors: [vocab, hidden], [intermediate, hidden], [hidden, hidden], at 4 bytes */
    const char *what = !fits3(c->hidden, c->vocab, 4)          ? "hidden_size x vocab_size"
                       : !fits3(c->hidden, c->intermediate, 4) ? "hidden_size x intermediate_size"
                       : !fits3(c->hidden, c->hidden, 4)       ? "hidden_size x hidden_size"
                                                               : NULL;
    if (what) return tp__fail(err, TP_ERR_INVALID, "%s: %s x 4 bytes overflows 64 bits", where, what);
    return TP_OK;
}

tp_status tp_llama_config_read(const char *path, tp_llama_config *c, tp_error *err)
{
    char *text;
    size_t len;
    tp_status rs = tp__read_file(path, &text, &len, err); /* a regular file only: a FIFO must not block */
    if (rs) return rs;
    json_error_t je;
    json_t *j = json_loadb(text, len, 0, &je);
    free(text);
    if (!j) return tp__fail(err, TP_ERR_PARSE, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    memset(c, 0, sizeof *c);
    tp_status s = TP_OK;
    if (!json_is_object(j)) s = tp__fail(err, TP_ERR_PARSE, "%s: not a JSON object", path);
    for (size_t i = 0; i < sizeof int_fields / sizeof *int_fields && !s; i++) {
        int64_t *dst = (int64_t *)((char *)c + int_fields[i].off);
        if (int_fields[i].optional && !json_object_get(j, int_fields[i].key)) *dst = c->heads; /* LLaMA 1: no grouping */
        else s = cfg_int(j, path, int_fields[i].key, int_fields[i].max, dst, err);
    }
    c->eps = 1e-6;
    c->theta = 10000.0;
    c->dtype = TP_DT_F32;
    json_t *v;
    if (!s) s = cfg_num(j, path, "rms_norm_eps", CFG_EPS_MAX, &c->eps, err);
    if (!s) s = cfg_num(j, path, "rope_theta", CFG_THETA_MAX, &c->theta, err);
    if (!s && (v = json_object_get(j, "rope_scaling")) && !json_is_null(v)) {
        json_t *t = json_is_object(v) ? json_object_get(v, "rope_type") : NULL;
        if (!t) t = json_is_object(v) ? json_object_get(v, "type") : NULL;
        if (!json_is_string(t) || strcmp(json_string_value(t), "default"))
            s = tp__fail(err, TP_ERR_INVALID, "%s: config field 'rope_scaling' is not supported (plain RoPE only: null)", path);
    }
    if (!s && (v = json_object_get(j, "hidden_act")) && (!json_is_string(v) || strcmp(json_string_value(v), "silu")))
        s = tp__fail(err, TP_ERR_INVALID, "%s: config field 'hidden_act' must be \"silu\"", path);
    if (!s) s = cfg_false(j, path, "attention_bias", err);
    if (!s) s = cfg_false(j, path, "mlp_bias", err);
    if (!s && (v = json_object_get(j, "torch_dtype"))) {
        const char *t = json_is_string(v) ? json_string_value(v) : "";
        if (!strcmp(t, "float32")) c->dtype = TP_DT_F32;
        else if (!strcmp(t, "float16")) c->dtype = TP_DT_F16;
        else if (!strcmp(t, "bfloat16")) c->dtype = TP_DT_BF16;
        else s = tp__fail(err, TP_ERR_INVALID, "%s: config field 'torch_dtype' must be float32, float16 or bfloat16", path);
    }
    if (!s && (v = json_object_get(j, "tie_word_embeddings"))) {
        if (!json_is_boolean(v)) s = tp__fail(err, TP_ERR_INVALID, "%s: config field 'tie_word_embeddings' must be true or false", path);
        else c->tie_embeddings = json_is_true(v);
    }
    if (!s) s = check(c, path, err);
    if (!s && (v = json_object_get(j, "head_dim")) && !json_is_null(v) &&
        (!json_is_integer(v) || json_integer_value(v) != c->hidden / c->heads))
        s = json_is_integer(v) ? tp__fail(err, TP_ERR_INVALID,
                                          "%s: config field 'head_dim' %lld differs from hidden_size / num_attention_heads (%lld)",
                                          path, (long long)json_integer_value(v), (long long)(c->hidden / c->heads))
                               : tp__fail(err, TP_ERR_INVALID, "%s: config field 'head_dim' must be an integer", path);
    json_decref(j);
    return s;
}

tp_status tp_llama_preset(const char *name, tp_llama_config *c, tp_error *err)
{
    static const struct {
        const char *name;
        tp_llama_config c;
    } presets[] = {
        {"tiny", {256, 512, 8, 4, 2, 1000, 1e-5, 10000.0, TP_DT_F32, 0}},
        {"7b", {4096, 11008, 32, 32, 32, 32000, 1e-6, 10000.0, TP_DT_F16, 0}},
        {"13b", {5120, 13824, 40, 40, 40, 32000, 1e-6, 10000.0, TP_DT_F16, 0}},
        {"65b", {8192, 22016, 64, 64, 80, 32000, 1e-5, 10000.0, TP_DT_F16, 0}},
        {"llama3-8b", {4096, 14336, 32, 8, 32, 128256, 1e-5, 500000.0, TP_DT_BF16, 0}},
        {"llama2-70b", {8192, 28672, 64, 8, 80, 32000, 1e-5, 10000.0, TP_DT_F16, 0}},
    };
    for (size_t i = 0; i < sizeof presets / sizeof *presets; i++)
        if (!strcmp(name, presets[i].name)) {
            *c = presets[i].c;
            return TP_OK;
        }
    return tp__fail(err, TP_ERR_ARG, "unknown preset '%s' (tiny, 7b, 13b, 65b, llama3-8b, llama2-70b)", name);
}

int tp_llama_parse_input(const char *id, char *name, size_t len, char *kind, int64_t *a, int64_t *b)
{
    size_t n = strcspn(id, "#@");
    if (n + 1 > len) return 0;
    memcpy(name, id, n);
    name[n] = 0;
    *kind = 0;
    *a = *b = 0;
    if (id[n] == '#') {
        long long x, y;
        char k;
        if (sscanf(id + n + 1, "%c%lld:%lld", &k, &x, &y) != 3 || (k != 'r' && k != 'c')) return 0;
        *kind = k;
        *a = x;
        *b = y;
    }
    return 1;
}

/* ---- prompts and next tokens ------------------------------------------------------------- */

tp_status tp_llama_random_prompt(uint64_t seed, int64_t T, int64_t vocab, int32_t *ids, tp_error *err)
{
    if (T < 0 || vocab < 1 || vocab > (int64_t)INT32_MAX + 1 || (T > 0 && !ids))
        return tp__fail(err, TP_ERR_ARG, "random prompt: %lld tokens over a vocabulary of %lld", (long long)T, (long long)vocab);
    /* the stream of prompts: another constant than weights (+1) and run inputs (+7) */
    uint64_t key = tp__mix64(seed * 0x2545f4914f6cdd1dull + 3);
    for (int64_t k = 0; k < T; k++) ids[k] = (int32_t)(tp__mix64(key + (uint64_t)k) % (uint64_t)vocab);
    return TP_OK;
}

int tp_llama_top_k(const float *logits, int64_t n, int k, int32_t *ids)
{
    int found = 0;
    for (int j = 0; j < k; j++) ids[j] = -1;
    for (int64_t v = 0; v < n; v++)
        for (int j = 0; j < k; j++)
            if (ids[j] < 0 || logits[v] > logits[ids[j]]) { /* strictly larger: ties keep the lower id */
                for (int q = k - 1; q > j; q--) ids[q] = ids[q - 1];
                ids[j] = (int32_t)v;
                found += found < k;
                break;
            }
    return found;
}

/* ---- builder ---------------------------------------------------------------------------- */

typedef struct {
    tp_graph *g;
    tp_error *err;
    tp_status st;
    const tp_llama_config *c;
    char id[TP_LLAMA_ID_MAX];
} B;

static const char *nm(B *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->id, sizeof b->id, fmt, ap);
    va_end(ap);
    return b->id;
}

void tp__llama_weight_id(char *id, size_t len, const char *name, char kind, int64_t a, int64_t z, int d)
{
    int o = snprintf(id, len, "%s", name);
    if (o < 0 || (size_t)o >= len) return; /* truncated: the graph's id check refuses it */
    if (kind) o += snprintf(id + o, len - (size_t)o, "#%c%lld:%lld", kind, (long long)a, (long long)z);
    if (d && o >= 0 && (size_t)o < len) snprintf(id + o, len - (size_t)o, "@d%d", d);
}

/* weight input: HF tensor `name`, rows or columns [a, b) (kind 0: whole), on device d */
static uint32_t W(B *b, int d, const char *name, char kind, int64_t a, int64_t z, int64_t r, int64_t cols)
{
    char id[TP_LLAMA_ID_MAX];
    tp__llama_weight_id(id, sizeof id, name, kind, a, z, d);
    int64_t shape[2] = {r, cols};
    uint32_t v = 0;
    if (b->st) return 0;
    int64_t got = tp_graph_find(b->g, id);
    if (got >= 0) return (uint32_t)got;
    b->st = tp_graph_add_input(b->g, id, d, b->c->dtype, cols ? 2 : 1, shape[1] ? shape : &shape[0], 0, &v, b->err);
    return v;
}

static uint32_t vec(B *b, int d, const char *name, int64_t n)
{
    char id[TP_LLAMA_ID_MAX];
    tp__llama_weight_id(id, sizeof id, name, 0, 0, 0, d);
    int64_t shape[1] = {n};
    uint32_t v = 0;
    if (b->st) return 0;
    int64_t got = tp_graph_find(b->g, id);
    if (got >= 0) return (uint32_t)got;
    b->st = tp_graph_add_input(b->g, id, d, b->c->dtype, 1, shape, 0, &v, b->err);
    return v;
}

static uint32_t K(B *b, int d, const char *id, const char *op, uint32_t n, const uint32_t *in, int64_t rows, int64_t cols,
                  const char *attrs, double flops)
{
    int64_t shape[2] = {rows, cols};
    uint32_t v = 0;
    if (b->st) return 0;
    b->st = tp_graph_add_kernel(b->g, id, d, op, n, in, TP_DT_F32, 2, shape, 0, attrs, flops, &v, b->err);
    return v;
}

static uint32_t X(B *b, int d, uint32_t src, const char *id)
{
    uint32_t v = 0;
    if (b->st) return 0;
    b->st = tp_graph_add_transfer(b->g, id, d, src, &v, b->err);
    return v;
}

static uint32_t mm(B *b, int d, const char *id, uint32_t a, uint32_t w, int64_t m, int64_t n, int64_t k)
{
    uint32_t in[2] = {a, w};
    return K(b, d, id, "matmul", 2, in, m, n, "{\"trans_b\":true}", 2.0 * (double)m * (double)n * (double)k);
}

static int64_t lo(int64_t n, int parts, int i)
{
    return n * i / parts;
}

#define NOV UINT32_MAX /* no vertex: a device without heads has no attention partial */

/* the query heads [h0, h1) of device d: whole KV groups when D <= KV heads, else a contiguous
 * range of query heads (empty for some devices when D > heads) */
static void head_range(const tp_llama_config *c, int D, int d, int64_t *h0, int64_t *h1)
{
    int64_t G = c->heads / c->kv_heads;
    if (D <= c->kv_heads) {
        *h0 = lo(c->kv_heads, D, d) * G;
        *h1 = lo(c->kv_heads, D, d + 1) * G;
    } else {
        *h0 = lo(c->heads, D, d);
        *h1 = lo(c->heads, D, d + 1);
    }
}

/* SCATTER: the pieces a block of `rows` rows is cut into (piece j on device j) */
static int npieces(int D, int64_t rows)
{
    return rows < D ? (int)rows : D;
}

static int chunks_for(uint64_t bytes, uint64_t limit)
{
    uint64_t c = limit ? (bytes + limit - 1) / limit : 1;
    return c < 1 ? 1 : c > 4096 ? 4096 : (int)c;
}

void tp_llama_opts_default(tp_llama_opts *o, const tp_llama_config *c, int devices, int64_t seq, uint64_t cap)
{
    memset(o, 0, sizeof *o);
    o->devices = devices;
    o->seq = seq;
    o->batch = 1;
    if (devices < 1) devices = 1;
    tp_llama_opts_attention(o, c, cap, TP_LLAMA_FUSED);
    uint64_t es = tp_dtype_size(c->dtype);
    o->mlp_chunks = chunks_for((uint64_t)(c->intermediate / devices) * (uint64_t)c->hidden * es, cap / 8);
    o->vocab_chunks = chunks_for((uint64_t)(c->vocab / devices) * (uint64_t)c->hidden * es, cap / 8);
}

void tp_llama_opts_attention(tp_llama_opts *o, const tp_llama_config *c, uint64_t cap, int attention)
{
    o->attention = attention;
    uint64_t seq = o->seq < 1 ? 1 : (uint64_t)o->seq, H = c->hidden < 1 ? 1 : (uint64_t)c->hidden, rows;
    if (attention == TP_LLAMA_FUSED) { /* a residual block (f32) at most cap/64, at most TP_LLAMA_FUSED_ROWS rows */
        rows = cap / 64 / H / 4;
        if (rows > TP_LLAMA_FUSED_ROWS) rows = TP_LLAMA_FUSED_ROWS;
    } else /* one head's f32 scores, rows x seq, at most cap/16 (the 8: scores and probabilities) */
        rows = seq > UINT64_MAX / 8 ? 0 : cap / 16 / (8 * seq);
    uint64_t nb = rows ? (seq - 1) / rows + 1 : seq;
    if (attention == TP_LLAMA_FUSED && nb < 2) nb = 2; /* two blocks pipeline the devices (docs/llama.md) */
    if (nb > seq) nb = seq;
    o->blocks = (int)(nb < 1 ? 1 : nb > INT_MAX ? INT_MAX : nb); /* tp_llama_build refuses more than T */
}

void tp_llama_opts_residual(tp_llama_opts *o, int residual)
{
    o->residual = residual;
    if (residual != TP_LLAMA_SCATTER || o->seq < 1) return;
    int64_t want = (o->seq - 1) / 1024 + 1;
    if (want > o->devices) want = o->devices;
    if (want > o->seq) want = o->seq;
    if (o->blocks < want) o->blocks = (int)want;
}

tp_order tp_llama_plan_order(const tp_llama_opts *o)
{
    return o->residual == TP_LLAMA_SCATTER || o->attention == TP_LLAMA_FUSED ? TP_ORDER_TOPO : TP_ORDER_DEFAULT;
}

/* the label of row block q of sequence s in vertex ids: "bQ" for one sequence (the ids of a
 * single prompt are those of a batch of one), "sS.bQ" in a batch */
static const char *blk(char *buf, size_t len, int64_t S, int64_t s, int q)
{
    if (S == 1) snprintf(buf, len, "b%d", q);
    else snprintf(buf, len, "s%lld.b%d", (long long)s, q);
    return buf;
}

/* x[qq] += the D per-device partials of row block qq (sequence qq / NB, block qq % NB): the
 * partials come to device 0 by transfers (named "<part>@d0") and are summed there with the
 * residual into "<sum>" */
static void gather_sum(B *b, uint32_t *x, const uint32_t *partb, uint32_t *tmp, int D, int64_t S, int NB, int64_t T, int64_t H,
                       long long l, const char *part, const char *sum)
{
    char bl[48];
    for (int64_t qq = 0; qq < S * NB && !b->st; qq++) {
        int q = (int)(qq % NB);
        int64_t rows = lo(T, NB, q + 1) - lo(T, NB, q);
        blk(bl, sizeof bl, S, qq / NB, q);
        uint32_t n = 0;
        tmp[n++] = x[qq];
        for (int d = 0; d < D; d++)
            if (partb[qq * D + d] != NOV)
                tmp[n++] = d ? X(b, 0, partb[qq * D + d], nm(b, "L%lld.%s.%s.d%d@d0", l, part, bl, d)) : partb[qq * D];
        x[qq] = K(b, 0, nm(b, "L%lld.%s.%s", l, sum, bl), "sum", n, tmp, rows, H, NULL, (double)rows * H * (n - 1));
    }
}

/* SCATTER, the reduce-scatter: piece j of block qq (on device j) += piece j of every device's
 * partial (a row slice "<part>.bl.dD.pJ" on device d, moved to j by a transfer) into
 * "<sum>.bl.pJ" */
static void scatter_sum(B *b, uint32_t *xs, const uint32_t *partb, int D, int64_t S, int NB, int64_t T, int64_t H, long long l,
                        const char *part, const char *sum)
{
    char bl[48], attrs[96];
    uint32_t tmp[TP_MAX_DEVICES + 1];
    for (int64_t qq = 0; qq < S * NB && !b->st; qq++) {
        int q = (int)(qq % NB);
        int64_t rows = lo(T, NB, q + 1) - lo(T, NB, q);
        int P = npieces(D, rows);
        blk(bl, sizeof bl, S, qq / NB, q);
        for (int j = 0; j < P && !b->st; j++) {
            int64_t r0 = lo(rows, P, j), nr = lo(rows, P, j + 1) - r0;
            uint32_t n = 0;
            tmp[n++] = xs[qq * D + j];
            snprintf(attrs, sizeof attrs, "{\"axis\":0,\"start\":%lld,\"length\":%lld}", (long long)r0, (long long)nr);
            for (int d = 0; d < D; d++) {
                uint32_t pc = partb[qq * D + d];
                if (pc == NOV) continue;
                if (P > 1) pc = K(b, d, nm(b, "L%lld.%s.%s.d%d.p%d", l, part, bl, d, j), "slice", 1, &pc, nr, H, attrs, 0);
                if (d != j) pc = X(b, j, pc, nm(b, "L%lld.%s.%s.d%d.p%d@d%d", l, part, bl, d, j, j));
                tmp[n++] = pc;
            }
            xs[qq * D + j] = K(b, j, nm(b, "L%lld.%s.%s.p%d", l, sum, bl, j), "sum", n, tmp, nr, H, NULL, (double)nr * H * (n - 1));
        }
    }
}

/* GATHER: the block x (on device 0) normed on device d: moved there ("<xtag>.bl@dD"), then
 * "<norm>.bl.dD" */
static uint32_t gather_norm(B *b, uint32_t x, uint32_t lnw, int d, int64_t rows, long long l, const char *xtag, const char *norm,
                            const char *bl)
{
    char attrs[64];
    uint32_t nin[2] = {d ? X(b, d, x, nm(b, "L%lld.%s.%s@d%d", l, xtag, bl, d)) : x, lnw};
    snprintf(attrs, sizeof attrs, "{\"eps\":%.17g}", b->c->eps);
    return K(b, d, nm(b, "L%lld.%s.%s.d%d", l, norm, bl, d), "rmsnorm", 2, nin, rows, b->c->hidden, attrs, 4.0 * rows * b->c->hidden);
}

/* SCATTER, the all-gather: the normed rows of block qq on device d, "<tag>.bl.dD": the pieces
 * (normed where they live, "<norm>.bl.pJ", made once per block by the first device that asks)
 * moved to d and joined */
static uint32_t scatter_norm(B *b, const uint32_t *xs, uint32_t *hnp, int64_t qq, int D, int64_t rows, int d, const char *wname,
                             long long l, const char *norm, const char *tag, const char *bl)
{
    const tp_llama_config *c = b->c;
    int P = npieces(D, rows);
    char attrs[64];
    uint32_t parts[TP_MAX_DEVICES];
    snprintf(attrs, sizeof attrs, "{\"eps\":%.17g}", c->eps);
    if (hnp[qq * D] == NOV)
        for (int j = 0; j < P && !b->st; j++) {
            int64_t nr = lo(rows, P, j + 1) - lo(rows, P, j);
            uint32_t nin[2] = {xs[qq * D + j], vec(b, j, wname, c->hidden)};
            hnp[qq * D + j] = K(b, j, nm(b, "L%lld.%s.%s.p%d", l, norm, bl, j), "rmsnorm", 2, nin, nr, c->hidden, attrs, 4.0 * nr * c->hidden);
        }
    for (int j = 0; j < P && !b->st; j++)
        parts[j] = j == d ? hnp[qq * D + j] : X(b, d, hnp[qq * D + j], nm(b, "L%lld.%s.%s.p%d@d%d", l, norm, bl, j, d));
    if (b->st) return 0;
    if (P == 1) return parts[0];
    return K(b, d, nm(b, "L%lld.%s.%s.d%d", l, tag, bl, d), "concat", (uint32_t)P, parts, rows, c->hidden, "{\"axis\":0}", 0);
}

/* the ranges tp_llama_config_read checks, for configs made in code */
static int config_ok(const tp_llama_config *c)
{
    for (size_t i = 0; i < sizeof int_fields / sizeof *int_fields; i++) { /* the reader's ranges */
        int64_t v = *(const int64_t *)((const char *)c + int_fields[i].off);
        if (v < 1 || v > int_fields[i].max) return 0;
    }
    return c->eps > 0 && c->eps <= CFG_EPS_MAX && c->theta > 0 && c->theta <= CFG_THETA_MAX && tp_dtype_size(c->dtype) >= 2 &&
           tp_dtype_size(c->dtype) <= 4;
}

tp_status tp__llama_check(const tp_llama_config *c, const char *where, tp_error *err)
{
    if (!config_ok(c))
        return tp__fail(err, TP_ERR_ARG, "%s: a config field is out of range (tp_llama_config_read checks them)", where);
    return check(c, where, err);
}

/* lm_head over the rows of hn (on device 0), the vocabulary split over D devices in VC row
 * chunks each; the chunks come back to device 0 and are joined into one [rows, V] vertex named
 * `id` (a concat, or a copy when there is one chunk). `bl` labels the vertices made. */
static uint32_t lm_head(B *b, uint32_t hn, int64_t rows, const char *bl, const char *id, int D, int VC, uint32_t *parts)
{
    const tp_llama_config *c = b->c;
    const char *lm = c->tie_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
    int64_t V = c->vocab, H = c->hidden;
    int np = 0;
    for (int d = 0; d < D; d++) {
        uint32_t hin = d ? X(b, d, hn, nm(b, "final.%s@d%d", bl, d)) : hn;
        for (int k = 0; k < VC; k++) {
            int64_t v0 = lo(V, D * VC, d * VC + k), v1 = lo(V, D * VC, d * VC + k + 1);
            uint32_t w = W(b, d, lm, D * VC > 1 ? 'r' : 0, v0, v1, v1 - v0, H);
            uint32_t lg = mm(b, d, nm(b, "logits.%s.d%d.v%d", bl, d, k), hin, w, rows, v1 - v0, H);
            parts[np++] = d ? X(b, 0, lg, nm(b, "logits.%s.d%d.v%d@d0", bl, d, k)) : lg;
        }
    }
    if (np > 1) return K(b, 0, id, "concat", (uint32_t)np, parts, rows, V, "{\"axis\":1}", 0);
    return K(b, 0, id, "scale", 1, parts, rows, V, "{\"alpha\":1}", 0); /* name the output even without a concat */
}

/* 1 <= batch <= 2^20 and 1 <= batch x tokens <= 2^31-1 (S x T not computed): what tp_llama_build
 * takes, and so what tp_llama_estimate counts */
static int batch_seq_ok(int64_t S, int64_t T)
{
    return S >= 1 && S <= TP_LLAMA_MAX_BATCH && T >= 1 && T <= TP_LLAMA_MAX_SEQ / S;
}

tp_status tp_llama_build(const tp_llama_config *c, const tp_llama_opts *o, tp_graph **out, tp_error *err)
{
    tp_status s0;
    if ((s0 = tp__llama_check(c, "llama", err))) return s0;
    int D = o->devices, NB = o->blocks;
    int64_t T = o->seq, S = o->batch, H = c->hidden, hd = c->hidden / c->heads, G = c->heads / c->kv_heads, V = c->vocab,
            F = c->intermediate;
    if (D < 1 || D > TP_MAX_DEVICES || T < 1 || T > TP_LLAMA_MAX_SEQ || NB < 1 || NB > T)
        return tp__fail(err, TP_ERR_ARG, "llama: need 1 <= devices <= %d, 1 <= blocks <= tokens <= 2^31-1", TP_MAX_DEVICES);
    if (o->residual != TP_LLAMA_GATHER && o->residual != TP_LLAMA_SCATTER)
        return tp__fail(err, TP_ERR_ARG, "llama: residual %d is not gather (0) or scatter (1)", o->residual);
    if (o->attention != TP_LLAMA_SCORES && o->attention != TP_LLAMA_FUSED)
        return tp__fail(err, TP_ERR_ARG, "llama: attention %d is not scores (0) or fused (1)", o->attention);
    int SC = o->residual == TP_LLAMA_SCATTER, FU = o->attention == TP_LLAMA_FUSED;
    if (!batch_seq_ok(S, T))
        return tp__fail(err, TP_ERR_ARG, "llama: batch %lld of %lld tokens: need 1 <= batch <= 2^20 and batch x tokens <= 2^31-1",
                        (long long)S, (long long)T);
    if (o->kv_out != 0 && o->kv_out != 1) return tp__fail(err, TP_ERR_ARG, "llama: kv_out %d is not 0 or 1", o->kv_out);
    int VC = o->vocab_chunks > 0 ? o->vocab_chunks : 1, MC = o->mlp_chunks > 0 ? o->mlp_chunks : 1;
    if ((int64_t)VC * D > V || (int64_t)MC * D > F)
        return tp__fail(err, TP_ERR_ARG,
                        "llama: devices x MLP chunks (%d x %d) must not exceed the MLP columns (%lld), nor devices x vocabulary "
                        "chunks (%d x %d) the vocabulary (%lld)",
                        D, MC, (long long)F, D, VC, (long long)V);
    int64_t NBt = S * NB; /* row blocks of the whole batch, sequence-major; at most S x T < 2^31 */
    B b0 = {tp_graph_new(D), err, TP_OK, c, {0}}, *b = &b0;
    if (!b->g) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    uint32_t *x = malloc(sizeof(uint32_t) * (size_t)NBt);
    uint32_t *KK = malloc(sizeof(uint32_t) * (size_t)c->kv_heads * 2), *VV = KK + c->kv_heads;
    /* heads[]: one device's heads (a concat), D + 1 partials (a sum), D x VC logit chunks, the
     * batch's last tokens or logit blocks */
    size_t hcap = (size_t)c->heads + (size_t)D * (size_t)VC + (size_t)D + 4 + (size_t)NBt;
    uint32_t *heads = malloc(sizeof(uint32_t) * hcap);
    uint32_t *partb = malloc(sizeof(uint32_t) * (size_t)NBt * (size_t)D);
    /* SCATTER: the residual's pieces (block qq, piece j at qq x D + j) and their norms, the
     * latter made once per layer half by the first device that needs them (NOV: not yet) */
    uint32_t *xs = SC ? malloc(sizeof(uint32_t) * (size_t)NBt * (size_t)D * 2) : NULL, *hnp = NULL;
    if (!x || !KK || !heads || !partb || (SC && !xs)) {
        free(x);
        free(KK);
        free(heads);
        free(partb);
        free(xs);
        tp_graph_free(b->g);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    if (SC) hnp = xs + NBt * D;
    char attrs[128], bl[48];
    int64_t ids_shape[1] = {S * T};
    uint32_t ids = 0, emb = 0;
    b->st = tp_graph_add_input(b->g, "input_ids", 0, TP_DT_I32, 1, ids_shape, 0, &ids, err);
    if (VC == 1) {
        uint32_t table = W(b, 0, "model.embed_tokens.weight", 0, 0, 0, V, H);
        uint32_t ein[2] = {table, ids};
        emb = K(b, 0, "embed", "embedding", 2, ein, S * T, H, NULL, 0);
    } else { /* the table in VC row chunks: masked lookups, summed */
        emb = 0;
        for (int k = 0; k < VC && !b->st; k++) {
            int64_t v0 = lo(V, VC, k), v1 = lo(V, VC, k + 1);
            uint32_t ein[2] = {W(b, 0, "model.embed_tokens.weight", 'r', v0, v1, v1 - v0, H), ids};
            snprintf(attrs, sizeof attrs, "{\"id_offset\":%lld,\"masked\":true}", (long long)v0);
            uint32_t e1 = K(b, 0, nm(b, "embed.v%d", k), "embedding", 2, ein, S * T, H, attrs, 0);
            if (k) { /* in place on the running sum: two [S T, H] tensors at once, not three */
                uint32_t ad[2] = {emb, e1};
                e1 = K(b, 0, nm(b, "embed.sum%d", k), "add", 2, ad, S * T, H, NULL, (double)(S * T) * H);
                if (!b->st) b->st = tp_graph_set_inplace(b->g, e1, 0, err);
            }
            emb = e1;
        }
    }
    for (int64_t qq = 0; qq < NBt; qq++) {
        int q = (int)(qq % NB);
        int64_t r0 = lo(T, NB, q), r1 = lo(T, NB, q + 1);
        if (NBt == 1) x[qq] = emb;
        else {
            snprintf(attrs, sizeof attrs, "{\"axis\":0,\"start\":%lld,\"length\":%lld}", (long long)((qq / NB) * T + r0),
                     (long long)(r1 - r0));
            x[qq] = K(b, 0, nm(b, "x0.%s", blk(bl, sizeof bl, S, qq / NB, q)), "slice", 1, &emb, r1 - r0, H, attrs, 0);
        }
        for (int j = 0, P = npieces(D, r1 - r0); SC && j < P && !b->st; j++) { /* the block's pieces, sliced from it */
            int64_t p0 = lo(r1 - r0, P, j), np = lo(r1 - r0, P, j + 1) - p0;
            uint32_t pc = x[qq];
            blk(bl, sizeof bl, S, qq / NB, q);
            if (P > 1) {
                snprintf(attrs, sizeof attrs, "{\"axis\":0,\"start\":%lld,\"length\":%lld}", (long long)p0, (long long)np);
                pc = K(b, 0, nm(b, "x0.%s.p%d", bl, j), "slice", 1, &pc, np, H, attrs, 0);
            }
            xs[qq * D + j] = j ? X(b, j, pc, nm(b, "x0.%s.p%d@d%d", bl, j, j)) : pc;
        }
    }
    double scale = 1.0 / sqrt((double)hd);
    char pre[96];
    for (int64_t l = 0; l < c->layers && !b->st; l++) {
        snprintf(pre, sizeof pre, "model.layers.%lld.", (long long)l);
        char wn[160], lnn[160];
        /* attention: per device, per sequence, per block; a sequence's keys and values grow
         * block by block (its own only: no attention across sequences) */
        if (SC)
            for (int64_t k = 0; k < NBt * D; k++) hnp[k] = NOV;
        for (int d = 0; d < D && !b->st; d++) {
            int64_t h0, h1;
            head_range(c, D, d, &h0, &h1);
            /* the groups it touches; with D > KV heads every group's vertex ids get ".dD" (one
             * may be computed on several devices) */
            int64_t g0 = h0 / G, g1 = h1 > h0 ? (h1 - 1) / G + 1 : g0;
            int rep = D > c->kv_heads;
            char gs[16] = "";
            if (rep) snprintf(gs, sizeof gs, ".d%d", d);
            snprintf(lnn, sizeof lnn, "%sinput_layernorm.weight", pre);
            uint32_t lnw = h1 > h0 && !SC ? vec(b, d, lnn, H) : 0;
            for (int64_t qq = 0; qq < NBt && !b->st; qq++) {
                int q = (int)(qq % NB), last = q == NB - 1;
                int64_t sq = qq / NB, r0 = lo(T, NB, q), r1 = lo(T, NB, q + 1), rows = r1 - r0;
                partb[qq * D + d] = NOV;
                if (h1 == h0) continue; /* no heads: no attention partial */
                blk(bl, sizeof bl, S, sq, q);
                uint32_t hn = SC ? scatter_norm(b, xs, hnp, qq, D, rows, d, lnn, (long long)l, "attn_norm", "attn_in", bl)
                                 : gather_norm(b, x[qq], lnw, d, rows, (long long)l, "x", "attn_norm", bl);
                int nh = 0;
                for (int64_t g = g0; g < g1 && !b->st; g++) {
                    /* the prompt's whole keys and values of a group, with kv_out: outputs named
                     * "kv.L.k.bS.gG" and "kv.L.v.bS.gG" (the last block's rope, concat or write_slice) */
                    char kid[96], vid[96];
                    int kvo = o->kv_out && last && g * G >= h0; /* the group's first device names its outputs */
                    snprintf(kid, sizeof kid, "kv.%lld.k.b%lld.g%lld", (long long)l, (long long)sq, (long long)g);
                    snprintf(vid, sizeof vid, "kv.%lld.v.b%lld.g%lld", (long long)l, (long long)sq, (long long)g);
                    snprintf(wn, sizeof wn, "%sself_attn.k_proj.weight", pre);
                    uint32_t wk = W(b, d, wn, 'r', g * hd, (g + 1) * hd, hd, H);
                    snprintf(wn, sizeof wn, "%sself_attn.v_proj.weight", pre);
                    uint32_t wv = W(b, d, wn, 'r', g * hd, (g + 1) * hd, hd, H);
                    uint32_t k = mm(b, d, nm(b, "L%lld.k.g%lld%s.%s", (long long)l, (long long)g, gs, bl), hn, wk, rows, hd, H);
                    snprintf(attrs, sizeof attrs, "{\"theta\":%.17g,\"pos_offset\":%lld}", c->theta, (long long)r0);
                    k = K(b, d, kvo && q == 0 ? kid : nm(b, "L%lld.k_rope.g%lld%s.%s", (long long)l, (long long)g, gs, bl), "rope", 1, &k, rows,
                          hd, attrs, 6.0 * rows * hd);
                    uint32_t v = mm(b, d, kvo && q == 0 ? vid : nm(b, "L%lld.v.g%lld%s.%s", (long long)l, (long long)g, gs, bl), hn, wv, rows, hd,
                                    H);
                    /* the group's keys and values so far: fused (more than one block), a cache of
                     * all T rows, block 0's padded with zeros and each next block's written into it
                     * in place, so no tensor grows block by block (attention's causal mask never
                     * reads the rows not yet written); scores, a concat per block */
                    int cache = FU && NB > 1;
                    uint32_t *kv[2] = {&KK[g], &VV[g]}, part[2] = {k, v};
                    const char *kvid[2] = {kid, vid};
                    char ca[96] = "{\"axis\":0}";
                    if (cache && q == 0) snprintf(ca, sizeof ca, "{\"axis\":0,\"start\":0,\"extent\":%lld}", (long long)T);
                    else if (cache) snprintf(ca, sizeof ca, "{\"axis\":0,\"start\":%lld}", (long long)r0);
                    for (int j = 0; j < 2 && !b->st; j++) {
                        if (!cache && q == 0) { /* the first block's own */
                            *kv[j] = part[j];
                            continue;
                        }
                        uint32_t in[2] = {*kv[j], part[j]}, n = cache && q == 0 ? 1 : 2;
                        *kv[j] = K(b, d, kvo ? kvid[j] : nm(b, "L%lld.%c.g%lld%s.%s", (long long)l, "KV"[j], (long long)g, gs, bl),
                                   !cache ? "concat" : q == 0 ? "pad" : "write_slice", n, in + 2 - n, cache ? T : r1, hd, ca, 0);
                        if (cache && q > 0 && !b->st) b->st = tp_graph_set_inplace(b->g, *kv[j], 0, b->err);
                    }
                    if (kvo && !b->st) b->st = tp_graph_add_output(b->g, KK[g], err);
                    if (kvo && !b->st) b->st = tp_graph_add_output(b->g, VV[g], err);
                    for (int64_t h = g * G > h0 ? g * G : h0; h < (g + 1) * G && h < h1 && !b->st; h++) {
                        snprintf(wn, sizeof wn, "%sself_attn.q_proj.weight", pre);
                        uint32_t wq = W(b, d, wn, 'r', h * hd, (h + 1) * hd, hd, H);
                        uint32_t qh = mm(b, d, nm(b, "L%lld.q.h%lld.%s", (long long)l, (long long)h, bl), hn, wq, rows, hd, H);
                        qh = K(b, d, nm(b, "L%lld.q_rope.h%lld.%s", (long long)l, (long long)h, bl), "rope", 1, &qh, rows, hd, attrs, 6.0 * rows * hd);
                        if (FU) { /* one vertex: scores, causal softmax and the product with v, no scores tensor */
                            uint32_t ain[3] = {qh, KK[g], VV[g]};
                            char fa[128];
                            snprintf(fa, sizeof fa, "{\"scale\":%.17g,\"causal\":true,\"row_offset\":%lld}", scale, (long long)r0);
                            heads[nh++] = K(b, d, nm(b, "L%lld.attn.h%lld.%s", (long long)l, (long long)h, bl), "attention", 3, ain, rows,
                                            hd, fa, 4.0 * rows * r1 * hd + 5.0 * rows * r1);
                            continue;
                        }
                        uint32_t sin[2] = {qh, KK[g]};
                        char sa[96];
                        snprintf(sa, sizeof sa, "{\"trans_b\":true,\"alpha\":%.17g}", scale);
                        uint32_t sc = K(b, d, nm(b, "L%lld.scores.h%lld.%s", (long long)l, (long long)h, bl), "matmul", 2, sin, rows, r1, sa,
                                        2.0 * rows * r1 * hd);
                        char ma[96];
                        snprintf(ma, sizeof ma, "{\"causal\":true,\"row_offset\":%lld}", (long long)r0);
                        uint32_t pr = K(b, d, nm(b, "L%lld.probs.h%lld.%s", (long long)l, (long long)h, bl), "softmax", 1, &sc, rows, r1, ma,
                                        5.0 * rows * r1);
                        uint32_t pin[2] = {pr, VV[g]};
                        heads[nh++] = K(b, d, nm(b, "L%lld.attn.h%lld.%s", (long long)l, (long long)h, bl), "matmul", 2, pin, rows, hd, NULL,
                                        2.0 * rows * r1 * hd);
                    }
                }
                uint32_t att = heads[0];
                if (nh > 1) att = K(b, d, nm(b, "L%lld.heads.%s.d%d", (long long)l, bl, d), "concat", (uint32_t)nh, heads, rows, nh * hd, "{\"axis\":1}", 0);
                snprintf(wn, sizeof wn, "%sself_attn.o_proj.weight", pre);
                uint32_t wo = W(b, d, wn, 'c', h0 * hd, h1 * hd, H, (h1 - h0) * hd);
                partb[qq * D + d] = mm(b, d, nm(b, "L%lld.o.%s.d%d", (long long)l, bl, d), att, wo, rows, H, nh * hd);
            }
        }
        if (SC) scatter_sum(b, xs, partb, D, S, NB, T, H, (long long)l, "o", "h");
        else gather_sum(b, x, partb, heads, D, S, NB, T, H, (long long)l, "o", "h");
        if (SC)
            for (int64_t k = 0; k < NBt * D; k++) hnp[k] = NOV;
        /* MLP: each device's columns in MC chunks, partial outputs accumulated in a chain */
        for (int d = 0; d < D && !b->st; d++) {
            int64_t f0 = lo(F, D, d), f1 = lo(F, D, d + 1);
            snprintf(lnn, sizeof lnn, "%spost_attention_layernorm.weight", pre);
            uint32_t lnw = SC ? 0 : vec(b, d, lnn, H);
            for (int64_t qq = 0; qq < NBt && !b->st; qq++) {
                int q = (int)(qq % NB);
                int64_t rows = lo(T, NB, q + 1) - lo(T, NB, q);
                blk(bl, sizeof bl, S, qq / NB, q);
                uint32_t hn = SC ? scatter_norm(b, xs, hnp, qq, D, rows, d, lnn, (long long)l, "mlp_norm", "mlp_in", bl)
                                 : gather_norm(b, x[qq], lnw, d, rows, (long long)l, "h", "mlp_norm", bl);
                uint32_t acc = 0;
                for (int k = 0; k < MC && !b->st; k++) {
                    int64_t c0 = f0 + lo(f1 - f0, MC, k), c1 = f0 + lo(f1 - f0, MC, k + 1), fd = c1 - c0;
                    snprintf(wn, sizeof wn, "%smlp.gate_proj.weight", pre);
                    uint32_t wg = W(b, d, wn, 'r', c0, c1, fd, H);
                    snprintf(wn, sizeof wn, "%smlp.up_proj.weight", pre);
                    uint32_t wu = W(b, d, wn, 'r', c0, c1, fd, H);
                    snprintf(wn, sizeof wn, "%smlp.down_proj.weight", pre);
                    uint32_t wdn = W(b, d, wn, 'c', c0, c1, H, fd);
                    uint32_t gt = mm(b, d, nm(b, "L%lld.gate.%s.d%d.c%d", (long long)l, bl, d, k), hn, wg, rows, fd, H);
                    uint32_t up = mm(b, d, nm(b, "L%lld.up.%s.d%d.c%d", (long long)l, bl, d, k), hn, wu, rows, fd, H);
                    uint32_t sg = K(b, d, nm(b, "L%lld.silu.%s.d%d.c%d", (long long)l, bl, d, k), "silu", 1, &gt, rows, fd, NULL, 4.0 * rows * fd);
                    uint32_t pin[2] = {sg, up};
                    uint32_t pr = K(b, d, nm(b, "L%lld.swiglu.%s.d%d.c%d", (long long)l, bl, d, k), "mul", 2, pin, rows, fd, NULL, (double)rows * fd);
                    uint32_t dn = mm(b, d, nm(b, "L%lld.down.%s.d%d.c%d", (long long)l, bl, d, k), pr, wdn, rows, H, fd);
                    if (k) {
                        uint32_t ad[2] = {acc, dn};
                        dn = K(b, d, nm(b, "L%lld.down_acc.%s.d%d.c%d", (long long)l, bl, d, k), "add", 2, ad, rows, H, NULL, (double)rows * H);
                    }
                    acc = dn;
                }
                partb[qq * D + d] = acc;
            }
        }
        if (SC) scatter_sum(b, xs, partb, D, S, NB, T, H, (long long)l, "down", "out");
        else gather_sum(b, x, partb, heads, D, S, NB, T, H, (long long)l, "down", "out");
    }
    /* SCATTER: the blocks the final part reads, their pieces joined on device 0 */
    for (int64_t qq = 0; SC && qq < NBt && !b->st; qq++) {
        int q = (int)(qq % NB);
        if (!o->all_logits && q != NB - 1) continue;
        int64_t rows = lo(T, NB, q + 1) - lo(T, NB, q);
        int P = npieces(D, rows);
        uint32_t parts[TP_MAX_DEVICES];
        blk(bl, sizeof bl, S, qq / NB, q);
        for (int j = 0; j < P; j++) parts[j] = j ? X(b, 0, xs[qq * D + j], nm(b, "final_x.%s.p%d@d0", bl, j)) : xs[qq * D];
        x[qq] = P > 1 ? K(b, 0, nm(b, "final_x.%s", bl), "concat", (uint32_t)P, parts, rows, H, "{\"axis\":0}", 0) : parts[0];
    }
    /* final norm and lm_head, vocabulary split over devices */
    uint32_t normw = vec(b, 0, "model.norm.weight", H), outv = 0;
    snprintf(attrs, sizeof attrs, "{\"eps\":%.17g}", c->eps);
    uint32_t *parts = heads + NBt, *blocks = heads; /* logit chunks after the blocks */
    if (o->all_logits) { /* every position: block by block, joined in sequence-major order */
        for (int64_t qq = 0; qq < NBt && !b->st; qq++) {
            int q = (int)(qq % NB);
            int64_t rows = lo(T, NB, q + 1) - lo(T, NB, q);
            blk(bl, sizeof bl, S, qq / NB, q);
            uint32_t nin[2] = {x[qq], normw};
            uint32_t hn = K(b, 0, nm(b, "final_norm.%s", bl), "rmsnorm", 2, nin, rows, H, attrs, 4.0 * rows * H);
            char id[64] = "logits"; /* one block: the output itself */
            if (NBt > 1) snprintf(id, sizeof id, D * VC > 1 ? "logits.%s" : "logits.%s.c", bl);
            blocks[qq] = lm_head(b, hn, rows, bl, id, D, VC, parts);
        }
        outv = NBt > 1 ? K(b, 0, "logits", "concat", (uint32_t)NBt, blocks, S * T, V, "{\"axis\":0}", 0) : blocks[0];
    } else if (S == 1) { /* the last position of one prompt: the norm of its last block, then its last row */
        int64_t rows = lo(T, NB, NB) - lo(T, NB, NB - 1);
        blk(bl, sizeof bl, 1, 0, NB - 1);
        uint32_t nin[2] = {x[NB - 1], normw};
        uint32_t hn = K(b, 0, nm(b, "final_norm.%s", bl), "rmsnorm", 2, nin, rows, H, attrs, 4.0 * rows * H);
        snprintf(attrs, sizeof attrs, "{\"axis\":0,\"start\":%lld,\"length\":1}", (long long)(rows - 1));
        hn = K(b, 0, "last_token", "slice", 1, &hn, 1, H, attrs, 0);
        outv = lm_head(b, hn, 1, bl, "logits", D, VC, parts);
    } else { /* the last position of each sequence: their rows joined, normed, one lm_head */
        for (int64_t sq = 0; sq < S && !b->st; sq++) {
            int64_t rows = lo(T, NB, NB) - lo(T, NB, NB - 1);
            char sa[96];
            snprintf(sa, sizeof sa, "{\"axis\":0,\"start\":%lld,\"length\":1}", (long long)(rows - 1));
            blocks[sq] = K(b, 0, nm(b, "last_token.s%lld", (long long)sq), "slice", 1, &x[sq * NB + NB - 1], 1, H, sa, 0);
        }
        uint32_t lt = K(b, 0, "last_tokens", "concat", (uint32_t)S, blocks, S, H, "{\"axis\":0}", 0);
        uint32_t nin[2] = {lt, normw};
        uint32_t hn = K(b, 0, "final_norm", "rmsnorm", 2, nin, S, H, attrs, 4.0 * S * H);
        outv = lm_head(b, hn, S, "last", "logits", D, VC, parts);
    }
    free(x);
    free(KK);
    free(heads);
    free(partb);
    free(xs);
    if (!b->st) b->st = tp_graph_add_output(b->g, outv, err);
    if (!b->st) b->st = tp_graph_finalize(b->g, err);
    if (b->st) {
        tp_graph_free(b->g);
        return b->st;
    }
    *out = b->g;
    return TP_OK;
}

/* ---- estimate: tp_llama_build's loops counted in closed form -------------------------------- */

void tp_llama_estimate(const tp_llama_config *c, const tp_llama_opts *o, tp_build_estimate *e)
{
    memset(e, 0, sizeof *e);
    int Di = o->devices < 1 ? 1 : o->devices > TP_MAX_DEVICES ? TP_MAX_DEVICES : o->devices;
    if (c->heads < 1 || c->kv_heads < 1 || c->heads % c->kv_heads || c->layers < 1) return; /* G below: a whole group */
    /* sizes tp_llama_build refuses: nothing to estimate (zero), so its message, not a memory one, is what the caller sees */
    if (!batch_seq_ok(o->batch, o->seq)) return;
    double D = Di, NB = o->blocks < 1 ? 1 : o->blocks, T = (double)o->seq, Hh = (double)c->heads,
           L = (double)c->layers, H = (double)c->hidden, V = (double)c->vocab, es = (double)tp_dtype_size(c->dtype);
    double VC = o->vocab_chunks > 0 ? o->vocab_chunks : 1, MC = o->mlp_chunks > 0 ? o->mlp_chunks : 1;
    double S = (double)o->batch, NBt = S * NB; /* row blocks of the batch */
    int AL = o->all_logits;
    /* per layer, per device: its query heads and the KV groups they touch (a group shared by
     * devices counts on each); the devices with heads, and those of them after device 0; the
     * devices whose heads are concatenated (more than one) and the heads they join */
    double cdev = 0, cin = 0, KVs = 0, na = 0, na1 = 0, G = (double)(c->heads / c->kv_heads);
    uint8_t has[TP_MAX_DEVICES];
    for (int d = 0; d < Di; d++) {
        int64_t h0, h1;
        head_range(c, Di, d, &h0, &h1);
        double nh = (double)(h1 - h0);
        has[d] = h1 > h0;
        KVs += h1 > h0 ? (double)((h1 - 1) / (int64_t)G - h0 / (int64_t)G + 1) : 0;
        na += has[d];
        na1 += d && has[d];
        if (nh > 1) cdev += 1, cin += nh;
    }
    int SC = o->residual == TP_LLAMA_SCATTER, FU = o->attention == TP_LLAMA_FUSED;
    /* SCATTER: the two block sizes (T / NB rows, and one more for T mod NB blocks of each
     * sequence), their pieces, and the most pieces of any block (devices holding norm weights) */
    int64_t Ti = o->seq < 1 ? 1 : o->seq, NBi = o->blocks < 1 ? 1 : o->blocks;
    double nbig = (double)(Ti % NBi);
    int Psm = SC ? npieces(Di, Ti / NBi) : 0, Pbig = SC ? npieces(Di, Ti / NBi + 1) : 0, Pmax = nbig > 0 ? Pbig : Psm;
    /* inputs: ids, the embedding table, per layer 2 norms per device (SCATTER: per piece), q,
     * k, v rows, o columns of the devices with heads and 3 MLP matrices per chunk, the final
     * norm and lm_head (shared with a tied embedding on one device) */
    double norms = SC ? 2.0 * Pmax : na + D;
    double inputs = 1 + VC + L * (norms + na + 2 * KVs + Hh + 3 * D * MC) + 1 + (c->tie_embeddings && Di == 1 ? 0 : D * VC);
    double np = D * VC;
    /* lm_head over one block of rows: transfers of the normed rows, chunk matmuls, their
     * transfers back, the join (vertices; edges) */
    double lmk = (D - 1) + np + (D - 1) * VC + 1, lme = (D - 1) + 2 * np + (D - 1) * VC + (np > 1 ? np : 1);
    /* the final part: every block normed and through lm_head, joined (all_logits); one prompt's
     * last block normed and its last row sliced; or each sequence's last row sliced, joined, normed */
    double fk = AL ? NBt * (1 + lmk) + (NBt > 1 ? 1 : 0) : S == 1 ? 2 + lmk : S + 2 + lmk;
    double fe = AL ? NBt * (2 + lme) + (NBt > 1 ? NBt : 0) : S == 1 ? 3 + lme : 2 * S + 2 + lme;
    /* the residual's way between the halves of a layer, per layer (kernels; edges) */
    double rk = 0, re = 0;
    if (!SC) { /* the block to each device (with heads), normed there; partials back, summed */
        rk = NBt * na1 + NBt * na + NBt * na1 + NBt /* attention */ + NBt * (D - 1) + NBt * D + NBt * (D - 1) + NBt /* MLP */;
        re = NBt * na1 + 2 * NBt * na + NBt * (na1 + 1 + na) /* attention */ + NBt * (D - 1) + 2 * NBt * D + NBt * (2 * D) /* MLP */;
    } else
        for (int cls = 0; cls < 2; cls++) { /* per block: norms, all-gather, reduce-scatter */
            double nbl = S * (cls ? nbig : NB - nbig);
            int P = cls ? Pbig : Psm;
            for (int half = 0; half < 2; half++) {
                double n = half ? D : na, cP = 0; /* devices with partials; those of them that own a piece */
                for (int j = 0; j < P; j++) cP += half ? 1 : has[j];
                double moves = n * P - cP, slices = P > 1 ? n * P : 0, joins = P > 1 ? n : 0;
                rk += nbl * (P + moves + joins + slices + moves + P);
                re += nbl * (2 * P + moves + joins * P + slices + moves + P * (1 + n));
            }
        }
    /* SCATTER: each block cut into its pieces at the start, the final part's blocks joined on device 0 */
    double xk = 0, xe = 0;
    for (int cls = 0; SC && cls < 2; cls++) {
        double nbl = S * (cls ? nbig : NB - nbig), P = cls ? Pbig : Psm;
        double last = (cls ? nbig > 0 : nbig == 0) ? S : 0; /* the last block of each sequence is of this size */
        double fin = AL ? nbl : last;
        xk += nbl * ((P > 1 ? P : 0) + P - 1) + fin * (P - 1 + (P > 1 ? 1 : 0));
        xe += nbl * ((P > 1 ? P : 0) + P - 1) + fin * (P - 1 + (P > 1 ? P : 0));
    }
    double kern = (VC == 1 ? 1 : 2 * VC - 1) + (NBt > 1 ? NBt : 0) + xk +
                  L * (rk + 3 * KVs * NBt + 2 * KVs * S * (FU && NB > 1 ? NB : NB - 1) + (FU ? 3 : 5) * Hh * NBt + NBt * cdev + na * NBt /* attention */
                       + D * NBt * (6 * MC - 1)) +                                                       /* MLP */
                  fk;
    double edges = (VC == 1 ? 2 : 4 * VC - 2) + (NBt > 1 ? NBt : 0) + xe +
                   L * (re + 5 * KVs * NBt + (FU && NB > 1 ? 2 * KVs * S * (2 * NB - 1) : 4 * KVs * S * (NB - 1)) + (FU ? 6 : 8) * Hh * NBt + NBt * cin +
                        2 * na * NBt + D * NBt * (11 * MC - 2)) +
                   fe;
    e->vertices = inputs + kern;
    e->edges = edges;
    tp__estimate_bytes(e, S * T * 4 + NBt * 4 * (D + 1) + (Hh + np + D + NBt) * 4 + (SC ? 8.0 * NBt * D : 0));
    /* the first embedding: its table (or first row chunk), the ids and its [S x T, hidden] f32 output */
    e->vertex = VC == 1 ? "embed" : "embed.v0";
    e->vertex_bytes = (o->vocab_chunks > 1 ? floor(V / o->vocab_chunks) : V) * H * es + S * T * 4 + S * T * H * 4;
    e->device = 0;
}
