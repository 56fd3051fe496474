/* fuzz_sizes.c - sizes with units and comma-separated size lists: no crash, no overflow (UBSan),
 * and a list that parses has 1..TP_MAX_DEVICES entries. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_str(data, size);
    uint64_t v, list[TP_MAX_DEVICES];
    int n;
    if (tp_parse_size(text, &v) == TP_OK) {
        char b[32];
        tp_format_size(v, b, sizeof b);
    }
    if (tp_parse_size_list(text, list, TP_MAX_DEVICES, &n) == TP_OK && (n < 1 || n > TP_MAX_DEVICES))
        FUZZ_BUG("size list of %d entries", n);
    free(text);
    return 0;
}
