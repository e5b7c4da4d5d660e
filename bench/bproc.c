/* bproc.c -- the process benchmarks' shared parts: child processes (API
 * servers, the operator), parallel clients, watch streams with arrival
 * times, /proc and /metrics readers. See bproc.h. */
#include "bench/bproc.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/json.h"
#include "operator/kubeconfig.h"
#include "operator/manifest.h"
#include "operator/pods.h"
#include "operator/release.h"
#include "operator/yaml_json.h"

/* ---- time, knobs, numbers ---------------------------------------------- */

double bp_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

long bp_env_long(const char *name, long dflt) {
    const char *v = getenv(name);
    char *end = NULL;
    if (!v || !*v)
        return dflt;
    errno = 0;
    long n = strtol(v, &end, 10);
    return (!errno && !*end && n > 0 && n < 1000000000L) ? n : dflt;
}

double bp_env_double(const char *name, double dflt) {
    const char *v = getenv(name);
    char *end = NULL;
    if (!v || !*v)
        return dflt;
    double d = strtod(v, &end);
    return (!*end && d > 0 && isfinite(d)) ? d : dflt;
}

const char *bp_env_str(const char *name, const char *dflt) {
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

void bp_log(const char *fmt, ...) {
    static double t0;
    va_list ap;
    if (!getenv("BENCH_VERBOSE"))
        return;
    if (t0 == 0)
        t0 = bp_now();
    fprintf(stderr, "[+%.1fs] ", bp_now() - t0);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int bp_parse_list(const char *s, long *out, int cap) {
    int n = 0;
    while (s && *s) {
        char *end = NULL;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (errno || end == s || v <= 0 || (*end && *end != ','))
            return -1;
        if (n < cap)
            out[n++] = v;
        s = *end ? end + 1 : end;
    }
    return n;
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

double bp_pct(double *v, int n, double p) {
    if (n <= 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_dbl);
    long k = (long)ceil(p * n) - 1;
    if (k < 0)
        k = 0;
    if (k >= n)
        k = n - 1;
    return v[k];
}

static void errf(char *err, size_t cap, const char *fmt, ...) {
    if (!err || !cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
}

/* ---- child processes ------------------------------------------------------ */

/* Forks and execs argv with stdout and stderr appended to log. Returns the
 * pid or -1. */
static pid_t spawn(const char *const *argv, const char *log) {
    pid_t pid = fork();
    if (pid != 0)
        return pid; /* the parent, or -1 */
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
        /* Best effort: a child without its log still runs. */
        if (dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(126);
        close(fd);
    }
    /* execv wants char *const[]; the strings are not modified. */
    execv(argv[0], (char *const *)(uintptr_t)argv);
    _exit(127);
}

/* Stops a child: sig, then SIGKILL after grace_s. Reaps it. */
static void stop_child(pid_t pid, int sig, double grace_s) {
    if (pid <= 0)
        return;
    int st = 0;
    if (kill(pid, sig) != 0 && errno == ESRCH) {
        (void)waitpid(pid, &st, WNOHANG); /* already gone: reap if ours */
        return;
    }
    double t0 = bp_now();
    while (waitpid(pid, &st, WNOHANG) == 0) {
        if (bp_now() - t0 > grace_s) {
            (void)kill(pid, SIGKILL); /* did not stop in time */
            (void)waitpid(pid, &st, 0);
            return;
        }
        usleep(20000);
    }
}

static int alive(pid_t pid) {
    int st = 0;
    return waitpid(pid, &st, WNOHANG) == 0;
}

/* Reads the lines of path appended since *pos, calling fn for each one
 * until it returns nonzero (that value is returned; 0 when none did). */
static int scan_log(const char *path, long *pos, int (*fn)(void *, const char *), void *ud) {
    FILE *f = fopen(path, "r");
    char line[4096];
    int r = 0;
    if (!f)
        return 0;
    if (fseek(f, *pos, SEEK_SET) != 0) {
        fclose(f);
        return 0;
    }
    while (!r && fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        if (n == 0 || line[n - 1] != '\n')
            break; /* a line still being written: read it next time */
        *pos += (long)n;
        r = fn(ud, line);
    }
    fclose(f);
    return r;
}

/* ---- API servers --------------------------------------------------------- */

const char *bp_kind_name(enum bp_kind k) { return k == BP_REAL ? "real" : "local"; }

const char *bp_kind_bin(enum bp_kind k) {
    return k == BP_REAL ? bp_env_str("BENCH_REAL_BIN", "build/realcluster/aiq-realcluster")
                        : bp_env_str("BENCH_LOCAL_BIN", "build/rel/aiq-apiserver");
}

int bp_write_nodes(const char *path, int n_a100, int cordoned, int n_h100) {
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "# written by bench/bproc.c\n");
    /* The local server takes at most 1,000 nodes per entry (the real one 5,000). */
    for (int done = 0, part = 0; done < n_a100; part++) {
        int n = n_a100 - done > 1000 ? 1000 : n_a100 - done;
        fprintf(f,
                "- name: gpu%d\n  count: %d\n  gpus: 8\n  gpuProduct: NVIDIA-A100\n"
                "  gpuMemoryMiB: 81920\n  cpu: \"128\"\n  memory: 1Ti\n  unschedulable: %s\n",
                part, n, cordoned ? "true" : "false");
        done += n;
    }
    /* "aprobe" sorts before "gpu": the local server's simulated scheduler
     * looks at the first 4,096 nodes by name only. */
    if (n_h100 > 0)
        fprintf(f,
                "- name: aprobe\n  count: %d\n  gpus: 8\n  gpuProduct: NVIDIA-H100\n"
                "  gpuMemoryMiB: 81920\n  cpu: \"128\"\n  memory: 1Ti\n",
                n_h100);
    return fclose(f) == 0 ? 0 : -1;
}

static int saw_listening(void *ud, const char *line) {
    (void)ud;
    return strstr(line, "listening") != NULL;
}

int bp_server_start(struct bp_server *s, enum bp_kind k, const char *dir,
                    const char *nodes_file, const char *const *extra, int pool,
                    double timeout_s, char *err, size_t errcap) {
    const char *argv[32];
    char db[256];
    int n = 0;
    long pos = 0;
    aiq_err e;

    memset(s, 0, sizeof *s);
    s->kind = k;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        errf(err, errcap, "mkdir %s: %s", dir, strerror(errno));
        return -1;
    }
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    snprintf(s->kubeconfig, sizeof s->kubeconfig, "%s/kubeconfig", dir);
    snprintf(s->log, sizeof s->log, "%s/api.log", dir);
    snprintf(db, sizeof db, "%s/api.db", dir);
    argv[n++] = bp_kind_bin(k);
    argv[n++] = "--port";
    argv[n++] = "0";
    argv[n++] = "--kubeconfig";
    argv[n++] = s->kubeconfig;
    argv[n++] = "--db";
    argv[n++] = db;
    if (nodes_file) {
        argv[n++] = "--nodes";
        argv[n++] = nodes_file;
    }
    for (int i = 0; extra && extra[i] && n < 30; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    if (access(argv[0], X_OK) != 0) {
        errf(err, errcap, "%s is missing: run make", argv[0]);
        return -1;
    }
    (void)unlink(s->kubeconfig); /* a stale one must not look ready */
    double t0 = bp_now();
    s->pid = spawn(argv, s->log);
    if (s->pid < 0) {
        errf(err, errcap, "fork: %s", strerror(errno));
        return -1;
    }
    for (;;) {
        if (scan_log(s->log, &pos, saw_listening, NULL) && access(s->kubeconfig, R_OK) == 0)
            break;
        if (!alive(s->pid)) {
            errf(err, errcap, "%s exited before it was ready (see %s)", argv[0], s->log);
            s->pid = 0;
            return -1;
        }
        if (bp_now() - t0 > timeout_s) {
            errf(err, errcap, "%s not ready after %.0f s (see %s)", argv[0], timeout_s, s->log);
            goto out_stop;
        }
        usleep(50000);
    }
    s->ready_s = bp_now() - t0;
    aiq_err_clear(&e);
    if (kube_config_load(s->kubeconfig, NULL, &s->cfg, &e) != AIQ_OK) {
        errf(err, errcap, "%s: %s", s->kubeconfig, e.message);
        goto out_stop;
    }
    struct kube_client_opts o = {.timeout_ms = 120000, .pool_size = pool > 64 ? 64 : pool,
                                 .user_agent = "aiq-bench/0.1"};
    if (kube_client_create(s->cfg, &o, &s->kc, &e) != AIQ_OK) {
        errf(err, errcap, "client: %s", e.message);
        goto out_free_cfg;
    }
    return 0;

out_free_cfg:
    kube_config_free(s->cfg);
    s->cfg = NULL;
out_stop:
    stop_child(s->pid, SIGTERM, 20);
    s->pid = 0;
    return -1;
}

void bp_server_stop(struct bp_server *s) {
    kube_client_free(s->kc);
    s->kc = NULL;
    kube_config_free(s->cfg);
    s->cfg = NULL;
    stop_child(s->pid, SIGTERM, 20);
    s->pid = 0;
}

int bp_req(struct bp_server *s, const char *method, const char *path, const char *ctype,
           const char *body, char **resp) {
    int status = 0;
    size_t rlen = 0;
    aiq_err e;
    aiq_err_clear(&e);
    if (resp)
        *resp = NULL;
    /* The status says how it went; e's details are not needed here. */
    (void)kube_request(s->kc, method, path, ctype ? ctype : "application/json", body,
                       body ? strlen(body) : 0, &status, resp, &rlen, &e);
    return status;
}

int bp_post_yaml(struct bp_server *s, const char *const *files, int n, const char *collection,
                 int (*edit)(json_object *doc), char *err, size_t errcap) {
    for (int i = 0; i < n; i++) {
        char *text = NULL;
        size_t len = 0;
        json_object **docs = NULL;
        int nd = 0, rc = 0;
        aiq_err e;
        aiq_err_clear(&e);
        if (kube_read_file(files[i], 1 << 22, &text, &len, &e) != AIQ_OK ||
            aiq_yaml_to_json(text, len, &docs, &nd, &e) != AIQ_OK) {
            errf(err, errcap, "%s: %s", files[i], e.message);
            free(text);
            return -1;
        }
        for (int d = 0; d < nd && rc == 0; d++) {
            if (edit && edit(docs[d]) != 0) {
                errf(err, errcap, "%s: out of memory editing a document", files[i]);
                rc = -1;
                break;
            }
            int st = bp_req(s, "POST", collection, NULL,
                            json_object_to_json_string_ext(docs[d], JSON_C_TO_STRING_PLAIN), NULL);
            if (st != 201 && st != 409) {
                errf(err, errcap, "%s: create answered HTTP %d", files[i], st);
                rc = -1;
            }
        }
        aiq_json_docs_free(docs, nd);
        free(text);
        if (rc)
            return -1;
    }
    return 0;
}

int bp_wait_get(struct bp_server *s, const char *path, double timeout_s) {
    double t0 = bp_now();
    while (bp_req(s, "GET", path, NULL, NULL, NULL) != 200) {
        if (bp_now() - t0 > timeout_s)
            return -1;
        usleep(100000);
    }
    return 0;
}

int bp_list_rv(struct bp_server *s, const char *path, char *buf, size_t cap) {
    char p[512], *body = NULL;
    snprintf(p, sizeof p, "%s%slimit=1", path, strchr(path, '?') ? "&" : "?");
    if (bp_req(s, "GET", p, NULL, NULL, &body) != 200 || !body) {
        free(body);
        return -1;
    }
    const char *rv = bp_json_str(body, "\"metadata\"", "resourceVersion", buf, cap);
    free(body);
    return rv ? 0 : -1;
}

/* ---- the operator's pod and release patch ---------------------------------- */

char *bp_aijob_body(const char *ns, const char *name, int user, int priority,
                    const char *gpu_model, const char *duration) {
    char model[96] = "", *out = NULL;
    if (gpu_model)
        snprintf(model, sizeof model, ",\"gpuModel\":\"%s\"", gpu_model);
    const char *fmt =
        "{\"apiVersion\":\"aiq.dev/v1alpha1\",\"kind\":\"AIJob\",\"metadata\":"
        "{\"name\":\"%s\",\"namespace\":\"%s\"},\"spec\":{\"user\":\"u%d\",\"priority\":%d,"
        "\"replicas\":1,\"resources\":{\"gpus\":1,\"gpuMemoryMiB\":10240,\"cpu\":\"1\","
        "\"memory\":\"4Gi\"%s},\"template\":{\"metadata\":{\"annotations\":"
        "{\"sim.aiq.dev/duration\":\"%s\"}},\"spec\":{\"containers\":[{\"name\":\"w\","
        "\"image\":\"busybox\"}]}}}}";
    int n = snprintf(NULL, 0, fmt, name, ns, user, priority, model, duration);
    if (n < 0 || !(out = malloc((size_t)n + 1)))
        return NULL;
    snprintf(out, (size_t)n + 1, fmt, name, ns, user, priority, model, duration);
    return out;
}

char *bp_as_applied(const char *body) {
    json_object *obj = json_tokener_parse(body), *meta = NULL, *ann = NULL;
    char *out = NULL;
    size_t n = strlen(body);
    char *manifest = malloc(n + 2);
    if (manifest && obj && json_object_is_type(obj, json_type_object)) {
        memcpy(manifest, body, n);
        memcpy(manifest + n, "\n", 2); /* kubectl ends it with a newline */
        /* aiq_jset frees what it could not add: NULL then means no text */
        if (!json_object_object_get_ex(obj, "metadata", &meta)) {
            meta = json_object_new_object();
            if (aiq_jset(obj, "metadata", meta, NULL) != 0)
                meta = NULL;
        }
        if (meta && !json_object_object_get_ex(meta, "annotations", &ann)) {
            ann = json_object_new_object();
            if (aiq_jset(meta, "annotations", ann, NULL) != 0)
                ann = NULL;
        }
        if (ann &&
            aiq_jset(ann, "kubectl.kubernetes.io/last-applied-configuration",
                     json_object_new_string(manifest), NULL) == 0) {
            const char *txt = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN);
            out = txt ? strdup(txt) : NULL;
        }
    }
    free(manifest);
    json_object_put(obj);
    return out;
}

json_object *bp_gated_pod(const char *ns, const char *name) {
    char *body = bp_aijob_body(ns, name, 0, 0, "NVIDIA-A100", "1h");
    json_object *obj = body ? json_tokener_parse(body) : NULL, *pod = NULL, *meta = NULL,
                *labels = NULL, *m = NULL;
    struct aiq_aijob job;
    aiq_err e;
    free(body);
    if (!obj)
        return NULL;
    /* pods_build wants the owner's uid; it is dropped below. */
    bool failed = false;
    if (json_object_object_get_ex(obj, "metadata", &m))
        aiq_jset(m, "uid", json_object_new_string("00000000-0000-0000-0000-000000000000"), &failed);
    aiq_err_clear(&e);
    memset(&job, 0, sizeof job);
    if (!failed && aiq_aijob_from_json(obj, &job, &e) == AIQ_OK) {
        pod = pods_build(&job, NULL, 0, GPU_MECH_DEVICE_PLUGIN, &e);
        aiq_aijob_deinit(&job);
    }
    json_object_put(obj);
    if (!pod || !json_object_object_get_ex(pod, "metadata", &meta)) {
        json_object_put(pod);
        return NULL;
    }
    json_object_object_del(meta, "ownerReferences");
    if (json_object_object_get_ex(meta, "labels", &labels))
        json_object_object_del(labels, PODS_LABEL_JOB);
    if (aiq_jset(meta, "name", json_object_new_string(name), NULL) != 0) {
        json_object_put(pod);
        return NULL;
    }
    return pod;
}

char *bp_release_patch(json_object *pod, const char *node) {
    struct opst_place pl;
    aiq_err e;
    memset(&pl, 0, sizeof pl);
    snprintf(pl.node, sizeof pl.node, "%s", node);
    pl.ngpus = 1;
    pl.gpus[0] = 0;
    pl.gpu_memory_mib = 81920;
    aiq_err_clear(&e);
    json_object *p = release_pod_patch(pod, &pl, &e);
    char *out = p ? strdup(json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN)) : NULL;
    json_object_put(p);
    return out;
}

/* ---- parallel clients --------------------------------------------------- */

struct par {
    atomic_long next, done, ok;
    long n;
    double t0, cap_s;
    bp_op op;
    void *ctx;
};

static void *par_main(void *arg) {
    struct par *p = arg;
    for (;;) {
        if (bp_now() - p->t0 > p->cap_s)
            break;
        long i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n)
            break;
        int r = p->op(p->ctx, i);
        atomic_fetch_add(&p->done, 1);
        if (r == 0)
            atomic_fetch_add(&p->ok, 1);
    }
    return NULL;
}

double bp_parallel(int nthreads, long n, double cap_s, bp_op op, void *ctx, long *done, long *ok) {
    struct par p;
    pthread_t th[64];
    int started = 0;
    atomic_init(&p.next, 0);
    atomic_init(&p.done, 0);
    atomic_init(&p.ok, 0);
    p.n = n;
    p.cap_s = cap_s;
    p.op = op;
    p.ctx = ctx;
    p.t0 = bp_now();
    if (nthreads > 64)
        nthreads = 64;
    for (int t = 0; t < nthreads; t++)
        if (pthread_create(&th[started], NULL, par_main, &p) == 0)
            started++;
    if (started == 0)
        par_main(&p); /* no thread could start: run them here */
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    double dt = bp_now() - p.t0;
    *done = atomic_load(&p.done);
    *ok = atomic_load(&p.ok);
    return dt;
}

/* ---- watch streams ------------------------------------------------------ */

#define WATCH_MAX_LINE (16u << 20)

struct bp_watch {
    pthread_t th;
    struct bp_server *s;
    char path[512]; /* with the query */
    char base[512]; /* without it */
    char rv[64];
    bp_line_fn fn;
    void *ud;
    atomic_int stop;
    atomic_long toobig, restarts;
    char *buf;
    size_t len, cap;
    int skipping; /* inside a line past the cap */
};

const char *bp_json_str(const char *line, const char *after, const char *key, char *buf,
                        size_t cap) {
    char pat[128], esc[96];
    size_t k = 0;
    const char *p = after ? strstr(line, after) : NULL;
    const char *from = p ? p : line;
    if (strlen(key) > 60)
        return NULL; /* the benchmarks' keys are short: a pattern must not be cut */
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    p = strstr(from, pat);
    if (!p && strchr(key, '/')) {
        /* json-c (the local server) writes '/' as "\/". */
        esc[k++] = '"';
        for (const char *c = key; *c && k + 4 < sizeof esc; c++) {
            if (*c == '/')
                esc[k++] = '\\';
            esc[k++] = *c;
        }
        esc[k] = 0;
        snprintf(pat, sizeof pat, "%s\":\"", esc);
        p = strstr(from, pat);
    }
    if (!p)
        return NULL;
    p += strlen(pat);
    const char *q = strchr(p, '"');
    if (!q || (size_t)(q - p) >= cap)
        return NULL;
    memcpy(buf, p, (size_t)(q - p));
    buf[q - p] = 0;
    return buf;
}

static void watch_line(struct bp_watch *w, char *line, size_t len, double t) {
    char rv[64];
    line[len] = 0;
    if (strncmp(line, "{\"type\":\"ERROR\"", 15) == 0) {
        w->rv[0] = 0; /* expired: start again from now (events are lost) */
    } else if (bp_json_str(line, NULL, "resourceVersion", rv, sizeof rv)) {
        memcpy(w->rv, rv, sizeof rv);
    }
    w->fn(w->ud, line, len, t);
}

static size_t watch_write(char *d, size_t sz, size_t nm, void *ud) {
    struct bp_watch *w = ud;
    size_t n = sz * nm;
    double t = bp_now();
    for (size_t i = 0; i < n;) {
        char *nl = memchr(d + i, '\n', n - i);
        size_t take = nl ? (size_t)(nl - (d + i)) : n - i;
        if (!w->skipping) {
            if (w->len + take + 1 > WATCH_MAX_LINE) {
                w->skipping = 1;
                w->len = 0;
                atomic_fetch_add(&w->toobig, 1);
            } else {
                if (w->len + take + 1 > w->cap) {
                    size_t nc = w->cap ? w->cap : 65536;
                    while (nc < w->len + take + 1)
                        nc *= 2;
                    char *nb = realloc(w->buf, nc);
                    if (!nb)
                        return 0; /* out of memory: end the stream */
                    w->buf = nb;
                    w->cap = nc;
                }
                memcpy(w->buf + w->len, d + i, take);
                w->len += take;
            }
        }
        i += take;
        if (nl) {
            if (!w->skipping && w->len > 0)
                watch_line(w, w->buf, w->len, t);
            w->len = 0;
            w->skipping = 0;
            i++;
        }
    }
    return n;
}

static int watch_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
    (void)a;
    (void)b;
    (void)c;
    (void)d;
    struct bp_watch *w = ud;
    return atomic_load(&w->stop) ? 1 : 0;
}

static void *watch_main(void *arg) {
    struct bp_watch *w = arg;
    const struct kube_config *cfg = w->s->cfg;
    struct curl_slist *h = NULL;
    char auth[4200];
    CURL *c = curl_easy_init();
    if (!c)
        return NULL;
    if (cfg->token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", cfg->token);
        h = curl_slist_append(h, auth);
    }
    h = curl_slist_append(h, "Accept: application/json");
    while (!atomic_load(&w->stop)) {
        char url[1024];
        if (!w->rv[0] && bp_list_rv(w->s, w->base, w->rv, sizeof w->rv) != 0) {
            usleep(200000);
            continue;
        }
        snprintf(url, sizeof url, "%s%s%sresourceVersion=%s", cfg->server, w->path,
                 strchr(w->path, '?') ? "&" : "?", w->rv);
        curl_easy_reset(c);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, watch_write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, w);
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, watch_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, w);
        curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
        if (cfg->insecure) {
            curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
            curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
        }
        if (cfg->ca_data.data) {
            struct curl_blob b = {cfg->ca_data.data, cfg->ca_data.len, CURL_BLOB_COPY};
            curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &b);
        } else if (cfg->ca_file) {
            curl_easy_setopt(c, CURLOPT_CAINFO, cfg->ca_file);
        }
        w->len = 0;
        w->skipping = 0;
        /* How the stream ended does not matter: it is opened again. */
        (void)curl_easy_perform(c);
        if (atomic_load(&w->stop))
            break;
        atomic_fetch_add(&w->restarts, 1);
        usleep(100000);
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return NULL;
}

struct bp_watch *bp_watch_start(struct bp_server *s, const char *path_query, bp_line_fn fn,
                                void *ud) {
    struct bp_watch *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->s = s;
    w->fn = fn;
    w->ud = ud;
    snprintf(w->path, sizeof w->path, "%s", path_query);
    atomic_init(&w->stop, 0);
    atomic_init(&w->toobig, 0);
    atomic_init(&w->restarts, 0);
    /* Start from the collection's current resourceVersion: only what
     * happens from now on is delivered. */
    snprintf(w->base, sizeof w->base, "%s", path_query);
    char *q = strchr(w->base, '?');
    if (q)
        *q = 0;
    if (bp_list_rv(s, w->base, w->rv, sizeof w->rv) != 0 ||
        pthread_create(&w->th, NULL, watch_main, w) != 0) {
        free(w);
        return NULL;
    }
    return w;
}

void bp_watch_stop(struct bp_watch *w) {
    if (!w)
        return;
    atomic_store(&w->stop, 1);
    pthread_join(w->th, NULL);
    free(w->buf);
    free(w);
}

void bp_watch_stats(struct bp_watch *w, long *toobig, long *restarts) {
    *toobig = w ? atomic_load(&w->toobig) : 0;
    *restarts = w ? atomic_load(&w->restarts) : 0;
}

/* ---- the operator --------------------------------------------------------- */

static int op_line(void *ud, const char *line) {
    struct bp_operator *op = ud;
    const char *p = strstr(line, "event=metrics_listening");
    if (p && (p = strstr(p, "port=")) != NULL)
        op->metrics_port = (int)strtol(p + 5, NULL, 10);
    if (strstr(line, "event=ready"))
        op->ready = bp_now();
    return 0;
}

int bp_operator_start(struct bp_operator *op, const struct bp_server *s, const char *db,
                      const char *log, int cycle_ms, double timeout_s, char *err, size_t errcap) {
    char cyc[32];
    struct stat stt;
    memset(op, 0, sizeof *op);
    snprintf(op->bin, sizeof op->bin, "%s", bp_env_str("BENCH_OPERATOR", "build/rel/aiq-operator"));
    snprintf(op->log, sizeof op->log, "%s", log);
    snprintf(op->db, sizeof op->db, "%s", db);
    snprintf(cyc, sizeof cyc, "%d", cycle_ms);
    if (access(op->bin, X_OK) != 0) {
        errf(err, errcap, "%s is missing: run make", op->bin);
        return -1;
    }
    op->logpos = stat(log, &stt) == 0 ? (long)stt.st_size : 0;
    const char *argv[] = {op->bin, "--kubeconfig", s->kubeconfig, "--db", db, "--metrics-addr",
                          "127.0.0.1:0", "--cycle-ms", cyc, "--log-level",
                          bp_env_str("BENCH_LOG_LEVEL", "info"),
                          /* the benchmark's jobs are in namespaces no Group claims */
                          "--ungrouped", "run", NULL};
    op->started = bp_now();
    op->pid = spawn(argv, log);
    if (op->pid < 0) {
        errf(err, errcap, "fork: %s", strerror(errno));
        return -1;
    }
    while (!op->ready || !op->metrics_port) {
        scan_log(log, &op->logpos, op_line, op);
        if (op->ready && op->metrics_port)
            break;
        if (!alive(op->pid)) {
            errf(err, errcap, "%s exited before it was ready (see %s)", op->bin, log);
            op->pid = 0;
            return -1;
        }
        if (bp_now() - op->started > timeout_s) {
            errf(err, errcap, "%s not ready after %.0f s (see %s)", op->bin, timeout_s, log);
            stop_child(op->pid, SIGKILL, 1);
            op->pid = 0;
            return -1;
        }
        usleep(10000);
    }
    return 0;
}

int bp_operator_gone(struct bp_operator *op, char *why, size_t cap) {
    int st = 0;
    if (op->pid <= 0 || waitpid(op->pid, &st, WNOHANG) != op->pid)
        return 0;
    if (WIFSIGNALED(st))
        snprintf(why, cap, "was killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else
        snprintf(why, cap, "exited with status %d", WEXITSTATUS(st));
    op->pid = 0;
    return 1;
}

void bp_operator_signal(struct bp_operator *op, int sig) {
    if (op->pid <= 0)
        return;
    if (sig == SIGKILL || sig == SIGTERM) {
        stop_child(op->pid, sig, sig == SIGKILL ? 5 : 10);
        op->pid = 0;
    } else {
        (void)kill(op->pid, sig); /* SIGSTOP/SIGCONT: the process exists */
    }
}

long bp_rss_kib(pid_t pid) {
    char path[64], line[256];
    long kib = -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kib = strtol(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return kib;
}

/* The CPU seconds of pid (user + system, every thread) and its parent's
 * pid from /proc/PID/stat; -1 when it cannot be read. */
static double proc_cpu_ppid(pid_t pid, long *ppid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces: count from its ')'.
     * utime and stime are fields 14 and 15, in clock ticks. */
    const char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    /* After ')': field 3 (state) is token 0, ppid token 1, utime token
     * 11, stime 12. */
    unsigned long long v[2] = {0, 0};
    p++;
    for (int tok = 0; tok <= 12; tok++) {
        while (*p == ' ')
            p++;
        if (!*p)
            return -1;
        if (tok == 1) {
            char *end;
            *ppid = strtol(p, &end, 10);
            p = end;
        } else if (tok >= 11) {
            char *end;
            v[tok - 11] = strtoull(p, &end, 10);
            if (end == p)
                return -1;
            p = end;
        } else {
            while (*p && *p != ' ')
                p++;
        }
    }
    long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? (double)(v[0] + v[1]) / (double)hz : -1;
}

double bp_cpu_s(pid_t pid) {
    long ppid = 0;
    return proc_cpu_ppid(pid, &ppid);
}

double bp_tree_cpu_s(pid_t pid) {
    long ppid = 0;
    double sum = proc_cpu_ppid(pid, &ppid);
    DIR *d = sum >= 0 ? opendir("/proc") : NULL;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        char *end;
        long other = strtol(de->d_name, &end, 10);
        if (end == de->d_name || *end || other <= 0 || other == (long)pid)
            continue;
        double c = proc_cpu_ppid((pid_t)other, &ppid);
        if (c >= 0 && ppid == (long)pid)
            sum += c; /* gone meanwhile (c < 0): nothing to add */
    }
    if (d)
        closedir(d);
    return sum;
}

double bp_idle_s(void) {
    unsigned long long v[5] = {0, 0, 0, 0, 0}; /* user nice system idle iowait */
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4]);
    fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    return n == 5 && hz > 0 ? (double)(v[3] + v[4]) / (double)hz : -1;
}

long long bp_file_bytes(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* ---- /metrics ------------------------------------------------------------- */

struct mbuf {
    char *p;
    size_t len, cap;
};

static size_t mbuf_write(char *d, size_t sz, size_t nm, void *ud) {
    struct mbuf *b = ud;
    size_t n = sz * nm;
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 65536;
        while (nc < b->len + n + 1)
            nc *= 2;
        if (nc > (64u << 20))
            return 0; /* past the cap: fail the transfer */
        char *np = realloc(b->p, nc);
        if (!np)
            return 0;
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, d, n);
    b->len += n;
    b->p[b->len] = 0;
    return n;
}

int bp_metrics_get(int port, struct bp_metrics *m) {
    char url[128];
    struct mbuf b = {NULL, 0, 0};
    long code = 0;
    int rc = -1;
    CURL *c = curl_easy_init();
    if (!c)
        return -1;
    memset(m, 0, sizeof *m);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", port);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, mbuf_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    if (curl_easy_perform(c) != CURLE_OK || !b.p)
        goto out;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    if (code != 200)
        goto out;
    for (char *line = b.p; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        const char *le = "aiq_cycle_seconds_bucket{le=\"";
        if (strncmp(line, le, strlen(le)) == 0 && m->nb < BP_MAX_BUCKETS) {
            char *p = line + strlen(le), *end = NULL;
            double bound = strncmp(p, "+Inf", 4) == 0 ? INFINITY : strtod(p, &end);
            char *sp = strrchr(line, ' ');
            if (sp) {
                m->le[m->nb] = bound;
                m->cum[m->nb] = strtod(sp + 1, NULL);
                m->nb++;
            }
        } else if (strncmp(line, "aiq_cycle_seconds_sum ", 22) == 0) {
            m->sum = strtod(line + 22, NULL);
        } else if (strncmp(line, "aiq_cycle_seconds_count ", 24) == 0) {
            m->count = strtod(line + 24, NULL);
        } else if (strncmp(line, "aiq_admitted_total ", 19) == 0) {
            m->admitted = strtod(line + 19, NULL);
        } else if (strncmp(line, "aiq_cache_frozen_objects ", 25) == 0) {
            m->frozen = strtod(line + 25, NULL);
        } else if (strncmp(line, "aiq_cache_thaws_total ", 22) == 0) {
            m->thaws = strtod(line + 22, NULL);
        }
        line = nl ? nl + 1 : NULL;
    }
    rc = m->nb > 0 ? 0 : -1;
out:
    free(b.p);
    curl_easy_cleanup(c);
    return rc;
}

double bp_hist_quantile(const struct bp_metrics *a, const struct bp_metrics *b, double q) {
    int nb = b->nb;
    if (nb <= 0 || a->nb != nb)
        return 0;
    double total = b->cum[nb - 1] - a->cum[nb - 1];
    if (total <= 0)
        return 0;
    double rank = q * total, prev = 0;
    for (int i = 0; i < nb; i++) {
        double c = b->cum[i] - a->cum[i];
        if (c >= rank) {
            double lo = i > 0 ? b->le[i - 1] : 0;
            if (isinf(b->le[i]))
                return lo;
            double in = c - prev;
            return in > 0 ? lo + (b->le[i] - lo) * (rank - prev) / in : b->le[i];
        }
        prev = c;
    }
    return b->le[nb - 1];
}
