/* cli_session.c - `--repeat N` of run and llama: N runs of one graph in one session (issue 11).
 * (A plan that starts with resident inputs runs in a session of its own sizes: cli_exec_open,
 * tools/cli.c.)
 *
 * Run 1 is planned with every input declared "keep": whatever inputs it leaves on the devices
 * (the plan's kept list) become the resident inputs of run 2's plan, and so on; each run prints
 * the bytes it moved beside what it could not avoid moving (the input bytes not resident at its
 * start). The host block persists too: when a run's plan puts every input at the same host
 * offset as the first (it does for the same graph: the input prefix depends on the inputs
 * only), the inputs are not loaded again. */
#include <stdio.h>
#include <stdlib.h>
#include "cli.h"

static uint64_t moved(const tp_run_summary *s, const char *engine)
{
    int k = tp_run_summary_engine(s, engine);
    uint64_t b = 0;
    for (int d = 0; k >= 0 && d < s->ndevices; d++) b += s->dev[d].bytes[k];
    return b;
}

/* 1 when every input of plan b has the host offset off_a gives it (the first plan's: so the
 * inputs loaded then serve b; UINT64_MAX where that plan had no input vertex) */
static int same_inputs(const tp_memgraph *b, const uint64_t *off_a, uint32_t n)
{
    for (uint32_t i = 0; i < tp_memgraph_size(b); i++) {
        tp_mvertex v;
        tp_memgraph_vertex(b, i, &v);
        if (v.kind == TP_M_INPUT && (v.task >= n || off_a[v.task] != v.write.offset)) return 0;
    }
    return 1;
}

int cli_keep_inputs(const char *cmd, tp_graph *g)
{
    tp_error e;
    const tp_vertex *gv = tp_graph_vertices(g);
    for (uint32_t v = 0; v < tp_graph_size(g); v++)
        if (tp_graph_resident(g, v, NULL, NULL)) /* run 1 starts in an empty session */
            return cli_errorf(cmd, 2, "--repeat plans what stays resident itself; input '%s' declares 'resident'", gv[v].id);
    for (uint32_t v = 0; v < tp_graph_size(g); v++)
        if (gv[v].kind == TP_V_INPUT && !tp_graph_keep(g, v)) tp_graph_set_keep(g, v, &e); /* cannot fail */
    return 0;
}

tp_status cli_verify(const tp_memgraph *mg, const tp_graph *g, tp_error *e)
{
    char *text;
    size_t len;
    tp_status s = tp_memgraph_to_string(mg, &text, &len, e);
    if (s) return s;
    s = tp_verify_json(text, len, "plan", g, e);
    free(text);
    return s;
}

tp_status cli_session_runs(tp_graph *g, tp_memgraph **mg, const tp_plan_opts *po, tp_backend *be, const cli_exec_flags *f,
                           int check, cli_load_fn load, void *ctx, tp_session **sess, tp_exec **x, tp_run_summary *sum,
                           tp_error *e)
{
    long long n = f->repeat;
    uint32_t nv = tp_graph_size(g);
    const tp_vertex *gv = tp_graph_vertices(g);
    uint64_t in_bytes = 0, host = tp_memgraph_host_bytes(*mg);
    for (uint32_t v = 0; v < nv; v++)
        if (gv[v].kind == TP_V_INPUT) in_bytes += gv[v].bytes;
    uint64_t cap[TP_MAX_DEVICES];
    for (int d = 0; d < po->ndevices; d++) {
        cap[d] = po->device_mem[d];
        host += cap[d]; /* room for later plans to offload differently */
    }
    if (po->host_mem && host > po->host_mem) host = po->host_mem;
    tp_plan_opts o = *po;
    o.host_mem = host;
    uint64_t *off1 = malloc(((size_t)nv + 1) * sizeof *off1);
    if (!off1) return cli_set_error(e, TP_ERR_NOMEM, "out of memory");
    for (uint32_t v = 0; v < nv; v++) off1[v] = UINT64_MAX; /* no input vertex in run 1 */
    for (uint32_t i = 0; i < tp_memgraph_size(*mg); i++) {
        tp_mvertex v;
        tp_memgraph_vertex(*mg, i, &v);
        if (v.kind == TP_M_INPUT) off1[v.task] = v.write.offset;
    }
    tp_run_opts ro;
    cli_run_opts(f, &ro);
    tp_status s = tp_session_new(be, po->ndevices, cap, host, sess, e);
    double best = 0;
    uint64_t resident = 0;
    for (long long rep = 0; rep < n && !s; rep++) {
        int verified = 0; /* this run's plan made here and verified (run 1's: by the caller) */
        if (rep) {
            tp_exec_free(*x);
            *x = NULL;
            tp_memgraph *next = NULL;
            if (!(s = tp_plan_carry_inputs(g, *mg, &resident, e)) && !(s = tp_plan(g, &o, &next, e))) {
                tp_memgraph_free(*mg);
                *mg = next;
                if (check) verified = !(s = cli_verify(*mg, g, e));
            }
        }
        if (!s) s = tp_exec_new_in(*sess, *mg, &ro, x, e);
        if (!s && (rep == 0 || !same_inputs(*mg, off1, nv))) s = load(*x, ctx, e);
        if (!s) s = tp_exec_run(*x, sum, e);
        if (s) break;
        best = rep == 0 || sum->makespan < best ? sum->makespan : best;
        printf("run %lld of %lld: makespan %.4f s; moved h2d %llu B, d2h %llu B; inputs resident at the start %llu B, "
               "not resident %llu B%s\n",
               rep + 1, n, sum->makespan, (unsigned long long)moved(sum, "h2d"), (unsigned long long)moved(sum, "d2h"),
               (unsigned long long)resident, (unsigned long long)(in_bytes - resident), verified ? "; plan verified" : "");
        fflush(stdout);
    }
    free(off1);
    if (!s) printf("best makespan of %lld runs: %.4f s\n", n, best);
    if (f->progress) fputs("\r\033[K", stderr);
    if (!s && f->trace) s = tp_exec_trace_write(*x, f->trace, e);
    return s;
}
