/* cli_explain.h -- `kubectl aiq explain JOB` (sprio and more): a job's
 * score term by term, its level and why, quota and budget, headroom per
 * resource and what blocks it, ETA, preemption, and its recent journal
 * entries from the operator. */
#ifndef AIQ_TOOLS_CLI_EXPLAIN_H
#define AIQ_TOOLS_CLI_EXPLAIN_H

#include "tools/cli_args.h"
#include "tools/cli_snapshot.h"

/* Explains the job o->args[1] (in o->ns unless -A) of w as o asks.
 * Returns the exit status: 0, or 1 after printing the error. */
int cli_explain_cmd(const struct cli_opts *o, struct cli_snapshot *w);

#endif
