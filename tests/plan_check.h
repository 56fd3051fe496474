/* plan_check.h - what the planner's tests share: a TaskGraph from JSON text, the independent
 * verifier's verdict on a plan, counts of MemGraph vertex kinds. */
#ifndef TP_PLAN_CHECK_H
#define TP_PLAN_CHECK_H
#include <stdlib.h>
#include "turnip/turnip.h"
#include "harness.h"

/* a finalized graph from JSON text (the test fails on any error) */
static inline tp_graph *load(const char *json)
{
    tp_graph *g;
    tp_error e;
    ASSERT_OK_ERR(tp_graph_read_string(json, "t", &g, &e), e);
    return g;
}

/* mg, as JSON, passes tp_verify_json against g */
static inline void verify(const tp_memgraph *mg, const tp_graph *g)
{
    char *text;
    size_t len;
    tp_error e;
    ASSERT_OK_ERR(tp_memgraph_to_string(mg, &text, &len, &e), e);
    ASSERT_OK_ERR(tp_verify_json(text, len, "plan", g, &e), e);
    free(text);
}

static inline int count_kind(const tp_memgraph *mg, tp_mkind k)
{
    int n = 0;
    for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        n += v.kind == k;
    }
    return n;
}
#endif
