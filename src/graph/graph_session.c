/* graph_session.c - the session declarations of a TaskGraph (issue 11): resident inputs,
 * in-place kernels, values kept on the device. Stored in side arrays that exist only once a
 * setter is used, so graphs without them cost nothing. */
#include <stdlib.h>
#include <string.h>
#include "graph/graph_internal.h"

static int grow(tp_graph *g)
{
    if (g->cap_sess >= g->n && g->res) return 1;
    size_t nc = g->n + 16;
    uint64_t *o = realloc(g->res_off, nc * sizeof *o);
    if (!o) return 0;
    g->res_off = o;
    uint8_t *r = realloc(g->res, nc);
    if (!r) return 0;
    g->res = r;
    int32_t *ip = realloc(g->inplace, nc * sizeof *ip);
    if (!ip) return 0;
    g->inplace = ip;
    uint8_t *k = realloc(g->keep, nc);
    if (!k) return 0;
    g->keep = k;
    for (size_t i = g->cap_sess; i < nc; i++) {
        g->res_off[i] = 0;
        g->res[i] = 0;
        g->inplace[i] = -1;
        g->keep[i] = 0;
    }
    g->cap_sess = nc;
    return 1;
}

int tp_graph_resident(const tp_graph *g, uint32_t v, uint64_t *offset, int *host_copy)
{
    if (!g->res || v >= g->cap_sess || !g->res[v]) return 0;
    if (offset) *offset = g->res_off[v];
    if (host_copy) *host_copy = g->res[v] == 1;
    return 1;
}

int tp_graph_inplace(const tp_graph *g, uint32_t v)
{
    return g->inplace && v < g->cap_sess ? g->inplace[v] : -1;
}

int tp_graph_keep(const tp_graph *g, uint32_t v)
{
    return g->keep && v < g->cap_sess && g->keep[v];
}

static tp_status check(tp_graph *g, uint32_t v, tp_error *err)
{
    if (v >= g->n) return tp__fail(err, TP_ERR_ARG, "vertex %u out of range", v);
    if (!grow(g)) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    return TP_OK;
}

tp_status tp_graph_set_resident(tp_graph *g, uint32_t v, uint64_t offset, int host_copy, tp_error *err)
{
    tp_status s = check(g, v, err);
    if (s) return s;
    if (g->v[v].kind != TP_V_INPUT) return tp__fail(err, TP_ERR_ARG, "vertex '%s': only inputs can be resident", g->v[v].id);
    g->res[v] = host_copy ? 1 : 2;
    g->res_off[v] = offset;
    return TP_OK;
}

tp_status tp_graph_set_inplace(tp_graph *g, uint32_t v, int k, tp_error *err)
{
    tp_status s = check(g, v, err);
    if (s) return s;
    if (g->v[v].kind != TP_V_KERNEL || k < 0 || (uint32_t)k >= g->v[v].ninputs)
        return tp__fail(err, TP_ERR_ARG, "vertex '%s': inplace must name an input of a kernel", g->v[v].id);
    g->inplace[v] = k;
    return TP_OK;
}

tp_status tp_graph_set_keep(tp_graph *g, uint32_t v, tp_error *err)
{
    tp_status s = check(g, v, err);
    if (s) return s;
    g->keep[v] = 1;
    return TP_OK;
}

void tp_graph_clear_resident(tp_graph *g)
{
    if (g->res) memset(g->res, 0, g->cap_sess);
}
