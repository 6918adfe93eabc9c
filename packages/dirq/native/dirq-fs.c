/*
 * dirq_fs: a SQLite extension with the two file system calls a path-table fill makes per
 * file, done in C: stats of a batch of files (dirq_stat_batch) and the listing of a folder
 * (dirq_list_dir).
 *
 * Why native: in a million-file fill, Node's JavaScript around each `fs.statSync` (path
 * checks, a `Stats` object with four `Date`s) costs about a third as much CPU as the system
 * call itself, and `fs.readdirSync` makes a `Dirent` per entry in C++ that the walk then
 * sorts again (bench/README.md, "Stat fills" and "Native file system calls"). One SQL call
 * per batch or folder does the work here and hands back plain numbers or one string, so a
 * fill pays the system calls and little else.
 *
 * SELECT dirq_stat_batch(prefix, paths)
 *   prefix  text put before every path ('' for paths relative to the working directory)
 *   paths   text: the paths, separated by NUL characters (one path when there is no NUL)
 * returns a blob of 3 native-endian doubles per path: size in bytes, mtime and ctime in whole
 * Unix seconds (the kernel's seconds field: already floored, also before 1970). Symlinks are
 * followed. A path that is missing, is not a regular file or cannot be stat'ed gets NaN as
 * its size (and zero times), and dirq drops it, exactly as its JavaScript fallback does
 * (src/scan/file-stats.ts).
 *
 * SELECT dirq_list_dir(path): see list_dir below.
 *
 * It reads metadata only: it never opens a file's contents, and writes and changes nothing.
 * dirq loads it only into private in-memory connections, never into one that runs user SQL.
 */
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#define FIELDS 3

static void stat_batch(sqlite3_context *context, int argc, sqlite3_value **argv) {
  (void)argc;
  const char *prefix = (const char *)sqlite3_value_text(argv[0]);
  int prefix_bytes = sqlite3_value_bytes(argv[0]);
  const char *paths = (const char *)sqlite3_value_text(argv[1]);
  int paths_bytes = sqlite3_value_bytes(argv[1]);
  if (prefix == NULL || paths == NULL) {
    sqlite3_result_error(context, "dirq_stat_batch: prefix and paths must be text", -1);
    return;
  }
  if (paths_bytes == 0) {
    sqlite3_result_zeroblob(context, 0);
    return;
  }
  sqlite3_int64 count = 1;
  for (int i = 0; i < paths_bytes; i++) {
    if (paths[i] == '\0') count++;
  }
  double *out = sqlite3_malloc64((sqlite3_uint64)count * FIELDS * sizeof(double));
  /* The longest name: the prefix and all the paths, with the terminating NUL. */
  char *name = sqlite3_malloc64((sqlite3_uint64)prefix_bytes + paths_bytes + 1);
  if (out == NULL || name == NULL) {
    sqlite3_free(out);
    sqlite3_free(name);
    sqlite3_result_error_nomem(context);
    return;
  }
  memcpy(name, prefix, prefix_bytes);
  const char *path = paths;
  const char *end = paths + paths_bytes;
  for (sqlite3_int64 i = 0; i < count; i++) {
    const char *stop = memchr(path, '\0', end - path);
    if (stop == NULL) stop = end;
    size_t length = stop - path;
    memcpy(name + prefix_bytes, path, length);
    name[prefix_bytes + length] = '\0';
    double *row = out + i * FIELDS;
    struct stat info;
    if (stat(name, &info) != 0 || !S_ISREG(info.st_mode)) {
      row[0] = NAN;
      row[1] = 0;
      row[2] = 0;
    } else {
      row[0] = (double)info.st_size;
      row[1] = (double)info.st_mtime;
      row[2] = (double)info.st_ctime;
    }
    path = stop + 1;
  }
  sqlite3_free(name);
  sqlite3_result_blob64(context, out, (sqlite3_uint64)count * FIELDS * sizeof(double), sqlite3_free);
}


/* A growing byte buffer for dirq_list_dir's answer. */
typedef struct {
  char *bytes;
  sqlite3_int64 length;
  sqlite3_int64 capacity;
} Buffer;

static int buffer_append(Buffer *buffer, const char *bytes, sqlite3_int64 length) {
  if (buffer->length + length > buffer->capacity) {
    sqlite3_int64 capacity = buffer->capacity * 2 + length + 4096;
    char *grown = sqlite3_realloc64(buffer->bytes, (sqlite3_uint64)capacity);
    if (grown == NULL) return 0;
    buffer->bytes = grown;
    buffer->capacity = capacity;
  }
  memcpy(buffer->bytes + buffer->length, bytes, (size_t)length);
  buffer->length += length;
  return 1;
}

static char entry_type(DIR *dir, const struct dirent *entry) {
  unsigned char type = entry->d_type;
  if (type == DT_UNKNOWN) {
    struct stat info;
    if (fstatat(dirfd(dir), entry->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0) return 'o';
    if (S_ISDIR(info.st_mode)) return 'd';
    if (S_ISREG(info.st_mode)) return 'f';
    if (S_ISLNK(info.st_mode)) return 'l';
    return 'o';
  }
  if (type == DT_DIR) return 'd';
  if (type == DT_REG) return 'f';
  if (type == DT_LNK) return 'l';
  return 'o';
}

/*
 * One listed entry: its type letter and its name, first as an offset in the names buffer
 * (which grows while the folder is read), then as a pointer (to sort without shared state:
 * two threads may list at once).
 */
typedef struct {
  sqlite3_int64 offset;
  const char *name;
  char type;
} Listed;

static int by_name(const void *a, const void *b) {
  return strcmp(((const Listed *)a)->name, ((const Listed *)b)->name);
}

/*
 * SELECT dirq_list_dir(path): the entries of a folder but `.` and `..`, sorted by name (byte
 * order), as text: one type letter per entry (d folder, f regular file, l symlink, o other),
 * then for each entry a NUL and its name. NULL when the folder cannot be read (the caller
 * reads it again from JavaScript for the error). Names are passed as the file system has them.
 */
static void list_dir(sqlite3_context *context, int argc, sqlite3_value **argv) {
  (void)argc;
  const char *path = (const char *)sqlite3_value_text(argv[0]);
  if (path == NULL) return;
  DIR *dir = opendir(path);
  if (dir == NULL) return;
  Buffer names = {0}, listed = {0};
  int ok = 1, failed = 0;
  struct dirent *entry;
  for (;;) {
    errno = 0;
    entry = readdir(dir);
    if (entry == NULL) {
      /* A read error part-way: no partial listing (Node then reports the error). */
      if (errno != 0) failed = 1;
      break;
    }
    const char *name = entry->d_name;
    if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
    Listed item = {names.length, NULL, entry_type(dir, entry)};
    ok = buffer_append(&names, name, (sqlite3_int64)strlen(name) + 1) &&
         buffer_append(&listed, (const char *)&item, sizeof item);
    if (!ok) break;
  }
  closedir(dir);
  if (failed) {
    sqlite3_free(names.bytes);
    sqlite3_free(listed.bytes);
    return;
  }
  sqlite3_int64 count = listed.length / (sqlite3_int64)sizeof(Listed);
  Listed *items = (Listed *)listed.bytes;
  Buffer out = {0};
  if (ok && count > 0) {
    for (sqlite3_int64 i = 0; i < count; i++) items[i].name = names.bytes + items[i].offset;
    qsort(items, (size_t)count, sizeof(Listed), by_name);
    for (sqlite3_int64 i = 0; ok && i < count; i++) ok = buffer_append(&out, &items[i].type, 1);
    for (sqlite3_int64 i = 0; ok && i < count; i++) {
      const char *name = items[i].name;
      ok = buffer_append(&out, "", 1) && buffer_append(&out, name, (sqlite3_int64)strlen(name));
    }
  }
  sqlite3_free(names.bytes);
  sqlite3_free(listed.bytes);
  if (!ok) {
    sqlite3_free(out.bytes);
    sqlite3_result_error_nomem(context);
    return;
  }
  if (out.bytes == NULL) {
    sqlite3_result_text(context, "", 0, SQLITE_STATIC);
    return;
  }
  sqlite3_result_text64(context, out.bytes, (sqlite3_uint64)out.length, sqlite3_free, SQLITE_UTF8);
}

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_dirqfs_init(sqlite3 *db, char **error, const sqlite3_api_routines *api) {
  SQLITE_EXTENSION_INIT2(api);
  (void)error;
  int rc = sqlite3_create_function(db, "dirq_stat_batch", 2, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                                   NULL, stat_batch, NULL, NULL);
  if (rc != SQLITE_OK) return rc;
  return sqlite3_create_function(db, "dirq_list_dir", 1, SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL,
                                 list_dir, NULL, NULL);
}
