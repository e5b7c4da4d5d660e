/* crashpoint.h -- named crash points for the crash-safety tests.
 *
 * With the environment variable AIQ_CRASH_AT=<name>:<n> set, the n-th call
 * of crashpoint("<name>") (counted across threads, n >= 1) ends the process
 * at once with _exit(137), the status a SIGKILL'd process reports: no
 * atexit handlers, no SQLite close, no flush. Without the variable, or for
 * any other name, crashpoint() does nothing and costs one comparison.
 *
 * Points in the operator:
 *   pod_created     a gated pod was created, the AIJob status not yet written
 *   admit_recorded  admission is in the store and journal, status not written
 *   release_mid     one pod of a gang lost its gate, others may not have
 *   retry_pod_created     pod_created, for a pod recreated after a requeue
 *   retry_admit_recorded  admit_recorded, in a cycle that admitted a
 *                         requeued job (attempt 2 or later)
 *
 * test/e2e/crash_restart.sh drives them. */
#ifndef AIQ_OPERATOR_CRASHPOINT_H
#define AIQ_OPERATOR_CRASHPOINT_H

/* Counts a pass through the point `name` (a static string, borrowed) and
 * exits the process with status 137 when AIQ_CRASH_AT names this point and
 * this pass is the requested one. Thread-safe. Returns normally otherwise. */
void crashpoint(const char *name);

#endif
