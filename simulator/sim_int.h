/* sim_int.h -- symbols shared between the simulator's files (not API). */
#ifndef AIQ_SIM_INT_H
#define AIQ_SIM_INT_H

#include <stdbool.h>

#include "simulator/sim.h"

/* The journal's reason text for a queue reason, as the operator writes it
 * ("WaitingForGPUs", "Backfilled", ...), and back (-1 when unknown). */
const char *sim__reason_str(int reason, bool backfilled);
int sim__reason_parse(const char *s, bool *backfilled);

/* The journal's action text ("admit", "wait", "reject") and back (0 =
 * unknown). */
const char *sim__action_str(int decision);
int sim__action_parse(const char *s);

#endif
