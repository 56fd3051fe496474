/* verify.c - independent checker of "turnip.memgraph/1" plans.
 *
 * Shares nothing with the planner but the TaskGraph reader: it reads the MemGraph JSON
 * itself and re-derives every property from the text. The file is read as a stream (the JSON
 * tokenizer of io/jsonpull.h), each vertex a small jansson tree parsed and freed in turn, so
 * memory follows the vertices' fields, not the document (docs/formats.md, "Plan files").
 *
 *   1. form: ids 0..n-1, known kinds, regions inside their device's capacity or host_bytes,
 *      every read names its producer, reads exactly the region that producer wrote, and
 *      the producer is among the deps;
 *   2. correspondence: every TaskGraph kernel and transfer appears exactly once, on its
 *      device, reading its TaskGraph inputs in argument order; offloads and reloads move
 *      one value (same task) between host and its device, so a read names the right value
 *      through any chain of them;
 *   3. acyclic (Kahn);
 *   4. races: vertices are swept in a topological order while an interval map per memory
 *      space records the last writer of each byte range. When w writes bytes last written
 *      by p, p must happen before w (so writers of a byte form a chain) and every reader of
 *      p's region must happen before w. By transitivity along the chain this is exactly
 *      "every other writer of R is before p or after r" for every read;
 *   5. outputs: each is listed, holds its task's value, and its bytes are never rewritten.
 * Sessions (issue 11, all optional): a `resident` vertex is the value of a TaskGraph input
 * declared resident, on its device at the declared offset from the start (no reads, no
 * deps), a source like an `input` vertex; exactly one per such input, and no `input` vertex
 * when the TaskGraph says the host holds no copy. A kernel with `"inplace": K` (declared so
 * by the TaskGraph) writes exactly the region of its read K: the one exception to "a writer
 * never overlaps what it reads"; every other reader of the overwritten value is still
 * ordered before it (4). `kept` entries, like outputs, hold their task's value intact at the
 * end, on a device; every TaskGraph output in "keep" is among them, and every kept input
 * without a host copy.
 * Cache tensors (issue 12): an input declared resident with "load" has no resident vertex;
 * a reload writes exactly its declared region instead. One declared "pin" owns its region
 * for the whole plan: the only vertices that write any of its bytes are its own resident
 * vertex or that one load, and kernels in place on the value last written there (a chain,
 * checked in topological order), each writing exactly the region; nothing else, ever.
 * Host-placed inputs (issue 12): an input the TaskGraph places in its reserved host bytes
 * [0, R) has its input vertex exactly there; no other vertex writes host memory below R.
 * Sum-into (issue 13): a TaskGraph sum marked "accumulate" may appear as a group instead of a
 * kernel: k-1 `accumulate` vertices (reads [init, a_i], in place on read 0) and one `join`
 * (no reads, a dep on each member), all with the sum's task, device and region R. The init's
 * value and the members' partials are exactly the sum's inputs; members have no edge between
 * them; nothing reads from a member; other readers of the init run before every member. In the
 * sweep (4), a member may overwrite only the init or another member of its group, the join only
 * a member, and any other writer of bytes last written by a member is a race (it must come
 * after the join, and then overwrites the join's value under the usual rule).
 * Reachability queries use the direct edge first, then a backward search pruned by rank. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include "turnip/plan.h"
#include "io/jsonpull.h"
#include "io/util.h"

enum { K_INPUT, K_KERNEL, K_TRANSFER, K_OFFLOAD, K_RELOAD, K_RESIDENT, K_ACCUMULATE, K_JOIN, NKINDS };
static const char *kname[NKINDS] = {"input", "kernel", "transfer", "offload", "reload", "resident", "accumulate", "join"};
static const char *tkname[] = {"input", "kernel", "transfer"}; /* TaskGraph kinds */

typedef struct {
    int space; /* -1 host, else device */
    uint64_t off, bytes;
} reg;

typedef struct {
    int kind;
    int64_t task; /* TaskGraph index */
    const char *tname;
    int dev;
    reg w;
    uint32_t nreads, ndeps;
    uint32_t *from;
    reg *rr;
    uint32_t *deps; /* sorted */
    int inplace;    /* kernels: the read whose region it overwrites, or -1 */
    int64_t group;  /* accumulate and join: the group, else -1 */
} vx;

typedef struct {
    uint64_t a, b; /* [a, b) */
    uint32_t writer;
} seg;

typedef struct {
    seg *s;
    size_t n, cap;
} imap;

/* The texts of a top-level array's elements, NUL-separated, for the few arrays checked after
 * the vertices ("outputs", "kept"): the file is read once, as a stream, and no part of it
 * larger than one element is ever a jansson tree. */
typedef struct {
    int present, bad;   /* the field was given; it was not an array */
    char *text;         /* owned */
    size_t len, cap;
    size_t *off;        /* owned: element k starts at text + off[k] */
    size_t n, offcap;
} elems;

typedef struct {
    const char *name;
    tp_error *err;
    const tp_graph *tg;
    vx *v;
    size_t n;
    int ndev;
    uint64_t *cap;
    uint64_t host;
    uint32_t *rank, *order, *mark, stamp, *queue;
    uint32_t *rd_off, *rd; /* readers of each vertex */
    imap *maps;            /* ndev + 1, host last */
    /* sum-into groups, indexed by group number (< n): the join, the init (every member's read
     * 0), members as a CSR in id order */
    uint32_t *gjoin, *ginit, *gm_off, *gm;
    size_t vcap;
    int have_devices, have_host; /* top-level fields seen so far (keys come in any order) */
    elems outs, kept;            /* the elements of "outputs" and "kept", each parsed when checked */
} V;

static tp_status unusable(V *c, const char *fmt, const char *a, long long i)
{
    char buf[512];
    snprintf(buf, sizeof buf, fmt, a, i);
    return tp__fail(c->err, TP_ERR_PARSE, "%s: %s", c->name, buf);
}

#define VIOL(...) tp__fail(c->err, TP_ERR_CHECK, __VA_ARGS__)

static int get_u64(json_t *j, uint64_t *out)
{
    if (!json_is_integer(j) || json_integer_value(j) < 0) return 0;
    *out = (uint64_t)json_integer_value(j);
    return 1;
}

static const char *rname(const reg *r, char *buf, size_t len)
{
    if (r->space < 0) snprintf(buf, len, "host [%llu, %llu)", (unsigned long long)r->off, (unsigned long long)(r->off + r->bytes));
    else snprintf(buf, len, "device %d [%llu, %llu)", r->space, (unsigned long long)r->off, (unsigned long long)(r->off + r->bytes));
    return buf;
}

/* "devices": [{"capacity": N}, ...], one per TaskGraph device */
static tp_status parse_devices(V *c, json_t *devs)
{
    if (!json_is_array(devs)) return unusable(c, "field 'devices' must be an array%s", "", 0);
    if (json_array_size(devs) != (size_t)tp_graph_devices(c->tg))
        return VIOL("the MemGraph has %zu devices, the TaskGraph %d", json_array_size(devs), tp_graph_devices(c->tg));
    c->ndev = (int)json_array_size(devs);
    c->cap = calloc((size_t)c->ndev + 1, sizeof *c->cap);
    if (!c->cap) return tp__fail(c->err, TP_ERR_NOMEM, "out of memory");
    for (int d = 0; d < c->ndev; d++)
        if (!get_u64(json_object_get(json_array_get(devs, (size_t)d), "capacity"), &c->cap[d]))
            return unusable(c, "devices[%2$lld] needs an integer 'capacity'%1$s", "", d);
    c->have_devices = 1;
    return TP_OK;
}

/* A device number read before "devices" (keys in any order) is kept, clamped, and checked by
 * check_refs; one read after is checked here. */
static tp_status device_ref(V *c, uint64_t d, int *out, size_t i, const char *what, const char *tname /* the vertex's own device */)
{
    if (c->have_devices && d >= (uint64_t)c->ndev) {
        if (tname) return VIOL("vertex %zu (%s): device %llu out of range", i, tname, (unsigned long long)d);
        return VIOL("vertex %zu: %s names device %llu, the MemGraph has %d", i, what, (unsigned long long)d, c->ndev);
    }
    *out = d > INT32_MAX ? INT32_MAX : (int)d;
    return TP_OK;
}

/* vertex references are checked once the number of vertices is known (check_refs) */
static uint32_t vertex_ref(uint64_t v)
{
    return v >= UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static tp_status parse_reg(V *c, json_t *j, reg *r, size_t i, const char *what)
{
    if (!json_is_object(j)) return unusable(c, "vertex %2$lld: '%1$s' must be an object", what, (long long)i);
    json_t *sp = json_object_get(j, "space");
    if (!json_is_string(sp)) return unusable(c, "vertex %2$lld: '%1$s' needs \"space\": \"host\" or \"device\"", what, (long long)i);
    if (!strcmp(json_string_value(sp), "host")) {
        r->space = -1;
    } else if (!strcmp(json_string_value(sp), "device")) {
        uint64_t d;
        if (!get_u64(json_object_get(j, "device"), &d))
            return unusable(c, "vertex %2$lld: '%1$s' in device space needs an integer 'device'", what, (long long)i);
        tp_status s = device_ref(c, d, &r->space, i, what, NULL);
        if (s) return s;
    } else {
        return unusable(c, "vertex %2$lld: '%1$s' space must be \"host\" or \"device\"", what, (long long)i);
    }
    if (!get_u64(json_object_get(j, "offset"), &r->off) || !get_u64(json_object_get(j, "bytes"), &r->bytes))
        return unusable(c, "vertex %2$lld: '%1$s' needs non-negative integer 'offset' and 'bytes'", what, (long long)i);
    return TP_OK;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* vertices[i], a small tree of its own; its names are the TaskGraph's (tname borrows them) */
static tp_status parse_vertex(V *c, json_t *j, size_t i)
{
    vx *x = &c->v[i];
    if (!json_is_object(j)) return unusable(c, "vertices[%2$lld] must be an object%1$s", "", (long long)i);
    uint64_t id;
    if (!get_u64(json_object_get(j, "id"), &id))
        return unusable(c, "vertices[%2$lld]: 'id' must be an integer%1$s", "", (long long)i);
    if (id != i) return VIOL("vertices[%zu] has id %llu; ids must be 0..n-1 in order", i, (unsigned long long)id);
    json_t *k = json_object_get(j, "kind");
    if (!json_is_string(k)) return unusable(c, "vertex %2$lld: 'kind' must be a string%1$s", "", (long long)i);
    x->kind = -1;
    for (int q = 0; q < NKINDS; q++)
        if (!strcmp(json_string_value(k), kname[q])) x->kind = q;
    if (x->kind < 0) return unusable(c, "vertex %2$lld: unknown kind '%1$s'", json_string_value(k), (long long)i);
    json_t *t = json_object_get(j, "task");
    if (!json_is_string(t)) return unusable(c, "vertex %2$lld: 'task' must be a string%1$s", "", (long long)i);
    x->task = tp_graph_find(c->tg, json_string_value(t));
    if (x->task < 0) return VIOL("vertex %zu: task '%s' is not a TaskGraph vertex", i, json_string_value(t));
    x->tname = tp_graph_vertex(c->tg, (uint32_t)x->task)->id;
    x->dev = -1;
    tp_status s;
    if (x->kind != K_INPUT) {
        uint64_t d;
        if (!get_u64(json_object_get(j, "device"), &d))
            return unusable(c, "vertex %2$lld (%1$s): needs an integer 'device'", x->tname, (long long)i);
        if ((s = device_ref(c, d, &x->dev, i, "device", x->tname))) return s;
    }
    if ((s = parse_reg(c, json_object_get(j, "writes"), &x->w, i, "writes"))) return s;
    json_t *rs = json_object_get(j, "reads"), *ds = json_object_get(j, "deps");
    if (!json_is_array(rs) || !json_is_array(ds))
        return unusable(c, "vertex %2$lld (%1$s): 'reads' and 'deps' must be arrays", x->tname, (long long)i);
    if (json_array_size(rs) >= UINT32_MAX || json_array_size(ds) >= UINT32_MAX)
        return unusable(c, "vertex %2$lld (%1$s): more than 2^32-2 reads or deps", x->tname, (long long)i);
    x->nreads = (uint32_t)json_array_size(rs);
    x->ndeps = (uint32_t)json_array_size(ds);
    x->from = malloc((x->nreads + (size_t)1) * sizeof *x->from);
    x->rr = malloc((x->nreads + (size_t)1) * sizeof *x->rr);
    x->deps = malloc((x->ndeps + (size_t)1) * sizeof *x->deps);
    if (!x->from || !x->rr || !x->deps) return tp__fail(c->err, TP_ERR_NOMEM, "out of memory");
    for (uint32_t r = 0; r < x->nreads; r++) {
        json_t *jr = json_array_get(rs, r);
        uint64_t fr;
        if (!json_is_object(jr) || !get_u64(json_object_get(jr, "from"), &fr))
            return unusable(c, "vertex %2$lld (%1$s): each read needs an integer 'from'", x->tname, (long long)i);
        x->from[r] = vertex_ref(fr);
        if ((s = parse_reg(c, jr, &x->rr[r], i, "reads"))) return s;
    }
    for (uint64_t r = 0, prev = 0; r < x->ndeps; r++) {
        uint64_t dd;
        if (!get_u64(json_array_get(ds, r), &dd))
            return unusable(c, "vertex %2$lld (%1$s): 'deps' must hold vertex ids", x->tname, (long long)i);
        x->deps[r] = vertex_ref(dd);
        /* the format's rule, which the plan readers hold too; on the ids as written (vertex_ref
         * clamps those past 2^32, which are then refused as missing) */
        if (r && dd <= prev)
            return unusable(c, "vertex %2$lld (%1$s): 'deps' must be increasing vertex ids, without repeats", x->tname, (long long)i);
        prev = dd;
    }
    x->inplace = -1;
    json_t *ip = json_object_get(j, "inplace");
    if (ip) {
        uint64_t kk;
        if (!get_u64(ip, &kk))
            return unusable(c, "vertex %2$lld (%1$s): 'inplace' must be a non-negative integer (a read index)", x->tname,
                            (long long)i);
        if (x->kind != K_KERNEL && x->kind != K_ACCUMULATE)
            return VIOL("vertex %zu (%s %s): only a kernel may write in place (or an accumulate, into its read 0)", i, kname[x->kind],
                        x->tname);
        if (kk >= x->nreads)
            return VIOL("vertex %zu (kernel %s): 'inplace' is %llu, it has %u reads", i, x->tname, (unsigned long long)kk, x->nreads);
        x->inplace = (int)kk;
    }
    x->group = -1;
    json_t *gr = json_object_get(j, "group");
    if (gr) {
        uint64_t gg;
        if (!get_u64(gr, &gg)) return unusable(c, "vertex %2$lld (%1$s): 'group' must be a non-negative integer", x->tname, (long long)i);
        if (x->kind != K_ACCUMULATE && x->kind != K_JOIN)
            return VIOL("vertex %zu (%s %s): has a 'group'; only accumulate and join vertices do", i, kname[x->kind], x->tname);
        x->group = vertex_ref(gg);
    } else if (x->kind == K_ACCUMULATE || x->kind == K_JOIN) {
        return VIOL("vertex %zu (%s %s): has no 'group'", i, kname[x->kind], x->tname);
    }
    if (x->kind == K_ACCUMULATE && x->inplace != 0)
        return VIOL("vertex %zu (accumulate %s): must add into the region of its read 0 (\"inplace\": 0)", i, x->tname);
    return TP_OK;
}

/* what parse_vertex could not check before the whole file was read: devices named before
 * "devices" came, and vertex numbers against the number of vertices */
static tp_status check_refs(V *c)
{
    for (size_t i = 0; i < c->n; i++) {
        const vx *x = &c->v[i];
        if (x->dev >= c->ndev) return VIOL("vertex %zu (%s): device %d out of range", i, x->tname, x->dev);
        if (x->w.space >= c->ndev)
            return VIOL("vertex %zu: writes names device %d, the MemGraph has %d", i, x->w.space, c->ndev);
        for (uint32_t r = 0; r < x->nreads; r++) {
            if (x->rr[r].space >= c->ndev)
                return VIOL("vertex %zu: reads names device %d, the MemGraph has %d", i, x->rr[r].space, c->ndev);
            if (x->from[r] >= c->n)
                return VIOL("vertex %zu (%s): read %u is from vertex %u, which does not exist", i, x->tname, r, x->from[r]);
        }
        for (uint32_t r = 0; r < x->ndeps; r++)
            if (x->deps[r] >= c->n)
                return VIOL("vertex %zu (%s): dependency on vertex %u, which does not exist", i, x->tname, x->deps[r]);
        if (x->group >= (int64_t)c->n)
            return VIOL("vertex %zu (%s %s): group %lld, past the number of vertices", i, kname[x->kind], x->tname,
                        (long long)x->group);
    }
    return TP_OK;
}

/* a TaskGraph `sum` kernel with "attrs": {"accumulate": true} (the only kind sum-into may lower) */
static int marked_sum(const tp_vertex *t)
{
    if (t->kind != TP_V_KERNEL || strcmp(t->op, "sum") || !t->attrs_json) return 0;
    json_t *a = json_loads(t->attrs_json, 0, NULL);
    int m = a && json_is_true(json_object_get(a, "accumulate"));
    json_decref(a);
    return m;
}

/* ---- reading: a pull reader over the file; each vertex (and each element of "outputs" and
 * "kept") becomes a small jansson tree of its own, parsed and freed one at a time ---- */

static tp_status pull_elems(V *c, tp__jp *jp, elems *e)
{
    e->present = 1;
    tp__jpt t = tp__jp_peek(jp);
    if (t == TP__JP_ERROR) return tp__jp_status(c->err);
    if (t != TP__JP_ARRAY) {
        e->bad = 1;
        return tp__jp_skip(jp) ? tp__jp_status(c->err) : TP_OK;
    }
    if (tp__jp_arr_begin(jp)) return tp__jp_status(c->err);
    int x;
    while ((x = tp__jp_arr_next(jp)) == 1) {
        const char *txt;
        size_t len;
        tp__jp_record_start(jp);
        tp_status st = tp__jp_skip(jp);
        if (tp__jp_record_stop(jp, &txt, &len) || st) return tp__jp_status(c->err);
        if (!TP__GROW(e->off, e->offcap, e->n + 1) || !TP__GROW(e->text, e->cap, e->len + len + 1))
            return tp__fail(c->err, TP_ERR_NOMEM, "out of memory");
        e->off[e->n++] = e->len;
        memcpy(e->text + e->len, txt, len);
        e->text[e->len + len] = '\0';
        e->len += len + 1;
    }
    return x < 0 ? tp__jp_status(c->err) : TP_OK;
}

/* element k as a tree (the caller frees it), NULL when out of memory */
static json_t *elem_tree(const elems *e, size_t k)
{
    size_t end = k + 1 < e->n ? e->off[k + 1] : e->len;
    json_error_t je;
    return json_loadb(e->text + e->off[k], end - e->off[k] - 1, JSON_REJECT_DUPLICATES, &je);
}

static void elems_free(elems *e)
{
    free(e->text);
    free(e->off);
}

static tp_status pull_vertices(V *c, tp__jp *jp)
{
    tp__jpt t = tp__jp_peek(jp);
    if (t == TP__JP_ERROR) return tp__jp_status(c->err);
    if (t != TP__JP_ARRAY) return tp__jp_skip(jp) ? tp__jp_status(c->err) : unusable(c, "field 'vertices' must be an array%s", "", 0);
    if (tp__jp_arr_begin(jp)) return tp__jp_status(c->err);
    int x;
    while ((x = tp__jp_arr_next(jp)) == 1) {
        if (c->n >= UINT32_MAX - 1) return unusable(c, "more than 2^32-2 vertices%s", "", 0);
        if (!TP__GROW(c->v, c->vcap, c->n + 2)) return tp__fail(c->err, TP_ERR_NOMEM, "out of memory");
        memset(&c->v[c->n], 0, sizeof c->v[c->n]);
        json_t *j;
        tp_status s = tp__jp_tree(jp, &j);
        if (s) return s;
        c->n++; /* counted now, so its arrays are freed whatever parse_vertex leaves */
        s = parse_vertex(c, j, c->n - 1);
        json_decref(j);
        if (s) return s;
    }
    return x < 0 ? tp__jp_status(c->err) : TP_OK;
}

static tp_status read_memgraph(V *c, tp__jp *jp)
{
    tp__jpt t = tp__jp_peek(jp);
    if (t == TP__JP_ERROR) return tp__jp_status(c->err);
    if (t != TP__JP_OBJECT) return tp__jp_skip(jp) ? tp__jp_status(c->err) : unusable(c, "top level must be an object%s", "", 0);
    if (tp__jp_obj_begin(jp)) return tp__jp_status(c->err);
    int have_format = 0, have_vertices = 0, x;
    const char *k;
    tp_status s = TP_OK;
    json_t *j = NULL;
    while ((x = tp__jp_obj_key(jp, &k)) == 1) {
        if (!strcmp(k, "format")) {
            if (!(s = tp__jp_tree(jp, &j)) && (!json_is_string(j) || strcmp(json_string_value(j), "turnip.memgraph/1")))
                s = unusable(c, "field 'format' must be \"turnip.memgraph/1\"%s", "", 0);
            have_format = 1;
        } else if (!strcmp(k, "devices")) {
            if (!(s = tp__jp_tree(jp, &j))) s = parse_devices(c, j);
        } else if (!strcmp(k, "host_bytes")) {
            if (!(s = tp__jp_tree(jp, &j)) && !get_u64(j, &c->host))
                s = unusable(c, "field 'host_bytes' must be a non-negative integer%s", "", 0);
            c->have_host = 1;
        } else if (!strcmp(k, "vertices")) {
            s = pull_vertices(c, jp);
            have_vertices = 1;
        } else if (!strcmp(k, "outputs")) {
            s = pull_elems(c, jp, &c->outs);
        } else if (!strcmp(k, "kept")) {
            s = pull_elems(c, jp, &c->kept);
        } else if (tp__jp_skip(jp)) {
            s = tp__jp_status(c->err);
        }
        json_decref(j);
        j = NULL;
        if (s) return s;
    }
    if (x < 0 || tp__jp_finish(jp)) return tp__jp_status(c->err);
    if (!have_format) return unusable(c, "field 'format' must be \"turnip.memgraph/1\"%s", "", 0);
    if (!c->have_devices) return unusable(c, "field 'devices' must be an array%s", "", 0);
    if (!c->have_host) return unusable(c, "field 'host_bytes' must be a non-negative integer%s", "", 0);
    if (!have_vertices) return unusable(c, "field 'vertices' must be an array%s", "", 0);
    return TP_OK;
}

static int same_reg(const reg *a, const reg *b)
{
    return a->space == b->space && a->off == b->off && a->bytes == b->bytes;
}

static int has_dep(const vx *x, uint32_t d)
{
    return bsearch(&d, x->deps, x->ndeps, sizeof d, cmp_u32) != NULL;
}

static tp_status check_form(V *c)
{
    char b1[96], b2[96];
    for (size_t i = 0; i < c->n; i++) {
        vx *x = &c->v[i];
        uint64_t lim = x->w.space < 0 ? c->host : c->cap[x->w.space];
        if (!x->w.bytes) return VIOL("vertex %zu (%s %s): writes 0 bytes", i, kname[x->kind], x->tname);
        if (x->w.off > lim || x->w.bytes > lim - x->w.off)
            return VIOL("vertex %zu (%s %s): writes %s, past the end of %s (%llu bytes)", i, kname[x->kind], x->tname,
                        rname(&x->w, b1, sizeof b1), x->w.space < 0 ? "host memory" : "the device",
                        (unsigned long long)lim);
        for (uint32_t r = 0; r < x->nreads; r++) {
            const vx *p = &c->v[x->from[r]];
            if (!same_reg(&x->rr[r], &p->w))
                return VIOL("vertex %zu (%s %s): read %u of %s is not the region vertex %u wrote (%s)", i, kname[x->kind],
                            x->tname, r, rname(&x->rr[r], b1, sizeof b1), x->from[r], rname(&p->w, b2, sizeof b2));
            if (!has_dep(x, x->from[r]))
                return VIOL("vertex %zu (%s %s): reads from vertex %u but does not list it in deps", i, kname[x->kind],
                            x->tname, x->from[r]);
        }
        if (x->inplace >= 0 && !same_reg(&x->w, &x->rr[x->inplace]))
            return VIOL("vertex %zu (%s %s): writes %s in place of read %d, which is %s; an in-place write is exactly that region",
                        i, kname[x->kind], x->tname, rname(&x->w, b1, sizeof b1), x->inplace, rname(&x->rr[x->inplace], b2, sizeof b2));
    }
    return TP_OK;
}

static tp_status check_tasks(V *c)
{
    uint32_t nt = tp_graph_size(c->tg);
    uint32_t *seen = calloc(4 * (size_t)nt + 1, sizeof *seen), *rseen = seen + nt; /* rseen: resident vertices */
    const uint64_t hres = tp_graph_host_reserved(c->tg); /* host bytes [0, hres) are the caller's */
    uint32_t *lseen = rseen + nt; /* loads (reloads) of a "load" resident input into its declared region */
    uint32_t *jseen = lseen + nt; /* joins: a sum lowered to a group */
    if (!seen) return tp__fail(c->err, TP_ERR_NOMEM, "out of memory");
    tp_status s = TP_OK;
    for (size_t i = 0; i < c->n && !s; i++) {
        vx *x = &c->v[i];
        const tp_vertex *t = tp_graph_vertex(c->tg, (uint32_t)x->task);
        uint32_t want_reads = 0;
        int want_space = x->dev; /* region the vertex must write */
        int tkind = x->kind == K_INPUT || x->kind == K_RESIDENT ? TP_V_INPUT
                    : x->kind == K_KERNEL                       ? TP_V_KERNEL
                    : x->kind == K_TRANSFER                     ? TP_V_TRANSFER
                    : x->kind == K_ACCUMULATE || x->kind == K_JOIN ? TP_V_KERNEL
                                                                : -1;
        if (tkind >= 0 && (int)t->kind != tkind) {
            s = VIOL("vertex %zu: a %s vertex for task '%s', which is not a TaskGraph %s", i, kname[x->kind], x->tname, tkname[tkind]);
            break;
        }
        if ((x->kind == K_ACCUMULATE || x->kind == K_JOIN) && !marked_sum(t)) {
            s = VIOL("vertex %zu (%s %s): task '%s' is not a sum marked \"accumulate\": true", i, kname[x->kind], x->tname, x->tname);
            break;
        }
        if (x->kind == K_JOIN && jseen[x->task]++) {
            s = VIOL("task '%s' is the join of more than one group (again at vertex %zu)", x->tname, i);
            break;
        }
        if (tkind >= 0 && x->kind != K_ACCUMULATE && x->kind != K_JOIN && (x->kind == K_RESIDENT ? rseen : seen)[x->task]++) {
            s = VIOL("task '%s' appears as %s more than once (again at vertex %zu)", x->tname, kname[x->kind], i);
            break;
        }
        uint64_t roff = 0;
        int hcopy = 1;
        int resident = t->kind == TP_V_INPUT && tp_graph_resident(c->tg, (uint32_t)x->task, &roff, &hcopy);
        if (x->kind == K_RESIDENT && !resident) {
            s = VIOL("vertex %zu (resident %s): the TaskGraph does not declare input '%s' resident", i, x->tname, x->tname);
            break;
        }
        if (x->kind == K_INPUT && resident && !hcopy) {
            s = VIOL("vertex %zu (input %s): the TaskGraph declares '%s' resident with no host copy (host_copy false); it has no input vertex",
                     i, x->tname, x->tname);
            break;
        }
        if (x->kind == K_RESIDENT && x->dev != t->device) {
            s = VIOL("vertex %zu (resident %s): on device %d, but the input lives on device %d", i, x->tname, x->dev, t->device);
            break;
        }
        if (x->kind == K_RESIDENT && x->ndeps) {
            s = VIOL("vertex %zu (resident %s): has %u deps; a resident value is there when the plan starts and has none", i,
                     x->tname, x->ndeps);
            break;
        }
        if (x->kind == K_KERNEL && x->inplace >= 0 && tp_graph_inplace(c->tg, (uint32_t)x->task) != x->inplace) {
            int k = tp_graph_inplace(c->tg, (uint32_t)x->task);
            if (k < 0)
                s = VIOL("vertex %zu (kernel %s): writes in place of read %d, but the TaskGraph kernel declares no in-place argument",
                         i, x->tname, x->inplace);
            else
                s = VIOL("vertex %zu (kernel %s): writes in place of read %d, but the TaskGraph kernel declares argument %d", i,
                         x->tname, x->inplace, k);
            break;
        }
        if (x->kind == K_INPUT || x->kind == K_OFFLOAD) want_space = -1;
        if ((x->kind == K_KERNEL || x->kind == K_TRANSFER || x->kind == K_ACCUMULATE || x->kind == K_JOIN) && x->dev != t->device) {
            s = VIOL("vertex %zu (%s %s): runs on device %d, the TaskGraph puts it on device %d", i, kname[x->kind], x->tname, x->dev, t->device);
            break;
        }
        if ((x->kind == K_OFFLOAD || x->kind == K_RELOAD) && x->dev != t->device) {
            s = VIOL("vertex %zu (%s %s): moves the value to/from device %d, but it lives on device %d", i, kname[x->kind], x->tname, x->dev, t->device);
            break;
        }
        if (x->w.space != want_space) {
            s = VIOL("vertex %zu (%s %s): writes %s memory, should write %s", i, kname[x->kind], x->tname,
                     x->w.space < 0 ? "host" : "device", want_space < 0 ? "host" : "its device's");
            break;
        }
        if (x->w.bytes != t->bytes) {
            s = VIOL("vertex %zu (%s %s): writes %llu bytes, the value has %llu", i, kname[x->kind], x->tname,
                     (unsigned long long)x->w.bytes, (unsigned long long)t->bytes);
            break;
        }
        if (resident && x->kind == K_RELOAD && (tp_graph_resident_flags(c->tg, (uint32_t)x->task) & TP_RESIDENT_LOAD) &&
            x->w.off == roff)
            lseen[x->task]++;
        if (x->kind == K_RESIDENT && (tp_graph_resident_flags(c->tg, (uint32_t)x->task) & TP_RESIDENT_LOAD)) {
            s = VIOL("vertex %zu (resident %s): the TaskGraph declares it 'load' (not on the device yet); it must be loaded, not resident",
                     i, x->tname);
            break;
        }
        uint64_t hoff = 0;
        int hfixed = t->kind == TP_V_INPUT && tp_graph_host(c->tg, (uint32_t)x->task, &hoff);
        if (x->kind == K_INPUT && hfixed && x->w.off != hoff) {
            s = VIOL("vertex %zu (input %s): its host copy is at offset %llu, the TaskGraph places it at %llu", i, x->tname,
                     (unsigned long long)x->w.off, (unsigned long long)hoff);
            break;
        }
        if (x->w.space < 0 && !(x->kind == K_INPUT && hfixed) && x->w.off < hres) {
            s = VIOL("vertex %zu (%s %s): writes host offset %llu, inside the host bytes [0, %llu) the TaskGraph reserves for the "
                     "caller", i, kname[x->kind], x->tname, (unsigned long long)x->w.off, (unsigned long long)hres);
            break;
        }
        if (x->kind == K_RESIDENT && x->w.off != roff) {
            s = VIOL("vertex %zu (resident %s): writes offset %llu, the TaskGraph declares it resident at offset %llu", i, x->tname,
                     (unsigned long long)x->w.off, (unsigned long long)roff);
            break;
        }
        switch (x->kind) {
        case K_INPUT:
        case K_RESIDENT:
        case K_JOIN: want_reads = 0; break;
        case K_KERNEL: want_reads = t->ninputs; break;
        case K_ACCUMULATE: want_reads = 2; break;
        default: want_reads = 1; break;
        }
        if (x->nreads != want_reads) {
            s = VIOL("vertex %zu (%s %s): has %u reads, should have %u", i, kname[x->kind], x->tname, x->nreads, want_reads);
            break;
        }
        for (uint32_t r = 0; r < x->nreads && !s; r++) {
            const vx *p = &c->v[x->from[r]];
            const char *want_task = x->kind == K_KERNEL || x->kind == K_TRANSFER ? tp_graph_vertex(c->tg, t->inputs[r])->id : x->tname;
            if (x->kind == K_ACCUMULATE) { /* the init or a partial: one of the sum's inputs (which: check_groups) */
                want_task = p->tname;
                int found = 0;
                for (uint32_t q = 0; q < t->ninputs; q++) found |= !strcmp(tp_graph_vertex(c->tg, t->inputs[q])->id, p->tname);
                if (!found) {
                    s = VIOL("vertex %zu (accumulate %s): read %u is from vertex %u, which holds '%s', not an input of the sum", i,
                             x->tname, r, x->from[r], p->tname);
                    break;
                }
            }
            int want_rs = x->kind == K_RELOAD ? -1 : x->kind == K_TRANSFER ? tp_graph_vertex(c->tg, t->inputs[0])->device : x->dev;
            if (strcmp(p->tname, want_task))
                s = VIOL("vertex %zu (%s %s): read %u is from vertex %u, which holds '%s', not '%s'", i, kname[x->kind], x->tname,
                         r, x->from[r], p->tname, want_task);
            else if (x->rr[r].space != want_rs)
                s = VIOL("vertex %zu (%s %s): read %u is in %s memory, should be in %s", i, kname[x->kind], x->tname, r,
                         x->rr[r].space < 0 ? "host" : "device", want_rs < 0 ? "host" : "device");
            else if (x->rr[r].space >= 0 && x->rr[r].space != want_rs)
                s = VIOL("vertex %zu (%s %s): read %u is on device %d, should be on device %d", i, kname[x->kind], x->tname, r,
                         x->rr[r].space, want_rs);
        }
    }
    for (uint32_t t = 0; t < nt && !s; t++) {
        const tp_vertex *tv = tp_graph_vertex(c->tg, t);
        if (tv->kind != TP_V_INPUT && !seen[t] && !jseen[t])
            s = VIOL("TaskGraph %s '%s' is missing from the MemGraph", tv->kind == TP_V_KERNEL ? "kernel" : "transfer", tv->id);
        else if (seen[t] && jseen[t])
            s = VIOL("TaskGraph kernel '%s' appears both as a kernel and as an accumulate group", tv->id);
        else if (tv->kind == TP_V_INPUT && (tp_graph_resident_flags(c->tg, t) & TP_RESIDENT_LOAD)) {
            if (!lseen[t])
                s = VIOL("TaskGraph input '%s' is declared resident with 'load', but no reload writes its declared region", tv->id);
        } else if (tv->kind == TP_V_INPUT && !rseen[t] && tp_graph_resident(c->tg, t, NULL, NULL))
            s = VIOL("TaskGraph input '%s' is declared resident, but the MemGraph has no resident vertex for it", tv->id);
    }
    free(seen);
    return s;
}

static tp_status topo(V *c)
{
    size_t n = c->n;
    uint32_t *indeg = calloc(n + 1, sizeof *indeg), *off = calloc(n + 2, sizeof *off), *succ, *fill;
    size_t ne = 0;
    for (size_t i = 0; i < n; i++) ne += c->v[i].ndeps;
    succ = malloc((ne + 1) * sizeof *succ);
    fill = malloc((n + 1) * sizeof *fill);
    c->rank = malloc((n + 1) * sizeof *c->rank);
    c->order = malloc((n + 1) * sizeof *c->order);
    if (!indeg || !off || !succ || !fill || !c->rank || !c->order) {
        free(indeg);
        free(off);
        free(succ);
        free(fill);
        return tp__fail(c->err, TP_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < c->v[i].ndeps; k++) off[c->v[i].deps[k] + 1]++;
    for (size_t i = 0; i < n; i++) off[i + 1] += off[i];
    for (size_t i = 0; i < n; i++) fill[i] = off[i];
    for (size_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < c->v[i].ndeps; k++) {
            uint32_t d = c->v[i].deps[k];
            succ[fill[d]++] = (uint32_t)i;
            indeg[i]++;
        }
    size_t qh = 0, qt = 0;
    for (size_t i = 0; i < n; i++)
        if (!indeg[i]) c->order[qt++] = (uint32_t)i;
    while (qh < qt) {
        uint32_t u = c->order[qh];
        c->rank[u] = (uint32_t)qh++;
        for (uint32_t k = off[u]; k < fill[u]; k++)
            if (--indeg[succ[k]] == 0) c->order[qt++] = succ[k];
    }
    tp_status s = TP_OK;
    if (qt < n) {
        size_t bad = 0;
        while (!indeg[bad]) bad++;
        s = VIOL("the MemGraph has a cycle through vertex %zu (%s %s)", bad, kname[c->v[bad].kind], c->v[bad].tname);
    }
    free(indeg);
    free(off);
    free(succ);
    free(fill);
    return s;
}

/* does a happen before b (a path a -> ... -> b)? Breadth first from b, back along the deps and
 * never below a's rank: the paths a plan makes are short (a writer's readers depend on it, and
 * the next writer on them), and breadth first finds them after visiting what lies that close
 * to b. Depth first visited b's whole ancestry above a's rank first when its path went through
 * b's last dep: quadratic in the vertices over a plan's overwrites (about 150 s for a 7x10^5-vertex
 * plan that reuses memory freed long before). */
static int before(V *c, uint32_t a, uint32_t b)
{
    if (c->rank[a] >= c->rank[b]) return 0;
    if (has_dep(&c->v[b], a)) return 1;
    c->stamp++;
    size_t head = 0, tail = 0; /* each vertex enters once (mark) */
    c->queue[tail++] = b;
    c->mark[b] = c->stamp;
    while (head < tail) {
        const vx *x = &c->v[c->queue[head++]];
        for (uint32_t k = 0; k < x->ndeps; k++) {
            uint32_t d = x->deps[k];
            if (d == a) return 1;
            if (c->rank[d] <= c->rank[a] || c->mark[d] == c->stamp) continue;
            c->mark[d] = c->stamp;
            c->queue[tail++] = d;
        }
    }
    return 0;
}

/* first segment index whose end is past a */
static size_t imap_lower(const imap *m, uint64_t a)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->s[mid].b <= a) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* sets [a,b) to writer w; calls check for each previous writer of overlapped bytes */
static tp_status imap_write(V *c, imap *m, uint64_t a, uint64_t b, uint32_t w, tp_status (*check)(V *, uint32_t, uint32_t, uint64_t, uint64_t))
{
    size_t i = imap_lower(m, a), j = i;
    tp_status s = TP_OK;
    while (j < m->n && m->s[j].a < b) {
        uint64_t oa = m->s[j].a > a ? m->s[j].a : a, ob = m->s[j].b < b ? m->s[j].b : b;
        if ((s = check(c, m->s[j].writer, w, oa, ob))) return s;
        j++;
    }
    /* segments i..j-1 overlap; keep their outside parts */
    seg left = {0, 0, 0}, right = {0, 0, 0};
    int hl = 0, hr = 0;
    if (i < j && m->s[i].a < a) {
        left = m->s[i];
        left.b = a;
        hl = 1;
    }
    if (i < j && m->s[j - 1].b > b) {
        right = m->s[j - 1];
        right.a = b;
        hr = 1;
    }
    size_t newn = m->n - (j - i) + 1 + (size_t)hl + (size_t)hr;
    if (!TP__GROW(m->s, m->cap, newn + 1)) return tp__fail(c->err, TP_ERR_NOMEM, "out of memory");
    size_t ins = (size_t)hl + 1 + (size_t)hr;
    memmove(m->s + i + ins, m->s + j, (m->n - j) * sizeof *m->s);
    size_t k = i;
    if (hl) m->s[k++] = left;
    m->s[k++] = (seg){a, b, w};
    if (hr) m->s[k++] = right;
    m->n = newn;
    return TP_OK;
}

static tp_status check_overwrite(V *c, uint32_t p, uint32_t w, uint64_t oa, uint64_t ob)
{
    char b1[96];
    const vx *P = &c->v[p], *W = &c->v[w];
    reg r = {W->w.space, oa, ob - oa};
    if (W->kind == K_ACCUMULATE || W->kind == K_JOIN) { /* groups: check_groups made their region one */
        int member = P->kind == K_ACCUMULATE && P->group == W->group;
        if (W->kind == K_JOIN && !member)
            return VIOL("race: vertex %u (join %s, group %lld) closes %s, last written by vertex %u (%s %s), not by an accumulate of its group",
                        w, W->tname, (long long)W->group, rname(&r, b1, sizeof b1), p, kname[P->kind], P->tname);
        if (member) return TP_OK; /* members add one at a time under their group's lock, in any order */
        if (p != c->ginit[W->group])
            return VIOL("race: vertex %u (accumulate %s, group %lld) adds into %s, last written by vertex %u (%s %s), not by its group's init (vertex %u)",
                        w, W->tname, (long long)W->group, rname(&r, b1, sizeof b1), p, kname[P->kind], P->tname, c->ginit[W->group]);
        return TP_OK; /* the init's value, updated in place; its other readers run before every member (check_groups) */
    }
    if (P->kind == K_ACCUMULATE)
        return VIOL("race: vertex %u (%s %s) writes %s, where group %lld (%s) may still be adding (last written by accumulate vertex %u): "
                    "it must come after the group's join (vertex %u) and its readers",
                    w, kname[W->kind], W->tname, rname(&r, b1, sizeof b1), (long long)P->group, P->tname, p, c->gjoin[P->group]);
    if (!before(c, p, w))
        return VIOL("race: vertex %u (%s %s) and vertex %u (%s %s) both write %s and neither is ordered before the other",
                    p, kname[P->kind], P->tname, w, kname[W->kind], W->tname, rname(&r, b1, sizeof b1));
    for (uint32_t k = c->rd_off[p]; k < c->rd_off[p + 1]; k++) {
        uint32_t rdr = c->rd[k];
        if (rdr == w && W->inplace >= 0 && W->from[W->inplace] == p) {
            /* the one exception: an in-place kernel replaces the value of its read K */
            for (uint32_t q = 0; q < W->nreads; q++)
                if ((int)q != W->inplace && W->from[q] == p)
                    return VIOL("race: vertex %u (kernel %s) overwrites %s in place of read %d, and also reads it as read %u", w,
                                W->tname, rname(&r, b1, sizeof b1), W->inplace, q);
            continue;
        }
        if (rdr == w)
            return VIOL("race: vertex %u (%s %s) overwrites %s, which it reads from vertex %u", w, kname[W->kind], W->tname,
                        rname(&r, b1, sizeof b1), p);
        if (!before(c, rdr, w))
            return VIOL("race: vertex %u (%s %s) reads the value of vertex %u (%s %s) at %s, but vertex %u (%s %s) may overwrite it first",
                        rdr, kname[c->v[rdr].kind], c->v[rdr].tname, p, kname[P->kind], P->tname, rname(&r, b1, sizeof b1),
                        w, kname[W->kind], W->tname);
    }
    return TP_OK;
}

/* Sum-into groups: per group one join and k-1 accumulates (k: the sum's inputs) sharing task,
 * device and region R; every member's read 0 is the same init, whose value and the members'
 * reads 1 are exactly the sum's inputs; no member depends directly on another of its group
 * (only the lock orders them); the join depends on each member; other readers of the init run
 * before every member; nothing reads from an accumulate (readers of the sum name the join). */
static tp_status check_groups(V *c)
{
    size_t n = c->n;
    int any = 0;
    for (size_t i = 0; i < n; i++) any |= c->v[i].group >= 0;
    if (!any) return TP_OK;
    c->gjoin = malloc((n + 1) * sizeof *c->gjoin);
    c->ginit = malloc((n + 1) * sizeof *c->ginit);
    c->gm_off = calloc(n + 2, sizeof *c->gm_off);
    c->gm = malloc((n + 1) * sizeof *c->gm);
    uint8_t *used = calloc(n + 1, 1);
    uint32_t *fill = malloc((n + 1) * sizeof *fill);
    tp_status s = TP_OK;
    if (!c->gjoin || !c->ginit || !c->gm_off || !c->gm || !used || !fill) {
        s = tp__fail(c->err, TP_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t g = 0; g < n; g++) c->gjoin[g] = c->ginit[g] = UINT32_MAX;
    for (size_t i = 0; i < n && !s; i++) {
        const vx *x = &c->v[i];
        if (x->kind == K_JOIN && c->gjoin[x->group] != UINT32_MAX)
            s = VIOL("group %lld has two joins (vertices %u and %zu)", (long long)x->group, c->gjoin[x->group], i);
        else if (x->kind == K_JOIN)
            c->gjoin[x->group] = (uint32_t)i;
        else if (x->kind == K_ACCUMULATE)
            c->gm_off[x->group + 1]++;
    }
    for (size_t g = 0; g < n; g++) c->gm_off[g + 1] += c->gm_off[g];
    memcpy(fill, c->gm_off, n * sizeof *fill);
    for (size_t i = 0; i < n; i++)
        if (c->v[i].kind == K_ACCUMULATE) c->gm[fill[c->v[i].group]++] = (uint32_t)i;
    for (size_t g = 0; g < n && !s; g++) {
        uint32_t nm = c->gm_off[g + 1] - c->gm_off[g], *gm = c->gm + c->gm_off[g], J = c->gjoin[g];
        if (!nm && J == UINT32_MAX) continue;
        if (J == UINT32_MAX) {
            s = VIOL("group %zu (%s) has no join", g, c->v[gm[0]].tname);
            break;
        }
        const vx *X = &c->v[J];
        if (!nm) {
            s = VIOL("group %zu (join vertex %u, %s) has no accumulate", g, J, X->tname);
            break;
        }
        const tp_vertex *t = tp_graph_vertex(c->tg, (uint32_t)X->task);
        uint32_t I = c->v[gm[0]].from[0];
        c->ginit[g] = I;
        char b1[96], b2[96];
        for (uint32_t j = 0; j < nm && !s; j++) {
            const vx *m = &c->v[gm[j]];
            if (m->task != X->task || m->dev != X->dev || !same_reg(&m->w, &X->w))
                s = VIOL("vertex %u (accumulate %s, device %d, writes %s) and its group's join, vertex %u (%s, device %d, writes %s), "
                         "differ in task, device or region",
                         gm[j], m->tname, m->dev, rname(&m->w, b1, sizeof b1), J, X->tname, X->dev, rname(&X->w, b2, sizeof b2));
            else if (m->from[0] != I)
                s = VIOL("vertex %u (accumulate %s, group %zu) adds into the value of vertex %u, vertex %u into that of vertex %u: a group has one init",
                         gm[j], m->tname, g, m->from[0], gm[0], I);
            else if (!has_dep(X, gm[j]))
                s = VIOL("join vertex %u (%s, group %zu) does not depend on its accumulate vertex %u", J, X->tname, g, gm[j]);
            for (uint32_t k = 0; k < m->ndeps && !s; k++) {
                const vx *d = &c->v[m->deps[k]];
                if (d->kind == K_ACCUMULATE && d->group == (int64_t)g)
                    s = VIOL("vertex %u and vertex %u (accumulates of group %zu, %s) are ordered by an edge; members of a group are "
                             "ordered only by its lock",
                             m->deps[k], gm[j], g, m->tname);
            }
        }
        if (s) break;
        if (c->v[I].kind == K_ACCUMULATE) {
            s = VIOL("group %zu (%s): its init, vertex %u, is an accumulate", g, X->tname, I);
            break;
        }
        if (nm + 1 != t->ninputs) {
            s = VIOL("group %zu (%s): %u accumulates for a sum of %u inputs (want one fewer)", g, X->tname, nm, t->ninputs);
            break;
        }
        /* the init's value and the partials are exactly the sum's inputs */
        memset(used, 0, t->ninputs);
        for (uint32_t j = 0; j <= nm && !s; j++) {
            uint32_t from = j == 0 ? I : c->v[gm[j - 1]].from[1], q = 0;
            while (q < t->ninputs && (used[q] || (int64_t)t->inputs[q] != c->v[from].task)) q++;
            if (q == t->ninputs)
                s = VIOL("group %zu (%s): %s '%s' (vertex %u) is not an input of the sum, or is added twice", g, X->tname,
                         j ? "adds" : "starts from", c->v[from].tname, from);
            else
                used[q] = 1;
        }
        /* other readers of the init read it before any member adds into it */
        for (uint32_t k = c->rd_off[I]; k < c->rd_off[I + 1] && !s; k++) {
            uint32_t r = c->rd[k];
            if (c->v[r].kind == K_ACCUMULATE && c->v[r].group == (int64_t)g) continue;
            for (uint32_t j = 0; j < nm && !s; j++)
                if (!before(c, r, gm[j]))
                    s = VIOL("race: vertex %u (%s %s) reads the init of group %zu (vertex %u, %s), but accumulate vertex %u may add into it first",
                             r, kname[c->v[r].kind], c->v[r].tname, g, I, c->v[I].tname, gm[j]);
        }
    }
    for (size_t i = 0; i < n && !s; i++)
        for (uint32_t k = 0; k < c->v[i].nreads && !s; k++) {
            const vx *f = &c->v[c->v[i].from[k]];
            if (f->kind == K_ACCUMULATE)
                s = VIOL("vertex %zu (%s %s) reads from vertex %u, an accumulate of group %lld; readers of a group's value name its join (vertex %u)",
                         i, kname[c->v[i].kind], c->v[i].tname, c->v[i].from[k], (long long)f->group, c->gjoin[f->group]);
        }
done:
    free(used);
    free(fill);
    return s;
}

/* readers of every vertex, and the search state of before() */
static tp_status index_readers(V *c)
{
    size_t n = c->n, nr = 0;
    c->rd_off = calloc(n + 2, sizeof *c->rd_off);
    for (size_t i = 0; i < n; i++) nr += c->v[i].nreads;
    c->rd = malloc((nr + 1) * sizeof *c->rd);
    c->mark = calloc(n + 1, sizeof *c->mark);
    c->queue = malloc((n + 1) * sizeof *c->queue); /* before(): each vertex enters once */
    uint32_t *fill = malloc((n + 1) * sizeof *fill);
    if (!c->rd_off || !c->rd || !c->mark || !c->queue || !fill) {
        free(fill);
        return tp__fail(c->err, TP_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < c->v[i].nreads; k++)
            if (!k || c->v[i].from[k] != c->v[i].from[k - 1]) c->rd_off[c->v[i].from[k] + 1]++;
    for (size_t i = 0; i < n; i++) c->rd_off[i + 1] += c->rd_off[i];
    for (size_t i = 0; i < n; i++) fill[i] = c->rd_off[i];
    for (size_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < c->v[i].nreads; k++)
            if (!k || c->v[i].from[k] != c->v[i].from[k - 1]) c->rd[fill[c->v[i].from[k]]++] = (uint32_t)i;
    free(fill);
    return TP_OK;
}

static tp_status check_races(V *c)
{
    size_t n = c->n;
    c->maps = calloc((size_t)c->ndev + 1, sizeof *c->maps);
    if (!c->maps) return tp__fail(c->err, TP_ERR_NOMEM, "out of memory");
    /* a reader listed twice (non-adjacent repeats) is harmless for the checks */
    for (size_t q = 0; q < n; q++) {
        uint32_t w = c->order[q];
        const vx *W = &c->v[w];
        imap *m = &c->maps[W->w.space < 0 ? c->ndev : W->w.space];
        tp_status s = imap_write(c, m, W->w.off, W->w.off + W->w.bytes, w, check_overwrite);
        if (s) return s;
    }
    return TP_OK;
}

typedef struct {
    int dev;
    uint64_t a, b;
    uint32_t task;
    uint32_t last; /* the chain's current vertex, UINT32_MAX before its first write */
    int loads;
} pinreg;

static int pin_cmp(const void *x, const void *y)
{
    const pinreg *p = x, *q = y;
    if (p->dev != q->dev) return p->dev < q->dev ? -1 : 1;
    return p->a < q->a ? -1 : p->a > q->a;
}

/* Pinned regions ("pin"): written only by their own chain (see the top). */
static tp_status check_pinned(V *c)
{
    uint32_t nt = tp_graph_size(c->tg), np = 0;
    for (uint32_t t = 0; t < nt; t++) np += (tp_graph_resident_flags(c->tg, t) & TP_RESIDENT_PIN) != 0;
    if (!np) return TP_OK;
    pinreg *pr = malloc(np * sizeof *pr);
    if (!pr) return tp__fail(c->err, TP_ERR_NOMEM, "out of memory");
    np = 0;
    for (uint32_t t = 0; t < nt; t++) {
        uint64_t off;
        if (!(tp_graph_resident_flags(c->tg, t) & TP_RESIDENT_PIN) || !tp_graph_resident(c->tg, t, &off, NULL)) continue;
        const tp_vertex *tv = tp_graph_vertex(c->tg, t);
        pr[np++] = (pinreg){tv->device, off, off + tv->bytes, t, UINT32_MAX, 0};
    }
    qsort(pr, np, sizeof *pr, pin_cmp);
    tp_status s = TP_OK;
    for (size_t q = 0; q < c->n && !s; q++) {
        uint32_t w = c->order[q];
        const vx *W = &c->v[w];
        if (W->w.space < 0 || !W->w.bytes) continue;
        /* the first pinned region on W's device that ends after W's start */
        size_t lo = 0, hi = np;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (pr[mid].dev < W->w.space || (pr[mid].dev == W->w.space && pr[mid].b <= W->w.off)) lo = mid + 1;
            else hi = mid;
        }
        for (size_t k = lo; k < np && pr[k].dev == W->w.space && pr[k].a < W->w.off + W->w.bytes && !s; k++) {
            pinreg *P = &pr[k];
            const char *pn = tp_graph_vertex(c->tg, P->task)->id;
            int exact = W->w.off == P->a && W->w.off + W->w.bytes == P->b;
            int own = exact && W->task == (int64_t)P->task && P->last == UINT32_MAX &&
                      (W->kind == K_RESIDENT || (W->kind == K_RELOAD && !P->loads++));
            int chained = exact && W->kind == K_KERNEL && W->inplace >= 0 && P->last != UINT32_MAX && W->from[W->inplace] == P->last;
            if (own || chained) P->last = w;
            else
                s = VIOL("vertex %u (%s %s) writes bytes of the region of pinned input '%s' (device %d, [%llu, %llu))", w,
                         kname[W->kind], W->tname, pn, P->dev, (unsigned long long)P->a, (unsigned long long)P->b);
        }
    }
    free(pr);
    return s;
}

/* a vertex other than `from` that last wrote bytes of r, or UINT32_MAX (after the sweep) */
static uint32_t other_writer(const V *c, const reg *r, uint32_t from)
{
    const imap *m = &c->maps[r->space < 0 ? c->ndev : r->space];
    for (size_t i = imap_lower(m, r->off); i < m->n && m->s[i].a < r->off + r->bytes; i++)
        if (m->s[i].writer != from) return m->s[i].writer;
    return UINT32_MAX;
}

/* one TaskGraph output `want` (TaskGraph vertex o) against its MemGraph entry `hit` */
static tp_status check_output(V *c, const char *want, uint32_t o, json_t *hit)
{
    char b1[96];
    if (!hit) return VIOL("TaskGraph output '%s' is not in the MemGraph's outputs", want);
    uint64_t from;
    if (!get_u64(json_object_get(hit, "from"), &from) || from >= c->n)
        return VIOL("output '%s': 'from' must name a MemGraph vertex", want);
    reg r = {0, 0, 0};
    tp_status s = parse_reg(c, hit, &r, (size_t)from, "outputs");
    if (s) return s;
    const vx *x = &c->v[from];
    if (strcmp(x->tname, want)) return VIOL("output '%s': vertex %llu holds '%s'", want, (unsigned long long)from, x->tname);
    if (x->kind == K_ACCUMULATE)
        return VIOL("output '%s' names vertex %llu, an accumulate; the value of a group is its join's", want, (unsigned long long)from);
    if (!same_reg(&r, &x->w))
        return VIOL("output '%s': region %s is not what vertex %llu wrote", want, rname(&r, b1, sizeof b1), (unsigned long long)from);
    uint32_t w = other_writer(c, &r, (uint32_t)from);
    if (w != UINT32_MAX)
        return VIOL("output '%s' (vertex %llu) is overwritten by vertex %u (%s %s)", want, (unsigned long long)from, w,
                    kname[c->v[w].kind], c->v[w].tname);
    json_t *kp = json_object_get(hit, "keep");
    if (kp && !json_is_boolean(kp)) return unusable(c, "output '%s': 'keep' must be true or false", want, 0);
    if (json_is_true(kp) && !tp_graph_keep(c->tg, o))
        return VIOL("output '%s' is marked keep, but the TaskGraph does not keep it", want);
    if (json_is_true(kp) && r.space < 0)
        return VIOL("output '%s' is marked keep but is in host memory; a kept value stays on a device", want);
    return TP_OK;
}

static tp_status check_outputs(V *c)
{
    if (!c->outs.present || c->outs.bad) return unusable(c, "field 'outputs' must be an array%s", "", 0);
    /* the MemGraph's entry for each TaskGraph vertex (the last one naming it), found in one
     * pass so a graph with many outputs is not checked in outputs^2 string comparisons */
    uint32_t no = tp_graph_num_outputs(c->tg), nt = tp_graph_size(c->tg);
    size_t *entry = malloc(((size_t)nt + 1) * sizeof *entry);
    if (!entry) return tp__fail(c->err, TP_ERR_NOMEM, "out of memory");
    for (uint32_t t = 0; t < nt; t++) entry[t] = SIZE_MAX;
    tp_status s = TP_OK;
    for (size_t q = 0; q < c->outs.n && !s; q++) {
        json_t *e = elem_tree(&c->outs, q), *t = json_object_get(e, "task");
        int64_t ti = json_is_string(t) ? tp_graph_find(c->tg, json_string_value(t)) : -1;
        if (!e) s = tp__fail(c->err, TP_ERR_NOMEM, "out of memory");
        if (ti >= 0) entry[ti] = q;
        json_decref(e);
    }
    for (uint32_t k = 0; k < no && !s; k++) {
        uint32_t o = tp_graph_outputs(c->tg)[k];
        json_t *hit = entry[o] == SIZE_MAX ? NULL : elem_tree(&c->outs, entry[o]);
        if (entry[o] != SIZE_MAX && !hit) s = tp__fail(c->err, TP_ERR_NOMEM, "out of memory");
        else s = check_output(c, tp_graph_vertex(c->tg, o)->id, o, hit);
        json_decref(hit);
    }
    free(entry);
    return s;
}

/* Every TaskGraph output in "keep" is listed; each entry is a kept task's value, on a device,
 * where its vertex wrote it and nothing wrote since. */
static tp_status check_kept(V *c)
{
    char b1[96], b2[96];
    if (c->kept.bad) return unusable(c, "field 'kept' must be an array%s", "", 0);
    uint32_t nt = tp_graph_size(c->tg);
    uint8_t *listed = calloc((size_t)nt + 1, 1);
    if (!listed) return tp__fail(c->err, TP_ERR_NOMEM, "out of memory");
    tp_status s = TP_OK;
    for (size_t q = 0; q < c->kept.n && !s; q++) {
        json_t *e = elem_tree(&c->kept, q), *t = json_object_get(e, "task");
        if (!e) {
            s = tp__fail(c->err, TP_ERR_NOMEM, "out of memory");
            break;
        }
        if (!json_is_string(t)) {
            json_decref(e);
            s = unusable(c, "kept[%2$lld] must be an object with a string 'task'%1$s", "", (long long)q);
            break;
        }
        const char *name = json_string_value(t);
        int64_t ti = tp_graph_find(c->tg, name);
        uint64_t from;
        reg r = {0, 0, 0};
        if (ti < 0) {
            s = VIOL("kept[%zu]: task '%s' is not a TaskGraph vertex", q, name);
        } else if (!tp_graph_keep(c->tg, (uint32_t)ti)) {
            s = VIOL("kept[%zu]: task '%s' is not in the TaskGraph's 'keep' list", q, name);
        } else if (listed[ti]++) {
            s = VIOL("kept[%zu]: task '%s' is listed twice", q, name);
        } else if (!get_u64(json_object_get(e, "from"), &from) || from >= c->n) {
            s = VIOL("kept[%zu] ('%s'): 'from' must name a MemGraph vertex", q, name);
        } else if (!(s = parse_reg(c, e, &r, (size_t)from, "kept"))) {
            const vx *x = &c->v[from];
            uint32_t w;
            if (r.space < 0)
                s = VIOL("kept[%zu] ('%s'): is in host memory; a kept value stays on a device", q, name);
            else if (strcmp(x->tname, name))
                s = VIOL("kept[%zu] ('%s'): vertex %llu holds '%s'", q, name, (unsigned long long)from, x->tname);
            else if (x->kind == K_ACCUMULATE)
                s = VIOL("kept[%zu] ('%s') names vertex %llu, an accumulate; the value of a group is its join's", q, name,
                         (unsigned long long)from);
            else if (!same_reg(&r, &x->w))
                s = VIOL("kept[%zu] ('%s'): region %s is not what vertex %llu wrote (%s)", q, name, rname(&r, b1, sizeof b1),
                         (unsigned long long)from, rname(&x->w, b2, sizeof b2));
            else if ((w = other_writer(c, &r, (uint32_t)from)) != UINT32_MAX)
                s = VIOL("kept '%s' (vertex %llu) is overwritten by vertex %u (%s %s) before the run ends", name,
                         (unsigned long long)from, w, kname[c->v[w].kind], c->v[w].tname);
        }
        json_decref(e);
    }
    for (uint32_t k = 0; k < tp_graph_num_outputs(c->tg) && !s; k++) {
        uint32_t o = tp_graph_outputs(c->tg)[k];
        if (tp_graph_keep(c->tg, o) && !listed[o])
            s = VIOL("TaskGraph output '%s' is in 'keep', but not in the MemGraph's 'kept'", tp_graph_vertex(c->tg, o)->id);
    }
    for (uint32_t x = 0; x < tp_graph_size(c->tg) && !s; x++) { /* its only copy is the device's */
        int hc = 1;
        if (tp_graph_keep(c->tg, x) && tp_graph_resident(c->tg, x, NULL, &hc) && !hc && !listed[x])
            s = VIOL("input '%s' is kept and has no host copy, but is not in the MemGraph's 'kept' (its value would be lost)",
                     tp_graph_vertex(c->tg, x)->id);
    }
    free(listed);
    return s;
}

/* Reads the MemGraph from jp as a stream (top-level keys in any order), then runs the checks. */
static tp_status verify(V *c, tp__jp *jp)
{
    tp_status s = read_memgraph(c, jp);
    if (s && !jp->failed) { /* a syntax error later in the file is reported first, as a tree parser would */
        tp_status syn = tp__jp_drain(jp);
        if (!syn) syn = tp__jp_finish(jp);
        if (syn) s = syn;
    }
    if (!s) s = check_refs(c);
    if (!s) s = check_form(c);
    if (!s) s = check_tasks(c);
    if (!s) s = topo(c);
    if (!s) s = index_readers(c);
    if (!s) s = check_groups(c);
    if (!s) s = check_races(c);
    if (!s) s = check_pinned(c);
    if (!s) s = check_outputs(c);
    if (!s) s = check_kept(c);
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].from);
        free(c->v[i].rr);
        free(c->v[i].deps);
    }
    if (c->maps)
        for (int d = 0; d <= c->ndev; d++) free(c->maps[d].s);
    free(c->maps);
    free(c->v);
    free(c->cap);
    free(c->rank);
    free(c->order);
    free(c->mark);
    free(c->queue);
    free(c->rd_off);
    free(c->rd);
    free(c->gjoin);
    free(c->ginit);
    free(c->gm_off);
    free(c->gm);
    elems_free(&c->outs);
    elems_free(&c->kept);
    return s;
}

static void init(V *c, const char *name, const tp_graph *tg, tp_error *err)
{
    memset(c, 0, sizeof *c);
    c->name = name ? name : "<memgraph>";
    c->err = err;
    c->tg = tg;
}

tp_status tp_verify_json(const char *text, size_t len, const char *name, const tp_graph *tg, tp_error *err)
{
    V c;
    init(&c, name, tg, err);
    tp__jp jp;
    tp__jp_open_mem(&jp, text, len, c.name, err);
    tp_status s = verify(&c, &jp);
    tp__jp_close(&jp);
    return s;
}

tp_status tp_verify_file(const char *path, const tp_graph *tg, tp_error *err)
{
    V c;
    init(&c, path, tg, err);
    tp__jp jp;
    tp_status s = tp__jp_open_file(&jp, path, err);
    if (s) return s;
    s = verify(&c, &jp);
    tp__jp_close(&jp);
    return s;
}
