/* policy.c - the table of dispatch policies (policy.h) and the ready rings two of them share.
 * A new policy is one file plus one line here. */
#include <stdlib.h>
#include <string.h>
#include "exec/policy.h"
#include "io/util.h"

extern const tp__policy tp__policy_any, tp__policy_fixed, tp__policy_random, tp__policy_priority;

static const tp__policy *const policies[] = {&tp__policy_any, &tp__policy_fixed, &tp__policy_random, &tp__policy_priority};
enum { NPOLICIES = sizeof policies / sizeof policies[0] };

int tp_policy_count(void)
{
    return NPOLICIES;
}

const char *tp_policy_name(int i)
{
    return i >= 0 && i < NPOLICIES ? policies[i]->name : NULL;
}

const char *tp_policy_help(int i)
{
    return i >= 0 && i < NPOLICIES ? policies[i]->help : NULL;
}

const tp__policy *tp__policy_find(const char *name)
{
    if (!name || !*name) return policies[0];
    for (int i = 0; i < NPOLICIES; i++)
        if (!strcmp(name, policies[i]->name)) return policies[i];
    return NULL;
}

tp_status tp_policy_check(const char *name, tp_error *err)
{
    if (tp__policy_find(name)) return TP_OK;
    char list[256];
    size_t o = 0;
    for (int i = 0; i < NPOLICIES && o < sizeof list; i++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i == 0 ? "" : i == NPOLICIES - 1 ? " or " : ", ",
                              policies[i]->name);
    return tp__fail(err, TP_ERR_ARG, "--order must be %s", list);
}

tp_status tp__rings_init(tp__rings *r, const tp__policy_env *env, tp_error *err)
{
    memset(r, 0, sizeof *r);
    r->nq = env->nqueues;
    size_t q = env->nqueues, total = 0;
    r->off = malloc((q + 1) * sizeof *r->off);
    r->cap = malloc((q + 1) * sizeof *r->cap);
    r->head = calloc(q + 1, sizeof *r->head);
    r->count = calloc(q + 1, sizeof *r->count);
    if (r->off) total = tp__queue_offsets(env, r->off);
    r->v = malloc((total + 1) * sizeof *r->v);
    if (!r->off || !r->cap || !r->head || !r->count || !r->v) {
        tp__rings_free(r);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < q; i++) r->cap[i] = env->qsize[i];
    return TP_OK;
}

void tp__rings_reset(tp__rings *r)
{
    memset(r->head, 0, r->nq * sizeof *r->head);
    memset(r->count, 0, r->nq * sizeof *r->count);
}

void tp__rings_push(tp__rings *r, uint32_t q, uint32_t v)
{
    uint32_t tail = r->head[q] + r->count[q];
    if (tail >= r->cap[q]) tail -= r->cap[q];
    r->v[r->off[q] + tail] = v;
    r->count[q]++;
}

uint32_t tp__rings_take(tp__rings *r, uint32_t q, uint32_t k)
{
    if (!r->count[q]) return TP__NONE;
    uint32_t *v = r->v + r->off[q], at = r->head[q];
    if (k) {
        uint32_t j = (at + k) % r->cap[q], t = v[j];
        v[j] = v[at];
        v[at] = t;
    }
    uint32_t out = v[at];
    r->head[q] = at + 1 == r->cap[q] ? 0 : at + 1;
    r->count[q]--;
    return out;
}

void tp__rings_free(tp__rings *r)
{
    free(r->v);
    free(r->off);
    free(r->cap);
    free(r->head);
    free(r->count);
    memset(r, 0, sizeof *r);
}

size_t tp__queue_offsets(const tp__policy_env *env, uint32_t *off)
{
    size_t total = 0;
    for (uint32_t q = 0; q < env->nqueues; q++) {
        off[q] = (uint32_t)total;
        total += env->qsize[q];
    }
    return total;
}
