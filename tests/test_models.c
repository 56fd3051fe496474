/* test_models.c - the LLaMA builders' structure (issue 12): the prefill's closed-form estimate
 * equals the graph it builds for batches, KV outputs and every split; a batch shares its weight
 * inputs and names its outputs as the contract says; the decode layer and head graphs have the
 * contract's inputs, outputs and shapes, in-place cache appends, flops on every computing
 * kernel, and refuse options out of range with TP_ERR_ARG. Values are checked against numpy
 * and PyTorch by tests/decode_numpy.py and tests/llama_torch.py. */
#include <stdio.h>
#include <math.h>
#include <string.h>
#include "turnip/turnip.h"
#include "harness.h"

static tp_llama_config tiny(int64_t heads, int64_t kv, int tie)
{
    tp_llama_config c = {64, 96, heads, kv, 2, 50, 1e-5, 10000.0, TP_DT_F16, tie};
    return c;
}

static double edges_of(const tp_graph *g)
{
    double e = 0;
    for (uint32_t v = 0; v < tp_graph_size(g); v++) e += tp_graph_vertex(g, v)->ninputs;
    return e;
}

static const tp_vertex *find(const tp_graph *g, const char *id)
{
    int64_t i = tp_graph_find(g, id);
    CHECKF(i >= 0, "no vertex '%s'", id);
    return tp_graph_vertex(g, (uint32_t)i);
}

static void shape_is(const tp_vertex *v, int nd, int64_t a, int64_t b, int64_t c, int64_t d)
{
    int64_t want[4] = {a, b, c, d};
    CHECKF(v->ndim == nd, "'%s' has %d dimensions, wanted %d", v->id, v->ndim, nd);
    for (int i = 0; i < nd; i++) CHECKF(v->shape[i] == want[i], "'%s' axis %d is %lld, wanted %lld", v->id, i, (long long)v->shape[i], (long long)want[i]);
}

static int is_output(const tp_graph *g, uint32_t v)
{
    for (uint32_t k = 0; k < tp_graph_num_outputs(g); k++)
        if (tp_graph_outputs(g)[k] == v) return 1;
    return 0;
}

TEST(models_llama_estimate_exact_with_batches)
{
    int n = 0;
    for (int tie = 0; tie < 2; tie++)
        for (int D = 1; D <= 5; D++) /* 2 KV groups of 2 heads: D 3-4 split groups, D 5 leaves a device without heads */
            for (int64_t S = 1; S <= 3; S++)
                for (int NB = 1; NB <= 3; NB += 2)
                    for (int AL = 0; AL < 2; AL++)
                        for (int VC = 1; VC <= 2; VC++)
                            for (int SC = 0; SC < 4; SC++) { /* bit 0 scatter, bit 1 scores */
                            tp_llama_config c = tiny(4, 2, tie);
                            tp_llama_opts o;
                            tp_error e;
                            tp_llama_opts_default(&o, &c, D, 6 + (SC & 1), UINT64_MAX); /* 7 tokens: blocks of 2, 2 and 3 rows */
                            o.batch = S;
                            o.blocks = NB;
                            o.all_logits = AL;
                            o.vocab_chunks = VC;
                            o.mlp_chunks = 3 - VC;
                            o.kv_out = (int)(S + NB) % 2;
                            o.residual = SC & 1 ? TP_LLAMA_SCATTER : TP_LLAMA_GATHER;
                            o.attention = SC & 2 ? TP_LLAMA_SCORES : TP_LLAMA_FUSED;
                            tp_graph *g;
                            ASSERT_OK_ERR(tp_llama_build(&c, &o, &g, &e), e);
                            tp_build_estimate est;
                            tp_llama_estimate(&c, &o, &est);
                            CHECKF(est.vertices == tp_graph_size(g) && est.edges == edges_of(g),
                                   "tie %d D %d B %lld blocks %d all %d VC %d scatter|scores %d: %u vertices %.0f edges, estimated %.0f and %.0f", tie,
                                   D, (long long)S, NB, AL, VC, SC, tp_graph_size(g), edges_of(g), est.vertices, est.edges);
                            tp_graph_free(g);
                            n++;
                        }
    ASSERT_EQ(n, 960);
}

TEST(models_llama_batch_shares_weights_and_names_outputs)
{
    tp_llama_config c = tiny(4, 2, 0);
    tp_llama_opts o;
    tp_error e;
    tp_graph *g1, *g3;
    tp_llama_opts_default(&o, &c, 2, 5, UINT64_MAX);
    o.blocks = 2;
    ASSERT_OK_ERR(tp_llama_build(&c, &o, &g1, &e), e);
    o.batch = 3;
    o.kv_out = 1;
    ASSERT_OK_ERR(tp_llama_build(&c, &o, &g3, &e), e);
    uint32_t in1 = 0, in3 = 0;
    for (uint32_t v = 0; v < tp_graph_size(g1); v++) in1 += tp_graph_vertex(g1, v)->kind == TP_V_INPUT;
    for (uint32_t v = 0; v < tp_graph_size(g3); v++) {
        const tp_vertex *x = tp_graph_vertex(g3, v);
        if (x->kind != TP_V_INPUT) continue;
        in3++;
        CHECKF(tp_graph_find(g1, x->id) >= 0, "input '%s' is not one of the single prompt's", x->id);
    }
    ASSERT_EQ(in1, in3); /* one input per weight slice, whatever the batch */
    shape_is(find(g3, "input_ids"), 1, 15, 0, 0, 0);
    const tp_vertex *lg = find(g3, "logits");
    shape_is(lg, 2, 3, 50, 0, 0);
    ASSERT_EQ(tp_graph_num_outputs(g3), 1 + 2 * 2 * 3 * 2); /* logits, k and v per layer, sequence, group */
    char id[64];
    for (int l = 0; l < 2; l++)
        for (int b = 0; b < 3; b++)
            for (int gq = 0; gq < 2; gq++)
                for (int kv = 0; kv < 2; kv++) {
                    snprintf(id, sizeof id, "kv.%d.%c.b%d.g%d", l, kv ? 'v' : 'k', b, gq);
                    const tp_vertex *x = find(g3, id);
                    shape_is(x, 2, 5, 16, 0, 0);
                    CHECKF(is_output(g3, (uint32_t)tp_graph_find(g3, id)), "'%s' is not an output", id);
                    ASSERT_EQ(x->device, gq); /* group g lives on device g with two devices and two groups */
                }
    ASSERT_EQ(tp_graph_num_outputs(g1), 1);
    CHECK(tp_graph_find(g1, "kv.0.k.b0.g0") < 0);
    tp_graph_free(g1);
    tp_graph_free(g3);
    o.all_logits = 1;
    ASSERT_OK_ERR(tp_llama_build(&c, &o, &g3, &e), e);
    shape_is(find(g3, "logits"), 2, 15, 50, 0, 0);
    tp_graph_free(g3);
}

TEST(models_llama_batch_refuses_out_of_range)
{
    tp_llama_config c = tiny(4, 2, 0);
    tp_llama_opts o;
    tp_error e;
    tp_graph *g = NULL;
    tp_llama_opts_default(&o, &c, 1, 4, UINT64_MAX);
    o.batch = 0;
    ASSERT_STATUS(tp_llama_build(&c, &o, &g, &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "batch 0") != NULL, "%s", e.msg);
    o.batch = TP_LLAMA_MAX_BATCH + 1;
    ASSERT_STATUS(tp_llama_build(&c, &o, &g, &e), TP_ERR_ARG);
    o.batch = 2;
    o.seq = TP_LLAMA_MAX_SEQ / 2 + 1; /* B x T one above 2^31-1 */
    ASSERT_STATUS(tp_llama_build(&c, &o, &g, &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "batch x tokens") != NULL, "%s", e.msg);
    o.seq = 4;
    o.kv_out = 2;
    ASSERT_STATUS(tp_llama_build(&c, &o, &g, &e), TP_ERR_ARG);
    CHECK(g == NULL);
    o.kv_out = 0;
    o.batch = INT64_MAX; /* sizes the builder refuses: nothing to estimate, so its message is what a caller sees */
    tp_build_estimate est;
    tp_llama_estimate(&c, &o, &est);
    CHECK(est.vertices == 0 && est.vertex_bytes == 0 && est.graph_bytes == 0 && est.plan_bytes == 0);
    o.batch = TP_LLAMA_MAX_BATCH; /* the largest batch the builder takes, at the most tokens it allows: finite, large */
    o.seq = TP_LLAMA_MAX_SEQ / TP_LLAMA_MAX_BATCH;
    o.blocks = 4;
    tp_llama_estimate(&c, &o, &est);
    CHECK(isfinite(est.vertices) && isfinite(est.graph_bytes) && est.vertices > 1e6 && est.graph_bytes > 1e9);
}

TEST(models_llama_residual_options)
{
    tp_llama_config c = tiny(4, 2, 0);
    tp_llama_opts o;
    tp_error e;
    tp_graph *g = NULL;
    /* scatter raises the blocks to min(devices, ceil(T / 1024)), never lowers them, never past T */
    static const struct { int D; int64_t T; int blocks, want; } cases[] = {
        {8, 4096, 1, 4}, {8, 16384, 1, 8}, {4, 1025, 1, 2}, {4, 1024, 1, 1}, {8, 4096, 6, 6}, {5, 3, 1, 1}, {1, 99999, 1, 1}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        tp_llama_opts_default(&o, &c, cases[k].D, cases[k].T, UINT64_MAX);
        o.blocks = cases[k].blocks;
        tp_llama_opts_residual(&o, TP_LLAMA_SCATTER);
        CHECKF(o.blocks == cases[k].want && o.residual == TP_LLAMA_SCATTER, "D %d T %lld blocks %d: %d, wanted %d", cases[k].D,
               (long long)cases[k].T, cases[k].blocks, o.blocks, cases[k].want);
        ASSERT_EQ(tp_llama_plan_order(&o), TP_ORDER_TOPO); /* the builder's order */
        tp_llama_opts_residual(&o, TP_LLAMA_GATHER); /* gather leaves them */
        ASSERT_EQ(o.blocks, cases[k].want);
        ASSERT_EQ(tp_llama_plan_order(&o), TP_ORDER_TOPO); /* fused attention: the builder's order too */
        o.attention = TP_LLAMA_SCORES;
        ASSERT_EQ(tp_llama_plan_order(&o), TP_ORDER_DEFAULT);
    }
    /* the residual must be one of the two */
    tp_llama_opts_default(&o, &c, 2, 4, UINT64_MAX);
    o.residual = 2;
    ASSERT_STATUS(tp_llama_build(&c, &o, &g, &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "residual 2") != NULL, "%s", e.msg);
    CHECK(g == NULL);
    /* scatter: block 0's rows in min(D, rows) pieces, piece j on device j, each the sum of its
     * residual and one row slice per device (attention: devices with heads only) */
    tp_llama_opts_default(&o, &c, 5, 3, UINT64_MAX); /* 5 devices, 3 rows: 3 pieces of a row; device 0 has no heads */
    o.blocks = 1;
    o.residual = TP_LLAMA_SCATTER;
    ASSERT_OK_ERR(tp_llama_build(&c, &o, &g, &e), e);
    for (int j = 0; j < 3; j++) {
        char id[64];
        snprintf(id, sizeof id, "L0.h.b0.p%d", j);
        const tp_vertex *h = find(g, id);
        shape_is(h, 2, 1, 64, 0, 0);
        ASSERT_EQ(h->device, j);
        ASSERT_EQ(h->ninputs, 1 + 4); /* the piece and the partials of the 4 devices with heads */
        snprintf(id, sizeof id, "L0.out.b0.p%d", j);
        ASSERT_EQ(find(g, id)->ninputs, 1 + 5);
    }
    CHECK(tp_graph_find(g, "L0.h.b0.p3") < 0);
    CHECK(tp_graph_find(g, "L0.o.b0.d0") < 0); /* lo(4 heads, 5, 1) = 0: device 0 has none */
    tp_graph_free(g);
}

static tp_llama_decode_opts dopts(int64_t B, int64_t pos, int64_t max_len)
{
    tp_llama_decode_opts o = {2, 1, 1, B, pos, max_len, 1, 0, NULL, NULL, 0};
    return o;
}

/* fused attention: one `attention` vertex per (head, block) reading the query rows, the keys
 * and the values so far, no scores or probabilities; the blocks each attention chooses */
TEST(models_llama_fused_attention)
{
    tp_llama_config c = tiny(4, 2, 0); /* hidden 64 (see tiny), head_dim 16 */
    tp_llama_opts o;
    tp_error e;
    tp_graph *g = NULL;
    tp_llama_opts_default(&o, &c, 1, 7, UINT64_MAX);
    ASSERT_EQ(o.attention, TP_LLAMA_FUSED);
    o.blocks = 3; /* rows 0-1, 2-3, 4-6 */
    ASSERT_OK_ERR(tp_llama_build(&c, &o, &g, &e), e);
    const tp_vertex *a = find(g, "L0.attn.h3.b2");
    CHECK(!strcmp(a->op, "attention"));
    shape_is(a, 2, 3, c.hidden / c.heads, 0, 0);
    ASSERT_EQ(a->ninputs, 3);
    CHECK(!strcmp(tp_graph_vertex(g, a->inputs[0])->id, "L0.q_rope.h3.b2"));
    shape_is(tp_graph_vertex(g, a->inputs[1]), 2, 7, c.hidden / c.heads, 0, 0); /* keys of rows 0-6, group 1 */
    CHECK(!strcmp(tp_graph_vertex(g, a->inputs[1])->id, "L0.K.g1.b2") && !strcmp(tp_graph_vertex(g, a->inputs[2])->id, "L0.V.g1.b2"));
    CHECK(strstr(a->attrs_json, "\"row_offset\":4") && strstr(a->attrs_json, "\"causal\":true"));
    CHECK(tp_graph_find(g, "L0.scores.h3.b2") < 0 && tp_graph_find(g, "L0.probs.h3.b2") < 0);
    /* the keys: block 0's rows padded to all 7 (zeros after), blocks 1 and 2 written in place at their rows */
    static const char *const kv[] = {"L0.K.g1.b0", "L0.K.g1.b1", "L0.K.g1.b2", "L0.V.g1.b0", "L0.V.g1.b1", "L0.V.g1.b2"};
    static const char *const part[] = {"L0.k_rope.g1.b0", "L0.k_rope.g1.b1", "L0.k_rope.g1.b2", "L0.v.g1.b0", "L0.v.g1.b1", "L0.v.g1.b2"};
    for (int k = 0; k < 6; k++) {
        const tp_vertex *x = find(g, kv[k]);
        int q = k % 3;
        shape_is(x, 2, 7, c.hidden / c.heads, 0, 0);
        CHECKF(!strcmp(x->op, q ? "write_slice" : "pad"), "%s: op %s", kv[k], x->op);
        ASSERT_EQ(x->ninputs, q ? 2u : 1u);
        CHECK(!strcmp(tp_graph_vertex(g, x->inputs[x->ninputs - 1])->id, part[k]));
        if (q) CHECK(!strcmp(tp_graph_vertex(g, x->inputs[0])->id, kv[k - 1]));
        ASSERT_EQ(tp_graph_inplace(g, (uint32_t)tp_graph_find(g, kv[k])), q ? 0 : -1);
        CHECK(strstr(x->attrs_json, q == 0 ? "\"start\":0,\"extent\":7" : q == 1 ? "\"start\":2" : "\"start\":4"));
    }
    tp_graph_free(g);
    g = NULL;
    /* the blocks: fused, at most TP_LLAMA_FUSED_ROWS rows, fewer where a residual block would pass
     * cap/64, at least 2 (at most T); scores, one head's scores within cap/16 */
    static const struct { int64_t T; uint64_t cap; int att, want; } cases[] = {
        {8192, UINT64_MAX, TP_LLAMA_FUSED, 2}, {16385, UINT64_MAX, TP_LLAMA_FUSED, 3}, {131072, UINT64_MAX, TP_LLAMA_FUSED, 16},
        {1, UINT64_MAX, TP_LLAMA_FUSED, 1}, {2, UINT64_MAX, TP_LLAMA_FUSED, 2},
        {1000, 64 * 64 * 4 * 100, TP_LLAMA_FUSED, 10}, {5, 1, TP_LLAMA_FUSED, 5}, {INT32_MAX, UINT64_MAX, TP_LLAMA_FUSED, 262144},
        {1000, UINT64_MAX, TP_LLAMA_SCORES, 1}, {1000, 16 * 8 * 1000 * 100, TP_LLAMA_SCORES, 10}, {5, 1, TP_LLAMA_SCORES, 5}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        tp_llama_opts_default(&o, &c, 1, cases[k].T, cases[k].cap);
        tp_llama_opts_attention(&o, &c, cases[k].cap, cases[k].att);
        CHECKF(o.blocks == cases[k].want && o.attention == cases[k].att, "T %lld cap %llu attention %d: %d blocks, wanted %d",
               (long long)cases[k].T, (unsigned long long)cases[k].cap, cases[k].att, o.blocks, cases[k].want);
    }
    /* the attention must be one of the two */
    tp_llama_opts_default(&o, &c, 1, 4, UINT64_MAX);
    o.attention = 2;
    ASSERT_STATUS(tp_llama_build(&c, &o, &g, &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "attention 2") != NULL, "%s", e.msg);
    CHECK(g == NULL);
}

TEST(models_decode_layer_contract)
{
    for (int gqa = 0; gqa < 2; gqa++)
        for (int64_t pos = 0; pos < 8; pos += 7) {
            tp_llama_config c = tiny(4, gqa ? 2 : 4, 0);
            int64_t KV = c.kv_heads, hd = 16, B = 3;
            tp_llama_decode_opts o = dopts(B, pos, 8);
            tp_error e;
            tp_graph *g;
            ASSERT_OK_ERR(tp_llama_decode_layer(&c, &o, &g, &e), e);
            ASSERT_OK_ERR(tp_graph_finalize(g, &e), e);
            ASSERT_EQ(tp_graph_devices(g), 2);
            shape_is(find(g, "x"), 2, B, 64, 0, 0);
            shape_is(find(g, "model.layers.1.input_layernorm.weight"), 1, 64, 0, 0, 0);
            shape_is(find(g, "model.layers.1.post_attention_layernorm.weight"), 1, 64, 0, 0, 0);
            shape_is(find(g, "model.layers.1.self_attn.q_proj.weight"), 2, 64, 64, 0, 0);
            shape_is(find(g, "model.layers.1.self_attn.k_proj.weight"), 2, KV * hd, 64, 0, 0);
            shape_is(find(g, "model.layers.1.self_attn.v_proj.weight"), 2, KV * hd, 64, 0, 0);
            shape_is(find(g, "model.layers.1.self_attn.o_proj.weight"), 2, 64, 64, 0, 0);
            shape_is(find(g, "model.layers.1.mlp.gate_proj.weight"), 2, 96, 64, 0, 0);
            shape_is(find(g, "model.layers.1.mlp.up_proj.weight"), 2, 96, 64, 0, 0);
            shape_is(find(g, "model.layers.1.mlp.down_proj.weight"), 2, 64, 96, 0, 0);
            shape_is(find(g, "kv.1.k"), 4, B, KV, 8, hd);
            shape_is(find(g, "kv.1.v"), 4, B, KV, 8, hd);
            ASSERT_EQ(find(g, "model.layers.1.mlp.down_proj.weight")->dtype, TP_DT_F16);
            ASSERT_EQ(find(g, "kv.1.k")->dtype, TP_DT_F32);
            uint32_t inputs = 0;
            for (uint32_t v = 0; v < tp_graph_size(g); v++) {
                const tp_vertex *x = tp_graph_vertex(g, v);
                ASSERT_EQ(x->device, 1);
                if (x->kind == TP_V_INPUT) {
                    inputs++;
                    continue;
                }
                int moves = !strcmp(x->op, "reshape") || !strcmp(x->op, "slice") || !strcmp(x->op, "write_slice");
                CHECKF(moves || x->flops > 0, "kernel '%s' (%s) has no flops", x->id, x->op);
                if (!strcmp(x->op, "reshape") || !strcmp(x->op, "write_slice")) CHECKF(tp_graph_inplace(g, v) == 0, "'%s' is not in place", x->id);
            }
            ASSERT_EQ(inputs, 12); /* x, 9 weights, 2 caches */
            ASSERT_EQ(tp_graph_num_outputs(g), 3);
            const char *outs[3] = {"k_new", "v_new", "x.out"};
            for (int k = 0; k < 3; k++) CHECKF(is_output(g, (uint32_t)tp_graph_find(g, outs[k])), "'%s' is not an output", outs[k]);
            shape_is(find(g, "k_new"), 4, B, KV, 1, hd);
            shape_is(find(g, "v_new"), 4, B, KV, 1, hd);
            shape_is(find(g, "x.out"), 2, B, 64, 0, 0);
            /* the appends: write_slice over the cache input, at pos along axis 2 */
            const tp_vertex *ku = find(g, "kv.1.k.updated");
            ASSERT_STR_EQ(ku->op, "write_slice");
            ASSERT_EQ(ku->inputs[0], (uint32_t)tp_graph_find(g, "kv.1.k"));
            ASSERT_EQ(ku->inputs[1], (uint32_t)tp_graph_find(g, "k_new"));
            char want[64];
            snprintf(want, sizeof want, "{\"axis\":2,\"start\":%lld}", (long long)pos);
            ASSERT_STR_EQ(ku->attrs_json, want);
            CHECK(!is_output(g, (uint32_t)tp_graph_find(g, "kv.1.k.updated")));
            ASSERT_EQ(tp_graph_find(g, "L1.K") >= 0, pos + 1 < 8); /* no slice when the cache is full */
            shape_is(find(g, "L1.scores"), 4, B, KV, 4 / KV, pos + 1);
            tp_graph_free(g);
        }
}

TEST(models_decode_head_contract)
{
    for (int tie = 0; tie < 2; tie++)
        for (int VC = 1; VC <= 3; VC += 2) {
            tp_llama_config c = tiny(4, 2, tie);
            tp_llama_decode_opts o = dopts(3, 0, 1);
            o.layer = 99; /* not the head's: ignored */
            o.vocab_chunks = VC;
            tp_error e;
            tp_graph *g;
            ASSERT_OK_ERR(tp_llama_decode_head(&c, &o, &g, &e), e);
            ASSERT_OK_ERR(tp_graph_finalize(g, &e), e);
            shape_is(find(g, "x"), 2, 3, 64, 0, 0);
            shape_is(find(g, "model.norm.weight"), 1, 64, 0, 0, 0);
            const char *lm = tie ? "model.embed_tokens.weight" : "lm_head.weight";
            char id[96];
            if (VC == 1) shape_is(find(g, lm), 2, 50, 64, 0, 0);
            else {
                int64_t rows[3] = {16, 17, 17}, at = 0; /* 50 k / 3 */
                for (int k = 0; k < 3; k++) {
                    snprintf(id, sizeof id, "%s#r%lld:%lld", lm, (long long)at, (long long)(at + rows[k]));
                    shape_is(find(g, id), 2, rows[k], 64, 0, 0);
                    at += rows[k];
                }
            }
            const tp_vertex *lg = find(g, "logits");
            shape_is(lg, 2, 3, 50, 0, 0);
            ASSERT_EQ(tp_graph_num_outputs(g), 1);
            CHECK(is_output(g, (uint32_t)tp_graph_find(g, "logits")));
            for (uint32_t v = 0; v < tp_graph_size(g); v++) {
                const tp_vertex *x = tp_graph_vertex(g, v);
                ASSERT_EQ(x->device, 1);
                CHECKF(x->kind == TP_V_INPUT || !strcmp(x->op, "concat") || x->flops > 0, "kernel '%s' has no flops", x->id);
            }
            tp_graph_free(g);
        }
}

static int split_mlp(void *ctx, const char *name)
{
    ++*(int *)ctx;
    return strstr(name, ".mlp.") != NULL;
}

/* tp_llama_decode_opts.split_bytes: the weights split(name) picks, when larger than split_bytes,
 * are read as row chunks "name#rA:Z" of at most split_bytes (whole rows, a multiple of 256
 * bytes but the last), one matmul each concatenated; the rest stay whole. */
TEST(models_decode_layer_split)
{
    tp_llama_config c = tiny(4, 2, 0); /* f16 weights, hidden 64, intermediate 96: a row of gate is 128 bytes */
    for (int k = 0; k < 2; k++) {
        uint64_t split = k ? 1000 : 4096;
        int64_t rows = k ? 6 : 32; /* 1000 / 128 = 7 rows, down to an even count (256-byte multiples) */
        tp_llama_decode_opts o = dopts(3, 2, 8);
        int asked = 0;
        o.split_bytes = split;
        o.split = split_mlp;
        o.split_ctx = &asked;
        tp_error e;
        tp_graph *g;
        ASSERT_OK_ERR(tp_llama_decode_layer(&c, &o, &g, &e), e);
        ASSERT_OK_ERR(tp_graph_finalize(g, &e), e);
        CHECK(asked >= 3); /* every weight over split_bytes is asked about */
        shape_is(find(g, "model.layers.1.self_attn.q_proj.weight"), 2, 64, 64, 0, 0); /* not picked: whole */
        const char *mlp[3] = {"gate", "up", "down"};
        for (int m = 0; m < 3; m++) {
            char id[128];
            snprintf(id, sizeof id, "model.layers.1.mlp.%s_proj.weight", mlp[m]);
            CHECKF(tp_graph_find(g, id) < 0, "'%s' is whole", id);
            /* down: rows of 192 bytes, 256-byte multiples in steps of 4 rows: 20 rows of 4096, 4 of 1000 */
            int64_t n = m == 2 ? 64 : 96, in = m == 2 ? 96 : 64, r = m == 2 ? (k ? 4 : 20) : rows;
            uint32_t parts = 0;
            for (int64_t a = 0; a < n; a += r, parts++) {
                int64_t z = a + r < n ? a + r : n;
                snprintf(id, sizeof id, "model.layers.1.mlp.%s_proj.weight#r%lld:%lld", mlp[m], (long long)a, (long long)z);
                const tp_vertex *w = find(g, id);
                shape_is(w, 2, z - a, in, 0, 0);
                CHECKF(w->bytes <= split, "chunk '%s' has %llu bytes", id, (unsigned long long)w->bytes);
                CHECKF(z == n || w->bytes % 256 == 0, "chunk '%s' is not a multiple of 256 bytes", id);
            }
            snprintf(id, sizeof id, "L1.%s", mlp[m]);
            const tp_vertex *cat = find(g, id);
            ASSERT_STR_EQ(cat->op, "concat");
            ASSERT_EQ(cat->ninputs, parts);
            shape_is(cat, 2, 3, n, 0, 0);
        }
        tp_graph_free(g);
    }
}

TEST(models_decode_token_contract)
{
    tp_llama_config c = tiny(4, 2, 0); /* 2 layers */
    ASSERT_EQ(tp_llama_decode_device(&c, 3, 0), 0);
    ASSERT_EQ(tp_llama_decode_device(&c, 3, 1), 1);
    ASSERT_EQ(tp_llama_decode_device(&c, 3, 2), 2); /* the head */
    ASSERT_EQ(tp_llama_decode_device(&c, 2, 1), 0);
    ASSERT_EQ(tp_llama_decode_device(&c, 2, 2), 1);
    /* out of range: -1, never a device */
    ASSERT_EQ(tp_llama_decode_device(&c, 2, 3), -1);
    ASSERT_EQ(tp_llama_decode_device(&c, 2, -1), -1);
    ASSERT_EQ(tp_llama_decode_device(&c, 0, 0), -1);
    ASSERT_EQ(tp_llama_decode_device(&c, TP_MAX_DEVICES + 1, 0), -1);
    ASSERT_EQ(tp_llama_decode_device(NULL, 2, 0), -1);
    ASSERT_EQ(tp_llama_decode_device(&c, TP_MAX_DEVICES, 2), 2 * TP_MAX_DEVICES / 3); /* the head: floor(2 * 64 / 3) */
    for (int D = 1; D <= 3; D++) {
        tp_llama_decode_opts o = {D, 0, 0, 3, 2, 8, 3, 0, NULL, NULL, 0};
        tp_error e;
        tp_graph *g;
        ASSERT_OK_ERR(tp_llama_decode_token(&c, &o, &g, &e), e);
        ASSERT_OK_ERR(tp_graph_finalize(g, &e), e);
        ASSERT_EQ(tp_graph_devices(g), D);
        const tp_vertex *x = find(g, "x");
        shape_is(x, 2, 3, 64, 0, 0);
        ASSERT_EQ(x->device, 0);
        uint32_t inputs = 0, transfers = 0, changes = 0;
        for (int64_t l = 0; l <= c.layers; l++) {
            int d = tp_llama_decode_device(&c, D, l);
            changes += l > 0 && d != tp_llama_decode_device(&c, D, l - 1);
            char id[96];
            snprintf(id, sizeof id, "L%lld.x.to%d", (long long)l, d);
            int64_t t = tp_graph_find(g, id);
            ASSERT_EQ(t >= 0, l > 0 && d != tp_llama_decode_device(&c, D, l - 1));
            if (t >= 0) ASSERT_EQ(tp_graph_vertex(g, (uint32_t)t)->kind, TP_V_TRANSFER);
            if (l == c.layers) {
                ASSERT_EQ(find(g, "model.norm.weight")->device, d);
                ASSERT_EQ(find(g, "logits")->device, d);
                continue;
            }
            snprintf(id, sizeof id, "model.layers.%lld.mlp.down_proj.weight", (long long)l);
            ASSERT_EQ(find(g, id)->device, d);
            snprintf(id, sizeof id, "kv.%lld.v", (long long)l);
            shape_is(find(g, id), 4, 3, 2, 8, 16);
            ASSERT_EQ(find(g, id)->device, d);
            const char *outs[2] = {"k_new", "v_new"};
            for (int k = 0; k < 2; k++) {
                snprintf(id, sizeof id, "L%lld.%s", (long long)l, outs[k]);
                CHECKF(is_output(g, (uint32_t)tp_graph_find(g, id)), "'%s' is not an output", id);
                shape_is(find(g, id), 4, 3, 2, 1, 16);
                ASSERT_EQ(find(g, id)->device, d);
            }
            snprintf(id, sizeof id, "L%lld.scores", (long long)l);
            ASSERT_EQ(find(g, id)->device, d);
        }
        for (uint32_t v = 0; v < tp_graph_size(g); v++) {
            inputs += tp_graph_vertex(g, v)->kind == TP_V_INPUT;
            transfers += tp_graph_vertex(g, v)->kind == TP_V_TRANSFER;
        }
        ASSERT_EQ(inputs, 1 + 2 * 11 + 1 + 3); /* x, per layer 9 weights and 2 caches, the final norm, 3 lm_head chunks */
        ASSERT_EQ(transfers, changes);
        ASSERT_EQ(tp_graph_num_outputs(g), 2 * 2 + 1);
        shape_is(find(g, "logits"), 2, 3, 50, 0, 0);
        CHECK(is_output(g, (uint32_t)tp_graph_find(g, "logits")));
        CHECK(tp_graph_find(g, "x.out") < 0 && tp_graph_find(g, "k_new") < 0); /* the per-layer names are not reused */
        tp_graph_free(g);
    }
    tp_llama_decode_opts bad[] = {{4, 0, 0, 1, 0, 8, 1, 0, NULL, NULL, 0},  /* more devices than layers + head */
                                  {2, 0, 0, 1, 8, 8, 1, 0, NULL, NULL, 0},  /* pos past the cache */
                                  {2, 0, 0, 1, 0, 8, 0, 0, NULL, NULL, 0},  /* no vocab chunk */
                                  {2, 0, 0, 0, 0, 8, 1, 0, NULL, NULL, 0}}; /* no sequence */
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tp_error e;
        tp_graph *g = NULL;
        ASSERT_STATUS(tp_llama_decode_token(&c, &bad[i], &g, &e), TP_ERR_ARG);
        CHECK(g == NULL);
    }
}

/* tp_llama_decode_opts.attend: the graphs of two positions attending to the same positions are
 * the same plan (tp_graph_same_plan: sizes, structure and names equal, attributes aside), with
 * the scores of `attend` columns and a causal softmax whose rows end at pos; without attend, or
 * with another, they differ. */
TEST(models_decode_attend_same_plan)
{
    tp_llama_config c = tiny(4, 2, 0);
    tp_error e;
    tp_graph *g[4];
    const int64_t pos[4] = {5, 7, 7, 7}, att[4] = {8, 8, 0, 16};
    for (int i = 0; i < 4; i++) {
        tp_llama_decode_opts o = {2, 0, 0, 3, pos[i], 20, 1, 0, NULL, NULL, att[i]};
        ASSERT_OK_ERR(tp_llama_decode_token(&c, &o, &g[i], &e), e);
        ASSERT_OK_ERR(tp_graph_finalize(g[i], &e), e);
    }
    ASSERT_EQ(tp_graph_same_plan(g[0], g[1]), 1);
    ASSERT_EQ(tp_graph_same_plan(g[1], g[2]), 0);
    ASSERT_EQ(tp_graph_same_plan(g[1], g[3]), 0);
    const tp_vertex *sc = tp_graph_vertex(g[1], (uint32_t)tp_graph_find(g[1], "L0.scores"));
    const tp_vertex *pr = tp_graph_vertex(g[1], (uint32_t)tp_graph_find(g[1], "L0.probs.rows"));
    ASSERT_EQ(sc->shape[3], 8);
    ASSERT_EQ(pr->ndim, 3);
    ASSERT_EQ(pr->shape[1], 1); /* one row per block: the causal limit is row_offset itself */
    CHECKF(strstr(pr->attrs_json, "\"causal\":true") && strstr(pr->attrs_json, "\"row_offset\":7"), "%s", pr->attrs_json);
    ASSERT_EQ(tp_graph_vertex(g[2], (uint32_t)tp_graph_find(g[2], "L0.scores"))->shape[3], 8); /* pos + 1 */
    CHECK(tp_graph_find(g[2], "L0.probs.rows") < 0);
    for (int i = 0; i < 4; i++) tp_graph_free(g[i]);
}

TEST(models_decode_refuses_out_of_range)
{
    tp_llama_config c = tiny(4, 2, 0);
    tp_error e;
    tp_graph *g = NULL;
    struct {
        tp_llama_decode_opts o;
        int head;
        const char *needle;
    } bad[] = {
        {{0, 0, 0, 1, 0, 1, 1, 0, NULL, NULL, 0}, 0, "devices 0 is outside [1, 64]"},
        {{TP_MAX_DEVICES + 1, 0, 0, 1, 0, 1, 1, 0, NULL, NULL, 0}, 1, "devices 65"},
        {{2, 2, 0, 1, 0, 1, 1, 0, NULL, NULL, 0}, 0, "device 2 is outside [0, 2)"},
        {{2, -1, 0, 1, 0, 1, 1, 0, NULL, NULL, 0}, 1, "device -1"},
        {{1, 0, 0, 0, 0, 1, 1, 0, NULL, NULL, 0}, 0, "batch 0 is outside [1, 2^20]"},
        {{1, 0, 0, TP_LLAMA_MAX_BATCH + 1, 0, 1, 1, 0, NULL, NULL, 0}, 1, "batch 1048577"},
        {{1, 0, 2, 1, 0, 1, 1, 0, NULL, NULL, 0}, 0, "layer 2 is outside [0, 2)"},
        {{1, 0, -1, 1, 0, 1, 1, 0, NULL, NULL, 0}, 0, "layer -1"},
        {{1, 0, 0, 1, 0, 0, 1, 0, NULL, NULL, 0}, 0, "max_len 0 is outside [1, 2^31-1]"},
        {{1, 0, 0, 1, 0, (int64_t)INT32_MAX + 1, 1, 0, NULL, NULL, 0}, 0, "max_len 2147483648"},
        {{1, 0, 0, 1, 4, 4, 1, 0, NULL, NULL, 0}, 0, "pos 4 is outside [0, max_len 4)"},
        {{1, 0, 0, 1, -1, 4, 1, 0, NULL, NULL, 0}, 0, "pos -1"},
        {{1, 0, 0, 1, INT64_MAX, INT64_MAX, 1, 0, NULL, NULL, 0}, 0, "max_len"},
        {{1, 0, 0, 1, 0, 1, 0, 0, NULL, NULL, 0}, 1, "vocab_chunks 0 is outside [1, vocabulary 50]"},
        {{1, 0, 0, 1, 0, 1, 51, 0, NULL, NULL, 0}, 1, "vocab_chunks 51"},
        {{1, 0, 0, 1, 3, 8, 1, 0, NULL, NULL, 3}, 0, "attend 3 is outside [pos + 1 = 4, max_len 8]"},
        {{1, 0, 0, 1, 3, 8, 1, 0, NULL, NULL, 9}, 0, "attend 9"},
        {{1, 0, 0, 1, 3, 8, 1, 0, NULL, NULL, -1}, 0, "attend -1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&e, 0, sizeof e);
        tp_status s = bad[i].head ? tp_llama_decode_head(&c, &bad[i].o, &g, &e) : tp_llama_decode_layer(&c, &bad[i].o, &g, &e);
        CHECKF(s == TP_ERR_ARG && strstr(e.msg, bad[i].needle), "case %zu: %s, '%s' (wanted '%s')", i, tp_status_str(s), e.msg, bad[i].needle);
        CHECK(g == NULL);
    }
    /* the largest cache: 2^20 sequences x 2^31-1 positions x one head of 2^20 overflows 64 bits */
    tp_llama_config big = {1 << 20, 8, 1, 1, 1, 8, 1e-5, 10000.0, TP_DT_BF16, 0};
    tp_llama_decode_opts o = {1, 0, 0, TP_LLAMA_MAX_BATCH, 0, INT32_MAX, 1, 0, NULL, NULL, 0};
    ASSERT_STATUS(tp_llama_decode_layer(&big, &o, &g, &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "overflow 64 bits") != NULL, "%s", e.msg);
    /* a config out of range, or whose heads do not divide */
    tp_llama_config cb = c;
    cb.theta = 1e300;
    o = dopts(1, 0, 1);
    ASSERT_STATUS(tp_llama_decode_layer(&cb, &o, &g, &e), TP_ERR_ARG);
    cb = c;
    cb.kv_heads = 3;
    CHECK(tp_llama_decode_head(&cb, &o, &g, &e) != TP_OK);
    CHECK(g == NULL);
    /* a vocabulary of 2^31 needs two chunks: a matmul dimension is at most 2^31-1 */
    cb = c;
    cb.vocab = (int64_t)INT32_MAX + 1;
    o = dopts(1, 0, 1);
    ASSERT_STATUS(tp_llama_decode_head(&cb, &o, &g, &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "vocabulary 2147483648 in 1 chunks: a chunk of more than 2^31-1 rows") != NULL, "%s", e.msg);
    o.vocab_chunks = 2;
    ASSERT_OK_ERR(tp_llama_decode_head(&cb, &o, &g, &e), e);
    ASSERT_OK_ERR(tp_graph_finalize(g, &e), e);
    tp_graph_free(g);
    /* the limits themselves are accepted: pos = max_len - 1 */
    o = dopts(2, 6, 7);
    ASSERT_OK_ERR(tp_llama_decode_layer(&c, &o, &g, &e), e);
    ASSERT_OK_ERR(tp_graph_finalize(g, &e), e);
    tp_graph_free(g);
}

/* ---- the LoRA training step (issue 13) --------------------------------------------------------- */

static tp_train_opts topts(const tp_llama_config *c, int D, int64_t B, int64_t T)
{
    tp_train_opts o;
    tp_llama_train_opts_default(&o, c, D, B, T, UINT64_MAX);
    o.rank = 4;
    return o;
}

TEST(models_train_estimate_exact)
{
    int n = 0;
    unsigned tsets[3] = {TP_LORA_ALL, TP_LORA_Q | TP_LORA_V, TP_LORA_GATE | TP_LORA_DOWN};
    for (int tie = 0; tie < 2; tie++)
        for (int64_t layers = 1; layers <= 2; layers++)
            for (int D = 1; D <= 2; D++)
                for (int64_t S = D; S <= 3; S++)
                    for (int NB = 1; NB <= 4; NB += 1 + (NB == 2))
                        for (int VC = 1; VC <= 4; VC += 1 + (VC == 2))
                            for (int ts = 0; ts < 3; ts++) {
                                tp_llama_config c = tiny(4, 2, tie);
                                c.layers = layers;
                                tp_train_opts o = topts(&c, D, S, 6);
                                o.blocks = NB;
                                o.vocab_chunks = VC;
                                o.targets = tsets[ts];
                                o.grads_out = ts == 1;
                                tp_graph *g;
                                tp_error e;
                                ASSERT_OK_ERR(tp_llama_train_build(&c, &o, &g, &e), e);
                                tp_build_estimate est;
                                tp_llama_train_estimate(&c, &o, &est);
                                CHECKF(est.vertices == tp_graph_size(g) && est.edges == edges_of(g),
                                       "tie %d L %lld D %d B %lld blocks %d VC %d targets %x: %u vertices %.0f edges, estimated %.0f and %.0f",
                                       tie, (long long)layers, D, (long long)S, NB, VC, tsets[ts], tp_graph_size(g), edges_of(g), est.vertices,
                                       est.edges);
                                tp_graph_free(g);
                                n++;
                            }
    ASSERT_EQ(n, 2 * 2 * 5 * 3 * 3 * 3);
}

/* the contract's inputs and outputs, where things run, in-place updates, accumulate sums, flops */
TEST(models_train_contract)
{
    tp_llama_config c = tiny(4, 2, 0);
    tp_train_opts o = topts(&c, 2, 3, 8);
    o.blocks = 2;
    o.vocab_chunks = 2;
    o.grads_out = 1;
    tp_graph *g;
    tp_error e;
    ASSERT_OK_ERR(tp_llama_train_build(&c, &o, &g, &e), e);
    char n[TP_LLAMA_ID_MAX], id[TP_LLAMA_ID_MAX + 32];
    /* per sequence ids and labels on its device; weights per device under the prefill's names */
    for (int s = 0; s < 3; s++) {
        snprintf(id, sizeof id, "input_ids.s%d", s);
        const tp_vertex *v = find(g, id);
        CHECK(v->kind == TP_V_INPUT && v->dtype == TP_DT_I32 && v->device == s % 2);
        shape_is(v, 1, 8, 0, 0, 0);
        snprintf(id, sizeof id, "labels.s%d", s);
        CHECK(find(g, id)->device == s % 2);
    }
    shape_is(find(g, "hyper"), 1, 3, 0, 0, 0);
    CHECK(find(g, "model.layers.1.mlp.down_proj.weight@d1")->device == 1 && find(g, "model.layers.1.mlp.down_proj.weight")->device == 0);
    CHECK(find(g, "lm_head.weight#r25:50@d1")->dtype == TP_DT_F16);
    CHECK(tp_graph_find(g, "model.embed_tokens.weight#r0:25@d1") >= 0);
    /* every adapter: input on device 0 (PEFT name and shape), moments, outputs, in place */
    for (int t = 0; t < TP_LORA_NTARGETS; t++)
        for (int m = 0; m < 2; m++) {
            int64_t shp[2];
            tp_lora_adapter_shape(&c, t, m, 4, shp);
            CHECK(tp_lora_adapter_name(1, t, m, n, sizeof n));
            const tp_vertex *a = find(g, n);
            CHECK(a->kind == TP_V_INPUT && a->device == 0 && a->dtype == TP_DT_F32);
            shape_is(a, 2, shp[0], shp[1], 0, 0);
            const char *suf[] = {".updated", ".exp_avg.updated", ".exp_avg_sq.updated", ".grad"};
            for (int k = 0; k < 4; k++) {
                snprintf(id, sizeof id, "%s%s", n, suf[k]);
                int64_t vi = tp_graph_find(g, id);
                CHECKF(vi >= 0 && is_output(g, (uint32_t)vi), "'%s' is not an output", id);
                if (k < 3) CHECKF(tp_graph_inplace(g, (uint32_t)vi) == 0, "'%s' is not declared in place", id);
                shape_is(tp_graph_vertex(g, (uint32_t)vi), 2, shp[0], shp[1], 0, 0);
            }
            snprintf(id, sizeof id, "%s@d1", n); /* sent to device 1 once */
            CHECK(find(g, id)->kind == TP_V_TRANSFER);
        }
    CHECK(!strcmp(tp_lora_adapter_name(0, 4, 1, n, sizeof n) ? n : "", "base_model.model.model.layers.0.mlp.gate_proj.lora_B.weight"));
    CHECK(!strcmp(tp_lora_adapter_name(0, 0, 0, n, sizeof n) ? n : "", "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"));
    const tp_vertex *loss = find(g, "loss");
    CHECK(is_output(g, (uint32_t)tp_graph_find(g, "loss")) && loss->device == 0);
    shape_is(loss, 2, 24, 1, 0, 0);
    int sums = 0;
    for (uint32_t v = 0; v < tp_graph_size(g); v++) {
        const tp_vertex *x = tp_graph_vertex(g, v);
        if (x->kind != TP_V_KERNEL) continue;
        int moves = !strcmp(x->op, "transpose") || !strcmp(x->op, "reshape") || !strcmp(x->op, "slice") || !strcmp(x->op, "concat") ||
                    !strcmp(x->op, "embedding");
        CHECKF(moves || x->flops > 0, "kernel '%s' (%s) has no flops", x->id, x->op);
        if (!strcmp(x->op, "sum") && (strstr(x->id, ".grad") || strstr(x->id, ".g.") || strstr(x->id, ".dfinal")))
            CHECKF(x->attrs_json && strstr(x->attrs_json, "\"accumulate\":true"), "gradient sum '%s' is not marked accumulate", x->id);
        sums += !strcmp(x->op, "sum") && strstr(x->id, ".grad") != NULL;
        CHECKF(strcmp(x->op, "reshape") || tp_graph_inplace(g, v) == 0, "reshape '%s' is not in place", x->id);
    }
    CHECKF(sums == 28, "%d", sums); /* per adapter matrix one on device 0 (device 1 has one sequence: no sum of its own) */
    tp_graph_free(g);
}

TEST(models_train_refuses_out_of_range)
{
    tp_llama_config c = tiny(4, 2, 0);
    tp_train_opts o = topts(&c, 1, 2, 8);
    tp_graph *g = NULL;
    tp_error e;
    tp_train_opts b = o;
    b.seq = 1;
    ASSERT_STATUS(tp_llama_train_build(&c, &b, &g, &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "2 <= tokens") != NULL, "%s", e.msg);
    b = o, b.devices = 3; /* more devices than sequences */
    ASSERT_STATUS(tp_llama_train_build(&c, &b, &g, &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "devices 3") != NULL, "%s", e.msg);
    b = o, b.batch = 2, b.seq = TP_LLAMA_MAX_SEQ / 2 + 1;
    ASSERT_STATUS(tp_llama_train_build(&c, &b, &g, &e), TP_ERR_ARG);
    b = o, b.blocks = 9;
    ASSERT_STATUS(tp_llama_train_build(&c, &b, &g, &e), TP_ERR_ARG);
    b = o, b.vocab_chunks = 51;
    ASSERT_STATUS(tp_llama_train_build(&c, &b, &g, &e), TP_ERR_ARG);
    b = o, b.rank = 0;
    ASSERT_STATUS(tp_llama_train_build(&c, &b, &g, &e), TP_ERR_ARG);
    b = o, b.alpha = 1.0 / 0.0;
    ASSERT_STATUS(tp_llama_train_build(&c, &b, &g, &e), TP_ERR_ARG);
    b = o, b.targets = 0;
    ASSERT_STATUS(tp_llama_train_build(&c, &b, &g, &e), TP_ERR_ARG);
    b = o, b.targets = 128;
    ASSERT_STATUS(tp_llama_train_build(&c, &b, &g, &e), TP_ERR_ARG);
    b = o, b.beta2 = 1;
    ASSERT_STATUS(tp_llama_train_build(&c, &b, &g, &e), TP_ERR_ARG);
    b = o, b.eps = 0;
    ASSERT_STATUS(tp_llama_train_build(&c, &b, &g, &e), TP_ERR_ARG);
    b = o, b.weight_decay = -1;
    ASSERT_STATUS(tp_llama_train_build(&c, &b, &g, &e), TP_ERR_ARG);
    /* a sequence whose scores overflow 64 bits */
    b = o, b.batch = 1, b.seq = INT32_MAX;
    ASSERT_STATUS(tp_llama_train_build(&c, &b, &g, &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "overflow 64 bits") != NULL, "%s", e.msg);
    CHECK(g == NULL);
    tp_build_estimate est;
    tp_llama_train_estimate(&c, &b, &est);
    CHECK(est.vertices == 0);
    /* targets */
    unsigned m;
    ASSERT_OK(tp_lora_targets_parse("q,v_proj,down", &m, &e));
    ASSERT_EQ(m, (unsigned)(TP_LORA_Q | TP_LORA_V | TP_LORA_DOWN));
    ASSERT_OK(tp_lora_targets_parse("all", &m, &e));
    ASSERT_EQ(m, (unsigned)TP_LORA_ALL);
    ASSERT_STATUS(tp_lora_targets_parse("q,,k", &m, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_lora_targets_parse("qkv", &m, &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "'qkv'") != NULL, "%s", e.msg);
}
