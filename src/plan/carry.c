/* carry.c - from one run of a session to the next: the inputs a plan leaves on the devices
 * (its "kept" list) become the resident inputs of the next plan of the same graph. */
#include <stdlib.h>
#include "plan/plan_internal.h"

tp_status tp_plan_carry_inputs(tp_graph *g, const tp_memgraph *mg, uint64_t *resident_bytes, tp_error *err)
{
    if (g != mg->g) return tp__fail(err, TP_ERR_ARG, "tp_plan_carry_inputs: the MemGraph was planned for another graph");
    uint32_t n = tp_graph_size(g);
    uint8_t *host = calloc((size_t)n + 1, 1); /* inputs with a host copy in mg: it stays valid */
    if (!host) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < mg->n; i++)
        if (mg->v[i].kind == TP_M_INPUT) host[mg->v[i].task] = 1;
    uint8_t *nohost = calloc((size_t)n + 1, 1); /* resident inputs without a host copy must be kept */
    if (!nohost) {
        free(host);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    for (uint32_t v = 0; v < n; v++) {
        int hc = 1;
        nohost[v] = tp_graph_resident(g, v, NULL, &hc) && !hc;
    }
    for (uint32_t k = 0; k < mg->nkept; k++) nohost[mg->v[mg->kept[k]].task] = 0;
    for (uint32_t v = 0; v < n; v++)
        if (nohost[v]) { /* the planner keeps them (or fails): this would lose the value */
            tp_status s = tp__fail(err, TP_ERR_ARG, "tp_plan_carry_inputs: input '%s' has no host copy and is not kept",
                                   tp_graph_vertices(g)[v].id);
            free(host);
            free(nohost);
            return s;
        }
    free(nohost);
    tp_graph_clear_resident(g);
    uint64_t total = 0;
    tp_status s = TP_OK;
    for (uint32_t k = 0; k < mg->nkept && !s; k++) {
        const tp__mv *m = &mg->v[mg->kept[k]];
        if (tp_graph_vertices(g)[m->task].kind != TP_V_INPUT) continue;
        s = tp_graph_set_resident(g, m->task, m->offset, host[m->task], err);
        total += m->bytes;
    }
    free(host);
    if (resident_bytes) *resident_bytes = total;
    return s;
}
