/* cli_rerun.h -- `kubectl aiq rerun JOB`: a finished job (Succeeded,
 * Failed, Rejected) runs again as a new run: the old object is deleted
 * (its history stays in the operator's store, under its uid), its pods
 * are waited out, and it is created again with the same spec. */
#ifndef AIQ_TOOLS_CLI_RERUN_H
#define AIQ_TOOLS_CLI_RERUN_H

#include "operator/kube_http.h"
#include "tools/cli_args.h"

/* Reruns the job o->args[1] in o->ns through kc. A job still active is
 * refused. Returns the exit status: 0, or 1 after printing the error. */
int cli_rerun_cmd(const struct cli_opts *o, struct kube_client *kc);

#endif
