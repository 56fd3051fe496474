/* trace.c - Chrome trace-event JSON of a finished run (opens in Perfetto or chrome://tracing):
 * one process per device, one track per compute stream and copy engine, a slice per vertex
 * with its kind, task and bytes, and a counter of the device memory holding live values (a
 * value is live from its writer's start to its last reader's end; outputs stay live; a sum-into
 * group's region counts as its init's value until the last accumulate reading it ends, then as
 * its join's; joins, which run on no engine, have no slice).
 * Called after a run, from the run record (exec_internal.h): no file I/O inside tp_exec_run. */
#include <stdlib.h>
#include <string.h>
#include "exec/exec_internal.h"
#include "turnip/io.h"
#include "io/util.h"

typedef struct {
    double t;
    int64_t delta;
    int dev;
} memev;

static int by_time(const void *a, const void *b)
{
    const memev *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return (x->delta > y->delta) - (x->delta < y->delta); /* frees first at equal times */
}

/* trace thread of a vertex: engine e's lane; an engine whose units share one lane is one track */
static int track(const tp__run_record *rr, const tp__vrec *v)
{
    return v->engine * 100 + (rr->engines[v->engine].lanes ? 0 : v->unit);
}

tp_status tp_exec_trace_write(const tp_exec *x, const char *path, tp_error *err)
{
    tp__run_record rr;
    if (!tp__exec_record(x, &rr)) return tp__fail(err, TP_ERR_ARG, "%s: no run to trace yet (tp_exec_run first)", path);
    const tp_memgraph *mg = tp_exec_memgraph(x);
    const tp_graph *g = tp_memgraph_taskgraph(mg);
    const tp__vrec *rec = rr.v;
    double start = rr.start;
    uint32_t n = rr.n;
    tp_outfile *of; /* whole or not at all */
    tp_status s = tp_outfile_open(path, &of, err);
    if (s) return s;
    FILE *f = tp_outfile_stream(of);
    double *lastread = calloc(n + 1, sizeof *lastread);
    uint8_t *is_out = calloc(n + 1, 1);
    memev *ev = malloc((2 * (size_t)n + 1) * sizeof *ev);
    if (!lastread || !is_out || !ev) {
        tp_outfile_abort(of);
        free(lastread);
        free(is_out);
        free(ev);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    for (uint32_t k = 0; k < tp_graph_num_outputs(g); k++) is_out[tp_memgraph_outputs(mg)[k]] = 1;
    fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n", f);
    int nd = tp_graph_devices(g);
    int maxunit[TP_MAX_ENGINES] = {0};
    for (uint32_t i = 0; i < n; i++)
        if (rec[i].engine != TP__NO_ENGINE && !rr.engines[rec[i].engine].lanes && rec[i].unit > maxunit[rec[i].engine])
            maxunit[rec[i].engine] = rec[i].unit;
    for (int d = 0; d < nd; d++) {
        fprintf(f, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": \"device %d\"}},\n", d, d);
        for (int e = 0; e < rr.nengines; e++)
            for (int u = 0; u <= maxunit[e]; u++)
                fprintf(f, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"args\": {\"name\": \"%s %d\"}},\n",
                        d, e * 100 + u, rr.engines[e].name, u);
    }
    size_t ne = 0;
    for (uint32_t i = 0; i < n; i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        if (!rec[i].ran) continue; /* a failed run's vertices that never started: no slice, no memory */
        for (uint32_t r = 0; r < v.nreads; r++)
            if (rec[i].t1 > lastread[v.reads[r]]) lastread[v.reads[r]] = rec[i].t1;
        if (rec[i].engine == TP__NO_ENGINE) continue;
        fprintf(f, "{\"name\": ");
        char name[160];
        snprintf(name, sizeof name, "%s %.120s", tp_mkind_name(v.kind), tp_graph_vertex(g, v.task)->id);
        tp__json_str(f, name);
        fprintf(f, ", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": %d, \"tid\": %d, \"args\": {\"vertex\": %u, \"task\": ",
                tp_mkind_name(v.kind), (rec[i].t0 - start) * 1e6, (rec[i].t1 - rec[i].t0) * 1e6, rec[i].device, track(&rr, &rec[i]), i);
        tp__json_str(f, tp_graph_vertex(g, v.task)->id);
        fprintf(f, ", \"bytes\": %llu}},\n", (unsigned long long)v.write.bytes);
    }
    for (uint32_t i = 0; i < n; i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        /* not run (a failed run); a group's region counts as its init's, then its join's */
        if (!rec[i].ran || v.write.space != TP_SPACE_DEVICE || v.kind == TP_M_ACCUMULATE) continue;
        ev[ne++] = (memev){rec[i].t0, (int64_t)v.write.bytes, v.write.device};
        if (!is_out[i]) ev[ne++] = (memev){lastread[i] > rec[i].t1 ? lastread[i] : rec[i].t1, -(int64_t)v.write.bytes, v.write.device};
    }
    qsort(ev, ne, sizeof *ev, by_time);
    int64_t cur[TP_MAX_DEVICES] = {0};
    for (size_t k = 0; k < ne; k++) {
        cur[ev[k].dev] += ev[k].delta;
        fprintf(f, "{\"name\": \"memory in use\", \"ph\": \"C\", \"ts\": %.3f, \"pid\": %d, \"args\": {\"bytes\": %lld}},\n",
                (ev[k].t - start) * 1e6, ev[k].dev, (long long)cur[ev[k].dev]);
    }
    fputs("{\"name\": \"end\", \"ph\": \"i\", \"ts\": 0, \"pid\": 0, \"s\": \"g\"}\n]}\n", f);
    free(lastread);
    free(is_out);
    free(ev);
    return tp_outfile_commit(of, err);
}
