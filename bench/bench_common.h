/* bench_common.h - what the C benches share: the machine line the planning benches print first
 * and the order of doubles for qsort (min / median / max of repeated runs).
 * Header-only (each bench is one file); time comes from the library's tp_now_seconds. */
#ifndef TP_BENCH_COMMON_H
#define TP_BENCH_COMMON_H

#include <stdio.h>
#include <string.h>

/* qsort's comparison of doubles, ascending */
static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

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
