/* podlog.c -- the pods/NAME/log subresource of the local cluster. Nothing
 * really runs, so the "log" is what the simulated kubelet knows about each
 * container: where it runs, when it started and how it ended, taken from
 * the pod's status (kubectl logs then shows that instead of an error). */
#include "test/apiserver/apisrv_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

#define PODLOG_MAX (64u * 1024u)

struct podlog_buf {
    char text[PODLOG_MAX];
    size_t len;
};

static void podlog_line(struct podlog_buf *b, const char *fmt, const char *a,
                        const char *c, const char *d) {
    if (b->len >= sizeof b->text - 1) return;
    int n = snprintf(b->text + b->len, sizeof b->text - b->len, fmt, a, c, d);
    if (n > 0) b->len += (size_t)n;
    if (b->len >= sizeof b->text) b->len = sizeof b->text - 1;
}

/* Answers GET .../pods/NAME/log[?container=C] with text/plain (lock held). */
void apisrv__pod_log(apisrv *s, struct apisrv__req *r, const struct apisrv__target *tg,
                     struct apisrv__resp *w) {
    struct apisrv__st st;
    struct podlog_buf *b;
    const char *want = apisrv__q(r, "container");
    json_object *pod = apisrv__store_get(s, tg->t->key, tg->ns ? tg->ns : "default", tg->name);
    json_object *spec, *ctrs = NULL, *status, *cs = NULL;
    bool found = false;
    if (!pod) {
        apisrv__st_init(&st);
        apisrv__st_notfound(&st, tg->t, tg->name);
        apisrv__resp_status(w, &st);
        apisrv__st_deinit(&st);
        return;
    }
    b = calloc(1, sizeof *b);
    if (!b) {
        apisrv__resp_err(w, 500, "InternalError", "out of memory");
        json_object_put(pod);
        return;
    }
    if (json_object_object_get_ex(pod, "spec", &spec)) json_object_object_get_ex(spec, "containers", &ctrs);
    if (json_object_object_get_ex(pod, "status", &status)) json_object_object_get_ex(status, "containerStatuses", &cs);
    const char *node = aiq_jpath_str(pod, "spec.nodeName");
    for (size_t i = 0; ctrs && json_object_is_type(ctrs, json_type_array) &&
                       i < json_object_array_length(ctrs); i++) {
        const char *cn = aiq_jpath_str(json_object_array_get_idx(ctrs, i), "name");
        json_object *cst = NULL;
        if (!cn || (want && strcmp(want, cn))) continue;
        found = true;
        for (size_t k = 0; cs && json_object_is_type(cs, json_type_array) &&
                           k < json_object_array_length(cs); k++) {
            const char *sn = aiq_jpath_str(json_object_array_get_idx(cs, k), "name");
            if (sn && !strcmp(sn, cn)) cst = json_object_array_get_idx(cs, k);
        }
        podlog_line(b, "aiq-apiserver: simulated container %s of pod %s on node %s\n", cn,
                    tg->name, node && node[0] ? node : "<none>");
        const char *started = aiq_jpath_str(cst, "state.running.startedAt");
        const char *fin = aiq_jpath_str(cst, "state.terminated.finishedAt");
        const char *reason = aiq_jpath_str(cst, "state.terminated.reason");
        if (!started) started = aiq_jpath_str(cst, "state.terminated.startedAt");
        if (started) podlog_line(b, "%s started%s%s\n", started, "", "");
        if (fin) {
            json_object *code = NULL;
            char codes[32] = "?";
            if (cst && json_object_object_get_ex(cst, "state", &code) &&
                json_object_object_get_ex(code, "terminated", &code) &&
                json_object_object_get_ex(code, "exitCode", &code))
                snprintf(codes, sizeof codes, "%d", json_object_get_int(code));
            podlog_line(b, "%s terminated: %s, exit code %s\n", fin, reason ? reason : "", codes);
        }
        if (!started && !fin) podlog_line(b, "not started (pod phase %s)%s%s\n",
                                          aiq_jpath_str(pod, "status.phase") ? aiq_jpath_str(pod, "status.phase") : "Pending", "", "");
    }
    if (!found && want) {
        apisrv__resp_err(w, 400, "BadRequest", "container %.100s is not valid for pod %s", want, tg->name);
    } else {
        apisrv__resp_text(w, 200, "text/plain", b->text);
    }
    free(b);
    json_object_put(pod);
}
