/* routes.c -- URL parsing and dispatch: health probes, discovery, and the
 * resource paths /api/v1/[namespaces/NS/]RES[/NAME[/status]] and
 * /apis/GROUP/VERSION/[namespaces/NS/]RES[/NAME[/status]] (and pods' log
 * and binding subresources), authorized by
 * authz.c once the resource is known. Takes the server lock for the
 * request (a watch then streams without it). */
#include "test/apiserver/apisrv_int.h"

#include <stdio.h>
#include <string.h>

#define ROUTES_MAX_URL 2048
#define ROUTES_MAX_SEG 12

/* See apisrv_int.h. */
int apisrv__split_path(char *p, char **seg, int max) {
    int n = 0;
    while (*p) {
        while (*p == '/') *p++ = 0;
        if (!*p) break;
        if (n == max) return -1;
        seg[n++] = p;
        while (*p && *p != '/') p++;
    }
    return n;
}

/* See apisrv_int.h. */
void apisrv__route(struct apisrv__req *r, struct apisrv__resp *w) {
    apisrv *s = r->s;
    char buf[ROUTES_MAX_URL];
    char *seg[ROUTES_MAX_SEG], **rest;
    const char *group, *version;
    int n, nrest;
    struct apisrv__target tg = {0};

    if (!strcmp(r->url, "/healthz") || !strcmp(r->url, "/readyz") ||
        !strcmp(r->url, "/livez")) {
        apisrv__resp_text(w, 200, "text/plain", "ok");
        return;
    }
    if (apisrv__aggr_route(s, r, w)) return;
    pthread_mutex_lock(&s->mu);
    if (apisrv__discovery(s, r, w)) goto out_unlock;
    if (apisrv__reviews(s, r, w)) goto out_unlock;
    if (strlen(r->url) >= sizeof buf) {
        apisrv__resp_err(w, 414, "RequestURITooLong", "the request URI is too long");
        goto out_unlock;
    }
    snprintf(buf, sizeof buf, "%s", r->url);
    n = apisrv__split_path(buf, seg, ROUTES_MAX_SEG);
    if (n >= 3 && !strcmp(seg[0], "api")) {
        group = "";
        version = seg[1];
        rest = seg + 2;
        nrest = n - 2;
    } else if (n >= 4 && !strcmp(seg[0], "apis")) {
        group = seg[1];
        version = seg[2];
        rest = seg + 3;
        nrest = n - 3;
    } else {
        goto out_notfound;
    }
    if (!strcmp(rest[0], "namespaces") && nrest >= 3 &&
        !(group[0] == 0 && nrest == 3 && (!strcmp(rest[2], "status") || !strcmp(rest[2], "finalize")))) {
        tg.ns = rest[1];
        rest += 2;
        nrest -= 2;
    }
    if (nrest > 3) goto out_notfound;
    tg.t = apisrv__type_find(s, group, version, rest[0]);
    if (!tg.t) goto out_notfound;
    tg.name = nrest >= 2 ? rest[1] : NULL;
    tg.sub = nrest >= 3 ? rest[2] : NULL;
    if (tg.ns && !tg.t->namespaced) goto out_notfound;
    if (!apisrv__rbac_allowed(s, r, &tg, w)) goto out_unlock;
    if (tg.sub && !strcmp(tg.sub, "log") && !strcmp(tg.t->key, "/pods") && !strcmp(r->method, "GET")) {
        apisrv__pod_log(s, r, &tg, w);
        goto out_unlock;
    }
    if (tg.sub && !strcmp(tg.sub, "binding") && !strcmp(tg.t->key, "/pods") && tg.ns) {
        apisrv__verb(s, r, &tg, w);
        goto out_unlock;
    }
    if (tg.sub && (strcmp(tg.sub, "status") || !tg.t->has_status)) goto out_notfound;
    apisrv__verb(s, r, &tg, w);
    goto out_unlock;
out_notfound:
    apisrv__resp_err(w, 404, "NotFound", "the server could not find the requested resource");
out_unlock:
    pthread_mutex_unlock(&s->mu);
}
