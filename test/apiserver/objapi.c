/* objapi.c -- the in-process object API of apiserver.h (used by the
 * simulator and tests): get, list, create, update, delete under the server
 * lock with the same rules as HTTP, binding through the pods/binding
 * rules, and apisrv_event, which records
 * core/v1 Events the way the real event recorder does (repeats merged
 * into count and lastTimestamp). */
#include "test/apiserver/apisrv_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

static const struct apisrv__type *objapi_type(apisrv *s, const char *resource,
                                              aiq_err *err) {
    const struct apisrv__type *t = apisrv__type_by_resource(s, resource);
    if (!t) aiq_err_set(err, AIQ_ENOTFOUND, "unknown resource %s", resource);
    return t;
}

/* See apiserver.h. */
json_object *apisrv_obj_get(apisrv *s, const char *resource, const char *ns,
                            const char *name) {
    json_object *o = NULL;
    pthread_mutex_lock(&s->mu);
    const struct apisrv__type *t = objapi_type(s, resource, NULL);
    if (t) o = apisrv__store_get(s, t->key, t->namespaced ? ns : NULL, name);
    pthread_mutex_unlock(&s->mu);
    return o;
}

/* The stored texts of a list, copied under the lock and parsed after it
 * is released: parsing 10,000 pods takes far longer than reading them, and
 * the simulator lists every pod each tick, so parsing under the lock
 * stalled every request for that long. */
struct objapi_texts {
    char **v;
    size_t n, cap;
    bool (*keep)(const char *json); /* NULL: every row */
    bool oom;
};

static int objapi_list_row(void *u, const char *key, const char *ns,
                           const char *name, const char *json) {
    struct objapi_texts *tx = u;
    (void)key; (void)ns; (void)name;
    if (tx->keep && !tx->keep(json))
        return 0;
    if (tx->n == tx->cap) {
        size_t nc = tx->cap ? tx->cap * 2 : 256;
        char **nv = realloc(tx->v, nc * sizeof *nv);
        if (!nv) {
            tx->oom = true;
            return 1;
        }
        tx->v = nv;
        tx->cap = nc;
    }
    if (!(tx->v[tx->n] = strdup(json))) {
        tx->oom = true;
        return 1;
    }
    tx->n++;
    return 0;
}

/* See apiserver.h. The objects are read under the lock and parsed after
 * it is released (a consistent snapshot either way). */
json_object *apisrv_obj_list(apisrv *s, const char *resource, const char *ns) {
    return apisrv_obj_list_if(s, resource, ns, NULL);
}

/* See apiserver.h. */
json_object *apisrv_obj_list_if(apisrv *s, const char *resource, const char *ns,
                                bool (*keep)(const char *json)) {
    json_object *arr = json_object_new_array();
    struct objapi_texts tx = {NULL, 0, 0, keep, false};
    pthread_mutex_lock(&s->mu);
    const struct apisrv__type *t = objapi_type(s, resource, NULL);
    if (t) apisrv__store_scan(s, t->key, t->namespaced ? ns : NULL, NULL, NULL,
                              objapi_list_row, &tx);
    pthread_mutex_unlock(&s->mu);
    for (size_t i = 0; i < tx.n; i++) {
        json_object *o = tx.oom ? NULL : apisrv__parse(tx.v[i]);
        if (o) json_object_array_add(arr, o);
        free(tx.v[i]);
    }
    free(tx.v);
    return arr;
}

/* See apiserver.h. */
aiq_rc apisrv_obj_create(apisrv *s, const char *resource, json_object *obj,
                         aiq_err *err) {
    struct apisrv__st st;
    aiq_rc rc = AIQ_OK;
    apisrv__st_init(&st);
    pthread_mutex_lock(&s->mu);
    const struct apisrv__type *t = objapi_type(s, resource, err);
    if (!t) {
        json_object_put(obj);
        rc = AIQ_ENOTFOUND;
    } else if (apisrv__create(s, t, NULL, obj, NULL, NULL, &st)) {
        rc = apisrv__st_err(&st, err);
    }
    pthread_mutex_unlock(&s->mu);
    apisrv__st_deinit(&st);
    return rc;
}

/* See apiserver.h. */
aiq_rc apisrv_obj_update(apisrv *s, const char *resource, json_object *obj,
                         bool status_only, aiq_err *err) {
    struct apisrv__st st;
    struct apisrv__wopts o = {.status_only = status_only};
    aiq_rc rc = AIQ_OK;
    char ns[APISRV__MAX_NAME + 1], name[APISRV__MAX_NAME + 1];
    const char *p;
    apisrv__st_init(&st);
    p = obj ? aiq_jpath_str(obj, "metadata.name") : NULL;
    if (!p) {
        json_object_put(obj);
        return aiq_err_field(err, AIQ_EINVAL, "metadata.name", "metadata.name: Required value");
    }
    snprintf(name, sizeof name, "%s", p);
    p = aiq_jpath_str(obj, "metadata.namespace");
    snprintf(ns, sizeof ns, "%s", p ? p : "default");
    pthread_mutex_lock(&s->mu);
    const struct apisrv__type *t = objapi_type(s, resource, err);
    if (!t) {
        json_object_put(obj);
        rc = AIQ_ENOTFOUND;
    } else if (apisrv__update(s, t, ns, name, obj, &o, NULL, &st)) {
        rc = apisrv__st_err(&st, err);
    }
    pthread_mutex_unlock(&s->mu);
    apisrv__st_deinit(&st);
    return rc;
}

/* See apiserver.h. */
aiq_rc apisrv_obj_delete(apisrv *s, const char *resource, const char *ns,
                         const char *name, aiq_err *err) {
    return apisrv_obj_delete_opts(s, resource, ns, name, NULL, err);
}

/* See apiserver.h. */
aiq_rc apisrv_obj_bind(apisrv *s, const char *ns, const char *name, const char *node,
                       aiq_err *err) {
    struct apisrv__st st;
    aiq_rc rc = AIQ_OK;
    json_object *b = json_object_new_object(), *md = json_object_new_object(), *tg = json_object_new_object();
    json_object_object_add(md, "name", json_object_new_string(name));
    json_object_object_add(b, "metadata", md);
    json_object_object_add(tg, "kind", json_object_new_string("Node"));
    json_object_object_add(tg, "name", json_object_new_string(node));
    json_object_object_add(b, "target", tg);
    apisrv__st_init(&st);
    pthread_mutex_lock(&s->mu);
    if (apisrv__pod_bind(s, ns ? ns : "default", name, b, false, &st)) rc = apisrv__st_err(&st, err);
    pthread_mutex_unlock(&s->mu);
    apisrv__st_deinit(&st);
    json_object_put(b);
    return rc;
}

/* See apiserver.h. */
aiq_rc apisrv_obj_delete_opts(apisrv *s, const char *resource, const char *ns,
                              const char *name, const struct apisrv_delete_opts *d,
                              aiq_err *err) {
    struct apisrv__st st;
    struct apisrv__wopts o = {.propagation = "Background"};
    aiq_rc rc = AIQ_OK;
    if (d) {
        o.has_grace = d->has_grace;
        o.grace = d->grace;
        o.uid_pre = d->uid;
    }
    apisrv__st_init(&st);
    pthread_mutex_lock(&s->mu);
    const struct apisrv__type *t = objapi_type(s, resource, err);
    if (!t) rc = AIQ_ENOTFOUND;
    else if (apisrv__delete(s, t, ns ? ns : "default", name, &o, NULL, &st))
        rc = apisrv__st_err(&st, err);
    pthread_mutex_unlock(&s->mu);
    apisrv__st_deinit(&st);
    return rc;
}

/* FNV-1a over the parts that make two events "the same" for merging. */
static unsigned long long objapi_event_hash(const char *const parts[], int n) {
    unsigned long long h = 1469598103934665603ULL;
    for (int i = 0; i < n; i++) {
        for (const char *p = parts[i]; *p; p++) {
            h ^= (unsigned char)*p;
            h *= 1099511628211ULL;
        }
        h ^= 0xff;   /* separator */
        h *= 1099511628211ULL;
    }
    return h;
}

/* Records or merges the event; with once, an event that exists already
 * is left alone. */
static aiq_rc objapi_event(apisrv *s, json_object *involved, const char *type,
                           const char *reason, const char *message,
                           const char *component, bool once) {
    struct apisrv__st st;
    aiq_rc rc = AIQ_OK;
    char now[40], name[APISRV__MAX_NAME + 1];
    const char *iname = aiq_jpath_str(involved, "metadata.name");
    const char *ins = aiq_jpath_str(involved, "metadata.namespace");
    const char *uid = aiq_jpath_str(involved, "metadata.uid");
    const char *ns = ins && ins[0] ? ins : "default";
    const char *comp = component ? component : "aiq-apiserver";
    json_object *found = NULL;
    if (!iname || !reason || !message) return AIQ_EINVAL;
    apisrv__st_init(&st);
    apisrv__now_rfc3339(now, sizeof now);
    pthread_mutex_lock(&s->mu);
    const struct apisrv__type *t = apisrv__type_by_key(s, "/events");
    /* repeats of an event share its name (object name + hash of uid,
     * type, reason, message, component), so merging is one lookup */
    const char *parts[] = {uid ? uid : "", type ? type : "Normal", reason, message, comp};
    snprintf(name, sizeof name, "%.200s.%016llx", iname, objapi_event_hash(parts, 5));
    found = apisrv__store_get(s, "/events", ns, name);
    if (found && once) {
        json_object_put(found);   /* said already */
    } else if (found) {
        json_object *c;
        long long n = json_object_object_get_ex(found, "count", &c) ? json_object_get_int64(c) : 1;
        json_object_object_add(found, "count", json_object_new_int64(n + 1));
        json_object_object_add(found, "lastTimestamp", json_object_new_string(now));
        if (apisrv__update(s, t, ns, name, found, NULL, NULL, &st))
            rc = apisrv__st_err(&st, NULL);
    } else {
        json_object *ev = json_object_new_object(), *md = json_object_new_object();
        json_object *io = json_object_new_object(), *src = json_object_new_object();
        json_object_object_add(md, "name", json_object_new_string(name));
        json_object_object_add(md, "namespace", json_object_new_string(ns));
        json_object_object_add(ev, "metadata", md);
        const char *ik = aiq_jpath_str(involved, "kind"), *iav = aiq_jpath_str(involved, "apiVersion");
        json_object_object_add(io, "kind", json_object_new_string(ik ? ik : ""));
        if (iav) json_object_object_add(io, "apiVersion", json_object_new_string(iav));
        json_object_object_add(io, "name", json_object_new_string(iname));
        if (ins) json_object_object_add(io, "namespace", json_object_new_string(ins));
        if (uid) json_object_object_add(io, "uid", json_object_new_string(uid));
        json_object_object_add(ev, "involvedObject", io);
        json_object_object_add(ev, "reason", json_object_new_string(reason));
        json_object_object_add(ev, "message", json_object_new_string(message));
        json_object_object_add(ev, "type", json_object_new_string(type ? type : "Normal"));
        json_object_object_add(src, "component", json_object_new_string(comp));
        json_object_object_add(ev, "source", src);
        json_object_object_add(ev, "reportingComponent", json_object_new_string(comp));
        json_object_object_add(ev, "firstTimestamp", json_object_new_string(now));
        json_object_object_add(ev, "lastTimestamp", json_object_new_string(now));
        json_object_object_add(ev, "count", json_object_new_int(1));
        if (apisrv__create(s, t, ns, ev, NULL, NULL, &st)) rc = apisrv__st_err(&st, NULL);
    }
    pthread_mutex_unlock(&s->mu);
    apisrv__st_deinit(&st);
    return rc;
}

/* See apiserver.h. involved is borrowed. */
aiq_rc apisrv_event(apisrv *s, json_object *involved, const char *type,
                    const char *reason, const char *message,
                    const char *component) {
    return objapi_event(s, involved, type, reason, message, component, false);
}

/* See apiserver.h. involved is borrowed. */
aiq_rc apisrv_event_once(apisrv *s, json_object *involved, const char *type,
                         const char *reason, const char *message,
                         const char *component) {
    return objapi_event(s, involved, type, reason, message, component, true);
}
