/* sim_int.h -- symbols shared between the simulator's files (not API). */
#ifndef AIQ_SIM_INT_H
#define AIQ_SIM_INT_H

#include <stdbool.h>

#include "queue/queue.h"
#include "simulator/sim.h"

/* The journal's reason text for a queue reason, as the operator writes it
 * ("WaitingForGPUs", "Backfilled", ...), and back (-1 when unknown). */
const char *sim__reason_str(int reason, bool backfilled);
int sim__reason_parse(const char *s, bool *backfilled);

/* Fills the queue's node q from the trace's node s, nodes[k] of the
 * config (q's strings borrow s's). AIQ_EINVAL naming the node when its
 * GPU count is outside 0..Q_MAX_GPUS. */
aiq_rc sim__q_node(const struct sim_node *s, int k, struct q_node *q, aiq_err *err);

/* The journal's action text ("admit", "wait", "reject") and back (0 =
 * unknown). */
const char *sim__action_str(int decision);
int sim__action_parse(const char *s);

/* FGD's target workload for inflate: the trace's replica shapes (GPUs,
 * MiB or fraction, cpu, memory) weighted by the GPUs their replicas ask
 * for (a MiB share over mean_mib, the cluster's mean GPU memory; a
 * CPU-only shape weighs 0), the Q_MAX_CLASSES heaviest (ties by shape)
 * into wl[Q_MAX_CLASSES], *nwl of them. Returns AIQ_OK, or AIQ_ENOMEM
 * with *nwl 0. */
aiq_rc sim__workload(const struct sim_trace *tr, double mean_mib, struct q_task_class *wl,
                     int *nwl, aiq_err *err);

#endif
