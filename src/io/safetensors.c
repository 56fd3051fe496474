/* safetensors.c - reading (mapped, validated) and writing safetensors files.
 *
 * Reading trusts nothing in the file: it is opened as a regular file only, without blocking
 * (tp__open_regular), the header length is checked against the file, the header must be a
 * JSON object with every key once (a tensor named twice would be one of two silently), and
 * every tensor's data_offsets lie in the data section, match its dtype and shape, and overlap
 * no other tensor's (two names for the same bytes are a damaged or crafted file). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "turnip/safetensors.h"
#include "turnip/io.h"
#include "io/util.h"

struct tp_st {
    void *map;
    size_t size;
    tp_st_tensor *t;
    size_t n;
    tp__strmap idx;
};

static const struct {
    const char *name;
    tp_dtype t;
} st_dtypes[] = {{"F32", TP_DT_F32}, {"F16", TP_DT_F16}, {"BF16", TP_DT_BF16}, {"F64", TP_DT_F64},
                 {"I32", TP_DT_I32}, {"I64", TP_DT_I64}, {"U8", TP_DT_U8}};

static const char *st_name(tp_dtype t)
{
    for (size_t i = 0; i < sizeof st_dtypes / sizeof *st_dtypes; i++)
        if (st_dtypes[i].t == t) return st_dtypes[i].name;
    return NULL;
}

void tp_st_close(tp_st *st)
{
    if (!st) return;
    for (size_t i = 0; i < st->n; i++) free((char *)st->t[i].name);
    free(st->t);
    tp__strmap_free(&st->idx);
    if (st->map) munmap(st->map, st->size);
    free(st);
}

/* the bytes [begin, end) of the data section tensor i occupies */
typedef struct {
    uint64_t begin, end;
    size_t i;
} st_span;

static int span_cmp(const void *a, const void *b)
{
    const st_span *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* TP_ERR_PARSE naming both tensors when two non-empty tensors share bytes. Sorted by begin,
 * spans are disjoint exactly when each begins at or after the end of the one before it. */
static tp_status check_overlap(const char *path, const tp_st *st, st_span *sp, tp_error *err)
{
    size_t m = 0;
    for (size_t i = 0; i < st->n; i++)
        if (sp[i].end > sp[i].begin) sp[m++] = sp[i]; /* empty tensors occupy nothing */
    qsort(sp, m, sizeof *sp, span_cmp);
    for (size_t k = 1; k < m; k++)
        if (sp[k].begin < sp[k - 1].end)
            return tp__fail(err, TP_ERR_PARSE, "%s: tensors '%s' and '%s' overlap (data_offsets [%llu, %llu] and [%llu, %llu])", path,
                            st->t[sp[k - 1].i].name, st->t[sp[k].i].name, (unsigned long long)sp[k - 1].begin,
                            (unsigned long long)sp[k - 1].end, (unsigned long long)sp[k].begin, (unsigned long long)sp[k].end);
    return TP_OK;
}

tp_status tp_st_open(const char *path, tp_st **out, tp_error *err)
{
    int fd;
    uint64_t fsize;
    tp_status s = tp__open_regular(path, &fd, &fsize, err);
    if (s) return s;
    if (fsize > SIZE_MAX) {
        close(fd);
        return tp__fail(err, TP_ERR_INVALID, "%s: %llu bytes, more than this machine can map", path, (unsigned long long)fsize);
    }
    tp_st *st = calloc(1, sizeof *st);
    if (!st) {
        close(fd);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    st->size = (size_t)fsize;
    json_t *h = NULL;
    st_span *spans = NULL;
    if (st->size < 8) {
        s = tp__fail(err, TP_ERR_PARSE, "%s: not a safetensors file (%zu bytes, no header)", path, st->size);
        goto done;
    }
    st->map = mmap(NULL, st->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (st->map == MAP_FAILED) {
        st->map = NULL;
        s = tp__fail(err, TP_ERR_IO, "%s: cannot map: %s", path, strerror(errno));
        goto done;
    }
    const unsigned char *p = st->map;
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | p[i];
    if (hl > st->size - 8 || hl > (100u << 20)) {
        s = tp__fail(err, TP_ERR_PARSE, "%s: not a safetensors file (header length %llu, file %zu bytes)", path,
                     (unsigned long long)hl, st->size);
        goto done;
    }
    json_error_t je;
    h = json_loadb((const char *)p + 8, (size_t)hl, JSON_REJECT_DUPLICATES, &je);
    if (!h && json_error_code(&je) == json_error_duplicate_key) {
        /* je.text is "duplicate object key near '<the key as written, in its quotes>'" */
        const char *near = strstr(je.text, "near '");
        int n = near ? (int)strlen(near + 6) - 1 : 0;
        s = tp__fail(err, TP_ERR_PARSE, "%s: the header names %.*s twice (a tensor or a field given twice)", path, n > 0 ? n : 1,
                     n > 0 ? near + 6 : "?");
        goto done;
    }
    if (!h || !json_is_object(h)) {
        s = tp__fail(err, TP_ERR_PARSE, "%s: not a safetensors file (header is not a JSON object%s%s)", path,
                     h ? "" : ": ", h ? "" : je.text);
        goto done;
    }
    const unsigned char *data = p + 8 + hl;
    uint64_t dsize = st->size - 8 - hl;
    size_t cap = json_object_size(h);
    st->t = calloc(cap + 1, sizeof *st->t);
    spans = calloc(cap + 1, sizeof *spans);
    if (!st->t || !spans || !tp__strmap_init(&st->idx, cap)) {
        s = tp__fail(err, TP_ERR_NOMEM, "out of memory");
        goto done;
    }
    const char *key;
    json_t *val;
    json_object_foreach(h, key, val) {
        if (!strcmp(key, "__metadata__")) continue;
        tp_st_tensor *t = &st->t[st->n];
        json_t *jd = json_object_get(val, "dtype"), *js = json_object_get(val, "shape"), *jo = json_object_get(val, "data_offsets");
        if (!json_is_string(jd) || !json_is_array(js) || !json_is_array(jo) || json_array_size(jo) != 2 ||
            json_array_size(js) > TP_MAX_DIMS) {
            s = tp__fail(err, TP_ERR_PARSE, "%s: tensor '%s': needs dtype, shape (at most 8 dims) and data_offsets [begin, end]", path, key);
            goto done;
        }
        int found = 0;
        for (size_t i = 0; i < sizeof st_dtypes / sizeof *st_dtypes; i++)
            if (!strcmp(json_string_value(jd), st_dtypes[i].name)) {
                t->dtype = st_dtypes[i].t;
                found = 1;
            }
        if (!found) {
            s = tp__fail(err, TP_ERR_PARSE, "%s: tensor '%s': unsupported dtype '%s'", path, key, json_string_value(jd));
            goto done;
        }
        t->ndim = (int)json_array_size(js);
        uint64_t n = tp_dtype_size(t->dtype);
        for (int i = 0; i < t->ndim; i++) {
            json_t *e = json_array_get(js, (size_t)i);
            if (!json_is_integer(e) || json_integer_value(e) < 0 ||
                __builtin_mul_overflow(n, (uint64_t)json_integer_value(e), &n)) {
                s = tp__fail(err, TP_ERR_PARSE, "%s: tensor '%s': bad shape", path, key);
                goto done;
            }
            t->shape[i] = (int64_t)json_integer_value(e);
        }
        json_t *b0 = json_array_get(jo, 0), *b1 = json_array_get(jo, 1);
        if (!json_is_integer(b0) || !json_is_integer(b1) || json_integer_value(b0) < 0 ||
            json_integer_value(b1) < json_integer_value(b0) || (uint64_t)json_integer_value(b1) > dsize) {
            s = tp__fail(err, TP_ERR_PARSE, "%s: tensor '%s': data_offsets outside the file's %llu data bytes (truncated?)", path,
                         key, (unsigned long long)dsize);
            goto done;
        }
        t->bytes = (uint64_t)(json_integer_value(b1) - json_integer_value(b0));
        if (t->bytes != n) {
            s = tp__fail(err, TP_ERR_PARSE, "%s: tensor '%s': %llu data bytes, dtype and shape say %llu", path, key,
                         (unsigned long long)t->bytes, (unsigned long long)n);
            goto done;
        }
        t->data = data + json_integer_value(b0);
        t->name = strdup(key);
        if (!t->name) {
            s = tp__fail(err, TP_ERR_NOMEM, "out of memory");
            goto done;
        }
        int put = tp__strmap_put(&st->idx, t->name, (uint32_t)st->n, NULL);
        if (put <= 0) { /* 0: present twice, which JSON_REJECT_DUPLICATES already refused */
            s = put < 0 ? tp__fail(err, TP_ERR_NOMEM, "out of memory") : tp__fail(err, TP_ERR_PARSE, "%s: tensor '%s' appears twice", path, key);
            free((char *)t->name);
            goto done;
        }
        spans[st->n] = (st_span){(uint64_t)json_integer_value(b0), (uint64_t)json_integer_value(b1), st->n};
        st->n++;
    }
    s = check_overlap(path, st, spans, err);
done:
    close(fd);
    free(spans);
    json_decref(h);
    if (s) {
        tp_st_close(st);
        return s;
    }
    *out = st;
    return TP_OK;
}

size_t tp_st_count(const tp_st *st)
{
    return st->n;
}

const tp_st_tensor *tp_st_get(const tp_st *st, size_t i)
{
    return i < st->n ? &st->t[i] : NULL;
}

const tp_st_tensor *tp_st_find(const tp_st *st, const char *name)
{
    uint32_t i;
    return tp__strmap_get(&st->idx, name, &i) ? &st->t[i] : NULL;
}

tp_status tp_st_write(const char *path, size_t n, const tp_st_tensor *t, tp_error *err)
{
    tp_outfile *of;
    tp_status s = tp_st_write_open(path, n, t, &of, err);
    return s ? s : tp_outfile_commit(of, err);
}

tp_status tp_st_write_open(const char *path, size_t n, const tp_st_tensor *t, tp_outfile **out, tp_error *err)
{
    *out = NULL;
    json_t *h = json_object();
    uint64_t off = 0;
    for (size_t i = 0; i < n && h; i++) {
        const char *dn = st_name(t[i].dtype);
        if (!dn) {
            json_decref(h);
            return tp__fail(err, TP_ERR_ARG, "%s: tensor '%s': dtype %s cannot be written", path, t[i].name, tp_dtype_name(t[i].dtype));
        }
        json_t *e = json_object(), *shape = json_array();
        for (int k = 0; k < t[i].ndim; k++) json_array_append_new(shape, json_integer(t[i].shape[k]));
        json_object_set_new(e, "dtype", json_string(dn));
        json_object_set_new(e, "shape", shape);
        json_t *offs = json_array();
        json_array_append_new(offs, json_integer((json_int_t)off));
        json_array_append_new(offs, json_integer((json_int_t)(off + t[i].bytes)));
        json_object_set_new(e, "data_offsets", offs);
        json_object_set_new(h, t[i].name, e);
        off += t[i].bytes;
    }
    char *text = h ? json_dumps(h, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(h);
    if (!text) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    size_t hl = strlen(text), pad = (8 - hl % 8) % 8;
    tp_outfile *of; /* whole or not at all: an existing file survives a failed write */
    tp_status s = tp_outfile_open(path, &of, err);
    if (s) {
        free(text);
        return s;
    }
    FILE *f = tp_outfile_stream(of);
    unsigned char len[8];
    uint64_t L = hl + pad;
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)(L >> (8 * i));
    fwrite(len, 1, 8, f);
    fwrite(text, 1, hl, f);
    for (size_t i = 0; i < pad; i++) fputc(' ', f);
    free(text);
    for (size_t i = 0; i < n; i++) fwrite(t[i].data, 1, t[i].bytes, f);
    *out = of;
    return TP_OK;
}
