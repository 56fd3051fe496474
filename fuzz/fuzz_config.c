/* fuzz_config.c - the Hugging Face config.json reader; a config it accepts must give default
 * LLaMA options without trouble (the builder's own checks are exercised by the CLI tests). */
#include "fuzz.h"

static void check(const char *path)
{
    tp_llama_config c;
    tp_error e;
    if (tp_llama_config_read(path, &c, &e) == TP_OK) {
        tp_llama_opts o;
        tp_llama_opts_default(&o, &c, 1, 16, 1ull << 30);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_as_file(data, size, check);
    return 0;
}
