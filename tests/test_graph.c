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
