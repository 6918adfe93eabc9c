/*
 * dirq_fs: a SQLite extension with the two file system calls a path-table fill makes per
 * file, done in C: stats of a batch of files (dirq_stat_batch) and the listing of a folder
 * (dirq_list_dir), read ahead on threads of its own; and the table that turns a batch into
 * rows inside SQLite (dirq_rows).
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
 * SELECT dirq_check_folder(path, since): a folder's entries with a signature of each one's lstat, see
 * check_folder below.
 *
 * SELECT ... FROM dirq_rows(paths, stats): a batch's rows, see below.
 *
 * SELECT ... FROM dirq_blank_rows(count): that many rows without values, see below.
 *
 * SELECT dirq_trim_memory(): see trim_memory below.
 *
 * It reads metadata only: it never opens a file's contents, and writes and changes nothing.
 * dirq loads the file system calls (sqlite3_dirqfs_init) only into private in-memory
 * connections, never into one that runs user SQL. The index's connection gets only dirq_rows
 * and dirq_blank_rows (sqlite3_dirqrows_init), which read nothing but their arguments, and
 * dirq_csv (dirq-csv.c, built into the same library), which turns a CSV piece into rows.
 */
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#define FIELDS 3

/* A stat's nanosecond times: Linux's names, and macOS's. */
#if defined(__APPLE__)
#define MTIME_OF(info) ((info)->st_mtimespec)
#define CTIME_OF(info) ((info)->st_ctimespec)
#else
#define MTIME_OF(info) ((info)->st_mtim)
#define CTIME_OF(info) ((info)->st_ctim)
#endif

/* dirq_csv, in dirq-csv.c: a CSV piece's records as rows. */
int dirq_register_csv(sqlite3 *db);
int dirq_register_jsonl(sqlite3 *db);

/* Stats `count` NUL-separated paths (each after `prefix`) into `out`: FIELDS doubles each. */
static void stat_into(const char *prefix, int prefix_bytes, const char *paths, int paths_bytes,
                      sqlite3_int64 count, double *out, char *name) {
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
}

static sqlite3_int64 count_paths(const char *paths, int paths_bytes) {
  sqlite3_int64 count = 1;
  for (int i = 0; i < paths_bytes; i++) {
    if (paths[i] == '\0') count++;
  }
  return count;
}

/*
 * Stats a batch into a new buffer of FIELDS doubles per path (sqlite3_malloc64'd, `*bytes`
 * long); NULL when memory ran out. An empty `paths` is no path.
 */
static double *stat_batch_buffer(const char *prefix, int prefix_bytes, const char *paths,
                                 int paths_bytes, sqlite3_int64 *bytes) {
  sqlite3_int64 count = paths_bytes == 0 ? 0 : count_paths(paths, paths_bytes);
  *bytes = count * FIELDS * (sqlite3_int64)sizeof(double);
  double *out = sqlite3_malloc64(count == 0 ? 1 : (sqlite3_uint64)*bytes);
  /* The longest name: the prefix and all the paths, with the terminating NUL. */
  char *name = sqlite3_malloc64((sqlite3_uint64)prefix_bytes + paths_bytes + 1);
  if (out == NULL || name == NULL) {
    sqlite3_free(out);
    sqlite3_free(name);
    return NULL;
  }
  if (count > 0) stat_into(prefix, prefix_bytes, paths, paths_bytes, count, out, name);
  sqlite3_free(name);
  return out;
}

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
  sqlite3_int64 bytes;
  double *out = stat_batch_buffer(prefix, prefix_bytes, paths, paths_bytes, &bytes);
  if (out == NULL) {
    sqlite3_result_error_nomem(context);
    return;
  }
  sqlite3_result_blob64(context, out, (sqlite3_uint64)bytes, sqlite3_free);
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

/* What list_into found. */
enum { LISTED = 0, UNREADABLE = 1, NO_MEMORY = 2 };

/*
 * The listing of a folder (see dirq_list_dir below) into `out` (empty when the folder has no
 * entries): LISTED, UNREADABLE (the caller reads it again from JavaScript for the error), or
 * NO_MEMORY. Touches no SQLite state but its allocator, so the read-ahead thread runs it too.
 */
static int list_into(const char *path, Buffer *out) {
  DIR *dir = opendir(path);
  if (dir == NULL) return UNREADABLE;
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
    return UNREADABLE;
  }
  sqlite3_int64 count = listed.length / (sqlite3_int64)sizeof(Listed);
  Listed *items = (Listed *)listed.bytes;
  if (ok && count > 0) {
    for (sqlite3_int64 i = 0; i < count; i++) items[i].name = names.bytes + items[i].offset;
    qsort(items, (size_t)count, sizeof(Listed), by_name);
    for (sqlite3_int64 i = 0; ok && i < count; i++) ok = buffer_append(out, &items[i].type, 1);
    for (sqlite3_int64 i = 0; ok && i < count; i++) {
      const char *name = items[i].name;
      ok = buffer_append(out, "", 1) && buffer_append(out, name, (sqlite3_int64)strlen(name));
    }
  }
  sqlite3_free(names.bytes);
  sqlite3_free(listed.bytes);
  if (!ok) {
    sqlite3_free(out->bytes);
    out->bytes = NULL;
    out->length = 0;
    return NO_MEMORY;
  }
  return LISTED;
}

/* Hands a listing to SQLite as the function's text result (taking the buffer). */
static void result_listing(sqlite3_context *context, int status, Buffer *out) {
  if (status == UNREADABLE) return;
  if (status == NO_MEMORY) {
    sqlite3_result_error_nomem(context);
    return;
  }
  if (out->bytes == NULL) {
    sqlite3_result_text(context, "", 0, SQLITE_STATIC);
    return;
  }
  sqlite3_result_text64(context, out->bytes, (sqlite3_uint64)out->length, sqlite3_free,
                        SQLITE_UTF8);
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
  Buffer out = {0};
  result_listing(context, list_into(path, &out), &out);
}

/* A 64-bit mix of one value into a running signature (splitmix64's finalizer). */
static sqlite3_uint64 mix(sqlite3_uint64 seed, sqlite3_uint64 value) {
  sqlite3_uint64 z = seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* What a file's change changes: size, both times to the nanosecond, inode, mode. */
static sqlite3_uint64 stat_signature(const struct stat *info) {
  sqlite3_uint64 h = mix(0, (sqlite3_uint64)info->st_size);
  h = mix(h, (sqlite3_uint64)MTIME_OF(info).tv_sec);
  h = mix(h, (sqlite3_uint64)MTIME_OF(info).tv_nsec);
  h = mix(h, (sqlite3_uint64)CTIME_OF(info).tv_sec);
  h = mix(h, (sqlite3_uint64)CTIME_OF(info).tv_nsec);
  h = mix(h, (sqlite3_uint64)info->st_ino);
  return mix(h, (sqlite3_uint64)info->st_mode);
}

/* One entry of a folder's check: its name (offset, then pointer, as Listed), type, signature. */
typedef struct {
  sqlite3_int64 offset;
  const char *name;
  char type;
  sqlite3_uint64 signature;
} Checked;

static int checked_by_name(const void *a, const void *b) {
  return strcmp(((const Checked *)a)->name, ((const Checked *)b)->name);
}

/*
 * Reads one entry for check_into: its type, and for what is not a folder its lstat's
 * signature, relative to the open folder (no path resolved from the root per file). 0 when
 * it went away between the listing and the stat (the next check reads it as gone).
 */
static int check_entry(DIR *dir, const struct dirent *entry, double since, Checked *item) {
  unsigned char type = entry->d_type;
  if (type == DT_DIR) {
    item->type = 'd';
    item->signature = 0;
    return 1;
  }
  struct stat info;
  if (fstatat(dirfd(dir), entry->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0) return 0;
  item->type = S_ISDIR(info.st_mode)   ? 'd'
               : S_ISREG(info.st_mode) ? 'f'
               : S_ISLNK(info.st_mode) ? 'l'
                                       : 'o';
  item->signature = item->type == 'd' ? 0 : stat_signature(&info);
  double mtime = (double)MTIME_OF(&info).tv_sec * 1e3 + (double)MTIME_OF(&info).tv_nsec / 1e6;
  double ctime = (double)CTIME_OF(&info).tv_sec * 1e3 + (double)CTIME_OF(&info).tv_nsec / 1e6;
  /* Changed at or after `since`: the letter in upper case. */
  if (item->type != 'd' && since >= 0 && (mtime >= since || ctime >= since)) item->type -= 32;
  return 1;
}

/* The entries of check_into, sorted by name, written out in dirq_check_folder's form. */
static int write_checked(Checked *items, sqlite3_int64 count, const char *names, Buffer *out) {
  int ok = 1;
  for (sqlite3_int64 i = 0; i < count; i++) items[i].name = names + items[i].offset;
  if (count > 0) qsort(items, (size_t)count, sizeof(Checked), checked_by_name);
  for (sqlite3_int64 i = 0; ok && i < count; i++) {
    const char *name = items[i].name;
    ok = buffer_append(out, &items[i].type, 1) &&
         buffer_append(out, name, (sqlite3_int64)strlen(name) + 1);
    if (ok && items[i].type != 'd') {
      unsigned char bytes[8];
      for (int b = 0; b < 8; b++) bytes[b] = (unsigned char)(items[i].signature >> (8 * b));
      ok = buffer_append(out, (const char *)bytes, 8);
    }
  }
  return ok;
}

/* dirq_check_folder's answer into `out`: LISTED, UNREADABLE or NO_MEMORY, as list_into. */
static int check_into(const char *path, double since, Buffer *out) {
  DIR *dir = opendir(path);
  if (dir == NULL) return UNREADABLE;
  Buffer names = {0}, checked = {0};
  int ok = 1, failed = 0;
  for (;;) {
    errno = 0;
    struct dirent *entry = readdir(dir);
    if (entry == NULL) {
      if (errno != 0) failed = 1;
      break;
    }
    const char *name = entry->d_name;
    if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
    Checked item = {names.length, NULL, 0, 0};
    if (!check_entry(dir, entry, since, &item)) continue;
    ok = buffer_append(&names, name, (sqlite3_int64)strlen(name) + 1) &&
         buffer_append(&checked, (const char *)&item, sizeof item);
    if (!ok) break;
  }
  closedir(dir);
  sqlite3_int64 count = checked.length / (sqlite3_int64)sizeof(Checked);
  if (ok && !failed) ok = write_checked((Checked *)checked.bytes, count, names.bytes, out);
  sqlite3_free(names.bytes);
  sqlite3_free(checked.bytes);
  if (failed || !ok) {
    sqlite3_free(out->bytes);
    out->bytes = NULL;
    out->length = 0;
    return failed ? UNREADABLE : NO_MEMORY;
  }
  return LISTED;
}

/*
 * SELECT dirq_check_folder(path, since): what a check of a folder without a watch compares with its
 * previous check (src/watch/unwatched-thread.ts), in one call: the folder listed, every entry
 * that is not a folder lstat'ed relative to it. A blob: for each entry but `.` and `..`, sorted
 * by name (byte order), its type letter (as dirq_list_dir's), its name, a NUL, and for what is
 * not a folder 8 bytes of a signature of its size, modification and change times (to the
 * nanosecond), inode and mode: two checks' blobs are equal when nothing in the folder changed.
 * `path` is text or a blob of the path's bytes (a name that is not UTF-8). With `since` (Unix
 * ms; NULL or negative: none), an entry modified or changed at or after it has its letter in
 * upper case (a folder's first check reports those). NULL when the folder cannot be read.
 */
static void check_folder(sqlite3_context *context, int argc, sqlite3_value **argv) {
  (void)argc;
  int bytes = sqlite3_value_bytes(argv[0]);
  const char *given = (const char *)sqlite3_value_blob(argv[0]);
  if (given == NULL) return;
  char *path = sqlite3_malloc64((sqlite3_uint64)bytes + 1);
  if (path == NULL) {
    sqlite3_result_error_nomem(context);
    return;
  }
  memcpy(path, given, (size_t)bytes);
  path[bytes] = '\0';
  double since = sqlite3_value_type(argv[1]) == SQLITE_NULL ? -1 : sqlite3_value_double(argv[1]);
  Buffer out = {0};
  int status = check_into(path, since, &out);
  sqlite3_free(path);
  if (status == UNREADABLE) return;
  if (status == NO_MEMORY) {
    sqlite3_result_error_nomem(context);
    return;
  }
  if (out.bytes == NULL) {
    sqlite3_result_zeroblob(context, 0);
    return;
  }
  sqlite3_result_blob64(context, out.bytes, (sqlite3_uint64)out.length, sqlite3_free);
}

/*
 * Reading ahead on threads of its own. A walk knows, once it has read a folder, which
 * folders it will read next (the subfolders it descends into), and a stat fill knows which
 * files it will stat: it hands them over (dirq_ahead_list, dirq_ahead_stat) and takes each
 * answer when it gets there (dirq_take). Meanwhile POSIX threads (see MAX_THREADS) list and
 * stat, so the system calls, most of a scan's time, run beside the
 * JavaScript that matches, inserts and counts. A thread here costs a few microseconds to
 * start and no JavaScript heap, where a worker thread costs tens of milliseconds and
 * megabytes (bench/README.md, "Scan benchmark").
 *
 * Jobs have tickets (increasing numbers) in a ring. The threads take folder listings newest
 * batch first, in the batch's order (a depth-first walk needs the folders it entered last
 * first), and stat batches oldest first, mixed as next_job says; they stop listing while
 * answers nobody took pile up. Taking a job nobody began runs it on the caller (and a caller
 * waiting for a job a thread runs may first do a newer one: dirq_take's claim mode); taking
 * an unknown ticket (dropped) returns NULL, and
 * the caller does the work itself. Nothing here touches SQLite but its allocator, which is
 * thread-safe.
 */
#define RING 4096
/*
 * Threads that read ahead: one per core but the caller's, at least one, at most two. The
 * caller matches, inserts and also lists or stats what no thread has begun, so it keeps a core
 * of its own (measured on 2 cores: two threads made 100k-file scans slower than one); more
 * than two would only queue for the same disk.
 */
#define MAX_THREADS 2
#define MAX_DONE_JOBS 256
/* Answers ready and not taken below which a thread lists before it stats (see next_job). */
#define LISTINGS_FIRST 8
#define MAX_DONE_BYTES (16 * 1024 * 1024)

enum { FREE = 0, QUEUED, RUNNING, DONE };
enum { LIST_JOB = 1, STAT_JOB = 2 };

typedef struct {
  sqlite3_int64 ticket;
  int state;
  int kind;
  int abandoned; /* dropped while running: the thread frees it */
  char *input;   /* list: the folder's path; stat: prefix, NUL, then the paths */
  int prefix_bytes, paths_bytes;
  int status;    /* list: LISTED, UNREADABLE or NO_MEMORY; stat: 0, or NO_MEMORY */
  Buffer output;
} Job;

typedef struct {
  pthread_mutex_t mutex;
  pthread_cond_t work; /* a job was queued, an answer taken, or the thread must stop */
  pthread_cond_t done; /* a job finished */
  pthread_t threads[MAX_THREADS];
  int started, stopping;
  sqlite3_int64 next_ticket;
  Job ring[RING];
  sqlite3_int64 lists[RING]; /* queued listings: the next one on top */
  int lists_length;
  sqlite3_int64 stats[RING]; /* queued stat batches, oldest first, from stats_start */
  int stats_start, stats_length;
  int done_jobs;
  sqlite3_int64 done_bytes;
} Ahead;

static Job *job_of(Ahead *ahead, sqlite3_int64 ticket) {
  Job *job = &ahead->ring[ticket % RING];
  return job->ticket == ticket && job->state != FREE ? job : NULL;
}

static void free_job(Job *job) {
  sqlite3_free(job->input);
  sqlite3_free(job->output.bytes);
  memset(job, 0, sizeof *job);
}

static void run_job(Job *job) {
  if (job->kind == LIST_JOB) {
    job->status = list_into(job->input, &job->output);
    return;
  }
  sqlite3_int64 bytes;
  double *out = stat_batch_buffer(job->input, job->prefix_bytes,
                                  job->input + job->prefix_bytes + 1, job->paths_bytes, &bytes);
  job->status = out == NULL ? NO_MEMORY : 0;
  job->output.bytes = (char *)out;
  job->output.length = out == NULL ? 0 : bytes;
}

/* The next queued listing, or NULL; the mutex is held. */
static Job *next_listing(Ahead *ahead) {
  while (ahead->lists_length > 0) {
    Job *job = job_of(ahead, ahead->lists[--ahead->lists_length]);
    if (job != NULL && job->state == QUEUED) return job;
  }
  return NULL;
}

/*
 * The next queued job for a thread, or NULL; the mutex is held. Listings come first while few
 * are ready (the walk needs the next folder soonest), then stat batches, whose answers the
 * fill takes within a few batches, then listings again up to the cap on answers nobody took.
 * A walk queues every subfolder of a folder at once (a thousand, say): without the stat
 * batches in between, a thread would list far ahead while the caller stats every file alone.
 */
static Job *next_job(Ahead *ahead) {
  if (ahead->done_jobs < LISTINGS_FIRST) {
    Job *job = next_listing(ahead);
    if (job != NULL) return job;
  }
  while (ahead->stats_length > 0) {
    sqlite3_int64 ticket = ahead->stats[ahead->stats_start];
    ahead->stats_start = (ahead->stats_start + 1) % RING;
    ahead->stats_length--;
    Job *job = job_of(ahead, ticket);
    if (job != NULL && job->state == QUEUED) return job;
  }
  if (ahead->done_jobs < MAX_DONE_JOBS && ahead->done_bytes < MAX_DONE_BYTES) {
    return next_listing(ahead);
  }
  return NULL;
}

static void *ahead_thread(void *argument) {
  Ahead *ahead = argument;
  pthread_mutex_lock(&ahead->mutex);
  while (!ahead->stopping) {
    Job *job = next_job(ahead);
    if (job == NULL) {
      pthread_cond_wait(&ahead->work, &ahead->mutex);
      continue;
    }
    job->state = RUNNING;
    pthread_mutex_unlock(&ahead->mutex);
    run_job(job);
    pthread_mutex_lock(&ahead->mutex);
    if (job->abandoned) {
      free_job(job);
    } else {
      job->state = DONE;
      ahead->done_jobs++;
      ahead->done_bytes += job->output.length;
    }
    pthread_cond_broadcast(&ahead->done);
  }
  pthread_mutex_unlock(&ahead->mutex);
  return NULL;
}

/*
 * Starts the threads once (as many as MAX_THREADS says); false when none starts (the
 * caller then does the work itself).
 */
static int ahead_start(Ahead *ahead) {
  if (ahead->started > 0) return 1;
  long others = sysconf(_SC_NPROCESSORS_ONLN) - 1;
  int wanted = others < 1 ? 1 : others > MAX_THREADS ? MAX_THREADS : (int)others;
  while (ahead->started < wanted &&
         pthread_create(&ahead->threads[ahead->started], NULL, ahead_thread, ahead) == 0) {
    ahead->started++;
  }
  return ahead->started > 0;
}

/* A free ring slot for a new job, with its ticket; NULL when the ring is full. */
static Job *new_job(Ahead *ahead, int kind) {
  sqlite3_int64 ticket = ahead->next_ticket;
  Job *job = &ahead->ring[ticket % RING];
  if (job->state != FREE) return NULL;
  ahead->next_ticket++;
  job->ticket = ticket;
  job->kind = kind;
  job->state = QUEUED;
  return job;
}

static char *copy_bytes(const char *bytes, int length) {
  char *copy = sqlite3_malloc64((sqlite3_uint64)length + 1);
  if (copy != NULL) {
    memcpy(copy, bytes, (size_t)length);
    copy[length] = '\0';
  }
  return copy;
}

/*
 * SELECT dirq_ahead_list(paths): queues the listing of folders (absolute paths separated by
 * NUL), to be taken in this order. Returns first_ticket * 65536 + accepted: the first
 * `accepted` folders have tickets first_ticket, first_ticket + 1, ... (the rest are the
 * caller's to list: the ring was full).
 */
static void ahead_list(sqlite3_context *context, int argc, sqlite3_value **argv) {
  (void)argc;
  Ahead *ahead = sqlite3_user_data(context);
  const char *paths = (const char *)sqlite3_value_text(argv[0]);
  int paths_bytes = sqlite3_value_bytes(argv[0]);
  if (paths == NULL || paths_bytes == 0) {
    sqlite3_result_int64(context, 0);
    return;
  }
  pthread_mutex_lock(&ahead->mutex);
  sqlite3_int64 first = ahead->next_ticket;
  sqlite3_int64 accepted = 0;
  int ok = ahead_start(ahead);
  const char *path = paths, *end = paths + paths_bytes;
  /* Tickets in batch order; pushed so that the batch's first folder is on top. */
  sqlite3_int64 tickets[RING];
  while (ok && path <= end && accepted < RING / 2) {
    const char *stop = memchr(path, '\0', end - path);
    if (stop == NULL) stop = end;
    Job *job = new_job(ahead, LIST_JOB);
    if (job == NULL) break;
    job->input = copy_bytes(path, (int)(stop - path));
    if (job->input == NULL) {
      free_job(job);
      ahead->next_ticket--;
      break;
    }
    tickets[accepted++] = job->ticket;
    path = stop + 1;
  }
  /* Drop stale entries (taken or dropped jobs) when the stack would overflow. */
  if (ahead->lists_length + accepted > RING) {
    int kept = 0;
    for (int i = 0; i < ahead->lists_length; i++) {
      Job *job = job_of(ahead, ahead->lists[i]);
      if (job != NULL && job->state == QUEUED) ahead->lists[kept++] = ahead->lists[i];
    }
    ahead->lists_length = kept;
  }
  for (sqlite3_int64 i = accepted - 1; i >= 0 && ahead->lists_length < RING; i--) {
    ahead->lists[ahead->lists_length++] = tickets[i];
  }
  if (accepted > 0) pthread_cond_signal(&ahead->work);
  pthread_mutex_unlock(&ahead->mutex);
  sqlite3_result_int64(context, accepted == 0 ? 0 : first * 65536 + accepted);
}

/*
 * SELECT dirq_ahead_stat(prefix, paths): queues a stat batch (as dirq_stat_batch takes it);
 * returns its ticket, or 0 when it was not queued (the caller stats it itself).
 */
static void ahead_stat(sqlite3_context *context, int argc, sqlite3_value **argv) {
  (void)argc;
  Ahead *ahead = sqlite3_user_data(context);
  const char *prefix = (const char *)sqlite3_value_text(argv[0]);
  int prefix_bytes = sqlite3_value_bytes(argv[0]);
  const char *paths = (const char *)sqlite3_value_text(argv[1]);
  int paths_bytes = sqlite3_value_bytes(argv[1]);
  if (prefix == NULL || paths == NULL) {
    sqlite3_result_int64(context, 0);
    return;
  }
  char *input = sqlite3_malloc64((sqlite3_uint64)prefix_bytes + paths_bytes + 2);
  if (input == NULL) {
    sqlite3_result_int64(context, 0);
    return;
  }
  memcpy(input, prefix, (size_t)prefix_bytes);
  input[prefix_bytes] = '\0';
  memcpy(input + prefix_bytes + 1, paths, (size_t)paths_bytes);
  input[prefix_bytes + 1 + paths_bytes] = '\0';
  pthread_mutex_lock(&ahead->mutex);
  Job *job = ahead->stats_length < RING && ahead_start(ahead) ? new_job(ahead, STAT_JOB) : NULL;
  sqlite3_int64 ticket = 0;
  if (job != NULL) {
    job->input = input;
    job->prefix_bytes = prefix_bytes;
    job->paths_bytes = paths_bytes;
    ahead->stats[(ahead->stats_start + ahead->stats_length) % RING] = job->ticket;
    ahead->stats_length++;
    ticket = job->ticket;
    pthread_cond_signal(&ahead->work);
  } else {
    sqlite3_free(input);
  }
  pthread_mutex_unlock(&ahead->mutex);
  sqlite3_result_int64(context, ticket);
}

/* Hands a finished job's answer to SQLite and frees the job; the mutex is held. */
static void result_job(sqlite3_context *context, Ahead *ahead, Job *job) {
  if (job->state == DONE) {
    ahead->done_jobs--;
    ahead->done_bytes -= job->output.length;
    pthread_cond_signal(&ahead->work);
  }
  Buffer output = job->output;
  int status = job->status;
  int kind = job->kind;
  job->output.bytes = NULL;
  free_job(job);
  if (kind == LIST_JOB) {
    result_listing(context, status, &output);
  } else if (status == NO_MEMORY) {
    sqlite3_result_error_nomem(context);
  } else {
    sqlite3_result_blob64(context, output.bytes, (sqlite3_uint64)output.length, sqlite3_free);
  }
}

/*
 * SELECT dirq_take(ticket, mode): a queued job's answer (a listing as dirq_list_dir gives it,
 * or a stat blob as dirq_stat_batch does). mode 0: only when it is done, else NULL (ask
 * again). mode 1: waits for it while a thread runs it, and runs it here if no thread has begun
 * it. mode 2 (claim): runs it here if no thread has begun it, else as mode 0, so a caller
 * that must wait for its oldest job can first do a newer one nobody began. An unknown ticket
 * (dropped by dirq_ahead_drop) is NULL: the caller does the work itself. A listing of a folder
 * that cannot be read is also NULL, as with dirq_list_dir; the caller tells the two apart by
 * asking dirq_list_dir.
 */
static void take(sqlite3_context *context, int argc, sqlite3_value **argv) {
  (void)argc;
  Ahead *ahead = sqlite3_user_data(context);
  sqlite3_int64 ticket = sqlite3_value_int64(argv[0]);
  int mode = sqlite3_value_int(argv[1]);
  int ran_here = 0;
  pthread_mutex_lock(&ahead->mutex);
  Job *job = job_of(ahead, ticket);
  if (job != NULL && mode != 0) {
    if (mode == 1) {
      while (job->state == RUNNING) pthread_cond_wait(&ahead->done, &ahead->mutex);
    }
    if (job->state == QUEUED) {
      job->state = RUNNING; /* the threads skip it now */
      pthread_mutex_unlock(&ahead->mutex);
      run_job(job);
      pthread_mutex_lock(&ahead->mutex);
      ran_here = 1;
    }
  }
  if (job != NULL && (job->state == DONE || ran_here)) result_job(context, ahead, job);
  pthread_mutex_unlock(&ahead->mutex);
}

/*
 * SELECT dirq_ahead_drop(): drops every job not yet taken (a walk that ended early, or a new
 * walk starting). A job running on the thread is freed when it ends.
 */
static void ahead_drop(sqlite3_context *context, int argc, sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  Ahead *ahead = sqlite3_user_data(context);
  pthread_mutex_lock(&ahead->mutex);
  for (int i = 0; i < RING; i++) {
    Job *job = &ahead->ring[i];
    if (job->state == RUNNING) job->abandoned = 1;
    else if (job->state != FREE) free_job(job);
  }
  ahead->lists_length = 0;
  ahead->stats_length = 0;
  ahead->stats_start = 0;
  ahead->done_jobs = 0;
  ahead->done_bytes = 0;
  pthread_mutex_unlock(&ahead->mutex);
  sqlite3_result_null(context);
}

/* When the connection closes: stop the thread, then free what is left. */
static void ahead_destroy(void *argument) {
  Ahead *ahead = argument;
  pthread_mutex_lock(&ahead->mutex);
  ahead->stopping = 1;
  pthread_cond_broadcast(&ahead->work);
  pthread_mutex_unlock(&ahead->mutex);
  for (int i = 0; i < ahead->started; i++) pthread_join(ahead->threads[i], NULL);
  for (int i = 0; i < RING; i++) {
    if (ahead->ring[i].state != FREE) free_job(&ahead->ring[i]);
  }
  pthread_mutex_destroy(&ahead->mutex);
  pthread_cond_destroy(&ahead->work);
  pthread_cond_destroy(&ahead->done);
  sqlite3_free(ahead);
}

/*
 * SELECT path, basename, dir, ext, size, mtime, ctime FROM dirq_rows(paths [, stats]): a
 * path-table's rows made from a batch the fill already has, so that it inserts them with one
 * `INSERT ... SELECT` and no value passes through JavaScript one by one (binding four values
 * per row cost about twice SQLite's own insert, bench/README.md, "Scan benchmark").
 *   paths  text: relative paths separated by NUL characters ('' is no path)
 *   stats  optional blob, as dirq_stat_batch returns it for those paths: a path whose size is
 *          NaN (missing, not a regular file) gives no row. Without it the stat columns are NULL.
 * basename, dir and ext are derived as src/indexer/path-fill.ts derives them: the part after
 * the last '/', the part before it ('' for none), and the last extension without its dot (NULL
 * for none, for a leading dot alone and for a trailing dot). It reads only its arguments: it
 * touches no file, so it is registered in the index's connection (sqlite3_dirqrows_init).
 */
enum { ROW_PATH, ROW_BASENAME, ROW_DIR, ROW_EXT, ROW_SIZE, ROW_MTIME, ROW_CTIME, ROW_PATHS,
       ROW_STATS };

typedef struct {
  sqlite3_vtab_cursor base;
  char *paths;          /* a copy of the argument, NUL-terminated */
  const char *end;      /* the terminating NUL */
  double *stats;        /* a copy of the argument, or NULL */
  sqlite3_int64 stat_count;
  const char *at;       /* the current path */
  size_t length;        /* its length */
  const char *name;     /* its last part, after the last '/' (the path itself without one) */
  sqlite3_int64 row;    /* its position in the batch */
  int eof;
} RowsCursor;

/*
 * Connects an eponymous table that reads only its arguments, with `schema` (also dirq_csv's,
 * in dirq-csv.c).
 */
int dirq_connect_innocuous(sqlite3 *db, const char *schema, sqlite3_vtab **table) {
  int rc = sqlite3_declare_vtab(db, schema);
  if (rc != SQLITE_OK) return rc;
  sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
  *table = sqlite3_malloc(sizeof(sqlite3_vtab));
  if (*table == NULL) return SQLITE_NOMEM;
  memset(*table, 0, sizeof(sqlite3_vtab));
  return SQLITE_OK;
}

static int rows_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                        sqlite3_vtab **table, char **error) {
  (void)aux;
  (void)argc;
  (void)argv;
  (void)error;
  return dirq_connect_innocuous(db,
                           "CREATE TABLE x(path TEXT, basename TEXT, dir TEXT, ext TEXT, "
                           "size INTEGER, mtime INTEGER, ctime INTEGER, paths HIDDEN, "
                           "stats HIDDEN)",
                           table);
}

/* Disconnects a table that dirq_connect_innocuous connected. */
int dirq_disconnect(sqlite3_vtab *table) {
  sqlite3_free(table);
  return SQLITE_OK;
}

/* `paths` is required (argument 1), `stats` optional (argument 2): idxNum 1 or 3. */
static int rows_best_index(sqlite3_vtab *table, sqlite3_index_info *info) {
  (void)table;
  int paths = -1, stats = -1;
  for (int i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *constraint = &info->aConstraint[i];
    if (constraint->op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    if (constraint->iColumn == ROW_PATHS || constraint->iColumn == ROW_STATS) {
      if (!constraint->usable) return SQLITE_CONSTRAINT;
      if (constraint->iColumn == ROW_PATHS) paths = i;
      else stats = i;
    }
  }
  if (paths < 0) return SQLITE_CONSTRAINT;
  info->aConstraintUsage[paths].argvIndex = 1;
  info->aConstraintUsage[paths].omit = 1;
  info->idxNum = 1;
  if (stats >= 0) {
    info->aConstraintUsage[stats].argvIndex = 2;
    info->aConstraintUsage[stats].omit = 1;
    info->idxNum = 3;
  }
  info->estimatedCost = 1000;
  info->estimatedRows = 1000;
  return SQLITE_OK;
}

static int rows_open(sqlite3_vtab *table, sqlite3_vtab_cursor **cursor) {
  (void)table;
  RowsCursor *rows = sqlite3_malloc(sizeof(RowsCursor));
  if (rows == NULL) return SQLITE_NOMEM;
  memset(rows, 0, sizeof *rows);
  rows->eof = 1;
  *cursor = &rows->base;
  return SQLITE_OK;
}

static int rows_close(sqlite3_vtab_cursor *cursor) {
  RowsCursor *rows = (RowsCursor *)cursor;
  sqlite3_free(rows->paths);
  sqlite3_free(rows->stats);
  sqlite3_free(rows);
  return SQLITE_OK;
}

/* Whether the current path has a row: with stats, a NaN size drops it. */
static int rows_current_kept(RowsCursor *rows) {
  if (rows->stats == NULL) return 1;
  return rows->row < rows->stat_count && !isnan(rows->stats[rows->row * FIELDS]);
}

/* Moves to the path at `at` (or to the end), without looking at stats. */
static void rows_point(RowsCursor *rows, const char *at) {
  if (at >= rows->end) {
    rows->eof = 1;
    return;
  }
  rows->at = at;
  const char *stop = memchr(at, '\0', (size_t)(rows->end - at) + 1);
  rows->length = (size_t)(stop - at);
  rows->name = at;
  for (const char *c = stop; c > at; c--) {
    if (c[-1] == '/') {
      rows->name = c;
      break;
    }
  }
}

static int rows_next(sqlite3_vtab_cursor *cursor) {
  RowsCursor *rows = (RowsCursor *)cursor;
  do {
    rows->row++;
    rows_point(rows, rows->at + rows->length + 1);
  } while (!rows->eof && !rows_current_kept(rows));
  return SQLITE_OK;
}

static int rows_filter(sqlite3_vtab_cursor *cursor, int idx_num, const char *idx_text, int argc,
                       sqlite3_value **argv) {
  (void)idx_text;
  RowsCursor *rows = (RowsCursor *)cursor;
  sqlite3_free(rows->paths);
  sqlite3_free(rows->stats);
  rows->paths = NULL;
  rows->stats = NULL;
  rows->eof = 1;
  if (argc < 1) return SQLITE_OK;
  const char *paths = (const char *)sqlite3_value_text(argv[0]);
  int paths_bytes = sqlite3_value_bytes(argv[0]);
  if (paths == NULL || paths_bytes == 0) return SQLITE_OK;
  rows->paths = copy_bytes(paths, paths_bytes);
  if (rows->paths == NULL) return SQLITE_NOMEM;
  rows->end = rows->paths + paths_bytes;
  if ((idx_num & 2) && argc >= 2 && sqlite3_value_type(argv[1]) != SQLITE_NULL) {
    int stat_bytes = sqlite3_value_bytes(argv[1]);
    const void *stats = sqlite3_value_blob(argv[1]);
    rows->stat_count = stat_bytes / (int)(FIELDS * sizeof(double));
    rows->stats = sqlite3_malloc64(stat_bytes == 0 ? 1 : (sqlite3_uint64)stat_bytes);
    if (rows->stats == NULL) return SQLITE_NOMEM;
    if (stat_bytes > 0) memcpy(rows->stats, stats, (size_t)stat_bytes);
  }
  rows->eof = 0;
  rows->row = 0;
  rows_point(rows, rows->paths);
  if (!rows->eof && !rows_current_kept(rows)) rows_next(cursor);
  return SQLITE_OK;
}

static int rows_eof(sqlite3_vtab_cursor *cursor) {
  return ((RowsCursor *)cursor)->eof;
}

static int rows_column(sqlite3_vtab_cursor *cursor, sqlite3_context *context, int column) {
  RowsCursor *rows = (RowsCursor *)cursor;
  const char *path = rows->at;
  size_t length = rows->length;
  const char *base = rows->name;
  size_t base_length = length - (size_t)(base - path);
  switch (column) {
  case ROW_PATH:
    sqlite3_result_text(context, path, (int)length, SQLITE_TRANSIENT);
    break;
  case ROW_BASENAME:
    sqlite3_result_text(context, base, (int)base_length, SQLITE_TRANSIENT);
    break;
  case ROW_DIR:
    sqlite3_result_text(context, path, base == path ? 0 : (int)(base - path - 1), SQLITE_TRANSIENT);
    break;
  case ROW_EXT: {
    const char *dot = NULL;
    for (size_t i = base_length; i > 0; i--) {
      if (base[i - 1] == '.') {
        dot = base + i - 1;
        break;
      }
    }
    if (dot != NULL && dot != base && dot != base + base_length - 1) {
      size_t ext_length = base_length - (size_t)(dot + 1 - base);
      sqlite3_result_text(context, dot + 1, (int)ext_length, SQLITE_TRANSIENT);
    }
    break;
  }
  case ROW_SIZE:
  case ROW_MTIME:
  case ROW_CTIME:
    if (rows->stats != NULL) {
      double value = rows->stats[rows->row * FIELDS + (column - ROW_SIZE)];
      sqlite3_result_int64(context, (sqlite3_int64)value);
    }
    break;
  default:
    break; /* the hidden arguments read as NULL */
  }
  return SQLITE_OK;
}

static int rows_rowid(sqlite3_vtab_cursor *cursor, sqlite3_int64 *rowid) {
  *rowid = ((RowsCursor *)cursor)->row + 1;
  return SQLITE_OK;
}

static sqlite3_module rows_module = {
    0,               /* iVersion */
    NULL,            /* xCreate: eponymous only */
    rows_connect,    /* xConnect */
    rows_best_index, /* xBestIndex */
    dirq_disconnect, /* xDisconnect */
    NULL,            /* xDestroy */
    rows_open,       /* xOpen */
    rows_close,      /* xClose */
    rows_filter,     /* xFilter */
    rows_next,       /* xNext */
    rows_eof,        /* xEof */
    rows_column,     /* xColumn */
    rows_rowid,      /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};

/*
 * SELECT ... FROM dirq_blank_rows(count): `count` rows with no values (one hidden column, the
 * argument). A one-shot statement that reads no column of a path-table (`count(*)`) gets a
 * view over it in place of the table: the walk only counts the files, and no row is written
 * (100,000 inserts cost 22-25 ms; reading 100,000 blank rows about 2 ms). See PathTables in
 * src/indexer/path-tables.ts. It reads only its argument, like dirq_rows.
 */
typedef struct {
  sqlite3_vtab_cursor base;
  sqlite3_int64 row, count;
} BlankCursor;

static int blank_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                         sqlite3_vtab **table, char **error) {
  (void)aux;
  (void)argc;
  (void)argv;
  (void)error;
  return dirq_connect_innocuous(db, "CREATE TABLE x(count HIDDEN)", table);
}

/* `count` is required (argument 1). */
static int blank_best_index(sqlite3_vtab *table, sqlite3_index_info *info) {
  (void)table;
  for (int i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *constraint = &info->aConstraint[i];
    if (constraint->iColumn != 0 || constraint->op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    if (!constraint->usable) return SQLITE_CONSTRAINT;
    info->aConstraintUsage[i].argvIndex = 1;
    info->aConstraintUsage[i].omit = 1;
    info->estimatedCost = 1000;
    info->estimatedRows = 1000;
    return SQLITE_OK;
  }
  return SQLITE_CONSTRAINT;
}

static int blank_open(sqlite3_vtab *table, sqlite3_vtab_cursor **cursor) {
  (void)table;
  BlankCursor *blank = sqlite3_malloc(sizeof(BlankCursor));
  if (blank == NULL) return SQLITE_NOMEM;
  memset(blank, 0, sizeof *blank);
  *cursor = &blank->base;
  return SQLITE_OK;
}

static int blank_close(sqlite3_vtab_cursor *cursor) {
  sqlite3_free(cursor);
  return SQLITE_OK;
}

static int blank_filter(sqlite3_vtab_cursor *cursor, int idx_num, const char *idx_text, int argc,
                        sqlite3_value **argv) {
  (void)idx_num;
  (void)idx_text;
  BlankCursor *blank = (BlankCursor *)cursor;
  blank->row = 0;
  blank->count = argc < 1 ? 0 : sqlite3_value_int64(argv[0]);
  return SQLITE_OK;
}

static int blank_next(sqlite3_vtab_cursor *cursor) {
  ((BlankCursor *)cursor)->row++;
  return SQLITE_OK;
}

static int blank_eof(sqlite3_vtab_cursor *cursor) {
  BlankCursor *blank = (BlankCursor *)cursor;
  return blank->row >= blank->count;
}

static int blank_column(sqlite3_vtab_cursor *cursor, sqlite3_context *context, int column) {
  (void)column;
  sqlite3_result_int64(context, ((BlankCursor *)cursor)->count);
  return SQLITE_OK;
}

static int blank_rowid(sqlite3_vtab_cursor *cursor, sqlite3_int64 *rowid) {
  *rowid = ((BlankCursor *)cursor)->row + 1;
  return SQLITE_OK;
}

static sqlite3_module blank_module = {
    0,                /* iVersion */
    NULL,             /* xCreate: eponymous only */
    blank_connect,    /* xConnect */
    blank_best_index, /* xBestIndex */
    dirq_disconnect,  /* xDisconnect */
    NULL,             /* xDestroy */
    blank_open,       /* xOpen */
    blank_close,      /* xClose */
    blank_filter,     /* xFilter */
    blank_next,       /* xNext */
    blank_eof,        /* xEof */
    blank_column,     /* xColumn */
    blank_rowid,      /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_dirqrows_init(sqlite3 *db, char **error, const sqlite3_api_routines *api) {
  SQLITE_EXTENSION_INIT2(api);
  (void)error;
  int rc = sqlite3_create_module(db, "dirq_rows", &rows_module, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_create_module(db, "dirq_blank_rows", &blank_module, NULL);
  if (rc == SQLITE_OK) rc = dirq_register_csv(db);
  if (rc == SQLITE_OK) rc = dirq_register_jsonl(db);
  return rc;
}

/*
 * SELECT dirq_trim_memory(): gives the C allocator's free memory back to the system; 1 when
 * some was given back, 0 when none, NULL where the allocator has no such call (only glibc has).
 * Why: glibc raises its threshold for serving a block by mmap each time such a block is freed,
 * so after a burst frees many 1 MiB blocks (the event history's), the next ones come from the
 * heap, and once those are freed glibc keeps their pages: tens of MB a settled server never
 * uses again. malloc_trim(0) returns the free pages of every arena. The whole process shares
 * the allocator, so this connection's call reaches Node's buffers too.
 */
static void trim_memory(sqlite3_context *context, int argc, sqlite3_value **argv) {
  (void)argc;
  (void)argv;
#if defined(__GLIBC__)
  sqlite3_result_int(context, malloc_trim(0));
#else
  sqlite3_result_null(context);
#endif
}

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_dirqfs_init(sqlite3 *db, char **error, const sqlite3_api_routines *api) {
  SQLITE_EXTENSION_INIT2(api);
  (void)error;
  const int flags = SQLITE_UTF8 | SQLITE_DIRECTONLY;
  int rc = sqlite3_create_function(db, "dirq_stat_batch", 2, flags, NULL, stat_batch, NULL, NULL);
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function(db, "dirq_list_dir", 1, flags, NULL, list_dir, NULL, NULL);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function(db, "dirq_trim_memory", 0, flags, NULL, trim_memory, NULL, NULL);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function(db, "dirq_check_folder", 2, flags, NULL, check_folder, NULL, NULL);
  }
  if (rc != SQLITE_OK) return rc;
  Ahead *ahead = sqlite3_malloc64(sizeof(Ahead));
  if (ahead == NULL) return SQLITE_NOMEM;
  memset(ahead, 0, sizeof *ahead);
  ahead->next_ticket = 1;
  pthread_mutex_init(&ahead->mutex, NULL);
  pthread_cond_init(&ahead->work, NULL);
  pthread_cond_init(&ahead->done, NULL);
  /* The read-ahead state belongs to dirq_ahead_drop, registered first: SQLite calls its
     destructor when the connection closes, or at once if registering it fails. */
  rc = sqlite3_create_function_v2(db, "dirq_ahead_drop", 0, flags, ahead, ahead_drop, NULL, NULL,
                                  ahead_destroy);
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function_v2(db, "dirq_ahead_list", 1, flags, ahead, ahead_list, NULL,
                                    NULL, NULL);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function_v2(db, "dirq_ahead_stat", 2, flags, ahead, ahead_stat, NULL,
                                    NULL, NULL);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function_v2(db, "dirq_take", 2, flags, ahead, take, NULL, NULL, NULL);
  }
  return rc;
}
