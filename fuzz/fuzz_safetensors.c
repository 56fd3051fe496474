/* fuzz_safetensors.c - the safetensors reader: every tensor it accepts must lie inside the
 * file (each byte is read). */
#include "fuzz.h"

static void check(const char *path)
{
    tp_st *st = NULL;
    tp_error e;
    if (tp_st_open(path, &st, &e) != TP_OK) return;
    unsigned sum = 0;
    for (size_t i = 0; i < tp_st_count(st); i++) {
        const tp_st_tensor *t = tp_st_get(st, i);
        if (tp_st_find(st, t->name) == NULL) FUZZ_BUG("tensor '%s' not found by name", t->name);
        for (uint64_t b = 0; b < t->bytes; b++) sum += ((const uint8_t *)t->data)[b];
    }
    if (sum == 0xdeadbeef) fputc(' ', stderr); /* keep the reads */
    tp_st_close(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_as_file(data, size, check);
    return 0;
}
