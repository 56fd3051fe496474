/* synthetic.c - transformer-like layered TaskGraphs of opaque kernels, for planning and
 * simulation at any scale (see tp_model_layered in turnip/models.h); and the per-vertex costs
 * every estimate shares.
 *
 * Options are hostile until checked: sizes are checked against 64-bit overflow before the
 * graph is built, and tp_layered_estimate says what it would take so a caller can refuse
 * before building (the counts in double: any option values are safe). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "turnip/models.h"
#include "io/util.h"
#include "models/estimate.h"

void tp__estimate_bytes(tp_build_estimate *e, double extra)
{
    e->graph_bytes = e->vertices * TP__GRAPH_VERTEX_BYTES + e->edges * TP__GRAPH_EDGE_BYTES + extra;
    e->plan_bytes = e->graph_bytes + e->vertices * TP__PLAN_VERTEX_BYTES + e->edges * TP__PLAN_EDGE_BYTES;
}

/* ---- the layered model ------------------------------------------------------------------- */

void tp_layered_opts_init(tp_layered_opts *o)
{
    o->devices = 2;
    o->layers = 2;
    o->heads = 4;
    o->chunks = 2;
    o->seq = 512;
    o->head_dim = 64;
    o->dtype_bytes = 2;
    o->backward = 0;
}

uint64_t tp_layered_vertices(const tp_layered_opts *o)
{
    tp_build_estimate e;
    tp_layered_estimate(o, &e);
    return e.vertices < 0x1p64 ? (uint64_t)e.vertices : UINT64_MAX; /* exact below 2^53 */
}

void tp_layered_estimate(const tp_layered_opts *o, tp_build_estimate *e)
{
    memset(e, 0, sizeof *e);
    double D = o->devices, K = o->heads, C = o->chunks, L = o->layers;
    if (D < 1 || K < 1 || C < 1 || L < 1) return;
    /* per device: heads x (4 weights, 7 kernels) + heads - 1 adds; chunks x (2 weights, 3
     * kernels) + chunks - 1 adds; two all-reduces of 2(D-1) transfers and one sum */
    double per = D * (11 * K + K - 1 + 5 * C + C - 1) + (D > 1 ? 2 * (2 * (D - 1) + 1) : 0);
    e->vertices = D + L * per; /* x and its broadcasts, then the layers */
    /* edges per device: q, k, v, scores, attn, proj 2 each, softmax 1, adds 2; up, down 2,
     * act 1, adds 2; per all-reduce 2(D-1) transfers and a sum of D */
    double eper = D * (6 * K + 2 * K + K + 2 * K + 2 * K + 2 * (K - 1) + 2 * C + C + 2 * C + 2 * (C - 1)) +
                  (D > 1 ? 2 * (2 * (D - 1) + D) : 0);
    e->edges = (D - 1) + L * eper;
    if (o->backward) {
        /* a loss kernel per device; per layer and device: heads x 5 kernels + heads - 1 adds,
         * chunks x 3 kernels + chunks - 1 adds, the two all-reduces again; 2 edges a kernel */
        e->vertices += D + L * (D * (5 * K + K - 1 + 3 * C + C - 1) + (D > 1 ? 2 * (2 * (D - 1) + 1) : 0));
        e->edges += D + L * (D * (10 * K + 2 * (K - 1) + 6 * C + 2 * (C - 1)) + (D > 1 ? 2 * (2 * (D - 1) + D) : 0));
    }
    tp__estimate_bytes(e, 6.0 * 4 * (K > C ? K : C) + (o->backward ? 4.0 * L * D * (4 * K + 2 * C + 1) : 0));
}

typedef struct {
    tp_graph *g;
    tp_error *err;
    tp_status st;
    int l;
} bld;

static uint32_t in(bld *b, int dev, uint64_t bytes, const char *what, int i)
{
    char id[96];
    uint32_t v = 0;
    if (b->st) return 0;
    snprintf(id, sizeof id, "L%d.d%d.%s%d", b->l, dev, what, i);
    b->st = tp_graph_add_input(b->g, id, dev, TP_DT_NONE, -1, NULL, bytes, &v, b->err);
    return v;
}

static uint32_t k(bld *b, int dev, const char *what, int i, uint64_t bytes, double flops, uint32_t n, ...)
{
    char id[96];
    uint32_t v = 0, ins[4];
    va_list ap;
    va_start(ap, n);
    for (uint32_t j = 0; j < n && j < 4; j++) ins[j] = va_arg(ap, uint32_t);
    va_end(ap);
    if (b->st) return 0;
    snprintf(id, sizeof id, "L%d.d%d.%s%d", b->l, dev, what, i);
    b->st = tp_graph_add_kernel(b->g, id, dev, "opaque", n, ins, TP_DT_NONE, -1, NULL, bytes, NULL, flops, &v, b->err);
    return v;
}

static uint32_t xfer(bld *b, int dev, uint32_t src, const char *what)
{
    char id[96];
    uint32_t v = 0;
    if (b->st) return 0;
    snprintf(id, sizeof id, "L%d.d%d.%s", b->l, dev, what);
    b->st = tp_graph_add_transfer(b->g, id, dev, src, &v, b->err);
    return v;
}

/* sums per-device partials on device 0, then sends the sum to every device */
static void allreduce(bld *b, const char *tag, const uint32_t *part, uint32_t *outv, uint64_t bytes)
{
    int D = tp_graph_devices(b->g);
    char what[32];
    if (D == 1) {
        outv[0] = part[0];
        return;
    }
    uint32_t ins[TP_MAX_DEVICES];
    ins[0] = part[0];
    for (int d = 1; d < D; d++) {
        snprintf(what, sizeof what, "%s.from%d", tag, d);
        ins[d] = xfer(b, 0, part[d], what);
    }
    char id[96];
    snprintf(id, sizeof id, "L%d.%s.sum", b->l, tag);
    if (!b->st)
        b->st = tp_graph_add_kernel(b->g, id, 0, "opaque", (uint32_t)D, ins, TP_DT_NONE, -1, NULL, bytes, NULL,
                                    (double)bytes * (D - 1) / 2.0, &outv[0], b->err);
    snprintf(what, sizeof what, "%s.bcast", tag);
    for (int d = 1; d < D; d++) outv[d] = xfer(b, d, outv[0], what);
}

tp_status tp_model_layered(const tp_layered_opts *o, tp_graph **out, tp_error *err)
{
    if (o->devices < 1 || o->devices > TP_MAX_DEVICES || o->layers < 1 || o->heads < 1 || o->chunks < 1 ||
        o->seq < 1 || o->head_dim < 1 || o->dtype_bytes < 1 || (o->backward != 0 && o->backward != 1))
        return tp__fail(err, TP_ERR_ARG, "layered model: every option must be positive (devices at most %d)",
                        TP_MAX_DEVICES);
    int D = o->devices, K = o->heads, C = o->chunks;
    uint64_t e = (uint64_t)o->dtype_bytes, T = (uint64_t)o->seq, hd = (uint64_t)o->head_dim, H, Fc, big;
    /* every size below is at most one of: T x T x e, T x 4H x e, 4H x H x e (Fc <= 4H, hd <= H) */
    if (__builtin_mul_overflow((uint64_t)D * (uint64_t)K, hd, &H) || __builtin_mul_overflow(H, (uint64_t)4, &big) ||
        __builtin_mul_overflow(big, H, &big) || __builtin_mul_overflow(big, e, &big) || __builtin_mul_overflow(T, T, &big) ||
        __builtin_mul_overflow(big, e, &big) || __builtin_mul_overflow(T, H, &big) || __builtin_mul_overflow(big, 4 * e, &big))
        return tp__fail(err, TP_ERR_ARG, "layered model: sizes overflow 64 bits (seq %lld, hidden = devices x heads x head_dim)",
                        (long long)o->seq);
    Fc = 4 * H / (uint64_t)D / (uint64_t)C;
    if (!Fc) Fc = 1;
    bld b = {tp_graph_new(o->devices), err, TP_OK, 0};
    if (!b.g) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    uint32_t x[TP_MAX_DEVICES], part[TP_MAX_DEVICES];
    uint32_t *q = malloc(6 * (size_t)(K > C ? K : C) * sizeof *q);
    if (!q) {
        tp_graph_free(b.g);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    uint32_t *kk = q + K, *vv = kk + K, *s = vv + K, *pp = s + K, *oo = pp + K;
    /* backward: what each layer and device saves: K x (softmax, v, q, k), C x (up, act), MLP input */
    size_t per_ld = 4 * (size_t)K + 2 * (size_t)C + 1;
    uint32_t *sv = NULL;
    if (o->backward && (size_t)o->layers > SIZE_MAX / sizeof *sv / per_ld / (size_t)D) {
        free(q);
        tp_graph_free(b.g);
        return tp__fail(err, TP_ERR_ARG, "layered model: too many layers");
    }
    if (o->backward && !(sv = malloc((size_t)o->layers * (size_t)D * per_ld * sizeof *sv))) {
        free(q);
        tp_graph_free(b.g);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    b.l = -1;
    x[0] = in(&b, 0, T * H * e, "x", 0);
    for (int d = 1; d < D; d++) x[d] = xfer(&b, d, x[0], "x.bcast");
    for (int l = 0; l < o->layers && !b.st; l++) {
        b.l = l;
        for (int d = 0; d < D; d++) { /* attention, head lanes stage by stage */
            for (int h = 0; h < K; h++) {
                q[h] = k(&b, d, "q", h, T * hd * e, 2.0 * (double)(T * H * hd), 2, x[d], in(&b, d, H * hd * e, "wq", h));
                kk[h] = k(&b, d, "k", h, T * hd * e, 2.0 * (double)(T * H * hd), 2, x[d], in(&b, d, H * hd * e, "wk", h));
                vv[h] = k(&b, d, "v", h, T * hd * e, 2.0 * (double)(T * H * hd), 2, x[d], in(&b, d, H * hd * e, "wv", h));
            }
            for (int h = 0; h < K; h++) s[h] = k(&b, d, "scores", h, T * T * e, 2.0 * (double)(T * T * hd), 2, q[h], kk[h]);
            for (int h = 0; h < K; h++) pp[h] = k(&b, d, "softmax", h, T * T * e, 5.0 * (double)(T * T), 1, s[h]);
            if (sv) {
                uint32_t *w = sv + ((size_t)l * (size_t)D + (size_t)d) * per_ld;
                for (int h = 0; h < K; h++) {
                    w[4 * h] = pp[h];
                    w[4 * h + 1] = vv[h];
                    w[4 * h + 2] = q[h];
                    w[4 * h + 3] = kk[h];
                }
            }
            for (int h = 0; h < K; h++) oo[h] = k(&b, d, "attn", h, T * hd * e, 2.0 * (double)(T * T * hd), 2, pp[h], vv[h]);
            for (int h = 0; h < K; h++)
                oo[h] = k(&b, d, "proj", h, T * H * e, 2.0 * (double)(T * hd * H), 2, oo[h], in(&b, d, hd * H * e, "wo", h));
            uint32_t acc = oo[0];
            for (int h = 1; h < K; h++) acc = k(&b, d, "attn.acc", h, T * H * e, (double)(T * H), 2, acc, oo[h]);
            part[d] = acc;
        }
        allreduce(&b, "attn", part, x, T * H * e);
        for (int d = 0; d < D; d++) { /* MLP in column chunks */
            for (int c = 0; c < C; c++) q[c] = k(&b, d, "up", c, T * Fc * e, 2.0 * (double)(T * H * Fc), 2, x[d], in(&b, d, H * Fc * e, "w1", c));
            uint32_t *w = sv ? sv + ((size_t)l * (size_t)D + (size_t)d) * per_ld + 4 * (size_t)K : NULL;
            if (w) {
                for (int c = 0; c < C; c++) w[2 * c] = q[c];
                w[2 * C] = x[d];
            }
            for (int c = 0; c < C; c++) q[c] = k(&b, d, "act", c, T * Fc * e, 8.0 * (double)(T * Fc), 1, q[c]);
            if (w)
                for (int c = 0; c < C; c++) w[2 * c + 1] = q[c];
            for (int c = 0; c < C; c++) q[c] = k(&b, d, "down", c, T * H * e, 2.0 * (double)(T * Fc * H), 2, q[c], in(&b, d, Fc * H * e, "w2", c));
            uint32_t acc = q[0];
            for (int c = 1; c < C; c++) acc = k(&b, d, "mlp.acc", c, T * H * e, (double)(T * H), 2, acc, q[c]);
            part[d] = acc;
        }
        allreduce(&b, "mlp", part, x, T * H * e);
    }
    if (sv) { /* backward: the layers in reverse, x now carrying the gradient */
        b.l = o->layers;
        for (int d = 0; d < D; d++) x[d] = k(&b, d, "loss", 0, T * H * e, (double)(T * H), 1, x[d]);
        for (int l = o->layers - 1; l >= 0 && !b.st; l--) {
            b.l = l;
            for (int d = 0; d < D; d++) { /* MLP: down, act, up backward per chunk */
                const uint32_t *w = sv + ((size_t)l * (size_t)D + (size_t)d) * per_ld + 4 * (size_t)K;
                for (int c = 0; c < C; c++) q[c] = k(&b, d, "bw.down", c, T * Fc * e, 2.0 * (double)(T * Fc * H), 2, x[d], w[2 * c + 1]);
                for (int c = 0; c < C; c++) q[c] = k(&b, d, "bw.act", c, T * Fc * e, 8.0 * (double)(T * Fc), 2, q[c], w[2 * c]);
                for (int c = 0; c < C; c++) q[c] = k(&b, d, "bw.up", c, T * H * e, 2.0 * (double)(T * H * Fc), 2, q[c], w[2 * C]);
                uint32_t acc = q[0];
                for (int c = 1; c < C; c++) acc = k(&b, d, "bw.mlp.acc", c, T * H * e, (double)(T * H), 2, acc, q[c]);
                part[d] = acc;
            }
            allreduce(&b, "bw.mlp", part, x, T * H * e);
            for (int d = 0; d < D; d++) { /* attention: through attn, softmax, scores per head */
                const uint32_t *w = sv + ((size_t)l * (size_t)D + (size_t)d) * per_ld;
                for (int h = 0; h < K; h++) s[h] = k(&b, d, "bw.attn", h, T * T * e, 2.0 * (double)(T * T * hd), 2, x[d], w[4 * h + 1]);
                for (int h = 0; h < K; h++) s[h] = k(&b, d, "bw.softmax", h, T * T * e, 5.0 * (double)(T * T), 2, s[h], w[4 * h]);
                for (int h = 0; h < K; h++) q[h] = k(&b, d, "bw.q", h, T * hd * e, 2.0 * (double)(T * T * hd), 2, s[h], w[4 * h + 3]);
                for (int h = 0; h < K; h++) kk[h] = k(&b, d, "bw.k", h, T * hd * e, 2.0 * (double)(T * T * hd), 2, s[h], w[4 * h + 2]);
                for (int h = 0; h < K; h++) oo[h] = k(&b, d, "bw.x", h, T * H * e, 4.0 * (double)(T * H * hd), 2, q[h], kk[h]);
                uint32_t acc = oo[0];
                for (int h = 1; h < K; h++) acc = k(&b, d, "bw.attn.acc", h, T * H * e, (double)(T * H), 2, acc, oo[h]);
                part[d] = acc;
            }
            allreduce(&b, "bw.attn", part, x, T * H * e);
        }
    }
    free(sv);
    free(q);
    if (!b.st) b.st = tp_graph_add_output(b.g, x[0], err);
    if (!b.st) b.st = tp_graph_finalize(b.g, err);
    if (b.st) {
        tp_graph_free(b.g);
        return b.st;
    }
    *out = b.g;
    return TP_OK;
}
