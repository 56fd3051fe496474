/* jsonpull.h - a pull JSON reader for the TaskGraph and MemGraph readers: values are read one
 * token at a time from a file (a fixed buffer) or a string, so a 10^6-vertex file never exists
 * as a document tree. It accepts exactly RFC 8259 JSON as jansson does with
 * JSON_REJECT_DUPLICATES (UTF-8 checked, no \u0000, duplicate keys rejected in every object,
 * integers within int64, finite reals, nesting at most TP__JP_MAX_DEPTH) and reports a syntax
 * error as "NAME:LINE:COLUMN: not valid JSON: WHAT". Errors are sticky: after the first, every
 * call returns failure and the message stays in the caller's tp_error.
 *
 * Use: tp__jp_open_file / tp__jp_open_mem, then for the top value tp__jp_peek, tp__jp_obj_begin
 * + tp__jp_obj_key (1: a key, its value next; 0: the object ended), tp__jp_arr_begin +
 * tp__jp_arr_next (1: a value next; 0: ended), the scalar readers, tp__jp_skip (any value),
 * tp__jp_finish (only whitespace may follow the top value), tp__jp_close. */
#ifndef TP__JSONPULL_H
#define TP__JSONPULL_H

#include <stddef.h>
#include <stdint.h>
#include "io/util.h"

#define TP__JP_MAX_DEPTH 2048 /* jansson's JSON_PARSER_MAX_DEPTH */

typedef enum tp__jpt {
    TP__JP_ERROR = 0, /* the reader failed (err filled) */
    TP__JP_OBJECT,
    TP__JP_ARRAY,
    TP__JP_STRING,
    TP__JP_NUMBER,
    TP__JP_TRUE,
    TP__JP_FALSE,
    TP__JP_NULL
} tp__jpt;

typedef struct tp__jp {
    int fd;              /* file mode: the descriptor (owned), else -1 */
    const char *p, *end; /* unread bytes of the window */
    char *buf;           /* file mode: the window's buffer (owned) */
    size_t bufcap;
    int eof;             /* file mode: read() returned 0 */
    uint64_t line, col;  /* of the next byte: line from 1, column from 0 (jansson's) */
    const char *name;    /* borrowed: names the source in messages */
    tp_error *err;       /* borrowed */
    int failed;
    char *s;             /* the last string read (NUL-terminated, owned, reused) */
    size_t slen, scap;
    int is_int;          /* the last number: an integer (ival) or a real (dval, ival unset) */
    int64_t ival;
    double dval;
    int depth;
    uint8_t kind[TP__JP_MAX_DEPTH + 1];  /* per open level: '{' or '[' */
    uint8_t first[TP__JP_MAX_DEPTH + 1]; /* per open level: no member read yet */
    size_t keybase[TP__JP_MAX_DEPTH + 1]; /* per open object: its first key in keys */
    char *keys;          /* the keys of every open object, NUL-separated (owned) */
    size_t nkeys, capkeys; /* bytes used */
    size_t *koff;        /* start of each key in keys */
    size_t nkoff, capkoff;
    int recording;       /* tp__jp_record_start: bytes consumed are copied to rec */
    const char *rec_from;
    char *rec;           /* owned */
    size_t nrec, caprec;
} tp__jp;

/* The status of a failed read, for a caller whose own error record the reader filled: its code,
 * or TP_ERR_PARSE when the failure left none. */
static inline tp_status tp__jp_status(const tp_error *err)
{
    return err->code ? err->code : TP_ERR_PARSE;
}

/* Opens path (a regular file, tp__open_regular). On failure nothing needs closing. */
tp_status tp__jp_open_file(tp__jp *jp, const char *path, tp_error *err);
/* Reads text[0..len) (borrowed; must outlive the reader). */
void tp__jp_open_mem(tp__jp *jp, const char *text, size_t len, const char *name, tp_error *err);
void tp__jp_close(tp__jp *jp);

/* The type of the next value (whitespace skipped), or TP__JP_ERROR (syntax error or end). */
tp__jpt tp__jp_peek(tp__jp *jp);
/* Consume '{' / '[' (TP_OK) or fail. */
tp_status tp__jp_obj_begin(tp__jp *jp);
tp_status tp__jp_arr_begin(tp__jp *jp);
/* 1: *key (valid until the next string is read) is the next key and its value follows;
 * 0: '}' consumed; -1: failed. */
int tp__jp_obj_key(tp__jp *jp, const char **key);
/* 1: a value follows; 0: ']' consumed; -1: failed. */
int tp__jp_arr_next(tp__jp *jp);
/* Scalars: TP_OK or failure (a syntax error, or a value of another type: the caller peeks). */
tp_status tp__jp_string(tp__jp *jp, const char **s, size_t *len);
tp_status tp__jp_number(tp__jp *jp); /* sets is_int, ival / dval */
tp_status tp__jp_bool(tp__jp *jp, int *b);
tp_status tp__jp_skip(tp__jp *jp);
/* Reads every remaining value and closes every open level (after a caller's semantic error,
 * so that a syntax error later in the text is reported first, as a tree parser would). */
tp_status tp__jp_drain(tp__jp *jp);
/* After the top value: only whitespace to the end. */
tp_status tp__jp_finish(tp__jp *jp);
/* Copies the text of the next value (after its leading whitespace) into an owned buffer:
 * start before peeking the value's first byte is consumed, stop after it is read; *text is
 * NUL-terminated and valid until the next record_start or close. */
void tp__jp_record_start(tp__jp *jp);
tp_status tp__jp_record_stop(tp__jp *jp, const char **text, size_t *len);
struct json_t;
/* The next value as a jansson tree of its own (*out, the caller's; duplicate keys refused as
 * this reader refuses them): its text is recorded and parsed alone, so a document of many
 * small values is never one tree. TP_ERR_NOMEM when jansson cannot allocate it. */
tp_status tp__jp_tree(tp__jp *jp, struct json_t **out);
/* A syntax error at the current place (sticky). */
tp_status tp__jp_fail(tp__jp *jp, const char *what);

#endif
