/* reconcile_aijob.c -- the AIJob reconciler and the level-triggered job
 * sync: validation (Rejected with the field and value), group from the
 * namespace, gated pods, suspend/resume, Running/Succeeded tracking from
 * the pods, gang teardown with requeue backoff or Failed by backoffLimit,
 * release of an admitted gang, and the history kept in SQLite when the
 * AIJob is deleted. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "operator/kube_status.h"
#include "operator/nodefacts.h"
#include "operator/pods.h"
#include "operator/predict_store.h"
#include "operator/release.h"
#include "operator/release_exec.h"
#include "operator/release_gpu.h"
#include "operator/server.h"

/* What the pods of a gang are doing. */
struct gang {
    int n;                 /* replicas */
    int exist, running, succeeded, failed, gated;
    int newer;             /* gated pods made for a later attempt than the status shows */
    char failed_pod[AIQ_MAX_NAME + 1];
};

static double job_now(void) {
    return srv_now();
}

/* The job's state, created on first use; NULL on ENOMEM. Every writer
 * of a job's state takes it here, so it is counted as changed
 * (opcache_state_changed: the cycle keeps each job's input between
 * cycles while it is not). */
static struct opjob *job_state(struct opcache_obj *o) {
    struct opext *x = srv__ext(o);
    if (!x)
        return NULL;
    opcache_state_changed(o);
    if (!x->job && (x->job = calloc(1, sizeof *x->job)) != NULL)
        x->job->pub_rv = x->job->own_rv = OPCACHE_RV_NONE;
    return x->job;
}

/* See server.h. */
struct opjob_cold *job_cold(struct opjob *js) {
    if (!js->cold)
        js->cold = calloc(1, sizeof *js->cold);
    return js->cold;
}

/* Who a preemption of js made room for: none yields `none`. */
static const char *job_preempted_by(const struct opjob *js, const char *none) {
    return js->cold && js->cold->preempted_by[0] ? js->cold->preempted_by : none;
}

/* Why js was preempted (the status reason): Preempted when not known. */
static const char *job_preempt_why(const struct opjob *js) {
    return js->cold && js->cold->preempt_reason[0] ? js->cold->preempt_reason : "Preempted";
}

/* Notes who preempted js and why. Out of memory they are not kept (the
 * status then says "the queue" and Preempted), and the log says so. */
static void job_preempt_note(struct server *s, struct opcache_obj *o, struct opjob *js,
                             const char *by, const char *why) {
    struct opjob_cold *jc = job_cold(js);
    if (!jc) {
        OPLOG(&s->log, OPLOG_ERROR, "job_state_dropped", o->key, srv__rv(opcache_raw(o)),
              "what=preempted_by by=%s reason=%s msg=\"out of memory\"", by, why);
        return;
    }
    snprintf(jc->preempted_by, sizeof jc->preempted_by, "%s", by);
    snprintf(jc->preempt_reason, sizeof jc->preempt_reason, "%s", why);
}

/* See server.h. */
int job_place_reserve(struct opjob *js, int n) {
    if (n <= js->place_cap)
        return 0;
    struct opst_place *p = realloc(js->place, (size_t)n * sizeof *p);
    if (!p)
        return -1;
    js->place = p;
    js->place_cap = n;
    js->st.placement = p;
    return 0;
}

static void job_pod_key(char *buf, size_t cap, const char *ns, const char *job,
                        int i) {
    char name[AIQ_MAX_NAME + 1];
    if (pods_name(name, sizeof name, job, i) != 0)
        name[0] = '\0';
    snprintf(buf, cap, "%s/%s", ns, name);
}

/* Replica i's pod of job j as cached, or NULL. */
static struct opcache_obj *job_pod_at(struct server *s, const struct aiq_aijob *j, int i) {
    char key[OPCACHE_KEY_MAX];
    job_pod_key(key, sizeof key, j->meta.namespace_, j->meta.name, i);
    return opcache_get(s->cache[OPK_POD], key);
}

/* Pods a job may have at most: an elastic job's maxReplicas. */
static int job_max_pods(const struct aiq_aijob *j) {
    return j->spec.max_replicas > j->spec.replicas ? j->spec.max_replicas : j->spec.replicas;
}

/* Replicas whose pods the job has now: a teardown waits for every pod it
 * may have had; a placed job has its live replicas (placed and not being
 * stopped: pods of stopping replicas are on their way out); otherwise
 * spec.replicas (an elastic job's minReplicas). */
static int job_size(const struct aiq_aijob *j, const struct opjob *js) {
    if (js->teardown)
        return job_max_pods(j);
    if ((js->st.phase == AIQ_PHASE_ADMITTED || js->st.phase == AIQ_PHASE_RUNNING) &&
        js->st.nplacement > 0)
        return js->st.nplacement - js->stopping;
    return j->spec.replicas;
}

/* GPU-seconds of this run up to now: per stretch at the replicas held
 * (see opjob.seg_t), for a preempted or elastic job; GPUs per replica as
 * usage counts them (job_total_gpus). */
static double job_run_gpu_s(const struct server *s, const struct aiq_aijob *j,
                            const struct opjob *js, int held, double now) {
    double t = js->seg_t > 0 && now > js->seg_t ? now - js->seg_t : 0;
    return js->run_gpu_s +
           t * held * (double)gpu_mech_gpus(s->flags.gpu_mech, &j->spec.resources);
}

/* Counts what the gang's pods are doing; attempts is the attempt the
 * status shows. */
static void job_gang(struct server *s, const struct aiq_aijob *j, const struct opjob *js,
                     int attempts, struct gang *g) {
    memset(g, 0, sizeof *g);
    g->n = job_size(j, js);
    for (int i = 0; i < g->n; i++) {
        struct opcache_obj *p = job_pod_at(s, j, i);
        if (!p)
            continue;
        g->exist++;
        uint64_t f = p->facts; /* pods_facts: a frozen pod stays frozen */
        if (pods_facts_gated(f)) {
            g->gated++;
            if (pods_facts_attempt(f) > attempts)
                g->newer++;
        }
        enum pod_phase ph = pods_facts_phase(f);
        if (ph == POD_PHASE_RUNNING) {
            g->running++;
        } else if (ph == POD_PHASE_SUCCEEDED) {
            g->succeeded++;
        } else if (ph == POD_PHASE_FAILED) {
            g->failed++;
            snprintf(g->failed_pod, sizeof g->failed_pod, "%s", srv__name(opcache_raw(p)));
        }
    }
}

/* Tells whether js->st must be published: the object changed under us
 * (not by our own status write), or something a user acts on changed
 * since the last publish (docs/operator.md "Status writes"). */
static bool job_must_publish(struct opcache_obj *o, struct opjob *js, double now) {
    if (js->pub_rv == OPCACHE_RV_NONE)
        return true;
    if (o->changed != js->pub_seen) { /* put since: compare the resourceVersion */
        if (o->rv != js->pub_rv && o->rv != js->own_rv)
            return true;
        js->pub_seen = o->changed;
    }
    if (opstatus_material_hash(&js->st) != js->pub_mhash)
        return true;
    return opstatus_moved(js->pub_pos, js->pub_eta, js->st.position, js->st.estimated_start, now);
}

/* Records js->st as what the AIJob's status says now (resourceVersion,
 * material fingerprint, position, estimated start, phase). */
static void job_published_as(struct opcache_obj *o, struct opjob *js) {
    js->pub_rv = o->rv; /* the entry's: a frozen one is not read back for it */
    js->pub_seen = o->changed;
    js->pub_mhash = opstatus_material_hash(&js->st);
    js->pub_pos = js->st.position;
    js->pub_eta = js->st.estimated_start;
    js->pub_phase = js->st.phase;
}

/* Publishes js->st as the AIJob's desired status when job_must_publish
 * says so. The status JSON is built when the write goes out
 * (srv__want_job_status), from st as it is then. */
static void job__publish(struct server *s, struct opcache_obj *o,
                         struct opjob *js, double now) {
    /* the parsed AIJob's: a frozen entry is not read back for it */
    const struct aiq_aijob *pj = o->parse_ok ? o->parsed : NULL;
    js->st.observed_generation = pj ? pj->meta.generation : srv__generation(opcache_raw(o));
    if (!job_must_publish(o, js, now))
        return;
    /* A phase change is written before the rest, except Pending: the
     * short step while the job's pods are made, which Queued soon
     * replaces. In a burst the budget then goes to the Queued statuses,
     * and a Pending one still waiting is replaced by its Queued one
     * instead of costing a write of its own. */
    bool phase_changed = js->st.phase != js->pub_phase && js->st.phase != AIQ_PHASE_PENDING;
    srv__want_job_status(s, o, now);
    struct opext *x = o->ext;
    if (x && x->dirty && phase_changed)
        x->urgent = true;
    job_published_as(o, js);
}

/* See server.h. */
bool job_status_due(struct opcache_obj *o, struct opjob *js, double now) {
    return job_must_publish(o, js, now);
}

/* See server.h. */
void job_publish(struct server *s, struct opcache_obj *o, double now) {
    struct opjob *js = job_state(o);
    if (js)
        job__publish(s, o, js, now);
}

/* Emits an Event once per distinct reason in a row. */
static void job_event(struct server *s, struct opcache_obj *o, struct opjob *js,
                      const char *type, const char *reason, const char *msg) {
    if (strcmp(js->last_event, reason) == 0)
        return;
    snprintf(js->last_event, sizeof js->last_event, "%s", reason);
    srv__event_of(s, o, type, reason, msg);
}

/* Records a job's end in the store: when, and its final phase, which
 * the runtime history (store_runtime_history: Succeeded runs only) and
 * the active-job list read. */
static void job_store_final(struct server *s, const struct aiq_aijob *j,
                            const struct opjob *js, double now) {
    struct store_job_status st = {js->st.phase, 0, 0, 0, opstatus_message(&js->st), js->st.attempts,
                                  now};
    (void)srv_rec(s, store_job_set_status(s->db, j->meta.uid, &st, NULL), "job_set_status");
}

/* Sets phase, reason and message together. */
static void job_phase(struct opjob *js, aiq_phase p, const char *reason,
                      const char *msg) {
    js->st.phase = p;
    snprintf(js->st.reason, sizeof js->st.reason, "%s", reason ? reason : "");
    (void)opstatus_set_message(&js->st, msg); /* ENOMEM: the earlier message stays */
}

/* Sets the extra condition `which` (OPST_XC_*) of js's status: its
 * reason (NULL keeps the one it has) and message. Out of memory the
 * condition is not shown, and the log says so. */
static void job_xc_set(struct server *s, struct opcache_obj *o, struct opjob *js,
                       int which, const char *reason, const char *msg) {
    struct opst_xcond *x = opstatus_xc(&js->st, which);
    if (!x) {
        OPLOG(&s->log, OPLOG_ERROR, "status_condition_dropped", o->key, srv__rv(opcache_raw(o)),
              "which=%d reason=%s msg=\"out of memory\"", which, reason ? reason : "-");
        return;
    }
    if (reason)
        snprintf(x->reason, sizeof x->reason, "%s", reason);
    snprintf(x->message, sizeof x->message, "%s", msg);
}

/* See server.h. */
char *job_place_json(const struct opjob *js) {
    struct opstatus tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.placement = js->place;
    tmp.nplacement = js->st.nplacement;
    json_object *st = opstatus_to_json(&tmp, NULL, 0), *pl = NULL;
    char *out = NULL;
    if (st && json_object_object_get_ex(st, "placement", &pl))
        out = strdup(json_object_to_json_string_ext(pl, JSON_C_TO_STRING_PLAIN));
    json_object_put(st);
    return out;
}

/* Deletes every pod of the gang (missing ones are fine). */
static void job__delete_pods(struct server *s, const struct aiq_aijob *j,
                             int n) {
    char path[1024];
    for (int i = 0; i < n; i++) {
        struct opcache_obj *p = job_pod_at(s, j, i);
        if (!p)
            continue;
        aiq_err e;
        aiq_err_clear(&e);
        if (aiq_jpath_str(opcache_raw(p), "metadata.deletionTimestamp"))
            continue;
        if (srv__path_of(path, sizeof path, OPK_POD, p, NULL, &e) != AIQ_OK)
            continue;
        aiq_rc rc = kube_delete(s->kc, path, "Background", NULL, &e);
        if (rc != AIQ_OK && rc != AIQ_ENOTFOUND)
            OPLOG(&s->log, OPLOG_WARN, "pod_delete_failed", p->key, NULL,
                  "rc=%s http=%d msg=\"%s\"", aiq_strerror(rc), e.http_status, e.message);
        else
            OPLOG(&s->log, OPLOG_INFO, "pod_deleted", p->key, srv__rv(opcache_raw(p)),
                  "job=%s", j->meta.name);
    }
}

/* Queues the missing gated pods for creation (srv__create_pod; they are
 * POSTed in one batch at the end of the turn). Returns how many could not
 * be built. */
static int job_create_range(struct server *s, struct opcache_obj *o,
                            const struct aiq_aijob *j, int from, int to, int attempt) {
    json_object *ann = NULL, *meta = NULL;
    int missing = 0;
    struct opjob *js = job_state(o);
    if (!js)
        return to - from;
    if (json_object_object_get_ex(opcache_raw(o), "metadata", &meta))
        json_object_object_get_ex(meta, "annotations", &ann);
    for (int i = from; i < to; i++) {
        if (job_pod_at(s, j, i))
            continue;
        aiq_err e;
        aiq_err_clear(&e);
        json_object *pod = pods_build(j, ann, i, s->flags.gpu_mech, &e);
        if (pod && (pods_set_attempt(pod, attempt) != 0 ||
                    (j->spec.max_replicas > 0 && actions_pod_env(pod) != 0))) {
            json_object_put(pod);
            pod = NULL;
            aiq_err_set(&e, AIQ_ENOMEM, "out of memory");
        }
        if (!pod) {
            OPLOG(&s->log, OPLOG_ERROR, "pod_build_failed", o->key, srv__rv(opcache_raw(o)),
                  "replica=%d msg=\"%s\"", i, e.message);
            /* Only running out of memory passes; a template that cannot
             * become a pod never will: the job is rejected. */
            struct opjob_cold *jc = e.code != AIQ_ENOMEM ? job_cold(js) : NULL;
            if (jc && !jc->pod_refused[0])
                snprintf(jc->pod_refused, sizeof jc->pod_refused, "%s", e.message);
            missing++;
            continue;
        }
        srv__create_pod(s, pod);
    }
    return missing;
}

/* The gang's gated pods for the next attempt. */
static int job_create_pods(struct server *s, struct opcache_obj *o,
                           const struct aiq_aijob *j) {
    struct opjob *js = job_state(o);
    return job_create_range(s, o, j, 0, j->spec.replicas, js ? js->st.attempts + 1 : 1);
}

/* Pods of replicas [from, to) in the cache. */
static int job_count_pods(struct server *s, const struct aiq_aijob *j, int from, int to) {
    int n = 0;
    for (int i = from; i < to; i++) {
        n += job_pod_at(s, j, i) != NULL;
    }
    return n;
}

/* Tells whether the pods of replicas [from, to) all exist on the server. */
static bool job_range_on_server(struct server *s, const struct aiq_aijob *j, int from, int to) {
    for (int i = from; i < to; i++) {
        struct opcache_obj *p = job_pod_at(s, j, i);
        if (!p || p->rv == OPCACHE_RV_NONE) /* a placeholder of ours */
            return false;
    }
    return true;
}

/* Tells whether every pod of the job exists on the server (not only as a
 * placeholder waiting for its create). */
static bool job_pods_on_server(struct server *s, const struct aiq_aijob *j) {
    return job_range_on_server(s, j, 0, (int)j->spec.replicas);
}

/* GPUs the whole gang holds (a shared replica holds a whole GPU under a
 * mechanism that cannot share; see gpu_mech_gpus). */
static int64_t job_total_gpus(const struct server *s, const struct aiq_aijob *j) {
    return (int64_t)j->spec.replicas * gpu_mech_gpus(s->flags.gpu_mech, &j->spec.resources);
}

/* Ends the current attempt in the store (idempotent per attempt). */
static void job_finish_attempt(struct server *s, const struct aiq_aijob *j,
                               struct opjob *js, double now, const char *outcome) {
    if (js->st.attempts <= 0 || !js->st.admitted_at)
        return;
    double ran = js->st.started_at > 0 ? now - js->st.started_at : 0;
    double gpu_s = ran > 0 ? ran * (double)job_total_gpus(s, j) : 0;
    if (j->spec.max_replicas > 0) /* elastic: per stretch at its size */
        gpu_s = job_run_gpu_s(s, j, js, js->st.nplacement, now);
    bool counted = false;
    aiq_err e;
    aiq_err_clear(&e);
    if (store_attempt_finish(s->db, j->meta.uid, js->st.attempts, now, gpu_s,
                             outcome, &counted, &e) != AIQ_OK)
        OPLOG(&s->log, OPLOG_WARN, "store_error", j->meta.name, NULL,
              "op=attempt_finish msg=\"%s\"", e.message);
    if (counted) {
        js->attained_gpu_s += gpu_s;
        char payload[256];
        snprintf(payload, sizeof payload,
                 "{\"uid\":\"%s\",\"attempt\":%d,\"outcome\":\"%s\",\"runtime_s\":%.3f,"
                 "\"gpu_seconds\":%.3f}",
                 j->meta.uid, js->st.attempts, outcome, ran, gpu_s);
        char key[OPCACHE_KEY_MAX];
        snprintf(key, sizeof key, "%s/%s", j->meta.namespace_, j->meta.name);
        (void)srv_rec(s, store_journal_event(s->db, now, STORE_EV_JOB_DEPARTURE, key, payload, NULL),
                      "journal_event");
        /* aiq_finished_total counts jobs: an attempt that succeeds or a
         * job deleted while it ran ends the job; a failed attempt ends it
         * only past backoffLimit (job_teardown counts that one). */
        if (!strcmp(outcome, "Succeeded") || !strcmp(outcome, "Deleted"))
            opmetrics_finished_inc(s->metrics, outcome);
    }
}

/* Attempts that count against backoffLimit: not those a preemption, a
 * lost node or spec.suspend ended (none of them is the job's fault). */
static int job_counted_attempts(const struct opjob *js) {
    return js->st.attempts - js->st.preemptions - js->st.node_failures - js->st.suspensions;
}

/* Brings the gang down: deletes its pods, counts the attempt and decides
 * what follows (requeue with backoff, Failed, or Suspended). reason
 * NodeLost is the cluster's fault: the caller counted it in
 * status.nodeFailures, and the requeue has no backoff. A suspension is
 * the user's choice: counted in status.suspensions, so neither it nor
 * the resume's new attempt uses up backoffLimit. */
static void job_teardown(struct server *s, struct opcache_obj *o,
                         const struct aiq_aijob *j, struct opjob *js,
                         double now, const char *reason, const char *why,
                         bool suspend) {
    char msg[512];
    bool node_lost = strcmp(reason, "NodeLost") == 0;
    job_finish_attempt(s, j, js, now, suspend ? "Suspended" : node_lost ? "NodeLost" : "Failed");
    js->teardown = true;
    js->released = false;
    /* Its pods hold their GPUs until they are gone: the queue counts them. */
    js->held = js->st.nplacement;
    js->stopping = js->grow_from = js->grow_start = 0;
    js->seg_t = js->run_gpu_s = 0;
    js->st.current_replicas = 0;
    js->st.nplacement = 0;
    js->st.admitted_at = 0;
    js->st.started_at = 0;
    js->st.estimated_start = 0;
    if (suspend) {
        js->st.suspensions++;
        js->teardown_to = AIQ_PHASE_SUSPENDED;
        snprintf(msg, sizeof msg, "spec.suspend is true: pods deleted, the job waits to be "
                 "resumed (suspension %d, not counted against backoffLimit)", js->st.suspensions);
        job_phase(js, AIQ_PHASE_SUSPENDED, "Suspended", msg);
    } else if (job_counted_attempts(js) > j->spec.backoff_limit) {
        js->teardown_to = AIQ_PHASE_FAILED;
        js->st.finished_at = now;
        snprintf(msg, sizeof msg, "%s; attempt %d of %d, backoffLimit %d reached",
                 why, job_counted_attempts(js), j->spec.backoff_limit + 1,
                 j->spec.backoff_limit);
        job_phase(js, AIQ_PHASE_FAILED, reason, msg);
        job_store_final(s, j, js, now);
        opmetrics_finished_inc(s->metrics, "Failed");
    } else {
        /* A lost node is not the job's fault: it goes back at once. */
        int failed = job_counted_attempts(js); /* >= 1: this one failed */
        double back = node_lost ? 0 : s->flags.backoff_base_s * pow(2, failed > 1 ? failed - 1 : 0);
        if (back > 300)
            back = 300;
        js->backoff_until = now + back;
        js->teardown_to = AIQ_PHASE_QUEUED;
        js->st.queued_at = now;
        snprintf(msg, sizeof msg, "%s; requeued after attempt %d of %d (backoff %.0fs)",
                 why, job_counted_attempts(js), j->spec.backoff_limit + 1, back);
        char payload[384];
        snprintf(payload, sizeof payload,
                 "{\"uid\":\"%.100s\",\"attempt\":%d,\"queued\":%.17g,"
                 "\"backoff_until\":%.17g,\"reason\":\"%.64s\"}",
                 j->meta.uid, js->st.attempts, now, js->backoff_until, reason);
        (void)srv_rec(s, store_journal_event(s->db, now, STORE_EV_JOB_REQUEUE, o->key, payload, NULL),
                      "journal_event");
        job_phase(js, AIQ_PHASE_QUEUED, reason, msg);
    }
    OPLOG(&s->log, OPLOG_WARN, "gang_down", o->key, srv__rv(opcache_raw(o)),
          "reason=%s attempts=%d next=%s msg=\"%s\"", reason, js->st.attempts,
          aiq_phase_name(js->teardown_to), opstatus_message(&js->st));
    job_event(s, o, js, suspend ? "Normal" : "Warning", reason, opstatus_message(&js->st));
    job__delete_pods(s, j, job_max_pods(j));
}

/* ---- lost nodes ------------------------------------------------------- */

/* Finds a node of the gang's placement that is gone from the cluster or
 * NotReady. Says which in msg and returns true, with *since the time the
 * node's Ready condition turned (0 unknown, e.g. deleted). */
static bool job_lost_node(struct server *s, const struct opjob *js, char *msg, size_t cap,
                          double *since) {
    for (int i = 0; i < js->st.nplacement; i++) {
        const struct opst_place *pl = &js->st.placement[i];
        struct opcache_obj *n = opcache_get(s->cache[OPK_NODE], pl->node);
        const char *why = NULL;
        *since = 0;
        if (!n) {
            snprintf(msg, cap, "node %.253s of replica %d was deleted", pl->node, pl->replica);
            return true;
        }
        if (!node_ready(opcache_raw(n), since, &why)) {
            snprintf(msg, cap, "node %.253s of replica %d is NotReady (%.64s)", pl->node,
                     pl->replica, why ? why : "no reason given");
            return true;
        }
    }
    return false;
}

/* Deletes at once (grace 0) the gang's pods bound to node: no kubelet is
 * left there to confirm a graceful stop, and a graceful delete would keep
 * the pod, and the gang's teardown, waiting forever. */
static void job_force_delete_on(struct server *s, const struct aiq_aijob *j, const char *node) {
    char path[1024];
    for (int i = 0; i < job_max_pods(j); i++) {
        struct opcache_obj *p = job_pod_at(s, j, i);
        const char *on = p ? aiq_jpath_str(opcache_raw(p), "spec.nodeName") : NULL;
        if (!on || strcmp(on, node) != 0)
            continue;
        aiq_err e;
        aiq_err_clear(&e);
        if (srv__path_of(path, sizeof path, OPK_POD, p, NULL, &e) != AIQ_OK)
            continue; /* a cached pod always has a namespace and name */
        aiq_rc rc = kube_delete_grace(s->kc, path, "Background", 0, NULL, &e);
        if (rc != AIQ_OK && rc != AIQ_ENOTFOUND)
            OPLOG(&s->log, OPLOG_WARN, "pod_delete_failed", p->key, NULL,
                  "rc=%s http=%d msg=\"%s\" grace=0", aiq_strerror(rc), e.http_status, e.message);
        else
            OPLOG(&s->log, OPLOG_INFO, "pod_deleted", p->key, srv__rv(opcache_raw(p)),
                  "job=%s grace=0 node=%s", j->meta.name, node);
    }
}

/* A placed gang with a node deleted or NotReady: it waits --node-lost-timeout
 * (from the node's NotReady transition, or from when the operator first saw
 * it) for the node to come back, then the attempt ends as a node failure
 * (status.nodeFailures, not counted against backoffLimit) and the gang is
 * requeued at once, its pods on lost nodes deleted without grace. A pod of
 * the gang gone or failed meanwhile ends it sooner (pod GC removes pods of
 * deleted nodes). Returns true when the job is in node trouble (the
 * caller's other checks wait). */
static bool job_node_loss(struct server *s, struct opcache_obj *o, const struct aiq_aijob *j,
                          struct opjob *js, const struct gang *g, double now) {
    char msg[400];
    double since = 0;
    if (!job_lost_node(s, js, msg, sizeof msg, &since)) {
        if (js->node_lost_t > 0)
            OPLOG(&s->log, OPLOG_INFO, "node_back", o->key, srv__rv(opcache_raw(o)),
                  "after_s=%.1f", now - js->node_lost_t);
        js->node_lost_t = 0;
        return false;
    }
    if (js->node_lost_t == 0) {
        js->node_lost_t = since > 0 && since < now ? since : now;
        OPLOG(&s->log, OPLOG_WARN, "node_lost", o->key, srv__rv(opcache_raw(o)),
              "msg=\"%s\" requeue_in_s=%.0f", msg,
              s->flags.node_lost_s - (now - js->node_lost_t));
    }
    if (now - js->node_lost_t < s->flags.node_lost_s && g->failed == 0 && g->exist == g->n)
        return true;
    char why[512];
    snprintf(why, sizeof why, "%s%s", msg,
             now - js->node_lost_t < s->flags.node_lost_s ? " and a pod of it is gone"
                                                          : " past --node-lost-timeout");
    for (int i = 0; i < js->st.nplacement; i++) {
        struct opcache_obj *n = opcache_get(s->cache[OPK_NODE], js->st.placement[i].node);
        if (!n || !node_ready(opcache_raw(n), NULL, NULL))
            job_force_delete_on(s, j, js->st.placement[i].node);
    }
    js->st.node_failures++;
    js->node_lost_t = 0;
    opmetrics_node_lost_inc(s->metrics);
    job_teardown(s, o, j, js, now, "NodeLost", why, false);
    return true;
}

/* The release patches being built for a batch of jobs: items[i] is a
 * pod's, owner[i] the index of its job. */
struct rel_batch {
    struct release_item *items;
    int *owner;
    int n, cap;
};

/* Room for `more` items past the n there are (at least doubling, so
 * growing one at a time stays linear). Returns 0, or -1 when out of
 * memory. */
static int rel_batch_room(struct rel_batch *b, int more) {
    if (b->n + more <= b->cap)
        return 0;
    int nc = b->cap ? b->cap * 2 : 64;
    if (nc < b->n + more)
        nc = b->n + more;
    struct release_item *ni = realloc(b->items, (size_t)nc * sizeof *ni);
    if (ni)
        b->items = ni;
    int *no = realloc(b->owner, (size_t)nc * sizeof *no);
    if (no)
        b->owner = no;
    if (!ni || !no)
        return -1;
    b->cap = nc;
    return 0;
}

/* Fills it with the release patch of pod p (replica pl of job j) and its
 * path. Returns 0, or -1 when it cannot be built (it then holds nothing). */
static int rel_item_build(struct server *s, struct release_item *it, struct opcache_obj *p,
                          const struct opst_place *pl, const struct aiq_aijob *j,
                          const struct opjob *js, const char *key) {
    memset(it, 0, sizeof *it);
    it->patch = release_pod_patch(opcache_raw(p), pl, &it->err);
    if (it->patch && release_gpu_prepare(s, opcache_raw(p), pl, j, it->patch, &it->err) != 0) {
        OPLOG(&s->log, OPLOG_WARN, "pod_gpu_prepare_failed", key, srv__rv(opcache_raw(p)),
              "mechanism=%s rc=%s msg=\"%s\"", gpu_mech_name(s->flags.gpu_mech),
              aiq_strerror(it->err.code), it->err.message);
        json_object_put(it->patch);
        it->patch = NULL;
        return -1;
    }
    if (it->patch && j->spec.max_replicas > 0 &&
        actions_patch_size(it->patch, js->st.nplacement - js->stopping) != 0) {
        json_object_put(it->patch);
        it->patch = NULL;
    }
    if (!it->patch ||
        srv__path_of(it->path, sizeof it->path, OPK_POD, p, NULL, &it->err) != AIQ_OK) {
        json_object_put(it->patch);
        it->patch = NULL;
        return -1;
    }
    return 0;
}

/* Builds the patches of every gated pod of the jobs into b (cheap, on
 * this thread); errors[jx] counts what job jx could not have. Stops at
 * the first allocation failure, sending what was built. */
static void rel_batch_build(struct server *s, struct opcache_obj **jobs, int njobs,
                            int *errors, struct rel_batch *b) {
    char key[OPCACHE_KEY_MAX];
    int most = 0; /* every placed replica: one allocation for a big release */
    for (int jx = 0; jx < njobs; jx++) {
        struct opjob *js = jobs[jx] ? job_state(jobs[jx]) : NULL;
        most += js && js->st.nplacement > 0 ? js->st.nplacement : 0;
    }
    (void)rel_batch_room(b, most); /* out of memory: the loop tries one at a time */
    for (int jx = 0; jx < njobs; jx++) {
        struct opcache_obj *o = jobs[jx];
        struct opjob *js = o ? job_state(o) : NULL;
        const struct aiq_aijob *j = o ? o->parsed : NULL;
        if (!js || !j || !o->parse_ok || js->st.nplacement <= 0) {
            errors[jx]++;
            continue;
        }
        for (int k = 0; k < js->st.nplacement; k++) {
            const struct opst_place *pl = &js->place[k];
            job_pod_key(key, sizeof key, j->meta.namespace_, j->meta.name, pl->replica);
            struct opcache_obj *p = opcache_get(s->cache[OPK_POD], key);
            if (!p) {
                errors[jx]++;
                continue;
            }
            if (!pods_is_gated(opcache_raw(p)))
                continue; /* released before (idempotent) */
            if (rel_batch_room(b, 1) != 0) {
                errors[jx]++;
                return;
            }
            if (rel_item_build(s, &b->items[b->n], p, pl, j, js, key) != 0) {
                errors[jx]++;
                continue;
            }
            b->owner[b->n++] = jx;
        }
    }
}

/* Takes the answers of a sent batch: a released pod goes into the cache,
 * a failure counts against its job. Frees the patches. Returns the pods
 * released. */
static int rel_batch_apply(struct server *s, struct rel_batch *b, int *errors) {
    char key[OPCACHE_KEY_MAX];
    int patched = 0;
    for (int i = 0; i < b->n; i++) {
        struct release_item *it = &b->items[i];
        json_object_put(it->patch);
        if (it->rc == AIQ_OK) {
            json_object *m = NULL, *a = NULL, *nd = NULL;
            patched++;
            if (opcache_key(key, sizeof key, it->out) != 0)
                snprintf(key, sizeof key, "%s", "?");
            if (json_object_object_get_ex(it->out, "metadata", &m) &&
                json_object_object_get_ex(m, "annotations", &a))
                json_object_object_get_ex(a, RELEASE_ANN_NODE, &nd);
            OPLOG(&s->log, OPLOG_INFO, "pod_released", key, srv__rv(it->out), "node=%s",
                  nd ? json_object_get_string(nd) : "-");
            opcache_put(s->cache[OPK_POD], it->out, NULL);
        } else {
            errors[b->owner[i]]++;
            OPLOG(&s->log, OPLOG_WARN, "pod_release_failed", it->path, NULL,
                  "rc=%s http=%d reason=%s msg=\"%s\"", aiq_strerror(it->rc),
                  it->err.http_status, it->err.reason, it->err.message);
        }
    }
    return patched;
}

/* Marks the jobs released whose pods all went out; frees the batch.
 * Returns the pods released, or -1 when a job was not released. */
static int rel_finish(struct opcache_obj **jobs, int njobs, struct rel_batch *b,
                      int *errors, int patched) {
    int failed = 0;
    for (int jx = 0; jx < njobs; jx++) {
        if (errors[jx] == 0 && jobs[jx])
            job_state(jobs[jx])->released = true;
        failed += errors[jx] != 0;
    }
    free(b->items);
    free(b->owner);
    free(errors);
    return failed ? -1 : patched;
}

/* Releases admitted jobs; see server.h. */
int jobs_release(struct server *s, struct opcache_obj **jobs, int njobs) {
    struct rel_batch b = {0};
    int *errors = NULL;
    /* Fail closed: no gang leaves its gate unless its admission is
     * recorded (store_guard.c); a later sync releases it. */
    if (!srv_store_publishable(s))
        return 0;
    errors = calloc((size_t)(njobs ? njobs : 1), sizeof *errors);
    if (!errors)
        return -1;
    rel_batch_build(s, jobs, njobs, errors, &b);
    /* Send them in parallel over the client's pool, then apply. */
    if (b.n > 0) {
        double t0 = srv_now();
        int ok = release_exec(s->kc, b.items, b.n, 4);
        OPLOG(&s->log, OPLOG_INFO, "release_batch", NULL, NULL, "jobs=%d pods=%d ok=%d seconds=%.4f",
              njobs, b.n, ok, srv_now() - t0);
    }
    return rel_finish(jobs, njobs, &b, errors, rel_batch_apply(s, &b, errors));
}

/* Releases one admitted job; see server.h. */
int job_release(struct server *s, struct opcache_obj *o) {
    return jobs_release(s, &o, 1);
}

/* Borrowed annotation `name` of obj, or NULL. */
static const char *job_pod_ann(json_object *obj, const char *name) {
    json_object *md = NULL, *ann = NULL, *v = NULL;
    if (!json_object_object_get_ex(obj, "metadata", &md) ||
        !json_object_object_get_ex(md, "annotations", &ann) ||
        !json_object_object_get_ex(ann, name, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

/* Reads one released pod's placement from its release annotations
 * (release.h) into p. Returns 0, or -1 when the pod has none. */
static int job_pod_place(json_object *pod, int replica, struct opst_place *p) {
    json_object *md = NULL, *ann = NULL, *v = NULL;
    if (!json_object_object_get_ex(pod, "metadata", &md) ||
        !json_object_object_get_ex(md, "annotations", &ann) ||
        !json_object_object_get_ex(ann, RELEASE_ANN_NODE, &v) ||
        strlen(json_object_get_string(v)) > AIQ_MAX_NAME)
        return -1;
    memset(p, 0, sizeof *p);
    p->replica = replica;
    snprintf(p->node, sizeof p->node, "%s", json_object_get_string(v));
    if (json_object_object_get_ex(ann, RELEASE_ANN_GPUS, &v)) {
        const char *g = json_object_get_string(v);
        while (*g && p->ngpus < AIQ_MAX_GPUS_PER_REPLICA) {
            char *end = NULL;
            long x = strtol(g, &end, 10);
            if (end == g || x < 0 || x >= 32)
                break;
            p->gpus[p->ngpus++] = (int)x;
            g = *end == ',' ? end + 1 : end;
        }
    }
    if (json_object_object_get_ex(ann, RELEASE_ANN_GPU_MEM, &v))
        p->gpu_memory_mib = json_object_get_int64(v);
    return 0;
}

/* A preemption's reason, as actions_stop_pods writes it on the pods. */
static bool job_preempt_reason(const char *why) {
    return why && (strcmp(why, "Preempted") == 0 || strcmp(why, "PreemptedByScore") == 0 ||
                   strcmp(why, "Reclaimed") == 0);
}

/* A restart in the middle of a teardown: the status already shows where
 * the job goes (Queued, Suspended, Failed) while released pods of it are
 * still there (a queued job's pods are all gated). The teardown goes on,
 * and the placement those pods hold (their release annotations) stays
 * counted by the queue until they are gone; pods annotated
 * aiq.dev/preempted-by / aiq.dev/stop-reason make it a preemption again,
 * its run's GPU time counted from the pods' start.
 *
 * The status is written behind the pods (the status writer batches), so a
 * crash can also fall between a preemption's pod annotations and its
 * status: the status still says Admitted or Running while the pods carry
 * a preemption's stop reason. The pods are the record then: the job is
 * preempted again from them (the count and condition it never wrote), not
 * left to find its pods missing and fail.
 *
 * Returns 0, or -1 on ENOMEM (nothing recovered: the job stays unloaded
 * and its next sync loads it again). */
static int job_recover_teardown(struct server *s, struct opcache_obj *o,
                                const struct aiq_aijob *j, struct opjob *js) {
    aiq_phase p = js->st.phase;
    bool live = p == AIQ_PHASE_ADMITTED || p == AIQ_PHASE_RUNNING;
    if (p != AIQ_PHASE_QUEUED && p != AIQ_PHASE_SUSPENDED && p != AIQ_PHASE_FAILED && !live)
        return 0;
    int held = 0, n = job_max_pods(j);
    double started = 0;
    bool preempted = false;
    const char *by = NULL, *why = NULL;
    /* A live job's placement is its own (loaded from the status); only a
     * preemption's stop reason on one of its pods makes it a teardown. */
    for (int i = 0; live && i < n; i++) {
        struct opcache_obj *pod = job_pod_at(s, j, i);
        const char *w = pod ? job_pod_ann(opcache_raw(pod), ACTIONS_ANN_STOP_REASON) : NULL;
        if (job_preempt_reason(w)) {
            preempted = true;
            why = w;
            by = job_pod_ann(opcache_raw(pod), ACTIONS_ANN_PREEMPTED_BY);
            break;
        }
    }
    if (live && !preempted)
        return 0;
    for (int i = 0; i < n; i++) {
        struct opcache_obj *pod = job_pod_at(s, j, i);
        if (!pod || pods_is_gated(opcache_raw(pod)))
            continue;
        /* The buffer only once a pod is out of its gate: a waiting job
         * has none (job_place_reserve). */
        if (job_place_reserve(js, n) != 0)
            return -1;
        if (job_pod_place(opcache_raw(pod), i, &js->place[held]) != 0)
            continue;
        held++;
        const char *w = job_pod_ann(opcache_raw(pod), ACTIONS_ANN_STOP_REASON);
        if (p == AIQ_PHASE_QUEUED && !preempted && job_preempt_reason(w)) {
            preempted = true;
            why = w;
            by = job_pod_ann(opcache_raw(pod), ACTIONS_ANN_PREEMPTED_BY);
        }
        double t = opst_parse_time(aiq_jpath_str(opcache_raw(pod), "status.startTime"));
        if (t > 0 && (started == 0 || t < started))
            started = t;
    }
    if (held == 0)
        return 0;
    if (preempted) {
        js->preempted = true;
        job_preempt_note(s, o, js, by ? by : "", why);
    }
    if (live) {
        /* What job_preempt would have written, had the status got out. */
        js->st.nplacement = js->st.current_replicas = 0;
        js->st.admitted_at = js->st.started_at = js->st.estimated_start = 0;
        js->st.position = 0;
        js->st.preemptions++;
        char xm[256];
        snprintf(xm, sizeof xm, "preempted by %.200s", by && *by ? by : "the queue");
        job_xc_set(s, o, js, OPST_XC_PREEMPTED, why, xm);
        char msg[512];
        snprintf(msg, sizeof msg, "preempted by %.200s; its pods stop gracefully, then it goes "
                 "back to the queue (preemption %d, not counted against backoffLimit; the "
                 "operator restarted before it wrote this)", by && *by ? by : "the queue",
                 js->st.preemptions);
        job_phase(js, AIQ_PHASE_QUEUED, why, msg);
        p = AIQ_PHASE_QUEUED;
    }
    js->teardown = true;
    js->teardown_to = p;
    js->held = held;
    js->seg_t = js->preempted ? started : 0;
    js->run_gpu_s = 0;
    OPLOG(&s->log, OPLOG_INFO, "job_teardown_recovered", o->key, srv__rv(opcache_raw(o)),
          "phase=%s held=%d preempted=%d by=%s run_since=%.3f%s", aiq_phase_name(p), held,
          (int)js->preempted, job_preempted_by(js, "-"), js->seg_t,
          live ? " status=unwritten" : "");
    return 0;
}

/* A restart's replay loads every job at once (srv_check_ready), and what
 * job_load and job_record would ask the store job by job comes from
 * here: every job's preemptions of the last hour, read in one scan
 * (entries sorted by uid, each with its newest 8, oldest first, as
 * store_attempt_preemptions gives them), and the runtime predictions
 * made so far, keyed by what predict_runtime reads (jobs of one user,
 * model and size ask the same). At 100k jobs the queries per job were
 * half of the replay. */
struct srv_replay {
    struct srv_preempt {
        char *uid;
        double t[8];
        int n;
    } *v;
    size_t n, cap;
    bool oom;               /* a row was not kept: the scan stopped there */
    bool preempts_ok;       /* v holds every job's (else: ask per job) */
    struct lh_table *pred;  /* pred_key -> struct pred_result, or NULL */
    /* Each active job's newest journaled decision, by uid (dec_ok: all
     * of them were read; else every job journals its next one again). */
    struct srv_lastdec {
        char *uid;
        struct opdecision d;
    } *dec;
    size_t ndec, capdec;
    size_t loaded;          /* jobs job_load took up while it lasted */
    bool dec_oom, dec_ok;
};

/* Room for entry n of the replay's array *v (cap entries of sz bytes),
 * grown by doubling; -1 on ENOMEM (*v unchanged). */
static int job_replay_room(void **v, size_t *cap, size_t n, size_t sz) {
    if (n < *cap)
        return 0;
    size_t c = *cap ? 2 * *cap : 64;
    void *nv = realloc(*v, c * sz);
    if (!nv)
        return -1;
    *v = nv;
    *cap = c;
    return 0;
}

/* Orders the replay's arrays, whose entries start with their uid
 * (struct srv_preempt, struct srv_lastdec). */
_Static_assert(offsetof(struct srv_preempt, uid) == 0 && offsetof(struct srv_lastdec, uid) == 0,
               "job_uid_cmp reads an entry's uid at its start");
static int job_uid_cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int job_preempt_row(const char *uid, double finished, void *ctx) {
    struct srv_replay *p = ctx;
    struct srv_preempt *last = p->n ? &p->v[p->n - 1] : NULL;
    if (!last || strcmp(last->uid, uid) != 0) {
        if (job_replay_room((void **)&p->v, &p->cap, p->n, sizeof *p->v) != 0)
            return p->oom = true, -1;
        last = &p->v[p->n];
        last->n = 0;
        if (!(last->uid = strdup(uid)))
            return p->oom = true, -1;
        p->n++;
    }
    if (last->n == 8) { /* rows come oldest first: drop the oldest */
        memmove(last->t, last->t + 1, 7 * sizeof last->t[0]);
        last->n = 7;
    }
    last->t[last->n++] = finished;
    return 0;
}

static int job_dec_row(const struct store_decision *d, void *ctx) {
    struct srv_replay *p = ctx;
    if (job_replay_room((void **)&p->dec, &p->capdec, p->ndec, sizeof *p->dec) != 0)
        return p->dec_oom = true, -1;
    struct srv_lastdec *e = &p->dec[p->ndec];
    memset(&e->d, 0, sizeof e->d);
    if (!(e->uid = strdup(d->job_uid)))
        return p->dec_oom = true, -1;
    e->d.level = d->level;
    e->d.pos = d->position;
    snprintf(e->d.action, sizeof e->d.action, "%s", d->action);
    snprintf(e->d.reason, sizeof e->d.reason, "%s", d->reason);
    p->ndec++;
    return 0;
}

/* Takes the job's newest journaled decision from the replay's scan as
 * the last one (cy_journal_due), so the first cycle after a restart
 * journals only what differs from it; its attempt is the status's (an
 * admission journals a decision of its own). */
static void job_replayed_decision(const struct srv_replay *p, const char *uid,
                                  struct opjob *js) {
    if (!p || !p->dec_ok || !p->ndec)
        return;
    struct srv_lastdec key = {(char *)uid, {0}};
    const struct srv_lastdec *f = bsearch(&key, p->dec, p->ndec, sizeof *p->dec, job_uid_cmp);
    if (!f)
        return;
    js->last_dec = f->d;
    js->last_dec.attempts = js->st.attempts;
}

static void job_pred_free(struct lh_entry *e) {
    free(lh_entry_k(e));
    free(lh_entry_v(e));
}

/* Ends one of jobs_replay_begin's scans into v (n entries of sz bytes,
 * each starting with its uid): true and v sorted when it read every row;
 * else false, logged with what the jobs do instead (then). The store
 * orders uids bytewise, as strcmp does; sorted again all the same, so a
 * lookup never rests on SQLite's collation. */
static bool job_replay_scanned(struct server *s, aiq_rc rc, bool oom, const aiq_err *e,
                               const char *what, const char *then, void *v, size_t n,
                               size_t sz) {
    if (rc != AIQ_OK || oom) {
        OPLOG(&s->log, OPLOG_WARN, "replay_not_preloaded", NULL, NULL,
              "what=%s msg=\"%s\" then=%s", what,
              rc != AIQ_OK ? e->message : "out of memory", then);
        return false;
    }
    if (n > 1)
        qsort(v, n, sz, job_uid_cmp);
    return true;
}

/* See server.h. */
void jobs_replay_begin(struct server *s) {
    struct srv_replay *p = calloc(1, sizeof *p);
    aiq_err e;
    aiq_err_clear(&e);
    if (!p) {
        OPLOG(&s->log, OPLOG_WARN, "replay_not_preloaded", NULL, NULL,
              "msg=\"out of memory\" then=per_job_queries");
        return;
    }
    aiq_rc rc = store_attempt_preemptions_all(s->db, job_now() - 3600, job_preempt_row, p, &e);
    p->preempts_ok = job_replay_scanned(s, rc, p->oom, &e, "preemptions", "per_job_queries",
                                        p->v, p->n, sizeof *p->v);
    aiq_err_clear(&e);
    rc = store_journal_last_decisions(s->db, job_dec_row, p, &e);
    p->dec_ok = job_replay_scanned(s, rc, p->dec_oom, &e, "decisions", "journal_each_again",
                                   p->dec, p->ndec, sizeof *p->dec);
    /* NULL (ENOMEM): every job asks the store, as outside a replay. */
    p->pred = lh_kchar_table_new(1024, job_pred_free);
    s->replay = p;
}

/* See server.h. */
size_t jobs_replay_end(struct server *s) {
    struct srv_replay *p = s->replay;
    if (!p)
        return 0;
    size_t loaded = p->loaded;
    for (size_t i = 0; i < p->n; i++)
        free(p->v[i].uid);
    free(p->v);
    for (size_t i = 0; i < p->ndec; i++)
        free(p->dec[i].uid);
    free(p->dec);
    if (p->pred)
        lh_table_free(p->pred);
    free(p);
    s->replay = NULL;
    return loaded;
}

/* Copies uid's preemptions from the replay's scan into t; -1 when the
 * scan has none to give (no replay, or it failed). */
static int job_replayed_preemptions(const struct srv_replay *p, const char *uid, double t[8]) {
    if (!p || !p->preempts_ok)
        return -1;
    struct srv_preempt key = {(char *)uid, {0}, 0};
    const struct srv_preempt *f = p->n ? bsearch(&key, p->v, p->n, sizeof *p->v, job_uid_cmp)
                                       : NULL;
    if (!f)
        return 0;
    memcpy(t, f->t, (size_t)f->n * sizeof t[0]);
    return f->n;
}

/* Rebuilds the ring of the job's last preemptions (the policy's limit per
 * hour) from the store: the attempts that ended "Preempted" in the last
 * hour. On a store error the ring stays empty and the error is logged. */
static void job_load_preemptions(struct server *s, struct opcache_obj *o,
                                 const struct aiq_aijob *j, struct opjob *js) {
    double t[8];
    int n = 0;
    aiq_err e;
    aiq_err_clear(&e);
    if ((n = job_replayed_preemptions(s->replay, j->meta.uid, t)) < 0 &&
        store_attempt_preemptions(s->db, j->meta.uid, job_now() - 3600, t, 8, &n, &e) != AIQ_OK)
        OPLOG(&s->log, OPLOG_WARN, "store_error", o->key, NULL,
              "op=attempt_preemptions msg=\"%s\"", e.message);
    for (int k = 0; k < n; k++) js->pre_t[k] = t[k];
    js->npre_t = n;
    if (n > 0)
        OPLOG(&s->log, OPLOG_INFO, "job_preemptions_loaded", o->key, srv__rv(opcache_raw(o)),
              "last_hour=%d newest=%.3f", n, t[n - 1]);
}

static int job_running_in(struct server *s, const struct aiq_aijob *j, int from, int to);

/* "grown from A to B replicas ..." (job_grow's Resized message): A, or
 * -1 when msg is not that or B is not `to`. */
static int job_grown_from(const char *msg, int to) {
    static const char pre[] = "grown from ";
    if (strncmp(msg, pre, sizeof pre - 1) != 0)
        return -1;
    char *end;
    long a = strtol(msg + sizeof pre - 1, &end, 10);
    if (end == msg + sizeof pre - 1 || strncmp(end, " to ", 4) != 0)
        return -1;
    const char *bp = end + 4;
    long b = strtol(bp, &end, 10);
    if (end == bp || b != to || a < 1 || a >= b)
        return -1;
    return (int)a;
}

/* A growth in flight when the operator stopped (its Resized condition
 * says Grown to the size the status holds and not every grown replica
 * runs): taken up again, so that its new pods are made and released and
 * the start timeout (GrowTimedOut) still applies, counted from the
 * grown pods' creation (now when none exists yet). */
static void job_recover_growth(struct server *s, struct opcache_obj *o,
                               const struct aiq_aijob *j, struct opjob *js) {
    int n = js->st.nplacement;
    int from = strcmp(opstatus_xc_reason(&js->st, OPST_XC_RESIZED), "Grown") == 0
                   ? job_grown_from(js->st.xc[OPST_XC_RESIZED].message, n)
                   : -1;
    if (from < 0 || job_running_in(s, j, from, n) == n - from)
        return;
    double t = 0;
    for (int i = from; i < n; i++) {
        struct opcache_obj *pod = job_pod_at(s, j, i);
        double c = pod ? opst_parse_time(aiq_jpath_str(opcache_raw(pod), "metadata.creationTimestamp")) : 0;
        if (c > 0 && (t == 0 || c < t))
            t = c;
    }
    js->grow_from = js->grow_start = from;
    js->grow_t = t > 0 ? t : job_now();
    OPLOG(&s->log, OPLOG_INFO, "job_growth_recovered", o->key, srv__rv(opcache_raw(o)),
          "from=%d to=%d since=%.3f", from, n, js->grow_t);
}

/* The first released pod of the job whose node (its aiq.dev/node) is not
 * the one js->place[0..n) gives its replica, or NULL when every released
 * pod is where the placement says. */
static const char *job_released_elsewhere(struct server *s, const struct aiq_aijob *j,
                                          const struct opjob *js, int n) {
    struct opst_place got;
    for (int i = 0; i < job_max_pods(j); i++) {
        struct opcache_obj *pod = job_pod_at(s, j, i);
        if (!pod || pods_is_gated(opcache_raw(pod)))
            continue;
        int k = 0;
        while (k < n && js->place[k].replica != i)
            k++;
        if (k == n || job_pod_place(opcache_raw(pod), i, &got) != 0 ||
            strcmp(got.node, js->place[k].node) != 0)
            return srv__name(opcache_raw(pod));
    }
    return NULL;
}

/* A restart between an admission's pods and its status: a cycle releases
 * the pods first and leaves the status (phase Admitted, the placement) to
 * the flush, under the write budget (cycle.c, cy_release). The status
 * then still says Pending or Queued at attempt N while released pods made
 * for attempt N + 1 are out. The store recorded that attempt and its
 * placement before any pod left its gate (cy_record, fail closed), so the
 * admission is taken back from there: phase Admitted, the same placement,
 * its time; the status is written by the next sync and the pods still
 * gated are released onto the same placement once it is. Without that
 * record (another database), or with a released pod on another node than
 * the record gives it, nothing changes here (admission_not_recovered in
 * the log) and the released pods are a teardown's (job_recover_teardown);
 * so too, without a word, with a released pod of another attempt or one a
 * preemption stopped (a teardown's to begin with). */
static void job_recover_admission(struct server *s, struct opcache_obj *o,
                                  const struct aiq_aijob *j, struct opjob *js) {
    if (js->st.phase != AIQ_PHASE_NONE && js->st.phase != AIQ_PHASE_PENDING &&
        js->st.phase != AIQ_PHASE_QUEUED)
        return;
    int next = js->st.attempts + 1, out = 0;
    for (int i = 0; i < job_max_pods(j); i++) {
        struct opcache_obj *pod = job_pod_at(s, j, i);
        if (!pod || pods_is_gated(opcache_raw(pod)))
            continue;
        if (pods_attempt(opcache_raw(pod)) != next || job_pod_ann(opcache_raw(pod), ACTIONS_ANN_STOP_REASON))
            return;
        out++;
    }
    if (out == 0)
        return;
    struct store_attempt a;
    aiq_err e;
    aiq_err_clear(&e);
    if (store_attempt_get(s->db, j->meta.uid, next, &a, &e) != AIQ_OK) {
        OPLOG(&s->log, OPLOG_WARN, "admission_not_recovered", o->key, srv__rv(opcache_raw(o)),
              "attempt=%d released=%d rc=%s msg=\"%s\"", next, out, aiq_strerror(e.code),
              e.message);
        return;
    }
    int n = -1; /* the attempt finished */
    if (a.finished <= 0)
        n = job_place_reserve(js, job_max_pods(j)) != 0
                ? -2
                : opstatus_places_text(a.placement_json, js->place, js->place_cap);
    free(a.placement_json);
    const char *off = n > 0 ? job_released_elsewhere(s, j, js, n) : NULL;
    if (n <= 0 || off) {
        OPLOG(&s->log, OPLOG_WARN, "admission_not_recovered", o->key, srv__rv(opcache_raw(o)),
              "attempt=%d released=%d pod=%s msg=\"%s\"", next, out, off ? off : "-",
              a.finished > 0 ? "the store has the attempt finished"
              : n == -2      ? "out of memory for the placement"
              : n <= 0       ? "no placement in the store"
                             : "a released pod is not on the node the store's placement gives it");
        return;
    }
    opcache_state_changed(o);
    js->st.nplacement = n;
    js->st.placement = js->place;
    js->st.attempts = next;
    js->st.admitted_at = a.admitted;
    struct store_job sj;
    /* A status never written as Queued has no queue time: the store's row
     * has it (job_sync_waiting marks it). Without it the status shows
     * none, as before. */
    if (js->st.queued_at <= 0 && store_job_get(s->db, j->meta.uid, &sj, NULL) == AIQ_OK)
        js->st.queued_at = sj.queued;
    js->st.position = 0;
    js->st.estimated_start = 0;
    js->released = false;
    char msg[512];
    snprintf(msg, sizeof msg, "admitted: %d replica%s on %s%s (attempt %d)", n,
             n == 1 ? "" : "s", js->place[0].node, n > 1 ? " and others" : "", next);
    job_phase(js, AIQ_PHASE_ADMITTED, "Admitted", msg);
    OPLOG(&s->log, OPLOG_INFO, "admission_recovered", o->key, srv__rv(opcache_raw(o)),
          "attempt=%d placement=%d released=%d status=unwritten", next, n, out);
    /* The admission's own Event may have gone with the crash (Events are
     * posted after the turn's pods); this one says what happened. */
    char ev[640];
    snprintf(ev, sizeof ev, "%s; taken back from the store after a restart", msg);
    job_event(s, o, js, "Normal", "AdmissionRecovered", ev);
}

/* Sizes js's placement for the live status's (borrowed, NULL for none)
 * and reads the status into js->st: a waiting job's status has no
 * placement, and it gets no buffer until it is placed (job_place_reserve;
 * an entry is half a kilobyte, a replica each). Returns 1 when the status
 * is in the current form (opstatus_current_form), 0 when not, -1 on
 * ENOMEM (st untouched). */
static int job_read_live(struct opjob *js, json_object *live) {
    json_object *pl = NULL;
    int n = 0;
    if (live && json_object_object_get_ex(live, "placement", &pl) &&
        json_object_is_type(pl, json_type_array))
        n = (int)json_object_array_length(pl);
    if (n > AIQ_MAX_REPLICAS)
        n = AIQ_MAX_REPLICAS;
    if (job_place_reserve(js, n) != 0)
        return -1;
    opstatus_release(&js->st); /* from_json overwrites st */
    opstatus_from_json(live, &js->st, js->place, n);
    js->st.placement = js->place;
    return opstatus_current_form(live) ? 1 : 0;
}

/* See server.h. */
void job_preload_listed(struct opcache_obj *o) {
    json_object *live = NULL;
    if (!o->parse_ok || !json_object_object_get_ex(opcache_raw(o), "status", &live))
        return; /* none to read: job_load has nothing to parse either */
    struct opjob *js = job_state(o);
    if (!js || js->loaded)
        return;
    int cur = job_read_live(js, live);
    js->pre_put = cur < 0 ? 0 : o->changed;
    js->pre_current = cur == 1;
}

/* The --ungrouped mode: "wait" (the default), "run", or a Group's name. */
static const char *job_ungrouped(const struct server *s) {
    return s->flags.ungrouped ? s->flags.ungrouped : "wait";
}

/* The code opjob.group_said keeps for a Group condition's reason: 2
 * GroupConflict, 1 NoGroup, 0 any other. */
static uint8_t job_group_code(const char *reason) {
    return !strcmp(reason, "GroupConflict") ? 2 : !strcmp(reason, "NoGroup") ? 1 : 0;
}

/* After a restart: the Group Event (job_group_event) an earlier run of
 * the operator told, as the live status shows it, so the restart does not
 * tell it again: a job held for its Group has the reason NoGroup or
 * GroupConflict; one that runs in no Group (--ungrouped=run) has a phase
 * and no group. (Told at most once, not always: an Event dropped at the
 * queue's cap in a burst stays untold, the status saying it anyway.) */
static void job_group_said_load(const struct server *s, struct opjob *js) {
    uint8_t c = job_group_code(js->st.reason);
    if (!c && !strcmp(job_ungrouped(s), "run") && js->st.phase != AIQ_PHASE_NONE &&
        !*opstatus_group(&js->st))
        c = 1;
    if (c)
        js->group_said = c;
}

/* Recovers our state from the live status (first sight after a start):
 * read as it was listed (job_preload_listed) when the entry is still
 * that put, else parsed from the cache's text now. */
static void job_load(struct server *s, struct opcache_obj *o,
                     const struct aiq_aijob *j, struct opjob *js) {
    int cur;
    if (js->pre_put != 0 && js->pre_put == o->changed) {
        cur = js->pre_current;
    } else {
        json_object *live = opcache_member(o, "status");
        cur = job_read_live(js, live);
        json_object_put(live);
        if (cur < 0)
            return;
    }
    js->pre_put = 0;
    /* The live status is what this job last published: a sync or cycle
     * that comes to the same material fields has nothing to write, and
     * builds no status to find that out (at 10k jobs a restart built
     * every one, twice). Taken before anything below changes st; a
     * status in an older form is left to be rewritten. */
    if (cur == 1) {
        job_published_as(o, js);
        job_group_said_load(s, js);
    }
    job_recover_admission(s, o, j, js);
    if ((js->st.phase == AIQ_PHASE_ADMITTED || js->st.phase == AIQ_PHASE_RUNNING) &&
        js->st.attempts > 0) {
        /* This run's GPU time counts from its admission (see seg_t). */
        js->seg_t = js->st.admitted_at;
        js->st.current_replicas = js->st.nplacement;
        /* Re-record the attempt (the same time and placement when the
         * store has it). */
        char *pj = job_place_json(js);
        (void)srv_rec(s, store_attempt_begin(s->db, j->meta.uid, js->st.attempts,
                            js->st.admitted_at ? js->st.admitted_at : job_now(), pj, NULL), "attempt_begin");
        free(pj);
    }
    if (job_recover_teardown(s, o, j, js) != 0) {
        OPLOG(&s->log, OPLOG_ERROR, "job_not_loaded", o->key, srv__rv(opcache_raw(o)),
              "msg=\"out of memory for its released pods' placement; the next sync loads it again\"");
        return;
    }
    if ((js->st.phase == AIQ_PHASE_ADMITTED || js->st.phase == AIQ_PHASE_RUNNING) && !js->teardown)
        job_recover_growth(s, o, j, js);
    job_load_preemptions(s, o, j, js);
    job_replayed_decision(s->replay, j->meta.uid, js);
    js->loaded = true;
    /* One line a job only at debug: a restart loads every job (100k
     * lines, 0.2 s, at 100k); the ready line says how many. */
    if (s->replay)
        s->replay->loaded++;
    OPLOG(&s->log, OPLOG_DEBUG, "job_loaded", o->key, srv__rv(opcache_raw(o)),
          "phase=%s attempts=%d placement=%d", aiq_phase_name(js->st.phase),
          js->st.attempts, js->st.nplacement);
}

/* predict_runtime, or during a restart's replay the answer an earlier
 * job with the same query got. A job the replay finds finished adds to
 * the history meanwhile; which of the other jobs saw it hung on the
 * cache's order before, and now on which job asked first. */
static aiq_rc job_predict(struct server *s, const struct pred_query *q, struct pred_result *pr) {
    struct lh_table *memo = s->replay ? s->replay->pred : NULL;
    char key[6 * (AIQ_MAX_STRING + 1) + 64];
    const char *none = "\x1e"; /* absent, told apart from "" */
    if (!memo)
        return predict_runtime(s->db, q, pr, NULL);
    int kn = snprintf(key, sizeof key, "%s\x1f%s\x1f%s\x1f%s\x1f%.17g\x1f%d",
                      q->user ? q->user : none, q->group ? q->group : none,
                      q->model ? q->model : none, q->task ? q->task : none, q->estimate_s,
                      q->size);
    if (kn < 0 || (size_t)kn >= sizeof key) /* a cut key could match another query */
        return predict_runtime(s->db, q, pr, NULL);
    struct pred_result *hit = NULL;
    if (lh_table_lookup_ex(memo, key, (void **)&hit)) {
        *pr = *hit;
        return AIQ_OK;
    }
    aiq_rc rc = predict_runtime(s->db, q, pr, NULL);
    char *k = rc == AIQ_OK ? strdup(key) : NULL;
    struct pred_result *v = k ? malloc(sizeof *v) : NULL;
    if (v) {
        *v = *pr;
        if (lh_table_insert(memo, k, v) == 0)
            return rc;
    }
    free(k); /* not kept (ENOMEM): the next such job asks again */
    free(v);
    return rc;
}

/* Records the job's spec in the store once per generation (and its runtime
 * prediction); the arrival is journaled by job__journal_arrival. */
static void job_record(struct server *s, struct opcache_obj *o,
                       const struct aiq_aijob *j, struct opjob *js, double now) {
    aiq_err e;
    aiq_err_clear(&e);
    int64_t gen = srv__generation(opcache_raw(o));
    if (js->recorded_gen == gen)
        return;
    /* The row first: after a restart it says all of it already for every
     * job, and the upsert is left out (its own check is a second seek). */
    const char *group = js->st.group_;
    struct store_job sj;
    bool have = store_job_get(s->db, j->meta.uid, &sj, NULL) == AIQ_OK;
    if ((!have || !store_job_row_is(&sj, j, group)) &&
        store_upsert_job(s->db, j, group, &e) != AIQ_OK)
        OPLOG(&s->log, OPLOG_WARN, "store_error", o->key, NULL, "op=upsert_job msg=\"%s\"",
              e.message);
    js->recorded_gen = gen;
    /* Runtime from history (same user, model and size, the user's
     * estimate corrected, else the group's, else everyone's), once per
     * spec change. */
    struct pred_query pq = {j->spec.user, opstatus_group(&js->st), j->spec.model_name, j->spec.task_type,
                            j->spec.estimated_runtime_s,
                            j->spec.replicas * j->spec.resources.gpus};
    struct pred_result pr;
    if (job_predict(s, &pq, &pr) == AIQ_OK && pr.runtime_s > 0) {
        js->predicted_s = pr.runtime_s;
        OPLOG(&s->log, OPLOG_DEBUG, "runtime_predicted", o->key, srv__rv(opcache_raw(o)),
              "seconds=%.0f source=%s samples=%d", pr.runtime_s, pred_source_name(pr.source),
              pr.samples);
    }
    /* Neither is the upsert's to change. */
    if (have) {
        js->attained_gpu_s = sj.gpu_seconds;
        /* After a restart: the arrival is in the journal already. */
        if (sj.arrival_journaled > 0)
            js->journaled = true;
    }
}

/* The AIJob's spec as JSON text in buf (cap bytes), with the template,
 * which the cache keeps only as a string (srv__drop_template), back as
 * its last member. The cache keeps the spec as compact text too
 * (srv_parse), which is taken as it is. Returns buf, or "null" when the
 * object has no spec or the text does not fit. */
static const char *job_spec_text(struct opcache_obj *o, const struct aiq_aijob *j,
                                 char *buf, size_t cap) {
    /* Stashed (srv_parse): its text as it is, nothing parsed. */
    const char *txt = opcache_stashed(o, "spec");
    json_object *spec = txt ? NULL : opcache_member(o, "spec");
    if (spec)
        txt = json_object_to_json_string_ext(spec, JSON_C_TO_STRING_PLAIN);
    size_t n = txt ? strlen(txt) : 0;
    int w = -1;
    const char *tj = j->spec.template_json;
    if (n >= 2 && txt[n - 1] == '}')
        w = tj ? snprintf(buf, cap, "%.*s%s\"template\":%s}", (int)(n - 1), txt,
                          n > 2 ? "," : "", tj)
               : snprintf(buf, cap, "%s", txt);
    json_object_put(spec);
    return (w < 0 || (size_t)w >= cap) ? "null" : buf;
}

/* Journals the job's arrival once it is in the queue (or past it): the
 * spec, plus "created" (metadata.creationTimestamp) and "queued" (the
 * queue entry the cycle counts wait.hours from), both unix seconds printed
 * so they read back exactly, for an exact replay. A Pending or Suspended
 * job waits: no cycle has seen it yet, and its queue time is not known. */
static void job__journal_arrival(struct server *s, struct opcache_obj *o,
                                 const struct aiq_aijob *j, struct opjob *js, double now) {
    if (js->journaled)
        return;
    if (js->st.queued_at <= 0 && (js->st.phase == AIQ_PHASE_NONE ||
                                  js->st.phase == AIQ_PHASE_PENDING ||
                                  js->st.phase == AIQ_PHASE_SUSPENDED))
        return;
    char spec[STORE_MAX_JSON - 600], payload[STORE_MAX_JSON];
    double queued = js->st.queued_at > 0 ? js->st.queued_at : j->meta.creation_time;
    snprintf(payload, sizeof payload,
             "{\"uid\":\"%s\",\"group\":\"%s\",\"created\":%.17g,\"queued\":%.17g,"
             "\"spec\":%s}",
             j->meta.uid, opstatus_group(&js->st), j->meta.creation_time, queued,
             job_spec_text(o, j, spec, sizeof spec));
    /* The job's row remembers it (read back by job_record after a
     * restart); a crash between the two journals it once more, which a
     * replay takes as the same arrival (sim_replay.c keeps a uid's first). */
    if (srv_rec(s, store_journal_event(s->db, now, STORE_EV_JOB_ARRIVAL, o->key, payload, NULL),
                "journal_event"))
        (void)srv_rec(s, store_job_mark(s->db, j->meta.uid, STORE_JOB_JOURNALED, now, NULL),
                      "job_mark"); /* failure: logged by srv_rec; journaled again after a restart */
    js->journaled = true;
}

/* Emits the Event of a job's Group condition (reason NoGroup or
 * GroupConflict) once while the condition lasts: job_event alone would
 * tell it again at every sync after any other Event (Queued), and in a
 * burst those repeats filled the Event queue, crowding out the rest. */
static void job_group_event(struct server *s, struct opcache_obj *o, struct opjob *js,
                            const char *type, const char *reason, const char *msg) {
    uint8_t c = job_group_code(reason);
    if (js->group_said == c)
        return;
    js->group_said = c;
    job_event(s, o, js, type, reason, msg);
}

/* A job waiting for its namespace's Group: remembers why (applied to
 * the status by job_apply_hold at the end of each sync) and says so in
 * an Event once. */
static void job_hold(struct server *s, struct opcache_obj *o, struct opjob *js,
                     const char *reason, const char *msg) {
    js->group_hold = true;
    struct opjob_cold *jc = job_cold(js);
    if (jc) {
        snprintf(jc->hold_reason, sizeof jc->hold_reason, "%s", reason);
        snprintf(jc->hold_msg, sizeof jc->hold_msg, "%s", msg);
    } else {
        OPLOG(&s->log, OPLOG_ERROR, "job_state_dropped", o->key, srv__rv(opcache_raw(o)),
              "what=hold_reason reason=%s msg=\"out of memory\"", reason);
    }
    job_group_event(s, o, js, "Warning", reason, msg);
}

/* A held job that waits in the queue's phases shows why, with no
 * position; the cycle leaves it out. */
static void job_apply_hold(struct opjob *js) {
    if (!js->group_hold ||
        (js->st.phase != AIQ_PHASE_QUEUED && js->st.phase != AIQ_PHASE_PENDING))
        return;
    js->st.position = 0;
    js->st.estimated_start = 0;
    /* Without its cold part (out of memory at job_hold, logged there)
     * the status still says it waits for a Group. */
    snprintf(js->st.reason, sizeof js->st.reason, "%s",
             js->cold ? js->cold->hold_reason : "NoGroup");
    /* ENOMEM: the earlier message stays */
    (void)opstatus_set_message(&js->st,
                               js->cold ? js->cold->hold_msg : "waits for its namespace's Group");
}

/* A job whose namespace no Group claims, as --ungrouped (mode) says:
 * run without quota or budget, or wait for a Group (the default Group
 * named by mode, when it does not exist). */
static void job__no_group(struct server *s, struct opcache_obj *o, struct opjob *js,
                          const char *ns, const char *mode) {
    char msg[512];
    if (!strcmp(mode, "run")) {
        job_group_event(s, o, js, "Normal", "NoGroup",
                        "no Group claims this namespace: the job runs with no quota or budget "
                        "(--ungrouped=run)");
        return;
    }
    if (strcmp(mode, "wait") != 0)
        snprintf(msg, sizeof msg,
                 "no Group claims namespace %s and the default Group %s (--ungrouped) does "
                 "not exist", ns, mode);
    else
        snprintf(msg, sizeof msg,
                 "no Group claims namespace %s: its jobs wait until a Group lists it in "
                 "spec.namespaces (or the operator runs with --ungrouped)", ns);
    job_hold(s, o, js, "NoGroup", msg);
}

/* Decides the job's group from its namespace (docs/operator.md "Jobs and
 * Groups"): the one Group claiming it; with none, --ungrouped says wait,
 * run without quota (said in an Event), or use the named Group; with two
 * or more, the job waits and says which. A waiting job keeps its phase
 * and is left out of the queue (opjob.group_hold). Returns false when
 * out of memory for the group's name (logged; js keeps the group it had,
 * and the sync stops there). */
static bool job__group(struct server *s, struct opcache_obj *o, const struct aiq_aijob *j,
                       struct opjob *js) {
    const struct aiq_group *g[2];
    const char *ns = j->meta.namespace_, *mode = job_ungrouped(s);
    char msg[512];
    int n = srv__ns_claims(s, ns, g);
    const char *group = NULL;
    if (n == 1)
        group = g[0]->meta.name;
    else if (n == 0 && strcmp(mode, "run") != 0 && strcmp(mode, "wait") != 0) {
        const struct opcache_obj *go = opcache_get(s->cache[OPK_GROUP], mode);
        if (go && go->parse_ok && go->parsed)
            group = mode;
    }
    if (opstatus_set_group(&js->st, group) != 0) {
        OPLOG(&s->log, OPLOG_ERROR, "job_sync_stopped", o->key, srv__rv(opcache_raw(o)),
              "group=%s msg=\"out of memory for its group's name; the next sync tries again\"",
              group);
        js->resync = true;
        return false;
    }
    bool was = js->group_hold;
    js->group_hold = false;
    /* With one Group claiming the namespace, or the default Group
     * (--ungrouped=NAME), the job is in it (set above). */
    if (n >= 2) {
        snprintf(msg, sizeof msg,
                 "namespace %s is claimed by Groups %s and %s%s: its jobs wait until only one "
                 "claims it", ns, g[0]->meta.name, g[1]->meta.name, n > 2 ? " (and others)" : "");
        job_hold(s, o, js, "GroupConflict", msg);
    } else if (!group) {
        job__no_group(s, o, js, ns, mode);
    } else {
        js->group_said = 0; /* in a Group: a later loss of it is told again */
    }
    if (was && !js->group_hold && js->st.phase == AIQ_PHASE_QUEUED)
        job_phase(js, AIQ_PHASE_QUEUED, "Queued", "waiting for the next cycle");
    return true;
}

/* ---- preemption and elastic resizing (actions.c drives these) ---------- */

/* Preempts o for by; see server.h. */
int job_preempt(struct server *s, struct opcache_obj *o, struct opcache_obj *by,
                const char *reason, const char *why, double now) {
    struct opjob *js = job_state(o);
    const struct aiq_aijob *j = o->parse_ok ? o->parsed : NULL;
    if (!js || !j || js->teardown ||
        (js->st.phase != AIQ_PHASE_ADMITTED && js->st.phase != AIQ_PHASE_RUNNING))
        return -1;
    const char *bykey = by ? by->key : "";
    /* This run's GPU time counts until the last pod is gone. */
    js->run_gpu_s = job_run_gpu_s(s, j, js, js->st.nplacement, now);
    js->seg_t = now;
    js->teardown = true;
    js->teardown_to = AIQ_PHASE_QUEUED;
    js->preempted = true;
    js->released = false;
    js->held = js->st.nplacement;
    js->stopping = js->grow_from = js->grow_start = 0;
    js->backoff_until = 0;
    job_preempt_note(s, o, js, bykey, reason);
    js->st.nplacement = 0;
    js->st.current_replicas = 0;
    js->st.admitted_at = js->st.started_at = js->st.estimated_start = 0;
    js->st.position = 0;
    js->st.preemptions++;
    char xm[256];
    snprintf(xm, sizeof xm, "preempted by %.200s: %.40s", *bykey ? bykey : "the queue", why);
    job_xc_set(s, o, js, OPST_XC_PREEMPTED, reason, xm);
    char msg[512];
    snprintf(msg, sizeof msg, "preempted by %.200s (%.80s); its pods stop gracefully, then it goes "
             "back to the queue (preemption %d, not counted against backoffLimit)",
             *bykey ? bykey : "the queue", why, js->st.preemptions);
    job_phase(js, AIQ_PHASE_QUEUED, reason, msg);
    srv__event_of(s, o, "Warning", "Preempted", msg);
    snprintf(js->last_event, sizeof js->last_event, "%s", "Preempted");
    opmetrics_preempted_inc(s->metrics, reason);
    OPLOG(&s->log, OPLOG_WARN, "job_preempted", o->key, srv__rv(opcache_raw(o)),
          "by=%s reason=%s replicas=%d preemptions=%d", *bykey ? bykey : "-", reason, js->held,
          js->st.preemptions);
    actions_stop_pods(s, j, 0, job_max_pods(j), bykey, reason);
    job__publish(s, o, js, now);
    return 0;
}

/* The victim's last pod is gone: it is back in the queue. */
static void job_preempt_done(struct server *s, struct opcache_obj *o,
                             const struct aiq_aijob *j, struct opjob *js, double now) {
    double gpu_s = job_run_gpu_s(s, j, js, js->held, now);
    bool counted = false;
    aiq_err e;
    aiq_err_clear(&e);
    if (js->st.attempts > 0 &&
        store_attempt_finish(s->db, j->meta.uid, js->st.attempts, now, gpu_s, "Preempted",
                             &counted, &e) != AIQ_OK)
        OPLOG(&s->log, OPLOG_WARN, "store_error", o->key, NULL, "op=attempt_finish msg=\"%s\"",
              e.message);
    if (counted)
        js->attained_gpu_s += gpu_s;
    js->seg_t = js->run_gpu_s = 0;
    js->held = 0;
    js->preempted = false;
    js->st.queued_at = now;
    /* The hourly limit counts preemptions from here, the attempt's end
     * (what job_load reads back after a restart, and when aiq-sim
     * counts them). */
    js->pre_t[js->npre_t++ % 8] = now;
    /* Journaled when the room is really free: replay stops the victim
     * here (sim_replay.c add_stop). */
    char payload[640];
    snprintf(payload, sizeof payload,
             "{\"uid\":\"%.100s\",\"queued\":%.17g,\"preemptions\":%d,"
             "\"attained_gpu_hours\":%.17g,\"by\":\"%.200s\"}",
             j->meta.uid, now, js->st.preemptions, js->attained_gpu_s / 3600.0,
             job_preempted_by(js, ""));
    (void)srv_rec(s, store_journal_event(s->db, now, STORE_EV_JOB_PREEMPTED, o->key, payload, NULL),
                  "journal_event");
    (void)srv_rec(s, store_job_mark(s->db, j->meta.uid, STORE_JOB_QUEUED, now, NULL), "job_mark");
    char msg[512];
    snprintf(msg, sizeof msg, "preempted by %.200s; its pods are gone and it waits in the queue "
             "again (attained service kept)", job_preempted_by(js, "the queue"));
    job_phase(js, AIQ_PHASE_QUEUED, job_preempt_why(js), msg);
    OPLOG(&s->log, OPLOG_INFO, "job_requeued", o->key, srv__rv(opcache_raw(o)),
          "reason=%s run_gpu_s=%.1f counted=%d attained_gpu_s=%.1f", job_preempt_why(js), gpu_s,
          (int)counted, js->attained_gpu_s);
}

/* Shrinks o; see server.h. */
int job_shrink(struct server *s, struct opcache_obj *o, int size, struct opcache_obj *by,
               const char *why, double now) {
    struct opjob *js = job_state(o);
    const struct aiq_aijob *j = o->parse_ok ? o->parsed : NULL;
    if (!js || !j || js->teardown || js->stopping > 0 ||
        (js->st.phase != AIQ_PHASE_ADMITTED && js->st.phase != AIQ_PHASE_RUNNING) ||
        size < 1 || size >= js->st.nplacement)
        return -1;
    const char *bykey = by ? by->key : "";
    int old = js->st.nplacement;
    js->stopping = old - size;
    char xm[256];
    snprintf(xm, sizeof xm, "shrinking from %d to %d replicas for %.100s: %.70s", old, size,
             *bykey ? bykey : "the queue", why);
    job_xc_set(s, o, js, OPST_XC_RESIZED, "Shrunk", xm);
    srv__event_of(s, o, "Normal", "Shrunk", xm);
    opmetrics_resized_inc(s->metrics, "shrink");
    OPLOG(&s->log, OPLOG_INFO, "job_shrinking", o->key, srv__rv(opcache_raw(o)), "from=%d to=%d by=%s",
          old, size, *bykey ? bykey : "-");
    actions_stop_pods(s, j, size, old, bykey, "Shrunk");
    js->st.current_replicas = size;
    job__publish(s, o, js, now);
    return 0;
}

/* The shrunk replicas' pods are gone: the job's size is the new one. */
static void job_shrink_done(struct server *s, struct opcache_obj *o,
                            const struct aiq_aijob *j, struct opjob *js, double now) {
    js->run_gpu_s = job_run_gpu_s(s, j, js, js->st.nplacement, now);
    js->seg_t = now;
    js->st.nplacement -= js->stopping;
    js->stopping = 0;
    js->st.current_replicas = js->st.nplacement;
    char payload[256];
    snprintf(payload, sizeof payload, "{\"uid\":\"%.100s\",\"replicas\":%d}", j->meta.uid,
             js->st.nplacement);
    (void)srv_rec(s, store_journal_event(s->db, now, STORE_EV_JOB_RESIZED, o->key, payload, NULL),
                  "journal_event");
    char xm[256];
    snprintf(xm, sizeof xm, "shrunk to %d replicas", js->st.nplacement);
    job_xc_set(s, o, js, OPST_XC_RESIZED, NULL, xm);
    actions_annotate_size(s, j, js->st.nplacement);
    OPLOG(&s->log, OPLOG_INFO, "job_resized", o->key, srv__rv(opcache_raw(o)), "replicas=%d",
          js->st.nplacement);
}

/* Pods of replicas [from, to) whose phase is Running or Succeeded. */
static int job_running_in(struct server *s, const struct aiq_aijob *j, int from, int to) {
    int n = 0;
    for (int i = from; i < to; i++) {
        struct opcache_obj *p = job_pod_at(s, j, i);
        const char *ph = p ? aiq_jpath_str(opcache_raw(p), "status.phase") : NULL;
        n += ph && (strcmp(ph, "Running") == 0 || strcmp(ph, "Succeeded") == 0);
    }
    return n;
}

/* The replicas a growth added did not all run within --start-timeout
 * (no room after all: say a pod aiq does not manage took it): they are
 * stopped again, as a shrink back to the size before (job_resized once
 * they are gone); the job itself runs on. */
/* Remembers the nodes of replicas [from, to) as ones its growth keeps
 * off for --grow-backoff (the queue's q_job.grow_avoid, cycle.c). Out of
 * memory: not remembered (logged; growth may try them again). */
static void job_grow_avoid(struct server *s, struct opcache_obj *o, struct opjob *js, int from,
                           int to, double now) {
    if (!js->grow_avoid && !(js->grow_avoid = calloc(1, sizeof *js->grow_avoid))) {
        OPLOG(&s->log, OPLOG_ERROR, "job_grow_avoid_failed", o->key, srv__rv(opcache_raw(o)),
              "err=\"out of memory\"");
        return;
    }
    struct opgrow_avoid *a = js->grow_avoid;
    if (a->until <= now)
        a->n = 0; /* the last back-off is over */
    a->until = now + s->flags.grow_backoff_s;
    for (int i = from; i < to && i < js->st.nplacement; i++) {
        bool have = false;
        for (int k = 0; k < a->n && !have; k++)
            have = strcmp(a->node[k], js->place[i].node) == 0;
        if (have)
            continue;
        if (a->n == OP_GROW_AVOID) { /* the oldest goes */
            memmove(a->node[0], a->node[1], sizeof a->node[0] * (OP_GROW_AVOID - 1));
            a->n--;
        }
        snprintf(a->node[a->n++], sizeof a->node[0], "%s", js->place[i].node);
    }
}

static void job__grow_timeout(struct server *s, struct opcache_obj *o,
                              const struct aiq_aijob *j, struct opjob *js, double now) {
    int old = js->grow_start, cur = js->st.nplacement;
    job_grow_avoid(s, o, js, old, cur, now);
    js->stopping = cur - old;
    js->grow_from = js->grow_start = 0;
    js->st.current_replicas = old;
    char xm[256];
    snprintf(xm, sizeof xm, "replicas %d..%d did not all start within %.0fs: back to %d", old,
             cur - 1, s->flags.start_timeout_s, old);
    job_xc_set(s, o, js, OPST_XC_RESIZED, "GrowTimedOut", xm);
    srv__event_of(s, o, "Warning", "GrowTimedOut", xm);
    char nodes[256] = "-";
    for (int k = 0, len = 0; js->grow_avoid && k < js->grow_avoid->n && len < (int)sizeof nodes; k++)
        len += snprintf(nodes + len, sizeof nodes - (size_t)len, "%s%s", k ? "," : "",
                        js->grow_avoid->node[k]);
    OPLOG(&s->log, OPLOG_WARN, "job_grow_timeout", o->key, srv__rv(opcache_raw(o)),
          "from=%d back_to=%d avoid=%s avoid_for=%.0fs", cur, old, nodes, s->flags.grow_backoff_s);
    actions_stop_pods(s, j, old, cur, "", "GrowTimedOut");
}

/* A growth in flight: done once every grown replica runs (released is
 * not enough: kube-scheduler may still refuse them), undone when they do
 * not all run within --start-timeout of the growth, forgotten when a
 * shrink took them away. */
static void job_grow_check(struct server *s, struct opcache_obj *o,
                           const struct aiq_aijob *j, struct opjob *js, double now) {
    if (js->grow_start <= 0 || js->stopping > 0)
        return;
    int n = js->st.nplacement;
    if (js->grow_start >= n || job_running_in(s, j, js->grow_start, n) == n - js->grow_start)
        js->grow_start = 0;
    else if (now - js->grow_t > s->flags.start_timeout_s)
        job__grow_timeout(s, o, j, js, now);
}

/* Grows o; see server.h. */
int job_grow(struct server *s, struct opcache_obj *o, const struct q_input *in,
             const struct q_place *add, int nplace, int size, double now) {
    struct opjob *js = job_state(o);
    const struct aiq_aijob *j = o->parse_ok ? o->parsed : NULL;
    int old = js ? js->st.nplacement : 0;
    if (!js || !j || js->teardown || js->stopping > 0 || js->grow_from > 0 || js->grow_start > 0 ||
        (js->st.phase != AIQ_PHASE_ADMITTED && js->st.phase != AIQ_PHASE_RUNNING) ||
        old < 1 || nplace < 1 || old + nplace != size || size > job_max_pods(j))
        return -1;
    if (job_place_reserve(js, size) != 0)
        return -1;
    for (int k = 0; k < nplace; k++) {
        const struct q_place *qp = &add[k];
        struct opst_place *p = &js->place[old + k];
        if (qp->node < 0 || qp->node >= in->nnodes)
            return -1;
        memset(p, 0, sizeof *p);
        p->replica = old + k;
        snprintf(p->node, sizeof p->node, "%s", in->nodes[qp->node].name);
        for (int g = 0; g < 32 && p->ngpus < AIQ_MAX_GPUS_PER_REPLICA; g++)
            if (qp->gpu_mask & (1u << g))
                p->gpus[p->ngpus++] = g;
        p->gpu_memory_mib = qp->gpu_mem_mib > 0 ? qp->gpu_mem_mib
                                                : j->spec.resources.gpu_memory_mib;
    }
    if (js->seg_t > 0)
        js->run_gpu_s = job_run_gpu_s(s, j, js, old, now);
    js->seg_t = now;
    js->grow_from = js->grow_start = old;
    js->grow_t = now;
    js->st.nplacement = size;
    js->st.placement = js->place;
    js->st.current_replicas = size;
    char xm[256];
    snprintf(xm, sizeof xm, "grown from %d to %d replicas into idle GPUs", old, size);
    job_xc_set(s, o, js, OPST_XC_RESIZED, "Grown", xm);
    /* Recorded (journal, status) before any new pod exists; the pods are
     * released by a later sync once the status holds the placement. */
    char payload[256];
    snprintf(payload, sizeof payload, "{\"uid\":\"%.100s\",\"replicas\":%d}", j->meta.uid, size);
    (void)srv_rec(s, store_journal_event(s->db, now, STORE_EV_JOB_RESIZED, o->key, payload, NULL),
                  "journal_event");
    srv__event_of(s, o, "Normal", "Grown", xm);
    opmetrics_resized_inc(s->metrics, "grow");
    OPLOG(&s->log, OPLOG_INFO, "job_growing", o->key, srv__rv(opcache_raw(o)), "from=%d to=%d", old,
          size);
    job_create_range(s, o, j, old, size, js->st.attempts);
    job__publish(s, o, js, now);
    return 0;
}

/* An AIJob that does not parse: Rejected with the field and the value. */
static void job_sync_invalid(struct server *s, struct opcache_obj *o, struct opjob *js,
                             double now) {
    if (js->st.phase != AIQ_PHASE_REJECTED ||
        strcmp(opstatus_message(&js->st), opcache_perr(o)->message)) {
        opstatus_release(&js->st);
        memset(&js->st, 0, sizeof js->st);
        js->loaded = true;
        job_phase(js, AIQ_PHASE_REJECTED, "Invalid", opcache_perr(o)->message);
        job_event(s, o, js, "Warning", "Rejected", opcache_perr(o)->message);
        OPLOG(&s->log, OPLOG_WARN, "job_rejected", o->key, srv__rv(opcache_raw(o)),
              "field=%s msg=\"%s\"", opcache_perr(o)->field, opcache_perr(o)->message);
    }
    job__publish(s, o, js, now);
}

/* Loads what the store keeps, sizes the placement, and records the job:
 * group, GPUs, first phase, arrival, predicted runtime. False when the
 * sync cannot go on this turn (store not loaded, ENOMEM). */
static bool job_sync_prepare(struct server *s, struct opcache_obj *o,
                             const struct aiq_aijob *j, struct opjob *js, double now) {
    if (!js->loaded)
        job_load(s, o, j, js);
    if (!js->loaded)
        return false;
    if (!job__group(s, o, j, js))
        return false;
    js->st.total_gpus = job_total_gpus(s, j);
    if (js->st.phase == AIQ_PHASE_NONE)
        job_phase(js, AIQ_PHASE_PENDING, "Created", "creating the gated pods");
    job_record(s, o, j, js, now);
    job__journal_arrival(s, o, j, js, now);
    js->st.predicted_runtime_s = js->predicted_s > 0 ? js->predicted_s : j->spec.estimated_runtime_s;
    return true;
}

/* The queue held a failed or requeued attempt's GPUs (passed as
 * terminating) until its pods were gone, now: journaled so a replay frees
 * them here rather than at the job_departure / job_requeue of the failure
 * (sim_replay.c "job_released"). */
static void job_journal_released(struct server *s, struct opcache_obj *o,
                                 const struct aiq_aijob *j, const struct opjob *js, double now) {
    char payload[192];
    snprintf(payload, sizeof payload, "{\"uid\":\"%.100s\",\"attempt\":%d}", j->meta.uid,
             js->st.attempts);
    (void)srv_rec(s, store_journal_event(s->db, now, STORE_EV_JOB_RELEASED, o->key, payload, NULL),
                  "journal_event");
}

/* A teardown in progress: stops the pods still there (true: the sync is
 * done for this turn), else finishes it into teardown_to. */
static bool job_sync_teardown(struct server *s, struct opcache_obj *o,
                              const struct aiq_aijob *j, struct opjob *js,
                              const struct gang *g, double now) {
    if (!js->teardown)
        return false;
    if (g->exist > 0) {
        if (js->preempted)
            actions_stop_pods(s, j, 0, job_max_pods(j), job_preempted_by(js, ""),
                              job_preempt_why(js));
        else
            job__delete_pods(s, j, job_max_pods(j));
        job__publish(s, o, js, now);
        return true;
    }
    js->teardown = false;
    if (js->preempted)
        job_preempt_done(s, o, j, js, now); /* reads held */
    else if (js->held > 0 &&
             (js->teardown_to == AIQ_PHASE_QUEUED || js->teardown_to == AIQ_PHASE_FAILED))
        job_journal_released(s, o, j, js, now);
    js->held = 0;
    js->st.phase = js->teardown_to;
    return false;
}

/* Elastic resizes in flight of an admitted or running job: stopped
 * replicas gone, new ones made; *g is read again. */
static void job_sync_resize(struct server *s, struct opcache_obj *o,
                            const struct aiq_aijob *j, struct opjob *js, struct gang *g,
                            double now) {
    if (js->stopping > 0 &&
        job_count_pods(s, j, js->st.nplacement - js->stopping, js->st.nplacement) == 0)
        job_shrink_done(s, o, j, js, now);
    job_grow_check(s, o, j, js, now);
    if (js->grow_from > 0)
        (void)job_create_range(s, o, j, js->grow_from, js->st.nplacement,
                               js->st.attempts); /* a pod that cannot be built: logged */
    job_gang(s, j, js, js->st.attempts, g);
    if (js->grow_from > 0 && g->gated == 0 && g->exist == g->n) {
        js->grow_from = 0; /* every new replica released */
        actions_annotate_size(s, j, js->st.nplacement);
    }
}

/* Suspend (true: the sync is done for this turn) and resume. */
static bool job_sync_suspend(struct server *s, struct opcache_obj *o,
                             const struct aiq_aijob *j, struct opjob *js, double now) {
    if (j->spec.suspend) {
        if (js->st.phase == AIQ_PHASE_ADMITTED || js->st.phase == AIQ_PHASE_RUNNING) {
            job_teardown(s, o, j, js, now, "Suspended", "suspended", true);
        } else if (js->st.phase != AIQ_PHASE_SUSPENDED) {
            js->st.position = 0;
            js->st.estimated_start = 0;
            job_phase(js, AIQ_PHASE_SUSPENDED, "Suspended",
                      "spec.suspend is true: the job holds its place out of the queue");
            job_event(s, o, js, "Normal", "Suspended", opstatus_message(&js->st));
        }
        job__publish(s, o, js, now);
        return true;
    }
    if (js->st.phase == AIQ_PHASE_SUSPENDED) {
        js->st.queued_at = now;
        job_phase(js, AIQ_PHASE_QUEUED, "Resumed", "resumed: waiting for the next cycle");
        job_event(s, o, js, "Normal", "Resumed", opstatus_message(&js->st));
    }
    return false;
}

/* Pending or Queued: its gated pods made, then Queued; Rejected when
 * they can never be made. */
static void job_sync_waiting(struct server *s, struct opcache_obj *o,
                             const struct aiq_aijob *j, struct opjob *js,
                             const struct gang *g, double now) {
    if (js->cold && js->cold->pod_refused[0]) {
        /* Its pods can never be made (see opjob_cold.pod_refused). */
        const char *why = js->cold->pod_refused;
        js->st.position = 0;
        js->st.estimated_start = 0;
        job_phase(js, AIQ_PHASE_REJECTED, "PodRefused", why);
        job_event(s, o, js, "Warning", "Rejected", why);
        OPLOG(&s->log, OPLOG_WARN, "job_rejected", o->key, srv__rv(opcache_raw(o)),
              "field=spec.template msg=\"%s\"", why);
        if (g->exist > 0)
            job__delete_pods(s, j, job_max_pods(j));
        return;
    }
    if (job_create_pods(s, o, j) == 0 && js->st.phase == AIQ_PHASE_PENDING &&
        job_pods_on_server(s, j)) {
        js->st.queued_at = now;
        job_phase(js, AIQ_PHASE_QUEUED, "Queued", "waiting for the next cycle");
        (void)srv_rec(s, store_job_mark(s->db, j->meta.uid, STORE_JOB_QUEUED, now, NULL),
                      "job_mark");
        job__journal_arrival(s, o, j, js, now);
        OPLOG(&s->log, OPLOG_INFO, "job_queued", o->key, srv__rv(opcache_raw(o)), "replicas=%d",
              (int)j->spec.replicas);
        job_event(s, o, js, "Normal", "Queued", "all replicas created with the admission gate");
    }
}

/* An admitted or running gang that lost a node, a pod that failed, or
 * pods that went: torn down (true), else false. */
static bool job_sync_lost(struct server *s, struct opcache_obj *o, const struct aiq_aijob *j,
                          struct opjob *js, const struct gang *g, double now) {
    char msg[512];
    if (job_node_loss(s, o, j, js, g, now))
        return true;
    if (g->failed > 0) {
        snprintf(msg, sizeof msg, "pod %s failed", g->failed_pod);
        job_teardown(s, o, j, js, now, "PodFailed", msg, false);
        return true;
    }
    if (g->exist < g->n) {
        snprintf(msg, sizeof msg, "%d of %d pods disappeared", g->n - g->exist, g->n);
        job_teardown(s, o, j, js, now, "PodMissing", msg, false);
        return true;
    }
    return false;
}

/* Admitted: Running once every pod runs; torn down when a pod fails or
 * goes, the scheduler refuses the placement, or the start times out; a
 * release left half done is finished. */
static void job_sync_admitted(struct server *s, struct opcache_obj *o,
                              const struct aiq_aijob *j, struct opjob *js, const struct gang *g,
                              double now) {
    char msg[512];
    if (job_sync_lost(s, o, j, js, g, now))
        return;
    if (g->newer > 0) {
        /* A restart between a teardown's pod re-creation and its
         * status write: these pods are for the next attempt, which
         * was never admitted. Releasing them would run them as this
         * one. */
        snprintf(msg, sizeof msg, "%d of %d pods were recreated for attempt %d",
                 g->newer, g->n, js->st.attempts + 1);
        job_teardown(s, o, j, js, now, "PodMissing", msg, false);
    } else if (g->running + g->succeeded == g->n) {
        js->st.started_at = now;
        job_phase(js, AIQ_PHASE_RUNNING, "Running", "");
        (void)opstatus_set_messagef(&js->st, /* ENOMEM: no message */ "%s %d replica%s running",
                                    g->n == 1 ? "its" : "all", g->n, g->n == 1 ? "" : "s");
        (void)srv_rec(s, store_attempt_start(s->db, j->meta.uid, js->st.attempts, now, NULL),
                      "attempt_start");
        (void)srv_rec(s, store_job_mark(s->db, j->meta.uid, STORE_JOB_STARTED, now, NULL),
                      "job_mark");
        char payload[256];
        snprintf(payload, sizeof payload,
                 "{\"uid\":\"%.100s\",\"attempt\":%d,\"started\":%.17g}",
                 j->meta.uid, js->st.attempts, now);
        (void)srv_rec(s, store_journal_event(s->db, now, STORE_EV_JOB_START, o->key, payload, NULL),
                      "journal_event");
        job_event(s, o, js, "Normal", "Running", opstatus_message(&js->st));
    } else if (js->st.admitted_at > 0 &&
               now - js->st.admitted_at >= s->flags.unsched_grace_s &&
               job_unschedulable(s, j, js->st.attempts, msg, sizeof msg)) {
        /* The scheduler disagrees with the placement (capacity aiq
         * could not see): requeue now, not at the start timeout. */
        job_teardown(s, o, j, js, now, "Unschedulable", msg, false);
    } else if (js->st.admitted_at > 0 &&
               now - js->st.admitted_at > s->flags.start_timeout_s) {
        snprintf(msg, sizeof msg, "only %d of %d pods running %.0fs after admission",
                 g->running, g->n, now - js->st.admitted_at);
        job_teardown(s, o, j, js, now, "StartTimeout", msg, false);
    } else if (g->gated > 0 && !((struct opext *)o->ext)->dirty &&
               job_range_on_server(s, j, 0, g->n)) {
        /* A restart mid-release, or a failed patch: finish it with the
         * placement the status recorded. */
        job_release(s, o);
    }
}

/* Running: Succeeded once every pod has; torn down when a pod fails or
 * goes; an elastic job's new replicas released. */
static void job_sync_running(struct server *s, struct opcache_obj *o,
                             const struct aiq_aijob *j, struct opjob *js, const struct gang *g,
                             double now) {
    char msg[512];
    if (job_sync_lost(s, o, j, js, g, now))
        return;
    if (g->gated > 0 && js->grow_from > 0) {
        /* New replicas of an elastic job: released once their pods
         * exist and the status holds their placement. */
        if (!((struct opext *)o->ext)->dirty && job_range_on_server(s, j, 0, g->n))
            job_release(s, o);
    } else if (g->gated > 0) {
        /* A gate is never re-added, so these pods are new: a restart
         * between a teardown's pod re-creation and its status write. */
        snprintf(msg, sizeof msg, "%d of %d pods were recreated while the job ran",
                 g->gated, g->n);
        job_teardown(s, o, j, js, now, "PodMissing", msg, false);
    } else if (g->succeeded == g->n) {
        js->st.finished_at = now;
        snprintf(msg, sizeof msg, "%s %d replica%s succeeded", g->n == 1 ? "its" : "all",
                 g->n, g->n == 1 ? "" : "s");
        job_finish_attempt(s, j, js, now, "Succeeded");
        job_phase(js, AIQ_PHASE_SUCCEEDED, "Succeeded", msg);
        js->st.position = 0;
        job_store_final(s, j, js, now);
        job_event(s, o, js, "Normal", "Succeeded", msg);
    }
}

/* Syncs one AIJob; see server.h. Steps: prepare, teardown, resizes,
 * terminal phases, suspend/resume, then the phase's own work. */
void job_sync(struct server *s, struct opcache_obj *o, double now) {
    struct opjob *js = job_state(o);
    struct gang g;
    if (!js || !s->leading)
        return;
    js->resync = false;
    js->pods_ready = false;
    if (!o->parse_ok || !o->parsed) {
        job_sync_invalid(s, o, js, now);
        return;
    }
    const struct aiq_aijob *j = o->parsed;
    if (!job_sync_prepare(s, o, j, js, now))
        return;
    job_gang(s, j, js, js->st.attempts, &g);
    if (job_sync_teardown(s, o, j, js, &g, now))
        return;
    if (js->st.phase == AIQ_PHASE_ADMITTED || js->st.phase == AIQ_PHASE_RUNNING)
        job_sync_resize(s, o, j, js, &g, now);
    js->st.attained_gpu_hours = js->attained_gpu_s / 3600.0;
    switch (js->st.phase) {
    case AIQ_PHASE_SUCCEEDED:
    case AIQ_PHASE_FAILED:
    case AIQ_PHASE_REJECTED:
        job__publish(s, o, js, now);
        return;
    default:
        break;
    }
    if (job_sync_suspend(s, o, j, js, now))
        return;
    switch (js->st.phase) {
    case AIQ_PHASE_PENDING:
    case AIQ_PHASE_QUEUED: job_sync_waiting(s, o, j, js, &g, now); break;
    case AIQ_PHASE_ADMITTED: job_sync_admitted(s, o, j, js, &g, now); break;
    case AIQ_PHASE_RUNNING: job_sync_running(s, o, j, js, &g, now); break;
    default: break;
    }
    js->pods_ready = js->st.phase == AIQ_PHASE_QUEUED && job_pods_on_server(s, j);
    job_apply_hold(js);
    job__publish(s, o, js, now);
}

/* See server.h. */
bool job_size_ok(const struct aiq_aijob *j, int n) {
    if (j->spec.max_replicas > 0)
        return n >= j->spec.min_replicas && n <= j->spec.max_replicas;
    return n == j->spec.replicas;
}

/* See server.h: the rule cy__build_jobs passes running and held jobs by. */
bool job_counted_by_placement(const struct opjob *js, const struct aiq_aijob *j) {
    if (js->teardown)
        return js->held > 0;
    return (js->st.phase == AIQ_PHASE_ADMITTED || js->st.phase == AIQ_PHASE_RUNNING) &&
           job_size_ok(j, js->st.nplacement);
}

/* See server.h. */
bool job_sync_wanted_js(const struct opjob *js) {
    if (!js || !js->loaded || js->resync || js->teardown)
        return true;
    if (js->stopping > 0 || js->grow_from > 0 || js->grow_start > 0)
        return true; /* a resize in flight (and its start timeout) */
    if (js->node_lost_t > 0)
        return true; /* a lost node's timeout runs */
    switch (js->st.phase) {
    case AIQ_PHASE_NONE:
    case AIQ_PHASE_PENDING:
    case AIQ_PHASE_ADMITTED:
        return true;
    case AIQ_PHASE_QUEUED:
        return !js->pods_ready;
    default:
        return false;
    }
}

/* See server.h. */
void job_resync_all(struct server *s) {
    opcache *jc = s->cache[OPK_AIJOB];
    for (size_t i = 0; i < opcache_count(jc); i++) {
        struct opcache_obj *o = opcache_at(jc, i);
        struct opext *x = o->ext;
        if (x && x->job) {
            x->job->resync = true;
            opcache_state_changed(o);
        }
    }
}

/* Deletes the pods of a job; see server.h. */
void job_delete_pods(struct server *s, struct opcache_obj *o) {
    if (o->parse_ok && o->parsed)
        job__delete_pods(s, o->parsed, job_max_pods(o->parsed));
}

/* The AIJob reconciler: sync on change; on deletion, remove the pods and
 * keep the history. */
void reconcile_aijob(struct server *s, enum kube_event_type t,
                     struct opcache_obj *o, json_object *obj) {
    double now = job_now();
    if (t != KUBE_EV_DELETED) {
        job_sync(s, o, now);
        return;
    }
    if (!o || !s->leading)
        return;
    struct opext *x = o->ext;
    const struct aiq_aijob *j = o->parse_ok ? o->parsed : NULL;
    OPLOG(&s->log, OPLOG_INFO, "job_deleted", o->key, srv__rv(obj), "uid=%s",
          srv__uid(obj));
    if (!j)
        return;
    if (x && x->job)
        job_finish_attempt(s, j, x->job, now, "Deleted");
    (void)srv_rec(s, store_job_mark(s->db, j->meta.uid, STORE_JOB_DELETED, now, NULL), "job_mark");
    job__delete_pods(s, j, job_max_pods(j));
}
