/* cli_operator.h -- `kubectl aiq` asking the operator itself: through the
 * API server (the aggregated API query.aiq.dev, the default) or at
 * --operator-url (a port-forward, or another host with the kubeconfig's
 * credentials), with a diagnosis when the APIService is missing or not
 * Available; and the live queue it answers (GET /queue). */
#ifndef AIQ_TOOLS_CLI_OPERATOR_H
#define AIQ_TOOLS_CLI_OPERATOR_H

#include <json-c/json.h>

#include "common/aiq_err.h"
#include "tools/cli_args.h"
#include "tools/cli_rank.h"

/* GETs from the operator: api_path (under /apis/query.aiq.dev/v1alpha1)
 * through the API server with the kubeconfig's credentials, or http_path
 * from --operator-url when it is set. *out is the answer (a new
 * reference), also for an error status that carries a JSON body. */
aiq_rc cli_operator_get(const struct cli_opts *o, const char *api_path, const char *http_path,
                        json_object **out, aiq_err *e);

/* Where the operator is asked, for messages (borrowed or static). */
const char *cli_operator_where(const struct cli_opts *o);

/* The live queue from the operator (GET /queue, see docs/operator.md
 * "Status writes"): the waiting jobs of ns (NULL: all), or the one job
 * name. A new reference, or NULL with e set when the operator cannot
 * answer. */
json_object *cli_live_queue(const struct cli_opts *o, const char *ns, const char *name,
                            aiq_err *e);

/* Takes a live item's (borrowed) position, level, score, estimate,
 * reason and message into j. */
void cli_live_apply(struct cli_job *j, json_object *it);

#endif
