/* fuzz_memgraph.c - the MemGraph verifier and the DOT writer on hostile MemGraph JSON, against
 * the TaskGraph of examples/figure3.json. */
#include "fuzz.h"

static tp_graph *tg;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    tp_error e;
    if (tp_graph_read_file(TP_SOURCE_DIR "/examples/figure3.json", &tg, &e)) FUZZ_BUG("%s", e.msg);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tp_error e;
    tp_verify_json((const char *)data, size, "fuzz", tg, &e);
    FILE *null = fopen("/dev/null", "w");
    if (null) {
        tp_dot_json((const char *)data, size, "fuzz", null, &e);
        fclose(null);
    }
    return 0;
}
