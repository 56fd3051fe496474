/* counts.c - sizes of TaskGraphs and MemGraphs for reports (vertices, inputs, edges), so tools
 * need not walk graphs themselves. */
#include "turnip/app.h"

void tp_count_taskgraph(const tp_graph *g, tp_graph_counts *out)
{
    out->vertices = tp_graph_size(g);
    out->inputs = out->edges = 0;
    for (uint32_t i = 0; i < tp_graph_size(g); i++) {
        uint32_t nc;
        tp_graph_consumers(g, i, &nc);
        out->edges += nc;
        out->inputs += tp_graph_vertex(g, i)->kind == TP_V_INPUT;
    }
}

void tp_count_memgraph(const tp_memgraph *mg, tp_graph_counts *out)
{
    out->vertices = tp_memgraph_size(mg);
    out->inputs = out->edges = 0;
    for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
        tp_mvertex mv;
        tp_memgraph_vertex(mg, i, &mv);
        out->inputs += mv.kind == TP_M_INPUT;
        out->edges += mv.ndeps;
    }
}
