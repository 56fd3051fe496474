/* planner.c - BUILDMEMGRAPH for variably-sized tensors (docs/planner.md).
 *
 * The TaskGraph is executed in simulation along the serial order V (kernels and transfers
 * only; input tensors are loaded when first needed). Each position p of V has needs: on
 * the device it reads from, its distinct inputs must be resident; on the device it writes
 * to, its output must have a region.
 *
 * Two horizons move over V. Each device d has an allocation horizon h[d] that satisfies the
 * needs on d of the positions in order, without evicting anything, and stops at the first
 * need that does not fit; satisfying a need creates the MemGraph vertex that writes the
 * region (the kernel or transfer itself, or the reload of an evicted or not yet loaded
 * input), so reloads are issued as early as memory allows. The execution horizon e then
 * "runs" position e: it records the reads, and frees values that have no further use.
 * When e reaches a need its device's horizon could not satisfy, that need is forced: a
 * window of memory is cleared by evicting the values whose next use is furthest away
 * (Belady), never the current vertex's inputs; a value whose host copy is still valid (an
 * input, or a value offloaded before) is dropped, otherwise an offload vertex copies it to
 * a host region first. Later uses read the reloaded copy. If pinned inputs fragment memory
 * so that no window exists, the device is cleared and the vertex's tensors are packed from
 * address 0 in decreasing alignment, which always fits when their sum does.
 *
 * Every region write depends on the vertices that last used the bytes it overwrites (the
 * release lists of the allocator), which makes any execution order of the MemGraph that
 * respects its edges race-free. All of this is linear in V for a bounded number of live
 * tensors: the allocator scans only the live blocks of one device. */
#include <stdlib.h>
#include <string.h>
#include "turnip/io.h"
#include "plan/alloc.h"
#include "plan/plan_internal.h"

#define INF_USE UINT64_MAX

typedef struct planner {
    const tp_graph *g;
    const tp_vertex *gv; /* tp_graph_vertices(g): the vertex views, indexed by vertex */
    tp_memgraph *mg;
    tp_error *err;
    tp_status st;
    int nd;
    tp__alloc dev[TP_MAX_DEVICES], host;
    uint64_t host_cap, host_end, in_end; /* host: capacity, high-water mark, input prefix */
    uint32_t nv;   /* TaskGraph vertices */
    uint32_t npos; /* positions in V */
    uint32_t *V;   /* position -> TaskGraph vertex */
    uint32_t *pos; /* TaskGraph vertex -> position (UINT32_MAX for inputs) */
    const uint32_t *use_off; /* the graph's consumer offsets (borrowed): x's uses are use_pos[use_off[x]..] */
    uint32_t *use_pos, *use_cur;
    uint8_t *is_out, *loaded, *rdone, *wdone;
    uint8_t *keep;     /* declared "keep" (sessions): stays on the device at the end */
    uint8_t *must;     /* kept and nowhere else at the end: kept outputs, kept inputs without a
                          host copy (resident, "host_copy": false); reloaded at the end */
    int32_t *inpl;     /* per TaskGraph vertex: the input index it overwrites in place, or -1 */
    uint8_t *pin;      /* pinned resident inputs (TP_RESIDENT_PIN) and kernels in place on them:
                          their blocks are never evicted, moved or freed (also keep[]: stays) */
    uint64_t pinned[TP_MAX_DEVICES]; /* bytes of pinned inputs per device */
    const uint8_t *hold;  /* sum-into (NULL: none): chain values never evicted or moved (plan_internal.h) */
    const uint8_t *chain; /* sum-into (NULL: none): chain adds, whose in-place read prunes nothing */
    int ending;        /* the loop is done: 1 kept outputs are being placed, 2 kept inputs trimmed */
    size_t capkept;
    int only_dead;     /* eviction may take dead kept inputs with a host copy only */
    int check_window;  /* TURNIP_CHECK_WINDOW=1: every keyed window search checked against the scan */
    uint32_t walk;         /* blocks the keyed window search walks before the scan or Belady takes over */
    enum { SCAN_NEVER, SCAN_CREDIT, SCAN_ALWAYS } scan; /* past `walk`: tp_plan_opts.evict_budget N, 0, TP_EVICT_EXACT */
    uint64_t scan_credit;  /* SCAN_CREDIT: blocks the full window scans may still visit (TP_PLAN_SCAN_BASE, TP_PLAN_SCAN_CREDIT) */
    uint32_t nkeep_in; /* kept inputs (0: none of the keep logic runs) */
    uint64_t need_max[TP_MAX_DEVICES]; /* largest inputs-plus-output need of one position */
    uint32_t *dcopy, *dblk, *drd, *hcopy, *hblk, *hrd;
    uint32_t *vmark, vstamp;
    uint32_t *L[TP_MAX_DEVICES], nL[TP_MAX_DEVICES], h[TP_MAX_DEVICES];
    uint8_t dirty[TP_MAX_DEVICES];
    uint32_t *rl_id, *rl_next; /* release-list pool */
    size_t nrl, caprl;
    uint32_t *scr; /* memory deps being collected */
    size_t nscr, capscr;
    uint64_t *seen, seen_stamp; /* 64-bit: a few stamps per MemGraph vertex never wrap */
    size_t capseen;
    uint64_t relstamp;
    uint32_t e;
    uint32_t pin_pos;  /* eviction may take values whose next use is after this position */
    uint32_t *mgv;     /* TaskGraph vertex -> its kernel/transfer MemGraph vertex */
    uint64_t *dies;    /* prefix sums per device: bytes of values whose last use is before position p */
    uint32_t *victims;
    size_t capvict;
    uint32_t *dir_off; /* directed evictions (tp_plan_opts.evictions) by `after` vertex: CSR */
    uint32_t *dir_val;
    uint64_t pack_below; /* tp_plan_opts.pack_below */
} planner;

static const tp_vertex *V_(const planner *P, uint32_t x)
{
    return &P->gv[x];
}

static int oom(planner *P)
{
    if (!P->st) P->st = tp__fail(P->err, TP_ERR_NOMEM, "out of memory while planning");
    return 0;
}

/* ---- release lists ---------------------------------------------------------------- */

static uint32_t rl_push(planner *P, uint32_t head, uint32_t id)
{
    if (P->nrl == P->caprl) {
        size_t nc = P->caprl ? P->caprl * 2 : 1024;
        uint32_t *a = realloc(P->rl_id, nc * sizeof *a), *b;
        if (!a) return oom(P), head;
        P->rl_id = a;
        b = realloc(P->rl_next, nc * sizeof *b);
        if (!b) return oom(P), head;
        P->rl_next = b;
        P->caprl = nc;
    }
    P->rl_id[P->nrl] = id;
    P->rl_next[P->nrl] = head;
    return (uint32_t)P->nrl++;
}

static void collect_rel(void *ctx, uint32_t rel)
{
    planner *P = ctx;
    for (uint32_t i = rel; i != TP__NONE; i = P->rl_next[i]) {
        uint32_t id = P->rl_id[i];
        if (P->seen[id] == P->seen_stamp) continue;
        P->seen[id] = P->seen_stamp;
        if (!TP__GROW(P->scr, P->capscr, P->nscr + 1)) {
            oom(P);
            return;
        }
        P->scr[P->nscr++] = id;
    }
}

/* ---- MemGraph vertices -------------------------------------------------------------- */

/* Drops from the collected deps each one that another collected dep, or one of the new
 * vertex's data sources `srcs` (final ones only; TP__NONE entries are skipped), depends on
 * directly, and those that are data sources themselves: waiting for the later one implies
 * waiting for it. Members carry seen[] == seen_stamp. */
static void prune_implied(planner *P, const uint32_t *srcs, uint32_t nsrc)
{
    if (P->nscr == 0) return;
    tp_memgraph *mg = P->mg;
    uint64_t red = P->seen_stamp + 1; /* "implied" mark, above any stamp used so far */
    for (uint32_t i = 0; i < nsrc; i++)
        if (srcs[i] != TP__NONE && P->seen[srcs[i]] == P->seen_stamp) P->seen[srcs[i]] = red;
    for (size_t i = 0; i < P->nscr + nsrc; i++) {
        uint32_t who = i < P->nscr ? P->scr[i] : srcs[i - P->nscr];
        if (who == TP__NONE) continue;
        const tp__mv *m = &mg->v[who];
        /* a sum-into chain add's in-place read (the previous add) is no edge of the final plan:
         * nothing may lean on it; and a dep on a chain add itself is never dropped (below), as
         * the conversion may make it a dep on the whole group (its join) */
        uint32_t skip = P->chain && m->kind == TP_M_KERNEL && m->inplace && P->chain[m->task] ? m->inplace : 0;
        for (int pass = 0; pass < 2; pass++) {
            uint32_t n = pass ? m->nmdeps : m->nreads;
            if (!n) continue; /* the arrays may be NULL: no pointer arithmetic on them */
            const uint32_t *src = pass ? mg->mdeps + m->mdeps_off : mg->reads + m->reads_off;
            for (uint32_t j = 0; j < n; j++)
                if (P->seen[src[j]] == P->seen_stamp && !(pass == 0 && j + 1 == skip)) P->seen[src[j]] = red;
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < P->nscr; i++) /* a dep on a sum-into chain add stays: it becomes its group's join's */
        if (P->seen[P->scr[i]] != red || (P->chain && mg->v[P->scr[i]].kind == TP_M_KERNEL && P->chain[mg->v[P->scr[i]].task]))
            P->scr[k++] = P->scr[i];
    P->nscr = k;
    P->seen_stamp++; /* red is now the current stamp; the caller's increment moves past it */
}

static uint32_t new_mv(planner *P, tp_mkind kind, uint32_t task, int device, tp_space space,
                       uint64_t offset, uint64_t bytes, const uint32_t *srcs, uint32_t nsrc)
{
    tp_memgraph *mg = P->mg;
    if (mg->n >= UINT32_MAX - 1 || !TP__GROW(mg->v, mg->capv, mg->n + 1) ||
        !TP__GROW(P->seen, P->capseen, mg->n + 1))
        return oom(P), 0;
    P->seen[mg->n] = 0;
    tp__mv *m = &mg->v[mg->n];
    memset(m, 0, sizeof *m);
    m->kind = (uint8_t)kind;
    m->space = (uint8_t)space;
    m->device = (int16_t)device;
    m->task = task;
    m->offset = offset;
    m->bytes = bytes;
    m->group = -1;
    /* the memory deps gathered by the take that made this region, less those another of
     * them already depends on directly (one-hop transitive reduction) */
    prune_implied(P, srcs, nsrc);
    if (!TP__GROW(mg->mdeps, mg->capmdeps, mg->nmdeps + P->nscr + 1)) return oom(P), 0;
    m->mdeps_off = (uint32_t)mg->nmdeps;
    m->nmdeps = (uint32_t)P->nscr;
    if (P->nscr) memcpy(mg->mdeps + mg->nmdeps, P->scr, P->nscr * sizeof *P->scr);
    mg->nmdeps += P->nscr;
    P->nscr = 0;
    P->seen_stamp++;
    return (uint32_t)mg->n++;
}

static void set_reads(planner *P, uint32_t m, const uint32_t *from, uint32_t n)
{
    tp_memgraph *mg = P->mg;
    if (!TP__GROW(mg->reads, mg->capreads, mg->nreads + n + 1)) {
        oom(P);
        return;
    }
    mg->v[m].reads_off = (uint32_t)mg->nreads;
    mg->v[m].nreads = n;
    if (n) memcpy(mg->reads + mg->nreads, from, n * sizeof *from);
    mg->nreads += n;
}

/* ---- values ------------------------------------------------------------------------- */

/* position of x's next use, INF_USE when none is left */
static uint64_t next_use(const planner *P, uint32_t x)
{
    uint32_t k = P->use_cur[x];
    return k < P->use_off[x + 1] - P->use_off[x] ? P->use_pos[P->use_off[x] + k] : INF_USE;
}

/* x's eviction key on its device (tp__alloc_set_key): its next use, or 0 where score_victim
 * pins it whatever the horizon (pinned, held, or dead and about to be freed) */
static void set_dkey(planner *P, uint32_t x)
{
    uint64_t nu = next_use(P, x);
    int never = P->pin[x] || (P->hold && P->hold[x]) || (nu == INF_USE && !P->is_out[x] && !P->keep[x]);
    tp__alloc_set_key(&P->dev[V_(P, x)->device], P->dblk[x], never ? 0 : nu);
}

static uint32_t take(planner *P, tp__alloc *a, uint64_t addr, uint64_t size, uint32_t owner)
{
    P->nscr = 0;
    uint32_t b = tp__alloc_take(a, addr, size, owner, collect_rel, P);
    if (b == TP__NONE) oom(P); /* every caller checks P->st before using the block */
    return b;
}

/* release list for a copy: its readers, or its writer when nobody read it */
static uint32_t rel_of(planner *P, uint32_t readers, uint32_t writer)
{
    return readers != TP__NONE ? readers : rl_push(P, TP__NONE, writer);
}

static void free_device_copy(planner *P, uint32_t x)
{
    int d = V_(P, x)->device;
    tp__alloc_release(&P->dev[d], P->dblk[x], rel_of(P, P->drd[x], P->dcopy[x]), ++P->relstamp);
    P->dcopy[x] = P->dblk[x] = P->drd[x] = TP__NONE;
    P->dirty[d] = 1;
}

static void do_reload(planner *P, uint32_t x, int d, uint64_t addr)
{
    uint64_t bytes = V_(P, x)->bytes;
    uint32_t blk = take(P, &P->dev[d], addr, bytes, x);
    uint32_t r = new_mv(P, TP_M_RELOAD, x, d, TP_SPACE_DEVICE, addr, bytes, &P->hcopy[x], 1);
    if (P->st) return;
    set_reads(P, r, &P->hcopy[x], 1);
    P->hrd[x] = rl_push(P, P->hrd[x], r);
    P->dcopy[x] = r;
    P->dblk[x] = blk;
    P->drd[x] = TP__NONE;
    set_dkey(P, x);
    tp_device_stats *s = &P->mg->counters.dev[d];
    if (V_(P, x)->kind == TP_V_INPUT && !P->loaded[x]) {
        P->loaded[x] = 1;
        s->load_count++;
        s->load_bytes += bytes;
    } else {
        s->reload_count++;
        s->reload_bytes += bytes;
    }
}

static void do_output(planner *P, uint32_t p, uint64_t addr)
{
    uint32_t t = P->V[p];
    const tp_vertex *v = V_(P, t);
    /* data sources known for good: a kernel's resident inputs are pinned until it runs; a
     * transfer's input only once its read side is satisfied */
    uint32_t buf[16], *srcs = v->ninputs <= 16 ? buf : malloc(v->ninputs * sizeof *srcs), nsrc = 0;
    if (!srcs) {
        oom(P);
        return;
    }
    if (v->kind == TP_V_KERNEL || P->rdone[p])
        for (uint32_t k = 0; k < v->ninputs; k++) srcs[nsrc++] = P->dcopy[v->inputs[k]];
    uint32_t blk = take(P, &P->dev[v->device], addr, v->bytes, t);
    uint32_t m = new_mv(P, v->kind == TP_V_KERNEL ? TP_M_KERNEL : TP_M_TRANSFER, t, v->device,
                        TP_SPACE_DEVICE, addr, v->bytes, srcs, nsrc);
    if (srcs != buf) free(srcs);
    if (P->st) return;
    P->mgv[t] = m;
    P->dcopy[t] = m;
    P->dblk[t] = blk;
    P->drd[t] = TP__NONE;
    set_dkey(P, t);
}

/* an address in the offload arena (host offsets are in_end + addr) */
static int host_alloc(planner *P, uint32_t x, uint64_t *addr, const char *why)
{
    uint64_t bytes = V_(P, x)->bytes;
    if (tp__alloc_find(&P->host, bytes, TP__FIT_LOWEST, addr)) {
        if (P->in_end + *addr + bytes > P->host_end) P->host_end = P->in_end + *addr + bytes;
        return 1;
    }
    char b1[32], b2[32], b3[32];
    P->st = tp__fail(P->err, TP_ERR_INFEASIBLE,
                     "vertex '%s': host memory too small: %s needs %s more, %s of %s in use",
                     V_(P, P->e < P->npos ? P->V[P->e] : x)->id, why, tp_format_size(bytes, b1, sizeof b1),
                     tp_format_size(P->in_end + P->host.used, b2, sizeof b2),
                     tp_format_size(P->host_cap, b3, sizeof b3));
    return 0;
}

/* Evicts value x from its device: drop it if its host copy is valid, else offload it. */
static void evict(planner *P, uint32_t x)
{
    int d = V_(P, x)->device;
    tp_device_stats *s = &P->mg->counters.dev[d];
    if (P->hcopy[x] == TP__NONE) {
        uint64_t haddr, bytes = V_(P, x)->bytes;
        char why[300];
        snprintf(why, sizeof why, "offloading '%.200s'", V_(P, x)->id);
        if (!host_alloc(P, x, &haddr, why)) return;
        uint32_t hb = take(P, &P->host, haddr, bytes, x);
        uint32_t o = new_mv(P, TP_M_OFFLOAD, x, d, TP_SPACE_HOST, P->in_end + haddr, bytes, &P->dcopy[x], 1);
        if (P->st) return;
        set_reads(P, o, &P->dcopy[x], 1);
        P->drd[x] = rl_push(P, P->drd[x], o);
        P->hcopy[x] = o;
        P->hblk[x] = hb;
        P->hrd[x] = TP__NONE;
        s->offload_count++;
        s->offload_bytes += bytes;
    } else {
        s->drop_count++;
    }
    free_device_copy(P, x);
}

static tp__victim_score score_victim(void *ctx, uint32_t x)
{
    planner *P = ctx;
    tp__victim_score s;
    uint64_t nu = next_use(P, x);
    /* values needed at or before pin_pos stay (a forced step pins e's inputs; a horizon step
     * the inputs of everything it has allocated); so do values nobody will read */
    s.pinned = nu <= P->pin_pos || P->pin[x] || (P->hold && P->hold[x]) || (nu == INF_USE && !P->is_out[x] && !P->keep[x]) ||
               (P->ending && P->must[x]) || (P->ending == 2 && !P->keep[x]) ||
               (P->only_dead && !(P->keep[x] && !P->is_out[x] && nu == INF_USE && P->hcopy[x] != TP__NONE));
    s.next_use = nu;
    s.cost = P->hcopy[x] == TP__NONE ? V_(P, x)->bytes : 0;
    /* a plan with directed evictions also counts the reload at the end of a kept value read no
     * more (a weight kept for the next iteration): else it costs nothing where its host copy is
     * valid, and a 9 MB activation took a 453 MB weight's place, reloaded in the link-bound
     * forward's tail (docs/weight-offload.md "Inside turnip") */
    if (P->dir_off && nu == INF_USE && P->must[x]) s.cost += V_(P, x)->bytes;
    return s;
}

/* Starts a walk over the distinct inputs of t. */
static uint32_t distinct_begin(planner *P)
{
    return ++P->vstamp;
}

static int first_time(planner *P, uint32_t x, uint32_t stamp)
{
    if (P->vmark[x] == stamp) return 0;
    P->vmark[x] = stamp;
    return 1;
}

static int reads_on(const planner *P, uint32_t t, int d)
{
    return V_(P, t)->ninputs && tp_graph_read_device(P->g, t) == d;
}

/* Bytes of values on d whose last use lies in [e, p): what will be freed before p anyway. Only
 * in a plan without directed evictions (setup computes P->dies for those alone; may_wait). */
static uint64_t dying(const planner *P, int d, uint32_t p)
{
    const uint64_t *pre = P->dies + (size_t)d * (P->npos + 1);
    return pre[p] - pre[P->e];
}

/* TURNIP_CHECK_WINDOW=1 (tests): the keyed search must agree with the scan, or the plan stops */
static void check_window(planner *P, int d, uint64_t size, int got, uint64_t addr, uint32_t nvict)
{
    uint32_t *v2 = malloc(((size_t)P->dev[d].nblocks + 1) * sizeof *v2), n2 = 0;
    uint64_t a2 = 0;
    if (!v2) {
        oom(P);
        return;
    }
    int got2 = tp__alloc_find_window(&P->dev[d], size, score_victim, P, &a2, v2, &n2);
    int same = got == got2 && (!got || (a2 == addr && n2 == nvict && !memcmp(v2, P->victims, n2 * sizeof *v2)));
    free(v2);
    if (!same)
        P->st = tp__fail(P->err, TP_ERR_CHECK, "eviction window: keyed search %d at %llu (%u victims), scan %d at %llu (%u)",
                         got, (unsigned long long)addr, nvict, got2, (unsigned long long)a2, n2);
}

/* Evicts the best window (values needed after `pin` only) and returns its address. */
static int evict_window(planner *P, int d, uint64_t size, uint32_t pin, uint64_t *addr)
{
    P->pin_pos = pin;
    if (!TP__GROW(P->victims, P->capvict, P->dev[d].nblocks + 1)) return oom(P);
    uint32_t nvict;
    int got;
    if (P->only_dead || P->ending) { /* victims by more than their next use: the scan */
        got = tp__alloc_find_window(&P->dev[d], size, score_victim, P, addr, P->victims, &nvict);
    } else {
        /* The keyed search walks up to `walk` blocks. Past that the best window comes from the scan
         * (always with TP_EVICT_EXACT; by default while the scans stay within their credit), or the
         * furthest next use is evicted (Belady) and the search starts again. */
        int scanned = 0;
        while ((got = tp__alloc_find_window_keyed(&P->dev[d], size, pin, P->walk, score_victim, P, addr, P->victims,
                                                  &nvict)) == 2) {
            if (P->scan == SCAN_ALWAYS || (P->scan == SCAN_CREDIT && P->scan_credit >= P->dev[d].nblocks)) {
                if (P->scan == SCAN_CREDIT) P->scan_credit -= P->dev[d].nblocks;
                P->mg->counters.dev[d].window_scans++;
                got = tp__alloc_find_window(&P->dev[d], size, score_victim, P, addr, P->victims, &nvict);
                scanned = 1;
                break;
            }
            P->mg->counters.dev[d].window_belady++;
            evict(P, P->victims[0]);
            if (P->st) return 0;
        }
        if (!scanned && P->check_window) check_window(P, d, size, got, *addr, nvict);
    }
    if (!got) return 0;
    for (uint32_t i = 0; i < nvict && !P->st; i++) evict(P, P->victims[i]);
    return !P->st;
}

/* Whether x's last reader is a kernel in place on it: x's bytes live on as that kernel's
 * value, so x never dies (score_dying, setup's dies[]). */
static int read_last_in_place(const planner *P, uint32_t x)
{
    uint32_t t = P->V[P->use_pos[P->use_off[x + 1] - 1]];
    return P->inpl[t] >= 0 && V_(P, t)->inputs[P->inpl[t]] == x;
}

/* A victim for window_by_deaths: a block freed before pin_pos (its value's last use comes
 * earlier and it is not kept, an output, pinned, held, or read last in place); all others pinned.
 * (The rule by which exec() frees a value; setup's dies[] counts more, as dying or droppable.) */
static tp__victim_score score_dying(void *ctx, uint32_t x)
{
    const planner *P = ctx;
    tp__victim_score s = {1, next_use(P, x), 0};
    uint32_t n = P->use_off[x + 1] - P->use_off[x];
    if (!n || P->is_out[x] || P->keep[x] || P->pin[x] || (P->hold && P->hold[x])) return s;
    if (P->use_pos[P->use_off[x + 1] - 1] >= P->pin_pos || read_last_in_place(P, x)) return s;
    s.pinned = 0;
    return s;
}

/* Whether `size` bytes on d find a window once the values whose last use lies before p have
 * died, evicting nothing (one scan of d's blocks). */
static int window_by_deaths(planner *P, int d, uint32_t p, uint64_t size)
{
    if (!TP__GROW(P->victims, P->capvict, P->dev[d].nblocks + 1)) return oom(P);
    uint32_t pin = P->pin_pos, nv;
    uint64_t addr;
    P->pin_pos = p;
    int got = tp__alloc_find_window(&P->dev[d], size, score_dying, P, &addr, P->victims, &nv) == 1;
    P->pin_pos = pin;
    return got;
}

/* Whether the allocation horizon waits, rather than evicting ahead of execution, for `size`
 * bytes at position p on d (no window holds them now). By default while the bytes free now plus
 * those dying before p can hold them: otherwise waiting would not help, so values needed after
 * p go now and the transfers start early. In a plan with directed evictions
 * (tp_plan_opts.evictions) while the free bytes cannot: the strategy's evictions make the room,
 * and evicting ahead of them took weights it keeps; bytes that are free but not in one window
 * get one now (victims of the planner's choosing), or the reload would wait for later deaths
 * and the kernel needing it with it; but an output, which waits for no transfer, waits where
 * values dying before p will leave a window (evicting a weight for it cost a reload in the
 * link-bound forward; the wait holds back the reloads of later positions on d too). Outputs
 * pay a scan of the device's blocks for that, outside the scan credit, in these plans only
 * (docs/weight-offload.md "Inside turnip"). */
static int may_wait(planner *P, int d, uint32_t p, uint64_t size, int output)
{
    uint64_t avail = P->dev[d].cap - P->dev[d].used;
    if (!P->dir_off) return avail + dying(P, d, p) >= size;
    return avail < size || (output && window_by_deaths(P, d, p, size));
}

/* Memory for a need of position p on d (p's output, or one of its inputs to reload): a free
 * window, or, unless the allocation horizon (forced = 0) may wait (may_wait), one cleared by
 * eviction. A forced step (the execution horizon is at p) evicts whatever it must, p's inputs
 * aside. */
static int alloc_for(planner *P, int d, uint32_t p, uint64_t size, int output, int forced, uint64_t *addr)
{
    /* pack_below: small values at the bottom, large ones stacked down from the top */
    tp__fit fit = !P->pack_below ? TP__FIT_OLDEST : size < P->pack_below ? TP__FIT_LOWEST : TP__FIT_HIGHEST;
    if (tp__alloc_find(&P->dev[d], size, fit, addr)) return 1;
    if (!forced && may_wait(P, d, p, size, output)) return 0;
    if (!P->ending && P->nkeep_in) { /* first a window of free bytes and dead kept inputs only: as if freed */
        P->only_dead = 1;
        int got = evict_window(P, d, size, p, addr);
        P->only_dead = 0;
        if (got || P->st) return got;
    }
    return evict_window(P, d, size, p, addr);
}

/* Satisfies p's needs on d: its missing inputs are reloaded, then its output gets a region.
 * Returns 0 when the allocation horizon must wait; a forced step always succeeds, falling
 * back to compact() when pinned inputs fragment the device. */
static void compact(planner *P, int d, uint32_t p);
static int satisfy(planner *P, int d, uint32_t p, int forced)
{
    uint32_t t = P->V[p];
    const tp_vertex *v = V_(P, t);
    uint64_t addr;
    if (reads_on(P, t, d) && !P->rdone[p]) {
        uint32_t stamp = distinct_begin(P);
        for (uint32_t k = 0; k < v->ninputs && !P->st; k++) {
            uint32_t x = v->inputs[k];
            if (!first_time(P, x, stamp) || P->dcopy[x] != TP__NONE) continue;
            /* made in place by a position not run yet: by one before p on d, which the horizon has
             * satisfied, so its input is resident (or itself made in place by an earlier position
             * not run yet), pinned until it runs and then x's (no reload).
             * The horizon waits at a sum-into chain add's value (the partials added after it get
             * their regions as the chain advances, not all at once) and in a plan with directed
             * evictions (whose strategy leaves what the horizon placed where it is) */
            if (P->hcopy[x] == TP__NONE) {
                if ((P->chain && P->chain[x]) || P->dir_off) return 0;
                continue;
            }
            if (!alloc_for(P, d, p, V_(P, x)->bytes, 0, forced, &addr)) {
                if (forced && !P->st) compact(P, d, p);
                return forced;
            }
            do_reload(P, x, d, addr);
        }
        P->rdone[p] = 1;
    }
    if (v->device == d && !P->wdone[p] && P->inpl[t] >= 0) P->wdone[p] = 1; /* region: its input's, at exec */
    if (v->device == d && !P->wdone[p] && !P->st) {
        if (!alloc_for(P, d, p, v->bytes, 1, forced, &addr)) {
            if (forced && !P->st) compact(P, d, p);
            return forced;
        }
        do_output(P, p, addr);
        P->wdone[p] = 1;
    }
    return !P->st;
}

typedef struct {
    uint32_t x; /* value */
    int output;
    uint64_t align, bytes;
} need;

static int need_cmp(const void *a, const void *b)
{
    const need *x = a, *y = b;
    if (x->align != y->align) return x->align < y->align ? 1 : -1;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return x->x < y->x ? -1 : x->x > y->x;
}

/* Last resort when pinned inputs fragment device d: clear it and pack p's tensors. */
static void compact(planner *P, int d, uint32_t p)
{
    uint32_t t = P->V[p];
    const tp_vertex *v = V_(P, t);
    uint32_t nvict = 0;
    if (!TP__GROW(P->victims, P->capvict, P->dev[d].nblocks + 1)) {
        oom(P);
        return;
    }
    for (uint32_t b = P->dev[d].head; b != TP__NONE; b = P->dev[d].b[b].next)
        if (P->dev[d].b[b].owner != TP__NONE && !P->pin[P->dev[d].b[b].owner] && !(P->hold && P->hold[P->dev[d].b[b].owner]))
            P->victims[nvict++] = P->dev[d].b[b].owner;
    for (uint32_t i = 0; i < nvict && !P->st; i++) evict(P, P->victims[i]);
    need *nd = malloc((v->ninputs + 1) * sizeof *nd);
    if (!nd) {
        oom(P);
        return;
    }
    uint32_t nn = 0;
    if (reads_on(P, t, d)) {
        uint32_t stamp = distinct_begin(P);
        for (uint32_t k = 0; k < v->ninputs; k++) {
            uint32_t x = v->inputs[k];
            if (first_time(P, x, stamp) && P->dcopy[x] == TP__NONE) /* pinned inputs stay where they are */
                nd[nn++] = (need){x, 0, tp__align_of(V_(P, x)->bytes), V_(P, x)->bytes};
        }
    }
    if (v->device == d && !P->wdone[p] && P->inpl[t] < 0) nd[nn++] = (need){t, 1, tp__align_of(v->bytes), v->bytes};
    qsort(nd, nn, sizeof *nd, need_cmp);
    for (uint32_t i = 0; i < nn && !P->st; i++) {
        uint64_t addr;
        if (!tp__alloc_find(&P->dev[d], nd[i].bytes, TP__FIT_LOWEST, &addr)) {
            P->st = tp__fail(P->err, TP_ERR_INFEASIBLE, "vertex '%s': cannot pack its tensors on device %d%s", v->id, d,
                             P->pinned[d] ? " around the pinned resident inputs (they fragment it)" : " (internal error)");
            break;
        }
        if (nd[i].output) do_output(P, p, addr);
        else do_reload(P, nd[i].x, d, addr);
    }
    free(nd);
    if (reads_on(P, t, d)) P->rdone[p] = 1;
    if (v->device == d) P->wdone[p] = 1;
}

static void advance(planner *P, int d)
{
    while (P->h[d] < P->nL[d] && !P->st && satisfy(P, d, P->L[d][P->h[d]], 0)) P->h[d]++;
}

/* Runs position p: reads, then frees what has no further use. */
static void exec(planner *P, uint32_t p)
{
    uint32_t t = P->V[p];
    const tp_vertex *v = V_(P, t);
    uint32_t buf[16], *from = v->ninputs <= 16 ? buf : malloc(v->ninputs * sizeof *from);
    if (!from) {
        oom(P);
        return;
    }
    for (uint32_t k = 0; k < v->ninputs; k++) from[k] = P->dcopy[v->inputs[k]];
    uint32_t ix = P->inpl[t] >= 0 ? v->inputs[P->inpl[t]] : TP__NONE;
    if (ix != TP__NONE) { /* in place: after every reader of ix's copy, into its region */
        P->nscr = 0;
        P->seen_stamp++;
        collect_rel(P, P->drd[ix]);
        const tp__mv *src = &P->mg->v[P->dcopy[ix]];
        /* a sum-into chain add's in-place source is not an edge of the final plan (see prune_implied) */
        int ch = P->chain && P->chain[t] && P->inpl[t] == 0;
        uint32_t mk = new_mv(P, TP_M_KERNEL, t, v->device, TP_SPACE_DEVICE, src->offset, src->bytes, from + ch,
                             v->ninputs - (uint32_t)ch);
        if (P->st) {
            if (from != buf) free(from);
            return;
        }
        P->mg->v[mk].inplace = (uint32_t)P->inpl[t] + 1;
        P->mgv[t] = mk;
        P->dirty[v->device] = 1; /* horizons waiting for this value (sum-into, directed evictions) go on */
    }
    uint32_t m = P->mgv[t]; /* its copy may already be evicted (offloaded) ahead */
    set_reads(P, m, from, v->ninputs);
    if (from != buf) free(from);
    uint32_t stamp = distinct_begin(P);
    for (uint32_t k = 0; k < v->ninputs; k++) {
        uint32_t x = v->inputs[k];
        if (!first_time(P, x, stamp)) continue;
        P->drd[x] = rl_push(P, P->drd[x], m);
        P->use_cur[x]++;
        if (x == ix) { /* the block passes to t's value; ix's host copy (if any) is not t's */
            int d = v->device;
            tp__alloc_reown(&P->dev[d], P->dblk[x], t);
            P->dcopy[t] = m;
            P->dblk[t] = P->dblk[x];
            P->drd[t] = TP__NONE;
            P->dcopy[x] = P->dblk[x] = P->drd[x] = TP__NONE;
            P->must[x] = 0; /* a pinned input's bytes live on as t's (pinned in turn) */
            set_dkey(P, t);
        }
        if (next_use(P, x) != INF_USE || P->is_out[x] || P->keep[x]) { /* stays: its key moves on */
            if (P->dcopy[x] != TP__NONE) set_dkey(P, x);
        } else {
            if (P->dcopy[x] != TP__NONE) free_device_copy(P, x);
            if (P->hcopy[x] != TP__NONE && P->mg->v[P->hcopy[x]].kind == TP_M_OFFLOAD) {
                tp__alloc_release(&P->host, P->hblk[x], rel_of(P, P->hrd[x], P->hcopy[x]), ++P->relstamp);
                P->hcopy[x] = P->hblk[x] = P->hrd[x] = TP__NONE;
            }
        }
    }
    if (P->use_off[t + 1] == P->use_off[t] && !P->is_out[t] && !P->keep[t] && P->dcopy[t] != TP__NONE)
        free_device_copy(P, t);
}

/* The directed evictions that follow t (tp_plan_opts.evictions): each value on its device,
 * not pinned (none is held: tp_plan refuses sum-into with them), still needed (or an output, or kept), and not yet placed by the allocation
 * horizon for a position at or before the horizon's, is dropped or offloaded. */
static void directed(planner *P, uint32_t t)
{
    for (uint32_t i = P->dir_off[t]; i < P->dir_off[t + 1] && !P->st; i++) {
        uint32_t x = P->dir_val[i];
        if (P->dcopy[x] == TP__NONE || P->pin[x]) continue; /* (no sum-into holds: tp_plan refuses both) */
        uint64_t nu = next_use(P, x);
        if (nu == INF_USE && !P->is_out[x] && !P->keep[x]) continue;
        int d = V_(P, x)->device;
        uint32_t hz = P->h[d] < P->nL[d] ? P->L[d][P->h[d]] : P->npos;
        if (nu != INF_USE && nu <= hz) continue; /* the horizon has it placed: the prefetch is done */
        evict(P, x);
        if (P->st) return;
        P->mg->counters.dev[d].directed_count++;
        P->mg->counters.dev[d].directed_bytes += V_(P, x)->bytes;
    }
}

/* A need and a capacity for a message (bn, bc: 48 bytes each): sizes as tp_format_size writes
 * them, with the exact bytes beside both where the two would read alike (512.0 KiB against a
 * capacity of 524,287 bytes). */
static void need_cap(uint64_t want, uint64_t cap, char *bn, char *bc)
{
    char a[32], b[32];
    tp_format_size(want, a, sizeof a);
    tp_format_size(cap, b, sizeof b);
    if (strcmp(a, b) || want == cap) {
        snprintf(bn, 48, "%s", a);
        snprintf(bc, 48, "%s", b);
    } else {
        snprintf(bn, 48, "%s (%llu B)", a, (unsigned long long)want);
        snprintf(bc, 48, "%s (%llu B)", b, (unsigned long long)cap);
    }
}

static tp_status precheck(planner *P)
{
    uint64_t kept[TP_MAX_DEVICES] = {0}; /* kept outputs stay together at the end */
    for (uint32_t x = 0; x < P->nv; x++)
        if (P->must[x]) {
            int d = V_(P, x)->device;
            kept[d] += V_(P, x)->bytes;
            if (kept[d] > P->dev[d].cap) {
                char b1[48], b2[48];
                need_cap(kept[d], P->dev[d].cap, b1, b2);
                return tp__fail(P->err, TP_ERR_INFEASIBLE, "kept values on device %d need %s or more, capacity is %s (at '%s')", d,
                                b1, b2, V_(P, x)->id);
            }
        }
    for (uint32_t p = 0; p < P->npos; p++) {
        uint32_t t = P->V[p];
        const tp_vertex *v = V_(P, t);
        int rd = tp_graph_read_device(P->g, t);
        uint64_t in;
        tp__vertex_need(P->g, t, P->vmark, distinct_begin(P), &in);
        char b1[48], b2[48], b3[32];
        uint64_t out = P->inpl[t] >= 0 ? 0 : v->bytes; /* in place: no new bytes */
        if (P->pinned[rd] || P->pinned[v->device]) { /* pinned inputs hold their bytes all along */
            uint64_t pin_in = 0, stamp = distinct_begin(P);
            for (uint32_t k = 0; k < v->ninputs; k++)
                if (first_time(P, v->inputs[k], (uint32_t)stamp) && P->pin[v->inputs[k]]) pin_in += V_(P, v->inputs[k])->bytes;
            uint64_t other = P->pinned[rd] - (pin_in < P->pinned[rd] ? pin_in : P->pinned[rd]);
            uint64_t want = (rd == v->device ? in + out : in) - pin_in;
            if (other > P->dev[rd].cap || want > P->dev[rd].cap - other) {
                need_cap(want, P->dev[rd].cap, b1, b2);
                return tp__fail(P->err, TP_ERR_INFEASIBLE,
                                "vertex '%s': needs %s on device %d beside the %s of pinned resident inputs, capacity is %s", v->id,
                                b1, rd, tp_format_size(other, b3, sizeof b3), b2);
            }
        }
        if (rd == v->device) {
            if (in + out > P->need_max[rd]) P->need_max[rd] = in + out;
        } else {
            if (in > P->need_max[rd]) P->need_max[rd] = in;
            if (v->bytes > P->need_max[v->device]) P->need_max[v->device] = v->bytes;
        }
        if (rd == v->device) {
            if (in + out > P->dev[rd].cap) {
                need_cap(in + out, P->dev[rd].cap, b1, b2);
                return tp__fail(P->err, TP_ERR_INFEASIBLE, "vertex '%s': needs %s of inputs and output on device %d, capacity is %s",
                                v->id, b1, rd, b2);
            }
        } else {
            if (in > P->dev[rd].cap) {
                need_cap(in, P->dev[rd].cap, b1, b2);
                return tp__fail(P->err, TP_ERR_INFEASIBLE, "vertex '%s': needs %s of input on device %d, capacity is %s", v->id, b1,
                                rd, b2);
            }
            if (v->bytes > P->dev[v->device].cap) {
                need_cap(v->bytes, P->dev[v->device].cap, b1, b2);
                return tp__fail(P->err, TP_ERR_INFEASIBLE, "vertex '%s': needs %s of output on device %d, capacity is %s", v->id,
                                b1, v->device, b2);
            }
        }
    }
    return TP_OK;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Final deps: reads' producers and memory deps, sorted, without repeats. */
static tp_status build_deps(planner *P)
{
    tp_memgraph *mg = P->mg;
    size_t total = mg->nreads + mg->nmdeps;
    mg->deps_off = malloc((mg->n + 1) * sizeof *mg->deps_off);
    mg->deps = malloc((total + 1) * sizeof *mg->deps);
    if (!mg->deps_off || !mg->deps) return oom(P), P->st;
    size_t k = 0;
    for (size_t i = 0; i < mg->n; i++) {
        mg->deps_off[i] = (uint32_t)k;
        const tp__mv *m = &mg->v[i];
        size_t start = k;
        P->seen_stamp++;
        for (int pass = 0; pass < 2; pass++) {
            uint32_t n = pass ? m->nmdeps : m->nreads;
            if (!n) continue; /* the arrays may be NULL: no pointer arithmetic on them */
            const uint32_t *src = pass ? mg->mdeps + m->mdeps_off : mg->reads + m->reads_off;
            for (uint32_t j = 0; j < n; j++) {
                if (P->seen[src[j]] == P->seen_stamp) continue;
                P->seen[src[j]] = P->seen_stamp;
                mg->deps[k++] = src[j];
            }
        }
        qsort(mg->deps + start, k - start, sizeof *mg->deps, cmp_u32);
    }
    mg->deps_off[mg->n] = (uint32_t)k;
    return TP_OK;
}

void tp_plan_opts_init(tp_plan_opts *opts, int ndevices, uint64_t device_mem)
{
    memset(opts, 0, sizeof *opts);
    opts->ndevices = ndevices;
    for (int d = 0; d < ndevices && d < TP_MAX_DEVICES; d++) opts->device_mem[d] = device_mem;
    opts->order = TP_ORDER_DEFAULT;
    opts->sum_into = 1;
}

static void planner_free(planner *P)
{
    free(P->V);
    free(P->pos);
    free(P->use_pos);
    free(P->use_cur);
    free(P->is_out);
    free(P->loaded);
    free(P->rdone);
    free(P->wdone);
    free(P->keep);
    free(P->must);
    free(P->inpl);
    free(P->pin);
    free(P->dcopy);
    free(P->dblk);
    free(P->drd);
    free(P->hcopy);
    free(P->hblk);
    free(P->hrd);
    free(P->vmark);
    free(P->mgv);
    free(P->dies);
    for (int d = 0; d < P->nd; d++) {
        free(P->L[d]);
        tp__alloc_free(&P->dev[d]);
    }
    tp__alloc_free(&P->host);
    free(P->rl_id);
    free(P->rl_next);
    free(P->scr);
    free(P->seen);
    free(P->victims);
    free(P->dir_off);
    free(P->dir_val);
}

/* Directed evictions by the vertex they follow (a CSR over TaskGraph vertices). */
static tp_status setup_directed(planner *P, const tp_plan_opts *opts)
{
    uint32_t n = P->nv, m = opts->nevictions;
    if (!opts->evictions) return tp__fail(P->err, TP_ERR_ARG, "tp_plan: %u evictions given as NULL", m);
    for (uint32_t i = 0; i < m; i++) {
        const tp_plan_evict *ev = &opts->evictions[i];
        if (ev->value >= n || ev->after >= n)
            return tp__fail(P->err, TP_ERR_ARG, "eviction %u: vertex %u out of range (%u vertices)", i,
                            ev->value >= n ? ev->value : ev->after, n);
        if (V_(P, ev->after)->kind == TP_V_INPUT)
            return tp__fail(P->err, TP_ERR_ARG, "eviction %u: '%s' is an input; an eviction follows a kernel or transfer", i,
                            V_(P, ev->after)->id);
    }
    P->dir_off = calloc((size_t)n + 2, sizeof *P->dir_off);
    P->dir_val = malloc(((size_t)m + 1) * sizeof *P->dir_val);
    if (!P->dir_off || !P->dir_val) return tp__fail(P->err, TP_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < m; i++) P->dir_off[opts->evictions[i].after + 2]++;
    for (uint32_t t = 0; t < n; t++) P->dir_off[t + 2] += P->dir_off[t + 1];
    for (uint32_t i = 0; i < m; i++) P->dir_val[P->dir_off[opts->evictions[i].after + 1]++] = opts->evictions[i].value;
    return TP_OK;
}

/* why a kernel cannot update a read in place (tp__inplace_rule), as the message says it */
static const char *const inplace_words[] = {
    [TP__INPLACE_READ_TWICE] = "also another of its arguments", [TP__INPLACE_OUTPUT] = "an output",
    [TP__INPLACE_KEPT] = "kept past the run", [TP__INPLACE_SIZE] = "of another size than its output",
    [TP__INPLACE_READ_AFTER] = "read after it"};

static tp_status setup(planner *P, const tp_plan_opts *opts)
{
    const tp_graph *g = P->g;
    uint32_t n = P->nv = tp_graph_size(g);
    uint32_t *order = malloc((n + 1) * sizeof *order);
    P->V = malloc((n + 1) * sizeof *P->V);
    P->pos = malloc((n + 1) * sizeof *P->pos);
    P->use_cur = calloc(n + 1, sizeof *P->use_cur);
    P->scan = !opts->evict_budget ? SCAN_CREDIT : opts->evict_budget == TP_EVICT_EXACT ? SCAN_ALWAYS : SCAN_NEVER;
    P->walk = P->scan == SCAN_NEVER ? opts->evict_budget : TP_PLAN_WINDOW_WALK;
    P->pack_below = opts->pack_below;
    const char *cw = getenv("TURNIP_CHECK_WINDOW");
    P->check_window = cw && !strcmp(cw, "1");
    P->is_out = calloc(n + 1, 1);
    P->loaded = calloc(n + 1, 1);
    P->rdone = calloc(n + 1, 1);
    P->wdone = calloc(n + 1, 1);
    P->keep = calloc(n + 1, 1);
    P->must = calloc(n + 1, 1);
    P->inpl = malloc((n + 1) * sizeof *P->inpl);
    P->pin = calloc(n + 1, 1);
    P->dcopy = malloc((n + 1) * sizeof *P->dcopy);
    P->dblk = malloc((n + 1) * sizeof *P->dblk);
    P->drd = malloc((n + 1) * sizeof *P->drd);
    P->hcopy = malloc((n + 1) * sizeof *P->hcopy);
    P->hblk = malloc((n + 1) * sizeof *P->hblk);
    P->hrd = malloc((n + 1) * sizeof *P->hrd);
    P->vmark = calloc(n + 1, sizeof *P->vmark);
    P->mgv = malloc((n + 1) * sizeof *P->mgv);
    P->mg->order_pos = malloc((n + 1) * sizeof *P->mg->order_pos);
    if (!order || !P->V || !P->pos || !P->use_cur || !P->is_out || !P->loaded ||
        !P->rdone || !P->wdone || !P->keep || !P->must || !P->inpl || !P->pin || !P->dcopy || !P->dblk || !P->drd || !P->hcopy || !P->hblk ||
        !P->hrd || !P->vmark || !P->mgv || !P->mg->order_pos) {
        free(order);
        return tp__fail(P->err, TP_ERR_NOMEM, "out of memory");
    }
    tp_status s = tp_graph_order(g, opts->order, order, P->err);
    if (s) {
        free(order);
        return s;
    }
    P->npos = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t x = order[i];
        P->mg->order_pos[x] = i;
        P->pos[x] = UINT32_MAX;
        if (V_(P, x)->kind != TP_V_INPUT) {
            P->pos[x] = P->npos;
            P->V[P->npos++] = x;
        }
        P->dcopy[x] = P->dblk[x] = P->drd[x] = P->hcopy[x] = P->hblk[x] = P->hrd[x] = P->mgv[x] = TP__NONE;
    }
    free(order);
    /* uses: consumer positions, sorted */
    const uint32_t *cons_off, *cons;
    tp_graph_consumer_csr(g, &cons_off, &cons);
    P->use_off = cons_off;
    size_t total = cons_off[n];
    P->use_pos = malloc((total + 1) * sizeof *P->use_pos);
    if (!P->use_pos) return tp__fail(P->err, TP_ERR_NOMEM, "out of memory");
    for (uint32_t x = 0; x < n; x++) {
        uint32_t nc = cons_off[x + 1] - cons_off[x];
        for (uint32_t k = 0; k < nc; k++) P->use_pos[cons_off[x] + k] = P->pos[cons[cons_off[x] + k]];
        qsort(P->use_pos + cons_off[x], nc, sizeof *P->use_pos, cmp_u32);
    }
    for (uint32_t k = 0; k < tp_graph_num_outputs(g); k++) P->is_out[tp_graph_outputs(g)[k]] = 1;
    /* sessions: kept values, and in-place kernels where this order allows them (the kernel is
     * its input's last reader, the input is neither an output nor kept, it is read once, and
     * the sizes agree); elsewhere the kernel runs out of place */
    for (uint32_t x = 0; x < n; x++) {
        int host_copy = 1;
        P->pin[x] = (tp_graph_resident_flags(g, x) & TP_RESIDENT_PIN) != 0;
        P->keep[x] = (uint8_t)(tp_graph_keep(g, x) || P->pin[x]);
        P->must[x] = P->pin[x] || (P->keep[x] && (P->is_out[x] || (tp_graph_resident(g, x, NULL, &host_copy) && !host_copy)));
        if (P->pin[x]) P->pinned[V_(P, x)->device] += V_(P, x)->bytes;
        P->nkeep_in += P->keep[x] && !P->is_out[x];
        P->inpl[x] = -1;
    }
    for (uint32_t t = 0; t < n; t++) {
        int k = tp_graph_inplace(g, t);
        if (k < 0) continue;
        const tp_vertex *v = V_(P, t);
        uint32_t x = v->inputs[k];
        tp__inplace_why why = tp__inplace_rule(g, t, k, P->is_out, P->use_pos[cons_off[x + 1] - 1] == P->pos[t]);
        if (why == TP__INPLACE_OK) {
            P->inpl[t] = k;
            if (P->pin[x]) P->pin[t] = P->keep[t] = 1; /* pinned in turn (inputs come before their kernels) */
        } else if (P->pin[x]) {
            return tp__fail(P->err, TP_ERR_INFEASIBLE,
                            "kernel '%s' updates pinned input '%s' in place, but '%s' is %s: the pinned region would not be updated",
                            v->id, V_(P, x)->id, V_(P, x)->id,
                            inplace_words[why]);
        }
    }
    if (opts->nevictions) {
        tp_status st = setup_directed(P, opts);
        if (st) return st;
    }
    /* bytes dying at each position, per device (a value dies after its last use, unless a
     * kernel in place on it reads it last: its bytes pass to that kernel's value); may_wait
     * reads them only in a plan without directed evictions */
    if (!P->dir_off) {
        P->dies = calloc((size_t)P->nd * (P->npos + 1), sizeof *P->dies);
        if (!P->dies) return tp__fail(P->err, TP_ERR_NOMEM, "out of memory");
        for (uint32_t x = 0; x < n; x++) {
            uint32_t nu = P->use_off[x + 1] - P->use_off[x];
            if (!nu || P->is_out[x] || P->pin[x]) continue; /* kept inputs: droppable once dead, as good as freed */
            if (read_last_in_place(P, x)) continue;
            uint32_t last = P->use_pos[P->use_off[x + 1] - 1];
            if (last + 1 <= P->npos) P->dies[(size_t)V_(P, x)->device * (P->npos + 1) + last + 1] += V_(P, x)->bytes;
        }
        for (int d = 0; d < P->nd; d++)
            for (uint32_t q = 1; q <= P->npos; q++)
                P->dies[(size_t)d * (P->npos + 1) + q] += P->dies[(size_t)d * (P->npos + 1) + q - 1];
    }
    /* per-device horizon lists */
    for (int d = 0; d < P->nd; d++) {
        P->L[d] = malloc((P->npos + 1) * sizeof *P->L[d]);
        if (!P->L[d]) return tp__fail(P->err, TP_ERR_NOMEM, "out of memory");
        if (!tp__alloc_init(&P->dev[d], opts->device_mem[d])) return tp__fail(P->err, TP_ERR_NOMEM, "out of memory");
        P->mg->cap[d] = opts->device_mem[d];
        P->mg->counters.dev[d].capacity = opts->device_mem[d];
        P->dirty[d] = 1;
    }
    for (uint32_t p = 0; p < P->npos; p++) {
        uint32_t t = P->V[p];
        int wd = V_(P, t)->device, rd = tp_graph_read_device(g, t);
        P->L[wd][P->nL[wd]++] = p;
        if (rd != wd) P->L[rd][P->nL[rd]++] = p;
    }
    P->host_cap = opts->host_mem ? opts->host_mem : UINT64_MAX / 4;
    return TP_OK;
}

/* Sessions: resident inputs are on their devices before anything runs, at the regions they
 * declare (checked here: inside the device, aligned, not overlapping). They count as loaded;
 * under pressure they are dropped (host copy valid) or offloaded like any value. */
static tp_status place_resident(planner *P)
{
    size_t nr = 0;
    tp__span *r = malloc(((size_t)P->nv + 1) * sizeof *r);
    if (!r) return tp__fail(P->err, TP_ERR_NOMEM, "out of memory");
    for (uint32_t x = 0; x < P->nv; x++) {
        uint64_t off;
        if (V_(P, x)->kind != TP_V_INPUT || !tp_graph_resident(P->g, x, &off, NULL)) continue;
        r[nr++] = (tp__span){V_(P, x)->device, off, 0, x}; /* b unused: off + bytes may not fit yet */
    }
    qsort(r, nr, sizeof *r, tp__span_cmp);
    tp_status s = TP_OK;
    char b1[32], b2[32];
    for (size_t i = 0; i < nr && !s; i++) {
        int d = r[i].device;
        uint64_t off = r[i].a;
        uint32_t x = r[i].v;
        uint64_t bytes = V_(P, x)->bytes, cap = P->dev[d].cap;
        if (off > cap || bytes > cap - off)
            s = tp__fail(P->err, TP_ERR_INFEASIBLE, "resident input '%s': [%llu, +%s) lies outside device %d's %s", V_(P, x)->id,
                         (unsigned long long)off, tp_format_size(bytes, b1, sizeof b1), d, tp_format_size(cap, b2, sizeof b2));
        else if (off % tp__align_of(bytes))
            s = tp__fail(P->err, TP_ERR_INVALID, "resident input '%s': offset %llu is not a multiple of its alignment %llu",
                         V_(P, x)->id, (unsigned long long)off, (unsigned long long)tp__align_of(bytes));
        else if (i > 0 && r[i - 1].device == d && r[i - 1].a + V_(P, r[i - 1].v)->bytes > off)
            s = tp__fail(P->err, TP_ERR_INVALID, "resident inputs '%s' and '%s' overlap on device %d", V_(P, r[i - 1].v)->id,
                         V_(P, x)->id, d);
        if (s) break;
        if (tp_graph_resident_flags(P->g, x) & TP_RESIDENT_LOAD) { /* a cache tensor's load: into its region, first */
            do_reload(P, x, d, off);
            if ((s = P->st)) break;
            continue;
        }
        uint32_t blk = take(P, &P->dev[d], off, bytes, x);
        uint32_t m = new_mv(P, TP_M_RESIDENT, x, d, TP_SPACE_DEVICE, off, bytes, NULL, 0);
        if ((s = P->st)) break;
        P->dcopy[x] = m;
        P->dblk[x] = blk;
        P->drd[x] = TP__NONE;
        set_dkey(P, x);
        P->loaded[x] = 1;
        P->mg->counters.dev[d].resident_count++;
        P->mg->counters.dev[d].resident_bytes += bytes;
        if (P->use_off[x + 1] == P->use_off[x] && !P->is_out[x] && !P->keep[x]) free_device_copy(P, x);
    }
    free(r);
    return s;
}

/* Sessions: after the last position, kept outputs that were evicted come back (everything
 * else may make room), and the kept values on a device are listed. */
/* Last resort at the end: device d is cleared and every value that must stay on it is placed
 * again, packed from address 0 in decreasing alignment (which fits: precheck summed them). */
static void repack_must(planner *P, int d)
{
    uint32_t nv = 0, nn = 0;
    need *nd = malloc(((size_t)P->nv + 1) * sizeof *nd);
    if (!nd || !TP__GROW(P->victims, P->capvict, P->dev[d].nblocks + 1)) {
        free(nd);
        oom(P);
        return;
    }
    for (uint32_t b = P->dev[d].head; b != TP__NONE; b = P->dev[d].b[b].next)
        if (P->dev[d].b[b].owner != TP__NONE && !P->pin[P->dev[d].b[b].owner] && !(P->hold && P->hold[P->dev[d].b[b].owner]))
            P->victims[nv++] = P->dev[d].b[b].owner;
    for (uint32_t i = 0; i < nv && !P->st; i++) evict(P, P->victims[i]);
    for (uint32_t x = 0; x < P->nv; x++)
        if (P->must[x] && V_(P, x)->device == d && P->dcopy[x] == TP__NONE) nd[nn++] = (need){x, 0, tp__align_of(V_(P, x)->bytes), V_(P, x)->bytes};
    qsort(nd, nn, sizeof *nd, need_cmp);
    for (uint32_t i = 0; i < nn && !P->st; i++) {
        uint64_t addr;
        if (!tp__alloc_find(&P->dev[d], nd[i].bytes, TP__FIT_LOWEST, &addr))
            P->st = tp__fail(P->err, TP_ERR_INFEASIBLE, "kept value '%s' cannot be packed on device %d (internal error)",
                             V_(P, nd[i].x)->id, d);
        else do_reload(P, nd[i].x, d, addr);
    }
    free(nd);
}

/* Sessions: after the last position, kept values that must stay on the devices (kept outputs,
 * kept inputs without a host copy) come back if they were evicted (everything else may make
 * room; if fragments leave no window the device is repacked), and the kept values on a device
 * are listed. */
static tp_status place_kept(planner *P)
{
    tp_memgraph *mg = P->mg;
    P->ending = 1;
    P->e = P->npos;
    for (uint32_t x = 0; x < P->nv && !P->st; x++) {
        if (!P->must[x] || P->dcopy[x] != TP__NONE) continue;
        int d = V_(P, x)->device;
        uint64_t addr;
        if (tp__alloc_find(&P->dev[d], V_(P, x)->bytes, TP__FIT_LOWEST, &addr) ||
            evict_window(P, d, V_(P, x)->bytes, P->npos, &addr))
            do_reload(P, x, d, addr);
        else if (!P->st)
            repack_must(P, d);
    }
    /* kept inputs leave a window as large as the largest single need, so that a next run of
     * the same graph can stream what is not resident without displacing what is */
    P->ending = 2; /* only kept inputs may go, and only where a next run will load some */
    uint8_t loads[TP_MAX_DEVICES] = {0};
    for (uint32_t x = 0; x < P->nv; x++)
        if (P->keep[x] && !P->must[x] && V_(P, x)->kind == TP_V_INPUT && P->dcopy[x] == TP__NONE) loads[V_(P, x)->device] = 1;
    for (int d = 0; d < P->nd && !P->st; d++) {
        uint64_t addr;
        if (loads[d] && P->need_max[d] && !tp__alloc_find(&P->dev[d], P->need_max[d], TP__FIT_LOWEST, &addr))
            evict_window(P, d, P->need_max[d], P->npos, &addr); /* none: kept outputs fill it, fine */
    }
    for (uint32_t x = 0; x < P->nv && !P->st; x++) {
        if (!tp_graph_keep(P->g, x) || P->dcopy[x] == TP__NONE) continue; /* pinned only: not listed */
        if (!TP__GROW(mg->kept, P->capkept, mg->nkept + 1)) return oom(P), P->st;
        mg->kept[mg->nkept++] = P->dcopy[x];
    }
    return P->st;
}

tp_status tp__plan_graph(const tp_graph *g, const tp_plan_opts *opts, const tp__lower_view *lv, tp_memgraph **out,
                         tp_error *err)
{
    double t0 = tp__now();
    if (!g || !opts || !out) return tp__fail(err, TP_ERR_ARG, "tp_plan: NULL argument");
    if (opts->ndevices != tp_graph_devices(g))
        return tp__fail(err, TP_ERR_ARG, "%d device capacities given for a graph of %d devices",
                        opts->ndevices, tp_graph_devices(g));
    for (int d = 0; d < opts->ndevices; d++)
        if (!opts->device_mem[d]) return tp__fail(err, TP_ERR_ARG, "device %d: capacity is 0", d);
    planner P0, *P = &P0;
    memset(P, 0, sizeof *P);
    P->g = g;
    P->gv = tp_graph_vertices(g);
    P->err = err;
    P->nd = opts->ndevices;
    P->seen_stamp = 1;
    if (lv) {
        P->hold = lv->hold;
        P->chain = lv->chain;
    }
    P->mg = calloc(1, sizeof *P->mg);
    if (!P->mg) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    P->mg->g = g;
    P->mg->ndevices = P->nd;
    P->mg->counters.ndevices = P->nd;
    P->st = setup(P, opts);
    if (!P->st) P->st = precheck(P);
    /* Inputs live in host memory from the start and never move: those the TaskGraph places in
     * its reserved host bytes [0, R) stay where the caller put them; the others are packed
     * (decreasing alignment, so no padding) into [R, in_end); the host allocator manages only
     * the offload arena after it, so its scans never pass the (possibly many) inputs. */
    uint64_t reserved = tp_graph_host_reserved(g);
    if (!P->st && reserved > P->host_cap) {
        char b1[48], b2[48];
        need_cap(reserved, P->host_cap, b1, b2);
        P->st = tp__fail(err, TP_ERR_INFEASIBLE, "the TaskGraph reserves %s of host memory, host capacity is %s", b1, b2);
    }
    if (!P->st) {
        uint32_t nin = 0, nfix = 0;
        need *ins = malloc(((size_t)P->nv + 1) * sizeof *ins);
        tp__span *fix = malloc(((size_t)P->nv + 1) * sizeof *fix); /* the caller's (tp_graph_set_host) */
        if (!ins || !fix) P->st = tp__fail(err, TP_ERR_NOMEM, "out of memory");
        for (uint32_t x = 0; x < P->nv && !P->st; x++) {
            int host_copy = 1;
            uint64_t hoff;
            tp_graph_resident(g, x, NULL, &host_copy);
            if (V_(P, x)->kind != TP_V_INPUT || !host_copy) continue;
            if (tp_graph_host(g, x, &hoff)) /* placed by the caller (graph.c checked it lies in [0, R)) */
                fix[nfix++] = (tp__span){-1, hoff, hoff + V_(P, x)->bytes, x};
            else
                ins[nin++] = (need){x, 0, tp__align_of(V_(P, x)->bytes), V_(P, x)->bytes};
        }
        /* the caller's, by offset, none overlapping (a declaration made after finalize is checked
         * here) */
        if (!P->st) qsort(fix, nfix, sizeof *fix, tp__span_cmp);
        for (uint32_t i = 0; i < nfix && !P->st; i++) {
            if (fix[i].b > reserved) /* placed, then the reserve shrunk after finalize */
                P->st = tp__fail(err, TP_ERR_ARG, "vertex '%s': its host region [%llu, %llu) is not inside the reserved host "
                                 "bytes [0, %llu)", V_(P, fix[i].v)->id, (unsigned long long)fix[i].a,
                                 (unsigned long long)fix[i].b, (unsigned long long)reserved);
            else if (i && fix[i].a < fix[i - 1].b)
                P->st = tp__fail(err, TP_ERR_ARG, "vertex '%s': its host region overlaps that of '%s'", V_(P, fix[i].v)->id,
                                 V_(P, fix[i - 1].v)->id);
            else {
                P->nscr = 0;
                P->hcopy[fix[i].v] = new_mv(P, TP_M_INPUT, fix[i].v, -1, TP_SPACE_HOST, fix[i].a, fix[i].b - fix[i].a, NULL, 0);
            }
        }
        free(fix);
        if (!P->st) qsort(ins, nin, sizeof *ins, need_cmp);
        /* the rest from R rounded up to the largest alignment (no room for that: none at all) */
        uint64_t pad = (TP__MAX_ALIGN - reserved % TP__MAX_ALIGN) % TP__MAX_ALIGN;
        uint64_t in_end = pad <= P->host_cap - reserved ? reserved + pad : P->host_cap;
        for (uint32_t i = 0; i < nin && !P->st; i++) {
            uint32_t x = ins[i].x;
            if (ins[i].bytes > P->host_cap - in_end) {
                char b1[48], b2[48];
                uint64_t total = 0;
                for (uint32_t j = 0; j < nin; j++) total += ins[j].bytes;
                need_cap(total, P->host_cap, b1, b2);
                P->st = tp__fail(err, TP_ERR_INFEASIBLE,
                                 "vertex '%s': host memory too small for the inputs: they need %s, host capacity is %s",
                                 V_(P, x)->id, b1, b2);
                break;
            }
            P->nscr = 0;
            P->hcopy[x] = new_mv(P, TP_M_INPUT, x, -1, TP_SPACE_HOST, in_end, ins[i].bytes, NULL, 0);
            in_end += ins[i].bytes;
        }
        free(ins);
        P->in_end = in_end;
        P->host_end = in_end;
        if (!tp__alloc_init(&P->host, P->host_cap - in_end)) oom(P);
    }
    if (!P->st) P->st = place_resident(P);
    P->scan_credit = TP_PLAN_SCAN_BASE;
    for (P->e = 0; P->e < P->npos && !P->st; P->e++) {
        if (P->scan == SCAN_CREDIT) P->scan_credit += TP_PLAN_SCAN_CREDIT;
        for (int d = 0; d < P->nd && !P->st; d++)
            while (P->dirty[d] && !P->st) {
                P->dirty[d] = 0;
                advance(P, d);
            }
        uint32_t p = P->e, t = P->V[p];
        int wd = V_(P, t)->device, rd = tp_graph_read_device(g, t);
        /* the execution horizon reached p before the allocation horizons satisfied it */
        if (V_(P, t)->ninputs && !P->rdone[p]) satisfy(P, rd, p, 1);
        if (!P->wdone[p] && !P->st) satisfy(P, wd, p, 1);
        if (P->st) break;
        for (int side = 0; side < 2; side++) {
            int d = side ? rd : wd;
            if (P->h[d] < P->nL[d] && P->L[d][P->h[d]] == p) {
                P->h[d]++;
                P->dirty[d] = 1;
            }
        }
        exec(P, p);
        if (P->dir_off && !P->st) directed(P, t);
    }
    if (!P->st) P->st = place_kept(P);
    tp_memgraph *mg = P->mg;
    if (!P->st) P->st = build_deps(P);
    if (!P->st) {
        uint32_t no = tp_graph_num_outputs(g);
        mg->outputs = malloc((no + 1) * sizeof *mg->outputs);
        if (!mg->outputs) P->st = tp__fail(err, TP_ERR_NOMEM, "out of memory");
        for (uint32_t k = 0; k < no && !P->st; k++) {
            uint32_t x = tp_graph_outputs(g)[k];
            mg->outputs[k] = P->hcopy[x] != TP__NONE && !P->keep[x] ? P->hcopy[x] : P->dcopy[x];
        }
    }
    if (P->st) {
        planner_free(P);
        tp_memgraph_free(mg);
        return P->st;
    }
    mg->host_bytes = P->host_end;
    mg->counters.host_bytes = P->host_end;
    for (int d = 0; d < P->nd; d++) mg->counters.dev[d].peak_bytes = P->dev[d].peak;
    planner_free(P);
    mg->counters.plan_seconds = tp__now() - t0;
    *out = mg;
    return TP_OK;
}
