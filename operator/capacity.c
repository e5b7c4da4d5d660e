/* capacity.c -- the cluster's capacity for a queue cycle: the usable
 * nodes (node facts, their live utilisation, the nodes left out counted
 * per reason for aiq_nodes_excluded), and what pods aiq does not account by placement
 * hold on them: foreign pods (the lean cache of foreign.h, fed by the
 * second pod watch through capacity_dispatch) and aiq's own pods whose
 * gang no longer holds a placement (torn down, still terminating). See
 * server.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "operator/foreign.h"
#include "operator/server.h"

/* A node's queue view as node_to_q made it from the node's current put
 * (kept in the cache entry's memo: node_to_q reads only the object, and
 * reading 1,000 nodes' labels and capacity each cycle showed in
 * profiles). */
struct cap_node_memo {
    int rc;
    nodex why;
    struct q_node q;
};

/* node_to_q of o, through its memo; on ENOMEM without one. */
static int cap_node_to_q(struct opcache_obj *o, struct q_node *q, nodex *why) {
    struct cap_node_memo *m = o->memo_blob;
    if (!m || o->memo_changed != o->changed) {
        if (!m)
            m = o->memo_blob = malloc(sizeof *m);
        if (!m)
            return node_to_q(opcache_raw(o), q, why);
        m->why = NODEX_NONE;
        memset(&m->q, 0, sizeof m->q);
        m->rc = node_to_q(opcache_raw(o), &m->q, &m->why);
        o->memo_changed = o->changed;
    }
    *q = m->q;
    *why = m->why;
    return m->rc;
}

/* Builds the usable nodes; see server.h. */
int capacity_nodes(struct server *s, struct q_node *out) {
    opcache *nc = s->cache[OPK_NODE];
    long excluded[NODEX__N] = {0};
    int n = 0;
    for (size_t i = 0; i < opcache_count(nc); i++) {
        nodex why = NODEX_NONE;
        int rc = cap_node_to_q(opcache_at(nc, i), &out[n], &why);
        if (rc == 0)
            n++;
        else if (rc == 1)
            excluded[why]++;
    }
    for (int x = 1; x < NODEX__N; x++)
        opmetrics_nodes_excluded_set(s->metrics, nodex_name((nodex)x), excluded[x]);
    util_apply(s, out, n, srv_now());
    return n;
}

struct cap_ctx {
    struct q_node *nodes;
    int nnodes;
    long counted;
};

static int cap_node_cmp(const void *key, const void *elem) {
    return strcmp(key, ((const struct q_node *)elem)->name);
}

static int cap_apply(const struct fpod *p, void *ud) {
    struct cap_ctx *c = ud;
    struct q_node *n = bsearch(p->node, c->nodes, (size_t)c->nnodes, sizeof *c->nodes,
                               cap_node_cmp);
    if (n) {
        foreign_apply(n, p);
        c->counted++;
    }
    return 0;
}

/* Tells whether the cycle counts the job's pods by its placement (running
 * at a size it may run at, or torn down while they still hold it), so
 * they are not counted twice. */
static bool cap_by_placement(struct opcache_obj *jo) {
    struct opext *x = jo ? jo->ext : NULL;
    const struct aiq_aijob *j = jo && jo->parse_ok ? jo->parsed : NULL;
    return x && x->job && j && job_counted_by_placement(x->job, j);
}

/* Pod o's spec.nodeName ("" or NULL: unbound), read once per put of
 * the pod (a lookup in the JSON costs several cache misses). */
static const char *cap_pod_node(struct opcache_obj *o) {
    if (o->memo_changed != o->changed) {
        o->memo_str = aiq_jpath_str(opcache_raw(o), "spec.nodeName");
        o->memo_changed = o->changed;
    }
    return o->memo_str;
}

/* Appends o to s->bound. Returns false out of memory. */
static bool cap_bound_add(struct server *s, struct opcache_obj *o) {
    if (s->bound.n == s->bound.cap) {
        size_t nc = s->bound.cap ? s->bound.cap * 2 : 256;
        struct opcache_obj **no = realloc(s->bound.o, nc * sizeof *no);
        if (!no)
            return false;
        s->bound.o = no;
        s->bound.cap = nc;
    }
    s->bound.o[s->bound.n++] = o;
    return true;
}

/* Makes s->bound the pods of pc bound to a node (unbound ones, every
 * gated pod of the queue and most of the cache, hold nothing). Out of
 * memory it is left invalid, and the caller walks every pod. */
static void cap_bound_scan(struct server *s, opcache *pc) {
    size_t n = opcache_count(pc);
    s->bound.valid = false;
    s->bound.n = 0;
    for (size_t i = 0; i < n; i++) {
        struct opcache_obj *o = opcache_at(pc, i);
        const char *node = cap_pod_node(o);
        if (node && *node && !cap_bound_add(s, o))
            return;
    }
    s->bound.puts = opcache_puts(pc);
    s->bound.ndel = opcache_deletions(pc);
    s->bound.valid = true;
}

/* Pods put since the bound list was made that it takes in place, at
 * most; more (a release, a relist) and it is made again. */
#define CAP_BOUND_CATCH_UP 64

/* Brings the valid bound list up to the pod cache when pods were only
 * put since it was made (an arrival's gated pod, a running pod's status):
 * the puts are found in the cache's dense stamps, and a pod bound now
 * that is not listed yet is added (a pod's node, once set, stays, so a
 * listed pod stays bound and deletions alone can drop one). Returns false
 * when the list must be made again: a pod was deleted, too many were
 * put, or out of memory. */
static bool cap_bound_catch_up(struct server *s, opcache *pc) {
    uint64_t puts = opcache_puts(pc), since = s->bound.puts;
    if (opcache_deletions(pc) != s->bound.ndel)
        return false;
    if (puts == since)
        return true;
    size_t n = opcache_count(pc), fresh = 0, listed = s->bound.n;
    for (size_t i = 0; i < n && fresh < puts - since; i++) {
        if (opcache_stamp(pc, i).changed <= since)
            continue;
        if (++fresh > CAP_BOUND_CATCH_UP)
            return false;
        struct opcache_obj *o = opcache_at(pc, i);
        const char *node = cap_pod_node(o);
        if (!node || !*node)
            continue;
        size_t k = 0;
        while (k < listed && s->bound.o[k] != o)
            k++;
        if (k == listed && !cap_bound_add(s, o))
            return false;
    }
    s->bound.puts = puts;
    return true;
}

/* Counts pod o against the nodes unless the cycle counts it by its job's
 * placement. */
static void cap_pod(struct server *s, struct opcache_obj *o, struct cap_ctx *c) {
    char key[OPCACHE_KEY_MAX];
    const char *node = cap_pod_node(o);
    if (!node || !*node || cap_by_placement(srv__pod_job(s, opcache_raw(o), key, sizeof key)))
        return;
    struct fpod p;
    if (fpod_read(opcache_raw(o), &p) != 0)
        return; /* no name, or ENOMEM: nothing to count this cycle */
    if (p.holds)
        cap_apply(&p, c);
    fpod_deinit(&p);
}

#ifdef AIQ_SELFCHECK
static int cap_ptr_cmp(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
    return (x > y) - (x < y);
}
#endif

/* Subtracts what others hold; see server.h. aiq's own pods are walked
 * from the list of the bound ones, which takes in the few pods put since
 * it was made (cap_bound_catch_up) and is made again when a pod was
 * deleted or many were put: neither at rest nor for an arrival's gated
 * pod does a cycle visit the 10k gated pods of 10k waiting jobs. */
void capacity_others(struct server *s, struct q_node *nodes, int nnodes) {
    struct cap_ctx c = {nodes, nnodes, 0};
    fpods_each(s->foreign, cap_apply, &c);
    long foreign = c.counted;
    opcache *pc = s->cache[OPK_POD];
#ifdef AIQ_SELFCHECK
    /* the kept list, when it holds (caught up), against a new scan, as sets */
    size_t kept = s->bound.valid && cap_bound_catch_up(s, pc) ? s->bound.n : SIZE_MAX;
    struct opcache_obj **was = kept != SIZE_MAX && kept ? malloc(kept * sizeof *was) : NULL;
    if (was) {
        memcpy(was, s->bound.o, kept * sizeof *was);
        qsort(was, kept, sizeof *was, cap_ptr_cmp);
    }
    cap_bound_scan(s, pc);
    struct opcache_obj **now = was && s->bound.n == kept ? malloc(kept * sizeof *now) : NULL;
    if (now) {
        memcpy(now, s->bound.o, kept * sizeof *now);
        qsort(now, kept, sizeof *now, cap_ptr_cmp);
    }
    if (kept != SIZE_MAX && (kept != s->bound.n ||
                             (was && now && memcmp(was, now, kept * sizeof *was) != 0))) {
        OPLOG(&s->log, OPLOG_ERROR, "selfcheck_failed", NULL, NULL, "what=bound_pods");
        abort();
    }
    free(was);
    free(now);
#else
    if (!s->bound.valid || !cap_bound_catch_up(s, pc))
        cap_bound_scan(s, pc);
#endif
    if (s->bound.valid) {
        for (size_t k = 0; k < s->bound.n; k++)
            cap_pod(s, s->bound.o[k], &c);
    } else {
        for (size_t i = 0; i < opcache_count(pc); i++)
            cap_pod(s, opcache_at(pc, i), &c);
    }
    opmetrics_foreign_pods_set(s->metrics, foreign);
}

/* See server.h. */
void capacity_free(struct server *s) {
    free(s->bound.o);
    memset(&s->bound, 0, sizeof s->bound);
}

/* Applies a foreign-pod watch event; see server.h. */
void capacity_dispatch(struct server *s, struct kube_event *ev) {
    struct fpod p;
    switch (ev->type) {
    case KUBE_EV_RELIST_BEGIN:
        fpods_relist_begin(s->foreign);
        return;
    case KUBE_EV_RELIST_END: {
        size_t dropped = fpods_relist_end(s->foreign);
        OPLOG(&s->log, OPLOG_INFO, s->foreign_listed ? "relisted" : "listed", NULL, ev->rv,
              "kind=Pod watch=%s holding=%zu dropped=%zu", FOREIGN_WATCH,
              fpods_count(s->foreign), dropped);
        s->foreign_listed = true;
        s->cycle_wanted = true;
        return;
    }
    case KUBE_EV_BOOKMARK:
        return;
    case KUBE_EV_ADDED:
    case KUBE_EV_MODIFIED:
        if (!ev->obj || fpod_read(ev->obj, &p) != 0)
            return;
        if (fpods_put(s->foreign, &p) != 0)
            OPLOG(&s->log, OPLOG_ERROR, "foreign_pod_dropped", srv__name(ev->obj), ev->rv,
                  "msg=\"out of memory\"");
        s->cycle_wanted = true;
        return;
    case KUBE_EV_DELETED: {
        char key[OPCACHE_KEY_MAX];
        if (ev->obj && opcache_key(key, sizeof key, ev->obj) == 0 && fpods_del(s->foreign, key))
            s->cycle_wanted = true;
        return;
    }
    }
}
