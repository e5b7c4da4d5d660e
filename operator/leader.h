/* leader.h -- leader election with a coordination.k8s.io/v1 Lease, in the
 * manner of client-go's leaderelection: only the holder of a live lease
 * runs queue cycles and writes.
 *
 * Timing (defaults): leaseDurationSeconds 15, renew every 5 s, and a
 * leader that could not renew for 10 s (the renew deadline) stops acting
 * as leader before anybody else may take the lease over. Expiry of another
 * holder's lease is judged by OUR clock: the lease counts as expired when
 * its record (holder + renewTime) has not changed for leaseDuration since
 * we first saw it, so clock skew between replicas does not matter. Writes
 * carry metadata.resourceVersion, so two candidates racing for an expired
 * lease cannot both win (the loser gets 409). */
#ifndef AIQ_OPERATOR_LEADER_H
#define AIQ_OPERATOR_LEADER_H

#include <json-c/json.h>
#include <stdbool.h>

#include "common/aiq_err.h"
#include "common/model.h"

struct kube_client;

struct leader {
    char id[128];                /* holderIdentity: host-pid by default */
    char ns[AIQ_MAX_NAME + 1];   /* lease namespace */
    char name[AIQ_MAX_NAME + 1]; /* lease name */
    double duration_s;           /* 15 */
    double renew_every_s;        /* 5 */
    double renew_deadline_s;     /* 10 */
    bool is_leader;
    double last_renew;           /* our clock, last successful write */
    char observed[320];          /* holder|renewTime last seen */
    double observed_at;          /* our clock when `observed` changed */
};

/* Initialises l for identity id (NULL: "<hostname>-<pid>") and the lease
 * ns/name (NULL: "default" / "aiq-operator") with the default timing.
 * Not leader. */
void leader_init(struct leader *l, const char *id, const char *ns,
                 const char *name);

/* The pure step: given the lease as read (NULL when it does not exist) at
 * time now, decides what to write. Returns a new Lease object to write
 * (caller owns; *create tells POST (1) from PUT (0)), or NULL when the
 * lease is held by someone else and still live (then l->is_leader becomes
 * false). Updates l's observation of the record. */
json_object *leader_next(struct leader *l, json_object *lease, double now,
                         int *create);

/* Records the outcome of the write leader_next asked for: ok means the
 * server accepted it (we hold the lease until now + duration). A failed
 * write keeps leadership only until the renew deadline passes. */
void leader_written(struct leader *l, bool ok, double now);

/* One election round over HTTP: GET the lease, leader_next, POST/PUT,
 * leader_written. Returns AIQ_OK when the round completed (leader or
 * not; see l->is_leader), or the client's error (then leadership is kept
 * only until the renew deadline). A 409 on the write is a lost race, not
 * an error. */
aiq_rc leader_tick(struct leader *l, struct kube_client *c, double now,
                   aiq_err *err);

/* Gives the lease up if we hold it (holderIdentity "" and duration 1 s), so
 * a standby takes over at once. Best effort; returns the client's rc. */
aiq_rc leader_release(struct leader *l, struct kube_client *c, double now,
                      aiq_err *err);

/* Formats now as a Kubernetes MicroTime "2006-01-02T15:04:05.000000Z". */
const char *leader_microtime(char *buf, size_t cap, double now);

#endif
