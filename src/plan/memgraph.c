/* memgraph.c - the planner's MemGraph: accessors and the "turnip.memgraph/1" writer.
 *
 * The writer streams (a 10^6-vertex MemGraph would cost gigabytes as a jansson tree). */
#include <stdlib.h>
#include <string.h>
#include "plan/plan_internal.h"

static const char *mkind_names[] = {"input", "kernel", "transfer", "offload", "reload", "resident", "accumulate", "join"};
_Static_assert(sizeof mkind_names / sizeof *mkind_names == TP_M_JOIN + 1, "a name for every MemGraph kind");

const char *tp_mkind_name(tp_mkind k)
{
    return (unsigned)k < sizeof mkind_names / sizeof *mkind_names ? mkind_names[k] : "?";
}

void tp_memgraph_free(tp_memgraph *mg)
{
    if (!mg) return;
    free(mg->v);
    free(mg->reads);
    free(mg->mdeps);
    free(mg->deps_off);
    free(mg->deps);
    free(mg->outputs);
    free(mg->kept);
    free(mg->order_pos);
    free(mg);
}

uint32_t tp_memgraph_size(const tp_memgraph *mg)
{
    return (uint32_t)mg->n;
}

const tp_graph *tp_memgraph_taskgraph(const tp_memgraph *mg)
{
    return mg->g;
}

tp_status tp_memgraph_rebind(tp_memgraph *mg, const tp_graph *g, tp_error *err)
{
    if (!mg || !g) return tp__fail(err, TP_ERR_ARG, "tp_memgraph_rebind: NULL argument");
    if (!tp_graph_same_plan(mg->g, g))
        return tp__fail(err, TP_ERR_ARG, "tp_memgraph_rebind: the graph differs from the one planned in more than kernel attributes");
    mg->g = g;
    return TP_OK;
}

void tp_memgraph_work(const tp_memgraph *mg, uint32_t i, double *flops, double *bytes)
{
    const tp__mv *m = &mg->v[i];
    *flops = *bytes = 0;
    if (m->kind != TP_M_KERNEL && m->kind != TP_M_ACCUMULATE) return;
    const tp_vertex *t = tp_graph_vertex(mg->g, m->task);
    if (m->kind == TP_M_KERNEL && m->inplace == 1 && m->nreads == 2 && t->op && !strcmp(t->op, "write_slice")) {
        /* in place: the part read, then its elements written in the base's dtype */
        const tp__mv *part = &mg->v[mg->reads[m->reads_off + 1]];
        size_t ps = tp_dtype_size(tp_graph_vertex(mg->g, part->task)->dtype), bs = tp_dtype_size(t->dtype);
        *bytes = (double)part->bytes + (ps && bs ? (double)part->bytes / (double)ps * (double)bs : (double)part->bytes);
    } else {
        *bytes = (double)m->bytes;
        for (uint32_t k = 0; k < m->nreads; k++) *bytes += (double)mg->v[mg->reads[m->reads_off + k]].bytes;
    }
    size_t es = tp_dtype_size(t->dtype);
    *flops = m->kind == TP_M_ACCUMULATE ? (double)m->bytes / (double)(es ? es : 4) : t->flops;
}

void tp_memgraph_vertex(const tp_memgraph *mg, uint32_t i, tp_mvertex *out)
{
    const tp__mv *m = &mg->v[i];
    out->kind = (tp_mkind)m->kind;
    out->task = m->task;
    out->device = m->device;
    out->write.space = (tp_space)m->space;
    out->write.device = m->space == TP_SPACE_HOST ? -1 : m->device;
    out->write.offset = m->offset;
    out->write.bytes = m->bytes;
    out->nreads = m->nreads;
    out->reads = m->nreads ? mg->reads + m->reads_off : NULL; /* mg->reads may be NULL */
    out->ndeps = mg->deps_off[i + 1] - mg->deps_off[i];
    out->deps = mg->deps + mg->deps_off[i];
    out->inplace = m->inplace ? (int)(m->inplace - 1) : -1;
    out->group = m->group;
}

uint64_t tp_memgraph_host_bytes(const tp_memgraph *mg)
{
    return mg->host_bytes;
}

uint64_t tp_memgraph_device_capacity(const tp_memgraph *mg, int device)
{
    return device >= 0 && device < mg->ndevices ? mg->cap[device] : 0;
}

const uint32_t *tp_memgraph_outputs(const tp_memgraph *mg)
{
    return mg->outputs;
}

const uint32_t *tp_memgraph_kept(const tp_memgraph *mg, uint32_t *n)
{
    *n = mg->nkept;
    return mg->kept;
}

const uint32_t *tp_memgraph_order(const tp_memgraph *mg)
{
    return mg->order_pos;
}

static void write_region(FILE *f, const tp__mv *m)
{
    if (m->space == TP_SPACE_HOST)
        fprintf(f, "\"space\": \"host\", \"offset\": %llu, \"bytes\": %llu",
                (unsigned long long)m->offset, (unsigned long long)m->bytes);
    else
        fprintf(f, "\"space\": \"device\", \"device\": %d, \"offset\": %llu, \"bytes\": %llu",
                m->device, (unsigned long long)m->offset, (unsigned long long)m->bytes);
}

tp_status tp_memgraph_write(const tp_memgraph *mg, FILE *f, tp_error *err)
{
    const tp_graph *g = mg->g;
    const tp_vertex *gv = tp_graph_vertices(g);
    const uint32_t *gout = tp_graph_outputs(g);
    fputs("{\"format\": \"" TP__MG_FORMAT "\",\n \"devices\": [", f);
    for (int d = 0; d < mg->ndevices; d++)
        fprintf(f, "%s{\"capacity\": %llu}", d ? ", " : "", (unsigned long long)mg->cap[d]);
    fprintf(f, "],\n \"host_bytes\": %llu,\n \"vertices\": [\n", (unsigned long long)mg->host_bytes);
    for (size_t i = 0; i < mg->n; i++) {
        const tp__mv *m = &mg->v[i];
        fprintf(f, "  {\"id\": %zu, \"kind\": \"%s\", \"task\": ", i, mkind_names[m->kind]);
        tp__json_str(f, gv[m->task].id);
        if (m->kind != TP_M_INPUT) fprintf(f, ", \"device\": %d", m->device);
        fputs(", \"writes\": {", f);
        write_region(f, m);
        fputs("}, \"reads\": [", f);
        for (uint32_t k = 0; k < m->nreads; k++) {
            uint32_t src = mg->reads[m->reads_off + k];
            fprintf(f, "%s{\"from\": %u, ", k ? ", " : "", src);
            write_region(f, &mg->v[src]);
            putc('}', f);
        }
        fputs("], \"deps\": [", f);
        for (uint32_t k = mg->deps_off[i]; k < mg->deps_off[i + 1]; k++)
            fprintf(f, "%s%u", k > mg->deps_off[i] ? ", " : "", mg->deps[k]);
        fputc(']', f);
        if (m->inplace) fprintf(f, ", \"inplace\": %u", m->inplace - 1);
        if (m->kind == TP_M_ACCUMULATE || m->kind == TP_M_JOIN) fprintf(f, ", \"group\": %d", (int)m->group);
        fprintf(f, "}%s\n", i + 1 < mg->n ? "," : "");
    }
    fputs(" ],\n \"outputs\": [", f);
    for (uint32_t k = 0; k < tp_graph_num_outputs(g); k++) {
        const tp__mv *m = &mg->v[mg->outputs[k]];
        fputs(k ? ",\n  {\"task\": " : "\n  {\"task\": ", f);
        tp__json_str(f, gv[gout[k]].id);
        fprintf(f, ", \"from\": %u, ", mg->outputs[k]);
        write_region(f, m);
        fputs(tp_graph_keep(g, gout[k]) ? ", \"keep\": true}" : "}", f);
    }
    putc(']', f);
    if (mg->nkept) {
        fputs(",\n \"kept\": [", f);
        for (uint32_t k = 0; k < mg->nkept; k++) {
            const tp__mv *m = &mg->v[mg->kept[k]];
            fputs(k ? ",\n  {\"task\": " : "\n  {\"task\": ", f);
            tp__json_str(f, gv[m->task].id);
            fprintf(f, ", \"from\": %u, ", mg->kept[k]);
            write_region(f, m);
            putc('}', f);
        }
        putc(']', f);
    }
    fputs("}\n", f);
    if (ferror(f)) return tp__fail_write(err);
    return TP_OK;
}

tp_status tp_memgraph_to_string(const tp_memgraph *mg, char **text, size_t *len, tp_error *err)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    tp_status s = tp_memgraph_write(mg, f, err);
    if (fclose(f) && !s) s = tp__fail(err, TP_ERR_NOMEM, "out of memory");
    if (s) {
        free(buf);
        return s;
    }
    *text = buf;
    if (len) *len = n;
    return TP_OK;
}
