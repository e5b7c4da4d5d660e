/* cli_util.h -- how `kubectl aiq nodes` shows the operator's live GPU
 * utilisation (GET /util, util_source.h): one UTIL cell per node and one
 * line about the source. Pure json-c; no I/O. */
#ifndef AIQ_TOOLS_CLI_UTIL_H
#define AIQ_TOOLS_CLI_UTIL_H

#include <json-c/json.h>
#include <stddef.h>

/* The UTIL cell of node (ngpus GPUs; node_obj its Node object, may be
 * NULL) from a /util document into buf (cap bytes) and returns buf:
 * "35,100% 8s" (per GPU, the oldest sample's age) when every GPU has a
 * fresh sample, "stale 2m" when some sample is older than the staleness
 * limit (the node is placed without it), "partial" when some GPU has no
 * sample; when the operator also reads Alnair's annotations and the
 * Prometheus source has nothing fresh, "35,0% ann" from the Node's
 * annotations; "-" when no source has anything for the node, "?" when doc
 * is NULL (the operator did not answer). */
const char *cli_util_cell(json_object *doc, const char *node, json_object *node_obj, int ngpus,
                           char *buf, size_t cap);

/* The node's entry of doc ({"name":..,"gpus":[..]}, borrowed), or NULL. */
json_object *cli_util_node(json_object *doc, const char *node);

/* One line about the source into buf: "" when doc says there is none,
 * else e.g. "utilisation: prometheus http://p:9090 up, last answer 3s ago"
 * or "utilisation: prometheus http://p:9090 DOWN (REASON), last answer
 * 5m ago: nodes without fresh samples are placed without utilisation". */
const char *cli_util_summary(json_object *doc, double now, char *buf, size_t cap);

#endif
