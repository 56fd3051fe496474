/* bounds.c - what memory a TaskGraph needs: the smallest capacity any plan could use
 * (one vertex's distinct inputs plus output; no output for a kernel the planner runs in place)
 * and the unconstrained peak along an order. */
#include <stdlib.h>
#include <string.h>
#include "plan/plan_internal.h"

void tp__vertex_need(const tp_graph *g, uint32_t t, uint32_t *mark, uint32_t stamp, uint64_t *in_bytes)
{
    const tp_vertex *v = tp_graph_vertex(g, t);
    *in_bytes = 0;
    for (uint32_t k = 0; k < v->ninputs; k++) {
        uint32_t x = v->inputs[k];
        if (mark[x] == stamp) continue;
        mark[x] = stamp;
        *in_bytes += tp_graph_vertex(g, x)->bytes;
    }
}

tp__inplace_why tp__inplace_rule(const tp_graph *g, uint32_t t, int k, const uint8_t *is_out, int last)
{
    const tp_vertex *v = tp_graph_vertex(g, t);
    uint32_t x = v->inputs[k], reads = 0;
    for (uint32_t j = 0; j < v->ninputs; j++) reads += v->inputs[j] == x;
    int pin = (tp_graph_resident_flags(g, x) & TP_RESIDENT_PIN) != 0;
    return reads != 1                                     ? TP__INPLACE_READ_TWICE
         : is_out[x]                                      ? TP__INPLACE_OUTPUT
         : tp_graph_keep(g, x) && !pin                    ? TP__INPLACE_KEPT
         : tp_graph_vertex(g, x)->bytes != v->bytes       ? TP__INPLACE_SIZE
         : !last                                          ? TP__INPLACE_READ_AFTER
                                                          : TP__INPLACE_OK;
}

/* the argument kernel t overwrites in place along the order (left[x] == 1 before t: t is x's
 * last reader), or -1 when t makes new bytes */
static int in_place(const tp_graph *g, uint32_t t, const uint32_t *left, const uint8_t *is_out)
{
    int k = tp_graph_inplace(g, t);
    return k >= 0 && tp__inplace_rule(g, t, k, is_out, left[tp_graph_vertex(g, t)->inputs[k]] == 1) == TP__INPLACE_OK ? k : -1;
}

tp_status tp_plan_bounds(const tp_graph *g, tp_order order, uint64_t *min_feasible, uint64_t *peak_live,
                         tp_error *err)
{
    uint32_t n = tp_graph_size(g);
    int nd = tp_graph_devices(g);
    uint32_t *ord = malloc((n + 1) * sizeof *ord), *mark = calloc(n + 1, sizeof *mark),
             *left = malloc((n + 1) * sizeof *left);
    uint8_t *live = calloc(n + 1, 1), *is_out = calloc(n + 1, 1);
    if (!ord || !mark || !left || !live || !is_out) {
        free(is_out);
        free(ord);
        free(mark);
        free(left);
        free(live);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    tp_status s = tp_graph_order(g, order, ord, err);
    for (uint32_t o = 0; o < tp_graph_num_outputs(g); o++) is_out[tp_graph_outputs(g)[o]] = 1;
    uint64_t cur[TP_MAX_DEVICES] = {0}, peak[TP_MAX_DEVICES] = {0}, minf[TP_MAX_DEVICES] = {0};
    for (uint32_t i = 0; i < n && !s; i++) tp_graph_consumers(g, i, &left[i]);
    for (uint32_t i = 0; i < n && !s; i++) {
        uint32_t t = ord[i];
        const tp_vertex *v = tp_graph_vertex(g, t);
        if (v->kind == TP_V_INPUT) continue;
        int rd = tp_graph_read_device(g, t);
        uint64_t inb;
        tp__vertex_need(g, t, mark, i + 1, &inb);
        int ip = in_place(g, t, left, is_out);
        uint64_t out = ip >= 0 ? 0 : v->bytes; /* in place: the output takes its input's bytes */
        if (rd == v->device) {
            if (inb + out > minf[rd]) minf[rd] = inb + out;
        } else {
            if (inb > minf[rd]) minf[rd] = inb;
            if (v->bytes > minf[v->device]) minf[v->device] = v->bytes;
        }
        /* inputs load at first use; the output appears; then dead values go */
        for (uint32_t k = 0; k < v->ninputs; k++) {
            uint32_t x = v->inputs[k];
            if (!live[x]) {
                live[x] = 1;
                cur[rd] += tp_graph_vertex(g, x)->bytes;
            }
        }
        live[t] = 1;
        cur[v->device] += out;
        for (int d = 0; d < nd; d++)
            if (cur[d] > peak[d]) peak[d] = cur[d];
        for (uint32_t k = 0; k < v->ninputs; k++) {
            uint32_t x = v->inputs[k];
            if (mark[x] != i + 1) continue; /* a repeat of an input already counted */
            mark[x] = 0;
            if (--left[x] == 0 && live[x] == 1 && !is_out[x]) {
                live[x] = 2;
                if (ip < 0 || x != v->inputs[ip]) cur[tp_graph_vertex(g, x)->device] -= tp_graph_vertex(g, x)->bytes;
            }
        }
    }
    if (!s) {
        for (int d = 0; d < nd; d++) {
            if (min_feasible) min_feasible[d] = minf[d] ? minf[d] : 1;
            if (peak_live) peak_live[d] = peak[d] > minf[d] ? peak[d] : (minf[d] ? minf[d] : 1);
        }
    }
    free(ord);
    free(mark);
    free(left);
    free(live);
    free(is_out);
    return s;
}
