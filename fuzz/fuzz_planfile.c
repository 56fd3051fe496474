/* fuzz_planfile.c - plan files (JSON or binary) read back as turnip run --plan and turnip
 * convert read them: against the TaskGraph of examples/figure3.json, and alone (a stand-in
 * graph of names). Whatever is accepted must survive JSON -> binary -> JSON unchanged. */
#include "fuzz.h"

static tp_graph *tg;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    tp_error e;
    if (tp_graph_read_file(TP_SOURCE_DIR "/examples/figure3.json", &tg, &e)) FUZZ_BUG("%s", e.msg);
    return 0;
}

/* mg's JSON, malloc'd */
static char *to_json(const tp_memgraph *mg, size_t *len)
{
    char *t;
    tp_error e;
    if (tp_memgraph_to_string(mg, &t, len, &e)) FUZZ_BUG("write: %s", e.msg);
    return t;
}

static void check(const char *path)
{
    tp_error e;
    tp_memgraph *mg = NULL;
    if (tp_memgraph_read_file(path, tg, &mg, NULL, &e) == TP_OK) tp_memgraph_free(mg);
    tp_graph *names = NULL;
    if (tp_memgraph_read_file(path, NULL, &mg, &names, &e) != TP_OK) return;
    size_t len1, len2;
    char *j1 = to_json(mg, &len1);
    /* to binary in a memfd, read back, to JSON again */
    int fd = memfd_create("bin", 0);
    if (fd >= 0) {
        FILE *f = fdopen(fd, "w");
        if (!f || tp_memgraph_write_binary(mg, f, &e) || fflush(f)) FUZZ_BUG("binary write failed");
        char p[64];
        snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
        tp_memgraph *mg2 = NULL;
        tp_graph *names2 = NULL;
        if (tp_memgraph_read_file(p, NULL, &mg2, &names2, &e)) FUZZ_BUG("an accepted plan's binary is refused: %s", e.msg);
        char *j2 = to_json(mg2, &len2);
        if (len1 != len2 || memcmp(j1, j2, len1)) FUZZ_BUG("JSON -> binary -> JSON changed the plan");
        free(j2);
        tp_memgraph_free(mg2);
        tp_graph_free(names2);
        fclose(f);
    }
    free(j1);
    tp_memgraph_free(mg);
    tp_graph_free(names);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_as_file(data, size, check);
    return 0;
}
