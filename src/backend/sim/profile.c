/* profile.c - machine profiles for the sim backend, as JSON files whose numbers carry their
 * sources: {"field": {"value": V, "comment": "where V comes from"}} (a plain number is
 * accepted too). NAME without a slash means TP_PROFILE_DIR/NAME.json (profiles/ in the
 * source tree). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "turnip/backend.h"
#include "turnip/io.h"
#include "io/util.h"

#ifndef TP_PROFILE_DIR
#define TP_PROFILE_DIR "profiles"
#endif

static int num(json_t *root, const char *key, double *out)
{
    json_t *v = json_object_get(root, key);
    if (json_is_object(v)) v = json_object_get(v, "value");
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 1;
    }
    if (json_is_string(v)) { /* sizes such as "40GiB" */
        uint64_t b;
        if (tp_parse_size(json_string_value(v), &b) == TP_OK) {
            *out = (double)b;
            return 1;
        }
    }
    return 0;
}

tp_status tp_sim_profile_read(const char *name, tp_sim_profile *p, tp_error *err)
{
    char path[4096];
    if (strchr(name, '/') || strstr(name, ".json")) snprintf(path, sizeof path, "%s", name);
    else snprintf(path, sizeof path, "%s/%s.json", TP_PROFILE_DIR, name);
    char *text;
    size_t len;
    tp_error re;
    tp_status rs = tp__read_file(path, &text, &len, &re); /* a regular file only: a FIFO must not block */
    if (rs) return tp__fail(err, rs, "machine profile %s", re.msg);
    json_error_t je;
    json_t *j = json_loadb(text, len, 0, &je);
    free(text);
    if (!j) return tp__fail(err, TP_ERR_INVALID, "machine profile %s: %s", path, je.text);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", json_is_string(json_object_get(j, "name")) ? json_string_value(json_object_get(j, "name")) : name);
    /* every number in a stated range: a rate of 1e-300 or a size of 1e308 is a typo, and would
     * make simulated times infinite or sizes wrap */
    enum { REQ = 1, ZERO_OK = 2 }; /* required; 0 means "none" */
    struct {
        const char *key;
        double *dst;
        int flags;
        double lo, hi;
    } f[] = {{"peak_flops", &p->peak_flops, REQ, 1, 1e21},       {"efficiency", &p->efficiency, REQ, 1e-6, 1},
             {"mem_bw", &p->mem_bw, REQ, 1, 1e18},               {"launch_s", &p->launch_s, 0, 0, 3600},
             {"wake_s", &p->wake_s, 0, 0, 3600},                 {"wake_after_s", &p->wake_after_s, 0, 0, 3600},
             {"vector_flops", &p->vector_flops, ZERO_OK, 1, 1e21}, {"h2d_bw", &p->h2d_bw, REQ, 1, 1e18},
             {"d2h_bw", &p->d2h_bw, REQ, 1, 1e18},               {"host_bus_bw", &p->host_bus_bw, ZERO_OK, 1, 1e18},
             {"peer_bw", &p->peer_bw, REQ, 1, 1e18},             {"copy_latency_s", &p->copy_latency_s, 0, 0, 3600}};
    tp_status s = TP_OK;
    double dev = 0, mem = 0;
    const double mem_max = (double)(1ull << 60); /* 1 EiB: converts to uint64_t exactly */
    if (!num(j, "devices", &dev) || !(dev >= 1 && dev <= TP_MAX_DEVICES) || dev != (double)(int)dev)
        s = tp__fail(err, TP_ERR_INVALID, "machine profile %s: needs 'devices', an integer in 1..%d", path, TP_MAX_DEVICES);
    else if (!num(j, "device_mem", &mem) || !(mem >= 1 && mem <= mem_max))
        s = tp__fail(err, TP_ERR_INVALID, "machine profile %s: needs 'device_mem', a size in [1 B, 1 EiB] (not %g)", path, mem);
    for (size_t i = 0; i < sizeof f / sizeof *f && !s; i++) {
        double v = 0;
        int got = num(j, f[i].key, &v);
        if (!got && (f[i].flags & REQ))
            s = tp__fail(err, TP_ERR_INVALID, "machine profile %s: field '%s' is required (a number in [%g, %g])", path,
                         f[i].key, f[i].lo, f[i].hi);
        else if (got && !(v >= f[i].lo && v <= f[i].hi) && !(v == 0 && (f[i].flags & ZERO_OK)))
            s = tp__fail(err, TP_ERR_INVALID, "machine profile %s: field '%s' must be a number in [%g, %g]%s, not %g", path,
                         f[i].key, f[i].lo, f[i].hi, f[i].flags & ZERO_OK ? " or 0" : "", v);
        else *f[i].dst = v;
    }
    p->devices = s ? 0 : (int)dev;
    p->device_mem = s ? 0 : (uint64_t)mem;
    json_decref(j);
    return s;
}
