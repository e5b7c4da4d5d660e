/* main.c -- aiq-operator: parses flags, sets up the server and runs the
 * loop (Redis main -> aeMain). One turn: wait for watch events (up to the
 * next cron tick), apply them to the caches and reconcilers, run the cron
 * (lease, queue cycle), then flush the turn's batched status writes and
 * Events and commit the store once. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/version.h"
#include "common/units.h"
#include "operator/server.h"

/* The daemon's only global: its server state. */
static struct server server;

static void on_signal(int sig) {
    (void)sig;
    server.stop = 1;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: aiq-operator [flags]\n"
            "  --kubeconfig PATH      kubeconfig (default: in-cluster, else $KUBECONFIG, ~/.kube/config)\n"
            "  --context NAME         kubeconfig context (default: current-context)\n"
            "  --db PATH              SQLite store (default aiq.db)\n"
            "  --metrics-addr H:P     /metrics, /healthz, /readyz (default 127.0.0.1:8080; port 0 = any; \"\" = off)\n"
            "  --log-level LEVEL      debug, info, warn, error (default info)\n"
            "  --cycle-ms N           queue cycle period in ms (default 1000; changes trigger one sooner)\n"
            "  --start-timeout DUR    admitted pods must all run within this (default 5m)\n"
            "  --grow-backoff DUR     an elastic job whose grown pods did not start keeps its growth\n"
            "                         off those nodes this long (default 10m)\n"
            "  --unschedulable-grace DUR  requeue an admitted gang whose pod kube-scheduler still\n"
            "                         calls Unschedulable this long after admission (default 5s)\n"
            "  --capacity-grace DUR   reject a job that cannot fit only after the nodes held still\n"
            "                         this long (default 60s; a Rejected job is re-examined when they change)\n"
            "  --node-lost-timeout DUR  a gang with a pod on a node deleted or NotReady this long is\n"
            "                         requeued, the attempt counted as a node failure (default 60s)\n"
            "  --ungrouped MODE       jobs in a namespace no Group claims: wait (default), run (no\n"
            "                         quota or budget, said in an Event) or GROUP (count them there)\n"
            "  --backoff DUR          requeue backoff base, doubling per attempt, cap 5m (default 10s)\n"
            "  --leader-elect         elect a leader with a Lease (only the leader acts)\n"
            "  --namespace NS         namespace of the Lease (default default)\n"
            "  --lease-name NAME      name of the Lease (default aiq-operator)\n"
            "  --identity ID          holder identity (default host-pid)\n"
            "  --journal-retention DUR  prune journal entries older than this (default 30d; 0 = keep)\n"
            "  --journal-max-mib N    prune the oldest journal entries while the database holds more\n"
            "                         (default 512; 0 = no cap); both checked hourly\n"
            "  --status-writes-per-s N  AIJob status writes per second at most (default 1000; 0 = no limit)\n"
            "  --cache-freeze-after DUR  keep a cached AIJob or pod nobody read for one to two\n"
            "                         times this as compact text, parsed back when read\n"
            "                         (default 2s; 0 = never; see docs/operator.md)\n"
            "  --gpu-mechanism M      how placed GPUs reach the container: device-plugin (default),\n"
            "                         hami or dra (see docs/admin-guide.md)\n"
            "  --api-remote           serve /journal and /queue to non-loopback clients too, to those\n"
            "                         whose Kubernetes bearer token the API server accepts\n"
            "                         (TokenReview) and whose RBAC allows it (SubjectAccessReview:\n"
            "                         list aijobs for /queue, get aijobs/journal for /journal);\n"
            "                         default: loopback only\n"
            "  --util-prometheus-url URL  read live GPU utilisation (DCGM exporter metrics) from this\n"
            "                         Prometheus; nodes without fresh samples are placed without it\n"
            "                         (see docs/admin-guide.md \"Live GPU utilisation\"; default off)\n"
            "  --util-interval DUR    how often to query it (default 15s)\n"
            "  --util-stale-after DUR a sample older than this is unknown (default 60s)\n"
            "  --util-node-label NAME the series label naming the node (default: node, else\n"
            "                         kubernetes_node, else Hostname)\n"
            "  --util-alnair-annotations  also read the GPU utilisation Alnair's profiler writes to\n"
            "                         node annotations (ai.centaurus.io/gpu-N), for nodes the\n"
            "                         Prometheus source has no fresh samples of\n"
            "  --aggregated-addr H:P  serve the aggregated API query.aiq.dev/v1alpha1 (the queue and\n"
            "                         the journal through kube-apiserver, an APIService) over TLS\n"
            "                         here; needs the three files below (default: off)\n"
            "  --aggregated-tls-cert PATH, --aggregated-tls-key PATH\n"
            "                         its serving certificate and key (PEM), valid for the\n"
            "                         Service's DNS name (aiq-operator.aiq-system.svc)\n"
            "  --requestheader-client-ca-file PATH  the CA of kube-apiserver's front-proxy client\n"
            "                         certificate (--proxy-client-cert-file); X-Remote-User and\n"
            "                         X-Remote-Group are believed only from a client it signed\n"
            "  --requestheader-allowed-names LIST  comma-separated CNs that client may have\n"
            "                         (default: any the CA signed)\n"
            "  --version              print the release and the git commit, and exit\n");
}

/* ---- flags ------------------------------------------------------------------ */

/* Flags read by a function of their own: each stores v in fl and returns
 * true, or returns false when v is not a value of its flag (the caller
 * says what was expected). */

static bool set_log_level(struct srv_flags *fl, const char *v) {
    return oplog_parse_level(v, &fl->log_level) == 0;
}

static bool set_cycle_ms(struct srv_flags *fl, const char *v) {
    char *end = NULL;
    fl->cycle_ms = strtol(v, &end, 10);
    return *v && !*end && fl->cycle_ms >= 10 && fl->cycle_ms <= 3600000;
}

static bool set_journal_max(struct srv_flags *fl, const char *v) {
    char *end = NULL;
    fl->journal_max_mib = strtol(v, &end, 10);
    return *v && !*end && fl->journal_max_mib >= 0 && fl->journal_max_mib <= 1048576;
}

/* 0 (no limit) or 1..1000000; a NaN fails the first comparison. */
static bool set_status_writes(struct srv_flags *fl, const char *v) {
    char *end = NULL;
    double w = fl->status_writes_per_s = strtod(v, &end);
    return *v && !*end && w >= 0 && w <= 1e6 && !(w > 0 && w < 1);
}

static bool set_gpu_mech(struct srv_flags *fl, const char *v) {
    return gpu_mech_parse(v, &fl->gpu_mech) == 0;
}

static bool set_ungrouped(struct srv_flags *fl, const char *v) {
    if (strcmp(v, "wait") != 0 && strcmp(v, "run") != 0 && !aiq_is_dns_subdomain(v))
        return false;
    fl->ungrouped = v;
    return true;
}

static bool set_util_node_label(struct srv_flags *fl, const char *v) {
    if (!*v)
        return false;
    fl->util_node_label = v;
    return true;
}

/* One flag: exactly one of str, on, secs and set says where its value
 * goes. A string is kept as given (it points into argv); a duration is
 * read by aiq_duration_parse. */
struct flag {
    const char *name;
    const char **str;
    bool *on;             /* a switch: takes no value */
    double *secs;
    bool (*set)(struct srv_flags *fl, const char *v);
    const char *expect;   /* with set: what a bad value's message asks for */
};

/* getopt_long names an ambiguous abbreviation's candidates in this
 * order. */
static const struct flag flags[] = {
    {"kubeconfig", .str = &server.flags.kubeconfig},
    {"context", .str = &server.flags.context},
    {"db", .str = &server.flags.db_path},
    {"metrics-addr", .str = &server.flags.metrics_addr},
    {"log-level", .set = set_log_level, .expect = "debug|info|warn|error"},
    {"cycle-ms", .set = set_cycle_ms, .expect = "10..3600000"},
    {"start-timeout", .secs = &server.flags.start_timeout_s},
    {"grow-backoff", .secs = &server.flags.grow_backoff_s},
    {"backoff", .secs = &server.flags.backoff_base_s},
    {"unschedulable-grace", .secs = &server.flags.unsched_grace_s},
    {"capacity-grace", .secs = &server.flags.capacity_grace_s},
    {"node-lost-timeout", .secs = &server.flags.node_lost_s},
    {"ungrouped", .set = set_ungrouped, .expect = "wait, run or a Group's name"},
    {"journal-max-mib", .set = set_journal_max, .expect = "0 (no cap) or 1..1048576"},
    {"api-remote", .on = &server.flags.api_remote},
    {"aggregated-addr", .str = &server.flags.aggr.addr},
    {"aggregated-tls-cert", .str = &server.flags.aggr.cert},
    {"aggregated-tls-key", .str = &server.flags.aggr.key},
    {"requestheader-client-ca-file", .str = &server.flags.aggr.client_ca},
    {"requestheader-allowed-names", .str = &server.flags.aggr.allowed_names},
    {"leader-elect", .on = &server.flags.leader_elect},
    {"namespace", .str = &server.flags.lease_ns},
    {"lease-name", .str = &server.flags.lease_name},
    {"identity", .str = &server.flags.identity},
    {"journal-retention", .secs = &server.flags.journal_retention_s},
    {"status-writes-per-s", .set = set_status_writes, .expect = "0 (no limit) or 1..1000000"},
    {"cache-freeze-after", .secs = &server.flags.freeze_after_s},
    {"gpu-mechanism", .set = set_gpu_mech, .expect = "device-plugin|hami|dra"},
    {"util-prometheus-url", .str = &server.flags.util_url},
    {"util-interval", .secs = &server.flags.util_interval_s},
    {"util-stale-after", .secs = &server.flags.util_stale_s},
    {"util-node-label", .set = set_util_node_label, .expect = "a label name"},
    {"util-alnair-annotations", .on = &server.flags.util_alnair},
};
#define NFLAGS (sizeof flags / sizeof flags[0])

/* getopt_long's values: flags[i] is OPT_FLAG0 + i, past every character
 * it may return itself ('?' for an unknown flag). */
enum { OPT_HELP = 1, OPT_VERSION, OPT_FLAG0 = 256 };

/* Stores v as flag f's value. Returns 0, or 2 after saying on stderr why
 * v is not one. */
static int flag_apply(const struct flag *f, const char *v) {
    if (f->on) {
        *f->on = true;
    } else if (f->str) {
        *f->str = v;
    } else if (f->secs) {
        aiq_err e;
        aiq_err_clear(&e);
        if (aiq_duration_parse(v, f->secs, &e) != AIQ_OK) {
            fprintf(stderr, "aiq-operator: --%s: %s\n", f->name, e.message);
            return 2;
        }
    } else if (!f->set(&server.flags, v)) {
        fprintf(stderr, "aiq-operator: --%s: expected %s, got \"%s\"\n", f->name, f->expect, v);
        return 2;
    }
    return 0;
}

/* Reads argv into server.flags. Returns -1 to go on, or the status to
 * exit with: 0 after --help or --version, 2 after a message on stderr. */
static int parse_flags(int argc, char **argv) {
    static struct option opts[NFLAGS + 3];
    for (size_t i = 0; i < NFLAGS; i++)
        opts[i] = (struct option){flags[i].name, flags[i].on ? no_argument : required_argument,
                                  NULL, OPT_FLAG0 + (int)i};
    opts[NFLAGS] = (struct option){"help", no_argument, NULL, OPT_HELP};
    opts[NFLAGS + 1] = (struct option){"version", no_argument, NULL, OPT_VERSION};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == OPT_HELP) {
            usage(stdout);
            return 0;
        }
        if (c == OPT_VERSION) {
            aiq_print_version("aiq-operator");
            return 0;
        }
        if (c < OPT_FLAG0 || c >= OPT_FLAG0 + (int)NFLAGS) {
            usage(stderr);
            return 2;
        }
        if (flag_apply(&flags[c - OPT_FLAG0], optarg) != 0)
            return 2;
    }
    const struct opaggr_opts *ag = &server.flags.aggr;
    if (!ag->addr && (ag->cert || ag->key || ag->client_ca || ag->allowed_names)) {
        fprintf(stderr, "aiq-operator: --aggregated-tls-cert, --aggregated-tls-key and "
                        "--requestheader-* need --aggregated-addr\n");
        return 2;
    }
    if (optind < argc) {
        fprintf(stderr, "aiq-operator: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    return -1;
}

/* SIGINT and SIGTERM stop the loop after its turn; a closed peer's
 * SIGPIPE is ignored (curl and libmicrohttpd see EPIPE instead). */
static void catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    /* None of these fails with a valid signal number and handler. */
    (void)sigaction(SIGINT, &sa, NULL);
    (void)sigaction(SIGTERM, &sa, NULL);
    (void)signal(SIGPIPE, SIG_IGN);
}

int main(int argc, char **argv) {
    srv_init(&server);
    int status = parse_flags(argc, argv);
    if (status >= 0)
        return status;
    catch_signals();

    aiq_err err;
    aiq_err_clear(&err);
    if (srv_start(&server, &err) != AIQ_OK) {
        OPLOG(&server.log, OPLOG_ERROR, "start_failed", NULL, NULL, "rc=%s field=%s msg=\"%s\"",
              aiq_strerror(err.code), err.field, err.message);
        srv_deinit(&server);
        return 1;
    }

    while (!server.stop) {
        if (!store_in_transaction(server.db)) {
            aiq_err_clear(&err);
            /* Writes outside a turn's transaction would commit one by
             * one: the turn's failure is what matters, kept in health. */
            if (store_begin(server.db, &err) != AIQ_OK)
                srv_store_failed(&server, "begin", NULL, &err);
        }
        /* Wait for the first event at most until the next cron tick. */
        long wait_ms = srv_wait_ms(&server, srv_now());
        struct kube_event *ev = NULL;
        if (kube_evq_pop(server.evq, wait_ms, &ev) == AIQ_OK) {
            srv_dispatch(&server, ev);
            kube_event_free(ev);
            /* Drain what is queued (bounded, so the cron still runs). */
            for (int n = 0; n < 5000 && kube_evq_pop(server.evq, 0, &ev) == AIQ_OK; n++) {
                srv_dispatch(&server, ev);
                kube_event_free(ev);
            }
        }
        srv_cron(&server, srv_now());
        /* Record first, publish second: what this turn decided (attempt
         * finishes, usage, journal) is committed before the status writes
         * tell the API server, so a kill in between cannot leave a status
         * (say Failed, attempt 2) whose attempt the store never counted.
         * A turn that could not be recorded publishes nothing
         * (store_guard.c). */
        if (!srv_store_settle(&server))
            continue;
        aiq_err_clear(&err);
        if (store_begin(server.db, &err) != AIQ_OK) {
            srv_store_failed(&server, "begin", NULL, &err);
            continue;
        }
        srv_flush(&server);
        (void)srv_store_settle(&server); /* a failure is kept in the health */
    }
    OPLOG(&server.log, OPLOG_INFO, "stopping", NULL, NULL, "cycles=%lld exit_code=%d",
          (long long)server.ncycles, server.exit_code);
    srv_deinit(&server);
    return server.exit_code;
}
