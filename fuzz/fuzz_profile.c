/* fuzz_profile.c - machine profiles of the sim backend; a profile it accepts must make a sim
 * backend or be refused with a message (never crash). */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[32];
    int fd = fuzz_file(data, size, path);
    if (fd < 0) return 0;
    tp_sim_profile p;
    tp_error e;
    if (tp_sim_profile_read(path, &p, &e) == TP_OK) {
        tp_backend *be = NULL;
        if (tp_backend_sim_new(&p, 0, &be, &e) == TP_OK) tp_backend_free(be);
    }
    close(fd);
    return 0;
}
