/* dot.c - Graphviz drawing of a MemGraph, in the style of the paper's Figures 5 and 7:
 * data dependencies solid black, memory dependencies dashed red, offload and reload
 * vertices as filled boxes, sum-into accumulates (yellow ellipses) and joins (yellow diamonds)
 * labelled with their group, one cluster per device.
 *
 * The MemGraph is read as a stream (io/jsonpull.h), each vertex a small tree of its own, and
 * only what the drawing needs is kept: a label, a style and the edges, so a hostile file costs
 * memory and time in proportion to its size (vertices are put into their clusters by a
 * counting sort; a dependency is told from a data read by a search of the sorted reads). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include "turnip/plan.h"
#include "plan/plan_internal.h"
#include "io/jsonpull.h"
#include "io/util.h"

enum { S_KERNEL, S_INPUT, S_TRANSFER, S_OFFLOAD, S_RELOAD, S_RESIDENT, S_ACCUMULATE, S_JOIN, NSTYLES };
static const char *const kinds[NSTYLES] = {"kernel", "input", "transfer", "offload", "reload", "resident", "accumulate", "join"};
static const char *const styles[NSTYLES] = {
    "shape=ellipse",
    "shape=box, style=filled, fillcolor=\"#eeeeee\"",
    "shape=hexagon",
    "shape=box, style=\"filled,bold\", fillcolor=\"#ffd6d6\"",
    "shape=box, style=\"filled,bold\", fillcolor=\"#d6f5d6\"",
    "shape=box, style=filled, fillcolor=\"#d6e4ff\"",
    "shape=ellipse, style=filled, fillcolor=\"#fff2cc\"",
    "shape=diamond, style=filled, fillcolor=\"#fff2cc\"",
};

enum { E_DATA, E_MEMORY, E_JOIN }; /* a read's producer; a memory dependency; a member into its join */

typedef struct {
    int64_t dev;     /* -1: no device, drawn outside the clusters; else below the devices (dot_read checks) */
    size_t label;    /* offset of its NUL-terminated label in labels */
    uint8_t style;
} dv;

typedef struct {
    const char *name;
    tp_error *err;
    dv *v;
    size_t n, vcap;
    char *labels;
    size_t nlab, caplab;
    int64_t *efrom; /* edges efrom[k] -> eto[k] of kind ekind[k] */
    size_t *eto;
    uint8_t *ekind;
    size_t ne, capf, capt, capk;
    int64_t *rd; /* scratch: one vertex's sorted reads */
    size_t caprd;
    size_t ndev;
} D;

static tp_status dot_nomem(D *c)
{
    return tp__fail(c->err, TP_ERR_NOMEM, "out of memory");
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static tp_status dot_vertex(D *c, json_t *v)
{
    size_t i = c->n;
    const char *kind = json_string_value(json_object_get(v, "kind")), *task = json_string_value(json_object_get(v, "task"));
    if (!kind || !task) return tp__fail(c->err, TP_ERR_PARSE, "%s: vertex %zu needs 'kind' and 'task'", c->name, i);
    int st = -1;
    for (int q = 0; q < NSTYLES; q++)
        if (!strcmp(kind, kinds[q])) st = q;
    if (st < 0) return tp__fail(c->err, TP_ERR_PARSE, "%s: vertex %zu: unknown kind '%.64s'", c->name, i, kind);
    json_t *jd = json_object_get(v, "device"), *jg = json_object_get(v, "group");
    if (jd && (!json_is_integer(jd) || json_integer_value(jd) < 0)) /* absent: a vertex outside the devices' clusters */
        return tp__fail(c->err, TP_ERR_PARSE, "%s: vertex %zu: 'device' must be an integer >= 0", c->name, i);
    char grp[40] = "", label[560];
    if (json_is_integer(jg)) snprintf(grp, sizeof grp, " (group %lld)", (long long)json_integer_value(jg));
    int len = snprintf(label, sizeof label, "%zu: %s%s%.400s%s", i, strcmp(kind, "kernel") ? kind : "", strcmp(kind, "kernel") ? " " : "", task,
                       grp);
    size_t ll = len < 0 ? 0 : (size_t)len < sizeof label ? (size_t)len : sizeof label - 1;
    if (!TP__GROW(c->v, c->vcap, i + 1) || !TP__GROW(c->labels, c->caplab, c->nlab + ll + 1)) return dot_nomem(c);
    c->v[i].dev = jd ? (int64_t)json_integer_value(jd) : -1;
    c->v[i].style = (uint8_t)st;
    c->v[i].label = c->nlab;
    memcpy(c->labels + c->nlab, label, ll);
    c->labels[c->nlab + ll] = '\0';
    c->nlab += ll + 1;
    /* edges: each dependency, solid when a read comes from it */
    json_t *reads = json_object_get(v, "reads"), *deps = json_object_get(v, "deps");
    size_t nr = json_array_size(reads), nd = json_array_size(deps);
    if (!TP__GROW(c->rd, c->caprd, nr + 1)) return dot_nomem(c);
    for (size_t r = 0; r < nr; r++) c->rd[r] = (int64_t)json_integer_value(json_object_get(json_array_get(reads, r), "from"));
    qsort(c->rd, nr, sizeof *c->rd, cmp_i64);
    size_t need = c->ne + nd + 1;
    if (!TP__GROW(c->efrom, c->capf, need) || !TP__GROW(c->eto, c->capt, need) || !TP__GROW(c->ekind, c->capk, need)) return dot_nomem(c);
    for (size_t k = 0; k < nd; k++) {
        json_t *jk = json_array_get(deps, k);
        if (!json_is_integer(jk) || json_integer_value(jk) < 0)
            return tp__fail(c->err, TP_ERR_PARSE, "%s: vertex %zu: 'deps' must hold vertex numbers", c->name, i);
        int64_t d = (int64_t)json_integer_value(jk);
        c->efrom[c->ne] = d;
        c->eto[c->ne] = i;
        c->ekind[c->ne++] = bsearch(&d, c->rd, nr, sizeof d, cmp_i64) ? E_DATA : st == S_JOIN ? E_JOIN : E_MEMORY;
    }
    c->n++;
    return TP_OK;
}

static tp_status dot_read(D *c, tp__jp *jp)
{
    tp__jpt t = tp__jp_peek(jp);
    if (t == TP__JP_ERROR) return jp->err->code;
    if (t != TP__JP_OBJECT) return tp__fail(c->err, TP_ERR_PARSE, "%s: top level must be an object", c->name);
    if (tp__jp_obj_begin(jp)) return jp->err->code;
    int have_vertices = 0, have_format = 0, x;
    const char *k;
    while ((x = tp__jp_obj_key(jp, &k)) == 1) {
        if (!strcmp(k, "format")) {
            json_t *f;
            tp_status s = tp__jp_tree(jp, &f);
            if (s) return s;
            have_format = json_is_string(f) && !strcmp(json_string_value(f), TP__MG_FORMAT);
            json_decref(f);
            if (!have_format) break;
        } else if (!strcmp(k, "vertices") || !strcmp(k, "devices")) {
            int verts = k[0] == 'v';
            if ((t = tp__jp_peek(jp)) == TP__JP_ERROR) return jp->err->code;
            if (t != TP__JP_ARRAY) {
                if (tp__jp_skip(jp)) return jp->err->code;
                if (verts) return tp__fail(c->err, TP_ERR_PARSE, "%s: field 'vertices' must be an array", c->name);
                continue; /* devices: none */
            }
            have_vertices |= verts;
            if (tp__jp_arr_begin(jp)) return jp->err->code;
            while ((x = tp__jp_arr_next(jp)) == 1) {
                if (!verts) {
                    c->ndev++;
                    if (tp__jp_skip(jp)) return jp->err->code;
                    continue;
                }
                json_t *v;
                tp_status s = tp__jp_tree(jp, &v);
                if (!s) s = dot_vertex(c, v);
                json_decref(v);
                if (s) return s;
            }
            if (x < 0) return jp->err->code;
        } else if (tp__jp_skip(jp)) {
            return jp->err->code;
        }
    }
    if (x < 0 || (have_format && tp__jp_finish(jp))) return jp->err->code; /* x 1: a wrong format stopped the loop */
    if (!have_format) return tp__fail(c->err, TP_ERR_PARSE, "%s: field 'format' must be \"" TP__MG_FORMAT "\" (not a MemGraph)", c->name);
    if (!have_vertices) return tp__fail(c->err, TP_ERR_PARSE, "%s: field 'vertices' must be an array", c->name);
    /* what the vertices name, now that their number and the devices' are known */
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].dev >= 0 && (uint64_t)c->v[i].dev >= c->ndev)
            return tp__fail(c->err, TP_ERR_PARSE, "%s: vertex %zu is on device %lld; the MemGraph has %zu", c->name, i,
                            (long long)c->v[i].dev, c->ndev);
    for (size_t e = 0; e < c->ne; e++)
        if ((uint64_t)c->efrom[e] >= c->n)
            return tp__fail(c->err, TP_ERR_PARSE, "%s: vertex %zu depends on vertex %lld, which does not exist", c->name, c->eto[e],
                            (long long)c->efrom[e]);
    return TP_OK;
}

static size_t bucket(const D *c, size_t i)
{
    return c->v[i].dev >= 0 ? (size_t)c->v[i].dev + 1 : 0; /* dot_read refused devices out of range */
}

static void draw(const D *c, const size_t *order, const size_t *start, FILE *out)
{
    fputs("digraph memgraph {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n", out);
    for (size_t b = 0; b <= c->ndev; b++) { /* bucket 0: outside the clusters; b: device b-1 */
        if (b) fprintf(out, "  subgraph cluster_dev%zu {\n    label=\"device %zu\"; color=gray;\n", b - 1, b - 1);
        for (size_t q = start[b]; q < start[b + 1]; q++) {
            const dv *v = &c->v[order[q]];
            fprintf(out, "%s  v%zu [label=", b ? "  " : "", order[q]);
            tp__json_str(out, c->labels + v->label); /* JSON string escaping is valid DOT quoting for our labels */
            fprintf(out, ", %s];\n", styles[v->style]);
        }
        if (b) fputs("  }\n", out);
    }
    for (size_t k = 0; k < c->ne; k++)
        fprintf(out, "  v%lld -> v%zu%s;\n", (long long)c->efrom[k], c->eto[k],
                c->ekind[k] == E_DATA ? "" : c->ekind[k] == E_JOIN ? " [style=dotted, color=orange]" : " [style=dashed, color=red]");
    fputs("}\n", out);
}

tp_status tp_dot_json(const char *text, size_t len, const char *name, FILE *out, tp_error *err)
{
    D c;
    memset(&c, 0, sizeof c);
    c.name = name;
    c.err = err;
    tp__jp jp;
    tp__jp_open_mem(&jp, text, len, name, err);
    tp_status s = dot_read(&c, &jp);
    if (s && !jp.failed) { /* a syntax error later in the text is reported first */
        tp_status syn = tp__jp_drain(&jp);
        if (!syn) syn = tp__jp_finish(&jp);
        if (syn) s = syn;
    }
    tp__jp_close(&jp);
    /* clusters: a counting sort of the vertices by bucket (0: outside, b: device b-1) */
    size_t nb = c.ndev + 1, *start = NULL, *fill = NULL, *order = NULL;
    if (!s) {
        start = calloc(nb + 1, sizeof *start);
        fill = malloc(nb * sizeof *fill);
        order = malloc((c.n + 1) * sizeof *order);
        if (!start || !fill || !order) s = dot_nomem(&c);
    }
    if (!s) {
        for (size_t i = 0; i < c.n; i++) start[bucket(&c, i) + 1]++;
        for (size_t b = 0; b < nb; b++) start[b + 1] += start[b];
        memcpy(fill, start, nb * sizeof *fill);
        for (size_t i = 0; i < c.n; i++) order[fill[bucket(&c, i)]++] = i;
        draw(&c, order, start, out);
    }
    free(fill);
    free(start);
    free(order);
    free(c.v);
    free(c.labels);
    free(c.efrom);
    free(c.eto);
    free(c.ekind);
    free(c.rd);
    if (!s && ferror(out)) s = tp__fail_write(err);
    return s;
}
