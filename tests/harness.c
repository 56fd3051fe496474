/* harness.c - runs the registered cases and reports failed assertions (see harness.h). */
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include "harness.h"

/* registrations happen in constructors, before main: kept in a growing array (no limit),
 * and any problem (out of memory, a name registered twice) is reported by main */
static struct tpt_case {
    const char *name;
    tpt_fn fn;
} *tests;
static int ntests, cap_tests;
static const char *register_error;
static const char *register_error_name;
int (*tpt_main_hook)(int argc, char **argv);

void tpt_register(const char *name, tpt_fn fn)
{
    if (register_error) return;
    for (int i = 0; i < ntests; i++) {
        if (!strcmp(tests[i].name, name)) {
            register_error = "registered twice";
            register_error_name = name;
            return;
        }
    }
    if (ntests == cap_tests) {
        int ncap = cap_tests ? 2 * cap_tests : 64;
        struct tpt_case *t = realloc(tests, (size_t)ncap * sizeof *t);
        if (!t) {
            register_error = "out of memory registering";
            register_error_name = name;
            return;
        }
        tests = t;
        cap_tests = ncap;
    }
    tests[ntests].name = name;
    tests[ntests].fn = fn;
    ntests++;
}

int tpt_main(int argc, char **argv)
{
    if (register_error) {
        fprintf(stderr, "harness: test %s: %s\n", register_error_name, register_error);
        return 2;
    }
    if (argc > 1 && !strcmp(argv[1], "--list")) {
        for (int i = 0; i < ntests; i++) puts(tests[i].name);
        return 0;
    }
    if (argc > 1 && tpt_main_hook) {
        int r = tpt_main_hook(argc, argv);
        if (r >= 0) return r;
    }
    int ran = 0;
    for (int i = 0; i < ntests; i++) {
        if (argc > 1 && strcmp(argv[1], tests[i].name)) continue;
        tests[i].fn();
        printf("ok %s\n", tests[i].name);
        ran++;
    }
    if (!ran) {
        fprintf(stderr, "no test named %s\n", argc > 1 ? argv[1] : "(any)");
        return 2;
    }
    return 0;
}

/* ---- typed assertions ---- */

static void int_print(char *buf, size_t n, tpt_int v)
{
    if (v.neg)
        snprintf(buf, n, "%" PRId64, (int64_t)v.bits);
    else
        snprintf(buf, n, "%" PRIu64, v.bits);
}

_Noreturn void tpt_fail_int(const char *file, int line, int op, const char *ea, const char *eb, tpt_int a,
                            tpt_int b)
{
    static const char *const name[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
    static const char *const sym[] = {"==", "!=", "<", "<=", ">", ">="};
    if (op < TPT_EQ || op > TPT_GE) op = TPT_GE;
    char va[32], vb[32];
    int_print(va, sizeof va, a);
    int_print(vb, sizeof vb, b);
    fprintf(stderr, "%s:%d: ASSERT_%s failed: %s %s %s (%s %s %s)\n", file, line, name[op], ea, sym[op], eb, va,
            sym[op], vb);
    exit(1);
}

void tpt_check_str(const char *file, int line, const char *ea, const char *eb, const char *a, const char *b)
{
    if (a && b && !strcmp(a, b)) return;
    fprintf(stderr, "%s:%d: ASSERT_STR_EQ failed: %s == %s (", file, line, ea, eb);
    if (a)
        fprintf(stderr, "\"%s\"", a);
    else
        fputs("NULL", stderr);
    fputs(" == ", stderr);
    if (b)
        fprintf(stderr, "\"%s\"", b);
    else
        fputs("NULL", stderr);
    fputs(")\n", stderr);
    exit(1);
}

void tpt_check_near(const char *file, int line, const char *ea, const char *eb, const char *etol, double a,
                    double b, double tol)
{
    if (fabs(a - b) <= tol) return; /* false for NaN */
    fprintf(stderr, "%s:%d: ASSERT_NEAR failed: |%s - %s| <= %s (|%.17g - %.17g| = %.17g > %.17g)\n", file, line,
            ea, eb, etol, a, b, fabs(a - b), tol);
    exit(1);
}

void tpt_check_status(const char *file, int line, const char *what, const char *ea, const char *eb, tp_status a,
                      tp_status b, const char *msg)
{
    if (a == b) return;
    fprintf(stderr, "%s:%d: %s failed: %s == %s (got %d \"%s\", wanted %d \"%s\")", file, line, what, ea, eb,
            (int)a, tp_status_str(a), (int)b, tp_status_str(b));
    if (msg) fprintf(stderr, ": %s", msg);
    fputc('\n', stderr);
    exit(1);
}

int main(int argc, char **argv)
{
    return tpt_main(argc, argv);
}
