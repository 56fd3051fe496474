/* kernels.c - CPU kernels for the ops of docs/ops.md: f32 compute, f32/f16/bf16 storage,
 * matmul through OpenBLAS (cblas_sgemm, loaded by blas.c).
 *
 * Attributes come from files and are hostile until checked: tp__kernel_prepare range-checks
 * every one used in index arithmetic (axes, slice start and length, the offsets of softmax,
 * attention, rope, rope_grad, embedding, xent and xent_grad) without overflowing, so the kernels (these
 * and the cuda backend's) add them to indices without checks of their own. Offsets may lie
 * anywhere in [-TP__MAX_OFFSET, TP__MAX_OFFSET]: every tensor extent is below 2^62 (its bytes
 * fit 64 bits), so an offset plus an index never leaves int64. Float attributes are finite f32;
 * the optimizer's are in their ranges (adam_moment's beta in [0, 1), adamw's eps > 0 and
 * weight_decay >= 0). */
#include <float.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <string.h>
#include "kernels/kernels.h"
#include "io/util.h"
#include "io/half.h"

static const char *op_names[TP__OP_COUNT] = {
    "opaque", "matmul", "add", "sub", "mul", "scale", "silu", "gelu", "exp", "relu", "softmax",
    "rmsnorm", "rope", "embedding", "sum", "slice", "concat", "transpose", "cast", "write_slice", "reshape",
    "rmsnorm_grad", "rope_grad", "softmax_grad", "silu_grad", "logsumexp", "xent", "xent_grad", "adam_moment", "adamw",
    "attention", "pad"};

const char *tp__op_name(tp__opcode op)
{
    return (unsigned)op < TP__OP_COUNT ? op_names[op] : "?";
}

int tp__kernel_inplace_ok(const tp_graph *g, uint32_t vi, const tp__kplan *kp, uint32_t k)
{
    const tp_vertex *v = tp_graph_vertex(g, vi);
    if (k >= v->ninputs) return 0;
    const tp_vertex *x = tp_graph_vertex(g, v->inputs[k]);
    if (tp__numel(x) != tp__numel(v) || tp_dtype_size(x->dtype) != tp_dtype_size(v->dtype)) return 0;
    switch (kp->op) {
    case TP__OP_OPAQUE: case TP__OP_ADD: case TP__OP_SUB: case TP__OP_MUL: case TP__OP_SILU_GRAD: return 1;
    case TP__OP_SCALE: case TP__OP_SILU: case TP__OP_GELU: case TP__OP_EXP: case TP__OP_RELU: case TP__OP_CAST:
    case TP__OP_WRITE_SLICE: case TP__OP_RESHAPE: case TP__OP_ADAM_MOMENT: case TP__OP_ADAMW: return k == 0;
    default: return 0;
    }
}

void tp__axis_blocks(const tp_vertex *v, int64_t axis, uint64_t *outer, uint64_t *inner)
{
    *outer = *inner = 1;
    for (int i = 0; i < axis; i++) *outer *= (uint64_t)v->shape[i];
    for (int i = (int)axis + 1; i < v->ndim; i++) *inner *= (uint64_t)v->shape[i];
}

/* ---- helpers ---------------------------------------------------------------------------- */

uint64_t tp__numel(const tp_vertex *v)
{
    uint64_t n = 1;
    for (int i = 0; i < v->ndim; i++) n *= (uint64_t)v->shape[i];
    return n;
}

static int is_float(tp_dtype t)
{
    return t == TP_DT_F32 || t == TP_DT_F16 || t == TP_DT_BF16;
}

/* f32 view of a tensor: the data itself when f32, else converted into *scratch */
static const float *as_f32(const void *p, tp_dtype t, uint64_t n, float **scratch)
{
    if (t == TP_DT_F32) return p;
    float *o = *scratch;
    *scratch += n;
    const uint16_t *h = p;
    if (t == TP_DT_F16)
        for (uint64_t i = 0; i < n; i++) o[i] = tp__f16_to_f32(h[i]);
    else
        for (uint64_t i = 0; i < n; i++) o[i] = tp__bf16_to_f32(h[i]);
    return o;
}

static void store(void *dst, tp_dtype t, const float *src, uint64_t n)
{
    if (t == TP_DT_F32) {
        if (dst != src) memmove(dst, src, n * 4);
        return;
    }
    uint16_t *h = dst;
    if (t == TP_DT_F16)
        for (uint64_t i = 0; i < n; i++) h[i] = tp__f32_to_f16(src[i]);
    else
        for (uint64_t i = 0; i < n; i++) h[i] = tp__f32_to_bf16(src[i]);
}

/* ---- prepare: attributes and shapes ------------------------------------------------------ */

typedef struct {
    const tp_graph *g;
    const tp_vertex *v;
    tp_error *err;
} pctx;

#define PFAIL(...) tp__fail(c->err, TP_ERR_INVALID, "vertex '%s' (%s): " __VA_ARGS__)

static tp_status attr_num(pctx *c, json_t *a, const char *name, float *out, float def)
{
    json_t *j = a ? json_object_get(a, name) : NULL;
    *out = def;
    if (!j) return TP_OK;
    if (!json_is_number(j)) return PFAIL("attr '%s' must be a number", c->v->id, c->v->op, name);
    double x = json_number_value(j);
    if (!(fabs(x) <= FLT_MAX)) /* a double outside f32 range: UB to convert */
        return PFAIL("attr '%s' %g must be a finite number of f32 range", c->v->id, c->v->op, name, x);
    *out = (float)x;
    return TP_OK;
}

/* a float attribute (required when `required`) from lo to hi, either bound excluded when *_open */
static tp_status attr_range(pctx *c, json_t *a, const char *name, float *out, float def, int required, float lo, int lo_open,
                            float hi, int hi_open)
{
    if (required && !(a && json_object_get(a, name))) return PFAIL("needs number attr '%s'", c->v->id, c->v->op, name);
    tp_status s = attr_num(c, a, name, out, def);
    if (s) return s;
    float x = *out;
    if ((lo_open ? x > lo : x >= lo) && (hi_open ? x < hi : x <= hi)) return TP_OK;
    return PFAIL("attr '%s' %g is outside %c%g, %g%c", c->v->id, c->v->op, name, (double)x, lo_open ? '(' : '[', (double)lo,
                 (double)hi, hi_open ? ')' : ']');
}

static tp_status attr_int(pctx *c, json_t *a, const char *name, int64_t *out, int64_t def, int required)
{
    json_t *j = a ? json_object_get(a, name) : NULL;
    *out = def;
    if (!j) return required ? PFAIL("needs integer attr '%s'", c->v->id, c->v->op, name) : TP_OK;
    if (!json_is_integer(j)) return PFAIL("attr '%s' must be an integer", c->v->id, c->v->op, name);
    *out = (int64_t)json_integer_value(j);
    return TP_OK;
}

/* an offset attribute: an integer in [-TP__MAX_OFFSET, TP__MAX_OFFSET] */
static tp_status attr_offset(pctx *c, json_t *a, const char *name, int64_t *out)
{
    tp_status s = attr_int(c, a, name, out, 0, 0);
    if (!s && (*out < -TP__MAX_OFFSET || *out > TP__MAX_OFFSET))
        return PFAIL("attr '%s' %lld is outside [-2^53, 2^53]", c->v->id, c->v->op, name, (long long)*out);
    return s;
}

/* an axis attribute: an integer in [0, nd) */
static tp_status attr_axis(pctx *c, json_t *a, int nd, int64_t *out)
{
    tp_status s = attr_int(c, a, "axis", out, 0, 1);
    if (!s && (*out < 0 || *out >= nd))
        return PFAIL("attr 'axis' %lld is not an axis of a %d-dimensional input", c->v->id, c->v->op, (long long)*out, nd);
    return s;
}

static tp_status attr_bool(pctx *c, json_t *a, const char *name, int *out)
{
    json_t *j = a ? json_object_get(a, name) : NULL;
    *out = 0;
    if (!j) return TP_OK;
    if (!json_is_boolean(j)) return PFAIL("attr '%s' must be true or false", c->v->id, c->v->op, name);
    *out = json_is_true(j);
    return TP_OK;
}

static const tp_vertex *inp(pctx *c, uint32_t k)
{
    return tp_graph_vertex(c->g, c->v->inputs[k]);
}

static int same_shape(const tp_vertex *a, int ndim, const int64_t *shape)
{
    if (a->ndim != ndim) return 0;
    for (int i = 0; i < ndim; i++)
        if (a->shape[i] != shape[i]) return 0;
    return 1;
}

static void shape_str(const tp_vertex *a, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < a->ndim && o < len; i++) o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", (long long)a->shape[i]);
    if (o < len) snprintf(buf + o, len - o, "]");
}

static tp_status want_out(pctx *c, int ndim, const int64_t *shape)
{
    if (same_shape(c->v, ndim, shape)) return TP_OK;
    char got[128], want[128];
    tp_vertex tmp = *c->v;
    shape_str(c->v, got, sizeof got);
    tmp.ndim = ndim;
    memcpy(tmp.shape, shape, sizeof(int64_t) * (size_t)ndim);
    shape_str(&tmp, want, sizeof want);
    return PFAIL("output shape %s, the op gives %s", c->v->id, c->v->op, got, want);
}

tp_status tp__kernel_prepare(const tp_graph *g, uint32_t vi, tp__kplan *kp, tp_error *err)
{
    pctx c0 = {g, tp_graph_vertex(g, vi), err}, *c = &c0;
    const tp_vertex *v = c->v;
    memset(kp, 0, sizeof *kp);
    int op = -1;
    for (int i = 0; i < TP__OP_COUNT; i++)
        if (!strcmp(v->op, op_names[i])) op = i;
    if (op < 0) return tp__fail(err, TP_ERR_INVALID, "vertex '%s': unknown op '%s' (docs/ops.md lists the ops)", v->id, v->op);
    kp->op = (tp__opcode)op;
    if (op == TP__OP_OPAQUE) return TP_OK;
    json_t *a = NULL;
    if (v->attrs_json) a = json_loads(v->attrs_json, 0, NULL);
    tp_status s = TP_OK;
    int64_t dummy;
    if (!is_float(v->dtype) || v->ndim < 0) {
        s = PFAIL("needs an f32, f16 or bf16 dtype and a shape", v->id, v->op);
        goto done;
    }
    for (uint32_t k = 0; k < v->ninputs; k++) {
        const tp_vertex *x = inp(c, k);
        int ids = (op == TP__OP_EMBEDDING && k == 1) || ((op == TP__OP_XENT || op == TP__OP_XENT_GRAD) && k == 2);
        if (x->ndim < 0 || (ids ? x->dtype != TP_DT_I32 : !is_float(x->dtype))) {
            s = PFAIL("input %u '%s' must have a shape and %s dtype", v->id, v->op, k, x->id, ids ? "i32" : "an f32, f16 or bf16");
            goto done;
        }
        if (!ids && x->dtype != TP_DT_F32 && __builtin_add_overflow(kp->scratch_floats, tp__numel(x), &kp->scratch_floats)) {
            s = PFAIL("the scratch for its inputs overflows 64 bits", v->id, v->op);
            goto done;
        }
    }
    if (v->dtype != TP_DT_F32 && __builtin_add_overflow(kp->scratch_floats, tp__numel(v), &kp->scratch_floats)) {
        s = PFAIL("the scratch for its inputs overflows 64 bits", v->id, v->op);
        goto done;
    }
    uint32_t want_in = 1;
    switch (op) {
    case TP__OP_MATMUL: case TP__OP_ADD: case TP__OP_SUB: case TP__OP_MUL: case TP__OP_RMSNORM: case TP__OP_EMBEDDING:
    case TP__OP_WRITE_SLICE: case TP__OP_SOFTMAX_GRAD: case TP__OP_SILU_GRAD: case TP__OP_ADAM_MOMENT:
        want_in = 2;
        break;
    case TP__OP_RMSNORM_GRAD: case TP__OP_XENT: case TP__OP_XENT_GRAD: case TP__OP_ATTENTION:
        want_in = 3;
        break;
    case TP__OP_ADAMW:
        want_in = 4;
        break;
    case TP__OP_SUM: case TP__OP_CONCAT: case TP__OP_LOGSUMEXP:
        want_in = v->ninputs ? v->ninputs : 1;
        break;
    }
    if (v->ninputs != want_in) {
        s = PFAIL("takes %u input%s, has %u", v->id, v->op, want_in, want_in == 1 ? "" : "s", v->ninputs);
        goto done;
    }
    const tp_vertex *x0 = inp(c, 0);
    int64_t shp[TP_MAX_DIMS];
    int nd = x0->ndim;
    memcpy(shp, x0->shape, sizeof shp);
    switch (op) {
    case TP__OP_MATMUL: {
        const tp_vertex *B = inp(c, 1);
        if ((s = attr_bool(c, a, "trans_a", &kp->trans_a)) || (s = attr_bool(c, a, "trans_b", &kp->trans_b)) ||
            (s = attr_num(c, a, "alpha", &kp->alpha, 1.0f)))
            goto done;
        if (x0->ndim < 2 || B->ndim < 2 || (B->ndim != 2 && B->ndim != x0->ndim)) {
            s = PFAIL("matmul needs A [..., m, k] and B [..., k, n] (same leading dims, or B 2-D)", v->id, v->op);
            goto done;
        }
        for (int i = 0; B->ndim > 2 && i < B->ndim - 2; i++)
            if (B->shape[i] != x0->shape[i]) {
                s = PFAIL("matmul leading dims of A and B differ", v->id, v->op);
                goto done;
            }
        int64_t m = x0->shape[nd - (kp->trans_a ? 1 : 2)], k = x0->shape[nd - (kp->trans_a ? 2 : 1)];
        int64_t kb = B->shape[B->ndim - (kp->trans_b ? 1 : 2)], n = B->shape[B->ndim - (kp->trans_b ? 2 : 1)];
        if (k != kb) {
            s = PFAIL("matmul inner dimensions differ (%lld vs %lld)", v->id, v->op, (long long)k, (long long)kb);
            goto done;
        }
        if (m > INT_MAX || n > INT_MAX || k > INT_MAX) { /* BLAS takes int dimensions */
            s = PFAIL("matmul dimensions (m %lld, n %lld, k %lld) above 2^31-1", v->id, v->op, (long long)m, (long long)n,
                      (long long)k);
            goto done;
        }
        shp[nd - 2] = m;
        shp[nd - 1] = n;
        s = want_out(c, nd, shp);
        break;
    }
    case TP__OP_ADD: case TP__OP_SUB: case TP__OP_MUL: {
        const tp_vertex *b = inp(c, 1);
        int ok = b->ndim <= x0->ndim;
        for (int i = 0; ok && i < b->ndim; i++) ok = b->shape[b->ndim - 1 - i] == x0->shape[nd - 1 - i];
        if (!ok || !tp__numel(b)) {
            s = PFAIL("b's shape must equal a's or be a suffix of it", v->id, v->op);
            goto done;
        }
        s = want_out(c, nd, shp);
        break;
    }
    case TP__OP_SCALE:
        if ((s = attr_num(c, a, "alpha", &kp->alpha, 1.0f))) goto done;
        s = want_out(c, nd, shp);
        break;
    case TP__OP_SILU: case TP__OP_GELU: case TP__OP_EXP: case TP__OP_RELU: case TP__OP_CAST:
        s = want_out(c, nd, shp);
        break;
    case TP__OP_SOFTMAX:
        if ((s = attr_num(c, a, "scale", &kp->scale, 1.0f)) || (s = attr_bool(c, a, "causal", &kp->causal)) ||
            (s = attr_offset(c, a, "row_offset", &kp->row_offset)))
            goto done;
        if (nd < 1) {
            s = PFAIL("softmax needs at least one dimension", v->id, v->op);
            goto done;
        }
        s = want_out(c, nd, shp);
        break;
    case TP__OP_ATTENTION: {
        const tp_vertex *K = inp(c, 1), *Vv = inp(c, 2);
        if ((s = attr_num(c, a, "scale", &kp->scale, 1.0f)) || (s = attr_bool(c, a, "causal", &kp->causal)) ||
            (s = attr_offset(c, a, "row_offset", &kp->row_offset)))
            goto done;
        if (nd != 2 || K->ndim != 2 || Vv->ndim != 2 || K->shape[1] != x0->shape[1] || Vv->shape[0] != K->shape[0]) {
            s = PFAIL("attention needs q [R, d], k [N, d] and v [N, dv]", v->id, v->op);
            goto done;
        }
        if (shp[0] > INT_MAX || shp[1] > INT_MAX || K->shape[0] > INT_MAX || Vv->shape[1] > INT_MAX) { /* BLAS's ints */
            s = PFAIL("attention dimensions above 2^31-1", v->id, v->op);
            goto done;
        }
        /* every extent is at least 1 (the graph refuses tensors of 0 bytes), so BLAS's leading
         * dimensions are too. Scratch: the scores of a tile of query rows, at most 2^22 floats
         * unless one row is longer (tile x N <= 256 x 2^31; the 16-bit copies before it are at
         * most 3 x 2^62 floats) */
        uint64_t N = (uint64_t)K->shape[0], tile = ((uint64_t)1 << 22) / N;
        if (tile > 256) tile = 256;
        if (tile > (uint64_t)shp[0]) tile = (uint64_t)shp[0];
        if (tile < 1) tile = 1;
        kp->length = (int64_t)tile;
        if (__builtin_add_overflow(kp->scratch_floats, tile * N, &kp->scratch_floats)) {
            s = PFAIL("the scratch for its inputs overflows 64 bits", v->id, v->op);
            goto done;
        }
        shp[1] = Vv->shape[1];
        s = want_out(c, nd, shp);
        break;
    }
    case TP__OP_RMSNORM: {
        const tp_vertex *w = inp(c, 1);
        if ((s = attr_num(c, a, "eps", &kp->eps, 1e-6f))) goto done;
        if (nd < 1 || w->ndim != 1 || w->shape[0] != x0->shape[nd - 1]) {
            s = PFAIL("rmsnorm needs x [..., d] and w [d]", v->id, v->op);
            goto done;
        }
        s = want_out(c, nd, shp);
        break;
    }
    case TP__OP_ROPE: case TP__OP_ROPE_GRAD:
        if ((s = attr_num(c, a, "theta", &kp->theta, 10000.0f)) || (s = attr_offset(c, a, "pos_offset", &kp->pos_offset)))
            goto done;
        if ((nd != 3 && nd != 2) || x0->shape[nd - 1] % 2) {
            s = PFAIL("rope needs x [T, heads, head_dim] or [T, head_dim] with an even head_dim", v->id, v->op);
            goto done;
        }
        s = want_out(c, nd, shp);
        break;
    case TP__OP_EMBEDDING: {
        const tp_vertex *ids = inp(c, 1);
        if (nd != 2 || ids->ndim != 1) {
            s = PFAIL("embedding needs table [V, d] and ids [T]", v->id, v->op);
            goto done;
        }
        if ((s = attr_offset(c, a, "id_offset", &kp->start)) || (s = attr_bool(c, a, "masked", &kp->masked))) goto done;
        int64_t o[2] = {ids->shape[0], x0->shape[1]};
        s = want_out(c, 2, o);
        break;
    }
    case TP__OP_SUM: {
        int acc; /* sum-into's mark (docs/planner.md): the planner's, checked here for its type */
        if ((s = attr_bool(c, a, "accumulate", &acc))) goto done;
        for (uint32_t k = 1; k < v->ninputs; k++)
            if (!same_shape(inp(c, k), nd, shp)) {
                s = PFAIL("sum inputs must have equal shapes (input %u differs)", v->id, v->op, k);
                goto done;
            }
        s = want_out(c, nd, shp);
        break;
    }
    case TP__OP_SLICE:
        if ((s = attr_axis(c, a, nd, &kp->axis)) || (s = attr_int(c, a, "start", &kp->start, 0, 1)) ||
            (s = attr_int(c, a, "length", &kp->length, 0, 1)))
            goto done;
        if (kp->start < 0 || kp->start >= shp[kp->axis]) {
            s = PFAIL("attr 'start' %lld is outside [0, %lld)", v->id, v->op, (long long)kp->start, (long long)shp[kp->axis]);
            goto done;
        }
        if (kp->length < 1 || kp->length > shp[kp->axis] - kp->start) { /* no start + length: it may overflow */
            s = PFAIL("attr 'length' %lld is outside [1, %lld]", v->id, v->op, (long long)kp->length,
                      (long long)(shp[kp->axis] - kp->start));
            goto done;
        }
        shp[kp->axis] = kp->length;
        s = want_out(c, nd, shp);
        break;
    case TP__OP_WRITE_SLICE: {
        const tp_vertex *P = inp(c, 1);
        if ((s = attr_axis(c, a, nd, &kp->axis)) || (s = attr_int(c, a, "start", &kp->start, 0, 1))) goto done;
        int ok = P->ndim == nd;
        for (int i = 0; ok && i < nd; i++) ok = i == kp->axis || P->shape[i] == shp[i];
        if (!ok) {
            s = PFAIL("write_slice's part must have the base's shape off the axis", v->id, v->op);
            goto done;
        }
        if (kp->start < 0 || kp->start >= shp[kp->axis]) {
            s = PFAIL("attr 'start' %lld is outside [0, %lld)", v->id, v->op, (long long)kp->start, (long long)shp[kp->axis]);
            goto done;
        }
        if (P->shape[kp->axis] < 1 || P->shape[kp->axis] > shp[kp->axis] - kp->start) {
            s = PFAIL("the part's extent %lld along the axis is outside [1, %lld]", v->id, v->op, (long long)P->shape[kp->axis],
                      (long long)(shp[kp->axis] - kp->start));
            goto done;
        }
        if (v->dtype != x0->dtype) {
            s = PFAIL("write_slice's output must have its base's dtype", v->id, v->op);
            goto done;
        }
        kp->length = P->shape[kp->axis];
        s = want_out(c, nd, shp);
        break;
    }
    case TP__OP_PAD: { /* a's extent along the axis becomes `extent`, a written at `start`, zeros around it */
        int64_t extent;
        if ((s = attr_axis(c, a, nd, &kp->axis)) || (s = attr_int(c, a, "start", &kp->start, 0, 1)) ||
            (s = attr_int(c, a, "extent", &extent, 0, 1)))
            goto done;
        kp->length = shp[kp->axis];
        if (extent < kp->length) { /* the output's shape, checked by want_out, bounds it above */
            s = PFAIL("attr 'extent' %lld is below the input's %lld along the axis", v->id, v->op, (long long)extent,
                      (long long)kp->length);
            goto done;
        }
        if (kp->start < 0 || kp->start > extent - kp->length) { /* no start + length: it may overflow */
            s = PFAIL("attr 'start' %lld is outside [0, %lld]", v->id, v->op, (long long)kp->start, (long long)(extent - kp->length));
            goto done;
        }
        shp[kp->axis] = extent;
        s = want_out(c, nd, shp);
        break;
    }
    case TP__OP_RESHAPE: /* the bytes as they are: same dtype, same element count */
        kp->scratch_floats = 0;
        if (v->dtype != x0->dtype) {
            s = PFAIL("reshape's output must have its input's dtype", v->id, v->op);
            goto done;
        }
        if (tp__numel(v) != tp__numel(x0)) {
            s = PFAIL("reshape's output has %llu elements, its input %llu", v->id, v->op, (unsigned long long)tp__numel(v),
                      (unsigned long long)tp__numel(x0));
            goto done;
        }
        break;
    case TP__OP_CONCAT: {
        if ((s = attr_axis(c, a, nd, &kp->axis))) goto done;
        int64_t total = 0;
        for (uint32_t k = 0; k < v->ninputs; k++) {
            const tp_vertex *x = inp(c, k);
            int ok = x->ndim == nd;
            for (int i = 0; ok && i < nd; i++) ok = i == kp->axis || x->shape[i] == shp[i];
            if (!ok) {
                s = PFAIL("concat input %u's shape differs off the axis", v->id, v->op, k);
                goto done;
            }
            if (__builtin_add_overflow(total, x->shape[kp->axis], &total)) {
                s = PFAIL("concat's extent along axis %lld overflows int64", v->id, v->op, (long long)kp->axis);
                goto done;
            }
        }
        shp[kp->axis] = total;
        s = want_out(c, nd, shp);
        break;
    }
    case TP__OP_RMSNORM_GRAD: {
        const tp_vertex *w = inp(c, 1);
        if ((s = attr_num(c, a, "eps", &kp->eps, 1e-6f))) goto done;
        if (nd < 1 || w->ndim != 1 || w->shape[0] != x0->shape[nd - 1] || !same_shape(inp(c, 2), nd, shp)) {
            s = PFAIL("rmsnorm_grad needs x [..., d], w [d] and dy of x's shape", v->id, v->op);
            goto done;
        }
        s = want_out(c, nd, shp);
        break;
    }
    case TP__OP_SOFTMAX_GRAD: case TP__OP_SILU_GRAD: case TP__OP_ADAM_MOMENT:
        if (op == TP__OP_SOFTMAX_GRAD && (s = attr_num(c, a, "scale", &kp->scale, 1.0f))) goto done;
        if (op == TP__OP_ADAM_MOMENT) {
            if ((s = attr_range(c, a, "beta", &kp->beta, 0.0f, 1, 0.0f, 0, 1.0f, 1)) || (s = attr_bool(c, a, "square", &kp->square)))
                goto done;
            /* g's weight 1 - beta from the attribute's double, as PyTorch's scalar (1 - 0.999f is 1.3e-5 off) */
            kp->alpha = (float)(1.0 - json_number_value(json_object_get(a, "beta")));
        }
        if (nd < 1 || !same_shape(inp(c, 1), nd, shp)) {
            s = PFAIL("needs two inputs of one shape (at least one dimension)", v->id, v->op);
            goto done;
        }
        s = want_out(c, nd, shp);
        break;
    case TP__OP_ADAMW: {
        const tp_vertex *h = inp(c, 3);
        if ((s = attr_range(c, a, "eps", &kp->eps, 1e-8f, 0, 0.0f, 1, FLT_MAX, 0)) ||
            (s = attr_range(c, a, "weight_decay", &kp->weight_decay, 0.0f, 0, 0.0f, 0, FLT_MAX, 0)))
            goto done;
        if (!same_shape(inp(c, 1), nd, shp) || !same_shape(inp(c, 2), nd, shp)) {
            s = PFAIL("adamw needs p, m and v of one shape", v->id, v->op);
            goto done;
        }
        if (h->dtype != TP_DT_F32 || h->ndim != 1 || h->shape[0] != 3) {
            s = PFAIL("adamw's input 3 '%s' must be hyper, f32 [3] (lr, 1 - beta1^t, 1 - beta2^t)", v->id, v->op, h->id);
            goto done;
        }
        s = want_out(c, nd, shp);
        break;
    }
    case TP__OP_LOGSUMEXP: {
        if (nd < 1) {
            s = PFAIL("logsumexp needs inputs [..., C] of at least one dimension", v->id, v->op);
            goto done;
        }
        for (uint32_t k = 1; k < v->ninputs; k++) {
            const tp_vertex *x = inp(c, k);
            int ok = x->ndim == nd;
            for (int i = 0; ok && i < nd - 1; i++) ok = x->shape[i] == shp[i];
            if (!ok) {
                s = PFAIL("logsumexp input %u's leading dims differ from input 0's", v->id, v->op, k);
                goto done;
            }
        }
        shp[nd - 1] = 1;
        s = want_out(c, nd, shp);
        break;
    }
    case TP__OP_XENT: case TP__OP_XENT_GRAD: {
        const tp_vertex *lse = inp(c, 1), *ids = inp(c, 2);
        if ((s = attr_offset(c, a, "id_offset", &kp->start)) || (s = attr_num(c, a, "scale", &kp->scale, 1.0f))) goto done;
        if (nd != 2 || ids->ndim != 1 || ids->shape[0] != shp[0] || lse->ndim != 2 || lse->shape[0] != shp[0] ||
            lse->shape[1] != 1) {
            s = PFAIL("%s needs logits [T, Vc], lse [T, 1] and ids [T]", v->id, v->op, v->op);
            goto done;
        }
        if (lse->dtype != TP_DT_F32) {
            s = PFAIL("input 1 '%s' (lse) must be f32", v->id, v->op, lse->id);
            goto done;
        }
        if (op == TP__OP_XENT) shp[1] = 1;
        s = want_out(c, nd, shp);
        break;
    }
    case TP__OP_TRANSPOSE: {
        json_t *p = a ? json_object_get(a, "perm") : NULL;
        int seen[TP_MAX_DIMS] = {0};
        if (!json_is_array(p) || (int)json_array_size(p) != nd) {
            s = PFAIL("transpose needs attr 'perm' with one axis per dimension", v->id, v->op);
            goto done;
        }
        for (int i = 0; i < nd; i++) {
            json_t *e = json_array_get(p, (size_t)i);
            int64_t ax = json_is_integer(e) ? (int64_t)json_integer_value(e) : -1;
            if (ax < 0 || ax >= nd || seen[ax]++) {
                s = PFAIL("transpose 'perm' must be a permutation of 0..%d", v->id, v->op, nd - 1);
                goto done;
            }
            kp->perm[i] = (int)ax;
            shp[i] = x0->shape[ax];
        }
        s = want_out(c, nd, shp);
        break;
    }
    }
    (void)dummy;
done:
    json_decref(a);
    return s;
}

/* ---- run ---------------------------------------------------------------------------------- */

/* y = softmax(scale x) over columns 0..lim of a row of C, zeros after lim (all zeros when lim < 0) */
static void softmax_row(const float *x, float *y, uint64_t C, int64_t lim, float scale)
{
    if (lim > (int64_t)C - 1) lim = (int64_t)C - 1;
    if (lim < 0) {
        memset(y, 0, C * 4);
        return;
    }
    float mx = -INFINITY;
    for (int64_t j = 0; j <= lim; j++) mx = fmaxf(mx, x[j] * scale);
    double sum = 0;
    for (int64_t j = 0; j <= lim; j++) sum += (y[j] = expf(x[j] * scale - mx));
    float inv = (float)(1.0 / sum);
    for (int64_t j = 0; j <= lim; j++) y[j] *= inv;
    for (uint64_t j = (uint64_t)lim + 1; j < C; j++) y[j] = 0;
}

static float gelu(float x)
{
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

tp_status tp__kernel_run(const tp_graph *g, uint32_t vi, const tp__kplan *kp, const void *const *in, void *out,
                         float *scratch, tp_error *err)
{
    const tp_vertex *v = tp_graph_vertex(g, vi);
    if (kp->op == TP__OP_OPAQUE) return TP_OK;
    uint64_t n = tp__numel(v);
    const tp_vertex *x0 = tp_graph_vertex(g, v->inputs[0]);
    float *sc = scratch;
    if (kp->op == TP__OP_WRITE_SLICE || kp->op == TP__OP_PAD) {
        /* around the part: write_slice's base (in place, out == the base: nothing to copy),
         * pad's zeros (all-zero bytes are 0.0 in f32, f16 and bf16); then the part's blocks at
         * start along the axis */
        int pad = kp->op == TP__OP_PAD;
        const tp_vertex *P = pad ? x0 : tp_graph_vertex(g, v->inputs[1]);
        uint64_t es = tp_dtype_size(v->dtype), outer, inner, oext = (uint64_t)v->shape[kp->axis];
        uint64_t len = (uint64_t)kp->length;
        tp__axis_blocks(v, kp->axis, &outer, &inner);
        if (pad) memset(out, 0, n * es);
        else if (out != in[0]) memcpy(out, in[0], n * es);
        const float *pf = as_f32(in[pad ? 0 : 1], P->dtype, tp__numel(P), &sc);
        for (uint64_t q = 0; q < outer; q++)
            store((uint8_t *)out + ((q * oext + (uint64_t)kp->start) * inner) * es, v->dtype, pf + q * len * inner, len * inner);
        return TP_OK;
    }
    if (kp->op == TP__OP_RESHAPE) { /* row-major bytes unchanged; nothing to do in place */
        if (out != in[0]) memcpy(out, in[0], n * tp_dtype_size(v->dtype));
        return TP_OK;
    }
    const float *a = kp->op == TP__OP_SUM || kp->op == TP__OP_CONCAT || kp->op == TP__OP_LOGSUMEXP
                         ? NULL
                         : as_f32(in[0], x0->dtype, tp__numel(x0), &sc);
    float *o = v->dtype == TP_DT_F32 ? out : sc;
    switch (kp->op) {
    case TP__OP_MATMUL: {
        const tp_vertex *B = tp_graph_vertex(g, v->inputs[1]);
        const float *b = as_f32(in[1], B->dtype, tp__numel(B), &sc);
        o = v->dtype == TP_DT_F32 ? out : sc;
        int nd = x0->ndim;
        int64_t m = v->shape[nd - 2], nn = v->shape[nd - 1];
        int64_t k = x0->shape[nd - (kp->trans_a ? 2 : 1)];
        uint64_t batch = 1;
        for (int i = 0; i < nd - 2; i++) batch *= (uint64_t)x0->shape[i];
        uint64_t sa = (uint64_t)(m * k), sb = B->ndim == 2 ? 0 : (uint64_t)(k * nn), so = (uint64_t)(m * nn);
        for (uint64_t bi = 0; bi < batch; bi++)
            if (!tp__sgemm(kp->trans_a, kp->trans_b, (int)m, (int)nn, (int)k, kp->alpha, a + bi * sa, kp->trans_a ? (int)m : (int)k,
                           b + bi * sb, kp->trans_b ? (int)k : (int)nn, o + bi * so, (int)nn))
                return tp__fail(err, TP_ERR_DEVICE, "vertex '%s' (matmul): cannot load OpenBLAS (libopenblas.so.0)", v->id);
        break;
    }
    case TP__OP_ADD: case TP__OP_SUB: case TP__OP_MUL: {
        const tp_vertex *B = tp_graph_vertex(g, v->inputs[1]);
        uint64_t nb = tp__numel(B);
        const float *b = as_f32(in[1], B->dtype, nb, &sc);
        o = v->dtype == TP_DT_F32 ? out : sc;
        for (uint64_t q = 0; q < n; q += nb) /* b broadcast over a's leading dims, no division per element */
            for (uint64_t j = 0; j < nb; j++) {
                float x = a[q + j], y = b[j];
                o[q + j] = kp->op == TP__OP_ADD ? x + y : kp->op == TP__OP_SUB ? x - y : x * y;
            }
        break;
    }
    case TP__OP_SCALE:
        for (uint64_t i = 0; i < n; i++) o[i] = a[i] * kp->alpha;
        break;
    case TP__OP_SILU:
        for (uint64_t i = 0; i < n; i++) o[i] = a[i] / (1.0f + expf(-a[i]));
        break;
    case TP__OP_GELU:
        for (uint64_t i = 0; i < n; i++) o[i] = gelu(a[i]);
        break;
    case TP__OP_EXP:
        for (uint64_t i = 0; i < n; i++) o[i] = expf(a[i]);
        break;
    case TP__OP_RELU:
        for (uint64_t i = 0; i < n; i++) o[i] = a[i] > 0 ? a[i] : 0;
        break;
    case TP__OP_CAST:
        if (o != a) memcpy(o, a, n * 4);
        break;
    case TP__OP_SOFTMAX: {
        int nd = v->ndim;
        uint64_t C = (uint64_t)v->shape[nd - 1], R = nd >= 2 ? (uint64_t)v->shape[nd - 2] : 1;
        for (uint64_t r = 0; r < n / C; r++) /* lim: the last unmasked column */
            softmax_row(a + r * C, o + r * C, C, kp->causal ? (int64_t)(r % R) + kp->row_offset : (int64_t)C - 1, kp->scale);
        break;
    }
    case TP__OP_ATTENTION: { /* per tile of query rows: scores (only the columns causality leaves), softmax, times v */
        const tp_vertex *K = tp_graph_vertex(g, v->inputs[1]), *Vv = tp_graph_vertex(g, v->inputs[2]);
        const float *k = as_f32(in[1], K->dtype, tp__numel(K), &sc), *vv = as_f32(in[2], Vv->dtype, tp__numel(Vv), &sc);
        o = v->dtype == TP_DT_F32 ? out : sc;
        float *S = o == out ? sc : sc + n;
        int64_t R = v->shape[0], d = x0->shape[1], dv = v->shape[1], N = K->shape[0], tile = kp->length;
        for (int64_t r0 = 0; r0 < R; r0 += tile) {
            int64_t rt = R - r0 < tile ? R - r0 : tile, cols = tp__attention_cols(kp, r0, rt, N);
            if (cols < 1) { /* every row masked */
                memset(o + r0 * dv, 0, (size_t)(rt * dv) * 4);
                continue;
            }
            if (!tp__sgemm(0, 1, (int)rt, (int)cols, (int)d, kp->scale, a + r0 * d, (int)d, k, (int)d, S, (int)cols))
                return tp__fail(err, TP_ERR_DEVICE, "vertex '%s' (attention): cannot load OpenBLAS (libopenblas.so.0)", v->id);
            for (int64_t r = 0; r < rt; r++)
                softmax_row(S + r * cols, S + r * cols, (uint64_t)cols, kp->causal ? r0 + r + kp->row_offset : cols - 1, 1.0f);
            tp__sgemm(0, 0, (int)rt, (int)dv, (int)cols, 1.0f, S, (int)cols, vv, (int)dv, o + r0 * dv, (int)dv);
        }
        break;
    }
    case TP__OP_RMSNORM: {
        const tp_vertex *W = tp_graph_vertex(g, v->inputs[1]);
        uint64_t d = (uint64_t)W->shape[0];
        const float *w = as_f32(in[1], W->dtype, d, &sc);
        o = v->dtype == TP_DT_F32 ? out : sc;
        for (uint64_t r = 0; r < n / d; r++) {
            const float *x = a + r * d;
            double ss = 0;
            for (uint64_t j = 0; j < d; j++) ss += (double)x[j] * x[j];
            float inv = 1.0f / sqrtf((float)(ss / (double)d) + kp->eps);
            for (uint64_t j = 0; j < d; j++) o[r * d + j] = (x[j] * inv) * w[j];
        }
        break;
    }
    case TP__OP_ROPE: case TP__OP_ROPE_GRAD: { /* rope_grad: the transpose, a rotation by minus the angle */
        int64_t T = v->shape[0], H = v->ndim == 3 ? v->shape[1] : 1, D = v->shape[v->ndim - 1], half = D / 2;
        for (int64_t i = 0; i < half; i++) {
            float inv_freq = (float)(1.0 / pow((double)kp->theta, (double)(2 * i) / (double)D));
            for (int64_t t = 0; t < T; t++) {
                float ang = (float)(t + kp->pos_offset) * inv_freq, cs = cosf(ang), sn = sinf(ang);
                if (kp->op == TP__OP_ROPE_GRAD) sn = -sn;
                for (int64_t h = 0; h < H; h++) {
                    const float *x = a + (t * H + h) * D;
                    float *y = o + (t * H + h) * D;
                    float x1 = x[i], x2 = x[i + half];
                    y[i] = x1 * cs - x2 * sn;
                    y[i + half] = x2 * cs + x1 * sn;
                }
            }
        }
        break;
    }
    case TP__OP_EMBEDDING: {
        const int32_t *ids = in[1];
        int64_t V = x0->shape[0], d = x0->shape[1], T = v->shape[0];
        for (int64_t t = 0; t < T; t++) {
            int64_t r = (int64_t)ids[t] - kp->start;
            if (r < 0 || r >= V) {
                if (kp->masked) { /* a vocabulary slice: ids outside it give zero rows */
                    memset(o + t * d, 0, (size_t)d * 4);
                    continue;
                }
                return tp__fail(err, TP_ERR_INVALID, "vertex '%s' (embedding): id %d at position %lld is outside [%lld, %lld)",
                                v->id, ids[t], (long long)t, (long long)kp->start, (long long)(kp->start + V));
            }
            memcpy(o + t * d, a + r * d, (size_t)d * 4);
        }
        break;
    }
    case TP__OP_SUM: { /* conversions at the start of scratch, a 16-bit output's f32 sum at its end */
        float *ob = v->dtype == TP_DT_F32 ? out : scratch + kp->scratch_floats - n;
        for (uint32_t k = 0; k < v->ninputs; k++) {
            const tp_vertex *x = tp_graph_vertex(g, v->inputs[k]);
            float *tmp = scratch;
            const float *xf = as_f32(in[k], x->dtype, n, &tmp);
            if (k == 0) memmove(ob, xf, n * 4);
            else
                for (uint64_t i = 0; i < n; i++) ob[i] += xf[i];
        }
        o = ob;
        break;
    }
    case TP__OP_SLICE: case TP__OP_CONCAT: case TP__OP_TRANSPOSE: {
        int nd = v->ndim;
        if (kp->op == TP__OP_TRANSPOSE) {
            int64_t istr[TP_MAX_DIMS], idx[TP_MAX_DIMS] = {0};
            istr[nd - 1] = 1;
            for (int i = nd - 2; i >= 0; i--) istr[i] = istr[i + 1] * x0->shape[i + 1];
            for (uint64_t i = 0; i < n; i++) {
                int64_t src = 0;
                for (int j = 0; j < nd; j++) src += idx[j] * istr[kp->perm[j]];
                o[i] = a[src];
                for (int j = nd - 1; j >= 0 && ++idx[j] == v->shape[j]; j--) idx[j] = 0;
            }
            break;
        }
        /* slice and concat: outer x (axis extent x inner) blocks */
        uint64_t outer, inner;
        tp__axis_blocks(v, kp->axis, &outer, &inner);
        if (kp->op == TP__OP_SLICE) {
            uint64_t ext = (uint64_t)x0->shape[kp->axis], len = (uint64_t)kp->length;
            for (uint64_t q = 0; q < outer; q++)
                memcpy(o + q * len * inner, a + (q * ext + (uint64_t)kp->start) * inner, len * inner * 4);
            break;
        }
        uint64_t oext = (uint64_t)v->shape[kp->axis], at = 0;
        float *ob = v->dtype == TP_DT_F32 ? out : scratch + kp->scratch_floats - n;
        for (uint32_t k = 0; k < v->ninputs; k++) {
            const tp_vertex *x = tp_graph_vertex(g, v->inputs[k]);
            uint64_t ext = (uint64_t)x->shape[kp->axis];
            float *tmp = scratch;
            const float *xf = as_f32(in[k], x->dtype, tp__numel(x), &tmp);
            for (uint64_t q = 0; q < outer; q++) memcpy(ob + (q * oext + at) * inner, xf + q * ext * inner, ext * inner * 4);
            at += ext;
        }
        o = ob;
        break;
    }
    case TP__OP_RMSNORM_GRAD: {
        const tp_vertex *W = tp_graph_vertex(g, v->inputs[1]), *DY = tp_graph_vertex(g, v->inputs[2]);
        uint64_t d = (uint64_t)W->shape[0];
        const float *w = as_f32(in[1], W->dtype, d, &sc), *dy = as_f32(in[2], DY->dtype, n, &sc);
        o = v->dtype == TP_DT_F32 ? out : sc;
        for (uint64_t r = 0; r < n / d; r++) {
            const float *x = a + r * d, *gy = dy + r * d;
            double ss = 0, sd = 0;
            for (uint64_t j = 0; j < d; j++) {
                ss += (double)x[j] * x[j];
                sd += (double)x[j] * w[j] * gy[j];
            }
            float inv = 1.0f / sqrtf((float)(ss / (double)d) + kp->eps); /* as rmsnorm computes it */
            float k3 = inv * inv * inv * (float)(sd / (double)d);
            for (uint64_t j = 0; j < d; j++) o[r * d + j] = inv * w[j] * gy[j] - x[j] * k3;
        }
        break;
    }
    case TP__OP_SOFTMAX_GRAD: {
        const tp_vertex *DY = tp_graph_vertex(g, v->inputs[1]);
        const float *dy = as_f32(in[1], DY->dtype, n, &sc);
        uint64_t C = (uint64_t)v->shape[v->ndim - 1];
        o = v->dtype == TP_DT_F32 ? out : sc;
        for (uint64_t r = 0; C && r < n / C; r++) {
            const float *y = a + r * C, *gy = dy + r * C;
            double dot = 0;
            for (uint64_t j = 0; j < C; j++) dot += (double)gy[j] * y[j];
            for (uint64_t j = 0; j < C; j++) o[r * C + j] = kp->scale * y[j] * (gy[j] - (float)dot);
        }
        break;
    }
    case TP__OP_SILU_GRAD: { /* either input may be the output (in place): each element read before written */
        const tp_vertex *DY = tp_graph_vertex(g, v->inputs[1]);
        const float *dy = as_f32(in[1], DY->dtype, n, &sc);
        o = v->dtype == TP_DT_F32 ? out : sc;
        for (uint64_t i = 0; i < n; i++) {
            float x = a[i], sg = 1.0f / (1.0f + expf(-x));
            o[i] = dy[i] * sg * (1.0f + x * (1.0f - sg));
        }
        break;
    }
    case TP__OP_LOGSUMEXP: { /* the 16-bit inputs converted one after another at the start of scratch */
        float *tmp = scratch;
        for (uint32_t k = 0; k < v->ninputs; k++) {
            const tp_vertex *x = tp_graph_vertex(g, v->inputs[k]);
            if (x->dtype != TP_DT_F32) as_f32(in[k], x->dtype, tp__numel(x), &tmp);
        }
        float *ob = v->dtype == TP_DT_F32 ? out : scratch + kp->scratch_floats - n;
        for (uint64_t r = 0; r < n; r++) { /* n: rows */
            float mx = -INFINITY;
            double sum = 0;
            for (int pass = 0; pass < 2; pass++) {
                const float *cs = scratch;
                for (uint32_t k = 0; k < v->ninputs; k++) {
                    const tp_vertex *x = tp_graph_vertex(g, v->inputs[k]);
                    uint64_t C = (uint64_t)x->shape[x->ndim - 1];
                    const float *xf = x->dtype == TP_DT_F32 ? (const float *)in[k] : cs;
                    if (x->dtype != TP_DT_F32) cs += tp__numel(x);
                    const float *row = xf + r * C;
                    if (pass == 0)
                        for (uint64_t j = 0; j < C; j++) mx = fmaxf(mx, row[j]);
                    else
                        for (uint64_t j = 0; j < C; j++) sum += expf(row[j] - mx);
                }
                if (isinf(mx)) break; /* every element -inf (log 0), or one +inf */
            }
            ob[r] = isinf(mx) ? mx : mx + (float)log(sum);
        }
        o = ob;
        break;
    }
    case TP__OP_XENT: case TP__OP_XENT_GRAD: { /* lse is f32 (checked), ids i32 */
        const float *lse = in[1];
        const int32_t *ids = in[2];
        uint64_t T = (uint64_t)x0->shape[0], Vc = (uint64_t)x0->shape[1];
        for (uint64_t t = 0; t < T; t++) {
            int64_t col = (int64_t)ids[t] - kp->start; /* the target's column in this chunk */
            int hit = ids[t] >= 0 && col >= 0 && col < (int64_t)Vc;
            if (kp->op == TP__OP_XENT) {
                o[t] = hit ? kp->scale * (lse[t] - a[t * Vc + (uint64_t)col]) : 0.0f;
                continue;
            }
            float *row = o + t * Vc;
            if (ids[t] < 0) { /* an ignored position */
                memset(row, 0, Vc * 4);
                continue;
            }
            for (uint64_t j = 0; j < Vc; j++) row[j] = kp->scale * expf(a[t * Vc + j] - lse[t]);
            if (hit) row[col] = kp->scale * (expf(a[t * Vc + (uint64_t)col] - lse[t]) - 1.0f);
        }
        break;
    }
    case TP__OP_ADAM_MOMENT: { /* in place on m allowed */
        const tp_vertex *G = tp_graph_vertex(g, v->inputs[1]);
        const float *gr = as_f32(in[1], G->dtype, n, &sc);
        float b = kp->beta, b1 = kp->alpha; /* 1 - beta */
        o = v->dtype == TP_DT_F32 ? out : sc;
        for (uint64_t i = 0; i < n; i++) o[i] = b * a[i] + b1 * (kp->square ? gr[i] * gr[i] : gr[i]);
        break;
    }
    case TP__OP_ADAMW: { /* PyTorch's AdamW step; in place on p allowed */
        const tp_vertex *M = tp_graph_vertex(g, v->inputs[1]), *Vv = tp_graph_vertex(g, v->inputs[2]);
        const float *m = as_f32(in[1], M->dtype, n, &sc), *vv = as_f32(in[2], Vv->dtype, n, &sc), *h = in[3];
        float decay = 1.0f - h[0] * kp->weight_decay, step = h[0] / h[1], bc2s = sqrtf(h[2]);
        o = v->dtype == TP_DT_F32 ? out : sc;
        for (uint64_t i = 0; i < n; i++) o[i] = a[i] * decay - step * (m[i] / (sqrtf(vv[i]) / bc2s + kp->eps));
        break;
    }
    default:
        break;
    }
    if (v->dtype != TP_DT_F32) store(out, v->dtype, o, n);
    return TP_OK;
}

