/*
 * dirq_csv: the records of a piece of a CSV or TSV file as rows inside SQLite, so that a table
 * build inserts a piece with one `INSERT ... SELECT` and no field passes through JavaScript.
 *
 * SELECT c0, c1, ... FROM dirq_csv(piece, delimiter, width, first_line[, text_fields])
 *   piece       blob: UTF-8 text of whole records (the caller checked the encoding, left out a
 *               byte-order mark and the header record)
 *   delimiter   text: ',' or a tab
 *   width       the header's field count: every record must have exactly as many fields
 *   first_line  the file's line number of the piece's first line (for messages)
 *   text_fields optional text, a '1' or '0' per field: a field marked '1' that is not empty is
 *               its text as written, however it reads (it goes to a TEXT column, where sqlite3's
 *               .import keeps `1.50` as it is written)
 * The rowid is the record's position in the piece, from 1.
 *
 * The rules are those of docs/formats.md, as the JavaScript reader applies them with csv-parse
 * (src/parse/formats/csv-rows.ts): RFC 4180 quoting (a quoted field may hold delimiters, line
 * breaks and doubled quotes), CRLF, LF or a lone CR ends a record, an empty line is skipped, and
 * a field is typed as `fieldKind` types it: empty is NULL, an integer as JSON writes one is an
 * INTEGER (one past 64 bits the nearest REAL), a real literal a REAL, anything else TEXT as
 * written. A record that breaks a rule stops the statement with an error whose message starts
 * "dirq_csv: line N: " and says what is wrong, in the words the JavaScript reader uses.
 *
 * Declared with DECLARED_COLUMNS value columns (SQLite allows 2000 in all); a file wider than
 * that is read by the JavaScript reader. It reads only its arguments, so it is registered in
 * the index's connection with dirq_rows (sqlite3_dirqrows_init in dirq-fs.c).
 */
#define _GNU_SOURCE
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3

#include <locale.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#ifdef __APPLE__
#include <xlocale.h>
#endif

#define DECLARED_COLUMNS 1995
#define ARG_PIECE (DECLARED_COLUMNS)
#define ARG_DELIMITER (DECLARED_COLUMNS + 1)
#define ARG_WIDTH (DECLARED_COLUMNS + 2)
#define ARG_FIRST_LINE (DECLARED_COLUMNS + 3)
#define ARG_TEXT_FIELDS (DECLARED_COLUMNS + 4)

/* Parses reals in the C locale whatever the process's locale says the decimal point is. */
static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void make_c_locale(void) {
  c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

enum { KIND_NULL, KIND_TEXT, KIND_INTEGER, KIND_LONG_INTEGER, KIND_REAL };

static int is_digit(unsigned char c) {
  return c >= '0' && c <= '9';
}

static int digits_end(const unsigned char *s, int at, int n) {
  while (at < n && is_digit(s[at])) at++;
  return at;
}

/* What a field is stored as: the same rules, step by step, as fieldKind in csv-rows.ts. */
static int field_kind(const unsigned char *s, int n) {
  if (n == 0) return KIND_NULL;
  int at = s[0] == '-' ? 1 : 0;
  int whole = at;
  if (at < n && s[at] == '0') at++;
  else if (at < n && s[at] >= '1' && s[at] <= '9') at = digits_end(s, at + 1, n);
  int whole_digits = at - whole;
  if (at == n) {
    if (whole_digits == 0) return KIND_TEXT;
    return n < 16 ? KIND_INTEGER : KIND_LONG_INTEGER;
  }
  unsigned char c = s[at];
  if (c == '.') {
    int fraction = at + 1;
    at = digits_end(s, fraction, n);
    if (whole_digits == 0 && at == fraction) return KIND_TEXT;
    if (at == n) return KIND_REAL;
    c = s[at];
  } else if (whole_digits == 0) {
    return KIND_TEXT;
  }
  if (c != 'e' && c != 'E') return KIND_TEXT;
  at++;
  if (at < n && (s[at] == '+' || s[at] == '-')) at++;
  int exponent = at;
  at = digits_end(s, exponent, n);
  return at == exponent || at != n ? KIND_TEXT : KIND_REAL;
}

/* Exact powers of ten as doubles (10^22 is the last one a double holds exactly). */
static const double POWERS_OF_TEN[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/*
 * A real literal with at most 15 digits in all and no exponent (`279.97`, `-0.5`): its digits
 * as an integer and its count of decimals, both exact as doubles, so one correctly rounded
 * division gives the nearest double, the same one strtod gives. Returns 0 for any other literal.
 */
static int short_decimal(const unsigned char *s, int n, double *value) {
  int at = s[0] == '-' ? 1 : 0;
  sqlite3_int64 digits = 0;
  int count = 0, decimals = -1;
  for (; at < n; at++) {
    unsigned char c = s[at];
    if (c == '.') {
      decimals = 0;
      continue;
    }
    if (!is_digit(c) || ++count > 15) return 0;
    digits = digits * 10 + (c - '0');
    if (decimals >= 0) decimals++;
  }
  double result = decimals > 0 ? (double)digits / POWERS_OF_TEN[decimals] : (double)digits;
  *value = s[0] == '-' ? -result : result;
  return 1;
}

/*
 * The nearest double to a number literal of `n` bytes, as JavaScript's Number reads it (also
 * for dirq-jsonl.c).
 */
double dirq_literal_double(const unsigned char *s, int n) {
  double quick;
  if (short_decimal(s, n, &quick)) return quick;
  char small[64];
  char *text = n < (int)sizeof small ? small : sqlite3_malloc(n + 1);
  if (text == NULL) return 0;
  memcpy(text, s, (size_t)n);
  text[n] = '\0';
  pthread_once(&c_locale_once, make_c_locale);
  double value = strtod_l(text, NULL, c_locale);
  if (text != small) sqlite3_free(text);
  return value;
}

/* An integer literal's value when it fits in 64 bits (returns 1), else 0 (also dirq-jsonl.c). */
int dirq_literal_int64(const unsigned char *s, int n, sqlite3_int64 *value) {
  int negative = s[0] == '-';
  /* Accumulated as a negative number, whose range is one wider than the positive one. */
  sqlite3_int64 total = 0;
  const sqlite3_int64 floor_div10 = (-9223372036854775807LL - 1) / 10;
  for (int at = negative; at < n; at++) {
    int digit = s[at] - '0';
    if (total < floor_div10) return 0;
    total *= 10;
    if (total < (-9223372036854775807LL - 1) + digit) return 0;
    total -= digit;
  }
  if (!negative) {
    if (total == -9223372036854775807LL - 1) return 0;
    total = -total;
  }
  *value = total;
  return 1;
}

/* A field as stored: its kind, and its number or where its text is. */
typedef struct {
  union {
    sqlite3_int64 integer;
    double real;
    struct {
      int start, length;
    } text;
  } as;
  unsigned char kind;      /* KIND_NULL, KIND_TEXT, KIND_INTEGER or KIND_REAL */
  unsigned char unescaped; /* text: in the reader's `unescaped` buffer, not in the piece */
} Value;

/* Where a record's field is in the piece, or (a quoted field with doubled quotes) unescaped. */
typedef struct {
  int start;
  int length;
  int unescaped;
} Field;

/* Reads a piece's records, one at a time. */
typedef struct {
  const unsigned char *data; /* the piece */
  int at, end;               /* the next byte to read, and the piece's length */
  unsigned char delimiter;
  unsigned char stops[256]; /* 1 for the bytes that end an unquoted field */
  int width;
  sqlite3_int64 line;       /* the file's line of the byte at `at` */
  Field *fields;            /* `width` of them */
  unsigned char *unescaped; /* as large as the piece: unescaped text never outgrows it */
  int unescaped_used;
  unsigned char *as_text; /* `width` flags, 1 for a field kept as its text; NULL for none */
} Reader;

/* A field's value as stored (see field_kind). */
static void field_value(const unsigned char *s, int n, Value *value) {
  sqlite3_int64 integer = 0;
  switch (field_kind(s, n)) {
  case KIND_NULL:
    value->kind = KIND_NULL;
    break;
  case KIND_TEXT:
    value->kind = KIND_TEXT;
    break;
  case KIND_INTEGER:
    /* Fewer than 16 characters: always within 64 bits. */
    for (int at = s[0] == '-'; at < n; at++) integer = integer * 10 + (s[at] - '0');
    value->kind = KIND_INTEGER;
    value->as.integer = s[0] == '-' ? -integer : integer;
    break;
  case KIND_LONG_INTEGER:
    if (dirq_literal_int64(s, n, &integer)) {
      value->kind = KIND_INTEGER;
      value->as.integer = integer;
    } else {
      value->kind = KIND_REAL;
      value->as.real = dirq_literal_double(s, n);
    }
    break;
  case KIND_REAL:
    value->kind = KIND_REAL;
    value->as.real = dirq_literal_double(s, n);
    break;
  }
}

/* The reader's current record as values (`width` of them). */
static void record_values(const Reader *reader, Value *values) {
  for (int i = 0; i < reader->width; i++) {
    const Field *field = &reader->fields[i];
    const unsigned char *base = field->unescaped ? reader->unescaped : reader->data;
    Value *value = &values[i];
    field_value(base + field->start, field->length, value);
    if (reader->as_text != NULL && reader->as_text[i] && value->kind != KIND_NULL) {
      value->kind = KIND_TEXT;
    }
    if (value->kind == KIND_TEXT) {
      value->as.text.start = field->start;
      value->as.text.length = field->length;
      value->unescaped = (unsigned char)field->unescaped;
    }
  }
}

/* `s` as JSON.stringify writes a string (the reader's messages quote fields that way). */
static void append_json_string(sqlite3_str *out, const unsigned char *s, int n) {
  sqlite3_str_appendchar(out, 1, '"');
  for (int i = 0; i < n; i++) {
    unsigned char c = s[i];
    switch (c) {
    case '"': sqlite3_str_appendall(out, "\\\""); break;
    case '\\': sqlite3_str_appendall(out, "\\\\"); break;
    case '\b': sqlite3_str_appendall(out, "\\b"); break;
    case '\f': sqlite3_str_appendall(out, "\\f"); break;
    case '\n': sqlite3_str_appendall(out, "\\n"); break;
    case '\r': sqlite3_str_appendall(out, "\\r"); break;
    case '\t': sqlite3_str_appendall(out, "\\t"); break;
    default:
      if (c < 0x20) sqlite3_str_appendf(out, "\\u%04x", c);
      else sqlite3_str_appendchar(out, 1, (char)c);
    }
  }
  sqlite3_str_appendchar(out, 1, '"');
}

/* The messages below start with this, for the caller to tell them from SQLite's own. */
#define ERROR_PREFIX "dirq_csv: line %lld: "

static char *inner_quote_message(const Reader *reader, int start) {
  sqlite3_str *out = sqlite3_str_new(NULL);
  sqlite3_str_appendf(out, ERROR_PREFIX "a quote inside an unquoted field ", reader->line);
  append_json_string(out, reader->data + start, reader->at - start);
  sqlite3_str_appendall(out, ": quote the whole field and double the quotes inside it");
  return sqlite3_str_finish(out);
}

/* Text after a closing quote: the character there (all its UTF-8 bytes). */
static char *after_quote_message(const Reader *reader) {
  int length = 1;
  unsigned char lead = reader->data[reader->at];
  if (lead >= 0xf0) length = 4;
  else if (lead >= 0xe0) length = 3;
  else if (lead >= 0xc0) length = 2;
  if (reader->at + length > reader->end) length = reader->end - reader->at;
  sqlite3_str *out = sqlite3_str_new(NULL);
  sqlite3_str_appendf(out, ERROR_PREFIX "text ", reader->line);
  append_json_string(out, reader->data + reader->at, length);
  sqlite3_str_appendall(out, " after a closing quote: a quoted field ends at its closing quote");
  return sqlite3_str_finish(out);
}

/* Line breaks in [from, to): LF, CRLF and a lone CR count one each. */
static sqlite3_int64 line_breaks(const unsigned char *data, int from, int to) {
  sqlite3_int64 count = 0;
  for (int i = from; i < to; i++) {
    if (data[i] == '\n') count++;
    else if (data[i] == '\r' && (i + 1 >= to || data[i + 1] != '\n')) count++;
  }
  return count;
}

/* Outcomes of reading a record. */
enum { READ_END, READ_RECORD, READ_ERROR };

/*
 * Reads a quoted field whose opening quote is at `at` into `field`; leaves `at` after its
 * closing quote. Doubled quotes inside it are unescaped into the reader's buffer.
 */
static int read_quoted(Reader *reader, Field *field, char **message) {
  const unsigned char *data = reader->data;
  sqlite3_int64 opened_on = reader->line;
  int start = reader->at + 1;
  int at = start;
  int doubled = 0;
  for (;;) {
    const unsigned char *quote = memchr(data + at, '"', (size_t)(reader->end - at));
    if (quote == NULL) {
      *message = sqlite3_mprintf(ERROR_PREFIX "a quoted field is still open at the end of the "
                                              "file (a missing closing quote, or a file cut short)",
                                 opened_on);
      return READ_ERROR;
    }
    int close = (int)(quote - data);
    reader->line += line_breaks(data, at, close);
    at = close + 1;
    if (at < reader->end && data[at] == '"') {
      doubled = 1;
      at++;
      continue;
    }
    break;
  }
  int length = at - 1 - start;
  field->unescaped = doubled;
  if (!doubled) {
    field->start = start;
    field->length = length;
  } else {
    unsigned char *out = reader->unescaped + reader->unescaped_used;
    int written = 0;
    for (int i = start; i < start + length; i++) {
      out[written++] = data[i];
      if (data[i] == '"') i++; /* the second of a doubled quote */
    }
    field->start = reader->unescaped_used;
    field->length = written;
    reader->unescaped_used += written;
  }
  reader->at = at;
  return READ_RECORD;
}

/*
 * Reads the next record's fields (skipping empty lines) into the reader's `fields`. At
 * READ_ERROR `*message` says which rule the record breaks (NULL when out of memory).
 */
static int read_record(Reader *reader, char **message) {
  const unsigned char *data = reader->data;
  for (;;) {
    if (reader->at >= reader->end) return READ_END;
    unsigned char c = data[reader->at];
    if (c == '\n') {
      reader->at++;
    } else if (c == '\r') {
      reader->at++;
      if (reader->at < reader->end && data[reader->at] == '\n') reader->at++;
    } else {
      break;
    }
    reader->line++;
  }
  int count = 0;
  Field extra;
  for (;;) {
    Field *field = count < reader->width ? &reader->fields[count] : &extra;
    if (reader->at < reader->end && data[reader->at] == '"') {
      if (read_quoted(reader, field, message) != READ_RECORD) return READ_ERROR;
      if (reader->at < reader->end) {
        unsigned char c = data[reader->at];
        if (c != reader->delimiter && c != '\n' && c != '\r') {
          *message = after_quote_message(reader);
          return READ_ERROR;
        }
      }
    } else {
      int start = reader->at;
      const unsigned char *byte = data + start;
      const unsigned char *end = data + reader->end;
      while (byte < end && !reader->stops[*byte]) byte++;
      reader->at = (int)(byte - data);
      if (byte < end && *byte == '"') {
        *message = inner_quote_message(reader, start);
        return READ_ERROR;
      }
      field->start = start;
      field->length = reader->at - start;
      field->unescaped = 0;
    }
    count++;
    if (reader->at < reader->end && data[reader->at] == reader->delimiter) {
      reader->at++;
      continue;
    }
    break;
  }
  if (count != reader->width) {
    *message = sqlite3_mprintf(ERROR_PREFIX "%d field%s, but the header has %d", reader->line, count,
                               count == 1 ? "" : "s", reader->width);
    return READ_ERROR;
  }
  /* The record's line break, if any (the piece may end without one). */
  if (reader->at < reader->end) {
    if (data[reader->at] == '\r' && reader->at + 1 < reader->end && data[reader->at + 1] == '\n') {
      reader->at++;
    }
    reader->at++;
    reader->line++;
  }
  return READ_RECORD;
}

/*
 * Reading ahead: a piece of AHEAD_BYTES or more is read and typed on a thread of its own while
 * SQLite inserts the records already read, so the parse and the inserts share two cores. The
 * thread fills chunks of CHUNK_RECORDS records and says how many are ready every
 * PUBLISH_RECORDS; a record that breaks a rule ends it, and its message waits for the cursor
 * to reach that record. Smaller pieces (a small file is one) are read on SQLite's thread.
 */
#define AHEAD_BYTES (256 * 1024)
#define CHUNK_RECORDS 1024
#define PUBLISH_RECORDS 128

typedef struct {
  pthread_t thread;
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  Value **chunks;     /* enough slots for the most records a piece can hold */
  int chunk_slots;
  sqlite3_int64 ready; /* records read and typed: guarded by the mutex */
  int done;            /* no more records will come: guarded by the mutex */
  int stop;            /* the cursor no longer wants them: guarded by the mutex */
  char *error;         /* at `done`: why the record at `ready` was refused, or NULL */
  int failed;          /* at `done`: a record was refused (error NULL: out of memory) */
} Ahead;

typedef struct {
  sqlite3_vtab_cursor base;
  Reader reader;
  const unsigned char *data; /* the piece the reader reads: a bound parameter's bytes, or `owned` */
  unsigned char *owned;      /* a copy of a piece that was not a bound BLOB, else NULL */
  Value *values;       /* read here: the current record's values */
  Ahead *ahead;        /* read ahead: the thread's state, else NULL */
  sqlite3_int64 seen_ready; /* records known to be ready (read ahead) */
  const Value *current;     /* the current record's values */
  sqlite3_int64 row;        /* its position in the piece, from 1 */
  int eof;
} CsvCursor;

static void *read_ahead(void *argument) {
  CsvCursor *csv = argument;
  Ahead *ahead = csv->ahead;
  Reader *reader = &csv->reader;
  sqlite3_int64 count = 0;
  int outcome = READ_RECORD;
  char *message = NULL;
  int stop = 0;
  while (!stop) {
    int slot = (int)(count / CHUNK_RECORDS);
    if (count % CHUNK_RECORDS == 0 && ahead->chunks[slot] == NULL) {
      ahead->chunks[slot] = sqlite3_malloc64(sizeof(Value) * CHUNK_RECORDS * reader->width);
      if (ahead->chunks[slot] == NULL) outcome = READ_ERROR;
    }
    if (outcome == READ_RECORD) outcome = read_record(reader, &message);
    if (outcome == READ_RECORD) {
      record_values(reader, ahead->chunks[slot] + (count % CHUNK_RECORDS) * reader->width);
      count++;
    }
    if (outcome != READ_RECORD || count % PUBLISH_RECORDS == 0) {
      pthread_mutex_lock(&ahead->mutex);
      ahead->ready = count;
      if (outcome != READ_RECORD) {
        ahead->done = 1;
        ahead->failed = outcome == READ_ERROR;
        ahead->error = message;
      }
      stop = ahead->stop || ahead->done;
      pthread_cond_signal(&ahead->cond);
      pthread_mutex_unlock(&ahead->mutex);
    }
  }
  return NULL;
}

/* Stops and joins the reading thread, and frees what it read. */
static void ahead_end(CsvCursor *csv) {
  Ahead *ahead = csv->ahead;
  if (ahead == NULL) return;
  pthread_mutex_lock(&ahead->mutex);
  ahead->stop = 1;
  pthread_mutex_unlock(&ahead->mutex);
  pthread_join(ahead->thread, NULL);
  for (int i = 0; i < ahead->chunk_slots; i++) sqlite3_free(ahead->chunks[i]);
  sqlite3_free(ahead->chunks);
  sqlite3_free(ahead->error);
  pthread_mutex_destroy(&ahead->mutex);
  pthread_cond_destroy(&ahead->cond);
  sqlite3_free(ahead);
  csv->ahead = NULL;
}

/* Starts reading the piece ahead on a thread: SQLITE_OK, or SQLITE_NOMEM and no thread. */
static int ahead_start(CsvCursor *csv) {
  Ahead *ahead = sqlite3_malloc(sizeof(Ahead));
  if (ahead == NULL) return SQLITE_NOMEM;
  memset(ahead, 0, sizeof *ahead);
  /* A record takes two bytes at least (a field and its line break), but the last. */
  sqlite3_int64 most = csv->reader.end / 2 + 1;
  ahead->chunk_slots = (int)(most / CHUNK_RECORDS + 1);
  ahead->chunks = sqlite3_malloc64(sizeof(Value *) * (sqlite3_uint64)ahead->chunk_slots);
  if (ahead->chunks == NULL) {
    sqlite3_free(ahead);
    return SQLITE_NOMEM;
  }
  memset(ahead->chunks, 0, sizeof(Value *) * (size_t)ahead->chunk_slots);
  pthread_mutex_init(&ahead->mutex, NULL);
  pthread_cond_init(&ahead->cond, NULL);
  csv->ahead = ahead;
  if (pthread_create(&ahead->thread, NULL, read_ahead, csv) != 0) {
    pthread_mutex_destroy(&ahead->mutex);
    pthread_cond_destroy(&ahead->cond);
    sqlite3_free(ahead->chunks);
    sqlite3_free(ahead);
    csv->ahead = NULL;
    return SQLITE_NOMEM;
  }
  return SQLITE_OK;
}

/* In dirq-fs.c: connecting and disconnecting a table that reads only its arguments. */
int dirq_connect_innocuous(sqlite3 *db, const char *schema, sqlite3_vtab **table);
int dirq_disconnect(sqlite3_vtab *table);

static int csv_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                       sqlite3_vtab **table, char **error) {
  (void)aux;
  (void)argc;
  (void)argv;
  (void)error;
  sqlite3_str *schema = sqlite3_str_new(db);
  sqlite3_str_appendall(schema, "CREATE TABLE x(");
  for (int i = 0; i < DECLARED_COLUMNS; i++) sqlite3_str_appendf(schema, "c%d,", i);
  sqlite3_str_appendall(schema, "piece HIDDEN, delimiter HIDDEN, width HIDDEN, first_line HIDDEN, "
                                "text_fields HIDDEN)");
  char *text = sqlite3_str_finish(schema);
  if (text == NULL) return SQLITE_NOMEM;
  int rc = dirq_connect_innocuous(db, text, table);
  sqlite3_free(text);
  return rc;
}

/* The first four arguments are required, in order; text_fields may follow. */
static int csv_best_index(sqlite3_vtab *table, sqlite3_index_info *info) {
  (void)table;
  int seen = 0;
  for (int i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *constraint = &info->aConstraint[i];
    int argument = constraint->iColumn - ARG_PIECE;
    if (argument < 0 || constraint->op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    if (!constraint->usable) return SQLITE_CONSTRAINT;
    info->aConstraintUsage[i].argvIndex = argument + 1;
    info->aConstraintUsage[i].omit = 1;
    seen |= 1 << argument;
  }
  if ((seen & 15) != 15) return SQLITE_CONSTRAINT;
  info->estimatedCost = 1000;
  info->estimatedRows = 10000;
  return SQLITE_OK;
}

static int csv_open(sqlite3_vtab *table, sqlite3_vtab_cursor **cursor) {
  (void)table;
  CsvCursor *csv = sqlite3_malloc(sizeof(CsvCursor));
  if (csv == NULL) return SQLITE_NOMEM;
  memset(csv, 0, sizeof *csv);
  csv->eof = 1;
  *cursor = &csv->base;
  return SQLITE_OK;
}

static void csv_release(CsvCursor *csv) {
  ahead_end(csv);
  sqlite3_free(csv->owned);
  sqlite3_free(csv->reader.fields);
  sqlite3_free(csv->reader.unescaped);
  sqlite3_free(csv->reader.as_text);
  sqlite3_free(csv->values);
  csv->data = NULL;
  csv->owned = NULL;
  csv->values = NULL;
  memset(&csv->reader, 0, sizeof csv->reader);
}

static int csv_close(sqlite3_vtab_cursor *cursor) {
  CsvCursor *csv = (CsvCursor *)cursor;
  csv_release(csv);
  sqlite3_free(csv);
  return SQLITE_OK;
}

/* Stops the statement with `message` (sqlite3_mprintf'd; NULL when out of memory). */
static int csv_fail(CsvCursor *csv, char *message) {
  sqlite3_vtab *table = csv->base.pVtab;
  sqlite3_free(table->zErrMsg);
  table->zErrMsg = message;
  csv->eof = 1;
  return message == NULL ? SQLITE_NOMEM : SQLITE_ERROR;
}

/* The next record from the reading thread, waiting for it when it is not read yet. */
static int next_read_ahead(CsvCursor *csv) {
  Ahead *ahead = csv->ahead;
  sqlite3_int64 index = csv->row; /* the record wanted, from 0 */
  if (index >= csv->seen_ready) {
    pthread_mutex_lock(&ahead->mutex);
    while (ahead->ready <= index && !ahead->done) pthread_cond_wait(&ahead->cond, &ahead->mutex);
    csv->seen_ready = ahead->ready;
    int done = ahead->done, failed = ahead->failed;
    char *error = ahead->error;
    if (index >= csv->seen_ready && failed) ahead->error = NULL; /* passed on below */
    pthread_mutex_unlock(&ahead->mutex);
    if (index >= csv->seen_ready) {
      if (done && failed) return csv_fail(csv, error);
      csv->eof = 1;
      return SQLITE_OK;
    }
  }
  csv->current = ahead->chunks[index / CHUNK_RECORDS] + (index % CHUNK_RECORDS) * csv->reader.width;
  csv->row++;
  return SQLITE_OK;
}

/* Moves to the next record, or to the end. */
static int csv_next(sqlite3_vtab_cursor *cursor) {
  CsvCursor *csv = (CsvCursor *)cursor;
  if (csv->ahead != NULL) return next_read_ahead(csv);
  char *message = NULL;
  switch (read_record(&csv->reader, &message)) {
  case READ_END:
    csv->eof = 1;
    return SQLITE_OK;
  case READ_ERROR:
    return csv_fail(csv, message);
  default:
    record_values(&csv->reader, csv->values);
    csv->current = csv->values;
    csv->row++;
    return SQLITE_OK;
  }
}

static int csv_filter(sqlite3_vtab_cursor *cursor, int idx_num, const char *idx_text, int argc,
                      sqlite3_value **argv) {
  (void)idx_num;
  (void)idx_text;
  CsvCursor *csv = (CsvCursor *)cursor;
  csv_release(csv);
  csv->eof = 1;
  csv->row = 0;
  csv->seen_ready = 0;
  if (argc < 4) return SQLITE_OK;
  const char *delimiter = (const char *)sqlite3_value_text(argv[1]);
  sqlite3_int64 width = sqlite3_value_int64(argv[2]);
  if (delimiter == NULL || (delimiter[0] != ',' && delimiter[0] != '\t') || width < 1 ||
      width > DECLARED_COLUMNS) {
    return csv_fail(csv, sqlite3_mprintf("dirq_csv: takes a piece, ',' or a tab, a width from 1 "
                                         "to %d and a line number",
                                         DECLARED_COLUMNS));
  }
  int bytes = sqlite3_value_bytes(argv[0]);
  const void *piece = sqlite3_value_blob(argv[0]);
  /*
   * A bound parameter is read where SQLite keeps it, unchanged until the statement is reset
   * (the read-ahead thread ends at the cursor's close, before that): a copy would cost the
   * piece's size again (a 100 MB field). Any other value is copied.
   */
  if (sqlite3_value_frombind(argv[0]) && sqlite3_value_type(argv[0]) == SQLITE_BLOB) {
    csv->data = (const unsigned char *)piece;
  } else {
    csv->owned = sqlite3_malloc64((sqlite3_uint64)bytes + 1);
    if (csv->owned == NULL) return SQLITE_NOMEM;
    if (bytes > 0) memcpy(csv->owned, piece, (size_t)bytes);
    csv->data = csv->owned;
  }
  csv->values = sqlite3_malloc64(sizeof(Value) * (sqlite3_uint64)width);
  Reader *reader = &csv->reader;
  reader->fields = sqlite3_malloc64(sizeof(Field) * (sqlite3_uint64)width);
  reader->unescaped = sqlite3_malloc64((sqlite3_uint64)bytes + 1);
  if (csv->values == NULL || reader->fields == NULL || reader->unescaped == NULL) {
    return SQLITE_NOMEM;
  }
  const unsigned char *marks = argc > 4 ? sqlite3_value_text(argv[4]) : NULL;
  if (marks != NULL) {
    int given = sqlite3_value_bytes(argv[4]);
    reader->as_text = sqlite3_malloc64((sqlite3_uint64)width);
    if (reader->as_text == NULL) return SQLITE_NOMEM;
    for (int i = 0; i < width; i++) reader->as_text[i] = i < given && marks[i] == '1';
  }
  reader->data = csv->data;
  reader->at = 0;
  reader->end = bytes;
  reader->delimiter = (unsigned char)delimiter[0];
  memset(reader->stops, 0, sizeof reader->stops);
  reader->stops[reader->delimiter] = reader->stops['\n'] = reader->stops['\r'] = 1;
  reader->stops['"'] = 1;
  reader->width = (int)width;
  reader->line = sqlite3_value_int64(argv[3]);
  csv->eof = 0;
  if (bytes >= AHEAD_BYTES && ahead_start(csv) != SQLITE_OK) return SQLITE_NOMEM;
  return csv_next(cursor);
}

static int csv_eof(sqlite3_vtab_cursor *cursor) {
  return ((CsvCursor *)cursor)->eof;
}

static int csv_column(sqlite3_vtab_cursor *cursor, sqlite3_context *context, int column) {
  CsvCursor *csv = (CsvCursor *)cursor;
  if (column >= csv->reader.width) return SQLITE_OK; /* the arguments read as NULL */
  const Value *value = &csv->current[column];
  switch (value->kind) {
  case KIND_TEXT: {
    const unsigned char *base = value->unescaped ? csv->reader.unescaped : csv->data;
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

static int csv_rowid(sqlite3_vtab_cursor *cursor, sqlite3_int64 *rowid) {
  *rowid = ((CsvCursor *)cursor)->row;
  return SQLITE_OK;
}

static sqlite3_module csv_module = {
    0,              /* iVersion */
    NULL,           /* xCreate: eponymous only */
    csv_connect,    /* xConnect */
    csv_best_index, /* xBestIndex */
    dirq_disconnect, /* xDisconnect */
    NULL,           /* xDestroy */
    csv_open,       /* xOpen */
    csv_close,      /* xClose */
    csv_filter,     /* xFilter */
    csv_next,       /* xNext */
    csv_eof,        /* xEof */
    csv_column,     /* xColumn */
    csv_rowid,      /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};

/* Registers dirq_csv in `db` (from sqlite3_dirqrows_init). */
int dirq_register_csv(sqlite3 *db) {
  return sqlite3_create_module(db, "dirq_csv", &csv_module, NULL);
}
