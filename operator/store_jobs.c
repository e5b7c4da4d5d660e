/* store_jobs.c -- the jobs view and its history: job spec upsert, status,
 * life-cycle timestamps, reads and listing (restart), attempts with their
 * idempotent finish (which feeds usage), and the runtime history the
 * predictor reads. */
#include "operator/store_int.h"

#include <stdlib.h>
#include <string.h>

static aiq_rc need_uid(const char *uid, aiq_err *err) {
    if (uid && uid[0]) return AIQ_OK;
    return aiq_err_field(err, AIQ_EINVAL, "metadata.uid",
                         "store: metadata.uid: required");
}

static aiq_rc not_found(const char *uid, aiq_err *err) {
    return aiq_err_field(err, AIQ_ENOTFOUND, "metadata.uid",
                         "store: job %s not found", uid);
}

/* Rejects a string longer than the model's cap (results have fixed-size
 * buffers, so what goes in must come back whole). */
static aiq_rc check_len(const char *uid, const char *v, size_t cap,
                        const char *field, aiq_err *err) {
    if (!v || strnlen(v, cap + 1) <= cap) return AIQ_OK;
    return aiq_err_field(err, AIQ_ETOOBIG, field,
                         "store: job %s: %s longer than %zu bytes", uid,
                         field, cap);
}

/* See store.h. */
aiq_rc store_upsert_job(store *s, const struct aiq_aijob *j,
                        const char *group, aiq_err *err) {
    const struct aiq_aijob_spec *sp = &j->spec;
    aiq_rc rc = need_uid(j->meta.uid, err);
    if (rc != AIQ_OK) return rc;
    if (!j->meta.namespace_ || !j->meta.name || !sp->user)
        return aiq_err_field(err, AIQ_EINVAL,
                             !j->meta.namespace_ ? "metadata.namespace"
                             : !j->meta.name     ? "metadata.name"
                                                 : "spec.user",
                             "store: job %s: namespace, name and user are "
                             "required", j->meta.uid);
    const char *uid = j->meta.uid;
    rc = check_len(uid, uid, AIQ_MAX_NAME, "metadata.uid", err);
    if (!rc) rc = check_len(uid, j->meta.namespace_, AIQ_MAX_NAME,
                            "metadata.namespace", err);
    if (!rc) rc = check_len(uid, j->meta.name, AIQ_MAX_NAME, "metadata.name",
                            err);
    if (!rc) rc = check_len(uid, group, AIQ_MAX_NAME, "group", err);
    if (!rc) rc = check_len(uid, sp->user, AIQ_MAX_NAME, "spec.user", err);
    if (!rc) rc = check_len(uid, sp->resources.gpu_model, AIQ_MAX_STRING,
                            "spec.resources.gpuModel", err);
    if (!rc) rc = check_len(uid, sp->domain, AIQ_MAX_STRING, "spec.domain",
                            err);
    if (!rc) rc = check_len(uid, sp->task_type, AIQ_MAX_STRING,
                            "spec.taskType", err);
    if (!rc) rc = check_len(uid, sp->model_name, AIQ_MAX_STRING,
                            "spec.model.name", err);
    if (rc != AIQ_OK) return rc;
    sqlite3_stmt *st = store__q(s, STORE_Q_JOB_UPSERT, err);
    if (!st) return AIQ_EDB;
    store__bind_text(st, 1, j->meta.uid);
    store__bind_text(st, 2, j->meta.namespace_);
    store__bind_text(st, 3, j->meta.name);
    store__bind_text(st, 4, group);
    store__bind_text(st, 5, sp->user);
    sqlite3_bind_int(st, 6, sp->priority);
    sqlite3_bind_int(st, 7, sp->replicas);
    sqlite3_bind_int(st, 8, sp->resources.gpus);
    sqlite3_bind_int64(st, 9, sp->resources.gpu_memory_mib);
    sqlite3_bind_int64(st, 10, sp->resources.cpu_milli);
    sqlite3_bind_int64(st, 11, sp->resources.memory_bytes);
    store__bind_text(st, 12, sp->resources.gpu_model);
    store__bind_text(st, 13, sp->domain);
    sqlite3_bind_double(st, 14, sp->estimated_runtime_s);
    store__bind_text(st, 15, sp->task_type);
    store__bind_text(st, 16, sp->model_name);
    sqlite3_bind_int64(st, 17, sp->model_parameters);
    sqlite3_bind_int(st, 18, sp->backoff_limit);
    sqlite3_bind_int(st, 19, sp->suspend ? 1 : 0);
    sqlite3_bind_double(st, 20, j->meta.creation_time);
    return store__write(s, st, "upsert job", err);
}

/* A row's text column (NULL read as "") against the value bound for it. */
static bool row_text_is(const char *col, const char *v) {
    return strcmp(col, v ? v : "") == 0;
}

/* See store.h. The columns and rules of STORE_Q_JOB_UPSERT. */
bool store_job_row_is(const struct store_job *r, const struct aiq_aijob *j,
                      const char *group) {
    const struct aiq_aijob_spec *sp = &j->spec;
    return row_text_is(r->uid, j->meta.uid) && row_text_is(r->ns, j->meta.namespace_) &&
           row_text_is(r->name, j->meta.name) &&
           (!group || row_text_is(r->group, group)) && /* coalesce: NULL keeps it */
           row_text_is(r->user, sp->user) && r->priority == sp->priority &&
           r->replicas == sp->replicas && r->gpus == sp->resources.gpus &&
           r->gpu_memory_mib == sp->resources.gpu_memory_mib &&
           r->cpu_milli == sp->resources.cpu_milli &&
           r->memory_bytes == sp->resources.memory_bytes &&
           row_text_is(r->gpu_model, sp->resources.gpu_model) &&
           row_text_is(r->domain, sp->domain) &&
           r->estimated_runtime_s == sp->estimated_runtime_s &&
           row_text_is(r->task_type, sp->task_type) &&
           row_text_is(r->model_name, sp->model_name) &&
           r->model_parameters == sp->model_parameters &&
           r->backoff_limit == sp->backoff_limit && r->suspend == sp->suspend &&
           r->created == j->meta.creation_time;
}

/* See store.h. */
aiq_rc store_job_set_status(store *s, const char *uid,
                            const struct store_job_status *js,
                            aiq_err *err) {
    aiq_rc rc = need_uid(uid, err);
    if (rc != AIQ_OK) return rc;
    if (js->message && strnlen(js->message, AIQ_MAX_STRING + 1) >
                           AIQ_MAX_STRING)
        return aiq_err_field(err, AIQ_ETOOBIG, "status.message",
                             "store: job %s: status.message longer than %d "
                             "bytes", uid, AIQ_MAX_STRING);
    sqlite3_stmt *st = store__q(s, STORE_Q_JOB_STATUS, err);
    if (!st) return AIQ_EDB;
    store__bind_text(st, 1, uid);
    sqlite3_bind_int(st, 2, (int)js->phase);
    sqlite3_bind_int(st, 3, js->level);
    sqlite3_bind_int(st, 4, js->position);
    sqlite3_bind_double(st, 5, js->score);
    store__bind_text(st, 6, js->message);
    sqlite3_bind_int(st, 7, js->attempts);
    sqlite3_bind_double(st, 8, js->finished);
    rc = store__write(s, st, "job status", err);
    if (rc == AIQ_OK && sqlite3_changes(sqlite3_db_handle(st)) == 0)
        rc = not_found(uid, err);
    return rc;
}

/* See store.h. */
aiq_rc store_job_mark(store *s, const char *uid, store_job_event ev,
                      double t, aiq_err *err) {
    static const store__qid q[STORE_JOB__NEVENTS] = {
        [STORE_JOB_QUEUED] = STORE_Q_JOB_MARK_QUEUED,
        [STORE_JOB_ADMITTED] = STORE_Q_JOB_MARK_ADMITTED,
        [STORE_JOB_STARTED] = STORE_Q_JOB_MARK_STARTED,
        [STORE_JOB_FINISHED] = STORE_Q_JOB_MARK_FINISHED,
        [STORE_JOB_DELETED] = STORE_Q_JOB_MARK_DELETED,
        [STORE_JOB_JOURNALED] = STORE_Q_JOB_MARK_JOURNALED,
    };
    aiq_rc rc = need_uid(uid, err);
    if (rc != AIQ_OK) return rc;
    if ((int)ev < 0 || ev >= STORE_JOB__NEVENTS)
        return aiq_err_field(err, AIQ_EINVAL, "event",
                             "store: job %s: unknown event %d", uid, (int)ev);
    sqlite3_stmt *st = store__q(s, q[ev], err);
    if (!st) return AIQ_EDB;
    store__bind_text(st, 1, uid);
    sqlite3_bind_double(st, 2, t);
    rc = store__write(s, st, "job mark", err);
    if (rc == AIQ_OK && sqlite3_changes(sqlite3_db_handle(st)) == 0)
        rc = not_found(uid, err);
    return rc;
}

/* Fills *j from a row with the STORE__JOB_COLS columns. */
static void job_from_row(sqlite3_stmt *st, struct store_job *j) {
    memset(j, 0, sizeof *j);
    store__col_text(st, 0, j->uid, sizeof j->uid);
    store__col_text(st, 1, j->ns, sizeof j->ns);
    store__col_text(st, 2, j->name, sizeof j->name);
    store__col_text(st, 3, j->group, sizeof j->group);
    store__col_text(st, 4, j->user, sizeof j->user);
    j->priority = sqlite3_column_int(st, 5);
    j->replicas = sqlite3_column_int(st, 6);
    j->gpus = sqlite3_column_int(st, 7);
    j->gpu_memory_mib = sqlite3_column_int64(st, 8);
    j->cpu_milli = sqlite3_column_int64(st, 9);
    j->memory_bytes = sqlite3_column_int64(st, 10);
    store__col_text(st, 11, j->gpu_model, sizeof j->gpu_model);
    store__col_text(st, 12, j->domain, sizeof j->domain);
    j->estimated_runtime_s = sqlite3_column_double(st, 13);
    store__col_text(st, 14, j->task_type, sizeof j->task_type);
    store__col_text(st, 15, j->model_name, sizeof j->model_name);
    j->model_parameters = sqlite3_column_int64(st, 16);
    j->backoff_limit = sqlite3_column_int(st, 17);
    j->suspend = sqlite3_column_int(st, 18) != 0;
    j->phase = (aiq_phase)sqlite3_column_int(st, 19);
    j->level = sqlite3_column_int(st, 20);
    j->position = sqlite3_column_int(st, 21);
    j->score = sqlite3_column_double(st, 22);
    store__col_text(st, 23, j->message, sizeof j->message);
    j->attempts = sqlite3_column_int(st, 24);
    j->created = sqlite3_column_double(st, 25);
    j->queued = sqlite3_column_double(st, 26);
    j->admitted = sqlite3_column_double(st, 27);
    j->started = sqlite3_column_double(st, 28);
    j->finished = sqlite3_column_double(st, 29);
    j->deleted = sqlite3_column_double(st, 30);
    j->actual_runtime_s = sqlite3_column_double(st, 31);
    j->gpu_seconds = sqlite3_column_double(st, 32);
    j->arrival_journaled = sqlite3_column_double(st, 33);
}

/* See store.h. */
aiq_rc store_job_get(store *s, const char *uid, struct store_job *out,
                     aiq_err *err) {
    bool row = false;
    sqlite3_stmt *st = store__q(s, STORE_Q_JOB_GET, err);
    if (!st) return AIQ_EDB;
    store__bind_text(st, 1, uid);
    aiq_rc rc = store__row(s, st, &row, "get job", err);
    if (rc == AIQ_OK && !row) rc = not_found(uid, err);
    if (rc == AIQ_OK) job_from_row(st, out);
    sqlite3_reset(st);
    return rc;
}

/* See store.h. */
aiq_rc store_job_find(store *s, const char *ns, const char *name,
                      struct store_job *out, aiq_err *err) {
    bool row = false;
    sqlite3_stmt *st = store__q(s, STORE_Q_JOB_FIND, err);
    if (!st) return AIQ_EDB;
    store__bind_text(st, 1, ns);
    store__bind_text(st, 2, name);
    aiq_rc rc = store__row(s, st, &row, "find job", err);
    if (rc == AIQ_OK && !row)
        rc = aiq_err_field(err, AIQ_ENOTFOUND, "metadata.name",
                           "store: no job %s/%s", ns, name);
    if (rc == AIQ_OK) job_from_row(st, out);
    sqlite3_reset(st);
    return rc;
}

/* See store.h. */
aiq_rc store_list_jobs(store *s, bool active_only, store_job_cb cb,
                       void *ctx, aiq_err *err) {
    bool row = true;
    aiq_rc rc = AIQ_OK;
    sqlite3_stmt *st = store__q(
        s, active_only ? STORE_Q_JOB_LIST_ACTIVE : STORE_Q_JOB_LIST_ALL, err);
    if (!st) return AIQ_EDB;
    struct store_job *j = malloc(sizeof *j); /* ~6 KiB: keep it off the stack */
    if (!j) return aiq_err_set(err, AIQ_ENOMEM, "store: out of memory");
    if (active_only) {
        sqlite3_bind_int(st, 1, AIQ_PHASE_SUCCEEDED);
        sqlite3_bind_int(st, 2, AIQ_PHASE_FAILED);
        sqlite3_bind_int(st, 3, AIQ_PHASE_REJECTED);
    }
    while (rc == AIQ_OK) {
        rc = store__row(s, st, &row, "list jobs", err);
        if (rc != AIQ_OK || !row) break;
        job_from_row(st, j);
        if (cb(j, ctx)) break;
    }
    sqlite3_reset(st);
    free(j);
    return rc;
}

/* Reads the owner (user, group) of a job; AIQ_ENOTFOUND if unknown. */
static aiq_rc job_owner(store *s, const char *uid, char *user, char *group,
                        aiq_err *err) {
    bool row = false;
    sqlite3_stmt *st = store__q(s, STORE_Q_JOB_OWNER, err);
    if (!st) return AIQ_EDB;
    store__bind_text(st, 1, uid);
    aiq_rc rc = store__row(s, st, &row, "job owner", err);
    if (rc == AIQ_OK && !row) rc = not_found(uid, err);
    if (rc == AIQ_OK) {
        store__col_text(st, 0, user, STORE_NAME_SZ);
        store__col_text(st, 1, group, STORE_NAME_SZ);
    }
    sqlite3_reset(st);
    return rc;
}

static aiq_rc check_attempt(const char *uid, int32_t attempt, double t,
                            aiq_err *err) {
    aiq_rc rc = need_uid(uid, err);
    if (rc != AIQ_OK) return rc;
    if (attempt < 1)
        return aiq_err_field(err, AIQ_EINVAL, "attempt",
                             "store: job %s: attempt must be >= 1, got %d",
                             uid, (int)attempt);
    /* 0 means "unset" in the attempt columns, so a real time is > 0. */
    if (!(t > 0))
        return aiq_err_field(err, AIQ_EINVAL, "time",
                             "store: job %s: time must be > 0, got %g", uid,
                             t);
    return AIQ_OK;
}

/* See store.h. */
aiq_rc store_attempt_begin(store *s, const char *uid, int32_t attempt,
                           double t, const char *placement_json,
                           aiq_err *err) {
    char user[STORE_NAME_SZ], group[STORE_NAME_SZ];
    char *placement = NULL;
    aiq_rc rc = check_attempt(uid, attempt, t, err);
    if (rc == AIQ_OK) rc = job_owner(s, uid, user, group, err);
    if (rc == AIQ_OK)
        rc = store__json_compact(placement_json, "placement", &placement,
                                 err);
    if (rc != AIQ_OK) return rc;
    sqlite3_stmt *st = store__q(s, STORE_Q_ATT_BEGIN, err);
    if (!st) { rc = AIQ_EDB; goto out_free; }
    store__bind_text(st, 1, uid);
    sqlite3_bind_int(st, 2, attempt);
    sqlite3_bind_double(st, 3, t);
    store__bind_text(st, 4, placement);
    rc = store__write(s, st, "attempt begin", err);
out_free:
    free(placement);
    return rc;
}

/* See store.h. */
aiq_rc store_attempt_start(store *s, const char *uid, int32_t attempt,
                           double t, aiq_err *err) {
    char user[STORE_NAME_SZ], group[STORE_NAME_SZ];
    aiq_rc rc = check_attempt(uid, attempt, t, err);
    if (rc == AIQ_OK) rc = job_owner(s, uid, user, group, err);
    if (rc != AIQ_OK) return rc;
    sqlite3_stmt *st = store__q(s, STORE_Q_ATT_START, err);
    if (!st) return AIQ_EDB;
    store__bind_text(st, 1, uid);
    sqlite3_bind_int(st, 2, attempt);
    sqlite3_bind_double(st, 3, t);
    return store__write(s, st, "attempt start", err);
}

/* Reads an attempt's start time (0 when unknown). */
static aiq_rc attempt_started(store *s, const char *uid, int32_t attempt,
                              double *started, aiq_err *err) {
    bool row = false;
    sqlite3_stmt *st = store__q(s, STORE_Q_ATT_GET, err);
    if (!st) return AIQ_EDB;
    store__bind_text(st, 1, uid);
    sqlite3_bind_int(st, 2, attempt);
    aiq_rc rc = store__row(s, st, &row, "attempt get", err);
    *started = rc == AIQ_OK && row ? sqlite3_column_double(st, 1) : 0;
    sqlite3_reset(st);
    return rc;
}

/* See store.h. The order matters for idempotence: the attempt row is
 * claimed first (finished = 0 -> t), and only the call that claimed it
 * adds usage, all inside one savepoint. */
aiq_rc store_attempt_finish(store *s, const char *uid, int32_t attempt,
                            double t, double gpu_seconds,
                            const char *outcome, bool *counted,
                            aiq_err *err) {
    char user[STORE_NAME_SZ], group[STORE_NAME_SZ];
    double started = 0;
    bool claimed = false;
    if (counted) *counted = false;
    aiq_rc rc = check_attempt(uid, attempt, t, err);
    if (rc != AIQ_OK) return rc;
    if (!(gpu_seconds >= 0))
        return aiq_err_field(err, AIQ_EINVAL, "gpu_seconds",
                             "store: job %s: gpu_seconds must be >= 0, got %g",
                             uid, gpu_seconds);
    rc = job_owner(s, uid, user, group, err);
    if (rc != AIQ_OK) return rc;
    rc = store__sp_begin(s, err);
    if (rc != AIQ_OK) return rc;

    sqlite3_stmt *st = store__q(s, STORE_Q_ATT_ENSURE, err);
    if (!st) { rc = AIQ_EDB; goto out_sp; }
    store__bind_text(st, 1, uid);
    sqlite3_bind_int(st, 2, attempt);
    rc = store__write(s, st, "attempt finish", err);
    if (rc != AIQ_OK) goto out_sp;

    st = store__q(s, STORE_Q_ATT_FINISH, err);
    if (!st) { rc = AIQ_EDB; goto out_sp; }
    store__bind_text(st, 1, uid);
    sqlite3_bind_int(st, 2, attempt);
    sqlite3_bind_double(st, 3, t);
    sqlite3_bind_double(st, 4, gpu_seconds);
    store__bind_text(st, 5, outcome);
    rc = store__write(s, st, "attempt finish", err);
    if (rc != AIQ_OK) goto out_sp;
    claimed = sqlite3_changes(s->db) == 1;
    if (!claimed) goto out_sp; /* finished before: count nothing */

    rc = attempt_started(s, uid, attempt, &started, err);
    if (rc != AIQ_OK) goto out_sp;
    st = store__q(s, STORE_Q_JOB_ADD_USAGE, err);
    if (!st) { rc = AIQ_EDB; goto out_sp; }
    store__bind_text(st, 1, uid);
    sqlite3_bind_double(st, 2, gpu_seconds);
    sqlite3_bind_double(st, 3, started > 0 && t > started ? t - started : 0);
    rc = store__write(s, st, "job usage", err);
    if (rc != AIQ_OK) goto out_sp;
    if (gpu_seconds > 0)
        rc = store__usage_spread(s, user, group, started, t, gpu_seconds,
                                 err);
out_sp:
    store__sp_end(s, rc == AIQ_OK);
    if (rc == AIQ_OK && counted) *counted = claimed;
    return rc;
}

/* See store.h. */
aiq_rc store_attempt_get(store *s, const char *uid, int32_t attempt,
                         struct store_attempt *out, aiq_err *err) {
    bool row = false;
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st = store__q(s, STORE_Q_ATT_GET, err);
    if (!st) return AIQ_EDB;
    store__bind_text(st, 1, uid);
    sqlite3_bind_int(st, 2, attempt);
    aiq_rc rc = store__row(s, st, &row, "attempt get", err);
    if (rc != AIQ_OK) goto out_reset;
    if (!row) {
        rc = aiq_err_field(err, AIQ_ENOTFOUND, "attempt",
                           "store: job %s has no attempt %d", uid,
                           (int)attempt);
        goto out_reset;
    }
    out->attempt = attempt;
    out->admitted = sqlite3_column_double(st, 0);
    out->started = sqlite3_column_double(st, 1);
    out->finished = sqlite3_column_double(st, 2);
    out->gpu_seconds = sqlite3_column_double(st, 3);
    store__col_text(st, 4, out->outcome, sizeof out->outcome);
    const unsigned char *p = sqlite3_column_text(st, 5);
    if (p) {
        out->placement_json = strdup((const char *)p);
        if (!out->placement_json)
            rc = aiq_err_set(err, AIQ_ENOMEM, "store: out of memory");
    }
out_reset:
    sqlite3_reset(st);
    return rc;
}

/* See store.h. */
aiq_rc store_attempt_preemptions(store *s, const char *uid, double since,
                                 double *times, int max, int *n,
                                 aiq_err *err) {
    *n = 0;
    if (!uid || !uid[0] || max < 0)
        return aiq_err_field(err, AIQ_EINVAL, "uid",
                             "store: preemptions: uid required and max >= 0 "
                             "(got %d)", max);
    sqlite3_stmt *st = store__q(s, STORE_Q_ATT_PREEMPTED, err);
    if (!st) return AIQ_EDB;
    store__bind_text(st, 1, uid);
    sqlite3_bind_double(st, 2, since);
    sqlite3_bind_int(st, 3, max);
    aiq_rc rc = AIQ_OK;
    int got = 0;
    for (;;) {
        bool row = false;
        rc = store__row(s, st, &row, "attempt preemptions", err);
        if (rc != AIQ_OK || !row) break;
        if (got < max) times[got++] = sqlite3_column_double(st, 0);
    }
    sqlite3_reset(st);
    if (rc == AIQ_OK) *n = got;
    return rc;
}

/* See store.h. */
aiq_rc store_attempt_preemptions_all(store *s, double since, store_preempted_cb cb,
                                     void *ctx, aiq_err *err) {
    sqlite3_stmt *st = store__q(s, STORE_Q_ATT_PREEMPTED_ALL, err);
    if (!st) return AIQ_EDB;
    sqlite3_bind_double(st, 1, since);
    aiq_rc rc = AIQ_OK;
    for (;;) {
        bool row = false;
        rc = store__row(s, st, &row, "attempt preemptions (all jobs)", err);
        if (rc != AIQ_OK || !row) break;
        const char *uid = (const char *)sqlite3_column_text(st, 0);
        if (cb(uid ? uid : "", sqlite3_column_double(st, 1), ctx) != 0) break;
    }
    sqlite3_reset(st);
    return rc;
}

/* See store.h. */
aiq_rc store_runtime_history(store *s, const struct store_history_query *q,
                             store_history_cb cb, void *ctx, aiq_err *err) {
    char uid[STORE_NAME_SZ];
    bool row = true;
    aiq_rc rc = AIQ_OK;
    sqlite3_stmt *st = store__q(s, STORE_Q_JOB_HISTORY, err);
    if (!st) return AIQ_EDB;
    sqlite3_bind_int(st, 1, AIQ_PHASE_SUCCEEDED);
    store__bind_text(st, 2, q->user);
    store__bind_text(st, 3, q->group);
    store__bind_text(st, 4, q->model_name);
    store__bind_text(st, 5, q->task_type);
    sqlite3_bind_int(st, 6, q->limit > 0 ? q->limit : 1000);
    while (rc == AIQ_OK) {
        rc = store__row(s, st, &row, "runtime history", err);
        if (rc != AIQ_OK || !row) break;
        struct store_history_row r = {0};
        store__col_text(st, 0, uid, sizeof uid);
        r.uid = uid;
        r.actual_runtime_s = sqlite3_column_double(st, 1);
        r.estimated_runtime_s = sqlite3_column_double(st, 2);
        r.finished = sqlite3_column_double(st, 3);
        r.gpus = sqlite3_column_int(st, 4);
        r.replicas = sqlite3_column_int(st, 5);
        if (cb(&r, ctx)) break;
    }
    sqlite3_reset(st);
    return rc;
}
