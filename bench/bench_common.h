/* bench_common.h - what the planning benches share: the machine line they print first.
 * Header-only (each bench is one file); time comes from the library's tp_now_seconds. */
#ifndef TP_BENCH_COMMON_H
#define TP_BENCH_COMMON_H

#include <stdio.h>
#include <string.h>

/* "machine: MODEL, N cpus; NOTE" from /proc/cpuinfo */
static inline void bench_machine(const char *note)
{
    char line[256], model[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    int cpus = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            snprintf(model, sizeof model, "%s", strchr(line, ':') + 2);
            model[strcspn(model, "\n")] = 0;
        }
        if (!strncmp(line, "processor", 9)) cpus++;
    }
    if (f) fclose(f);
    printf("machine: %s, %d cpus; %s\n", model, cpus, note);
}

#endif
