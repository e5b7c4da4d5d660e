/* cli_nodes.h -- `kubectl aiq nodes` (sinfo): every node's GPU facts as
 * the operator reads them (operator/nodefacts.h), the GPUs aiq's and other
 * pods hold, live GPU utilisation from the operator (cli_util.h), and why
 * a node is left out. */
#ifndef AIQ_TOOLS_CLI_NODES_H
#define AIQ_TOOLS_CLI_NODES_H

#include "operator/kube_http.h"
#include "tools/cli_args.h"

/* Lists the nodes through kc (the API server) as o asks. Returns the
 * exit status: 0, or 1 after printing the error. */
int cli_nodes_cmd(const struct cli_opts *o, struct kube_client *kc);

#endif
