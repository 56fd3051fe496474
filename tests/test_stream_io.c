/* test_stream_io.c - the pulled TaskGraph reader against the jansson tree reader it replaced
 * (kept here verbatim as the reference, ref_*): on random documents, many of them malformed,
 * both must agree exactly (status and message, or both a JSON syntax error), and an accepted
 * graph must write the same text. jansson also decides, independently, which texts are JSON. */
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "turnip/turnip.h"
#include "graph/graph_internal.h"
#include "harness.h"

#define TG_FORMAT "turnip.taskgraph/1"

typedef struct {
    const char *name; /* file name for messages */
    tp_error *err;
} ref_ctx;

static tp_status ref_bad(ref_ctx *c, size_t i, const char *id, const char *what)
{
    if (id)
        return tp__fail(c->err, TP_ERR_PARSE, "%s: vertices[%zu] (id '%s'): %s", c->name, i, id, what);
    return tp__fail(c->err, TP_ERR_PARSE, "%s: vertices[%zu]: %s", c->name, i, what);
}

static int ref_get_int(json_t *j, int64_t *out)
{
    if (!json_is_integer(j)) return 0;
    *out = (int64_t)json_integer_value(j);
    return 1;
}

static tp_status ref_read_vertex(ref_ctx *c, tp_graph *g, size_t i, json_t *jv, json_t **inputs_out)
{
    if (!json_is_object(jv)) return ref_bad(c, i, NULL, "must be an object");
    json_t *jid = json_object_get(jv, "id");
    if (!jid) return ref_bad(c, i, NULL, "missing field 'id'");
    if (!json_is_string(jid) || !*json_string_value(jid))
        return ref_bad(c, i, NULL, "field 'id' must be a non-empty string");
    const char *id = json_string_value(jid);
    json_t *jk = json_object_get(jv, "kind");
    if (!jk) return ref_bad(c, i, id, "missing field 'kind'");
    if (!json_is_string(jk)) return ref_bad(c, i, id, "field 'kind' must be a string");
    const char *ks = json_string_value(jk);
    tp_vkind kind;
    if (!strcmp(ks, "input")) kind = TP_V_INPUT;
    else if (!strcmp(ks, "kernel")) kind = TP_V_KERNEL;
    else if (!strcmp(ks, "transfer")) kind = TP_V_TRANSFER;
    else return ref_bad(c, i, id, "field 'kind' must be \"input\", \"kernel\" or \"transfer\"");
    json_t *jd = json_object_get(jv, "device");
    int64_t device;
    if (!jd) return ref_bad(c, i, id, "missing field 'device'");
    if (!ref_get_int(jd, &device)) return ref_bad(c, i, id, "field 'device' must be an integer");
    if (device < 0 || device >= g->ndevices) {
        char msg[128];
        snprintf(msg, sizeof msg, "device %lld out of range (graph has %d devices)",
                 (long long)device, g->ndevices);
        return tp__fail(c->err, TP_ERR_INVALID, "%s: vertices[%zu] (id '%s'): %s", c->name, i, id, msg);
    }
    tp_dtype dtype = TP_DT_NONE;
    json_t *jt = json_object_get(jv, "dtype");
    if (jt) {
        if (!json_is_string(jt)) return ref_bad(c, i, id, "field 'dtype' must be a string");
        if (tp_dtype_parse(json_string_value(jt), &dtype))
            return ref_bad(c, i, id, "field 'dtype' must be one of f32, f16, bf16, f64, i32, i64, u8");
    }
    int ndim = -1;
    int64_t shape[TP_MAX_DIMS] = {0};
    json_t *js = json_object_get(jv, "shape");
    if (js) {
        if (!json_is_array(js)) return ref_bad(c, i, id, "field 'shape' must be an array of integers");
        if (json_array_size(js) > TP_MAX_DIMS) return ref_bad(c, i, id, "field 'shape' has more than " TP__STR(TP_MAX_DIMS) " dimensions");
        ndim = (int)json_array_size(js);
        for (int k = 0; k < ndim; k++)
            if (!ref_get_int(json_array_get(js, (size_t)k), &shape[k]) || shape[k] < 0)
                return ref_bad(c, i, id, "field 'shape' must be an array of non-negative integers");
        if (!jt) return ref_bad(c, i, id, "field 'shape' needs a 'dtype'");
    }
    uint64_t bytes = 0;
    json_t *jb = json_object_get(jv, "bytes");
    if (jb) {
        int64_t b;
        if (!ref_get_int(jb, &b) || b < 0) return ref_bad(c, i, id, "field 'bytes' must be a non-negative integer");
        bytes = (uint64_t)b;
    }
    const char *op = NULL;
    json_t *jo = json_object_get(jv, "op");
    if (jo) {
        if (!json_is_string(jo)) return ref_bad(c, i, id, "field 'op' must be a string");
        op = json_string_value(jo);
    }
    double flops = 0;
    json_t *jf = json_object_get(jv, "flops");
    if (jf) {
        if (!json_is_number(jf) || json_number_value(jf) < 0)
            return ref_bad(c, i, id, "field 'flops' must be a non-negative number");
        flops = json_number_value(jf);
    }
    /* sessions (issue 11); which kinds may carry them is checked by tp_graph_finalize */
    int resident = 0, host_copy = 1;
    unsigned rflags = 0;
    int64_t res_off = 0, inplace = -1;
    json_t *jr = json_object_get(jv, "resident");
    if (jr) {
        json_t *jh = json_object_get(jr, "host_copy"), *jl = json_object_get(jr, "load"), *jpn = json_object_get(jr, "pin");
        if (!json_is_object(jr) || !ref_get_int(json_object_get(jr, "offset"), &res_off) || res_off < 0)
            return ref_bad(c, i, id, "field 'resident' must be {\"offset\": N} with N a non-negative integer");
        if (jh && !json_is_boolean(jh)) return ref_bad(c, i, id, "field 'resident': 'host_copy' must be true or false");
        if ((jl && !json_is_boolean(jl)) || (jpn && !json_is_boolean(jpn)))
            return ref_bad(c, i, id, "field 'resident': 'load' and 'pin' must be true or false");
        resident = 1;
        host_copy = !jh || json_is_true(jh);
        rflags = (json_is_true(jl) ? TP_RESIDENT_LOAD : 0u) | (json_is_true(jpn) ? TP_RESIDENT_PIN : 0u);
    }
    json_t *jp = json_object_get(jv, "inplace");
    if (jp && (!ref_get_int(jp, &inplace) || inplace < 0 || inplace > INT32_MAX))
        return ref_bad(c, i, id, "field 'inplace' must be a non-negative integer (an argument index)");
    int64_t host_off = -1;
    json_t *jho = json_object_get(jv, "host");
    if (jho && (!ref_get_int(jho, &host_off) || host_off < 0))
        return ref_bad(c, i, id, "field 'host' must be a non-negative integer (the input's offset in the reserved host bytes)");
    char *attrs = NULL;
    json_t *ja = json_object_get(jv, "attrs");
    if (ja) {
        if (!json_is_object(ja)) return ref_bad(c, i, id, "field 'attrs' must be an object");
        attrs = json_dumps(ja, JSON_COMPACT | JSON_SORT_KEYS);
        if (!attrs) return tp__fail(c->err, TP_ERR_NOMEM, "out of memory");
    }
    json_t *jin = json_object_get(jv, "inputs");
    size_t nin = 0;
    if (jin) {
        if (!json_is_array(jin)) {
            free(attrs);
            return ref_bad(c, i, id, "field 'inputs' must be an array of vertex ids");
        }
        nin = json_array_size(jin);
        for (size_t k = 0; k < nin; k++)
            if (!json_is_string(json_array_get(jin, k))) {
                free(attrs);
                return ref_bad(c, i, id, "field 'inputs' must be an array of vertex ids (strings)");
            }
    }
    if (kind == TP_V_INPUT && nin) {
        free(attrs);
        return ref_bad(c, i, id, "an input vertex has no 'inputs'");
    }
    if (kind == TP_V_TRANSFER && nin != 1) {
        free(attrs);
        return ref_bad(c, i, id, "a transfer has exactly one input");
    }
    uint32_t *in = NULL;
    if (nin) {
        in = malloc(nin * sizeof *in);
        if (!in) {
            free(attrs);
            return tp__fail(c->err, TP_ERR_NOMEM, "out of memory");
        }
    }
    uint32_t idx;
    tp_error sub;
    tp_status s = tp__graph_add(g, id, kind, (int)device, op, (uint32_t)nin, in, dtype, ndim,
                                shape, bytes, attrs, flops, &idx, &sub);
    free(in); /* the graph copies it now (the tree reader gave it away) */
    free(attrs);
    if (!s && resident) s = tp_graph_set_resident(g, idx, (uint64_t)res_off, host_copy, &sub);
    if (!s && rflags) s = tp_graph_set_resident_flags(g, idx, rflags, &sub);
    if (!s && inplace >= 0) s = tp_graph_set_inplace(g, idx, (int)inplace, &sub);
    if (!s && host_off >= 0) s = tp_graph_set_host(g, idx, (uint64_t)host_off, &sub);
    if (s) return tp__fail(c->err, s == TP_ERR_NOMEM ? s : TP_ERR_INVALID, "%s: vertices[%zu]: %s",
                           c->name, i, sub.msg);
    *inputs_out = jin;
    return TP_OK;
}

static tp_status ref_read_string(const char *text, const char *name, tp_graph **out, tp_error *err)
{
    ref_ctx c = {name ? name : "<taskgraph>", err};
    json_error_t je;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return tp__fail(err, TP_ERR_PARSE, "%s:%d:%d: not valid JSON: %s", c.name, je.line,
                        je.column, je.text);
    tp_status s = TP_OK;
    tp_graph *g = NULL;
    json_t **ins = NULL;
    if (!json_is_object(root)) {
        s = tp__fail(err, TP_ERR_PARSE, "%s: top level must be an object", c.name);
        goto done;
    }
    json_t *jfmt = json_object_get(root, "format");
    if (!jfmt || !json_is_string(jfmt) || strcmp(json_string_value(jfmt), TG_FORMAT) != 0) {
        s = tp__fail(err, TP_ERR_PARSE, "%s: field 'format' must be \"%s\"", c.name, TG_FORMAT);
        goto done;
    }
    json_t *jdev = json_object_get(root, "devices");
    int64_t nd;
    if (!jdev || !ref_get_int(jdev, &nd)) {
        s = tp__fail(err, TP_ERR_PARSE, "%s: field 'devices' must be an integer", c.name);
        goto done;
    }
    if (nd < 1 || nd > TP_MAX_DEVICES) {
        s = tp__fail(err, TP_ERR_INVALID, "%s: 'devices' is %lld, must be 1..%d", c.name, (long long)nd,
                     TP_MAX_DEVICES);
        goto done;
    }
    json_t *jvs = json_object_get(root, "vertices");
    if (!jvs || !json_is_array(jvs)) {
        s = tp__fail(err, TP_ERR_PARSE, "%s: field 'vertices' must be an array", c.name);
        goto done;
    }
    g = tp_graph_new((int)nd);
    size_t n = json_array_size(jvs);
    ins = calloc(n + 1, sizeof *ins);
    if (!g || !ins) {
        s = tp__fail(err, TP_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n && !s; i++) s = ref_read_vertex(&c, g, i, json_array_get(jvs, i), &ins[i]);
    for (size_t i = 0; i < n && !s; i++) {
        tp_vertex *v = &g->v[i];
        for (uint32_t k = 0; k < v->ninputs; k++) {
            const char *nm = json_string_value(json_array_get(ins[i], k));
            uint32_t idx;
            if (!tp__strmap_get(&g->ids, nm, &idx)) {
                s = tp__fail(err, TP_ERR_INVALID, "%s: vertices[%zu] (id '%s'): input '%s' is not a vertex id",
                             c.name, i, v->id, nm);
                break;
            }
            ((uint32_t *)v->inputs)[k] = idx;
        }
    }
    json_t *jout = json_object_get(root, "outputs");
    if (!s && jout) {
        if (!json_is_array(jout)) {
            s = tp__fail(err, TP_ERR_PARSE, "%s: field 'outputs' must be an array of vertex ids", c.name);
            goto done;
        }
        for (size_t k = 0; k < json_array_size(jout) && !s; k++) {
            json_t *jo = json_array_get(jout, k);
            uint32_t idx;
            if (!json_is_string(jo)) {
                s = tp__fail(err, TP_ERR_PARSE, "%s: outputs[%zu] must be a vertex id (string)", c.name, k);
            } else if (!tp__strmap_get(&g->ids, json_string_value(jo), &idx)) {
                s = tp__fail(err, TP_ERR_INVALID, "%s: outputs[%zu]: '%s' is not a vertex id", c.name, k,
                             json_string_value(jo));
            } else {
                tp_error sub;
                if (tp_graph_add_output(g, idx, &sub))
                    s = tp__fail(err, TP_ERR_INVALID, "%s: outputs[%zu]: %s", c.name, k, sub.msg);
            }
        }
    }
    json_t *jkeep = json_object_get(root, "keep");
    if (!s && jkeep) {
        if (!json_is_array(jkeep)) {
            s = tp__fail(err, TP_ERR_PARSE, "%s: field 'keep' must be an array of vertex ids", c.name);
            goto done;
        }
        for (size_t k = 0; k < json_array_size(jkeep) && !s; k++) {
            json_t *jk = json_array_get(jkeep, k);
            uint32_t idx;
            if (!json_is_string(jk)) {
                s = tp__fail(err, TP_ERR_PARSE, "%s: keep[%zu] must be a vertex id (string)", c.name, k);
            } else if (!tp__strmap_get(&g->ids, json_string_value(jk), &idx)) {
                s = tp__fail(err, TP_ERR_INVALID, "%s: keep[%zu]: '%s' is not a vertex id", c.name, k,
                             json_string_value(jk));
            } else {
                tp_error sub;
                tp_status t = tp_graph_set_keep(g, idx, &sub);
                if (t) s = tp__fail(err, t == TP_ERR_NOMEM ? t : TP_ERR_INVALID, "%s: keep[%zu]: %s", c.name, k, sub.msg);
            }
        }
    }
    json_t *jhr = json_object_get(root, "host_reserved");
    int64_t hr = 0;
    if (!s && jhr && (!ref_get_int(jhr, &hr) || hr < 0))
        s = tp__fail(err, TP_ERR_PARSE, "%s: field 'host_reserved' must be a non-negative integer", c.name);
    if (!s && jhr) tp_graph_set_host_reserved(g, (uint64_t)hr, NULL);
    if (!s) {
        tp_error sub;
        s = tp_graph_finalize(g, &sub);
        if (s) tp__fail(err, s, "%s: %s", c.name, sub.msg);
    }
done:
    free(ins);
    json_decref(root);
    if (s) {
        tp_graph_free(g);
        return s;
    }
    *out = g;
    return TP_OK;
}

/* ---- random documents ---- */

typedef struct {
    char *s;
    size_t n, cap;
} sbuf;

static void put(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[512];
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (b->n + (size_t)k + 1 > b->cap) {
        b->cap = (b->n + (size_t)k + 1) * 2;
        b->s = realloc(b->s, b->cap);
    }
    memcpy(b->s + b->n, tmp, (size_t)k + 1);
    b->n += (size_t)k;
}

static uint64_t rng_state;
static unsigned rnd(unsigned n)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)((rng_state >> 33) % n);
}
#define PICK(arr) (arr)[rnd(sizeof(arr) / sizeof *(arr))]

static const char *ids[] = {"\"a\"", "\"b\"", "\"c\"", "\"d\"", "\"e\"", "\"\"", "5", "\"\\u00e9\""};
static const char *kinds[] = {"\"input\"", "\"kernel\"", "\"transfer\"", "\"kernel\"", "\"blob\"", "1"};
static const char *devs[] = {"0", "1", "0", "1", "2", "-1", "\"0\"", "1.0", "9223372036854775807"};
static const char *dtypes[] = {"\"f32\"", "\"f16\"", "\"x\"", "3"};
static const char *shapes[] = {"[2, 3]", "[]", "[4]", "[-1]", "[1,2,3,4,5,6,7,8,9]", "[\"a\"]", "5", "[2.5]",
                               "[4294967296,4294967296,16]", "[2,3]"};
static const char *bytess[] = {"4", "24", "0", "-4", "\"4\"", "1.5", "8", "24"};
static const char *ops[] = {"\"add\"", "\"matmul\"", "3", "\"relu\""};
static const char *flopss[] = {"10", "1e12", "-1", "\"x\"", "0", "2.5e-3"};
static const char *residents[] = {"{\"offset\":0}", "{\"offset\":256,\"host_copy\":false}", "{\"offset\":0,\"load\":true,\"pin\":true}",
                                  "{\"offset\":-1}", "{\"host_copy\":1}", "{\"offset\":0,\"pin\":\"y\"}", "[]", "3",
                                  "{\"offset\":0,\"host_copy\":true,\"x\":[1]}"};
static const char *inplaces[] = {"0", "1", "-1", "\"0\"", "2147483648", "0"};
static const char *attrss[] = {"{\"b\":1,\"a\":[1,2.5,\"x\"]}", "{}", "[]", "{\"z\":{\"y\":null}}", "\"s\"",
                               "{\"k\": 1e400}", "{ \"t\" : true , \"f\":false}"};
static const char *inputss[] = {"[\"a\"]", "[\"a\",\"b\"]", "[\"zz\"]", "[]", "[1]", "\"a\"", "[\"c\",\"c\"]", "[\"e\"]", "[\"b\"]"};
static const char *fmts[] = {"\"turnip.taskgraph/1\"", "\"turnip.taskgraph/1\"", "\"turnip.taskgraph/1\"", "\"other\"", "1"};
static const char *ndevs[] = {"2", "2", "2", "0", "65", "\"2\"", "1.0", "1"};
static const char *outs[] = {"[\"a\"]", "[\"q\"]", "[\"a\",\"a\"]", "\"a\"", "[1]", "[\"c\",\"b\"]", "[]"};
static const char *keeps[] = {"[\"a\"]", "[\"x\"]", "3", "[\"a\",\"a\"]", "[2]", "[\"b\"]"};
static const char *hosts[] = {"0", "256", "-1", "\"0\"", "1024", "128", "768"};
static const char *hreserveds[] = {"1024", "0", "-5", "\"x\"", "512", "2048"};
static const char *unknowns[] = {"{\"deep\":[1,2,{\"x\":true}]}", "null", "[[[]]]", "\"\\ud83d\\ude00\""};

static void gen_vertex(sbuf *b, int k)
{
    static const char *keys[] = {"id", "kind", "device", "dtype", "shape", "bytes", "op", "flops", "resident",
                                 "inplace", "attrs", "inputs", "host", "extra"};
    int order[14];
    for (int i = 0; i < 14; i++) order[i] = i;
    if (rnd(4) == 0)
        for (int i = 13; i > 0; i--) {
            int j = (int)rnd((unsigned)i + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    put(b, "{");
    int first = 1;
    for (int ii = 0; ii < 14; ii++) {
        int i = order[ii];
        unsigned p = rnd(100);
        int want = i < 3 ? p < 97 : i == 5 ? p < 90 : i == 11 ? (k > 0 && p < 95) : p < 8;
        if (!want) continue;
        int good = rnd(100) < 92; /* most fields well-formed, so that later checks are reached */
        char inb[16];
        snprintf(inb, sizeof inb, "[\"%c\"]", 'a' + (k ? (int)rnd((unsigned)k) : 0));
        const char *v;
        switch (i) {
        case 0: v = good ? NULL : PICK(ids); break;
        case 1: v = k == 0 ? "\"input\"" : good ? "\"kernel\"" : PICK(kinds); break;
        case 2: v = good ? "0" : PICK(devs); break;
        case 3: v = PICK(dtypes); break;
        case 4: v = PICK(shapes); break;
        case 5: v = good ? "4" : PICK(bytess); break;
        case 6: v = PICK(ops); break;
        case 7: v = PICK(flopss); break;
        case 8: v = PICK(residents); break;
        case 9: v = PICK(inplaces); break;
        case 10: v = PICK(attrss); break;
        case 11: v = good ? inb : PICK(inputss); break;
        case 12: v = PICK(hosts); break;
        default: v = PICK(unknowns); break;
        }
        if (!first) put(b, rnd(2) ? "," : ", ");
        first = 0;
        if (i == 0 && !v) put(b, "\"id\": \"%c\"", 'a' + k);
        else put(b, "\"%s\": %s", keys[i], v);
        if (rnd(60) == 0) put(b, ", \"%s\": %s", keys[i], v ? v : "\"z\""); /* a duplicate key */
    }
    put(b, "}");
}

static void gen_doc(sbuf *b)
{
    b->n = 0;
    put(b, "");
    int nv = (int)rnd(6);
    int order[7] = {0, 1, 2, 3, 4, 5, 6};
    if (rnd(5) == 0)
        for (int i = 6; i > 0; i--) {
            int j = (int)rnd((unsigned)i + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    put(b, rnd(30) ? "{" : "[");
    int first = 1;
    for (int ii = 0; ii < 7; ii++) {
        int i = order[ii];
        unsigned p = rnd(100);
        if (i < 3 ? p >= 98 : p >= 50) continue;
        int good = rnd(100) < 90;
        if (!first) put(b, ",\n ");
        first = 0;
        switch (i) {
        case 0: put(b, "\"format\": %s", good ? fmts[0] : PICK(fmts)); break;
        case 1: put(b, "\"devices\": %s", good ? ndevs[0] : PICK(ndevs)); break;
        case 2:
            put(b, "\"vertices\": [");
            for (int k = 0; k < nv; k++) {
                if (k) put(b, ",\n  ");
                if (rnd(40) == 0) put(b, "7");
                else gen_vertex(b, k);
            }
            put(b, "]");
            break;
        case 3: put(b, "\"outputs\": %s", good ? "[\"b\"]" : PICK(outs)); break;
        case 4: put(b, "\"keep\": %s", PICK(keeps)); break;
        case 6: put(b, "\"host_reserved\": %s", PICK(hreserveds)); break;
        default: put(b, "\"meta\": %s", PICK(unknowns)); break;
        }
    }
    put(b, rnd(30) ? "}" : "]");
    if (rnd(40) == 0) put(b, " x");
    /* byte damage in some */
    unsigned d = rnd(16);
    if (d == 0 && b->n) b->n = rnd((unsigned)b->n), b->s[b->n] = 0;
    else if (d == 1 && b->n) {
        static const char chars[] = " {}[],:\"\\0-ex\x80\xff\t\n.+";
        b->s[rnd((unsigned)b->n)] = chars[rnd(sizeof chars - 1)];
    }
}

static int is_syntax(const tp_error *e)
{
    return strstr(e->msg, "not valid JSON") != NULL;
}

/* reads text with both readers; returns 1 when accepted */
static int compare_one(const char *text, const char *name, const char *path)
{
    tp_graph *g1 = NULL, *g2 = NULL;
    tp_error e1, e2;
    memset(&e1, 0, sizeof e1);
    memset(&e2, 0, sizeof e2);
    tp_status s1 = ref_read_string(text, name, &g1, &e1);
    tp_status s2 = path ? tp_graph_read_file(path, &g2, &e2) : tp_graph_read_string(text, name, &g2, &e2);
    json_error_t je;
    json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    int json_ok = j != NULL;
    json_decref(j);
    CHECKF(json_ok == !is_syntax(&e2) || s2 == TP_OK, "jansson says %s, the pull reader '%s' on:\n%s",
           json_ok ? "JSON" : je.text, e2.msg, text);
    if (s1 == TP_ERR_PARSE && is_syntax(&e1)) {
        CHECKF(s2 == TP_ERR_PARSE && is_syntax(&e2), "reference: '%s', pull reader: '%s' on:\n%s", e1.msg,
               s2 ? e2.msg : "accepted", text);
    } else {
        CHECKF(s1 == s2 && (s1 == TP_OK || !strcmp(e1.msg, e2.msg)), "reference %s '%s', pull reader %s '%s' on:\n%s",
               tp_status_name(s1), s1 ? e1.msg : "", tp_status_name(s2), s2 ? e2.msg : "", text);
    }
    if (s1 == TP_OK && s2 == TP_OK) {
        char *b1 = NULL, *b2 = NULL;
        size_t n1 = 0, n2 = 0;
        FILE *f1 = open_memstream(&b1, &n1), *f2 = open_memstream(&b2, &n2);
        tp_graph_write(g1, f1, &e1);
        tp_graph_write(g2, f2, &e2);
        fclose(f1);
        fclose(f2);
        CHECKF(n1 == n2 && !memcmp(b1, b2, n1), "graphs differ:\n%s\n%s", b1, b2);
        free(b1);
        free(b2);
    }
    tp_graph_free(g1);
    tp_graph_free(g2);
    return s2 == TP_OK;
}

TEST(stream_taskgraph_matches_tree_reader)
{
    sbuf b = {0};
    char dir[] = "/tmp/tp-stream-XXXXXX";
    ASSERT_EQ(mkdtemp(dir) != NULL, 1);
    char path[64];
    snprintf(path, sizeof path, "%s/g.json", dir);
    int accepted = 0, syntax = 0;
    rng_state = 42;
    for (int it = 0; it < 20000; it++) {
        gen_doc(&b);
        const char *name = "g.json";
        const char *file = NULL;
        if (it % 16 == 0) { /* through a file, where the reader's name is the path */
            FILE *f = fopen(path, "w");
            ASSERT_EQ(f != NULL, 1);
            fwrite(b.s, 1, b.n, f);
            fclose(f);
            name = file = path;
        }
        accepted += compare_one(b.s, name, file);
        json_error_t je;
        json_t *j = json_loads(b.s, JSON_REJECT_DUPLICATES, &je);
        syntax += !j;
        json_decref(j);
    }
    /* the generator must reach both sides */
    CHECKF(accepted > 1000 && syntax > 1000 && syntax < 10000, "accepted %d, syntax errors %d", accepted, syntax);
    remove(path);
    rmdir(dir);
    free(b.s);
}

TEST(stream_taskgraph_edge_cases)
{
    static const char *docs[] = {
        "", " ", "{", "[]", "3", "\"x\"", "{}", "{} {}", "{\"a\":1,\"a\":2}",
        "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": []}",
        "{\"vertices\": [{\"id\":\"a\",\"kind\":\"input\",\"device\":3,\"bytes\":4}], \"devices\": 2, \"format\": \"turnip.taskgraph/1\"}",
        "{\"vertices\": [{\"id\":\"a\",\"kind\":\"input\",\"device\":1,\"bytes\":4},{\"id\":\"b\"}], \"devices\": 1, \"format\": \"turnip.taskgraph/1\"}",
        "{\"vertices\": [{\"id\":\"a\",\"kind\":\"input\",\"device\":0,\"bytes\":4}], \"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"outputs\": [\"a\"]}",
        "{\"outputs\": [\"a\"], \"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": [{\"id\":\"a\",\"kind\":\"input\",\"device\":0,\"bytes\":4}]}",
        "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": [{\"id\":\"\\u0000\",\"kind\":\"input\",\"device\":0,\"bytes\":4}]}",
        "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": [{\"id\":\"\\ud800\",\"kind\":\"input\",\"device\":0,\"bytes\":4}]}",
        "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": [{\"id\":\"\xc3\x28\",\"kind\":\"input\",\"device\":0,\"bytes\":4}]}",
        "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": [{\"id\":\"\xed\xa0\x80\",\"kind\":\"input\",\"device\":0,\"bytes\":4}]}",
        "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": [{\"id\":\"\xf0\x9f\x98\x80\",\"kind\":\"input\",\"device\":0,\"bytes\":4}]}",
        "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": [{\"id\":\"a\",\"kind\":\"input\",\"device\":0,\"bytes\":9223372036854775808}]}",
        "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": [{\"id\":\"a\",\"kind\":\"input\",\"device\":-9223372036854775808,\"bytes\":4}]}",
        "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": [{\"id\":\"a\",\"kind\":\"input\",\"device\":0,\"bytes\":01}]}",
        "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": [{\"id\":\"a\",\"kind\":\"input\",\"device\":0,\"bytes\":4,}]}",
        "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": [{\"id\":\"a\",\"kind\":\"input\",\"device\":0,\"bytes\":4}],}",
        "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": [{\"id\":\"a\",\"kind\":\"input\",\"device\":0,\"bytes\":4,\"flops\":1e999}]}",
        "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": [{\"id\":\"a\\/b\\\"\\n\",\"kind\":\"input\",\"device\":0,\"bytes\":-0}]}",
        "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": [{\"id\":\"a\",\"kind\":\"input\",\"device\":0,\"bytes\":4}], \"x\": [1, 2e, 3]}",
        "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": [{\"id\":\"a\",\"kind\":\"input\",\"device\":0,\"bytes\":4}], \"x\": tru}",
        "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": [{\"id\":\"a\",\"kind\":\"input\",\"device\":0,\"bytes\":4}], \"x\": \"\t\"}",
        "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": [{\"id\":\"a\",\"kind\":\"input\",\"device\":0,\"bytes\":4}], \"x\": \"\\q\"}",
        "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": [{\"id\":\"a\",\"kind\":\"input\",\"device\":0,\"bytes\":4}], \"x\": {\"k1\":1,\"k2\":1,\"k3\":1,\"k4\":1,\"k5\":1,\"k6\":1,\"k7\":1,\"k8\":1,\"k9\":1,\"k10\":1,\"k11\":1,\"k12\":1,\"k13\":1,\"k14\":1,\"k15\":1,\"k16\":1,\"k17\":1,\"k3\":1}}",
        "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": [{\"id\":\"a\",\"kind\":\"kernel\",\"device\":0,\"bytes\":4,\"inputs\":[\"a\"]}]}",
    };
    for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) compare_one(docs[i], "g.json", NULL);
    /* nesting: jansson's depth limit */
    sbuf b = {0};
    for (int depth = 2040; depth <= 2056; depth += 8) {
        b.n = 0;
        put(&b, "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": [], \"x\": ");
        for (int k = 0; k < depth; k++) put(&b, "[");
        for (int k = 0; k < depth; k++) put(&b, "]");
        put(&b, "}");
        compare_one(b.s, "g.json", NULL);
    }
    free(b.s);
}
