/* harness.h - a tiny test harness in the manner of libuv's: TEST(name) registers a case;
 * the binary runs one case by name (how CTest calls it), or all with no argument.
 * CHECK aborts the case with the file and line; SKIP exits with CTest's skip code 77. */
#ifndef TP_HARNESS_H
#define TP_HARNESS_H
#include <stdio.h>
#include <stdlib.h>

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

/* extra entry point for binaries with subcommands (tests/test_props.c); NULL if none */
extern int (*tpt_main_hook)(int argc, char **argv);
#endif
