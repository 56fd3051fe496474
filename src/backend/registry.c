/* registry.c - backends by name (turnip/backend.h): one entry per backend file. A new backend
 * is one file that defines its tp__backend_entry plus one line here. */
#include <string.h>
#include "backend/common.h"
#include "io/util.h"

extern const tp__backend_entry tp__backend_cpu, tp__backend_sim, tp__backend_cuda;

static const tp__backend_entry *const entries[] = {&tp__backend_cpu, &tp__backend_sim, &tp__backend_cuda};
enum { NENTRIES = sizeof entries / sizeof entries[0] };

int tp_backend_count(void)
{
    return NENTRIES;
}

const tp_backend_info *tp_backend_info_at(int i)
{
    return i >= 0 && i < NENTRIES ? &entries[i]->info : NULL;
}

const tp_backend_info *tp_backend_find(const char *name)
{
    for (int i = 0; i < NENTRIES; i++)
        if (!strcmp(entries[i]->info.name, name)) return &entries[i]->info;
    return NULL;
}

tp_status tp_backend_new(const char *name, const tp_backend_opt *opts, int nopts, tp_backend **out, tp_error *err)
{
    *out = NULL;
    for (int i = 0; i < NENTRIES; i++)
        if (!strcmp(entries[i]->info.name, name)) {
            tp_status s = tp__opt_known(name, entries[i]->info.keys, opts, nopts, err);
            return s ? s : entries[i]->make(opts, nopts, out, err);
        }
    char list[128];
    size_t o = 0;
    for (int i = 0; i < NENTRIES && o < sizeof list; i++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", entries[i]->info.name);
    return tp__fail(err, TP_ERR_ARG, "no backend '%s' (there are: %s)", name, list);
}

void tp_backend_free(tp_backend *be)
{
    if (be) be->ops->destroy(be);
}

const char *tp_backend_name(const tp_backend *be)
{
    return be->ops->name;
}

tp_status tp_backend_fits(tp_backend *be, int nd, const uint64_t *cap, uint64_t host_bytes, tp_error *err)
{
    if (nd < 1 || nd > TP_MAX_DEVICES) return tp__fail(err, TP_ERR_ARG, "backend fits: %d devices (1..%d)", nd, TP_MAX_DEVICES);
    return be->ops->fits ? be->ops->fits(be, nd, cap, host_bytes, err) : TP_OK;
}
