/* trace.c - Chrome trace-event JSON of a finished run (opens in Perfetto or chrome://tracing):
 * one process per device, one track per compute stream and copy engine, a slice per vertex
 * with its kind, task and bytes, and a counter of the device memory holding live values (a
 * value is live from its writer's start to its last reader's end; outputs stay live). */
#include <stdlib.h>
#include <string.h>
#include "exec/backend.h"
#include "io/util.h"

const tp_memgraph *tp__exec_mg(const tp_exec *x);
const double *tp__exec_times(const tp_exec *x, int end);
const int16_t *tp__exec_units(const tp_exec *x);
const uint8_t *tp__exec_engines(const tp_exec *x);
const int16_t *tp__exec_devices(const tp_exec *x);
tp_status tp__trace_write(const tp_exec *x, const char *path, double start, tp_error *err);

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

static const char *eng_names[TP_ENG_COUNT] = {"stream", "h2d", "d2h", "peer-in"};

tp_status tp__trace_write(const tp_exec *x, const char *path, double start, tp_error *err)
{
    const tp_memgraph *mg = tp__exec_mg(x);
    const tp_graph *g = tp_memgraph_taskgraph(mg);
    const double *t0 = tp__exec_times(x, 0), *t1 = tp__exec_times(x, 1);
    const int16_t *unit = tp__exec_units(x), *dev = tp__exec_devices(x);
    const uint8_t *eng = tp__exec_engines(x);
    uint32_t n = tp_memgraph_size(mg);
    FILE *f = fopen(path, "w");
    if (!f) return tp__fail(err, TP_ERR_IO, "%s: cannot write the trace", path);
    double *lastread = calloc(n + 1, sizeof *lastread);
    uint8_t *is_out = calloc(n + 1, 1);
    memev *ev = malloc((2 * (size_t)n + 1) * sizeof *ev);
    if (!lastread || !is_out || !ev) {
        fclose(f);
        free(lastread);
        free(is_out);
        free(ev);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    for (uint32_t k = 0; k < tp_graph_num_outputs(g); k++) is_out[tp_memgraph_outputs(mg)[k]] = 1;
    fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n", f);
    int nd = tp_graph_devices(g);
    int maxunit = 0;
    for (uint32_t i = 0; i < n; i++)
        if (eng[i] == TP_ENG_COMPUTE && unit[i] > maxunit) maxunit = unit[i];
    for (int d = 0; d < nd; d++) {
        fprintf(f, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": \"device %d\"}},\n", d, d);
        for (int e = 0; e < TP_ENG_COUNT; e++)
            for (int u = 0; u <= (e == TP_ENG_COMPUTE ? maxunit : 0); u++)
                fprintf(f, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"args\": {\"name\": \"%s %d\"}},\n",
                        d, e * 100 + u, eng_names[e], u);
    }
    size_t ne = 0;
    for (uint32_t i = 0; i < n; i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        for (uint32_t r = 0; r < v.nreads; r++)
            if (t1[i] > lastread[v.reads[r]]) lastread[v.reads[r]] = t1[i];
        if (eng[i] == TP_ENG_COUNT) continue;
        fprintf(f, "{\"name\": ");
        char name[160];
        snprintf(name, sizeof name, "%s %.120s", tp_mkind_name(v.kind), tp_graph_vertex(g, v.task)->id);
        tp__json_str(f, name);
        fprintf(f, ", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": %d, \"tid\": %d, \"args\": {\"vertex\": %u, \"task\": ",
                tp_mkind_name(v.kind), (t0[i] - start) * 1e6, (t1[i] - t0[i]) * 1e6, dev[i],
                eng[i] * 100 + (eng[i] == TP_ENG_COMPUTE ? unit[i] : 0), i); /* a copy engine is one track */
        tp__json_str(f, tp_graph_vertex(g, v.task)->id);
        fprintf(f, ", \"bytes\": %llu}},\n", (unsigned long long)v.write.bytes);
    }
    for (uint32_t i = 0; i < n; i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        if (v.write.space != TP_SPACE_DEVICE) continue;
        ev[ne++] = (memev){t0[i], (int64_t)v.write.bytes, v.write.device};
        if (!is_out[i]) ev[ne++] = (memev){lastread[i] > t1[i] ? lastread[i] : t1[i], -(int64_t)v.write.bytes, v.write.device};
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
    int bad = ferror(f);
    if (fclose(f) || bad) return tp__fail(err, TP_ERR_IO, "%s: write error", path);
    return TP_OK;
}
