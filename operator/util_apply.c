/* util_apply.c -- the daemon's side of the live utilisation source
 * (util_source.h): starting it from the flags, filling each cycle's nodes
 * from its cache, and telling when it goes down or comes back (one log
 * line per change of state, the aiq_util_* metrics). When the source is
 * down or a node's samples are stale, placement runs without utilisation
 * for those nodes; this file is where that becomes visible. */
#include <string.h>

#include "operator/server.h"

/* Starts the source; see server.h. */
aiq_rc util_start(struct server *s, aiq_err *err) {
    const struct srv_flags *f = &s->flags;
    if (f->util_alnair) {
        opmetrics_set_util(s->metrics, NULL, true);
        OPLOG(&s->log, OPLOG_INFO, "util_source_started", NULL, NULL,
              "source=alnair-annotations prefix=%s", OPUTIL_ALNAIR_PREFIX);
    }
    if (!f->util_url)
        return AIQ_OK;
    /* A request may take at most the interval (and never more than 10 s),
     * so a slow Prometheus cannot pile up fetches. */
    double timeout = f->util_interval_s < 10 ? f->util_interval_s : 10;
    struct oputil_opts o = {f->util_url, f->util_interval_s, f->util_stale_s, timeout,
                            f->util_node_label};
    aiq_rc rc = oputil_create(&o, &s->util, err);
    if (rc != AIQ_OK)
        return rc;
    rc = oputil_start(s->util, err);
    if (rc != AIQ_OK) {
        oputil_free(s->util);
        s->util = NULL;
        return rc;
    }
    opmetrics_set_util(s->metrics, s->util, f->util_alnair);
    OPLOG(&s->log, OPLOG_INFO, "util_source_started", NULL, NULL,
          "source=prometheus url=%s interval_s=%g stale_after_s=%g node_label=%s", f->util_url,
          f->util_interval_s, f->util_stale_s, f->util_node_label ? f->util_node_label : "default");
    return AIQ_OK;
}

/* Logs a change between up and down (not before the first answer). */
static void util_tell(struct server *s, const struct oputil_state *st, long known, long nn) {
    int state = st->up ? 1 : 2;
    if (st->fetches == 0 || state == s->util_told)
        return;
    s->util_told = state;
    if (st->up)
        OPLOG(&s->log, OPLOG_INFO, "util_source_up", NULL, NULL,
              "nodes_known=%ld nodes=%ld skipped_series=%ld", known, nn, st->skipped);
    else
        OPLOG(&s->log, OPLOG_WARN, "util_source_down", NULL, NULL,
              "reason=\"%s\" fallback=\"placement without utilisation once samples pass "
              "--util-stale-after (%gs)\"", st->reason, s->flags.util_stale_s);
}

/* Fills q from the node's Alnair annotations when every GPU has one with
 * a number; returns whether it did. The annotation has no sample time, so
 * no staleness applies (util_source.h). */
static bool util__alnair(struct server *s, struct q_node *q) {
    struct opcache_obj *o = q->name ? opcache_get(s->cache[OPK_NODE], q->name) : NULL;
    json_object *meta = NULL, *ann = NULL;
    double util[Q_MAX_GPUS] = {0};
    if (!o || q->ngpus <= 0 || !json_object_object_get_ex(opcache_raw(o), "metadata", &meta) ||
        !json_object_object_get_ex(meta, "annotations", &ann))
        return false;
    for (int g = 0; g < q->ngpus && g < Q_MAX_GPUS; g++) {
        char key[64];
        json_object *v = NULL;
        const char *field = NULL;
        double pct = 0;
        snprintf(key, sizeof key, "%s%d", OPUTIL_ALNAIR_PREFIX, g);
        if (!json_object_object_get_ex(ann, key, &v) || !json_object_is_type(v, json_type_string) ||
            oputil_alnair_value(json_object_get_string(v), &pct, &field) != 0)
            return false;
        util[g] = pct / 100 > 1 ? 1 : pct / 100;
    }
    memcpy(q->gpu_util, util, sizeof util);
    q->util_known = true;
    return true;
}

/* Fills the nodes and tells; see server.h. */
void util_apply(struct server *s, struct q_node *nodes, int n, double now) {
    long known = 0, stale = 0, annotated = 0;
    struct oputil_state st;
    memset(&st, 0, sizeof st);
    if (!s->util && !s->flags.util_alnair)
        return; /* node_facts_read zeroed them: unknown */
    if (s->util) {
        oputil_fill(s->util, nodes, n, now, &known, &stale);
        oputil_stats(s->util, &st);
    }
    for (int i = 0; s->flags.util_alnair && i < n; i++)
        if (!nodes[i].util_known && util__alnair(s, &nodes[i]))
            annotated++;
    if (s->util)
        util_tell(s, &st, known, n);
    struct opmetrics_util m = {s->util != NULL, st.up, known + annotated, annotated, stale,
                               st.skipped, st.failures, st.last_ok};
    opmetrics_util_set(s->metrics, &m);
}
