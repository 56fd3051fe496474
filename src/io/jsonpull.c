/* jsonpull.c - the pull JSON reader (jsonpull.h). A window of at most 1 MiB over the file, a
 * stack of open levels, the keys of each open object (for duplicate keys: checked as each key
 * arrives while an object has fewer than 16, then by sorting when it closes), and one string
 * buffer reused for every string and number. Written by hand because jansson builds a tree even
 * from its callback loader and Debian's streaming parsers (yajl) would add a dependency for the
 * hundred lines below (docs/formats.md, "Streaming"). */
#include "io/jsonpull.h"
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WINDOW (1u << 20)
#define LINEAR_KEYS 16

tp_status tp__jp_fail(tp__jp *jp, const char *what)
{
    if (!jp->failed) {
        jp->failed = 1;
        tp__fail(jp->err, TP_ERR_PARSE, "%s:%llu:%llu: not valid JSON: %s", jp->name,
                 (unsigned long long)jp->line, (unsigned long long)jp->col, what);
    }
    return jp->err ? jp->err->code : TP_ERR_PARSE;
}

static void init_common(tp__jp *jp, const char *name, tp_error *err)
{
    memset(jp, 0, sizeof *jp);
    jp->fd = -1;
    jp->name = name;
    jp->err = err;
    jp->line = 1;
}

tp_status tp__jp_open_file(tp__jp *jp, const char *path, tp_error *err)
{
    init_common(jp, path, err);
    int fd;
    tp_status s = tp__open_regular(path, &fd, NULL, err);
    if (s) return s;
    jp->buf = malloc(WINDOW);
    if (!jp->buf) {
        close(fd);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    jp->fd = fd;
    jp->bufcap = WINDOW;
    jp->p = jp->end = jp->buf;
    return TP_OK;
}

void tp__jp_open_mem(tp__jp *jp, const char *text, size_t len, const char *name, tp_error *err)
{
    init_common(jp, name, err);
    jp->p = text;
    jp->end = text + len;
}

void tp__jp_close(tp__jp *jp)
{
    if (jp->fd >= 0) close(jp->fd);
    free(jp->buf);
    free(jp->s);
    free(jp->keys);
    free(jp->koff);
    free(jp->rec);
    jp->fd = -1;
    jp->buf = jp->s = jp->keys = jp->rec = NULL;
    jp->koff = NULL;
}

static int rec_append(tp__jp *jp, const char *from, size_t n)
{
    if (!TP__GROW(jp->rec, jp->caprec, jp->nrec + n + 1)) {
        jp->failed = 1;
        tp__fail(jp->err, TP_ERR_NOMEM, "out of memory");
        return 0;
    }
    memcpy(jp->rec + jp->nrec, from, n);
    jp->nrec += n;
    return 1;
}

/* 1 when a byte is available at jp->p */
static int fill(tp__jp *jp)
{
    if (jp->p < jp->end) return 1;
    if (jp->fd < 0 || jp->eof || jp->failed) return 0;
    if (jp->recording && !rec_append(jp, jp->rec_from, (size_t)(jp->p - jp->rec_from))) return 0;
    ssize_t r;
    do r = read(jp->fd, jp->buf, jp->bufcap);
    while (r < 0 && errno == EINTR);
    if (r < 0) {
        jp->failed = 1;
        tp__fail(jp->err, TP_ERR_IO, "%s: read error: %s", jp->name, strerror(errno));
        return 0;
    }
    if (r == 0) {
        jp->eof = 1;
        return 0;
    }
    if (memchr(jp->buf, 0, (size_t)r)) {
        jp->failed = 1;
        tp__fail(jp->err, TP_ERR_PARSE, "%s: contains a NUL byte; not a JSON text file", jp->name);
        return 0;
    }
    jp->p = jp->rec_from = jp->buf;
    jp->end = jp->buf + r;
    return 1;
}

/* the next byte, or -1 at the end (or after a failure) */
static inline int peekc(tp__jp *jp)
{
    if (jp->failed) return -1;
    if (jp->p < jp->end || fill(jp)) return (unsigned char)*jp->p;
    return -1;
}

static inline void adv(tp__jp *jp)
{
    if (*jp->p == '\n') {
        jp->line++;
        jp->col = 0;
    } else {
        jp->col++;
    }
    jp->p++;
}

static inline int ws(tp__jp *jp)
{
    for (;;) {
        int c = peekc(jp);
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return c;
        adv(jp);
    }
}

static tp_status unexpected(tp__jp *jp, int c, const char *wanted)
{
    char msg[96];
    if (c < 0) snprintf(msg, sizeof msg, "%s expected near end of file", wanted);
    else if (c >= 0x20 && c < 0x7f) snprintf(msg, sizeof msg, "%s expected near '%c'", wanted, c);
    else snprintf(msg, sizeof msg, "%s expected near byte 0x%02x", wanted, (unsigned)c);
    return tp__jp_fail(jp, msg);
}

static inline int sput(tp__jp *jp, char c)
{
    if (jp->slen + 1 >= jp->scap && !TP__GROW(jp->s, jp->scap, jp->slen + 2)) {
        jp->failed = 1;
        tp__fail(jp->err, TP_ERR_NOMEM, "out of memory");
        return 0;
    }
    jp->s[jp->slen++] = c;
    return 1;
}

tp__jpt tp__jp_peek(tp__jp *jp)
{
    int c = ws(jp);
    switch (c) {
    case '{': return TP__JP_OBJECT;
    case '[': return TP__JP_ARRAY;
    case '"': return TP__JP_STRING;
    case 't': return TP__JP_TRUE;
    case 'f': return TP__JP_FALSE;
    case 'n': return TP__JP_NULL;
    default:
        if (c == '-' || (c >= '0' && c <= '9')) return TP__JP_NUMBER;
        unexpected(jp, c, "a value");
        return TP__JP_ERROR;
    }
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int read_u4(tp__jp *jp, unsigned *out)
{
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(peekc(jp));
        if (h < 0) return 0;
        adv(jp);
        v = v * 16 + (unsigned)h;
    }
    *out = v;
    return 1;
}

static int put_utf8(tp__jp *jp, unsigned cp)
{
    if (cp < 0x80) return sput(jp, (char)cp);
    if (cp < 0x800) return sput(jp, (char)(0xc0 | (cp >> 6))) && sput(jp, (char)(0x80 | (cp & 0x3f)));
    if (cp < 0x10000)
        return sput(jp, (char)(0xe0 | (cp >> 12))) && sput(jp, (char)(0x80 | ((cp >> 6) & 0x3f))) &&
               sput(jp, (char)(0x80 | (cp & 0x3f)));
    return sput(jp, (char)(0xf0 | (cp >> 18))) && sput(jp, (char)(0x80 | ((cp >> 12) & 0x3f))) &&
           sput(jp, (char)(0x80 | ((cp >> 6) & 0x3f))) && sput(jp, (char)(0x80 | (cp & 0x3f)));
}

/* one UTF-8 sequence whose lead byte c (>= 0x80) is at p */
static int utf8_seq(tp__jp *jp, int c)
{
    int n;
    unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) n = 1;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 2;
        if (c == 0xe0) lo = 0xa0;      /* no overlong forms */
        if (c == 0xed) hi = 0x9f;      /* no surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 3;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;      /* at most U+10FFFF */
    } else return 0;
    if (!sput(jp, (char)c)) return 0;
    adv(jp);
    for (int k = 0; k < n; k++) {
        int d = peekc(jp);
        if (d < 0 || (unsigned)d < (k ? 0x80u : lo) || (unsigned)d > (k ? 0xbfu : hi)) return 0;
        if (!sput(jp, (char)d)) return 0;
        adv(jp);
    }
    return 1;
}

tp_status tp__jp_string(tp__jp *jp, const char **s, size_t *len)
{
    if (ws(jp) != '"') return unexpected(jp, peekc(jp), "a string");
    adv(jp);
    jp->slen = 0;
    for (;;) {
        int c = peekc(jp);
        if (c < 0) return jp->failed ? tp__jp_fail(jp, "") : tp__jp_fail(jp, "premature end of input in a string");
        if (c == '"') {
            adv(jp);
            break;
        }
        if (c < 0x20) return tp__jp_fail(jp, "control character in a string");
        if (c == '\\') {
            adv(jp);
            int e = peekc(jp);
            const char *map = "\"\"\\\\//b\bf\fn\nr\rt\t";
            const char *m = e > 0 ? strchr(map, e) : NULL;
            if (e == 'u') {
                adv(jp);
                unsigned cp, lo;
                if (!read_u4(jp, &cp)) return tp__jp_fail(jp, "invalid \\u escape");
                if (cp >= 0xdc00 && cp <= 0xdfff) return tp__jp_fail(jp, "invalid Unicode escape (a lone low surrogate)");
                if (cp >= 0xd800 && cp <= 0xdbff) {
                    if (peekc(jp) != '\\') return tp__jp_fail(jp, "invalid Unicode escape (a lone high surrogate)");
                    adv(jp);
                    if (peekc(jp) != 'u') return tp__jp_fail(jp, "invalid Unicode escape (a lone high surrogate)");
                    adv(jp);
                    if (!read_u4(jp, &lo) || lo < 0xdc00 || lo > 0xdfff)
                        return tp__jp_fail(jp, "invalid Unicode escape (a lone high surrogate)");
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                }
                if (cp == 0) return tp__jp_fail(jp, "\\u0000 is not allowed");
                if (!put_utf8(jp, cp)) return tp__jp_fail(jp, "out of memory");
                continue;
            }
            if (!m || ((m - map) & 1)) return tp__jp_fail(jp, "invalid escape");
            if (!sput(jp, m[1])) return tp__jp_fail(jp, "out of memory");
            adv(jp);
            continue;
        }
        if (c >= 0x80) {
            if (!utf8_seq(jp, c)) return tp__jp_fail(jp, "invalid UTF-8 in a string");
            continue;
        }
        if (!sput(jp, (char)c)) return tp__jp_fail(jp, "out of memory");
        adv(jp);
    }
    if (!sput(jp, 0)) return tp__jp_fail(jp, "out of memory");
    jp->slen--;
    if (s) *s = jp->s;
    if (len) *len = jp->slen;
    return TP_OK;
}

static int digits(tp__jp *jp)
{
    int n = 0;
    for (int c = peekc(jp); c >= '0' && c <= '9'; c = peekc(jp), n++) {
        if (!sput(jp, (char)c)) return -1;
        adv(jp);
    }
    return n;
}

tp_status tp__jp_number(tp__jp *jp)
{
    int c = ws(jp);
    jp->slen = 0;
    int real = 0, neg = c == '-';
    if (neg) {
        sput(jp, '-');
        adv(jp);
        c = peekc(jp);
    }
    if (c == '0') {
        sput(jp, '0');
        adv(jp);
        c = peekc(jp);
        if (c >= '0' && c <= '9') return tp__jp_fail(jp, "invalid number (a leading zero)");
    } else if (digits(jp) <= 0) {
        return tp__jp_fail(jp, "invalid number");
    }
    if (peekc(jp) == '.') {
        real = 1;
        sput(jp, '.');
        adv(jp);
        if (digits(jp) <= 0) return tp__jp_fail(jp, "invalid number (no digits after '.')");
    }
    c = peekc(jp);
    if (c == 'e' || c == 'E') {
        real = 1;
        sput(jp, 'e');
        adv(jp);
        c = peekc(jp);
        if (c == '+' || c == '-') {
            sput(jp, (char)c);
            adv(jp);
        }
        if (digits(jp) <= 0) return tp__jp_fail(jp, "invalid number (no exponent digits)");
    }
    if (!sput(jp, 0)) return tp__jp_fail(jp, "out of memory");
    if (jp->failed) return jp->err ? jp->err->code : TP_ERR_PARSE;
    jp->is_int = !real;
    if (!real) {
        /* magnitude in uint64 without overflow, then the int64 range */
        uint64_t m = 0;
        for (const char *q = jp->s + neg; *q; q++)
            if (__builtin_mul_overflow(m, 10u, &m) || __builtin_add_overflow(m, (uint64_t)(*q - '0'), &m))
                return tp__jp_fail(jp, neg ? "too big negative integer" : "too big integer");
        if (neg ? m > (uint64_t)INT64_MAX + 1 : m > (uint64_t)INT64_MAX)
            return tp__jp_fail(jp, neg ? "too big negative integer" : "too big integer");
        jp->ival = neg ? (m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m) : (int64_t)m;
        jp->dval = (double)jp->ival;
        return TP_OK;
    }
    errno = 0;
    jp->dval = strtod(jp->s, NULL);
    if (isinf(jp->dval)) return tp__jp_fail(jp, "real number overflow");
    return TP_OK;
}

static tp_status literal(tp__jp *jp, const char *word)
{
    ws(jp);
    for (const char *w = word; *w; w++) {
        if (peekc(jp) != *w) return tp__jp_fail(jp, "invalid token");
        adv(jp);
    }
    return TP_OK;
}

tp_status tp__jp_bool(tp__jp *jp, int *b)
{
    int c = ws(jp);
    if (c == 't') {
        *b = 1;
        return literal(jp, "true");
    }
    if (c == 'f') {
        *b = 0;
        return literal(jp, "false");
    }
    return unexpected(jp, c, "true or false");
}

static tp_status open_level(tp__jp *jp, char open)
{
    if (ws(jp) != open) return unexpected(jp, peekc(jp), open == '{' ? "'{'" : "'['");
    if (jp->depth >= TP__JP_MAX_DEPTH) return tp__jp_fail(jp, "maximum parsing depth reached");
    adv(jp);
    jp->depth++;
    jp->kind[jp->depth] = (uint8_t)open;
    jp->first[jp->depth] = 1;
    jp->keybase[jp->depth] = jp->nkoff;
    return TP_OK;
}

tp_status tp__jp_obj_begin(tp__jp *jp)
{
    return open_level(jp, '{');
}

tp_status tp__jp_arr_begin(tp__jp *jp)
{
    return open_level(jp, '[');
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* '}' at p: the big-object duplicate check, pop its keys, consume */
static int close_obj(tp__jp *jp)
{
    size_t base = jp->keybase[jp->depth], k = jp->nkoff - base;
    if (k >= LINEAR_KEYS) {
        const char **v = malloc(k * sizeof *v);
        if (!v) {
            tp__jp_fail(jp, "out of memory");
            return -1;
        }
        for (size_t i = 0; i < k; i++) v[i] = jp->keys + jp->koff[base + i];
        qsort(v, k, sizeof *v, cmp_str);
        int dup = 0;
        for (size_t i = 1; i < k && !dup; i++) dup = !strcmp(v[i - 1], v[i]);
        free(v);
        if (dup) {
            tp__jp_fail(jp, "duplicate object key");
            return -1;
        }
    }
    if (k) jp->nkeys = jp->koff[base];
    jp->nkoff = base;
    adv(jp);
    jp->depth--;
    return 0;
}

static int push_key(tp__jp *jp)
{
    size_t base = jp->keybase[jp->depth], k = jp->nkoff - base;
    if (k < LINEAR_KEYS)
        for (size_t i = 0; i < k; i++)
            if (!strcmp(jp->keys + jp->koff[base + i], jp->s)) {
                tp__jp_fail(jp, "duplicate object key");
                return 0;
            }
    if (!TP__GROW(jp->keys, jp->capkeys, jp->nkeys + jp->slen + 1) || !TP__GROW(jp->koff, jp->capkoff, jp->nkoff + 1)) {
        tp__jp_fail(jp, "out of memory");
        return 0;
    }
    jp->koff[jp->nkoff++] = jp->nkeys;
    memcpy(jp->keys + jp->nkeys, jp->s, jp->slen + 1);
    jp->nkeys += jp->slen + 1;
    return 1;
}

int tp__jp_obj_key(tp__jp *jp, const char **key)
{
    if (jp->failed || jp->depth < 1 || jp->kind[jp->depth] != '{') {
        if (!jp->failed) tp__jp_fail(jp, "internal: not in an object");
        return -1;
    }
    int c = ws(jp);
    if (c == '}') return close_obj(jp);
    if (!jp->first[jp->depth]) {
        if (c != ',') {
            unexpected(jp, c, "',' or '}'");
            return -1;
        }
        adv(jp);
        c = ws(jp);
    }
    if (c != '"') {
        unexpected(jp, c, "a string (an object key)");
        return -1;
    }
    if (tp__jp_string(jp, key, NULL) || !push_key(jp)) return -1;
    if (ws(jp) != ':') {
        unexpected(jp, peekc(jp), "':'");
        return -1;
    }
    adv(jp);
    jp->first[jp->depth] = 0;
    return 1;
}

int tp__jp_arr_next(tp__jp *jp)
{
    if (jp->failed || jp->depth < 1 || jp->kind[jp->depth] != '[') {
        if (!jp->failed) tp__jp_fail(jp, "internal: not in an array");
        return -1;
    }
    int c = ws(jp);
    if (c == ']') {
        adv(jp);
        jp->depth--;
        return 0;
    }
    if (!jp->first[jp->depth]) {
        if (c != ',') {
            unexpected(jp, c, "',' or ']'");
            return -1;
        }
        adv(jp);
    }
    jp->first[jp->depth] = 0;
    return 1;
}

tp_status tp__jp_skip(tp__jp *jp)
{
    int r;
    switch (tp__jp_peek(jp)) {
    case TP__JP_OBJECT:
        if (tp__jp_obj_begin(jp)) return jp->err->code;
        while ((r = tp__jp_obj_key(jp, NULL)) == 1)
            if (tp__jp_skip(jp)) return jp->err->code;
        return r < 0 ? jp->err->code : TP_OK;
    case TP__JP_ARRAY:
        if (tp__jp_arr_begin(jp)) return jp->err->code;
        while ((r = tp__jp_arr_next(jp)) == 1)
            if (tp__jp_skip(jp)) return jp->err->code;
        return r < 0 ? jp->err->code : TP_OK;
    case TP__JP_STRING: return tp__jp_string(jp, NULL, NULL);
    case TP__JP_NUMBER: return tp__jp_number(jp);
    case TP__JP_TRUE: return literal(jp, "true");
    case TP__JP_FALSE: return literal(jp, "false");
    case TP__JP_NULL: return literal(jp, "null");
    default: return jp->err ? jp->err->code : TP_ERR_PARSE;
    }
}

tp_status tp__jp_drain(tp__jp *jp)
{
    while (!jp->failed && jp->depth > 0) {
        int r = jp->kind[jp->depth] == '{' ? tp__jp_obj_key(jp, NULL) : tp__jp_arr_next(jp);
        if (r == 1 && tp__jp_skip(jp)) break;
    }
    return jp->failed ? jp->err->code : TP_OK;
}

tp_status tp__jp_finish(tp__jp *jp)
{
    if (jp->failed) return jp->err->code;
    int c = ws(jp);
    if (jp->failed) return jp->err->code;
    if (c >= 0) return tp__jp_fail(jp, "end of file expected");
    return TP_OK;
}

void tp__jp_record_start(tp__jp *jp)
{
    ws(jp);
    jp->recording = 1;
    jp->rec_from = jp->p;
    jp->nrec = 0;
}

tp_status tp__jp_record_stop(tp__jp *jp, const char **text, size_t *len)
{
    jp->recording = 0;
    if (jp->failed) return jp->err->code;
    if (!rec_append(jp, jp->rec_from, (size_t)(jp->p - jp->rec_from))) return TP_ERR_NOMEM;
    jp->rec[jp->nrec] = 0;
    *text = jp->rec;
    if (len) *len = jp->nrec;
    return TP_OK;
}

tp_status tp__jp_tree(tp__jp *jp, json_t **out)
{
    const char *txt = NULL;
    size_t len = 0;
    *out = NULL;
    tp__jp_record_start(jp);
    tp_status st = tp__jp_skip(jp);
    tp_status s2 = tp__jp_record_stop(jp, &txt, &len);
    if (st || s2) return jp->failed ? jp->err->code : TP_ERR_NOMEM;
    json_error_t je;
    *out = json_loadb(txt, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    return *out ? TP_OK : tp__fail(jp->err, TP_ERR_NOMEM, "out of memory");
}
