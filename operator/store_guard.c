/* store_guard.c -- fail closed on storage: the store's health as the
 * daemon sees it, the end-of-turn commit, and the once-a-second check of
 * the database file.
 *
 * The rule (docs/reliability.md, "Storage faults"): what a turn decided is
 * published (AIJob statuses, gang releases, Events, new pods) only after
 * its record is committed. A store write, read or commit that fails, or a
 * database file removed or replaced under the operator, makes the store
 * unhealthy: the turn is rolled back, nothing is published or released,
 * no cycle runs, /readyz answers 503 with the reason, and
 * aiq_store_healthy is 0. The operator's in-memory view then holds
 * changes the store lost, so it does not resume in place: once a probe
 * write succeeds (or a removed file was rescued), it exits with status 3
 * and the restart rebuilds every unrecorded transition from the API
 * server, where none of them was published. */
#include <stdio.h>
#include <string.h>

#include "operator/server.h"

/* See server.h. */
void srv_store_failed(struct server *s, const char *op, const char *key, const aiq_err *e) {
    char msg[600];
    const char *text = e && e->message[0] ? e->message : "unknown store failure";
    opmetrics_store_failed_inc(s->metrics, op);
    /* The first failure is an error; the repeats while unhealthy (every
     * turn's writes, every probe) are counted and logged at debug. */
    OPLOG(&s->log, s->store_bad ? OPLOG_DEBUG : OPLOG_ERROR, "store_failed", key, NULL,
          "op=%s healthy=0 msg=%s", op, oplog_quote(msg, sizeof msg, text));
    if (s->store_bad)
        return;
    s->store_bad = true;
    s->store_bad_since = srv_now();
    snprintf(s->store_reason, sizeof s->store_reason, "%s", text); /* names the op */
    opmetrics_set_store(s->metrics, false, s->store_reason);
}

/* See server.h. */
bool srv_store_ok(struct server *s, aiq_rc rc, const char *op, const char *key,
                  const aiq_err *e) {
    if (rc == AIQ_OK)
        return true;
    srv_store_failed(s, op, key, e);
    return false;
}

/* See server.h. */
bool srv_rec(struct server *s, aiq_rc rc, const char *op) {
    aiq_err e;
    if (rc == AIQ_OK || rc == AIQ_ENOTFOUND)
        return true;
    aiq_err_clear(&e);
    if (store_fault(s->db, &e)) {
        srv_store_failed(s, op, NULL, &e);
    } else {
        OPLOG(&s->log, OPLOG_WARN, "store_refused", NULL, NULL, "op=%s rc=%s", op,
              aiq_strerror(rc));
    }
    return false;
}

/* See server.h. */
bool srv_store_publishable(struct server *s) {
    aiq_err e;
    if (s->store_bad)
        return false;
    aiq_err_clear(&e);
    if (store_fault(s->db, &e)) {
        srv_store_failed(s, "turn", NULL, &e);
        return false;
    }
    return true;
}

/* See server.h. */
bool srv_store_settle(struct server *s) {
    aiq_err e;
    aiq_err_clear(&e);
    if (!store_in_transaction(s->db))
        return srv_store_publishable(s);
    if (!srv_store_publishable(s)) {
        /* Nothing of a failing turn is kept: the restart rebuilds it. */
        if (store_rollback(s->db, &e) != AIQ_OK)
            srv_store_failed(s, "rollback", NULL, &e);
        return false;
    }
    if (store_commit(s->db, &e) != AIQ_OK) {
        srv_store_failed(s, "commit", NULL, &e);
        return false;
    }
    return true;
}

/* The store is writable again (or was rescued): stop, so that the
 * restart rebuilds the turns that were not recorded. */
static void srv_store_restart(struct server *s, const char *how) {
    OPLOG(&s->log, OPLOG_WARN, "store_recovered", NULL, NULL,
          "how=%s unhealthy_s=%.1f action=exit_for_restart exit_code=%d", how,
          srv_now() - s->store_bad_since, SRV_EXIT_STORE);
    s->exit_code = SRV_EXIT_STORE;
    s->stop = 1;
}

/* While unhealthy: rescue a removed file, or probe a write. */
static void srv_store_heal(struct server *s, aiq_rc file_rc) {
    aiq_err e;
    aiq_err_clear(&e);
    if (file_rc == AIQ_ENOTFOUND) {
        if (store_rescue(s->db, &e) == AIQ_OK) {
            srv_store_restart(s, "rescued_removed_file");
            return;
        }
        /* The connection is closed either way: only a restart helps. */
        srv_store_failed(s, "rescue", NULL, &e);
        s->exit_code = SRV_EXIT_STORE;
        s->stop = 1;
        return;
    }
    if (file_rc == AIQ_ECONFLICT) {
        /* Someone else's file: ours closes (its WAL with it) and the
         * restart opens theirs. */
        srv_store_restart(s, "file_replaced");
        return;
    }
    if (store_in_transaction(s->db) && store_rollback(s->db, &e) != AIQ_OK)
        return; /* the rollback's failure is the store's fault, kept */
    if (store_probe(s->db, &e) == AIQ_OK)
        srv_store_restart(s, "probe_write_ok");
}

/* See server.h. */
void srv_store_cron(struct server *s, double now) {
    aiq_err e;
    if (now - s->last_store_check < 1.0)
        return;
    s->last_store_check = now;
    aiq_err_clear(&e);
    aiq_rc file_rc = store_check_file(s->db, &e);
    if (file_rc != AIQ_OK)
        srv_store_failed(s, file_rc == AIQ_ENOTFOUND   ? "file_removed"
                            : file_rc == AIQ_ECONFLICT ? "file_replaced"
                                                       : "file_stat",
                         NULL, &e);
    if (s->store_bad)
        srv_store_heal(s, file_rc);
}
