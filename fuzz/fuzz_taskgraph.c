/* fuzz_taskgraph.c - the TaskGraph reader; every graph it accepts (up to 2,000 vertices) is
 * also planned at its smallest feasible caps and at twice them, and each plan must pass the
 * independent verifier: a rejected plan is a planner bug. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_str(data, size);
    tp_graph *g = NULL;
    tp_error e;
    if (tp_graph_read_string(text, "fuzz", &g, &e) == TP_OK && tp_graph_size(g) <= 2000) {
        int nd = tp_graph_devices(g);
        uint64_t minf[TP_MAX_DEVICES];
        for (int o = 0; o < 3; o++) {
            if (tp_plan_bounds(g, (tp_order)o, minf, NULL, &e) != TP_OK) continue;
            for (int twice = 0; twice < 2; twice++) {
                tp_plan_opts po;
                tp_plan_opts_init(&po, nd, 0);
                po.order = (tp_order)o;
                int ok = 1;
                for (int d = 0; d < nd; d++) {
                    if (minf[d] > (1ull << 40)) ok = 0; /* absurd sizes: the planner reports them, nothing to verify */
                    po.device_mem[d] = minf[d] << twice;
                }
                if (!ok) continue;
                tp_memgraph *mg = NULL;
                if (tp_plan(g, &po, &mg, &e) != TP_OK) continue;
                char *mj;
                size_t len;
                if (tp_memgraph_to_string(mg, &mj, &len, &e) == TP_OK) {
                    if (tp_verify_json(mj, len, "fuzz-plan", g, &e) != TP_OK) FUZZ_BUG("planner bug: %s", e.msg);
                    free(mj);
                }
                tp_memgraph_free(mg);
            }
        }
    }
    tp_graph_free(g);
    free(text);
    return 0;
}
