/* stats.c - plan statistics: the planner's counters and memory-dependency counts in O(V + E),
 * plus, only when asked (tp_memgraph_stats_audit), an audit of memory dependencies (how many
 * are already implied by other paths, found by a bounded backward search that only visits
 * vertices topologically after the dependency's source). */
#include <stdlib.h>
#include <string.h>
#include "turnip/io.h"
#include "plan/plan_internal.h"
#include "io/topo.h"

#define IMPLIED_BUDGET 2000

typedef struct {
    const tp_memgraph *mg;
    uint32_t *rank, *stack, *mark, stamp;
} audit;

/* 1 implied, 0 not implied, -1 gave up: is r an ancestor of u other than through r->u? */
static int implied(audit *A, uint32_t r, uint32_t u)
{
    const tp_memgraph *mg = A->mg;
    A->stamp++;
    size_t top = 0, visits = 0;
    for (uint32_t k = mg->deps_off[u]; k < mg->deps_off[u + 1]; k++) {
        uint32_t w = mg->deps[k];
        if (w == r || A->rank[w] < A->rank[r] || A->mark[w] == A->stamp) continue;
        A->mark[w] = A->stamp;
        A->stack[top++] = w;
    }
    while (top) {
        uint32_t w = A->stack[--top];
        if (++visits > IMPLIED_BUDGET) return -1;
        for (uint32_t k = mg->deps_off[w]; k < mg->deps_off[w + 1]; k++) {
            uint32_t x = mg->deps[k];
            if (x == r) return 1;
            if (A->rank[x] < A->rank[r] || A->mark[x] == A->stamp) continue;
            A->mark[x] = A->stamp;
            A->stack[top++] = x;
        }
    }
    return 0;
}

static int is_read(const tp_memgraph *mg, uint32_t u, uint32_t r)
{
    const tp__mv *m = &mg->v[u];
    for (uint32_t k = 0; k < m->nreads; k++)
        if (mg->reads[m->reads_off + k] == r) return 1;
    return 0;
}

void tp_memgraph_stats(const tp_memgraph *mg, tp_plan_stats *out)
{
    *out = mg->counters;
    out->vertices = mg->n;
    out->edges = mg->deps_off[mg->n];
    out->audited = 0;
    for (size_t u = 0; u < mg->n; u++) {
        const tp__mv *m = &mg->v[u];
        for (uint32_t k = mg->deps_off[u]; k < mg->deps_off[u + 1]; k++) {
            if (is_read(mg, (uint32_t)u, mg->deps[k]) || m->kind == TP_M_JOIN) continue;
            if (m->kind == TP_M_OFFLOAD) out->host_mem_deps++;
            else out->dev[m->device].mem_deps++;
        }
    }
}

void tp_memgraph_stats_audit(const tp_memgraph *mg, tp_plan_stats *out)
{
    tp_memgraph_stats(mg, out); /* the counts; the audit adds only what is implied */
    out->audited = 1;
    audit A = {mg, NULL, NULL, NULL, 0};
    size_t n = mg->n;
    A.rank = malloc((n + 1) * sizeof *A.rank);
    A.stack = malloc((out->edges + n + 1) * sizeof *A.stack);
    A.mark = calloc(n + 1, sizeof *A.mark);
    uint32_t *indeg = calloc(n + 1, sizeof *indeg), *q = malloc((n + 1) * sizeof *q), qt = 0;
    uint32_t *cons_off = calloc(n + 2, sizeof *cons_off), *cons = calloc(out->edges + 1, sizeof *cons);
    if (!A.rank || !A.stack || !A.mark || !indeg || !q || !cons_off || !cons) goto done;
    /* topological rank (Kahn over successor lists, FIFO) */
    for (size_t u = 0; u < n; u++)
        for (uint32_t k = mg->deps_off[u]; k < mg->deps_off[u + 1]; k++) cons_off[mg->deps[k] + 1]++;
    for (size_t u = 0; u < n; u++) cons_off[u + 1] += cons_off[u];
    uint32_t *fill = indeg; /* reuse as cursor, then reset */
    for (size_t u = 0; u < n; u++) fill[u] = cons_off[u];
    for (size_t u = 0; u < n; u++)
        for (uint32_t k = mg->deps_off[u]; k < mg->deps_off[u + 1]; k++) cons[fill[mg->deps[k]]++] = (uint32_t)u;
    for (size_t u = 0; u < n; u++) indeg[u] = mg->deps_off[u + 1] - mg->deps_off[u];
    if (tp__topo_sort((uint32_t)n, cons_off, cons, indeg, TP__TOPO_FIFO, q, &qt) || qt < n) goto done;
    for (uint32_t i = 0; i < qt; i++) A.rank[q[i]] = i;
    for (size_t u = 0; u < n; u++) {
        const tp__mv *m = &mg->v[u];
        for (uint32_t k = mg->deps_off[u]; k < mg->deps_off[u + 1]; k++) {
            uint32_t r = mg->deps[k];
            /* a join's deps are its group's members; host deps are not audited */
            if (is_read(mg, (uint32_t)u, r) || m->kind == TP_M_JOIN || m->kind == TP_M_OFFLOAD) continue;
            int imp = implied(&A, r, (uint32_t)u);
            if (imp > 0) out->dev[m->device].mem_deps_superfluous++;
            else if (imp < 0) out->dev[m->device].mem_deps_unchecked++;
        }
    }
done:
    free(A.rank);
    free(A.stack);
    free(A.mark);
    free(indeg);
    free(q);
    free(cons_off);
    free(cons);
}

void tp_plan_stats_print(const tp_plan_stats *st, FILE *f)
{
    char a[32], b[32], c[32], d[32], e[32];
    fprintf(f, "plan: %llu vertices, %llu edges, planned in %.3f s\n", (unsigned long long)st->vertices,
            (unsigned long long)st->edges, st->plan_seconds);
    fprintf(f, "%-6s %11s %11s %17s %17s %17s %6s %9s %9s\n", "device", "capacity", "peak",
            "loads", "reloads", "offloads", "drops", "mem-deps", "implied");
    for (int i = 0; i < st->ndevices; i++) {
        const tp_device_stats *s = &st->dev[i];
        char l[40], r[40], o[40];
        snprintf(l, sizeof l, "%llu (%s)", (unsigned long long)s->load_count, tp_format_size(s->load_bytes, c, sizeof c));
        snprintf(r, sizeof r, "%llu (%s)", (unsigned long long)s->reload_count, tp_format_size(s->reload_bytes, d, sizeof d));
        snprintf(o, sizeof o, "%llu (%s)", (unsigned long long)s->offload_count, tp_format_size(s->offload_bytes, e, sizeof e));
        char im[24] = "-";
        if (st->audited) snprintf(im, sizeof im, "%llu", (unsigned long long)s->mem_deps_superfluous);
        fprintf(f, "%-6d %11s %11s %17s %17s %17s %6llu %9llu %9s", i, tp_format_size(s->capacity, a, sizeof a),
                tp_format_size(s->peak_bytes, b, sizeof b), l, r, o, (unsigned long long)s->drop_count,
                (unsigned long long)s->mem_deps, im);
        if (st->audited && s->mem_deps_unchecked) fprintf(f, " (+%llu unchecked)", (unsigned long long)s->mem_deps_unchecked);
        putc('\n', f);
    }
    fprintf(f, "host: %s used, %llu memory deps for host-region reuse\n", tp_format_size(st->host_bytes, a, sizeof a),
            (unsigned long long)st->host_mem_deps);
    if (st->sums_marked)
        fprintf(f, "sum-into: %u of %u marked sums lowered to groups (%u accumulates)%s\n", st->sum_groups, st->sums_marked,
                st->sum_members, st->sum_into_fallback ? "; lowering was infeasible at these caps: planned without it" : "");
    if (!st->audited) fprintf(f, "implied: not audited (\"-\"; turnip plan --stats audits)\n");
    uint64_t scans = 0, belady = 0, dn = 0, db = 0;
    for (int i = 0; i < st->ndevices; i++) {
        scans += st->dev[i].window_scans;
        belady += st->dev[i].window_belady;
        dn += st->dev[i].directed_count;
        db += st->dev[i].directed_bytes;
    }
    if (dn) fprintf(f, "directed evictions: %llu (%s)\n", (unsigned long long)dn, tp_format_size(db, a, sizeof a));
    if (scans || belady)
        fprintf(f, "eviction windows: %llu searched by the full scan, %llu furthest-next-use evictions (over the scan credit or budget)\n",
                (unsigned long long)scans, (unsigned long long)belady);
}
