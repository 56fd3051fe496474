/* strmap.c - string -> uint32 open-addressing hash map (FNV-1a, linear probing), used to
 * resolve vertex ids. Keys are borrowed, never copied. */
#include <string.h>
#include "io/util.h"

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

int tp__strmap_init(tp__strmap *m, size_t expect)
{
    size_t cap = 16;
    while (cap < expect * 2 + 2) cap *= 2;
    m->keys = calloc(cap, sizeof *m->keys);
    m->vals = calloc(cap, sizeof *m->vals);
    m->cap = cap;
    m->n = 0;
    if (!m->keys || !m->vals) {
        tp__strmap_free(m);
        return 0;
    }
    return 1;
}

void tp__strmap_free(tp__strmap *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->n = 0;
}

static int rehash(tp__strmap *m)
{
    tp__strmap nm;
    if (!tp__strmap_init(&nm, m->cap)) return 0;
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) tp__strmap_put(&nm, m->keys[i], m->vals[i], NULL);
    tp__strmap_free(m);
    *m = nm;
    return 1;
}

int tp__strmap_put(tp__strmap *m, const char *key, uint32_t val, uint32_t *old)
{
    if ((m->n + 1) * 2 > m->cap && !rehash(m)) return -1;
    size_t mask = m->cap - 1, i = (size_t)hash_str(key) & mask;
    while (m->keys[i]) {
        if (strcmp(m->keys[i], key) == 0) {
            if (old) *old = m->vals[i];
            return 0;
        }
        i = (i + 1) & mask;
    }
    m->keys[i] = key;
    m->vals[i] = val;
    m->n++;
    return 1;
}

int tp__strmap_get(const tp__strmap *m, const char *key, uint32_t *val)
{
    if (!m->cap) return 0;
    size_t mask = m->cap - 1, i = (size_t)hash_str(key) & mask;
    while (m->keys[i]) {
        if (strcmp(m->keys[i], key) == 0) {
            *val = m->vals[i];
            return 1;
        }
        i = (i + 1) & mask;
    }
    return 0;
}
