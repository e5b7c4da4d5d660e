/* main.c -- aiq-promfake: a small fake Prometheus for tests. It answers
 * GET /api/v1/query?query=Q the way the Prometheus HTTP API does, from a
 * spec file it re-reads on every request, so a test changes what it
 * serves by rewriting the file:
 *
 *   # comment
 *   mode ok           ok (default) | error (HTTP 400, status "error") |
 *                     garbage (HTTP 200, not JSON) | http500 (HTTP 500, no body)
 *   age 600           sample timestamps are now - 600 s (default 0)
 *   label Hostname    the label naming the node (default Hostname)
 *   NODE GPU UTIL FB  one GPU: node name, index, DCGM_FI_DEV_GPU_UTIL
 *                     (percent), DCGM_FI_DEV_FB_USED (MiB); "NaN" allowed
 *
 * DCGM_FI_DEV_GPU_UTIL and DCGM_FI_DEV_FB_USED get one series per GPU
 * line (labels __name__, gpu, UUID, device, modelName and the node
 * label, as dcgm-exporter writes them); any other query an empty vector.
 * Going down is the test killing the process.
 *
 * usage: aiq-promfake --spec FILE [--addr H:P] [--port-file FILE]
 * Prints "listening on PORT" and serves until SIGINT/SIGTERM. */
#include <arpa/inet.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "operator/http_api.h"

static volatile sig_atomic_t stop_flag;
static const char *spec_path;
static unsigned long nrequests;

static void on_signal(int sig) {
    (void)sig;
    stop_flag = 1;
}

struct spec {
    char mode[32];
    char label[64];
    double age;
    json_object *gpus; /* array of [node, gpu, util, fb] */
};

/* Splits line in place at blanks into at most max words; returns how
 * many, or max + 1 when there are more. */
static int split(char *line, char **tok, int max) {
    int k = 0;
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            *p++ = '\0';
        if (!*p)
            return k;
        if (k == max)
            return max + 1;
        tok[k++] = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n')
            p++;
    }
}

/* Reads the spec file; returns 0 or -1 with msg set. */
static int spec_read(struct spec *sp, char *msg, size_t cap) {
    FILE *f = fopen(spec_path, "r");
    char line[512];
    snprintf(sp->mode, sizeof sp->mode, "ok");
    snprintf(sp->label, sizeof sp->label, "Hostname");
    sp->age = 0;
    sp->gpus = json_object_new_array();
    if (!f || !sp->gpus) {
        snprintf(msg, cap, "cannot read spec %s", spec_path);
        if (f)
            fclose(f);
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        char a[256], b[64], c[64], d[64];
        int k = 0;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        char *tok[4] = {0};
        k = split(line, tok, 4);
        if (k == 2 && strcmp(tok[0], "mode") == 0) {
            snprintf(sp->mode, sizeof sp->mode, "%s", tok[1]);
        } else if (k == 2 && strcmp(tok[0], "age") == 0) {
            sp->age = strtod(tok[1], NULL);
        } else if (k == 2 && strcmp(tok[0], "label") == 0) {
            snprintf(sp->label, sizeof sp->label, "%s", tok[1]);
        } else if (k == 4) {
            snprintf(a, sizeof a, "%s", tok[0]);
            snprintf(b, sizeof b, "%s", tok[1]);
            snprintf(c, sizeof c, "%s", tok[2]);
            snprintf(d, sizeof d, "%s", tok[3]);
            json_object *g = json_object_new_array();
            json_object_array_add(g, json_object_new_string(a));
            json_object_array_add(g, json_object_new_string(b));
            json_object_array_add(g, json_object_new_string(c));
            json_object_array_add(g, json_object_new_string(d));
            json_object_array_add(sp->gpus, g);
        } else {
            snprintf(msg, cap, "spec %s: cannot read line starting \"%.40s\"", spec_path,
                     k > 0 ? tok[0] : "");
            fclose(f);
            return -1;
        }
    }
    fclose(f);
    return 0;
}

static const char *jstr_at(json_object *a, size_t i) {
    return json_object_get_string(json_object_array_get_idx(a, i));
}

/* The vector answer for query q. */
static json_object *answer(const struct spec *sp, const char *q) {
    int col = strcmp(q, "DCGM_FI_DEV_GPU_UTIL") == 0 ? 2 : strcmp(q, "DCGM_FI_DEV_FB_USED") == 0 ? 3 : -1;
    json_object *doc = json_object_new_object(), *data = json_object_new_object(),
                *res = json_object_new_array();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double t = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 - sp->age;
    json_object_object_add(doc, "status", json_object_new_string("success"));
    json_object_object_add(doc, "data", data);
    json_object_object_add(data, "resultType", json_object_new_string("vector"));
    json_object_object_add(data, "result", res);
    for (size_t i = 0; col >= 0 && i < json_object_array_length(sp->gpus); i++) {
        json_object *g = json_object_array_get_idx(sp->gpus, i);
        json_object *it = json_object_new_object(), *m = json_object_new_object(),
                    *v = json_object_new_array();
        char uuid[320], dev[64];
        snprintf(uuid, sizeof uuid, "GPU-fake-%s-%s", jstr_at(g, 0), jstr_at(g, 1));
        snprintf(dev, sizeof dev, "nvidia%s", jstr_at(g, 1));
        json_object_object_add(m, "__name__", json_object_new_string(q));
        json_object_object_add(m, "gpu", json_object_new_string(jstr_at(g, 1)));
        json_object_object_add(m, "UUID", json_object_new_string(uuid));
        json_object_object_add(m, "device", json_object_new_string(dev));
        json_object_object_add(m, "modelName", json_object_new_string("NVIDIA A100-SXM4-80GB"));
        json_object_object_add(m, sp->label, json_object_new_string(jstr_at(g, 0)));
        json_object_array_add(v, json_object_new_double(t));
        json_object_array_add(v, json_object_new_string(jstr_at(g, (size_t)col)));
        json_object_object_add(it, "metric", m);
        json_object_object_add(it, "value", v);
        json_object_array_add(res, it);
    }
    return doc;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *body) {
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **state) {
    (void)cls;
    (void)version;
    (void)upload;
    (void)state;
    (void)method;
    *upload_size = 0;
    nrequests++;
    if (strcmp(url, "/-/healthy") == 0)
        return reply(c, 200, "Prometheus is Healthy.\n");
    if (strcmp(url, "/api/v1/query") != 0)
        return reply(c, 404, "404 page not found\n");
    const char *q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "query");
    char msg[512];
    struct spec sp;
    memset(&sp, 0, sizeof sp);
    if (spec_read(&sp, msg, sizeof msg) != 0) {
        json_object_put(sp.gpus);
        return reply(c, 500, msg);
    }
    enum MHD_Result ret;
    if (strcmp(sp.mode, "error") == 0 || !q)
        ret = reply(c, 400, "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":"
                            "\"invalid parameter \\\"query\\\": fake error\"}");
    else if (strcmp(sp.mode, "garbage") == 0)
        ret = reply(c, 200, "<html><body>upstream proxy says hello</body></html>");
    else if (strcmp(sp.mode, "http500") == 0)
        ret = reply(c, 500, "");
    else {
        json_object *doc = answer(&sp, q);
        ret = reply(c, 200, json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN));
        json_object_put(doc);
    }
    json_object_put(sp.gpus);
    return ret;
}

int main(int argc, char **argv) {
    const char *addr = "127.0.0.1:0", *port_file = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--spec") == 0 && i + 1 < argc)
            spec_path = argv[++i];
        else if (strcmp(argv[i], "--addr") == 0 && i + 1 < argc)
            addr = argv[++i];
        else if (strcmp(argv[i], "--port-file") == 0 && i + 1 < argc)
            port_file = argv[++i];
        else {
            fprintf(stderr, "usage: aiq-promfake --spec FILE [--addr H:P] [--port-file FILE]\n");
            return 2;
        }
    }
    struct sockaddr_in sa;
    if (!spec_path || opapi_parse_addr(addr, &sa) != 0) {
        fprintf(stderr, "aiq-promfake: --spec FILE is required and --addr must be IPv4-host:port\n");
        return 2;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handler,
                                            NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                                            MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "aiq-promfake: cannot listen on %s\n", addr);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    int port = info ? (int)info->port : ntohs(sa.sin_port);
    printf("listening on %d\n", port);
    fflush(stdout);
    if (port_file) {
        FILE *f = fopen(port_file, "w");
        if (!f || fprintf(f, "%d\n", port) < 0 || fclose(f) != 0) {
            fprintf(stderr, "aiq-promfake: cannot write %s\n", port_file);
            MHD_stop_daemon(d);
            return 1;
        }
    }
    while (!stop_flag)
        usleep(100000);
    MHD_stop_daemon(d);
    return 0;
}
