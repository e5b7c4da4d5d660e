/* objects.c -- the write path of the local API server, shared by the HTTP
 * verbs and the in-process object API: create, update (main resource and
 * status subresource), delete with finalizers and owner-reference garbage
 * collection, plus the rules the real server applies on the way (name
 * validation, namespace existence, resourceVersion conflicts, generation
 * bumps, custom-resource schema validation, pod scheduling-gate rules,
 * then validating admission policies for HTTP writes) and the watch
 * history. Every function expects apisrv.mu held. */
#include "test/apiserver/apisrv_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test/apiserver/humantime.h"
#include "test/apiserver/schema.h"
#include "common/aiq_time.h"
#include "common/json.h"

/* ---- history ------------------------------------------------------------ */

/* See apisrv_int.h. */
void apisrv__emit(apisrv *s, const char *type, const char *key,
                  const char *ns, json_object *obj, json_object *prev, char *text) {
    struct apisrv__event *e;
    if (s->hist_cap <= 0) {
        s->hist_base_rv = s->rv;
        free(text);
        return;
    }
    if (s->hist_len == s->hist_cap) {
        e = &s->hist[s->hist_head];
        s->hist_base_rv = e->rv;
        json_object_put(e->obj);
        json_object_put(e->prev);
        free(e->text);
        s->hist_head = (s->hist_head + 1) % s->hist_cap;
        s->hist_len--;
    }
    e = &s->hist[(s->hist_head + s->hist_len) % s->hist_cap];
    s->hist_len++;
    e->rv = s->rv;
    snprintf(e->type, sizeof e->type, "%s", type);
    snprintf(e->key, sizeof e->key, "%s", key);
    snprintf(e->ns, sizeof e->ns, "%s", ns ? ns : "");
    e->obj = json_object_get(obj);
    e->prev = prev ? json_object_get(prev) : NULL;
    e->text = text;
    pthread_cond_broadcast(&s->cond);
}

/* See apisrv_int.h. A write answers with the object it committed, which
 * is the latest event's (nothing changes it after the commit), so the
 * answer reuses the text made for the row and the event. */
const char *apisrv__last_text(apisrv *s, json_object *obj) {
    struct apisrv__event *e;
    if (!obj || s->hist_len <= 0) return NULL;
    e = &s->hist[(s->hist_head + s->hist_len - 1) % s->hist_cap];
    return e->obj == obj ? e->text : NULL;
}

/* ---- small helpers -------------------------------------------------------- */

static void obj_set_str(json_object *o, const char *k, const char *v) {
    json_object_object_add(o, k, json_object_new_string(v));
}

static const char *md_str(json_object *obj, const char *k) {
    return aiq_jstr(aiq_jget(obj, "metadata"), k);
}

static json_object *json_copy(json_object *o) {
    json_object *c = NULL;
    if (o && json_object_deep_copy(o, &c, NULL) != 0) return NULL;
    return c;
}

/* Copies key k of src's metadata into dst's metadata (removing it there
 * when src lacks it). */
static void md_carry(json_object *dst, json_object *src, const char *k) {
    json_object *smd, *v, *dmd = apisrv__obj_child(dst, "metadata");
    if (json_object_object_get_ex(src, "metadata", &smd) &&
        json_object_object_get_ex(smd, k, &v))
        json_object_object_add(dmd, k, json_copy(v));
    else
        json_object_object_del(dmd, k);
}

static long long md_generation(json_object *obj) {
    json_object *md, *g;
    if (json_object_object_get_ex(obj, "metadata", &md) &&
        json_object_object_get_ex(md, "generation", &g))
        return json_object_get_int64(g);
    return 0;
}

static bool has_nonempty_array(json_object *o, const char *k) {
    json_object *a;
    return o && json_object_object_get_ex(o, k, &a) &&
           json_object_is_type(a, json_type_array) && json_object_array_length(a) > 0;
}

static void new_uid(apisrv *s, char *buf, size_t cap) {
    unsigned long long n = ++s->uid_seq;
    unsigned r1 = (unsigned)rand_r(&s->rnd), r2 = (unsigned)rand_r(&s->rnd);
    snprintf(buf, cap, "%08x-%04x-4%03x-a%03x-%012llx", r1, r2 & 0xffff,
             (r2 >> 16) & 0xfff, (unsigned)(n >> 48) & 0xfff,
             n & 0xffffffffffffULL);
}

static int conflict(struct apisrv__st *st, const struct apisrv__type *t,
                    const char *name) {
    char q[256];
    apisrv__qualified(t, q, sizeof q);
    apisrv__st_set(st, 409, "Conflict",
                   "Operation cannot be fulfilled on %s \"%s\": the object has been "
                   "modified; please apply your changes to the latest version and try again",
                   q, name);
    snprintf(st->name, sizeof st->name, "%s", name);
    snprintf(st->group, sizeof st->group, "%s", t->group);
    snprintf(st->kind, sizeof st->kind, "%s", t->resource);
    return -1;
}

/* Hands out the next resourceVersion, stamps obj, stores it and records
 * the event (prev: the object before a MODIFIED, for selector-filtered
 * watches). For DELETED the row is removed instead. */
static int commit(apisrv *s, const struct apisrv__type *t, const char *ns,
                  const char *name, json_object *obj, json_object *prev,
                  const char *type, struct apisrv__st *st) {
    char rvs[32], *text = NULL;
    bool crd = !strcmp(t->key, "apiextensions.k8s.io/customresourcedefinitions");
    aiq_rc rc;
    s->rv++;
    snprintf(rvs, sizeof rvs, "%lld", s->rv);
    obj_set_str(apisrv__obj_child(obj, "metadata"), "resourceVersion", rvs);
    /* one transaction: one commit (and WAL append) per write, not one per
     * statement, and a failed write leaves no part of itself stored */
    rc = apisrv__store_begin(s);
    if (rc == AIQ_OK && !strcmp(type, "DELETED")) {
        rc = apisrv__store_del(s, t->key, ns, name);
        apisrv__store_applied_drop(s, t->key, ns, name);
    } else if (rc == AIQ_OK) {
        /* serialized once: the row, the watch event and the answer (see
         * verbs.c) are the same text */
        const char *txt = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN);
        text = txt ? strdup(txt) : NULL;
        rc = text ? apisrv__store_put(s, t->key, ns, name, obj, text) : AIQ_ENOMEM;
    }
    if (rc == AIQ_OK) rc = apisrv__store_save_rv(s, s->rv);
    if (rc == AIQ_OK) rc = apisrv__store_end(s, true);
    else (void)apisrv__store_end(s, false);
    if (rc != AIQ_OK) {
        free(text);
        return apisrv__st_set(st, 500, "InternalError", "storage error: %s",
                              sqlite3_errmsg(s->db));
    }
    if (crd) {   /* serialized by its first watcher, after the sync below */
        free(text);
        text = NULL;
    }
    apisrv__emit(s, type, t->key, ns, obj, prev, text);
    if (crd) apisrv__types_sync_crd(s, obj, !strcmp(type, "DELETED"));
    return 0;
}

/* ---- kind-specific validation -------------------------------------------- */

static void crd_validate(json_object *obj, const char *name,
                         struct apisrv__st *st) {
    const char *group = aiq_jpath_str(obj, "spec.group");
    const char *plural = aiq_jpath_str(obj, "spec.names.plural");
    json_object *spec = NULL, *v = NULL;
    if (!group || !group[0])
        apisrv__st_cause(st, "FieldValueRequired", "spec.group", "Required value");
    if (!plural || !plural[0])
        apisrv__st_cause(st, "FieldValueRequired", "spec.names.plural", "Required value");
    if (!aiq_jpath_str(obj, "spec.names.kind"))
        apisrv__st_cause(st, "FieldValueRequired", "spec.names.kind", "Required value");
    json_object_object_get_ex(obj, "spec", &spec);
    if (!spec || !json_object_object_get_ex(spec, "versions", &v) ||
        !json_object_is_type(v, json_type_array) || json_object_array_length(v) == 0)
        apisrv__st_cause(st, "FieldValueRequired", "spec.versions", "Required value");
    if (group && plural) {
        char want[400];
        snprintf(want, sizeof want, "%s.%s", plural, group);
        if (strcmp(want, name)) {
            char msg[700];
            snprintf(msg, sizeof msg, "Invalid value: \"%s\": must be spec.names.plural+\".\"+spec.group", name);
            apisrv__st_cause(st, "FieldValueInvalid", "metadata.name", "%s", msg);
        }
    }
}

/* Validates obj for t (old is the stored object on update, else NULL)
 * in the real server's order: ObjectMeta, the kind's own rules (pods,
 * CRDs), then a custom resource's schema and its CEL rules (which see the
 * causes before them). Collects causes in st and returns -1 with a 422
 * (or the 400 of strict unknown fields) when any. May prune and default a
 * custom resource per its schema. */
static int validate(apisrv *s, const struct apisrv__type *t, json_object *obj,
                    json_object *old, const struct apisrv__wopts *o,
                    const char *name, struct apisrv__st *st) {
    (void)s;
    apisrv__validate_meta(t, obj, st);
    if (!strcmp(t->key, "/pods") && !(o && o->status_only)) {
        if (old) apisrv__pod_validate_update(obj, old, st);
        else apisrv__pod_validate_create(obj, st);
    }
    if (!strcmp(t->key, "apiextensions.k8s.io/customresourcedefinitions"))
        crd_validate(obj, name, st);
    if (t->custom && t->schema) {
        if (!st->causes) st->causes = json_object_new_array();
        if (sv_validate(t->schema, obj, o && o->strict, st->causes) > 0) {
            char msg[1024];
            if (sv_status_message(t->kind, t->group, name, st->causes, msg, sizeof msg) == 400) {
                json_object_put(st->causes);
                st->causes = NULL;
                return apisrv__st_set(st, 400, "BadRequest", "%s", msg);
            }
        }
    }
    if (apisrv__st_has_causes(st)) return apisrv__st_invalid(st, t, name);
    return 0;
}

/* The status a newly created object starts with (the real server resets
 * what clients send for these kinds). */
static void initial_status(const struct apisrv__type *t, json_object *obj) {
    if (!strcmp(t->key, "/pods")) {
        json_object *st = json_object_new_object(), *spec;
        obj_set_str(st, "phase", "Pending");
        obj_set_str(st, "qosClass", apisrv__pod_qos(obj));
        if (json_object_object_get_ex(obj, "spec", &spec) &&
            has_nonempty_array(spec, "schedulingGates")) {
            json_object *conds = json_object_new_array(), *c = json_object_new_object();
            char now[40];
            apisrv__now_rfc3339(now, sizeof now);
            obj_set_str(c, "type", "PodScheduled");
            obj_set_str(c, "status", "False");
            json_object_object_add(c, "lastProbeTime", NULL);
            obj_set_str(c, "lastTransitionTime", now);
            obj_set_str(c, "reason", "SchedulingGated");
            obj_set_str(c, "message", "Scheduling is blocked due to non-empty scheduling gates");
            json_object_array_add(conds, c);
            json_object_object_add(st, "conditions", conds);
        }
        json_object_object_add(obj, "status", st);
    } else if (!strcmp(t->key, "/namespaces")) {
        json_object *st = json_object_new_object();
        obj_set_str(st, "phase", "Active");
        json_object_object_add(obj, "status", st);
    } else if (!strcmp(t->key, "apiextensions.k8s.io/customresourcedefinitions")) {
        json_object *st = json_object_new_object(), *conds = json_object_new_array(), *names;
        char now[40];
        apisrv__now_rfc3339(now, sizeof now);
        const char *types[2] = {"NamesAccepted", "Established"};
        const char *reasons[2] = {"NoConflicts", "InitialNamesAccepted"};
        for (int i = 0; i < 2; i++) {
            json_object *c = json_object_new_object();
            obj_set_str(c, "type", types[i]);
            obj_set_str(c, "status", "True");
            obj_set_str(c, "reason", reasons[i]);
            obj_set_str(c, "lastTransitionTime", now);
            obj_set_str(c, "message", i ? "the initial names have been accepted"
                                        : "no conflicts found");
            json_object_array_add(conds, c);
        }
        json_object_object_add(st, "conditions", conds);
        json_object *spec;
        if (json_object_object_get_ex(obj, "spec", &spec) &&
            json_object_object_get_ex(spec, "names", &names))
            json_object_object_add(st, "acceptedNames", json_copy(names));
        json_object *sv = json_object_new_array(), *vers;
        if (spec && json_object_object_get_ex(spec, "versions", &vers))
            for (size_t i = 0; i < json_object_array_length(vers); i++) {
                const char *vn = aiq_jpath_str(json_object_array_get_idx(vers, i), "name");
                if (vn) json_object_array_add(sv, json_object_new_string(vn));
            }
        json_object_object_add(st, "storedVersions", sv);
        json_object_object_add(obj, "status", st);
    } else if (t->custom && t->has_status) {
        json_object_object_del(obj, "status");
    }
}

static void set_type_meta(const struct apisrv__type *t, json_object *obj) {
    char av[200];
    if (t->group[0]) snprintf(av, sizeof av, "%s/%s", t->group, t->version);
    else snprintf(av, sizeof av, "%s", t->version);
    obj_set_str(obj, "apiVersion", av);
    obj_set_str(obj, "kind", t->kind);
}

/* Checks the namespace of a namespaced request; sets *ns_out. */
static int check_namespace(apisrv *s, const struct apisrv__type *t,
                           const char *ns, json_object *obj,
                           const char **ns_out, struct apisrv__st *st) {
    json_object *md = apisrv__obj_child(obj, "metadata");
    const char *bns = md_str(obj, "namespace");
    *ns_out = NULL;
    if (!t->namespaced) {
        json_object_object_del(md, "namespace");
        return 0;
    }
    if (ns && bns && bns[0] && strcmp(ns, bns))
        return apisrv__st_set(st, 400, "BadRequest",
            "the namespace of the provided object does not match the namespace sent on the request");
    if (!ns) ns = (bns && bns[0]) ? bns : "default";
    obj_set_str(md, "namespace", ns);
    /* obj_set_str freed the body's string when ns pointed into it: use the
     * stored copy from here on. */
    *ns_out = md_str(obj, "namespace");
    ns = *ns_out;
    json_object *nsobj = apisrv__store_get(s, "/namespaces", "", ns);
    if (!nsobj) {
        apisrv__st_set(st, 404, "NotFound", "namespaces \"%s\" not found", ns);
        snprintf(st->name, sizeof st->name, "%s", ns);
        snprintf(st->kind, sizeof st->kind, "namespaces");
        return -1;
    }
    json_object_put(nsobj);
    return 0;
}

/* ---- create ----------------------------------------------------------------- */

/* What a real server adds to a namespace: the label
 * kubernetes.io/metadata.name with its name (defaulting, so validation
 * sees it), and on create the spec finalizer "kubernetes"; an update keeps
 * the old spec.finalizers. */
static void namespace_defaults(json_object *obj, json_object *old) {
    const char *name = md_str(obj, "name");
    json_object *spec, *fin = NULL;
    if (name && name[0])
        obj_set_str(apisrv__obj_child(apisrv__obj_child(obj, "metadata"), "labels"),
                    "kubernetes.io/metadata.name", name);
    spec = apisrv__obj_child(obj, "spec");
    if (old) {
        json_object *ospec;
        if (json_object_object_get_ex(old, "spec", &ospec) &&
            json_object_object_get_ex(ospec, "finalizers", &fin))
            json_object_object_add(spec, "finalizers", json_copy(fin));
        else
            json_object_object_del(spec, "finalizers");
        return;
    }
    if (!json_object_object_get_ex(spec, "finalizers", &fin) || !json_object_is_type(fin, json_type_array)) {
        fin = json_object_new_array();
        json_object_object_add(spec, "finalizers", fin);
    }
    for (size_t i = 0; i < json_object_array_length(fin); i++) {
        const char *f = json_object_get_string(json_object_array_get_idx(fin, i));
        if (f && !strcmp(f, "kubernetes")) return;
    }
    json_object_array_add(fin, json_object_new_string("kubernetes"));
}

/* The most a generateName contributes: the generated name (prefix plus
 * five random characters) stays within 63 (names.SimpleNameGenerator). */
#define OBJ_MAX_GENERATED_PREFIX 58

/* See apisrv_int.h. Order as the real server: decode (pod defaults),
 * validation, admission, then the store (AlreadyExists). */
int apisrv__create(apisrv *s, const struct apisrv__type *t, const char *ns,
                   json_object *obj, const struct apisrv__wopts *o,
                   json_object **out, struct apisrv__st *st) {
    int rc = -1;
    json_object *md, *old = NULL;
    const char *name;
    char gen[APISRV__MAX_NAME + 8], buf[64], vname[1024];
    if (out) *out = NULL;
    if (!obj || !json_object_is_type(obj, json_type_object)) {
        apisrv__st_set(st, 400, "BadRequest", "the body of the request must be a JSON object");
        goto out_put;
    }
    set_type_meta(t, obj);
    md = apisrv__obj_child(obj, "metadata");
    if (check_namespace(s, t, ns, obj, &ns, st)) goto out_put;
    if (!strcmp(t->key, "/pods") && apisrv__pod_default(obj, st)) goto out_put;
    name = md_str(obj, "name");
    if ((!name || !name[0]) && md_str(obj, "generateName") && md_str(obj, "generateName")[0]) {
        static const char alpha[] = "bcdfghjklmnpqrstvwxz2456789";
        size_t n = (size_t)snprintf(gen, sizeof gen, "%.*s", OBJ_MAX_GENERATED_PREFIX,
                                    md_str(obj, "generateName"));
        for (int i = 0; i < 5; i++) gen[n + (size_t)i] = alpha[rand_r(&s->rnd) % 27];
        gen[n + 5] = 0;
        obj_set_str(md, "name", gen);
    }
    if (!strcmp(t->key, "/namespaces")) namespace_defaults(obj, NULL);
    name = md_str(obj, "name");
    /* the name shown in messages: obj's may be replaced while validating */
    snprintf(vname, sizeof vname, "%s", name ? name : "");
    initial_status(t, obj);
    if (validate(s, t, obj, NULL, o, vname, st)) goto out_put;
    if (!strcmp(t->key, "/pods") && ns && apisrv__pod_security(s, ns, vname, obj, st))
        goto out_put;
    if (o && o->user &&
        apisrv__admit(s, t, "CREATE", ns, vname, NULL, obj, NULL, o->user, o->dry_run, st))
        goto out_put;
    old = apisrv__store_get(s, t->key, ns, vname);
    if (old) {
        char q[256];
        apisrv__qualified(t, q, sizeof q);
        apisrv__st_set(st, 409, "AlreadyExists", "%s \"%s\" already exists", q, vname);
        snprintf(st->name, sizeof st->name, "%.*s", (int)sizeof st->name - 1, vname);
        snprintf(st->group, sizeof st->group, "%s", t->group);
        snprintf(st->kind, sizeof st->kind, "%s", t->resource);
        goto out_put;
    }
    new_uid(s, buf, sizeof buf);
    obj_set_str(md, "uid", buf);
    apisrv__now_rfc3339(buf, sizeof buf);
    obj_set_str(md, "creationTimestamp", buf);
    json_object_object_add(md, "generation", json_object_new_int64(1));
    json_object_object_del(md, "deletionTimestamp");
    json_object_object_del(md, "deletionGracePeriodSeconds");
    json_object_object_del(md, "resourceVersion");
    json_object_object_del(md, "managedFields");
    if (!(o && o->dry_run) && commit(s, t, ns, vname, obj, NULL, "ADDED", st))
        goto out_put;
    rc = 0;
    if (out) *out = json_object_get(obj);
out_put:
    json_object_put(old);
    json_object_put(obj);
    return rc;
}

/* ---- delete ------------------------------------------------------------------ */

struct collect { json_object *rows; };

static int collect_row(void *u, const char *key, const char *ns,
                       const char *name, const char *json) {
    struct collect *c = u;
    json_object *r = json_object_new_object();
    (void)json;
    obj_set_str(r, "key", key);
    obj_set_str(r, "ns", ns);
    obj_set_str(r, "name", name);
    json_object_array_add(c->rows, r);
    return 0;
}

/* Deletes every row listed (dependents, namespace contents, custom
 * resources of a removed CRD); errors on individual rows are ignored as
 * the real garbage collector retries them later. */
static void delete_rows(apisrv *s, json_object *rows, const char *prop) {
    struct apisrv__wopts o = {.propagation = prop};
    for (size_t i = 0; i < json_object_array_length(rows); i++) {
        json_object *r = json_object_array_get_idx(rows, i);
        const struct apisrv__type *t = apisrv__type_by_key(s, aiq_jpath_str(r, "key"));
        struct apisrv__st st;
        apisrv__st_init(&st);
        if (t) {
            const char *ns = aiq_jpath_str(r, "ns");
            apisrv__delete(s, t, ns && ns[0] ? ns : NULL, aiq_jpath_str(r, "name"), &o, NULL, &st);
        }
        apisrv__st_deinit(&st);
    }
}

/* Removes an object for good and cascades to what it owns or contains. */
static int crd_row(void *u, const char *key, const char *ns, const char *name,
                   const char *json) {
    struct collect *c = u;
    json_object *r = json_object_new_object(), *o = apisrv__parse(json);
    if (!o) {
        json_object_put(r);
        return 0;
    }
    obj_set_str(r, "key", key);
    obj_set_str(r, "ns", ns);
    obj_set_str(r, "name", name);
    json_object_object_add(r, "obj", o);
    json_object_array_add(c->rows, r);
    return 0;
}

/* Removes every instance of a CRD's kind (finalizers are not waited for)
 * with a DELETED event each, while the kind is still registered. */
static void crd_remove_instances(apisrv *s, json_object *crd) {
    const char *g = aiq_jpath_str(crd, "spec.group"), *p = aiq_jpath_str(crd, "spec.names.plural");
    char key[APISRV__KEY];
    struct collect c;
    const struct apisrv__type *ct;
    if (!g || !p) return;
    snprintf(key, sizeof key, "%s/%s", g, p);
    if (!(ct = apisrv__type_by_key(s, key))) return;
    c.rows = json_object_new_array();
    apisrv__store_scan(s, key, NULL, NULL, NULL, crd_row, &c);
    for (size_t i = 0; i < json_object_array_length(c.rows); i++) {
        json_object *r = json_object_array_get_idx(c.rows, i);
        struct apisrv__st st;
        const char *ns = aiq_jpath_str(r, "ns");
        apisrv__st_init(&st);
        commit(s, ct, ns && ns[0] ? ns : NULL, aiq_jpath_str(r, "name"),
               json_object_object_get(r, "obj"), NULL, "DELETED", &st);
        apisrv__st_deinit(&st);
    }
    json_object_put(c.rows);
}

/* Removes an object for good and cascades to what it owns or contains. */
static int remove_now(apisrv *s, const struct apisrv__type *t, const char *ns,
                      const char *name, json_object *obj, const char *prop,
                      struct apisrv__st *st) {
    struct collect c = {json_object_new_array()};
    char uid[128];
    snprintf(uid, sizeof uid, "%s", md_str(obj, "uid") ? md_str(obj, "uid") : "");
    if (!strcmp(t->key, "apiextensions.k8s.io/customresourcedefinitions"))
        crd_remove_instances(s, obj);
    if (commit(s, t, ns, name, obj, NULL, "DELETED", st)) {
        json_object_put(c.rows);
        return -1;
    }
    if (!strcmp(t->key, "/namespaces"))
        apisrv__store_scan(s, NULL, name, NULL, NULL, collect_row, &c);
    if (uid[0] && !(prop && !strcmp(prop, "Orphan")))
        apisrv__store_scan_owned(s, uid, collect_row, &c);
    delete_rows(s, c.rows, "Background");
    json_object_put(c.rows);
    return 0;
}

/* now + secs as RFC 3339 (whole seconds, as metav1.Time is stored). */
static void obj_time_plus(double secs, char *buf, size_t cap) {
    aiq_rfc3339(buf, cap, (double)(time(NULL) + (time_t)secs), 0);
}

static long long md_int(json_object *obj, const char *k, long long dflt) {
    return aiq_jint(aiq_jget(obj, "metadata"), k, dflt);
}

static bool has_finalizers(json_object *obj) {
    json_object *md, *fin;
    return json_object_object_get_ex(obj, "metadata", &md) &&
           json_object_object_get_ex(md, "finalizers", &fin) &&
           json_object_is_type(fin, json_type_array) && json_object_array_length(fin) > 0;
}

/* DeleteOptions.preconditions (rest.BeforeDelete): -1 with a 409 when the
 * stored object is not the one the client meant. */
static int delete_preconditions(const struct apisrv__type *t, json_object *obj,
                                const struct apisrv__wopts *o, struct apisrv__st *st) {
    const char *uid = md_str(obj, "uid"), *rv = md_str(obj, "resourceVersion");
    const char *name = md_str(obj, "name");
    char q[256];
    /* the real server names the kind here, not the resource */
    if (t->group[0]) snprintf(q, sizeof q, "%s.%s", t->kind, t->group);
    else snprintf(q, sizeof q, "%s", t->kind);
    if (o && o->uid_pre && strcmp(o->uid_pre, uid ? uid : ""))
        apisrv__st_set(st, 409, "Conflict",
                       "Operation cannot be fulfilled on %s \"%s\": the UID in the precondition (%s) does "
                       "not match the UID in record (%s). The object might have been deleted and then "
                       "recreated", q, name ? name : "", o->uid_pre, uid ? uid : "");
    else if (o && o->rv_pre && strcmp(o->rv_pre, rv ? rv : ""))
        apisrv__st_set(st, 409, "Conflict",
                       "Operation cannot be fulfilled on %s \"%s\": the ResourceVersion in the precondition "
                       "(%s) does not match the ResourceVersion in record (%s). The object might have "
                       "been modified", q, name ? name : "", o->rv_pre, rv ? rv : "");
    else
        return 0;
    snprintf(st->name, sizeof st->name, "%s", name ? name : "");
    snprintf(st->group, sizeof st->group, "%s", t->group);
    snprintf(st->kind, sizeof st->kind, "%s", t->kind);
    return -1;
}

/* The grace period a DELETE gives a pod that is not being deleted yet
 * (podStrategy.CheckGracefulDelete): the request's, else the pod's
 * terminationGracePeriodSeconds; 0 for a pod never bound or already
 * finished; a negative one counts as 1. */
static long long pod_grace(json_object *pod, const struct apisrv__wopts *o) {
    long long period = 0;
    json_object *spec, *g;
    const char *node = aiq_jpath_str(pod, "spec.nodeName");
    const char *phase = aiq_jpath_str(pod, "status.phase");
    if (o && o->has_grace)
        period = o->grace;
    else if (json_object_object_get_ex(pod, "spec", &spec) &&
             json_object_object_get_ex(spec, "terminationGracePeriodSeconds", &g))
        period = json_object_get_int64(g);
    if (!node || !node[0]) period = 0;
    if (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))) period = 0;
    return period < 0 ? 1 : period;
}

/* Graceful deletion of a pod (rest.BeforeDelete with the pod strategy):
 * sets *graceful when obj got a new deletionTimestamp and
 * deletionGracePeriodSeconds (*period), sets *pending when a deletion is
 * already under way and this request changes nothing; neither when the
 * pod goes the plain way (its deletion was already at grace 0). */
static void pod_graceful(json_object *obj, const struct apisrv__wopts *o, bool *graceful,
                         bool *pending, long long *period) {
    json_object *md = apisrv__obj_child(obj, "metadata");
    char ts[40];
    *graceful = *pending = false;
    if (md_str(obj, "deletionTimestamp")) {
        long long cur = md_int(obj, "deletionGracePeriodSeconds", 0);
        double end, now = apisrv__now();
        if (cur <= 0) return;
        if (!(o && o->has_grace)) {
            *pending = true;
            return;
        }
        *period = o->grace < 0 ? 1 : o->grace;
        if (*period >= cur) {
            *pending = true;
            return;
        }
        /* only a shorter grace: move the end back by the difference */
        end = rfc3339_parse(md_str(obj, "deletionTimestamp")) - (double)cur + (double)*period;
        if (end < now) {
            end = now;
            if (*period != 0) *period = 1;
        }
        obj_time_plus(end - (double)time(NULL), ts, sizeof ts);
    } else {
        *period = pod_grace(obj, o);
        obj_time_plus((double)*period, ts, sizeof ts);
        json_object_object_add(md, "generation", json_object_new_int64(md_generation(obj) + 1));
    }
    obj_set_str(md, "deletionTimestamp", ts);
    json_object_object_add(md, "deletionGracePeriodSeconds", json_object_new_int64(*period));
    *graceful = true;
}

/* See apisrv_int.h. */
int apisrv__commit_modified(apisrv *s, const struct apisrv__type *t, const char *ns,
                            const char *name, json_object *obj, json_object *prev,
                            struct apisrv__st *st) {
    int rc = commit(s, t, ns, name, obj, prev, "MODIFIED", st);
    json_object_put(obj);
    return rc;
}

/* See apisrv_int.h. Pods are deleted gracefully: a bound pod that has not
 * finished keeps its object, with deletionTimestamp (now + grace) and
 * deletionGracePeriodSeconds, until its kubelet deletes it with grace 0;
 * other pods get the same two fields (grace 0) in a MODIFIED just before
 * their DELETED, as on a real server. */
int apisrv__delete(apisrv *s, const struct apisrv__type *t, const char *ns,
                   const char *name, const struct apisrv__wopts *o,
                   json_object **out, struct apisrv__st *st) {
    int rc = -1;
    json_object *obj = apisrv__store_get(s, t->key, t->namespaced ? ns : NULL, name), *prev = NULL;
    bool graceful = false, pending = false;
    long long period = 0;
    if (out) *out = NULL;
    if (!obj) return apisrv__st_notfound(st, t, name);
    if (!t->namespaced) ns = NULL;
    if (!strcmp(t->key, "/namespaces") &&
        (!strcmp(name, "default") || !strcmp(name, "kube-system") || !strcmp(name, "kube-public"))) {
        apisrv__st_set(st, 403, "Forbidden",
                       "namespaces \"%s\" is forbidden: this namespace may not be deleted", name);
        snprintf(st->name, sizeof st->name, "%s", name);
        snprintf(st->kind, sizeof st->kind, "namespaces");
        goto out_obj;
    }
    if (delete_preconditions(t, obj, o, st)) goto out_obj;
    /* ValidatingAdmissionPolicies see a DELETE with the stored object as
     * oldObject and object null, as on a real server. */
    if (o && o->user &&
        apisrv__admit(s, t, "DELETE", ns, name, NULL, NULL, obj, o->user, o->dry_run, st))
        goto out_obj;
    if (!strcmp(t->key, "/pods")) {
        prev = json_copy(obj);
        pod_graceful(obj, o, &graceful, &pending, &period);
    }
    if (pending || (o && o->dry_run)) {
        rc = 0;
        goto out_obj;
    }
    if (graceful) {
        if (commit(s, t, ns, name, obj, prev, "MODIFIED", st)) goto out_obj;
        if (period > 0 || has_finalizers(obj)) {
            rc = 0;
            goto out_obj;
        }
        /* the MODIFIED event holds obj: the DELETED one gets its own copy */
        json_object *gone = json_copy(obj);
        if (!gone) {
            apisrv__st_set(st, 500, "InternalError", "out of memory");
            goto out_obj;
        }
        json_object_put(obj);
        obj = gone;
    } else if (has_finalizers(obj)) {
        json_object *md = apisrv__obj_child(obj, "metadata");
        if (!json_object_object_get_ex(md, "deletionTimestamp", NULL)) {
            char now[40];
            apisrv__now_rfc3339(now, sizeof now);
            obj_set_str(md, "deletionTimestamp", now);
            json_object_object_add(md, "deletionGracePeriodSeconds", json_object_new_int(0));
            json_object_object_add(md, "generation", json_object_new_int64(md_generation(obj) + 1));
            if (commit(s, t, ns, name, obj, NULL, "MODIFIED", st)) goto out_obj;
        }
        rc = 0;
        goto out_obj;
    }
    if (remove_now(s, t, ns, name, obj, o ? o->propagation : NULL, st)) goto out_obj;
    rc = 0;
out_obj:
    if (rc == 0 && out) *out = json_object_get(obj);
    json_object_put(prev);
    json_object_put(obj);
    return rc;
}

/* ---- update ------------------------------------------------------------------ */

/* obj without metadata and status, for the generation rule. */
static bool outside_spec(const char *k) {
    return !strcmp(k, "metadata") || !strcmp(k, "status");
}

/* Whether objects a and b are equal once metadata and status are left
 * out (what decides a generation bump): json_object_equal's rules on the
 * other top-level keys, without copying the objects to drop those two. */
static bool spec_equal(json_object *a, json_object *b) {
    json_object *bv;
    json_object_object_foreach(a, ka, av) {
        if (outside_spec(ka)) continue;
        if (!json_object_object_get_ex(b, ka, &bv) || !json_object_equal(av, bv))
            return false;
    }
    json_object_object_foreach(b, kb, unused) {
        (void)unused;
        if (!outside_spec(kb) && !json_object_object_get_ex(a, kb, NULL)) return false;
    }
    return true;
}

/* See apisrv_int.h. */
int apisrv__update(apisrv *s, const struct apisrv__type *t, const char *ns,
                   const char *name, json_object *obj,
                   const struct apisrv__wopts *o, json_object **out,
                   struct apisrv__st *st) {
    return apisrv__update_cur(s, t, ns, name, obj, NULL, o, out, st);
}

/* See apisrv_int.h. */
int apisrv__update_cur(apisrv *s, const struct apisrv__type *t, const char *ns,
                       const char *name, json_object *obj, json_object *cur,
                       const struct apisrv__wopts *o, json_object **out,
                       struct apisrv__st *st) {
    int rc = -1;
    json_object *old = NULL, *nw = NULL, *md, *v;
    const char *brv, *bname;
    bool status_only = o && o->status_only;
    if (out) *out = NULL;
    if (!t->namespaced) ns = NULL;
    if (!obj || !json_object_is_type(obj, json_type_object)) {
        apisrv__st_set(st, 400, "BadRequest", "the body of the request must be a JSON object");
        goto out;
    }
    old = cur ? json_object_get(cur) : apisrv__store_get(s, t->key, ns, name);
    if (!old) {
        apisrv__st_notfound(st, t, name);
        goto out;
    }
    bname = md_str(obj, "name");
    if (bname && strcmp(bname, name)) {
        apisrv__st_set(st, 400, "BadRequest",
                       "the name of the object (%s) does not match the name on the URL (%s)",
                       bname, name);
        goto out;
    }
    brv = md_str(obj, "resourceVersion");
    if (t->custom && (!brv || !brv[0])) {
        /* custom resources, unlike most built-in kinds, allow no
         * unconditional update (patches carry the stored version) */
        apisrv__st_cause(st, "FieldValueInvalid", "metadata.resourceVersion",
                  "Invalid value: 0x0: must be specified for an update");
        apisrv__st_invalid(st, t, name);
        goto out;
    }
    if (brv && brv[0] && strcmp(brv, md_str(old, "resourceVersion") ? md_str(old, "resourceVersion") : "")) {
        conflict(st, t, name);
        goto out;
    }
    if (status_only) {
        nw = json_copy(old);
        if (json_object_object_get_ex(obj, "status", &v))
            json_object_object_add(nw, "status", json_copy(v));
        else
            json_object_object_del(nw, "status");
    } else {
        nw = json_object_get(obj);
        set_type_meta(t, nw);
        if (t->has_status) {
            if (json_object_object_get_ex(old, "status", &v))
                json_object_object_add(nw, "status", json_copy(v));
            else
                json_object_object_del(nw, "status");
        }
        md = apisrv__obj_child(nw, "metadata");
        obj_set_str(md, "name", name);
        if (ns) obj_set_str(md, "namespace", ns);
        else json_object_object_del(md, "namespace");
        md_carry(nw, old, "uid");
        md_carry(nw, old, "creationTimestamp");
        md_carry(nw, old, "deletionTimestamp");
        md_carry(nw, old, "deletionGracePeriodSeconds");
        md_carry(nw, old, "generation");
        json_object_object_del(md, "managedFields");
        if (md_str(old, "deletionTimestamp")) {
            json_object *of = NULL, *nf = NULL, *omd;
            json_object_object_get_ex(old, "metadata", &omd);
            json_object_object_get_ex(omd, "finalizers", &of);
            json_object_object_get_ex(md, "finalizers", &nf);
            for (size_t i = 0; nf && json_object_is_type(nf, json_type_array) &&
                               i < json_object_array_length(nf); i++) {
                const char *f = json_object_get_string(json_object_array_get_idx(nf, i));
                bool found = false;
                for (size_t k = 0; of && json_object_is_type(of, json_type_array) &&
                                   k < json_object_array_length(of); k++)
                    if (!strcmp(f, json_object_get_string(json_object_array_get_idx(of, k))))
                        found = true;
                if (!found) {
                    apisrv__st_cause(st, "FieldValueForbidden", "metadata.finalizers",
                                     "Forbidden: no new finalizers can be added if the object is "
                                     "being deleted, found new finalizers []string{\"%s\"}", f);
                    apisrv__st_invalid(st, t, name);
                    goto out;
                }
            }
        }
        /* the decoder defaults a pod anew, so what a client left out
         * of its PUT or patch is not a change */
        if (!strcmp(t->key, "/pods") && apisrv__pod_default(nw, st)) goto out;
        if (!strcmp(t->key, "/namespaces")) namespace_defaults(nw, old);
    }
    md = apisrv__obj_child(nw, "metadata");
    obj_set_str(md, "resourceVersion", md_str(old, "resourceVersion") ? md_str(old, "resourceVersion") : "");
    if (validate(s, t, nw, old, o, name, st)) goto out;
    if (o && o->user &&
        apisrv__admit(s, t, "UPDATE", ns, name, status_only ? "status" : NULL, nw, old,
                      o->user, o->dry_run, st))
        goto out;
    if (!status_only && !spec_equal(old, nw))
        json_object_object_add(md, "generation", json_object_new_int64(md_generation(old) + 1));
    if (json_object_equal(old, nw)) {   /* no-op writes are not stored */
        rc = 0;
        if (out) *out = json_object_get(old);
        goto out;
    }
    if (o && o->dry_run) {
        rc = 0;
        if (out) *out = json_object_get(nw);
        goto out;
    }
    /* the last finalizer gone from an object whose deletion is due */
    if (md_str(nw, "deletionTimestamp") && !has_finalizers(nw) &&
        md_int(nw, "deletionGracePeriodSeconds", 0) == 0) {
        if (remove_now(s, t, ns, name, nw, "Background", st)) goto out;
    } else if (commit(s, t, ns, name, nw, old, "MODIFIED", st)) {
        goto out;
    }
    rc = 0;
    if (out) *out = json_object_get(nw);
out:
    json_object_put(nw);
    json_object_put(old);
    json_object_put(obj);
    return rc;
}
