/* fuzz_profile.c - machine profiles of the sim backend; a profile it accepts must make a sim
 * backend or be refused with a message (never crash). */
#include "fuzz.h"

static void check(const char *path)
{
    tp_sim_profile p;
    tp_error e;
    if (tp_sim_profile_read(path, &p, &e) == TP_OK) {
        tp_backend *be = NULL;
        if (tp_backend_sim_new(&p, 0, &be, &e) == TP_OK) tp_backend_free(be);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_as_file(data, size, check);
    return 0;
}
