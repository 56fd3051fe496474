/* llama_decode.c - one step of LLaMA generation with a KV cache (Hugging Face semantics;
 * issue 12): a layer graph and a head graph, each on one device, for B sequences at the same
 * position `pos`.
 *
 * The layer keeps the batch together: every projection is one [B, *] matmul against the whole
 * Hugging Face weight; queries and keys go through RoPE as [1, B x heads, head_dim] (so every
 * row is at position pos) by reshapes, which cost nothing when the planner honours them in
 * place. The new keys and values are written into the caches at position pos by write_slice
 * kernels declared in place on the cache inputs, so an append moves one row per head.
 * Attention is one batched matmul over (sequence, KV group): the G query heads of a group are
 * the G rows of a [G, head_dim] x [head_dim, pos+1] product against that group's cached keys
 * (no repetition of keys per head), a softmax without mask (the cache holds the past only)
 * and a product with the group's values. With tp_llama_decode_opts.attend the attention covers
 * `attend` positions, those past pos masked by a causal softmax, so that the graphs of a run of
 * positions have the same sizes (and one plan). The caller adds what its session needs (resident
 * caches and weights, kept values) and finalizes. */
#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "turnip/models.h"
#include "io/util.h"
#include "models/llama_int.h"

typedef struct {
    tp_graph *g;
    tp_error *err;
    tp_status st;
    int dev;
    tp_dtype wdt; /* the weights' dtype */
    const tp_llama_decode_opts *o;
} dec;

static uint32_t in_(dec *d, const char *id, tp_dtype dt, int nd, int64_t a, int64_t b, int64_t c, int64_t e)
{
    int64_t shape[4] = {a, b, c, e};
    uint32_t v = 0;
    if (!d->st) d->st = tp_graph_add_input(d->g, id, d->dev, dt, nd, shape, 0, &v, d->err);
    return v;
}

/* an f32 kernel of shape [a, b, c, e] (the first nd) */
static uint32_t k_(dec *d, const char *id, const char *op, uint32_t n, const uint32_t *in, int nd, int64_t a, int64_t b, int64_t c,
                   int64_t e, const char *attrs, double flops)
{
    int64_t shape[4] = {a, b, c, e};
    uint32_t v = 0;
    if (!d->st) d->st = tp_graph_add_kernel(d->g, id, d->dev, op, n, in, TP_DT_F32, nd, shape, 0, attrs, flops, &v, d->err);
    return v;
}

/* x [m, k] times weight w [n, k] transposed: [m, n] */
static uint32_t mm(dec *d, const char *id, uint32_t x, uint32_t w, int64_t m, int64_t n, int64_t k)
{
    uint32_t in[2] = {x, w};
    return k_(d, id, "matmul", 2, in, 2, m, n, 0, 0, "{\"trans_b\":true}", 2.0 * (double)m * (double)n * (double)k);
}

/* x [m, k] times weight `name` [n, k] transposed: [m, n]; the weight whole (an input of that
 * name) or in row chunks concatenated (tp_llama_decode_opts.split_bytes) */
static uint32_t mm_w(dec *d, const char *id, uint32_t x, const char *name, int64_t m, int64_t n, int64_t k)
{
    const tp_llama_decode_opts *o = d->o;
    uint64_t rb = (uint64_t)k * tp_dtype_size(d->wdt), bytes = rb * (uint64_t)n;
    if (!o->split_bytes || bytes <= o->split_bytes || (o->split && !o->split(o->split_ctx, name)))
        return mm(d, id, x, in_(d, name, d->wdt, 2, n, k, 0, 0), m, n, k);
    uint64_t low = rb & (~rb + 1), unit = low >= 256 ? 1 : 256 / low; /* rows per 256-byte multiple */
    uint64_t rows = o->split_bytes / rb / unit * unit;
    if (rows < unit) rows = unit;
    int64_t nc = (int64_t)(((uint64_t)n + rows - 1) / rows);
    uint32_t *parts = malloc(sizeof(uint32_t) * (size_t)nc);
    if (!parts) {
        if (!d->st) d->st = tp__fail(d->err, TP_ERR_NOMEM, "out of memory");
        return 0;
    }
    char wid[TP_LLAMA_ID_MAX], pid[TP_LLAMA_ID_MAX];
    for (int64_t q = 0; q < nc && !d->st; q++) {
        int64_t a = q * (int64_t)rows, z = a + (int64_t)rows < n ? a + (int64_t)rows : n;
        snprintf(wid, sizeof wid, "%s#r%lld:%lld", name, (long long)a, (long long)z);
        snprintf(pid, sizeof pid, "%s.r%lld", id, (long long)a);
        parts[q] = mm(d, pid, x, in_(d, wid, d->wdt, 2, z - a, k, 0, 0), m, z - a, k);
    }
    uint32_t r = d->st ? 0 : k_(d, id, "concat", (uint32_t)nc, parts, 2, m, n, 0, 0, "{\"axis\":1}", 0);
    free(parts);
    return r;
}

/* a reshape of x, declared in place (x has no other reader) */
static uint32_t view(dec *d, const char *id, uint32_t x, int nd, int64_t a, int64_t b, int64_t c, int64_t e)
{
    uint32_t v = k_(d, id, "reshape", 1, &x, nd, a, b, c, e, NULL, 0);
    if (!d->st) d->st = tp_graph_set_inplace(d->g, v, 0, d->err);
    return v;
}

static void output(dec *d, uint32_t v)
{
    if (!d->st) d->st = tp_graph_add_output(d->g, v, d->err);
}

/* the options every builder uses: the config, devices, batch, and the device it builds on */
static tp_status check_common(const tp_llama_config *c, const tp_llama_decode_opts *o, int device, const char *what, tp_error *err)
{
    tp_status s = tp__llama_check(c, what, err);
    if (s) return s;
    if (o->devices < 1 || o->devices > TP_MAX_DEVICES)
        return tp__fail(err, TP_ERR_ARG, "%s: devices %d is outside [1, %d]", what, o->devices, TP_MAX_DEVICES);
    if (device < 0 || device >= o->devices)
        return tp__fail(err, TP_ERR_ARG, "%s: device %d is outside [0, %d)", what, device, o->devices);
    if (o->batch < 1 || o->batch > TP_LLAMA_MAX_BATCH)
        return tp__fail(err, TP_ERR_ARG, "%s: batch %lld is outside [1, 2^20]", what, (long long)o->batch);
    return TP_OK;
}

/* d's graph when it was built, else its error (the graph freed) */
static tp_status finish(dec *d, tp_graph **out)
{
    if (d->st) {
        tp_graph_free(d->g);
        return d->st;
    }
    *out = d->g;
    return TP_OK;
}

/* the decode options a layer needs: layer, max_len and pos in range, the caches and the scores
 * within 64 bits */
static tp_status check_layer(const tp_llama_config *c, const tp_llama_decode_opts *o, int64_t L, const char *what, tp_error *err)
{
    int64_t Bn = o->batch, pos = o->pos, M = o->max_len, KV = c->kv_heads, G = c->heads / KV, P = pos + 1;
    int64_t hd = c->hidden / c->heads;
    if (L < 0 || L >= c->layers)
        return tp__fail(err, TP_ERR_ARG, "%s: layer %lld is outside [0, %lld)", what, (long long)L, (long long)c->layers);
    if (M < 1 || M > TP_LLAMA_MAX_SEQ)
        return tp__fail(err, TP_ERR_ARG, "%s: max_len %lld is outside [1, 2^31-1]", what, (long long)M);
    if (pos < 0 || pos >= M)
        return tp__fail(err, TP_ERR_ARG, "%s: pos %lld is outside [0, max_len %lld)", what, (long long)pos, (long long)M);
    if (o->attend && (o->attend < P || o->attend > M))
        return tp__fail(err, TP_ERR_ARG, "%s: attend %lld is outside [pos + 1 = %lld, max_len %lld]", what, (long long)o->attend,
                        (long long)P, (long long)M);
    /* the largest tensors: the caches [B, KV, max_len, hd] and the scores [B, KV, G, attend or pos+1] */
    if (!tp__fits_f32(Bn, KV, M, hd) || !tp__fits_f32(Bn, KV, G, o->attend ? o->attend : P))
        return tp__fail(err, TP_ERR_ARG, "%s: batch %lld x %lld KV heads x %lld positions: the KV cache or the scores overflow 64 bits",
                        what, (long long)Bn, (long long)KV, (long long)M);
    return TP_OK;
}

/* Layer L into d->g on d->dev, reading the residual stream x: its K/V rows are outputs named
 * kn and vn; returns the layer's output stream, named xo (not an output). */
static uint32_t layer_into(dec *d, const tp_llama_config *c, const tp_llama_decode_opts *o, int64_t L, uint32_t x, const char *kn,
                           const char *vn, const char *xo)
{
    int64_t Bn = o->batch, pos = o->pos, M = o->max_len, H = c->hidden, NH = c->heads, KV = c->kv_heads, hd = H / NH, G = NH / KV,
            F = c->intermediate, P = o->attend ? o->attend : pos + 1; /* positions attended (past pos: masked) */
    char id[TP_LLAMA_ID_MAX], attrs[160];
    long long l = (long long)L;
#define ID(...) (snprintf(id, sizeof id, __VA_ARGS__), id)
#define WT(name, nd, a, b) in_(d, ID("model.layers.%lld." name, l), d->wdt, nd, a, b, 0, 0)
#define WN(name) (snprintf(wn, sizeof wn, "model.layers.%lld." name, l), wn)
    char wn[TP_LLAMA_ID_MAX];
    uint32_t wln = WT("input_layernorm.weight", 1, H, 0), wpn = WT("post_attention_layernorm.weight", 1, H, 0);
    uint32_t ck = in_(d, ID("kv.%lld.k", l), TP_DT_F32, 4, Bn, KV, M, hd), cv = in_(d, ID("kv.%lld.v", l), TP_DT_F32, 4, Bn, KV, M, hd);
    /* attention */
    char eps[64];
    snprintf(eps, sizeof eps, "{\"eps\":%.17g}", c->eps);
    uint32_t nin[2] = {x, wln};
    uint32_t hn = k_(d, ID("L%lld.attn_norm", l), "rmsnorm", 2, nin, 2, Bn, H, 0, 0, eps, 4.0 * (double)(Bn * H));
    snprintf(attrs, sizeof attrs, "{\"theta\":%.17g,\"pos_offset\":%lld}", c->theta, (long long)pos);
    uint32_t q = mm_w(d, ID("L%lld.q", l), hn, WN("self_attn.q_proj.weight"), Bn, NH * hd, H);
    q = view(d, ID("L%lld.q.rows", l), q, 3, 1, Bn * NH, hd, 0);
    q = k_(d, ID("L%lld.q_rope", l), "rope", 1, &q, 3, 1, Bn * NH, hd, 0, attrs, 6.0 * (double)(Bn * NH * hd));
    q = view(d, ID("L%lld.q.groups", l), q, 4, Bn, KV, G, hd);
    uint32_t k = mm_w(d, ID("L%lld.k", l), hn, WN("self_attn.k_proj.weight"), Bn, KV * hd, H);
    k = view(d, ID("L%lld.k.rows", l), k, 3, 1, Bn * KV, hd, 0);
    k = k_(d, ID("L%lld.k_rope", l), "rope", 1, &k, 3, 1, Bn * KV, hd, 0, attrs, 6.0 * (double)(Bn * KV * hd));
    k = view(d, kn, k, 4, Bn, KV, 1, hd);
    uint32_t v = mm_w(d, ID("L%lld.v", l), hn, WN("self_attn.v_proj.weight"), Bn, KV * hd, H);
    v = view(d, vn, v, 4, Bn, KV, 1, hd);
    output(d, k);
    output(d, v);
    /* the append: one row per (sequence, KV head) written into the cache's own bytes */
    snprintf(attrs, sizeof attrs, "{\"axis\":2,\"start\":%lld}", (long long)pos);
    uint32_t wk_in[2] = {ck, k}, wv_in[2] = {cv, v};
    uint32_t kc = k_(d, ID("kv.%lld.k.updated", l), "write_slice", 2, wk_in, 4, Bn, KV, M, hd, attrs, 0);
    if (!d->st) d->st = tp_graph_set_inplace(d->g, kc, 0, d->err);
    uint32_t vc = k_(d, ID("kv.%lld.v.updated", l), "write_slice", 2, wv_in, 4, Bn, KV, M, hd, attrs, 0);
    if (!d->st) d->st = tp_graph_set_inplace(d->g, vc, 0, d->err);
    if (P < M) { /* positions 0..P-1: the rest of the cache is never read */
        snprintf(attrs, sizeof attrs, "{\"axis\":2,\"start\":0,\"length\":%lld}", (long long)P);
        kc = k_(d, ID("L%lld.K", l), "slice", 1, &kc, 4, Bn, KV, P, hd, attrs, 0);
        vc = k_(d, ID("L%lld.V", l), "slice", 1, &vc, 4, Bn, KV, P, hd, attrs, 0);
    }
    snprintf(attrs, sizeof attrs, "{\"trans_b\":true,\"alpha\":%.17g}", 1.0 / sqrt((double)hd));
    uint32_t sin[2] = {q, kc};
    double work = (double)(Bn * NH) * (double)P; /* scores */
    uint32_t sc = k_(d, ID("L%lld.scores", l), "matmul", 2, sin, 4, Bn, KV, G, P, attrs, 2.0 * work * (double)hd);
    uint32_t pr;
    if (o->attend) { /* one row per query head, so the causal mask ends every row at pos */
        snprintf(attrs, sizeof attrs, "{\"causal\":true,\"row_offset\":%lld}", (long long)pos);
        sc = view(d, ID("L%lld.scores.rows", l), sc, 3, Bn * KV * G, 1, P, 0);
        pr = k_(d, ID("L%lld.probs.rows", l), "softmax", 1, &sc, 3, Bn * KV * G, 1, P, 0, attrs, 5.0 * work);
        pr = view(d, ID("L%lld.probs", l), pr, 4, Bn, KV, G, P);
    } else
        pr = k_(d, ID("L%lld.probs", l), "softmax", 1, &sc, 4, Bn, KV, G, P, NULL, 5.0 * work);
    uint32_t pin[2] = {pr, vc};
    uint32_t at = k_(d, ID("L%lld.attn", l), "matmul", 2, pin, 4, Bn, KV, G, hd, NULL, 2.0 * work * (double)hd);
    at = view(d, ID("L%lld.heads", l), at, 2, Bn, NH * hd, 0, 0);
    uint32_t o1 = mm_w(d, ID("L%lld.o", l), at, WN("self_attn.o_proj.weight"), Bn, H, NH * hd);
    uint32_t ad[2] = {x, o1};
    uint32_t h = k_(d, ID("L%lld.h", l), "add", 2, ad, 2, Bn, H, 0, 0, NULL, (double)(Bn * H));
    /* gated MLP */
    nin[0] = h;
    nin[1] = wpn;
    hn = k_(d, ID("L%lld.mlp_norm", l), "rmsnorm", 2, nin, 2, Bn, H, 0, 0, eps, 4.0 * (double)(Bn * H));
    uint32_t gt = mm_w(d, ID("L%lld.gate", l), hn, WN("mlp.gate_proj.weight"), Bn, F, H);
    uint32_t up = mm_w(d, ID("L%lld.up", l), hn, WN("mlp.up_proj.weight"), Bn, F, H);
    uint32_t sg = k_(d, ID("L%lld.silu", l), "silu", 1, &gt, 2, Bn, F, 0, 0, NULL, 4.0 * (double)(Bn * F));
    uint32_t sw[2] = {sg, up};
    uint32_t pm = k_(d, ID("L%lld.swiglu", l), "mul", 2, sw, 2, Bn, F, 0, 0, NULL, (double)(Bn * F));
    uint32_t dn = mm_w(d, ID("L%lld.down", l), pm, WN("mlp.down_proj.weight"), Bn, H, F);
    ad[0] = h;
    ad[1] = dn;
    return k_(d, xo, "add", 2, ad, 2, Bn, H, 0, 0, NULL, (double)(Bn * H));
#undef WN
#undef WT
#undef ID
}

tp_status tp_llama_decode_layer(const tp_llama_config *c, const tp_llama_decode_opts *o, tp_graph **out, tp_error *err)
{
    const char *what = "llama decode layer";
    tp_status s = check_common(c, o, o->device, what, err);
    if (!s) s = check_layer(c, o, o->layer, what, err);
    if (s) return s;
    dec d0 = {tp_graph_new(o->devices), err, TP_OK, o->device, c->dtype, o}, *d = &d0;
    if (!d->g) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    uint32_t x = in_(d, "x", TP_DT_F32, 2, o->batch, c->hidden, 0, 0);
    output(d, layer_into(d, c, o, o->layer, x, "k_new", "v_new", "x.out"));
    return finish(d, out);
}

/* the head options: vocab_chunks within the vocabulary, a chunk a matmul dimension */
static tp_status check_head(const tp_llama_config *c, const tp_llama_decode_opts *o, const char *what, tp_error *err)
{
    int64_t V = c->vocab, VC = o->vocab_chunks;
    if (VC < 1 || VC > V)
        return tp__fail(err, TP_ERR_ARG, "%s: vocab_chunks %lld is outside [1, vocabulary %lld]", what, (long long)VC, (long long)V);
    if ((V - 1) / VC + 1 > INT32_MAX) /* a chunk's rows are a matmul dimension */
        return tp__fail(err, TP_ERR_ARG, "%s: vocabulary %lld in %lld chunks: a chunk of more than 2^31-1 rows (take 2 or more)", what,
                        (long long)V, (long long)VC);
    return TP_OK;
}

/* The final norm and lm_head into d->g on d->dev, reading x: the "logits" vertex (not an output) */
static uint32_t head_into(dec *d, const tp_llama_config *c, const tp_llama_decode_opts *o, uint32_t x)
{
    int64_t Bn = o->batch, H = c->hidden, V = c->vocab, VC = o->vocab_chunks;
    uint32_t *parts = malloc(sizeof(uint32_t) * (size_t)VC);
    if (!parts) {
        if (!d->st) d->st = tp__fail(d->err, TP_ERR_NOMEM, "out of memory");
        return 0;
    }
    const char *lm = c->tie_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
    char eps[64], id[TP_LLAMA_ID_MAX];
    snprintf(eps, sizeof eps, "{\"eps\":%.17g}", c->eps);
    uint32_t nin[2];
    nin[0] = x;
    nin[1] = in_(d, "model.norm.weight", d->wdt, 1, H, 0, 0, 0);
    uint32_t hn = k_(d, "final_norm", "rmsnorm", 2, nin, 2, Bn, H, 0, 0, eps, 4.0 * (double)(Bn * H));
    for (int64_t k = 0; k < VC && !d->st; k++) { /* rows [V k / VC, V (k+1) / VC): tp_llama_build's split */
        int64_t v0 = V * k / VC, v1 = V * (k + 1) / VC;
        if (VC == 1) snprintf(id, sizeof id, "%s", lm);
        else snprintf(id, sizeof id, "%s#r%lld:%lld", lm, (long long)v0, (long long)v1);
        uint32_t w = in_(d, id, d->wdt, 2, v1 - v0, H, 0, 0);
        if (VC == 1) snprintf(id, sizeof id, "logits");
        else snprintf(id, sizeof id, "logits.v%lld", (long long)k);
        parts[k] = mm(d, id, hn, w, Bn, v1 - v0, H);
    }
    uint32_t lg = d->st ? 0 : VC == 1 ? parts[0] : k_(d, "logits", "concat", (uint32_t)VC, parts, 2, Bn, V, 0, 0, "{\"axis\":1}", 0);
    free(parts);
    return lg;
}

tp_status tp_llama_decode_head(const tp_llama_config *c, const tp_llama_decode_opts *o, tp_graph **out, tp_error *err)
{
    const char *what = "llama decode head";
    tp_status s = check_common(c, o, o->device, what, err);
    if (!s) s = check_head(c, o, what, err);
    if (s) return s;
    dec d0 = {tp_graph_new(o->devices), err, TP_OK, o->device, c->dtype, o}, *d = &d0;
    if (!d->g) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    output(d, head_into(d, c, o, in_(d, "x", TP_DT_F32, 2, o->batch, c->hidden, 0, 0)));
    return finish(d, out);
}

int tp_llama_decode_device(const tp_llama_config *c, int devices, int64_t layer)
{
    if (!c || c->layers < 1 || devices < 1 || devices > TP_MAX_DEVICES || layer < 0 || layer > c->layers) return -1;
    return (int)(layer * devices / ((int64_t)c->layers + 1)); /* < devices; no overflow: layer <= INT_MAX */
}

tp_status tp_llama_decode_token(const tp_llama_config *c, const tp_llama_decode_opts *o, tp_graph **out, tp_error *err)
{
    const char *what = "llama decode token";
    tp_status s = check_common(c, o, 0, what, err);
    if (!s && o->devices > c->layers + 1)
        s = tp__fail(err, TP_ERR_ARG, "%s: %d devices for %lld layers and the head", what, o->devices, (long long)c->layers);
    if (!s) s = check_layer(c, o, 0, what, err);
    if (!s) s = check_head(c, o, what, err);
    if (s) return s;
    dec d0 = {tp_graph_new(o->devices), err, TP_OK, 0, c->dtype, o}, *d = &d0;
    if (!d->g) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    char kn[TP_LLAMA_ID_MAX], vn[TP_LLAMA_ID_MAX], xo[TP_LLAMA_ID_MAX];
    uint32_t x = in_(d, "x", TP_DT_F32, 2, o->batch, c->hidden, 0, 0);
    for (int64_t l = 0; l <= c->layers && !d->st; l++) {
        int dev = tp_llama_decode_device(c, o->devices, l);
        if (dev != d->dev) { /* the residual stream moves to the next device */
            snprintf(xo, sizeof xo, "L%lld.x.to%d", (long long)l, dev);
            d->st = tp_graph_add_transfer(d->g, xo, dev, x, &x, err);
            d->dev = dev;
        }
        if (l == c->layers) break;
        snprintf(kn, sizeof kn, "L%lld.k_new", (long long)l);
        snprintf(vn, sizeof vn, "L%lld.v_new", (long long)l);
        snprintf(xo, sizeof xo, "L%lld.x.out", (long long)l);
        x = layer_into(d, c, o, l, x, kn, vn, xo);
    }
    if (!d->st) output(d, head_into(d, c, o, x));
    return finish(d, out);
}
