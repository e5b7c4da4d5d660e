/* server.c -- the daemon's setup and teardown, event dispatch into the
 * caches and reconcilers, the cron, and the once-per-turn flush of status
 * patches and Events (see server.h). */
#include "operator/server.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json.h"
#include "operator/crashpoint.h"
#include "operator/kubeconfig.h"
#include "operator/manifest.h"
#include "operator/pod_lean.h"
#include "operator/pods.h"
#include "operator/release_exec.h"

/* The reconciler table, indexed by opkind. */
const struct reconciler srv_reconcilers[OPK__N] = {
    [OPK_AIJOB] = {OPK_AIJOB, "aijobs", AIQ_GROUP, AIQ_VERSION, "AIJob", true,
                   reconcile_aijob},
    [OPK_POLICY] = {OPK_POLICY, "queuepolicies", AIQ_GROUP, AIQ_VERSION,
                    "QueuePolicy", false, reconcile_policy},
    [OPK_GROUP] = {OPK_GROUP, "groups", AIQ_GROUP, AIQ_VERSION, "Group", false,
                   reconcile_group},
    [OPK_USERQUOTA] = {OPK_USERQUOTA, "userquotas", AIQ_GROUP, AIQ_VERSION,
                       "UserQuota", true, reconcile_userquota},
    [OPK_NODE] = {OPK_NODE, "nodes", "", "v1", "Node", false, reconcile_node},
    [OPK_POD] = {OPK_POD, "pods", "", "v1", "Pod", true, reconcile_pod},
};

double srv_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- parsed structs per kind ---------------------------------------------- */

static void srv_free_job(void *p) {
    aiq_aijob_deinit(p);
    free(p);
}
static void srv_free_policy(void *p) {
    aiq_policy_deinit(p);
    free(p);
}
static void srv_free_group(void *p) {
    aiq_group_deinit(p);
    free(p);
}
static void srv_free_uq(void *p) {
    aiq_userquota_deinit(p);
    free(p);
}

static void srv_free_ext(void *p) {
    struct opext *x = p;
    if (!x)
        return;
    json_object_put(x->want_status);
    if (x->job) {
        free(x->job->place);
        free(x->job->terms);
        opst_tnames_unref(x->job->tnames);
        opstatus_release(&x->job->st);
        free(x->job->cold);
        free(x->job->grow_avoid);
        free(x->job);
    }
    oppolicy_free(x->compiled);
    free(x->group);
    free(x);
}

/* Drops spec.template from a parsed AIJob's cached JSON: the parse
 * keeps it as one compact string (spec.template_json, what pods_build
 * reads), while the tree costs a json-c hash table per object and its
 * own serialized copy. Anything that needs the template reads the string
 * (job__journal_arrival puts it back into the journaled spec). The object
 * is the cache's own (opcache_put took it). */
static void srv__drop_template(json_object *raw, const struct aiq_aijob *j) {
    json_object *spec = NULL;
    if (j->spec.template_json && json_object_object_get_ex(raw, "spec", &spec) &&
        json_object_is_type(spec, json_type_object))
        json_object_object_del(spec, "template");
}

/* Parses opcache_raw(o) into its kind's struct; sets parse_ok / perr. */
static void srv_parse(struct server *s, opkind k, struct opcache_obj *o) {
    size_t sz = 0;
    switch (k) {
    case OPK_AIJOB: sz = sizeof(struct aiq_aijob); break;
    case OPK_POLICY: sz = sizeof(struct aiq_policy); break;
    case OPK_GROUP: sz = sizeof(struct aiq_group); break;
    case OPK_USERQUOTA: sz = sizeof(struct aiq_userquota); break;
    default: o->parse_ok = true; return;
    }
    void *p = calloc(1, sz);
    aiq_err e;
    aiq_err_clear(&e);
    (void)opcache_set_perr(o, NULL);
    if (!p) {
        aiq_err_set(&e, AIQ_ENOMEM, "out of memory");
        (void)opcache_set_perr(o, &e);
        o->parse_ok = false;
        return;
    }
    aiq_rc rc = AIQ_OK;
    switch (k) {
    case OPK_AIJOB: rc = aiq_aijob_from_json(opcache_raw(o), p, &e); break;
    case OPK_POLICY: rc = aiq_policy_from_json(opcache_raw(o), p, &e); break;
    case OPK_GROUP: rc = aiq_group_from_json(opcache_raw(o), p, &e); break;
    case OPK_USERQUOTA: rc = aiq_userquota_from_json(opcache_raw(o), p, &e); break;
    default: break;
    }
    /* Only a failure keeps its error (allocated): most entries have none. */
    if (rc != AIQ_OK)
        (void)opcache_set_perr(o, &e);
    /* The struct is zeroed on error, so parsed is always safe to free. */
    o->parsed = p;
    o->parse_ok = rc == AIQ_OK;
    if (k == OPK_AIJOB && o->parse_ok)
        srv__drop_template(opcache_raw(o), p);
    /* An AIJob's spec and status (resources, scoreTerms, conditions: a
     * json-c hash table per object) are read from the tree only when a
     * status is due (job__publish, srv_flush_kind), at a restart
     * (job_load) and at the arrival's journal entry (job_spec_text; the
     * cycle reads the parsed struct and struct opjob): kept as text,
     * parsed there. On ENOMEM they stay in the tree, which the readers
     * take too. */
    static const char *const cold[] = {"spec", "status", NULL};
    if (k == OPK_AIJOB) {
        if (!s->ready)
            job_preload_listed(o);
        (void)opcache_stash(o, cold);
        /* Of its annotations only the sim.aiq.dev/ ones are read (the
         * pods copy them); kubectl apply's last-applied-configuration,
         * the whole manifest again, goes. */
        json_object *meta = NULL;
        if (json_object_object_get_ex(opcache_raw(o), "metadata", &meta))
            (void)pods_job_annotations_trim(meta); /* how many: not needed */
    }
}

/* ---- small helpers ----------------------------------------------------------- */

const char *srv__name(json_object *obj) {
    const char *v = aiq_jpath_str(obj, "metadata.name");
    return v ? v : "";
}
const char *srv__ns(json_object *obj) {
    const char *v = aiq_jpath_str(obj, "metadata.namespace");
    return v ? v : "";
}
const char *srv__rv(json_object *obj) {
    const char *v = aiq_jpath_str(obj, "metadata.resourceVersion");
    return v ? v : "";
}
const char *srv__uid(json_object *obj) {
    const char *v = aiq_jpath_str(obj, "metadata.uid");
    return v ? v : "";
}
int64_t srv__generation(json_object *obj) {
    json_object *m = NULL, *g = NULL;
    if (json_object_object_get_ex(obj, "metadata", &m) &&
        json_object_object_get_ex(m, "generation", &g))
        return json_object_get_int64(g);
    return 0;
}

struct opext *srv__ext(struct opcache_obj *o) {
    if (!o->ext)
        o->ext = calloc(1, sizeof(struct opext));
    return o->ext;
}

/* See server.h. */
aiq_rc srv__path_of(char *buf, size_t cap, opkind k, const struct opcache_obj *o,
                    const char *sub, aiq_err *err) {
    const struct reconciler *r = &srv_reconcilers[k];
    const char *slash = r->namespaced ? strchr(o->key, '/') : NULL;
    char ns[AIQ_MAX_NAME + 1];
    if (!slash)
        return kube_path(buf, cap, r->group, r->version, NULL, r->resource, o->key, sub, err);
    size_t n = (size_t)(slash - o->key);
    if (n >= sizeof ns) /* opcache_key never makes one */
        return aiq_err_set(err, AIQ_EINVAL, "cache key %s: namespace too long", o->key);
    memcpy(ns, o->key, n);
    ns[n] = '\0';
    return kube_path(buf, cap, r->group, r->version, ns, r->resource, slash + 1, sub, err);
}

/* See server.h. */
int srv__ns_claims(struct server *s, const char *ns, const struct aiq_group *first[2]) {
    opcache *c = s->cache[OPK_GROUP];
    int n = 0;
    first[0] = first[1] = NULL;
    for (size_t i = 0; i < opcache_count(c); i++) {
        struct opcache_obj *o = opcache_at(c, i);
        if (!o->parse_ok || !o->parsed)
            continue;
        const struct aiq_group *g = o->parsed;
        for (int k = 0; k < g->spec.nnamespaces; k++) {
            if (strcmp(g->spec.namespaces[k], ns) != 0)
                continue;
            n++;
            /* keep the two first by name, whatever the cache order */
            if (!first[0] || strcmp(g->meta.name, first[0]->meta.name) < 0) {
                first[1] = first[0];
                first[0] = g;
            } else if (!first[1] || strcmp(g->meta.name, first[1]->meta.name) < 0) {
                first[1] = g;
            }
            break;
        }
    }
    return n;
}

/* The one Group whose spec.namespaces holds ns; NULL when none does or
 * when two or more claim it (a conflict: see srv__ns_claims). */
const struct aiq_group *srv__group_for_ns(struct server *s, const char *ns) {
    const struct aiq_group *g[2];
    return srv__ns_claims(s, ns, g) == 1 ? g[0] : NULL;
}

oppolicy *srv__policy(struct server *s) {
    if (s->active_policy[0]) {
        struct opcache_obj *o = opcache_get(s->cache[OPK_POLICY], s->active_policy);
        struct opext *x = o ? o->ext : NULL;
        if (x && x->compiled)
            return x->compiled;
    }
    return s->dflt_policy;
}

/* Puts o (x its state) on the dirty list of kind k (its status is to be
 * written at the next flush) unless it is on it; out of memory the next
 * flush scans every object instead. */
static void srv_dirty_list(struct server *s, opkind k, struct opcache_obj *o, struct opext *x) {
    struct srv_dirty *d = &s->dirty[k];
    if (x->listed)
        return;
    if (d->n == d->cap) {
        size_t ncap = d->cap ? d->cap * 2 : 64;
        char **nk = realloc(d->key, ncap * sizeof *nk);
        if (!nk) {
            s->dirty_scan = true;
            return;
        }
        d->key = nk;
        d->cap = ncap;
    }
    if (!(d->key[d->n] = strdup(o->key))) {
        s->dirty_scan = true;
        return;
    }
    d->n++;
    x->listed = true;
}

/* The kind of a cached object: the kind whose cache holds it. */
static opkind srv_kind_of(const struct server *s, const struct opcache_obj *o) {
    for (int k = 0; k < OPK__N; k++)
        if (s->cache[k] == o->owner)
            return (opkind)k;
    abort(); /* every object given here (a status, an Event) is in one of our caches */
}

/* Marks o (of kind k, x its state) dirty: its status is written at the
 * next flush. */
static void srv_mark_dirty(struct server *s, opkind k, struct opcache_obj *o, struct opext *x) {
    if (!x->dirty)
        x->dirty_since = srv_now();
    x->dirty = true;
    srv_dirty_list(s, k, o, x);
}

void srv__want_status(struct server *s, struct opcache_obj *o,
                      json_object *st) {
    struct opext *x = srv__ext(o);
    if (!x || !st) {
        json_object_put(st);
        return;
    }
    if (x->want_status && json_object_equal(x->want_status, st)) {
        json_object_put(st);
        return;
    }
    json_object_put(x->want_status);
    x->want_status = st;
    srv_mark_dirty(s, srv_kind_of(s, o), o, x);
}

void srv__want_job_status(struct server *s, struct opcache_obj *o, double at) {
    struct opext *x = srv__ext(o);
    if (!x)
        return; /* out of memory: the job stays unpublished (pub_rv is set,
                 * but its next material change publishes again) */
    x->want_job = true; /* an AIJob never has a want_status */
    x->want_at = at;
    srv_mark_dirty(s, OPK_AIJOB, o, x);
}

/* Events ---------------------------------------------------------------------- */

/* Whether an Event would be dropped now (not leading, or the queue at
 * its cap: counted then). Bounded like client-go's event broadcaster:
 * past the cap an Event is dropped, never queued without limit; checked
 * before anything of the Event is read or built (a release of thousands
 * of gangs passes it, and so does a restart's replay of every job). */
static bool srv_event_dropped(struct server *s) {
    if (!s->leading)
        return true;
    if (s->pending_events && json_object_array_length(s->pending_events) >= SRV_EVENTS_MAX) {
        s->events_dropped++;
        return true;
    }
    return false;
}

/* Builds and queues the Event (srv_event_dropped said it fits). */
static void srv_event_queue(struct server *s, opkind k, json_object *obj, const char *type,
                            const char *reason, const char *message) {
    const struct reconciler *r = &srv_reconcilers[k];
    struct opevent_obj eo = {
        r->group[0] ? AIQ_API_VERSION : "v1", r->kind_name,
        r->namespaced ? srv__ns(obj) : NULL, srv__name(obj), srv__uid(obj),
        srv__rv(obj)};
    json_object *ev = opevent_build(&eo, type, reason, message, srv_now(),
                                    ++s->event_seq);
    if (!ev)
        return;
    if (!s->pending_events)
        s->pending_events = json_object_new_array();
    if (!s->pending_events || json_object_array_add(s->pending_events, ev) != 0)
        json_object_put(ev);
    OPLOG(&s->log, OPLOG_INFO, "k8s_event", srv__name(obj), srv__rv(obj),
          "kind=%s reason=%s type=%s", r->kind_name, reason, type);
}

void srv__event(struct server *s, opkind k, json_object *obj, const char *type,
                const char *reason, const char *message) {
    if (!srv_event_dropped(s))
        srv_event_queue(s, k, obj, type, reason, message);
}

void srv__event_of(struct server *s, struct opcache_obj *o, const char *type,
                   const char *reason, const char *message) {
    if (!srv_event_dropped(s))
        srv_event_queue(s, srv_kind_of(s, o), opcache_raw(o), type, reason, message);
}

/* Status writes ------------------------------------------------------------------ */

static void srv_flush_events(struct server *s);

/* An AIJob's desired status is its job state, built when its write goes
 * out (srv__want_job_status): once written, found already there, or its
 * object gone, the flag goes and nothing is held. Other kinds keep want_status: their
 * statuses are rebuilt every cycle and compared with it. */
static void srv_written(struct opext *x) {
    x->dirty = false;
    x->urgent = false;
    x->want_job = false;
}

/* The desired status of o to compare with live (borrowed): x->want_status,
 * or for an AIJob published by srv__want_job_status its job state's st
 * built now (*built owns it then). NULL when it cannot be built (out of
 * memory: logged, o stays dirty and the next flush tries again). */
static json_object *srv_want_json(struct server *s, struct opcache_obj *o, json_object *live,
                                  json_object **built) {
    struct opext *x = o->ext;
    *built = NULL;
    if (!x->want_job)
        return x->want_status;
    if (x->job)
        *built = opstatus_to_json(&x->job->st, live, x->want_at);
    if (!*built) {
        OPLOG(&s->log, OPLOG_ERROR, "status_encode_failed", o->key, srv__rv(opcache_raw(o)),
              "phase=%s retry=next_flush", x->job ? aiq_phase_name(x->job->st.phase) : "?");
        opmetrics_status_failed_inc(s->metrics, "AIJob");
    }
    return *built;
}

/* Applies the outcome of one status write to o. */
static void srv_status_done(struct server *s, opkind k, struct opcache_obj *o,
                            struct release_item *it) {
    struct opext *x = o->ext;
    if (it->rc == AIQ_OK) {
        srv_written(x);
        OPLOG(&s->log, OPLOG_DEBUG, "status_written", o->key, srv__rv(it->out), "kind=%s",
              srv_reconcilers[k].kind_name);
        /* Keep the cache at what the server now holds (the watch event
         * follows; an older one is ignored by the rv check). */
        struct opcache_obj *n = opcache_put(s->cache[k], it->out, NULL);
        it->out = NULL;
        if (n) {
            srv_parse(s, k, n);
            /* The status economy tells our own write from someone else's
             * change by this resourceVersion. */
            struct opext *nx = n->ext;
            if (nx && nx->job) {
                nx->job->own_rv = n->rv;
                opcache_state_changed(n);
            }
        }
    } else if (it->rc == AIQ_ENOTFOUND) {
        srv_written(x); /* deleted meanwhile: nothing left to write */
    } else {
        /* x->dirty stays set: the next flush retries the write. */
        OPLOG(&s->log, OPLOG_WARN, "status_write_failed", o->key, NULL,
              "kind=%s rc=%s http=%d reason=%s msg=\"%s\" retry=next_turn",
              srv_reconcilers[k].kind_name,
              aiq_strerror(it->rc), it->err.http_status, it->err.reason, it->err.message);
        opmetrics_status_failed_inc(s->metrics, srv_reconcilers[k].kind_name);
    }
    json_object_put(it->out);
    it->out = NULL;
}

/* srv_write_statuses in two halves around the batch's sending. This
 * one fills items[0..m) (room for n) and idx[0..m) (each item's entry in
 * objs) with the merge patches of the dirty entries and returns m; an
 * entry that cannot be written (the store cannot publish: fail closed) is
 * set to NULL, and *gave_up says how many were. */
static int srv_status_prep(struct server *s, opkind k, struct opcache_obj **objs, int n,
                           struct release_item *items, int *idx, int *gave_up) {
    int m = 0, nulled = 0;
    if (!srv_store_publishable(s)) {
        /* Fail closed: a status must not run ahead of its record. The
         * objects stay dirty; the restart after the fault writes them. */
        for (int i = 0; i < n; i++) {
            nulled += objs[i] != NULL;
            objs[i] = NULL;
        }
        *gave_up = nulled;
        return 0;
    }
    *gave_up = 0;
    if (!s->leading)
        return 0;
    for (int i = 0; i < n; i++) {
        struct opcache_obj *o = objs[i];
        struct opext *x = o ? o->ext : NULL;
        bool changed = false;
        if (!x || !x->dirty || (!x->want_status && !x->want_job))
            continue;
        /* The cache keeps the live status as text (srv_parse): parsed
         * only here, for a write about to go out. */
        json_object *live = opcache_member(o, "status");
        json_object *built, *want = srv_want_json(s, o, live, &built);
        if (!want) {
            json_object_put(live);
            continue;
        }
        json_object *patch = opstatus_patch(live, want, &changed);
        json_object_put(built);
        json_object_put(live);
        if (!patch) {
            srv_written(x);
            continue;
        }
        struct release_item *it = &items[m];
        memset(it, 0, sizeof *it);
        if (srv__path_of(it->path, sizeof it->path, k, o, "status", &it->err) != AIQ_OK) {
            /* Cannot happen for a cached object (its name and namespace
             * fit); the write is not made and the entry counts as failed. */
            json_object_put(patch);
            objs[i] = NULL;
            (*gave_up)++;
            continue;
        }
        it->patch = patch;
        idx[m++] = i;
    }
    return m;
}

/* Takes the answers of m prepared status writes: written entries are
 * clean and cached as the server returned them, failed ones stay dirty
 * and are set to NULL in objs; frees the patches. Returns the failures. */
static int srv_status_take(struct server *s, opkind k, struct opcache_obj **objs,
                           struct release_item *items, const int *idx, int m) {
    int failed = 0;
    if (k == OPK_AIJOB) {
        opst_budget_spend(&s->status_budget, (size_t)m);
        opmetrics_status_writes(s->metrics, m, -1);
    }
    for (int j = 0; j < m; j++) {
        struct opcache_obj *o = objs[idx[j]];
        json_object_put(items[j].patch);
        items[j].patch = NULL;
        if (items[j].rc != AIQ_OK && items[j].rc != AIQ_ENOTFOUND) {
            objs[idx[j]] = NULL;
            failed++;
        }
        /* opcache_put replaces the entry in place: o stays valid. */
        srv_status_done(s, k, o, &items[j]);
    }
    return failed;
}

/* Writes the statuses of the dirty objects among objs (n entries of kind
 * k) as one batch of parallel merge patches; an entry whose write failed
 * is set to NULL. Returns the number of failures, or -1 on ENOMEM. */
static int srv_write_statuses(struct server *s, opkind k, struct opcache_obj **objs, int n) {
    struct release_item *items = n ? calloc((size_t)n, sizeof *items) : NULL;
    int *idx = n ? calloc((size_t)n, sizeof *idx) : NULL;
    if (n && (!items || !idx)) {
        free(items);
        free(idx);
        return -1;
    }
    int failed = 0; /* first the entries prep gave up: not publishable, no path */
    int m = srv_status_prep(s, k, objs, n, items, idx, &failed);
    if (m > 0)
        release_exec(s->kc, items, m, m > 8 ? 4 : 1);
    failed += srv_status_take(s, k, objs, items, idx, m);
    free(items);
    free(idx);
    return failed;
}

/* Drops a queued pod that cannot be sent (out of memory) together with
 * its placeholder in the cache: the next sync of its job, finding the pod
 * neither cached nor on the server, queues it again. Frees po. */
static void srv_unqueue_pod(struct server *s, struct srv_pod_out *po) {
    struct opcache_obj *cur = opcache_get(s->cache[OPK_POD], po->kb);
    if (cur && cur->rv == OPCACHE_RV_NONE) /* ours, not yet on the server */
        opcache_del(s->cache[OPK_POD], po->kb);
    free(po);
}

/* Room for one more queued pod: 0, or -1 out of memory. */
static int srv_podq_fit(struct srv_podq *q) {
    if (q->head == q->n)
        q->head = q->n = 0;
    if (q->n < q->cap)
        return 0;
    if (q->head > 0) { /* slide the queued ones down */
        memmove(q->item, q->item + q->head, (q->n - q->head) * sizeof *q->item);
        q->n -= q->head;
        q->head = 0;
        return 0;
    }
    size_t nc = q->cap ? 2 * q->cap : 256;
    struct srv_pod_out **ni = realloc(q->item, nc * sizeof *ni);
    if (!ni)
        return -1;
    q->item = ni;
    q->cap = nc;
    return 0;
}

void srv__create_pod(struct server *s, json_object *pod) {
    char key[OPCACHE_KEY_MAX];
    size_t blen = 0;
    const char *body = opcache_key(key, sizeof key, pod) == 0
        ? json_object_to_json_string_length(pod, JSON_C_TO_STRING_PLAIN, &blen)
        : NULL;
    size_t klen = body ? strlen(key) : 0;
    struct srv_pod_out *po = body ? malloc(sizeof *po + klen + 1 + blen + 1) : NULL;
    if (!po || srv_podq_fit(&s->podq) != 0) {
        free(po);
        json_object_put(pod); /* no placeholder yet: the next sync queues it */
        return;
    }
    po->klen = klen;
    po->blen = blen;
    memcpy(po->kb, key, klen + 1);
    memcpy(po->kb + klen + 1, body, blen + 1); /* body dies with the tree */
    /* The cache keeps its lean copy; the tree goes. */
    if (!opcache_put(s->cache[OPK_POD], pod, NULL)) {
        free(po);
        return;
    }
    s->podq.item[s->podq.n++] = po;
}

/* See server.h. */
struct opcache_obj *srv__pod_job(struct server *s, json_object *pod, char *key, size_t cap) {
    json_object *m = NULL, *l = NULL, *v = NULL;
    key[0] = '\0';
    if (!json_object_object_get_ex(pod, "metadata", &m) ||
        !json_object_object_get_ex(m, "labels", &l) ||
        !json_object_object_get_ex(l, PODS_LABEL_JOB, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    snprintf(key, cap, "%s/%s", srv__ns(pod), json_object_get_string(v));
    return opcache_get(s->cache[OPK_AIJOB], key);
}

/* The attempts its AIJob has had (from the cache) for a pod of ours; 0
 * when the job is unknown. A pod created for a job with attempts is one
 * recreated after a requeue. */
static int srv_pod_job_attempts(struct server *s, json_object *pod) {
    char key[OPCACHE_KEY_MAX];
    struct opcache_obj *jo = srv__pod_job(s, pod, key, sizeof key);
    struct opext *x = jo ? srv__ext(jo) : NULL;
    return x && x->job ? x->job->st.attempts : 0;
}

/* A pod the API server refused for good: the request itself is invalid
 * (400, 422: the template makes an invalid pod) or the namespace's Pod
 * Security level forbids it (403 naming PodSecurity). Retrying cannot
 * help, so the job is told (opjob_cold.pod_refused) and rejected at its next
 * sync. Other failures (the operator's own RBAC, 5xx, timeouts) are
 * retried by the next sync. */
static void srv_pod_refused(struct server *s, json_object *pod, const aiq_err *e) {
    char key[OPCACHE_KEY_MAX];
    bool forever = e->http_status == 400 || e->http_status == 422 ||
                   (e->http_status == 403 && strstr(e->message, "PodSecurity"));
    if (!forever)
        return;
    struct opcache_obj *jo = srv__pod_job(s, pod, key, sizeof key);
    struct opext *x = jo ? srv__ext(jo) : NULL;
    if (!x || !x->job || (x->job->cold && x->job->cold->pod_refused[0]))
        return;
    opcache_state_changed(jo);
    struct opjob_cold *jc = job_cold(x->job);
    if (!jc) { /* not kept: the next sync makes the pod again */
        OPLOG(&s->log, OPLOG_ERROR, "job_state_dropped", jo->key, NULL,
              "what=pod_refused msg=\"out of memory\"");
        return;
    }
    int n = snprintf(jc->pod_refused, sizeof jc->pod_refused,
                     "the API server refused pod %s: %s", srv__name(pod), e->message);
    (void)n; /* a longer message is cut: it becomes the status's one line */
}

int srv__flush_pods(struct server *s, size_t max) {
    struct srv_podq *q = &s->podq;
    size_t n = q->n - q->head;
    if (max && n > max)
        n = max;
    if (n == 0)
        return 0;
    /* Taken off the queue first: whatever happens below, each is sent
     * or dropped with its placeholder, never queued twice. */
    struct srv_pod_out **pos = malloc(n * sizeof *pos);
    struct release_item *items = pos ? calloc(n, sizeof *items) : NULL;
    if (!items) { /* out of memory: their jobs' next syncs queue them again */
        OPLOG(&s->log, OPLOG_ERROR, "pods_unsent", NULL, NULL,
              "pods=%zu msg=\"out of memory\"", n);
        for (size_t i = 0; i < n; i++)
            srv_unqueue_pod(s, q->item[q->head + i]);
        q->head += n;
        free(pos);
        return 0;
    }
    memcpy(pos, q->item + q->head, n * sizeof *pos);
    q->head += n;
    for (size_t i = 0; i < n; i++) {
        char ns[OPCACHE_KEY_MAX];
        const char *slash = strchr(pos[i]->kb, '/');
        size_t nsl = slash ? (size_t)(slash - pos[i]->kb) : 0;
        memcpy(ns, pos[i]->kb, nsl);
        ns[nsl] = '\0';
        items[i].create = 1;
        items[i].body = pos[i]->kb + pos[i]->klen + 1;
        items[i].body_len = pos[i]->blen;
        if (kube_path(items[i].path, sizeof items[i].path, "", "v1", ns, "pods",
                      NULL, NULL, &items[i].err) != AIQ_OK)
            items[i].path[0] = '\0';
    }
    double t0 = srv_now();
    release_exec(s->kc, items, (int)n, n > 8 ? 4 : 1);
    for (size_t i = 0; i < n; i++) {
        struct release_item *it = &items[i];
        const char *key = pos[i]->kb;
        if (it->rc == AIQ_OK) {
            OPLOG(&s->log, OPLOG_INFO, "pod_created", key, srv__rv(it->out), "gated=1");
            crashpoint("pod_created"); /* created, the AIJob status not yet written */
            if (srv_pod_job_attempts(s, it->out) > 0)
                crashpoint("retry_pod_created"); /* the same, for a requeued job */
            struct opcache_obj *cur = opcache_get(s->cache[OPK_POD], key);
            /* The watch may already have brought a newer version. */
            if (!cur || cur->rv == OPCACHE_RV_NONE) {
                opcache_put(s->cache[OPK_POD], it->out, NULL);
                it->out = NULL;
            }
        } else if (it->rc == AIQ_EEXIST) {
            /* A previous run created it: the deterministic name makes the
             * create idempotent; the watch brings it. */
            OPLOG(&s->log, OPLOG_DEBUG, "pod_exists", key, NULL, "%s", "");
        } else {
            struct opcache_obj *cur = opcache_get(s->cache[OPK_POD], key);
            if (cur && cur->rv == OPCACHE_RV_NONE)
                opcache_del(s->cache[OPK_POD], key);
            OPLOG(&s->log, OPLOG_WARN, "pod_create_failed", key, NULL,
                  "rc=%s http=%d reason=%s msg=\"%s\"", aiq_strerror(it->rc),
                  it->err.http_status, it->err.reason, it->err.message);
            /* The pod as it was sent tells whose it is (a refusal is rare:
             * parsing its text back costs nothing that matters). Out of
             * memory it is not told: the next sync sends it again. */
            json_object *pod = json_tokener_parse(items[i].body);
            if (pod)
                srv_pod_refused(s, pod, &it->err);
            json_object_put(pod);
        }
        json_object_put(it->out);
        free(pos[i]);
    }
    if (n)
        OPLOG(&s->log, OPLOG_DEBUG, "pods_batch", NULL, NULL, "pods=%zu seconds=%.4f", n,
              srv_now() - t0);
    free(items);
    free(pos);
    return (int)n;
}

/* Orders due AIJob statuses for the write budget: phase changes first,
 * then the longest waiting. */
static int srv_due_cmp(const void *a, const void *b) {
    const struct opext *x = (*(struct opcache_obj *const *)a)->ext;
    const struct opext *y = (*(struct opcache_obj *const *)b)->ext;
    if (x->urgent != y->urgent)
        return x->urgent ? -1 : 1;
    return (x->dirty_since > y->dirty_since) - (x->dirty_since < y->dirty_since);
}

/* Whether gated pods are still queued for creation after this turn's
 * batch (a burst of arrivals). */
static bool srv_pods_waiting(const struct server *s) {
    return s->podq.n > s->podq.head;
}

/* How many of the n dirty AIJobs go out while pods wait: those with a
 * phase change due, and any other waiting SRV_STATUS_WAIT_MAX_S or more
 * (arrivals that never stop do not hold the rest for good). srv_due_cmp
 * puts exactly these first. */
static size_t srv_count_first(struct opcache_obj *const *dirty, size_t n, double now) {
    size_t u = 0;
    for (size_t i = 0; i < n; i++) {
        const struct opext *x = dirty[i]->ext;
        u += x->urgent || now - x->dirty_since >= SRV_STATUS_WAIT_MAX_S;
    }
    return u;
}

/* The objects of kind k to write this flush into *out (n_out entries;
 * NULL and 0 when none, or out of memory: they stay listed): those on
 * the dirty list (or, after a key could not be listed, every dirty
 * object), each once, taken off the list. */
static void srv_dirty_take(struct server *s, opkind k, bool scan,
                           struct opcache_obj ***out, size_t *n_out) {
    opcache *c = s->cache[k];
    struct srv_dirty *d = &s->dirty[k];
    size_t n = scan ? opcache_count(c) : d->n, m = 0;
    struct opcache_obj **v = n ? malloc(n * sizeof *v) : NULL;
    *out = NULL;
    *n_out = 0;
    if (!v) {
        if (n)
            s->dirty_scan = true; /* out of memory: the next flush looks again */
        return;
    }
    for (size_t i = 0; i < n; i++) {
        struct opcache_obj *o = scan ? opcache_at(c, i) : opcache_get(c, d->key[i]);
        struct opext *x = o ? o->ext : NULL;
        /* A key listed twice (its object deleted and made again) is
         * taken at its first: listed is cleared there. */
        if (!x || (!scan && !x->listed))
            continue;
        x->listed = false;
        if (x->dirty)
            v[m++] = o;
    }
    for (size_t i = 0; i < d->n; i++)
        free(d->key[i]);
    d->n = 0;
    *out = v;
    *n_out = m;
}

/* Flush: pods to create, statuses of dirty objects (one parallel batch
 * per kind; AIJob statuses within the write budget), then Events. While
 * pods still wait to be created, only the AIJob statuses with a phase
 * change go out (and any due for SRV_STATUS_WAIT_MAX_S): a burst's
 * Queued statuses wait for their pods, and the rest (a Pending job's, a
 * position that moved) would only slow them. After a cycle that released
 * pods, at most a quarter second's worth: the next cycle may release more
 * (an uncordon still reaching nodes), and its pods go before statuses.
 * Only the objects on the dirty lists are visited; those left dirty
 * (budget, failed writes) go back on them. */
void srv_flush(struct server *s) {
    static const opkind with_status[] = {OPK_AIJOB, OPK_POLICY, OPK_GROUP,
                                         OPK_USERQUOTA};
    /* Nothing of a turn the store did not record leaves the operator. */
    if (!s->leading || !srv_store_publishable(s))
        return;
    srv__flush_pods(s, SRV_PODS_PER_TURN);
    bool scan = s->dirty_scan;
    s->dirty_scan = false;
    for (size_t k = 0; k < sizeof with_status / sizeof with_status[0]; k++) {
        opkind kind = with_status[k];
        struct opcache_obj **dirty;
        size_t m;
        if (!scan && s->dirty[kind].n == 0)
            continue;
        srv_dirty_take(s, kind, scan, &dirty, &m);
        size_t go = m;
        if (kind == OPK_AIJOB && m) {
            double now = srv_now();
            go = opst_budget_allow(&s->status_budget, s->flags.status_writes_per_s, now,
                                   s->release_turn,
                                   srv_pods_waiting(s) ? srv_count_first(dirty, m, now) : m);
            if (go < m)
                qsort(dirty, m, sizeof *dirty, srv_due_cmp);
            opmetrics_status_writes(s->metrics, 0, (long)(m - go));
        }
        /* The writes may null entries of the array they are given (not
         * written: the store cannot publish), so it gets a copy. */
        struct opcache_obj **sent = go ? malloc(go * sizeof *sent) : NULL;
        if (sent) {
            memcpy(sent, dirty, go * sizeof *sent);
            srv_write_statuses(s, kind, sent, (int)go);
            free(sent);
        }
        /* Those not written (budget, failed writes, out of memory for the
         * copy) stay listed. The writes put entries (the server's answers)
         * in place and delete none, so the pointers still hold. */
        for (size_t i = 0; i < m; i++) {
            struct opext *x = dirty[i]->ext;
            if (x->dirty)
                srv_dirty_list(s, kind, dirty[i], x);
        }
        free(dirty);
    }
    s->release_turn = false;
    srv_flush_events(s);
}

/* Posts up to SRV_EVENTS_PER_TURN queued Events as one parallel batch;
 * the rest wait for the next turn. */
static void srv_flush_events(struct server *s) {
    size_t n = s->pending_events ? json_object_array_length(s->pending_events) : 0;
    if (n == 0)
        return;
    size_t m = n < SRV_EVENTS_PER_TURN ? n : SRV_EVENTS_PER_TURN;
    struct release_item *items = calloc(m, sizeof *items);
    if (!items)
        return;
    for (size_t i = 0; i < m; i++) {
        json_object *ev = json_object_array_get_idx(s->pending_events, i);
        items[i].create = 1;
        items[i].patch = ev;
        if (kube_path(items[i].path, sizeof items[i].path, "", "v1",
                      aiq_jpath_str(ev, "metadata.namespace"), "events", NULL, NULL,
                      &items[i].err) != AIQ_OK)
            items[i].path[0] = '\0';
    }
    release_exec(s->kc, items, (int)m, m > 8 ? 4 : 1);
    for (size_t i = 0; i < m; i++) {
        if (items[i].rc != AIQ_OK)
            OPLOG(&s->log, OPLOG_DEBUG, "event_post_failed",
                  aiq_jpath_str(items[i].patch, "involvedObject.name"), NULL,
                  "http=%d msg=\"%s\"", items[i].err.http_status, items[i].err.message);
        json_object_put(items[i].out);
    }
    free(items);
    if (m == n) {
        json_object_put(s->pending_events);
        s->pending_events = NULL;
    } else {
        json_object_array_del_idx(s->pending_events, 0, m);
    }
    if (s->events_dropped) {
        OPLOG(&s->log, OPLOG_WARN, "events_dropped", NULL, NULL, "count=%lu",
              s->events_dropped);
        s->events_dropped = 0;
    }
}

/* ---- dispatch ------------------------------------------------------------------ */

static void srv_on_drop(void *ud, struct opcache_obj *o) {
    struct server *s = ((void **)ud)[0];
    const struct reconciler *r = ((void **)ud)[1];
    OPLOG(&s->log, OPLOG_INFO, "relist_drop", o->key, srv__rv(opcache_raw(o)),
          "kind=%s", r->kind_name);
    if (s->ready)
        r->on_event(s, KUBE_EV_DELETED, o, opcache_raw(o));
}

/* Once every view is complete (each kind's and the foreign pods' first
 * list), reconciles what was listed, in dependency order (a job sync
 * needs its pods, groups and the policy), instead of acting on a
 * half-listed world. */
static void srv_check_ready(struct server *s) {
    bool all = s->foreign_listed;
    for (int k = 0; k < OPK__N; k++)
        all = all && s->listed[k];
    if (!all || s->ready)
        return;
    static const opkind replay[] = {OPK_NODE, OPK_GROUP, OPK_USERQUOTA, OPK_POLICY, OPK_AIJOB};
    double t0 = srv_now();
    s->ready = true;
    for (size_t k = 0; k < sizeof replay / sizeof replay[0]; k++) {
        opcache *rc = s->cache[replay[k]];
        for (size_t i = 0; i < opcache_count(rc); i++) {
            struct opcache_obj *o = opcache_at(rc, i);
            srv_reconcilers[replay[k]].on_event(s, KUBE_EV_ADDED, o, opcache_raw(o));
        }
    }
    size_t jobs = jobs_replay_end(s);
    s->nodes_grew_at = 0; /* the nodes were listed whole: nothing to settle */
    opmetrics_set_ready(s->metrics, true);
    OPLOG(&s->log, OPLOG_INFO, "ready", NULL, NULL, "watches=%d jobs_loaded=%zu replay_s=%.3f",
          OPK__N + 1, jobs, srv_now() - t0);
}

void srv_dispatch(struct server *s, struct kube_event *ev) {
    const struct reconciler *r = NULL;
    s->trim_events++;
    if (strcmp(ev->resource, FOREIGN_WATCH) == 0) {
        capacity_dispatch(s, ev);
        if (ev->type == KUBE_EV_RELIST_END)
            srv_check_ready(s);
        return;
    }
    for (int k = 0; k < OPK__N; k++)
        if (strcmp(ev->resource, srv_reconcilers[k].resource) == 0)
            r = &srv_reconcilers[k];
    if (!r)
        return;
    opcache *c = s->cache[r->kind];
    char key[OPCACHE_KEY_MAX];
    switch (ev->type) {
    case KUBE_EV_RELIST_BEGIN:
        opcache_relist_begin(c);
        return;
    case KUBE_EV_RELIST_END: {
        void *ud[2] = {s, (void *)r};
        opcache_relist_end(c, srv_on_drop, ud);
        if (!s->listed[r->kind]) {
            s->listed[r->kind] = true;
            OPLOG(&s->log, OPLOG_INFO, "listed", NULL, ev->rv, "kind=%s count=%zu",
                  r->kind_name, opcache_count(c));
        } else {
            /* After a 410 Gone or an undecodable line: worth a line, as
             * a relist storm means the watch cannot keep up. */
            OPLOG(&s->log, OPLOG_INFO, "relisted", NULL, ev->rv, "kind=%s count=%zu",
                  r->kind_name, opcache_count(c));
        }
        srv_check_ready(s);
        s->cycle_wanted = true;
        return;
    }
    case KUBE_EV_BOOKMARK:
        return;
    case KUBE_EV_ADDED:
    case KUBE_EV_MODIFIED: {
        if (!ev->obj || opcache_key(key, sizeof key, ev->obj) != 0)
            return;
        struct opcache_obj *old = opcache_get(c, key);
        if (old) {
            int64_t have = old->rv; /* a frozen entry is not read back for it */
            int64_t got = opcache_rv_num(srv__rv(ev->obj));
            /* Our own status write already put a newer version here. */
            if (have >= 0 && got >= 0 && got < have) {
                opcache_touch(c, old); /* still seen in a relist */
                return;
            }
        }
        struct opcache_obj *o = opcache_put(c, json_object_get(ev->obj), NULL);
        if (!o)
            return;
        srv_parse(s, r->kind, o);
        OPLOG(&s->log, OPLOG_DEBUG, "watch_event", o->key, srv__rv(opcache_raw(o)),
              "kind=%s type=%s", r->kind_name, kube_event_type_name(ev->type));
        if (s->ready)
            r->on_event(s, ev->type, o, opcache_raw(o));
        s->cycle_wanted = true;
        return;
    }
    case KUBE_EV_DELETED: {
        if (!ev->obj || opcache_key(key, sizeof key, ev->obj) != 0)
            return;
        struct opcache_obj *o = opcache_get(c, key);
        OPLOG(&s->log, OPLOG_DEBUG, "watch_event", key, srv__rv(ev->obj),
              "kind=%s type=DELETED", r->kind_name);
        if (s->ready)
            r->on_event(s, KUBE_EV_DELETED, o, ev->obj);
        opcache_del(c, key);
        s->cycle_wanted = true;
        return;
    }
    }
}

/* ---- cron ------------------------------------------------------------------------ */

/* Logs the watches' new errors: the watch threads only count them (with
 * the last one), so a watch that keeps failing is visible here, at most
 * once a second per watch. */
static void srv_log_watch_errors(struct server *s) {
    for (int k = 0; k <= OPK__N; k++) {
        struct kube_watch_stats st;
        char msg[300];
        /* k == OPK__N: the foreign-pod watch. */
        struct kube_watch *w = k < OPK__N ? s->watch[k] : s->foreign_watch;
        unsigned long *seen = k < OPK__N ? &s->watch_errors[k] : &s->foreign_watch_errors;
        if (!w)
            continue;
        kube_watch_get_stats(w, &st);
        if (st.errors == *seen)
            continue;
        OPLOG(&s->log, OPLOG_WARN, "watch_error", NULL, NULL,
              "resource=%s new=%lu errors=%lu undecodable=%lu lists=%lu rc=%s msg=%s",
              k < OPK__N ? srv_reconcilers[k].resource : FOREIGN_WATCH, st.errors - *seen,
              st.errors, st.undecodable, st.lists, aiq_strerror(st.last_err.code),
              oplog_quote(msg, sizeof msg, st.last_err.message));
        *seen = st.errors;
    }
}

/* A frozen cache entry could not be parsed back (out of memory): the
 * reader would take the object for one without any field, which can
 * count or release a job wrongly. The operator exits instead, loudly:
 * its state is in SQLite and the API server, and a restart lists every
 * object again. */
static void srv_thaw_failed(void *ud, const char *key) {
    struct server *s = ud;
    OPLOG(&s->log, OPLOG_ERROR, "cache_thaw_failed", key, NULL,
          "msg=\"out of memory reading a cached object back; exiting\"");
    if (fflush(NULL) != 0) { /* nothing more to do: exiting anyway */
    }
    abort();
}

/* How often the freeze sweep steps, and the most of the loop one step
 * takes (the rest of a pass waits for the next step). */
#define SRV_FREEZE_STEP_S 0.25
#define SRV_FREEZE_STEP_MAX_S 0.010

/* run_every(SRV_FREEZE_STEP_S): moves the freeze sweep of the AIJob and
 * pod caches on, so that a whole pass takes --cache-freeze-after (an
 * entry nobody read for two passes is frozen: cache.h). Freezing frees
 * trees as a burst's decoding does, so it counts toward the trim. */
static void srv_freeze_cron(struct server *s, double now) {
    /* Not before the first lists are in: the replay reads every object
     * once, so freezing what a list just brought would only be undone. */
    if (s->flags.freeze_after_s <= 0 || !s->ready || now - s->freeze_at < SRV_FREEZE_STEP_S)
        return;
    double dt = s->freeze_at > 0 && now - s->freeze_at < 1.0 ? now - s->freeze_at : SRV_FREEZE_STEP_S;
    s->freeze_at = now;
    double t0 = srv_now();
    size_t frozen = 0, visited = 0;
    struct opcache_freeze_stats all = {0, 0, 0};
    static const int kinds[] = {OPK_AIJOB, OPK_POD};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        opcache *c = s->cache[kinds[i]];
        size_t want = (size_t)((double)opcache_count(c) * dt / s->flags.freeze_after_s) + 64;
        size_t done = 0;
        while (done < want && srv_now() - t0 < SRV_FREEZE_STEP_MAX_S) {
            size_t n = opcache_freeze_sweep(c, want - done < 512 ? want - done : 512, &frozen);
            if (n == 0)
                break; /* idle: nothing changed since the last whole pass */
            done += n;
        }
        visited += done;
        struct opcache_freeze_stats st = opcache_freeze_stats(c);
        all.frozen += st.frozen;
        all.thaws += st.thaws;
        all.freezes += st.freezes;
    }
    /* Freed trees count toward a trim, but not against the quiet
     * window: a burst's freezing trails its events by a pass or two. */
    s->trim_events += frozen;
    s->trim_win_base += frozen;
    /* The sweep has just come to rest: what the burst and its freezing
     * left free is all there, so the trim need not wait for a count. */
    if (visited == 0 && !s->freeze_idle && s->trim_events > s->trim_base)
        s->trim_settled = true;
    s->freeze_idle = visited == 0;
    /* At rest nothing moves: the metrics' lock is taken for a change only. */
    if (all.frozen != s->freeze_pub.frozen || all.thaws != s->freeze_pub.thaws ||
        all.freezes != s->freeze_pub.freezes) {
        opmetrics_cache_set(s->metrics, (long)all.frozen, all.thaws, all.freezes);
        s->freeze_pub = all;
    }
}

/* Events that make a burst worth a trim after it; the window in which
 * fewer than SRV_TRIM_QUIET_EVENTS events mean the burst is over; how
 * often a stream of events that never goes quiet is trimmed anyway. */
#define SRV_TRIM_EVENTS 1024
#define SRV_TRIM_WINDOW_S 2.0
#define SRV_TRIM_QUIET_EVENTS 64
#define SRV_TRIM_EVERY_S 60.0

/* run_every(SRV_TRIM_WINDOW_S): gives back to the system the memory a
 * burst of events left free. Decoding a list page or a watch event
 * builds the whole object and the cache keeps a smaller copy or none,
 * so a burst (the first list, thousands of AIJobs created, their status
 * writes coming back) leaves the heaps full of free holes between live
 * objects; malloc returns only the top of a heap by itself, and RSS
 * keeps the rest. malloc_trim hands every free whole page back
 * (madvise), at the cost of one walk of every free list: about 110 ms
 * at 10k jobs, which the loop would feel, so it runs once a burst of at
 * least SRV_TRIM_EVENTS events has gone quiet (a window with fewer than
 * SRV_TRIM_QUIET_EVENTS), or every SRV_TRIM_EVERY_S while events keep
 * coming; never in a quiet steady state. Frozen cache entries count as
 * events (srv_freeze_cron), and the window after the freeze sweep comes
 * to rest trims for SRV_TRIM_QUIET_EVENTS of them or more: the last of
 * a burst's freezing is often fewer than SRV_TRIM_EVENTS. */
static void srv_trim_cron(struct server *s, double now) {
    if (s->last_trim == 0)
        s->last_trim = now; /* the SRV_TRIM_EVERY_S count starts here */
    if (now - s->trim_win_at < SRV_TRIM_WINDOW_S)
        return;
    bool quiet = s->trim_events - s->trim_win_base < SRV_TRIM_QUIET_EVENTS;
    s->trim_win_at = now;
    s->trim_win_base = s->trim_events;
    uint64_t n = s->trim_events - s->trim_base;
    bool settled = s->trim_settled && n >= SRV_TRIM_QUIET_EVENTS;
    s->trim_settled = false; /* one window's chance */
    if ((n < SRV_TRIM_EVENTS && !(settled && quiet)) ||
        (!quiet && now - s->last_trim < SRV_TRIM_EVERY_S))
        return;
    double t0 = srv_now();
    int gave = malloc_trim(0);
    s->trim_base = s->trim_events;
    s->last_trim = now;
    OPLOG(&s->log, OPLOG_INFO, "malloc_trim", NULL, NULL, "events=%llu released=%d ms=%.1f",
          (unsigned long long)n, gave, (srv_now() - t0) * 1e3);
}

/* The least spacing of cycles after a change (ms). */
static double srv_min_cycle_ms(const struct server *s) {
    return s->flags.cycle_ms < 250 ? (double)s->flags.cycle_ms : 250.0;
}

/* Whether a due cycle waits for Nodes still becoming placeable: an
 * uncordon (or a scale-up) of many nodes reaches the operator as a stream
 * of Node events over a fraction of a second, and a cycle in the middle
 * of it places gangs on the nodes seen so far and releases them, then the
 * next cycle, a batch later, the rest. Waiting until no Node has become
 * placeable for SRV_SETTLE_S lets one cycle see the whole new capacity
 * (one placement over all of it, one release batch). At most
 * SRV_SETTLE_MAX_S from the first wait, so a stream that never pauses
 * delays each cycle by at most that. */
static bool srv_nodes_arriving(struct server *s, double now) {
    if (now - s->nodes_grew_at >= SRV_SETTLE_S)
        return false;
    if (s->settle_from == 0)
        s->settle_from = now;
    return now - s->settle_from < SRV_SETTLE_MAX_S;
}

/* See server.h. */
long srv_wait_ms(const struct server *s, double now) {
    double ms = s->flags.cycle_ms < 200 ? (double)s->flags.cycle_ms : 200.0;
    /* A cycle is due at a known time only where srv_cron would run it. */
    if (!s->ready || !s->leading || s->store_bad)
        return (long)ms;
    double at = s->settle_from > 0 ? s->nodes_grew_at + SRV_SETTLE_S
              : s->cycle_wanted   ? s->last_cycle + srv_min_cycle_ms(s) / 1e3
                                  : 0;
    if (at > 0) {
        double left = (at - now) * 1e3;
        if (left < ms)
            ms = left > 0 ? left + 1 : 0; /* +1: wake just after, not before */
    }
    return (long)ms;
}

void srv_cron(struct server *s, double now) {
    srv_store_cron(s, now);
    srv_freeze_cron(s, now);
    srv_trim_cron(s, now);
    if (now - s->last_watch_check >= 1.0) {
        srv_log_watch_errors(s);
        s->last_watch_check = now;
    }
    /* run_every(lease renew) */
    if (s->flags.leader_elect && now - s->last_lease >= s->lead.renew_every_s) {
        aiq_err e;
        aiq_err_clear(&e);
        bool was = s->lead.is_leader;
        if (leader_tick(&s->lead, s->kc, now, &e) != AIQ_OK)
            OPLOG(&s->log, OPLOG_WARN, "lease_error", s->lead.name, NULL,
                  "rc=%s msg=\"%s\"", aiq_strerror(e.code), e.message);
        s->last_lease = now;
        if (s->lead.is_leader != was)
            OPLOG(&s->log, OPLOG_INFO,
                  s->lead.is_leader ? "leader_acquired" : "leader_lost",
                  s->lead.name, NULL, "identity=%s", s->lead.id);
        s->leading = s->lead.is_leader;
        opmetrics_set_leader(s->metrics, s->leading);
        if (s->leading && !was) {
            s->cycle_wanted = true;
            job_resync_all(s); /* a follower synced nothing */
        }
    }
    /* A failing store admits nothing (store_guard.c). */
    if (!s->ready || !s->leading || s->store_bad)
        return;
    /* run_every(cycle_ms), or sooner after a change, but at most every
     * 250 ms (the loop drains the event queue first, so a burst of events
     * costs one cycle, and a storm of events cannot starve the writes). */
    double since_ms = (now - s->last_cycle) * 1000.0;
    if (((s->cycle_wanted && since_ms >= srv_min_cycle_ms(s)) ||
         since_ms >= (double)s->flags.cycle_ms) &&
        !srv_nodes_arriving(s, now)) {
        s->cycle_wanted = false;
        if (s->settle_from > 0) {
            OPLOG(&s->log, OPLOG_INFO, "nodes_settled", NULL, NULL, "waited_ms=%.0f",
                  (now - s->settle_from) * 1e3);
            s->settle_from = 0;
        }
        cycle_run(s, now);
        pol_after_cycle(s);
        s->last_cycle = now;
    }
    /* run_every(1 h): journal retention, by age and by size. */
    if ((s->flags.journal_retention_s > 0 || s->flags.journal_max_mib > 0) &&
        now - s->last_prune >= 3600) {
        long removed = 0, by_size = 0;
        aiq_err e;
        aiq_err_clear(&e);
        s->last_prune = now;
        if (s->flags.journal_retention_s > 0 &&
            store_journal_prune(s->db, now - s->flags.journal_retention_s, &removed, &e) != AIQ_OK)
            OPLOG(&s->log, OPLOG_WARN, "store_error", NULL, NULL,
                  "op=journal_prune retry=next_hour msg=\"%s\"", e.message);
        if (s->flags.journal_max_mib > 0 &&
            store_journal_prune_size(s->db, s->flags.journal_max_mib * 1048576LL, &by_size,
                                     &e) != AIQ_OK)
            OPLOG(&s->log, OPLOG_WARN, "store_error", NULL, NULL,
                  "op=journal_prune_size retry=next_hour msg=\"%s\"", e.message);
        if (removed || by_size)
            OPLOG(&s->log, OPLOG_INFO, "journal_pruned", NULL, NULL, "by_age=%ld by_size=%ld",
                  removed, by_size);
    }
}

/* ---- setup and teardown -------------------------------------------------------- */

void srv_init(struct server *s) {
    memset(s, 0, sizeof *s);
    s->flags.db_path = "aiq.db";
    s->flags.metrics_addr = "127.0.0.1:8080";
    s->flags.log_level = OPLOG_INFO;
    s->flags.cycle_ms = 1000;
    s->flags.start_timeout_s = 300;
    s->flags.grow_backoff_s = 600;
    s->flags.backoff_base_s = 10;
    s->flags.status_writes_per_s = 1000;
    s->flags.freeze_after_s = 2;
    s->flags.unsched_grace_s = 5;
    s->flags.capacity_grace_s = 60;
    s->flags.node_lost_s = 60;
    s->flags.ungrouped = "wait";
    s->flags.journal_retention_s = 30 * 86400.0;
    s->flags.journal_max_mib = 512;
    s->flags.util_interval_s = 15;
    s->flags.util_stale_s = 60;
    s->log.level = OPLOG_INFO;
    s->leading = true;
}

/* Loads the kubeconfig (in-cluster config inside a pod unless
 * --kubeconfig says otherwise) and creates the API client. */
static aiq_rc srv_connect(struct server *s, aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    if (s->flags.kubeconfig || !getenv("KUBERNETES_SERVICE_HOST"))
        rc = kube_config_load(s->flags.kubeconfig, s->flags.context, &s->kcfg, err);
    else
        rc = kube_config_in_cluster(NULL, &s->kcfg, err);
    if (rc != AIQ_OK)
        return rc;
    struct kube_client_opts copts = {0};
    copts.user_agent = "aiq-operator/0.1";
    copts.pool_size = 8;
    return kube_client_create(s->kcfg, &copts, &s->kc, err);
}

/* Opens the store and creates the state the loop keeps: metrics, queue
 * state, the default policy, a cache per kind and the foreign pods. */
static aiq_rc srv_open_state(struct server *s, aiq_err *err) {
    static void (*const free_parsed[OPK__N])(void *) = {
        [OPK_AIJOB] = srv_free_job, [OPK_POLICY] = srv_free_policy,
        [OPK_GROUP] = srv_free_group, [OPK_USERQUOTA] = srv_free_uq,
        [OPK_NODE] = free, [OPK_POD] = free};
    s->db = store_open(s->flags.db_path, NULL, err);
    if (!s->db)
        return err ? err->code : AIQ_EDB;
    s->metrics = opmetrics_create();
    s->q = q_state_create(NULL);
    if (s->metrics)
        opmetrics_set_store(s->metrics, true, NULL);
    s->dflt_policy = oppolicy_default();
    if (!s->metrics || !s->q || !s->dflt_policy)
        return aiq_err_set(err, AIQ_ENOMEM, "out of memory starting the operator");
    for (int k = 0; k < OPK__N; k++) {
        s->cache[k] = opcache_create(free_parsed[k], srv_free_ext);
        if (!s->cache[k])
            return aiq_err_set(err, AIQ_ENOMEM, "out of memory");
    }
    /* A pod is kept as the few fields the operator reads (pod_lean.h):
     * most of the cache at a long queue is gated pods, and their lean
     * spec, status and annotations are mostly equal, so kept once. */
    s->pod_share = jshare_new(POD_LEAN_SHARE_MAX);
    if (!s->pod_share)
        return aiq_err_set(err, AIQ_ENOMEM, "out of memory");
    opcache_set_lean(s->cache[OPK_POD], pod_lean_cache, s->pod_share);
    opcache_set_facts(s->cache[OPK_POD], pods_facts);
    /* Waiting jobs' AIJobs and pods are most of the cache and read by
     * nothing while they wait: kept as text once cold (cache.h). */
    for (int k = 0; k < OPK__N; k++) {
        opcache_set_freeze(s->cache[k], s->flags.freeze_after_s > 0 &&
                                            (k == OPK_AIJOB || k == OPK_POD));
        opcache_set_thaw_failed(s->cache[k], srv_thaw_failed, s);
    }
    s->foreign = fpods_create();
    if (!s->foreign)
        return aiq_err_set(err, AIQ_ENOMEM, "out of memory");
    return AIQ_OK;
}

/* What the HTTP threads serve: /journal, /queue, the remote callers'
 * checks, the utilisation source, then the metrics listener and the
 * aggregated API when their flags ask for them. */
static aiq_rc srv_serve(struct server *s, aiq_err *err) {
    /* /journal on the metrics port: its own read-only connection to the
     * file store_open just created, so the HTTP thread never shares s->db. */
    aiq_rc rc = opapi_create(s->flags.db_path, &s->api, err);
    if (rc != AIQ_OK)
        return rc;
    opmetrics_set_api(s->metrics, s->api);
    s->vis = opvis_create();
    if (!s->vis)
        return aiq_err_set(err, AIQ_ENOMEM, "out of memory");
    opmetrics_set_vis(s->metrics, s->vis);
    if (s->flags.api_remote) {
        /* Remote callers are checked against the cluster's own RBAC
         * (api_auth.h), with a client of its own for the HTTP thread. */
        s->auth = opauth_create(s->kcfg, err);
        if (!s->auth)
            return err ? err->code : AIQ_ENOMEM;
    }
    opmetrics_set_api_remote(s->metrics, s->flags.api_remote, s->auth);
    rc = util_start(s, err);
    if (rc != AIQ_OK)
        return rc;
    if (s->flags.metrics_addr && *s->flags.metrics_addr) {
        rc = opmetrics_listen(s->metrics, s->flags.metrics_addr, err);
        if (rc != AIQ_OK)
            return rc;
        OPLOG(&s->log, OPLOG_INFO, "metrics_listening", NULL, NULL, "port=%d",
              opmetrics_port(s->metrics));
    }
    if (s->flags.aggr.addr) {
        s->aggr = opaggr_start(&s->flags.aggr, s->kcfg, s->api, s->vis, s->metrics, err);
        if (!s->aggr)
            return err ? err->code : AIQ_ENOMEM;
        OPLOG(&s->log, OPLOG_INFO, "aggregated_listening", NULL, NULL, "port=%d group=%s",
              opaggr_port(s->aggr), OPAGGR_GROUP "/" OPAGGR_VERSION);
    }
    return AIQ_OK;
}

/* Starts a watch (name) of resource in group/version, all namespaces,
 * with label_selector (may be NULL), into s->evq; *out is the handle. */
static aiq_rc srv_watch(struct server *s, const char *group, const char *version,
                        const char *resource, const char *name, const char *label_selector,
                        struct kube_watch **out, aiq_err *err) {
    char path[256];
    struct kube_watch_opts wo = {0};
    aiq_rc rc = kube_path(path, sizeof path, group, version, NULL, resource, NULL, NULL, err);
    if (rc != AIQ_OK)
        return rc;
    wo.name = name;
    wo.path = path;
    wo.label_selector = label_selector;
    return kube_watch_start(s->kc, &wo, s->evq, out, err);
}

/* The event queue and a watch per kind, then the foreign pods' watch. */
static aiq_rc srv_start_watches(struct server *s, aiq_err *err) {
    aiq_rc rc = kube_evq_create(0, &s->evq, err);
    if (rc != AIQ_OK)
        return rc;
    for (int k = 0; k < OPK__N; k++) {
        const struct reconciler *r = &srv_reconcilers[k];
        /* Only our pods: the gang's label. */
        rc = srv_watch(s, r->group, r->version, r->resource, r->resource,
                       k == OPK_POD ? "aiq.dev/job" : NULL, &s->watch[k], err);
        if (rc != AIQ_OK)
            return rc;
    }
    /* Every other pod, reduced to what it holds (foreign.h): free
     * capacity counts every pod on a node, not only aiq's. */
    return srv_watch(s, "", "v1", "pods", FOREIGN_WATCH, FOREIGN_SELECTOR, &s->foreign_watch,
                     err);
}

aiq_rc srv_start(struct server *s, aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    s->log.level = s->flags.log_level;
    if ((rc = srv_connect(s, err)) != AIQ_OK || (rc = srv_open_state(s, err)) != AIQ_OK ||
        (rc = srv_serve(s, err)) != AIQ_OK)
        return rc;
    leader_init(&s->lead, s->flags.identity, s->flags.lease_ns, s->flags.lease_name);
    s->leading = !s->flags.leader_elect;
    opmetrics_set_leader(s->metrics, s->leading);
    if (s->flags.leader_elect)
        s->last_lease = -1e18; /* renew at the first cron */
    rc = srv_start_watches(s, err);
    if (rc != AIQ_OK)
        return rc;
    /* What the replay reads for every job at once (their preemptions and
     * last decisions) is read now, while the watches list: nothing writes
     * the store before the replay, and the lists leave this thread idle
     * much of the time, where the replay has it alone. */
    jobs_replay_begin(s);
    OPLOG(&s->log, OPLOG_INFO, "started", NULL, NULL,
          "server=%s db=%s cycle_ms=%ld leader_elect=%d identity=%s",
          kube_client_server(s->kc), s->flags.db_path, s->flags.cycle_ms,
          (int)s->flags.leader_elect, s->lead.id);
    return AIQ_OK;
}
void srv_deinit(struct server *s) {
    (void)jobs_replay_end(s); /* stopped before the replay ran: none loaded */
    for (int k = 0; k < OPK__N; k++) {
        kube_watch_free(s->watch[k]);
        s->watch[k] = NULL;
    }
    kube_watch_free(s->foreign_watch);
    s->foreign_watch = NULL;
    if (s->kc && s->flags.leader_elect)
        leader_release(&s->lead, s->kc, srv_now(), NULL);
    opvis_close(s->vis); /* wakes /queue waiters so the HTTP threads can stop */
    opaggr_free(s->aggr); /* its thread stops before the api and vis go */
    s->aggr = NULL;
    opmetrics_free(s->metrics); /* stops the HTTP thread before the api goes */
    s->metrics = NULL;
    opvis_free(s->vis);
    s->vis = NULL;
    opapi_free(s->api);
    s->api = NULL;
    opauth_free(s->auth); /* after the HTTP thread stopped */
    s->auth = NULL;
    oputil_free(s->util); /* after the HTTP thread that serves /util */
    s->util = NULL;
    kube_evq_free(s->evq);
    s->evq = NULL;
    for (int k = 0; k < OPK__N; k++) {
        opcache_free(s->cache[k]);
        s->cache[k] = NULL;
    }
    jshare_free(s->pod_share); /* the pods' references went with the cache */
    s->pod_share = NULL;
    fpods_free(s->foreign);
    s->foreign = NULL;
    json_object_put(s->pending_events);
    s->pending_events = NULL;
    for (size_t i = s->podq.head; i < s->podq.n; i++)
        free(s->podq.item[i]);
    free(s->podq.item);
    memset(&s->podq, 0, sizeof s->podq);
    for (int k = 0; k < OPK__N; k++) {
        for (size_t i = 0; i < s->dirty[k].n; i++)
            free(s->dirty[k].key[i]);
        free(s->dirty[k].key);
        memset(&s->dirty[k], 0, sizeof s->dirty[k]);
    }
    q_state_free(s->q);
    s->q = NULL;
    cycle_free(s);
    capacity_free(s);
    oppolicy_free(s->dflt_policy);
    s->dflt_policy = NULL;
    store_close(s->db);
    s->db = NULL;
    kube_client_free(s->kc);
    s->kc = NULL;
    kube_config_free(s->kcfg);
    s->kcfg = NULL;
}
