/* sysmem.c - how much host memory this process may still use: read once per question from
 * /proc/meminfo (MemAvailable: what the kernel can give without swapping), the physical memory
 * where that is missing, and the address-space limit (ulimit -v) less the address space the
 * process already maps (/proc/self/statm). Builders refuse graphs and backends refuse arenas
 * that would not fit, before allocating anything. */
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>
#include "io/util.h"
#include "turnip/io.h"

/* MemAvailable of /proc/meminfo in *bytes; 0 where it cannot be read */
static int mem_available(uint64_t *bytes)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    int ok = 0;
    while (!ok && fgets(line, sizeof line, f)) {
        unsigned long long kib;
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1 && kib <= UINT64_MAX / 1024) {
            *bytes = (uint64_t)kib * 1024;
            ok = 1;
        }
    }
    fclose(f);
    return ok;
}

/* the address space this process maps now (VmSize), in *bytes; 0 where it cannot be read */
static int mapped_now(uint64_t *bytes)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long long pages = 0;
    long page = sysconf(_SC_PAGESIZE);
    int ok = fscanf(f, "%llu", &pages) == 1 && page > 0 && pages <= UINT64_MAX / (uint64_t)page;
    fclose(f);
    if (ok) *bytes = (uint64_t)pages * (uint64_t)page;
    return ok;
}

uint64_t tp__address_space_left(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) || rl.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
    uint64_t lim = (uint64_t)rl.rlim_cur, used = 0;
    if (mapped_now(&used)) lim = lim > used ? lim - used : 0;
    return lim;
}

uint64_t tp_host_mem_limit(void)
{
    uint64_t avail = 0;
    if (!mem_available(&avail) || !avail) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        avail = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : UINT64_MAX;
    }
    uint64_t as = tp__address_space_left();
    return as < avail ? as : avail;
}
