/* store_views.c -- the store's views of cluster objects other than jobs:
 * groups with their namespaces and members (the users view), user quotas,
 * nodes with their GPUs. */
#include "operator/store_int.h"

#include <stdlib.h>
#include <string.h>

/* Binds a quota's five columns starting at parameter i. */
static void bind_quota(sqlite3_stmt *st, int i, const struct aiq_quota *q) {
    sqlite3_bind_int64(st, i, q->gpus);
    sqlite3_bind_int64(st, i + 1, q->gpu_memory_mib);
    sqlite3_bind_int64(st, i + 2, q->cpu_milli);
    sqlite3_bind_int64(st, i + 3, q->memory_bytes);
    sqlite3_bind_int64(st, i + 4, q->jobs);
}

static void col_quota(sqlite3_stmt *st, int i, struct aiq_quota *q) {
    q->gpus = sqlite3_column_int64(st, i);
    q->gpu_memory_mib = sqlite3_column_int64(st, i + 1);
    q->cpu_milli = sqlite3_column_int64(st, i + 2);
    q->memory_bytes = sqlite3_column_int64(st, i + 3);
    q->jobs = sqlite3_column_int64(st, i + 4);
}

/* Runs a one-parameter (text) write statement. */
static aiq_rc write_by_name(store *s, store__qid id, const char *name,
                            const char *what, aiq_err *err) {
    sqlite3_stmt *st = store__q(s, id, err);
    if (!st) return AIQ_EDB;
    store__bind_text(st, 1, name);
    return store__write(s, st, what, err);
}

static aiq_rc need(const char *v, const char *field, aiq_err *err) {
    if (v && v[0]) return AIQ_OK;
    return aiq_err_field(err, AIQ_EINVAL, field, "store: %s: required",
                         field);
}

/* See store.h. */
aiq_rc store_upsert_group(store *s, const struct aiq_group *g,
                          aiq_err *err) {
    const char *name = g->meta.name;
    aiq_rc rc = need(name, "metadata.name", err);
    if (rc != AIQ_OK) return rc;
    rc = store__sp_begin(s, err);
    if (rc != AIQ_OK) return rc;

    sqlite3_stmt *st = store__q(s, STORE_Q_GROUP_UPSERT, err);
    if (!st) { rc = AIQ_EDB; goto out_sp; }
    store__bind_text(st, 1, name);
    sqlite3_bind_int(st, 2, g->spec.level);
    bind_quota(st, 3, &g->spec.quota);
    sqlite3_bind_double(st, 8, g->spec.budget.gpu_hours);
    sqlite3_bind_double(st, 9, g->spec.budget.window_s);
    sqlite3_bind_double(st, 10, g->spec.shares);
    rc = store__write(s, st, "upsert group", err);
    if (rc != AIQ_OK) goto out_sp;

    rc = write_by_name(s, STORE_Q_GROUP_NS_CLEAR, name, "group namespaces",
                       err);
    for (int i = 0; rc == AIQ_OK && i < g->spec.nnamespaces; i++) {
        st = store__q(s, STORE_Q_GROUP_NS_ADD, err);
        if (!st) { rc = AIQ_EDB; break; }
        store__bind_text(st, 1, g->spec.namespaces[i]);
        store__bind_text(st, 2, name);
        rc = store__write(s, st, "group namespace", err);
    }
    if (rc != AIQ_OK) goto out_sp;

    rc = write_by_name(s, STORE_Q_GROUP_USERS_CLEAR, name, "group members",
                       err);
    for (int i = 0; rc == AIQ_OK && i < g->spec.nmembers; i++) {
        st = store__q(s, STORE_Q_GROUP_USER_ADD, err);
        if (!st) { rc = AIQ_EDB; break; }
        store__bind_text(st, 1, g->spec.members[i].user);
        store__bind_text(st, 2, name);
        sqlite3_bind_int(st, 3, g->spec.members[i].level);
        rc = store__write(s, st, "group member", err);
    }
out_sp:
    store__sp_end(s, rc == AIQ_OK);
    return rc;
}

/* See store.h. */
aiq_rc store_delete_group(store *s, const char *name, aiq_err *err) {
    aiq_rc rc = store__sp_begin(s, err);
    if (rc != AIQ_OK) return rc;
    rc = write_by_name(s, STORE_Q_GROUP_DELETE, name, "delete group", err);
    if (rc == AIQ_OK)
        rc = write_by_name(s, STORE_Q_GROUP_NS_CLEAR, name,
                           "delete group namespaces", err);
    if (rc == AIQ_OK)
        rc = write_by_name(s, STORE_Q_GROUP_USERS_CLEAR, name,
                           "delete group members", err);
    store__sp_end(s, rc == AIQ_OK);
    return rc;
}

/* See store.h. */
aiq_rc store_group_get(store *s, const char *name, struct store_group *out,
                       aiq_err *err) {
    bool row = false;
    sqlite3_stmt *st = store__q(s, STORE_Q_GROUP_GET, err);
    if (!st) return AIQ_EDB;
    store__bind_text(st, 1, name);
    aiq_rc rc = store__row(s, st, &row, "get group", err);
    if (rc != AIQ_OK) goto out_reset;
    if (!row) {
        rc = aiq_err_field(err, AIQ_ENOTFOUND, "name",
                           "store: group %s not found", name);
        goto out_reset;
    }
    memset(out, 0, sizeof *out);
    store__col_text(st, 0, out->name, sizeof out->name);
    out->level = sqlite3_column_int(st, 1);
    col_quota(st, 2, &out->quota);
    out->budget.gpu_hours = sqlite3_column_double(st, 7);
    out->budget.window_s = sqlite3_column_double(st, 8);
    out->shares = sqlite3_column_double(st, 9);
    out->nnamespaces = sqlite3_column_int(st, 10);
    out->nmembers = sqlite3_column_int(st, 11);
out_reset:
    sqlite3_reset(st);
    return rc;
}

/* See store.h. */
aiq_rc store_group_for_namespace(store *s, const char *ns, char *buf,
                                 size_t size, aiq_err *err) {
    bool row = false;
    sqlite3_stmt *st = store__q(s, STORE_Q_GROUP_FOR_NS, err);
    if (!st) return AIQ_EDB;
    store__bind_text(st, 1, ns);
    aiq_rc rc = store__row(s, st, &row, "group for namespace", err);
    if (rc == AIQ_OK && !row)
        rc = aiq_err_field(err, AIQ_ENOTFOUND, "metadata.namespace",
                           "store: no group lists namespace %s", ns);
    if (rc == AIQ_OK) store__col_text(st, 0, buf, size);
    sqlite3_reset(st);
    return rc;
}

/* See store.h. */
aiq_rc store_user_level(store *s, const char *user, const char *group,
                        int32_t *level, aiq_err *err) {
    bool row = false;
    sqlite3_stmt *st = store__q(s, STORE_Q_USER_LEVEL, err);
    if (!st) return AIQ_EDB;
    store__bind_text(st, 1, user);
    store__bind_text(st, 2, group);
    aiq_rc rc = store__row(s, st, &row, "user level", err);
    if (rc == AIQ_OK && !row)
        rc = aiq_err_field(err, AIQ_ENOTFOUND, "spec.user",
                           "store: user %s is not a member of group %s",
                           user, group);
    if (rc == AIQ_OK) *level = sqlite3_column_int(st, 0);
    sqlite3_reset(st);
    return rc;
}

/* See store.h. */
aiq_rc store_upsert_userquota(store *s, const struct aiq_userquota *u,
                              const char *group, bool accepted,
                              const char *reason, aiq_err *err) {
    aiq_rc rc = need(u->meta.namespace_, "metadata.namespace", err);
    if (rc == AIQ_OK) rc = need(u->meta.name, "metadata.name", err);
    if (rc == AIQ_OK) rc = need(u->spec.user, "spec.user", err);
    if (rc != AIQ_OK) return rc;
    sqlite3_stmt *st = store__q(s, STORE_Q_UQ_UPSERT, err);
    if (!st) return AIQ_EDB;
    store__bind_text(st, 1, u->meta.namespace_);
    store__bind_text(st, 2, u->meta.name);
    store__bind_text(st, 3, u->spec.user);
    store__bind_text(st, 4, group);
    bind_quota(st, 5, &u->spec.quota);
    sqlite3_bind_double(st, 10, u->spec.budget.gpu_hours);
    sqlite3_bind_double(st, 11, u->spec.budget.window_s);
    sqlite3_bind_int(st, 12, accepted ? 1 : 0);
    store__bind_text(st, 13, reason);
    return store__write(s, st, "upsert user quota", err);
}

/* See store.h. */
aiq_rc store_delete_userquota(store *s, const char *ns, const char *name,
                              aiq_err *err) {
    sqlite3_stmt *st = store__q(s, STORE_Q_UQ_DELETE, err);
    if (!st) return AIQ_EDB;
    store__bind_text(st, 1, ns);
    store__bind_text(st, 2, name);
    return store__write(s, st, "delete user quota", err);
}

/* See store.h. */
aiq_rc store_userquota_get(store *s, const char *ns, const char *name,
                           struct store_userquota *out, aiq_err *err) {
    bool row = false;
    sqlite3_stmt *st = store__q(s, STORE_Q_UQ_GET, err);
    if (!st) return AIQ_EDB;
    store__bind_text(st, 1, ns);
    store__bind_text(st, 2, name);
    aiq_rc rc = store__row(s, st, &row, "get user quota", err);
    if (rc != AIQ_OK) goto out_reset;
    if (!row) {
        rc = aiq_err_field(err, AIQ_ENOTFOUND, "name",
                           "store: user quota %s/%s not found", ns, name);
        goto out_reset;
    }
    memset(out, 0, sizeof *out);
    store__col_text(st, 0, out->ns, sizeof out->ns);
    store__col_text(st, 1, out->name, sizeof out->name);
    store__col_text(st, 2, out->user, sizeof out->user);
    store__col_text(st, 3, out->group, sizeof out->group);
    col_quota(st, 4, &out->quota);
    out->budget.gpu_hours = sqlite3_column_double(st, 9);
    out->budget.window_s = sqlite3_column_double(st, 10);
    out->accepted = sqlite3_column_int(st, 11) != 0;
    store__col_text(st, 12, out->reason, sizeof out->reason);
out_reset:
    sqlite3_reset(st);
    return rc;
}

/* See store.h. */
aiq_rc store_upsert_node(store *s, const struct store_node *n,
                         aiq_err *err) {
    aiq_rc rc = need(n->name, "metadata.name", err);
    if (rc != AIQ_OK) return rc;
    if (n->gpu_count < 0 || n->gpu_count > STORE_MAX_NODE_GPUS)
        return aiq_err_field(err, AIQ_EINVAL, "gpu_count",
                             "store: node %s: gpu_count must be 0..%d, got %d",
                             n->name, STORE_MAX_NODE_GPUS, (int)n->gpu_count);
    rc = store__sp_begin(s, err);
    if (rc != AIQ_OK) return rc;
    sqlite3_stmt *st = store__q(s, STORE_Q_NODE_UPSERT, err);
    if (!st) { rc = AIQ_EDB; goto out_sp; }
    store__bind_text(st, 1, n->name);
    store__bind_text(st, 2, n->gpu_model);
    sqlite3_bind_int(st, 3, n->gpu_count);
    sqlite3_bind_int64(st, 4, n->gpu_memory_mib);
    store__bind_text(st, 5, n->domain);
    sqlite3_bind_int64(st, 6, n->cpu_milli);
    sqlite3_bind_int64(st, 7, n->memory_bytes);
    sqlite3_bind_int(st, 8, n->schedulable ? 1 : 0);
    rc = store__write(s, st, "upsert node", err);
    if (rc == AIQ_OK)
        rc = write_by_name(s, STORE_Q_GPUS_CLEAR, n->name, "node gpus", err);
    for (int i = 0; rc == AIQ_OK && i < n->gpu_count; i++) {
        st = store__q(s, STORE_Q_GPU_ADD, err);
        if (!st) { rc = AIQ_EDB; break; }
        store__bind_text(st, 1, n->name);
        sqlite3_bind_int(st, 2, i);
        sqlite3_bind_int64(st, 3, n->gpu_memory_each ? n->gpu_memory_each[i]
                                                     : n->gpu_memory_mib);
        rc = store__write(s, st, "node gpu", err);
    }
out_sp:
    store__sp_end(s, rc == AIQ_OK);
    return rc;
}

/* See store.h. */
aiq_rc store_delete_node(store *s, const char *name, aiq_err *err) {
    aiq_rc rc = store__sp_begin(s, err);
    if (rc != AIQ_OK) return rc;
    rc = write_by_name(s, STORE_Q_NODE_DELETE, name, "delete node", err);
    if (rc == AIQ_OK)
        rc = write_by_name(s, STORE_Q_GPUS_CLEAR, name, "delete node gpus",
                           err);
    store__sp_end(s, rc == AIQ_OK);
    return rc;
}

/* Reads a node's GPU memory sizes into mem[0..STORE_MAX_NODE_GPUS). */
static aiq_rc node_gpus(store *s, const char *name, int64_t *mem, int *n,
                        aiq_err *err) {
    bool row = true;
    aiq_rc rc = AIQ_OK;
    sqlite3_stmt *st = store__q(s, STORE_Q_GPU_LIST, err);
    if (!st) return AIQ_EDB;
    store__bind_text(st, 1, name);
    *n = 0;
    while (rc == AIQ_OK) {
        rc = store__row(s, st, &row, "list node gpus", err);
        if (rc != AIQ_OK || !row) break;
        int idx = sqlite3_column_int(st, 0);
        if (idx < 0 || idx >= STORE_MAX_NODE_GPUS) continue;
        mem[idx] = sqlite3_column_int64(st, 1);
        if (idx + 1 > *n) *n = idx + 1;
    }
    sqlite3_reset(st);
    return rc;
}

/* See store.h. */
aiq_rc store_list_nodes(store *s, store_node_cb cb, void *ctx,
                        aiq_err *err) {
    char name[STORE_NAME_SZ], model[STORE_STR_SZ], domain[STORE_STR_SZ];
    int64_t mem[STORE_MAX_NODE_GPUS];
    bool row = true;
    aiq_rc rc = AIQ_OK;
    sqlite3_stmt *st = store__q(s, STORE_Q_NODE_LIST, err);
    if (!st) return AIQ_EDB;
    while (rc == AIQ_OK) {
        rc = store__row(s, st, &row, "list nodes", err);
        if (rc != AIQ_OK || !row) break;
        struct store_node n = {0};
        int ngpu = 0;
        store__col_text(st, 0, name, sizeof name);
        n.name = name;
        if (sqlite3_column_type(st, 1) != SQLITE_NULL) {
            store__col_text(st, 1, model, sizeof model);
            n.gpu_model = model;
        }
        n.gpu_count = sqlite3_column_int(st, 2);
        n.gpu_memory_mib = sqlite3_column_int64(st, 3);
        if (sqlite3_column_type(st, 4) != SQLITE_NULL) {
            store__col_text(st, 4, domain, sizeof domain);
            n.domain = domain;
        }
        n.cpu_milli = sqlite3_column_int64(st, 5);
        n.memory_bytes = sqlite3_column_int64(st, 6);
        n.schedulable = sqlite3_column_int(st, 7) != 0;
        memset(mem, 0, sizeof mem);
        rc = node_gpus(s, name, mem, &ngpu, err);
        if (rc != AIQ_OK) break;
        n.gpu_memory_each = ngpu > 0 ? mem : NULL;
        if (cb(&n, ctx)) break;
    }
    sqlite3_reset(st);
    return rc;
}
