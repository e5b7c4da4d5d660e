/* cli_queue.h -- `kubectl aiq queue [-A] [--level L] [--user U]` (squeue):
 * the waiting and held jobs level by level, with position, score, wait,
 * ETA and why each one waits; live from the operator's last cycle when it
 * answers, else the statuses as last written. */
#ifndef AIQ_TOOLS_CLI_QUEUE_H
#define AIQ_TOOLS_CLI_QUEUE_H

#include "tools/cli_args.h"
#include "tools/cli_snapshot.h"

/* Prints the queue of w as o asks (table, or -o json|yaml). Returns the
 * exit status: 0, or 1 after printing the error. */
int cli_queue_cmd(const struct cli_opts *o, struct cli_snapshot *w);

#endif
