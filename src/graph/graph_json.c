/* graph_json.c - "turnip.taskgraph/1" JSON in (jansson) and out (streamed).
 *
 * Reading is two passes: every vertex is added with its input names kept aside, then the
 * names are resolved to indices, so a file may name a producer that appears later. Every
 * error names the file, the place (vertices[i] and the id) and the problem. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include "graph/graph_internal.h"

#define TG_FORMAT "turnip.taskgraph/1"

typedef struct {
    const char *name; /* file name for messages */
    tp_error *err;
} rctx;

static tp_status bad(rctx *c, size_t i, const char *id, const char *what)
{
    if (id)
        return tp__fail(c->err, TP_ERR_PARSE, "%s: vertices[%zu] (id '%s'): %s", c->name, i, id, what);
    return tp__fail(c->err, TP_ERR_PARSE, "%s: vertices[%zu]: %s", c->name, i, what);
}

static int get_int(json_t *j, int64_t *out)
{
    if (!json_is_integer(j)) return 0;
    *out = (int64_t)json_integer_value(j);
    return 1;
}

static tp_status read_vertex(rctx *c, tp_graph *g, size_t i, json_t *jv, json_t **inputs_out)
{
    if (!json_is_object(jv)) return bad(c, i, NULL, "must be an object");
    json_t *jid = json_object_get(jv, "id");
    if (!jid) return bad(c, i, NULL, "missing field 'id'");
    if (!json_is_string(jid) || !*json_string_value(jid))
        return bad(c, i, NULL, "field 'id' must be a non-empty string");
    const char *id = json_string_value(jid);
    json_t *jk = json_object_get(jv, "kind");
    if (!jk) return bad(c, i, id, "missing field 'kind'");
    if (!json_is_string(jk)) return bad(c, i, id, "field 'kind' must be a string");
    const char *ks = json_string_value(jk);
    tp_vkind kind;
    if (!strcmp(ks, "input")) kind = TP_V_INPUT;
    else if (!strcmp(ks, "kernel")) kind = TP_V_KERNEL;
    else if (!strcmp(ks, "transfer")) kind = TP_V_TRANSFER;
    else return bad(c, i, id, "field 'kind' must be \"input\", \"kernel\" or \"transfer\"");
    json_t *jd = json_object_get(jv, "device");
    int64_t device;
    if (!jd) return bad(c, i, id, "missing field 'device'");
    if (!get_int(jd, &device)) return bad(c, i, id, "field 'device' must be an integer");
    if (device < 0 || device >= g->ndevices) {
        char msg[128];
        snprintf(msg, sizeof msg, "device %lld out of range (graph has %d devices)",
                 (long long)device, g->ndevices);
        return tp__fail(c->err, TP_ERR_INVALID, "%s: vertices[%zu] (id '%s'): %s", c->name, i, id, msg);
    }
    tp_dtype dtype = TP_DT_NONE;
    json_t *jt = json_object_get(jv, "dtype");
    if (jt) {
        if (!json_is_string(jt)) return bad(c, i, id, "field 'dtype' must be a string");
        if (tp_dtype_parse(json_string_value(jt), &dtype))
            return bad(c, i, id, "field 'dtype' must be one of f32, f16, bf16, f64, i32, i64, u8");
    }
    int ndim = -1;
    int64_t shape[TP_MAX_DIMS] = {0};
    json_t *js = json_object_get(jv, "shape");
    if (js) {
        if (!json_is_array(js)) return bad(c, i, id, "field 'shape' must be an array of integers");
        if (json_array_size(js) > TP_MAX_DIMS) return bad(c, i, id, "field 'shape' has more than " TP__STR(TP_MAX_DIMS) " dimensions");
        ndim = (int)json_array_size(js);
        for (int k = 0; k < ndim; k++)
            if (!get_int(json_array_get(js, (size_t)k), &shape[k]) || shape[k] < 0)
                return bad(c, i, id, "field 'shape' must be an array of non-negative integers");
        if (!jt) return bad(c, i, id, "field 'shape' needs a 'dtype'");
    }
    uint64_t bytes = 0;
    json_t *jb = json_object_get(jv, "bytes");
    if (jb) {
        int64_t b;
        if (!get_int(jb, &b) || b < 0) return bad(c, i, id, "field 'bytes' must be a non-negative integer");
        bytes = (uint64_t)b;
    }
    const char *op = NULL;
    json_t *jo = json_object_get(jv, "op");
    if (jo) {
        if (!json_is_string(jo)) return bad(c, i, id, "field 'op' must be a string");
        op = json_string_value(jo);
    }
    double flops = 0;
    json_t *jf = json_object_get(jv, "flops");
    if (jf) {
        if (!json_is_number(jf) || json_number_value(jf) < 0)
            return bad(c, i, id, "field 'flops' must be a non-negative number");
        flops = json_number_value(jf);
    }
    /* sessions (issue 11); which kinds may carry them is checked by tp_graph_finalize */
    int resident = 0, host_copy = 1;
    unsigned rflags = 0;
    int64_t res_off = 0, inplace = -1;
    json_t *jr = json_object_get(jv, "resident");
    if (jr) {
        json_t *jh = json_object_get(jr, "host_copy"), *jl = json_object_get(jr, "load"), *jpn = json_object_get(jr, "pin");
        if (!json_is_object(jr) || !get_int(json_object_get(jr, "offset"), &res_off) || res_off < 0)
            return bad(c, i, id, "field 'resident' must be {\"offset\": N} with N a non-negative integer");
        if (jh && !json_is_boolean(jh)) return bad(c, i, id, "field 'resident': 'host_copy' must be true or false");
        if ((jl && !json_is_boolean(jl)) || (jpn && !json_is_boolean(jpn)))
            return bad(c, i, id, "field 'resident': 'load' and 'pin' must be true or false");
        resident = 1;
        host_copy = !jh || json_is_true(jh);
        rflags = (json_is_true(jl) ? TP_RESIDENT_LOAD : 0u) | (json_is_true(jpn) ? TP_RESIDENT_PIN : 0u);
    }
    json_t *jp = json_object_get(jv, "inplace");
    if (jp && (!get_int(jp, &inplace) || inplace < 0 || inplace > INT32_MAX))
        return bad(c, i, id, "field 'inplace' must be a non-negative integer (an argument index)");
    char *attrs = NULL;
    json_t *ja = json_object_get(jv, "attrs");
    if (ja) {
        if (!json_is_object(ja)) return bad(c, i, id, "field 'attrs' must be an object");
        attrs = json_dumps(ja, JSON_COMPACT | JSON_SORT_KEYS);
        if (!attrs) return tp__fail(c->err, TP_ERR_NOMEM, "out of memory");
    }
    json_t *jin = json_object_get(jv, "inputs");
    size_t nin = 0;
    if (jin) {
        if (!json_is_array(jin)) {
            free(attrs);
            return bad(c, i, id, "field 'inputs' must be an array of vertex ids");
        }
        nin = json_array_size(jin);
        for (size_t k = 0; k < nin; k++)
            if (!json_is_string(json_array_get(jin, k))) {
                free(attrs);
                return bad(c, i, id, "field 'inputs' must be an array of vertex ids (strings)");
            }
    }
    if (kind == TP_V_INPUT && nin) {
        free(attrs);
        return bad(c, i, id, "an input vertex has no 'inputs'");
    }
    if (kind == TP_V_TRANSFER && nin != 1) {
        free(attrs);
        return bad(c, i, id, "a transfer has exactly one input");
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
    free(attrs);
    if (!s && resident) s = tp_graph_set_resident(g, idx, (uint64_t)res_off, host_copy, &sub);
    if (!s && rflags) s = tp_graph_set_resident_flags(g, idx, rflags, &sub);
    if (!s && inplace >= 0) s = tp_graph_set_inplace(g, idx, (int)inplace, &sub);
    if (s) return tp__fail(c->err, s == TP_ERR_NOMEM ? s : TP_ERR_INVALID, "%s: vertices[%zu]: %s",
                           c->name, i, sub.msg);
    *inputs_out = jin;
    return TP_OK;
}

tp_status tp_graph_read_string(const char *text, const char *name, tp_graph **out, tp_error *err)
{
    rctx c = {name ? name : "<taskgraph>", err};
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
    if (!jdev || !get_int(jdev, &nd)) {
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
    for (size_t i = 0; i < n && !s; i++) s = read_vertex(&c, g, i, json_array_get(jvs, i), &ins[i]);
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

tp_status tp_graph_read_file(const char *path, tp_graph **out, tp_error *err)
{
    char *text;
    size_t len;
    tp_status s = tp__read_file(path, &text, &len, err);
    if (s) return s;
    if (strlen(text) != len) {
        free(text);
        return tp__fail(err, TP_ERR_PARSE, "%s: contains a NUL byte; not a JSON text file", path);
    }
    s = tp_graph_read_string(text, path, out, err);
    free(text);
    return s;
}

tp_status tp_graph_write(const tp_graph *g, FILE *f, tp_error *err)
{
    fprintf(f, "{\"format\": \"%s\", \"devices\": %d,\n \"vertices\": [\n", TG_FORMAT, g->ndevices);
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
    if (ferror(f)) return tp__fail(err, TP_ERR_IO, "write error");
    return TP_OK;
}
