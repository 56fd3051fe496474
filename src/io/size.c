/* size.c - sizes with units ("64MiB", "1.5GB") in and out. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "turnip/io.h"
#include "io/util.h"

tp_status tp_parse_size(const char *text, uint64_t *out)
{
    if (!text) return TP_ERR_PARSE;
    const char *p = text;
    while (isspace((unsigned char)*p)) p++;
    if (!isdigit((unsigned char)*p) && *p != '.') return TP_ERR_PARSE;
    char *end;
    /* integers exactly (doubles lose precision past 2^53) */
    errno = 0;
    unsigned long long ival = strtoull(p, &end, 10);
    int is_int = (*end != '.' && *end != 'e' && *end != 'E');
    if (errno == ERANGE) return TP_ERR_PARSE;
    double dval = 0;
    if (!is_int) {
        dval = strtod(p, &end);
        if (!(dval >= 0) || !isfinite(dval)) return TP_ERR_PARSE;
    }
    while (isspace((unsigned char)*end)) end++;
    char unit[8] = {0};
    size_t ul = 0;
    while (*end && !isspace((unsigned char)*end) && ul < sizeof unit - 1) unit[ul++] = *end++;
    while (isspace((unsigned char)*end)) end++;
    if (*end) return TP_ERR_PARSE;
    static const struct { const char *name; double mult; } units[] = {
        {"", 1}, {"b", 1},
        {"k", 1024.0}, {"kib", 1024.0}, {"ki", 1024.0}, {"kb", 1e3},
        {"m", 1048576.0}, {"mib", 1048576.0}, {"mi", 1048576.0}, {"mb", 1e6},
        {"g", 1073741824.0}, {"gib", 1073741824.0}, {"gi", 1073741824.0}, {"gb", 1e9},
        {"t", 1099511627776.0}, {"tib", 1099511627776.0}, {"ti", 1099511627776.0}, {"tb", 1e12},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(unit, units[i].name) != 0) continue;
        double m = units[i].mult;
        if (is_int) {
            uint64_t mi = (uint64_t)m;
            if (mi && ival > UINT64_MAX / mi) return TP_ERR_PARSE;
            *out = (uint64_t)ival * mi;
        } else {
            double v = dval * m;
            if (v >= 18446744073709551615.0) return TP_ERR_PARSE;
            *out = (uint64_t)llround(v);
        }
        return TP_OK;
    }
    return TP_ERR_PARSE;
}

tp_status tp_parse_size_list(const char *text, uint64_t *out, int max, int *n)
{
    char buf[64];
    int count = 0;
    const char *p = text;
    for (;;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == 0 || len >= sizeof buf || count >= max) return TP_ERR_PARSE;
        memcpy(buf, p, len);
        buf[len] = 0;
        if (tp_parse_size(buf, &out[count]) != TP_OK) return TP_ERR_PARSE;
        count++;
        if (!c) break;
        p = c + 1;
    }
    *n = count;
    return TP_OK;
}

char *tp_format_size(uint64_t bytes, char *buf, size_t len)
{
    static const char *names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) {
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, len, "%.1f %s", v, names[u]);
    return buf;
}
