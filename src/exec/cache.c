/* cache.c - the tensor cache (turnip/cache.h, issue 12): the policy table and the core.
 *
 * Design. Tensors are slots of one array (handle = index + 1; destroyed slots are reused from a
 * free list). Each device has its range's free runs (cache_range.c: first-fit from the top in
 * O(log runs)), a list of its resident tensors, and a binary heap of its resident unpinned
 * tensors in the policy's eviction order (cache_fifo.c, cache_lru.c, cache_size.c,
 * cache_latency.c; a policy is an order over tensor records, cache_internal.h). Heaps are indexed
 * (each tensor knows its position), so pinning, unpinning and re-hinting a tensor are O(log n)
 * and choosing a victim is O(1). A policy whose order moves with the clock (size) names groups
 * within which it does not (equal bytes): each device keeps one heap per group, and a get that
 * must evict heapifies the groups' first tensors at the current clock (O(groups)), then takes
 * victims from that heap, replacing each by the next of its group. Groups are numbered once, by
 * a hash of the key, when a tensor is created. The latency policy's prefetch keeps one more heap:
 * the tensors resident nowhere that have a hint, nearest first; hints found to be past when they
 * reach the top are dropped from it until the tensor is hinted again.
 *
 * A get that misses first refuses what cannot fit (the device's pinned tensors plus this one
 * exceed the range), then evicts in policy order until a free run holds it; since each eviction
 * removes one unpinned tensor and nothing is ever re-loaded while making room, the loop ends
 * after at most the device's residents, with the tensor placed or a TP_ERR_NOMEM that names the
 * pinned bytes, the request, the range and the longest free run: never a cycle of tensors
 * evicting each other. Every array a step might grow is reserved before the step changes
 * anything, so an out-of-memory failure leaves the cache as it was; a failed write-back or load
 * (the session refused) leaves the tensor where its data is.
 *
 * Data moves only through the session (session.c: tp_session_write/read), so calls go one way:
 * cache.c -> session.c -> the backend; the policies call nothing. In deferred mode loads are
 * appended to a list instead (entries of tensors evicted before the commit are marked dead and
 * squeezed out before the call returns, so the list a caller sees is always dense). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec/cache_internal.h"
#include "io/util.h"

extern const tp__cache_policy tp__cache_fifo, tp__cache_lru, tp__cache_size, tp__cache_latency;

static const tp__cache_policy *const policies[] = {&tp__cache_fifo, &tp__cache_lru, &tp__cache_size,
                                                    &tp__cache_latency};
enum { NPOLICIES = sizeof policies / sizeof policies[0] };
/* the same names, as data for callers (tests check the two agree) */
const char *const tp_cache_policy_names[] = {"fifo", "lru", "size", "latency", NULL};
_Static_assert(sizeof tp_cache_policy_names / sizeof *tp_cache_policy_names == NPOLICIES + 1, "one name per policy");

typedef struct cheap {
    uint32_t *v;       /* tensor indices (owned) */
    uint32_t n;
    size_t cap;
} cheap;

/* the resident unpinned tensors of one group on one device (policies with groups) */
typedef struct cgroup {
    cheap h;          /* in the policy's order */
    uint32_t nres;    /* residents of the group on the device, pinned or not (h's room) */
    uint32_t apos;    /* index in the device's active list while h is not empty, else TP__CNONE */
} cgroup;

/* group keys to group numbers: open addressing, a power-of-two table */
typedef struct gmap {
    uint64_t *key;
    uint32_t *val;    /* group number + 1; 0: empty */
    uint32_t cap, n;
} gmap;

typedef struct cdev {
    tp__range range;        /* the aligned part of [base, base+size) */
    uint64_t base, size;    /* as given */
    cheap heap;             /* resident unpinned tensors, the next victim at the top (no groups) */
    cgroup *g;              /* by group number (policies with groups; owned) */
    uint32_t ng;            /* entries of g */
    uint32_t *act;          /* the groups with unpinned residents (owned) */
    uint32_t nact;
    uint32_t rhead;         /* resident list */
    uint32_t nres;
    uint64_t res_bytes;     /* bytes of its residents */
    uint64_t pin_bytes;     /* bytes of its pinned tensors */
    uint64_t pin_take;      /* what they take in the range */
    uint32_t npinned;
} cdev;

struct tp_cache {
    const tp__cache_policy *pol;
    tp_session *s;           /* borrowed; NULL: no data */
    int nd;
    int prefetch;            /* opts.prefetch where the policy prefetches, else 0 */
    int deferred;
    int no_host;             /* no host copies (sizes only) */
    uint8_t *harena;         /* opts.host_arena (borrowed): host copies are taken from it; NULL: malloc */
    tp__range hrange;        /* harena's free runs */
    uint64_t align;
    tp__ctensor *t;          /* slots (owned) */
    uint32_t nt, capt;       /* slots used ever, allocated */
    uint32_t freeslot;       /* free-slot list through rnext */
    uint32_t live;           /* tensors */
    cdev *dev;               /* nd (owned) */
    cheap pf;                /* prefetch candidates: resident nowhere, hinted; nearest at the top */
    cheap top;               /* policies with groups, during one get: the groups' first tensors */
    gmap groups;             /* policies with groups: key -> number */
    uint32_t ngroups;
    tp_cache_load *pend;     /* deferred loads (owned) */
    uint8_t *pdead;          /* per pending entry: dead (owned) */
    uint32_t npend, cappend, ndead;
    uint64_t clock, loadseq;
    tp_cache_counters k;
};

typedef unsigned long long ull;

/* ---- indexed heaps ----------------------------------------------------------------------- */

/* H_EVICT: victims in policy order (positions in hpos); H_PF: prefetch candidates, nearest hint
 * first (ppos); H_TOP: victims in policy order, no positions kept (the groups' first tensors) */
enum { H_EVICT = 0, H_PF = 1, H_TOP = 2 };

static int heap_less(const tp_cache *c, int kind, uint32_t a, uint32_t b)
{
    const tp__ctensor *x = &c->t[a], *y = &c->t[b];
    if (kind == H_PF) return x->next != y->next ? x->next < y->next : x->id < y->id;
    return c->pol->before(x, y, c->clock);
}

static void hset(tp_cache *c, int kind, cheap *h, uint32_t k, uint32_t i)
{
    h->v[k] = i;
    if (kind == H_PF) c->t[i].ppos = k;
    else if (kind == H_EVICT) c->t[i].hpos = k;
}

static void hup(tp_cache *c, int kind, cheap *h, uint32_t k)
{
    uint32_t i = h->v[k];
    while (k) {
        uint32_t p = (k - 1) / 2;
        if (!heap_less(c, kind, i, h->v[p])) break;
        hset(c, kind, h, k, h->v[p]);
        k = p;
    }
    hset(c, kind, h, k, i);
}

static void hdown(tp_cache *c, int kind, cheap *h, uint32_t k)
{
    uint32_t i = h->v[k];
    for (;;) {
        uint32_t l = 2 * k + 1, b = l;
        if (l >= h->n) break;
        if (l + 1 < h->n && heap_less(c, kind, h->v[l + 1], h->v[l])) b = l + 1;
        if (!heap_less(c, kind, h->v[b], i)) break;
        hset(c, kind, h, k, h->v[b]);
        k = b;
    }
    hset(c, kind, h, k, i);
}

/* room was reserved (cap > n) */
static void hpush(tp_cache *c, int kind, cheap *h, uint32_t i)
{
    h->v[h->n] = i;
    hup(c, kind, h, h->n++);
}

static uint32_t *hposp(tp_cache *c, int kind, uint32_t i)
{
    return kind == H_PF ? &c->t[i].ppos : &c->t[i].hpos;
}

static void hremove(tp_cache *c, int kind, cheap *h, uint32_t i)
{
    uint32_t k = *hposp(c, kind, i), last = h->v[--h->n];
    *hposp(c, kind, i) = TP__CNONE;
    if (k < h->n) {
        hset(c, kind, h, k, last);
        hup(c, kind, h, k);
        hdown(c, kind, h, *hposp(c, kind, last));
    }
}

static void hfix(tp_cache *c, int kind, cheap *h, uint32_t i)
{
    hup(c, kind, h, *hposp(c, kind, i));
    hdown(c, kind, h, *hposp(c, kind, i));
}

/* re-orders the whole heap (an order that moved with the clock): O(n) */
static void hbuild(tp_cache *c, int kind, cheap *h)
{
    for (uint32_t k = h->n / 2; k-- > 0;) hdown(c, kind, h, k);
}

static int hreserve(cheap *h, uint32_t need)
{
    return TP__GROW(h->v, h->cap, need);
}

/* ---- groups ------------------------------------------------------------------------------ */

/* the number of the group of key k, made if new: 1, or 0 on out of memory */
static int group_of(tp_cache *c, uint64_t k, uint32_t *out)
{
    gmap *m = &c->groups;
    if (2 * (m->n + 1) > m->cap) { /* grow to keep the load under one half */
        uint32_t nc = m->cap ? m->cap * 2 : 64;
        uint64_t *nk = calloc(nc, sizeof *nk);
        uint32_t *nv = calloc(nc, sizeof *nv);
        if (!nk || !nv || nc < m->cap) {
            free(nk);
            free(nv);
            return 0;
        }
        for (uint32_t j = 0; j < m->cap; j++) {
            if (!m->val[j]) continue;
            uint32_t h = (uint32_t)tp__mix64(m->key[j]) & (nc - 1);
            while (nv[h]) h = (h + 1) & (nc - 1);
            nk[h] = m->key[j];
            nv[h] = m->val[j];
        }
        free(m->key);
        free(m->val);
        m->key = nk;
        m->val = nv;
        m->cap = nc;
    }
    uint32_t h = (uint32_t)tp__mix64(k) & (m->cap - 1);
    while (m->val[h] && m->key[h] != k) h = (h + 1) & (m->cap - 1);
    if (!m->val[h]) {
        m->key[h] = k;
        m->val[h] = ++c->ngroups;
        m->n++;
    }
    *out = m->val[h] - 1;
    return 1;
}

/* the heap of tensor t's unpinned residents on d: its group's, or the device's */
static cheap *uheap(cdev *d, const tp_cache *c, const tp__ctensor *t)
{
    return c->pol->group ? &d->g[t->gid].h : &d->heap;
}

static void uset_add(tp_cache *c, cdev *d, uint32_t i)
{
    cheap *h = uheap(d, c, &c->t[i]);
    if (c->pol->group && !h->n) {
        cgroup *g = &d->g[c->t[i].gid];
        g->apos = d->nact;
        d->act[d->nact++] = c->t[i].gid;
    }
    hpush(c, H_EVICT, h, i); /* room: reserved when it was placed */
}

static void uset_remove(tp_cache *c, cdev *d, uint32_t i)
{
    cheap *h = uheap(d, c, &c->t[i]);
    hremove(c, H_EVICT, h, i);
    if (c->pol->group && !h->n) {
        cgroup *g = &d->g[c->t[i].gid];
        uint32_t last = d->act[--d->nact];
        d->act[g->apos] = last;
        d->g[last].apos = g->apos;
        g->apos = TP__CNONE;
    }
}

/* Victims of device d in policy order: victims_start before the first (with groups: heapifies the
 * groups' first tensors at the current clock), victim_peek for the next, victim_next when that
 * one is about to be evicted (with groups: its group's next tensor takes its place). */
static void victims_start(tp_cache *c, cdev *d)
{
    if (!c->pol->group) return;
    c->top.n = 0;
    for (uint32_t k = 0; k < d->nact; k++) c->top.v[c->top.n++] = d->g[d->act[k]].h.v[0];
    hbuild(c, H_TOP, &c->top);
}

static uint32_t victim_peek(const tp_cache *c, const cdev *d)
{
    const cheap *h = c->pol->group ? &c->top : &d->heap;
    return h->n ? h->v[0] : TP__CNONE;
}

static void victim_next(tp_cache *c, cdev *d)
{
    if (!c->pol->group) return; /* evict_one() takes it out of the device's heap */
    const cheap *g = &d->g[c->t[c->top.v[0]].gid].h; /* the victim is g's first */
    uint32_t after = g->n < 2 ? TP__CNONE : g->n > 2 && heap_less(c, H_EVICT, g->v[2], g->v[1]) ? g->v[2] : g->v[1];
    cheap *h = &c->top;
    uint32_t last = h->v[--h->n]; /* pop the victim... */
    if (h->n) {
        h->v[0] = last;
        hdown(c, H_TOP, h, 0);
    }
    if (after != TP__CNONE) hpush(c, H_TOP, h, after); /* ...and push its group's next */
}

/* ---- small helpers ----------------------------------------------------------------------- */

static tp__ctensor *tensor_of(const tp_cache *c, tp_cache_id id)
{
    if (!c || id == 0 || id > c->nt) return NULL;
    tp__ctensor *t = &c->t[id - 1];
    return t->live ? t : NULL;
}

static tp_status bad_id(tp_error *err, const char *call, tp_cache_id id)
{
    return tp__fail(err, TP_ERR_ARG, "cache %s: no tensor %u", call, id);
}

static uint64_t usable(const cdev *d)
{
    return d->range.hi - d->range.lo;
}

static void pinned_add(tp_cache *c, cdev *d, const tp__ctensor *t, int sign)
{
    if (sign > 0) {
        d->pin_bytes += t->bytes;
        d->pin_take += t->take;
        d->npinned++;
        if (d->pin_bytes > c->k.pinned_bytes_max) c->k.pinned_bytes_max = d->pin_bytes;
    } else {
        d->pin_bytes -= t->bytes;
        d->pin_take -= t->take;
        d->npinned--;
    }
}

static void res_link(tp_cache *c, cdev *d, uint32_t i)
{
    tp__ctensor *t = &c->t[i];
    t->rprev = TP__CNONE;
    t->rnext = d->rhead;
    if (d->rhead != TP__CNONE) c->t[d->rhead].rprev = i;
    d->rhead = i;
    d->nres++;
    d->res_bytes += t->bytes;
    if (c->pol->group) d->g[t->gid].nres++;
}

static void res_unlink(tp_cache *c, cdev *d, uint32_t i)
{
    tp__ctensor *t = &c->t[i];
    if (t->rprev != TP__CNONE) c->t[t->rprev].rnext = t->rnext;
    else d->rhead = t->rnext;
    if (t->rnext != TP__CNONE) c->t[t->rnext].rprev = t->rprev;
    t->rprev = t->rnext = TP__CNONE;
    d->nres--;
    d->res_bytes -= t->bytes;
    if (c->pol->group) d->g[t->gid].nres--;
}

/* squeezes dead entries out of the pending list */
static void pend_compact(tp_cache *c)
{
    if (!c->ndead) return;
    uint32_t o = 0;
    for (uint32_t k = 0; k < c->npend; k++) {
        if (c->pdead[k]) continue;
        c->pend[o] = c->pend[k];
        c->pdead[o] = 0;
        c->t[c->pend[o].id - 1].pend = o;
        o++;
    }
    c->npend = o;
    c->ndead = 0;
}

static void pend_drop(tp_cache *c, tp__ctensor *t)
{
    if (t->pend == TP__CNONE) return;
    c->pdead[t->pend] = 1;
    c->ndead++;
    t->pend = TP__CNONE;
}

/* room for `need` live entries was reserved (cappend >= tensors); dead ones are squeezed out */
static void pend_add(tp_cache *c, tp__ctensor *t, int device, int prefetch)
{
    if (c->npend == c->cappend) pend_compact(c);
    tp_cache_load *l = &c->pend[c->npend];
    l->id = t->id;
    l->device = device;
    l->offset = t->offset;
    l->bytes = t->bytes;
    l->prefetch = prefetch;
    c->pdead[c->npend] = 0;
    t->pend = c->npend++;
}

/* ---- moving tensors ---------------------------------------------------------------------- */

/* Takes resident tensor i (unpinned) off its device: written back first if dirty (through the
 * session; on failure nothing changed), its range freed. Counted as an eviction. */
static tp_status evict_one(tp_cache *c, uint32_t i, tp_error *err)
{
    tp__ctensor *t = &c->t[i];
    cdev *d = &c->dev[t->device];
    if (t->dirty) {
        if (c->s) {
            tp_region r = {TP_SPACE_DEVICE, t->device, t->offset, t->bytes};
            tp_status st = tp_session_read(c->s, &r, t->host, err);
            if (st) return st;
        }
        c->k.writebacks++;
        c->k.bytes_written_back += t->bytes;
        t->dirty = 0;
    }
    if (t->hpos != TP__CNONE) uset_remove(c, d, i);
    res_unlink(c, d, i);
    tp__range_give(&d->range, t->offset, t->take);
    c->k.evictions++;
    c->k.bytes_evicted += t->bytes;
    if (t->unused) {
        c->k.prefetch_wasted++;
        t->unused = 0;
    }
    pend_drop(c, t);
    t->device = -1;
    if (c->prefetch && t->next != TP_CACHE_NO_HINT) hpush(c, H_PF, &c->pf, i);
    return TP_OK;
}

/* Loads tensor i (resident nowhere) into [off, off+take) of device dv, taken from its range:
 * through the session (on failure the range is given back and nothing else changed), or listed
 * in deferred mode, or nothing without data. A prefetch enters the device's eviction heap
 * (unpinned); a get's load is pinned by the caller. */
static tp_status load_tensor(tp_cache *c, uint32_t i, int dv, uint64_t off, int prefetch, tp_error *err)
{
    tp__ctensor *t = &c->t[i];
    cdev *d = &c->dev[dv];
    if (c->s && !c->deferred) {
        tp_region r = {TP_SPACE_DEVICE, dv, off, t->bytes};
        tp_status st = tp_session_write(c->s, &r, t->host, err);
        if (st) {
            tp__range_give(&d->range, off, t->take);
            return st;
        }
    }
    t->device = (int16_t)dv;
    t->offset = off;
    t->dirty = 0;
    t->loadseq = ++c->loadseq;
    res_link(c, d, i);
    if (t->ppos != TP__CNONE) hremove(c, H_PF, &c->pf, i);
    if (c->deferred) pend_add(c, t, dv, prefetch);
    c->k.loads++;
    c->k.bytes_loaded += t->bytes;
    if (prefetch) {
        c->k.prefetches++;
        t->unused = 1;
        uset_add(c, d, i);
    }
    return TP_OK;
}

/* what placing tensor t on device d needs before anything changes: room in its heap (the device's,
 * or its group's and the groups' tables) and in the range's pool */
static tp_status reserve_place(tp_cache *c, cdev *d, const tp__ctensor *t, tp_error *err)
{
    int ok = tp__range_reserve(&d->range, d->nres + 2);
    if (!c->pol->group) {
        ok = ok && hreserve(&d->heap, d->nres + 1);
    } else {
        if (ok && d->ng < c->ngroups) {
            cgroup *g = realloc(d->g, (size_t)c->ngroups * sizeof *g);
            uint32_t *a = g ? realloc(d->act, (size_t)c->ngroups * sizeof *a) : NULL;
            if (g) d->g = g;
            if (a) d->act = a;
            if (!g || !a) ok = 0;
            for (; ok && d->ng < c->ngroups; d->ng++) {
                memset(&d->g[d->ng], 0, sizeof *d->g);
                d->g[d->ng].apos = TP__CNONE;
            }
        }
        ok = ok && hreserve(&d->g[t->gid].h, d->g[t->gid].nres + 1) && hreserve(&c->top, c->ngroups);
    }
    return ok ? TP_OK : tp__fail(err, TP_ERR_NOMEM, "out of memory");
}

static tp_status no_room(const tp_cache *c, int dv, const tp__ctensor *t, int contiguous, tp_error *err)
{
    const cdev *d = &c->dev[dv];
    if (t->take > usable(d))
        return tp__fail(err, TP_ERR_NOMEM,
                        "cache get: tensor %u (%llu bytes, %llu aligned) is larger than device %d's range [%llu, %llu) "
                        "(%llu usable bytes)",
                        t->id, (ull)t->bytes, (ull)t->take, dv, (ull)d->base, (ull)(d->base + d->size), (ull)usable(d));
    if (!contiguous)
        return tp__fail(err, TP_ERR_NOMEM,
                        "cache get: the pinned set does not fit device %d: %llu bytes pinned in %u tensors (%llu aligned) "
                        "plus tensor %u (%llu bytes, %llu aligned) exceed its range [%llu, %llu) of %llu usable bytes",
                        dv, (ull)d->pin_bytes, d->npinned, (ull)d->pin_take, t->id, (ull)t->bytes, (ull)t->take,
                        (ull)d->base, (ull)(d->base + d->size), (ull)usable(d));
    return tp__fail(err, TP_ERR_NOMEM,
                    "cache get: no contiguous %llu bytes for tensor %u (%llu bytes) on device %d once every unpinned "
                    "tensor is evicted: %llu bytes pinned in %u tensors (%llu aligned) leave %llu free bytes of the range "
                    "[%llu, %llu) (%llu usable) in runs of at most %llu",
                    (ull)t->take, t->id, (ull)t->bytes, dv, (ull)d->pin_bytes, d->npinned, (ull)d->pin_take,
                    (ull)d->range.free, (ull)d->base, (ull)(d->base + d->size), (ull)usable(d),
                    (ull)tp__range_largest(&d->range));
}

/* ---- the API ----------------------------------------------------------------------------- */

void tp_cache_opts_init(tp_cache_opts *o, int ndevices, const uint64_t *size)
{
    memset(o, 0, sizeof *o);
    o->policy = "latency";
    o->ndevices = ndevices;
    o->prefetch = 1;
    for (int d = 0; size && d < ndevices && d < TP_MAX_DEVICES; d++) o->size[d] = size[d];
}

void tp_cache_free(tp_cache *c)
{
    if (!c) return;
    if (c->harena) tp__range_free(&c->hrange); /* the copies are the arena owner's bytes */
    else
        for (uint32_t i = 0; i < c->nt; i++) free(c->t[i].host);
    for (int d = 0; c->dev && d < c->nd; d++) {
        tp__range_free(&c->dev[d].range);
        free(c->dev[d].heap.v);
        for (uint32_t g = 0; g < c->dev[d].ng; g++) free(c->dev[d].g[g].h.v);
        free(c->dev[d].g);
        free(c->dev[d].act);
    }
    free(c->dev);
    free(c->t);
    free(c->pf.v);
    free(c->top.v);
    free(c->groups.key);
    free(c->groups.val);
    free(c->pend);
    free(c->pdead);
    free(c);
}

tp_status tp_cache_new(tp_session *s, const tp_cache_opts *o, tp_cache **out, tp_error *err)
{
    if (!out) return tp__fail(err, TP_ERR_ARG, "cache: no out pointer");
    *out = NULL;
    if (!o) return tp__fail(err, TP_ERR_ARG, "cache: no options");
    const char *name = o->policy ? o->policy : "latency";
    const tp__cache_policy *pol = NULL;
    for (int i = 0; i < NPOLICIES; i++)
        if (!strcmp(name, policies[i]->name)) pol = policies[i];
    if (!pol) return tp__fail(err, TP_ERR_ARG, "cache: policy must be fifo, lru, size or latency, not \"%s\"", name);
    if (o->ndevices < 1 || o->ndevices > TP_MAX_DEVICES)
        return tp__fail(err, TP_ERR_ARG, "cache: devices must be 1..%d, not %d", TP_MAX_DEVICES, o->ndevices);
    uint64_t align = o->align ? o->align : TP_CACHE_ALIGN_DEFAULT;
    if (align & (align - 1) || align > ((uint64_t)1 << 62))
        return tp__fail(err, TP_ERR_ARG, "cache: alignment must be a power of two up to 2^62, not %llu", (ull)o->align);
    if (o->prefetch < 0 || o->prefetch > 2)
        return tp__fail(err, TP_ERR_ARG, "cache: prefetch must be 0, 1 or 2, not %d", o->prefetch);
    if (o->deferred < 0 || o->deferred > 1)
        return tp__fail(err, TP_ERR_ARG, "cache: deferred must be 0 or 1, not %d", o->deferred);
    if (o->no_host < 0 || o->no_host > 1 || (o->no_host && s))
        return tp__fail(err, TP_ERR_ARG, "cache: no_host must be 0 or 1, and 1 only without a session");
    if (o->host_arena && (o->no_host || o->host_arena_bytes < align))
        return tp__fail(err, TP_ERR_ARG, "cache: a host arena needs host copies (no_host 0) and at least %llu bytes", (ull)align);
    uint64_t scap[TP_MAX_DEVICES];
    int snd = s ? tp_session_devices(s, scap) : 0;
    if (s && o->ndevices > snd)
        return tp__fail(err, TP_ERR_ARG, "cache: %d devices, but the session has %d", o->ndevices, snd);
    for (int d = 0; d < o->ndevices; d++) {
        uint64_t b = o->base[d], z = o->size[d];
        if (z > UINT64_MAX - b)
            return tp__fail(err, TP_ERR_ARG, "cache: device %d: range base %llu + size %llu overflows", d, (ull)b, (ull)z);
        uint64_t lo = (b + align - 1) & ~(align - 1), hi = (b + z) & ~(align - 1);
        if (b > UINT64_MAX - align + 1 || lo >= hi)
            return tp__fail(err, TP_ERR_ARG, "cache: device %d: range [%llu, %llu) holds no %llu-aligned bytes", d, (ull)b,
                            (ull)(b + z), (ull)align);
        if (s && b + z > scap[d])
            return tp__fail(err, TP_ERR_ARG, "cache: device %d: range [%llu, %llu) is outside the session's arena of %llu bytes",
                            d, (ull)b, (ull)(b + z), (ull)scap[d]);
    }
    tp_cache *c = calloc(1, sizeof *c);
    if (!c) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    c->pol = pol;
    c->s = s;
    c->nd = o->ndevices;
    c->prefetch = pol->prefetch ? o->prefetch : 0;
    c->deferred = o->deferred;
    c->no_host = o->no_host;
    c->align = align;
    c->freeslot = TP__CNONE;
    if (o->host_arena) {
        if (!tp__range_init(&c->hrange, 0, o->host_arena_bytes & ~(align - 1))) {
            free(c);
            return tp__fail(err, TP_ERR_NOMEM, "out of memory");
        }
        c->harena = o->host_arena;
    }
    c->dev = calloc((size_t)c->nd, sizeof *c->dev);
    if (!c->dev) {
        tp_cache_free(c);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    for (int d = 0; d < c->nd; d++) {
        cdev *v = &c->dev[d];
        v->base = o->base[d];
        v->size = o->size[d];
        v->rhead = TP__CNONE;
        uint64_t lo = (v->base + align - 1) & ~(align - 1), hi = (v->base + v->size) & ~(align - 1);
        if (!tp__range_init(&v->range, lo, hi)) {
            c->nd = d; /* free only what was made */
            tp_cache_free(c);
            return tp__fail(err, TP_ERR_NOMEM, "out of memory");
        }
    }
    *out = c;
    return TP_OK;
}

tp_status tp_cache_create(tp_cache *c, tp_dtype dt, int ndim, const int64_t *shape, const void *init, tp_cache_id *out,
                          tp_error *err)
{
    if (out) *out = 0;
    if (!c || !out) return tp__fail(err, TP_ERR_ARG, "cache create: no cache or no out pointer");
    if ((int)dt <= (int)TP_DT_NONE || (int)dt >= TP_DT_COUNT)
        return tp__fail(err, TP_ERR_ARG, "cache create: bad dtype %d", (int)dt);
    if (ndim < 0 || ndim > TP_MAX_DIMS)
        return tp__fail(err, TP_ERR_ARG, "cache create: %d dimensions (0..%d)", ndim, TP_MAX_DIMS);
    if (ndim && !shape) return tp__fail(err, TP_ERR_ARG, "cache create: no shape");
    uint64_t bytes = tp_dtype_size(dt);
    for (int k = 0; k < ndim; k++) {
        if (shape[k] < 0) return tp__fail(err, TP_ERR_ARG, "cache create: dimension %d is %lld", k, (long long)shape[k]);
        if (shape[k] && bytes > UINT64_MAX / (uint64_t)shape[k])
            return tp__fail(err, TP_ERR_ARG, "cache create: the size overflows 64 bits (dimension %d)", k);
        bytes *= (uint64_t)shape[k];
    }
    if (bytes > (uint64_t)SIZE_MAX || bytes > UINT64_MAX - c->align)
        return tp__fail(err, TP_ERR_ARG, "cache create: the size %llu bytes overflows", (ull)bytes);
    uint64_t take = ((bytes ? bytes : 1) + c->align - 1) & ~(c->align - 1); /* > every range: gets refuse it */
    /* reserve what later steps need for one more tensor: its slot, prefetch-heap and pending room */
    uint32_t i = c->freeslot;
    if (i == TP__CNONE) {
        if (c->nt == UINT32_MAX - 1) return tp__fail(err, TP_ERR_NOMEM, "cache create: out of handles");
        if (c->nt == c->capt) {
            uint32_t nc = c->capt ? (c->capt > UINT32_MAX / 2 ? UINT32_MAX - 1 : c->capt * 2) : 64;
            tp__ctensor *nt = realloc(c->t, (size_t)nc * sizeof *nt);
            if (!nt) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
            c->t = nt;
            c->capt = nc;
        }
    }
    if (!hreserve(&c->pf, c->live + 1)) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    uint32_t gid = 0;
    if (c->pol->group) {
        tp__ctensor probe = {.bytes = bytes, .take = take};
        if (!group_of(c, c->pol->group(&probe), &gid)) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    if (c->deferred && c->cappend < c->live + 1) {
        uint32_t nc = c->cappend ? c->cappend * 2 : 64;
        tp_cache_load *np = realloc(c->pend, (size_t)nc * sizeof *np);
        if (np) c->pend = np;
        uint8_t *nd = np ? realloc(c->pdead, nc) : NULL;
        if (nd) c->pdead = nd;
        if (!np || !nd) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
        c->cappend = nc;
    }
    uint8_t *host = NULL;
    if (c->harena) { /* from the caller's arena: first fit from its top, as on a device */
        uint64_t off;
        if (!tp__range_reserve(&c->hrange, c->live + 2)) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
        if (!tp__range_take(&c->hrange, take, &off))
            return tp__fail(err, TP_ERR_NOMEM, "cache create: the host arena has no free run of %llu bytes (%llu of %llu free)",
                            (ull)take, (ull)c->hrange.free, (ull)(c->hrange.hi - c->hrange.lo));
        host = c->harena + off;
        if (init) memcpy(host, init, (size_t)bytes);
        else memset(host, 0, (size_t)bytes);
    } else if (!c->no_host) {
        host = init ? malloc((size_t)(bytes ? bytes : 1)) : calloc(1, (size_t)(bytes ? bytes : 1));
        if (!host) return tp__fail(err, TP_ERR_NOMEM, "cache create: no host memory for a copy of %llu bytes", (ull)bytes);
        if (init && bytes) memcpy(host, init, (size_t)bytes);
    }
    if (i == TP__CNONE) i = c->nt++;
    else c->freeslot = c->t[i].rnext;
    tp__ctensor *t = &c->t[i];
    memset(t, 0, sizeof *t);
    t->bytes = bytes;
    t->take = take;
    t->next = TP_CACHE_NO_HINT;
    t->host = host;
    t->id = i + 1;
    t->gid = gid;
    t->hpos = t->ppos = t->rprev = t->rnext = t->pend = TP__CNONE;
    t->device = -1;
    t->live = 1;
    c->live++;
    *out = t->id;
    return TP_OK;
}

tp_status tp_cache_destroy(tp_cache *c, tp_cache_id id, tp_error *err)
{
    tp__ctensor *t = tensor_of(c, id);
    if (!t) return bad_id(err, "destroy", id);
    if (t->pins) return tp__fail(err, TP_ERR_ARG, "cache destroy: tensor %u is pinned (%u gets not put)", id, t->pins);
    uint32_t i = id - 1;
    if (t->device >= 0) {
        cdev *d = &c->dev[t->device];
        if (t->hpos != TP__CNONE) uset_remove(c, d, i);
        res_unlink(c, d, i);
        tp__range_give(&d->range, t->offset, t->take);
        if (t->unused) c->k.prefetch_wasted++;
        pend_drop(c, t);
        pend_compact(c);
    }
    if (t->ppos != TP__CNONE) hremove(c, H_PF, &c->pf, i);
    if (c->harena) tp__range_give(&c->hrange, (uint64_t)(t->host - c->harena), t->take);
    else free(t->host);
    memset(t, 0, sizeof *t);
    t->rnext = c->freeslot;
    c->freeslot = i;
    c->live--;
    return TP_OK;
}

tp_status tp_cache_get(tp_cache *c, tp_cache_id id, int device, uint64_t *offset, tp_error *err)
{
    tp__ctensor *t = tensor_of(c, id);
    if (!t) return bad_id(err, "get", id);
    if (device < 0 || device >= c->nd)
        return tp__fail(err, TP_ERR_ARG, "cache get: device %d (the cache has %d)", device, c->nd);
    uint32_t i = id - 1;
    cdev *d = &c->dev[device];
    if (t->device == device) { /* a hit */
        if (t->hpos != TP__CNONE) uset_remove(c, d, i);
        if (t->unused) {
            c->k.prefetch_used++;
            t->unused = 0;
        }
        c->k.hits++;
    } else {
        if (t->device >= 0 && t->pins)
            return tp__fail(err, TP_ERR_ARG, "cache get: tensor %u is pinned on device %d (put it before getting it on %d)",
                            id, t->device, device);
        if (t->take > usable(d) || t->take > usable(d) - d->pin_take) return no_room(c, device, t, 0, err);
        tp_status st = reserve_place(c, d, t, err);
        if (st) return st;
        uint64_t off;
        int started = 0;
        while (!tp__range_take(&d->range, t->take, &off)) {
            if (!started) {
                victims_start(c, d);
                started = 1;
            }
            uint32_t v = victim_peek(c, d);
            if (v == TP__CNONE) {
                pend_compact(c);
                return no_room(c, device, t, 1, err);
            }
            victim_next(c, d);
            st = evict_one(c, v, err);
            if (st) {
                pend_compact(c);
                return st;
            }
        }
        if (t->device >= 0 && (st = evict_one(c, i, err)) != TP_OK) { /* moved: off its old device */
            tp__range_give(&d->range, off, t->take);
            pend_compact(c);
            return st;
        }
        st = load_tensor(c, i, device, off, 0, err);
        pend_compact(c);
        if (st) return st;
        t = &c->t[i];
        c->k.misses++;
    }
    if (t->pins++ == 0) pinned_add(c, d, t, 1);
    t->last = c->clock++;
    if (offset) *offset = t->offset;
    return TP_OK;
}

tp_status tp_cache_put(tp_cache *c, tp_cache_id id, int dirty, uint64_t next_access, tp_error *err)
{
    tp__ctensor *t = tensor_of(c, id);
    if (!t) return bad_id(err, "put", id);
    if (!t->pins) return tp__fail(err, TP_ERR_ARG, "cache put: tensor %u is not pinned", id);
    if (dirty) t->dirty = 1;
    t->next = next_access;
    if (--t->pins == 0) {
        cdev *d = &c->dev[t->device];
        pinned_add(c, d, t, -1);
        uset_add(c, d, id - 1);
    }
    return TP_OK;
}

tp_status tp_cache_hint(tp_cache *c, tp_cache_id id, uint64_t next_access, tp_error *err)
{
    tp__ctensor *t = tensor_of(c, id);
    if (!t) return bad_id(err, "hint", id);
    uint32_t i = id - 1;
    t->next = next_access;
    if (t->hpos != TP__CNONE) hfix(c, H_EVICT, uheap(&c->dev[t->device], c, t), i);
    if (c->prefetch && t->device < 0) {
        if (t->ppos != TP__CNONE) {
            if (next_access == TP_CACHE_NO_HINT) hremove(c, H_PF, &c->pf, i);
            else hfix(c, H_PF, &c->pf, i);
        } else if (next_access != TP_CACHE_NO_HINT) {
            hpush(c, H_PF, &c->pf, i); /* room reserved at create */
        }
    }
    return TP_OK;
}

tp_status tp_cache_prefetch(tp_cache *c, int device, uint32_t *n, tp_error *err)
{
    if (n) *n = 0;
    if (!c) return tp__fail(err, TP_ERR_ARG, "cache prefetch: no cache");
    if (device < 0 || device >= c->nd)
        return tp__fail(err, TP_ERR_ARG, "cache prefetch: device %d (the cache has %d)", device, c->nd);
    cdev *d = &c->dev[device];
    uint32_t count = 0;
    tp_status st = TP_OK;
    while (c->prefetch && c->pf.n) {
        uint32_t i = c->pf.v[0];
        tp__ctensor *t = &c->t[i];
        if (t->next < c->clock) { /* its tick is past: not a prefetch until hinted again */
            hremove(c, H_PF, &c->pf, i);
            continue;
        }
        if (t->take > usable(d) || t->take > usable(d) - d->pin_take) break;
        if ((st = reserve_place(c, d, t, err)) != TP_OK) break;
        uint64_t off;
        int placed = 1, started = 0;
        while (!tp__range_take(&d->range, t->take, &off)) {
            if (!started) {
                victims_start(c, d);
                started = 1;
            }
            uint32_t v = c->prefetch < 2 ? TP__CNONE : victim_peek(c, d);
            if (v == TP__CNONE || c->t[v].next <= t->next) {
                placed = 0;
                break;
            }
            victim_next(c, d);
            if ((st = evict_one(c, v, err)) != TP_OK) break;
        }
        if (st || !placed) break;
        if ((st = load_tensor(c, i, device, off, 1, err)) != TP_OK) break;
        count++;
    }
    pend_compact(c);
    if (n) *n = count;
    return st;
}

void *tp_cache_host(tp_cache *c, tp_cache_id id)
{
    tp__ctensor *t = tensor_of(c, id);
    return t ? t->host : NULL;
}

static tp_status data_region(tp_cache *c, tp_cache_id id, uint64_t off, uint64_t n, const void *buf, const char *call,
                             tp_region *r, tp_error *err)
{
    tp__ctensor *t = tensor_of(c, id);
    if (!t) return bad_id(err, call, id);
    if (!t->pins) return tp__fail(err, TP_ERR_ARG, "cache %s: tensor %u is not pinned (get it first)", call, id);
    if (off > t->bytes || n > t->bytes - off)
        return tp__fail(err, TP_ERR_ARG, "cache %s: bytes [%llu, +%llu) outside tensor %u's %llu", call, (ull)off, (ull)n, id,
                        (ull)t->bytes);
    if (!c->s) return tp__fail(err, TP_ERR_ARG, "cache %s: the cache has no session (no data)", call);
    if (n && !buf) return tp__fail(err, TP_ERR_ARG, "cache %s: no buffer", call);
    r->space = TP_SPACE_DEVICE;
    r->device = t->device;
    r->offset = t->offset + off;
    r->bytes = n;
    return TP_OK;
}

tp_status tp_cache_read(tp_cache *c, tp_cache_id id, uint64_t off, void *dst, uint64_t n, tp_error *err)
{
    tp_region r;
    tp_status st = data_region(c, id, off, n, dst, "read", &r, err);
    return st ? st : tp_session_read(c->s, &r, dst, err);
}

tp_status tp_cache_write(tp_cache *c, tp_cache_id id, uint64_t off, const void *src, uint64_t n, tp_error *err)
{
    tp_region r;
    tp_status st = data_region(c, id, off, n, src, "write", &r, err);
    return st ? st : tp_session_write(c->s, &r, src, err);
}

int tp_cache_where(const tp_cache *c, tp_cache_id id, int *device, uint64_t *offset)
{
    const tp__ctensor *t = tensor_of(c, id);
    if (!t || t->device < 0) return 0;
    if (device) *device = t->device;
    if (offset) *offset = t->offset;
    return 1;
}

uint64_t tp_cache_bytes(const tp_cache *c, tp_cache_id id)
{
    const tp__ctensor *t = tensor_of(c, id);
    return t ? t->bytes : 0;
}

uint32_t tp_cache_residents(const tp_cache *c, int device, tp_cache_id *out, uint32_t max)
{
    if (!c || device < 0 || device >= c->nd) return 0;
    const cdev *d = &c->dev[device];
    uint32_t k = 0;
    for (uint32_t i = d->rhead; i != TP__CNONE && k < max; i = c->t[i].rnext) out[k++] = c->t[i].id;
    return d->nres;
}

uint64_t tp_cache_clock(const tp_cache *c)
{
    return c ? c->clock : 0;
}

void tp_cache_counters_get(const tp_cache *c, tp_cache_counters *out)
{
    if (c) *out = c->k;
    else memset(out, 0, sizeof *out);
}

uint32_t tp_cache_pending(const tp_cache *c, const tp_cache_load **loads)
{
    if (loads) *loads = c ? c->pend : NULL;
    return c ? c->npend : 0; /* dense: every call squeezes out what it unlisted */
}

void tp_cache_commit(tp_cache *c)
{
    if (!c) return;
    for (uint32_t k = 0; k < c->npend; k++)
        if (!c->pdead[k]) c->t[c->pend[k].id - 1].pend = TP__CNONE;
    c->npend = c->ndead = 0;
}
