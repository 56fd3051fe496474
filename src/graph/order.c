/* order.c - serial orders V for the planner.
 *
 * topo:   Kahn's algorithm taking the smallest ready index first, so a file already in
 *         topological order is kept as written.
 * dfs:    depth-first from each sink (in index order), finishing every operand, in argument
 *         order, before the next: live values stay few, as in a stack machine.
 * greedy: Kahn's algorithm taking the ready vertex whose execution grows live memory least
 *         (output bytes + first-time inputs - inputs it is the last consumer of), with lazy
 *         re-scoring since scores change as other consumers run. */
#include <stdlib.h>
#include <string.h>
#include "graph/graph_internal.h"
#include "io/heap.h"
#include "io/topo.h"

const char *tp_order_name(tp_order o)
{
    switch (o) {
    case TP_ORDER_TOPO: return "topo";
    case TP_ORDER_DFS: return "dfs";
    case TP_ORDER_GREEDY: return "greedy";
    }
    return "?";
}

tp_status tp_order_parse(const char *name, tp_order *out)
{
    for (int o = 0; o <= TP_ORDER_GREEDY; o++)
        if (!strcmp(name, tp_order_name((tp_order)o))) {
            *out = (tp_order)o;
            return TP_OK;
        }
    return TP_ERR_PARSE;
}

/* greedy's ready set: (memory delta, index), least first, ties by index */
typedef struct {
    int64_t key;
    uint32_t v;
} hitem;

static int hless(const hitem *a, const hitem *b, const void *ctx)
{
    (void)ctx;
    return a->key < b->key || (a->key == b->key && a->v < b->v);
}
TP__HEAP_DEFINE(greedy_heap, hitem, hless)

static int64_t greedy_key(const tp_graph *g, uint32_t v, const uint32_t *left, const uint8_t *live)
{
    const tp_vertex *x = &g->v[v];
    if (x->kind == TP_V_INPUT) return INT64_MIN; /* free: loaded when first used */
    int64_t d = (int64_t)x->bytes;
    for (uint32_t k = 0; k < x->ninputs; k++) {
        uint32_t p = x->inputs[k];
        int dup = 0;
        for (uint32_t j = 0; j < k; j++) dup |= x->inputs[j] == p;
        if (dup) continue;
        if (g->v[p].kind == TP_V_INPUT && !live[p]) d += (int64_t)g->v[p].bytes;
        if (left[p] == 1) d -= (int64_t)g->v[p].bytes;
    }
    return d;
}

tp_status tp_graph_order(const tp_graph *g, tp_order o, uint32_t *out, tp_error *err)
{
    if (!g->finalized) return tp__fail(err, TP_ERR_ARG, "graph is not finalized");
    size_t n = g->n, k = 0;
    if (o == TP_ORDER_DFS) {
        /* iterative post-order; frame = (vertex, next argument) */
        uint8_t *state = calloc(n + 1, 1); /* 0 new, 1 on stack, 2 done */
        uint32_t *sv = malloc((n + 1) * sizeof *sv), *sa = malloc((n + 1) * sizeof *sa);
        if (!state || !sv || !sa) {
            free(state);
            free(sv);
            free(sa);
            return tp__fail(err, TP_ERR_NOMEM, "out of memory");
        }
        for (size_t root = 0; root < n; root++) {
            if (g->cons_off[root + 1] != g->cons_off[root] || state[root]) continue;
            size_t top = 0;
            sv[top] = (uint32_t)root;
            sa[top] = 0;
            state[root] = 1;
            top = 1;
            while (top) {
                uint32_t v = sv[top - 1];
                const tp_vertex *x = &g->v[v];
                if (sa[top - 1] < x->ninputs) {
                    uint32_t p = x->inputs[sa[top - 1]++];
                    if (!state[p]) {
                        state[p] = 1;
                        sv[top] = p;
                        sa[top] = 0;
                        top++;
                    }
                } else {
                    state[v] = 2;
                    out[k++] = v;
                    top--;
                }
            }
        }
        free(state);
        free(sv);
        free(sa);
        return TP_OK;
    }
    if (o == TP_ORDER_TOPO) {
        uint32_t reached;
        if (tp__topo_sort((uint32_t)n, g->cons_off, g->cons, NULL, TP__TOPO_SMALLEST, out, &reached))
            return tp__fail(err, TP_ERR_NOMEM, "out of memory");
        return TP_OK; /* finalized: acyclic, reached == n */
    }
    /* greedy: Kahn's algorithm over a heap of scores, re-scored lazily */
    uint32_t *deg = malloc((n + 1) * sizeof *deg);
    hitem *heap = malloc((n + 1) * sizeof *heap);
    uint32_t *left = malloc((n + 1) * sizeof *left);
    uint8_t *live = calloc(n + 1, 1);
    if (!deg || !heap || !left || !live) {
        free(deg);
        free(heap);
        free(left);
        free(live);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    tp__topo_indegrees((uint32_t)n, g->cons_off, g->cons, deg);
    for (size_t i = 0; i < n; i++) left[i] = g->cons_off[i + 1] - g->cons_off[i];
    size_t hn = 0;
    for (size_t i = 0; i < n; i++)
        if (!deg[i]) greedy_heap_push(heap, &hn, (hitem){greedy_key(g, (uint32_t)i, left, live), (uint32_t)i}, NULL);
    while (hn) {
        hitem it = greedy_heap_pop(heap, &hn, NULL);
        int64_t key = greedy_key(g, it.v, left, live);
        if (key != it.key) { /* stale score: re-queue with the fresh one */
            greedy_heap_push(heap, &hn, (hitem){key, it.v}, NULL);
            continue;
        }
        uint32_t u = it.v;
        out[k++] = u;
        const tp_vertex *x = &g->v[u];
        for (uint32_t a = 0; a < x->ninputs; a++) {
            uint32_t p = x->inputs[a];
            int dup = 0;
            for (uint32_t j = 0; j < a; j++) dup |= x->inputs[j] == p;
            if (dup) continue;
            live[p] = 1;
            left[p]--;
        }
        for (uint32_t c = g->cons_off[u]; c < g->cons_off[u + 1]; c++) {
            uint32_t w = g->cons[c];
            if (--deg[w] == 0) greedy_heap_push(heap, &hn, (hitem){greedy_key(g, w, left, live), w}, NULL);
        }
    }
    free(deg);
    free(heap);
    free(left);
    free(live);
    return TP_OK;
}
