/* sumlower.c - sum-into lowering (docs/planner.md "Sum-into"; the paper's Appendix A).
 *
 * A TaskGraph `sum` kernel s = a1 + ... + ak marked "accumulate": true becomes an accumulation
 * group: an init (the vertex whose write puts a1 in a region R), k-1 `accumulate` members that
 * each add one a_i into R, in any order, one at a time (the executor's lock), and a `join`
 * after them all that readers of s name. The gain: each a_i may be freed right after its
 * accumulate instead of all k being live at the sum.
 *
 * Rewrite, plan, convert:
 *   1. rewrite: G2 is g with each lowerable sum replaced by a chain of in-place adds,
 *      acc2 = a1 + a2 in place on a1, acc3 = acc2 + a3 in place on acc2, ..., the last one
 *      standing for s (its id, consumers, outputs, keep). Along the default (dfs) order a_i's
 *      subtree runs right before its add, so a_i dies at once;
 *   2. plan G2 with the planner (tp__plan_graph), the chain's intermediate values held (never
 *      evicted, moved or freed while the group is open: their region is R) and the chain's
 *      in-place reads never used to prune an implied dependency (that edge disappears);
 *   3. convert the plan onto g: the adds become members (reads [init, a_i], in place on read
 *      0), with no edge between members; a join (deps: every member; writes R) is numbered
 *      right after the last member; every read of s names the join, and so does every memory
 *      dependency on the last add of a vertex that writes bytes of R (the region's next
 *      occupant waits for the whole group); dependencies on a member for reusing a_i's region
 *      stay as they are.
 * If G2 is infeasible at the caps (held chain values can fragment a device), g is planned as
 * it is, and the stats say so (sum_into_fallback). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include "plan/plan_internal.h"

static int marked_sum(const tp_vertex *v)
{
    if (v->kind != TP_V_KERNEL || strcmp(v->op, "sum") || !v->attrs_json || !strstr(v->attrs_json, "\"accumulate\"")) return 0;
    json_t *a = json_loads(v->attrs_json, 0, NULL);
    int m = a && json_is_true(json_object_get(a, "accumulate"));
    json_decref(a);
    return m;
}

uint32_t tp__count_marked_sums(const tp_graph *g)
{
    uint32_t n = 0;
    for (uint32_t x = 0; x < tp_graph_size(g); x++) n += (uint32_t)marked_sum(tp_graph_vertex(g, x));
    return n;
}

/* The input of marked sum s that can hold the sum (its region becomes R), or -1 when s is not
 * lowerable: at least 2 inputs, all distinct, each of s's dtype and bytes; s not declared in
 * place; the init read by s alone, not an output, not kept, not resident. */
static int64_t lowerable(const tp_graph *g, uint32_t s, const uint8_t *is_out)
{
    const tp_vertex *v = tp_graph_vertex(g, s);
    if (v->ninputs < 2 || tp_graph_inplace(g, s) >= 0) return -1;
    for (uint32_t k = 0; k < v->ninputs; k++) {
        const tp_vertex *a = tp_graph_vertex(g, v->inputs[k]);
        if (a->bytes != v->bytes || a->dtype != v->dtype) return -1;
        for (uint32_t j = 0; j < k; j++)
            if (v->inputs[j] == v->inputs[k]) return -1;
    }
    for (uint32_t k = 0; k < v->ninputs; k++) {
        uint32_t x = v->inputs[k], nc;
        tp_graph_consumers(g, x, &nc);
        if (nc == 1 && !is_out[x] && !tp_graph_keep(g, x) && !tp_graph_resident(g, x, NULL, NULL)) return k;
    }
    return -1;
}

typedef struct lower {
    const tp_graph *g;
    tp_graph *g2;
    uint32_t n, n2;
    uint32_t *to2;     /* g vertex -> its G2 vertex (a lowered sum: the chain's last add) */
    uint32_t *from2;   /* G2 vertex -> g vertex (a chain add: its sum) */
    uint8_t *hold;     /* G2: chain values that are not the sum's (acc2 .. acc_{k-1}) */
    uint8_t *chain;    /* G2: chain adds (acc2 .. acc_k) */
    int32_t *grp2;     /* G2: group of a chain add, -1 */
    uint32_t ngroups;
    uint32_t *gsum;    /* group -> g's sum vertex */
    uint32_t *gfirst;  /* group -> G2 index of acc2 (a group's adds are consecutive) */
    uint32_t *glen;    /* group -> members (k - 1) */
    uint32_t members;
} lower;

static void lower_free(lower *L)
{
    tp_graph_free(L->g2);
    free(L->to2);
    free(L->from2);
    free(L->hold);
    free(L->chain);
    free(L->grp2);
    free(L->gsum);
    free(L->gfirst);
    free(L->glen);
}

/* one vertex of g into G2 (not a lowered sum), with what it declares for sessions */
static tp_status copy_vertex(lower *L, uint32_t x, tp_error *err)
{
    const tp_vertex *v = tp_graph_vertex(L->g, x);
    uint32_t x2 = 0;
    tp_status s;
    if (v->kind == TP_V_INPUT) {
        s = tp_graph_add_input(L->g2, v->id, v->device, v->dtype, v->ndim, v->ndim >= 0 ? v->shape : NULL, v->bytes, &x2, err);
    } else if (v->kind == TP_V_TRANSFER) {
        s = tp_graph_add_transfer(L->g2, v->id, v->device, L->to2[v->inputs[0]], &x2, err);
    } else {
        uint32_t buf[16], *in = v->ninputs <= 16 ? buf : malloc(v->ninputs * sizeof *in);
        if (!in) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
        for (uint32_t k = 0; k < v->ninputs; k++) in[k] = L->to2[v->inputs[k]];
        s = tp_graph_add_kernel(L->g2, v->id, v->device, v->op, v->ninputs, in, v->dtype, v->ndim, v->ndim >= 0 ? v->shape : NULL,
                                v->bytes, v->attrs_json, v->flops, &x2, err);
        if (in != buf) free(in);
        int k = tp_graph_inplace(L->g, x);
        if (!s && k >= 0) s = tp_graph_set_inplace(L->g2, x2, k, err);
    }
    if (s) return s;
    L->to2[x] = x2;
    uint64_t off;
    int hc = 1;
    if (tp_graph_resident(L->g, x, &off, &hc)) {
        s = tp_graph_set_resident(L->g2, x2, off, hc, err);
        unsigned fl = tp_graph_resident_flags(L->g, x);
        if (!s && fl) s = tp_graph_set_resident_flags(L->g2, x2, fl, err);
    }
    if (!s && tp_graph_host(L->g, x, &off)) s = tp_graph_set_host(L->g2, x2, off, err);
    if (!s && tp_graph_keep(L->g, x)) s = tp_graph_set_keep(L->g2, x2, err);
    return s;
}

/* sum s as its chain of in-place adds, init input `first` first */
static tp_status add_chain(lower *L, uint32_t s, uint32_t first, tp_error *err)
{
    const tp_vertex *v = tp_graph_vertex(L->g, s);
    uint32_t k = v->ninputs, cur = L->to2[v->inputs[first]], grp = L->ngroups++;
    L->gsum[grp] = s;
    L->glen[grp] = k - 1;
    L->members += k - 1;
    char id[512];
    tp_status st = TP_OK;
    uint32_t j = 0;
    for (uint32_t a = 0; a < k && !st; a++) {
        if (a == first) continue;
        int last = ++j == k - 1;
        if (!last) { /* an id of the rewrite only: "s#acc2", made unique against g */
            int n = snprintf(id, sizeof id, "%.400s#acc%u", v->id, j + 1);
            while (tp_graph_find(L->g, id) >= 0 && n + 1 < (int)sizeof id) id[n++] = '#', id[n] = 0;
        }
        uint32_t in[2] = {cur, L->to2[v->inputs[a]]}, x2;
        st = tp_graph_add_kernel(L->g2, last ? v->id : id, v->device, v->op, 2, in, v->dtype, v->ndim, v->ndim >= 0 ? v->shape : NULL,
                                 v->bytes, last ? v->attrs_json : NULL, v->flops / (double)(k - 1), &x2, err);
        if (!st) st = tp_graph_set_inplace(L->g2, x2, 0, err);
        if (st) break;
        if (j == 1) L->gfirst[grp] = x2;
        cur = x2;
    }
    if (st) return st;
    L->to2[s] = cur;
    if (tp_graph_keep(L->g, s)) st = tp_graph_set_keep(L->g2, cur, err);
    return st;
}

/* Builds G2. TP_OK with L->ngroups 0: nothing to lower. */
static tp_status rewrite(lower *L, const tp_graph *g, tp_error *err)
{
    memset(L, 0, sizeof *L);
    L->g = g;
    uint32_t n = L->n = tp_graph_size(g);
    uint8_t *is_out = calloc((size_t)n + 1, 1);
    int64_t *first = malloc(((size_t)n + 1) * sizeof *first);
    uint32_t *ord = malloc(((size_t)n + 1) * sizeof *ord);
    tp_status s = TP_OK;
    if (!is_out || !first || !ord) s = tp__fail(err, TP_ERR_NOMEM, "out of memory");
    uint32_t nlow = 0;
    size_t extra = 0;
    for (uint32_t k = 0; !s && k < tp_graph_num_outputs(g); k++) is_out[tp_graph_outputs(g)[k]] = 1;
    for (uint32_t x = 0; !s && x < n; x++) {
        first[x] = marked_sum(tp_graph_vertex(g, x)) ? lowerable(g, x, is_out) : -1;
        if (first[x] >= 0) {
            nlow++;
            extra += tp_graph_vertex(g, x)->ninputs - 2; /* intermediate adds */
        }
    }
    if (s || !nlow) goto done;
    L->n2 = (uint32_t)(n + extra);
    L->g2 = tp_graph_new(tp_graph_devices(g));
    L->to2 = malloc(((size_t)n + 1) * sizeof *L->to2);
    L->gsum = malloc(((size_t)nlow + 1) * sizeof *L->gsum);
    L->gfirst = malloc(((size_t)nlow + 1) * sizeof *L->gfirst);
    L->glen = malloc(((size_t)nlow + 1) * sizeof *L->glen);
    if (!L->g2 || !L->to2 || !L->gsum || !L->gfirst || !L->glen) {
        s = tp__fail(err, TP_ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((s = tp_graph_set_host_reserved(L->g2, tp_graph_host_reserved(g), err))) goto done;
    /* in g's topological order, smallest index first (the identity for a graph written in
     * topological order): the builder takes inputs added before */
    if ((s = tp_graph_order(g, TP_ORDER_TOPO, ord, err))) goto done;
    for (uint32_t i = 0; i < n && !s; i++) {
        uint32_t x = ord[i];
        s = first[x] >= 0 ? add_chain(L, x, (uint32_t)first[x], err) : copy_vertex(L, x, err);
    }
    for (uint32_t k = 0; k < tp_graph_num_outputs(g) && !s; k++) s = tp_graph_add_output(L->g2, L->to2[tp_graph_outputs(g)[k]], err);
    if (!s) s = tp_graph_finalize(L->g2, err);
    if (s) goto done;
    L->from2 = malloc(((size_t)L->n2 + 1) * sizeof *L->from2);
    L->hold = calloc((size_t)L->n2 + 1, 1);
    L->chain = calloc((size_t)L->n2 + 1, 1);
    L->grp2 = malloc(((size_t)L->n2 + 1) * sizeof *L->grp2);
    if (!L->from2 || !L->hold || !L->chain || !L->grp2) {
        s = tp__fail(err, TP_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (uint32_t x = 0; x < n; x++) L->from2[L->to2[x]] = x;
    for (uint32_t x2 = 0; x2 < L->n2; x2++) L->grp2[x2] = -1;
    for (uint32_t q = 0; q < L->ngroups; q++)
        for (uint32_t j = 0; j < L->glen[q]; j++) {
            uint32_t x2 = L->gfirst[q] + j;
            L->from2[x2] = L->gsum[q];
            L->chain[x2] = 1;
            L->hold[x2] = j + 1 < L->glen[q];
            L->grp2[x2] = (int32_t)q;
        }
done:
    free(is_out);
    free(first);
    free(ord);
    return s;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int overlaps(const tp__mv *a, const tp__mv *b)
{
    return a->space == b->space && (a->space == TP_SPACE_HOST || a->device == b->device) && a->offset < b->offset + b->bytes &&
           b->offset < a->offset + a->bytes;
}

typedef struct conv {
    const lower *L;
    const tp_memgraph *m2;
    int32_t *mgrp;    /* plan vertex -> group of the chain add it is, -1 */
    int32_t *lastof;  /* plan vertex -> group whose last add it is, -1 */
    int32_t *joinat;  /* plan vertex -> group whose join comes right after it, -1 */
    uint32_t *newid;
    uint32_t *jid, *init, *last, *gm_off, *gm; /* per group; gm: members in chain order */
} conv;

/* what a read of plan vertex r names after the conversion */
static uint32_t read_of(const conv *C, uint32_t r)
{
    return C->lastof[r] >= 0 ? C->jid[C->lastof[r]] : C->newid[r];
}

/* tp_memgraph record appends */
static int push_u32(uint32_t **a, size_t *n, size_t *cap, uint32_t x)
{
    if (!TP__GROW(*a, *cap, *n + 1)) return 0;
    (*a)[(*n)++] = x;
    return 1;
}

/* The plan of G2 onto g. TP_ERR_INFEASIBLE (no message) when the plan is not a chain of
 * in-place adds after all: the caller plans g without lowering. */
static tp_status convert(const lower *L, const tp_memgraph *m2, tp_memgraph **out, tp_error *err)
{
    size_t n2 = m2->n, G = L->ngroups;
    conv C0 = {L, m2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL}, *C = &C0;
    C->mgrp = malloc((n2 + 1) * sizeof *C->mgrp);
    C->lastof = malloc((n2 + 1) * sizeof *C->lastof);
    C->joinat = malloc((n2 + 1) * sizeof *C->joinat);
    C->newid = malloc((n2 + 1) * sizeof *C->newid);
    C->jid = malloc((G + 1) * sizeof *C->jid);
    C->init = malloc((G + 1) * sizeof *C->init);
    C->last = malloc((G + 1) * sizeof *C->last);
    C->gm_off = calloc(G + 2, sizeof *C->gm_off);
    C->gm = malloc(((size_t)L->members + 1) * sizeof *C->gm);
    tp_memgraph *mg = calloc(1, sizeof *mg);
    size_t capv = 0, capr = 0, capm = 0;
    tp_status st = TP_OK;
    if (!C->mgrp || !C->lastof || !C->joinat || !C->newid || !C->jid || !C->init || !C->last || !C->gm_off || !C->gm || !mg) {
        st = tp__fail(err, TP_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t q = 0; q < G; q++) C->gm_off[q + 1] = C->gm_off[q] + L->glen[q];
    for (size_t i = 0; i < L->members; i++) C->gm[i] = UINT32_MAX;
    for (size_t i = 0; i < n2; i++) {
        const tp__mv *m = &m2->v[i];
        C->mgrp[i] = C->lastof[i] = C->joinat[i] = -1;
        if (m->kind != TP_M_KERNEL || !L->chain[m->task]) continue;
        int32_t q = L->grp2[m->task];
        uint32_t j = m->task - L->gfirst[q];
        if (m->inplace != 1 || C->gm[C->gm_off[q] + j] != UINT32_MAX) st = TP_ERR_INFEASIBLE; /* not in place: no group */
        C->gm[C->gm_off[q] + j] = (uint32_t)i;
        C->mgrp[i] = q;
    }
    for (size_t i = 0; i < L->members && !st; i++)
        if (C->gm[i] == UINT32_MAX) st = TP_ERR_INFEASIBLE;
    for (size_t q = 0; q < G && !st; q++) {
        const uint32_t *gm = C->gm + C->gm_off[q];
        uint32_t len = L->glen[q], hi = 0;
        C->init[q] = m2->reads[m2->v[gm[0]].reads_off];
        C->last[q] = gm[len - 1];
        C->lastof[gm[len - 1]] = (int32_t)q;
        const tp__mv *R = &m2->v[gm[0]];
        for (uint32_t j = 0; j < len; j++) {
            const tp__mv *m = &m2->v[gm[j]];
            if (m->offset != R->offset || m->bytes != R->bytes || m->device != R->device) st = TP_ERR_INFEASIBLE;
            if (gm[j] > hi) hi = gm[j];
        }
        C->joinat[hi] = (int32_t)q;
    }
    if (st) goto done;
    /* numbering: each join right after its group's highest member */
    if (n2 + G >= UINT32_MAX - 1) goto nomem;
    uint32_t next = 0;
    for (size_t i = 0; i < n2; i++) {
        C->newid[i] = next++;
        if (C->joinat[i] >= 0) C->jid[C->joinat[i]] = next++;
    }
    size_t N = next;
    if (!TP__GROW(mg->v, capv, N + 1)) goto nomem;
    mg->n = N;
    for (size_t i = 0; i < n2 && !st; i++) {
        const tp__mv *m = &m2->v[i];
        tp__mv *o = &mg->v[C->newid[i]];
        *o = *m;
        o->task = L->from2[m->task];
        o->group = -1;
        o->reads_off = (uint32_t)mg->nreads;
        o->mdeps_off = (uint32_t)mg->nmdeps;
        int32_t q = C->mgrp[i];
        if (q >= 0) { /* a member: reads [init, a_i], no edge to another member */
            o->kind = TP_M_ACCUMULATE;
            o->group = q;
            if (!push_u32(&mg->reads, &mg->nreads, &capr, read_of(C, C->init[q])) ||
                !push_u32(&mg->reads, &mg->nreads, &capr, read_of(C, m2->reads[m->reads_off + 1])))
                goto nomem;
        } else {
            for (uint32_t k = 0; k < m->nreads; k++) {
                uint32_t r = m2->reads[m->reads_off + k];
                if (C->mgrp[r] >= 0 && C->lastof[r] < 0) st = TP_ERR_INFEASIBLE; /* a read of an open group's value */
                if (!push_u32(&mg->reads, &mg->nreads, &capr, read_of(C, r))) goto nomem;
            }
        }
        for (uint32_t k = 0; k < m->nmdeps; k++) {
            uint32_t d = m2->mdeps[m->mdeps_off + k], h;
            if (q >= 0 && C->mgrp[d] == q) st = TP_ERR_INFEASIBLE; /* members are ordered by the lock only */
            /* the next occupant of R's bytes waits for the whole group */
            if (C->lastof[d] >= 0 && overlaps(m, &m2->v[C->last[C->lastof[d]]])) h = C->jid[C->lastof[d]];
            else h = C->newid[d];
            if (!push_u32(&mg->mdeps, &mg->nmdeps, &capm, h)) goto nomem;
        }
        o->nreads = (uint32_t)(mg->nreads - o->reads_off);
        o->nmdeps = (uint32_t)(mg->nmdeps - o->mdeps_off);
    }
    for (size_t q = 0; q < G && !st; q++) {
        const tp__mv *R = &m2->v[C->last[q]];
        tp__mv *o = &mg->v[C->jid[q]];
        memset(o, 0, sizeof *o);
        o->kind = TP_M_JOIN;
        o->space = TP_SPACE_DEVICE;
        o->device = R->device;
        o->task = L->gsum[q];
        o->offset = R->offset;
        o->bytes = R->bytes;
        o->group = (int32_t)q;
        o->reads_off = (uint32_t)mg->nreads;
        o->mdeps_off = (uint32_t)mg->nmdeps;
        for (uint32_t j = 0; j < L->glen[q]; j++)
            if (!push_u32(&mg->mdeps, &mg->nmdeps, &capm, C->newid[C->gm[C->gm_off[q] + j]])) goto nomem;
        o->nmdeps = L->glen[q];
    }
    if (st) goto done;
    /* deps: reads' producers and memory deps, sorted, no repeats */
    mg->deps_off = malloc((N + 1) * sizeof *mg->deps_off);
    mg->deps = malloc((mg->nreads + mg->nmdeps + 1) * sizeof *mg->deps);
    if (!mg->deps_off || !mg->deps) goto nomem;
    size_t k = 0;
    for (size_t i = 0; i < N; i++) {
        const tp__mv *m = &mg->v[i];
        size_t start = k;
        mg->deps_off[i] = (uint32_t)k;
        for (uint32_t j = 0; j < m->nreads; j++) mg->deps[k++] = mg->reads[m->reads_off + j];
        for (uint32_t j = 0; j < m->nmdeps; j++) mg->deps[k++] = mg->mdeps[m->mdeps_off + j];
        qsort(mg->deps + start, k - start, sizeof *mg->deps, cmp_u32);
        size_t u = start;
        for (size_t j = start; j < k; j++)
            if (j == start || mg->deps[j] != mg->deps[u - 1]) mg->deps[u++] = mg->deps[j];
        k = u;
    }
    mg->deps_off[N] = (uint32_t)k;
    /* outputs, kept, the order, the counts */
    const tp_graph *g = L->g;
    uint32_t no = tp_graph_num_outputs(g), n = L->n;
    mg->outputs = malloc((no + 1) * sizeof *mg->outputs);
    mg->order_pos = malloc(((size_t)n + 1) * sizeof *mg->order_pos);
    if (!mg->outputs || !mg->order_pos) goto nomem;
    for (uint32_t o = 0; o < no; o++) mg->outputs[o] = read_of(C, m2->outputs[o]);
    if (m2->nkept) {
        mg->kept = malloc(m2->nkept * sizeof *mg->kept);
        if (!mg->kept) goto nomem;
        for (uint32_t o = 0; o < m2->nkept; o++) mg->kept[o] = read_of(C, m2->kept[o]);
        mg->nkept = m2->nkept;
    }
    { /* positions in V of g's vertices: their ranks among the G2 positions of their counterparts */
        uint64_t *key = malloc(((size_t)n + 1) * sizeof *key);
        if (!key) goto nomem;
        for (uint32_t x = 0; x < n; x++) key[x] = (uint64_t)m2->order_pos[L->to2[x]] << 32 | x;
        qsort(key, n, sizeof *key, cmp_u64);
        for (uint32_t r = 0; r < n; r++) mg->order_pos[(uint32_t)key[r]] = r;
        free(key);
    }
    mg->g = g;
    mg->ndevices = m2->ndevices;
    memcpy(mg->cap, m2->cap, sizeof mg->cap);
    mg->host_bytes = m2->host_bytes;
    mg->counters = m2->counters;
    mg->counters.sum_groups = (uint32_t)G;
    mg->counters.sum_members = L->members;
    goto done;
nomem:
    st = tp__fail(err, TP_ERR_NOMEM, "out of memory");
done:
    free(C->mgrp);
    free(C->lastof);
    free(C->joinat);
    free(C->newid);
    free(C->jid);
    free(C->init);
    free(C->last);
    free(C->gm_off);
    free(C->gm);
    if (st) {
        tp_memgraph_free(mg);
        mg = NULL;
    }
    *out = mg;
    return st;
}

tp_status tp__plan_sum_into(const tp_graph *g, const tp_plan_opts *opts, uint32_t marked, tp_memgraph **out, int *done,
                            tp_error *err)
{
    lower L;
    *done = 0;
    double t0 = tp__now();
    tp_status s = rewrite(&L, g, err);
    if (s == TP_ERR_NOMEM) {
        *done = 1;
        lower_free(&L);
        return s;
    }
    if (s || !L.ngroups) { /* nothing to lower, or a rewrite the graph layer refuses: planned as it is */
        lower_free(&L);
        return TP_OK;
    }
    *done = 1;
    tp__lower_view lv = {L.hold, L.chain};
    tp_memgraph *m2 = NULL;
    tp_error e2;
    s = tp__plan_graph(L.g2, opts, &lv, &m2, &e2);
    if (!s) s = convert(&L, m2, out, &e2);
    tp_memgraph_free(m2);
    if (s == TP_ERR_INFEASIBLE) { /* held chain values cost room: plan the sums as kernels */
        s = tp__plan_graph(g, opts, NULL, out, err);
        if (!s) (*out)->counters.sum_into_fallback = 1;
    } else if (s && err) {
        *err = e2;
    }
    if (!s) {
        (*out)->counters.sums_marked = marked;
        (*out)->counters.plan_seconds = tp__now() - t0;
    }
    lower_free(&L);
    return s;
}

/* The public entry: sum-into when asked and something is marked, else the plain planner (so
 * planner.c never calls back into this file). */
tp_status tp_plan(const tp_graph *g, const tp_plan_opts *opts, tp_memgraph **out, tp_error *err)
{
    if (!g || !opts || !out) return tp__fail(err, TP_ERR_ARG, "tp_plan: NULL argument");
    uint32_t marked = tp__count_marked_sums(g);
    if (opts->nevictions && opts->sum_into && marked)
        return tp__fail(err, TP_ERR_ARG, "directed evictions name the vertices of the graph as given: plan it without "
                                         "sum-into (--no-sum-into), whose rewrite renumbers them");
    if (opts->sum_into && marked) {
        int done = 0;
        tp_status s = tp__plan_sum_into(g, opts, marked, out, &done, err);
        if (done) return s;
    }
    tp_status s = tp__plan_graph(g, opts, NULL, out, err);
    if (!s) (*out)->counters.sums_marked = marked;
    return s;
}
