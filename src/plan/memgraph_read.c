/* memgraph_read.c - MemGraph files read back, so that a plan made once can run many times:
 * "turnip.memgraph/1" JSON pulled one vertex at a time (io/jsonpull.h, no document tree), the
 * binary format handed to memgraph_bin.c by its magic; both end in the checks of
 * memgraph_check.c, which make a file safe to hand to the executor; whether the plan is
 * race-free is the verifier's question (turnip run asks it unless --no-verify). What the in-memory MemGraph cannot hold is refused: a read region or
 * an outputs/kept region other than its producer's write, writes.device other than device. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "io/jsonpull.h"
#include "plan/memgraph_io.h"

static const char *const kind_names[] = {"input", "kernel", "transfer", "offload", "reload", "resident", "accumulate", "join"};


/* ---- JSON ---- */

typedef struct {
    uint8_t space;
    int64_t device; /* -1 when absent */
    int64_t offset, bytes;
} region;

typedef struct {
    uint32_t v, k;
    region r;
} pend_read;

typedef struct {
    tp__jp jp;
    const char *name;
    tp_error *err;
    const tp_graph *tg;
    tp_memgraph *mg;
    /* conversion: the task names met, in order (owned) */
    char **names;
    size_t nnames, capnames;
    tp__strmap nmap;
    pend_read *pr;
    size_t npr, cappr;
    size_t capdeps, capdoff;
    uint32_t *otask, *ofrom;
    uint8_t *okeep;
    size_t nout, capout, capout2, capout3;
    size_t capkept;
    int seen_format, seen_devices, seen_host, seen_vertices;
} mr;

static tp_status fail(mr *r, const char *fmt, const char *where, const char *what)
{
    return tp__fail(r->err, TP_ERR_PARSE, fmt, r->name, where, what);
}

static tp_status nomem(mr *r)
{
    return tp__fail(r->err, TP_ERR_NOMEM, "out of memory");
}

/* an integer in [lo, hi] */
static tp_status rd_int(mr *r, int64_t lo, int64_t hi, int64_t *v, const char *where, const char *field)
{
    tp__jpt t = tp__jp_peek(&r->jp);
    if (t == TP__JP_ERROR) return tp__jp_status(r->err);
    if (t != TP__JP_NUMBER || tp__jp_number(&r->jp) || !r->jp.is_int || r->jp.ival < lo || r->jp.ival > hi) {
        if (r->jp.failed) return tp__jp_status(r->err);
        return tp__fail(r->err, TP_ERR_PARSE, "%s: %s: field '%s' must be an integer in [%lld, %lld]", r->name, where, field,
                        (long long)lo, (long long)hi);
    }
    *v = r->jp.ival;
    return TP_OK;
}

static tp_status rd_str(mr *r, const char **s, const char *where, const char *field)
{
    tp__jpt t = tp__jp_peek(&r->jp);
    if (t == TP__JP_ERROR) return tp__jp_status(r->err);
    if (t != TP__JP_STRING) return tp__fail(r->err, TP_ERR_PARSE, "%s: %s: field '%s' must be a string", r->name, where, field);
    return tp__jp_string(&r->jp, s, NULL) ? tp__jp_status(r->err) : TP_OK;
}

/* a task name: its index in the TaskGraph, or (conversion) in the names met so far */
static tp_status task_index(mr *r, const char *s, uint32_t *out, const char *where)
{
    if (r->tg) {
        int64_t t = tp_graph_find(r->tg, s);
        if (t < 0)
            return tp__fail(r->err, TP_ERR_INVALID, "%s: %s: task '%s' is not a vertex of the TaskGraph (a plan for another graph?)",
                            r->name, where, s);
        *out = (uint32_t)t;
        return TP_OK;
    }
    if (tp__strmap_get(&r->nmap, s, out)) return TP_OK;
    char *d = strdup(s);
    if (!d || r->nnames >= UINT32_MAX - 1 || !TP__GROW(r->names, r->capnames, r->nnames + 1)) {
        free(d);
        return nomem(r);
    }
    r->names[r->nnames] = d;
    if (tp__strmap_put(&r->nmap, d, (uint32_t)r->nnames, NULL) < 0) {
        free(d);
        return nomem(r);
    }
    *out = (uint32_t)r->nnames++;
    return TP_OK;
}

/* {"space", "device" (device space only), "offset", "bytes"} plus, where allowed, the keys in
 * `extra` (their values are read by the caller's callback) */
typedef tp_status (*extra_fn)(mr *r, const char *key, void *ctx, int *handled);

static tp_status rd_region(mr *r, region *g, const char *where, extra_fn extra, void *ctx)
{
    memset(g, 0, sizeof *g);
    g->device = -1;
    g->offset = g->bytes = -1;
    int space = -1;
    tp__jpt t = tp__jp_peek(&r->jp);
    if (t == TP__JP_ERROR) return tp__jp_status(r->err);
    if (t != TP__JP_OBJECT) return fail(r, "%s: %s: must be an object%s", where, "");
    if (tp__jp_obj_begin(&r->jp)) return tp__jp_status(r->err);
    const char *k;
    int x;
    tp_status s;
    while ((x = tp__jp_obj_key(&r->jp, &k)) == 1) {
        if (!strcmp(k, "space")) {
            const char *sp;
            if ((s = rd_str(r, &sp, where, "space"))) return s;
            space = !strcmp(sp, "host") ? TP_SPACE_HOST : !strcmp(sp, "device") ? TP_SPACE_DEVICE : -2;
            if (space < 0) return fail(r, "%s: %s: field 'space' must be \"host\" or \"device\"%s", where, "");
        } else if (!strcmp(k, "device")) {
            if ((s = rd_int(r, 0, TP_MAX_DEVICES - 1, &g->device, where, "device"))) return s;
        } else if (!strcmp(k, "offset")) {
            if ((s = rd_int(r, 0, INT64_MAX, &g->offset, where, "offset"))) return s;
        } else if (!strcmp(k, "bytes")) {
            if ((s = rd_int(r, 1, INT64_MAX, &g->bytes, where, "bytes"))) return s;
        } else {
            int handled = 0;
            if (extra && (s = extra(r, k, ctx, &handled))) return s;
            if (!handled && tp__jp_skip(&r->jp)) return tp__jp_status(r->err);
        }
    }
    if (x < 0) return tp__jp_status(r->err);
    if (space < 0 || g->offset < 0 || g->bytes < 0 || (space == TP_SPACE_DEVICE) != (g->device >= 0))
        return fail(r, "%s: %s: a region is {\"space\", \"device\" (device space only), \"offset\", \"bytes\"}%s", where, "");
    g->space = (uint8_t)space;
    return TP_OK;
}

static int same_region(const tp__mv *m, const region *g)
{
    return m->space == g->space && (g->space == TP_SPACE_HOST || m->device == g->device) && m->offset == (uint64_t)g->offset &&
           m->bytes == (uint64_t)g->bytes;
}

typedef struct {
    int64_t from;
} from_ctx;

static tp_status from_key(mr *r, const char *key, void *ctx, int *handled)
{
    if (strcmp(key, "from")) return TP_OK;
    *handled = 1;
    return rd_int(r, 0, UINT32_MAX - 1, &((from_ctx *)ctx)->from, "reads", "from");
}

static tp_status read_vertex(mr *r, size_t i)
{
    tp_memgraph *mg = r->mg;
    char where[48];
    snprintf(where, sizeof where, "vertices[%zu]", i);
    if (i >= UINT32_MAX - 1) return fail(r, "%s: %s: %s", where, "too many vertices");
    if (!TP__GROW(mg->v, mg->capv, i + 1) || !TP__GROW(mg->deps_off, r->capdoff, i + 2)) return nomem(r);
    tp__mv *m = &mg->v[i];
    memset(m, 0, sizeof *m);
    m->group = -1;
    m->reads_off = (uint32_t)mg->nreads;
    if (mg->nreads >= UINT32_MAX) return fail(r, "%s: %s: %s", where, "too many reads in all");
    int64_t id = -1, dev = -2, inplace = -1, group = -1;
    int kind = -1, has_task = 0, has_writes = 0, has_reads = 0, has_deps = 0;
    region w;
    tp__jpt t = tp__jp_peek(&r->jp);
    if (t == TP__JP_ERROR) return tp__jp_status(r->err);
    if (t != TP__JP_OBJECT) return fail(r, "%s: %s: %s", where, "must be an object");
    if (tp__jp_obj_begin(&r->jp)) return tp__jp_status(r->err);
    const char *k, *sv;
    int x;
    tp_status s;
    while ((x = tp__jp_obj_key(&r->jp, &k)) == 1) {
        if (!strcmp(k, "id")) {
            if ((s = rd_int(r, 0, INT64_MAX, &id, where, "id"))) return s;
            if ((uint64_t)id != i) return fail(r, "%s: %s: %s", where, "'id' must be the vertex's position (0, 1, ...)");
        } else if (!strcmp(k, "kind")) {
            if ((s = rd_str(r, &sv, where, "kind"))) return s;
            for (int q = 0; q <= TP_M_JOIN; q++)
                if (!strcmp(sv, kind_names[q])) kind = q;
            if (kind < 0) return fail(r, "%s: %s: field 'kind' is not a MemGraph kind ('%s')", where, sv);
        } else if (!strcmp(k, "task")) {
            if ((s = rd_str(r, &sv, where, "task")) || (s = task_index(r, sv, &m->task, where))) return s;
            has_task = 1;
        } else if (!strcmp(k, "device")) {
            if ((s = rd_int(r, 0, TP_MAX_DEVICES - 1, &dev, where, "device"))) return s;
        } else if (!strcmp(k, "writes")) {
            if ((s = rd_region(r, &w, where, NULL, NULL))) return s;
            has_writes = 1;
        } else if (!strcmp(k, "reads")) {
            if ((t = tp__jp_peek(&r->jp)) == TP__JP_ERROR) return tp__jp_status(r->err);
            if (t != TP__JP_ARRAY) return fail(r, "%s: %s: %s", where, "field 'reads' must be an array");
            if (tp__jp_arr_begin(&r->jp)) return tp__jp_status(r->err);
            while ((x = tp__jp_arr_next(&r->jp)) == 1) {
                from_ctx fc = {-1};
                region rr;
                if ((s = rd_region(r, &rr, where, from_key, &fc))) return s;
                if (fc.from < 0) return fail(r, "%s: %s: %s", where, "each read needs 'from'");
                if (m->nreads >= UINT32_MAX - 1 || !TP__GROW(mg->reads, mg->capreads, mg->nreads + 1)) return nomem(r);
                if ((size_t)fc.from < i) {
                    if (!same_region(&mg->v[fc.from], &rr)) {
                        char idx[16];
                        snprintf(idx, sizeof idx, "%u", m->nreads);
                        return fail(r, "%s: %s: reads[%s] is not the region its producer wrote", where, idx);
                    }
                } else {
                    if (!TP__GROW(r->pr, r->cappr, r->npr + 1)) return nomem(r);
                    r->pr[r->npr++] = (pend_read){(uint32_t)i, m->nreads, rr};
                }
                mg->reads[mg->nreads++] = (uint32_t)fc.from;
                m->nreads++;
            }
            if (x < 0) return tp__jp_status(r->err);
            has_reads = 1;
        } else if (!strcmp(k, "deps")) {
            if ((t = tp__jp_peek(&r->jp)) == TP__JP_ERROR) return tp__jp_status(r->err);
            if (t != TP__JP_ARRAY) return fail(r, "%s: %s: %s", where, "field 'deps' must be an array of vertex ids");
            if (tp__jp_arr_begin(&r->jp)) return tp__jp_status(r->err);
            size_t nd = mg->deps_off[i];
            while ((x = tp__jp_arr_next(&r->jp)) == 1) {
                int64_t d;
                if ((s = rd_int(r, 0, UINT32_MAX - 1, &d, where, "deps"))) return s;
                if (nd >= UINT32_MAX - 1 || !TP__GROW(mg->deps, r->capdeps, nd + 1)) return nomem(r);
                mg->deps[nd++] = (uint32_t)d;
            }
            if (x < 0) return tp__jp_status(r->err);
            mg->deps_off[i + 1] = (uint32_t)nd;
            has_deps = 1;
        } else if (!strcmp(k, "inplace")) {
            if ((s = rd_int(r, 0, UINT32_MAX - 2, &inplace, where, "inplace"))) return s;
        } else if (!strcmp(k, "group")) {
            if ((s = rd_int(r, 0, INT32_MAX, &group, where, "group"))) return s;
        } else if (tp__jp_skip(&r->jp)) {
            return tp__jp_status(r->err);
        }
    }
    if (x < 0) return tp__jp_status(r->err);
    if (id < 0 || kind < 0 || !has_task || !has_writes || !has_reads || !has_deps)
        return fail(r, "%s: %s: %s", where, "needs 'id', 'kind', 'task', 'writes', 'reads' and 'deps'");
    if ((kind == TP_M_INPUT) != (dev == -2))
        return fail(r, "%s: %s: %s", where, "'device' is required, except on an input vertex (which has none)");
    if (w.space == TP_SPACE_DEVICE && w.device != dev)
        return fail(r, "%s: %s: %s", where, "'writes' is on another device than 'device'");
    int grouped = kind == TP_M_ACCUMULATE || kind == TP_M_JOIN;
    if (grouped != (group >= 0)) return fail(r, "%s: %s: %s", where, "'group' is required on accumulate and join, only there");
    m->kind = (uint8_t)kind;
    m->space = w.space;
    m->device = (int16_t)(kind == TP_M_INPUT ? -1 : dev);
    m->offset = (uint64_t)w.offset;
    m->bytes = (uint64_t)w.bytes;
    m->inplace = inplace >= 0 ? (uint32_t)inplace + 1 : 0;
    m->group = (int32_t)group;
    return TP_OK;
}

/* outputs / kept entries: {"task", "from", region, "keep"} */
typedef struct {
    int64_t from;
    int keep, has_task;
    uint32_t task;
} out_ctx;

static tp_status out_key(mr *r, const char *key, void *ctx, int *handled)
{
    out_ctx *o = ctx;
    if (!strcmp(key, "from")) {
        *handled = 1;
        return rd_int(r, 0, UINT32_MAX - 1, &o->from, "outputs", "from");
    }
    if (!strcmp(key, "keep")) {
        *handled = 1;
        tp__jpt t = tp__jp_peek(&r->jp);
        if (t == TP__JP_ERROR) return tp__jp_status(r->err);
        if (t != TP__JP_TRUE && t != TP__JP_FALSE) return fail(r, "%s: %s: %s", "outputs", "'keep' must be true or false");
        return tp__jp_bool(&r->jp, &o->keep) ? tp__jp_status(r->err) : TP_OK;
    }
    if (!strcmp(key, "task")) {
        *handled = 1;
        const char *s;
        tp_status st = rd_str(r, &s, "outputs", "task");
        if (!st) st = task_index(r, s, &o->task, "outputs");
        o->has_task = 1;
        return st;
    }
    return TP_OK;
}

static tp_status read_outs(mr *r, int kept)
{
    tp_memgraph *mg = r->mg;
    const char *what = kept ? "kept" : "outputs";
    tp__jpt t = tp__jp_peek(&r->jp);
    if (t == TP__JP_ERROR) return tp__jp_status(r->err);
    if (t != TP__JP_ARRAY) return fail(r, "%s: field '%s' must be an array%s", what, "");
    if (tp__jp_arr_begin(&r->jp)) return tp__jp_status(r->err);
    int x;
    while ((x = tp__jp_arr_next(&r->jp)) == 1) {
        out_ctx o = {-1, 0, 0, 0};
        region g;
        tp_status s = rd_region(r, &g, what, out_key, &o);
        if (s) return s;
        if (o.from < 0 || !o.has_task || (kept && o.keep)) return fail(r, "%s: %s: %s", what, "each entry needs 'task' and 'from' (and 'keep' only in outputs)");
        if ((size_t)o.from >= mg->n || !same_region(&mg->v[o.from], &g) || (kept && mg->v[o.from].task != o.task))
            return fail(r, "%s: %s: %s", what, "an entry's 'from' must be a vertex whose write is its region (and, in kept, its task)");
        if (kept) {
            if (mg->nkept >= UINT32_MAX - 1 || !TP__GROW(mg->kept, r->capkept, (size_t)mg->nkept + 1)) return nomem(r);
            mg->kept[mg->nkept++] = (uint32_t)o.from;
            continue;
        }
        if (r->nout >= UINT32_MAX - 1 || !TP__GROW(r->ofrom, r->capout, r->nout + 1) || !TP__GROW(r->otask, r->capout2, r->nout + 1) ||
            !TP__GROW(r->okeep, r->capout3, r->nout + 1))
            return nomem(r);
        r->ofrom[r->nout] = (uint32_t)o.from;
        r->otask[r->nout] = o.task;
        r->okeep[r->nout++] = (uint8_t)o.keep;
    }
    return x < 0 ? tp__jp_status(r->err) : TP_OK;
}

static tp_status read_json_doc(mr *r)
{
    tp_memgraph *mg = r->mg;
    tp__jp *jp = &r->jp;
    tp__jpt t = tp__jp_peek(jp);
    if (t == TP__JP_ERROR) return tp__jp_status(r->err);
    if (t != TP__JP_OBJECT) return tp__fail(r->err, TP_ERR_PARSE, "%s: top level must be an object", r->name);
    if (tp__jp_obj_begin(jp)) return tp__jp_status(r->err);
    const char *k;
    int x;
    tp_status s;
    while ((x = tp__jp_obj_key(jp, &k)) == 1) {
        if (!strcmp(k, "format")) {
            const char *f;
            if ((s = rd_str(r, &f, "top level", "format"))) return s;
            if (strcmp(f, TP__MG_FORMAT)) return fail(r, "%s: field 'format' must be \"%s\"", TP__MG_FORMAT, "");
            r->seen_format = 1;
        } else if (!strcmp(k, "devices")) {
            if ((t = tp__jp_peek(jp)) == TP__JP_ERROR) return tp__jp_status(r->err);
            if (t != TP__JP_ARRAY || tp__jp_arr_begin(jp)) return r->jp.failed ? tp__jp_status(r->err) : fail(r, "%s: %s: %s", "devices", "must be an array of {\"capacity\": N}");
            while ((x = tp__jp_arr_next(jp)) == 1) {
                if (mg->ndevices >= TP_MAX_DEVICES) return fail(r, "%s: %s: %s", "devices", "more than " TP__STR(TP_MAX_DEVICES));
                if ((t = tp__jp_peek(jp)) == TP__JP_ERROR) return tp__jp_status(r->err);
                if (t != TP__JP_OBJECT || tp__jp_obj_begin(jp)) return r->jp.failed ? tp__jp_status(r->err) : fail(r, "%s: %s: %s", "devices", "must be an array of {\"capacity\": N}");
                int64_t cap = -1;
                int y;
                while ((y = tp__jp_obj_key(jp, &k)) == 1) {
                    if (!strcmp(k, "capacity")) {
                        if ((s = rd_int(r, 0, INT64_MAX, &cap, "devices", "capacity"))) return s;
                    } else if (tp__jp_skip(jp)) {
                        return tp__jp_status(r->err);
                    }
                }
                if (y < 0) return tp__jp_status(r->err);
                if (cap < 0) return fail(r, "%s: %s: %s", "devices", "each needs 'capacity'");
                mg->cap[mg->ndevices++] = (uint64_t)cap;
            }
            if (x < 0) return tp__jp_status(r->err);
            r->seen_devices = 1;
        } else if (!strcmp(k, "host_bytes")) {
            int64_t h;
            if ((s = rd_int(r, 0, INT64_MAX, &h, "top level", "host_bytes"))) return s;
            mg->host_bytes = (uint64_t)h;
            r->seen_host = 1;
        } else if (!strcmp(k, "vertices")) {
            if ((t = tp__jp_peek(jp)) == TP__JP_ERROR) return tp__jp_status(r->err);
            if (t != TP__JP_ARRAY || tp__jp_arr_begin(jp)) return r->jp.failed ? tp__jp_status(r->err) : fail(r, "%s: %s: %s", "top level", "field 'vertices' must be an array");
            size_t i = 0;
            while ((x = tp__jp_arr_next(jp)) == 1) {
                if ((s = read_vertex(r, i))) return s;
                mg->n = ++i;
            }
            if (x < 0) return tp__jp_status(r->err);
            r->seen_vertices = 1;
        } else if (!strcmp(k, "outputs")) {
            if (!r->seen_vertices) return fail(r, "%s: %s: %s", "top level", "'outputs' must follow 'vertices'");
            if ((s = read_outs(r, 0))) return s;
        } else if (!strcmp(k, "kept")) {
            if (!r->seen_vertices) return fail(r, "%s: %s: %s", "top level", "'kept' must follow 'vertices'");
            if ((s = read_outs(r, 1))) return s;
        } else if (tp__jp_skip(jp)) {
            return tp__jp_status(r->err);
        }
    }
    if (x < 0 || tp__jp_finish(jp)) return tp__jp_status(r->err);
    if (!r->seen_format || !r->seen_devices || !r->seen_host || !r->seen_vertices)
        return fail(r, "%s: %s: %s", "top level", "needs 'format', 'devices', 'host_bytes' and 'vertices'");
    for (size_t q = 0; q < r->npr; q++) { /* reads of producers later in the file */
        const pend_read *p = &r->pr[q];
        uint32_t from = mg->reads[mg->v[p->v].reads_off + p->k];
        if (from >= mg->n || !same_region(&mg->v[from], &p->r))
            return tp__fail(r->err, TP_ERR_PARSE, "%s: vertices[%u]: reads[%u] is not the region its producer wrote", r->name,
                            p->v, p->k);
    }
    return TP_OK;
}


int tp_memgraph_file_is_binary(const char *path)
{
    int fd;
    tp_error e;
    if (tp__open_regular(path, &fd, NULL, &e)) return 0;
    char m[8];
    ssize_t got = read(fd, m, sizeof m);
    close(fd);
    return got == (ssize_t)sizeof m && !memcmp(m, TP__MGB_MAGIC, sizeof m);
}

tp_status tp_memgraph_read_file(const char *path, const tp_graph *tg, tp_memgraph **out, tp_graph **names, tp_error *err)
{
    if (names) *names = NULL;
    if (!tg && !names) return tp__fail(err, TP_ERR_ARG, "tp_memgraph_read_file: no TaskGraph and nowhere to put the names");
    int fd;
    uint64_t size;
    tp_status s = tp__open_regular(path, &fd, &size, err);
    if (s) return s;
    char m[8];
    ssize_t got = read(fd, m, sizeof m);
    if (got == (ssize_t)sizeof m && !memcmp(m, TP__MGB_MAGIC, sizeof m)) {
        s = tp__mg_read_binary(fd, size, path, tg, out, names, err);
        close(fd);
        return s;
    }
    close(fd);
    mr r;
    memset(&r, 0, sizeof r);
    r.name = path;
    r.err = err;
    r.tg = tg;
    r.mg = tp__mg_alloc();
    r.capdoff = 1;
    if (!r.mg || !tp__strmap_init(&r.nmap, 16)) {
        tp_memgraph_free(r.mg);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    s = tp__jp_open_file(&r.jp, path, err);
    if (!s) {
        s = read_json_doc(&r);
        tp__jp_close(&r.jp);
    }
    if (!s)
        s = tp__mg_finish(r.mg, tg, path, (const char *const *)r.names, r.nnames, r.otask, &r.ofrom, r.okeep, r.nout, names, err);
    for (size_t i = 0; i < r.nnames; i++) free(r.names[i]); /* the stand-in graph holds copies */
    free(r.names);
    tp__strmap_free(&r.nmap);
    free(r.pr);
    free(r.otask);
    free(r.ofrom);
    free(r.okeep);
    if (s) {
        tp_memgraph_free(r.mg);
        if (names && *names) {
            tp_graph_free(*names);
            *names = NULL;
        }
        return s;
    }
    *out = r.mg;
    return TP_OK;
}
