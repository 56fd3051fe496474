/* harness.h - a tiny test harness in the manner of libuv's: TEST(name) registers a case;
 * the binary runs one case by name (how CTest calls it), all with no argument, and prints
 * every registered name with --list (how the registry_* CTest cases compare the binary with
 * what tests/cmake/TpTests.cmake discovered in the sources).
 *
 * Write each TEST(name) on a line of its own (leading blanks allowed), with a lowercase
 * [a-z0-9_] name unique in the build: CMake turns each into one CTest case and stops the
 * configure on anything else.
 *
 * Checks abort the case (exit code 1) with the file, the line and what failed:
 *   CHECK(cond), CHECKF(cond, fmt, ...)        any condition; CHECKF adds a message
 *   ASSERT_EQ/NE/LT/LE/GT/GE(a, b)             integers of any type, compared as
 *                                              mathematical integers (a negative signed
 *                                              value is below every unsigned one); prints
 *                                              both expressions and both values
 *   ASSERT_STR_EQ(a, b)                        strings (NULL fails); prints both
 *   ASSERT_NEAR(a, b, tol)                     doubles, |a - b| <= tol (NaN fails)
 *   ASSERT_OK(expr)                            a tp_status that must be TP_OK
 *   ASSERT_OK_ERR(expr, err)                   the same, also printing err.msg (a tp_error)
 *   ASSERT_STATUS(expr, want)                  a tp_status that must be `want`; prints names
 * Each operand is evaluated exactly once. SKIP exits with CTest's skip code 77. */
#ifndef TP_HARNESS_H
#define TP_HARNESS_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "turnip/error.h"

typedef void (*tpt_fn)(void);
void tpt_register(const char *name, tpt_fn fn);

#define TEST(name)                                                                            \
    static void name(void);                                                                   \
    __attribute__((constructor)) static void reg_##name(void)                                 \
    {                                                                                         \
        tpt_register(#name, name);                                                            \
    }                                                                                         \
    static void name(void)

#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);          \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

#define CHECKF(cond, ...)                                                                     \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);          \
            fprintf(stderr, __VA_ARGS__);                                                     \
            fputc('\n', stderr);                                                              \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

#define SKIP(msg)                                                                             \
    do {                                                                                      \
        fprintf(stderr, "skipped: %s\n", msg);                                                \
        exit(77);                                                                             \
    } while (0)

/* ---- typed assertions (implementation in harness.c) ---- */

/* an integer of any C integer type, kept exactly: neg says the value is below zero, and
 * then bits holds it as int64_t */
typedef struct tpt_int {
    int neg;
    uint64_t bits;
} tpt_int;
static inline tpt_int tpt_int_s(int64_t v)
{
    tpt_int r = {v < 0, (uint64_t)v};
    return r;
}
static inline tpt_int tpt_int_u(uint64_t v)
{
    tpt_int r = {0, v};
    return r;
}
/* selected for a floating operand of an integer ASSERT: the call then fails to compile */
tpt_int tpt_floating_operand_use_ASSERT_NEAR(void);

#define TPT_INT(x)                                                                            \
    _Generic((x),                                                                             \
        _Bool: tpt_int_u,                                                                     \
        unsigned char: tpt_int_u,                                                             \
        unsigned short: tpt_int_u,                                                            \
        unsigned int: tpt_int_u,                                                              \
        unsigned long: tpt_int_u,                                                             \
        unsigned long long: tpt_int_u,                                                        \
        float: tpt_floating_operand_use_ASSERT_NEAR,                                          \
        double: tpt_floating_operand_use_ASSERT_NEAR,                                         \
        long double: tpt_floating_operand_use_ASSERT_NEAR,                                    \
        default: tpt_int_s)(x)

enum { TPT_EQ, TPT_NE, TPT_LT, TPT_LE, TPT_GT, TPT_GE };
/* whether `a op b` holds, as mathematical integers (inline: checks run in hot loops) */
static inline int tpt_int_holds(int op, tpt_int a, tpt_int b)
{
    int c;
    if (a.neg != b.neg)
        c = a.neg ? -1 : 1;
    else if (a.neg)
        c = (int64_t)a.bits < (int64_t)b.bits ? -1 : (int64_t)a.bits > (int64_t)b.bits;
    else
        c = a.bits < b.bits ? -1 : a.bits > b.bits;
    switch (op) {
    case TPT_EQ: return c == 0;
    case TPT_NE: return c != 0;
    case TPT_LT: return c < 0;
    case TPT_LE: return c <= 0;
    case TPT_GT: return c > 0;
    default: return c >= 0;
    }
}
/* prints the failure and exits */
_Noreturn void tpt_fail_int(const char *file, int line, int op, const char *ea, const char *eb, tpt_int a,
                            tpt_int b);
void tpt_check_str(const char *file, int line, const char *ea, const char *eb, const char *a, const char *b);
void tpt_check_near(const char *file, int line, const char *ea, const char *eb, const char *etol, double a,
                    double b, double tol);
void tpt_check_status(const char *file, int line, const char *what, const char *ea, const char *eb, tp_status a,
                      tp_status b, const char *msg);

#define TPT_CMP(op, a, b)                                                                     \
    do {                                                                                      \
        tpt_int tpt_a_ = TPT_INT(a), tpt_b_ = TPT_INT(b);                                     \
        if (!tpt_int_holds(op, tpt_a_, tpt_b_))                                               \
            tpt_fail_int(__FILE__, __LINE__, op, #a, #b, tpt_a_, tpt_b_);                     \
    } while (0)
#define ASSERT_EQ(a, b) TPT_CMP(TPT_EQ, a, b)
#define ASSERT_NE(a, b) TPT_CMP(TPT_NE, a, b)
#define ASSERT_LT(a, b) TPT_CMP(TPT_LT, a, b)
#define ASSERT_LE(a, b) TPT_CMP(TPT_LE, a, b)
#define ASSERT_GT(a, b) TPT_CMP(TPT_GT, a, b)
#define ASSERT_GE(a, b) TPT_CMP(TPT_GE, a, b)

#define ASSERT_STR_EQ(a, b)                                                                   \
    do {                                                                                      \
        tpt_check_str(__FILE__, __LINE__, #a, #b, (a), (b));                                  \
    } while (0)

#define ASSERT_NEAR(a, b, tol)                                                                \
    do {                                                                                      \
        tpt_check_near(__FILE__, __LINE__, #a, #b, #tol, (a), (b), (tol));                    \
    } while (0)

#define ASSERT_OK(expr)                                                                       \
    do {                                                                                      \
        tpt_check_status(__FILE__, __LINE__, "ASSERT_OK", #expr, "TP_OK", (expr), TP_OK, NULL); \
    } while (0)

/* `err` is a tp_error (not a pointer); its message is printed only on failure, when the
 * call has filled it */
#define ASSERT_OK_ERR(expr, err)                                                              \
    do {                                                                                      \
        tp_status tpt_s_ = (expr);                                                            \
        tpt_check_status(__FILE__, __LINE__, "ASSERT_OK_ERR", #expr, "TP_OK", tpt_s_, TP_OK,  \
                         tpt_s_ == TP_OK ? NULL : (err).msg);                                 \
    } while (0)

#define ASSERT_STATUS(expr, want)                                                             \
    do {                                                                                      \
        tpt_check_status(__FILE__, __LINE__, "ASSERT_STATUS", #expr, #want, (expr), (want), NULL); \
    } while (0)

/* what main does (exposed for tests/test_harness.c): --list, a hook, one case or all */
int tpt_main(int argc, char **argv);

/* extra entry point for binaries with subcommands (tests/test_props.c); NULL if none */
extern int (*tpt_main_hook)(int argc, char **argv);
#endif
