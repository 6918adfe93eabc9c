/*
 * dirq_stat: a SQLite extension that stats a batch of files in one call.
 *
 * Why native: in a million-file stat fill, Node's JavaScript around each `fs.statSync` (path
 * checks, a `Stats` object with four `Date`s) costs about a third as much CPU as the system
 * call itself (bench/README.md, "Stat fills"). One SQL call per batch of paths does the stats
 * here and hands back plain numbers, so a fill pays the system calls and little else.
 *
 * SELECT dirq_stat_batch(prefix, paths)
 *   prefix  text put before every path ('' for paths relative to the working directory)
 *   paths   text: the paths, separated by NUL characters (one path when there is no NUL)
 * returns a blob of 3 native-endian doubles per path: size in bytes, mtime and ctime in whole
 * Unix seconds (the kernel's seconds field: already floored, also before 1970). Symlinks are
 * followed. A path that is missing, is not a regular file or cannot be stat'ed gets NaN as its
 * size (and zero times), and dirq drops it, exactly as its JavaScript fallback does (src/scan/file-stats.ts).
 *
 * It reads file metadata only: it opens, writes and changes nothing.
 */
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include <math.h>
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

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_dirqstat_init(sqlite3 *db, char **error, const sqlite3_api_routines *api) {
  SQLITE_EXTENSION_INIT2(api);
  (void)error;
  return sqlite3_create_function(db, "dirq_stat_batch", 2, SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL,
                                 stat_batch, NULL, NULL);
}
