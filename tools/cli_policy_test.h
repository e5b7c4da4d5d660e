/* cli_policy_test.h -- `kubectl aiq policy test FILE`: compile a
 * QueuePolicy locally, as the operator would, and show how the current
 * queue would reorder under it (with a compile error's caret, and what
 * `aiq-sim tune` measured when the policy carries its note). */
#ifndef AIQ_TOOLS_CLI_POLICY_TEST_H
#define AIQ_TOOLS_CLI_POLICY_TEST_H

#include "tools/cli_args.h"
#include "tools/cli_snapshot.h"

/* Tests the first QueuePolicy of file against the waiting jobs of w.
 * Returns the exit status: 0, or 1 after printing the error. */
int cli_policy_test_cmd(const struct cli_opts *o, struct cli_snapshot *w, const char *file);

#endif
