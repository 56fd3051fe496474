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
    CHECKF(tp_graph_read_string(src, "g", &g, &e) == TP_OK, "%s", e.msg);
    CHECK(tp_graph_vertex(g, 0)->bytes == 8589934592ull);
    CHECK(tp_graph_vertex(g, 1)->bytes == 6000000000ull);
    CHECK(tp_graph_vertex(g, 3)->bytes == 60); /* transfer takes its input's size */
    CHECK(tp_graph_vertex(g, 2)->ninputs == 3);
    uint32_t nc;
    tp_graph_consumers(g, 1, &nc);
    CHECK(nc == 1); /* x repeated in one kernel is one consumer */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(tp_graph_write(g, f, &e) == TP_OK);
    fclose(f);
    tp_graph *g2;
    CHECKF(tp_graph_read_string(buf, "rt", &g2, &e) == TP_OK, "%s", e.msg);
    CHECK(tp_graph_size(g2) == tp_graph_size(g));
    for (uint32_t i = 0; i < tp_graph_size(g); i++) {
        const tp_vertex *a = tp_graph_vertex(g, i), *b = tp_graph_vertex(g2, i);
        CHECK(!strcmp(a->id, b->id) && a->kind == b->kind && a->device == b->device && a->bytes == b->bytes);
        CHECK(a->ninputs == b->ninputs && a->flops == b->flops);
        CHECK((a->attrs_json == NULL) == (b->attrs_json == NULL));
        if (a->attrs_json) CHECK(!strcmp(a->attrs_json, b->attrs_json));
    }
    CHECK(tp_graph_num_outputs(g2) == 1 && tp_graph_outputs(g2)[0] == 3);
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
    CHECK(tp_graph_add_input(g, "x", 0, TP_DT_F16, 2, shape, 0, &x, &e) == TP_OK);
    CHECK(tp_graph_add_kernel(g, "y", 0, "relu", 1, &x, TP_DT_F16, 2, shape, 0, NULL, 0, &y, &e) == TP_OK);
    CHECK(tp_graph_add_transfer(g, "t", 1, y, &t, &e) == TP_OK);
    CHECK(tp_graph_add_input(g, "x", 0, TP_DT_NONE, -1, NULL, 4, &bad, &e) == TP_ERR_INVALID);
    uint32_t missing = 99;
    CHECK(tp_graph_add_kernel(g, "k", 0, "relu", 1, &missing, TP_DT_NONE, -1, NULL, 4, NULL, 0, &bad, &e) ==
          TP_ERR_INVALID);
    CHECK(tp_graph_add_output(g, t, &e) == TP_OK);
    CHECK(tp_graph_finalize(g, &e) == TP_OK);
    CHECK(tp_graph_vertex(g, y)->bytes == 64 && tp_graph_vertex(g, t)->bytes == 64);
    CHECK(tp_graph_read_device(g, t) == 0 && tp_graph_find(g, "t") == (int64_t)t && tp_graph_find(g, "q") == -1);
    tp_graph_free(g);
}

TEST(sizes_parse_and_format)
{
    uint64_t v;
    CHECK(tp_parse_size("1048576", &v) == TP_OK && v == 1048576);
    CHECK(tp_parse_size("64MiB", &v) == TP_OK && v == 64ull << 20);
    CHECK(tp_parse_size("64 MiB", &v) == TP_OK && v == 64ull << 20);
    CHECK(tp_parse_size("2GB", &v) == TP_OK && v == 2000000000ull);
    CHECK(tp_parse_size("1.5GiB", &v) == TP_OK && v == 1610612736ull);
    CHECK(tp_parse_size("3KB", &v) == TP_OK && v == 3000);
    CHECK(tp_parse_size("3k", &v) == TP_OK && v == 3072);
    CHECK(tp_parse_size("16TiB", &v) == TP_OK && v == 16ull << 40);
    CHECK(tp_parse_size("-1", &v) == TP_ERR_PARSE);
    CHECK(tp_parse_size("12XB", &v) == TP_ERR_PARSE);
    CHECK(tp_parse_size("", &v) == TP_ERR_PARSE);
    CHECK(tp_parse_size("99999999999999999999", &v) == TP_ERR_PARSE);
    CHECK(tp_parse_size("20000000TiB", &v) == TP_ERR_PARSE);
    uint64_t l[4];
    int n;
    CHECK(tp_parse_size_list("1MiB,2MiB,3", l, 4, &n) == TP_OK && n == 3 && l[1] == 2ull << 20 && l[2] == 3);
    CHECK(tp_parse_size_list("1MiB,,3", l, 4, &n) == TP_ERR_PARSE);
    char b[32];
    CHECK(!strcmp(tp_format_size(3 << 20, b, sizeof b), "3.0 MiB"));
    CHECK(!strcmp(tp_format_size(512, b, sizeof b), "512 B"));
}
