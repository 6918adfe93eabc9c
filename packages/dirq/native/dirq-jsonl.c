/*
 * dirq_jsonl: the rows of a piece of a JSON Lines file inside SQLite, so that a table build
 * inserts a piece with one `INSERT ... SELECT` and no value passes through JavaScript.
 *
 * dirq_jsonl_keys(piece, named, elements)
 *   The keys the piece's rows bring, in first-seen order, one spelling per name as SQLite
 *   compares them (ASCII case ignored), joined by U+001F; of the names in `named` (folded,
 *   joined by U+001F) only, or all keys when `named` is NULL. NULL when the piece holds
 *   anything this reader leaves to the JavaScript one (src/parse/formats/json-rows.ts), which
 *   then reads the piece and names its errors:
 *   a line that is not exactly one JSON object, nesting past 512 levels, a key written with an
 *   escape, a key that is an array index or holds U+001F, two keys of one line that name one
 *   column, a nested array or object under a key that is kept, a string with a lone surrogate.
 *
 * SELECT c0, c1, ... FROM dirq_jsonl(piece, columns, flags, named [, cuts])
 *   One row per line that holds an object (blank lines are skipped), value `i` the value of
 *   the key naming column `i` of `columns` (folded, joined by U+001F), or NULL. Values are
 *   stored as the JavaScript reader stores them (src/parse/exact-json.ts): an integer literal
 *   an INTEGER while it fits in 64 bits, else the nearest REAL; any other number a REAL; true
 *   and false 1 and 0; a string its text. Call it on a piece dirq_jsonl_keys accepted, or
 *   with FLAG_CHECKED on any piece: then it also does what dirq_jsonl_keys would (the keys of
 *   `named`, all keys when NULL) and fails, naming no line, where dirq_jsonl_keys would give
 *   NULL or a key that is not one of `columns`: the caller then undoes the rows inserted and
 *   takes the long way. One parse instead of two for every piece that brings no new key.
 *
 * dirq_json_array_scan(bytes, state)
 *   Where a large JSON array's bytes may be cut after whole elements: the scan
 *   src/parse/formats/json-array-stream.ts makes in JavaScript where this extension is not,
 *   on from `state` (how the scan of the bytes before ended: the depth, 1 inside the top array,
 *   plus SCAN_IN_STRING and SCAN_ESCAPED). A text of four integers separated by spaces: the
 *   offset of the last comma between two elements of the top array, or -1; the offset of the
 *   `]` or `}` that closes the top array, or -1 (the scan stops there); how many commas between
 *   two elements it passed; the state after the bytes scanned; then, when dirq_jsonl parses
 *   on threads, the offsets of commas between two elements about a range's size apart (where
 *   dirq_jsonl may cut the elements, given as its `cuts`). NULL when a bracket nests
 *   deeper than 512 levels. Only quotes, backslashes, brackets and commas count: the elements'
 *   syntax is for the parser to check.
 *
 * `piece` is UTF-8 (checked by the caller, byte-order mark left out); only lines that end in a
 * newline are read, as the JavaScript reader leaves a last line without one unread. With
 * `elements` 1 (FLAG_ELEMENTS in `flags`), the piece is instead some whole elements of a JSON array of objects, separated
 * by commas (src/parse/formats/json-array-stream.ts), each element a record as a line is;
 * `cuts` (NULL, or offsets separated by spaces) says at which of its commas to cut it into
 * ranges for the threads, from dirq_json_array_scan's scan (else dirq_jsonl scans it again).
 */
#define _GNU_SOURCE
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define DECLARED_COLUMNS 1995 /* SQLite's 2,000 columns less the five arguments */
#define MAX_DEPTH 512
#define SEPARATOR '\x1f'
#define FLAG_ELEMENTS 1
#define FLAG_CHECKED 2

/* In dirq-csv.c: number literals read as JavaScript's Number and BigInt read them. */
double dirq_literal_double(const unsigned char *s, int n);
int dirq_literal_int64(const unsigned char *s, int n, sqlite3_int64 *value);
/* In dirq-fs.c: connecting and disconnecting a table that reads only its arguments. */
int dirq_connect_innocuous(sqlite3 *db, const char *schema, sqlite3_vtab **table);
int dirq_disconnect(sqlite3_vtab *table);

enum { KIND_NULL, KIND_TEXT, KIND_INTEGER, KIND_REAL };

typedef struct {
  int kind;
  union {
    sqlite3_int64 integer;
    double real;
    struct {
      int start, length, decoded;
    } text;
  } as;
} Value;

/* A list of names: pointers into a separated text, with their lengths. */
typedef struct {
  const unsigned char **names;
  int *lengths;
  int count;
} Names;

typedef struct {
  const unsigned char *s;
  int at, end;
  /* Decoded strings go here (never longer than the piece). */
  unsigned char *decoded;
  int decoded_used;
  /* Records are a JSON array's elements (separated by commas), not lines. */
  int elements;
  int records;
} Parser;

static int is_space(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Most calls find no space at all (compact JSON): that case costs one comparison. */
static inline void skip_spaces(Parser *p) {
  if (p->at < p->end && p->s[p->at] > ' ') return;
  while (p->at < p->end && is_space(p->s[p->at])) p->at++;
}

static int lower(unsigned char c) {
  return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static int same_name(const unsigned char *a, int an, const unsigned char *b, int bn) {
  if (an != bn) return 0;
  /* Most keys are spelled as their column is. */
  if (memcmp(a, b, (size_t)an) == 0) return 1;
  for (int i = 0; i < an; i++)
    if (lower(a[i]) != lower(b[i])) return 0;
  return 1;
}

/* The index of the name `s` (ASCII case ignored) in `names`, or -1. */
static int find_name(const Names *names, const unsigned char *s, int n) {
  for (int i = 0; i < names->count; i++)
    if (same_name(names->names[i], names->lengths[i], s, n)) return i;
  return -1;
}

static int hex(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') return (c | 0x20) - 'a' + 10;
  return -1;
}

static int read_hex4(Parser *p, int at) {
  if (at + 4 > p->end) return -1;
  int value = 0;
  for (int i = 0; i < 4; i++) {
    int digit = hex(p->s[at + i]);
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

static void put_utf8(Parser *p, unsigned int code) {
  unsigned char *out = p->decoded + p->decoded_used;
  if (code < 0x80) {
    out[0] = (unsigned char)code;
    p->decoded_used += 1;
  } else if (code < 0x800) {
    out[0] = (unsigned char)(0xc0 | (code >> 6));
    out[1] = (unsigned char)(0x80 | (code & 0x3f));
    p->decoded_used += 2;
  } else if (code < 0x10000) {
    out[0] = (unsigned char)(0xe0 | (code >> 12));
    out[1] = (unsigned char)(0x80 | ((code >> 6) & 0x3f));
    out[2] = (unsigned char)(0x80 | (code & 0x3f));
    p->decoded_used += 3;
  } else {
    out[0] = (unsigned char)(0xf0 | (code >> 18));
    out[1] = (unsigned char)(0x80 | ((code >> 12) & 0x3f));
    out[2] = (unsigned char)(0x80 | ((code >> 6) & 0x3f));
    out[3] = (unsigned char)(0x80 | (code & 0x3f));
    p->decoded_used += 4;
  }
}

/* One escape after a backslash at `p->at`, decoded when `decode`; 0 when it is not one. */
static int read_escape(Parser *p, int decode, int *lone_surrogate) {
  if (p->at + 1 >= p->end) return 0;
  unsigned char c = p->s[p->at + 1];
  const char *simple = strchr("\"\\/bfnrt", c);
  if (c != 0 && simple != NULL) {
    static const char out[] = "\"\\/\b\f\n\r\t";
    if (decode) p->decoded[p->decoded_used++] = (unsigned char)out[simple - "\"\\/bfnrt"];
    p->at += 2;
    return 1;
  }
  if (c != 'u') return 0;
  int code = read_hex4(p, p->at + 2);
  if (code < 0) return 0;
  p->at += 6;
  if (code >= 0xd800 && code <= 0xdbff && p->at + 1 < p->end && p->s[p->at] == '\\' &&
      p->s[p->at + 1] == 'u') {
    int low = read_hex4(p, p->at + 2);
    if (low >= 0xdc00 && low <= 0xdfff) {
      p->at += 6;
      if (decode) put_utf8(p, 0x10000 + ((unsigned)(code - 0xd800) << 10) + (low - 0xdc00));
      return 1;
    }
  }
  if (code >= 0xd800 && code <= 0xdfff) *lone_surrogate = 1;
  else if (decode) put_utf8(p, (unsigned)code);
  return 1;
}

/* Whether a byte ends a string's plain run: its closing quote, an escape, a control character. */
static inline int string_stop(unsigned char c) {
  return c == '"' || c == '\\' || c < 0x20;
}

/*
 * The first byte from `at` (before `end`) that ends a string's plain run, or `end`. Many bytes
 * at a time (sixteen with SSE2, eight where the machine is little-endian): strings are most of
 * a JSON Lines file's bytes, and a byte-by-byte loop made them most of its parse time.
 */
static inline int string_run_end(const unsigned char *s, int at, int end) {
#if defined(__SSE2__)
  /* Sixteen at a time where SSE2 is (every x86-64). */
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
  const __m128i control = _mm_set1_epi8(0x1f);
  while (end - at >= 16) {
    __m128i bytes = _mm_loadu_si128((const __m128i *)(s + at));
    __m128i found = _mm_or_si128(_mm_cmpeq_epi8(bytes, quote), _mm_cmpeq_epi8(bytes, backslash));
    /* Unsigned: a byte at most 0x1f is its own minimum with 0x1f. */
    found = _mm_or_si128(found, _mm_cmpeq_epi8(_mm_min_epu8(bytes, control), bytes));
    int mask = _mm_movemask_epi8(found);
    if (mask != 0) return at + __builtin_ctz((unsigned)mask);
    at += 16;
  }
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
  while (end - at >= 8) {
    uint64_t word;
    memcpy(&word, s + at, 8);
    uint64_t quote = word ^ (ones * '"'), backslash = word ^ (ones * '\\');
    /* A byte that is zero (or below 0x20) sets its high bit here; the lowest set one is exact. */
    uint64_t found = ((quote - ones) & ~quote) | ((backslash - ones) & ~backslash) |
                     ((word - ones * 0x20) & ~word);
    found &= highs;
    if (found != 0) return at + (__builtin_ctzll(found) >> 3);
    at += 8;
  }
#endif
  while (at < end && !string_stop(s[at])) at++;
  return at;
}

/*
 * A string at `p->at` (its opening quote). With `value`, its text is kept (decoded when it has
 * escapes); `escapes` tells whether it had any. 0 when it is not a valid JSON string, or (with
 * `value`) holds a lone surrogate.
 */
static int read_string(Parser *p, Value *value, int *escapes) {
  int start = ++p->at;
  int decoded_start = p->decoded_used;
  int lone = 0;
  *escapes = 0;
  /* Most strings hold no escape: their closing quote ends the first run. */
  int first = string_run_end(p->s, start, p->end);
  if (first < p->end && p->s[first] == '"') {
    p->at = first + 1;
    if (value != NULL) {
      value->kind = KIND_TEXT;
      value->as.text.start = start;
      value->as.text.length = first - start;
      value->as.text.decoded = 0;
    }
    return 1;
  }
  for (;;) {
    int stop = string_run_end(p->s, p->at, p->end);
    if (*escapes && value != NULL) {
      memcpy(p->decoded + p->decoded_used, p->s + p->at, (size_t)(stop - p->at));
      p->decoded_used += stop - p->at;
    }
    p->at = stop;
    if (p->at >= p->end) return 0;
    unsigned char c = p->s[p->at];
    if (c == '"') break;
    if (c < 0x20) return 0;
    /* A backslash. */
    if (!*escapes && value != NULL) {
      /* The text so far goes to the decoded buffer first. */
      memcpy(p->decoded + p->decoded_used, p->s + start, (size_t)(p->at - start));
      p->decoded_used += p->at - start;
    }
    *escapes = 1;
    if (!read_escape(p, value != NULL, &lone)) return 0;
  }
  int end = p->at++;
  if (value == NULL) return 1;
  if (lone) return 0;
  value->kind = KIND_TEXT;
  if (*escapes) {
    value->as.text.start = decoded_start;
    value->as.text.length = p->decoded_used - decoded_start;
    value->as.text.decoded = 1;
  } else {
    value->as.text.start = start;
    value->as.text.length = end - start;
    value->as.text.decoded = 0;
  }
  return 1;
}

static int is_digit(unsigned char c) {
  return c >= '0' && c <= '9';
}

/* A number literal as RFC 8259 writes one; its value into `value` when given. */
static int read_number(Parser *p, Value *value) {
  int start = p->at, at = p->at, integer = 1;
  if (at < p->end && p->s[at] == '-') at++;
  if (at < p->end && p->s[at] == '0') at++;
  else if (at < p->end && p->s[at] >= '1' && p->s[at] <= '9')
    while (at < p->end && is_digit(p->s[at])) at++;
  else return 0;
  if (at < p->end && p->s[at] == '.') {
    integer = 0;
    if (++at >= p->end || !is_digit(p->s[at])) return 0;
    while (at < p->end && is_digit(p->s[at])) at++;
  }
  if (at < p->end && (p->s[at] == 'e' || p->s[at] == 'E')) {
    integer = 0;
    at++;
    if (at < p->end && (p->s[at] == '+' || p->s[at] == '-')) at++;
    if (at >= p->end || !is_digit(p->s[at])) return 0;
    while (at < p->end && is_digit(p->s[at])) at++;
  }
  p->at = at;
  if (value == NULL) return 1;
  const unsigned char *text = p->s + start;
  if (integer && dirq_literal_int64(text, at - start, &value->as.integer)) {
    value->kind = KIND_INTEGER;
  } else {
    value->kind = KIND_REAL;
    value->as.real = dirq_literal_double(text, at - start);
  }
  return 1;
}

static int read_word(Parser *p, const char *word) {
  int n = (int)strlen(word);
  if (p->end - p->at < n || memcmp(p->s + p->at, word, (size_t)n) != 0) return 0;
  p->at += n;
  return 1;
}

static int skip_value(Parser *p, int depth);

/* An array or object at `p->at`, skipped; `depth` is its own level. */
static int skip_nested(Parser *p, int depth) {
  if (depth > MAX_DEPTH) return 0;
  unsigned char close = p->s[p->at] == '[' ? ']' : '}';
  p->at++;
  skip_spaces(p);
  if (p->at < p->end && p->s[p->at] == close) {
    p->at++;
    return 1;
  }
  for (;;) {
    if (close == '}') {
      int escapes;
      if (p->at >= p->end || p->s[p->at] != '"' || !read_string(p, NULL, &escapes)) return 0;
      skip_spaces(p);
      if (p->at >= p->end || p->s[p->at] != ':') return 0;
      p->at++;
      skip_spaces(p);
    }
    if (!skip_value(p, depth)) return 0;
    skip_spaces(p);
    if (p->at >= p->end) return 0;
    if (p->s[p->at] == close) {
      p->at++;
      return 1;
    }
    if (p->s[p->at] != ',') return 0;
    p->at++;
    skip_spaces(p);
  }
}

/* Any JSON value at `p->at` (spaces before it already skipped), checked and skipped. */
static int skip_value(Parser *p, int depth) {
  if (p->at >= p->end) return 0;
  unsigned char c = p->s[p->at];
  int escapes;
  if (c == '"') return read_string(p, NULL, &escapes);
  if (c == '[' || c == '{') return skip_nested(p, depth + 1);
  if (c == 't') return read_word(p, "true");
  if (c == 'f') return read_word(p, "false");
  if (c == 'n') return read_word(p, "null");
  return read_number(p, NULL);
}

/* A kept value: a string, number or literal; 0 for a nested one (or an invalid one). */
static int read_value(Parser *p, Value *value) {
  if (p->at >= p->end) return 0;
  unsigned char c = p->s[p->at];
  int escapes;
  if (c == '"') return read_string(p, value, &escapes);
  if (c == 't' || c == 'f') {
    value->kind = KIND_INTEGER;
    value->as.integer = c == 't';
    return read_word(p, c == 't' ? "true" : "false");
  }
  if (c == 'n') {
    value->kind = KIND_NULL;
    return read_word(p, "null");
  }
  if (c == '[' || c == '{') return 0;
  return read_number(p, value);
}

/* Whether a key is one JavaScript orders first (an array index), or names dirq's own. */
static int key_left_to_javascript(const unsigned char *s, int n) {
  int index = n > 0 && n <= 10;
  for (int i = 0; index && i < n; i++) index = is_digit(s[i]);
  if (index && (n == 1 || s[0] != '0')) {
    unsigned long long number = 0;
    for (int i = 0; i < n; i++) number = number * 10 + (unsigned)(s[i] - '0');
    if (number < 4294967295ULL) return 1;
  }
  /* A key holding U+001F: read_string already refused it (a control character unescaped). */
  return 0;
}

static int is_own_name(const unsigned char *s, int n) {
  return n >= 6 && s[0] == '_' && same_name(s, 6, (const unsigned char *)"_dirq_", 6);
}

/*
 * One record's object (at `p->at`, up to `p->end`): each key in `wanted` (or every key when
 * `wanted` is NULL) is handed to `take` with its value. 0 when the record is left to
 * JavaScript. A line must hold nothing else; an element ends at its `}`.
 */
typedef int (*TakeKey)(void *context, const unsigned char *key, int n, Value *value);

static int read_record(Parser *p, const Names *wanted, TakeKey take, void *context) {
  if (p->s[p->at] != '{') return 0;
  p->at++;
  skip_spaces(p);
  if (p->at < p->end && p->s[p->at] == '}') {
    p->at++;
  } else {
    for (;;) {
      int escapes;
      Value key;
      if (p->at >= p->end || p->s[p->at] != '"') return 0;
      int saved = p->decoded_used;
      if (!read_string(p, &key, &escapes) || escapes) return 0;
      p->decoded_used = saved;
      const unsigned char *name = p->s + key.as.text.start;
      int n = key.as.text.length;
      if (key_left_to_javascript(name, n)) return 0;
      skip_spaces(p);
      if (p->at >= p->end || p->s[p->at] != ':') return 0;
      p->at++;
      skip_spaces(p);
      int kept = !is_own_name(name, n) && (wanted == NULL || find_name(wanted, name, n) >= 0);
      if (kept) {
        Value value;
        if (!read_value(p, &value) || !take(context, name, n, &value)) return 0;
      } else if (!skip_value(p, 1)) {
        return 0;
      }
      skip_spaces(p);
      if (p->at >= p->end) return 0;
      if (p->s[p->at] == '}') {
        p->at++;
        break;
      }
      if (p->s[p->at] != ',') return 0;
      p->at++;
      skip_spaces(p);
    }
  }
  if (p->elements) return 1;
  skip_spaces(p);
  return p->at == p->end;
}

/* The names of a U+001F-separated text (NULL: none); 0 when out of memory. */
static int split_names(const unsigned char *text, int bytes, Names *names) {
  names->count = 0;
  names->names = NULL;
  names->lengths = NULL;
  if (text == NULL) return 1;
  int count = 1;
  for (int i = 0; i < bytes; i++) count += text[i] == SEPARATOR;
  if (bytes == 0) count = 0;
  names->names = sqlite3_malloc64(sizeof(char *) * (sqlite3_uint64)(count + 1));
  names->lengths = sqlite3_malloc64(sizeof(int) * (sqlite3_uint64)(count + 1));
  if (names->names == NULL || names->lengths == NULL) return 0;
  int start = 0;
  for (int i = 0; i <= bytes && count > 0; i++) {
    if (i == bytes || text[i] == SEPARATOR) {
      names->names[names->count] = text + start;
      names->lengths[names->count++] = i - start;
      start = i + 1;
    }
  }
  return 1;
}

static void free_names(Names *names) {
  sqlite3_free(names->names);
  sqlite3_free(names->lengths);
}

/*
 * Finds the next record from `*next`: a line that is not blank (`p->at`..`p->end`, and
 * `*next` moves past its newline), or an element after the comma that follows the last one
 * (`p->end` the piece's end; the caller moves `*next` past it). 1 found, 0 at the end, -1 for
 * elements that are not separated by one comma (a missing element).
 */
static int next_record(Parser *p, int bytes, int *next) {
  if (p->elements) {
    p->at = *next;
    p->end = bytes;
    skip_spaces(p);
    if (p->records > 0) {
      if (p->at == bytes) return 0;
      if (p->s[p->at] != ',') return -1;
      p->at++;
      skip_spaces(p);
    }
    if (p->at == bytes) return -1;
    p->records++;
    return 1;
  }
  for (;;) {
    int start = *next;
    const unsigned char *newline =
        start < bytes ? memchr(p->s + start, '\n', (size_t)(bytes - start)) : NULL;
    if (newline == NULL) return 0;
    p->at = start;
    p->end = (int)(newline - p->s);
    *next = p->end + 1;
    skip_spaces(p);
    if (p->at < p->end) return 1;
  }
}

/* Calls `record` for each record of the piece; 0 at the first that returns 0 (or is amiss). */
static int each_record(Parser *p, int bytes, int (*record)(Parser *p, void *context),
                       void *context) {
  int next = 0;
  for (;;) {
    int found = next_record(p, bytes, &next);
    if (found <= 0) return found == 0;
    if (!record(p, context)) return 0;
    if (p->elements) next = p->at;
  }
}

/*
 * Whether `n` bytes are UTF-8 as Node's `isUtf8` has it (no overlong form, no surrogate,
 * nothing past U+10FFFF). ASCII, most of the bytes, is passed eight at a time.
 */
static int valid_utf8(const unsigned char *s, int n) {
  int i = 0;
  while (i < n) {
    if (n - i >= 8) {
      uint64_t word;
      memcpy(&word, s + i, 8);
      if ((word & 0x8080808080808080ULL) == 0) {
        i += 8;
        continue;
      }
    }
    unsigned char c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    int more;
    unsigned char low = 0x80, high = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) more = 1;
    else if (c >= 0xe0 && c <= 0xef) {
      more = 2;
      if (c == 0xe0) low = 0xa0;
      if (c == 0xed) high = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      more = 3;
      if (c == 0xf0) low = 0x90;
      if (c == 0xf4) high = 0x8f;
    } else return 0;
    if (n - i <= more) return 0;
    if (s[i + 1] < low || s[i + 1] > high) return 0;
    for (int k = 2; k <= more; k++)
      if (s[i + k] < 0x80 || s[i + k] > 0xbf) return 0;
    i += more + 1;
  }
  return 1;
}

/* ---- Ranges: a piece split at line ends, parsed side by side ------------------------------ */

/*
 * A piece of lines is split into ranges that end at a newline, parsed on threads beside
 * SQLite's: for dirq_jsonl_keys one range per thread; for dirq_jsonl ranges of RANGE_BYTES,
 * which a helper thread parses ahead while SQLite inserts the rows of those already parsed
 * (the inserts and the parse share the cores). A JSON array's elements are cut the same way
 * for dirq_jsonl, at a comma between two elements (cut_element_ranges), and are one range for
 * dirq_jsonl_keys. DIRQ_JSONL_THREADS (helper threads, 0 for none) and
 * DIRQ_JSONL_RANGE_BYTES set both for tests that compare the two ways on small files.
 */
#define RANGE_BYTES (128 * 1024)
#define MOST_THREADS 3
#define MOST_RANGES 4096

typedef struct {
  int threads;
  int range_bytes;
} Split;

static Split split_settings(void) {
  static int threads = -1, range_bytes = RANGE_BYTES;
  if (threads < 0) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int count = cores > 1 ? (int)(cores - 1) : 0;
    if (count > MOST_THREADS) count = MOST_THREADS;
    const char *set = getenv("DIRQ_JSONL_THREADS");
    if (set != NULL && *set != '\0') count = atoi(set) < 0 ? 0 : atoi(set);
    if (count > MOST_THREADS) count = MOST_THREADS;
    /* Threads need SQLite's allocator to be thread-safe (dirq_literal_double uses it). */
    if (!sqlite3_threadsafe()) count = 0;
    const char *bytes = getenv("DIRQ_JSONL_RANGE_BYTES");
    if (bytes != NULL && atoi(bytes) > 0) range_bytes = atoi(bytes);
    threads = count;
  }
  Split split = {threads, range_bytes};
  return split;
}

/*
 * Cuts `bytes` of lines into at most `most` ranges of about `bytes / most` each, every one but
 * the last ending after a newline: their ends into `ends`; how many.
 */
static int cut_ranges(const unsigned char *s, int bytes, int most, int *ends) {
  int count = 0, from = 0;
  for (int k = 1; k < most && from < bytes; k++) {
    sqlite3_int64 target = (sqlite3_int64)bytes * k / most;
    if (target <= from) continue;
    const unsigned char *newline = memchr(s + target - 1, '\n', (size_t)(bytes - target + 1));
    if (newline == NULL) break;
    int end = (int)(newline - s) + 1;
    if (end >= bytes) break;
    ends[count++] = end;
    from = end;
  }
  ends[count++] = bytes;
  return count;
}

/* ---- A JSON array's cuts: commas between two elements ---------------------------------- */

#define SCAN_DEPTH 0xffff
#define SCAN_IN_STRING (1 << 16)
#define SCAN_ESCAPED (1 << 17)

typedef struct {
  int depth; /* 1 inside the top array */
  int in_string, escaped;
  int last_comma; /* the last comma between two elements of the top array, or -1 */
  int closed_at;  /* the top array's `]`, or -1 */
  int commas;     /* commas between two elements passed */
  /*
   * With `every` > 0, the commas between two elements at least `every` bytes apart go into
   * `marks` (at most `mark_room`): where dirq_jsonl may cut the elements into ranges, found
   * by this scan so that no second one is needed.
   */
  int every, next_mark;
  int *marks;
  int mark_count, mark_room;
} ArrayScan;

/*
 * Scans s[at, to) on from `scan`, up to the top array's end, or to the first comma between two
 * elements at `stop` or after; 0 when a bracket nests deeper than MAX_DEPTH. A string's bytes
 * are skipped many at a time (string_run_end): they are most of the bytes.
 */
static int scan_array(const unsigned char *s, int at, int to, ArrayScan *scan, int stop) {
  while (at < to) {
    if (scan->in_string) {
      if (scan->escaped) {
        scan->escaped = 0;
        at++;
        continue;
      }
      at = string_run_end(s, at, to);
      if (at >= to) break;
      /* A raw control character is the parser's error, not the end of the string. */
      if (s[at] == '"') scan->in_string = 0;
      else if (s[at] == '\\') scan->escaped = 1;
      at++;
      continue;
    }
    unsigned char c = s[at];
    if (c == '"') {
      scan->in_string = 1;
    } else if (c == '[' || c == '{') {
      if (++scan->depth > MAX_DEPTH) return 0;
    } else if (c == ']' || c == '}') {
      if (--scan->depth == 0) {
        scan->closed_at = at;
        return 1;
      }
    } else if (c == ',' && scan->depth == 1) {
      scan->last_comma = at;
      scan->commas++;
      if (scan->every > 0 && at >= scan->next_mark && scan->mark_count < scan->mark_room) {
        scan->marks[scan->mark_count++] = at;
        scan->next_mark = at + scan->every;
      }
      if (at >= stop) return 1;
    }
    at++;
  }
  return 1;
}

static void json_array_scan(sqlite3_context *context, int argc, sqlite3_value **argv) {
  (void)argc;
  int bytes = sqlite3_value_bytes(argv[0]);
  const unsigned char *s = sqlite3_value_blob(argv[0]);
  sqlite3_int64 state = sqlite3_value_int64(argv[1]);
  ArrayScan scan = {(int)(state & SCAN_DEPTH), (state & SCAN_IN_STRING) != 0,
                    (state & SCAN_ESCAPED) != 0, -1, -1, 0, 0, 0, NULL, 0, 0};
  Split split = split_settings();
  if (split.threads > 0) {
    scan.every = scan.next_mark = split.range_bytes;
    scan.mark_room = bytes / split.range_bytes + 1;
    if (scan.mark_room > MOST_RANGES) scan.mark_room = MOST_RANGES;
    scan.marks = sqlite3_malloc64(sizeof(int) * (sqlite3_uint64)scan.mark_room);
    if (scan.marks == NULL) {
      sqlite3_result_error_nomem(context);
      return;
    }
  }
  if (scan_array(s, 0, bytes, &scan, bytes)) {
    int after = (scan.depth & SCAN_DEPTH) | (scan.in_string ? SCAN_IN_STRING : 0) |
                (scan.escaped ? SCAN_ESCAPED : 0);
    sqlite3_str *text = sqlite3_str_new(NULL);
    sqlite3_str_appendf(text, "%d %d %d %d", scan.last_comma, scan.closed_at, scan.commas, after);
    for (int i = 0; i < scan.mark_count; i++) sqlite3_str_appendf(text, " %d", scan.marks[i]);
    int failed = sqlite3_str_errcode(text);
    char *answer = sqlite3_str_finish(text);
    if (failed || answer == NULL) sqlite3_result_error_nomem(context);
    else sqlite3_result_text(context, answer, -1, sqlite3_free);
  } /* else NULL: nested too deep */
  sqlite3_free(scan.marks);
}

/*
 * The ends of ranges given by the caller (`cuts`: offsets of commas between two elements,
 * separated by spaces, from dirq_json_array_scan's marks) into `ends`, the piece's end last;
 * how many. Offsets that do not rise, or are not at a comma, are dropped: a cut that is not
 * between two elements makes both ranges fail to parse, so the piece goes the long way.
 */
static int given_ranges(const unsigned char *s, int bytes, const char *cuts, int *ends) {
  int count = 0, last = 0;
  for (const char *at = cuts; at != NULL && *at != '\0' && count < MOST_RANGES - 1;) {
    char *after;
    long cut = strtol(at, &after, 10);
    if (after == at) break;
    at = after;
    if (cut > last && cut < bytes && s[cut] == ',') ends[count++] = last = (int)cut;
  }
  ends[count++] = bytes;
  return count;
}

/*
 * Cuts `bytes` of a JSON array's whole elements (separated by commas) into at most `most`
 * ranges of about `bytes / most` each, every one but the last ending at a comma between two
 * elements (the next starts after it): their ends into `ends`; how many. Bytes that are no
 * such elements may be cut anywhere: their ranges fail to parse, and so does the piece.
 */
static int cut_element_ranges(const unsigned char *s, int bytes, int most, int *ends) {
  ArrayScan scan = {1, 0, 0, -1, -1, 0, 0, 0, NULL, 0, 0};
  int count = 0, at = 0;
  for (int k = 1; k < most && at < bytes; k++) {
    int target = (int)((sqlite3_int64)bytes * k / most);
    if (target < at) continue;
    scan.last_comma = -1;
    if (!scan_array(s, at, bytes, &scan, target) || scan.closed_at >= 0 ||
        scan.last_comma < target)
      break;
    ends[count++] = scan.last_comma;
    at = scan.last_comma + 1;
  }
  ends[count++] = bytes;
  return count;
}

/* ---- dirq_jsonl_keys ---------------------------------------------------------------------- */

typedef struct {
  const Names *wanted;
  Names found;      /* keys seen, one spelling per folded name */
  Names line_keys;  /* the keys of the current line */
  int capacity;
} KeysContext;

static int take_key(void *context, const unsigned char *key, int n, Value *value) {
  (void)value;
  KeysContext *keys = context;
  if (find_name(&keys->line_keys, key, n) >= 0) return 0; /* one column named twice */
  if (keys->line_keys.count == keys->capacity) return 0;
  keys->line_keys.names[keys->line_keys.count] = key;
  keys->line_keys.lengths[keys->line_keys.count++] = n;
  if (find_name(&keys->found, key, n) >= 0) return 1;
  if (keys->found.count == keys->capacity) return 0;
  keys->found.names[keys->found.count] = key;
  keys->found.lengths[keys->found.count++] = n;
  return 1;
}

static int keys_line(Parser *p, void *context) {
  KeysContext *keys = context;
  keys->line_keys.count = 0;
  return read_record(p, keys->wanted, take_key, keys);
}

/* Keys tracked per piece and per line at most: more is left to JavaScript. */
#define MAX_KEYS 4000

/* One range's keys pass: its parser, its keys, whether it read to its end. */
typedef struct {
  Parser parser;
  int bytes;
  KeysContext keys;
  int ok;
  pthread_t thread;
  int started;
} KeysRange;

static int keys_range_init(KeysRange *range, const unsigned char *s, int bytes,
                           const Names *wanted, int elements) {
  memset(range, 0, sizeof *range);
  range->parser.s = s;
  range->parser.elements = elements;
  range->bytes = bytes;
  range->keys.wanted = wanted;
  range->keys.capacity = MAX_KEYS;
  range->parser.decoded = malloc((size_t)bytes + 1);
  range->keys.found.names = malloc(sizeof(char *) * MAX_KEYS);
  range->keys.found.lengths = malloc(sizeof(int) * MAX_KEYS);
  range->keys.line_keys.names = malloc(sizeof(char *) * MAX_KEYS);
  range->keys.line_keys.lengths = malloc(sizeof(int) * MAX_KEYS);
  return range->parser.decoded && range->keys.found.names && range->keys.found.lengths &&
         range->keys.line_keys.names && range->keys.line_keys.lengths;
}

static void keys_range_free(KeysRange *range) {
  free(range->parser.decoded);
  free(range->keys.found.names);
  free(range->keys.found.lengths);
  free(range->keys.line_keys.names);
  free(range->keys.line_keys.lengths);
}

static void *keys_range_read(void *argument) {
  KeysRange *range = argument;
  range->ok = each_record(&range->parser, range->bytes, keys_line, &range->keys);
  return NULL;
}

/* The ranges' keys in order, one spelling per name, into `out`; 0 past MAX_KEYS. */
static int merge_keys(KeysRange *ranges, int count, Names *out) {
  for (int r = 0; r < count; r++) {
    const Names *found = &ranges[r].keys.found;
    for (int i = 0; i < found->count; i++) {
      if (find_name(out, found->names[i], found->lengths[i]) >= 0) continue;
      if (out->count == MAX_KEYS) return 0;
      out->names[out->count] = found->names[i];
      out->lengths[out->count++] = found->lengths[i];
    }
  }
  return 1;
}

static void result_keys(sqlite3_context *context, const Names *keys) {
  sqlite3_str *out = sqlite3_str_new(NULL);
  for (int i = 0; i < keys->count; i++) {
    if (i > 0) sqlite3_str_appendchar(out, 1, SEPARATOR);
    sqlite3_str_append(out, (const char *)keys->names[i], keys->lengths[i]);
  }
  int length = sqlite3_str_length(out);
  char *text = sqlite3_str_finish(out);
  /* No key: sqlite3_str_finish gives NULL for the empty text. */
  if (text == NULL && length > 0) sqlite3_result_error_nomem(context);
  else if (text == NULL) sqlite3_result_text(context, "", 0, SQLITE_STATIC);
  else sqlite3_result_text(context, text, length, sqlite3_free);
}

/*
 * Reads the ranges' keys, the first here and the others on threads of their own: -1 out of
 * memory, 0 a record left to JavaScript, 1 read.
 */
static int read_keys(KeysRange *ranges, int count) {
  for (int r = 1; r < count; r++)
    ranges[r].started = pthread_create(&ranges[r].thread, NULL, keys_range_read, &ranges[r]) == 0;
  keys_range_read(&ranges[0]);
  int ok = ranges[0].ok;
  for (int r = 1; r < count; r++) {
    if (ranges[r].started) pthread_join(ranges[r].thread, NULL);
    else keys_range_read(&ranges[r]);
    ok = ok && ranges[r].ok;
  }
  return ok;
}

static void jsonl_keys(sqlite3_context *context, int argc, sqlite3_value **argv) {
  int bytes = sqlite3_value_bytes(argv[0]);
  const unsigned char *piece = sqlite3_value_blob(argv[0]);
  const unsigned char *named = sqlite3_value_text(argv[1]);
  int elements = argc > 2 && sqlite3_value_int(argv[2]) != 0;
  if (bytes == 0) {
    if (!elements) sqlite3_result_text(context, "", 0, SQLITE_STATIC);
    return; /* else NULL: left to JavaScript */
  }
  Split split = split_settings();
  int ends[MOST_THREADS + 1];
  int count = elements || bytes < 2 * split.range_bytes
                  ? (ends[0] = bytes, 1)
                  : cut_ranges(piece, bytes, split.threads + 1, ends);
  KeysRange ranges[MOST_THREADS + 1];
  Names wanted, merged = {NULL, NULL, 0};
  int ok = split_names(named, sqlite3_value_bytes(argv[1]), &wanted);
  int made = 0;
  for (int r = 0; ok && r < count; r++, made++) {
    int from = r == 0 ? 0 : ends[r - 1];
    ok = keys_range_init(&ranges[r], piece + from, ends[r] - from,
                         named == NULL ? NULL : &wanted, elements);
  }
  merged.names = malloc(sizeof(char *) * MAX_KEYS);
  merged.lengths = malloc(sizeof(int) * MAX_KEYS);
  if (!ok || merged.names == NULL || merged.lengths == NULL) {
    sqlite3_result_error_nomem(context);
  } else if (read_keys(ranges, count) && merge_keys(ranges, count, &merged)) {
    result_keys(context, &merged);
  } /* else NULL: left to JavaScript */
  for (int r = 0; r < made; r++) keys_range_free(&ranges[r]);
  free(merged.names);
  free(merged.lengths);
  free_names(&wanted);
}

/* ---- dirq_jsonl --------------------------------------------------------------------------- */

/* A value of a row, and the column it goes to. */
typedef struct {
  int column;
  Value value;
} Cell;

/* A range of the piece and, once parsed, its rows: each a run of cells. */
typedef struct {
  int start, end;
  Parser parser;
  Cell *cells;
  int cell_count, cell_capacity;
  int *row_ends; /* the index in `cells` after each row's last */
  int row_count, row_capacity;
  int *stamps;   /* checked: per column, 1 + the row that last gave it a value */
  /* dirq_jsonl_file: per column, how its first key was spelled (see KEY_SPELLED_AS_COLUMN) */
  unsigned char *seen;
  int ok;        /* parsed to its end: 1; a record left to JavaScript: 0; out of memory: -1 */
  int parsed;    /* guarded by the cursor's mutex */
} Range;

typedef struct {
  sqlite3_vtab_cursor base;
  const unsigned char *data; /* the piece: a bound parameter's bytes, or `owned` */
  unsigned char *owned;
  int bytes;
  Names columns;
  unsigned char *columns_text;
  Names named; /* checked: the keys read, unless `has_named` is 0 (all keys) */
  unsigned char *named_text;
  int has_named;
  int checked;
  Value *values;
  Range *ranges;
  int range_count;
  int current;      /* the range whose rows are being returned */
  int current_row;  /* the next of its rows to return */
  int next_claim;   /* the next range no thread has taken: guarded by the mutex */
  pthread_t threads[MOST_THREADS];
  int thread_count;
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  sqlite3_int64 row;
  int eof;
  /* dirq_jsonl_file: check UTF-8, note each column's first key (into `seen`, in order) */
  int from_file;
  unsigned char *seen;
} JsonlCursor;

typedef struct {
  Range *range;
  const Names *columns;
  const Names *named; /* checked: the keys read, NULL for all */
  int checked;
} RangeTarget;

/* How a column's first key in a file was spelled: as the column is named, or otherwise. */
#define KEY_SPELLED_AS_COLUMN 1
#define KEY_SPELLED_OTHERWISE 2

/* Doubles an array's room (C library memory: any thread); 0 when out of memory. */
static int grow(void **items, int *capacity, size_t size) {
  int room = *capacity < 64 ? 64 : *capacity * 2;
  void *grown = realloc(*items, size * (size_t)room);
  if (grown == NULL) return 0;
  *items = grown;
  *capacity = room;
  return 1;
}

static int take_cell(void *context, const unsigned char *key, int n, Value *value) {
  RangeTarget *target = context;
  Range *range = target->range;
  int column = find_name(target->columns, key, n);
  if (column < 0) return !target->checked; /* checked: a new key */
  if (target->checked) {
    /* Two keys of one line that name one column: dirq_jsonl_keys leaves it to JavaScript. */
    if (range->stamps[column] == range->row_count + 1) return 0;
    range->stamps[column] = range->row_count + 1;
  }
  if (range->seen != NULL && range->seen[column] == 0) {
    int exact = target->columns->lengths[column] == n &&
                memcmp(target->columns->names[column], key, (size_t)n) == 0;
    range->seen[column] = exact ? KEY_SPELLED_AS_COLUMN : KEY_SPELLED_OTHERWISE;
  }
  if (range->cell_count == range->cell_capacity &&
      !grow((void **)&range->cells, &range->cell_capacity, sizeof(Cell)))
    return range->ok = -1, 0;
  range->cells[range->cell_count].column = column;
  range->cells[range->cell_count++].value = *value;
  return 1;
}

static int range_row(Parser *p, void *context) {
  RangeTarget *target = context;
  Range *range = target->range;
  const Names *wanted = target->checked ? target->named : target->columns;
  if (!read_record(p, wanted, take_cell, target)) return 0;
  if (range->row_count == range->row_capacity &&
      !grow((void **)&range->row_ends, &range->row_capacity, sizeof(int)))
    return range->ok = -1, 0;
  range->row_ends[range->row_count++] = range->cell_count;
  return 1;
}

/* Parses one range's rows (on any thread: it allocates with the C library only). */
static void parse_range(JsonlCursor *jsonl, Range *range) {
  range->parser.s = jsonl->data + range->start;
  range->parser.decoded = malloc((size_t)(range->end - range->start) + 1);
  if (range->parser.decoded == NULL) {
    range->ok = -1;
    return;
  }
  RangeTarget target = {range, &jsonl->columns, jsonl->has_named ? &jsonl->named : NULL,
                       jsonl->checked};
  if (jsonl->checked) {
    range->stamps = calloc((size_t)jsonl->columns.count + 1, sizeof(int));
    if (range->stamps == NULL) {
      range->ok = -1;
      return;
    }
  }
  if (jsonl->from_file) {
    range->seen = calloc((size_t)jsonl->columns.count + 1, 1);
    if (range->seen == NULL) {
      range->ok = -1;
      return;
    }
    /* Bytes that are not UTF-8 are the JavaScript reader's to report (the whole range: the
       last one holds an unterminated last line, which that reader checks too). */
    if (!valid_utf8(range->parser.s, range->end - range->start)) {
      range->ok = 0;
      return;
    }
  }
  range->ok = 1;
  if (!each_record(&range->parser, range->end - range->start, range_row, &target) &&
      range->ok == 1)
    range->ok = 0;
}

/* A helper thread: takes the next range no one has taken, parses it, until none is left. */
static void *parse_ahead(void *argument) {
  JsonlCursor *jsonl = argument;
  for (;;) {
    pthread_mutex_lock(&jsonl->mutex);
    int r = jsonl->next_claim < jsonl->range_count ? jsonl->next_claim++ : -1;
    pthread_mutex_unlock(&jsonl->mutex);
    if (r < 0) return NULL;
    parse_range(jsonl, &jsonl->ranges[r]);
    pthread_mutex_lock(&jsonl->mutex);
    jsonl->ranges[r].parsed = 1;
    pthread_cond_broadcast(&jsonl->cond);
    pthread_mutex_unlock(&jsonl->mutex);
  }
}

/*
 * Range `r` parsed: here when no thread took it yet (the first is never theirs), else once its
 * thread is done. While a helper still parses it, this thread parses a later range no one has
 * taken rather than wait: ranges parse independently, and the inserts take their rows in order
 * anyway, so the parse is shared between the threads instead of left to the helpers.
 */
static void await_range(JsonlCursor *jsonl, int r) {
  Range *range = &jsonl->ranges[r];
  if (jsonl->thread_count == 0 || r == 0) {
    parse_range(jsonl, range);
    return;
  }
  pthread_mutex_lock(&jsonl->mutex);
  for (;;) {
    if (range->parsed) break;
    int claim = jsonl->next_claim < jsonl->range_count ? jsonl->next_claim++ : -1;
    if (claim < 0) {
      pthread_cond_wait(&jsonl->cond, &jsonl->mutex);
      continue;
    }
    pthread_mutex_unlock(&jsonl->mutex);
    parse_range(jsonl, &jsonl->ranges[claim]);
    pthread_mutex_lock(&jsonl->mutex);
    jsonl->ranges[claim].parsed = 1;
    pthread_cond_broadcast(&jsonl->cond);
  }
  pthread_mutex_unlock(&jsonl->mutex);
}

/* Stops the helper threads (no range is taken any more) and waits for them. */
static void stop_threads(JsonlCursor *jsonl) {
  if (jsonl->thread_count == 0) return;
  pthread_mutex_lock(&jsonl->mutex);
  jsonl->next_claim = jsonl->range_count;
  pthread_mutex_unlock(&jsonl->mutex);
  for (int i = 0; i < jsonl->thread_count; i++) pthread_join(jsonl->threads[i], NULL);
  jsonl->thread_count = 0;
  pthread_mutex_destroy(&jsonl->mutex);
  pthread_cond_destroy(&jsonl->cond);
}

/*
 * Cuts the piece into ranges (a JSON array's elements where `cuts` says, when given) and starts
 * the helper threads: 0 when out of memory.
 */
static int start_ranges(JsonlCursor *jsonl, int elements, const char *cuts) {
  Split split = split_settings();
  int most = split.threads == 0 ? 1 : jsonl->bytes / split.range_bytes;
  if (most < 1) most = 1;
  if (most > MOST_RANGES) most = MOST_RANGES;
  int ends[MOST_RANGES];
  int count = most == 1                    ? (ends[0] = jsonl->bytes, 1)
              : !elements                ? cut_ranges(jsonl->data, jsonl->bytes, most, ends)
              : cuts != NULL             ? given_ranges(jsonl->data, jsonl->bytes, cuts, ends)
                                         : cut_element_ranges(jsonl->data, jsonl->bytes, most, ends);
  jsonl->ranges = calloc((size_t)count, sizeof(Range));
  if (jsonl->ranges == NULL) return 0;
  jsonl->range_count = count;
  for (int r = 0; r < count; r++) {
    /* An element range's end is the comma before the next element. */
    jsonl->ranges[r].start = r == 0 ? 0 : ends[r - 1] + (elements ? 1 : 0);
    jsonl->ranges[r].end = ends[r];
    jsonl->ranges[r].parser.elements = elements;
  }
  int threads = count - 1 < split.threads ? count - 1 : split.threads;
  if (threads <= 0) return 1;
  pthread_mutex_init(&jsonl->mutex, NULL);
  pthread_cond_init(&jsonl->cond, NULL);
  /* The first range is this thread's: it is needed first. */
  jsonl->next_claim = 1;
  jsonl->thread_count = 0;
  for (int i = 0; i < threads; i++) {
    if (pthread_create(&jsonl->threads[jsonl->thread_count], NULL, parse_ahead, jsonl) != 0) break;
    jsonl->thread_count++;
  }
  if (jsonl->thread_count == 0) {
    pthread_mutex_destroy(&jsonl->mutex);
    pthread_cond_destroy(&jsonl->cond);
  }
  return 1;
}

static void free_ranges(JsonlCursor *jsonl) {
  stop_threads(jsonl);
  for (int r = 0; r < jsonl->range_count; r++) {
    free(jsonl->ranges[r].cells);
    free(jsonl->ranges[r].row_ends);
    free(jsonl->ranges[r].parser.decoded);
    free(jsonl->ranges[r].stamps);
    free(jsonl->ranges[r].seen);
  }
  free(jsonl->ranges);
  jsonl->ranges = NULL;
  jsonl->range_count = 0;
}

static int jsonl_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                         sqlite3_vtab **table, char **error) {
  (void)aux;
  (void)argc;
  (void)argv;
  (void)error;
  sqlite3_str *schema = sqlite3_str_new(db);
  sqlite3_str_appendall(schema, "CREATE TABLE x(");
  for (int i = 0; i < DECLARED_COLUMNS; i++) sqlite3_str_appendf(schema, "c%d,", i);
  sqlite3_str_appendall(schema,
                        "piece HIDDEN, columns HIDDEN, flags HIDDEN, named HIDDEN, cuts HIDDEN)");
  char *text = sqlite3_str_finish(schema);
  if (text == NULL) return SQLITE_NOMEM;
  int rc = dirq_connect_innocuous(db, text, table);
  sqlite3_free(text);
  return rc;
}

/*
 * Takes the arguments (the hidden columns after DECLARED_COLUMNS) in order; those of
 * `required` (a bit per argument) must be given.
 */
static int arguments_best_index(sqlite3_index_info *info, int required, double cost,
                                sqlite3_int64 rows) {
  int seen = 0;
  for (int i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *constraint = &info->aConstraint[i];
    int argument = constraint->iColumn - DECLARED_COLUMNS;
    if (argument < 0 || constraint->op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    if (!constraint->usable) return SQLITE_CONSTRAINT;
    info->aConstraintUsage[i].argvIndex = argument + 1;
    info->aConstraintUsage[i].omit = 1;
    seen |= 1 << argument;
  }
  if ((seen & required) != required) return SQLITE_CONSTRAINT;
  info->estimatedCost = cost;
  info->estimatedRows = rows;
  return SQLITE_OK;
}

/* The first four arguments are required, in order; `cuts` may follow. */
static int jsonl_best_index(sqlite3_vtab *table, sqlite3_index_info *info) {
  (void)table;
  return arguments_best_index(info, 15, 1000, 10000);
}

static int jsonl_open(sqlite3_vtab *table, sqlite3_vtab_cursor **cursor) {
  (void)table;
  JsonlCursor *jsonl = sqlite3_malloc(sizeof(JsonlCursor));
  if (jsonl == NULL) return SQLITE_NOMEM;
  memset(jsonl, 0, sizeof *jsonl);
  jsonl->eof = 1;
  *cursor = &jsonl->base;
  return SQLITE_OK;
}

static void jsonl_release(JsonlCursor *jsonl) {
  free_ranges(jsonl);
  sqlite3_free(jsonl->owned);
  sqlite3_free(jsonl->values);
  sqlite3_free(jsonl->columns_text);
  sqlite3_free(jsonl->named_text);
  free_names(&jsonl->columns);
  free_names(&jsonl->named);
  memset(jsonl, 0, sizeof *jsonl);
}

static int jsonl_close(sqlite3_vtab_cursor *cursor) {
  jsonl_release((JsonlCursor *)cursor);
  sqlite3_free(cursor);
  return SQLITE_OK;
}

static int jsonl_fail(JsonlCursor *jsonl, const char *message) {
  sqlite3_vtab *table = jsonl->base.pVtab;
  sqlite3_free(table->zErrMsg);
  table->zErrMsg = sqlite3_mprintf("dirq_jsonl: %s", message);
  jsonl->eof = 1;
  return SQLITE_ERROR;
}

/* The current range parsed: SQLITE_OK, else why not (a record left to JavaScript, memory). */
static int jsonl_ready(JsonlCursor *jsonl) {
  await_range(jsonl, jsonl->current);
  int ok = jsonl->ranges[jsonl->current].ok;
  const unsigned char *seen = jsonl->ranges[jsonl->current].seen;
  /* Ranges are taken in order here: the first key of each column is the file's first. */
  if (ok == 1 && seen != NULL && jsonl->seen != NULL) {
    for (int i = 0; i < jsonl->columns.count; i++)
      if (jsonl->seen[i] == 0) jsonl->seen[i] = seen[i];
  }
  if (ok == 1) return SQLITE_OK;
  if (ok == 0) return jsonl_fail(jsonl, "a record dirq_jsonl_keys leaves to JavaScript");
  jsonl->eof = 1;
  return SQLITE_NOMEM;
}

/* The next line that holds an object: its values, or the end. */
static int jsonl_next(sqlite3_vtab_cursor *cursor) {
  JsonlCursor *jsonl = (JsonlCursor *)cursor;
  for (;;) {
    Range *range = &jsonl->ranges[jsonl->current];
    if (jsonl->current_row < range->row_count) {
      int row = jsonl->current_row++;
      for (int i = 0; i < jsonl->columns.count; i++) jsonl->values[i].kind = KIND_NULL;
      for (int c = row == 0 ? 0 : range->row_ends[row - 1]; c < range->row_ends[row]; c++)
        jsonl->values[range->cells[c].column] = range->cells[c].value;
      jsonl->row++;
      return SQLITE_OK;
    }
    if (jsonl->current + 1 >= jsonl->range_count) {
      jsonl->eof = 1;
      return SQLITE_OK;
    }
    /* A range's memory goes as soon as its rows are inserted. */
    free(range->cells);
    free(range->row_ends);
    free(range->parser.decoded);
    range->cells = NULL;
    range->row_ends = NULL;
    range->parser.decoded = NULL;
    jsonl->current++;
    jsonl->current_row = 0;
    int rc = jsonl_ready(jsonl);
    if (rc != SQLITE_OK) return rc;
  }
}

/* A names argument, copied (NULL: `*given` 0); 0 when out of memory. */
static int copy_names(sqlite3_value *value, unsigned char **text, Names *names, int *given) {
  const unsigned char *source = sqlite3_value_text(value);
  int bytes = sqlite3_value_bytes(value);
  *given = source != NULL;
  if (source == NULL) return split_names(NULL, 0, names);
  *text = sqlite3_malloc64((sqlite3_uint64)bytes + 1);
  if (*text == NULL) return 0;
  memcpy(*text, source, (size_t)bytes);
  return split_names(*text, bytes, names);
}

static int jsonl_filter(sqlite3_vtab_cursor *cursor, int idx_num, const char *idx_text, int argc,
                        sqlite3_value **argv) {
  (void)idx_num;
  (void)idx_text;
  JsonlCursor *jsonl = (JsonlCursor *)cursor;
  sqlite3_vtab *table = jsonl->base.pVtab;
  jsonl_release(jsonl);
  jsonl->base.pVtab = table;
  jsonl->eof = 1;
  if (argc < 4) return SQLITE_OK;
  int bytes = sqlite3_value_bytes(argv[0]);
  const void *piece = sqlite3_value_blob(argv[0]);
  int columns_bytes = sqlite3_value_bytes(argv[1]);
  const unsigned char *columns = sqlite3_value_text(argv[1]);
  /*
   * A bound parameter is read where SQLite keeps it, unchanged until the statement is reset:
   * a copy would cost the piece's size again (a 100 MB line). Any other value is copied.
   */
  if (sqlite3_value_frombind(argv[0]) && sqlite3_value_type(argv[0]) == SQLITE_BLOB) {
    jsonl->data = (unsigned char *)piece;
  } else {
    jsonl->owned = sqlite3_malloc64((sqlite3_uint64)bytes + 1);
    if (jsonl->owned == NULL) return SQLITE_NOMEM;
    if (bytes > 0) memcpy(jsonl->owned, piece, (size_t)bytes);
    jsonl->data = jsonl->owned;
  }
  jsonl->columns_text = sqlite3_malloc64((sqlite3_uint64)columns_bytes + 1);
  if (jsonl->columns_text == NULL) return SQLITE_NOMEM;
  if (columns_bytes > 0) memcpy(jsonl->columns_text, columns, (size_t)columns_bytes);
  if (!split_names(columns == NULL ? NULL : jsonl->columns_text, columns_bytes, &jsonl->columns))
    return SQLITE_NOMEM;
  int flags = sqlite3_value_int(argv[2]);
  jsonl->checked = (flags & FLAG_CHECKED) != 0;
  if (jsonl->checked && !copy_names(argv[3], &jsonl->named_text, &jsonl->named,
                                    &jsonl->has_named))
    return SQLITE_NOMEM;
  if (jsonl->columns.count > DECLARED_COLUMNS) return jsonl_fail(jsonl, "too many columns");
  jsonl->values = sqlite3_malloc64(sizeof(Value) * (sqlite3_uint64)(jsonl->columns.count + 1));
  if (jsonl->values == NULL) return SQLITE_NOMEM;
  jsonl->bytes = bytes;
  const char *cuts = argc > 4 ? (const char *)sqlite3_value_text(argv[4]) : NULL;
  if (!start_ranges(jsonl, (flags & FLAG_ELEMENTS) != 0, cuts)) return SQLITE_NOMEM;
  jsonl->eof = 0;
  int rc = jsonl_ready(jsonl);
  return rc == SQLITE_OK ? jsonl_next(cursor) : rc;
}

static int jsonl_eof(sqlite3_vtab_cursor *cursor) {
  return ((JsonlCursor *)cursor)->eof;
}

static int jsonl_column(sqlite3_vtab_cursor *cursor, sqlite3_context *context, int column) {
  JsonlCursor *jsonl = (JsonlCursor *)cursor;
  if (column >= jsonl->columns.count) return SQLITE_OK; /* the arguments read as NULL */
  const Value *value = &jsonl->values[column];
  switch (value->kind) {
  case KIND_TEXT: {
    const Range *range = &jsonl->ranges[jsonl->current];
    const unsigned char *base =
        value->as.text.decoded ? range->parser.decoded : jsonl->data + range->start;
    sqlite3_result_text(context, (const char *)base + value->as.text.start,
                        value->as.text.length, SQLITE_TRANSIENT);
    break;
  }
  case KIND_INTEGER:
    sqlite3_result_int64(context, value->as.integer);
    break;
  case KIND_REAL:
    sqlite3_result_double(context, value->as.real);
    break;
  default:
    break; /* NULL */
  }
  return SQLITE_OK;
}

static int jsonl_rowid(sqlite3_vtab_cursor *cursor, sqlite3_int64 *rowid) {
  *rowid = ((JsonlCursor *)cursor)->row;
  return SQLITE_OK;
}

static sqlite3_module jsonl_module = {
    0,                /* iVersion */
    NULL,             /* xCreate: eponymous only */
    jsonl_connect,    /* xConnect */
    jsonl_best_index, /* xBestIndex */
    dirq_disconnect,  /* xDisconnect */
    NULL,             /* xDestroy */
    jsonl_open,       /* xOpen */
    jsonl_close,      /* xClose */
    jsonl_filter,     /* xFilter */
    jsonl_next,       /* xNext */
    jsonl_eof,        /* xEof */
    jsonl_column,     /* xColumn */
    jsonl_rowid,      /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};

/* ---- dirq_jsonl_file: a JSON Lines file read here, for a statement that reads it once ----- */

/*
 * SELECT c0, ..., row_index FROM dirq_jsonl_file(path, columns, named, slot, token)
 *   The rows dirq_jsonl gives for the file's pieces (FLAG_CHECKED, `named` the keys read),
 *   the file read here in FILE_PIECE_BYTES pieces cut after a newline, each parsed in ranges
 *   on the helper threads as dirq_jsonl's are; `row_index` counts the file's rows from 0. A
 *   byte-order mark at the start is left out, the bytes are checked as UTF-8. Fails (the
 *   statement's error) where dirq_jsonl would leave a piece to JavaScript: the caller then
 *   builds the table the usual way, which reads and reports the file as always.
 *
 * dirq_jsonl_file_arm(token, slots)
 *   Clears the report and arms the table for the scans of a statement passing `token` (only
 *   dirq itself knows it: a statement of the user's cannot read files this way).
 *
 * dirq_jsonl_file_report()
 *   Per slot, separated by ';': how many scans began, whether one reached the file's end, and
 *   per column '0' no key of it, '1' its first key spelled as the column, '2' otherwise.
 */
#define FILE_PIECE_BYTES (4 << 20)
#define MOST_SLOTS 4096

typedef struct {
  int scans, complete, columns;
  unsigned char *seen;
} FileReport;

typedef struct {
  char *token;
  int slots;
  FileReport *files;
} FileReports;

typedef struct {
  sqlite3_vtab base;
  FileReports *reports;
} FileTable;

typedef struct {
  JsonlCursor jsonl; /* first: SQLite sees its `base` */
  int fd;
  unsigned char *buffer;
  size_t capacity, filled, piece_end;
  int at_start, final;
  sqlite3_int64 rows;
  FileReport *report;
} FileCursor;

static void reports_clear(FileReports *reports) {
  for (int i = 0; i < reports->slots; i++) sqlite3_free(reports->files[i].seen);
  sqlite3_free(reports->files);
  sqlite3_free(reports->token);
  reports->files = NULL;
  reports->token = NULL;
  reports->slots = 0;
}

static void reports_destroy(void *argument) {
  reports_clear(argument);
  sqlite3_free(argument);
}

static void file_arm(sqlite3_context *context, int argc, sqlite3_value **argv) {
  (void)argc;
  FileReports *reports = sqlite3_user_data(context);
  reports_clear(reports);
  const char *token = (const char *)sqlite3_value_text(argv[0]);
  int slots = sqlite3_value_int(argv[1]);
  if (token == NULL || slots < 1 || slots > MOST_SLOTS) return;
  reports->token = sqlite3_mprintf("%s", token);
  reports->files = sqlite3_malloc64(sizeof(FileReport) * (sqlite3_uint64)slots);
  if (reports->token == NULL || reports->files == NULL) {
    reports_clear(reports);
    sqlite3_result_error_nomem(context);
    return;
  }
  memset(reports->files, 0, sizeof(FileReport) * (size_t)slots);
  reports->slots = slots;
}

static void file_report(sqlite3_context *context, int argc, sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  FileReports *reports = sqlite3_user_data(context);
  sqlite3_str *out = sqlite3_str_new(NULL);
  for (int i = 0; i < reports->slots; i++) {
    const FileReport *file = &reports->files[i];
    sqlite3_str_appendf(out, "%s%d %d ", i > 0 ? ";" : "", file->scans, file->complete);
    for (int c = 0; c < file->columns; c++)
      sqlite3_str_appendchar(out, 1, (char)('0' + (file->seen ? file->seen[c] : 0)));
  }
  int length = sqlite3_str_length(out);
  char *text = sqlite3_str_finish(out);
  if (text == NULL) sqlite3_result_text(context, "", 0, SQLITE_STATIC);
  else sqlite3_result_text(context, text, length, sqlite3_free);
}

static int file_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                        sqlite3_vtab **table, char **error) {
  (void)argc;
  (void)argv;
  (void)error;
  sqlite3_str *schema = sqlite3_str_new(db);
  sqlite3_str_appendall(schema, "CREATE TABLE x(");
  for (int i = 0; i < DECLARED_COLUMNS - 1; i++) sqlite3_str_appendf(schema, "c%d,", i);
  sqlite3_str_appendall(schema, "row_index INTEGER, path HIDDEN, columns HIDDEN, named HIDDEN, "
                                "slot HIDDEN, token HIDDEN)");
  char *text = sqlite3_str_finish(schema);
  if (text == NULL) return SQLITE_NOMEM;
  int rc = sqlite3_declare_vtab(db, text);
  sqlite3_free(text);
  if (rc != SQLITE_OK) return rc;
  FileTable *file = sqlite3_malloc(sizeof(FileTable));
  if (file == NULL) return SQLITE_NOMEM;
  memset(file, 0, sizeof *file);
  file->reports = aux;
  *table = &file->base;
  return SQLITE_OK;
}

/* All five arguments are required, in order. */
static int file_best_index(sqlite3_vtab *table, sqlite3_index_info *info) {
  (void)table;
  return arguments_best_index(info, 31, 1e9, 1000000);
}

static int file_open(sqlite3_vtab *table, sqlite3_vtab_cursor **cursor) {
  (void)table;
  FileCursor *file = sqlite3_malloc(sizeof(FileCursor));
  if (file == NULL) return SQLITE_NOMEM;
  memset(file, 0, sizeof *file);
  file->fd = -1;
  file->jsonl.eof = 1;
  *cursor = &file->jsonl.base;
  return SQLITE_OK;
}

static void file_release(FileCursor *file) {
  sqlite3_vtab *table = file->jsonl.base.pVtab;
  jsonl_release(&file->jsonl);
  file->jsonl.base.pVtab = table;
  file->jsonl.eof = 1;
  if (file->fd >= 0) close(file->fd);
  file->fd = -1;
  free(file->buffer);
  file->buffer = NULL;
  file->capacity = file->filled = file->piece_end = 0;
}

static int file_close(sqlite3_vtab_cursor *cursor) {
  file_release((FileCursor *)cursor);
  sqlite3_free(cursor);
  return SQLITE_OK;
}

/*
 * Reads the next piece into the buffer, after what the last one left (an unfinished line):
 * whole lines up to about FILE_PIECE_BYTES, a longer line whole, or the rest of the file.
 * 0 when a read fails or memory runs out.
 */
static int file_read_piece(FileCursor *file) {
  if (file->piece_end > 0) {
    memmove(file->buffer, file->buffer + file->piece_end, file->filled - file->piece_end);
    file->filled -= file->piece_end;
    file->piece_end = 0;
  }
  size_t searched = 0;
  for (;;) {
    if (file->capacity - file->filled < FILE_PIECE_BYTES) {
      size_t room = file->filled + FILE_PIECE_BYTES;
      unsigned char *grown = realloc(file->buffer, room);
      if (grown == NULL) return 0;
      file->buffer = grown;
      file->capacity = room;
    }
    ssize_t got = read(file->fd, file->buffer + file->filled, FILE_PIECE_BYTES);
    if (got < 0) return 0;
    if (got == 0) {
      file->final = 1;
      file->piece_end = file->filled;
      return 1;
    }
    file->filled += (size_t)got;
    const unsigned char *newline =
        memrchr(file->buffer + searched, '\n', file->filled - searched);
    if (newline != NULL) {
      file->piece_end = (size_t)(newline - file->buffer) + 1;
      return 1;
    }
    searched = file->filled;
  }
}

/* The piece just read, cut into ranges and its first range parsed: SQLITE_OK, else why not. */
static int file_start_piece(FileCursor *file) {
  JsonlCursor *jsonl = &file->jsonl;
  free_ranges(jsonl);
  if (file->piece_end > INT32_MAX - 1) return jsonl_fail(jsonl, "a piece too large");
  int bom = 0;
  if (file->at_start && file->piece_end >= 3 && memcmp(file->buffer, "\xef\xbb\xbf", 3) == 0)
    bom = 3;
  file->at_start = 0;
  jsonl->data = file->buffer + bom;
  jsonl->bytes = (int)file->piece_end - bom;
  jsonl->current = 0;
  jsonl->current_row = 0;
  if (!start_ranges(jsonl, 0, NULL)) return SQLITE_NOMEM;
  jsonl->eof = 0;
  return jsonl_ready(jsonl);
}

/* The next row, from this piece or the pieces after it; at the file's end, the report says so. */
static int file_next(sqlite3_vtab_cursor *cursor) {
  FileCursor *file = (FileCursor *)cursor;
  JsonlCursor *jsonl = &file->jsonl;
  for (;;) {
    int rc = jsonl_next(cursor);
    if (rc != SQLITE_OK) return rc;
    if (!jsonl->eof) {
      file->rows++;
      return SQLITE_OK;
    }
    if (file->final) {
      file->report->complete = 1;
      return SQLITE_OK;
    }
    if (!file_read_piece(file)) return jsonl_fail(jsonl, "cannot read the file");
    rc = file_start_piece(file);
    if (rc != SQLITE_OK) return rc;
    /* jsonl_next goes on from the new piece's first range. */
    jsonl->current_row = 0;
  }
}

static int file_filter(sqlite3_vtab_cursor *cursor, int idx_num, const char *idx_text, int argc,
                       sqlite3_value **argv) {
  (void)idx_num;
  (void)idx_text;
  FileCursor *file = (FileCursor *)cursor;
  JsonlCursor *jsonl = &file->jsonl;
  FileReports *reports = ((FileTable *)jsonl->base.pVtab)->reports;
  file_release(file);
  if (argc < 5) return SQLITE_OK;
  const char *token = (const char *)sqlite3_value_text(argv[4]);
  int slot = sqlite3_value_int(argv[3]);
  if (reports->token == NULL || token == NULL || strcmp(token, reports->token) != 0 ||
      slot < 0 || slot >= reports->slots)
    return jsonl_fail(jsonl, "only dirq itself reads files this way");
  file->report = &reports->files[slot];
  /* A second scan (a correlated subquery) would parse the whole file again per outer row. */
  if (++file->report->scans > 1) return jsonl_fail(jsonl, "the file is read once");
  int given;
  if (!copy_names(argv[1], &jsonl->columns_text, &jsonl->columns, &given) ||
      !copy_names(argv[2], &jsonl->named_text, &jsonl->named, &jsonl->has_named))
    return SQLITE_NOMEM;
  if (jsonl->columns.count > DECLARED_COLUMNS - 1) return jsonl_fail(jsonl, "too many columns");
  jsonl->checked = 1;
  jsonl->from_file = 1;
  jsonl->values = sqlite3_malloc64(sizeof(Value) * (sqlite3_uint64)(jsonl->columns.count + 1));
  FileReport *report = file->report;
  if (report->seen == NULL || report->columns != jsonl->columns.count) {
    sqlite3_free(report->seen);
    report->seen = sqlite3_malloc64((sqlite3_uint64)jsonl->columns.count + 1);
    report->columns = report->seen == NULL ? 0 : jsonl->columns.count;
  }
  if (jsonl->values == NULL || report->seen == NULL) return SQLITE_NOMEM;
  memset(report->seen, 0, (size_t)jsonl->columns.count + 1);
  report->complete = 0;
  jsonl->seen = report->seen;
  const char *path = (const char *)sqlite3_value_text(argv[0]);
  file->fd = path == NULL ? -1 : open(path, O_RDONLY | O_CLOEXEC);
  if (file->fd < 0) return jsonl_fail(jsonl, "cannot open the file");
  file->at_start = 1;
  file->final = 0;
  file->rows = 0;
  if (!file_read_piece(file)) return jsonl_fail(jsonl, "cannot read the file");
  int rc = file_start_piece(file);
  if (rc != SQLITE_OK) return rc;
  file->rows = -1;
  return file_next(cursor);
}

static int file_column(sqlite3_vtab_cursor *cursor, sqlite3_context *context, int column) {
  FileCursor *file = (FileCursor *)cursor;
  if (column == DECLARED_COLUMNS - 1) {
    sqlite3_result_int64(context, file->rows);
    return SQLITE_OK;
  }
  return jsonl_column(cursor, context, column);
}

static int file_rowid(sqlite3_vtab_cursor *cursor, sqlite3_int64 *rowid) {
  *rowid = ((FileCursor *)cursor)->rows;
  return SQLITE_OK;
}

static sqlite3_module file_module = {
    0,                /* iVersion */
    NULL,             /* xCreate: eponymous only */
    file_connect,     /* xConnect */
    file_best_index,  /* xBestIndex */
    dirq_disconnect,  /* xDisconnect */
    NULL,             /* xDestroy */
    file_open,        /* xOpen */
    file_close,       /* xClose */
    file_filter,      /* xFilter */
    file_next,        /* xNext */
    jsonl_eof,        /* xEof */
    file_column,      /* xColumn */
    file_rowid,       /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};

/* Registers dirq_jsonl_file and the functions that arm it and report on it. */
static int register_jsonl_file(sqlite3 *db) {
  FileReports *reports = sqlite3_malloc(sizeof(FileReports));
  if (reports == NULL) return SQLITE_NOMEM;
  memset(reports, 0, sizeof *reports);
  int rc = sqlite3_create_module_v2(db, "dirq_jsonl_file", &file_module, reports, reports_destroy);
  if (rc != SQLITE_OK) return rc;
  int flags = SQLITE_UTF8 | SQLITE_DIRECTONLY;
  rc = sqlite3_create_function(db, "dirq_jsonl_file_arm", 2, flags, reports, file_arm, NULL, NULL);
  if (rc != SQLITE_OK) return rc;
  return sqlite3_create_function(db, "dirq_jsonl_file_report", 0, flags, reports, file_report,
                                 NULL, NULL);
}

/* Registers dirq_jsonl, dirq_jsonl_keys and dirq_json_array_scan in `db` (from sqlite3_dirqrows_init). */
int dirq_register_jsonl(sqlite3 *db) {
  int rc = sqlite3_create_module(db, "dirq_jsonl", &jsonl_module, NULL);
  if (rc != SQLITE_OK) return rc;
  int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
  rc = sqlite3_create_function(db, "dirq_jsonl_keys", 3, flags, NULL, jsonl_keys, NULL, NULL);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_create_function(db, "dirq_json_array_scan", 2, flags, NULL, json_array_scan,
                               NULL, NULL);
  if (rc != SQLITE_OK) return rc;
  return register_jsonl_file(db);
}
