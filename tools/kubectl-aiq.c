/* kubectl-aiq.c -- the `kubectl aiq` plugin: the queue as users and admins
 * coming from Slurm expect to see it (squeue, sprio, sshare), read from
 * the Kubernetes API with the kubeconfig as kubectl reads it.
 *
 *   kubectl aiq queue [-A] [--level L] [--user U]      squeue
 *   kubectl aiq explain JOB                            sprio + why it waits
 *   kubectl aiq usage [--group G]                      sshare
 *   kubectl aiq policy test FILE                       what a policy would do
 *   kubectl aiq nodes                                  sinfo: GPU facts, use, utilisation, exclusions
 *   kubectl aiq rerun JOB                              a finished job again, as a new run
 *
 * Everything comes from the objects the operator writes (AIJob, Group,
 * UserQuota and QueuePolicy status); the decision journal comes from the
 * operator's read-only HTTP endpoint when it is reachable. Output is a
 * kubectl-style table (colours only on a terminal, and never with
 * NO_COLOR), or -o json / -o yaml for scripts. Factor vectors and the
 * what-if ranking are in tools/cli_rank.c, tables in
 * tools/cli_table.c. */
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/version.h"
#include "common/aiq_err.h"
#include "common/json.h"
#include "common/model.h"
#include "tools/cli_headroom.h"
#include "tools/cli_rank.h"
#include "tools/cli_table.h"
#include "operator/foreign.h"
#include "operator/kube_http.h"
#include "operator/kubeconfig.h"
#include "operator/manifest.h"
#include "operator/nodefacts.h"
#include "operator/pods.h"
#include "policy/policy_adapter.h"
#include "operator/status.h"
#include "tools/cli_util.h"
#include "policy/fx.h"

#define PATH_CAP 1024
#define MAX_ITEMS 20000

enum out_fmt { OUT_TABLE = 0, OUT_JSON, OUT_YAML };

struct opts {
    const char *kubeconfig, *context, *ns, *operator_url;
    const struct kube_config *kcfg; /* the loaded kubeconfig (credentials) */
    struct kube_client *kc;         /* the API server's client: its credentials are
                                       got once (an exec plugin runs once) */
    const char *level, *user, *group;
    bool all_ns, color;
    enum out_fmt out;
    const char *args[4];
    int nargs;
};

/* Everything read from the API for one command. */
struct world {
    json_object *groups_list, *uqs_list, *jobs_list, *policies_list;
    json_object *nodes_list; /* NULL when nodes cannot be read (nodes_err says why) */
    char nodes_err[sizeof ((aiq_err *)0)->message];
    struct aiq_group *groups;
    json_object **group_status;
    int ngroups;
    struct aiq_userquota *uqs;
    json_object **uq_status;
    int nuqs;
    struct cli_job *jobs;
    int njobs;
    json_object *active_policy; /* borrowed from policies_list, or NULL */
    oppolicy *policy;           /* the active one compiled, or the default */
    struct cli_world cw;
};

static const char *C_BOLD = "", *C_DIM = "", *C_RED = "", *C_GREEN = "",
                  *C_YELLOW = "", *C_CYAN = "", *C_OFF = "";

static void usage(FILE *out) {
    fputs("kubectl aiq -- the aiq queue from kubectl\n"
          "\n"
          "Commands:\n"
          "  queue [-A] [--level L] [--user U]   pending jobs, level by level, with position,\n"
          "                                      score, wait, ETA and why each one waits\n"
          "  explain JOB                         a job's score term by term, its level and why,\n"
          "                                      quota and budget headroom, what blocks it, ETA\n"
          "                                      and its recent journal entries\n"
          "  usage [--group G]                   per group and user: quota, in use, budget,\n"
          "                                      fair-share factor\n"
          "  policy test FILE                    compile a QueuePolicy locally and show how the\n"
          "                                      current queue would reorder under it\n"
          "  nodes                               every node's GPU facts as aiq reads them, the\n"
          "                                      GPUs aiq's and other pods hold, live GPU\n"
          "                                      utilisation (from the operator), and why a node\n"
          "                                      is left out\n"
          "  rerun JOB                           run a finished job (Succeeded, Failed, Rejected)\n"
          "                                      again as a new run; its history is kept\n"
          "\n"
          "Flags:\n"
          "  --kubeconfig PATH     kubeconfig file (default $KUBECONFIG, ~/.kube/config)\n"
          "  --context NAME        kubeconfig context\n"
          "  -n, --namespace NS    namespace (default: the context's, else default)\n"
          "  -A, --all-namespaces  every namespace\n"
          "  -o, --output FMT      json or yaml instead of a table\n"
          "  --operator-url URL    the operator's HTTP endpoint (e.g. http://127.0.0.1:8080, a\n"
          "                        port-forward; to another host the kubeconfig's credentials are\n"
          "                        sent, and the operator runs with --api-remote). Default: through\n"
          "                        the API server, the aggregated API query.aiq.dev (APIService\n"
          "                        v1alpha1.query.aiq.dev, docs/admin-guide.md)\n"
          "  --no-color            no colours even on a terminal (NO_COLOR does the same)\n",
          out);
}

/* Prints "error: ..." (printf-style) on stderr; returns 1 for the exit
 * status. */
static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int fail(const char *fmt, ...) {
    va_list ap;
    fputs("error: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

/* ---- flags ----------------------------------------------------------------- */

/* Matches "--name value", "--name=value" and, for a short name, "-n value"
 * / "-nvalue". Returns 1 and sets *val (advancing *i) on a match, 0 for no
 * match, -1 when the value is missing. */
static int flag_value(int argc, char **argv, int *i, const char *lng,
                      const char *shrt, const char **val) {
    const char *a = argv[*i];
    size_t ln = strlen(lng);
    if (strncmp(a, lng, ln) == 0 && (a[ln] == '=' || a[ln] == '\0')) {
        if (a[ln] == '=') {
            *val = a + ln + 1;
            return 1;
        }
    } else if (shrt && strncmp(a, shrt, 2) == 0) {
        if (a[2]) {
            *val = a + 2;
            return 1;
        }
    } else {
        return 0;
    }
    if (*i + 1 >= argc)
        return -1;
    *val = argv[++*i];
    return 1;
}

/* Parses argv into *o. Returns 0, or 1 after printing what is wrong. */
static int parse_flags(int argc, char **argv, struct opts *o) {
    static const struct {
        const char *lng, *shrt;
        size_t off;
    } vf[] = {
        {"--kubeconfig", NULL, offsetof(struct opts, kubeconfig)},
        {"--context", NULL, offsetof(struct opts, context)},
        {"--namespace", "-n", offsetof(struct opts, ns)},
        {"--operator-url", NULL, offsetof(struct opts, operator_url)},
        {"--level", NULL, offsetof(struct opts, level)},
        {"--user", NULL, offsetof(struct opts, user)},
        {"--group", NULL, offsetof(struct opts, group)},
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        int m = 0;
        if (strcmp(a, "-A") == 0 || strcmp(a, "--all-namespaces") == 0) {
            o->all_ns = true;
            continue;
        }
        if (strcmp(a, "--no-color") == 0) {
            o->color = false;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0 || strcmp(a, "help") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strcmp(a, "--version") == 0 || strcmp(a, "version") == 0) {
            aiq_print_version("kubectl-aiq");
            exit(0);
        }
        if ((m = flag_value(argc, argv, &i, "--output", "-o", &v)) != 0) {
            if (m < 0)
                return fail("flag %s needs a value", a);
            if (strcmp(v, "json") == 0)
                o->out = OUT_JSON;
            else if (strcmp(v, "yaml") == 0)
                o->out = OUT_YAML;
            else if (strcmp(v, "table") == 0 || strcmp(v, "wide") == 0)
                o->out = OUT_TABLE;
            else
                return fail("-o: expected json or yaml, got \"%s\"", v);
            continue;
        }
        for (size_t k = 0; k < sizeof vf / sizeof vf[0] && !m; k++) {
            m = flag_value(argc, argv, &i, vf[k].lng, vf[k].shrt, &v);
            if (m > 0)
                *(const char **)(void *)((char *)o + vf[k].off) = v;
        }
        if (m < 0)
            return fail("flag %s needs a value", a);
        if (m > 0)
            continue;
        if (a[0] == '-' && a[1])
            return fail("unknown flag %s (see kubectl aiq --help)", a);
        if (o->nargs >= (int)(sizeof o->args / sizeof o->args[0]))
            return fail("unexpected argument \"%s\"", a);
        o->args[o->nargs++] = a;
    }
    return 0;
}

/* ---- API access ------------------------------------------------------------ */

static void print_err(const char *what, const aiq_err *e) {
    fprintf(stderr, "error: %s: %s\n", what, e->message[0] ? e->message : aiq_strerror(e->code));
}

/* GETs an aiq.dev list (ns NULL: every namespace / cluster-scoped) into
 * *out (a new reference). Prints the error and returns nonzero. */
static int get_list(struct kube_client *kc, const char *group, const char *version,
                    const char *ns, const char *resource, json_object **out) {
    char path[PATH_CAP];
    aiq_err e;
    aiq_err_clear(&e);
    if (kube_path(path, sizeof path, group, version, ns, resource, NULL, NULL, &e) != AIQ_OK ||
        kube_get(kc, path, out, &e) != AIQ_OK) {
        char what[128];
        snprintf(what, sizeof what, "listing %s", resource);
        print_err(what, &e);
        return 1;
    }
    return 0;
}

/* Like get_list, but a list the user may not read (403) is not fatal:
 * users hold aiq-user only in their group's namespaces, so the tool says
 * what it could not see and goes on with an empty list. ns_fallback (may
 * be NULL) is tried when the cluster-wide list is forbidden. */
static int get_list_opt(struct kube_client *kc, const char *resource, const char *ns_fallback,
                        json_object **out) {
    char path[PATH_CAP];
    aiq_err e;
    aiq_err_clear(&e);
    aiq_rc rc = kube_path(path, sizeof path, AIQ_GROUP, AIQ_VERSION, NULL, resource, NULL, NULL, &e);
    if (rc == AIQ_OK)
        rc = kube_get(kc, path, out, &e);
    if (rc == AIQ_EAUTH && ns_fallback) {
        aiq_err_clear(&e);
        rc = kube_path(path, sizeof path, AIQ_GROUP, AIQ_VERSION, ns_fallback, resource, NULL, NULL, &e);
        if (rc == AIQ_OK)
            rc = kube_get(kc, path, out, &e);
    }
    if (rc == AIQ_EAUTH) {
        fprintf(stderr, "warning: cannot list %s (%s); what depends on them is left out\n", resource,
                e.message);
        *out = json_tokener_parse("{\"items\":[]}");
        return *out ? 0 : 1;
    }
    if (rc != AIQ_OK) {
        char what[128];
        snprintf(what, sizeof what, "listing %s", resource);
        print_err(what, &e);
        return 1;
    }
    return 0;
}

static json_object *items_of(json_object *list) {
    json_object *it = NULL;
    if (!list || !json_object_object_get_ex(list, "items", &it) ||
        !json_object_is_type(it, json_type_array))
        return NULL;
    return it;
}

static double jnum(json_object *o, const char *k, double dflt) {
    json_object *v = aiq_jget(o, k);
    if (v && (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
        return json_object_get_double(v);
    if (v && json_object_is_type(v, json_type_string)) { /* "8" from quantities */
        char *end = NULL;
        double d = strtod(json_object_get_string(v), &end);
        if (end && *end == '\0')
            return d;
    }
    return dflt;
}

static void world_free(struct world *w) {
    for (int i = 0; i < w->ngroups; i++)
        aiq_group_deinit(&w->groups[i]);
    for (int i = 0; i < w->nuqs; i++)
        aiq_userquota_deinit(&w->uqs[i]);
    free(w->groups);
    free(w->group_status);
    free(w->uqs);
    free(w->uq_status);
    free(w->jobs);
    oppolicy_free(w->policy);
    json_object_put(w->groups_list);
    json_object_put(w->uqs_list);
    json_object_put(w->jobs_list);
    json_object_put(w->policies_list);
    json_object_put(w->nodes_list);
    memset(w, 0, sizeof *w);
}

/* The active QueuePolicy: the one whose status says it is in use, else
 * the one with spec.active (when the operator has not written status). */
static json_object *find_active(json_object *policies) {
    json_object *it = items_of(policies), *spec_active = NULL;
    size_t n = it ? json_object_array_length(it) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *p = json_object_array_get_idx(it, i);
        if (aiq_jtrue(aiq_jget(p, "status"), "active"))
            return p;
        if (!spec_active && aiq_jtrue(aiq_jget(p, "spec"), "active"))
            spec_active = p;
    }
    return spec_active;
}

/* Reads groups, user quotas, nodes, policies and AIJobs (in ns, or every
 * namespace when ns is NULL). Lists other than AIJobs that the user may
 * not read are left empty with a warning (UserQuotas fall back to
 * user_ns; so do AIJobs of every namespace when jobs_fallback is set).
 * Returns 0, or 1 after printing the error. */
static int world_load(struct kube_client *kc, const char *ns, const char *user_ns,
                      bool jobs_fallback, struct world *w) {
    aiq_err e;
    json_object *nodes = NULL;
    int rc = 1;
    memset(w, 0, sizeof *w);
    if (get_list_opt(kc, "groups", NULL, &w->groups_list) ||
        get_list_opt(kc, "userquotas", user_ns, &w->uqs_list) ||
        get_list_opt(kc, "queuepolicies", NULL, &w->policies_list))
        goto out;
    if (ns || !jobs_fallback) {
        if (get_list(kc, AIQ_GROUP, AIQ_VERSION, ns, "aijobs", &w->jobs_list))
            goto out;
    } else if (get_list_opt(kc, "aijobs", user_ns, &w->jobs_list)) {
        goto out;
    }
    json_object *git = items_of(w->groups_list), *uit = items_of(w->uqs_list);
    json_object *jit = items_of(w->jobs_list);
    size_t ng = git ? json_object_array_length(git) : 0;
    size_t nu = uit ? json_object_array_length(uit) : 0;
    size_t nj = jit ? json_object_array_length(jit) : 0;
    if (ng > MAX_ITEMS || nu > MAX_ITEMS || nj > MAX_ITEMS) {
        fprintf(stderr, "error: more than %d objects of a kind; narrow with -n\n", MAX_ITEMS);
        goto out;
    }
    w->groups = calloc(ng + 1, sizeof *w->groups);
    w->group_status = calloc(ng + 1, sizeof *w->group_status);
    w->uqs = calloc(nu + 1, sizeof *w->uqs);
    w->uq_status = calloc(nu + 1, sizeof *w->uq_status);
    w->jobs = calloc(nj + 1, sizeof *w->jobs);
    if (!w->groups || !w->group_status || !w->uqs || !w->uq_status || !w->jobs) {
        fputs("error: out of memory\n", stderr);
        goto out;
    }
    for (size_t i = 0; i < ng; i++) { /* a group the operator rejected is skipped, as it does */
        json_object *g = json_object_array_get_idx(git, i);
        aiq_err_clear(&e);
        if (aiq_group_from_json(g, &w->groups[w->ngroups], &e) == AIQ_OK)
            w->group_status[w->ngroups++] = aiq_jget(g, "status");
    }
    for (size_t i = 0; i < nu; i++) {
        json_object *u = json_object_array_get_idx(uit, i);
        aiq_err_clear(&e);
        if (aiq_userquota_from_json(u, &w->uqs[w->nuqs], &e) == AIQ_OK)
            w->uq_status[w->nuqs++] = aiq_jget(u, "status");
    }
    /* GPUs on the nodes, and those held by admitted or running jobs. */
    aiq_err_clear(&e);
    if (kube_get(kc, "/api/v1/nodes", &nodes, &e) == AIQ_OK) {
        json_object *nit = items_of(nodes);
        size_t nn = nit ? json_object_array_length(nit) : 0;
        /* Physical GPUs of usable nodes, as the operator counts them
         * (time-slicing replicas divided out, left-out nodes none). */
        for (size_t i = 0; i < nn; i++) {
            struct node_facts f;
            if (node_facts_read(json_object_array_get_idx(nit, i), &f) == 0)
                w->cw.total_gpus += f.q.ngpus;
        }
    } else {
        snprintf(w->nodes_err, sizeof w->nodes_err, "%s", e.message);
    }
    w->cw.groups = w->groups;
    w->cw.group_status = w->group_status;
    w->cw.ngroups = w->ngroups;
    w->cw.uqs = w->uqs;
    w->cw.uq_status = w->uq_status;
    w->cw.nuqs = w->nuqs;
    w->cw.now = (double)time(NULL);
    double held = 0;
    for (size_t i = 0; i < nj; i++) {
        json_object *st = aiq_jget(json_object_array_get_idx(jit, i), "status");
        const char *ph = aiq_jstr(st, "phase");
        /* totalGPUs: the name an operator before the rename wrote. */
        if (ph && (strcmp(ph, "Admitted") == 0 || strcmp(ph, "Running") == 0))
            held += jnum(st, "totalGpus", jnum(st, "totalGPUs", 0));
    }
    w->cw.free_gpus = fmax(0, w->cw.total_gpus - held);
    for (size_t i = 0; i < nj; i++) {
        aiq_err_clear(&e);
        json_object *j = json_object_array_get_idx(jit, i);
        if (cli_job_load(j, &w->cw, &w->jobs[w->njobs], &e) == AIQ_OK)
            w->njobs++;
    }
    /* The active policy, compiled as the operator compiles it. */
    w->active_policy = find_active(w->policies_list);
    if (w->active_policy) {
        struct aiq_policy p;
        aiq_err_clear(&e);
        if (aiq_policy_from_json(w->active_policy, &p, &e) == AIQ_OK) {
            w->policy = oppolicy_compile(&p, &e);
            aiq_policy_deinit(&p);
        }
    }
    if (!w->policy) {
        w->active_policy = NULL;
        w->policy = oppolicy_default();
    }
    if (!w->policy) {
        fputs("error: out of memory\n", stderr);
        goto out;
    }
    rc = 0;
out:
    w->nodes_list = nodes; /* kept for explain's headroom; world_free drops it */
    if (rc)
        world_free(w);
    return rc;
}

/* Index of a level name in the active policy (unknown names after). */
static int level_rank(const struct world *w, const char *name) {
    int n = oppolicy_nlevels(w->policy);
    for (int i = 0; i < n; i++)
        if (name && strcmp(oppolicy_level_name(w->policy, i), name) == 0)
            return i;
    return n;
}

static const char *policy_name(const struct world *w) {
    const char *n = w->active_policy ? aiq_jstr(aiq_jget(w->active_policy, "metadata"), "name") : NULL;
    return n ? n : "default (built-in: job.priority, one level)";
}

/* ---- output helpers -------------------------------------------------------- */

static void emit(json_object *doc, enum out_fmt f) {
    if (f == OUT_JSON)
        printf("%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
                                                                JSON_C_TO_STRING_SPACED |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE));
    else
        cli_print_yaml(doc, stdout, 0);
}

static void add_str(json_object *o, const char *k, const char *v) {
    json_object_object_add(o, k, v ? json_object_new_string(v) : NULL);
}

/* A number printed with 6 significant digits (json-c would print the
 * binary expansion, 0.0011999999999999999). */
static json_object *num6(double v) {
    char b[40];
    snprintf(b, sizeof b, "%.6g", v);
    return json_object_new_double_s(v, b);
}

static void add_num(json_object *o, const char *k, double v) {
    json_object_object_add(o, k, num6(v));
}

/* src on one line: runs of whitespace become one space (for summaries of
 * multi-line formulas). */
static const char *one_line(char *buf, size_t cap, const char *src) {
    size_t n = 0;
    bool sp = false;
    for (; src && *src && n + 1 < cap; src++) {
        if (*src == ' ' || *src == '\n' || *src == '\t' || *src == '\r') {
            sp = n > 0;
            continue;
        }
        if (sp && n + 2 < cap)
            buf[n++] = ' ';
        sp = false;
        buf[n++] = *src;
    }
    buf[n] = '\0';
    return buf;
}

static void add_int(json_object *o, const char *k, long long v) {
    json_object_object_add(o, k, json_object_new_int64(v));
}

/* "in 5m", "now" or "<none>" for an estimated start time. */
static const char *eta_text(char *buf, size_t cap, double eta, double now) {
    char d[32];
    if (eta <= 0)
        snprintf(buf, cap, "<none>");
    else if (eta <= now)
        snprintf(buf, cap, "now");
    else
        snprintf(buf, cap, "in %s", cli_human_duration(d, sizeof d, eta - now));
    return buf;
}

static const char *num_text(char *buf, size_t cap, double v) {
    snprintf(buf, cap, "%.6g", fabs(v) < 5e-7 ? 0 : v);
    return buf;
}

static void time_text(char *buf, size_t cap, double t) {
    if (t <= 0)
        snprintf(buf, cap, "<none>");
    else
        opst_time(buf, cap, t);
}

/* ---- queue ------------------------------------------------------------------ */

static bool held(const struct cli_job *j) {
    return strcmp(j->phase, "Suspended") == 0;
}

static const struct world *g_sort_world; /* qsort has no context argument */

static int queue_cmp(const void *va, const void *vb) {
    const struct cli_job *a = va, *b = vb;
    int ha = held(a), hb = held(b);
    if (ha != hb)
        return ha - hb;
    int la = level_rank(g_sort_world, a->level), lb = level_rank(g_sort_world, b->level);
    if (la != lb)
        return la < lb ? -1 : 1;
    int pa = a->position > 0 ? a->position : 0x7fffffff, pb = b->position > 0 ? b->position : 0x7fffffff;
    if (pa != pb)
        return pa < pb ? -1 : 1;
    int k = strcmp(a->ns, b->ns);
    return k ? k : strcmp(a->name, b->name);
}

/* A client for the operator's HTTP endpoint (--operator-url). On
 * loopback (a port-forward) it sends no credentials; to another host it
 * sends the kubeconfig's own (token, token file, exec plugin, OIDC): the
 * operator asks the API server who that is and whether RBAC lets them
 * read what they ask for (operator --api-remote, docs/operator.md). */
static aiq_rc operator_client(const struct opts *o, const struct kube_client_opts *ko,
                              struct kube_client **kc, aiq_err *e) {
    struct kube_config cfg;
    const char *u = o->operator_url, *host = strstr(u, "://");
    host = host ? host + 3 : u;
    bool loop = strncmp(host, "127.", 4) == 0 || strncmp(host, "localhost", 9) == 0 ||
                strncmp(host, "[::1]", 5) == 0;
    memset(&cfg, 0, sizeof cfg);
    if (!loop && o->kcfg) {
        cfg.token = o->kcfg->token;
        cfg.token_file = o->kcfg->token_file;
        cfg.exec = o->kcfg->exec;
        cfg.oidc = o->kcfg->oidc;
    }
    cfg.server = (char *)u;
    return kube_client_create(&cfg, ko, kc, e);
}

#define AGGR_API "/apis/query.aiq.dev/v1alpha1"
#define AGGR_APISERVICE "v1alpha1.query.aiq.dev"

/* Where the operator is asked, for messages. */
static const char *operator_where(const struct opts *o) {
    return o->operator_url ? o->operator_url : "the API server (APIService " AGGR_APISERVICE ")";
}

/* After a failed request through the API server: says in e why, when the
 * APIService is missing or not Available (kc: the API server's client). */
static void aggr_diagnose(struct kube_client *kc, aiq_err *e) {
    json_object *as = NULL;
    aiq_err ae;
    aiq_err_clear(&ae);
    if (e->http_status != 404 && e->http_status != 503)
        return; /* a refusal or the operator's own answer: its message says it */
    if (kube_get(kc, "/apis/apiregistration.k8s.io/v1/apiservices/" AGGR_APISERVICE, &as, &ae) !=
        AIQ_OK) {
        if (ae.http_status == 404)
            snprintf(e->message, sizeof e->message,
                     "the APIService " AGGR_APISERVICE " is not installed: apply "
                     "crds/aggregated-api.yaml and run the operator with --aggregated-addr "
                     "(docs/admin-guide.md \"The aggregated API\"), or pass --operator-url");
        else if (e->http_status == 404) /* cannot read APIServices: say what it may be */
            snprintf(e->message, sizeof e->message,
                     "%.300s (is the APIService " AGGR_APISERVICE " installed? "
                     "docs/admin-guide.md \"The aggregated API\")", ae.message);
        return;
    }
    json_object *conds = aiq_jget(aiq_jget(as, "status"), "conditions");
    for (size_t i = 0; conds && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (aiq_jstr(c, "type") && strcmp(aiq_jstr(c, "type"), "Available") == 0 && aiq_jstr(c, "status") &&
            strcmp(aiq_jstr(c, "status"), "True") != 0) {
            char was[200];
            snprintf(was, sizeof was, "%.199s", e->message);
            snprintf(e->message, sizeof e->message,
                     "the APIService " AGGR_APISERVICE " is not available (%.80s: %.300s); "
                     "check the operator's --aggregated-addr, its Service and caBundle "
                     "(kubectl get apiservice " AGGR_APISERVICE " -o yaml); the API server "
                     "said: %.200s",
                     aiq_jstr(c, "reason") ? aiq_jstr(c, "reason") : "?",
                     aiq_jstr(c, "message") ? aiq_jstr(c, "message") : "", was);
        }
    }
    json_object_put(as);
}

/* GETs from the operator: api_path (under AGGR_API) through the API
 * server with the kubeconfig's credentials, or http_path from
 * --operator-url when it is set. *out is the answer, also for an error
 * status that carries a JSON body. */
static aiq_rc operator_get(const struct opts *o, const char *api_path, const char *http_path,
                           json_object **out, aiq_err *e) {
    struct kube_client *kc = NULL;
    struct kube_client_opts ko = {.timeout_ms = 8000, .connect_timeout_ms = 1000,
                                  .max_body = 64u << 20, .user_agent = "kubectl-aiq/0.1"};
    char path[2048];
    aiq_rc rc;
    if (!o->operator_url) {
        snprintf(path, sizeof path, AGGR_API "%s", api_path);
        if ((rc = kube_get(o->kc, path, out, e)) != AIQ_OK)
            aggr_diagnose(o->kc, e);
        return rc;
    }
    rc = operator_client(o, &ko, &kc, e);
    if (rc == AIQ_OK)
        rc = kube_get(kc, http_path, out, e);
    kube_client_free(kc);
    return rc;
}

/* The live queue from the operator (GET /queue, see docs/operator.md
 * "Status writes"): the waiting jobs of ns (NULL: all), or the one job
 * name. NULL with e set when the operator cannot answer. */
static json_object *live_queue(const struct opts *o, const char *ns, const char *name, aiq_err *e) {
    char path[3 * 2 * (AIQ_MAX_NAME + 1) + 64], nesc[3 * (AIQ_MAX_NAME + 1)] = "",
        jesc[3 * (AIQ_MAX_NAME + 1)] = "", api[2 * (AIQ_MAX_NAME + 1) + 64];
    json_object *doc = NULL;
    if ((ns && kube_query_escape(nesc, sizeof nesc, ns, e) != AIQ_OK) ||
        (name && kube_query_escape(jesc, sizeof jesc, name, e) != AIQ_OK))
        return NULL;
    snprintf(path, sizeof path, "/queue?namespace=%s%s%s", nesc, name ? "&name=" : "", jesc);
    /* ns and name are Kubernetes names (from the API server): path-safe */
    if (ns && *ns)
        snprintf(api, sizeof api, "/namespaces/%s/queues%s%s", ns, name ? "/" : "",
                 name ? name : "");
    else
        snprintf(api, sizeof api, "/queues");
    if (operator_get(o, api, path, &doc, e) != AIQ_OK || !items_of(doc)) {
        json_object_put(doc);
        if (!e->message[0])
            snprintf(e->message, sizeof e->message, "no items in the answer");
        return NULL;
    }
    return doc;
}

/* Takes a live item's position, level, score, estimate, reason and
 * message into j. */
static void live_apply(struct cli_job *j, json_object *it) {
    json_object *sc = aiq_jget(it, "score");
    j->position = (int)jnum(it, "position", j->position);
    if (aiq_jstr(it, "level"))
        snprintf(j->level, sizeof j->level, "%s", aiq_jstr(it, "level"));
    if (sc && !json_object_is_type(sc, json_type_null)) {
        j->has_score = true;
        j->score = json_object_get_double(sc);
    }
    j->eta = aiq_jstr(it, "estimatedStartTime") ? opst_parse_time(aiq_jstr(it, "estimatedStartTime")) : 0;
    if (aiq_jstr(it, "reason"))
        snprintf(j->reason, sizeof j->reason, "%s", aiq_jstr(it, "reason"));
    if (aiq_jstr(it, "message"))
        snprintf(j->message, sizeof j->message, "%s", aiq_jstr(it, "message"));
}

/* Overlays the live queue on jobs[0..n); returns how many it matched, or
 * -1 (and a note printed unless quiet) when the operator cannot answer. */
static int live_overlay(const struct opts *o, struct cli_job *v, int n, bool quiet,
                        json_object **live_doc) {
    aiq_err e;
    aiq_err_clear(&e);
    json_object *doc = live_queue(o, o->all_ns ? NULL : o->ns, NULL, &e);
    *live_doc = doc;
    if (!doc) {
        if (!quiet)
            printf("%sLive view not available%s: the operator at %s %s%s\n"
                   "  showing the statuses as last written: positions within 10%% beyond the\n"
                   "  first 10, scores as of the last write\n",
                   C_YELLOW, C_OFF, operator_where(o),
                   e.http_status ? "answered: " : "is not reachable: ", e.message);
        return -1;
    }
    json_object *items = items_of(doc);
    int matched = 0;
    for (size_t k = 0; k < json_object_array_length(items); k++) {
        json_object *it = json_object_array_get_idx(items, k);
        const char *ns = aiq_jstr(it, "namespace"), *name = aiq_jstr(it, "name");
        for (int i = 0; ns && name && i < n; i++)
            if (strcmp(v[i].ns, ns) == 0 && strcmp(v[i].name, name) == 0) {
                live_apply(&v[i], it);
                matched++;
                break;
            }
    }
    return matched;
}

static int cmd_queue(const struct opts *o, struct world *w) {
    int n = 0, rc = 0;
    struct cli_job *v = calloc((size_t)w->njobs + 1, sizeof *v);
    if (!v)
        return fail("out of memory");
    for (int i = 0; i < w->njobs; i++) {
        const struct cli_job *j = &w->jobs[i];
        if (!cli_job_waiting(j) && !held(j))
            continue;
        if (o->level && strcmp(o->level, j->level) != 0)
            continue;
        if (o->user && strcmp(o->user, j->user) != 0)
            continue;
        v[n++] = *j;
    }
    json_object *live = NULL;
    /* Nothing waits: nothing to ask the operator about. */
    int nlive = n > 0 ? live_overlay(o, v, n, o->out != OUT_TABLE, &live) : -1;
    g_sort_world = w;
    if (n > 1)
        qsort(v, (size_t)n, sizeof *v, queue_cmp);
    if (o->out != OUT_TABLE) {
        json_object *doc = json_object_new_object(), *items = json_object_new_array();
        add_str(doc, "apiVersion", AIQ_API_VERSION);
        add_str(doc, "kind", "QueueView");
        add_str(doc, "policy", policy_name(w));
        add_str(doc, "source", nlive >= 0 ? "live" : "status");
        if (live)
            json_object_object_add(doc, "liveTime", json_object_get(aiq_jget(live, "time")));
        for (int i = 0; i < n; i++) {
            const struct cli_job *j = &v[i];
            json_object *it = json_object_new_object();
            char t[40];
            add_str(it, "namespace", j->ns);
            add_str(it, "name", j->name);
            add_str(it, "user", j->user);
            add_str(it, "group", j->group[0] ? j->group : NULL);
            add_str(it, "phase", j->phase[0] ? j->phase : "Pending");
            add_str(it, "level", j->level[0] ? j->level : NULL);
            add_int(it, "position", j->position);
            add_int(it, "gpus", j->gpus);
            json_object_object_add(it, "score", j->has_score ? num6(j->score) : NULL);
            add_num(it, "waitSeconds", j->queued > 0 ? fmax(0, w->cw.now - j->queued) : 0);
            time_text(t, sizeof t, j->eta);
            add_str(it, "estimatedStartTime", j->eta > 0 ? t : NULL);
            add_str(it, "reason", j->reason[0] ? j->reason : NULL);
            add_str(it, "message", j->message[0] ? j->message : NULL);
            json_object_array_add(items, it);
        }
        json_object_object_add(doc, "items", items);
        emit(doc, o->out);
        json_object_put(doc);
        goto out;
    }
    if (n == 0) {
        if (o->all_ns)
            fputs("No jobs waiting.\n", stderr);
        else
            fprintf(stderr, "No jobs waiting in %s namespace.\n", o->ns);
        goto out;
    }
    const char *hdr_all[] = {"LEVEL", "POS", "NAMESPACE", "NAME", "USER", "GROUP", "GPUS",
                             "SCORE", "WAIT", "ETA", "REASON"};
    const char *hdr_ns[] = {"LEVEL", "POS", "NAME", "USER", "GROUP", "GPUS",
                            "SCORE", "WAIT", "ETA", "REASON"};
    int nc = o->all_ns ? 11 : 10;
    cli_table *t = cli_table_create(nc, o->all_ns ? hdr_all : hdr_ns);
    if (!t) {
        rc = fail("out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        const struct cli_job *j = &v[i];
        char lvl[96], pos[16], gpus[24], score[32], wait[32], eta[48], reason[640];
        const char *col = held(j) ? C_DIM : (j->reason[0] && strcmp(j->reason, "Queued") != 0 &&
                                                     strcmp(j->reason, "WaitingForGPUs") != 0 &&
                                                     strcmp(j->reason, "BehindHigherPriority") != 0
                                                 ? C_YELLOW : "");
        snprintf(lvl, sizeof lvl, "%s%s%s", C_CYAN, held(j) ? "(held)" : j->level[0] ? j->level : "<none>",
                 C_OFF);
        if (j->position > 0)
            snprintf(pos, sizeof pos, "%d", j->position);
        else
            snprintf(pos, sizeof pos, "-");
        snprintf(gpus, sizeof gpus, "%ld", j->gpus);
        if (j->has_score)
            num_text(score, sizeof score, j->score);
        else
            snprintf(score, sizeof score, "<none>");
        if (j->queued > 0)
            cli_human_duration(wait, sizeof wait, w->cw.now - j->queued);
        else
            snprintf(wait, sizeof wait, "<none>");
        eta_text(eta, sizeof eta, held(j) ? 0 : j->eta, w->cw.now);
        snprintf(reason, sizeof reason, "%s%s%s", col,
                 j->message[0] ? j->message : j->reason[0] ? j->reason : held(j) ? "held (spec.suspend)" : "",
                 col[0] ? C_OFF : "");
        const char *row_all[] = {lvl, pos, j->ns, j->name, j->user, j->group[0] ? j->group : "<none>",
                                 gpus, score, wait, eta, reason};
        const char *row_ns[] = {lvl, pos, j->name, j->user, j->group[0] ? j->group : "<none>",
                                gpus, score, wait, eta, reason};
        if (cli_table_add(t, o->all_ns ? row_all : row_ns) != AIQ_OK) {
            rc = fail("out of memory");
            break;
        }
    }
    if (rc == 0) {
        printf("%sPolicy:%s %s", C_BOLD, C_OFF, policy_name(w));
        if (live)
            printf("   %slive%s from the operator's cycle %.0f at %s", C_GREEN, C_OFF,
                   jnum(live, "cycle", 0), aiq_jstr(live, "time") ? aiq_jstr(live, "time") : "?");
        printf("\n");
        cli_table_print(t, stdout);
    }
    cli_table_free(t);
out:
    json_object_put(live);
    free(v);
    return rc;
}

/* ---- explain ---------------------------------------------------------------- */

static const char *quota_text(char *buf, size_t cap, double used, long long limit) {
    if (limit < 0)
        snprintf(buf, cap, "%g in use, unlimited", used);
    else
        snprintf(buf, cap, "%g of %lld in use, %g left", used, limit, fmax(0, (double)limit - used));
    return buf;
}

static const char *budget_text(char *buf, size_t cap, double used, const struct aiq_budget *b) {
    char win[32];
    if (b->gpu_hours < 0)
        snprintf(buf, cap, "no budget");
    else
        snprintf(buf, cap, "%.4g of %.6g GPU-hours used per %s, %.4g left", used, b->gpu_hours,
                 cli_human_duration(win, sizeof win, b->window_s > 0 ? b->window_s : 2592000),
                 fmax(0, b->gpu_hours - used));
    return buf;
}

/* The names of factors src mentions (a word-boundary search), one bit
 * per factor. */
_Static_assert(FX_NFACTORS <= 64, "factor masks are 64 bits");
static uint64_t factors_used(const char *src) {
    uint64_t m = 0;
    for (int i = 0; src && i < FX_NFACTORS; i++) {
        const char *name = fx_factor_name(i), *p = src;
        size_t ln = strlen(name);
        while ((p = strstr(p, name)) != NULL) {
            char before = p > src ? p[-1] : ' ', after = p[ln];
            bool wb = !(before == '.' || before == '_' || (before >= 'a' && before <= 'z'));
            bool wa = !(after == '.' || after == '_' || (after >= 'a' && after <= 'z'));
            if (wb && wa) {
                m |= 1ull << i;
                break;
            }
            p += ln;
        }
    }
    return m;
}

/* Asks the operator for the journal of a job: GET URL/journal?job=NS/NAME.
 * Prints what it got or why it could not. */
static void print_journal(const struct opts *o, const struct cli_job *j, json_object *out_doc) {
    char key[2 * AIQ_MAX_NAME + 2], esc[3 * sizeof key], uesc[3 * sizeof j->uid];
    char path[sizeof esc + sizeof uesc + 64], api[sizeof key + sizeof uesc + 64];
    json_object *resp = NULL;
    aiq_err e;
    aiq_err_clear(&e);
    snprintf(key, sizeof key, "%s/%s", j->ns, j->name);
    aiq_rc rc = kube_query_escape(esc, sizeof esc, key, &e);
    if (rc == AIQ_OK)
        rc = kube_query_escape(uesc, sizeof uesc, j->uid, &e);
    if (rc == AIQ_OK) {
        snprintf(path, sizeof path, "/journal?job=%s&uid=%s&limit=10", esc, uesc);
        snprintf(api, sizeof api, "/namespaces/%s/journals/%s?uid=%s&limit=10", j->ns, j->name,
                 uesc);
        rc = operator_get(o, api, path, &resp, &e);
    }
    json_object *items = rc == AIQ_OK ? items_of(resp) : NULL;
    if (out_doc) {
        if (items)
            json_object_object_add(out_doc, "journal", json_object_get(items));
        else
            add_str(out_doc, "journalError", e.message[0] ? e.message : "no items in the answer");
    } else if (!items) {
        printf("%sJournal:%s   %snot available%s: the operator at %s %s%s\n", C_BOLD, C_OFF, C_YELLOW,
               C_OFF, operator_where(o),
               !e.http_status ? "is not reachable: "
               : o->operator_url ? "does not serve /journal: " : "answered: ",
               e.message[0] ? e.message : "no items in the answer");
        printf("           (kubectl describe shows the Events)\n");
    } else {
        size_t n = json_object_array_length(items);
        printf("%sJournal:%s   %zu recent entr%s\n", C_BOLD, C_OFF, n, n == 1 ? "y" : "ies");
        for (size_t i = 0; i < n; i++) {
            json_object *it = json_object_array_get_idx(items, i);
            char t[40];
            time_text(t, sizeof t, jnum(it, "t", 0));
            const char *ty = aiq_jstr(it, "type");
            if (ty && strcmp(ty, "decision") == 0)
                printf("  %s  cycle %-6.0f %-6s pos %-4.0f %s%s%s\n", t, jnum(it, "cycle", 0),
                       aiq_jstr(it, "action") ? aiq_jstr(it, "action") : "?", jnum(it, "position", 0),
                       aiq_jstr(it, "reason") ? aiq_jstr(it, "reason") : "", aiq_jstr(it, "message") ? ": " : "",
                       aiq_jstr(it, "message") ? aiq_jstr(it, "message") : "");
            else
                printf("  %s  event %s\n", t, aiq_jstr(it, "kind") ? aiq_jstr(it, "kind") : "?");
        }
    }
    json_object_put(resp);
}

/* Preemption and resizing from the job's status: status.preemptions,
 * status.currentReplicas and the Preempted / Preempting / Resized
 * conditions (reason and message, each naming the other job). Into doc
 * when given, else printed. */
static void explain_preemption(json_object *raw, json_object *doc) {
    static const char *const types[] = {"Preempted", "Preempting", "Resized"};
    json_object *st = aiq_jget(raw, "status"), *conds = aiq_jget(st, "conditions");
    double npre = jnum(st, "preemptions", 0), cur = jnum(st, "currentReplicas", 0);
    json_object *arr = doc ? json_object_new_array() : NULL;
    int shown = 0;
    if (doc) {
        add_int(doc, "preemptions", (long)npre);
        if (cur > 0)
            add_int(doc, "currentReplicas", (long)cur);
    } else {
        printf("%sPreemption:%s %s", C_BOLD, C_OFF, npre > 0 ? "" : "never preempted");
        if (npre > 0)
            printf("preempted %.0f time%s (not counted against backoffLimit)", npre,
                   npre == 1 ? "" : "s");
        if (cur > 0)
            printf("; %.0f replica%s now", cur, cur == 1 ? "" : "s");
        printf("\n");
    }
    for (size_t i = 0; conds && json_object_is_type(conds, json_type_array) &&
                       i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *ty = aiq_jstr(c, "type");
        bool ours = false;
        for (int k = 0; k < 3 && ty; k++)
            ours |= strcmp(ty, types[k]) == 0;
        if (!ours || !aiq_jstr(c, "status") || strcmp(aiq_jstr(c, "status"), "True") != 0)
            continue;
        if (doc) {
            json_object *x = json_object_new_object();
            add_str(x, "type", ty);
            add_str(x, "reason", aiq_jstr(c, "reason"));
            add_str(x, "message", aiq_jstr(c, "message"));
            json_object_array_add(arr, x);
        } else {
            printf("           %s (%s): %s\n", ty, aiq_jstr(c, "reason") ? aiq_jstr(c, "reason") : "?",
                   aiq_jstr(c, "message") ? aiq_jstr(c, "message") : "");
        }
        shown++;
    }
    if (doc)
        json_object_object_add(doc, "preemption", arr);
    else if (npre > 0 && shown == 0)
        printf("           (no Preempted condition: the status was rewritten since)\n");
}

/* The usable nodes of w as the queue sees them (node_facts, strings
 * borrowed from w->nodes_list), with what admitted and running AIJobs
 * hold per their status.placement taken off. Pods that are not aiq's are
 * not counted (the operator counts them; explain says so). Returns the
 * number of nodes in *out (caller frees), -1 on ENOMEM. */
static int hr_nodes(const struct world *w, struct q_node **out) {
    json_object *nit = items_of(w->nodes_list), *jit = items_of(w->jobs_list);
    size_t nn = nit ? json_object_array_length(nit) : 0;
    struct q_node *q = calloc(nn + 1, sizeof *q);
    int n = 0;
    if (!q)
        return -1;
    for (size_t i = 0; i < nn; i++) {
        struct node_facts f;
        if (node_facts_read(json_object_array_get_idx(nit, i), &f) == 0 && !f.excluded)
            q[n++] = f.q;
    }
    for (size_t i = 0; jit && i < json_object_array_length(jit); i++) {
        json_object *job = json_object_array_get_idx(jit, i), *st = aiq_jget(job, "status");
        const char *ph = aiq_jstr(st, "phase");
        json_object *pl = aiq_jget(st, "placement");
        struct aiq_aijob aj;
        aiq_err e;
        aiq_err_clear(&e);
        if (!ph || (strcmp(ph, "Admitted") != 0 && strcmp(ph, "Running") != 0) || !pl ||
            !json_object_is_type(pl, json_type_array) || aiq_aijob_from_json(job, &aj, &e) != AIQ_OK)
            continue; /* holds nothing, or a job the operator would not run either */
        const struct aiq_resources *r = &aj.spec.resources;
        for (size_t k = 0; k < json_object_array_length(pl); k++) {
            json_object *p = json_object_array_get_idx(pl, k), *gi = aiq_jget(p, "gpuIndexes");
            const char *node = aiq_jstr(p, "node");
            for (int x = 0; node && x < n; x++) {
                if (strcmp(q[x].name, node) != 0)
                    continue;
                q[x].cpu_used += r->cpu_milli;
                q[x].mem_used += r->memory_bytes;
                for (size_t g = 0; gi && json_object_is_type(gi, json_type_array) &&
                                   g < json_object_array_length(gi); g++) {
                    int idx = json_object_get_int(json_object_array_get_idx(gi, g));
                    if (idx < 0 || idx >= q[x].ngpus)
                        continue;
                    int64_t *u = &q[x].gpu_mem_used[idx], t = q[x].gpu_mem_total[idx];
                    *u = r->gpus > 0 ? t : *u + aiq_jmib(p, "gpuMemory", "gpuMemoryMiB");
                    *u = *u > t ? t : *u;
                }
            }
        }
        aiq_aijob_deinit(&aj);
    }
    *out = q;
    return n;
}

/* The group's or user's quota, use and budget from its object. */
static void hr_owner(struct cli_hr_owner *ow, const char *label, const struct aiq_quota *q,
                     const struct aiq_budget *b, json_object *status) {
    json_object *u = aiq_jget(status, "usage");
    ow->label = label;
    ow->quota = *q;
    ow->used = (struct aiq_quota){(int64_t)jnum(u, "gpus", 0), aiq_jmib(u, "gpuMemory", "gpuMemoryMiB"),
                                  (int64_t)jnum(u, "cpu", 0), (int64_t)jnum(u, "memory", 0),
                                  (int64_t)jnum(u, "jobs", 0)};
    ow->budget_gpu_hours = b->gpu_hours;
    ow->used_gpu_hours = jnum(u, "gpuHours", 0);
}

/* What a waiting job waits for when no resource row blocks it. */
static const char *hr_other(const char *reason) {
    static const struct { const char *reason, *text; } t[] = {
        {"BehindHigherPriority", "its turn: a job ahead of it (higher level or score) cannot start yet"},
        {"GroupConflict", "a Group hold: two Groups claim its namespace"},
        {"NoGroup", "a Group hold: no Group takes its namespace"},
        {"Suspended", "spec.suspend to be false"},
        {"Preempting", "the jobs being stopped to make room for it"},
        {"WaitingToBorrow", "quota its cohort can lend"},
    };
    for (size_t i = 0; reason && i < sizeof t / sizeof t[0]; i++)
        if (strcmp(reason, t[i].reason) == 0)
            return t[i].text;
    return NULL;
}

/* Headroom of job j (raw: its object): each resource it needs against
 * what is free or left, into doc ("headroom", "blockedBy") when given,
 * else printed with the Blocked line. */
static void explain_headroom(const struct world *w, const struct cli_job *j, json_object *raw,
                             int g, int uq, json_object *doc) {
    struct aiq_aijob aj;
    struct q_node *nodes = NULL;
    struct cli_hr_row rows[CLI_HR_MAX_ROWS];
    struct cli_hr_owner own[2];
    char gl[AIQ_MAX_NAME + 8], ul[AIQ_MAX_NAME + 8], blk[512] = "";
    int nown = 0, nrows = 0, nn = 0;
    aiq_err e;
    aiq_err_clear(&e);
    bool waiting = cli_job_waiting(j);
    bool decoded = waiting && aiq_aijob_from_json(raw, &aj, &e) == AIQ_OK;
    if (decoded) {
        bool known = w->nodes_list != NULL; /* else no capacity rows: unknown, not 0 */
        nn = known ? hr_nodes(w, &nodes) : 0;
        struct cli_hr_ask a = {aj.spec.replicas, aj.spec.resources.gpus, aj.spec.resources.gpu_memory_mib,
                               aj.spec.resources.cpu_milli, aj.spec.resources.memory_bytes,
                               jnum(aiq_jget(raw, "status"), "predictedRuntime", 0) > 0
                                   ? jnum(aiq_jget(raw, "status"), "predictedRuntime", 0)
                                   : aj.spec.estimated_runtime_s,
                               aj.spec.resources.gpu_model, aj.spec.domain};
        snprintf(gl, sizeof gl, "group %s", j->group);
        snprintf(ul, sizeof ul, "user %s", j->user);
        if (g >= 0)
            hr_owner(&own[nown++], gl, &w->groups[g].spec.quota, &w->groups[g].spec.budget,
                     w->group_status[g]);
        if (uq >= 0)
            hr_owner(&own[nown++], ul, &w->uqs[uq].spec.quota, &w->uqs[uq].spec.budget,
                     w->uq_status[uq]);
        nrows = nn < 0 ? 0
                       : cli_headroom(nodes, known ? nn : -1, &a, own, nown, rows,
                                      CLI_HR_MAX_ROWS);
        aiq_aijob_deinit(&aj);
    }
    free(nodes);
    size_t bl = 0;
    for (int i = 0; i < nrows; i++) {
        int n = rows[i].blocks ? snprintf(blk + bl, sizeof blk - bl, "%s%s", bl ? ", " : "",
                                          rows[i].resource) : 0;
        bl = n > 0 && (size_t)n < sizeof blk - bl ? bl + (size_t)n : bl;
    }
    if (doc) {
        json_object *arr = json_object_new_array();
        for (int i = 0; i < nrows; i++) {
            json_object *x = json_object_new_object();
            add_str(x, "resource", rows[i].resource);
            add_str(x, "need", rows[i].need);
            add_str(x, "available", rows[i].avail);
            json_object_object_add(x, "blocks", json_object_new_boolean(rows[i].blocks));
            json_object_array_add(arr, x);
        }
        json_object_object_add(doc, "headroom", arr);
        add_str(doc, "blockedBy", bl ? blk : NULL);
        if (waiting && !decoded)
            add_str(doc, "headroomError", e.message);
        return;
    }
    if (!waiting) {
        printf("%sBlocked:%s   nothing: not waiting (%s%s%s)\n", C_BOLD, C_OFF,
               j->reason[0] ? j->reason : j->phase, j->message[0] ? ": " : "", j->message);
        return;
    }
    printf("%sHeadroom:%s  what it needs against what is free or left%s\n", C_BOLD, C_OFF,
           !w->nodes_list ? "" : " (free: nodes minus aiq's placements; other pods not counted)");
    if (!w->nodes_list)
        printf("           %s(nodes not readable: %s)%s\n", C_DIM, w->nodes_err, C_OFF);
    if (!decoded)
        printf("           %s(the job's spec does not decode: %s)%s\n", C_DIM, e.message, C_OFF);
    int wr = 4;
    for (int i = 0; i < nrows; i++)
        wr = (int)strlen(rows[i].resource) > wr ? (int)strlen(rows[i].resource) : wr;
    for (int i = 0; i < nrows; i++)
        printf("  %-*s  need %s; %s%s%s%s\n", wr, rows[i].resource, rows[i].need, rows[i].avail,
               rows[i].blocks ? C_YELLOW : "", rows[i].blocks ? "  <- blocks" : "", C_OFF);
    const char *other = hr_other(j->reason);
    if (bl)
        printf("%sBlocked:%s   %sby %s%s", C_BOLD, C_OFF, C_YELLOW, blk, C_OFF);
    else
        printf("%sBlocked:%s   %snone of these; it waits for %s%s", C_BOLD, C_OFF, C_YELLOW,
               other ? other : j->reason[0] ? j->reason : "the next cycle", C_OFF);
    printf(" (%s%s%s)\n", j->reason[0] ? j->reason : "-", j->message[0] ? ": " : "", j->message);
}

/* What explain shows of one job, gathered once for both outputs. */
struct explain {
    struct cli_job *j;
    int g, uq;                  /* the job's group and UserQuota, -1 = none */
    json_object *raw;           /* the AIJob object (borrowed from the world) */
    json_object *terms;         /* score terms: live, else status (borrowed) */
    json_object *live;          /* the operator's live answer (owned), or NULL */
    json_object *live_it;       /* its item for the job (borrowed) */
    aiq_err le;                 /* why there is no live view */
    struct opst_term local[OPST_MAX_TERMS]; /* terms computed here when none came */
    int nlocal;
    const char *formula;
    json_object *levels;        /* the active policy's levels (borrowed) */
    int nlv, local_level;       /* level count; the first whose `when` holds here */
    bool lv_hold[AIQ_MAX_LEVELS];
    double g_used, g_h, u_used, u_h; /* GPUs in use and GPU-hours: group, user */
    uint64_t used_f, approx;    /* factors the policy uses; those approximated */
};

/* Finds the job's group, UserQuota and AIJob object. */
static void explain_find(struct world *w, struct explain *x) {
    struct cli_job *j = x->j;
    x->g = -1;
    for (int i = 0; i < w->ngroups; i++)
        if (j->group[0] && strcmp(w->groups[i].meta.name, j->group) == 0)
            x->g = i;
    x->uq = -1;
    for (int i = 0; i < w->nuqs; i++)
        if (x->g >= 0 && w->uqs[i].spec.user && strcmp(w->uqs[i].spec.user, j->user) == 0 &&
            cli_group_of_ns(&w->cw, w->uqs[i].meta.namespace_) == x->g)
            x->uq = i;
    json_object *jit = items_of(w->jobs_list);
    x->raw = NULL;
    for (size_t i = 0; jit && i < json_object_array_length(jit); i++) {
        json_object *m = aiq_jget(json_object_array_get_idx(jit, i), "metadata");
        if (aiq_jstr(m, "name") && strcmp(aiq_jstr(m, "name"), j->name) == 0 && aiq_jstr(m, "namespace") &&
            strcmp(aiq_jstr(m, "namespace"), j->ns) == 0)
            x->raw = json_object_array_get_idx(jit, i);
    }
}

/* The score terms: a waiting job's live position, score and terms from
 * the operator (the status keeps them as of its last write), else the
 * status's, else computed here. */
static void explain_terms(const struct opts *o, struct world *w, struct explain *x) {
    struct cli_job *j = x->j;
    x->terms = aiq_jget(aiq_jget(x->raw, "status"), "scoreTerms");
    aiq_err_clear(&x->le);
    x->live = cli_job_waiting(j) ? live_queue(o, j->ns, j->name, &x->le) : NULL;
    x->live_it = x->live ? json_object_array_get_idx(items_of(x->live), 0) : NULL;
    if (x->live_it) {
        live_apply(j, x->live_it);
        if (aiq_jget(x->live_it, "terms"))
            x->terms = aiq_jget(x->live_it, "terms");
    }
    x->nlocal = 0;
    if (!x->terms || !json_object_is_type(x->terms, json_type_array))
        x->nlocal = oppolicy_explain(w->policy, j->f, x->local, OPST_MAX_TERMS);
}

/* The formula and levels, which `when` holds on the rebuilt factors, the
 * usage against quota and budget, and the factors used and approximated. */
static void explain_policy(struct world *w, struct explain *x) {
    struct cli_job *j = x->j;
    int g = x->g, uq = x->uq;
    x->formula = aiq_jstr(aiq_jget(w->active_policy, "spec"), "formula");
    if (!x->formula)
        x->formula = "job.priority";
    json_object *levels = aiq_jget(aiq_jget(w->active_policy, "spec"), "levels");
    x->levels = levels;
    x->nlv = levels && json_object_is_type(levels, json_type_array) ? (int)json_object_array_length(levels) : 0;
    x->local_level = -1;
    for (int i = 0; i < x->nlv && i < AIQ_MAX_LEVELS; i++) {
        const char *when = aiq_jstr(json_object_array_get_idx(levels, i), "when");
        if (!when) {
            x->lv_hold[i] = true;
        } else {
            aiq_err e;
            aiq_err_clear(&e);
            fx_prog *p = fx_compile(when, FX_PREDICATE, &e);
            x->lv_hold[i] = p && fx_eval(p, j->f) != 0;
            fx_free(p);
        }
        if (x->lv_hold[i] && x->local_level < 0)
            x->local_level = i;
    }
    x->g_used = g >= 0 ? jnum(aiq_jget(w->group_status[g], "usage"), "gpus", 0) : 0;
    x->g_h = g >= 0 ? jnum(aiq_jget(w->group_status[g], "usage"), "gpuHours", 0) : 0;
    x->u_used = uq >= 0 ? jnum(aiq_jget(w->uq_status[uq], "usage"), "gpus", 0) : 0;
    x->u_h = uq >= 0 ? jnum(aiq_jget(w->uq_status[uq], "usage"), "gpuHours", 0) : 0;
    x->used_f = factors_used(x->formula);
    for (int i = 0; i < x->nlv; i++)
        x->used_f |= factors_used(aiq_jstr(json_object_array_get_idx(levels, i), "when"));
    x->approx = x->used_f & j->approx;
}

/* explain -o json|yaml. */
static void explain_doc(const struct opts *o, struct world *w, const struct explain *x) {
    struct cli_job *j = x->j;
    int g = x->g, uq = x->uq, local_level = x->local_level, nlocal = x->nlocal;
    json_object *raw = x->raw, *terms = x->terms, *live_it = x->live_it, *levels = x->levels;
    const struct opst_term *local = x->local;
    const char *formula = x->formula;
    double g_used = x->g_used, u_used = x->u_used;
    uint64_t used_f = x->used_f, approx = x->approx;
    char b1[256];
    json_object *doc = json_object_new_object(), *a;
    add_str(doc, "namespace", j->ns);
    add_str(doc, "name", j->name);
    add_str(doc, "user", j->user);
    add_str(doc, "group", j->group[0] ? j->group : NULL);
    add_str(doc, "phase", j->phase[0] ? j->phase : "Pending");
    add_str(doc, "policy", policy_name(w));
    add_str(doc, "formula", formula);
    add_str(doc, "level", j->level[0] ? j->level : NULL);
    add_str(doc, "levelByLocalEval", local_level >= 0 ? aiq_jstr(json_object_array_get_idx(levels, local_level), "name") : NULL);
    add_int(doc, "position", j->position);
    json_object_object_add(doc, "score", j->has_score ? num6(j->score) : NULL);
    if (terms)
        json_object_object_add(doc, "scoreTerms", json_object_get(terms));
    else {
        a = json_object_new_array();
        for (int i = 0; i < nlocal; i++) {
            json_object *t = json_object_new_object();
            add_str(t, "name", local[i].name);
            add_num(t, "value", local[i].value);
            json_object_array_add(a, t);
        }
        json_object_object_add(doc, "scoreTerms", a);
    }
    json_object *f = json_object_new_object();
    for (int i = 0; i < FX_NFACTORS; i++)
        if (used_f & (1ull << i))
            add_num(f, fx_factor_name(i), j->f[i]);
    json_object_object_add(doc, "factors", f);
    a = json_object_new_array();
    for (int i = 0; i < FX_NFACTORS; i++)
        if (approx & (1ull << i))
            json_object_array_add(a, json_object_new_string(fx_factor_name(i)));
    json_object_object_add(doc, "approximatedFactors", a);
    add_num(doc, "groupGPUsInUse", g_used);
    if (g >= 0)
        add_int(doc, "groupGPUQuota", w->groups[g].spec.quota.gpus);
    add_num(doc, "userGPUsInUse", u_used);
    if (uq >= 0)
        add_int(doc, "userGPUQuota", w->uqs[uq].spec.quota.gpus);
    add_str(doc, "reason", j->reason[0] ? j->reason : NULL);
    add_str(doc, "message", j->message[0] ? j->message : NULL);
    explain_headroom(w, j, raw, g, uq, doc);
    time_text(b1, sizeof b1, j->eta);
    add_str(doc, "estimatedStartTime", j->eta > 0 ? b1 : NULL);
    add_str(doc, "source", live_it ? "live" : "status");
    explain_preemption(raw, doc);
    print_journal(o, j, doc);
    emit(doc, o->out);
    json_object_put(doc);
}

/* explain as text. */
static void explain_text(const struct opts *o, struct world *w, const struct explain *x) {
    struct cli_job *j = x->j;
    int g = x->g, uq = x->uq, nlv = x->nlv, local_level = x->local_level, nlocal = x->nlocal;
    json_object *raw = x->raw, *terms = x->terms, *live_it = x->live_it, *levels = x->levels;
    const struct opst_term *local = x->local;
    const char *formula = x->formula;
    double g_used = x->g_used, g_h = x->g_h, u_used = x->u_used, u_h = x->u_h;
    uint64_t used_f = x->used_f, approx = x->approx;
    char b1[256], b2[256];
    const bool *lv_hold = x->lv_hold;
    printf("%sJob:%s       %s/%s   user %s, group %s\n", C_BOLD, C_OFF, j->ns, j->name, j->user,
           j->group[0] ? j->group : "<none>");
    printf("%sPhase:%s     %s", C_BOLD, C_OFF, j->phase[0] ? j->phase : "Pending (no status yet)");
    if (j->position > 0)
        printf(", position %d in the queue", j->position);
    if (j->queued > 0 && cli_job_waiting(j))
        printf(", waiting %s", cli_human_duration(b1, sizeof b1, w->cw.now - j->queued));
    printf("\n%sPolicy:%s    %s\n", C_BOLD, C_OFF, policy_name(w));
    printf("%sFormula:%s   %s\n", C_BOLD, C_OFF, one_line(b1, sizeof b1, formula));
    printf("%sScore:%s     %s%s\n", C_BOLD, C_OFF, j->has_score ? num_text(b1, sizeof b1, j->score) : "<none>",
           live_it ? " = the sum of these terms (live, from the operator's last cycle):"
           : terms ? " = the sum of these terms (status.scoreTerms, as last written):"
           : nlocal ? " (terms computed locally):" : "");
    if (cli_job_waiting(j) && !live_it)
        printf("           %s(live view not available: %s; position and score as last written)%s\n",
               C_DIM, x->le.message[0] ? x->le.message : "the job is not waiting in the operator's queue",
               C_OFF);
    if (terms && json_object_is_type(terms, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(terms); i++) {
            json_object *t = json_object_array_get_idx(terms, i);
            printf("  %12s  %s\n", num_text(b1, sizeof b1, jnum(t, "value", 0)), aiq_jstr(t, "name") ? aiq_jstr(t, "name") : "?");
        }
    } else {
        for (int i = 0; i < nlocal; i++)
            printf("  %12s  %s\n", num_text(b1, sizeof b1, local[i].value), local[i].name);
    }
    printf("%sLevel:%s     %s%s%s", C_BOLD, C_OFF, C_CYAN, j->level[0] ? j->level : "<none>", C_OFF);
    if (nlv == 0)
        printf(" (the built-in policy has one level)\n");
    else
        printf(" -- the first level whose `when` holds:\n");
    for (int i = 0; i < nlv && i < AIQ_MAX_LEVELS; i++) {
        json_object *lv = json_object_array_get_idx(levels, i);
        const char *when = aiq_jstr(lv, "when");
        printf("  %s %-12s %s\n", lv_hold[i] ? (i == local_level ? "=>" : " +") : "  ",
               aiq_jstr(lv, "name") ? aiq_jstr(lv, "name") : "?", when ? when : "(catch-all)");
    }
    if (local_level >= 0 && j->level[0] &&
        strcmp(aiq_jstr(json_object_array_get_idx(levels, local_level), "name"), j->level) != 0)
        printf("  (evaluated here it lands in %s; the operator put it in %s -- a starvation\n"
               "   promotion, or one of the approximated factors below differs)\n",
               aiq_jstr(json_object_array_get_idx(levels, local_level), "name"), j->level);
    printf("%sFactors:%s  ", C_BOLD, C_OFF);
    int nf = 0;
    for (int i = 0; i < FX_NFACTORS; i++)
        if (used_f & (1ull << i))
            printf("%s%s=%s%s", nf++ ? ", " : "", fx_factor_name(i), num_text(b1, sizeof b1, j->f[i]),
                   (approx & (1ull << i)) ? "~" : "");
    printf(nf ? "\n" : "(none used by the policy)\n");
    if (approx)
        printf("           (~ approximated from the objects' status: the operator's store has the exact value)\n");
    printf("%sQuota:%s     group %s: %s\n", C_BOLD, C_OFF, j->group[0] ? j->group : "<none>",
           g >= 0 ? quota_text(b1, sizeof b1, g_used, (long long)w->groups[g].spec.quota.gpus) : "no group");
    printf("           user %s: %s\n", j->user,
           uq >= 0 ? quota_text(b2, sizeof b2, u_used, (long long)w->uqs[uq].spec.quota.gpus)
                   : "no UserQuota (bounded by the group)");
    printf("           this job needs %ld GPU%s\n", j->gpus, j->gpus == 1 ? "" : "s");
    printf("%sBudget:%s    group: %s\n", C_BOLD, C_OFF,
           g >= 0 ? budget_text(b1, sizeof b1, g_h, &w->groups[g].spec.budget) : "no group");
    printf("           user: %s\n", uq >= 0 ? budget_text(b2, sizeof b2, u_h, &w->uqs[uq].spec.budget) : "no budget");
    explain_headroom(w, j, raw, g, uq, NULL);
    time_text(b1, sizeof b1, j->eta);
    printf("%sETA:%s       %s (%s)\n", C_BOLD, C_OFF, b1, eta_text(b2, sizeof b2, j->eta, w->cw.now));
    explain_preemption(raw, NULL);
    print_journal(o, j, NULL);
}

static int cmd_explain(const struct opts *o, struct world *w) {
    const char *name = o->args[1];
    struct explain x;
    memset(&x, 0, sizeof x);
    if (!name)
        return fail("explain needs a job name: kubectl aiq explain JOB [-n NS]");
    for (int i = 0; i < w->njobs; i++)
        if (strcmp(w->jobs[i].name, name) == 0 && (o->all_ns || strcmp(w->jobs[i].ns, o->ns) == 0))
            x.j = &w->jobs[i];
    if (!x.j)
        return fail("aijobs.aiq.dev \"%s\" not found in namespace %s", name, o->all_ns ? "(any)" : o->ns);
    explain_find(w, &x);
    explain_terms(o, w, &x);
    explain_policy(w, &x);
    if (o->out != OUT_TABLE)
        explain_doc(o, w, &x);
    else
        explain_text(o, w, &x);
    json_object_put(x.live);
    return 0;
}

/* ---- usage ------------------------------------------------------------------ */

static const char *lim_text(char *buf, size_t cap, long long v) {
    if (v < 0)
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%lld", v);
    return buf;
}

static int cmd_usage(const struct opts *o, struct world *w) {
    cli_table *t = NULL;
    json_object *doc = NULL, *items = NULL;
    int rc = 0, shown = 0;
    static const char *hdr[] = {"GROUP", "USER", "LEVEL", "GPU-QUOTA", "GPUS-USED",
                                "JOBS-QUOTA", "JOBS-USED", "BUDGET-GPUH", "USED-GPUH", "FAIRSHARE", "STATUS"};
    if (o->out == OUT_TABLE) {
        t = cli_table_create(11, hdr);
        if (!t)
            return fail("out of memory");
    } else {
        doc = json_object_new_object();
        items = json_object_new_array();
        add_str(doc, "apiVersion", AIQ_API_VERSION);
        add_str(doc, "kind", "UsageView");
        json_object_object_add(doc, "items", items);
    }
    for (int g = 0; g < w->ngroups; g++) {
        const struct aiq_group *gr = &w->groups[g];
        if (o->group && strcmp(o->group, gr->meta.name) != 0)
            continue;
        shown++;
        json_object *gu = aiq_jget(w->group_status[g], "usage");
        double fsg, fsu;
        cli_fairshare(&w->cw, g, NULL, &fsg, &fsu);
        /* the group row, then one row per user (UserQuotas, then members) */
        for (int r = -1; r < w->nuqs + gr->spec.nmembers; r++) {
            const char *user = "*", *status = "", *level = NULL;
            char lvl[16], q1[24], q2[24], q3[24], q4[24], q5[24], q6[24], fs[24];
            long long gq = gr->spec.quota.gpus, jq = gr->spec.quota.jobs;
            double gpus = jnum(gu, "gpus", 0), jobs = jnum(gu, "jobs", 0), h = jnum(gu, "gpuHours", 0);
            const struct aiq_budget *bud = &gr->spec.budget;
            double fsv = fsg;
            snprintf(lvl, sizeof lvl, "%d", gr->spec.level);
            level = lvl;
            if (r >= 0 && r < w->nuqs) {
                const struct aiq_userquota *u = &w->uqs[r];
                if (cli_group_of_ns(&w->cw, u->meta.namespace_) != g)
                    continue;
                json_object *st = w->uq_status[r];
                user = u->spec.user;
                gq = u->spec.quota.gpus;
                jq = u->spec.quota.jobs;
                gpus = jnum(aiq_jget(st, "usage"), "gpus", 0);
                jobs = jnum(aiq_jget(st, "usage"), "jobs", 0);
                h = jnum(aiq_jget(st, "usage"), "gpuHours", 0);
                bud = &u->spec.budget;
                status = aiq_jget(st, "accepted") ? (aiq_jtrue(st, "accepted") ? "Accepted" : "Rejected") : "Pending";
                level = "0";
                for (int k = 0; k < gr->spec.nmembers; k++)
                    if (strcmp(gr->spec.members[k].user, user) == 0) {
                        snprintf(lvl, sizeof lvl, "%d", gr->spec.members[k].level);
                        level = lvl;
                    }
                cli_fairshare(&w->cw, g, user, &fsg, &fsv);
            } else if (r >= w->nuqs) { /* a member without a UserQuota */
                const struct aiq_member *m = &gr->spec.members[r - w->nuqs];
                bool has_uq = false;
                for (int k = 0; k < w->nuqs; k++)
                    has_uq |= w->uqs[k].spec.user && strcmp(w->uqs[k].spec.user, m->user) == 0 &&
                              cli_group_of_ns(&w->cw, w->uqs[k].meta.namespace_) == g;
                if (has_uq)
                    continue;
                user = m->user;
                snprintf(lvl, sizeof lvl, "%d", m->level);
                gq = jq = -1;
                gpus = jobs = 0;
                for (int k = 0; k < w->njobs; k++) { /* counted from its jobs */
                    const struct cli_job *jb = &w->jobs[k];
                    if (strcmp(jb->group, gr->meta.name) == 0 && strcmp(jb->user, m->user) == 0 &&
                        (strcmp(jb->phase, "Admitted") == 0 || strcmp(jb->phase, "Running") == 0)) {
                        gpus += (double)jb->gpus;
                        jobs++;
                    }
                }
                h = 0;
                bud = NULL;
                status = "member";
                cli_fairshare(&w->cw, g, user, &fsg, &fsv);
            }
            if (o->user && r >= 0 && strcmp(o->user, user) != 0)
                continue;
            snprintf(fs, sizeof fs, "%.3f", fsv);
            if (items) {
                json_object *it = json_object_new_object();
                add_str(it, "group", gr->meta.name);
                add_str(it, "user", r < 0 ? NULL : user);
                add_int(it, "level", strtol(level, NULL, 10));
                add_int(it, "gpuQuota", gq);
                add_num(it, "gpusUsed", gpus);
                add_int(it, "jobsQuota", jq);
                add_num(it, "jobsUsed", jobs);
                add_num(it, "budgetGPUHours", bud ? bud->gpu_hours : -1);
                add_num(it, "usedGPUHours", h);
                add_num(it, "fairshare", fsv);
                if (r >= 0)
                    add_str(it, "status", status);
                json_object_array_add(items, it);
                continue;
            }
            snprintf(q2, sizeof q2, "%g", gpus);
            snprintf(q4, sizeof q4, "%g", jobs);
            if (bud && bud->gpu_hours >= 0)
                snprintf(q5, sizeof q5, "%g", bud->gpu_hours);
            else
                snprintf(q5, sizeof q5, "-");
            snprintf(q6, sizeof q6, "%.4g", h);
            const char *row[] = {r < 0 ? gr->meta.name : "", user, level, lim_text(q1, sizeof q1, gq), q2,
                                 lim_text(q3, sizeof q3, jq), q4, q5, q6, fs, status};
            if (cli_table_add(t, row) != AIQ_OK) {
                rc = fail("out of memory");
                goto out;
            }
        }
    }
    if (o->group && !shown) {
        rc = fail("groups.aiq.dev \"%s\" not found", o->group);
        goto out;
    }
    if (doc) {
        emit(doc, o->out);
    } else if (cli_table_rows(t) == 0) {
        fputs("No groups found.\n", stderr);
    } else {
        cli_table_print(t, stdout);
        printf("%s(- = not limited; FAIRSHARE is 2^(-usage/shares) like sshare, from the usage the statuses show)%s\n",
               C_DIM, C_OFF);
    }
out:
    cli_table_free(t);
    json_object_put(doc);
    return rc;
}

/* ---- nodes ------------------------------------------------------------------ */

/* GPUs (nvidia.com/gpu units) held on each node by aiq's pods and by
 * others, from every pod the caller may list. */
struct node_use {
    const char *node;
    double aiq, other;
};

static void nodes_count_pods(json_object *pods, struct node_use *u, size_t nu) {
    json_object *it = items_of(pods);
    for (size_t i = 0; it && i < json_object_array_length(it); i++) {
        json_object *pod = json_object_array_get_idx(it, i);
        struct fpod p;
        if (fpod_read(pod, &p) != 0)
            continue;
        json_object *lab = aiq_jget(aiq_jget(pod, "metadata"), "labels");
        bool ours = lab && aiq_jget(lab, PODS_LABEL_JOB);
        for (size_t k = 0; p.holds && k < nu; k++)
            if (strcmp(u[k].node, p.node) == 0) {
                *(ours ? &u[k].aiq : &u[k].other) += (double)p.gpus;
                break;
            }
        fpod_deinit(&p);
    }
}

/* "81920" when every GPU has the same memory, else "81920,40960,...". */
static const char *nodes_mem(char *buf, size_t cap, const struct q_node *q) {
    bool same = true;
    size_t n = 0;
    buf[0] = '\0';
    for (int g = 1; g < q->ngpus; g++)
        same = same && q->gpu_mem_total[g] == q->gpu_mem_total[0];
    for (int g = 0; g < (same ? (q->ngpus > 0) : q->ngpus) && n < cap; g++) {
        int w = snprintf(buf + n, cap - n, "%s%lld", g ? "," : "", (long long)q->gpu_mem_total[g]);
        if (w < 0)
            break;
        n += (size_t)w;
    }
    return q->ngpus ? buf : "-";
}

static int cmd_nodes(const struct opts *o, struct kube_client *kc) {
    json_object *nodes = NULL, *pods = NULL, *doc = NULL, *items = NULL, *udoc = NULL;
    struct node_use *use = NULL;
    cli_table *t = NULL;
    aiq_err e;
    int rc = 1;
    aiq_err_clear(&e);
    if (kube_get(kc, "/api/v1/nodes", &nodes, &e) != AIQ_OK) {
        print_err("listing nodes", &e);
        goto out;
    }
    json_object *nit = items_of(nodes);
    size_t nn = nit ? json_object_array_length(nit) : 0;
    use = calloc(nn ? nn : 1, sizeof *use);
    if (!use) {
        rc = fail("out of memory");
        goto out;
    }
    for (size_t i = 0; i < nn; i++) {
        const char *name = aiq_jstr(aiq_jget(json_object_array_get_idx(nit, i), "metadata"), "name");
        use[i].node = name ? name : "";
    }
    aiq_err_clear(&e);
    bool have_pods = kube_get(kc, "/api/v1/pods", &pods, &e) == AIQ_OK;
    if (have_pods)
        nodes_count_pods(pods, use, nn);
    else
        fprintf(stderr, "warning: cannot list pods (%s): GPUs in use are not shown\n", e.message);
    /* Live utilisation from the operator (GET /util); "?" when it cannot answer. */
    aiq_err ue;
    aiq_err_clear(&ue);
    if (operator_get(o, "/utilisations", "/util", &udoc, &ue) != AIQ_OK ||
        !json_object_is_type(udoc, json_type_object)) {
        json_object_put(udoc);
        udoc = NULL;
        fprintf(stderr, "note: utilisation not shown (UTIL ?): the operator %s%s %s%s\n",
                o->operator_url ? "at " : "through the API server",
                o->operator_url ? o->operator_url : "",
                ue.http_status ? "answered: " : "is not reachable: ", ue.message);
    }
    static const char *const hdr[] = {"NODE", "GPUS", "GPU-MEM-MIB", "MODEL", "DOMAIN",
                                      "AIQ", "OTHER", "UTIL", "STATUS"};
    if (o->out != OUT_TABLE) {
        doc = json_object_new_object();
        items = json_object_new_array();
        if (!doc || !items) {
            json_object_put(items);
            rc = fail("out of memory");
            goto out;
        }
        json_object_object_add(doc, "items", items);
    } else if (!(t = cli_table_create(9, hdr))) {
        rc = fail("out of memory");
        goto out;
    }
    for (size_t i = 0; i < nn; i++) {
        struct node_facts f;
        json_object *nobj = json_object_array_get_idx(nit, i);
        if (node_facts_read(nobj, &f) != 0)
            continue;
        char gpus[64], mem[512], a[32], oth[32], status[400], util[160];
        const char *reason = nodex_name(f.excluded);
        if (f.excluded)
            snprintf(status, sizeof status, "%sExcluded: %s (%s)%s", C_RED, reason, f.message, C_OFF);
        else
            snprintf(status, sizeof status, "%s", f.q.schedulable ? "Ready" : "Cordoned");
        int w = snprintf(gpus, sizeof gpus, "%d", f.q.ngpus);
        if (f.replicas > 1 && w > 0)
            snprintf(gpus + w, sizeof gpus - (size_t)w, " (x%d shared)", f.replicas);
        else if (f.mig_single && w > 0)
            snprintf(gpus + w, sizeof gpus - (size_t)w, " (MIG)");
        snprintf(a, sizeof a, have_pods ? "%g" : "?", use[i].aiq);
        snprintf(oth, sizeof oth, have_pods ? "%g" : "?", use[i].other);
        if (doc) {
            json_object *it = json_object_new_object();
            if (!it)
                continue;
            add_str(it, "name", f.q.name);
            add_num(it, "gpus", f.q.ngpus);
            add_num(it, "advertisedGPUs", f.advertised);
            add_num(it, "replicasPerGPU", f.replicas);
            add_str(it, "gpuMemoryMiB", nodes_mem(mem, sizeof mem, &f.q));
            add_str(it, "model", f.q.gpu_model);
            add_str(it, "domain", f.q.domain);
            add_str(it, "mig", f.mig[0] ? f.mig : NULL);
            if (have_pods) {
                add_num(it, "aiqGPUs", use[i].aiq);
                add_num(it, "otherGPUs", use[i].other);
            }
            json_object *un = cli_util_node(udoc, f.q.name);
            if (un)
                json_object_object_add(it, "utilization", json_object_get(un));
            add_str(it, "util", cli_util_cell(udoc, f.q.name, nobj, f.q.ngpus, util, sizeof util));
            add_str(it, "status", f.excluded ? "Excluded" : f.q.schedulable ? "Ready" : "Cordoned");
            add_str(it, "reason", f.excluded ? reason : NULL);
            add_str(it, "message", f.excluded ? f.message : NULL);
            json_object_array_add(items, it);
            continue;
        }
        char model[200];
        snprintf(model, sizeof model, "%s%s%s", f.q.gpu_model ? f.q.gpu_model : "-",
                 f.mig[0] ? " +mig " : "", f.mig);
        const char *row[] = {f.q.name, gpus, nodes_mem(mem, sizeof mem, &f.q), model,
                             f.q.domain ? f.q.domain : "-", a, oth,
                             cli_util_cell(udoc, f.q.name, nobj, f.q.ngpus, util, sizeof util), status};
        if (cli_table_add(t, row) != AIQ_OK) {
            rc = fail("out of memory");
            goto out;
        }
    }
    if (doc && udoc) /* the source's state with the nodes */
        json_object_object_add(doc, "utilizationSource", json_object_get(udoc));
    if (doc)
        emit(doc, o->out);
    else if (cli_table_rows(t) == 0)
        fputs("No nodes found.\n", stderr);
    else
        cli_table_print(t, stdout);
    if (!doc && udoc) {
        char line[700];
        if (*cli_util_summary(udoc, (double)time(NULL), line, sizeof line))
            printf("%s\n", line);
    }
    rc = 0;
out:
    cli_table_free(t);
    json_object_put(udoc);
    json_object_put(doc);
    free(use);
    json_object_put(pods);
    json_object_put(nodes);
    return rc;
}

/* ---- policy test ------------------------------------------------------------ */

/* Prints a compile error of the policy's field with a caret under it. */
static void print_policy_error(const char *file, const struct aiq_manifest *m,
                               const struct aiq_policy *p, const aiq_err *e) {
    const char *src = NULL;
    char buf[2048];
    if (p && strcmp(e->field, "spec.formula") == 0)
        src = p->spec.formula;
    if (p && strcmp(e->field, "spec.placementScore") == 0)
        src = p->spec.placement_score;
    for (int i = 0; p && !src && i < p->spec.nlevels; i++) {
        char f[64];
        snprintf(f, sizeof f, "spec.levels[%d].when", i);
        if (strcmp(e->field, f) == 0)
            src = p->spec.levels[i].when;
    }
    fprintf(stderr, "%s: QueuePolicy %s (document at line %d):\n", file,
            p && p->meta.name ? p->meta.name : "?", m->line);
    if (src && e->line > 0) {
        fx_format_error(src, e, buf, sizeof buf);
        fprintf(stderr, "%s\n", buf);
    } else {
        fprintf(stderr, "%s\n", e->message);
    }
}

/* What `aiq-sim tune` measured for the first QueuePolicy of file: its
 * aiq.dev/tuned-by and aiq.dev/tuned-result annotations, copied into by
 * and result ("" when absent). The file already decoded as manifests, so
 * a read or parse failure here only means there is no note to show. */
static void tuned_note(const char *file, char *by, size_t bcap, char *result, size_t rcap) {
    json_object **docs = NULL;
    int nd = 0;
    size_t len = 0;
    char *text = NULL;
    by[0] = result[0] = '\0';
    FILE *f = fopen(file, "rb");
    if (!f)
        return;
    text = malloc(AIQ_MAX_FILE + 1);
    if (text)
        len = fread(text, 1, AIQ_MAX_FILE, f);
    fclose(f);
    if (!text || aiq_yaml_to_json(text, len, &docs, &nd, NULL) != AIQ_OK) {
        free(text);
        return;
    }
    for (int i = 0; i < nd; i++) {
        const char *k = aiq_jstr(docs[i], "kind");
        if (!k || strcmp(k, "QueuePolicy") != 0)
            continue;
        json_object *an = aiq_jget(aiq_jget(docs[i], "metadata"), "annotations");
        const char *b = aiq_jstr(an, "aiq.dev/tuned-by"), *r = aiq_jstr(an, "aiq.dev/tuned-result");
        snprintf(by, bcap, "%s", b ? b : "");
        snprintf(result, rcap, "%s", r ? r : "");
        break;
    }
    aiq_json_docs_free(docs, nd);
    free(text);
}

static int cmd_policy_test(const struct opts *o, struct world *w, const char *file) {
    struct aiq_manifest *ms = NULL;
    int nm = 0, rc = 1;
    aiq_err e;
    oppolicy *np = NULL;
    struct cli_job *v = NULL;
    const struct aiq_policy *pol = NULL;
    const struct aiq_manifest *pm = NULL;
    aiq_err_clear(&e);
    if (aiq_manifest_parse_file(file, &ms, &nm, &e) != AIQ_OK) {
        fprintf(stderr, "error: %s:%d: %s\n", file, e.line, e.message);
        return 1;
    }
    for (int i = 0; i < nm; i++) {
        if (ms[i].rc != AIQ_OK) {
            fprintf(stderr, "error: %s:%d: %s\n", file, ms[i].line, ms[i].err.message);
            goto out;
        }
        if (ms[i].kind == AIQ_KIND_QUEUEPOLICY && !pol) {
            pol = &ms[i].u.policy;
            pm = &ms[i];
        }
    }
    if (!pol) {
        fprintf(stderr, "error: %s: no QueuePolicy in the file\n", file);
        goto out;
    }
    aiq_err_clear(&e);
    np = oppolicy_compile(pol, &e);
    if (!np) {
        print_policy_error(file, pm, pol, &e);
        goto out;
    }
    char tuned_by[512], tuned_res[1024];
    tuned_note(file, tuned_by, sizeof tuned_by, tuned_res, sizeof tuned_res);
    /* Old order: the operator's positions; new order: this policy. */
    int n = 0;
    v = calloc((size_t)w->njobs + 1, sizeof *v);
    if (!v) {
        fail("out of memory");
        goto out;
    }
    for (int i = 0; i < w->njobs; i++)
        if (cli_job_waiting(&w->jobs[i]))
            v[n++] = w->jobs[i];
    if (cli_rank(np, v, n, &e) != AIQ_OK) {
        print_err("ranking", &e);
        goto out;
    }
    uint64_t used_f = factors_used(pol->spec.formula), approx = 0;
    for (int i = 0; i < pol->spec.nlevels; i++)
        used_f |= factors_used(pol->spec.levels[i].when);
    for (int i = 0; i < n; i++)
        approx |= v[i].approx & used_f;
    /* List in the new order. */
    for (int i = 0; i < n; i++)
        while (v[i].new_position != i + 1) {
            struct cli_job tmp = v[v[i].new_position - 1];
            v[v[i].new_position - 1] = v[i];
            v[i] = tmp;
        }
    if (o->out != OUT_TABLE) {
        json_object *doc = json_object_new_object(), *items = json_object_new_array(), *a;
        add_str(doc, "apiVersion", AIQ_API_VERSION);
        add_str(doc, "kind", "PolicyTest");
        add_str(doc, "policy", pol->meta.name);
        json_object_object_add(doc, "compiled", json_object_new_boolean(1));
        add_str(doc, "currentPolicy", policy_name(w));
        if (tuned_by[0]) {
            add_str(doc, "tunedBy", tuned_by);
            add_str(doc, "tunedResult", tuned_res);
        }
        for (int i = 0; i < n; i++) {
            json_object *it = json_object_new_object();
            add_str(it, "namespace", v[i].ns);
            add_str(it, "name", v[i].name);
            add_str(it, "user", v[i].user);
            add_int(it, "oldPosition", v[i].position);
            add_int(it, "newPosition", v[i].new_position);
            add_str(it, "oldLevel", v[i].level[0] ? v[i].level : NULL);
            add_str(it, "newLevel", oppolicy_level_name(np, v[i].new_level));
            json_object_object_add(it, "oldScore", v[i].has_score ? num6(v[i].score) : NULL);
            add_num(it, "newScore", v[i].new_score);
            json_object_array_add(items, it);
        }
        json_object_object_add(doc, "items", items);
        a = json_object_new_array();
        for (int i = 0; i < FX_NFACTORS; i++)
            if (approx & (1ull << i))
                json_object_array_add(a, json_object_new_string(fx_factor_name(i)));
        json_object_object_add(doc, "approximatedFactors", a);
        emit(doc, o->out);
        json_object_put(doc);
        rc = 0;
        goto out;
    }
    char fl[512];
    printf("%sQueuePolicy %s compiles%s: formula %s, %d level%s", C_GREEN, pol->meta.name, C_OFF,
           one_line(fl, sizeof fl, pol->spec.formula), pol->spec.nlevels, pol->spec.nlevels == 1 ? "" : "s");
    for (int i = 0; i < pol->spec.nlevels; i++)
        printf("%s%s", i ? ", " : " (", pol->spec.levels[i].name);
    printf(")\n");
    if (tuned_by[0])
        printf("Tuned by %s\nMeasured: %s\n", tuned_by, tuned_res[0] ? tuned_res : "(no result)");
    if (n == 0) {
        printf("No jobs waiting: nothing to reorder.\n");
        rc = 0;
        goto out;
    }
    printf("The %d waiting job%s, now under %s and under %s:\n", n, n == 1 ? "" : "s",
           policy_name(w), pol->meta.name);
    static const char *hdr[] = {"NEW", "OLD", "MOVE", "NAMESPACE", "NAME", "USER", "GPUS",
                                "LEVEL", "SCORE", "OLD-LEVEL", "OLD-SCORE"};
    cli_table *t = cli_table_create(11, hdr);
    if (!t) {
        fail("out of memory");
        goto out;
    }
    rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        char np_s[16], op_s[16], mv[48], gp[24], sc[32], osc[32], lv[96];
        snprintf(np_s, sizeof np_s, "%d", v[i].new_position);
        if (v[i].position > 0)
            snprintf(op_s, sizeof op_s, "%d", v[i].position);
        else
            snprintf(op_s, sizeof op_s, "-");
        int d = v[i].position > 0 ? v[i].position - v[i].new_position : 0;
        if (v[i].position <= 0)
            snprintf(mv, sizeof mv, "new");
        else if (d > 0)
            snprintf(mv, sizeof mv, "%s+%d%s", C_GREEN, d, C_OFF);
        else if (d < 0)
            snprintf(mv, sizeof mv, "%s-%d%s", C_RED, -d, C_OFF);
        else
            snprintf(mv, sizeof mv, "=");
        snprintf(gp, sizeof gp, "%ld", v[i].gpus);
        num_text(sc, sizeof sc, v[i].new_score);
        if (v[i].has_score)
            num_text(osc, sizeof osc, v[i].score);
        else
            snprintf(osc, sizeof osc, "<none>");
        snprintf(lv, sizeof lv, "%s", oppolicy_level_name(np, v[i].new_level));
        const char *row[] = {np_s, op_s, mv, v[i].ns, v[i].name, v[i].user, gp, lv, sc,
                             v[i].level[0] ? v[i].level : "<none>", osc};
        if (cli_table_add(t, row) != AIQ_OK)
            rc = fail("out of memory");
    }
    if (rc == 0)
        cli_table_print(t, stdout);
    cli_table_free(t);
    if (approx) {
        printf("Approximated factors (the operator's store has the exact values):");
        for (int i = 0; i < FX_NFACTORS; i++)
            if (approx & (1ull << i))
                printf(" %s", fx_factor_name(i));
        printf("\n");
    }
out:
    free(v);
    oppolicy_free(np);
    aiq_manifests_free(ms, nm);
    return rc;
}

/* ---- rerun ------------------------------------------------------------------ */

#define RERUN_WAIT_S 120 /* for the old object and its pods to be gone */

/* The new run's object: the old one's name, namespace, labels,
 * annotations and spec (deep copies), annotated aiq.dev/run (the run
 * number, counting from 1) and aiq.dev/rerun-of (the old uid). *run gets
 * the new run number. Returns a new object, or NULL when out of memory. */
static json_object *rerun_object(json_object *old, int *run) {
    json_object *md = aiq_jget(old, "metadata"), *nj = json_object_new_object();
    json_object *nmd = json_object_new_object(), *ann = NULL, *v = NULL;
    if (!nj || !nmd)
        goto fail;
    json_object_object_add(nj, "metadata", nmd);
    add_str(nj, "apiVersion", AIQ_GROUP "/" AIQ_VERSION);
    add_str(nj, "kind", "AIJob");
    add_str(nmd, "name", aiq_jstr(md, "name"));
    add_str(nmd, "namespace", aiq_jstr(md, "namespace"));
    if ((v = aiq_jget(md, "labels"))) {
        if (json_object_deep_copy(v, &ann, NULL) != 0)
            goto fail;
        json_object_object_add(nmd, "labels", ann);
        ann = NULL;
    }
    if ((v = aiq_jget(md, "annotations")) && json_object_deep_copy(v, &ann, NULL) != 0)
        goto fail;
    if (!ann && !(ann = json_object_new_object()))
        goto fail;
    json_object_object_add(nmd, "annotations", ann);
    const char *prev = aiq_jstr(ann, "aiq.dev/run");
    long n = prev ? strtol(prev, NULL, 10) : 1;
    *run = (int)(n >= 1 && n < 1000000 ? n + 1 : 2);
    char num[16];
    snprintf(num, sizeof num, "%d", *run);
    add_str(ann, "aiq.dev/run", num);
    add_str(ann, "aiq.dev/rerun-of", aiq_jstr(md, "uid"));
    json_object *spec = NULL;
    if (json_object_deep_copy(aiq_jget(old, "spec"), &spec, NULL) != 0)
        goto fail;
    json_object_object_add(nj, "spec", spec);
    return nj;
fail:
    json_object_put(nj);
    return NULL;
}

/* Whether the old run is gone: the object (*path) and its pods (label
 * aiq.dev/job=NAME in its namespace: the new run's pods take the same
 * names). Returns 1 gone, 0 not yet, -1 after printing an error. */
static int rerun_gone(struct kube_client *kc, const char *path, const char *ns, const char *name) {
    char base[PATH_CAP], sel[2 * AIQ_MAX_NAME], q[3 * sizeof sel], pods[sizeof base + sizeof q + 16];
    json_object *cur = NULL;
    aiq_err e;
    aiq_err_clear(&e);
    aiq_rc rc = kube_get(kc, path, &cur, &e);
    json_object_put(cur);
    cur = NULL;
    if (rc == AIQ_OK)
        return 0;
    if (rc != AIQ_ENOTFOUND) {
        print_err("waiting for the finished run to be deleted", &e);
        return -1;
    }
    snprintf(sel, sizeof sel, "aiq.dev/job=%s", name);
    if (kube_query_escape(q, sizeof q, sel, &e) != AIQ_OK ||
        kube_path(base, sizeof base, "", "v1", ns, "pods", NULL, NULL, &e) != AIQ_OK) {
        print_err("building the pod list path", &e);
        return -1;
    }
    snprintf(pods, sizeof pods, "%s?labelSelector=%s", base, q); /* sized to fit both */
    if ((rc = kube_get(kc, pods, &cur, &e)) != AIQ_OK) {
        print_err("listing the finished run's pods", &e);
        return -1;
    }
    json_object *it = items_of(cur);
    int gone = !it || json_object_array_length(it) == 0;
    json_object_put(cur);
    return gone;
}

/* Deletes the old run (its pods go with it, by the garbage collector)
 * and waits for the object and its pods to be gone. Returns 0, or 1
 * after printing what went wrong. */
static int rerun_delete(struct kube_client *kc, const char *path, const char *ns,
                        const char *name) {
    aiq_err e;
    aiq_err_clear(&e);
    aiq_rc rc = kube_delete(kc, path, "Background", NULL, &e);
    if (rc != AIQ_OK && rc != AIQ_ENOTFOUND) {
        print_err("deleting the finished run", &e);
        return 1;
    }
    for (int i = 0; i < RERUN_WAIT_S * 5; i++) {
        int g = rerun_gone(kc, path, ns, name);
        if (g != 0)
            return g < 0;
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL); /* interrupted early: the next look still decides */
    }
    return fail("aijob %s/%s: it or its pods are still there %d s after its deletion (a "
                "finalizer, or pods that do not stop?); rerun it once they are gone",
                ns, name, RERUN_WAIT_S);
}

/* kubectl aiq rerun JOB: a finished job (Succeeded, Failed, Rejected)
 * runs again as a new run: the old object is deleted (its history stays
 * in the operator's store, under its uid) and created again with the same
 * spec. A job still active is refused. */
static int cmd_rerun(const struct opts *o, struct kube_client *kc) {
    char path[PATH_CAP], key[2 * AIQ_MAX_NAME + 2], what[64];
    json_object *old = NULL, *nj = NULL;
    aiq_err e;
    int rc = 1, run = 2;
    snprintf(key, sizeof key, "%s/%s", o->ns, o->args[1]);
    aiq_err_clear(&e);
    aiq_rc r = kube_path(path, sizeof path, AIQ_GROUP, AIQ_VERSION, o->ns, "aijobs", o->args[1],
                         NULL, &e);
    if (r == AIQ_OK)
        r = kube_get(kc, path, &old, &e);
    if (r == AIQ_ENOTFOUND)
        return fail("aijob %s not found", key);
    if (r != AIQ_OK) {
        print_err("reading the aijob", &e);
        return 1;
    }
    const char *phase = aiq_jstr(aiq_jget(old, "status"), "phase");
    if (!phase || (strcmp(phase, "Succeeded") && strcmp(phase, "Failed") && strcmp(phase, "Rejected"))) {
        rc = fail("aijob %s is %s: only a finished job (Succeeded, Failed or Rejected) can be "
                  "rerun; suspend it (spec.suspend: true) or delete it instead",
                  key, phase ? phase : "Pending");
        goto out;
    }
    snprintf(what, sizeof what, "%s", phase);
    if (!(nj = rerun_object(old, &run))) {
        rc = fail("out of memory");
        goto out;
    }
    if (rerun_delete(kc, path, o->ns, o->args[1]))
        goto out;
    char coll[PATH_CAP];
    aiq_err_clear(&e);
    if (kube_path(coll, sizeof coll, AIQ_GROUP, AIQ_VERSION, o->ns, "aijobs", NULL, NULL, &e) !=
            AIQ_OK ||
        kube_create(kc, coll, nj, NULL, &e) != AIQ_OK) {
        print_err("creating the new run", &e);
        fprintf(stderr, "the finished run is deleted; its object, to apply again:\n%s\n",
                json_object_to_json_string_ext(nj, JSON_C_TO_STRING_PRETTY));
        goto out;
    }
    printf("aijob.aiq.dev/%s rerun: run %d created (run %d ended %s; its history is kept)\n",
           o->args[1], run, run - 1, what);
    rc = 0;
out:
    json_object_put(nj);
    json_object_put(old);
    return rc;
}

/* ---- main ------------------------------------------------------------------- */

int main(int argc, char **argv) {
    struct opts o;
    struct kube_config *cfg = NULL;
    struct kube_client *kc = NULL;
    struct world w;
    aiq_err e;
    int rc = 1;
    char nsbuf[AIQ_MAX_NAME + 1];
    memset(&o, 0, sizeof o);
    memset(&w, 0, sizeof w);
    o.color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
    if (parse_flags(argc, argv, &o))
        return 1;
    if (o.nargs == 0) {
        usage(stderr);
        return 1;
    }
    if (o.color) {
        C_BOLD = "\033[1m";
        C_DIM = "\033[2m";
        C_RED = "\033[31m";
        C_GREEN = "\033[32m";
        C_YELLOW = "\033[33m";
        C_CYAN = "\033[36m";
        C_OFF = "\033[0m";
    }
    const char *cmd = o.args[0];
    bool is_policy = strcmp(cmd, "policy") == 0;
    if (strcmp(cmd, "queue") != 0 && strcmp(cmd, "explain") != 0 && strcmp(cmd, "usage") != 0 &&
        strcmp(cmd, "nodes") != 0 && strcmp(cmd, "rerun") != 0 && !is_policy)
        return fail("unknown command \"%s\" (queue, explain, usage, nodes, rerun, policy test)",
                    cmd);
    if (is_policy && (o.nargs != 3 || strcmp(o.args[1], "test") != 0))
        return fail("usage: kubectl aiq policy test FILE");
    if (strcmp(cmd, "rerun") == 0 && o.nargs != 2)
        return fail("usage: kubectl aiq rerun JOB");
    aiq_err_clear(&e);
    if (kube_config_auto(o.kubeconfig, o.context, NULL, &cfg, &e) != AIQ_OK) {
        print_err("reading the kubeconfig", &e);
        goto out;
    }
    snprintf(nsbuf, sizeof nsbuf, "%s", o.ns ? o.ns : cfg->namespace_ ? cfg->namespace_ : "default");
    o.ns = nsbuf;
    o.kcfg = cfg;
    /* A person runs this: an exec credential plugin may prompt on the
     * terminal, as under kubectl. */
    struct kube_client_opts ko = {.timeout_ms = 20000, .user_agent = "kubectl-aiq/0.1",
                                  .may_prompt = 1};
    if (kube_client_create(cfg, &ko, &kc, &e) != AIQ_OK) {
        print_err("connecting", &e);
        goto out;
    }
    o.kc = kc;
    if (strcmp(cmd, "nodes") == 0 || strcmp(cmd, "rerun") == 0) {
        rc = cmd[0] == 'n' ? cmd_nodes(&o, kc) : cmd_rerun(&o, kc);
        goto out;
    }
    /* policy test and usage look at the whole queue; queue and explain at
     * the namespace unless -A. */
    bool every_ns = o.all_ns || is_policy || strcmp(cmd, "usage") == 0;
    if (world_load(kc, every_ns ? NULL : o.ns, o.ns, !o.all_ns, &w))
        goto out;
    if (strcmp(cmd, "queue") == 0)
        rc = cmd_queue(&o, &w);
    else if (strcmp(cmd, "explain") == 0)
        rc = cmd_explain(&o, &w);
    else if (strcmp(cmd, "usage") == 0)
        rc = cmd_usage(&o, &w);
    else
        rc = cmd_policy_test(&o, &w, o.args[2]);
out:
    world_free(&w);
    kube_client_free(kc);
    kube_config_free(cfg);
    return rc;
}
