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
    struct {
        const char *key;
        double *dst;
        int required;
    } f[] = {{"peak_flops", &p->peak_flops, 1}, {"efficiency", &p->efficiency, 1}, {"mem_bw", &p->mem_bw, 1},
             {"launch_s", &p->launch_s, 0},     {"wake_s", &p->wake_s, 0}, {"wake_after_s", &p->wake_after_s, 0},     {"vector_flops", &p->vector_flops, 0},     {"h2d_bw", &p->h2d_bw, 1},         {"d2h_bw", &p->d2h_bw, 1},
             {"host_bus_bw", &p->host_bus_bw, 0}, {"peer_bw", &p->peer_bw, 1},     {"copy_latency_s", &p->copy_latency_s, 0}};
    tp_status s = TP_OK;
    double dev = 0, mem = 0;
    if (!num(j, "devices", &dev) || dev < 1 || dev > TP_MAX_DEVICES || !num(j, "device_mem", &mem) || mem < 1)
        s = tp__fail(err, TP_ERR_INVALID, "machine profile %s: needs 'devices' (1..%d) and 'device_mem'", path, TP_MAX_DEVICES);
    for (size_t i = 0; i < sizeof f / sizeof *f && !s; i++)
        if (!num(j, f[i].key, f[i].dst) ? f[i].required : *f[i].dst < 0)
            s = tp__fail(err, TP_ERR_INVALID, "machine profile %s: field '%s' must be a %snumber", path, f[i].key,
                         f[i].required ? "positive " : "non-negative ");
    if (!s && (p->peak_flops <= 0 || p->efficiency <= 0 || p->mem_bw <= 0 || p->h2d_bw <= 0 || p->d2h_bw <= 0 || p->peer_bw <= 0))
        s = tp__fail(err, TP_ERR_INVALID, "machine profile %s: rates must be positive", path);
    p->devices = (int)dev;
    p->device_mem = (uint64_t)mem;
    json_decref(j);
    return s;
}
