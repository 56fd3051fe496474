/* test_hostile_kernels.c - hostile attributes and sizes (issue 18, defects 1, 2 and 7) where the
 * command line cannot reach them: kernels prepared over tensors far too large to allocate
 * (only their shapes exist), and the model builders' API called with configs and options
 * out of range. Each case must fail with a message naming the vertex and attribute, or
 * refuse cleanly, and never overflow (UBSan runs these in the ASan build). */
#include <stdint.h>
#include <string.h>
#include "turnip/turnip.h"
#include "kernels/kernels.h"
#include "harness.h"

#define HDR "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": ["

/* prepares vertex `id` of the TaskGraph `json`; expects status `want` and `needle` in the message */
static void prep(const char *json, const char *id, tp_status want, const char *needle)
{
    tp_graph *g = NULL;
    tp_error e;
    memset(&e, 0, sizeof e);
    tp_status s = tp_graph_read_string(json, "g.json", &g, &e);
    CHECKF(s == TP_OK, "graph: %s", e.msg);
    if (s) return;
    tp__kplan kp;
    s = tp__kernel_prepare(g, (uint32_t)tp_graph_find(g, id), &kp, &e);
    CHECKF(s == want, "status %s, wanted %s (%s)", tp_status_str(s), tp_status_str(want), e.msg);
    if (needle) CHECKF(strstr(e.msg, needle) != NULL, "message '%s' lacks '%s'", e.msg, needle);
    tp_graph_free(g);
}

#define X(dt, shape) "{\"id\":\"x\",\"kind\":\"input\",\"device\":0,\"dtype\":\"" dt "\",\"shape\":" shape "}"
#define K(op, ins, dt, shape, attrs)                                                                                  \
    "{\"id\":\"k\",\"kind\":\"kernel\",\"device\":0,\"op\":\"" op "\",\"inputs\":" ins ",\"dtype\":\"" dt "\",\"shape\":" \
        shape ",\"attrs\":" attrs "}]}"

TEST(hostile_slice_bounds_without_overflow)
{
    prep(HDR X("f32", "[4, 2]") "," K("slice", "[\"x\"]", "f32", "[2, 2]", "{\"axis\":0,\"start\":9223372036854775806,\"length\":2}"), "k",
         TP_ERR_INVALID, "vertex 'k' (slice): attr 'start' 9223372036854775806 is outside [0, 4)");
    prep(HDR X("f32", "[4, 2]") "," K("slice", "[\"x\"]", "f32", "[2, 2]", "{\"axis\":0,\"start\":2,\"length\":9223372036854775807}"), "k",
         TP_ERR_INVALID, "attr 'length' 9223372036854775807 is outside [1, 2]");
    prep(HDR X("f32", "[4, 2]") "," K("slice", "[\"x\"]", "f32", "[2, 2]", "{\"axis\":2,\"start\":0,\"length\":1}"), "k", TP_ERR_INVALID,
         "attr 'axis' 2 is not an axis of a 2-dimensional input");
    prep(HDR X("f32", "[4, 2]") "," K("slice", "[\"x\"]", "f32", "[1, 2]", "{\"axis\":0,\"start\":3,\"length\":1}"), "k", TP_OK, NULL);
}

TEST(hostile_reshape_counts_elements)
{
    prep(HDR X("f32", "[4, 2]") "," K("reshape", "[\"x\"]", "f32", "[3, 3]", "{}"), "k", TP_ERR_INVALID,
         "vertex 'k' (reshape): reshape's output has 9 elements, its input 8");
    prep(HDR X("f16", "[4, 2]") "," K("reshape", "[\"x\"]", "f32", "[8]", "{}"), "k", TP_ERR_INVALID,
         "reshape's output must have its input's dtype");
    prep(HDR X("f32", "[4, 2]") "," K("reshape", "[\"x\", \"x\"]", "f32", "[8]", "{}"), "k", TP_ERR_INVALID, "takes 1 input, has 2");
    /* 2^62 elements as shapes only: counted without overflow, no scratch */
    prep(HDR X("f16", "[4611686018427387904]") "," K("reshape", "[\"x\"]", "f16", "[2147483648, 2147483648]", "{}"), "k", TP_OK, NULL);
    prep(HDR X("bf16", "[2, 3, 4]") "," K("reshape", "[\"x\"]", "bf16", "[1, 24, 1]", "{}"), "k", TP_OK, NULL);
}

TEST(hostile_offsets_bounded)
{
    prep(HDR X("f32", "[4, 2]") "," K("softmax", "[\"x\"]", "f32", "[4, 2]", "{\"causal\":true,\"row_offset\":-9223372036854775808}"), "k",
         TP_ERR_INVALID, "attr 'row_offset' -9223372036854775808 is outside [-2^53, 2^53]");
    prep(HDR X("f32", "[4, 2]") "," K("rope", "[\"x\"]", "f32", "[4, 2]", "{\"pos_offset\":9007199254740993}"), "k", TP_ERR_INVALID,
         "attr 'pos_offset' 9007199254740993 is outside");
    /* the limits themselves are accepted */
    prep(HDR X("f32", "[4, 2]") "," K("softmax", "[\"x\"]", "f32", "[4, 2]", "{\"causal\":true,\"row_offset\":-9007199254740992}"), "k",
         TP_OK, NULL);
    prep(HDR X("f32", "[4, 2]") "," K("rope", "[\"x\"]", "f32", "[4, 2]", "{\"pos_offset\":9007199254740992}"), "k", TP_OK, NULL);
    prep(HDR X("f32", "[4, 2]") "," K("scale", "[\"x\"]", "f32", "[4, 2]", "{\"alpha\":1e39}"), "k", TP_ERR_INVALID,
         "attr 'alpha' 1e+39 must be a finite number of f32 range");
}

TEST(hostile_huge_shapes_no_overflow)
{
    /* 2^62 f16 elements (2^63 bytes) exist only as shapes here */
    prep(HDR X("f16", "[4611686018427387904]") "," K("concat", "[\"x\", \"x\"]", "f16", "[1]", "{\"axis\":0}"), "k", TP_ERR_INVALID,
         "concat's extent along axis 0 overflows int64");
    prep(HDR X("f16", "[4611686018427387904]") "," K("sum", "[\"x\", \"x\", \"x\", \"x\", \"x\"]", "f16", "[4611686018427387904]", "{}"),
         "k", TP_ERR_INVALID, "the scratch for its inputs overflows 64 bits");
    prep(HDR X("f32", "[2147483648, 1]") ",{\"id\":\"w\",\"kind\":\"input\",\"device\":0,\"dtype\":\"f32\",\"shape\":[1, 1]},"
             K("matmul", "[\"x\", \"w\"]", "f32", "[2147483648, 1]", "{}"), "k",
         TP_ERR_INVALID, "matmul dimensions (m 2147483648, n 1, k 1) above 2^31-1");
}

TEST(hostile_llama_api_refuses_bad_config)
{
    tp_llama_config c;
    tp_error e;
    ASSERT_OK(tp_llama_preset("tiny", &c, &e));
    tp_llama_opts o;
    tp_llama_opts_default(&o, &c, 1, INT64_MAX, UINT64_MAX); /* no overflow computing blocks */
    CHECK(o.blocks >= 1);
    tp_build_estimate est;
    tp_llama_estimate(&c, &o, &est);
    CHECK(est.vertices > 1e9 && est.plan_bytes > 1e12);
    tp_graph *g = NULL;
    ASSERT_STATUS(tp_llama_build(&c, &o, &g, &e), TP_ERR_ARG); /* more tokens than 2^31-1 */
    tp_llama_opts_default(&o, &c, 1, 4, 1 << 20);
    tp_llama_config bad = c;
    bad.heads = (int64_t)1 << 32; /* was truncated to int: the builder wrote past its arrays */
    ASSERT_STATUS(tp_llama_build(&bad, &o, &g, &e), TP_ERR_ARG);
    bad = c;
    bad.theta = 1e300;
    ASSERT_STATUS(tp_llama_build(&bad, &o, &g, &e), TP_ERR_ARG);
    o.vocab_chunks = INT32_MAX; /* chunks x devices overflowed int */
    ASSERT_STATUS(tp_llama_build(&c, &o, &g, &e), TP_ERR_ARG);
    CHECK(g == NULL);
}

TEST(hostile_layered_estimate_no_overflow)
{
    tp_layered_opts o;
    tp_layered_opts_init(&o);
    uint64_t small = tp_layered_vertices(&o);
    o.layers = o.heads = o.chunks = INT32_MAX;
    o.devices = TP_MAX_DEVICES;
    CHECK(tp_layered_vertices(&o) == UINT64_MAX);
    tp_build_estimate est;
    tp_layered_estimate(&o, &est);
    CHECK(est.vertices > 1e20 && est.graph_bytes > est.vertices);
    tp_layered_opts_init(&o);
    tp_layered_estimate(&o, &est);
    ASSERT_EQ(small, (uint64_t)est.vertices);
    CHECK(tp_host_mem_limit() > 0);
    o.seq = INT64_MAX;
    tp_graph *g = NULL;
    tp_error e;
    ASSERT_STATUS(tp_model_layered(&o, &g, &e), TP_ERR_ARG);
    CHECK(strstr(e.msg, "overflow") != NULL);
}
