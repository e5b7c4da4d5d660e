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

/* Parses a duration flag or exits with a message naming it. */
static double dur_flag(const char *name, const char *v) {
    double secs = 0;
    aiq_err e;
    aiq_err_clear(&e);
    if (aiq_duration_parse(v, &secs, &e) != AIQ_OK) {
        fprintf(stderr, "aiq-operator: --%s: %s\n", name, e.message);
        exit(2);
    }
    return secs;
}

int main(int argc, char **argv) {
    enum { F_KUBECONFIG = 1, F_CONTEXT, F_DB, F_METRICS, F_LOG, F_CYCLE, F_START,
           F_BACKOFF, F_LEADER, F_NS, F_LEASE, F_ID, F_RETENTION, F_WRITES, F_GPU_MECH, F_UNSCHED,
           F_CAPGRACE, F_NODELOST, F_UNGROUPED, F_JMAX, F_APIREMOTE, F_UTIL_URL, F_UTIL_EVERY,
           F_UTIL_STALE, F_UTIL_LABEL, F_UTIL_ALNAIR, F_AGGR_ADDR, F_AGGR_CERT, F_AGGR_KEY, F_RH_CA,
           F_RH_NAMES, F_GROWBACK, F_HELP, F_VERSION };
    static const struct option opts[] = {
        {"kubeconfig", required_argument, 0, F_KUBECONFIG},
        {"context", required_argument, 0, F_CONTEXT},
        {"db", required_argument, 0, F_DB},
        {"metrics-addr", required_argument, 0, F_METRICS},
        {"log-level", required_argument, 0, F_LOG},
        {"cycle-ms", required_argument, 0, F_CYCLE},
        {"start-timeout", required_argument, 0, F_START},
        {"grow-backoff", required_argument, 0, F_GROWBACK},
        {"backoff", required_argument, 0, F_BACKOFF},
        {"unschedulable-grace", required_argument, 0, F_UNSCHED},
        {"capacity-grace", required_argument, 0, F_CAPGRACE},
        {"node-lost-timeout", required_argument, 0, F_NODELOST},
        {"ungrouped", required_argument, 0, F_UNGROUPED},
        {"journal-max-mib", required_argument, 0, F_JMAX},
        {"api-remote", no_argument, 0, F_APIREMOTE},
        {"aggregated-addr", required_argument, 0, F_AGGR_ADDR},
        {"aggregated-tls-cert", required_argument, 0, F_AGGR_CERT},
        {"aggregated-tls-key", required_argument, 0, F_AGGR_KEY},
        {"requestheader-client-ca-file", required_argument, 0, F_RH_CA},
        {"requestheader-allowed-names", required_argument, 0, F_RH_NAMES},
        {"leader-elect", no_argument, 0, F_LEADER},
        {"namespace", required_argument, 0, F_NS},
        {"lease-name", required_argument, 0, F_LEASE},
        {"identity", required_argument, 0, F_ID},
        {"journal-retention", required_argument, 0, F_RETENTION},
        {"status-writes-per-s", required_argument, 0, F_WRITES},
        {"gpu-mechanism", required_argument, 0, F_GPU_MECH},
        {"util-prometheus-url", required_argument, 0, F_UTIL_URL},
        {"util-interval", required_argument, 0, F_UTIL_EVERY},
        {"util-stale-after", required_argument, 0, F_UTIL_STALE},
        {"util-node-label", required_argument, 0, F_UTIL_LABEL},
        {"util-alnair-annotations", no_argument, 0, F_UTIL_ALNAIR},
        {"help", no_argument, 0, F_HELP},
        {"version", no_argument, 0, F_VERSION},
        {0, 0, 0, 0}};
    srv_init(&server);
    struct srv_flags *fl = &server.flags;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case F_KUBECONFIG: fl->kubeconfig = optarg; break;
        case F_CONTEXT: fl->context = optarg; break;
        case F_DB: fl->db_path = optarg; break;
        case F_METRICS: fl->metrics_addr = optarg; break;
        case F_LOG:
            if (oplog_parse_level(optarg, &fl->log_level) != 0) {
                fprintf(stderr, "aiq-operator: --log-level: expected debug|info|warn|error, got \"%s\"\n",
                        optarg);
                return 2;
            }
            break;
        case F_CYCLE:
            fl->cycle_ms = strtol(optarg, &end, 10);
            if (!*optarg || *end || fl->cycle_ms < 10 || fl->cycle_ms > 3600000) {
                fprintf(stderr, "aiq-operator: --cycle-ms: expected 10..3600000, got \"%s\"\n", optarg);
                return 2;
            }
            break;
        case F_START: fl->start_timeout_s = dur_flag("start-timeout", optarg); break;
        case F_GROWBACK: fl->grow_backoff_s = dur_flag("grow-backoff", optarg); break;
        case F_BACKOFF: fl->backoff_base_s = dur_flag("backoff", optarg); break;
        case F_UNSCHED: fl->unsched_grace_s = dur_flag("unschedulable-grace", optarg); break;
        case F_CAPGRACE: fl->capacity_grace_s = dur_flag("capacity-grace", optarg); break;
        case F_NODELOST: fl->node_lost_s = dur_flag("node-lost-timeout", optarg); break;
        case F_APIREMOTE: fl->api_remote = true; break;
        case F_UTIL_URL: fl->util_url = optarg; break;
        case F_UTIL_ALNAIR: fl->util_alnair = true; break;
        case F_UTIL_EVERY: fl->util_interval_s = dur_flag("util-interval", optarg); break;
        case F_UTIL_STALE: fl->util_stale_s = dur_flag("util-stale-after", optarg); break;
        case F_UTIL_LABEL:
            if (!*optarg) {
                fprintf(stderr, "aiq-operator: --util-node-label: expected a label name, got \"\"\n");
                return 2;
            }
            fl->util_node_label = optarg;
            break;
        case F_AGGR_ADDR: fl->aggr.addr = optarg; break;
        case F_AGGR_CERT: fl->aggr.cert = optarg; break;
        case F_AGGR_KEY: fl->aggr.key = optarg; break;
        case F_RH_CA: fl->aggr.client_ca = optarg; break;
        case F_RH_NAMES: fl->aggr.allowed_names = optarg; break;
        case F_JMAX:
            fl->journal_max_mib = strtol(optarg, &end, 10);
            if (!*optarg || *end || fl->journal_max_mib < 0 || fl->journal_max_mib > 1048576) {
                fprintf(stderr, "aiq-operator: --journal-max-mib: expected 0 (no cap) or 1..1048576, "
                        "got \"%s\"\n", optarg);
                return 2;
            }
            break;
        case F_UNGROUPED:
            if (strcmp(optarg, "wait") != 0 && strcmp(optarg, "run") != 0 &&
                !aiq_is_dns_subdomain(optarg)) {
                fprintf(stderr, "aiq-operator: --ungrouped: expected wait, run or a Group's name, "
                        "got \"%s\"\n", optarg);
                return 2;
            }
            fl->ungrouped = optarg;
            break;
        case F_LEADER: fl->leader_elect = true; break;
        case F_NS: fl->lease_ns = optarg; break;
        case F_LEASE: fl->lease_name = optarg; break;
        case F_ID: fl->identity = optarg; break;
        case F_RETENTION: fl->journal_retention_s = dur_flag("journal-retention", optarg); break;
        case F_WRITES:
            fl->status_writes_per_s = strtod(optarg, &end);
            if (!*optarg || *end || !(fl->status_writes_per_s >= 0) ||
                fl->status_writes_per_s > 1e6 || (fl->status_writes_per_s > 0 && fl->status_writes_per_s < 1)) {
                fprintf(stderr, "aiq-operator: --status-writes-per-s: expected 0 (no limit) or 1..1000000, "
                        "got \"%s\"\n", optarg);
                return 2;
            }
            break;
        case F_GPU_MECH:
            if (gpu_mech_parse(optarg, &fl->gpu_mech) != 0) {
                fprintf(stderr, "aiq-operator: --gpu-mechanism: expected device-plugin|hami|dra, got \"%s\"\n",
                        optarg);
                return 2;
            }
            break;
        case F_HELP: usage(stdout); return 0;
        case F_VERSION: aiq_print_version("aiq-operator"); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!fl->aggr.addr && (fl->aggr.cert || fl->aggr.key || fl->aggr.client_ca ||
                           fl->aggr.allowed_names)) {
        fprintf(stderr, "aiq-operator: --aggregated-tls-cert, --aggregated-tls-key and "
                        "--requestheader-* need --aggregated-addr\n");
        return 2;
    }
    if (optind < argc) {
        fprintf(stderr, "aiq-operator: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

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
        long wait_ms = server.flags.cycle_ms < 200 ? server.flags.cycle_ms : 200;
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
