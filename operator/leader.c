/* leader.c -- Lease-based leader election (see leader.h): the pure
 * decision step and the HTTP round around it. */
#include "operator/leader.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/aiq_time.h"

#include "common/json.h"
#include "operator/kube_http.h"

/* Initialises the elector; see leader.h. */
void leader_init(struct leader *l, const char *id, const char *ns,
                 const char *name) {
    memset(l, 0, sizeof *l);
    if (id && *id) {
        snprintf(l->id, sizeof l->id, "%s", id);
    } else {
        char host[64] = "aiq";
        gethostname(host, sizeof host - 1);
        host[sizeof host - 1] = '\0';
        snprintf(l->id, sizeof l->id, "%s-%ld", host, (long)getpid());
    }
    snprintf(l->ns, sizeof l->ns, "%s", ns && *ns ? ns : "default");
    snprintf(l->name, sizeof l->name, "%s", name && *name ? name : "aiq-operator");
    l->duration_s = 15;
    l->renew_every_s = 5;
    l->renew_deadline_s = 10;
}

/* Formats a MicroTime; see leader.h. */
const char *leader_microtime(char *buf, size_t cap, double now) {
    aiq_rfc3339(buf, cap, now, 6);
    return buf;
}

static int lead_add_str(json_object *o, const char *k, const char *v) {
    json_object *s = json_object_new_string(v);
    if (!s || json_object_object_add(o, k, s) != 0) {
        json_object_put(s);
        return -1;
    }
    return 0;
}

static int lead_add_int(json_object *o, const char *k, int64_t v) {
    json_object *s = json_object_new_int64(v);
    if (!s || json_object_object_add(o, k, s) != 0) {
        json_object_put(s);
        return -1;
    }
    return 0;
}

/* Builds the Lease we want: holder us, renewed now. old (may be NULL) gives
 * resourceVersion, acquireTime and leaseTransitions. */
static json_object *lead_build(const struct leader *l, json_object *old,
                               double now, bool take_over) {
    char mt[48];
    json_object *lease = json_object_new_object();
    json_object *meta = json_object_new_object();
    json_object *spec = json_object_new_object();
    if (!lease || !meta || !spec || json_object_object_add(lease, "metadata", meta) != 0) {
        json_object_put(meta);
        json_object_put(spec);
        json_object_put(lease);
        return NULL;
    }
    if (json_object_object_add(lease, "spec", spec) != 0) {
        json_object_put(spec);
        json_object_put(lease);
        return NULL;
    }
    const char *rv = old ? aiq_jpath_str(old, "metadata.resourceVersion") : NULL;
    const char *acq = old ? aiq_jpath_str(old, "spec.acquireTime") : NULL;
    int64_t transitions = 0;
    json_object *sp = NULL, *tr = NULL;
    if (old && json_object_object_get_ex(old, "spec", &sp) &&
        json_object_object_get_ex(sp, "leaseTransitions", &tr))
        transitions = json_object_get_int64(tr);
    leader_microtime(mt, sizeof mt, now);
    if (lead_add_str(lease, "apiVersion", "coordination.k8s.io/v1") ||
        lead_add_str(lease, "kind", "Lease") ||
        lead_add_str(meta, "name", l->name) ||
        lead_add_str(meta, "namespace", l->ns) ||
        (rv && lead_add_str(meta, "resourceVersion", rv)) ||
        lead_add_str(spec, "holderIdentity", l->id) ||
        lead_add_int(spec, "leaseDurationSeconds", (int64_t)l->duration_s) ||
        lead_add_str(spec, "acquireTime", (take_over || !acq) ? mt : acq) ||
        lead_add_str(spec, "renewTime", mt) ||
        lead_add_int(spec, "leaseTransitions",
                     transitions + ((take_over && old) ? 1 : 0))) {
        json_object_put(lease);
        return NULL;
    }
    return lease;
}

/* Decides the next write; see leader.h. */
json_object *leader_next(struct leader *l, json_object *lease, double now,
                         int *create) {
    *create = 0;
    if (!lease) {
        *create = 1;
        return lead_build(l, NULL, now, true);
    }
    const char *holder = aiq_jpath_str(lease, "spec.holderIdentity");
    const char *renew = aiq_jpath_str(lease, "spec.renewTime");
    json_object *sp = NULL, *d = NULL;
    double dur = l->duration_s;
    if (json_object_object_get_ex(lease, "spec", &sp) &&
        json_object_object_get_ex(sp, "leaseDurationSeconds", &d) &&
        json_object_get_int64(d) > 0)
        dur = (double)json_object_get_int64(d);

    char rec[sizeof l->observed];
    snprintf(rec, sizeof rec, "%.120s|%.60s", holder ? holder : "", renew ? renew : "");
    if (strcmp(rec, l->observed) != 0) {
        snprintf(l->observed, sizeof l->observed, "%s", rec);
        l->observed_at = now;
    }
    if (holder && strcmp(holder, l->id) == 0)
        return lead_build(l, lease, now, false); /* renew */
    if (!holder || !*holder || now >= l->observed_at + dur)
        return lead_build(l, lease, now, true); /* take over */
    l->is_leader = false;
    return NULL;
}

/* Records the write's outcome; see leader.h. */
void leader_written(struct leader *l, bool ok, double now) {
    if (ok) {
        l->is_leader = true;
        l->last_renew = now;
    } else if (l->is_leader && now - l->last_renew >= l->renew_deadline_s) {
        l->is_leader = false;
    }
}

/* One election round; see leader.h. */
aiq_rc leader_tick(struct leader *l, struct kube_client *c, double now,
                   aiq_err *err) {
    char path[768];
    json_object *cur = NULL, *want = NULL;
    int create = 0;
    aiq_rc rc = kube_path(path, sizeof path, "coordination.k8s.io", "v1", l->ns,
                          "leases", l->name, NULL, err);
    if (rc != AIQ_OK)
        goto out;
    aiq_err e2;
    aiq_err_clear(&e2);
    rc = kube_get(c, path, &cur, &e2);
    if (rc == AIQ_ENOTFOUND) {
        cur = NULL;
    } else if (rc != AIQ_OK) {
        if (err)
            *err = e2;
        leader_written(l, false, now);
        goto out;
    }
    want = leader_next(l, cur, now, &create);
    if (!want) {
        rc = AIQ_OK;
        goto out;
    }
    aiq_err_clear(&e2);
    if (create) {
        char coll[768];
        rc = kube_path(coll, sizeof coll, "coordination.k8s.io", "v1", l->ns,
                       "leases", NULL, NULL, err);
        if (rc == AIQ_OK)
            rc = kube_create(c, coll, want, NULL, &e2);
    } else {
        rc = kube_update(c, path, want, NULL, &e2);
    }
    if (rc == AIQ_ECONFLICT || rc == AIQ_EEXIST) {
        /* Someone else wrote first: we are not the leader this round. */
        l->is_leader = false;
        rc = AIQ_OK;
    } else if (rc == AIQ_OK) {
        leader_written(l, true, now);
    } else {
        if (err)
            *err = e2;
        leader_written(l, false, now);
    }
out:
    json_object_put(cur);
    json_object_put(want);
    return rc;
}

/* Gives the lease up; see leader.h. */
aiq_rc leader_release(struct leader *l, struct kube_client *c, double now,
                      aiq_err *err) {
    char path[768];
    json_object *cur = NULL, *want = NULL;
    aiq_rc rc = AIQ_OK;
    if (!l->is_leader)
        return AIQ_OK;
    l->is_leader = false;
    rc = kube_path(path, sizeof path, "coordination.k8s.io", "v1", l->ns,
                   "leases", l->name, NULL, err);
    if (rc == AIQ_OK)
        rc = kube_get(c, path, &cur, err);
    if (rc != AIQ_OK)
        goto out;
    const char *holder = aiq_jpath_str(cur, "spec.holderIdentity");
    if (!holder || strcmp(holder, l->id) != 0)
        goto out;
    want = lead_build(l, cur, now, false);
    json_object *sp = NULL;
    if (!want || !json_object_object_get_ex(want, "spec", &sp) ||
        lead_add_str(sp, "holderIdentity", "") ||
        lead_add_int(sp, "leaseDurationSeconds", 1)) {
        rc = aiq_err_set(err, AIQ_ENOMEM, "out of memory releasing the lease");
        goto out;
    }
    rc = kube_update(c, path, want, NULL, err);
out:
    json_object_put(cur);
    json_object_put(want);
    return rc;
}
