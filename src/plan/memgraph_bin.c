/* memgraph_bin.c - the binary MemGraph (docs/formats.md "Binary MemGraph"): an 80-byte
 * versioned header with every count and the file's total size, then fixed little-endian
 * sections (capacities, task names, 40-byte vertex records, reads, deps, outputs, kept) and an
 * FNV-1a-64 checksum of everything before it. The reader checks the header's counts against
 * the file's size (no overflow) before it allocates anything, then every index as
 * tp__mg_check does; both directions stream through a 1 MiB buffer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "plan/memgraph_io.h"

#define HEADER_BYTES 80u
#define VREC_BYTES 40u
#define FNV_OFFSET 14695981039346656037ull /* FNV-1a-64's offset basis */
/* Files written before 2026-11-24 used this basis (a digit short); the reader still takes them. */
#define FNV_OFFSET_LEGACY 1469598103934665603ull
#define FNV_PRIME 1099511628211ull

static void put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}
static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint16_t get16(const unsigned char *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static uint32_t get32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * FNV_PRIME;
    return h;
}

/* ---- writer ---- */

typedef struct {
    FILE *f;
    uint64_t sum;
} bw;

static void wr(bw *w, const void *p, size_t n)
{
    w->sum = fnv(w->sum, p, n);
    fwrite(p, 1, n, w->f);
}

static void wr32(bw *w, uint32_t v)
{
    unsigned char b[4];
    put32(b, v);
    wr(w, b, 4);
}

tp_status tp_memgraph_write_binary(const tp_memgraph *mg, FILE *f, tp_error *err)
{
    const tp_graph *g = mg->g;
    const tp_vertex *gv = tp_graph_vertices(g);
    uint32_t nt = tp_graph_size(g), no = tp_graph_num_outputs(g);
    const uint32_t *gout = tp_graph_outputs(g);
    uint64_t names_bytes = 0, nreads = 0, ndeps = mg->deps_off[mg->n];
    for (uint32_t t = 0; t < nt; t++) names_bytes += 4 + strlen(gv[t].id);
    for (size_t i = 0; i < mg->n; i++) nreads += mg->v[i].nreads;
    uint64_t total = HEADER_BYTES + 8ull * (uint64_t)mg->ndevices + names_bytes + (uint64_t)VREC_BYTES * mg->n + 4 * nreads +
                     4 * ndeps + 12ull * no + 4ull * mg->nkept + 8;
    unsigned char h[HEADER_BYTES];
    memset(h, 0, sizeof h);
    memcpy(h, TP__MGB_MAGIC, 8);
    put32(h + 8, TP__MGB_VERSION);
    put32(h + 12, (uint32_t)mg->ndevices);
    put64(h + 16, mg->n);
    put64(h + 24, nreads);
    put64(h + 32, ndeps);
    put64(h + 40, nt);
    put64(h + 48, names_bytes);
    put32(h + 56, no);
    put32(h + 60, mg->nkept);
    put64(h + 64, mg->host_bytes);
    put64(h + 72, total);
    bw w = {f, FNV_OFFSET};
    wr(&w, h, sizeof h);
    for (int d = 0; d < mg->ndevices; d++) {
        unsigned char b[8];
        put64(b, mg->cap[d]);
        wr(&w, b, 8);
    }
    for (uint32_t t = 0; t < nt; t++) {
        size_t len = strlen(gv[t].id);
        wr32(&w, (uint32_t)len);
        wr(&w, gv[t].id, len);
    }
    for (size_t i = 0; i < mg->n; i++) {
        const tp__mv *m = &mg->v[i];
        unsigned char r[VREC_BYTES];
        r[0] = m->kind;
        r[1] = m->space;
        put16(r + 2, (uint16_t)m->device);
        put32(r + 4, m->task);
        put32(r + 8, m->inplace);
        put32(r + 12, (uint32_t)m->group);
        put64(r + 16, m->offset);
        put64(r + 24, m->bytes);
        put32(r + 32, m->nreads);
        put32(r + 36, mg->deps_off[i + 1] - mg->deps_off[i]);
        wr(&w, r, sizeof r);
    }
    for (size_t i = 0; i < mg->n; i++)
        for (uint32_t k = 0; k < mg->v[i].nreads; k++) wr32(&w, mg->reads[mg->v[i].reads_off + k]);
    for (uint64_t k = 0; k < ndeps; k++) wr32(&w, mg->deps[k]);
    for (uint32_t k = 0; k < no; k++) {
        wr32(&w, gout[k]);
        wr32(&w, mg->outputs[k]);
        wr32(&w, (uint32_t)tp_graph_keep(g, gout[k]));
    }
    for (uint32_t k = 0; k < mg->nkept; k++) wr32(&w, mg->kept[k]);
    unsigned char c[8];
    put64(c, w.sum);
    fwrite(c, 1, 8, f);
    if (ferror(f)) return tp__fail_write(err);
    return TP_OK;
}

/* ---- reader ---- */

typedef struct {
    int fd;
    unsigned char *buf;
    size_t pos, len;
    uint64_t sum, done; /* the checksum so far, and of how many bytes */
    const char *name;
    tp_error *err;
} br;

/* n bytes into dst (checksummed); TP_ERR_PARSE when the file ends first */
static tp_status rd(br *b, void *dst, size_t n)
{
    unsigned char *d = dst;
    while (n) {
        if (b->pos == b->len) {
            ssize_t got;
            do got = read(b->fd, b->buf, 1u << 20);
            while (got < 0 && errno == EINTR);
            if (got < 0) return tp__fail(b->err, TP_ERR_IO, "%s: read error: %s", b->name, strerror(errno));
            if (got == 0) return tp__fail(b->err, TP_ERR_PARSE, "%s: binary MemGraph: truncated", b->name);
            b->pos = 0;
            b->len = (size_t)got;
        }
        size_t k = b->len - b->pos < n ? b->len - b->pos : n;
        memcpy(d, b->buf + b->pos, k);
        b->sum = fnv(b->sum, b->buf + b->pos, k);
        b->done += k;
        b->pos += k;
        d += k;
        n -= k;
    }
    return TP_OK;
}

static tp_status rd32(br *b, uint32_t *v)
{
    unsigned char x[4];
    tp_status s = rd(b, x, 4);
    if (!s) *v = get32(x);
    return s;
}

/* The checksum of fd's first n bytes with FNV_OFFSET_LEGACY (buf: 1 MiB of scratch): read again
 * only when the standard checksum does not match. 0 when they cannot be read. */
static int legacy_sum(int fd, uint64_t n, unsigned char *buf, uint64_t *sum)
{
    uint64_t h = FNV_OFFSET_LEGACY;
    if (lseek(fd, 0, SEEK_SET) != 0) return 0;
    while (n) {
        ssize_t got = read(fd, buf, n < (1u << 20) ? (size_t)n : (size_t)1 << 20);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return 0;
        h = fnv(h, buf, (size_t)got);
        n -= (uint64_t)got;
    }
    *sum = h;
    return 1;
}

/* a + b * c into *acc, 0 on overflow */
static int addmul(uint64_t *acc, uint64_t b, uint64_t c)
{
    uint64_t p;
    return !__builtin_mul_overflow(b, c, &p) && !__builtin_add_overflow(*acc, p, acc);
}

tp_status tp__mg_read_binary(int fd, uint64_t size, const char *name, const tp_graph *tg, tp_memgraph **out,
                             tp_graph **names_out, tp_error *err)
{
    if (lseek(fd, 0, SEEK_SET) != 0) return tp__fail(err, TP_ERR_IO, "%s: cannot seek: %s", name, strerror(errno));
    br b = {fd, malloc(1u << 20), 0, 0, FNV_OFFSET, 0, name, err};
    if (!b.buf) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    tp_memgraph *mg = NULL;
    char *nbuf = NULL, **names = NULL;
    uint32_t *tmap = NULL, *otask = NULL, *ofrom = NULL;
    uint8_t *okeep = NULL;
    tp_status s;
    unsigned char h[HEADER_BYTES];
    if ((s = rd(&b, h, sizeof h))) goto done;
    uint32_t version = get32(h + 8), nd = get32(h + 12), no = get32(h + 56), nk = get32(h + 60);
    uint64_t nv = get64(h + 16), nr = get64(h + 24), ndeps = get64(h + 32), nt = get64(h + 40), nb = get64(h + 48);
    uint64_t host = get64(h + 64), total = get64(h + 72), want = HEADER_BYTES + 8;
    if (version != TP__MGB_VERSION) {
        s = tp__fail(err, TP_ERR_PARSE, "%s: binary MemGraph version %u; this turnip reads version %u", name, version, TP__MGB_VERSION);
        goto done;
    }
    if (nd < 1 || nd > TP_MAX_DEVICES || nv >= UINT32_MAX || nr >= UINT32_MAX || ndeps >= UINT32_MAX || nt >= UINT32_MAX ||
        no >= UINT32_MAX || nk >= UINT32_MAX) {
        s = tp__fail(err, TP_ERR_PARSE, "%s: binary MemGraph: a count in the header is out of range", name);
        goto done;
    }
    if (!addmul(&want, 8, nd) || !addmul(&want, 1, nb) || !addmul(&want, VREC_BYTES, nv) || !addmul(&want, 4, nr) ||
        !addmul(&want, 4, ndeps) || !addmul(&want, 12, no) || !addmul(&want, 4, nk) || want != total || total != size ||
        nb < 4 * nt || nb - 4 * nt > size) {
        s = tp__fail(err, TP_ERR_PARSE, "%s: binary MemGraph: %llu bytes, the header describes %llu (truncated or damaged)", name,
                     (unsigned long long)size, (unsigned long long)(want == total ? total : want));
        goto done;
    }
    mg = tp__mg_alloc();
    if (!mg) goto nomem;
    mg->ndevices = (int)nd;
    mg->host_bytes = host;
    for (uint32_t d = 0; d < nd; d++) {
        unsigned char x[8];
        if ((s = rd(&b, x, 8))) goto done;
        mg->cap[d] = get64(x);
    }
    /* names: nb bytes, each a u32 length and that many bytes */
    nbuf = malloc(nb + 1); /* each name takes len + 1 here, 4 + len in the file */
    names = malloc((nt + 1) * sizeof *names);
    tmap = malloc((nt + 1) * sizeof *tmap);
    if (!nbuf || !names || !tmap) goto nomem;
    uint64_t left = nb;
    char *np = nbuf;
    for (uint64_t t = 0; t < nt; t++) {
        uint32_t len;
        if ((s = rd32(&b, &len))) goto done;
        if (left < 4 || len > left - 4) {
            s = tp__fail(err, TP_ERR_PARSE, "%s: binary MemGraph: task name %llu runs past the names", name, (unsigned long long)t);
            goto done;
        }
        left -= 4 + (uint64_t)len;
        if ((s = rd(&b, np, len))) goto done;
        np[len] = 0;
        if (!len || memchr(np, 0, len)) {
            s = tp__fail(err, TP_ERR_PARSE, "%s: binary MemGraph: task name %llu is empty or holds a NUL byte", name,
                         (unsigned long long)t);
            goto done;
        }
        names[t] = np;
        if (tg) {
            int64_t idx = tp_graph_find(tg, np);
            if (idx < 0) {
                s = tp__fail(err, TP_ERR_INVALID, "%s: task '%s' is not a vertex of the TaskGraph (a plan for another graph?)", name, np);
                goto done;
            }
            tmap[t] = (uint32_t)idx;
        } else {
            tmap[t] = (uint32_t)t;
        }
        np += len + 1;
    }
    if (left) {
        s = tp__fail(err, TP_ERR_PARSE, "%s: binary MemGraph: %llu bytes of names left over", name, (unsigned long long)left);
        goto done;
    }
    mg->v = malloc((nv + 1) * sizeof *mg->v);
    mg->capv = nv + 1;
    free(mg->deps_off);
    mg->deps_off = malloc((nv + 1) * sizeof *mg->deps_off);
    mg->reads = malloc((nr + 1) * sizeof *mg->reads);
    mg->deps = malloc((ndeps + 1) * sizeof *mg->deps);
    mg->kept = nk ? malloc(nk * sizeof *mg->kept) : NULL;
    otask = malloc((no + 1) * sizeof *otask);
    ofrom = malloc((no + 1) * sizeof *ofrom);
    okeep = malloc(no + 1);
    if (!mg->v || !mg->deps_off || !mg->reads || !mg->deps || (nk && !mg->kept) || !otask || !ofrom || !okeep) goto nomem;
    mg->deps_off[0] = 0;
    uint64_t roff = 0, doff = 0;
    for (uint64_t i = 0; i < nv; i++) {
        unsigned char r[VREC_BYTES];
        if ((s = rd(&b, r, sizeof r))) goto done;
        tp__mv *m = &mg->v[i];
        memset(m, 0, sizeof *m);
        uint32_t task = get32(r + 4), nrd = get32(r + 32), ndp = get32(r + 36);
        if (task >= nt || nrd > nr - roff || ndp > ndeps - doff) {
            s = tp__fail(err, TP_ERR_PARSE, "%s: binary MemGraph: vertex %llu: task, reads or deps out of range", name,
                         (unsigned long long)i);
            goto done;
        }
        m->kind = r[0];
        m->space = r[1];
        m->device = (int16_t)get16(r + 2);
        m->task = tmap[task];
        m->inplace = get32(r + 8);
        m->group = (int32_t)get32(r + 12);
        m->offset = get64(r + 16);
        m->bytes = get64(r + 24);
        m->reads_off = (uint32_t)roff;
        m->nreads = nrd;
        roff += nrd;
        doff += ndp;
        mg->deps_off[i + 1] = (uint32_t)doff;
    }
    mg->n = nv;
    mg->nreads = nr;
    if (roff != nr || doff != ndeps) {
        s = tp__fail(err, TP_ERR_PARSE, "%s: binary MemGraph: the vertices' read and dep counts do not add up to the header's", name);
        goto done;
    }
    for (uint64_t k = 0; k < nr; k++)
        if ((s = rd32(&b, &mg->reads[k]))) goto done;
    for (uint64_t k = 0; k < ndeps; k++)
        if ((s = rd32(&b, &mg->deps[k]))) goto done;
    for (uint32_t k = 0; k < no; k++) {
        uint32_t t, keep;
        if ((s = rd32(&b, &t)) || (s = rd32(&b, &ofrom[k])) || (s = rd32(&b, &keep))) goto done;
        if (t >= nt || keep > 1) {
            s = tp__fail(err, TP_ERR_PARSE, "%s: binary MemGraph: outputs[%u]: task or keep out of range", name, k);
            goto done;
        }
        otask[k] = tmap[t];
        okeep[k] = (uint8_t)keep;
    }
    for (uint32_t k = 0; k < nk; k++)
        if ((s = rd32(&b, &mg->kept[k]))) goto done;
    mg->nkept = nk;
    uint64_t sum = b.sum, n = b.done, legacy;
    unsigned char c[8];
    if ((s = rd(&b, c, 8))) goto done;
    if (get64(c) != sum && (!legacy_sum(fd, n, b.buf, &legacy) || get64(c) != legacy)) {
        s = tp__fail(err, TP_ERR_PARSE, "%s: binary MemGraph: checksum mismatch (damaged file)", name);
        goto done;
    }
    for (uint32_t k = 0; k < nk; k++) /* kept: the vertex's task is the kept task (the JSON says it by name) */
        if (mg->kept[k] >= nv) {
            s = tp__fail(err, TP_ERR_INVALID, "%s: kept[%u]: vertex out of range", name, k);
            goto done;
        }
    s = tp__mg_finish(mg, tg, name, (const char *const *)names, nt, otask, &ofrom, okeep, no, names_out, err);
    goto done;
nomem:
    s = tp__fail(err, TP_ERR_NOMEM, "%s: out of memory", name);
done:
    free(b.buf);
    free(nbuf);
    free(names);
    free(tmap);
    free(otask);
    free(ofrom);
    free(okeep);
    if (s) {
        tp_memgraph_free(mg);
        if (names_out && *names_out) {
            tp_graph_free(*names_out);
            *names_out = NULL;
        }
        return s;
    }
    *out = mg;
    return TP_OK;
}
