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

TEST(hostile_pad_bounds_without_overflow)
{
    static const struct { const char *attrs, *out; tp_status want; const char *needle; } cases[] = {
        {"{\"axis\":0,\"start\":1,\"extent\":7}", "[7, 2]", TP_OK, NULL},
        {"{\"axis\":1,\"start\":0,\"extent\":2}", "[4, 2]", TP_OK, NULL}, /* nothing padded */
        {"{\"axis\":0,\"start\":4,\"extent\":7}", "[7, 2]", TP_ERR_INVALID, "vertex 'k' (pad): attr 'start' 4 is outside [0, 3]"},
        {"{\"axis\":0,\"start\":-1,\"extent\":7}", "[7, 2]", TP_ERR_INVALID, "attr 'start' -1 is outside [0, 3]"},
        {"{\"axis\":0,\"start\":9223372036854775807,\"extent\":9223372036854775807}", "[7, 2]", TP_ERR_INVALID,
         "attr 'start' 9223372036854775807 is outside [0, 9223372036854775803]"},
        {"{\"axis\":0,\"start\":0,\"extent\":9223372036854775807}", "[7, 2]", TP_ERR_INVALID, "the op gives [9223372036854775807, 2]"},
        {"{\"axis\":0,\"start\":0,\"extent\":3}", "[3, 2]", TP_ERR_INVALID, "attr 'extent' 3 is below the input's 4 along the axis"},
        {"{\"axis\":0,\"start\":0,\"extent\":-9223372036854775807}", "[3, 2]", TP_ERR_INVALID, "attr 'extent' -9223372036854775807 is below"},
        {"{\"axis\":0,\"start\":0,\"extent\":8}", "[7, 2]", TP_ERR_INVALID, "output shape [7, 2], the op gives [8, 2]"},
        {"{\"axis\":0,\"start\":0}", "[7, 2]", TP_ERR_INVALID, "needs integer attr 'extent'"},
        {"{\"axis\":0,\"extent\":7}", "[7, 2]", TP_ERR_INVALID, "needs integer attr 'start'"},
        {"{\"axis\":2,\"start\":0,\"extent\":7}", "[7, 2]", TP_ERR_INVALID, "attr 'axis' 2 is not an axis of a 2-dimensional input"},
    };
    char json[1024];
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        snprintf(json, sizeof json, HDR X("f32", "[4, 2]") ",{\"id\":\"k\",\"kind\":\"kernel\",\"device\":0,\"op\":\"pad\","
                 "\"inputs\":[\"x\"],\"dtype\":\"f32\",\"shape\":%s,\"attrs\":%s}]}", cases[k].out, cases[k].attrs);
        prep(json, "k", cases[k].want, cases[k].needle);
    }
    prep(HDR X("f32", "[4, 2]") "," K("pad", "[\"x\", \"x\"]", "f32", "[7, 2]", "{\"axis\":0,\"start\":0,\"extent\":7}"), "k",
         TP_ERR_INVALID, "takes 1 input, has 2");
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

/* attention's q x [R, d], k [N, d], v [N, dv] -> k [R, dv], the shapes and attrs given */
#define ATT(dt, q, kk, vv, out, attrs)                                                                                   \
    HDR X(dt, q) ",{\"id\":\"kk\",\"kind\":\"input\",\"device\":0,\"dtype\":\"" dt "\",\"shape\":" kk "},"                 \
                 "{\"id\":\"vv\",\"kind\":\"input\",\"device\":0,\"dtype\":\"" dt "\",\"shape\":" vv "},"                  \
        K("attention", "[\"x\", \"kk\", \"vv\"]", dt, out, attrs)

TEST(hostile_attention_shapes_and_attrs)
{
    static const struct { const char *json; tp_status want; const char *needle; } cases[] = {
        {ATT("f32", "[4, 8]", "[6, 8]", "[6, 3]", "[4, 3]", "{\"causal\":true,\"row_offset\":2,\"scale\":0.5}"), TP_OK, NULL},
        {ATT("f32", "[4, 8]", "[6, 7]", "[6, 3]", "[4, 3]", "{}"), TP_ERR_INVALID, "attention needs q [R, d], k [N, d] and v [N, dv]"},
        {ATT("f32", "[4, 8]", "[6, 8]", "[5, 3]", "[4, 3]", "{}"), TP_ERR_INVALID, "attention needs q [R, d], k [N, d] and v [N, dv]"},
        {ATT("f32", "[4, 8]", "[6, 8]", "[6, 3]", "[4, 8]", "{}"), TP_ERR_INVALID, "output shape [4, 8], the op gives [4, 3]"},
        {ATT("f32", "[4, 8]", "[6, 8]", "[6, 3]", "[4, 3]", "{\"causal\":true,\"row_offset\":9007199254740993}"), TP_ERR_INVALID,
         "attr 'row_offset' 9007199254740993 is outside [-2^53, 2^53]"},
        /* BLAS's int dimensions; keys of 2^31 rows as shapes only */
        {ATT("f16", "[4, 8]", "[2147483648, 8]", "[2147483648, 3]", "[4, 3]", "{}"), TP_ERR_INVALID, "attention dimensions above 2^31-1"},
        /* the scratch: 16-bit operands and output in f32 (4 x 2^62 floats), counted without overflow */
        {ATT("f16", "[2147483648, 2147483648]", "[2147483648, 2147483648]", "[2147483648, 2147483648]", "[2147483648, 2147483648]", "{}"),
         TP_ERR_INVALID, "the scratch for its inputs overflows 64 bits"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) prep(cases[k].json, "k", cases[k].want, cases[k].needle);
    prep(HDR X("f32", "[4, 8]") ",{\"id\":\"kk\",\"kind\":\"input\",\"device\":0,\"dtype\":\"f32\",\"shape\":[6, 8]},"
             K("attention", "[\"x\", \"kk\"]", "f32", "[4, 8]", "{}"), "k", TP_ERR_INVALID, "takes 3 inputs, has 2");
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
    tp_llama_estimate(&c, &o, &est); /* more tokens than the builder takes: nothing to estimate (its message shows) */
    CHECK(est.vertices == 0 && est.plan_bytes == 0);
    tp_llama_opts big = o;
    big.seq = TP_LLAMA_MAX_SEQ; /* the most it takes: finite and large */
    big.blocks = 1 << 20;
    tp_llama_estimate(&c, &big, &est);
    CHECK(est.vertices > 1e8 && est.plan_bytes > 1e10 && est.plan_bytes < 1e30);
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

#define IN(id, dt, shape) "{\"id\":\"" id "\",\"kind\":\"input\",\"device\":0,\"dtype\":\"" dt "\",\"shape\":" shape "},"

/* prepares `json`'s vertex k and asks whether it may write over input `in` */
static int inplace_ok(const char *json, uint32_t in)
{
    tp_graph *g = NULL;
    tp_error e;
    tp__kplan kp;
    if (tp_graph_read_string(json, "g.json", &g, &e) || tp__kernel_prepare(g, (uint32_t)tp_graph_find(g, "k"), &kp, &e)) {
        CHECKF(0, "graph or prepare: %s", e.msg);
        tp_graph_free(g);
        return -1;
    }
    int ok = tp__kernel_inplace_ok(g, (uint32_t)tp_graph_find(g, "k"), &kp, in);
    tp_graph_free(g);
    return ok;
}

/* the training ops (issue 13): each attribute out of range, and each input of the wrong shape or
 * dtype, is refused naming the vertex and what is wrong; the limits and good graphs are accepted */
TEST(hostile_training_ops)
{
    const char *rms = HDR IN("x", "f32", "[2, 3, 4]") IN("w", "f32", "[4]") IN("dy", "f32", "[2, 3, 4]");
    char buf[2048];
#define G(pre, rest) (snprintf(buf, sizeof buf, "%s%s", pre, rest), buf)
    prep(G(rms, K("rmsnorm_grad", "[\"x\", \"w\", \"dy\"]", "f32", "[2, 3, 4]", "{\"eps\":1e39}")), "k", TP_ERR_INVALID,
         "vertex 'k' (rmsnorm_grad): attr 'eps' 1e+39 must be a finite number of f32 range");
    prep(G(rms, K("rmsnorm_grad", "[\"x\", \"w\", \"x\"]", "f32", "[2, 3, 4]", "{}")), "k", TP_OK, NULL);
    prep(G(rms, K("rmsnorm_grad", "[\"x\", \"w\", \"w\"]", "f32", "[2, 3, 4]", "{}")), "k", TP_ERR_INVALID,
         "vertex 'k' (rmsnorm_grad): rmsnorm_grad needs x [..., d], w [d] and dy of x's shape");
    prep(G(rms, K("rmsnorm_grad", "[\"x\", \"w\"]", "f32", "[2, 3, 4]", "{}")), "k", TP_ERR_INVALID, "takes 3 inputs, has 2");
    prep(HDR X("f32", "[4, 2]") "," K("rope_grad", "[\"x\"]", "f32", "[4, 2]", "{\"pos_offset\":9007199254740993}"), "k",
         TP_ERR_INVALID, "vertex 'k' (rope_grad): attr 'pos_offset' 9007199254740993 is outside [-2^53, 2^53]");
    prep(HDR X("f32", "[4, 3]") "," K("rope_grad", "[\"x\"]", "f32", "[4, 3]", "{}"), "k", TP_ERR_INVALID, "even head_dim");
    prep(HDR X("f32", "[4, 2]") "," K("softmax_grad", "[\"x\", \"x\"]", "f32", "[4, 2]", "{\"scale\":\"big\"}"), "k", TP_ERR_INVALID,
         "vertex 'k' (softmax_grad): attr 'scale' must be a number");
    prep(HDR X("f32", "[4, 2]") "," IN("y", "f32", "[2, 4]") K("softmax_grad", "[\"x\", \"y\"]", "f32", "[4, 2]", "{}"), "k",
         TP_ERR_INVALID, "needs two inputs of one shape");
    prep(HDR X("f32", "[4, 2]") "," IN("y", "f16", "[8]") K("silu_grad", "[\"x\", \"y\"]", "f32", "[4, 2]", "{}"), "k", TP_ERR_INVALID,
         "vertex 'k' (silu_grad): needs two inputs of one shape");
    /* logsumexp: leading dims must agree; the output is [..., 1] */
    prep(HDR X("f32", "[4, 2]") "," IN("y", "f32", "[3, 5]") K("logsumexp", "[\"x\", \"y\"]", "f32", "[4, 1]", "{}"), "k", TP_ERR_INVALID,
         "vertex 'k' (logsumexp): logsumexp input 1's leading dims differ from input 0's");
    prep(HDR X("f32", "[4, 2]") "," IN("y", "bf16", "[4, 5]") K("logsumexp", "[\"x\", \"y\", \"x\"]", "f16", "[4, 1]", "{}"), "k", TP_OK,
         NULL);
    prep(HDR X("f32", "[4, 2]") "," K("logsumexp", "[\"x\"]", "f32", "[4, 2]", "{}"), "k", TP_ERR_INVALID,
         "output shape [4, 2], the op gives [4, 1]");
    /* xent and xent_grad: offsets bounded, ids i32, lse f32 [T, 1] */
    const char *xe = HDR IN("l", "bf16", "[3, 5]") IN("lse", "f32", "[3, 1]") IN("ids", "i32", "[3]") IN("fids", "f32", "[3]")
        IN("hlse", "f16", "[3, 1]");
    prep(G(xe, K("xent", "[\"l\", \"lse\", \"ids\"]", "f32", "[3, 1]", "{\"id_offset\":-9223372036854775808}")), "k", TP_ERR_INVALID,
         "vertex 'k' (xent): attr 'id_offset' -9223372036854775808 is outside [-2^53, 2^53]");
    prep(G(xe, K("xent_grad", "[\"l\", \"lse\", \"ids\"]", "bf16", "[3, 5]", "{\"id_offset\":9007199254740993}")), "k", TP_ERR_INVALID,
         "vertex 'k' (xent_grad): attr 'id_offset' 9007199254740993 is outside");
    prep(G(xe, K("xent_grad", "[\"l\", \"lse\", \"ids\"]", "bf16", "[3, 5]", "{\"id_offset\":-9007199254740992,\"scale\":0.25}")), "k",
         TP_OK, NULL);
    prep(G(xe, K("xent", "[\"l\", \"lse\", \"fids\"]", "f32", "[3, 1]", "{}")), "k", TP_ERR_INVALID,
         "vertex 'k' (xent): input 2 'fids' must have a shape and i32 dtype");
    prep(G(xe, K("xent", "[\"l\", \"hlse\", \"ids\"]", "f32", "[3, 1]", "{}")), "k", TP_ERR_INVALID, "input 1 'hlse' (lse) must be f32");
    prep(G(xe, K("xent", "[\"l\", \"ids\", \"ids\"]", "f32", "[3, 1]", "{}")), "k", TP_ERR_INVALID,
         "input 1 'ids' must have a shape and an f32");
    prep(G(xe, K("xent", "[\"l\", \"lse\", \"ids\"]", "f32", "[3, 5]", "{}")), "k", TP_ERR_INVALID,
         "output shape [3, 5], the op gives [3, 1]");
    prep(G(xe, K("xent_grad", "[\"l\", \"l\", \"ids\"]", "f32", "[3, 5]", "{}")), "k", TP_ERR_INVALID,
         "xent_grad needs logits [T, Vc], lse [T, 1] and ids [T]");
    /* adam_moment: beta required, in [0, 1) as an f32 */
    const char *am = HDR IN("m", "f32", "[4, 2]") IN("g", "bf16", "[4, 2]");
    prep(G(am, K("adam_moment", "[\"m\", \"g\"]", "f32", "[4, 2]", "{\"beta\":1}")), "k", TP_ERR_INVALID,
         "vertex 'k' (adam_moment): attr 'beta' 1 is outside [0, 1)");
    prep(G(am, K("adam_moment", "[\"m\", \"g\"]", "f32", "[4, 2]", "{\"beta\":0.99999999999}")), "k", TP_ERR_INVALID,
         "attr 'beta' 1 is outside [0, 1)"); /* 1 once rounded to f32: 1 - beta would be 0 */
    prep(G(am, K("adam_moment", "[\"m\", \"g\"]", "f32", "[4, 2]", "{\"beta\":-0.5}")), "k", TP_ERR_INVALID,
         "attr 'beta' -0.5 is outside [0, 1)");
    prep(G(am, K("adam_moment", "[\"m\", \"g\"]", "f32", "[4, 2]", "{\"square\":true}")), "k", TP_ERR_INVALID,
         "vertex 'k' (adam_moment): needs number attr 'beta'");
    prep(G(am, K("adam_moment", "[\"m\", \"g\"]", "f32", "[4, 2]", "{\"beta\":0.999,\"square\":1}")), "k", TP_ERR_INVALID,
         "attr 'square' must be true or false");
    prep(G(am, K("adam_moment", "[\"m\", \"g\"]", "f32", "[4, 2]", "{\"beta\":0,\"square\":true}")), "k", TP_OK, NULL);
    /* adamw: eps > 0, weight_decay >= 0, hyper f32 [3] */
    const char *aw = HDR IN("p", "f32", "[4, 2]") IN("m", "f32", "[4, 2]") IN("v", "f16", "[4, 2]") IN("h", "f32", "[3]")
        IN("h2", "f32", "[2]") IN("h16", "bf16", "[3]");
    prep(G(aw, K("adamw", "[\"p\", \"m\", \"v\", \"h\"]", "f32", "[4, 2]", "{\"eps\":0}")), "k", TP_ERR_INVALID,
         "vertex 'k' (adamw): attr 'eps' 0 is outside (0, 3.40282e+38]");
    prep(G(aw, K("adamw", "[\"p\", \"m\", \"v\", \"h\"]", "f32", "[4, 2]", "{\"eps\":-1e-8}")), "k", TP_ERR_INVALID,
         "attr 'eps' -1e-08 is outside");
    prep(G(aw, K("adamw", "[\"p\", \"m\", \"v\", \"h\"]", "f32", "[4, 2]", "{\"weight_decay\":-0.01}")), "k", TP_ERR_INVALID,
         "attr 'weight_decay' -0.01 is outside [0, 3.40282e+38]");
    prep(G(aw, K("adamw", "[\"p\", \"m\", \"v\", \"h\"]", "f32", "[4, 2]", "{\"weight_decay\":1e300}")), "k", TP_ERR_INVALID,
         "attr 'weight_decay' 1e+300 must be a finite number of f32 range");
    prep(G(aw, K("adamw", "[\"p\", \"m\", \"v\", \"h2\"]", "f32", "[4, 2]", "{}")), "k", TP_ERR_INVALID,
         "vertex 'k' (adamw): adamw's input 3 'h2' must be hyper, f32 [3]");
    prep(G(aw, K("adamw", "[\"p\", \"m\", \"v\", \"h16\"]", "f32", "[4, 2]", "{}")), "k", TP_ERR_INVALID, "input 3 'h16' must be hyper");
    prep(G(aw, K("adamw", "[\"p\", \"m\", \"h\", \"h\"]", "f32", "[4, 2]", "{}")), "k", TP_ERR_INVALID,
         "adamw needs p, m and v of one shape");
    prep(G(aw, K("adamw", "[\"p\", \"m\", \"v\", \"h\"]", "bf16", "[4, 2]", "{\"eps\":1e-6,\"weight_decay\":0.1}")), "k", TP_OK, NULL);
    /* in place: adam_moment and adamw over input 0 only, silu_grad over either, xent_grad never */
    ASSERT_EQ(inplace_ok(G(am, K("adam_moment", "[\"m\", \"g\"]", "f32", "[4, 2]", "{\"beta\":0.9}")), 0), 1);
    ASSERT_EQ(inplace_ok(G(am, K("adam_moment", "[\"m\", \"g\"]", "f32", "[4, 2]", "{\"beta\":0.9}")), 1), 0);
    ASSERT_EQ(inplace_ok(G(aw, K("adamw", "[\"p\", \"m\", \"v\", \"h\"]", "f32", "[4, 2]", "{}")), 0), 1);
    ASSERT_EQ(inplace_ok(G(aw, K("adamw", "[\"p\", \"m\", \"v\", \"h\"]", "f32", "[4, 2]", "{}")), 1), 0);
    ASSERT_EQ(inplace_ok(G(am, K("silu_grad", "[\"g\", \"m\"]", "f32", "[4, 2]", "{}")), 1), 1);
    ASSERT_EQ(inplace_ok(G(am, K("silu_grad", "[\"g\", \"m\"]", "f32", "[4, 2]", "{}")), 0), 0); /* bf16 under an f32 output */
    ASSERT_EQ(inplace_ok(G(am, K("silu_grad", "[\"m\", \"m\"]", "f32", "[4, 2]", "{}")), 0), 1);
    ASSERT_EQ(inplace_ok(G(xe, K("xent_grad", "[\"l\", \"lse\", \"ids\"]", "bf16", "[3, 5]", "{}")), 0), 0);
#undef G
}
