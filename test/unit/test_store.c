/* test_store.c -- tests of the operator's SQLite store (operator/store*.c):
 * round-trips of every view, schema migration from version 1, a crash in
 * the middle of a cycle, idempotent attempt accounting, decayed and
 * windowed usage against hand-computed values, the journal's JSON-lines
 * export and retention, runtime history, and fault injection. */
#include "operator/store.h"
#include "operator/store_int.h"
#include "test/unit/th.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- fixtures ------------------------------------------------------------ */

struct tmpdb {
    char dir[64];
    char path[128];
};

static void tmpdb_init(struct tmpdb *t) {
    snprintf(t->dir, sizeof t->dir, "/tmp/aiq-store.XXXXXX");
    if (!mkdtemp(t->dir)) {
        CHECK(!"mkdtemp failed");
        t->dir[0] = '\0';
    }
    snprintf(t->path, sizeof t->path, "%s/aiq.db", t->dir);
}

static void tmpdb_remove(struct tmpdb *t) {
    static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
    char p[160];
    if (!t->dir[0]) return;
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
        snprintf(p, sizeof p, "%s%s", t->path, sfx[i]);
        unlink(p);
    }
    CHECK(rmdir(t->dir) == 0);
}

static store *open_mem(void) {
    aiq_err err = {0};
    store *s = store_open(":memory:", NULL, &err);
    CHECK(s != NULL);
    if (!s) fprintf(stderr, "open: %s\n", err.message);
    return s;
}

/* A job with every spec field set (string literals: never deinit'ed). */
static void job_fill(struct aiq_aijob *j, char *uid, char *name, char *user) {
    memset(j, 0, sizeof *j);
    j->meta.uid = uid;
    j->meta.name = name;
    j->meta.namespace_ = "team-a";
    j->meta.creation_time = 1700000000.25;
    j->spec.user = user;
    j->spec.priority = 7;
    j->spec.replicas = 2;
    j->spec.resources.gpus = 4;
    j->spec.resources.gpu_memory_mib = 40960;
    j->spec.resources.cpu_milli = 8000;
    j->spec.resources.memory_bytes = 68719476736LL;
    j->spec.resources.gpu_model = "NVIDIA-A100-SXM4-80GB";
    j->spec.domain = "pool-a";
    j->spec.estimated_runtime_s = 5400;
    j->spec.task_type = "nlp";
    j->spec.model_name = "llama";
    j->spec.model_parameters = 7000000000LL;
    j->spec.backoff_limit = 3;
}

static int user_version(store *s) {
    sqlite3_stmt *st = NULL;
    int v = -1;
    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) ==
            SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Captures the journal export into a heap string (caller frees). */
static char *export_str(store *s, double since, long *n) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    if (!f) return NULL;
    aiq_err err = {0};
    CHECK_INT(store_journal_export_jsonl(s, f, since, n, &err), AIQ_OK);
    fclose(f);
    return buf;
}

/* ---- open, schema -------------------------------------------------------- */

TEST(open_memory_has_newest_schema) {
    store *s = open_mem();
    if (!s) return;
    CHECK_INT(store_schema_version(), 3);
    CHECK_INT(user_version(s), store_schema_version());
    CHECK(!store_in_transaction(s));
    store_close(s);
    store_close(NULL);
}

TEST(open_file_uses_wal) {
    struct tmpdb t = {0};
    tmpdb_init(&t);
    aiq_err err = {0};
    store *s = store_open(t.path, NULL, &err);
    CHECK(s != NULL);
    if (s) {
        sqlite3_stmt *st = NULL;
        CHECK_INT(sqlite3_prepare_v2(s->db, "PRAGMA journal_mode", -1, &st,
                                     NULL), SQLITE_OK);
        CHECK_INT(sqlite3_step(st), SQLITE_ROW);
        CHECK_STR((const char *)sqlite3_column_text(st, 0), "wal");
        sqlite3_finalize(st);
        CHECK_INT(sqlite3_prepare_v2(s->db, "PRAGMA synchronous", -1, &st,
                                     NULL), SQLITE_OK);
        CHECK_INT(sqlite3_step(st), SQLITE_ROW);
        CHECK_INT(sqlite3_column_int(st, 0), 1); /* NORMAL */
        sqlite3_finalize(st);
    }
    store_close(s);
    tmpdb_remove(&t);
}

TEST(open_refuses_newer_schema) {
    struct tmpdb t = {0};
    tmpdb_init(&t);
    sqlite3 *db = NULL;
    CHECK_INT(sqlite3_open(t.path, &db), SQLITE_OK);
    CHECK_INT(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL),
              SQLITE_OK);
    sqlite3_close(db);
    aiq_err err = {0};
    store *s = store_open(t.path, NULL, &err);
    CHECK(s == NULL);
    CHECK_INT(err.code, AIQ_ESTATE);
    CHECK_STR(err.message, "store: database schema version 99 is newer than "
                           "this build's 3");
    store_close(s);
    tmpdb_remove(&t);
}

TEST(open_bad_path_fails) {
    aiq_err err = {0};
    store *s = store_open("/nonexistent-dir/x/aiq.db", NULL, &err);
    CHECK(s == NULL);
    CHECK_INT(err.code, AIQ_EDB);
    CHECK(strstr(err.message, "/nonexistent-dir/x/aiq.db") != NULL);
}

/* A version-1 database made by hand (the v1 SQL plus v1-shaped rows) opens,
 * migrates to the newest version, and keeps its rows; the v2 back-fill of
 * jobs.gpu_seconds is computed from the v1 history. */
TEST(migration_from_v1_keeps_rows) {
    struct tmpdb t = {0};
    tmpdb_init(&t);
    sqlite3 *db = NULL;
    CHECK_INT(sqlite3_open(t.path, &db), SQLITE_OK);
    CHECK_INT(sqlite3_exec(db, store__schema_step(1), NULL, NULL, NULL),
              SQLITE_OK);
    CHECK_INT(sqlite3_exec(
                  db,
                  "PRAGMA user_version = 1;"
                  "INSERT INTO groups(name, level, quota_gpus, shares) "
                  "  VALUES('vision', 5, 16, 2.5);"
                  "INSERT INTO group_namespaces VALUES('team-v', 'vision');"
                  "INSERT INTO users VALUES('ann', 'vision', 9);"
                  "INSERT INTO jobs(uid, ns, name, group_name, user, replicas,"
                  "  gpus, phase, finished, actual_runtime_s, model_name) "
                  "  VALUES('u-old', 'team-v', 'old', 'vision', 'ann', 2, 4,"
                  "  5, 1700003600, 100, 'resnet');"
                  "INSERT INTO jobs(uid, ns, name, user, gpus) "
                  "  VALUES('u-run', 'team-v', 'run', 'ann', 1);"
                  "INSERT INTO usage VALUES('ann', 'vision', 1699999200, 720);"
                  "INSERT INTO decisions(cycle, t, job_uid, action, level,"
                  "  position, score) VALUES(3, 1700000000, 'u-old', 'admit',"
                  "  0, 1, 2.5);",
                  NULL, NULL, NULL),
              SQLITE_OK);
    sqlite3_close(db);

    aiq_err err = {0};
    store *s = store_open(t.path, NULL, &err);
    CHECK(s != NULL);
    if (!s) {
        fprintf(stderr, "open: %s\n", err.message);
        tmpdb_remove(&t);
        return;
    }
    CHECK_INT(user_version(s), 3);

    struct store_group g;
    CHECK_INT(store_group_get(s, "vision", &g, &err), AIQ_OK);
    CHECK_INT(g.level, 5);
    CHECK_INT(g.quota.gpus, 16);
    CHECK_INT(g.quota.jobs, -1);
    CHECK_DBL(g.shares, 2.5, 0);
    char grp[STORE_NAME_SZ];
    CHECK_INT(store_group_for_namespace(s, "team-v", grp, sizeof grp, &err),
              AIQ_OK);
    CHECK_STR(grp, "vision");

    struct store_job j;
    CHECK_INT(store_job_get(s, "u-old", &j, &err), AIQ_OK);
    CHECK_STR(j.user, "ann");
    CHECK_STR(j.model_name, "resnet");
    CHECK_DBL(j.actual_runtime_s, 100, 0);
    CHECK_DBL(j.gpu_seconds, 800, 0); /* back-filled: 100 s x 2 x 4 GPUs */
    CHECK_INT(store_job_get(s, "u-run", &j, &err), AIQ_OK);
    CHECK_DBL(j.gpu_seconds, 0, 0);   /* not finished: nothing to back-fill */
    /* v3: no record of which arrivals were journaled (not back-filled);
     * marking one works on the migrated file. */
    CHECK_DBL(j.arrival_journaled, 0, 0);
    CHECK_INT(store_job_mark(s, "u-run", STORE_JOB_JOURNALED, 1700007100, &err), AIQ_OK);
    CHECK_INT(store_job_get(s, "u-run", &j, &err), AIQ_OK);
    CHECK_DBL(j.arrival_journaled, 1700007100, 0);

    double h = 0;
    CHECK_INT(store_usage_window(s, "ann", NULL, 0, &h, &err), AIQ_OK);
    CHECK_DBL(h, 0.2, 1e-12);

    /* The v2 additions work on the migrated file. */
    CHECK_INT(store_attempt_begin(s, "u-run", 1, 1700007200, "{\"n\":1}",
                                  &err), AIQ_OK);
    CHECK_INT(store_journal_event(s, 1700007200, STORE_EV_NODE, "gpu-1",
                                  NULL, &err), AIQ_OK);
    long n = 0;
    char *out = export_str(s, 0, &n);
    CHECK_INT(n, 2);
    CHECK_STR(out,
              "{\"type\":\"decision\",\"t\":1700000000,\"cycle\":3,"
              "\"job\":\"u-old\",\"action\":\"admit\",\"level\":0,"
              "\"position\":1,\"score\":2.5,\"terms\":null,\"reason\":null,"
              "\"message\":null}\n"
              "{\"type\":\"event\",\"t\":1700007200,\"kind\":\"node\","
              "\"key\":\"gpu-1\",\"payload\":null}\n");
    free(out);
    store_close(s);

    /* Reopening an up-to-date file changes nothing. */
    s = store_open(t.path, NULL, &err);
    CHECK(s != NULL);
    if (s) {
        CHECK_INT(user_version(s), 3);
        CHECK_INT(store_job_get(s, "u-old", &j, &err), AIQ_OK);
        CHECK_DBL(j.gpu_seconds, 800, 0);
    }
    store_close(s);
    tmpdb_remove(&t);
}

/* ---- views --------------------------------------------------------------- */

TEST(group_roundtrip) {
    store *s = open_mem();
    if (!s) return;
    aiq_err err = {0};
    char *ns[] = {"team-a", "team-b"};
    struct aiq_member mem[] = {{"ann", 10}, {"bob", 20}};
    struct aiq_group g = {0};
    g.meta.name = "nlp";
    g.spec.level = 3;
    g.spec.namespaces = ns;
    g.spec.nnamespaces = 2;
    g.spec.quota = (struct aiq_quota){8, 655360, 64000, 1LL << 40, 4};
    g.spec.budget = (struct aiq_budget){1000.5, 604800};
    g.spec.members = mem;
    g.spec.nmembers = 2;
    g.spec.shares = 3;
    CHECK_INT(store_upsert_group(s, &g, &err), AIQ_OK);

    struct store_group out;
    CHECK_INT(store_group_get(s, "nlp", &out, &err), AIQ_OK);
    CHECK_STR(out.name, "nlp");
    CHECK_INT(out.level, 3);
    CHECK_INT(out.quota.gpus, 8);
    CHECK_INT(out.quota.gpu_memory_mib, 655360);
    CHECK_INT(out.quota.cpu_milli, 64000);
    CHECK_INT(out.quota.memory_bytes, 1LL << 40);
    CHECK_INT(out.quota.jobs, 4);
    CHECK_DBL(out.budget.gpu_hours, 1000.5, 0);
    CHECK_DBL(out.budget.window_s, 604800, 0);
    CHECK_DBL(out.shares, 3, 0);
    CHECK_INT(out.nnamespaces, 2);
    CHECK_INT(out.nmembers, 2);

    char grp[STORE_NAME_SZ];
    CHECK_INT(store_group_for_namespace(s, "team-b", grp, sizeof grp, &err),
              AIQ_OK);
    CHECK_STR(grp, "nlp");
    int32_t lvl = 0;
    CHECK_INT(store_user_level(s, "bob", "nlp", &lvl, &err), AIQ_OK);
    CHECK_INT(lvl, 20);

    /* Re-upsert with one namespace and one member replaces both lists. */
    g.spec.nnamespaces = 1;
    g.spec.nmembers = 1;
    g.spec.members[0].level = 11;
    CHECK_INT(store_upsert_group(s, &g, &err), AIQ_OK);
    CHECK_INT(store_group_get(s, "nlp", &out, &err), AIQ_OK);
    CHECK_INT(out.nnamespaces, 1);
    CHECK_INT(out.nmembers, 1);
    CHECK_INT(store_user_level(s, "ann", "nlp", &lvl, &err), AIQ_OK);
    CHECK_INT(lvl, 11);
    aiq_err_clear(&err);
    CHECK_INT(store_user_level(s, "bob", "nlp", &lvl, &err), AIQ_ENOTFOUND);
    CHECK_STR(err.message, "store: user bob is not a member of group nlp");
    aiq_err_clear(&err);
    CHECK_INT(store_group_for_namespace(s, "team-b", grp, sizeof grp, &err),
              AIQ_ENOTFOUND);
    CHECK_STR(err.message, "store: no group lists namespace team-b");

    CHECK_INT(store_delete_group(s, "nlp", &err), AIQ_OK);
    aiq_err_clear(&err);
    CHECK_INT(store_group_get(s, "nlp", &out, &err), AIQ_ENOTFOUND);
    CHECK_STR(err.message, "store: group nlp not found");
    CHECK_INT(store_group_for_namespace(s, "team-a", grp, sizeof grp, NULL),
              AIQ_ENOTFOUND);

    struct aiq_group bad = {0};
    aiq_err_clear(&err);
    CHECK_INT(store_upsert_group(s, &bad, &err), AIQ_EINVAL);
    CHECK_STR(err.field, "metadata.name");
    store_close(s);
}

TEST(userquota_roundtrip) {
    store *s = open_mem();
    if (!s) return;
    aiq_err err = {0};
    struct aiq_userquota u = {0};
    u.meta.namespace_ = "team-a";
    u.meta.name = "ann-quota";
    u.spec.user = "ann";
    u.spec.quota = (struct aiq_quota){4, -1, 16000, -1, 2};
    u.spec.budget = (struct aiq_budget){-1, 2592000};
    CHECK_INT(store_upsert_userquota(s, &u, "nlp", false,
                                     "sum of user quotas (12 GPUs) passes the "
                                     "group quota (8 GPUs)", &err), AIQ_OK);
    struct store_userquota out;
    CHECK_INT(store_userquota_get(s, "team-a", "ann-quota", &out, &err),
              AIQ_OK);
    CHECK_STR(out.ns, "team-a");
    CHECK_STR(out.name, "ann-quota");
    CHECK_STR(out.user, "ann");
    CHECK_STR(out.group, "nlp");
    CHECK_INT(out.quota.gpus, 4);
    CHECK_INT(out.quota.gpu_memory_mib, -1);
    CHECK_INT(out.quota.cpu_milli, 16000);
    CHECK_INT(out.quota.jobs, 2);
    CHECK_DBL(out.budget.gpu_hours, -1, 0);
    CHECK(!out.accepted);
    CHECK_STR(out.reason, "sum of user quotas (12 GPUs) passes the group "
                          "quota (8 GPUs)");

    CHECK_INT(store_upsert_userquota(s, &u, "nlp", true, NULL, &err), AIQ_OK);
    CHECK_INT(store_userquota_get(s, "team-a", "ann-quota", &out, &err),
              AIQ_OK);
    CHECK(out.accepted);
    CHECK_STR(out.reason, "");

    CHECK_INT(store_delete_userquota(s, "team-a", "ann-quota", &err), AIQ_OK);
    aiq_err_clear(&err);
    CHECK_INT(store_userquota_get(s, "team-a", "ann-quota", &out, &err),
              AIQ_ENOTFOUND);
    CHECK_STR(err.message, "store: user quota team-a/ann-quota not found");

    u.spec.user = NULL;
    aiq_err_clear(&err);
    CHECK_INT(store_upsert_userquota(s, &u, "nlp", true, NULL, &err),
              AIQ_EINVAL);
    CHECK_STR(err.field, "spec.user");
    store_close(s);
}

struct node_seen {
    int n;
    char names[4][STORE_NAME_SZ];
    int32_t gpu_count[4];
    int64_t gpu1_mem[4];
    char model[4][STORE_STR_SZ];
    bool has_domain[4];
    bool schedulable[4];
    int64_t cpu[4];
};

static int node_cb(const struct store_node *n, void *ctx) {
    struct node_seen *ns = ctx;
    if (ns->n >= 4) return 1;
    snprintf(ns->names[ns->n], sizeof ns->names[0], "%s", n->name);
    ns->gpu_count[ns->n] = n->gpu_count;
    ns->gpu1_mem[ns->n] = n->gpu_memory_each ? n->gpu_memory_each[1] : -1;
    snprintf(ns->model[ns->n], sizeof ns->model[0], "%s",
             n->gpu_model ? n->gpu_model : "(null)");
    ns->has_domain[ns->n] = n->domain != NULL;
    ns->schedulable[ns->n] = n->schedulable;
    ns->cpu[ns->n] = n->cpu_milli;
    ns->n++;
    return 0;
}

TEST(node_roundtrip) {
    store *s = open_mem();
    if (!s) return;
    aiq_err err = {0};
    int64_t mixed[] = {81920, 40960};
    struct store_node a = {"gpu-b", "A100", 2, 81920, "pool-a", 64000,
                           1LL << 39, true, mixed};
    struct store_node b = {"gpu-a", NULL, 8, 24576, NULL, 32000, 1LL << 38,
                           false, NULL};
    CHECK_INT(store_upsert_node(s, &a, &err), AIQ_OK);
    CHECK_INT(store_upsert_node(s, &b, &err), AIQ_OK);

    struct node_seen seen = {0};
    CHECK_INT(store_list_nodes(s, node_cb, &seen, &err), AIQ_OK);
    CHECK_INT(seen.n, 2);
    CHECK_STR(seen.names[0], "gpu-a"); /* ordered by name */
    CHECK_INT(seen.gpu_count[0], 8);
    CHECK_INT(seen.gpu1_mem[0], 24576);
    CHECK_STR(seen.model[0], "(null)");
    CHECK(!seen.has_domain[0]);
    CHECK(!seen.schedulable[0]);
    CHECK_INT(seen.cpu[0], 32000);
    CHECK_STR(seen.names[1], "gpu-b");
    CHECK_INT(seen.gpu_count[1], 2);
    CHECK_INT(seen.gpu1_mem[1], 40960);
    CHECK_STR(seen.model[1], "A100");
    CHECK(seen.has_domain[1]);
    CHECK(seen.schedulable[1]);

    /* Shrinking a node drops its extra GPU rows; deleting removes it. */
    b.gpu_count = 1;
    CHECK_INT(store_upsert_node(s, &b, &err), AIQ_OK);
    CHECK_INT(store_delete_node(s, "gpu-b", &err), AIQ_OK);
    memset(&seen, 0, sizeof seen);
    CHECK_INT(store_list_nodes(s, node_cb, &seen, &err), AIQ_OK);
    CHECK_INT(seen.n, 1);
    CHECK_INT(seen.gpu_count[0], 1);
    CHECK_INT(seen.gpu1_mem[0], 0); /* only GPU 0 left */
    sqlite3_stmt *st = NULL;
    CHECK_INT(sqlite3_prepare_v2(s->db, "SELECT count(*) FROM gpus", -1, &st,
                                 NULL), SQLITE_OK);
    CHECK_INT(sqlite3_step(st), SQLITE_ROW);
    CHECK_INT(sqlite3_column_int(st, 0), 1);
    sqlite3_finalize(st);

    b.gpu_count = -2;
    aiq_err_clear(&err);
    CHECK_INT(store_upsert_node(s, &b, &err), AIQ_EINVAL);
    CHECK_STR(err.message, "store: node gpu-a: gpu_count must be 0..256, "
                           "got -2");
    store_close(s);
}

TEST(job_roundtrip) {
    store *s = open_mem();
    if (!s) return;
    aiq_err err = {0};
    struct aiq_aijob j;
    job_fill(&j, "uid-1", "train", "ann");
    CHECK_INT(store_upsert_job(s, &j, "nlp", &err), AIQ_OK);

    struct store_job *o = calloc(1, sizeof *o);
    CHECK_INT(store_job_get(s, "uid-1", o, &err), AIQ_OK);
    CHECK_STR(o->uid, "uid-1");
    CHECK_STR(o->ns, "team-a");
    CHECK_STR(o->name, "train");
    CHECK_STR(o->group, "nlp");
    CHECK_STR(o->user, "ann");
    CHECK_INT(o->priority, 7);
    CHECK_INT(o->replicas, 2);
    CHECK_INT(o->gpus, 4);
    CHECK_INT(o->gpu_memory_mib, 40960);
    CHECK_INT(o->cpu_milli, 8000);
    CHECK_INT(o->memory_bytes, 68719476736LL);
    CHECK_STR(o->gpu_model, "NVIDIA-A100-SXM4-80GB");
    CHECK_STR(o->domain, "pool-a");
    CHECK_DBL(o->estimated_runtime_s, 5400, 0);
    CHECK_STR(o->task_type, "nlp");
    CHECK_STR(o->model_name, "llama");
    CHECK_INT(o->model_parameters, 7000000000LL);
    CHECK_INT(o->backoff_limit, 3);
    CHECK(!o->suspend);
    CHECK_INT(o->phase, AIQ_PHASE_NONE);
    CHECK_DBL(o->created, 1700000000.25, 0);
    CHECK_DBL(o->queued, 0, 0);

    struct store_job_status st = {AIQ_PHASE_QUEUED, 1, 4, 12.75,
                                  "waiting for 8 free GPUs", 1, 0};
    CHECK_INT(store_job_set_status(s, "uid-1", &st, &err), AIQ_OK);
    CHECK_INT(store_job_mark(s, "uid-1", STORE_JOB_QUEUED, 1700000010, &err),
              AIQ_OK);
    CHECK_INT(store_job_mark(s, "uid-1", STORE_JOB_ADMITTED, 1700000020,
                             &err), AIQ_OK);
    CHECK_INT(store_job_mark(s, "uid-1", STORE_JOB_STARTED, 1700000030, &err),
              AIQ_OK);
    CHECK_INT(store_job_mark(s, "uid-1", STORE_JOB_FINISHED, 1700000040,
                             &err), AIQ_OK);
    CHECK_INT(store_job_mark(s, "uid-1", STORE_JOB_DELETED, 1700000050, &err),
              AIQ_OK);
    CHECK_INT(store_job_mark(s, "uid-1", STORE_JOB_JOURNALED, 1700000011, &err),
              AIQ_OK);

    /* A spec update (suspend, no group known) keeps status and group. */
    j.spec.suspend = true;
    j.spec.priority = 9;
    CHECK_INT(store_upsert_job(s, &j, NULL, &err), AIQ_OK);
    CHECK_INT(store_job_get(s, "uid-1", o, &err), AIQ_OK);
    CHECK(o->suspend);
    CHECK_INT(o->priority, 9);
    CHECK_STR(o->group, "nlp");
    CHECK_INT(o->phase, AIQ_PHASE_QUEUED);
    CHECK_INT(o->level, 1);
    CHECK_INT(o->position, 4);
    CHECK_DBL(o->score, 12.75, 0);
    CHECK_STR(o->message, "waiting for 8 free GPUs");
    CHECK_INT(o->attempts, 1);
    CHECK_DBL(o->queued, 1700000010, 0);
    CHECK_DBL(o->admitted, 1700000020, 0);
    CHECK_DBL(o->started, 1700000030, 0);
    CHECK_DBL(o->finished, 1700000040, 0);
    CHECK_DBL(o->deleted, 1700000050, 0);
    /* ... and that its arrival is journaled (a restart does not again) */
    CHECK_DBL(o->arrival_journaled, 1700000011, 0);
    /* A job's end is one write: its final status with its finished time;
     * a status without one keeps the time. */
    struct store_job_status fin = {AIQ_PHASE_SUCCEEDED, 0, 0, 0, "done", 2, 1700000045};
    CHECK_INT(store_job_set_status(s, "uid-1", &fin, &err), AIQ_OK);
    CHECK_INT(store_job_get(s, "uid-1", o, &err), AIQ_OK);
    CHECK_INT(o->phase, AIQ_PHASE_SUCCEEDED);
    CHECK_STR(o->message, "done");
    CHECK_INT(o->attempts, 2);
    CHECK_DBL(o->finished, 1700000045, 0);
    fin.finished = 0;
    fin.message = "done again";
    CHECK_INT(store_job_set_status(s, "uid-1", &fin, &err), AIQ_OK);
    CHECK_INT(store_job_get(s, "uid-1", o, &err), AIQ_OK);
    CHECK_STR(o->message, "done again");
    CHECK_DBL(o->finished, 1700000045, 0);

    aiq_err_clear(&err);
    CHECK_INT(store_job_get(s, "nope", o, &err), AIQ_ENOTFOUND);
    CHECK_STR(err.message, "store: job nope not found");
    aiq_err_clear(&err);
    CHECK_INT(store_job_set_status(s, "nope", &st, &err), AIQ_ENOTFOUND);
    aiq_err_clear(&err);
    CHECK_INT(store_job_mark(s, "nope", STORE_JOB_QUEUED, 1, &err),
              AIQ_ENOTFOUND);
    aiq_err_clear(&err);
    CHECK_INT(store_job_mark(s, "uid-1", (store_job_event)9, 1, &err),
              AIQ_EINVAL);
    CHECK_STR(err.message, "store: job uid-1: unknown event 9");

    char *big = malloc(AIQ_MAX_STRING + 2);
    memset(big, 'x', AIQ_MAX_STRING + 1);
    big[AIQ_MAX_STRING + 1] = '\0';
    st.message = big;
    aiq_err_clear(&err);
    CHECK_INT(store_job_set_status(s, "uid-1", &st, &err), AIQ_ETOOBIG);
    CHECK_STR(err.field, "status.message");
    big[AIQ_MAX_STRING] = '\0'; /* exactly the cap is fine and round-trips */
    CHECK_INT(store_job_set_status(s, "uid-1", &st, &err), AIQ_OK);
    CHECK_INT(store_job_get(s, "uid-1", o, &err), AIQ_OK);
    CHECK_INT(strlen(o->message), AIQ_MAX_STRING);
    free(big);

    char *longname = malloc(AIQ_MAX_NAME + 2);
    memset(longname, 'n', AIQ_MAX_NAME + 1);
    longname[AIQ_MAX_NAME + 1] = '\0';
    j.spec.user = longname;
    aiq_err_clear(&err);
    CHECK_INT(store_upsert_job(s, &j, "nlp", &err), AIQ_ETOOBIG);
    CHECK_STR(err.message, "store: job uid-1: spec.user longer than 253 "
                           "bytes");
    longname[AIQ_MAX_NAME] = '\0'; /* exactly the cap round-trips */
    CHECK_INT(store_upsert_job(s, &j, "nlp", &err), AIQ_OK);
    CHECK_INT(store_job_get(s, "uid-1", o, &err), AIQ_OK);
    CHECK_STR(o->user, longname);
    free(longname);

    j.meta.uid = NULL;
    aiq_err_clear(&err);
    CHECK_INT(store_upsert_job(s, &j, "nlp", &err), AIQ_EINVAL);
    CHECK_STR(err.field, "metadata.uid");
    free(o);
    store_close(s);
}

struct uids {
    int n;
    char uid[8][STORE_NAME_SZ];
};

static int uid_cb(const struct store_job *j, void *ctx) {
    struct uids *u = ctx;
    if (u->n < 8) snprintf(u->uid[u->n++], sizeof u->uid[0], "%s", j->uid);
    return 0;
}

static int uid_stop_cb(const struct store_job *j, void *ctx) {
    uid_cb(j, ctx);
    return 1;
}

TEST(list_jobs_active_and_all) {
    store *s = open_mem();
    if (!s) return;
    aiq_err err = {0};
    struct aiq_aijob j;
    static char *ids[] = {"u-a", "u-b", "u-c", "u-d", "u-e"};
    aiq_phase ph[] = {AIQ_PHASE_QUEUED, AIQ_PHASE_SUCCEEDED,
                      AIQ_PHASE_RUNNING, AIQ_PHASE_REJECTED,
                      AIQ_PHASE_PENDING};
    for (int i = 0; i < 5; i++) {
        job_fill(&j, ids[i], ids[i], "ann");
        j.meta.creation_time = 1700000000 - i; /* u-e oldest */
        CHECK_INT(store_upsert_job(s, &j, "nlp", &err), AIQ_OK);
        struct store_job_status st = {ph[i], 0, 0, 0, NULL, 0, 0};
        CHECK_INT(store_job_set_status(s, ids[i], &st, &err), AIQ_OK);
    }
    CHECK_INT(store_job_mark(s, "u-e", STORE_JOB_DELETED, 1700000100, &err),
              AIQ_OK);
    struct uids u = {0};
    CHECK_INT(store_list_jobs(s, true, uid_cb, &u, &err), AIQ_OK);
    CHECK_INT(u.n, 2);
    CHECK_STR(u.uid[0], "u-c");
    CHECK_STR(u.uid[1], "u-a");
    memset(&u, 0, sizeof u);
    CHECK_INT(store_list_jobs(s, false, uid_cb, &u, &err), AIQ_OK);
    CHECK_INT(u.n, 5);
    CHECK_STR(u.uid[0], "u-e");
    CHECK_STR(u.uid[4], "u-a");
    memset(&u, 0, sizeof u);
    CHECK_INT(store_list_jobs(s, false, uid_stop_cb, &u, &err), AIQ_OK);
    CHECK_INT(u.n, 1);

    /* ns/name lookup finds the newest object of that name. */
    job_fill(&j, "u-a2", "u-a", "ann");
    j.meta.creation_time = 1700000500;
    CHECK_INT(store_upsert_job(s, &j, "nlp", &err), AIQ_OK);
    struct store_job *o = calloc(1, sizeof *o);
    CHECK_INT(store_job_find(s, "team-a", "u-a", o, &err), AIQ_OK);
    CHECK_STR(o->uid, "u-a2");
    CHECK_INT(store_job_find(s, "team-a", "u-b", o, &err), AIQ_OK);
    CHECK_STR(o->uid, "u-b");
    aiq_err_clear(&err);
    CHECK_INT(store_job_find(s, "team-b", "u-a", o, &err), AIQ_ENOTFOUND);
    CHECK_STR(err.message, "store: no job team-b/u-a");
    free(o);
    store_close(s);
}

/* ---- attempts and usage --------------------------------------------------- */

/* 2023-11-14T22:00:00Z: an hour boundary, so bucket maths is readable. */
static const double T0 = 1699999200.0;

TEST(attempt_finish_is_idempotent) {
    store *s = open_mem();
    if (!s) return;
    aiq_err err = {0};
    struct aiq_aijob j;
    job_fill(&j, "uid-1", "train", "ann");
    CHECK_INT(store_upsert_job(s, &j, "nlp", &err), AIQ_OK);

    CHECK_INT(store_attempt_begin(s, "uid-1", 1, T0 + 60,
                                  "{ \"replicas\": [ {\"node\": \"gpu-a\", "
                                  "\"gpus\": [0, 1]} ] }", &err), AIQ_OK);
    CHECK_INT(store_attempt_start(s, "uid-1", 1, T0 + 1800, &err), AIQ_OK);
    CHECK_INT(store_attempt_start(s, "uid-1", 1, T0 + 1900, &err), AIQ_OK);
    bool counted = false;
    /* Runs 1800 s .. 5400 s: 1.0 h, 8 GPUs -> 28800 GPU-seconds. */
    CHECK_INT(store_attempt_finish(s, "uid-1", 1, T0 + 5400, 28800,
                                   "Succeeded", &counted, &err), AIQ_OK);
    CHECK(counted);
    CHECK_INT(store_attempt_finish(s, "uid-1", 1, T0 + 9000, 99999, "Failed",
                                   &counted, &err), AIQ_OK);
    CHECK(!counted);
    /* A begin after the finish changes nothing either. */
    CHECK_INT(store_attempt_begin(s, "uid-1", 1, T0 + 9999, NULL, &err),
              AIQ_OK);

    struct store_attempt a;
    CHECK_INT(store_attempt_get(s, "uid-1", 1, &a, &err), AIQ_OK);
    CHECK_DBL(a.admitted, T0 + 60, 0);
    CHECK_DBL(a.started, T0 + 1800, 0);
    CHECK_DBL(a.finished, T0 + 5400, 0);
    CHECK_DBL(a.gpu_seconds, 28800, 0);
    CHECK_STR(a.outcome, "Succeeded");
    CHECK_STR(a.placement_json,
              "{\"replicas\":[{\"node\":\"gpu-a\",\"gpus\":[0,1]}]}");
    free(a.placement_json);

    struct store_job *o = calloc(1, sizeof *o);
    CHECK_INT(store_job_get(s, "uid-1", o, &err), AIQ_OK);
    CHECK_DBL(o->gpu_seconds, 28800, 0);
    CHECK_DBL(o->actual_runtime_s, 3600, 0);

    /* Usage: 8 GPU-hours, half in bucket T0 and half in T0+3600. */
    double h = 0;
    CHECK_INT(store_usage_window(s, "ann", "nlp", 0, &h, &err), AIQ_OK);
    CHECK_DBL(h, 8, 1e-9);
    CHECK_INT(store_usage_window(s, NULL, "nlp", T0 + 3600, &h, &err),
              AIQ_OK);
    CHECK_DBL(h, 4, 1e-9);

    /* A second attempt of the same job counts on its own (no start known:
     * all in the finish bucket). Attempt 1 is still counted once. */
    CHECK_INT(store_attempt_finish(s, "uid-1", 2, T0 + 7300, 3600, "Failed",
                                   &counted, &err), AIQ_OK);
    CHECK(counted);
    CHECK_INT(store_attempt_finish(s, "uid-1", 2, T0 + 7300, 3600, "Failed",
                                   &counted, &err), AIQ_OK);
    CHECK(!counted);
    CHECK_INT(store_usage_window(s, "ann", NULL, 0, &h, &err), AIQ_OK);
    CHECK_DBL(h, 9, 1e-9);
    CHECK_INT(store_usage_window(s, "ann", NULL, T0 + 7200, &h, &err),
              AIQ_OK);
    CHECK_DBL(h, 1, 1e-9);
    CHECK_INT(store_job_get(s, "uid-1", o, &err), AIQ_OK);
    CHECK_DBL(o->gpu_seconds, 32400, 0);

    aiq_err_clear(&err);
    CHECK_INT(store_attempt_finish(s, "ghost", 1, T0, 1, "Failed", &counted,
                                   &err), AIQ_ENOTFOUND);
    CHECK_STR(err.message, "store: job ghost not found");
    aiq_err_clear(&err);
    CHECK_INT(store_attempt_finish(s, "uid-1", 0, T0, 1, "Failed", &counted,
                                   &err), AIQ_EINVAL);
    CHECK_STR(err.message, "store: job uid-1: attempt must be >= 1, got 0");
    aiq_err_clear(&err);
    CHECK_INT(store_attempt_finish(s, "uid-1", 3, T0, -5, "Failed", &counted,
                                   &err), AIQ_EINVAL);
    CHECK_STR(err.message, "store: job uid-1: gpu_seconds must be >= 0, "
                           "got -5");
    aiq_err_clear(&err);
    CHECK_INT(store_attempt_begin(s, "uid-1", 3, T0, "{\"a\": ", &err),
              AIQ_EPARSE);
    CHECK_STR(err.field, "placement");
    aiq_err_clear(&err);
    CHECK_INT(store_attempt_get(s, "uid-1", 3, &a, &err), AIQ_ENOTFOUND);
    free(o);
    store_close(s);
}

TEST(attempt_preemptions_last_hour_oldest_first) {
    store *s = open_mem();
    if (!s) return;
    aiq_err err = {0};
    struct aiq_aijob j;
    job_fill(&j, "uid-p", "victim", "ann");
    CHECK_INT(store_upsert_job(s, &j, "nlp", &err), AIQ_OK);
    /* attempts 1..5: preempted at -7200 s, -1800, -600; one failure at
     * -300; preempted at -60; attempt 6 still running */
    static const double end[] = {-7200, -1800, -600, -300, -60};
    static const char *const how[] = {"Preempted", "Preempted", "Preempted", "Failed",
                                      "Preempted"};
    for (int a = 0; a < 5; a++)
        CHECK_INT(store_attempt_finish(s, "uid-p", a + 1, T0 + end[a], 0, how[a], NULL, &err),
                  AIQ_OK);
    CHECK_INT(store_attempt_begin(s, "uid-p", 6, T0, NULL, &err), AIQ_OK);
    double t[8] = {0};
    int n = -1;
    CHECK_INT(store_attempt_preemptions(s, "uid-p", T0 - 3600, t, 8, &n, &err), AIQ_OK);
    CHECK_INT(n, 3);
    CHECK_DBL(t[0], T0 - 1800, 0);
    CHECK_DBL(t[1], T0 - 600, 0);
    CHECK_DBL(t[2], T0 - 60, 0);
    /* at most max: the newest ones */
    CHECK_INT(store_attempt_preemptions(s, "uid-p", 0, t, 2, &n, &err), AIQ_OK);
    CHECK_INT(n, 2);
    CHECK_DBL(t[0], T0 - 600, 0);
    CHECK_DBL(t[1], T0 - 60, 0);
    /* the boundary counts; another job's and an unknown job's are not its */
    CHECK_INT(store_attempt_preemptions(s, "uid-p", T0 - 60, t, 8, &n, &err), AIQ_OK);
    CHECK_INT(n, 1);
    CHECK_INT(store_attempt_preemptions(s, "ghost", 0, t, 8, &n, &err), AIQ_OK);
    CHECK_INT(n, 0);
    aiq_err_clear(&err);
    CHECK_INT(store_attempt_preemptions(s, "", 0, t, 8, &n, &err), AIQ_EINVAL);
    CHECK_STR(err.field, "uid");
    store_close(s);
}

struct preempt_rows {
    char uid[8][16];
    double t[8];
    int n, stop_at;
};

static int preempt_row(const char *uid, double finished, void *ctx) {
    struct preempt_rows *r = ctx;
    if (r->n < 8) {
        snprintf(r->uid[r->n], sizeof r->uid[r->n], "%s", uid);
        r->t[r->n] = finished;
    }
    return ++r->n == r->stop_at;
}

/* A restart's replay reads every job's preemptions in one scan: the
 * same rows store_attempt_preemptions gives each job, grouped by job. */
TEST(attempt_preemptions_all_jobs_one_scan) {
    store *s = open_mem();
    if (!s) return;
    aiq_err err = {0};
    struct aiq_aijob j;
    /* uid-q's written first: the scan orders by job, not by writing */
    job_fill(&j, "uid-q", "q", "bob");
    CHECK_INT(store_upsert_job(s, &j, "nlp", &err), AIQ_OK);
    job_fill(&j, "uid-p", "p", "ann");
    CHECK_INT(store_upsert_job(s, &j, "nlp", &err), AIQ_OK);
    CHECK_INT(store_attempt_finish(s, "uid-q", 1, T0 - 120, 0, "Preempted", NULL, &err), AIQ_OK);
    CHECK_INT(store_attempt_finish(s, "uid-p", 1, T0 - 7200, 0, "Preempted", NULL, &err), AIQ_OK);
    CHECK_INT(store_attempt_finish(s, "uid-p", 2, T0 - 60, 0, "Preempted", NULL, &err), AIQ_OK);
    CHECK_INT(store_attempt_finish(s, "uid-p", 3, T0 - 600, 0, "Preempted", NULL, &err), AIQ_OK);
    CHECK_INT(store_attempt_finish(s, "uid-q", 2, T0 - 30, 0, "Failed", NULL, &err), AIQ_OK);
    struct preempt_rows r;
    memset(&r, 0, sizeof r);
    CHECK_INT(store_attempt_preemptions_all(s, T0 - 3600, preempt_row, &r, &err), AIQ_OK);
    CHECK_INT(r.n, 3); /* not the one before since, not the failure */
    CHECK_STR(r.uid[0], "uid-p");
    CHECK_DBL(r.t[0], T0 - 600, 0);
    CHECK_STR(r.uid[1], "uid-p");
    CHECK_DBL(r.t[1], T0 - 60, 0);
    CHECK_STR(r.uid[2], "uid-q");
    CHECK_DBL(r.t[2], T0 - 120, 0);
    /* a callback that says stop ends the walk, still AIQ_OK */
    memset(&r, 0, sizeof r);
    r.stop_at = 1;
    CHECK_INT(store_attempt_preemptions_all(s, 0, preempt_row, &r, &err), AIQ_OK);
    CHECK_INT(r.n, 1);
    CHECK_DBL(r.t[0], T0 - 7200, 0);
    store_close(s);
}

/* A restart records every job again: a row that already says it all is
 * not written, and one that changed is (a NULL group keeps the row's). */
TEST(upsert_job_unchanged_row_not_written) {
    store *s = open_mem();
    if (!s) return;
    aiq_err err = {0};
    struct aiq_aijob j;
    struct store_job got;
    job_fill(&j, "uid-u", "u", "ann");
    CHECK_INT(store_upsert_job(s, &j, "nlp", &err), AIQ_OK);
    int before = sqlite3_total_changes(s->db);
    CHECK_INT(store_upsert_job(s, &j, "nlp", &err), AIQ_OK);
    CHECK_INT(store_upsert_job(s, &j, NULL, &err), AIQ_OK);
    CHECK_INT(sqlite3_total_changes(s->db), before);
    j.spec.priority += 5;
    CHECK_INT(store_upsert_job(s, &j, NULL, &err), AIQ_OK);
    CHECK_INT(sqlite3_total_changes(s->db), before + 1);
    CHECK_INT(store_job_get(s, "uid-u", &got, &err), AIQ_OK);
    CHECK_INT(got.priority, j.spec.priority);
    CHECK_STR(got.group, "nlp");
    store_close(s);
}

/* store_job_row_is says "unchanged" exactly when the upsert writes
 * nothing: each field changed alone, then put back. */
TEST(job_row_is_agrees_with_the_upsert) {
    store *s = open_mem();
    if (!s) return;
    aiq_err err = {0};
    struct aiq_aijob j, v;
    struct store_job row;
    job_fill(&j, "uid-r", "r", "ann");
    CHECK_INT(store_upsert_job(s, &j, "nlp", &err), AIQ_OK);
    for (int k = 0; k <= 20; k++) {
        const char *group = "nlp";
        v = j;
        switch (k) {
        case 0: break; /* the same job */
        case 1: group = NULL; break; /* unknown group: the row keeps its own */
        case 2: group = "cv"; break;
        case 3: v.meta.namespace_ = "team-b"; break;
        case 4: v.meta.name = "r2"; break;
        case 5: v.spec.user = "bob"; break;
        case 6: v.spec.priority++; break;
        case 7: v.spec.replicas++; break;
        case 8: v.spec.resources.gpus++; break;
        case 9: v.spec.resources.gpu_memory_mib++; break;
        case 10: v.spec.resources.cpu_milli++; break;
        case 11: v.spec.resources.memory_bytes++; break;
        case 12: v.spec.resources.gpu_model = NULL; break;
        case 13: v.spec.domain = "pool-b"; break;
        case 14: v.spec.estimated_runtime_s += 0.5; break;
        case 15: v.spec.task_type = "cv"; break;
        case 16: v.spec.model_name = "bert"; break;
        case 17: v.spec.model_parameters++; break;
        case 18: v.spec.backoff_limit++; break;
        case 19: v.spec.suspend = true; break;
        case 20: v.meta.creation_time += 0.25; break;
        }
        CHECK_INT(store_job_get(s, "uid-r", &row, &err), AIQ_OK);
        bool same = store_job_row_is(&row, &v, group);
        int before = sqlite3_total_changes(s->db);
        CHECK_INT(store_upsert_job(s, &v, group, &err), AIQ_OK);
        if (!CHECK(same == (sqlite3_total_changes(s->db) == before)))
            fprintf(stderr, "  change %d: row_is %d\n", k, same);
        CHECK(same == (k <= 1));
        CHECK_INT(store_upsert_job(s, &j, "nlp", &err), AIQ_OK); /* back */
    }
    store_close(s);
}

TEST(usage_spread_over_buckets) {
    store *s = open_mem();
    if (!s) return;
    aiq_err err = {0};
    /* 10:30 .. 12:15 on 2 GPUs = 6300 s x 2 = 12600 GPU-s:
     * 1800 s in the first hour, 3600 in the second, 900 in the third. */
    CHECK_INT(store__usage_spread(s, "bob", "cv", T0 + 1800, T0 + 8100,
                                  12600, &err), AIQ_OK);
    double h = 0;
    CHECK_INT(store_usage_window(s, "bob", "cv", 0, &h, &err), AIQ_OK);
    CHECK_DBL(h, 3.5, 1e-12);
    CHECK_INT(store_usage_window(s, "bob", "cv", T0 + 3600, &h, &err),
              AIQ_OK);
    CHECK_DBL(h, 2.5, 1e-12);
    CHECK_INT(store_usage_window(s, "bob", "cv", T0 + 7200 + 5, &h, &err),
              AIQ_OK);
    CHECK_DBL(h, 0.5, 1e-12); /* the bucket holding `since` counts whole */
    CHECK_INT(store_usage_window(s, "bob", "cv", T0 + 10800, &h, &err),
              AIQ_OK);
    CHECK_DBL(h, 0, 0);
    store_close(s);
}

struct usage_seen {
    int n;
    char key[4][2 * STORE_NAME_SZ];
    double h[4];
};

static int usage_cb(const char *user, const char *group, double h,
                    void *ctx) {
    struct usage_seen *u = ctx;
    if (u->n < 4) {
        snprintf(u->key[u->n], sizeof u->key[0], "%s/%s", user, group);
        u->h[u->n++] = h;
    }
    return 0;
}

TEST(usage_decayed_hand_computed) {
    store *s = open_mem();
    if (!s) return;
    aiq_err err = {0};
    const double hl = 86400; /* one day */
    /* ann/nlp: 3600 GPU-s in bucket T0 (mid T0+1800) and 7200 in the
     * bucket two half-lives later; bob/nlp: 1800 GPU-s at T0. */
    CHECK_INT(store_usage_add(s, "ann", "nlp", T0 + 10, 3600, &err), AIQ_OK);
    CHECK_INT(store_usage_add(s, "ann", "nlp", T0 + 2 * hl + 3599, 7200,
                              &err), AIQ_OK);
    CHECK_INT(store_usage_add(s, "bob", "nlp", T0, 1800, &err), AIQ_OK);
    CHECK_INT(store_usage_add(s, "ann", "cv", T0, 3600, &err), AIQ_OK);
    double now = T0 + 1800 + 3 * hl, h = 0;
    /* ann/nlp: 1 h x 2^-3 + 2 h x 2^-1 = 0.125 + 1 */
    CHECK_INT(store_usage_decayed(s, "ann", "nlp", now, hl, &h, &err),
              AIQ_OK);
    CHECK_DBL(h, 1.125, 1e-12);
    /* ann anywhere: + cv 1 h x 2^-3 */
    CHECK_INT(store_usage_decayed(s, "ann", NULL, now, hl, &h, &err), AIQ_OK);
    CHECK_DBL(h, 1.25, 1e-12);
    /* group nlp: ann 1.125 + bob 0.5 x 2^-3 */
    CHECK_INT(store_usage_decayed(s, NULL, "nlp", now, hl, &h, &err), AIQ_OK);
    CHECK_DBL(h, 1.1875, 1e-12);
    /* no decay: plain sum; future buckets weigh 1 */
    CHECK_INT(store_usage_decayed(s, NULL, "nlp", now, 0, &h, &err), AIQ_OK);
    CHECK_DBL(h, 3.5, 1e-12);
    CHECK_INT(store_usage_decayed(s, "ann", "nlp", T0, hl, &h, &err), AIQ_OK);
    CHECK_DBL(h, 3, 1e-12);
    /* half an hour-bucket of age: exact 2^(-0.5) check on one bucket */
    CHECK_INT(store_usage_decayed(s, "bob", "nlp", T0 + 1800 + hl / 2, hl,
                                  &h, &err), AIQ_OK);
    CHECK_DBL(h, 0.5 * 0.70710678118654752, 1e-12);

    struct usage_seen seen = {0};
    CHECK_INT(store_usage_each(s, now, hl, usage_cb, &seen, &err), AIQ_OK);
    CHECK_INT(seen.n, 3);
    CHECK_STR(seen.key[0], "ann/cv");
    CHECK_DBL(seen.h[0], 0.125, 1e-12);
    CHECK_STR(seen.key[1], "ann/nlp");
    CHECK_DBL(seen.h[1], 1.125, 1e-12);
    CHECK_STR(seen.key[2], "bob/nlp");
    CHECK_DBL(seen.h[2], 0.0625, 1e-12);

    aiq_err_clear(&err);
    CHECK_INT(store_usage_decayed(s, NULL, NULL, now, hl, &h, &err),
              AIQ_EINVAL);
    aiq_err_clear(&err);
    CHECK_INT(store_usage_add(s, "ann", "nlp", T0, -1, &err), AIQ_EINVAL);
    CHECK_STR(err.field, "gpu_seconds");
    store_close(s);
}

/* store_usage_each keeps what it read: at later times it must give what
 * weighing every bucket again gives (store_usage_decayed), see a usage
 * write at once, and forget what a rollback undid. */
TEST(usage_each_cache_follows_time_writes_and_rollback) {
    store *s = open_mem();
    if (!s) return;
    aiq_err err = {0};
    const double hl = 7200;
    CHECK_INT(store_usage_add(s, "ann", "nlp", T0 + 10, 3600, &err), AIQ_OK);
    CHECK_INT(store_usage_add(s, "bob", "nlp", T0 + 5000, 1800, &err), AIQ_OK);
    /* t1 inside bob's bucket, before its middle: that bucket is "recent" */
    double t1 = T0 + 3600 + 100, t2 = T0 + 3 * 3600 + 77, t3 = T0 + 9 * 3600;
    double want = 0;
    struct usage_seen seen = {0};
    CHECK_INT(store_usage_each(s, t1, hl, usage_cb, &seen, &err), AIQ_OK);
    CHECK_INT(seen.n, 2);
    CHECK_INT(store_usage_decayed(s, "bob", "nlp", t1, hl, &want, &err), AIQ_OK);
    CHECK_DBL(seen.h[1], want, 1e-12);
    const double ts[2] = {t2, t3};
    for (int k = 0; k < 2; k++) { /* cached, later */
        memset(&seen, 0, sizeof seen);
        CHECK_INT(store_usage_each(s, ts[k], hl, usage_cb, &seen, &err), AIQ_OK);
        CHECK_INT(store_usage_decayed(s, "ann", "nlp", ts[k], hl, &want, &err), AIQ_OK);
        CHECK_DBL(seen.h[0], want, 1e-12);
        CHECK_INT(store_usage_decayed(s, "bob", "nlp", ts[k], hl, &want, &err), AIQ_OK);
        CHECK_DBL(seen.h[1], want, 1e-12);
    }
    /* a write shows at once */
    CHECK_INT(store_usage_add(s, "cat", "nlp", T0 + 4 * 3600, 3600, &err), AIQ_OK);
    memset(&seen, 0, sizeof seen);
    CHECK_INT(store_usage_each(s, t3, hl, usage_cb, &seen, &err), AIQ_OK);
    CHECK_INT(seen.n, 3);
    CHECK_STR(seen.key[2], "cat/nlp");
    /* read inside a transaction that is then rolled back: forgotten */
    CHECK_INT(store_begin(s, &err), AIQ_OK);
    CHECK_INT(store_usage_add(s, "dan", "nlp", T0, 3600, &err), AIQ_OK);
    memset(&seen, 0, sizeof seen);
    CHECK_INT(store_usage_each(s, t3, hl, usage_cb, &seen, &err), AIQ_OK);
    CHECK_INT(seen.n, 4);
    CHECK_INT(store_rollback(s, &err), AIQ_OK);
    memset(&seen, 0, sizeof seen);
    CHECK_INT(store_usage_each(s, t3, hl, usage_cb, &seen, &err), AIQ_OK);
    CHECK_INT(seen.n, 3);
    /* another half life is another weighing */
    memset(&seen, 0, sizeof seen);
    CHECK_INT(store_usage_each(s, t3, 0, usage_cb, &seen, &err), AIQ_OK);
    CHECK_DBL(seen.h[0], 1, 1e-12);
    store_close(s);
}

struct hist {
    int n;
    char uid[8][STORE_NAME_SZ];
    double rt[8];
};

static int hist_cb(const struct store_history_row *r, void *ctx) {
    struct hist *h = ctx;
    if (h->n < 8) {
        snprintf(h->uid[h->n], sizeof h->uid[0], "%s", r->uid);
        h->rt[h->n++] = r->actual_runtime_s;
    }
    return 0;
}

/* Adds a finished job: runs from `start` for `rt` seconds. */
static void finished_job(store *s, char *uid, char *user, char *model,
                         double start, double rt, aiq_phase phase) {
    aiq_err err = {0};
    struct aiq_aijob j;
    job_fill(&j, uid, uid, user);
    j.spec.model_name = model;
    CHECK_INT(store_upsert_job(s, &j, "nlp", &err), AIQ_OK);
    CHECK_INT(store_attempt_start(s, uid, 1, start, &err), AIQ_OK);
    CHECK_INT(store_attempt_finish(s, uid, 1, start + rt, rt * 8,
                                   phase == AIQ_PHASE_SUCCEEDED ? "Succeeded" : "Failed", NULL, &err),
              AIQ_OK);
    /* the end as the operator records it: one write (job_store_final) */
    struct store_job_status st = {phase, 0, 0, 0, NULL, 1, start + rt};
    CHECK_INT(store_job_set_status(s, uid, &st, &err), AIQ_OK);
}

TEST(runtime_history_filters_and_order) {
    store *s = open_mem();
    if (!s) return;
    aiq_err err = {0};
    finished_job(s, "h1", "ann", "llama", T0, 600, AIQ_PHASE_SUCCEEDED);
    finished_job(s, "h2", "ann", "llama", T0 + 1000, 900,
                 AIQ_PHASE_SUCCEEDED);
    finished_job(s, "h3", "ann", "bert", T0 + 2000, 300, AIQ_PHASE_SUCCEEDED);
    finished_job(s, "h4", "bob", "llama", T0 + 3000, 1200,
                 AIQ_PHASE_SUCCEEDED);
    finished_job(s, "h5", "ann", "llama", T0 + 4000, 50, AIQ_PHASE_FAILED);

    struct hist h = {0};
    struct store_history_query q = {.user = "ann", .model_name = "llama"};
    CHECK_INT(store_runtime_history(s, &q, hist_cb, &h, &err), AIQ_OK);
    CHECK_INT(h.n, 2); /* failed h5 left out */
    CHECK_STR(h.uid[0], "h2"); /* newest first */
    CHECK_DBL(h.rt[0], 900, 0);
    CHECK_STR(h.uid[1], "h1");
    CHECK_DBL(h.rt[1], 600, 0);

    memset(&h, 0, sizeof h);
    q = (struct store_history_query){.model_name = "llama", .limit = 2};
    CHECK_INT(store_runtime_history(s, &q, hist_cb, &h, &err), AIQ_OK);
    CHECK_INT(h.n, 2);
    CHECK_STR(h.uid[0], "h4");
    CHECK_STR(h.uid[1], "h2");

    memset(&h, 0, sizeof h);
    q = (struct store_history_query){.group = "nlp", .task_type = "nlp"};
    CHECK_INT(store_runtime_history(s, &q, hist_cb, &h, &err), AIQ_OK);
    CHECK_INT(h.n, 4);

    memset(&h, 0, sizeof h);
    q = (struct store_history_query){.user = "carol"};
    CHECK_INT(store_runtime_history(s, &q, hist_cb, &h, &err), AIQ_OK);
    CHECK_INT(h.n, 0);
    store_close(s);
}

/* ---- journal ------------------------------------------------------------- */

static void journal_fill(store *s) {
    aiq_err err = {0};
    CHECK_INT(store_journal_event(s, 100.5, STORE_EV_JOB_ARRIVAL,
                                  "team-a/train",
                                  "{ \"uid\": \"uid-1\", \"gpus\": 8,\n"
                                  "  \"est\": 0.1 }", &err), AIQ_OK);
    struct store_decision d = {
        .cycle = 1, .t = 100.5, .job_uid = "uid-1", .action = "wait",
        .level = 1, .position = 2, .score = 0.1,
        .terms_json = "[{\"term\":\"wait.hours\",\"value\":0.25}]",
        .reason = "QuotaExceeded",
        .message = "group \"nlp\" uses 8/8 GPUs\tline2"};
    CHECK_INT(store_journal_decision(s, &d, &err), AIQ_OK);
    /* Same time as the decision above, inserted later: still listed
     * before it (events first at equal times). */
    CHECK_INT(store_journal_event(s, 100.5, STORE_EV_QUOTA, "team-a/q1",
                                  NULL, &err), AIQ_OK);
    d = (struct store_decision){.cycle = 2, .t = 160, .job_uid = "uid-1",
                                .action = "admit", .score = 1e21};
    CHECK_INT(store_journal_decision(s, &d, &err), AIQ_OK);
    CHECK_INT(store_journal_event(s, 200, STORE_EV_JOB_DEPARTURE,
                                  "team-a/train",
                                  "{\"actual_runtime_s\":3600}", &err),
              AIQ_OK);
    CHECK_INT(store_journal_event(s, 50, STORE_EV_POLICY, "fifo",
                                  "\"x/y\"", &err), AIQ_OK);
}

TEST(journal_export_exact_lines) {
    store *s = open_mem();
    if (!s) return;
    journal_fill(s);
    long n = 0;
    char *out = export_str(s, 100, &n);
    CHECK_INT(n, 5);
    CHECK_STR(out,
        "{\"type\":\"event\",\"t\":100.5,\"kind\":\"job_arrival\","
        "\"key\":\"team-a/train\",\"payload\":{\"uid\":\"uid-1\",\"gpus\":8,"
        "\"est\":0.1}}\n"
        "{\"type\":\"event\",\"t\":100.5,\"kind\":\"quota\","
        "\"key\":\"team-a/q1\",\"payload\":null}\n"
        "{\"type\":\"decision\",\"t\":100.5,\"cycle\":1,\"job\":\"uid-1\","
        "\"action\":\"wait\",\"level\":1,\"position\":2,\"score\":0.1,"
        "\"terms\":[{\"term\":\"wait.hours\",\"value\":0.25}],"
        "\"reason\":\"QuotaExceeded\","
        "\"message\":\"group \\\"nlp\\\" uses 8/8 GPUs\\tline2\"}\n"
        "{\"type\":\"decision\",\"t\":160,\"cycle\":2,\"job\":\"uid-1\","
        "\"action\":\"admit\",\"level\":0,\"position\":0,\"score\":1e+21,"
        "\"terms\":null,\"reason\":null,\"message\":null}\n"
        "{\"type\":\"event\",\"t\":200,\"kind\":\"job_departure\","
        "\"key\":\"team-a/train\",\"payload\":{\"actual_runtime_s\":3600}}\n");
    free(out);

    out = export_str(s, 0, &n);
    CHECK_INT(n, 6);
    CHECK(out && strncmp(out, "{\"type\":\"event\",\"t\":50,\"kind\":\"policy\","
                              "\"key\":\"fifo\",\"payload\":\"x/y\"}\n",
                         60) == 0);
    free(out);
    store_close(s);
}

struct lastdec {
    int n;
    char line[4][160];
};

static int lastdec_cb(const struct store_decision *d, void *ctx) {
    struct lastdec *l = ctx;
    if (l->n < 4)
        snprintf(l->line[l->n++], sizeof l->line[0], "%s %s %d %d %s", d->job_uid, d->action,
                 d->level, d->position, d->reason);
    return 0;
}

/* A restart takes each active job's newest decision as its last one, so
 * its first cycle journals only what differs: the newest by journal
 * order (a restarted operator counts cycles from 1 again), active jobs
 * only, in uid order. */
TEST(journal_last_decision_per_active_job) {
    store *s = open_mem();
    if (!s) return;
    aiq_err err = {0};
    struct aiq_aijob j;
    const char *uids[] = {"uid-b", "uid-a", "uid-done"};
    for (int i = 0; i < 3; i++) {
        job_fill(&j, (char *)uids[i], (char *)uids[i], "alice");
        CHECK_INT(store_upsert_job(s, &j, "nlp", &err), AIQ_OK);
    }
    CHECK_INT(store_job_mark(s, "uid-done", STORE_JOB_FINISHED, 50, &err), AIQ_OK);
    struct {
        int64_t cycle;
        const char *uid, *action;
        int level, pos;
        const char *reason;
    } rows[] = {
        {7, "uid-b", "wait", 1, 9, "BehindHigherPriority"},
        {8, "uid-a", "wait", 0, 3, "QuotaExceeded"},
        {9, "uid-b", "wait", 1, 4, "BehindHigherPriority"},
        {1, "uid-b", "wait", 2, 2, "NoFit"}, /* after a restart: cycle 1, newest */
        {2, "uid-done", "admit", 0, 0, "Admitted"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct store_decision d = {rows[i].cycle, 10.0 + (double)i, rows[i].uid, rows[i].action,
                                   rows[i].level, rows[i].pos, 0, NULL, rows[i].reason, "m"};
        CHECK_INT(store_journal_decision(s, &d, &err), AIQ_OK);
    }
    struct lastdec l = {0};
    CHECK_INT(store_journal_last_decisions(s, lastdec_cb, &l, &err), AIQ_OK);
    CHECK_INT(l.n, 2);
    CHECK_STR(l.line[0], "uid-a wait 0 3 QuotaExceeded");
    CHECK_STR(l.line[1], "uid-b wait 2 2 NoFit");
    store_close(s);
}

TEST(journal_rejects_bad_input) {
    store *s = open_mem();
    if (!s) return;
    aiq_err err = {0};
    CHECK_INT(store_journal_event(s, 1, STORE_EV_NODE, "n1", "{\"a\":1} x",
                                  &err), AIQ_EPARSE);
    CHECK_STR(err.field, "payload");
    CHECK_INT(err.offset, 8);
    CHECK_STR(err.message, "store: payload: not JSON at byte 8: trailing "
                           "text");
    aiq_err_clear(&err);
    CHECK_INT(store_journal_event(s, 1, (store_event_kind)42, "n1", NULL,
                                  &err), AIQ_EINVAL);
    CHECK_STR(err.message, "store: journal event: unknown kind 42");
    aiq_err_clear(&err);
    CHECK_INT(store_journal_event(s, 1, STORE_EV_NODE, "", NULL, &err),
              AIQ_EINVAL);
    CHECK_STR(err.field, "key");

    char *big = malloc(STORE_MAX_JSON + 16);
    memset(big, ' ', STORE_MAX_JSON + 15);
    big[0] = '1';
    big[STORE_MAX_JSON + 15] = '\0';
    aiq_err_clear(&err);
    CHECK_INT(store_journal_event(s, 1, STORE_EV_NODE, "n1", big, &err),
              AIQ_ETOOBIG);
    free(big);

    struct store_decision d = {.cycle = 1, .t = 1, .job_uid = "u"};
    aiq_err_clear(&err);
    CHECK_INT(store_journal_decision(s, &d, &err), AIQ_EINVAL);
    CHECK_STR(err.message, "store: decision: action required");
    d.action = "admit";
    d.terms_json = "{\"x\":}";
    aiq_err_clear(&err);
    CHECK_INT(store_journal_decision(s, &d, &err), AIQ_EPARSE);
    CHECK_STR(err.field, "terms");

    long n = -1;
    char *out = export_str(s, 0, &n);
    CHECK_INT(n, 0); /* nothing half-written */
    free(out);
    CHECK_STR(store_event_kind_name(STORE_EV_JOB_DEPARTURE), "job_departure");
    CHECK_STR(store_event_kind_name(STORE_EV_JOB_START), "job_start");
    CHECK_STR(store_event_kind_name(STORE_EV_JOB_REQUEUE), "job_requeue");
    CHECK(store_event_kind_name(STORE_EV__NKINDS) == NULL);
    store_close(s);
}

TEST(journal_prune_retention) {
    store *s = open_mem();
    if (!s) return;
    aiq_err err = {0};
    journal_fill(s);
    long removed = -1, n = 0;
    /* Before 160: the policy event (50) and the three entries at 100.5. */
    CHECK_INT(store_journal_prune(s, 160, &removed, &err), AIQ_OK);
    CHECK_INT(removed, 4);
    char *out = export_str(s, 0, &n);
    CHECK_INT(n, 2);
    CHECK(out && strncmp(out, "{\"type\":\"decision\",\"t\":160,", 27) == 0);
    free(out);
    CHECK_INT(store_journal_prune(s, 160, &removed, &err), AIQ_OK);
    CHECK_INT(removed, 0);
    CHECK_INT(store_journal_prune(s, 1e12, &removed, &err), AIQ_OK);
    CHECK_INT(removed, 2);
    store_close(s);
}

/* Retention by size: the oldest entries go until the database holds at
 * most the cap; the newest stay; under the cap nothing goes. */
TEST(journal_prune_by_size) {
    store *s = open_mem();
    if (!s) return;
    aiq_err err = {0};
    char payload[600];
    memset(payload, 0, sizeof payload);
    snprintf(payload, sizeof payload, "{\"pad\":\"");
    memset(payload + strlen(payload), 'x', 500);
    snprintf(payload + strlen(payload), sizeof payload - strlen(payload), "\"}");
    CHECK_INT(store_begin(s, &err), AIQ_OK);
    for (int i = 0; i < 3000; i++)
        if (store_journal_event(s, 1000.0 + i, STORE_EV_NODE, "n", payload, &err) != AIQ_OK)
            break;
    CHECK_INT(store_commit(s, &err), AIQ_OK);
    int64_t used = 0;
    CHECK_INT(store_used_bytes(s, &used, &err), AIQ_OK);
    CHECK(used > 1500000);
    long removed = -1, n = 0;
    CHECK_INT(store_journal_prune_size(s, used * 4, &removed, &err), AIQ_OK);
    CHECK_INT(removed, 0); /* under the cap: nothing */
    CHECK_INT(store_journal_prune_size(s, 600000, &removed, &err), AIQ_OK);
    CHECK(removed > 1500 && removed < 3000);
    CHECK_INT(store_used_bytes(s, &used, &err), AIQ_OK);
    CHECK(used <= 600000);
    char *out = export_str(s, 3999, &n); /* the newest entry is kept */
    CHECK_INT(n, 1);
    free(out);
    out = export_str(s, 0, &n);
    CHECK_INT(n, 3000 - removed);
    free(out);
    store_close(s);
}

/* ---- transactions, crashes, faults ------------------------------------------ */

/* One cycle's worth of writes of every kind; stops at the first error. */
static aiq_rc write_cycle(store *s, char *uid, aiq_err *err) {
    struct aiq_aijob j;
    job_fill(&j, uid, uid, "ann");
    aiq_rc rc = store_upsert_job(s, &j, "nlp", err);
    struct store_job_status st = {AIQ_PHASE_RUNNING, 0, 1, 2.0, NULL, 1, 0};
    if (rc == AIQ_OK) rc = store_job_set_status(s, uid, &st, err);
    if (rc == AIQ_OK)
        rc = store_attempt_begin(s, uid, 1, T0, "{\"node\":\"n1\"}", err);
    if (rc == AIQ_OK) rc = store_attempt_start(s, uid, 1, T0 + 1800, err);
    bool counted = false;
    if (rc == AIQ_OK)
        rc = store_attempt_finish(s, uid, 1, T0 + 9000, 7200, "Succeeded",
                                  &counted, err);
    if (rc == AIQ_OK && !counted)
        rc = aiq_err_set(err, AIQ_ESTATE, "attempt counted before");
    struct store_decision d = {.cycle = 7, .t = T0, .job_uid = uid,
                               .action = "admit"};
    if (rc == AIQ_OK) rc = store_journal_decision(s, &d, err);
    if (rc == AIQ_OK)
        rc = store_journal_event(s, T0, STORE_EV_JOB_ARRIVAL, uid, "{}", err);
    int64_t mem[] = {100, 200};
    struct store_node n = {"n1", "A100", 2, 100, NULL, 1000, 1000, true, mem};
    if (rc == AIQ_OK) rc = store_upsert_node(s, &n, err);
    return rc;
}

/* Asserts whether write_cycle's effects are there, all or none. */
static void check_cycle(store *s, const char *uid, bool present) {
    aiq_err err = {0};
    struct store_job *j = calloc(1, sizeof *j);
    aiq_rc rc = store_job_get(s, uid, j, &err);
    CHECK_INT(rc, present ? AIQ_OK : AIQ_ENOTFOUND);
    if (present) {
        CHECK_INT(j->phase, AIQ_PHASE_RUNNING);
        CHECK_DBL(j->gpu_seconds, 7200, 0);
    }
    free(j);
    double h = -1;
    CHECK_INT(store_usage_window(s, "ann", "nlp", 0, &h, &err), AIQ_OK);
    CHECK_DBL(h, present ? 2.0 : 0.0, 1e-9);
    long n = -1;
    char *out = export_str(s, 0, &n);
    CHECK_INT(n, present ? 2 : 0);
    free(out);
    struct node_seen seen = {0};
    CHECK_INT(store_list_nodes(s, node_cb, &seen, &err), AIQ_OK);
    CHECK_INT(seen.n, present ? 1 : 0);
}

TEST(transactions_commit_and_rollback) {
    store *s = open_mem();
    if (!s) return;
    aiq_err err = {0};
    CHECK_INT(store_begin(s, &err), AIQ_OK);
    CHECK(store_in_transaction(s));
    aiq_err_clear(&err);
    CHECK_INT(store_begin(s, &err), AIQ_ESTATE);
    aiq_err_clear(&err);
    CHECK_INT(write_cycle(s, "c1", &err), AIQ_OK);
    CHECK_INT(store_rollback(s, &err), AIQ_OK);
    CHECK(!store_in_transaction(s));
    check_cycle(s, "c1", false);
    CHECK_INT(store_begin(s, &err), AIQ_OK);
    CHECK_INT(write_cycle(s, "c1", &err), AIQ_OK);
    CHECK_INT(store_commit(s, &err), AIQ_OK);
    check_cycle(s, "c1", true);
    aiq_err_clear(&err);
    CHECK_INT(store_commit(s, &err), AIQ_ESTATE);
    CHECK_INT(store_rollback(s, NULL), AIQ_OK);
    store_close(s);
}

/* A child commits one cycle, writes half of another and dies without
 * committing; the parent reopens the file and finds exactly the first. */
static void crash_child(const char *path, int how) {
    aiq_err err = {0};
    store *s = store_open(path, NULL, &err);
    if (!s) _exit(2);
    if (store_begin(s, &err) || write_cycle(s, "c1", &err) ||
        store_commit(s, &err))
        _exit(3);
    if (store_begin(s, &err)) _exit(4);
    struct aiq_aijob j;
    job_fill(&j, "c2", "c2", "ann");
    if (store_upsert_job(s, &j, "nlp", &err) ||
        store_attempt_finish(s, "c2", 1, T0 + 100, 3600, "Succeeded", NULL,
                             &err) ||
        store_usage_add(s, "ann", "nlp", T0, 999, &err))
        _exit(5);
    if (how == 0) _exit(0); /* no commit, no close */
    raise(SIGKILL);
    _exit(6);
}

static void crash_case(int how) {
    struct tmpdb t = {0};
    tmpdb_init(&t);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) crash_child(t.path, how);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (how == 0) {
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    } else {
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    }
    aiq_err err = {0};
    store *s = store_open(t.path, NULL, &err);
    CHECK(s != NULL);
    if (s) {
        check_cycle(s, "c1", true);
        struct store_job *j = calloc(1, sizeof *j);
        CHECK_INT(store_job_get(s, "c2", j, &err), AIQ_ENOTFOUND);
        free(j);
        /* The restarted operator may finish c1's attempt again: no double
         * count. */
        bool counted = true;
        CHECK_INT(store_attempt_finish(s, "c1", 1, T0 + 9000, 7200,
                                       "Succeeded", &counted, &err), AIQ_OK);
        CHECK(!counted);
        check_cycle(s, "c1", true);
    }
    store_close(s);
    tmpdb_remove(&t);
}

TEST(crash_mid_transaction_exit) { crash_case(0); }
TEST(crash_mid_transaction_sigkill) { crash_case(1); }

/* Fails each write of a cycle in turn: the cycle rolls back to nothing,
 * and a retry of the whole cycle then commits everything, once. */
TEST(fault_injection_every_write) {
    aiq_err err = {0};
    store *s = open_mem();
    if (!s) return;
    CHECK_INT(store_begin(s, &err), AIQ_OK);
    long before = store_write_count(s);
    CHECK_INT(write_cycle(s, "f1", &err), AIQ_OK);
    long writes = store_write_count(s) - before;
    CHECK_INT(store_commit(s, &err), AIQ_OK);
    store_close(s);
    CHECK(writes >= 10);

    for (long k = 1; k <= writes; k++) {
        s = open_mem();
        if (!s) return;
        store_set_fail_write(s, k);
        aiq_err_clear(&err);
        CHECK_INT(store_begin(s, &err), AIQ_OK);
        aiq_rc rc = write_cycle(s, "f1", &err);
        CHECK_INT(rc, AIQ_EDB);
        CHECK(strstr(err.message, "injected failure on write") != NULL);
        CHECK_INT(store_rollback(s, &err), AIQ_OK);
        check_cycle(s, "f1", false);
        aiq_err_clear(&err);
        CHECK_INT(store_begin(s, &err), AIQ_OK);
        CHECK_INT(write_cycle(s, "f1", &err), AIQ_OK);
        CHECK_INT(store_commit(s, &err), AIQ_OK);
        check_cycle(s, "f1", true);
        store_close(s);
    }

    /* The option form counts from open, and a failure outside a cycle
     * leaves nothing behind either (each call is atomic by itself). */
    struct store_opts o = {.fail_write_n = 4}; /* the spread's 2nd bucket */
    aiq_err_clear(&err);
    s = store_open(":memory:", &o, &err);
    CHECK(s != NULL);
    if (!s) return;
    CHECK_INT(store_usage_add(s, "ann", "nlp", T0, 1, &err), AIQ_OK);
    CHECK_INT(store_usage_add(s, "ann", "nlp", T0, 1, &err), AIQ_OK);
    CHECK_INT(store__usage_spread(s, "ann", "nlp", T0 + 1800, T0 + 5400,
                                  7200, &err), AIQ_EDB);
    double h = 0;
    CHECK_INT(store_usage_window(s, "ann", NULL, 0, &h, &err), AIQ_OK);
    CHECK_DBL(h, 2.0 / 3600, 1e-12);
    CHECK_INT(store_write_count(s), 4);

    /* Inside a cycle: the failed call is undone, the cycle goes on and
     * commits what the other calls wrote. */
    store_set_fail_write(s, 3); /* the spread's 2nd bucket again */
    CHECK_INT(store_begin(s, &err), AIQ_OK);
    CHECK_INT(store_usage_add(s, "bob", "nlp", T0, 3600, &err), AIQ_OK);
    aiq_err_clear(&err);
    CHECK_INT(store__usage_spread(s, "bob", "nlp", T0 + 1800, T0 + 5400,
                                  7200, &err), AIQ_EDB);
    CHECK_INT(store_usage_add(s, "bob", "nlp", T0 + 7200, 3600, &err),
              AIQ_OK);
    CHECK_INT(store_commit(s, &err), AIQ_OK);
    CHECK_INT(store_usage_window(s, "bob", NULL, 0, &h, &err), AIQ_OK);
    CHECK_DBL(h, 2.0, 1e-12);
    store_close(s);
}
