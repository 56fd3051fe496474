/* synthetic.c - transformer-like layered TaskGraphs of opaque kernels, for planning and
 * simulation at any scale (see tp_model_layered in turnip/models.h). */
#include <stdio.h>
#include <stdlib.h>
#include "turnip/models.h"
#include "io/util.h"

void tp_layered_opts_init(tp_layered_opts *o)
{
    o->devices = 2;
    o->layers = 4;
    o->blocks = 4;
    o->seq = 1024;
    o->hidden = 1024;
    o->dtype_bytes = 2;
}

uint64_t tp_layered_vertices(const tp_layered_opts *o)
{
    uint64_t D = (uint64_t)o->devices, B = (uint64_t)o->blocks;
    /* per layer and device: 5 weights, qkv, B*(scores, softmax, out), concat, proj, up, act,
     * down = 5 + 1 + 3B + 1 + 1 + 3; plus reductions: 2 x (D-1 transfers in, 1 sum, D-1 out) */
    uint64_t per = D * (11 + 3 * B) + 2 * (D > 1 ? 2 * (D - 1) + 1 : 0);
    return D + (uint64_t)o->layers * per; /* x and its broadcasts, then the layers */
}

typedef struct {
    tp_graph *g;
    tp_error *err;
    tp_status st;
    char id[64];
} bld;

static uint32_t in(bld *b, int dev, uint64_t bytes, const char *fmt, int l, int d)
{
    uint32_t v = 0;
    if (b->st) return 0;
    snprintf(b->id, sizeof b->id, fmt, l, d);
    b->st = tp_graph_add_input(b->g, b->id, dev, TP_DT_NONE, -1, NULL, bytes, &v, b->err);
    return v;
}

static uint32_t k(bld *b, int dev, uint64_t bytes, double flops, uint32_t n, const uint32_t *ins, const char *fmt,
                  int l, int d, int x)
{
    uint32_t v = 0;
    if (b->st) return 0;
    snprintf(b->id, sizeof b->id, fmt, l, d, x);
    b->st = tp_graph_add_kernel(b->g, b->id, dev, "opaque", n, ins, TP_DT_NONE, -1, NULL, bytes, NULL, flops, &v,
                                b->err);
    return v;
}

static uint32_t xfer(bld *b, int dev, uint32_t src, const char *fmt, int l, int d)
{
    uint32_t v = 0;
    if (b->st) return 0;
    snprintf(b->id, sizeof b->id, fmt, l, d);
    b->st = tp_graph_add_transfer(b->g, b->id, dev, src, &v, b->err);
    return v;
}

/* sums per-device partials on device 0 and sends the result to every device */
static void allreduce(bld *b, int l, const char *tag, uint32_t *part, uint32_t *outv, uint64_t bytes)
{
    int D = tp_graph_devices(b->g);
    if (D == 1) {
        outv[0] = part[0];
        return;
    }
    uint32_t ins[TP_MAX_DEVICES];
    ins[0] = part[0];
    char f1[48], f2[48], f3[48];
    snprintf(f1, sizeof f1, "L%%d.%s.to0.d%%d", tag);
    snprintf(f2, sizeof f2, "L%%d.%s.sum%%.0d%%.0d", tag);
    snprintf(f3, sizeof f3, "L%%d.%s.bcast.d%%d", tag);
    for (int d = 1; d < D; d++) ins[d] = xfer(b, 0, part[d], f1, l, d);
    outv[0] = k(b, 0, bytes, (double)bytes * (D - 1) / 2.0, (uint32_t)D, ins, f2, l, 0, 0);
    for (int d = 1; d < D; d++) outv[d] = xfer(b, d, outv[0], f3, l, d);
}

tp_status tp_model_layered(const tp_layered_opts *o, tp_graph **out, tp_error *err)
{
    if (o->devices < 1 || o->devices > TP_MAX_DEVICES || o->layers < 1 || o->blocks < 1 || o->seq < 1 ||
        o->hidden < 1 || o->dtype_bytes < 1 || o->hidden % o->devices || o->seq % o->blocks)
        return tp__fail(err, TP_ERR_ARG, "layered model: bad options (hidden must divide by devices, seq by blocks)");
    bld b = {tp_graph_new(o->devices), err, TP_OK, {0}};
    if (!b.g) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    int D = o->devices, B = o->blocks;
    uint64_t e = (uint64_t)o->dtype_bytes, T = (uint64_t)o->seq, H = (uint64_t)o->hidden, Hd = H / (uint64_t)D,
             Tb = T / (uint64_t)B, F = 4 * H / (uint64_t)D;
    uint32_t x[TP_MAX_DEVICES], part[TP_MAX_DEVICES];
    uint32_t x0 = in(&b, 0, T * H * e, "x%.0d%.0d", 0, 0);
    x[0] = x0;
    for (int d = 1; d < D; d++) x[d] = xfer(&b, d, x0, "x.bcast%.0d.d%d", 0, d);
    uint32_t *blk = malloc((size_t)B * sizeof *blk);
    if (!blk) b.st = tp__fail(err, TP_ERR_NOMEM, "out of memory");
    for (int l = 0; l < o->layers && !b.st; l++) {
        for (int d = 0; d < D; d++) {
            uint32_t wqkv = in(&b, d, H * 3 * Hd * e, "L%d.wqkv.d%d", l, d);
            uint32_t ins[2] = {x[d], wqkv};
            uint32_t qkv = k(&b, d, T * 3 * Hd * e, 2.0 * (double)(T * H * 3 * Hd), 2, ins, "L%d.qkv.d%d%.0d", l, d, 0);
            for (int q = 0; q < B; q++) {
                uint32_t s = k(&b, d, Tb * T * e, 2.0 * (double)(Tb * T * Hd), 1, &qkv, "L%d.scores.d%d.b%d", l, d, q);
                uint32_t p = k(&b, d, Tb * T * e, 5.0 * (double)(Tb * T), 1, &s, "L%d.softmax.d%d.b%d", l, d, q);
                uint32_t pv[2] = {p, qkv};
                blk[q] = k(&b, d, Tb * Hd * e, 2.0 * (double)(Tb * T * Hd), 2, pv, "L%d.attn.d%d.b%d", l, d, q);
            }
            uint32_t att = k(&b, d, T * Hd * e, 0, (uint32_t)B, blk, "L%d.concat.d%d%.0d", l, d, 0);
            uint32_t wo = in(&b, d, Hd * H * e, "L%d.wo.d%d", l, d);
            uint32_t a2[2] = {att, wo};
            part[d] = k(&b, d, T * H * e, 2.0 * (double)(T * Hd * H), 2, a2, "L%d.proj.d%d%.0d", l, d, 0);
        }
        allreduce(&b, l, "attn", part, x, T * H * e);
        for (int d = 0; d < D; d++) {
            uint32_t w1 = in(&b, d, H * F * e, "L%d.w1.d%d", l, d);
            uint32_t w2 = in(&b, d, F * H * e, "L%d.w2.d%d", l, d);
            uint32_t wn = in(&b, d, H * e, "L%d.norm.d%d", l, d);
            uint32_t i1[2] = {x[d], w1};
            uint32_t up = k(&b, d, T * F * e, 2.0 * (double)(T * H * F), 2, i1, "L%d.up.d%d%.0d", l, d, 0);
            uint32_t i2[2] = {up, wn};
            uint32_t act = k(&b, d, T * F * e, 8.0 * (double)(T * F), 2, i2, "L%d.act.d%d%.0d", l, d, 0);
            uint32_t i3[2] = {act, w2};
            part[d] = k(&b, d, T * H * e, 2.0 * (double)(T * F * H), 2, i3, "L%d.down.d%d%.0d", l, d, 0);
        }
        allreduce(&b, l, "mlp", part, x, T * H * e);
    }
    free(blk);
    if (!b.st) b.st = tp_graph_add_output(b.g, x[0], err);
    if (!b.st) b.st = tp_graph_finalize(b.g, err);
    if (b.st) {
        tp_graph_free(b.g);
        return b.st;
    }
    *out = b.g;
    return TP_OK;
}
