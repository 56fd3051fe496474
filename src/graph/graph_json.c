/* graph_json.c - "turnip.taskgraph/1" JSON in (pulled, io/jsonpull.h) and out (streamed).
 *
 * Reading pulls one vertex object at a time into a small record of what each known field held
 * (its JSON type and value), checks it in the fixed order of docs/formats.md and adds the vertex;
 * no document tree exists. Input names resolve at once when the producer came earlier in the
 * file, else they wait in a list resolved after the last vertex, so a file may name a producer
 * that appears later. Errors keep a tree parser's precedence: a syntax error anywhere comes
 * first (the rest of the text is still read after a semantic error), then the top level's
 * fields in the order format, devices, vertices, then the first vertex in file order, input
 * names, outputs, keep, and finalize. Every error names the file, the place (vertices[i] and
 * the id) and the problem. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include "graph/graph_internal.h"
#include "io/jsonpull.h"

#define TG_FORMAT "turnip.taskgraph/1"

/* How a field of a vertex was given: absent, of the wanted JSON type, or of another. */
enum { F_NONE = 0, F_OK = 1, F_BAD = 2 };

/* Growable NUL-separated strings; off[i] == SIZE_MAX marks an element that was no string. */
typedef struct {
    char *buf;
    size_t n, cap;
    size_t *off;
    size_t cnt, capoff;
} strlist;

static int sl_add(strlist *l, const char *s, size_t len)
{
    if (!TP__GROW(l->off, l->capoff, l->cnt + 1)) return 0;
    if (!s) {
        l->off[l->cnt++] = SIZE_MAX;
        return 1;
    }
    if (!TP__GROW(l->buf, l->cap, l->n + len + 1)) return 0;
    memcpy(l->buf + l->n, s, len + 1);
    l->off[l->cnt++] = l->n;
    l->n += len + 1;
    return 1;
}

static const char *sl_get(const strlist *l, size_t i)
{
    return l->off[i] == SIZE_MAX ? NULL : l->buf + l->off[i];
}

static void sl_free(strlist *l)
{
    free(l->buf);
    free(l->off);
}

/* One vertex object as read: per field its F_* state and value. */
typedef struct {
    uint8_t id, kind, device, dtype, shape, bytes, op, flops, resident, inplace, attrs, inputs, host;
    uint8_t res_off, res_hc, res_load, res_pin;
    int kindv, dtype_ok, shape_bad, in_allstr, res_hcv, res_loadv, res_pinv;
    tp_dtype dtypev;
    int64_t devicev, bytesv, inplacev, res_offv, hostv;
    uint32_t shape_n;
    int64_t shapev[TP_MAX_DIMS];
    double flopsv;
} vrec;

typedef struct {
    uint32_t v, k; /* vertex, argument */
    size_t name;   /* index in rd.pnames */
} pending;

typedef struct {
    tp__jp jp;
    const char *name; /* file name for messages */
    tp_error *err;
    tp_graph *g;
    char *id, *op; /* the current vertex's strings (owned, reused) */
    size_t idcap, opcap;
    strlist in;     /* the current vertex's input names */
    strlist pnames; /* names of inputs not yet defined when read */
    uint32_t *inbuf; /* the current vertex's inputs, resolved (owned, reused) */
    size_t incap;
    pending *pend;
    size_t npend, cappend;
    /* top level */
    uint8_t format, devices, vertices, outputs, keep, hres; /* F_* */
    int format_ok;
    int64_t nd, hresv;
    int deferred; /* vertices came before a usable "devices": checked against nd at the end */
    strlist outl, keepl;
    /* the first vertex error (TP_OK: none) */
    tp_status vs;
    tp_error verr;
    int dev_read;    /* the current vertex passed its device check */
    int vdev;        /* deferred: vs came after vertex vdev_i's device check (vdev_d), which the
                        real count may fail; that error then comes first */
    size_t vdev_i;
    int64_t vdev_d;
    char *vdev_id;   /* owned */
} rd;

static tp_status vbad(rd *r, size_t i, const char *id, const char *what)
{
    if (id) return tp__fail(&r->verr, TP_ERR_PARSE, "%s: vertices[%zu] (id '%s'): %s", r->name, i, id, what);
    return tp__fail(&r->verr, TP_ERR_PARSE, "%s: vertices[%zu]: %s", r->name, i, what);
}

static tp_status nomem(rd *r)
{
    return tp__fail(r->err, TP_ERR_NOMEM, "out of memory");
}

/* Reads one value as an integer: F_OK (*v set), F_BAD (another type, skipped), -1 syntax error. */
static int rd_int(rd *r, int64_t *v)
{
    tp__jpt t = tp__jp_peek(&r->jp);
    if (t == TP__JP_ERROR) return -1;
    if (t != TP__JP_NUMBER) return tp__jp_skip(&r->jp) ? -1 : F_BAD;
    if (tp__jp_number(&r->jp)) return -1;
    if (!r->jp.is_int) return F_BAD;
    *v = r->jp.ival;
    return F_OK;
}

static int rd_num(rd *r, double *v)
{
    tp__jpt t = tp__jp_peek(&r->jp);
    if (t == TP__JP_ERROR) return -1;
    if (t != TP__JP_NUMBER) return tp__jp_skip(&r->jp) ? -1 : F_BAD;
    if (tp__jp_number(&r->jp)) return -1;
    *v = r->jp.dval;
    return F_OK;
}

static int rd_bool(rd *r, int *v)
{
    tp__jpt t = tp__jp_peek(&r->jp);
    if (t == TP__JP_ERROR) return -1;
    if (t != TP__JP_TRUE && t != TP__JP_FALSE) return tp__jp_skip(&r->jp) ? -1 : F_BAD;
    return tp__jp_bool(&r->jp, v) ? -1 : F_OK;
}

/* a string into *buf (owned, grown); -1 also on OOM (err filled) */
static int rd_str(rd *r, char **buf, size_t *cap, const char **out, size_t *outlen)
{
    tp__jpt t = tp__jp_peek(&r->jp);
    if (t == TP__JP_ERROR) return -1;
    if (t != TP__JP_STRING) return tp__jp_skip(&r->jp) ? -1 : F_BAD;
    const char *s;
    size_t len;
    if (tp__jp_string(&r->jp, &s, &len)) return -1;
    if (buf) {
        if (!TP__GROW(*buf, *cap, len + 1)) {
            nomem(r);
            return -1;
        }
        memcpy(*buf, s, len + 1);
        s = *buf;
    }
    if (out) *out = s;
    if (outlen) *outlen = len;
    return F_OK;
}

#define RD(field, call)                                                                                       \
    do {                                                                                                      \
        int x_ = (call);                                                                                      \
        if (x_ < 0) return -1;                                                                                \
        f->field = (uint8_t)x_;                                                                               \
    } while (0)

static int read_resident(rd *r, vrec *f)
{
    if (tp__jp_obj_begin(&r->jp)) return -1;
    const char *k;
    int x;
    while ((x = tp__jp_obj_key(&r->jp, &k)) == 1) {
        if (!strcmp(k, "offset")) RD(res_off, rd_int(r, &f->res_offv));
        else if (!strcmp(k, "host_copy")) RD(res_hc, rd_bool(r, &f->res_hcv));
        else if (!strcmp(k, "load")) RD(res_load, rd_bool(r, &f->res_loadv));
        else if (!strcmp(k, "pin")) RD(res_pin, rd_bool(r, &f->res_pinv));
        else if (tp__jp_skip(&r->jp)) return -1;
    }
    return x < 0 ? -1 : F_OK;
}

static int read_shape(rd *r, vrec *f)
{
    if (tp__jp_arr_begin(&r->jp)) return -1;
    int x;
    while ((x = tp__jp_arr_next(&r->jp)) == 1) {
        if (f->shape_n >= TP_MAX_DIMS) {
            if (f->shape_n < UINT32_MAX) f->shape_n++;
            if (tp__jp_skip(&r->jp)) return -1;
            continue;
        }
        int64_t v = 0;
        int y = rd_int(r, &v);
        if (y < 0) return -1;
        if (y != F_OK || v < 0) f->shape_bad = 1;
        f->shapev[f->shape_n++] = v;
    }
    return x < 0 ? -1 : F_OK;
}

static int read_inputs(rd *r, vrec *f)
{
    if (tp__jp_arr_begin(&r->jp)) return -1;
    int x;
    f->in_allstr = 1;
    while ((x = tp__jp_arr_next(&r->jp)) == 1) {
        const char *s;
        size_t len;
        int y = rd_str(r, NULL, NULL, &s, &len);
        if (y < 0) return -1;
        if (y != F_OK) f->in_allstr = 0;
        else if (!sl_add(&r->in, s, len)) {
            nomem(r);
            return -1;
        }
    }
    return x < 0 ? -1 : F_OK;
}

/* reads vertex object fields into f; attrs' text stays in r->jp's record buffer. -1: stop (err filled) */
static int read_fields(rd *r, vrec *f)
{
    memset(f, 0, sizeof *f);
    r->in.n = r->in.cnt = 0;
    if (tp__jp_obj_begin(&r->jp)) return -1;
    const char *k, *s;
    int x;
    while ((x = tp__jp_obj_key(&r->jp, &k)) == 1) {
        tp__jpt t;
        switch (k[0]) { /* first letter, then the whole name */
        case 'i':
            if (!strcmp(k, "id")) {
                RD(id, rd_str(r, &r->id, &r->idcap, NULL, NULL));
                continue;
            }
            if (!strcmp(k, "inputs")) {
                t = tp__jp_peek(&r->jp);
                if (t == TP__JP_ARRAY) RD(inputs, read_inputs(r, f));
                else if (t == TP__JP_ERROR || tp__jp_skip(&r->jp)) return -1;
                else f->inputs = F_BAD;
                continue;
            }
            if (!strcmp(k, "inplace")) {
                RD(inplace, rd_int(r, &f->inplacev));
                continue;
            }
            break;
        case 'k':
            if (!strcmp(k, "kind")) {
                RD(kind, rd_str(r, NULL, NULL, &s, NULL));
                if (f->kind == F_OK)
                    f->kindv = !strcmp(s, "input") ? TP_V_INPUT : !strcmp(s, "kernel") ? TP_V_KERNEL
                             : !strcmp(s, "transfer") ? TP_V_TRANSFER : -1;
                continue;
            }
            break;
        case 'd':
            if (!strcmp(k, "device")) {
                RD(device, rd_int(r, &f->devicev));
                continue;
            }
            if (!strcmp(k, "dtype")) {
                RD(dtype, rd_str(r, NULL, NULL, &s, NULL));
                if (f->dtype == F_OK) f->dtype_ok = tp_dtype_parse(s, &f->dtypev) == TP_OK;
                continue;
            }
            break;
        case 's':
            if (!strcmp(k, "shape")) {
                t = tp__jp_peek(&r->jp);
                if (t == TP__JP_ARRAY) RD(shape, read_shape(r, f));
                else if (t == TP__JP_ERROR || tp__jp_skip(&r->jp)) return -1;
                else f->shape = F_BAD;
                continue;
            }
            break;
        case 'b':
            if (!strcmp(k, "bytes")) {
                RD(bytes, rd_int(r, &f->bytesv));
                continue;
            }
            break;
        case 'o':
            if (!strcmp(k, "op")) {
                RD(op, rd_str(r, &r->op, &r->opcap, NULL, NULL));
                continue;
            }
            break;
        case 'f':
            if (!strcmp(k, "flops")) {
                RD(flops, rd_num(r, &f->flopsv));
                continue;
            }
            break;
        case 'h':
            if (!strcmp(k, "host")) {
                RD(host, rd_int(r, &f->hostv));
                continue;
            }
            break;
        case 'r':
            if (!strcmp(k, "resident")) {
                t = tp__jp_peek(&r->jp);
                if (t == TP__JP_OBJECT) RD(resident, read_resident(r, f));
                else if (t == TP__JP_ERROR || tp__jp_skip(&r->jp)) return -1;
                else f->resident = F_BAD;
                continue;
            }
            break;
        case 'a':
            if (!strcmp(k, "attrs")) {
                t = tp__jp_peek(&r->jp);
                if (t == TP__JP_ERROR) return -1;
                if (t != TP__JP_OBJECT) {
                    if (tp__jp_skip(&r->jp)) return -1;
                    f->attrs = F_BAD;
                    continue;
                }
                tp__jp_record_start(&r->jp);
                tp_status st = tp__jp_skip(&r->jp);
                const char *txt;
                if (tp__jp_record_stop(&r->jp, &txt, NULL) || st) return -1;
                f->attrs = F_OK;
                continue;
            }
            break;
        default: break;
        }
        if (tp__jp_skip(&r->jp)) return -1; /* unknown fields are ignored */
    }
    return x < 0 ? -1 : 0;
}

/* The checks of one vertex, in the order of the tree reader this replaced; adds it. Errors go
 * to r->verr (returned). */
static tp_status add_vertex_checked(rd *r, size_t i, const vrec *f)
{
    if (!f->id) return vbad(r, i, NULL, "missing field 'id'");
    if (f->id != F_OK || !*r->id) return vbad(r, i, NULL, "field 'id' must be a non-empty string");
    const char *id = r->id;
    if (!f->kind) return vbad(r, i, id, "missing field 'kind'");
    if (f->kind != F_OK) return vbad(r, i, id, "field 'kind' must be a string");
    if (f->kindv < 0) return vbad(r, i, id, "field 'kind' must be \"input\", \"kernel\" or \"transfer\"");
    tp_vkind kind = (tp_vkind)f->kindv;
    if (!f->device) return vbad(r, i, id, "missing field 'device'");
    if (f->device != F_OK) return vbad(r, i, id, "field 'device' must be an integer");
    r->dev_read = 1; /* for add_vertex: an error after here may turn out to be a device error */
    if (f->devicev < 0 || f->devicev >= r->g->ndevices)
        return tp__fail(&r->verr, TP_ERR_INVALID, "%s: vertices[%zu] (id '%s'): device %lld out of range (graph has %d devices)",
                        r->name, i, id, (long long)f->devicev, r->g->ndevices);
    tp_dtype dtype = TP_DT_NONE;
    if (f->dtype == F_BAD) return vbad(r, i, id, "field 'dtype' must be a string");
    if (f->dtype == F_OK) {
        if (!f->dtype_ok) return vbad(r, i, id, "field 'dtype' must be one of f32, f16, bf16, f64, i32, i64, u8");
        dtype = f->dtypev;
    }
    int ndim = -1;
    if (f->shape == F_BAD) return vbad(r, i, id, "field 'shape' must be an array of integers");
    if (f->shape == F_OK) {
        if (f->shape_n > TP_MAX_DIMS) return vbad(r, i, id, "field 'shape' has more than " TP__STR(TP_MAX_DIMS) " dimensions");
        if (f->shape_bad) return vbad(r, i, id, "field 'shape' must be an array of non-negative integers");
        if (!f->dtype) return vbad(r, i, id, "field 'shape' needs a 'dtype'");
        ndim = (int)f->shape_n;
    }
    uint64_t bytes = 0;
    if (f->bytes && (f->bytes != F_OK || f->bytesv < 0)) return vbad(r, i, id, "field 'bytes' must be a non-negative integer");
    if (f->bytes) bytes = (uint64_t)f->bytesv;
    if (f->op == F_BAD) return vbad(r, i, id, "field 'op' must be a string");
    if (f->flops && (f->flops != F_OK || f->flopsv < 0)) return vbad(r, i, id, "field 'flops' must be a non-negative number");
    if (f->resident) {
        if (f->resident != F_OK || f->res_off != F_OK || f->res_offv < 0)
            return vbad(r, i, id, "field 'resident' must be {\"offset\": N} with N a non-negative integer");
        if (f->res_hc == F_BAD) return vbad(r, i, id, "field 'resident': 'host_copy' must be true or false");
        if (f->res_load == F_BAD || f->res_pin == F_BAD)
            return vbad(r, i, id, "field 'resident': 'load' and 'pin' must be true or false");
    }
    if (f->inplace && (f->inplace != F_OK || f->inplacev < 0 || f->inplacev > INT32_MAX))
        return vbad(r, i, id, "field 'inplace' must be a non-negative integer (an argument index)");
    if (f->host && (f->host != F_OK || f->hostv < 0))
        return vbad(r, i, id, "field 'host' must be a non-negative integer (the input's offset in the reserved host bytes)");
    char *attrs = NULL;
    if (f->attrs == F_BAD) return vbad(r, i, id, "field 'attrs' must be an object");
    if (f->inputs == F_BAD) return vbad(r, i, id, "field 'inputs' must be an array of vertex ids");
    if (f->inputs && !f->in_allstr) return vbad(r, i, id, "field 'inputs' must be an array of vertex ids (strings)");
    size_t nin = r->in.cnt;
    if (kind == TP_V_INPUT && nin) return vbad(r, i, id, "an input vertex has no 'inputs'");
    if (kind == TP_V_TRANSFER && nin != 1) return vbad(r, i, id, "a transfer has exactly one input");
    if (nin > UINT32_MAX) return vbad(r, i, id, "field 'inputs' has more than 2^32-1 entries");
    if (f->attrs == F_OK) { /* compact, sorted keys: jansson on this one small object */
        json_error_t je;
        json_t *ja = json_loadb(r->jp.rec, r->jp.nrec, JSON_REJECT_DUPLICATES, &je);
        attrs = ja ? json_dumps(ja, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(ja);
        if (!attrs) return tp__fail(&r->verr, TP_ERR_NOMEM, "out of memory");
    }
    uint32_t *in = NULL;
    if (nin) {
        if (!TP__GROW(r->inbuf, r->incap, nin)) {
            free(attrs);
            return tp__fail(&r->verr, TP_ERR_NOMEM, "out of memory");
        }
        in = r->inbuf;
        for (size_t k = 0; k < nin; k++) {
            const char *nm = sl_get(&r->in, k);
            uint32_t idx;
            if (tp__strmap_get(&r->g->ids, nm, &idx)) {
                in[k] = idx;
                continue;
            }
            in[k] = UINT32_MAX;
            if (!TP__GROW(r->pend, r->cappend, r->npend + 1) || !sl_add(&r->pnames, nm, strlen(nm))) {
                free(attrs);
                return tp__fail(&r->verr, TP_ERR_NOMEM, "out of memory");
            }
            r->pend[r->npend++] = (pending){(uint32_t)i, (uint32_t)k, r->pnames.cnt - 1};
        }
    }
    uint32_t idx;
    tp_error sub;
    tp_status s = tp__graph_add(r->g, id, kind, (int)f->devicev, f->op ? r->op : NULL, (uint32_t)nin, in, dtype, ndim,
                                f->shapev, bytes, attrs, f->flops ? f->flopsv : 0, &idx, &sub);
    free(attrs);
    if (!s && f->resident) s = tp_graph_set_resident(r->g, idx, (uint64_t)f->res_offv, f->res_hc != F_OK || f->res_hcv, &sub);
    unsigned rflags = (f->res_load == F_OK && f->res_loadv ? TP_RESIDENT_LOAD : 0u) | (f->res_pin == F_OK && f->res_pinv ? TP_RESIDENT_PIN : 0u);
    if (!s && f->resident && rflags) s = tp_graph_set_resident_flags(r->g, idx, rflags, &sub);
    if (!s && f->inplace) s = tp_graph_set_inplace(r->g, idx, (int)f->inplacev, &sub);
    if (!s && f->host) s = tp_graph_set_host(r->g, idx, (uint64_t)f->hostv, &sub);
    if (s) return tp__fail(&r->verr, s == TP_ERR_NOMEM ? s : TP_ERR_INVALID, "%s: vertices[%zu]: %s", r->name, i, sub.msg);
    return TP_OK;
}

static tp_status add_vertex(rd *r, size_t i, const vrec *f)
{
    r->dev_read = 0;
    tp_status s = add_vertex_checked(r, i, f);
    if (s && r->deferred && r->dev_read) {
        r->vdev = 1;
        r->vdev_i = i;
        r->vdev_d = f->devicev;
        r->vdev_id = strdup(r->id);
    }
    return s;
}

/* the "vertices" array; -1: syntax error (err filled) */
static int read_vertices(rd *r)
{
    if (tp__jp_arr_begin(&r->jp)) return -1;
    int x;
    vrec f;
    for (size_t i = 0; (x = tp__jp_arr_next(&r->jp)) == 1; i++) {
        if (r->vs || !r->g) { /* after the first error only the syntax matters */
            if (tp__jp_skip(&r->jp)) return -1;
            continue;
        }
        tp__jpt t = tp__jp_peek(&r->jp);
        if (t == TP__JP_ERROR) return -1;
        if (t != TP__JP_OBJECT) {
            if (tp__jp_skip(&r->jp)) return -1;
            r->vs = vbad(r, i, NULL, "must be an object");
            continue;
        }
        if (read_fields(r, &f) < 0) return -1;
        r->vs = add_vertex(r, i, &f);
    }
    return x < 0 ? -1 : 0;
}

/* an array of strings (outputs, keep); F_BAD when not an array */
static int read_names(rd *r, strlist *l)
{
    tp__jpt t = tp__jp_peek(&r->jp);
    if (t == TP__JP_ERROR) return -1;
    if (t != TP__JP_ARRAY) return tp__jp_skip(&r->jp) ? -1 : F_BAD;
    if (tp__jp_arr_begin(&r->jp)) return -1;
    int x;
    while ((x = tp__jp_arr_next(&r->jp)) == 1) {
        const char *s;
        size_t len;
        int y = rd_str(r, NULL, NULL, &s, &len);
        if (y < 0) return -1;
        if (!sl_add(l, y == F_OK ? s : NULL, len)) {
            nomem(r);
            return -1;
        }
    }
    return x < 0 ? -1 : F_OK;
}

/* the graph can be made once format and devices are known good, or before either is seen */
static int start_graph(rd *r)
{
    if (r->format && !r->format_ok) return 1;
    if (r->devices && (r->devices != F_OK || r->nd < 1 || r->nd > TP_MAX_DEVICES)) return 1;
    r->deferred = !r->devices;
    r->g = tp_graph_new(r->devices ? (int)r->nd : TP_MAX_DEVICES);
    if (!r->g) {
        nomem(r);
        return 0;
    }
    return 1;
}

/* After the whole text was read (syntax good): the errors in a tree reader's order. */
static tp_status check_all(rd *r)
{
    tp_error *err = r->err;
    const char *nm = r->name;
    if (!r->format_ok) return tp__fail(err, TP_ERR_PARSE, "%s: field 'format' must be \"%s\"", nm, TG_FORMAT);
    if (r->devices != F_OK) return tp__fail(err, TP_ERR_PARSE, "%s: field 'devices' must be an integer", nm);
    if (r->nd < 1 || r->nd > TP_MAX_DEVICES)
        return tp__fail(err, TP_ERR_INVALID, "%s: 'devices' is %lld, must be 1..%d", nm, (long long)r->nd, TP_MAX_DEVICES);
    if (r->vertices != F_OK) return tp__fail(err, TP_ERR_PARSE, "%s: field 'vertices' must be an array", nm);
    tp_graph *g = r->g;
    if (r->deferred) { /* vertices were read before "devices": their range now, in file order */
        g->ndevices = (int)r->nd;
        for (size_t i = 0; i < g->n; i++)
            if (g->v[i].device >= g->ndevices)
                return tp__fail(err, TP_ERR_INVALID, "%s: vertices[%zu] (id '%s'): device %d out of range (graph has %d devices)",
                                nm, i, g->v[i].id, g->v[i].device, g->ndevices);
    }
    if (r->vs && r->vdev && (r->vdev_d < 0 || r->vdev_d >= g->ndevices))
        return tp__fail(err, TP_ERR_INVALID, "%s: vertices[%zu] (id '%s'): device %lld out of range (graph has %d devices)",
                        nm, r->vdev_i, r->vdev_id ? r->vdev_id : "?", (long long)r->vdev_d, g->ndevices);
    if (r->vs) {
        *err = r->verr;
        return r->vs;
    }
    for (size_t k = 0; k < r->npend; k++) {
        const pending *p = &r->pend[k];
        const char *in = sl_get(&r->pnames, p->name);
        uint32_t idx;
        if (!tp__strmap_get(&g->ids, in, &idx))
            return tp__fail(err, TP_ERR_INVALID, "%s: vertices[%u] (id '%s'): input '%s' is not a vertex id", nm, p->v,
                            g->v[p->v].id, in);
        ((uint32_t *)g->v[p->v].inputs)[p->k] = idx;
    }
    if (r->outputs == F_BAD) return tp__fail(err, TP_ERR_PARSE, "%s: field 'outputs' must be an array of vertex ids", nm);
    for (size_t k = 0; k < r->outl.cnt; k++) {
        const char *o = sl_get(&r->outl, k);
        uint32_t idx;
        tp_error sub;
        if (!o) return tp__fail(err, TP_ERR_PARSE, "%s: outputs[%zu] must be a vertex id (string)", nm, k);
        if (!tp__strmap_get(&g->ids, o, &idx)) return tp__fail(err, TP_ERR_INVALID, "%s: outputs[%zu]: '%s' is not a vertex id", nm, k, o);
        if (tp_graph_add_output(g, idx, &sub)) return tp__fail(err, TP_ERR_INVALID, "%s: outputs[%zu]: %s", nm, k, sub.msg);
    }
    if (r->keep == F_BAD) return tp__fail(err, TP_ERR_PARSE, "%s: field 'keep' must be an array of vertex ids", nm);
    for (size_t k = 0; k < r->keepl.cnt; k++) {
        const char *o = sl_get(&r->keepl, k);
        uint32_t idx;
        tp_error sub;
        if (!o) return tp__fail(err, TP_ERR_PARSE, "%s: keep[%zu] must be a vertex id (string)", nm, k);
        if (!tp__strmap_get(&g->ids, o, &idx)) return tp__fail(err, TP_ERR_INVALID, "%s: keep[%zu]: '%s' is not a vertex id", nm, k, o);
        tp_status t = tp_graph_set_keep(g, idx, &sub);
        if (t) return tp__fail(err, t == TP_ERR_NOMEM ? t : TP_ERR_INVALID, "%s: keep[%zu]: %s", nm, k, sub.msg);
    }
    if (r->hres && (r->hres != F_OK || r->hresv < 0))
        return tp__fail(err, TP_ERR_PARSE, "%s: field 'host_reserved' must be a non-negative integer", nm);
    if (r->hres) tp_graph_set_host_reserved(g, (uint64_t)r->hresv, NULL);
    tp_error sub;
    tp_status s = tp_graph_finalize(g, &sub);
    if (s) return tp__fail(err, s, "%s: %s", nm, sub.msg);
    return TP_OK;
}

/* reads the document from r->jp (opened) into r->g */
static tp_status read_doc(rd *r)
{
    tp__jp *jp = &r->jp;
    tp__jpt t = tp__jp_peek(jp);
    if (t == TP__JP_ERROR) return r->err->code;
    if (t != TP__JP_OBJECT) {
        if (t != TP__JP_ARRAY) return tp__jp_fail(jp, "'[' or '{' expected");
        if (tp__jp_skip(jp) || tp__jp_finish(jp)) return r->err->code;
        return tp__fail(r->err, TP_ERR_PARSE, "%s: top level must be an object", r->name);
    }
    if (tp__jp_obj_begin(jp)) return r->err->code;
    const char *k, *s;
    int x, y;
    while ((x = tp__jp_obj_key(jp, &k)) == 1) {
        if (!strcmp(k, "format")) {
            if ((y = rd_str(r, NULL, NULL, &s, NULL)) < 0) return r->err->code;
            r->format = (uint8_t)y;
            r->format_ok = y == F_OK && !strcmp(s, TG_FORMAT);
        } else if (!strcmp(k, "devices")) {
            if ((y = rd_int(r, &r->nd)) < 0) return r->err->code;
            r->devices = (uint8_t)y;
        } else if (!strcmp(k, "vertices")) {
            if ((t = tp__jp_peek(jp)) == TP__JP_ERROR) return r->err->code;
            if (t != TP__JP_ARRAY) {
                if (tp__jp_skip(jp)) return r->err->code;
                r->vertices = F_BAD;
                continue;
            }
            r->vertices = F_OK;
            if (!start_graph(r) || read_vertices(r) < 0) return r->err->code;
        } else if (!strcmp(k, "outputs")) {
            if ((y = read_names(r, &r->outl)) < 0) return r->err->code;
            r->outputs = (uint8_t)y;
        } else if (!strcmp(k, "keep")) {
            if ((y = read_names(r, &r->keepl)) < 0) return r->err->code;
            r->keep = (uint8_t)y;
        } else if (!strcmp(k, "host_reserved")) {
            if ((y = rd_int(r, &r->hresv)) < 0) return r->err->code;
            r->hres = (uint8_t)y;
        } else if (tp__jp_skip(jp)) {
            return r->err->code;
        }
    }
    if (x < 0 || tp__jp_finish(jp)) return r->err->code;
    return check_all(r);
}

static tp_status read_graph(rd *r, tp_graph **out)
{
    tp_status s = read_doc(r);
    tp__jp_close(&r->jp);
    free(r->id);
    free(r->op);
    free(r->pend);
    free(r->vdev_id);
    free(r->inbuf);
    sl_free(&r->in);
    sl_free(&r->pnames);
    sl_free(&r->outl);
    sl_free(&r->keepl);
    if (s) {
        tp_graph_free(r->g);
        return s;
    }
    *out = r->g;
    return TP_OK;
}

tp_status tp_graph_read_string(const char *text, const char *name, tp_graph **out, tp_error *err)
{
    rd r;
    memset(&r, 0, sizeof r);
    r.name = name ? name : "<taskgraph>";
    r.err = err;
    tp__jp_open_mem(&r.jp, text, strlen(text), r.name, err);
    return read_graph(&r, out);
}

tp_status tp_graph_read_file(const char *path, tp_graph **out, tp_error *err)
{
    rd r;
    memset(&r, 0, sizeof r);
    r.name = path;
    r.err = err;
    tp_status s = tp__jp_open_file(&r.jp, path, err);
    if (s) return s;
    return read_graph(&r, out);
}

tp_status tp_graph_write(const tp_graph *g, FILE *f, tp_error *err)
{
    fprintf(f, "{\"format\": \"%s\", \"devices\": %d,\n", TG_FORMAT, g->ndevices);
    if (g->host_reserved) fprintf(f, " \"host_reserved\": %llu,\n", (unsigned long long)g->host_reserved);
    fputs(" \"vertices\": [\n", f);
    static const char *kinds[] = {"input", "kernel", "transfer"};
    for (size_t i = 0; i < g->n; i++) {
        const tp_vertex *v = &g->v[i];
        fputs("  {\"id\": ", f);
        tp__json_str(f, v->id);
        fprintf(f, ", \"kind\": \"%s\", \"device\": %d", kinds[v->kind], v->device);
        if (v->kind == TP_V_KERNEL) {
            fputs(", \"op\": ", f);
            tp__json_str(f, v->op);
        }
        if (v->ninputs) {
            fputs(", \"inputs\": [", f);
            for (uint32_t k = 0; k < v->ninputs; k++) {
                if (k) fputs(", ", f);
                tp__json_str(f, g->v[v->inputs[k]].id);
            }
            putc(']', f);
        }
        if (v->kind != TP_V_TRANSFER) {
            if (v->dtype != TP_DT_NONE && v->ndim >= 0) {
                fprintf(f, ", \"dtype\": \"%s\", \"shape\": [", tp_dtype_name(v->dtype));
                for (int k = 0; k < v->ndim; k++) fprintf(f, "%s%lld", k ? ", " : "", (long long)v->shape[k]);
                putc(']', f);
            } else {
                fprintf(f, ", \"bytes\": %llu", (unsigned long long)v->bytes);
            }
        }
        if (v->attrs_json) fprintf(f, ", \"attrs\": %s", v->attrs_json);
        if (v->flops > 0) fprintf(f, ", \"flops\": %.17g", v->flops);
        const tp__sess *ss = i < g->cap_sess ? &g->sess[i] : NULL; /* sessions: only what was set */
        if (ss && ss->resident)
            fprintf(f, ", \"resident\": {\"offset\": %llu%s%s%s}", (unsigned long long)ss->res_off,
                    ss->no_host ? ", \"host_copy\": false" : "", ss->rflags & TP_RESIDENT_LOAD ? ", \"load\": true" : "",
                    ss->rflags & TP_RESIDENT_PIN ? ", \"pin\": true" : "");
        if (ss && ss->inplace1) fprintf(f, ", \"inplace\": %u", ss->inplace1 - 1);
        if (ss && ss->host_fixed) fprintf(f, ", \"host\": %llu", (unsigned long long)ss->host_off);
        fprintf(f, "}%s\n", i + 1 < g->n ? "," : "");
    }
    fputs(" ],\n \"outputs\": [", f);
    for (size_t k = 0; k < g->nout; k++) {
        if (k) fputs(", ", f);
        tp__json_str(f, g->v[g->outputs[k]].id);
    }
    putc(']', f);
    if (g->nkeep) {
        fputs(",\n \"keep\": [", f);
        for (size_t k = 0; k < g->nkeep; k++) {
            if (k) fputs(", ", f);
            tp__json_str(f, g->v[g->keeps[k]].id);
        }
        putc(']', f);
    }
    fputs("}\n", f);
    if (ferror(f)) return tp__fail_write(err);
    return TP_OK;
}
