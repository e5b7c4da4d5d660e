/* sim_int.h -- helpers shared by the simulated cluster's files (sim.c,
 * sim_nodes.c, sim_sched.c, sim_kubelet.c). The simulator talks to the
 * server only through the in-process object API of apiserver.h. */
#ifndef AIQ_SIM_INT_H
#define AIQ_SIM_INT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "test/apiserver/apiserver.h"

#define SIM__GPU "nvidia.com/gpu"
#define SIM__ANN_DURATION "sim.aiq.dev/duration"
#define SIM__ANN_EXIT "sim.aiq.dev/exit-code"
/* How long containers take to exit after SIGTERM when their pod is
 * deleted (default 0), capped by the grace period (then SIGKILL). */
#define SIM__ANN_STOP "sim.aiq.dev/stop-duration"
#define SIM__DEFAULT_DURATION 30.0

/* Requested resources of one pod or free/allocatable ones of a node. */
struct sim__res {
    int64_t cpu_m;   /* millicores */
    int64_t mem_b;   /* bytes */
    int64_t gpu;     /* nvidia.com/gpu */
    int64_t pods;    /* pod slots */
};

/* Borrowed obj[k], created as an empty object when absent. */
json_object *sim__child(json_object *o, const char *k);

/* The effective requests of a pod as the scheduler counts them:
 * per resource, sum over containers of requests (limits when a request
 * is absent), then max with each init container; pods = 1. */
void sim__pod_requests(json_object *pod, struct sim__res *r);
/* A node's status.allocatable (capacity when allocatable is absent). */
void sim__node_allocatable(json_object *node, struct sim__res *r);

/* Phase Succeeded or Failed. */
bool sim__pod_terminal(json_object *pod);
/* Non-empty spec.schedulingGates. */
bool sim__pod_gated(json_object *pod);

/* Sets condition `type` in status.conditions (replacing one of that
 * type; lastTransitionTime kept when the status value is unchanged). */
void sim__set_condition(json_object *pod, const char *type, const char *status,
                        const char *reason, const char *message, const char *now);
/* Borrowed condition of that type, or NULL. */
json_object *sim__condition(json_object *pod, const char *type);

/* RFC 3339 of now (UTC); with millis, a ".123" fraction is kept (used for
 * startTime so scaled run times stay exact). */
void sim__time(double now, bool millis, char *buf, size_t cap);

/* One scheduler pass over pods (array, borrowed) onto nodes; returns the
 * number of pods bound. */
int sim__schedule(apisrv *s, double now, json_object *pods, json_object *nodes);
/* True when the simulator thread (simloop.c) has been asked to stop; false
 * when none runs. Long ticks (thousands of pods to bind or start) check it
 * between pods so stopping the server does not wait for the whole tick. */
bool sim__stop_requested(apisrv *s);
/* One kubelet pass over the bound pods. */
void sim__kubelet(apisrv *s, double now, double time_scale, json_object *pods,
                  json_object *nodes);

#endif
