/* llama_train.c - one LoRA fine-tuning step of a LLaMA model as a TaskGraph (issue 13; the paper's
 * section 7 training workload).
 *
 * Decomposition: data parallel. Sequence s runs on device s mod D, which reads the frozen weights
 * as inputs of its own (the prefill builder's names, "@dN" on device N > 0) and its token ids and
 * labels as inputs "input_ids.sS", "labels.sS" (the kernels take i32 only as ids, so a batch-wide
 * id vector could not be cut on a device). The adapters and their Adam moments live on device 0;
 * each other device receives every adapter once by a transfer. A sequence is processed whole
 * through the projections ([T, in] x [out, in]^T) and in `blocks` query row blocks through
 * attention, which is batched per KV group: queries [KV, G x rows, hd] against keys [KV, T, hd]
 * (reshaped to [heads, rows, T] for the causal softmax), so grouped-query attention needs no
 * repeated keys and the backward's key and value gradients come out summed over the group.
 *
 * Order of emission (the planner is meant to use it as V: TP_ORDER_TOPO): the forward layer by
 * layer over all sequences, keeping only each layer's input (the checkpoint); the head per
 * sequence (RMSNorm, lm_head in vocabulary chunks, logsumexp per chunk combined, xent and
 * xent_grad per chunk, the loss scaled by 1 / (B (T - 1))); then layer by layer downwards: per
 * sequence the layer's forward recomputed from its checkpoint (the last layer's forward values
 * are used as they are) and its backward; then per adapter the per-sequence gradient partials
 * summed on their device, sent to device 0 and summed there (every gradient sum carries
 * "accumulate": true, for sum-into lowering), the two moments (adam_moment) and AdamW in place.
 * Only adapter gradients are computed: no weight gradient of a frozen matrix, no gradient into
 * the embedding (layer 0 stops at its adapters).
 *
 * tp_llama_train_estimate runs the same emitters in a counting mode for one sequence's layer,
 * head and embedding (affine in blocks and chunks past 2), and adds the rest in closed form. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "turnip/models.h"
#include "io/util.h"
#include "models/estimate.h"
#include "models/llama_int.h"

enum { TQ, TK, TV, TO, TG, TU, TD, NT };
static const char *const tname[NT] = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
static const char *const tshort[NT] = {"q", "k", "v", "o", "gate", "up", "down"};
static const char *const tmod[NT] = {"self_attn", "self_attn", "self_attn", "self_attn", "mlp", "mlp", "mlp"};

const char *tp_lora_target_name(int k)
{
    return k >= 0 && k < NT ? tname[k] : NULL;
}

tp_status tp_lora_targets_parse(const char *list, unsigned *mask, tp_error *err)
{
    *mask = 0;
    const char *p = list;
    for (;;) {
        size_t n = strcspn(p, ",");
        int k = -1;
        if (n == 3 && !strncmp(p, "all", 3)) *mask |= TP_LORA_ALL, k = NT;
        for (int t = 0; t < NT && k < 0; t++)
            if ((strlen(tshort[t]) == n && !strncmp(p, tshort[t], n)) || (strlen(tname[t]) == n && !strncmp(p, tname[t], n))) k = t;
        if (k < 0)
            return tp__fail(err, TP_ERR_ARG, "LoRA target '%.*s' is none of q, k, v, o, gate, up, down (or q_proj .. down_proj, all)",
                            (int)(n > 64 ? 64 : n), p);
        if (k < NT) *mask |= 1u << k;
        if (!p[n]) break;
        p += n + 1;
    }
    return TP_OK;
}

int tp_lora_adapter_name(int64_t layer, int target, int b, char *buf, size_t len)
{
    if (target < 0 || target >= NT) return 0;
    int n = snprintf(buf, len, "base_model.model.model.layers.%lld.%s.%s.lora_%c.weight", (long long)layer, tmod[target], tname[target],
                     b ? 'B' : 'A');
    return n > 0 && (size_t)n < len;
}

/* the module's weight [out, in] */
static void tdims(const tp_llama_config *c, int t, int64_t *out, int64_t *in)
{
    int64_t q = c->hidden / c->heads * c->heads, kv = c->hidden / c->heads * c->kv_heads;
    *out = t == TQ ? q : t == TK || t == TV ? kv : t == TG || t == TU ? c->intermediate : c->hidden;
    *in = t == TO ? q : t == TD ? c->intermediate : c->hidden;
}

void tp_lora_adapter_shape(const tp_llama_config *c, int target, int b, int64_t rank, int64_t shape[2])
{
    int64_t out, in;
    tdims(c, target, &out, &in);
    shape[0] = b ? out : rank;
    shape[1] = b ? rank : in;
}

/* ---- options ------------------------------------------------------------------------------- */

static int64_t lo(int64_t n, int64_t parts, int64_t i)
{
    return (int64_t)((__int128)n * i / parts);
}

void tp_llama_train_opts_default(tp_train_opts *o, const tp_llama_config *c, int devices, int64_t batch, int64_t seq, uint64_t cap)
{
    memset(o, 0, sizeof *o);
    o->devices = devices;
    o->batch = batch;
    o->seq = seq;
    o->rank = 16;
    o->alpha = 32;
    o->targets = TP_LORA_ALL;
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->eps = 1e-8;
    o->weight_decay = 0;
    double T = seq < 1 ? 1 : (double)seq, H = (double)c->hidden, V = (double)c->vocab, NH = (double)c->heads;
    double cp = (double)cap, es = (double)tp_dtype_size(c->dtype);
    /* scores and probabilities [heads, T / blocks, T] f32 at most cap / 16 */
    double nb = ceil(NH * T * T * 4 / (cp / 16));
    o->blocks = (int)(nb < 1 ? 1 : nb > T ? T : nb > INT_MAX ? INT_MAX : nb);
    /* a weight chunk [V / C, H] at most cap / 8, a logits chunk [T, V / C] f32 at most cap / 16 */
    double vc = fmax(ceil(V * H * es / (cp / 8)), ceil(T * V * 4 / (cp / 16)));
    vc = fmin(vc, 1 << 20); /* the builder's limit first: a vocabulary past it would not fit an int */
    o->vocab_chunks = (int)(vc < 1 ? 1 : vc > V ? V : vc);
}


static tp_status check_opts(const tp_llama_config *c, const tp_train_opts *o, tp_error *err)
{
    const char *w = "llama train";
    tp_status s = tp__llama_check(c, w, err);
    if (s) return s;
    int64_t B = o->batch, T = o->seq;
    if (B < 1 || B > TP_LLAMA_MAX_BATCH || T < 2 || T > TP_LLAMA_MAX_SEQ / B)
        return tp__fail(err, TP_ERR_ARG, "%s: batch %lld of %lld tokens: need 1 <= batch <= 2^20, 2 <= tokens and batch x tokens <= 2^31-1",
                        w, (long long)B, (long long)T);
    if (o->devices < 1 || o->devices > TP_MAX_DEVICES || o->devices > B)
        return tp__fail(err, TP_ERR_ARG, "%s: devices %d is outside [1, min(batch %lld, %d)]", w, o->devices, (long long)B, TP_MAX_DEVICES);
    if (o->blocks < 1 || o->blocks > T)
        return tp__fail(err, TP_ERR_ARG, "%s: blocks %d is outside [1, tokens %lld]", w, o->blocks, (long long)T);
    if (o->vocab_chunks < 1 || o->vocab_chunks > c->vocab)
        return tp__fail(err, TP_ERR_ARG, "%s: vocab_chunks %d is outside [1, vocab %lld]", w, o->vocab_chunks, (long long)c->vocab);
    if (o->rank < 1 || o->rank > (1 << 20)) return tp__fail(err, TP_ERR_ARG, "%s: LoRA rank %lld is outside [1, 2^20]", w, (long long)o->rank);
    if (!(o->alpha > 0 && o->alpha <= FLT_MAX)) return tp__fail(err, TP_ERR_ARG, "%s: LoRA alpha %g must be finite and > 0", w, o->alpha);
    if (!o->targets || (o->targets & ~(unsigned)TP_LORA_ALL))
        return tp__fail(err, TP_ERR_ARG, "%s: LoRA targets 0x%x: need a non-empty set of the 7 modules", w, o->targets);
    if (!(o->beta1 >= 0 && o->beta1 < 1) || !(o->beta2 >= 0 && o->beta2 < 1))
        return tp__fail(err, TP_ERR_ARG, "%s: Adam betas %g, %g must be in [0, 1)", w, o->beta1, o->beta2);
    if (!(o->eps > 0 && o->eps <= FLT_MAX) || !(o->weight_decay >= 0 && o->weight_decay <= FLT_MAX))
        return tp__fail(err, TP_ERR_ARG, "%s: Adam eps %g must be finite and > 0, weight decay %g finite and >= 0", w, o->eps, o->weight_decay);
    if (o->grads_out != 0 && o->grads_out != 1) return tp__fail(err, TP_ERR_ARG, "%s: grads_out %d is not 0 or 1", w, o->grads_out);
    int64_t hd = c->hidden / c->heads, G = c->heads / c->kv_heads, rows = (T + o->blocks - 1) / o->blocks;
    int64_t vc = (c->vocab + o->vocab_chunks - 1) / o->vocab_chunks;
    /* the largest activations: scores [heads, rows, T], logits [T, vocab chunk], MLP [T, F] */
    if (!tp__fits_f32(c->heads, rows, T, 1) || !tp__fits_f32(T, vc, 1, 1) || !tp__fits_f32(T, c->intermediate, 1, 1) ||
        !tp__fits_f32(T, c->hidden, 1, 1) || !tp__fits_f32(o->rank, c->intermediate > c->hidden ? c->intermediate : c->hidden, 1, 1))
        return tp__fail(err, TP_ERR_ARG, "%s: %lld tokens: an activation's bytes overflow 64 bits", w, (long long)T);
    if (G * rows > INT32_MAX || hd * c->heads > INT32_MAX)
        return tp__fail(err, TP_ERR_ARG, "%s: %lld query rows per KV group and block: above 2^31-1 (more blocks)", w, (long long)(G * rows));
    return TP_OK;
}

/* ---- the builder ------------------------------------------------------------------------------ */

#define NONE UINT32_MAX

typedef struct {
    tp_graph *g;
    tp_error *err;
    tp_status st;
    const tp_llama_config *c;
    const tp_train_opts *o;
    int count;          /* 1: only count kernels and transfers (nv) and their inputs (ne) */
    double nv, ne;
    int D, NB, VC;
    int64_t S, T, H, hd, NH, KV, G, F, V, r, L;
    double sc, qscale;  /* alpha / r; 1 / sqrt(head_dim) */
    char attn_eps[64], rope[96];
    char id[TP_LLAMA_ID_MAX];
    uint32_t *ad;       /* [L][NT][2][3]: adapter, exp_avg, exp_avg_sq inputs on device 0 (NONE: no target) */
    uint32_t *adc;      /* [L][NT][2][D]: the adapter's copy on device d (NONE: not yet) */
    uint32_t *part;     /* [NT][2][D][per]: this layer's gradient partials per device */
    uint32_t *npart;    /* [NT][2][D] */
    int64_t per;        /* most sequences per device */
} TB;

static const char *nm(TB *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->id, sizeof b->id, fmt, ap);
    va_end(ap);
    return b->id;
}

/* an f32 kernel of shape shp[0..nd-1] */
static uint32_t kn(TB *b, int d, const char *id, const char *op, uint32_t n, const uint32_t *in, int nd, const int64_t *shp,
                   const char *attrs, double flops)
{
    uint32_t v = 0;
    if (b->st) return 0;
    if (b->count) {
        b->nv += 1;
        b->ne += n;
        return 0;
    }
    b->st = tp_graph_add_kernel(b->g, id, d, op, n, in, TP_DT_F32, nd, shp, 0, attrs, flops, &v, b->err);
    return v;
}

/* the same, declared in place on input k */
static uint32_t kip(TB *b, int d, const char *id, const char *op, uint32_t n, const uint32_t *in, int nd, const int64_t *shp,
                    const char *attrs, double flops, int k)
{
    uint32_t v = kn(b, d, id, op, n, in, nd, shp, attrs, flops);
    if (!b->st && !b->count) b->st = tp_graph_set_inplace(b->g, v, k, b->err);
    return v;
}

#define SH(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}
#define IN(...) (uint32_t)(sizeof((uint32_t[]){__VA_ARGS__}) / sizeof(uint32_t)), (uint32_t[]){__VA_ARGS__}

/* x [.., m, k] times w [n, k] transposed (alpha a) */
static uint32_t mmT(TB *b, int d, const char *id, uint32_t x, uint32_t w, int64_t m, int64_t n, int64_t k, double a)
{
    char at[96] = "{\"trans_b\":true}";
    if (a != 1) snprintf(at, sizeof at, "{\"trans_b\":true,\"alpha\":%.17g}", a);
    return kn(b, d, id, "matmul", IN(x, w), SH(m, n), at, 2.0 * (double)m * (double)n * (double)k);
}

/* a reshape declared in place (its input has no other reader) */
static uint32_t view(TB *b, int d, const char *id, uint32_t x, int nd, const int64_t *shp)
{
    return kip(b, d, id, "reshape", IN(x), nd, shp, NULL, 0, 0);
}

static uint32_t xfer(TB *b, int d, uint32_t src, const char *id)
{
    uint32_t v = 0;
    if (b->st) return 0;
    if (b->count) {
        b->nv += 1;
        b->ne += 1;
        return 0;
    }
    b->st = tp_graph_add_transfer(b->g, id, d, src, &v, b->err);
    return v;
}

static uint32_t input(TB *b, const char *id, int d, tp_dtype dt, int nd, const int64_t *shp)
{
    uint32_t v = 0;
    if (b->st || b->count) return 0;
    int64_t got = tp_graph_find(b->g, id);
    if (got >= 0) return (uint32_t)got;
    b->st = tp_graph_add_input(b->g, id, d, dt, nd, shp, 0, &v, b->err);
    return v;
}

/* frozen weight NAME (rows [a, z) when kind is 'r') on device d, as the prefill names it */
static uint32_t W(TB *b, int d, const char *name, char kind, int64_t a, int64_t z, int nd, const int64_t *shp)
{
    char id[TP_LLAMA_ID_MAX];
    tp__llama_weight_id(id, sizeof id, name, kind, a, z, d);
    return input(b, id, d, b->c->dtype, nd, shp);
}

static int is_target(const TB *b, int t)
{
    return (b->o->targets >> t) & 1;
}

static size_t aidx(int64_t l, int t, int m)
{
    return ((size_t)l * NT + (size_t)t) * 2 + (size_t)m;
}

/* adapter matrix m (0: A, 1: B) of target t of layer l, on device d */
static uint32_t adapter(TB *b, int d, int64_t l, int t, int m)
{
    size_t i = aidx(l, t, m);
    if (b->count || b->st) return 0;
    if (!d) return b->ad[i * 3];
    uint32_t *c = &b->adc[i * (size_t)b->D + (size_t)d];
    if (*c == NONE) {
        char n[TP_LLAMA_ID_MAX];
        tp_lora_adapter_name(l, t, m, n, sizeof n);
        *c = xfer(b, d, b->ad[i * 3], nm(b, "%s@d%d", n, d));
    }
    return *c;
}

static void add_partial(TB *b, int d, int t, int m, uint32_t v)
{
    if (b->count || b->st) return;
    size_t i = ((size_t)t * 2 + (size_t)m) * (size_t)b->D + (size_t)d;
    b->part[i * (size_t)b->per + b->npart[i]++] = v;
}

static const char *weight_name(int64_t l, int t, char *buf, size_t len)
{
    snprintf(buf, len, "model.layers.%lld.%s.%s.weight", (long long)l, tmod[t], tname[t]);
    return buf;
}

/* y = x W^T, plus (alpha / r) (x A^T) B^T on a target; *u gets x A^T (NONE off targets) */
static uint32_t proj(TB *b, int d, int64_t l, const char *pre, int t, uint32_t x, uint32_t *u)
{
    int64_t out, in, T = b->T;
    tdims(b->c, t, &out, &in);
    char wn[160];
    uint32_t w = W(b, d, weight_name(l, t, wn, sizeof wn), 0, 0, 0, SH(out, in));
    *u = NONE;
    if (!is_target(b, t)) return mmT(b, d, nm(b, "%s.%s", pre, tshort[t]), x, w, T, out, in, 1);
    uint32_t A = adapter(b, d, l, t, 0), Bm = adapter(b, d, l, t, 1); /* before nm(): a first use names a transfer */
    uint32_t y0 = mmT(b, d, nm(b, "%s.%s.base", pre, tshort[t]), x, w, T, out, in, 1);
    *u = mmT(b, d, nm(b, "%s.%s.lora_u", pre, tshort[t]), x, A, T, b->r, in, 1);
    uint32_t yl = mmT(b, d, nm(b, "%s.%s.lora", pre, tshort[t]), *u, Bm, T, out, b->r, b->sc);
    return kip(b, d, nm(b, "%s.%s", pre, tshort[t]), "add", IN(y0, yl), SH(T, out), NULL, (double)T * (double)out, 0);
}

/* the backward of proj given dy [T, out]: the adapter's gradient partials (on a target), and
 * the parts of dx [T, in] into dx[0..] when want_dx (returns how many: 1 or 2) */
static int proj_bwd(TB *b, int d, int64_t l, const char *pre, int t, uint32_t dy, uint32_t x, uint32_t u, int want_dx, uint32_t *dx)
{
    int64_t out, in, T = b->T, r = b->r;
    tdims(b->c, t, &out, &in);
    char wn[160];
    int n = 0;
    uint32_t du = NONE;
    if (is_target(b, t)) {
        uint32_t A = adapter(b, d, l, t, 0), Bm = adapter(b, d, l, t, 1);
        if (u == NONE) u = mmT(b, d, nm(b, "%s.%s.lora_u", pre, tshort[t]), x, A, T, r, in, 1);
        char at[96], nA[TP_LLAMA_ID_MAX], nB[TP_LLAMA_ID_MAX];
        int one = b->S == 1; /* the only partial is the gradient */
        tp_lora_adapter_name(l, t, 0, nA, sizeof nA);
        tp_lora_adapter_name(l, t, 1, nB, sizeof nB);
        snprintf(at, sizeof at, "{\"trans_a\":true,\"alpha\":%.17g}", b->sc);
        uint32_t gB = kn(b, d, one ? nm(b, "%s.grad", nB) : nm(b, "%s.%s.dB", pre, tshort[t]), "matmul", IN(dy, u), SH(out, r), at,
                         2.0 * (double)out * (double)r * (double)T);
        snprintf(at, sizeof at, "{\"alpha\":%.17g}", b->sc);
        du = kn(b, d, nm(b, "%s.%s.du", pre, tshort[t]), "matmul", IN(dy, Bm), SH(T, r), at, 2.0 * (double)T * (double)r * (double)out);
        uint32_t gA = kn(b, d, one ? nm(b, "%s.grad", nA) : nm(b, "%s.%s.dA", pre, tshort[t]), "matmul", IN(du, x), SH(r, in),
                         "{\"trans_a\":true}", 2.0 * (double)r * (double)in * (double)T);
        add_partial(b, d, t, 0, gA);
        add_partial(b, d, t, 1, gB);
        if (want_dx) dx[n++] = kn(b, d, nm(b, "%s.%s.dx_lora", pre, tshort[t]), "matmul", IN(du, A), SH(T, in), NULL,
                                  2.0 * (double)T * (double)in * (double)r);
    }
    if (want_dx) {
        uint32_t w = W(b, d, weight_name(l, t, wn, sizeof wn), 0, 0, 0, SH(out, in));
        dx[n++] = kn(b, d, nm(b, "%s.%s.dx", pre, tshort[t]), "matmul", IN(dy, w), SH(T, in), NULL, 2.0 * (double)T * (double)in * (double)out);
    }
    return n;
}

/* a gradient sum (n >= 1 parts; one part is returned as it is) */
static uint32_t gsum(TB *b, int d, const char *id, uint32_t n, const uint32_t *in, int nd, const int64_t *shp)
{
    if (n == 1) return in[0];
    double e = 1;
    for (int i = 0; i < nd; i++) e *= (double)shp[i];
    return kn(b, d, id, "sum", n, in, nd, shp, "{\"accumulate\":true}", e * (double)(n - 1));
}

/* one layer's forward values for one sequence (the block arrays hold NB entries) */
typedef struct {
    uint32_t x, h1, xm, h2, gt, up, sg, m, attn, kt, vt, out;
    uint32_t u[NT];
    uint32_t *qb, *p; /* per block: queries [KV, G rows, hd], probabilities [KV, G rows, T] */
} fwd;

static int fwd_alloc(fwd *f, int NB)
{
    f->qb = malloc(sizeof(uint32_t) * 2 * (size_t)NB);
    f->p = f->qb ? f->qb + NB : NULL;
    return f->qb != NULL;
}

static uint32_t norm_w(TB *b, int d, int64_t l, const char *which)
{
    char wn[160];
    snprintf(wn, sizeof wn, "model.layers.%lld.%s.weight", (long long)l, which);
    return W(b, d, wn, 0, 0, 0, SH(b->H));
}

/* Layer l of sequence s on device d from its input x. full: also the MLP's down projection and
 * the residual (f->out, the next layer's input); else (a recompute) the values its backward
 * reads, up to the MLP's product. pre labels the vertices. */
static void layer_fwd(TB *b, int d, int64_t l, const char *pre, uint32_t x, int full, fwd *f)
{
    int64_t T = b->T, H = b->H, hd = b->hd, NH = b->NH, KV = b->KV, G = b->G, F = b->F;
    f->x = x;
    f->h1 = kn(b, d, nm(b, "%s.attn_norm", pre), "rmsnorm", IN(x, norm_w(b, d, l, "input_layernorm")), SH(T, H), b->attn_eps, 4.0 * T * H);
    uint32_t q = proj(b, d, l, pre, TQ, f->h1, &f->u[TQ]);
    uint32_t k = proj(b, d, l, pre, TK, f->h1, &f->u[TK]);
    uint32_t v = proj(b, d, l, pre, TV, f->h1, &f->u[TV]);
    q = view(b, d, nm(b, "%s.q3", pre), q, SH(T, NH, hd));
    uint32_t qr = kn(b, d, nm(b, "%s.q_rope", pre), "rope", IN(q), SH(T, NH, hd), b->rope, 6.0 * T * NH * hd);
    k = view(b, d, nm(b, "%s.k3", pre), k, SH(T, KV, hd));
    k = kn(b, d, nm(b, "%s.k_rope", pre), "rope", IN(k), SH(T, KV, hd), b->rope, 6.0 * T * KV * hd);
    f->kt = kn(b, d, nm(b, "%s.keys", pre), "transpose", IN(k), SH(KV, T, hd), "{\"perm\":[1,0,2]}", 0);
    v = view(b, d, nm(b, "%s.v3", pre), v, SH(T, KV, hd));
    f->vt = kn(b, d, nm(b, "%s.values", pre), "transpose", IN(v), SH(KV, T, hd), "{\"perm\":[1,0,2]}", 0);
    uint32_t *ob = malloc(sizeof(uint32_t) * (size_t)b->NB);
    if (!ob && !b->st) b->st = tp__fail(b->err, TP_ERR_NOMEM, "out of memory");
    char at[160];
    for (int q0 = 0; q0 < b->NB && !b->st; q0++) {
        int64_t r0 = lo(T, b->NB, q0), rows = lo(T, b->NB, q0 + 1) - r0;
        uint32_t qs = qr;
        if (b->NB > 1) {
            snprintf(at, sizeof at, "{\"axis\":0,\"start\":%lld,\"length\":%lld}", (long long)r0, (long long)rows);
            qs = kn(b, d, nm(b, "%s.q.b%d", pre, q0), "slice", IN(qr), SH(rows, NH, hd), at, 0);
        }
        qs = view(b, d, nm(b, "%s.q4.b%d", pre, q0), qs, SH(rows, KV, G, hd));
        qs = kn(b, d, nm(b, "%s.qt.b%d", pre, q0), "transpose", IN(qs), SH(KV, G, rows, hd), "{\"perm\":[1,2,0,3]}", 0);
        f->qb[q0] = view(b, d, nm(b, "%s.queries.b%d", pre, q0), qs, SH(KV, G * rows, hd));
        snprintf(at, sizeof at, "{\"trans_b\":true,\"alpha\":%.17g}", b->qscale);
        uint32_t sc = kn(b, d, nm(b, "%s.scores.b%d", pre, q0), "matmul", IN(f->qb[q0], f->kt), SH(KV, G * rows, T), at,
                         2.0 * (double)NH * (double)rows * (double)T * (double)hd);
        sc = view(b, d, nm(b, "%s.scores4.b%d", pre, q0), sc, SH(NH, rows, T));
        snprintf(at, sizeof at, "{\"causal\":true,\"row_offset\":%lld}", (long long)r0);
        uint32_t p = kn(b, d, nm(b, "%s.probs4.b%d", pre, q0), "softmax", IN(sc), SH(NH, rows, T), at, 5.0 * NH * rows * T);
        f->p[q0] = view(b, d, nm(b, "%s.probs.b%d", pre, q0), p, SH(KV, G * rows, T));
        uint32_t o = kn(b, d, nm(b, "%s.pv.b%d", pre, q0), "matmul", IN(f->p[q0], f->vt), SH(KV, G * rows, hd), NULL,
                        2.0 * (double)NH * (double)rows * (double)T * (double)hd);
        o = view(b, d, nm(b, "%s.pv4.b%d", pre, q0), o, SH(KV, G, rows, hd));
        o = kn(b, d, nm(b, "%s.pvt.b%d", pre, q0), "transpose", IN(o), SH(rows, KV, G, hd), "{\"perm\":[2,0,1,3]}", 0);
        ob[q0] = view(b, d, nm(b, b->NB > 1 ? "%s.heads.b%d" : "%s.heads", pre, q0), o, SH(rows, H));
    }
    if (!b->st)
        f->attn = b->NB > 1 ? kn(b, d, nm(b, "%s.heads", pre), "concat", (uint32_t)b->NB, ob, SH(T, H), "{\"axis\":0}", 0) : ob[0];
    free(ob);
    uint32_t o = proj(b, d, l, pre, TO, f->attn, &f->u[TO]);
    f->xm = kip(b, d, nm(b, "%s.resid", pre), "add", IN(x, o), SH(T, H), NULL, (double)T * H, 1);
    f->h2 = kn(b, d, nm(b, "%s.mlp_norm", pre), "rmsnorm", IN(f->xm, norm_w(b, d, l, "post_attention_layernorm")), SH(T, H), b->attn_eps,
               4.0 * T * H);
    f->gt = proj(b, d, l, pre, TG, f->h2, &f->u[TG]);
    f->up = proj(b, d, l, pre, TU, f->h2, &f->u[TU]);
    f->sg = kn(b, d, nm(b, "%s.silu", pre), "silu", IN(f->gt), SH(T, F), NULL, 4.0 * T * F);
    f->m = kn(b, d, nm(b, "%s.swiglu", pre), "mul", IN(f->sg, f->up), SH(T, F), NULL, (double)T * F);
    f->u[TD] = NONE;
    f->out = NONE;
    if (full) {
        uint32_t dn = proj(b, d, l, pre, TD, f->m, &f->u[TD]);
        f->out = kip(b, d, nm(b, "%s.out", pre), "add", IN(f->xm, dn), SH(T, H), NULL, (double)T * H, 1);
    }
}

/* The backward of layer l (forward values f) given dy = dL/d(its output) [T, H]: the adapters'
 * gradient partials, and dL/d(its input) when l > 0 (returned; NONE at layer 0). */
static uint32_t layer_bwd(TB *b, int d, int64_t l, const char *pre, const fwd *f, uint32_t dy)
{
    int64_t T = b->T, H = b->H, hd = b->hd, NH = b->NH, KV = b->KV, G = b->G, F = b->F;
    int want_dx = l > 0;
    unsigned tg = b->o->targets;
    int want_attn = want_dx || (tg & (TP_LORA_Q | TP_LORA_K | TP_LORA_V)); /* dq, dk, dv */
    int want_dxm = want_attn || (tg & TP_LORA_O);
    int want_dh2 = want_dxm;
    uint32_t parts[4];
    char at[160];
    /* MLP */
    uint32_t dm = NONE;
    int n = proj_bwd(b, d, l, pre, TD, dy, f->m, f->u[TD], want_dh2 || (tg & (TP_LORA_GATE | TP_LORA_UP)), parts);
    if (n) dm = gsum(b, d, nm(b, "%s.dm", pre), (uint32_t)n, parts, SH(T, F));
    if (dm == NONE) return NONE;
    uint32_t dsg = kn(b, d, nm(b, "%s.dsilu", pre), "mul", IN(dm, f->up), SH(T, F), NULL, (double)T * F);
    uint32_t dup = kn(b, d, nm(b, "%s.dup", pre), "mul", IN(dm, f->sg), SH(T, F), NULL, (double)T * F);
    uint32_t dgt = kip(b, d, nm(b, "%s.dgate", pre), "silu_grad", IN(f->gt, dsg), SH(T, F), NULL, 6.0 * T * F, 1);
    uint32_t dh[4];
    n = proj_bwd(b, d, l, pre, TG, dgt, f->h2, f->u[TG], want_dh2, dh);
    n += proj_bwd(b, d, l, pre, TU, dup, f->h2, f->u[TU], want_dh2, dh + n);
    if (!want_dxm) return NONE;
    uint32_t dh2 = gsum(b, d, nm(b, "%s.dh2", pre), (uint32_t)n, dh, SH(T, H));
    uint32_t dxn = kn(b, d, nm(b, "%s.dmlp_norm", pre), "rmsnorm_grad", IN(f->xm, norm_w(b, d, l, "post_attention_layernorm"), dh2), SH(T, H),
                      b->attn_eps, 10.0 * T * H);
    uint32_t dxm = gsum(b, d, nm(b, "%s.dresid", pre), 2, (uint32_t[]){dy, dxn}, SH(T, H));
    /* attention */
    n = proj_bwd(b, d, l, pre, TO, dxm, f->attn, f->u[TO], want_attn, parts);
    if (!want_attn) return NONE;
    uint32_t da = gsum(b, d, nm(b, "%s.dheads", pre), (uint32_t)n, parts, SH(T, H));
    uint32_t *dq = malloc(sizeof(uint32_t) * 3 * (size_t)b->NB), *dk = dq ? dq + b->NB : NULL, *dv = dq ? dk + b->NB : NULL;
    if (!dq && !b->st) b->st = tp__fail(b->err, TP_ERR_NOMEM, "out of memory");
    for (int q0 = 0; q0 < b->NB && !b->st; q0++) {
        int64_t r0 = lo(T, b->NB, q0), rows = lo(T, b->NB, q0 + 1) - r0;
        uint32_t g = da;
        if (b->NB > 1) {
            snprintf(at, sizeof at, "{\"axis\":0,\"start\":%lld,\"length\":%lld}", (long long)r0, (long long)rows);
            g = kn(b, d, nm(b, "%s.dheads.b%d", pre, q0), "slice", IN(da), SH(rows, H), at, 0);
        }
        g = view(b, d, nm(b, "%s.dpv4.b%d", pre, q0), g, SH(rows, KV, G, hd));
        g = kn(b, d, nm(b, "%s.dpvt.b%d", pre, q0), "transpose", IN(g), SH(KV, G, rows, hd), "{\"perm\":[1,2,0,3]}", 0);
        g = view(b, d, nm(b, "%s.dpv.b%d", pre, q0), g, SH(KV, G * rows, hd));
        double fl = 2.0 * (double)NH * (double)rows * (double)T * (double)hd;
        uint32_t dp = kn(b, d, nm(b, "%s.dprobs.b%d", pre, q0), "matmul", IN(g, f->vt), SH(KV, G * rows, T), "{\"trans_b\":true}", fl);
        dv[q0] = kn(b, d, nm(b, "%s.dvalues.b%d", pre, q0), "matmul", IN(f->p[q0], g), SH(KV, T, hd), "{\"trans_a\":true}", fl);
        snprintf(at, sizeof at, "{\"scale\":%.17g}", b->qscale);
        uint32_t ds = kn(b, d, nm(b, "%s.dscores.b%d", pre, q0), "softmax_grad", IN(f->p[q0], dp), SH(KV, G * rows, T), at,
                         4.0 * NH * rows * T);
        uint32_t gq = kn(b, d, nm(b, "%s.dqueries.b%d", pre, q0), "matmul", IN(ds, f->kt), SH(KV, G * rows, hd), NULL, fl);
        dk[q0] = kn(b, d, nm(b, "%s.dkeys.b%d", pre, q0), "matmul", IN(ds, f->qb[q0]), SH(KV, T, hd), "{\"trans_a\":true}", fl);
        gq = view(b, d, nm(b, "%s.dqt.b%d", pre, q0), gq, SH(KV, G, rows, hd));
        gq = kn(b, d, nm(b, "%s.dq4.b%d", pre, q0), "transpose", IN(gq), SH(rows, KV, G, hd), "{\"perm\":[2,0,1,3]}", 0);
        dq[q0] = view(b, d, nm(b, b->NB > 1 ? "%s.dq_rope.b%d" : "%s.dq_rope", pre, q0), gq, SH(rows, NH, hd));
    }
    uint32_t gq = NONE, gk = NONE, gv = NONE;
    if (!b->st) {
        gq = b->NB > 1 ? kn(b, d, nm(b, "%s.dq_rope", pre), "concat", (uint32_t)b->NB, dq, SH(T, NH, hd), "{\"axis\":0}", 0) : dq[0];
        gk = gsum(b, d, nm(b, "%s.dkeys", pre), (uint32_t)b->NB, dk, SH(KV, T, hd));
        gv = gsum(b, d, nm(b, "%s.dvalues", pre), (uint32_t)b->NB, dv, SH(KV, T, hd));
    }
    free(dq);
    gq = kn(b, d, nm(b, "%s.dq3", pre), "rope_grad", IN(gq), SH(T, NH, hd), b->rope, 6.0 * T * NH * hd);
    gq = view(b, d, nm(b, "%s.dq", pre), gq, SH(T, NH * hd));
    gk = kn(b, d, nm(b, "%s.dk_rope", pre), "transpose", IN(gk), SH(T, KV, hd), "{\"perm\":[1,0,2]}", 0);
    gk = kn(b, d, nm(b, "%s.dk3", pre), "rope_grad", IN(gk), SH(T, KV, hd), b->rope, 6.0 * T * KV * hd);
    gk = view(b, d, nm(b, "%s.dk", pre), gk, SH(T, KV * hd));
    gv = kn(b, d, nm(b, "%s.dv3", pre), "transpose", IN(gv), SH(T, KV, hd), "{\"perm\":[1,0,2]}", 0);
    gv = view(b, d, nm(b, "%s.dv", pre), gv, SH(T, KV * hd));
    uint32_t dh1[6];
    n = proj_bwd(b, d, l, pre, TQ, gq, f->h1, f->u[TQ], want_dx, dh1);
    n += proj_bwd(b, d, l, pre, TK, gk, f->h1, f->u[TK], want_dx, dh1 + n);
    n += proj_bwd(b, d, l, pre, TV, gv, f->h1, f->u[TV], want_dx, dh1 + n);
    if (!want_dx) return NONE;
    uint32_t g1 = gsum(b, d, nm(b, "%s.dh1", pre), (uint32_t)n, dh1, SH(T, H));
    uint32_t dxn2 = kn(b, d, nm(b, "%s.dattn_norm", pre), "rmsnorm_grad", IN(f->x, norm_w(b, d, l, "input_layernorm"), g1), SH(T, H),
                       b->attn_eps, 10.0 * T * H);
    return gsum(b, d, nm(b, "%s.dx", pre), 2, (uint32_t[]){dxm, dxn2}, SH(T, H));
}

/* the embedding of sequence s on device d (ids its input) */
static uint32_t embed(TB *b, int d, int64_t s, uint32_t ids)
{
    int64_t T = b->T, H = b->H, V = b->V;
    if (b->VC == 1)
        return kn(b, d, nm(b, "s%lld.embed", (long long)s), "embedding", IN(W(b, d, "model.embed_tokens.weight", 0, 0, 0, SH(V, H)), ids),
                  SH(T, H), NULL, 0);
    uint32_t *e = calloc((size_t)b->VC, sizeof(uint32_t));
    if (!e) {
        if (!b->st) b->st = tp__fail(b->err, TP_ERR_NOMEM, "out of memory");
        return 0;
    }
    char at[96];
    for (int k = 0; k < b->VC && !b->st; k++) {
        int64_t v0 = lo(V, b->VC, k), v1 = lo(V, b->VC, k + 1);
        snprintf(at, sizeof at, "{\"id_offset\":%lld,\"masked\":true}", (long long)v0);
        e[k] = kn(b, d, nm(b, "s%lld.embed.v%d", (long long)s, k), "embedding",
                  IN(W(b, d, "model.embed_tokens.weight", 'r', v0, v1, SH(v1 - v0, H)), ids), SH(T, H), at, 0);
    }
    uint32_t x = b->st ? 0 : e[0]; /* an add chain, as the prefill's: each add holds two chunks' rows, not all */
    for (int k = 1; k < b->VC && !b->st; k++)
        x = kip(b, d, nm(b, k + 1 < b->VC ? "s%lld.embed.sum%d" : "s%lld.embed", (long long)s, k), "add", IN(x, e[k]), SH(T, H), NULL,
                (double)T * H, 0);
    free(e);
    return x;
}

/* the head of sequence s: final norm, lm_head in vocabulary chunks, the per-position loss
 * (*loss, [T, 1]) and dL/dx of the last layer's output (returned) */
static uint32_t head(TB *b, int d, int64_t s, uint32_t x, uint32_t labels, const char *loss_name, uint32_t *loss)
{
    char loss_id[64];
    snprintf(loss_id, sizeof loss_id, "%s", loss_name); /* it may be b->id, which nm() overwrites */
    int64_t T = b->T, H = b->H, V = b->V;
    int VC = b->VC;
    const char *lm = b->c->tie_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
    uint32_t nw = W(b, d, "model.norm.weight", 0, 0, 0, SH(H));
    uint32_t hf = kn(b, d, nm(b, "s%lld.final_norm", (long long)s), "rmsnorm", IN(x, nw), SH(T, H), b->attn_eps, 4.0 * T * H);
    uint32_t *lg = malloc(sizeof(uint32_t) * 4 * (size_t)VC), *lse = lg ? lg + VC : NULL, *ls = lg ? lse + VC : NULL, *dh = lg ? ls + VC : NULL;
    uint32_t *w = malloc(sizeof(uint32_t) * (size_t)VC);
    if ((!lg || !w) && !b->st) b->st = tp__fail(b->err, TP_ERR_NOMEM, "out of memory");
    for (int k = 0; k < VC && !b->st; k++) {
        int64_t v0 = lo(V, VC, k), v1 = lo(V, VC, k + 1);
        w[k] = W(b, d, lm, VC > 1 ? 'r' : 0, v0, v1, SH(v1 - v0, H));
        lg[k] = mmT(b, d, nm(b, "s%lld.logits.v%d", (long long)s, k), hf, w[k], T, v1 - v0, H, 1);
        lse[k] = kn(b, d, nm(b, VC > 1 ? "s%lld.lse.v%d" : "s%lld.lse", (long long)s, k), "logsumexp", IN(lg[k]), SH(T, 1), NULL,
                    3.0 * T * (v1 - v0));
    }
    uint32_t all = NONE, dhf = NONE, dx = NONE;
    if (!b->st) all = VC > 1 ? kn(b, d, nm(b, "s%lld.lse", (long long)s), "logsumexp", (uint32_t)VC, lse, SH(T, 1), NULL, 3.0 * T * VC) : lse[0];
    char at[128];
    double scale = 1.0 / ((double)b->S * (double)(T - 1));
    for (int k = 0; k < VC && !b->st; k++) {
        int64_t v0 = lo(V, VC, k), v1 = lo(V, VC, k + 1);
        snprintf(at, sizeof at, "{\"id_offset\":%lld,\"scale\":%.17g}", (long long)v0, scale);
        ls[k] = kn(b, d, VC > 1 ? nm(b, "s%lld.loss.v%d", (long long)s, k) : loss_id, "xent", IN(lg[k], all, labels), SH(T, 1), at, 2.0 * T);
        uint32_t dl = kn(b, d, nm(b, "s%lld.dlogits.v%d", (long long)s, k), "xent_grad", IN(lg[k], all, labels), SH(T, v1 - v0), at,
                         3.0 * T * (v1 - v0));
        dh[k] = kn(b, d, nm(b, "s%lld.dfinal.v%d", (long long)s, k), "matmul", IN(dl, w[k]), SH(T, H), NULL, 2.0 * T * H * (v1 - v0));
    }
    if (!b->st) {
        *loss = VC > 1 ? kn(b, d, loss_id, "sum", (uint32_t)VC, ls, SH(T, 1), NULL, (double)T * (VC - 1)) : ls[0];
        dhf = gsum(b, d, nm(b, "s%lld.dfinal", (long long)s), (uint32_t)VC, dh, SH(T, H));
        dx = kn(b, d, nm(b, "s%lld.dfinal_norm", (long long)s), "rmsnorm_grad", IN(x, nw, dhf), SH(T, H), b->attn_eps, 10.0 * T * H);
    }
    free(lg);
    free(w);
    return dx;
}

/* every adapter matrix of layer l: its partials summed per device, sent to device 0 and summed
 * there; the two moments and AdamW, in place */
static void update_layer(TB *b, int64_t l, uint32_t hyper)
{
    int D = b->D;
    char n[TP_LLAMA_ID_MAX], at[160];
    uint32_t *in = malloc(sizeof(uint32_t) * ((size_t)b->per + (size_t)D));
    if (!in) {
        if (!b->st) b->st = tp__fail(b->err, TP_ERR_NOMEM, "out of memory");
        return;
    }
    for (int t = 0; t < NT && !b->st; t++)
        for (int m = 0; m < 2 && is_target(b, t) && !b->st; m++) {
            int64_t shp[2];
            tp_lora_adapter_shape(b->c, t, m, b->r, shp);
            tp_lora_adapter_name(l, t, m, n, sizeof n);
            size_t i = ((size_t)t * 2 + (size_t)m) * (size_t)D;
            uint32_t k = 0, grad;
            for (int d = 0; d < D && !b->st; d++) {
                uint32_t cnt = b->npart[i + (size_t)d], *P = b->part + (i + (size_t)d) * (size_t)b->per;
                if (!d) {
                    memcpy(in, P, sizeof *P * cnt);
                    k = cnt;
                } else {
                    uint32_t loc = gsum(b, d, nm(b, "%s.grad.d%d", n, d), cnt, P, 2, shp);
                    in[k++] = xfer(b, 0, loc, nm(b, "%s.grad.d%d@d0", n, d));
                }
                b->npart[i + (size_t)d] = 0;
            }
            grad = gsum(b, 0, nm(b, "%s.grad", n), k, in, 2, shp); /* one sequence: its partial, named so */
            if (b->o->grads_out && !b->st) b->st = tp_graph_add_output(b->g, grad, b->err);
            const uint32_t *a = &b->ad[aidx(l, t, m) * 3];
            double e = (double)shp[0] * (double)shp[1];
            snprintf(at, sizeof at, "{\"beta\":%.17g}", b->o->beta1);
            uint32_t m1 = kip(b, 0, nm(b, "%s.exp_avg.updated", n), "adam_moment", IN(a[1], grad), 2, shp, at, 3 * e, 0);
            snprintf(at, sizeof at, "{\"beta\":%.17g,\"square\":true}", b->o->beta2);
            uint32_t v1 = kip(b, 0, nm(b, "%s.exp_avg_sq.updated", n), "adam_moment", IN(a[2], grad), 2, shp, at, 4 * e, 0);
            snprintf(at, sizeof at, "{\"eps\":%.17g,\"weight_decay\":%.17g}", b->o->eps, b->o->weight_decay);
            uint32_t p1 = kip(b, 0, nm(b, "%s.updated", n), "adamw", IN(a[0], m1, v1, hyper), 2, shp, at, 10 * e, 0);
            for (int q = 0; q < 3 && !b->st; q++) b->st = tp_graph_add_output(b->g, q == 0 ? p1 : q == 1 ? m1 : v1, b->err);
        }
    free(in);
}

/* the fields every emitter reads */
static void tb_init(TB *b, const tp_llama_config *c, const tp_train_opts *o, int NB, int VC, tp_error *err)
{
    memset(b, 0, sizeof *b);
    b->err = err;
    b->c = c;
    b->o = o;
    b->D = o->devices;
    b->NB = NB;
    b->VC = VC;
    b->S = o->batch;
    b->T = o->seq;
    b->H = c->hidden;
    b->NH = c->heads;
    b->KV = c->kv_heads;
    b->hd = c->hidden / c->heads;
    b->G = c->heads / c->kv_heads;
    b->F = c->intermediate;
    b->V = c->vocab;
    b->L = c->layers;
    b->r = o->rank;
    b->sc = o->alpha / (double)o->rank;
    b->qscale = 1.0 / sqrt((double)b->hd);
    b->per = (b->S + b->D - 1) / b->D;
    snprintf(b->attn_eps, sizeof b->attn_eps, "{\"eps\":%.17g}", c->eps);
    snprintf(b->rope, sizeof b->rope, "{\"theta\":%.17g,\"pos_offset\":0}", c->theta);
}

tp_status tp_llama_train_build(const tp_llama_config *c, const tp_train_opts *o, tp_graph **out, tp_error *err)
{
    tp_status s0 = check_opts(c, o, err);
    if (s0) return s0;
    TB b0, *b = &b0;
    tb_init(b, c, o, o->blocks, o->vocab_chunks, err);
    int D = b->D;
    int64_t S = b->S, L = b->L, T = b->T;
    size_t na = (size_t)L * NT * 2;
    b->g = tp_graph_new(D);
    b->ad = malloc(sizeof(uint32_t) * na * 3);
    b->adc = malloc(sizeof(uint32_t) * na * (size_t)D);
    b->part = malloc(sizeof(uint32_t) * NT * 2 * (size_t)D * (size_t)b->per);
    b->npart = calloc(NT * 2 * (size_t)D, sizeof(uint32_t));
    uint32_t *cp = malloc(sizeof(uint32_t) * (size_t)L * (size_t)S); /* layer l's input per sequence */
    uint32_t *dy = malloc(sizeof(uint32_t) * (size_t)S * 4), *lab = dy + S, *loss = dy + 2 * S, *ids = dy + 3 * S;
    fwd *last = calloc((size_t)S, sizeof *last), rec = {0};
    int ok = b->g && b->ad && b->adc && b->part && b->npart && cp && dy && last && fwd_alloc(&rec, b->NB);
    for (int64_t s = 0; s < S && ok; s++) ok = fwd_alloc(&last[s], b->NB);
    if (!ok) b->st = tp__fail(err, TP_ERR_NOMEM, "out of memory");
    if (b->adc)
        for (size_t i = 0; i < na * (size_t)D; i++) b->adc[i] = NONE;
    /* inputs on device 0: the step's hyperparameters, the adapters and their moments */
    uint32_t hyper = input(b, "hyper", 0, TP_DT_F32, SH(3));
    char n[TP_LLAMA_ID_MAX], mn[TP_LLAMA_ID_MAX + 16];
    for (int64_t l = 0; l < L && !b->st; l++)
        for (int t = 0; t < NT; t++)
            for (int m = 0; m < 2; m++) {
                uint32_t *a = &b->ad[aidx(l, t, m) * 3];
                a[0] = a[1] = a[2] = NONE;
                if (!is_target(b, t)) continue;
                int64_t shp[2];
                tp_lora_adapter_shape(c, t, m, b->r, shp);
                tp_lora_adapter_name(l, t, m, n, sizeof n);
                a[0] = input(b, n, 0, TP_DT_F32, 2, shp);
                snprintf(mn, sizeof mn, "%s.exp_avg", n);
                a[1] = input(b, mn, 0, TP_DT_F32, 2, shp);
                snprintf(mn, sizeof mn, "%s.exp_avg_sq", n);
                a[2] = input(b, mn, 0, TP_DT_F32, 2, shp);
            }
    /* forward: each sequence's ids, labels and embedding; the layers over all sequences */
    for (int64_t s = 0; s < S && !b->st; s++) {
        int d = (int)(s % D);
        ids[s] = input(b, nm(b, "input_ids.s%lld", (long long)s), d, TP_DT_I32, SH(T));
        lab[s] = input(b, nm(b, "labels.s%lld", (long long)s), d, TP_DT_I32, SH(T));
        cp[s] = embed(b, d, s, ids[s]);
    }
    char pre[64];
    for (int64_t l = 0; l < L && !b->st; l++)
        for (int64_t s = 0; s < S && !b->st; s++) {
            snprintf(pre, sizeof pre, "L%lld.s%lld", (long long)l, (long long)s);
            layer_fwd(b, (int)(s % D), l, pre, cp[l * S + s], 1, &last[s]);
            if (l + 1 < L) cp[(l + 1) * S + s] = last[s].out;
        }
    /* the head: each sequence's loss and the gradient of its last hidden state */
    for (int64_t s = 0; s < S && !b->st; s++)
        dy[s] = head(b, (int)(s % D), s, last[s].out, lab[s], S == 1 ? "loss" : nm(b, "s%lld.loss", (long long)s), &loss[s]);
    if (S > 1 && !b->st) {
        for (int64_t s = 0; s < S && !b->st; s++)
            if (s % D) loss[s] = xfer(b, 0, loss[s], nm(b, "s%lld.loss@d0", (long long)s));
        loss[0] = kn(b, 0, "loss", "concat", (uint32_t)S, loss, SH(S * T, 1), "{\"axis\":0}", 0);
    }
    if (!b->st) b->st = tp_graph_add_output(b->g, loss[0], err);
    /* backward, layer by layer downwards: recompute (but the last layer), backward, update */
    for (int64_t l = L - 1; l >= 0 && !b->st; l--) {
        for (int64_t s = 0; s < S && !b->st; s++) {
            int d = (int)(s % D);
            fwd *f = &last[s];
            if (l < L - 1) {
                snprintf(pre, sizeof pre, "L%lld.s%lld.r", (long long)l, (long long)s);
                layer_fwd(b, d, l, pre, cp[l * S + s], 0, &rec);
                f = &rec;
            }
            snprintf(pre, sizeof pre, "L%lld.s%lld.g", (long long)l, (long long)s);
            dy[s] = layer_bwd(b, d, l, pre, f, dy[s]);
        }
        update_layer(b, l, hyper);
    }
    if (!b->st) b->st = tp_graph_finalize(b->g, err);
    for (int64_t s = 0; last && s < S; s++) free(last[s].qb);
    free(last);
    free(rec.qb);
    free(cp);
    free(dy);
    free(b->ad);
    free(b->adc);
    free(b->part);
    free(b->npart);
    if (b->st) {
        tp_graph_free(b->g);
        return b->st;
    }
    *out = b->g;
    return TP_OK;
}

/* ---- estimate --------------------------------------------------------------------------------- */

typedef struct {
    double v, e;
} piece_count;

/* kernels and their inputs of one sequence's pieces at NB blocks and VC chunks (counting mode):
 * p[0] the embedding, p[1] a layer's forward, p[2] its recompute, p[3] and p[4] the backward of
 * a layer l > 0 after its forward (the last layer) and after a recompute, p[5] and p[6] the same
 * for layer 0, p[7] the head. A backward after the forward has the down projection's x A^T. */
#define NPIECES 8
static void count_pieces(const tp_llama_config *c, const tp_train_opts *o, int NB, int VC, piece_count *p)
{
    TB b0_, *b = &b0_;
    tb_init(b, c, o, NB, VC, NULL);
    b->count = 1;
    fwd ff = {0}, fr = {0};
    uint32_t qb[12], loss;
    ff.qb = qb, ff.p = qb + 3, fr.qb = qb + 6, fr.p = qb + 9;
    for (int i = 0; i < NPIECES; i++) {
        b->nv = b->ne = 0;
        switch (i) {
        case 0: embed(b, 0, 0, 0); break;
        case 1: layer_fwd(b, 0, 1, "x", 0, 1, &ff); break;
        case 2: layer_fwd(b, 0, 1, "x", 0, 0, &fr); break;
        case 3: layer_bwd(b, 0, 1, "x", &ff, 0); break;
        case 4: layer_bwd(b, 0, 1, "x", &fr, 0); break;
        case 5: layer_bwd(b, 0, 0, "x", &ff, 0); break;
        case 6: layer_bwd(b, 0, 0, "x", &fr, 0); break;
        default: head(b, 0, 0, 0, 0, "loss", &loss); break;
        }
        p[i].v = b->nv;
        p[i].e = b->ne;
    }
}

/* f(n) from f(1), f(2), f(3): affine past 2 */
static double ext(double f1, double f2, double f3, double n)
{
    return n <= 1 ? f1 : n <= 2 ? f2 : f3 + (n - 3) * (f3 - f2);
}

void tp_llama_train_estimate(const tp_llama_config *c, const tp_train_opts *o, tp_build_estimate *e)
{
    memset(e, 0, sizeof *e);
    if (check_opts(c, o, NULL)) return;
    piece_count p[3][NPIECES]; /* at 1, 2, 3 blocks and chunks */
    for (int k = 0; k < 3; k++) count_pieces(c, o, k + 1 < o->blocks ? k + 1 : o->blocks, k + 1 < o->vocab_chunks ? k + 1 : o->vocab_chunks, p[k]);
    double pv[NPIECES], pe[NPIECES];
    for (int i = 0; i < NPIECES; i++) {
        double n = i == 0 || i == NPIECES - 1 ? o->vocab_chunks : o->blocks;
        pv[i] = ext(p[0][i].v, p[1][i].v, p[2][i].v, n);
        pe[i] = ext(p[0][i].e, p[1][i].e, p[2][i].e, n);
    }
    double S = (double)o->batch, L = (double)c->layers, D = o->devices, VC = o->vocab_chunks;
    int nt = __builtin_popcount(o->targets);
    double NA = L * nt * 2; /* adapter matrices */
    /* per sequence: embedding, forwards, head, recomputes of layers 0..L-2, backwards */
    double v = pv[0] + L * pv[1] + pv[7] + (L - 1) * pv[2] + (L == 1 ? pv[5] : pv[3] + (L - 2) * pv[4] + pv[6]);
    double ed = pe[0] + L * pe[1] + pe[7] + (L - 1) * pe[2] + (L == 1 ? pe[5] : pe[3] + (L - 2) * pe[4] + pe[6]);
    v *= S, ed *= S;
    v += (D - 1) * NA, ed += (D - 1) * NA; /* adapters to the other devices */
    double n0 = floor(S / D) + (o->batch % o->devices > 0);
    if (S > 1) v += S - n0 + 1, ed += S - n0 + S; /* the loss: transfers to device 0, concat */
    if (S > 1) {                                   /* per adapter matrix: the gradient's sums and transfers */
        for (int d = 1; d < o->devices; d++) {
            double nd = floor(S / D) + (d < o->batch % o->devices);
            v += NA * (1 + (nd > 1)), ed += NA * (1 + (nd > 1 ? nd : 0));
        }
        v += NA, ed += NA * (n0 + D - 1);
    }
    v += 3 * NA, ed += 8 * NA; /* moments and AdamW */
    double inputs = 1 + 3 * NA + 2 * S + D * (VC + (c->tie_embeddings ? 0 : VC) + 1 + 9 * L);
    e->vertices = v + inputs;
    e->edges = ed;
    tp__estimate_bytes(e, S * (L + 8) * 4 + S * 2 * 4 * o->blocks + NA * 16);
    /* the largest single kernel needs (inputs and output), bytes */
    double T = (double)o->seq, H = (double)c->hidden, F = (double)c->intermediate, V = (double)c->vocab, es = tp_dtype_size(c->dtype);
    double NH = (double)c->heads, rows = ceil(T / o->blocks), hdim = H / NH, KVd = (double)c->kv_heads * hdim, vc = ceil(V / VC);
    struct {
        const char *id;
        double b;
    } cand[] = {
        {"embed", vc * H * es + T * 4 + T * H * 4},
        {"scores", (NH * rows * hdim + KVd * T + 2 * NH * rows * T) * 4}, /* dvalues: probabilities, dheads, dvalues (with the scores' room) */
        {"mlp", T * H * 4 + F * H * es + T * F * 4},
        {"logits", T * H * 4 + vc * H * es + T * vc * 4},
        {"dlogits", 2 * T * vc * 4 + T * 8},
    };
    for (size_t i = 0; i < sizeof cand / sizeof *cand; i++)
        if (cand[i].b > e->vertex_bytes) e->vertex_bytes = cand[i].b, e->vertex = cand[i].id;
    e->device = 0;
}
