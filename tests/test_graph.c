/* test_graph.c - TaskGraph validation, JSON round trip, sizes, orders. */
#include <string.h>
#include "turnip/turnip.h"
#include "harness.h"

#define HDR "{\"format\": \"turnip.taskgraph/1\", \"devices\": 2, \"vertices\": ["

/* reads `json`, expects status `want` and a message containing `needle` */
static void expect_err(const char *json, tp_status want, const char *needle)
{
    tp_graph *g = NULL;
    tp_error e;
    memset(&e, 0, sizeof e);
    tp_status s = tp_graph_read_string(json, "g.json", &g, &e);
    CHECKF(s == want, "status %s, wanted %s (%s)", tp_status_str(s), tp_status_str(want), e.msg);
    CHECKF(strstr(e.msg, needle) != NULL, "message '%s' lacks '%s'", e.msg, needle);
    CHECKF(strstr(e.msg, "g.json") != NULL, "message '%s' lacks the file name", e.msg);
    CHECK(g == NULL);
}

TEST(graph_errors_name_the_vertex)
{
    expect_err(HDR "{\"id\":\"x\",\"kind\":\"input\",\"device\":0,\"bytes\":4},"
                   "{\"id\":\"y\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"nope\"],\"bytes\":4}]}",
               TP_ERR_INVALID, "'nope'");
    expect_err(HDR "{\"id\":\"x\",\"kind\":\"input\",\"device\":0,\"bytes\":4},"
                   "{\"id\":\"x\",\"kind\":\"input\",\"device\":0,\"bytes\":4}]}",
               TP_ERR_INVALID, "duplicate id");
    expect_err(HDR "{\"id\":\"a\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"b\"],\"bytes\":4},"
                   "{\"id\":\"b\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"a\"],\"bytes\":4}]}",
               TP_ERR_INVALID, "cycle");
    expect_err(HDR "{\"id\":\"x\",\"kind\":\"input\",\"device\":5,\"bytes\":4}]}", TP_ERR_INVALID, "'x'");
    expect_err(HDR "{\"id\":\"x\",\"kind\":\"input\",\"device\":0,\"bytes\":4},"
                   "{\"id\":\"t\",\"kind\":\"transfer\",\"device\":0,\"inputs\":[\"x\"]}]}",
               TP_ERR_INVALID, "'t': transfer to its own device");
    expect_err(HDR "{\"id\":\"x\",\"kind\":\"input\",\"device\":0}]}", TP_ERR_INVALID, "'x': no size");
    expect_err(HDR "{\"id\":\"x\",\"kind\":\"input\",\"device\":0,\"bytes\":0}]}", TP_ERR_INVALID, "bytes is 0 or not given");
    expect_err(HDR "{\"id\":\"x\",\"kind\":\"input\",\"device\":0,\"dtype\":\"f32\",\"shape\":[2,3],\"bytes\":25}]}",
               TP_ERR_INVALID, "'x': bytes 25 disagree");
    expect_err(HDR "{\"id\":\"x\",\"kind\":\"input\",\"device\":\"0\",\"bytes\":4}]}", TP_ERR_PARSE,
               "'device' must be an integer");
    expect_err(HDR "{\"id\":\"x\",\"kind\":\"input\",\"device\":0,\"bytes\":\"4\"}]}", TP_ERR_PARSE, "'x'");
    expect_err(HDR "{\"id\":\"x\",\"kind\":\"input\",\"device\":0,\"bytes\":4},"
                   "{\"id\":\"k\",\"kind\":\"kernel\",\"device\":1,\"inputs\":[\"x\"],\"bytes\":4}]}",
               TP_ERR_INVALID, "'k': kernel on device 1 reads 'x'");
    expect_err(HDR "{\"id\":\"x\",\"kind\":\"input\",\"device\":0,\"bytes\":4},"
                   "{\"id\":\"t\",\"kind\":\"transfer\",\"device\":1,\"inputs\":[\"x\"],\"bytes\":8}]}",
               TP_ERR_INVALID, "'t': transfer size");
    expect_err(HDR "{\"id\":\"x\",\"kind\":\"input\",\"device\":0,\"shape\":[2]}]}", TP_ERR_PARSE, "dtype");
    expect_err(HDR "{\"id\":\"x\",\"kind\":\"blob\",\"device\":0,\"bytes\":4}]}", TP_ERR_PARSE, "'kind'");
    expect_err(HDR "{\"id\":\"x\",\"kind\":\"input\",\"device\":0,\"bytes\":4}], \"outputs\":[\"q\"]}",
               TP_ERR_INVALID, "'q'");
    expect_err(HDR "{\"id\":\"x\",\"kind\":\"input\",\"device\":0,\"bytes\":4}], \"outputs\":[\"x\",\"x\"]}",
               TP_ERR_INVALID, "twice");
    expect_err(HDR "{\"id\":\"x\",\"kind\":\"input\",\"device\":0,\"dtype\":\"f32\",\"shape\":[0]}]}",
               TP_ERR_INVALID, "'x': size is 0");
    expect_err("{\"format\": \"turnip.taskgraph/1\", \"devices\": 2, \"vertices\": [", TP_ERR_PARSE,
               "not valid JSON");
    expect_err("{\"format\": \"other\", \"devices\": 2, \"vertices\": []}", TP_ERR_PARSE, "format");
    expect_err("{\"format\": \"turnip.taskgraph/1\", \"devices\": 0, \"vertices\": []}", TP_ERR_INVALID,
               "devices");
    expect_err(HDR "{\"id\":\"x\",\"kind\":\"input\",\"device\":0,\"dtype\":\"f32\",\"shape\":[4294967296,4294967296,16]}]}",
               TP_ERR_INVALID, "overflows");
}

TEST(graph_large_sizes_and_round_trip)
{
    const char *src = HDR
        "{\"id\":\"w\",\"kind\":\"input\",\"device\":0,\"dtype\":\"bf16\",\"shape\":[65536,65536]},"
        "{\"id\":\"x\",\"kind\":\"input\",\"device\":0,\"bytes\":6000000000},"
        "{\"id\":\"y\",\"kind\":\"kernel\",\"device\":0,\"op\":\"matmul\",\"inputs\":[\"x\",\"w\",\"x\"],"
        "\"dtype\":\"f32\",\"shape\":[3,5],\"attrs\":{\"trans_b\":true,\"alpha\":0.5},\"flops\":1e12},"
        "{\"id\":\"z\",\"kind\":\"transfer\",\"device\":1,\"inputs\":[\"y\"]}"
        "], \"outputs\":[\"z\"]}";
    tp_graph *g;
    tp_error e;
    ASSERT_OK_ERR(tp_graph_read_string(src, "g", &g, &e), e);
    ASSERT_EQ(tp_graph_vertex(g, 0)->bytes, 8589934592ull);
    ASSERT_EQ(tp_graph_vertex(g, 1)->bytes, 6000000000ull);
    ASSERT_EQ(tp_graph_vertex(g, 3)->bytes, 60); /* transfer takes its input's size */
    ASSERT_EQ(tp_graph_vertex(g, 2)->ninputs, 3);
    uint32_t nc;
    tp_graph_consumers(g, 1, &nc);
    ASSERT_EQ(nc, 1); /* x repeated in one kernel is one consumer */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ASSERT_OK_ERR(tp_graph_write(g, f, &e), e);
    fclose(f);
    tp_graph *g2;
    ASSERT_OK_ERR(tp_graph_read_string(buf, "rt", &g2, &e), e);
    ASSERT_EQ(tp_graph_size(g2), tp_graph_size(g));
    for (uint32_t i = 0; i < tp_graph_size(g); i++) {
        const tp_vertex *a = tp_graph_vertex(g, i), *b = tp_graph_vertex(g2, i);
        ASSERT_STR_EQ(a->id, b->id);
        ASSERT_EQ(a->kind, b->kind);
        ASSERT_EQ(a->device, b->device);
        ASSERT_EQ(a->bytes, b->bytes);
        ASSERT_EQ(a->ninputs, b->ninputs);
        CHECK(a->flops == b->flops);
        ASSERT_EQ(a->attrs_json == NULL, b->attrs_json == NULL);
        if (a->attrs_json) ASSERT_STR_EQ(a->attrs_json, b->attrs_json);
    }
    ASSERT_EQ(tp_graph_num_outputs(g2), 1);
    ASSERT_EQ(tp_graph_outputs(g2)[0], 3);
    free(buf);
    tp_graph_free(g);
    tp_graph_free(g2);
}

TEST(graph_builder_api)
{
    tp_graph *g = tp_graph_new(2);
    tp_error e;
    uint32_t x, y, t, bad;
    int64_t shape[2] = {4, 8};
    ASSERT_OK_ERR(tp_graph_add_input(g, "x", 0, TP_DT_F16, 2, shape, 0, &x, &e), e);
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "y", 0, "relu", 1, &x, TP_DT_F16, 2, shape, 0, NULL, 0, &y, &e), e);
    ASSERT_OK_ERR(tp_graph_add_transfer(g, "t", 1, y, &t, &e), e);
    ASSERT_STATUS(tp_graph_add_input(g, "x", 0, TP_DT_NONE, -1, NULL, 4, &bad, &e), TP_ERR_INVALID);
    uint32_t missing = 99;
    ASSERT_STATUS(tp_graph_add_kernel(g, "k", 0, "relu", 1, &missing, TP_DT_NONE, -1, NULL, 4, NULL, 0, &bad, &e),
                  TP_ERR_INVALID);
    ASSERT_OK_ERR(tp_graph_add_output(g, t, &e), e);
    ASSERT_OK_ERR(tp_graph_finalize(g, &e), e);
    ASSERT_EQ(tp_graph_vertex(g, y)->bytes, 64);
    ASSERT_EQ(tp_graph_vertex(g, t)->bytes, 64);
    ASSERT_EQ(tp_graph_read_device(g, t), 0);
    ASSERT_EQ(tp_graph_find(g, "t"), (int64_t)t);
    ASSERT_EQ(tp_graph_find(g, "q"), -1);
    tp_graph_free(g);
}

/* writes g to a string (caller frees) */
static char *graph_text(const tp_graph *g)
{
    char *buf = NULL;
    size_t len = 0;
    tp_error e;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    ASSERT_OK_ERR(tp_graph_write(g, f, &e), e);
    fclose(f);
    return buf;
}

#define IN0(id, b) "{\"id\":\"" id "\",\"kind\":\"input\",\"device\":0,\"bytes\":" #b

TEST(graph_sessions_read_and_write)
{
    const char *src = HDR
        IN0("w", 1024) ",\"resident\":{\"offset\":4096}},"
        IN0("x", 12) ",\"resident\":{\"offset\":8,\"host_copy\":false,\"future\":1}},"
        IN0("h", 12) ",\"resident\":{\"offset\":20,\"host_copy\":true}},"
        "{\"id\":\"y\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"w\",\"x\",\"h\"],\"bytes\":12,\"inplace\":1},"
        "{\"id\":\"t\",\"kind\":\"transfer\",\"device\":1,\"inputs\":[\"y\"]}"
        "], \"outputs\":[\"t\",\"y\"], \"keep\":[\"y\",\"w\"]}";
    tp_graph *g, *g2;
    tp_error e;
    ASSERT_OK_ERR(tp_graph_read_string(src, "g", &g, &e), e);
    uint64_t off = 7;
    int hc = 7;
    ASSERT_EQ(tp_graph_resident(g, 0, &off, &hc), 1);
    ASSERT_EQ(off, 4096);
    ASSERT_EQ(hc, 1);
    ASSERT_EQ(tp_graph_resident(g, 1, &off, &hc), 1);
    ASSERT_EQ(off, 8);
    ASSERT_EQ(hc, 0);
    ASSERT_EQ(tp_graph_resident(g, 2, &off, &hc), 1);
    ASSERT_EQ(off, 20);
    ASSERT_EQ(hc, 1);
    ASSERT_EQ(tp_graph_resident(g, 3, &off, &hc), 0); /* defaults when not resident */
    ASSERT_EQ(off, 0);
    ASSERT_EQ(hc, 1);
    ASSERT_EQ(tp_graph_resident(g, 99, NULL, NULL), 0);
    ASSERT_EQ(tp_graph_inplace(g, 3), 1);
    ASSERT_EQ(tp_graph_inplace(g, 0), -1);
    ASSERT_EQ(tp_graph_inplace(g, 4), -1);
    ASSERT_EQ(tp_graph_inplace(g, 99), -1);
    ASSERT_EQ(tp_graph_keep(g, 3), 1);
    ASSERT_EQ(tp_graph_keep(g, 0), 1);
    ASSERT_EQ(tp_graph_keep(g, 1), 0);
    ASSERT_EQ(tp_graph_keep(g, 4), 0);
    ASSERT_EQ(tp_graph_keep(g, 99), 0);
    /* written back only where set, in the order given, and read back the same */
    char *t1 = graph_text(g);
    CHECKF(strstr(t1, "\"resident\": {\"offset\": 4096}") != NULL, "%s", t1);
    CHECKF(strstr(t1, "\"resident\": {\"offset\": 8, \"host_copy\": false}") != NULL, "%s", t1);
    CHECKF(strstr(t1, "\"resident\": {\"offset\": 20}") != NULL, "%s", t1);
    CHECKF(strstr(t1, "\"inplace\": 1") != NULL, "%s", t1);
    CHECKF(strstr(t1, "\"keep\": [\"y\", \"w\"]") != NULL, "%s", t1);
    ASSERT_OK_ERR(tp_graph_read_string(t1, "rt", &g2, &e), e);
    for (uint32_t i = 0; i < tp_graph_size(g); i++) {
        uint64_t o1, o2;
        int h1, h2;
        ASSERT_EQ(tp_graph_resident(g, i, &o1, &h1), tp_graph_resident(g2, i, &o2, &h2));
        ASSERT_EQ(o1, o2);
        ASSERT_EQ(h1, h2);
        ASSERT_EQ(tp_graph_inplace(g, i), tp_graph_inplace(g2, i));
        ASSERT_EQ(tp_graph_keep(g, i), tp_graph_keep(g2, i));
    }
    char *t2 = graph_text(g2);
    ASSERT_STR_EQ(t1, t2);
    free(t1);
    free(t2);
    tp_graph_free(g);
    tp_graph_free(g2);
    /* a graph with none of them writes exactly as before */
    ASSERT_OK_ERR(tp_graph_read_string(HDR IN0("x", 4) "}], \"outputs\":[\"x\"]}", "g", &g, &e), e);
    t1 = graph_text(g);
    ASSERT_STR_EQ(t1, "{\"format\": \"turnip.taskgraph/1\", \"devices\": 2,\n \"vertices\": [\n"
                      "  {\"id\": \"x\", \"kind\": \"input\", \"device\": 0, \"bytes\": 4}\n ],\n \"outputs\": [\"x\"]}\n");
    free(t1);
    tp_graph_free(g);
}

TEST(graph_sessions_rejected)
{
    /* resident: the JSON form, alignment, overflow, kind, overlap */
    expect_err(HDR IN0("w", 1024) ",\"resident\":{\"offset\":128}}]}", TP_ERR_INVALID,
               "'w': resident offset 128 is not a multiple of 256");
    expect_err(HDR IN0("x", 12) ",\"resident\":{\"offset\":6}}]}", TP_ERR_INVALID, "'x': resident offset 6 is not a multiple of 4");
    expect_err(HDR "{\"id\":\"x\",\"kind\":\"input\",\"device\":0,\"dtype\":\"u8\",\"shape\":[4611686018427387904,3],"
                   "\"resident\":{\"offset\":4611686018427387904}}]}",
               TP_ERR_INVALID, "'x': resident offset 4611686018427387904 plus 13835058055282163712 bytes overflows");
    expect_err(HDR IN0("x", 4) "},{\"id\":\"y\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"x\"],\"bytes\":4,"
                   "\"resident\":{\"offset\":0}}]}",
               TP_ERR_INVALID, "'y': 'resident' is only for input vertices");
    expect_err(HDR IN0("x", 4) "},{\"id\":\"t\",\"kind\":\"transfer\",\"device\":1,\"inputs\":[\"x\"],"
                   "\"resident\":{\"offset\":0}}]}",
               TP_ERR_INVALID, "'t': 'resident' is only for input vertices");
    expect_err(HDR IN0("a", 256) ",\"resident\":{\"offset\":0}}," IN0("b", 256) ",\"resident\":{\"offset\":512}},"
                   IN0("c", 16) ",\"resident\":{\"offset\":240}}]}",
               TP_ERR_INVALID, "'c': resident region [240, 256) on device 0 overlaps that of 'a' [0, 256)");
    expect_err(HDR IN0("x", 4) ",\"resident\":{\"offset\":-4}}]}", TP_ERR_PARSE, "(id 'x'): field 'resident'");
    expect_err(HDR IN0("x", 4) ",\"resident\":4}]}", TP_ERR_PARSE, "(id 'x'): field 'resident'");
    expect_err(HDR IN0("x", 4) ",\"resident\":{}}]}", TP_ERR_PARSE, "(id 'x'): field 'resident'");
    expect_err(HDR IN0("x", 4) ",\"resident\":{\"offset\":0,\"host_copy\":0}}]}", TP_ERR_PARSE, "'host_copy'");
    /* inplace: range, kind, size, a repeated argument, the JSON form */
    expect_err(HDR IN0("x", 4) "},{\"id\":\"y\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"x\"],\"bytes\":4,\"inplace\":1}]}",
               TP_ERR_INVALID, "'y': in-place argument 1 is out of range (the kernel has 1 inputs)");
    expect_err(HDR "{\"id\":\"y\",\"kind\":\"kernel\",\"device\":0,\"bytes\":4,\"inplace\":0}]}", TP_ERR_INVALID,
               "'y': in-place argument 0 is out of range");
    expect_err(HDR IN0("x", 4) ",\"inplace\":0}]}", TP_ERR_INVALID, "'x': 'inplace' is only for kernels");
    expect_err(HDR IN0("x", 4) "},{\"id\":\"t\",\"kind\":\"transfer\",\"device\":1,\"inputs\":[\"x\"],\"inplace\":0}]}",
               TP_ERR_INVALID, "'t': 'inplace' is only for kernels");
    expect_err(HDR IN0("x", 4) "},{\"id\":\"y\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"x\"],\"bytes\":8,\"inplace\":0}]}",
               TP_ERR_INVALID, "'y': in-place argument 0 ('x', 4 bytes) is not the size of the output (8 bytes)");
    expect_err(HDR IN0("x", 4) "},{\"id\":\"y\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"x\",\"x\"],\"bytes\":4,\"inplace\":0}]}",
               TP_ERR_INVALID, "'y': in-place argument 0 ('x') is also argument 1");
    expect_err(HDR IN0("x", 4) "},{\"id\":\"y\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"x\"],\"bytes\":4,\"inplace\":-1}]}",
               TP_ERR_PARSE, "(id 'y'): field 'inplace'");
    expect_err(HDR IN0("x", 4) "},{\"id\":\"y\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"x\"],\"bytes\":4,\"inplace\":\"0\"}]}",
               TP_ERR_PARSE, "(id 'y'): field 'inplace'");
    expect_err(HDR IN0("x", 4) "},{\"id\":\"y\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"x\"],\"bytes\":4,\"inplace\":4294967296}]}",
               TP_ERR_PARSE, "(id 'y'): field 'inplace'");
    /* keep: an output or an input, named once, an array of ids */
    expect_err(HDR IN0("x", 4) "},{\"id\":\"y\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"x\"],\"bytes\":4},"
                   "{\"id\":\"z\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"y\"],\"bytes\":4}], \"outputs\":[\"z\"], \"keep\":[\"y\"]}",
               TP_ERR_INVALID, "'y': in 'keep' but neither an output nor an input");
    expect_err(HDR IN0("x", 4) "}], \"keep\":[\"q\"]}", TP_ERR_INVALID, "keep[0]: 'q' is not a vertex id");
    expect_err(HDR IN0("x", 4) "}], \"keep\":[\"x\",\"x\"]}", TP_ERR_INVALID, "keep[1]: vertex 'x' is in 'keep' twice");
    expect_err(HDR IN0("x", 4) "}], \"keep\":\"x\"}", TP_ERR_PARSE, "'keep' must be an array");
    expect_err(HDR IN0("x", 4) "}], \"keep\":[0]}", TP_ERR_PARSE, "keep[0] must be a vertex id");
}

TEST(graph_sessions_builder_api)
{
    tp_graph *g = tp_graph_new(1);
    tp_error e;
    uint32_t x, w, y, z;
    ASSERT_OK_ERR(tp_graph_add_input(g, "x", 0, TP_DT_NONE, -1, NULL, 512, &x, &e), e);
    ASSERT_OK_ERR(tp_graph_add_input(g, "w", 0, TP_DT_NONE, -1, NULL, 512, &w, &e), e);
    uint32_t xw[2] = {x, w};
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "y", 0, "add", 2, xw, TP_DT_NONE, -1, NULL, 512, NULL, 0, &y, &e), e);
    /* misuse the setters see */
    ASSERT_STATUS(tp_graph_set_resident(g, 9, 0, 1, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_graph_set_inplace(g, 9, 0, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_graph_set_inplace(g, y, -1, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_graph_set_keep(g, 9, &e), TP_ERR_ARG);
    ASSERT_OK_ERR(tp_graph_set_keep(g, x, &e), e);
    ASSERT_STATUS(tp_graph_set_keep(g, x, &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "'x'") != NULL, "%s", e.msg);
    ASSERT_EQ(tp_graph_inplace(g, y), -1);
    /* what finalize rejects: an offset whose end overflows, in place on an input */
    ASSERT_OK_ERR(tp_graph_set_resident(g, w, UINT64_MAX - 255, 0, &e), e);
    ASSERT_STATUS(tp_graph_finalize(g, &e), TP_ERR_INVALID);
    CHECKF(strstr(e.msg, "'w': resident offset") && strstr(e.msg, "overflows"), "%s", e.msg);
    ASSERT_OK_ERR(tp_graph_set_resident(g, w, 1024, 0, &e), e); /* a later call replaces */
    ASSERT_OK_ERR(tp_graph_set_inplace(g, x, 0, &e), e);
    ASSERT_STATUS(tp_graph_finalize(g, &e), TP_ERR_INVALID);
    CHECKF(strstr(e.msg, "'x': 'inplace' is only for kernels") != NULL, "%s", e.msg);
    tp_graph_free(g);

    g = tp_graph_new(1);
    ASSERT_OK_ERR(tp_graph_add_input(g, "x", 0, TP_DT_NONE, -1, NULL, 512, &x, &e), e);
    ASSERT_OK_ERR(tp_graph_add_input(g, "w", 0, TP_DT_NONE, -1, NULL, 512, &w, &e), e);
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "y", 0, "add", 2, xw, TP_DT_NONE, -1, NULL, 512, NULL, 0, &y, &e), e);
    ASSERT_OK_ERR(tp_graph_set_resident(g, w, 1024, 0, &e), e);
    ASSERT_OK_ERR(tp_graph_set_inplace(g, y, 1, &e), e);
    ASSERT_OK_ERR(tp_graph_set_keep(g, y, &e), e); /* not an output yet */
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "z", 0, "relu", 1, &y, TP_DT_NONE, -1, NULL, 512, NULL, 0, &z, &e), e);
    ASSERT_STATUS(tp_graph_finalize(g, &e), TP_ERR_INVALID);
    CHECKF(strstr(e.msg, "'y': in 'keep' but neither") != NULL, "%s", e.msg);
    ASSERT_OK_ERR(tp_graph_add_output(g, y, &e), e);
    ASSERT_OK_ERR(tp_graph_finalize(g, &e), e);
    uint64_t off;
    int hc;
    ASSERT_EQ(tp_graph_resident(g, w, &off, &hc), 1);
    ASSERT_EQ(off, 1024);
    ASSERT_EQ(hc, 0);
    ASSERT_EQ(tp_graph_inplace(g, y), 1);
    ASSERT_EQ(tp_graph_keep(g, y), 1);
    ASSERT_EQ(tp_graph_keep(g, z), 0); /* a vertex added after the record grew */
    ASSERT_EQ(tp_graph_inplace(g, z), -1);
    ASSERT_STATUS(tp_graph_set_keep(g, z, &e), TP_ERR_ARG); /* finalized: checked at once */
    CHECKF(strstr(e.msg, "neither an output nor an input") != NULL, "%s", e.msg);
    ASSERT_STATUS(tp_graph_set_inplace(g, z, 0, &e), TP_ERR_ARG); /* structure: never after finalize */
    CHECKF(strstr(e.msg, "finalized") != NULL, "%s", e.msg);
    ASSERT_STATUS(tp_graph_set_resident(g, w, 1000, 1, &e), TP_ERR_ARG); /* misaligned, at once */
    ASSERT_EQ(tp_graph_resident(g, w, &off, &hc), 1);
    ASSERT_EQ(off, 1024); /* unchanged */
    tp_graph_clear_resident(g);
    ASSERT_EQ(tp_graph_resident(g, w, NULL, NULL), 0);
    tp_graph_free(g);
}

TEST(sizes_parse_and_format)
{
    uint64_t v;
    ASSERT_OK(tp_parse_size("1048576", &v));
    ASSERT_EQ(v, 1048576);
    ASSERT_OK(tp_parse_size("64MiB", &v));
    ASSERT_EQ(v, 64ull << 20);
    ASSERT_OK(tp_parse_size("64 MiB", &v));
    ASSERT_EQ(v, 64ull << 20);
    ASSERT_OK(tp_parse_size("2GB", &v));
    ASSERT_EQ(v, 2000000000ull);
    ASSERT_OK(tp_parse_size("1.5GiB", &v));
    ASSERT_EQ(v, 1610612736ull);
    ASSERT_OK(tp_parse_size("3KB", &v));
    ASSERT_EQ(v, 3000);
    ASSERT_OK(tp_parse_size("3k", &v));
    ASSERT_EQ(v, 3072);
    ASSERT_OK(tp_parse_size("16TiB", &v));
    ASSERT_EQ(v, 16ull << 40);
    ASSERT_STATUS(tp_parse_size("-1", &v), TP_ERR_PARSE);
    ASSERT_STATUS(tp_parse_size("12XB", &v), TP_ERR_PARSE);
    ASSERT_STATUS(tp_parse_size("", &v), TP_ERR_PARSE);
    ASSERT_STATUS(tp_parse_size("99999999999999999999", &v), TP_ERR_PARSE);
    ASSERT_STATUS(tp_parse_size("20000000TiB", &v), TP_ERR_PARSE);
    uint64_t l[4];
    int n;
    ASSERT_OK(tp_parse_size_list("1MiB,2MiB,3", l, 4, &n));
    ASSERT_EQ(n, 3);
    ASSERT_EQ(l[1], 2ull << 20);
    ASSERT_EQ(l[2], 3);
    ASSERT_STATUS(tp_parse_size_list("1MiB,,3", l, 4, &n), TP_ERR_PARSE);
    char b[32];
    ASSERT_STR_EQ(tp_format_size(3 << 20, b, sizeof b), "3.0 MiB");
    ASSERT_STR_EQ(tp_format_size(512, b, sizeof b), "512 B");
}

/* tp_graph_order(TP_ORDER_TOPO) is Kahn's with the smallest ready index first: checked against
 * a naive O(n^2) reference on random DAGs whose file lists the vertices in a random order (so
 * edges may run to smaller indices: the heap) and in a topological one (every edge to a larger
 * index: the identity, found without the heap) */
TEST(graph_topo_order_smallest_ready_first)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
#define RND(m) ((s = s * 6364136223846793005ull + 1442695040888963407ull), (uint32_t)((s >> 33) % (m)))
    for (int trial = 0; trial < 60; trial++) {
        uint32_t n = 2 + RND(40), perm[64];
        int shuffled = trial % 2;
        for (uint32_t i = 0; i < n; i++) perm[i] = i; /* file position -> topological rank */
        for (uint32_t i = n - 1; shuffled && i > 0; i--) {
            uint32_t j = RND(i + 1), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        size_t cap = 64 * 1024, len = 0;
        char *json = malloc(cap);
        CHECK(json != NULL);
        len += (size_t)snprintf(json + len, cap - len, HDR);
        for (uint32_t i = 0; i < n; i++) { /* rank r reads up to 3 of the ranks below it */
            uint32_t r = perm[i];
            if (r == 0 || RND(4) == 0) {
                len += (size_t)snprintf(json + len, cap - len, "%s{\"id\":\"v%u\",\"kind\":\"input\",\"device\":0,\"bytes\":4}",
                                        i ? "," : "", r);
                continue;
            }
            len += (size_t)snprintf(json + len, cap - len, "%s{\"id\":\"v%u\",\"kind\":\"kernel\",\"device\":0,\"bytes\":4,\"inputs\":[",
                                    i ? "," : "", r);
            uint32_t k = 1 + RND(3);
            for (uint32_t j = 0; j < k; j++) len += (size_t)snprintf(json + len, cap - len, "%s\"v%u\"", j ? "," : "", RND(r));
            len += (size_t)snprintf(json + len, cap - len, "]}");
        }
        len += (size_t)snprintf(json + len, cap - len, "]}");
        ASSERT_LT(len, cap);
        tp_graph *g;
        tp_error e;
        ASSERT_OK_ERR(tp_graph_read_string(json, "g", &g, &e), e);
        free(json);
        ASSERT_EQ(tp_graph_size(g), n);
        /* the reference: repeatedly the smallest index whose inputs are all placed */
        uint32_t got[64], done[64] = {0};
        ASSERT_OK_ERR(tp_graph_order(g, TP_ORDER_TOPO, got, &e), e);
        for (uint32_t k = 0; k < n; k++) {
            uint32_t want = UINT32_MAX;
            for (uint32_t v = 0; v < n && want == UINT32_MAX; v++) {
                if (done[v]) continue;
                const tp_vertex *x = tp_graph_vertex(g, v);
                int ready = 1;
                for (uint32_t j = 0; j < x->ninputs; j++) ready &= done[x->inputs[j]];
                if (ready) want = v;
            }
            ASSERT_EQ(got[k], want);
            done[want] = 1;
        }
        if (!shuffled)
            for (uint32_t k = 0; k < n; k++) ASSERT_EQ(got[k], k);
        tp_graph_free(g);
    }
#undef RND
}
