/* cli_snapshot.h -- what `kubectl aiq` reads from the API for one command:
 * Groups, UserQuotas, QueuePolicies, AIJobs and Nodes, decoded as the
 * operator decodes them, the jobs' factor vectors rebuilt (cli_rank.h)
 * and the active policy compiled; plus the small JSON readers the
 * commands share. */
#ifndef AIQ_TOOLS_CLI_SNAPSHOT_H
#define AIQ_TOOLS_CLI_SNAPSHOT_H

#include <stdbool.h>

#include <json-c/json.h>

#include "common/aiq_err.h"
#include "common/model.h"
#include "operator/kube_http.h"
#include "policy/policy_adapter.h"
#include "tools/cli_rank.h"

#define CLI_PATH_CAP 1024    /* an API path */
#define CLI_MAX_ITEMS 20000  /* objects of one kind read at the most */

/* Everything read from the API for one command. */
struct cli_snapshot {
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

/* Reads groups, user quotas, nodes, policies and AIJobs (in ns, or every
 * namespace when ns is NULL) into *w. Lists other than AIJobs that the
 * user may not read are left empty with a warning (UserQuotas fall back
 * to user_ns; so do AIJobs of every namespace when jobs_fallback is set).
 * Returns 0, or 1 after printing the error (*w is freed and zeroed). */
int cli_snapshot_load(struct kube_client *kc, const char *ns, const char *user_ns,
                      bool jobs_fallback, struct cli_snapshot *w);

/* Frees what *w holds and zeroes it; a zeroed *w is a no-op. */
void cli_snapshot_free(struct cli_snapshot *w);

/* Index of a level name in the active policy (unknown names after). */
int cli_level_rank(const struct cli_snapshot *w, const char *name);

/* The active policy's name, or a note naming the built-in default. */
const char *cli_policy_name(const struct cli_snapshot *w);

/* The "items" array of a list (borrowed), or NULL. */
json_object *cli_items_of(json_object *list);

/* The number at key k of o (a JSON number, or a string that is all a
 * number, like "8" from quantities), else dflt. */
double cli_jnum(json_object *o, const char *k, double dflt);

#endif
