/* offload.c - the OFF model's formats and its checker (issue 14; docs/weight-offload.md).
 *
 * The chain reader takes "turnip.chain/1" JSON through jansson, refuses unknown keys and checks
 * every number (finite, non-negative, bytes integral and <= 2^53, the sum of all weights and
 * activations <= 2^53 so every memory sum below is exact in uint64 and in double).
 *
 * The checker replays a schedule and shares nothing with the schedulers (offload_greedy.c):
 * first the shape (durations, the compute order B_L..B_1 F_1..F_L, no overlap on the GPU or on
 * one link direction), then each weight's life in start order (a state machine: resident or
 * not, host copy valid or stale), then memory by a sweep over every reservation and every
 * compute charge, then the wrap (the end state equals the start state). Memory at an instant:
 * the weights whose buffer is reserved (from a prefetch's start to an offload's end or a
 * delete; weights resident at 0 from 0) plus the running computation's own memory beyond its
 * weight (M_o - |w_o| of the paper's equation 1: during F_i the activations a^0..a^i, during
 * B_i also the gradient |w_i|) or, while the GPU idles, what rests between computations
 * (a^0..a^i after F_i, a^0..a^{i-1} after B_i, a^0..a^L before B_L: never more than either
 * neighbour's). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "turnip/offload.h"
#include "io/util.h"

#define MAX_TIME 1e9                 /* seconds, per operation (a computation or one weight's transfer) */
#define MIN_TIME 1e-9                /* seconds: a computation takes time, so its memory is held at an instant of its own */

void tp_chain_free(tp_chain *c)
{
    if (!c) return;
    free(c->uf);
    free(c->ub);
    free(c->w);
    free(c->a);
    free(c->frozen);
    free(c);
}

tp_chain *tp_chain_new(uint32_t layers)
{
    if (layers < 1 || layers > (1u << 20)) return NULL;
    tp_chain *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->layers = layers;
    c->uf = calloc(layers, sizeof *c->uf);
    c->ub = calloc(layers, sizeof *c->ub);
    c->w = calloc(layers, sizeof *c->w);
    c->a = calloc((size_t)layers + 1, sizeof *c->a);
    c->frozen = calloc(layers, 1);
    if (!c->uf || !c->ub || !c->w || !c->a || !c->frozen) {
        tp_chain_free(c);
        return NULL;
    }
    return c;
}

static tp_status bad(tp_error *err, const char *path, const char *field, const char *what)
{
    return tp__fail(err, TP_ERR_PARSE, "%s: %s: %s", path, field, what);
}

/* a byte count: a JSON integer in 0..2^53 */
static tp_status get_bytes(json_t *v, const char *path, const char *field, uint64_t *out, tp_error *err)
{
    if (!v) return bad(err, path, field, "missing");
    if (!json_is_integer(v)) return bad(err, path, field, "not an integer (bytes)");
    json_int_t x = json_integer_value(v);
    if (x < 0) return bad(err, path, field, "negative");
    if (x > ((json_int_t)1 << 53)) return bad(err, path, field, "over 2^53 bytes");
    *out = (uint64_t)x;
    return TP_OK;
}

/* seconds or bytes/s: a finite JSON number in [lo, hi] */
static tp_status get_num(json_t *v, const char *path, const char *field, double lo, double hi, double *out,
                         tp_error *err)
{
    if (!v) return bad(err, path, field, "missing");
    if (!json_is_number(v)) return bad(err, path, field, "not a number");
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || x > hi) {
        char m[128];
        snprintf(m, sizeof m, "%.17g out of range [%g, %g]", x, lo, hi);
        return bad(err, path, field, m);
    }
    *out = x;
    return TP_OK;
}

static tp_status only_keys(json_t *o, const char *const *keys, const char *path, const char *where, tp_error *err)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        int ok = 0;
        for (const char *const *p = keys; *p; p++) ok |= !strcmp(*p, k);
        if (!ok) return tp__fail(err, TP_ERR_PARSE, "%s: %s: unknown key \"%.64s\"", path, where, k);
    }
    return TP_OK;
}

/* The rules across fields of layer i, whose sizes are each at most 2^53 (the reader and
 * tp_chain_check share them): RULE_TRANSFER when w_i's transfer takes over MAX_TIME at beta,
 * RULE_SUM when the running sum of all sizes (*total, a^0 first) passes 2^53 (each term <= 2^53,
 * so the sum stops before it can wrap), else 0. */
enum { RULE_OK = 0, RULE_TRANSFER, RULE_SUM };
static const char *const rule_msg[] = {"", "its transfer takes over 1e9 s at this beta",
                                       "the sum of all weights and activations exceeds 2^53 bytes"};

static int layer_rule(const tp_chain *c, uint32_t i, uint64_t *total)
{
    if ((double)c->w[i] / c->beta > MAX_TIME) return RULE_TRANSFER;
    *total += c->w[i] + c->a[i + 1];
    return *total > ((uint64_t)1 << 53) ? RULE_SUM : RULE_OK;
}

tp_status tp_chain_read_file(const char *path, tp_chain **out, tp_error *err)
{
    *out = NULL;
    json_error_t je;
    char *text;
    size_t len;
    tp_status rs = tp__read_file(path, &text, &len, err); /* a regular file only: a FIFO is refused, never waited on */
    if (rs) return rs;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!root) return tp__fail(err, TP_ERR_PARSE, "%s: line %d: not JSON: %s", path, je.line, je.text);
    tp_status s = TP_OK;
    tp_chain *c = NULL;
    char field[64];
    if (!json_is_object(root)) {
        s = bad(err, path, "(top)", "not an object");
        goto done;
    }
    static const char *const top[] = {"format", "mgpu", "beta", "a0", "layers", NULL};
    if ((s = only_keys(root, top, path, "(top)", err))) goto done;
    json_t *fmt = json_object_get(root, "format");
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), "turnip.chain/1")) {
        s = bad(err, path, "format", "not \"turnip.chain/1\"");
        goto done;
    }
    json_t *layers = json_object_get(root, "layers");
    if (!json_is_array(layers)) {
        s = bad(err, path, "layers", layers ? "not an array" : "missing");
        goto done;
    }
    size_t L = json_array_size(layers);
    if (L < 1 || L > (1u << 20)) {
        s = bad(err, path, "layers", "needs 1..2^20 entries");
        goto done;
    }
    if (!(c = tp_chain_new((uint32_t)L))) {
        s = tp__fail(err, TP_ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((s = get_bytes(json_object_get(root, "mgpu"), path, "mgpu", &c->mgpu, err))) goto done;
    if ((s = get_num(json_object_get(root, "beta"), path, "beta", TP_CHAIN_RATE_MIN, TP_CHAIN_RATE_MAX, &c->beta, err))) goto done;
    if ((s = get_bytes(json_object_get(root, "a0"), path, "a0", &c->a[0], err))) goto done;
    uint64_t total = c->a[0];
    static const char *const lk[] = {"uf", "ub", "w", "a", "frozen", NULL};
    for (size_t i = 0; i < L; i++) {
        json_t *e = json_array_get(layers, i);
        snprintf(field, sizeof field, "layers[%zu]", i);
        if (!json_is_object(e)) {
            s = bad(err, path, field, "not an object");
            goto done;
        }
        if ((s = only_keys(e, lk, path, field, err))) goto done;
        snprintf(field, sizeof field, "layers[%zu].uf", i);
        if ((s = get_num(json_object_get(e, "uf"), path, field, MIN_TIME, MAX_TIME, &c->uf[i], err))) goto done;
        snprintf(field, sizeof field, "layers[%zu].ub", i);
        if ((s = get_num(json_object_get(e, "ub"), path, field, MIN_TIME, MAX_TIME, &c->ub[i], err))) goto done;
        snprintf(field, sizeof field, "layers[%zu].w", i);
        if ((s = get_bytes(json_object_get(e, "w"), path, field, &c->w[i], err))) goto done;
        snprintf(field, sizeof field, "layers[%zu].a", i);
        if ((s = get_bytes(json_object_get(e, "a"), path, field, &c->a[i + 1], err))) goto done;
        json_t *fz = json_object_get(e, "frozen"); /* optional, false by default */
        if (fz && !json_is_boolean(fz)) {
            snprintf(field, sizeof field, "layers[%zu].frozen", i);
            s = bad(err, path, field, "not true or false");
            goto done;
        }
        c->frozen[i] = fz && json_is_true(fz);
        int r = layer_rule(c, (uint32_t)i, &total);
        if (r) {
            snprintf(field, sizeof field, "layers[%zu].%s", i, r == RULE_TRANSFER ? "w" : "a");
            s = bad(err, path, field, rule_msg[r]);
            goto done;
        }
    }
done:
    json_decref(root);
    if (s) {
        tp_chain_free(c);
        return s;
    }
    *out = c;
    return TP_OK;
}

tp_status tp_chain_check(const tp_chain *c, tp_error *err)
{
    if (!c || !c->uf || !c->ub || !c->w || !c->a) return tp__fail(err, TP_ERR_ARG, "chain: NULL chain or array");
    if (c->layers < 1 || c->layers > (1u << 20)) return tp__fail(err, TP_ERR_ARG, "chain: %u layers (want 1..2^20)", c->layers);
    if (!(c->beta >= TP_CHAIN_RATE_MIN && c->beta <= TP_CHAIN_RATE_MAX)) return tp__fail(err, TP_ERR_ARG, "chain: beta %g (want %g..%g bytes/s)", c->beta, TP_CHAIN_RATE_MIN, TP_CHAIN_RATE_MAX);
    uint64_t total = c->a[0];
    if (total > ((uint64_t)1 << 53)) return tp__fail(err, TP_ERR_ARG, "chain: a0 over 2^53 bytes");
    for (uint32_t i = 0; i < c->layers; i++) {
        if (!(c->uf[i] >= MIN_TIME && c->uf[i] <= MAX_TIME && c->ub[i] >= MIN_TIME && c->ub[i] <= MAX_TIME))
            return tp__fail(err, TP_ERR_ARG, "chain: layer %u: uf %g, ub %g (want %g..%g s)", i, c->uf[i], c->ub[i], MIN_TIME, MAX_TIME);
        if (c->w[i] > ((uint64_t)1 << 53) || c->a[i + 1] > ((uint64_t)1 << 53))
            return tp__fail(err, TP_ERR_ARG, "chain: layer %u: a size over 2^53 bytes", i);
        int r = layer_rule(c, i, &total);
        if (r) return tp__fail(err, TP_ERR_ARG, "chain: layer %u: %s", i, rule_msg[r]);
    }
    return TP_OK;
}

void tp_offload_schedule_free(tp_offload_schedule *s)
{
    if (!s) return;
    free(s->resident0);
    free(s->valid0);
    free(s->ops);
    free(s);
}

static const char *const op_names[] = {"F", "B", "prefetch", "offload", "upload", "delete"};

tp_status tp_offload_schedule_write(const tp_offload_schedule *s, FILE *f, tp_error *err)
{
    fprintf(f, "{\"format\": \"turnip.offload-schedule/1\", \"layers\": %u, \"makespan\": %.17g,\n", s->layers,
            s->makespan);
    fputs(" \"resident0\": [", f);
    for (uint32_t k = 0; k < s->layers; k++) fprintf(f, "%s%d", k ? ", " : "", s->resident0[k] ? 1 : 0);
    fputs("],\n \"valid0\": [", f);
    for (uint32_t k = 0; k < s->layers; k++) fprintf(f, "%s%d", k ? ", " : "", s->valid0[k] ? 1 : 0);
    fputs("],\n \"ops\": [", f);
    for (uint32_t j = 0; j < s->nops; j++) {
        const tp_offload_op *o = &s->ops[j];
        fprintf(f, "%s\n  {\"op\": \"%s\", \"layer\": %u, \"start\": %.17g, \"end\": %.17g}", j ? "," : "",
                (unsigned)o->kind < 6 ? op_names[o->kind] : "?", o->layer, o->start, o->end);
    }
    fputs("\n ]}\n", f);
    if (ferror(f)) return tp__fail(err, TP_ERR_IO, "writing the schedule failed");
    return TP_OK;
}

/* ---- the checker ---- */

typedef struct {
    double t;
    int64_t d; /* bytes, |d| <= 2^55 */
} mev;

static int cmp_mev(const void *x, const void *y)
{
    const mev *a = x, *b = y;
    if (a->t != b->t) return a->t < b->t ? -1 : 1;
    return (a->d > b->d) - (a->d < b->d); /* frees first at one instant */
}

/* qsort has no context argument: sort pointers to operations */
static int cmp_start(const void *x, const void *y)
{
    const tp_offload_op *a = *(const tp_offload_op *const *)x, *b = *(const tp_offload_op *const *)y;
    if (a->start != b->start) return a->start < b->start ? -1 : 1;
    return (a > b) - (a < b); /* at one instant: in the order of the ops array */
}

static int cmp_layer_start(const void *x, const void *y)
{
    const tp_offload_op *a = *(const tp_offload_op *const *)x, *b = *(const tp_offload_op *const *)y;
    if (a->layer != b->layer) return a->layer < b->layer ? -1 : 1;
    return cmp_start(x, y);
}

static int is_compute(tp_offload_op_kind k)
{
    return k == TP_OFFOP_F || k == TP_OFFOP_B;
}

#define CFAIL(...) tp__fail(err, TP_ERR_CHECK, __VA_ARGS__)

tp_status tp_offload_check(const tp_chain *c, const tp_offload_schedule *s, tp_offload_report *rep, tp_error *err)
{
    tp_status cs = tp_chain_check(c, err);
    if (cs) return cs;
    uint32_t L = c->layers;
    if (s->layers != L) return tp__fail(err, TP_ERR_INVALID, "schedule has %u layers, the chain %u", s->layers, L);
    for (uint32_t j = 0; j < s->nops; j++)
        if (s->ops[j].layer >= L || (unsigned)s->ops[j].kind > TP_OFFOP_DELETE)
            return tp__fail(err, TP_ERR_INVALID, "op %u: layer %u or kind %d out of range", j, s->ops[j].layer,
                            (int)s->ops[j].kind);
    double mk = 0, compute = 0;
    for (uint32_t i = 0; i < L; i++) compute += c->uf[i] + c->ub[i];
    for (uint32_t j = 0; j < s->nops; j++)
        if (s->ops[j].end > mk) mk = s->ops[j].end;
    const double eps = 1e-9 * (1.0 + mk);
    tp_status st = TP_OK;
    uint32_t *cidx = malloc(2 * (size_t)L * sizeof *cidx);
    const tp_offload_op **byp = malloc(((size_t)s->nops + 1) * sizeof *byp);
    mev *ev = malloc((2 * (size_t)s->nops + 2 * (size_t)L + 2) * sizeof *ev);
    uint8_t *res = malloc(L), *valid = malloc(L);
    if (!cidx || !byp || !ev || !res || !valid) {
        st = tp__fail(err, TP_ERR_NOMEM, "out of memory");
        goto out;
    }
    /* 1. shape: durations, times in range, the computations once each in order */
    for (uint32_t p = 0; p < 2 * L; p++) cidx[p] = UINT32_MAX;
    uint64_t moved = 0;
    for (uint32_t j = 0; j < s->nops; j++) {
        const tp_offload_op *o = &s->ops[j];
        uint32_t i = o->layer;
        double dur = 0;
        switch (o->kind) {
        case TP_OFFOP_F: dur = c->uf[i]; break;
        case TP_OFFOP_B: dur = c->ub[i]; break;
        case TP_OFFOP_DELETE: dur = 0; break;
        default:
            dur = (double)c->w[i] / c->beta;
            moved += c->w[i];
            break;
        }
        if (!(o->start >= 0) || !isfinite(o->end) || fabs(o->end - (o->start + dur)) > eps) {
            st = CFAIL("op %u (%s of layer %u): [%.17g, %.17g] is not [start >= 0, start + %.17g]", j, op_names[o->kind],
                       i, o->start, o->end, dur);
            goto out;
        }
        if (is_compute(o->kind)) {
            uint32_t pos = o->kind == TP_OFFOP_B ? L - 1 - i : L + i; /* B_L..B_1 F_1..F_L */
            if (cidx[pos] != UINT32_MAX) {
                st = CFAIL("%s of layer %u appears twice", op_names[o->kind], i);
                goto out;
            }
            cidx[pos] = j;
        }
    }
    for (uint32_t p = 0; p < 2 * L; p++) {
        if (cidx[p] == UINT32_MAX) {
            st = CFAIL("%s of layer %u is missing", p < L ? "B" : "F", p < L ? L - 1 - p : p - L);
            goto out;
        }
        if (p && s->ops[cidx[p]].start < s->ops[cidx[p - 1]].end - eps) {
            const tp_offload_op *a = &s->ops[cidx[p - 1]], *b = &s->ops[cidx[p]];
            st = CFAIL("GPU overlap or wrong order: %s of layer %u starts at %.17g before %s of layer %u ends at %.17g",
                       op_names[b->kind], b->layer, b->start, op_names[a->kind], a->layer, a->end);
            goto out;
        }
    }
    /* 2. each link direction carries one transfer at a time */
    for (int dir = 0; dir < 2; dir++) {
        uint32_t n = 0;
        for (uint32_t j = 0; j < s->nops; j++) {
            tp_offload_op_kind k = s->ops[j].kind;
            if (dir == 0 ? k == TP_OFFOP_PREFETCH : (k == TP_OFFOP_OFFLOAD || k == TP_OFFOP_UPLOAD)) byp[n++] = &s->ops[j];
        }
        qsort(byp, n, sizeof *byp, cmp_start);
        for (uint32_t x = 1; x < n; x++) {
            const tp_offload_op *a = byp[x - 1], *b = byp[x];
            if (b->start < a->end - eps) {
                st = CFAIL("%s link overlap: %s of layer %u at %.17g starts before %s of layer %u ends at %.17g",
                           dir ? "offload" : "prefetch", op_names[b->kind], b->layer, b->start, op_names[a->kind],
                           a->layer, a->end);
                goto out;
            }
        }
    }
    /* 3. each weight's life, its operations in start order (at one instant, in the order of
     * the ops array: a zero-byte prefetch and the computation that needs it start together) */
    for (uint32_t j = 0; j < s->nops; j++) byp[j] = &s->ops[j];
    qsort(byp, s->nops, sizeof *byp, cmp_layer_start);
    for (uint32_t k = 0; k < L; k++) {
        res[k] = s->resident0[k] ? 1 : 0;
        valid[k] = s->valid0[k] ? 1 : 0;
    }
    for (uint32_t x = 0, i = 0; i < L; i++) {
        double busy = 0;   /* end of the last prefetch, offload, delete or computation on w_i */
        double up = 0;     /* end of the last upload of w_i */
        double arrive = 0; /* end of the last prefetch of w_i */
        const tp_offload_op *bop = &s->ops[cidx[L - 1 - i]];
        for (; x < s->nops && byp[x]->layer == i; x++) {
            const tp_offload_op *o = byp[x];
            const char *nm = op_names[o->kind];
            int transfer = o->kind == TP_OFFOP_OFFLOAD || o->kind == TP_OFFOP_UPLOAD;
            if (o->kind != TP_OFFOP_PREFETCH && (!res[i] || o->start < arrive - eps)) {
                st = CFAIL("%s of layer %u at %.17g: w_%u is not resident", nm, i, o->start, i);
                goto out;
            }
            if (o->kind == TP_OFFOP_PREFETCH && res[i]) {
                st = CFAIL("prefetch of layer %u at %.17g: w_%u is already resident", i, o->start, i);
                goto out;
            }
            if (o->kind == TP_OFFOP_PREFETCH && !valid[i]) {
                st = CFAIL("prefetch of layer %u at %.17g: the host copy of w_%u is stale", i, o->start, i);
                goto out;
            }
            if (transfer && o->start < bop->end - eps && o->end > bop->start + eps) {
                st = CFAIL("%s of layer %u at %.17g overlaps B of layer %u, which changes w_%u", nm, i, o->start, i, i);
                goto out;
            }
            /* an upload may run beside F_i (F does not change w_i); nothing else overlaps */
            if ((o->kind != TP_OFFOP_UPLOAD && o->start < busy - eps) ||
                (o->kind != TP_OFFOP_F && o->start < up - eps)) {
                st = CFAIL("%s of layer %u at %.17g overlaps another operation on w_%u", nm, i, o->start, i);
                goto out;
            }
            switch (o->kind) {
            case TP_OFFOP_B: valid[i] = tp_chain_frozen(c, i) ? valid[i] : 0; break; /* a frozen w_i stays as it was */
            case TP_OFFOP_PREFETCH:
                res[i] = 1;
                arrive = o->end;
                break;
            case TP_OFFOP_OFFLOAD:
                valid[i] = 1;
                res[i] = 0;
                break;
            case TP_OFFOP_UPLOAD: valid[i] = 1; break;
            case TP_OFFOP_DELETE:
                if (!valid[i]) {
                    st = CFAIL("delete of layer %u at %.17g: the host copy of w_%u is stale (the data would be lost)",
                               i, o->start, i);
                    goto out;
                }
                res[i] = 0;
                break;
            default: break;
            }
            if (o->kind == TP_OFFOP_UPLOAD)
                up = o->end > up ? o->end : up;
            else
                busy = o->end > busy ? o->end : busy;
        }
    }
    /* 4. memory at every instant */
    {
        uint32_t n = 0;
        uint64_t asum = 0;
        for (uint32_t k = 0; k <= L; k++) asum += c->a[k];
        /* rest[p]: what stays between computation p and the next (before B_L: after F_L) */
        uint64_t prev_rest = asum; /* after F_L */
        ev[n++] = (mev){0.0, (int64_t)asum};
        for (uint32_t k = 0; k < L; k++)
            if (s->resident0[k]) ev[n++] = (mev){0.0, (int64_t)c->w[k]};
        uint64_t pre = 0; /* sum a^0..a^i for the current i */
        uint64_t *pref = malloc(((size_t)L + 1) * sizeof *pref);
        if (!pref) {
            st = tp__fail(err, TP_ERR_NOMEM, "out of memory");
            goto out;
        }
        for (uint32_t k = 0; k <= L; k++) {
            pre += c->a[k];
            pref[k] = pre; /* a^0..a^k */
        }
        for (uint32_t p = 0; p < 2 * L; p++) {
            const tp_offload_op *o = &s->ops[cidx[p]];
            uint32_t i = o->layer; /* layer index 0..L-1 is the paper's i+1 */
            uint64_t act = pref[i + 1];
            uint64_t x = o->kind == TP_OFFOP_B && !tp_chain_frozen(c, i) ? act + c->w[i] : act; /* + its gradient */
            uint64_t rest = o->kind == TP_OFFOP_B ? pref[i] : pref[i + 1];
            ev[n++] = (mev){o->start, (int64_t)x - (int64_t)prev_rest};
            ev[n++] = (mev){o->end, (int64_t)rest - (int64_t)x};
            prev_rest = rest;
        }
        free(pref);
        for (uint32_t j = 0; j < s->nops; j++) {
            const tp_offload_op *o = &s->ops[j];
            if (o->kind == TP_OFFOP_PREFETCH) ev[n++] = (mev){o->start, (int64_t)c->w[o->layer]};
            if (o->kind == TP_OFFOP_OFFLOAD || o->kind == TP_OFFOP_DELETE)
                ev[n++] = (mev){o->end, -(int64_t)c->w[o->layer]};
        }
        qsort(ev, n, sizeof *ev, cmp_mev);
        int64_t cur = 0, peak = 0;
        for (uint32_t j = 0; j < n; j++) {
            cur += ev[j].d;
            /* the value between instants: after every event of one instant */
            if (j + 1 < n && ev[j + 1].t == ev[j].t) continue;
            if (cur > peak) peak = cur;
            if (cur > 0 && (uint64_t)cur > c->mgpu) {
                st = CFAIL("memory over mgpu: %lld bytes > %llu at %.17g s", (long long)cur,
                           (unsigned long long)c->mgpu, ev[j].t);
                goto out;
            }
        }
        rep->peak = (uint64_t)peak;
    }
    /* 5. the wrap */
    for (uint32_t k = 0; k < L; k++) {
        if (res[k] != (s->resident0[k] ? 1 : 0) || valid[k] != (s->valid0[k] ? 1 : 0)) {
            st = CFAIL("wrap: w_%u ends %s with a %s host copy but starts %s with a %s one", k,
                       res[k] ? "resident" : "away", valid[k] ? "valid" : "stale",
                       s->resident0[k] ? "resident" : "away", s->valid0[k] ? "valid" : "stale");
            goto out;
        }
    }
    rep->makespan = mk;
    rep->compute = compute;
    rep->bytes_moved = moved;
out:
    free(cidx);
    free(byp);
    free(ev);
    free(res);
    free(valid);
    return st;
}
