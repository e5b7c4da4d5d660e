/* kubeconfig.c -- reads a kubeconfig with libyaml (current context ->
 * cluster and user, including an exec credential plugin's or the oidc
 * auth-provider's settings), the in-cluster service-account config, and
 * the base64 and capped file reading they need. See kubeconfig.h. */
#include "operator/kubeconfig.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <yaml.h>

#include "operator/yaml_json.h"

/* Longest field path we build ("users[123].user.client-key-data"). */
#define KC_PATH_MAX 128

struct kc_parse {
    yaml_document_t *doc;
    const char *text;     /* the YAML text, for re-reading an extension as JSON */
    size_t len;
    const char *base_dir;
    aiq_err *e;
};

/* Frees a credential string, zeroing it first so it does not linger in
 * freed heap memory. */
static void kc_wipe_free(char *s) {
    if (!s) return;
    volatile char *t = s;
    while (*t) *t++ = 0;
    free(s);
}

void kube_exec_free(struct kube_exec *x) {
    if (!x) return;
    free(x->field);
    free(x->api_version);
    free(x->command);
    for (size_t i = 0; i < x->nargs; i++) free(x->args[i]);
    free(x->args);
    for (size_t i = 0; i < x->nenv; i++) {
        free(x->env[i].name);
        kc_wipe_free(x->env[i].value); /* env often carries secrets */
    }
    free(x->env);
    free(x->install_hint);
    free(x->cluster_config);
    free(x);
}

void kube_oidc_free(struct kube_oidc *o) {
    if (!o) return;
    free(o->field);
    free(o->issuer_url);
    free(o->client_id);
    kc_wipe_free(o->client_secret);
    kc_wipe_free(o->id_token);
    kc_wipe_free(o->refresh_token);
    free(o->ca_file);
    free(o->ca_data.data);
    free(o);
}

/* strdup that maps NULL to NULL and records allocation failure. */
static char *kc_dup(const char *s, int *failed) {
    if (!s) return NULL;
    char *r = strdup(s);
    if (!r) *failed = 1;
    return r;
}

struct kube_exec *kube_exec_dup(const struct kube_exec *src) {
    struct kube_exec *x = NULL;
    int failed = 0;
    if (!src || !(x = calloc(1, sizeof *x))) return NULL;
    x->field = kc_dup(src->field, &failed);
    x->api_version = kc_dup(src->api_version, &failed);
    x->command = kc_dup(src->command, &failed);
    x->install_hint = kc_dup(src->install_hint, &failed);
    x->cluster_config = kc_dup(src->cluster_config, &failed);
    x->provide_cluster_info = src->provide_cluster_info;
    x->mode = src->mode;
    if (src->nargs && !(x->args = calloc(src->nargs, sizeof *x->args))) failed = 1;
    for (size_t i = 0; !failed && i < src->nargs; i++) {
        x->nargs = i + 1; /* counted first: freed on failure */
        x->args[i] = kc_dup(src->args[i], &failed);
    }
    if (src->nenv && !(x->env = calloc(src->nenv, sizeof *x->env))) failed = 1;
    for (size_t i = 0; !failed && i < src->nenv; i++) {
        x->nenv = i + 1;
        x->env[i].name = kc_dup(src->env[i].name, &failed);
        x->env[i].value = kc_dup(src->env[i].value, &failed);
    }
    if (failed) {
        kube_exec_free(x);
        return NULL;
    }
    return x;
}

struct kube_oidc *kube_oidc_dup(const struct kube_oidc *src) {
    struct kube_oidc *o = NULL;
    int failed = 0;
    if (!src || !(o = calloc(1, sizeof *o))) return NULL;
    o->field = kc_dup(src->field, &failed);
    o->issuer_url = kc_dup(src->issuer_url, &failed);
    o->client_id = kc_dup(src->client_id, &failed);
    o->client_secret = kc_dup(src->client_secret, &failed);
    o->id_token = kc_dup(src->id_token, &failed);
    o->refresh_token = kc_dup(src->refresh_token, &failed);
    o->ca_file = kc_dup(src->ca_file, &failed);
    if (src->ca_data.data) {
        o->ca_data.data = malloc(src->ca_data.len + 1);
        if (o->ca_data.data) {
            memcpy(o->ca_data.data, src->ca_data.data, src->ca_data.len);
            o->ca_data.data[src->ca_data.len] = '\0';
            o->ca_data.len = src->ca_data.len;
        } else {
            failed = 1;
        }
    }
    if (failed) {
        kube_oidc_free(o);
        return NULL;
    }
    return o;
}

/* See kubeconfig.h. */
void kube_blob_free(struct kube_blob *b) {
    free(b->data);
    b->data = NULL;
    b->len = 0;
}

/* See kubeconfig.h. */
void kube_blob_wipe_free(struct kube_blob *b) {
    if (b->data) {
        volatile unsigned char *p = b->data;
        for (size_t i = 0; i < b->len; i++) p[i] = 0;
    }
    kube_blob_free(b);
}

/* See kubeconfig.h. */
int kube_blob_dup(struct kube_blob *dst, const struct kube_blob *src) {
    dst->data = NULL;
    dst->len = 0;
    if (!src->data) return 0;
    dst->data = malloc(src->len + 1);
    if (!dst->data) return -1;
    memcpy(dst->data, src->data, src->len);
    dst->data[src->len] = '\0';
    dst->len = src->len;
    return 0;
}

void kube_config_free(struct kube_config *c) {
    if (!c) return;
    kube_exec_free(c->exec);
    kube_oidc_free(c->oidc);
    free(c->context);
    free(c->server);
    free(c->namespace_);
    free(c->ca_file);
    kube_blob_free(&c->ca_data);
    free(c->tls_server_name);
    free(c->client_cert_file);
    kube_blob_free(&c->client_cert_data);
    free(c->client_key_file);
    kube_blob_wipe_free(&c->client_key_data);
    kc_wipe_free(c->token);
    free(c->token_file);
    free(c);
}

aiq_rc kube_read_file(const char *path, size_t cap, char **out, size_t *len,
                      aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    FILE *fp = NULL;
    char *buf = NULL;
    size_t n = 0;

    *out = NULL;
    *len = 0;
    fp = fopen(path, "rb");
    if (!fp) {
        rc = aiq_err_set(e, AIQ_EIO, "cannot open %s: %s", path, strerror(errno));
        goto out;
    }
    struct stat st;
    if (fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode)) {
        rc = aiq_err_set(e, AIQ_EIO, "%s is a directory", path);
        goto out_close;
    }
    /* Read in steps up to cap+1 so a file that grows, or a pipe without a
     * size, still cannot pass the cap. */
    size_t bcap = 4096;
    buf = malloc(bcap);
    if (!buf) {
        rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory reading %s", path);
        goto out_close;
    }
    for (;;) {
        if (n + 1 >= bcap) {
            size_t nc = bcap * 2;
            if (nc > cap + 2) nc = cap + 2;
            if (nc <= bcap) {
                rc = aiq_err_set(e, AIQ_ETOOBIG, "%s is larger than %zu bytes", path, cap);
                goto out_free;
            }
            char *nb = realloc(buf, nc);
            if (!nb) {
                rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory reading %s", path);
                goto out_free;
            }
            buf = nb;
            bcap = nc;
        }
        size_t got = fread(buf + n, 1, bcap - 1 - n, fp);
        n += got;
        if (n > cap) {
            rc = aiq_err_set(e, AIQ_ETOOBIG, "%s is larger than %zu bytes", path, cap);
            goto out_free;
        }
        if (got == 0) {
            if (ferror(fp)) {
                rc = aiq_err_set(e, AIQ_EIO, "error reading %s", path);
                goto out_free;
            }
            break;
        }
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    buf = NULL;
out_free:
    free(buf);
out_close:
    fclose(fp);
out:
    return rc;
}

static int b64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

aiq_rc kube_base64_decode(const char *s, size_t len, struct kube_blob *out,
                          aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    unsigned char *buf = malloc(len / 4 * 3 + 4);
    size_t n = 0, pad = 0, nchars = 0;
    unsigned acc = 0;
    int bits = 0;

    out->data = NULL;
    out->len = 0;
    if (!buf) return aiq_err_set(e, AIQ_ENOMEM, "out of memory decoding base64");
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        if (c == '=') {
            pad++;
            if (pad > 2) goto bad;
            continue;
        }
        int v = b64_value(c);
        if (v < 0 || pad > 0) { /* data after padding is invalid too */
        bad:
            if (e && e->code == AIQ_OK) e->offset = i;
            rc = aiq_err_set(e, AIQ_EINVAL, "invalid base64 at byte %zu", i);
            goto out_free;
        }
        nchars++;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[n++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    /* A single leftover character (6 bits) cannot encode a byte; padding
     * must complete the last quantum when present. */
    if (nchars % 4 == 1 || (pad && (nchars + pad) % 4 != 0)) {
        if (e && e->code == AIQ_OK) e->offset = len;
        rc = aiq_err_set(e, AIQ_EINVAL, "invalid base64: truncated at byte %zu", len);
        goto out_free;
    }
    buf[n] = '\0';
    out->data = buf;
    out->len = n;
    return AIQ_OK;
out_free:
    free(buf);
    return rc;
}

/* Writes "path.key" (or "key" when path is empty) into dst, a
 * KC_PATH_MAX buffer, truncating rather than overflowing. */
static void kc_field(char *dst, const char *path, const char *key) {
    size_t n = 0;
    for (const char *q = path; *q && n + 1 < KC_PATH_MAX; q++) dst[n++] = *q;
    if (*path && n + 1 < KC_PATH_MAX) dst[n++] = '.';
    for (const char *q = key; *q && n + 1 < KC_PATH_MAX; q++) dst[n++] = *q;
    dst[n] = '\0';
}

/* Writes "path[idx]" followed by suffix (may be "") into dst, a
 * KC_PATH_MAX buffer, truncating rather than overflowing. */
static void kc_index(char *dst, const char *path, size_t idx, const char *suffix) {
    int n = snprintf(dst, KC_PATH_MAX, "%s[%zu]%s", path, idx, suffix);
    if (n < 0) dst[0] = '\0';
}

/* ---- YAML tree helpers ------------------------------------------------- */

static yaml_node_t *kc_map_get(yaml_document_t *doc, yaml_node_t *map, const char *key) {
    if (!map || map->type != YAML_MAPPING_NODE) return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        if (k && k->type == YAML_SCALAR_NODE && k->data.scalar.length == strlen(key) &&
            memcmp(k->data.scalar.value, key, k->data.scalar.length) == 0)
            return yaml_document_get_node(doc, p->value);
    }
    return NULL;
}

/* A YAML null (~, null, empty) counts as absent. */
static int kc_is_null(const yaml_node_t *n) {
    if (!n) return 1;
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return 0;
    const char *v = (const char *)n->data.scalar.value;
    return n->data.scalar.length == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
           strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

/* Records the YAML position of node n in the error (first error only). */
static void kc_where(struct kc_parse *p, yaml_node_t *n) {
    if (p->e && p->e->code == AIQ_OK && n) {
        p->e->line = (int)n->start_mark.line + 1;
        p->e->col = (int)n->start_mark.column + 1;
        p->e->offset = n->start_mark.index;
    }
}

/* Borrowed scalar string at key of map, NULL when absent. A non-scalar
 * value is an error naming path.key. */
static aiq_rc kc_scalar(struct kc_parse *p, yaml_node_t *map, const char *path,
                        const char *key, const char **out) {
    char field[KC_PATH_MAX];
    yaml_node_t *n = kc_map_get(p->doc, map, key);
    *out = NULL;
    if (kc_is_null(n)) return AIQ_OK;
    kc_field(field, path, key);
    if (n->type != YAML_SCALAR_NODE) {
        kc_where(p, n);
        return aiq_err_field(p->e, AIQ_EINVAL, field, "%s: expected a string, got a %s", field,
                             n->type == YAML_MAPPING_NODE ? "mapping" : "sequence");
    }
    if (strlen((const char *)n->data.scalar.value) != n->data.scalar.length) {
        kc_where(p, n);
        return aiq_err_field(p->e, AIQ_EINVAL, field, "%s: contains a NUL byte", field);
    }
    *out = (const char *)n->data.scalar.value;
    return AIQ_OK;
}

static aiq_rc kc_strdup(struct kc_parse *p, const char *s, char **out) {
    *out = NULL;
    if (!s) return AIQ_OK;
    *out = strdup(s);
    return *out ? AIQ_OK : aiq_err_set(p->e, AIQ_ENOMEM, "out of memory");
}

/* Copies a file path, resolving it against base_dir when relative. */
static aiq_rc kc_path(struct kc_parse *p, const char *s, char **out) {
    *out = NULL;
    if (!s) return AIQ_OK;
    if (s[0] == '/' || !p->base_dir || !*p->base_dir) return kc_strdup(p, s, out);
    size_t n = strlen(p->base_dir) + 1 + strlen(s) + 1;
    char *r = malloc(n);
    if (!r) return aiq_err_set(p->e, AIQ_ENOMEM, "out of memory");
    snprintf(r, n, "%s/%s", p->base_dir, s);
    *out = r;
    return AIQ_OK;
}

static aiq_rc kc_b64(struct kc_parse *p, yaml_node_t *map, const char *path, const char *key,
                     struct kube_blob *out) {
    const char *s = NULL;
    char field[KC_PATH_MAX];
    aiq_rc rc = kc_scalar(p, map, path, key, &s);
    if (rc != AIQ_OK || !s) return rc;
    kc_field(field, path, key);
    aiq_err tmp;
    aiq_err_clear(&tmp);
    rc = kube_base64_decode(s, strlen(s), out, &tmp);
    if (rc != AIQ_OK) {
        kc_where(p, kc_map_get(p->doc, map, key));
        return aiq_err_field(p->e, rc, field, "%s: %s", field, tmp.message);
    }
    if (out->len == 0 || out->len > KUBE_CONFIG_MAX_FILE) {
        size_t n = out->len;
        free(out->data);
        out->data = NULL;
        out->len = 0;
        return aiq_err_field(p->e, AIQ_EINVAL, field, "%s: decoded data of %zu bytes is %s", field,
                             n, n ? "too large" : "empty");
    }
    return AIQ_OK;
}

static aiq_rc kc_bool(struct kc_parse *p, yaml_node_t *map, const char *path, const char *key,
                      int *out) {
    const char *s = NULL;
    char field[KC_PATH_MAX];
    aiq_rc rc = kc_scalar(p, map, path, key, &s);
    if (rc != AIQ_OK || !s) return rc;
    /* YAML 1.1 booleans, as the Go YAML reader kubectl uses accepts. */
    static const char *const yes[] = {"true", "yes", "on", "y"};
    static const char *const no[] = {"false", "no", "off", "n"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(s, yes[i]) == 0) { *out = 1; return AIQ_OK; }
        if (strcasecmp(s, no[i]) == 0) { *out = 0; return AIQ_OK; }
    }
    kc_field(field, path, key);
    kc_where(p, kc_map_get(p->doc, map, key));
    return aiq_err_field(p->e, AIQ_EINVAL, field, "%s: \"%.64s\" is not a boolean", field, s);
}

/* Finds the entry of the named list (clusters/contexts/users) whose name
 * is want; returns its inner mapping (key inner) and index. */
static aiq_rc kc_find(struct kc_parse *p, yaml_node_t *root, const char *list, const char *inner,
                      const char *want, const char *ref_field, yaml_node_t **out, int *idx) {
    yaml_node_t *seq = kc_map_get(p->doc, root, list);
    *out = NULL;
    *idx = -1;
    if (!kc_is_null(seq) && seq->type != YAML_SEQUENCE_NODE) {
        kc_where(p, seq);
        return aiq_err_field(p->e, AIQ_EINVAL, list, "%s: expected a list", list);
    }
    if (!kc_is_null(seq)) {
        int i = 0;
        for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top;
             it++, i++) {
            yaml_node_t *item = yaml_document_get_node(p->doc, *it);
            char path[KC_PATH_MAX];
            const char *name = NULL;
            snprintf(path, sizeof path, "%s[%d]", list, i);
            if (!item || item->type != YAML_MAPPING_NODE) {
                kc_where(p, item);
                return aiq_err_field(p->e, AIQ_EINVAL, path, "%s: expected a mapping", path);
            }
            aiq_rc rc = kc_scalar(p, item, path, "name", &name);
            if (rc != AIQ_OK) return rc;
            if (!name || strcmp(name, want) != 0) continue;
            yaml_node_t *m = kc_map_get(p->doc, item, inner);
            snprintf(path, sizeof path, "%s[%d].%s", list, i, inner);
            if (kc_is_null(m)) {
                /* "user: {}" is valid (no credentials); a missing key too. */
                *out = NULL;
            } else if (m->type != YAML_MAPPING_NODE) {
                kc_where(p, m);
                return aiq_err_field(p->e, AIQ_EINVAL, path, "%s: expected a mapping", path);
            } else {
                *out = m;
            }
            *idx = i;
            return AIQ_OK;
        }
    }
    return aiq_err_field(p->e, AIQ_ENOTFOUND, ref_field, "%s: \"%.100s\" not found in %s", ref_field,
                         want, list);
}

/* ---- exec plugins and auth-providers ------------------------------------ */

int kube_url_secure(const char *url) {
    const char *h = NULL;
    if (!url) return 0;
    if (strncmp(url, "https://", 8) == 0) h = url + 8;
    else if (strncmp(url, "http://", 7) == 0) h = url + 7;
    else return 0;
    size_t n = strcspn(h, "/?#");
    if (memchr(h, '@', n)) return 0; /* user info: "https://a@b" hides the host */
    if (n == 0) return 0;
    if (url[4] == 's') return 1;
    /* http: only to this machine. */
    if (strncmp(h, "[::1]", 5) == 0) return h[5] == ':' || h + 5 == h + n;
    size_t hl = strcspn(h, ":/?#");
    if (hl == 9 && strncmp(h, "localhost", 9) == 0) return 1;
    if (hl < 7 || strncmp(h, "127.", 4) != 0) return 0;
    int dots = 0, digits = 0;
    for (size_t i = 0; i < hl; i++) {
        if (h[i] == '.') {
            if (digits == 0) return 0;
            dots++;
            digits = 0;
        } else if (h[i] >= '0' && h[i] <= '9') {
            if (++digits > 3) return 0;
        } else {
            return 0;
        }
    }
    return dots == 3 && digits > 0;
}

/* A sequence at key of map: *out the node, NULL when absent or null. */
static aiq_rc kc_seq(struct kc_parse *p, yaml_node_t *map, const char *path, const char *key,
                     yaml_node_t **out) {
    yaml_node_t *n = kc_map_get(p->doc, map, key);
    *out = NULL;
    if (kc_is_null(n)) return AIQ_OK;
    if (n->type != YAML_SEQUENCE_NODE) {
        char f[KC_PATH_MAX];
        kc_field(f, path, key);
        kc_where(p, n);
        return aiq_err_field(p->e, AIQ_EINVAL, f, "%s: expected a list", f);
    }
    *out = n;
    return AIQ_OK;
}

/* A required, non-empty string at key of map. */
static aiq_rc kc_required(struct kc_parse *p, yaml_node_t *map, const char *path, const char *key,
                          const char *what, const char **out) {
    aiq_rc rc = kc_scalar(p, map, path, key, out);
    if (rc != AIQ_OK) return rc;
    if (!*out || !**out) {
        char f[KC_PATH_MAX];
        kc_field(f, path, key);
        kc_where(p, map);
        return aiq_err_field(p->e, AIQ_EINVAL, f, "%s: missing%s%s", f, what ? " " : "",
                             what ? what : "");
    }
    return AIQ_OK;
}

/* With provideClusterInfo: the value of the cluster's extension named
 * KUBE_EXEC_EXTENSION, as JSON text. The YAML tree finds it; the text is
 * then read again with yaml_json (kubectl's YAML-to-JSON rules) so the
 * plugin sees the same types kubectl would give it. */
static aiq_rc kc_exec_extension(struct kc_parse *p, yaml_node_t *cl, int cluster_i,
                                struct kube_exec *x) {
    aiq_rc rc = AIQ_OK;
    char path[KC_PATH_MAX], f[KC_PATH_MAX];
    yaml_node_t *seq = NULL;
    json_object **docs = NULL;
    int ndocs = 0, found = -1, j = 0;

    char ext[KC_PATH_MAX];
    snprintf(path, sizeof path, "clusters[%d].cluster", cluster_i);
    kc_field(ext, path, "extensions");
    if ((rc = kc_seq(p, cl, path, "extensions", &seq)) != AIQ_OK || !seq) return rc;
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top;
         it++, j++) {
        yaml_node_t *item = yaml_document_get_node(p->doc, *it);
        const char *name = NULL;
        kc_index(f, ext, (size_t)j, "");
        if (!item || item->type != YAML_MAPPING_NODE) {
            kc_where(p, item);
            return aiq_err_field(p->e, AIQ_EINVAL, f, "%s: expected a mapping", f);
        }
        if ((rc = kc_scalar(p, item, f, "name", &name)) != AIQ_OK) return rc;
        if (name && strcmp(name, KUBE_EXEC_EXTENSION) == 0) {
            if (!kc_is_null(kc_map_get(p->doc, item, "extension"))) found = j;
            break;
        }
    }
    if (found < 0) return AIQ_OK;
    kc_index(f, ext, (size_t)found, ".extension");
    aiq_err le;
    aiq_err_clear(&le);
    rc = aiq_yaml_to_json(p->text, p->len, &docs, &ndocs, &le);
    if (rc != AIQ_OK)
        return aiq_err_field(p->e, rc, f, "%s: cannot be read as JSON: %s", f, le.message);
    json_object *v = NULL, *o = ndocs > 0 ? docs[0] : NULL;
    if (!json_object_object_get_ex(o, "clusters", &v) ||
        !(v = json_object_array_get_idx(v, (size_t)cluster_i)) ||
        !json_object_object_get_ex(v, "cluster", &v) ||
        !json_object_object_get_ex(v, "extensions", &v) ||
        !(v = json_object_array_get_idx(v, (size_t)found)) ||
        !json_object_object_get_ex(v, "extension", &v)) {
        /* The two readers agree on structure; this is only defensive. */
        rc = aiq_err_field(p->e, AIQ_EINVAL, f, "%s: not found when read as JSON", f);
        goto out;
    }
    const char *js = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    x->cluster_config = js ? strdup(js) : NULL;
    if (!x->cluster_config) rc = aiq_err_set(p->e, AIQ_ENOMEM, "out of memory");
out:
    aiq_json_docs_free(docs, ndocs);
    return rc;
}

/* Fails naming field key of path when token v (may be NULL) holds a
 * byte that an HTTP header cannot carry (a bearer token goes in one). */
static aiq_rc kc_header_safe(struct kc_parse *p, const char *path, const char *key,
                             const char *v) {
    for (const char *q = v; q && *q; q++)
        if ((unsigned char)*q < 0x21 || (unsigned char)*q > 0x7e) {
            char f[KC_PATH_MAX];
            kc_field(f, path, key);
            return aiq_err_field(p->e, AIQ_EINVAL, f,
                                 "%s: contains a byte 0x%02x that cannot go in an HTTP header",
                                 f, (unsigned char)*q);
        }
    return AIQ_OK;
}

/* exec.apiVersion: v1 or v1beta1 (v1alpha1 is named as removed). */
static aiq_rc kc_exec_version(struct kc_parse *p, yaml_node_t *xn, const char *path,
                              struct kube_exec *x) {
    aiq_rc rc = AIQ_OK;
    const char *s = NULL;
    char f[KC_PATH_MAX];
    if ((rc = kc_required(p, xn, path, "apiVersion", "(" KUBE_EXEC_V1 " or v1beta1)", &s)) != AIQ_OK)
        return rc;
    if (strcmp(s, KUBE_EXEC_V1) != 0 && strcmp(s, KUBE_EXEC_V1BETA1) != 0) {
        kc_field(f, path, "apiVersion");
        kc_where(p, kc_map_get(p->doc, xn, "apiVersion"));
        return aiq_err_field(p->e, AIQ_EINVAL, f, "%s: \"%.80s\" is not %s or %s%s", f, s,
                             KUBE_EXEC_V1, KUBE_EXEC_V1BETA1,
                             strcmp(s, "client.authentication.k8s.io/v1alpha1") == 0
                                 ? " (v1alpha1 was removed in Kubernetes 1.24)" : "");
    }
    return kc_strdup(p, s, &x->api_version);
}

/* The sequence under key in mapping xn (at path), at most max items
 * (what names them in the error), with its field path in f and its item
 * count in *n; *seq is NULL when the key is absent. */
static aiq_rc kc_seq_capped(struct kc_parse *p, yaml_node_t *xn, const char *path,
                            const char *key, size_t max, const char *what, char *f,
                            yaml_node_t **seq, size_t *n) {
    aiq_rc rc = kc_seq(p, xn, path, key, seq);
    if (rc != AIQ_OK || !*seq)
        return rc;
    *n = (size_t)((*seq)->data.sequence.items.top - (*seq)->data.sequence.items.start);
    kc_field(f, path, key);
    if (*n > max) {
        kc_where(p, *seq);
        return aiq_err_field(p->e, AIQ_ELIMIT, f, "%s: %zu %s, more than %zu", f, *n, what, max);
    }
    return AIQ_OK;
}

/* exec.args: at most KUBE_EXEC_MAX_ARGS strings. */
static aiq_rc kc_exec_args(struct kc_parse *p, yaml_node_t *xn, const char *path,
                           struct kube_exec *x) {
    aiq_rc rc = AIQ_OK;
    char f[KC_PATH_MAX];
    yaml_node_t *seq = NULL;
    size_t n = 0;
    if ((rc = kc_seq_capped(p, xn, path, "args", KUBE_EXEC_MAX_ARGS, "arguments", f, &seq,
                            &n)) != AIQ_OK || !seq)
        return rc;
    x->args = calloc(n ? n : 1, sizeof *x->args);
    if (!x->args) return aiq_err_set(p->e, AIQ_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *a = yaml_document_get_node(p->doc, seq->data.sequence.items.start[i]);
        char af[KC_PATH_MAX];
        kc_index(af, f, i, "");
        if (!a || a->type != YAML_SCALAR_NODE ||
            strlen((const char *)a->data.scalar.value) != a->data.scalar.length) {
            kc_where(p, a);
            return aiq_err_field(p->e, AIQ_EINVAL, af, "%s: expected a string", af);
        }
        if ((rc = kc_strdup(p, (const char *)a->data.scalar.value, &x->args[i])) != AIQ_OK)
            return rc;
        x->nargs = i + 1;
    }
    return AIQ_OK;
}

/* exec.env: at most KUBE_EXEC_MAX_ENV {name, value}; a name has no '='. */
static aiq_rc kc_exec_env(struct kc_parse *p, yaml_node_t *xn, const char *path,
                          struct kube_exec *x) {
    aiq_rc rc = AIQ_OK;
    char f[KC_PATH_MAX];
    const char *s = NULL;
    yaml_node_t *seq = NULL;
    size_t n = 0;
    if ((rc = kc_seq_capped(p, xn, path, "env", KUBE_EXEC_MAX_ENV, "variables", f, &seq,
                            &n)) != AIQ_OK || !seq)
        return rc;
    x->env = calloc(n ? n : 1, sizeof *x->env);
    if (!x->env) return aiq_err_set(p->e, AIQ_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *m = yaml_document_get_node(p->doc, seq->data.sequence.items.start[i]);
        char ef[KC_PATH_MAX];
        kc_index(ef, f, i, "");
        if (!m || m->type != YAML_MAPPING_NODE) {
            kc_where(p, m);
            return aiq_err_field(p->e, AIQ_EINVAL, ef, "%s: expected a mapping {name, value}", ef);
        }
        if ((rc = kc_required(p, m, ef, "name", NULL, &s)) != AIQ_OK) return rc;
        if (strchr(s, '=')) {
            char nf[KC_PATH_MAX];
            kc_field(nf, ef, "name");
            kc_where(p, kc_map_get(p->doc, m, "name"));
            return aiq_err_field(p->e, AIQ_EINVAL, nf, "%s: \"%.80s\" contains '='", nf, s);
        }
        if ((rc = kc_strdup(p, s, &x->env[i].name)) != AIQ_OK) return rc;
        x->nenv = i + 1;
        if ((rc = kc_scalar(p, m, ef, "value", &s)) != AIQ_OK) return rc;
        if ((rc = kc_strdup(p, s ? s : "", &x->env[i].value)) != AIQ_OK) return rc;
    }
    return AIQ_OK;
}

/* exec.interactiveMode: Never, IfAvailable or Always; required by v1,
 * IfAvailable when a v1beta1 config leaves it out. */
static aiq_rc kc_exec_mode(struct kc_parse *p, yaml_node_t *xn, const char *path,
                           struct kube_exec *x) {
    aiq_rc rc = AIQ_OK;
    char f[KC_PATH_MAX];
    const char *s = NULL;
    if ((rc = kc_scalar(p, xn, path, "interactiveMode", &s)) != AIQ_OK) return rc;
    kc_field(f, path, "interactiveMode");
    if (!s || !*s) {
        /* v1 makes it required; v1beta1 configs predate it (kubectl's
         * default for them is IfAvailable). */
        if (strcmp(x->api_version, KUBE_EXEC_V1) == 0) {
            kc_where(p, xn);
            return aiq_err_field(p->e, AIQ_EINVAL, f,
                                 "%s: missing (required by %s: Never, IfAvailable or Always)", f,
                                 KUBE_EXEC_V1);
        }
        x->mode = KUBE_EXEC_IF_AVAILABLE;
    } else if (strcmp(s, "Never") == 0) {
        x->mode = KUBE_EXEC_NEVER;
    } else if (strcmp(s, "IfAvailable") == 0) {
        x->mode = KUBE_EXEC_IF_AVAILABLE;
    } else if (strcmp(s, "Always") == 0) {
        x->mode = KUBE_EXEC_ALWAYS;
    } else {
        kc_where(p, kc_map_get(p->doc, xn, "interactiveMode"));
        return aiq_err_field(p->e, AIQ_EINVAL, f,
                             "%s: \"%.40s\" is not Never, IfAvailable or Always", f, s);
    }
    return AIQ_OK;
}

/* users[i].user.exec (node xn) into c->exec. */
static aiq_rc kc_exec(struct kc_parse *p, yaml_node_t *xn, const char *upath, yaml_node_t *cl,
                      int cluster_i, struct kube_config *c) {
    aiq_rc rc = AIQ_OK;
    char path[KC_PATH_MAX];
    const char *s = NULL;
    struct kube_exec *x = NULL;

    kc_field(path, upath, "exec");
    if (xn->type != YAML_MAPPING_NODE) {
        kc_where(p, xn);
        return aiq_err_field(p->e, AIQ_EINVAL, path, "%s: expected a mapping", path);
    }
    x = calloc(1, sizeof *x);
    if (!x) return aiq_err_set(p->e, AIQ_ENOMEM, "out of memory");
    c->exec = x; /* freed with c from here on */
    if ((rc = kc_strdup(p, path, &x->field)) != AIQ_OK) return rc;
    if ((rc = kc_exec_version(p, xn, path, x)) != AIQ_OK) return rc;

    if ((rc = kc_required(p, xn, path, "command", NULL, &s)) != AIQ_OK) return rc;
    /* As kubectl: a command with a '/' is a path (relative to the
     * kubeconfig), a bare name is looked up in $PATH when it runs. */
    rc = strchr(s, '/') ? kc_path(p, s, &x->command) : kc_strdup(p, s, &x->command);
    if (rc != AIQ_OK) return rc;
    if ((rc = kc_exec_args(p, xn, path, x)) != AIQ_OK ||
        (rc = kc_exec_env(p, xn, path, x)) != AIQ_OK)
        return rc;

    if ((rc = kc_scalar(p, xn, path, "installHint", &s)) != AIQ_OK) return rc;
    if ((rc = kc_strdup(p, s, &x->install_hint)) != AIQ_OK) return rc;
    if ((rc = kc_bool(p, xn, path, "provideClusterInfo", &x->provide_cluster_info)) != AIQ_OK)
        return rc;
    if ((rc = kc_exec_mode(p, xn, path, x)) != AIQ_OK) return rc;
    if (x->provide_cluster_info) return kc_exec_extension(p, cl, cluster_i, x);
    return AIQ_OK;
}

/* auth-provider.name: only oidc; the removed gcp and azure providers are
 * named with the exec plugin that replaces them. */
static aiq_rc kc_provider_name(struct kc_parse *p, yaml_node_t *an, const char *path) {
    aiq_rc rc = AIQ_OK;
    char f[KC_PATH_MAX];
    const char *name = NULL;
    if ((rc = kc_required(p, an, path, "name", NULL, &name)) != AIQ_OK) return rc;
    kc_field(f, path, "name");
    if (strcmp(name, "gcp") == 0 || strcmp(name, "azure") == 0) {
        int gcp = name[0] == 'g';
        kc_where(p, kc_map_get(p->doc, an, "name"));
        return aiq_err_field(
            p->e, AIQ_EUNSUPPORTED, f,
            "%s: the %s auth-provider was removed from Kubernetes in 1.26; use its exec plugin "
            "instead: %s",
            f, name,
            gcp ? "gke-gcloud-auth-plugin (gcloud components install gke-gcloud-auth-plugin; "
                  "gcloud container clusters get-credentials writes the kubeconfig)"
                : "kubelogin (https://azure.github.io/kubelogin; kubelogin convert-kubeconfig "
                  "rewrites the kubeconfig)");
    }
    if (strcmp(name, "oidc") != 0) {
        kc_where(p, kc_map_get(p->doc, an, "name"));
        return aiq_err_field(p->e, AIQ_EUNSUPPORTED, f,
                             "%s: auth-provider \"%.64s\" is not supported; use oidc or an exec "
                             "credential plugin (user.exec)", f, name);
    }
    return AIQ_OK;
}

/* auth-provider.config (node cfg at cpath) into o: the issuer (https, or
 * http to loopback), the client, the tokens (an id-token or a
 * refresh-token to get one) and the issuer's CA. */
static aiq_rc kc_oidc_config(struct kc_parse *p, yaml_node_t *cfg, const char *cpath,
                             struct kube_oidc *o) {
    aiq_rc rc = AIQ_OK;
    char f[KC_PATH_MAX];
    const char *s = NULL;
    if ((rc = kc_required(p, cfg, cpath, "idp-issuer-url", NULL, &s)) != AIQ_OK) return rc;
    if (!kube_url_secure(s)) {
        kc_field(f, cpath, "idp-issuer-url");
        kc_where(p, kc_map_get(p->doc, cfg, "idp-issuer-url"));
        return aiq_err_field(p->e, AIQ_EINVAL, f,
                             "%s: \"%.100s\" must be an https URL (http only to a loopback address)",
                             f, s);
    }
    if ((rc = kc_strdup(p, s, &o->issuer_url)) != AIQ_OK) return rc;
    if ((rc = kc_required(p, cfg, cpath, "client-id", NULL, &s)) != AIQ_OK) return rc;
    if ((rc = kc_strdup(p, s, &o->client_id)) != AIQ_OK) return rc;
    const char *const keys[] = {"client-secret", "id-token", "refresh-token"};
    char **const dst[] = {&o->client_secret, &o->id_token, &o->refresh_token};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if ((rc = kc_scalar(p, cfg, cpath, keys[i], &s)) != AIQ_OK) return rc;
        if (s && !*s) s = NULL; /* kubectl writes empty values; they mean absent */
        if ((rc = kc_strdup(p, s, dst[i])) != AIQ_OK) return rc;
    }
    if ((rc = kc_header_safe(p, cpath, "id-token", o->id_token)) != AIQ_OK) return rc;
    if (!o->id_token && !o->refresh_token) {
        kc_field(f, cpath, "id-token");
        kc_where(p, cfg);
        return aiq_err_field(p->e, AIQ_EINVAL, f,
                             "%s: missing, and no refresh-token to get one (log in with your "
                             "OIDC helper first)", f);
    }
    if ((rc = kc_scalar(p, cfg, cpath, "idp-certificate-authority", &s)) != AIQ_OK) return rc;
    if ((rc = kc_path(p, s && *s ? s : NULL, &o->ca_file)) != AIQ_OK) return rc;
    return kc_b64(p, cfg, cpath, "idp-certificate-authority-data", &o->ca_data);
}

/* users[i].user.auth-provider (node an): oidc into c->oidc; the removed
 * gcp and azure providers, and any other name, are errors. */
static aiq_rc kc_auth_provider(struct kc_parse *p, yaml_node_t *an, const char *upath,
                               struct kube_config *c) {
    aiq_rc rc = AIQ_OK;
    char path[KC_PATH_MAX], cpath[KC_PATH_MAX];
    struct kube_oidc *o = NULL;

    kc_field(path, upath, "auth-provider");
    if (an->type != YAML_MAPPING_NODE) {
        kc_where(p, an);
        return aiq_err_field(p->e, AIQ_EINVAL, path, "%s: expected a mapping", path);
    }
    if ((rc = kc_provider_name(p, an, path)) != AIQ_OK) return rc;
    yaml_node_t *cfg = kc_map_get(p->doc, an, "config");
    kc_field(cpath, path, "config");
    if (kc_is_null(cfg) || cfg->type != YAML_MAPPING_NODE) {
        kc_where(p, cfg ? cfg : an);
        return aiq_err_field(p->e, AIQ_EINVAL, cpath, "%s: %s", cpath,
                             kc_is_null(cfg) ? "missing (oidc needs idp-issuer-url and client-id)"
                                             : "expected a mapping");
    }
    o = calloc(1, sizeof *o);
    if (!o) return aiq_err_set(p->e, AIQ_ENOMEM, "out of memory");
    c->oidc = o; /* freed with c from here on */
    if ((rc = kc_strdup(p, path, &o->field)) != AIQ_OK) return rc;
    return kc_oidc_config(p, cfg, cpath, o);
}

/* The context: the one named (else current-context) into c->context,
 * with its namespace; *ctx_i is its index in contexts, *cname and *uname
 * the cluster and the user it names (borrowed from the document; the
 * user may be missing, the cluster may not). */
static aiq_rc kc_context(struct kc_parse *p, yaml_node_t *root, const char *context,
                         struct kube_config *c, int *ctx_i, const char **cname,
                         const char **uname) {
    aiq_rc rc = AIQ_OK;
    yaml_node_t *ctx = NULL;
    const char *cur = NULL, *s = NULL;
    char path[KC_PATH_MAX];

    if ((rc = kc_scalar(p, root, "", "current-context", &cur)) != AIQ_OK) return rc;
    if (context && *context) cur = context;
    if (!cur || !*cur)
        return aiq_err_field(p->e, AIQ_EINVAL, "current-context",
                             "current-context: not set and no context given");
    if ((rc = kc_find(p, root, "contexts", "context", cur, context ? "context" : "current-context",
                      &ctx, ctx_i)) != AIQ_OK)
        return rc;
    if ((rc = kc_strdup(p, cur, &c->context)) != AIQ_OK) return rc;
    snprintf(path, sizeof path, "contexts[%d].context", *ctx_i);
    if ((rc = kc_scalar(p, ctx, path, "cluster", cname)) != AIQ_OK) return rc;
    if ((rc = kc_scalar(p, ctx, path, "user", uname)) != AIQ_OK) return rc;
    if ((rc = kc_scalar(p, ctx, path, "namespace", &s)) != AIQ_OK) return rc;
    if ((rc = kc_strdup(p, s, &c->namespace_)) != AIQ_OK) return rc;
    if (!*cname || !**cname) {
        char f[KC_PATH_MAX];
        kc_field(f, path, "cluster");
        return aiq_err_field(p->e, AIQ_EINVAL, f, "%s: missing", f);
    }
    return AIQ_OK;
}

/* The cluster's server URL s (at path.server; may be NULL) into
 * c->server, without trailing slashes: an http(s) URL with no space or
 * control character. */
static aiq_rc kc_server(struct kc_parse *p, const char *path, const char *s,
                        struct kube_config *c) {
    char f[KC_PATH_MAX];
    kc_field(f, path, "server");
    if (!s || !*s) return aiq_err_field(p->e, AIQ_EINVAL, f, "%s: missing", f);
    if (strncmp(s, "https://", 8) != 0 && strncmp(s, "http://", 7) != 0)
        return aiq_err_field(p->e, AIQ_EINVAL, f, "%s: \"%.100s\" is not an http(s) URL", f, s);
    for (const char *q = s; *q; q++)
        if ((unsigned char)*q <= ' ' || *q == 0x7f)
            return aiq_err_field(p->e, AIQ_EINVAL, f, "%s: \"%.100s\" contains a space or control character", f, s);
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == '/') n--;
    c->server = strndup(s, n);
    if (!c->server) return aiq_err_set(p->e, AIQ_ENOMEM, "out of memory");
    return AIQ_OK;
}

/* The cluster cname, named by contexts[ctx_i].context.cluster, into c
 * (server, CA, TLS settings); *cl and *cl_i are its node and its index
 * in clusters. */
static aiq_rc kc_cluster(struct kc_parse *p, yaml_node_t *root, const char *cname, int ctx_i,
                         struct kube_config *c, yaml_node_t **cl, int *cl_i) {
    aiq_rc rc = AIQ_OK;
    const char *s = NULL;
    char path[KC_PATH_MAX], ref[KC_PATH_MAX];

    snprintf(ref, sizeof ref, "contexts[%d].context.cluster", ctx_i);
    if ((rc = kc_find(p, root, "clusters", "cluster", cname, ref, cl, cl_i)) != AIQ_OK) return rc;
    snprintf(path, sizeof path, "clusters[%d].cluster", *cl_i);
    if ((rc = kc_scalar(p, *cl, path, "server", &s)) != AIQ_OK) return rc;
    if ((rc = kc_server(p, path, s, c)) != AIQ_OK) return rc;
    if ((rc = kc_scalar(p, *cl, path, "certificate-authority", &s)) != AIQ_OK) return rc;
    if ((rc = kc_path(p, s, &c->ca_file)) != AIQ_OK) return rc;
    if ((rc = kc_b64(p, *cl, path, "certificate-authority-data", &c->ca_data)) != AIQ_OK) return rc;
    if ((rc = kc_bool(p, *cl, path, "insecure-skip-tls-verify", &c->insecure)) != AIQ_OK) return rc;
    if ((rc = kc_scalar(p, *cl, path, "tls-server-name", &s)) != AIQ_OK) return rc;
    return kc_strdup(p, s, &c->tls_server_name);
}

/* The user's fixed credentials (us at path): token, tokenFile, client
 * certificate and key, as files or data; a certificate needs its key. */
static aiq_rc kc_user_fixed(struct kc_parse *p, yaml_node_t *us, const char *path,
                            struct kube_config *c) {
    aiq_rc rc = AIQ_OK;
    const char *s = NULL;
    if ((rc = kc_scalar(p, us, path, "token", &s)) != AIQ_OK) return rc;
    if ((rc = kc_header_safe(p, path, "token", s)) != AIQ_OK) return rc;
    if ((rc = kc_strdup(p, s, &c->token)) != AIQ_OK) return rc;
    if ((rc = kc_scalar(p, us, path, "tokenFile", &s)) != AIQ_OK) return rc;
    if ((rc = kc_path(p, s, &c->token_file)) != AIQ_OK) return rc;
    if ((rc = kc_scalar(p, us, path, "client-certificate", &s)) != AIQ_OK) return rc;
    if ((rc = kc_path(p, s, &c->client_cert_file)) != AIQ_OK) return rc;
    if ((rc = kc_b64(p, us, path, "client-certificate-data", &c->client_cert_data)) != AIQ_OK) return rc;
    if ((rc = kc_scalar(p, us, path, "client-key", &s)) != AIQ_OK) return rc;
    if ((rc = kc_path(p, s, &c->client_key_file)) != AIQ_OK) return rc;
    if ((rc = kc_b64(p, us, path, "client-key-data", &c->client_key_data)) != AIQ_OK) return rc;

    int has_cert = c->client_cert_file || c->client_cert_data.data;
    int has_key = c->client_key_file || c->client_key_data.data;
    if (has_cert != has_key) {
        char f[KC_PATH_MAX];
        kc_field(f, path, has_cert ? "client-key" : "client-certificate");
        return aiq_err_field(p->e, AIQ_EINVAL, f, "%s: missing (a client certificate needs its key)", f);
    }
    return AIQ_OK;
}

/* The user uname, named by contexts[ctx_i].context.user, into c: its
 * fixed credentials, then the ones that change (cl, cl_i: the context's
 * cluster, for an exec plugin's provideClusterInfo). */
static aiq_rc kc_user(struct kc_parse *p, yaml_node_t *root, const char *uname, int ctx_i,
                      yaml_node_t *cl, int cl_i, struct kube_config *c) {
    aiq_rc rc = AIQ_OK;
    yaml_node_t *us = NULL;
    char path[KC_PATH_MAX], ref[KC_PATH_MAX];
    int i = -1;

    snprintf(ref, sizeof ref, "contexts[%d].context.user", ctx_i);
    if ((rc = kc_find(p, root, "users", "user", uname, ref, &us, &i)) != AIQ_OK) return rc;
    snprintf(path, sizeof path, "users[%d].user", i);
    if ((rc = kc_user_fixed(p, us, path, c)) != AIQ_OK) return rc;
    /* Credentials that change: an exec plugin or an auth-provider (one
     * of them, as kubectl requires). With a token or certificate beside
     * them those win (kubectl does the same); they are still checked. */
    yaml_node_t *xn = kc_map_get(p->doc, us, "exec"), *an = kc_map_get(p->doc, us, "auth-provider");
    if (!kc_is_null(xn) && !kc_is_null(an)) {
        char f[KC_PATH_MAX];
        kc_field(f, path, "auth-provider");
        kc_where(p, an);
        return aiq_err_field(p->e, AIQ_EINVAL, f, "%s: cannot be used together with %s.exec", f,
                             path);
    }
    if (!kc_is_null(xn) && (rc = kc_exec(p, xn, path, cl, cl_i, c)) != AIQ_OK) return rc;
    if (!kc_is_null(an) && (rc = kc_auth_provider(p, an, path, c)) != AIQ_OK) return rc;
    int has_cert = c->client_cert_file || c->client_cert_data.data;
    if (!c->token && !c->token_file && !has_cert && !c->exec && !c->oidc &&
        !kc_is_null(kc_map_get(p->doc, us, "username"))) {
        char f[KC_PATH_MAX];
        kc_field(f, path, "username");
        return aiq_err_field(p->e, AIQ_EUNSUPPORTED, f,
                             "%s: basic authentication is not supported; use a token, tokenFile, "
                             "client certificate, exec plugin or oidc", f);
    }
    return AIQ_OK;
}

static aiq_rc kc_fill(struct kc_parse *p, const char *context, struct kube_config *c) {
    aiq_rc rc = AIQ_OK;
    yaml_node_t *root = yaml_document_get_root_node(p->doc);
    yaml_node_t *cl = NULL;
    const char *cname = NULL, *uname = NULL;
    int ctx_i = -1, cl_i = -1;

    if (!root || kc_is_null(root))
        return aiq_err_field(p->e, AIQ_EINVAL, "", "kubeconfig is empty");
    if (root->type != YAML_MAPPING_NODE) {
        kc_where(p, root);
        return aiq_err_field(p->e, AIQ_EINVAL, "", "kubeconfig is not a mapping");
    }
    if ((rc = kc_context(p, root, context, c, &ctx_i, &cname, &uname)) != AIQ_OK) return rc;
    if ((rc = kc_cluster(p, root, cname, ctx_i, c, &cl, &cl_i)) != AIQ_OK) return rc;
    /* User: optional ("user: {}" talks plain http to the local cluster). */
    if (!uname || !*uname) return AIQ_OK;
    return kc_user(p, root, uname, ctx_i, cl, cl_i, c);
}
aiq_rc kube_config_parse(const char *text, size_t len, const char *base_dir,
                         const char *context, struct kube_config **out,
                         aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    yaml_parser_t parser;
    yaml_document_t doc;
    struct kube_config *c = NULL;

    *out = NULL;
    if (len > KUBE_CONFIG_MAX_BYTES)
        return aiq_err_set(e, AIQ_ETOOBIG, "kubeconfig of %zu bytes passes the %u byte cap", len,
                           KUBE_CONFIG_MAX_BYTES);
    if (!yaml_parser_initialize(&parser)) return aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        if (e && e->code == AIQ_OK) {
            e->line = (int)parser.problem_mark.line + 1;
            e->col = (int)parser.problem_mark.column + 1;
            e->offset = parser.problem_mark.index;
        }
        rc = aiq_err_set(e, parser.error == YAML_MEMORY_ERROR ? AIQ_ENOMEM : AIQ_EPARSE,
                         "kubeconfig YAML error at line %d column %d: %s%s%s",
                         (int)parser.problem_mark.line + 1, (int)parser.problem_mark.column + 1,
                         parser.problem ? parser.problem : "syntax error",
                         parser.context ? " " : "", parser.context ? parser.context : "");
        goto out_parser;
    }
    c = calloc(1, sizeof *c);
    if (!c) {
        rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        goto out_doc;
    }
    struct kc_parse p = {.doc = &doc, .text = text, .len = len, .base_dir = base_dir, .e = e};
    rc = kc_fill(&p, context, c);
    if (rc != AIQ_OK) goto out_doc;
    *out = c;
    c = NULL;
out_doc:
    kube_config_free(c);
    yaml_document_delete(&doc);
out_parser:
    yaml_parser_delete(&parser);
    return rc;
}

/* The default kubeconfig path: the first entry of $KUBECONFIG, else
 * $HOME/.kube/config. Returns a new string, or NULL with *rc and e set. */
static char *kc_default_path(aiq_rc *rc, aiq_err *e) {
    char *p = NULL;
    const char *kc = getenv("KUBECONFIG");
    if (kc && *kc) {
        const char *colon = strchr(kc, ':');
        p = colon ? strndup(kc, (size_t)(colon - kc)) : strdup(kc);
    } else {
        const char *home = getenv("HOME");
        if (!home || !*home) {
            *rc = aiq_err_set(e, AIQ_ENOTFOUND,
                              "no kubeconfig: --kubeconfig, $KUBECONFIG and $HOME are unset");
            return NULL;
        }
        size_t n = strlen(home) + sizeof "/.kube/config";
        p = malloc(n);
        if (p) snprintf(p, n, "%s/.kube/config", home);
    }
    if (!p) *rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
    return p;
}

aiq_rc kube_config_load(const char *path, const char *context,
                        struct kube_config **out, aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    char *owned = NULL, *text = NULL, *dir = NULL;
    size_t len = 0;

    *out = NULL;
    if (!path || !*path) {
        owned = kc_default_path(&rc, e);
        if (!owned) goto out;
    }
    const char *file = owned ? owned : path;
    rc = kube_read_file(file, KUBE_CONFIG_MAX_BYTES, &text, &len, e);
    if (rc != AIQ_OK) goto out_free;
    const char *slash = strrchr(file, '/');
    dir = slash ? strndup(file, slash == file ? 1 : (size_t)(slash - file)) : strdup(".");
    if (!dir) {
        rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        goto out_free;
    }
    rc = kube_config_parse(text, len, dir, context, out, e);
    /* Say which file a field error is in. */
    if (rc != AIQ_OK && e && strlen(e->message) + strlen(file) + 3 < sizeof e->message) {
        size_t pl = strlen(file), ml = strlen(e->message);
        memmove(e->message + pl + 2, e->message, ml + 1);
        memcpy(e->message, file, pl);
        memcpy(e->message + pl, ": ", 2);
    }
out_free:
    free(dir);
    free(text);
    free(owned);
out:
    return rc;
}

/* Reads a small file from the service-account directory, trimming
 * trailing whitespace. */
static aiq_rc kc_sa_file(const char *dir, const char *name, int required, char **out, aiq_err *e) {
    char path[4096];
    size_t len = 0;
    *out = NULL;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return aiq_err_set(e, AIQ_ETOOBIG, "service-account path %s/%s too long", dir, name);
    if (!required) {
        struct stat st;
        if (stat(path, &st) != 0) return AIQ_OK;
    }
    aiq_rc rc = kube_read_file(path, KUBE_CONFIG_MAX_FILE, out, &len, e);
    if (rc != AIQ_OK) return rc;
    while (len > 0 && ((*out)[len - 1] == '\n' || (*out)[len - 1] == '\r' ||
                       (*out)[len - 1] == ' ' || (*out)[len - 1] == '\t'))
        (*out)[--len] = '\0';
    return AIQ_OK;
}

aiq_rc kube_config_in_cluster(const char *sa_dir, struct kube_config **out,
                              aiq_err *e) {
    aiq_rc rc = AIQ_OK;
    struct kube_config *c = NULL;
    char *ca = NULL;
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");

    *out = NULL;
    if (!sa_dir) sa_dir = KUBE_SA_DIR;
    if (!host || !*host || !port || !*port) {
        rc = aiq_err_set(e, AIQ_ENOTFOUND,
                         "not in a cluster: KUBERNETES_SERVICE_HOST or KUBERNETES_SERVICE_PORT is unset");
        goto out;
    }
    for (const char *q = port; *q; q++)
        if (*q < '0' || *q > '9' || q - port > 5) {
            rc = aiq_err_field(e, AIQ_EINVAL, "KUBERNETES_SERVICE_PORT",
                               "KUBERNETES_SERVICE_PORT: \"%.16s\" is not a port number", port);
            goto out;
        }
    for (const char *q = host; *q; q++)
        if ((unsigned char)*q <= ' ' || *q == '/' || *q == '@' || *q == '[' || *q == ']' || q - host > 253) {
            rc = aiq_err_field(e, AIQ_EINVAL, "KUBERNETES_SERVICE_HOST",
                               "KUBERNETES_SERVICE_HOST: \"%.64s\" is not a host", host);
            goto out;
        }
    c = calloc(1, sizeof *c);
    if (!c) {
        rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        goto out;
    }
    size_t n = strlen(host) + strlen(port) + 16;
    c->server = malloc(n);
    if (!c->server) {
        rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        goto out_free;
    }
    /* An IPv6 service address needs brackets in the URL. */
    if (strchr(host, ':')) snprintf(c->server, n, "https://[%s]:%s", host, port);
    else snprintf(c->server, n, "https://%s:%s", host, port);

    size_t dl = strlen(sa_dir) + sizeof "/token";
    c->token_file = malloc(dl);
    if (!c->token_file) {
        rc = aiq_err_set(e, AIQ_ENOMEM, "out of memory");
        goto out_free;
    }
    snprintf(c->token_file, dl, "%s/token", sa_dir);
    /* Read the token now so a missing mount fails at start-up, not at the
     * first request; the client re-reads the file as it rotates. */
    if ((rc = kc_sa_file(sa_dir, "token", 1, &c->token, e)) != AIQ_OK) goto out_free;
    if ((rc = kc_sa_file(sa_dir, "namespace", 0, &c->namespace_, e)) != AIQ_OK) goto out_free;
    if ((rc = kc_sa_file(sa_dir, "ca.crt", 1, &ca, e)) != AIQ_OK) goto out_free;
    c->ca_data.data = (unsigned char *)ca;
    c->ca_data.len = strlen(ca);
    ca = NULL;
    *out = c;
    c = NULL;
out_free:
    kube_config_free(c);
out:
    return rc;
}

aiq_rc kube_config_auto(const char *path, const char *context,
                        const char *sa_dir, struct kube_config **out,
                        aiq_err *e) {
    const char *kc = getenv("KUBECONFIG");
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    *out = NULL;
    if ((path && *path) || (kc && *kc) || !host || !*host)
        return kube_config_load(path, context, out, e);
    return kube_config_in_cluster(sa_dir, out, e);
}
