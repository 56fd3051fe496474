/* memgraph_check.c - what both MemGraph file readers share (memgraph_read.c: JSON;
 * memgraph_bin.c: binary): the empty record, the stand-in TaskGraph of a conversion, the
 * checks that make a file safe to hand to the executor (tp__mg_check: every index, count and
 * region in range, kinds and sizes against the TaskGraph) and the step that ends a read
 * (tp__mg_finish). Neither reader is called from here. */
#include <stdlib.h>
#include <string.h>
#include "plan/memgraph_io.h"

tp_memgraph *tp__mg_alloc(void)
{
    tp_memgraph *mg = calloc(1, sizeof *mg);
    if (!mg) return NULL;
    mg->deps_off = calloc(1, sizeof *mg->deps_off);
    if (!mg->deps_off) {
        free(mg);
        return NULL;
    }
    return mg;
}

tp_status tp__mg_names_graph(int ndevices, const char *const *names, size_t n, const uint32_t *out,
                             const uint8_t *keep, size_t nout, tp_graph **gp, tp_error *err)
{
    tp_graph *g = tp_graph_new(ndevices);
    if (!g) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    tp_status s = TP_OK;
    uint32_t idx;
    for (size_t i = 0; i < n && !s; i++) s = tp_graph_add_input(g, names[i], 0, TP_DT_NONE, -1, NULL, 1, &idx, err);
    for (size_t k = 0; k < nout && !s; k++) {
        s = tp_graph_add_output(g, out[k], err);
        if (!s && keep[k]) s = tp_graph_set_keep(g, out[k], err);
    }
    if (!s) s = tp_graph_finalize(g, err);
    if (s) {
        tp_graph_free(g);
        return s;
    }
    *gp = g;
    return TP_OK;
}

static int task_kind_ok(tp_mkind k, tp_vkind t)
{
    switch (k) {
    case TP_M_INPUT:
    case TP_M_RESIDENT: return t == TP_V_INPUT;
    case TP_M_KERNEL:
    case TP_M_ACCUMULATE:
    case TP_M_JOIN: return t == TP_V_KERNEL;
    case TP_M_TRANSFER: return t == TP_V_TRANSFER;
    default: return 1;
    }
}

tp_status tp__mg_check(const tp_memgraph *mg, const char *name, int sized, tp_error *err)
{
    const tp_graph *g = mg->g;
    uint32_t nt = tp_graph_size(g);
    const tp_vertex *gv = tp_graph_vertices(g);
    size_t n = mg->n;
    if (mg->ndevices < 1 || mg->ndevices > TP_MAX_DEVICES || mg->ndevices != tp_graph_devices(g))
        return tp__fail(err, TP_ERR_INVALID, "%s: the plan has %d devices, the TaskGraph %d", name, mg->ndevices,
                        tp_graph_devices(g));
    if (n >= UINT32_MAX) return tp__fail(err, TP_ERR_INVALID, "%s: too many vertices", name);
    for (size_t i = 0; i < n; i++) {
        const tp__mv *m = &mg->v[i];
        if (m->kind > TP_M_JOIN) return tp__fail(err, TP_ERR_INVALID, "%s: vertex %zu: unknown kind %u", name, i, m->kind);
        const char *kn = tp_mkind_name((tp_mkind)m->kind);
        if (m->task >= nt) return tp__fail(err, TP_ERR_INVALID, "%s: vertex %zu: task %u out of range", name, i, m->task);
        const tp_vertex *t = &gv[m->task];
        if (sized && !task_kind_ok((tp_mkind)m->kind, t->kind))
            return tp__fail(err, TP_ERR_INVALID, "%s: vertex %zu: a %s vertex for task '%s', which is not of that kind", name, i,
                            kn, t->id);
        if (m->kind == TP_M_INPUT ? m->device != -1 : (m->device < 0 || m->device >= mg->ndevices))
            return tp__fail(err, TP_ERR_INVALID, "%s: vertex %zu: device %d out of range (the plan has %d devices)", name, i,
                            m->device, mg->ndevices);
        int host = m->space == TP_SPACE_HOST;
        if (m->space > TP_SPACE_DEVICE || (m->kind == TP_M_INPUT || m->kind == TP_M_OFFLOAD) != host)
            return tp__fail(err, TP_ERR_INVALID, "%s: vertex %zu: a %s vertex writes %s memory", name, i, kn,
                            host ? "host" : "device");
        uint64_t lim = host ? mg->host_bytes : mg->cap[m->device], end;
        if (!m->bytes || __builtin_add_overflow(m->offset, m->bytes, &end) || end > lim)
            return tp__fail(err, TP_ERR_INVALID, "%s: vertex %zu: region [%llu, +%llu) outside %s (%llu bytes)", name, i,
                            (unsigned long long)m->offset, (unsigned long long)m->bytes, host ? "host memory" : "its device",
                            (unsigned long long)lim);
        if (sized && m->bytes != t->bytes)
            return tp__fail(err, TP_ERR_INVALID, "%s: vertex %zu: writes %llu bytes, task '%s' has %llu", name, i,
                            (unsigned long long)m->bytes, t->id, (unsigned long long)t->bytes);
        /* the caller's host bytes [0, R): only its placed inputs, each where it placed them */
        uint64_t at;
        int placed = host && m->kind == TP_M_INPUT && tp_graph_host(g, m->task, &at);
        if (placed ? m->offset != at : host && m->offset < tp_graph_host_reserved(g))
            return tp__fail(err, TP_ERR_INVALID, "%s: vertex %zu: host region [%llu, +%llu) is not where task '%s' may be (reserved %llu)",
                            name, i, (unsigned long long)m->offset, (unsigned long long)m->bytes, t->id,
                            (unsigned long long)tp_graph_host_reserved(g));
        uint32_t want = m->kind == TP_M_INPUT || m->kind == TP_M_RESIDENT || m->kind == TP_M_JOIN ? 0
                      : m->kind == TP_M_ACCUMULATE ? 2 : m->kind == TP_M_KERNEL ? (sized ? t->ninputs : m->nreads) : 1;
        if (m->nreads != want)
            return tp__fail(err, TP_ERR_INVALID, "%s: vertex %zu: a %s vertex with %u reads, wants %u", name, i, kn, m->nreads, want);
        if ((uint64_t)m->reads_off + m->nreads > mg->nreads)
            return tp__fail(err, TP_ERR_INVALID, "%s: vertex %zu: reads out of range", name, i);
        for (uint32_t k = 0; k < m->nreads; k++)
            if (mg->reads[m->reads_off + k] >= n)
                return tp__fail(err, TP_ERR_INVALID, "%s: vertex %zu: reads vertex %u, which does not exist", name, i,
                                mg->reads[m->reads_off + k]);
        if (m->inplace > m->nreads || (m->kind == TP_M_ACCUMULATE && m->inplace != 1) ||
            (m->inplace && m->kind != TP_M_KERNEL && m->kind != TP_M_ACCUMULATE))
            return tp__fail(err, TP_ERR_INVALID, "%s: vertex %zu: 'inplace' out of range or on a %s vertex", name, i, kn);
        int grouped = m->kind == TP_M_ACCUMULATE || m->kind == TP_M_JOIN;
        if (grouped ? (m->group < 0 || (size_t)m->group >= n) : m->group != -1)
            return tp__fail(err, TP_ERR_INVALID, "%s: vertex %zu: 'group' out of range or on a %s vertex", name, i, kn);
        if (mg->deps_off[i + 1] < mg->deps_off[i]) return tp__fail(err, TP_ERR_INVALID, "%s: vertex %zu: deps out of range", name, i);
        for (uint32_t k = mg->deps_off[i]; k < mg->deps_off[i + 1]; k++)
            if (mg->deps[k] >= n || (k > mg->deps_off[i] && mg->deps[k] <= mg->deps[k - 1]))
                return tp__fail(err, TP_ERR_INVALID, "%s: vertex %zu: deps must be vertex ids, increasing", name, i);
    }
    for (uint32_t k = 0; k < tp_graph_num_outputs(g); k++)
        if (mg->outputs[k] >= n) return tp__fail(err, TP_ERR_INVALID, "%s: outputs[%u]: vertex out of range", name, k);
    for (uint32_t k = 0; k < mg->nkept; k++)
        if (mg->kept[k] >= n) return tp__fail(err, TP_ERR_INVALID, "%s: kept[%u]: vertex out of range", name, k);
    return TP_OK;
}

tp_status tp__mg_finish(tp_memgraph *mg, const tp_graph *g, const char *name, const char *const *names, size_t nnames,
                        const uint32_t *otask, uint32_t **ofrom, const uint8_t *okeep, size_t nout, tp_graph **names_out,
                        tp_error *err)
{
    if (g) {
        uint32_t no = tp_graph_num_outputs(g);
        const uint32_t *go = tp_graph_outputs(g);
        if (nout != no)
            return tp__fail(err, TP_ERR_INVALID, "%s: the plan has %zu outputs, the TaskGraph %u (a plan for another graph?)",
                            name, nout, no);
        for (uint32_t k = 0; k < no; k++)
            if (otask[k] != go[k] || (int)okeep[k] != tp_graph_keep(g, go[k]))
                return tp__fail(err, TP_ERR_INVALID, "%s: outputs[%u] is not the TaskGraph's output '%s'%s", name, k,
                                tp_graph_vertex(g, go[k])->id, otask[k] == go[k] ? " with its keep flag" : "");
        mg->g = g;
    } else {
        tp_graph *ng;
        tp_status s = tp__mg_names_graph(mg->ndevices >= 1 && mg->ndevices <= TP_MAX_DEVICES ? mg->ndevices : 1, names, nnames,
                                         otask, okeep, nout, &ng, err);
        if (s) {
            char m[sizeof err->msg]; /* the message must not be both tp__fail's source and its target */
            snprintf(m, sizeof m, "%s", err ? err->msg : "");
            return tp__fail(err, s == TP_ERR_NOMEM ? s : TP_ERR_INVALID, "%s: %s", name, m);
        }
        mg->g = *names_out = ng;
    }
    mg->outputs = *ofrom;
    *ofrom = NULL;
    if (!mg->outputs && !(mg->outputs = malloc(sizeof *mg->outputs))) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    mg->counters.ndevices = mg->ndevices;
    for (int d = 0; d < mg->ndevices && d < TP_MAX_DEVICES; d++) mg->counters.dev[d].capacity = mg->cap[d];
    mg->counters.host_bytes = mg->host_bytes;
    return tp__mg_check(mg, name, g != NULL, err);
}
