/* capgrace.h -- capacity that comes and goes (issue 19): "can never fit"
 * is judged only once the cluster's nodes have held still for
 * --capacity-grace, and a job Rejected because it could not fit is
 * examined again when the nodes change.
 *
 * The cycle hands every node list it builds to capgrace_observe, which
 * keeps a fingerprint of the configured capacity (node names, domains,
 * GPU counts, GPU memory, cpu and memory; not what is in use), and asks
 * capgrace_hold before rejecting a job for a capacity reason. */
#ifndef AIQ_OPERATOR_CAPGRACE_H
#define AIQ_OPERATOR_CAPGRACE_H

#include <stdbool.h>
#include <stddef.h>

#include "queue/queue.h"

struct server;

/* Takes this cycle's nodes (n entries). When the configured capacity
 * differs from the last cycle's, remembers when, and sends every job
 * Rejected for a capacity reason back to Pending (its pods are made
 * again and it is examined at the next cycle); logged, with an Event. */
void capgrace_observe(struct server *s, const struct q_node *nodes, int n, double now);

/* Tells whether a rejection for reason (a q_reason) must wait: it is a
 * capacity reason and the nodes changed less than --capacity-grace ago.
 * Then msg (cap bytes, holding the queue's message) gets what happens
 * next appended. */
bool capgrace_hold(struct server *s, int reason, double now, char *msg, size_t cap);

#endif
