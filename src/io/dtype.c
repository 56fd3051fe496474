/* dtype.c - names and sizes of the element types (turnip/dtype.h). */
#include <string.h>
#include "turnip/dtype.h"

static const char *const dtype_names[TP_DT_COUNT] = {"", "f32", "f16", "bf16", "f64", "i32", "i64", "u8"};
static const unsigned dtype_sizes[TP_DT_COUNT] = {0, 4, 2, 2, 8, 4, 8, 1};
_Static_assert(sizeof dtype_names / sizeof *dtype_names == TP_DT_COUNT, "one name per dtype");
_Static_assert(sizeof dtype_sizes / sizeof *dtype_sizes == TP_DT_COUNT, "one size per dtype");

const char *tp_dtype_name(tp_dtype t)
{
    return (unsigned)t < TP_DT_COUNT ? dtype_names[t] : "?";
}

unsigned tp_dtype_size(tp_dtype t)
{
    return (unsigned)t < TP_DT_COUNT ? dtype_sizes[t] : 0;
}

tp_status tp_dtype_parse(const char *name, tp_dtype *out)
{
    for (unsigned i = 1; i < TP_DT_COUNT; i++)
        if (strcmp(name, dtype_names[i]) == 0) {
            *out = (tp_dtype)i;
            return TP_OK;
        }
    return TP_ERR_PARSE;
}
