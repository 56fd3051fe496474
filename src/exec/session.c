/* session.c - memory kept across executors (issue 11).
 *
 * Design. A session is a backend opened once (tp__backend_ops.open: device arenas of the
 * session's capacities and a host block, zeroed) and closed once (close: freed). Between the
 * two, executors come and go one at a time (tp_exec_new_in): each prepares its plan on the open
 * backend, which only checks that the plan fits the session's memory (the shared bookkeeping
 * is backend/common.h tp__mem), and releasing it stops its threads but keeps the memory. So
 * what one plan left on a device (or in the host block) is still there for the next, whose
 * MemGraph may then name it as a resident input (TP_M_RESIDENT): a vertex with no reads and no
 * deps that the executor completes when a run starts, like an input.
 *
 * This file only keeps the session's record and its one live executor; the executor is made
 * by exec.c (tp__exec_new with the session's slot, which the executor clears when it is
 * freed), so calls go one way: session.c -> exec.c -> the backend. The backend is the
 * authority on whether it is open: it refuses tp_exec_new while a session is open, a second
 * session, and a session while an executor is prepared on it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec/exec_internal.h"
#include "io/util.h"

struct tp_session {
    tp_backend *be;  /* borrowed: outlives the session */
    tp_exec *user;   /* the live executor made in it, NULL if none (tp_exec_free clears it) */
    int nd;                        /* its devices */
    uint64_t cap[TP_MAX_DEVICES];  /* each device arena's bytes */
    uint64_t host_bytes;           /* the host block's */
};

tp_status tp_session_new(tp_backend *be, int ndevices, const uint64_t *device_cap, uint64_t host_bytes, tp_session **out,
                         tp_error *err)
{
    *out = NULL;
    if (!be) return tp__fail(err, TP_ERR_ARG, "session: no backend");
    if (ndevices < 1 || ndevices > TP_MAX_DEVICES)
        return tp__fail(err, TP_ERR_ARG, "session: devices must be 1..%d, not %d", TP_MAX_DEVICES, ndevices);
    if (!device_cap) return tp__fail(err, TP_ERR_ARG, "session: no device capacities");
    if (!be->ops->open || !be->ops->close)
        return tp__fail(err, TP_ERR_ARG, "session: backend %s has no sessions", be->ops->name);
    tp_session *s = calloc(1, sizeof *s);
    if (!s) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    s->be = be;
    s->nd = ndevices;
    memcpy(s->cap, device_cap, (size_t)ndevices * sizeof *device_cap);
    s->host_bytes = host_bytes;
    tp_status st = be->ops->open(be, ndevices, device_cap, host_bytes, err);
    if (st) {
        free(s);
        return st;
    }
    *out = s;
    return TP_OK;
}

void tp_session_free(tp_session *s)
{
    if (!s) return;
    if (s->user) tp__exec_detach(s->user); /* the caller's to free still; it no longer runs */
    s->be->ops->close(s->be);
    free(s);
}

tp_status tp_exec_new_in(tp_session *s, const tp_memgraph *mg, const tp_run_opts *o, tp_exec **out, tp_error *err)
{
    if (!s) return tp__fail(err, TP_ERR_ARG, "session: none given");
    if (s->user)
        return tp__fail(err, TP_ERR_ARG, "session: another executor is using it (one at a time: free that one first)");
    return tp__exec_new(mg, s->be, o, &s->user, out, err);
}

/* the region, checked against the session's memory and its live executor */
static tp_status session_region(const tp_session *s, const tp_region *r, const char *what, tp_error *err)
{
    if (!s) return tp__fail(err, TP_ERR_ARG, "session %s: no session", what);
    if (!r) return tp__fail(err, TP_ERR_ARG, "session %s: no region", what);
    if (s->user)
        return tp__fail(err, TP_ERR_ARG, "session %s: an executor of the session is live (free it first)", what);
    uint64_t lim;
    if (r->space == TP_SPACE_HOST) lim = s->host_bytes;
    else if (r->space == TP_SPACE_DEVICE && r->device >= 0 && r->device < s->nd) lim = s->cap[r->device];
    else
        return tp__fail(err, TP_ERR_ARG, "session %s: no such memory (space %d, device %d; the session has %d devices)",
                        what, (int)r->space, r->device, s->nd);
    if (r->offset > lim || r->bytes > lim - r->offset) {
        char where[32];
        if (r->space == TP_SPACE_HOST) snprintf(where, sizeof where, "the host block");
        else snprintf(where, sizeof where, "device %d", r->device);
        return tp__fail(err, TP_ERR_ARG, "session %s: region [%llu, +%llu) outside %s's %llu bytes", what,
                        (unsigned long long)r->offset, (unsigned long long)r->bytes, where, (unsigned long long)lim);
    }
    return TP_OK;
}

tp_status tp_session_write(tp_session *s, const tp_region *r, const void *src, tp_error *err)
{
    tp_status st = session_region(s, r, "write", err);
    if (st) return st;
    if (!r->bytes) return TP_OK;
    if (!src) return tp__fail(err, TP_ERR_ARG, "session write: no source buffer");
    return s->be->ops->write(s->be, r, src, err);
}

tp_status tp_session_read(tp_session *s, const tp_region *r, void *dst, tp_error *err)
{
    tp_status st = session_region(s, r, "read", err);
    if (st) return st;
    if (!r->bytes) return TP_OK;
    if (!dst) return tp__fail(err, TP_ERR_ARG, "session read: no destination buffer");
    return s->be->ops->read(s->be, r, dst, err);
}

void *tp_session_host(tp_session *s, uint64_t *bytes)
{
    void *p = s && !s->user && s->be->ops->host_block ? s->be->ops->host_block(s->be) : NULL;
    if (bytes) *bytes = p ? s->host_bytes : 0;
    return p;
}

int tp_session_devices(const tp_session *s, uint64_t *cap)
{
    if (!s) return 0;
    if (cap) memcpy(cap, s->cap, (size_t)s->nd * sizeof *cap);
    return s->nd;
}
