/* cli_usage.h -- `kubectl aiq usage [--group G] [--user U]` (sshare):
 * per group and user, quota, use, GPU-hour budget and fair-share factor
 * as the objects' statuses show them. */
#ifndef AIQ_TOOLS_CLI_USAGE_H
#define AIQ_TOOLS_CLI_USAGE_H

#include "tools/cli_args.h"
#include "tools/cli_snapshot.h"

/* Prints the usage rows of w as o asks. Returns the exit status: 0, or
 * 1 after printing the error. */
int cli_usage_cmd(const struct cli_opts *o, struct cli_snapshot *w);

#endif
