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
 * One file per command: cli_queue.c, cli_explain.c, cli_usage.c,
 * cli_policy_test.c, cli_nodes.c, cli_rerun.c.
 *
 * Everything comes from the objects the operator writes (AIJob, Group,
 * UserQuota and QueuePolicy status, read by cli_snapshot.c); the live
 * queue and the decision journal come from the operator itself when it
 * is reachable (cli_operator.c). Output is a kubectl-style table (colours
 * only on a terminal, and never with NO_COLOR), or -o json / -o yaml for
 * scripts (cli_out.c). Flags are cli_args.c; factor vectors and the
 * what-if ranking are in cli_rank.c, tables in cli_table.c. This file
 * is main: flags, kubeconfig, client, then the command. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/aiq_err.h"
#include "common/model.h"
#include "operator/kube_http.h"
#include "operator/kubeconfig.h"
#include "tools/cli_args.h"
#include "tools/cli_explain.h"
#include "tools/cli_nodes.h"
#include "tools/cli_out.h"
#include "tools/cli_policy_test.h"
#include "tools/cli_queue.h"
#include "tools/cli_rerun.h"
#include "tools/cli_snapshot.h"
#include "tools/cli_usage.h"

int main(int argc, char **argv) {
    struct cli_opts o;
    struct kube_config *cfg = NULL;
    struct kube_client *kc = NULL;
    struct cli_snapshot w;
    aiq_err e;
    int rc = 1;
    char nsbuf[AIQ_MAX_NAME + 1];
    memset(&o, 0, sizeof o);
    memset(&w, 0, sizeof w);
    o.color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
    if (cli_parse_flags(argc, argv, &o))
        return 1;
    if (o.nargs == 0) {
        cli_usage(stderr);
        return 1;
    }
    if (o.color)
        cli_colours_on();
    const char *cmd = o.args[0];
    bool is_policy = strcmp(cmd, "policy") == 0;
    if (strcmp(cmd, "queue") != 0 && strcmp(cmd, "explain") != 0 && strcmp(cmd, "usage") != 0 &&
        strcmp(cmd, "nodes") != 0 && strcmp(cmd, "rerun") != 0 && !is_policy)
        return cli_fail("unknown command \"%s\" (queue, explain, usage, nodes, rerun, policy test)",
                        cmd);
    if (is_policy && (o.nargs != 3 || strcmp(o.args[1], "test") != 0))
        return cli_fail("usage: kubectl aiq policy test FILE");
    if (strcmp(cmd, "rerun") == 0 && o.nargs != 2)
        return cli_fail("usage: kubectl aiq rerun JOB");
    aiq_err_clear(&e);
    if (kube_config_auto(o.kubeconfig, o.context, NULL, &cfg, &e) != AIQ_OK) {
        cli_print_err("reading the kubeconfig", &e);
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
        cli_print_err("connecting", &e);
        goto out;
    }
    o.kc = kc;
    if (strcmp(cmd, "nodes") == 0 || strcmp(cmd, "rerun") == 0) {
        rc = cmd[0] == 'n' ? cli_nodes_cmd(&o, kc) : cli_rerun_cmd(&o, kc);
        goto out;
    }
    /* policy test and usage look at the whole queue; queue and explain at
     * the namespace unless -A. */
    bool every_ns = o.all_ns || is_policy || strcmp(cmd, "usage") == 0;
    if (cli_snapshot_load(kc, every_ns ? NULL : o.ns, o.ns, !o.all_ns, &w))
        goto out;
    if (strcmp(cmd, "queue") == 0)
        rc = cli_queue_cmd(&o, &w);
    else if (strcmp(cmd, "explain") == 0)
        rc = cli_explain_cmd(&o, &w);
    else if (strcmp(cmd, "usage") == 0)
        rc = cli_usage_cmd(&o, &w);
    else
        rc = cli_policy_test_cmd(&o, &w, o.args[2]);
out:
    cli_snapshot_free(&w);
    kube_client_free(kc);
    kube_config_free(cfg);
    return rc ? rc : cli_out_status();
}
