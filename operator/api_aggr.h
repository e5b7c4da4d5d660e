/* api_aggr.h -- the operator as an aggregated API server: the live queue
 * and the journal under the API group query.aiq.dev/v1alpha1, reached
 * through kube-apiserver (an APIService, crds/aggregated-api.yaml), so
 * clients need nothing but their kubeconfig.
 *
 * kube-apiserver authenticates and authorizes the caller, then proxies
 * the request over TLS with its front-proxy client certificate and the
 * caller's identity in X-Remote-User / X-Remote-Group. The operator
 * trusts those headers only when the client certificate verifies against
 * the requestheader client CA (and its CN is one of the allowed names,
 * when any are set), then asks the API server whether that user may do
 * what the HTTP endpoints ask for (api_auth.h): list aijobs in the
 * namespace for the queue, get aijobs/journal for the journal.
 *
 *   GET /apis/query.aiq.dev                       APIGroup (discovery)
 *   GET /apis/query.aiq.dev/v1alpha1              APIResourceList
 *   GET .../v1alpha1/queues                       /queue (all namespaces)
 *   GET .../v1alpha1/namespaces/NS/queues         /queue?namespace=NS
 *   GET .../v1alpha1/namespaces/NS/queues/NAME    /queue?namespace=NS&name=NAME
 *   GET .../v1alpha1/namespaces/NS/journals/NAME  /journal?job=NS/NAME
 *                                                 (?uid=&limit= passed on)
 * The bodies are those of /queue and /journal (metrics.h, http_api.h);
 * errors are Kubernetes Status objects. */
#ifndef AIQ_OPERATOR_API_AGGR_H
#define AIQ_OPERATOR_API_AGGR_H

#include <stdbool.h>
#include <stddef.h>

#include "common/aiq_err.h"
#include "operator/http_api.h"
#include "operator/kubeconfig.h"
#include "operator/metrics.h"
#include "operator/visibility.h"

#define OPAGGR_GROUP "query.aiq.dev"
#define OPAGGR_VERSION "v1alpha1"

typedef struct opaggr opaggr;

/* What the TLS listener needs (all files PEM; paths borrowed). */
struct opaggr_opts {
    const char *addr;          /* --aggregated-addr HOST:PORT (port 0: any) */
    const char *cert, *key;    /* --aggregated-tls-cert/-key: serving pair */
    const char *client_ca;     /* --requestheader-client-ca-file */
    const char *allowed_names; /* --requestheader-allowed-names a,b ("" / NULL: any CN) */
};

/* Starts the listener: reads the files, creates its own API client for
 * the SubjectAccessReviews (cfg copied) and serves api's journal, vis's
 * queue and m's leader flag (all borrowed; they must outlive the
 * handle). NULL with e naming the flag and file on failure. */
opaggr *opaggr_start(const struct opaggr_opts *o, const struct kube_config *cfg, opapi *api,
                     opvis *vis, opmetrics *m, aiq_err *e);

/* Stops the listener (waits for its thread) and frees; NULL does nothing. */
void opaggr_free(opaggr *a);

/* The bound port, else 0. */
int opaggr_port(const opaggr *a);

/* ---- the pure parts, exposed for the unit tests --------------------- */

/* What a request asks for. */
enum opaggr_kind { OPAGGR_GROUP_DOC, OPAGGR_RESOURCES, OPAGGR_QUEUE, OPAGGR_JOURNAL, OPAGGR_UTIL };

struct opaggr_route {
    enum opaggr_kind kind;
    char ns[254];   /* "" for the cluster-wide queue and discovery */
    char name[254]; /* "" for a whole namespace's queue */
};

/* Parses url (path only) into r. Returns 0, or 404 with msg (cap bytes)
 * saying which paths exist. */
int opaggr_parse_path(const char *url, struct opaggr_route *r, char *msg, size_t cap);

/* Whether the front-proxy headers of a request may be believed: the peer
 * sent a certificate (has_cert), it verified against the requestheader
 * client CA for client use (verified), its CN is in the comma-separated
 * allowed list (NULL or "": any), and user is set. Returns 0, or 401 with
 * msg (cap bytes) saying which of these failed. */
int opaggr_decide(bool has_cert, bool verified, const char *cn, const char *allowed,
                  const char *user, char *msg, size_t cap);

#endif
