/* store_schema.c -- the store's schema as an ordered list of migration
 * steps. Step v takes a database from user_version v-1 to v; a new
 * database runs them all. Never edit a released step: append a new one.
 *
 *   1  the views: groups (+ namespaces), users, user quotas, jobs, job
 *      attempts, nodes, GPUs, hourly usage, the decisions journal
 *   2  per-attempt placement, jobs.gpu_seconds (back-filled from the v1
 *      runtime history), the input-events journal, history indexes
 *   3  jobs.arrival_journaled: when the job's arrival went into the
 *      journal (0 = not yet), so a restart does not journal it again */
#include "operator/store_int.h"

static const char *const store_steps[] = {
    /* ---- 1 ---- */
    "CREATE TABLE groups("
    "  name TEXT PRIMARY KEY,"
    "  level INTEGER NOT NULL DEFAULT 0,"
    "  quota_gpus INTEGER NOT NULL DEFAULT -1,"
    "  quota_gpu_memory_mib INTEGER NOT NULL DEFAULT -1,"
    "  quota_cpu_milli INTEGER NOT NULL DEFAULT -1,"
    "  quota_memory_bytes INTEGER NOT NULL DEFAULT -1,"
    "  quota_jobs INTEGER NOT NULL DEFAULT -1,"
    "  budget_gpu_hours REAL NOT NULL DEFAULT -1,"
    "  budget_window_s REAL NOT NULL DEFAULT 2592000,"
    "  shares REAL NOT NULL DEFAULT 0);"
    "CREATE TABLE group_namespaces("
    "  ns TEXT PRIMARY KEY,"
    "  group_name TEXT NOT NULL);"
    "CREATE INDEX group_namespaces_group ON group_namespaces(group_name);"
    "CREATE TABLE users("
    "  name TEXT NOT NULL,"
    "  group_name TEXT NOT NULL,"
    "  level INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY(name, group_name)) WITHOUT ROWID;"
    "CREATE INDEX users_group ON users(group_name);"
    "CREATE TABLE user_quotas("
    "  ns TEXT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  user TEXT NOT NULL,"
    "  group_name TEXT,"
    "  quota_gpus INTEGER NOT NULL DEFAULT -1,"
    "  quota_gpu_memory_mib INTEGER NOT NULL DEFAULT -1,"
    "  quota_cpu_milli INTEGER NOT NULL DEFAULT -1,"
    "  quota_memory_bytes INTEGER NOT NULL DEFAULT -1,"
    "  quota_jobs INTEGER NOT NULL DEFAULT -1,"
    "  budget_gpu_hours REAL NOT NULL DEFAULT -1,"
    "  budget_window_s REAL NOT NULL DEFAULT 2592000,"
    "  accepted INTEGER NOT NULL DEFAULT 0,"
    "  reason TEXT,"
    "  PRIMARY KEY(ns, name)) WITHOUT ROWID;"
    "CREATE INDEX user_quotas_group ON user_quotas(group_name, user);"
    "CREATE TABLE jobs("
    "  uid TEXT PRIMARY KEY,"
    "  ns TEXT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  group_name TEXT,"
    "  user TEXT NOT NULL,"
    "  priority INTEGER NOT NULL DEFAULT 0,"
    "  replicas INTEGER NOT NULL DEFAULT 1,"
    "  gpus INTEGER NOT NULL DEFAULT 0,"
    "  gpu_memory_mib INTEGER NOT NULL DEFAULT 0,"
    "  cpu_milli INTEGER NOT NULL DEFAULT 0,"
    "  memory_bytes INTEGER NOT NULL DEFAULT 0,"
    "  gpu_model TEXT,"
    "  domain TEXT,"
    "  estimated_runtime_s REAL NOT NULL DEFAULT 0,"
    "  task_type TEXT,"
    "  model_name TEXT,"
    "  model_parameters INTEGER NOT NULL DEFAULT 0,"
    "  backoff_limit INTEGER NOT NULL DEFAULT 3,"
    "  suspend INTEGER NOT NULL DEFAULT 0,"
    "  phase INTEGER NOT NULL DEFAULT 0,"
    "  level INTEGER NOT NULL DEFAULT 0,"
    "  position INTEGER NOT NULL DEFAULT 0,"
    "  score REAL NOT NULL DEFAULT 0,"
    "  message TEXT,"
    "  attempts INTEGER NOT NULL DEFAULT 0,"
    "  created REAL NOT NULL DEFAULT 0,"
    "  queued REAL NOT NULL DEFAULT 0,"
    "  admitted REAL NOT NULL DEFAULT 0,"
    "  started REAL NOT NULL DEFAULT 0,"
    "  finished REAL NOT NULL DEFAULT 0,"
    "  deleted REAL NOT NULL DEFAULT 0,"
    "  actual_runtime_s REAL NOT NULL DEFAULT 0);"
    "CREATE INDEX jobs_ns_name ON jobs(ns, name);"
    "CREATE TABLE job_attempts("
    "  job_uid TEXT NOT NULL,"
    "  attempt INTEGER NOT NULL,"
    "  admitted REAL NOT NULL DEFAULT 0,"
    "  started REAL NOT NULL DEFAULT 0,"
    "  finished REAL NOT NULL DEFAULT 0,"
    "  gpu_seconds REAL NOT NULL DEFAULT 0,"
    "  outcome TEXT,"
    "  PRIMARY KEY(job_uid, attempt)) WITHOUT ROWID;"
    "CREATE TABLE nodes("
    "  name TEXT PRIMARY KEY,"
    "  gpu_model TEXT,"
    "  gpu_count INTEGER NOT NULL DEFAULT 0,"
    "  gpu_memory_mib INTEGER NOT NULL DEFAULT 0,"
    "  domain TEXT,"
    "  cpu_milli INTEGER NOT NULL DEFAULT 0,"
    "  memory_bytes INTEGER NOT NULL DEFAULT 0,"
    "  schedulable INTEGER NOT NULL DEFAULT 1);"
    "CREATE TABLE gpus("
    "  node TEXT NOT NULL,"
    "  idx INTEGER NOT NULL,"
    "  memory_mib INTEGER NOT NULL,"
    "  PRIMARY KEY(node, idx)) WITHOUT ROWID;"
    "CREATE TABLE usage("
    "  user TEXT NOT NULL,"
    "  group_name TEXT NOT NULL,"
    "  bucket INTEGER NOT NULL,"
    "  gpu_seconds REAL NOT NULL DEFAULT 0,"
    "  PRIMARY KEY(user, group_name, bucket)) WITHOUT ROWID;"
    "CREATE INDEX usage_group ON usage(group_name, bucket);"
    "CREATE TABLE decisions("
    "  id INTEGER PRIMARY KEY,"
    "  cycle INTEGER NOT NULL,"
    "  t REAL NOT NULL,"
    "  job_uid TEXT NOT NULL,"
    "  action TEXT NOT NULL,"
    "  level INTEGER NOT NULL DEFAULT 0,"
    "  position INTEGER NOT NULL DEFAULT 0,"
    "  score REAL NOT NULL DEFAULT 0,"
    "  terms TEXT,"
    "  reason TEXT,"
    "  message TEXT);"
    "CREATE INDEX decisions_t ON decisions(t);"
    "CREATE INDEX decisions_job ON decisions(job_uid, cycle);",

    /* ---- 2 ---- */
    "ALTER TABLE jobs ADD COLUMN gpu_seconds REAL NOT NULL DEFAULT 0;"
    /* v1 kept no per-job GPU time: back-fill the best estimate for
     * finished jobs, runtime x whole GPUs of the gang. */
    "UPDATE jobs SET gpu_seconds = actual_runtime_s * replicas * gpus "
    "  WHERE finished > 0;"
    "ALTER TABLE job_attempts ADD COLUMN placement TEXT;"
    "CREATE TABLE journal_events("
    "  id INTEGER PRIMARY KEY,"
    "  t REAL NOT NULL,"
    "  kind TEXT NOT NULL,"
    "  obj_key TEXT NOT NULL,"
    "  payload TEXT);"
    "CREATE INDEX journal_events_t ON journal_events(t);"
    "CREATE INDEX jobs_history ON jobs(phase, finished);",

    /* ---- 3 ---- */
    /* Not back-filled: a store from before has no record of which
     * arrivals it journaled, so its first restart journals each waiting
     * job's arrival once more, as every restart did (replay keeps the
     * first of a uid). */
    "ALTER TABLE jobs ADD COLUMN arrival_journaled REAL NOT NULL DEFAULT 0;",
};

#define STORE_NSTEPS ((int)(sizeof store_steps / sizeof store_steps[0]))

/* Number of schema steps (the newest user_version). */
int store__nsteps(void) { return STORE_NSTEPS; }

/* SQL of step v (1-based), or NULL when out of range. */
const char *store__schema_step(int v) {
    if (v < 1 || v > STORE_NSTEPS) return NULL;
    return store_steps[v - 1];
}

/* The schema version this build writes. */
int store_schema_version(void) { return STORE_NSTEPS; }
