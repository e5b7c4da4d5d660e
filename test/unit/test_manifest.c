/* test_manifest.c -- YAML/JSON manifests into model structs
 * (operator/yaml_json.c, operator/manifest.c): every example parses, every
 * examples/invalid file fails with exactly its "# expect:" message, field
 * values and defaults, YAML typing, and a table of hostile inputs. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "common/model.h"
#include "operator/manifest.h"
#include "operator/pods.h"
#include "operator/yaml_json.h"
#include "test/unit/th.h"

/* Parses text; returns the number of documents (-1 on a whole-text error,
 * with the message copied to msg). */
static int parse(const char *text, struct aiq_manifest **m, char *msg, size_t cap) {
    aiq_err e;
    int n = 0;
    aiq_err_clear(&e);
    aiq_rc rc = aiq_manifest_parse_text(text, strlen(text), m, &n, &e);
    if (msg) snprintf(msg, cap, "%s", rc ? e.message : "");
    if (rc) {
        CHECK(*m == NULL && n == 0);
        return -1;
    }
    return n;
}

/* The error message of the first failing document, or of the whole text;
 * "" when everything parsed. */
static void first_error(const char *text, char *msg, size_t cap) {
    struct aiq_manifest *m = NULL;
    int n = parse(text, &m, msg, cap);
    for (int i = 0; i < n; i++) {
        if (m[i].rc != AIQ_OK) {
            snprintf(msg, cap, "%s", m[i].err.message);
            /* A failed document leaves its struct zeroed. */
            static const char zero[sizeof m[i].u];
            CHECK(memcmp(&m[i].u, zero, sizeof zero) == 0);
            break;
        }
        /* A valid AIJob whose template the operator refuses before it
         * builds a pod (pods_build's first step). */
        const char *tj = m[i].kind == AIQ_KIND_AIJOB ? m[i].u.job.spec.template_json : NULL;
        json_object *t = tj ? json_tokener_parse(tj) : NULL, *ts = NULL;
        aiq_err e;
        aiq_err_clear(&e);
        if (t && json_object_object_get_ex(t, "spec", &ts) &&
            pods_template_check(ts, &e) != 0) {
            snprintf(msg, cap, "%s", e.message);
            json_object_put(t);
            break;
        }
        json_object_put(t);
    }
    aiq_manifests_free(m, n);
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (buf) buf[n] = '\0';
    return buf;
}

static int yaml_files(const char *sub, char names[][1024], int max) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/examples/%s", th_srcdir(), sub);
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < max) {
        size_t l = strlen(de->d_name);
        if (l > 5 && strcmp(de->d_name + l - 5, ".yaml") == 0)
            snprintf(names[n++], 1024, "%s/%s", dir, de->d_name);
    }
    closedir(d);
    return n;
}

TEST(examples_all_parse) {
    static const char *const dirs[] = {"jobs", "groups", "quotas", "policies"};
    static char names[128][1024];
    int total = 0;
    for (int k = 0; k < 4; k++) {
        int nf = yaml_files(dirs[k], names, 128);
        if (k < 3) CHECK(nf >= 2); /* policies/ may not exist yet */
        for (int i = 0; i < nf; i++) {
            struct aiq_manifest *m = NULL;
            int n = 0;
            aiq_err e;
            aiq_err_clear(&e);
            if (!CHECK_INT(aiq_manifest_parse_file(names[i], &m, &n, &e), AIQ_OK))
                fprintf(stderr, "    %s: %s\n", names[i], e.message);
            CHECK(n >= 1);
            for (int j = 0; j < n; j++) {
                if (!CHECK_INT(m[j].rc, AIQ_OK))
                    fprintf(stderr, "    %s doc %d (line %d): %s\n", names[i], j, m[j].line,
                            m[j].err.message);
                CHECK(m[j].kind != AIQ_KIND_UNKNOWN);
            }
            total += n;
            aiq_manifests_free(m, n);
        }
    }
    CHECK(total >= 15);
}

TEST(examples_invalid_fail_with_their_message) {
    static char names[64][1024];
    int nf = yaml_files("invalid", names, 64);
    CHECK(nf >= 4);
    for (int i = 0; i < nf; i++) {
        char *text = slurp(names[i]);
        if (!CHECK(text != NULL)) continue;
        char *exp = strstr(text, "# expect: ");
        if (!CHECK(exp != NULL)) {
            fprintf(stderr, "    %s has no '# expect:' line\n", names[i]);
            free(text);
            continue;
        }
        exp += strlen("# expect: ");
        char want[512];
        size_t l = strcspn(exp, "\n");
        snprintf(want, sizeof want, "%.*s", (int)l, exp);
        char got[512];
        first_error(text, got, sizeof got);
        if (!CHECK_STR(got, want)) fprintf(stderr, "    in %s\n", names[i]);
        free(text);
    }
}

TEST(aijob_fields_and_defaults) {
    static const char text[] =
        "apiVersion: aiq.dev/v1alpha1\n"
        "kind: AIJob\n"
        "metadata:\n"
        "  name: j1\n"
        "  namespace: ns1\n"
        "  uid: 1234-abcd\n"
        "  resourceVersion: \"42\"\n"
        "  generation: 3\n"
        "  creationTimestamp: \"2024-05-01T10:00:00Z\"\n"
        "  labels: {app: x}\n"
        "spec:\n"
        "  user: alice\n"
        "  priority: 7\n"
        "  replicas: 4\n"
        "  resources: {gpus: 2, gpuMemoryMiB: 40000, cpu: 1500m, memory: 64Gi, gpuModel: A100}\n"
        "  domain: pool-a\n"
        "  estimatedRuntime: 2h30m\n"
        "  taskType: cv\n"
        "  model: {name: resnet, parameters: 25.6M}\n"
        "  suspend: true\n"
        "  backoffLimit: 0\n"
        "  template:\n"
        "    metadata: {annotations: {sim.aiq.dev/duration: 30s}}\n"
        "    spec: {containers: [{name: c, image: \"busybox\"}]}\n"
        "status: {phase: Queued}\n";
    struct aiq_manifest *m = NULL;
    int n = parse(text, &m, NULL, 0);
    CHECK_INT(n, 1);
    if (n != 1) { aiq_manifests_free(m, n); return; }
    CHECK_INT(m[0].rc, AIQ_OK);
    CHECK_INT(m[0].kind, AIQ_KIND_AIJOB);
    CHECK_INT(m[0].line, 1);
    const struct aiq_aijob *j = &m[0].u.job;
    CHECK_STR(j->meta.name, "j1");
    CHECK_STR(j->meta.namespace_, "ns1");
    CHECK_STR(j->meta.uid, "1234-abcd");
    CHECK_STR(j->meta.resource_version, "42");
    CHECK_INT(j->meta.generation, 3);
    CHECK_DBL(j->meta.creation_time, 1714557600, 0);
    CHECK_STR(j->spec.user, "alice");
    CHECK_INT(j->spec.priority, 7);
    CHECK_INT(j->spec.replicas, 4);
    CHECK_INT(j->spec.resources.gpus, 2);
    CHECK_INT(j->spec.resources.gpu_memory_mib, 40000);
    CHECK_INT(j->spec.resources.cpu_milli, 1500);
    CHECK_INT(j->spec.resources.memory_bytes, 68719476736LL);
    CHECK_STR(j->spec.resources.gpu_model, "A100");
    CHECK_STR(j->spec.domain, "pool-a");
    CHECK_DBL(j->spec.estimated_runtime_s, 9000, 0);
    CHECK_STR(j->spec.task_type, "cv");
    CHECK_STR(j->spec.model_name, "resnet");
    CHECK_INT(j->spec.model_parameters, 25600000);
    CHECK(j->spec.suspend);
    CHECK_INT(j->spec.backoff_limit, 0);
    CHECK_STR(j->spec.template_json,
              "{\"metadata\":{\"annotations\":{\"sim.aiq.dev/duration\":\"30s\"}},"
              "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}");
    aiq_manifests_free(m, n);

    /* Defaults: replicas 1, backoffLimit 3, priority 0, no template. */
    n = parse("apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: j2}\n"
              "spec: {user: bob}\n", &m, NULL, 0);
    CHECK_INT(n, 1);
    if (n == 1) {
        CHECK_INT(m[0].rc, AIQ_OK);
        CHECK_INT(m[0].u.job.spec.replicas, 1);
        CHECK_INT(m[0].u.job.spec.backoff_limit, 3);
        CHECK_INT(m[0].u.job.spec.priority, 0);
        CHECK(m[0].u.job.spec.template_json == NULL);
        CHECK(m[0].u.job.meta.namespace_ == NULL);
        CHECK(!m[0].u.job.spec.suspend);
    }
    aiq_manifests_free(m, n);
}

TEST(policy_group_userquota_fields) {
    static const char text[] =
        "# leading comment\n"
        "apiVersion: aiq.dev/v1alpha1\n"
        "kind: QueuePolicy\n"
        "metadata: {name: p}\n"
        "spec:\n"
        "  formula: \"job.priority * 2\"\n"
        "  levels:\n"
        "  - {name: short, when: runtime.estimate_hours < 1}\n"
        "  - {name: rest}\n"
        "  backfill: Easy\n"
        "  placement: spread\n"
        "  starvation: {after: 1d, promoteTo: short}\n"
        "  fairShare: {halfLife: 2d}\n"
        "  rescoreInterval: 5m\n"
        "  active: true\n"
        "---\n"
        "apiVersion: aiq.dev/v1alpha1\n"
        "kind: Group\n"
        "metadata: {name: g}\n"
        "spec:\n"
        "  level: 3\n"
        "  namespaces: [a, b]\n"
        "  quota: {gpus: 8, cpu: 64, memory: 1Ti}\n"
        "  budget: {gpuHours: 12.5}\n"
        "  members: [{user: alice, level: 4}, {user: bob}]\n"
        "  shares: 2.5\n"
        "---\n"
        "---\n"
        "apiVersion: aiq.dev/v1alpha1\n"
        "kind: UserQuota\n"
        "metadata: {name: u, namespace: a}\n"
        "spec: {user: alice, quota: {jobs: 2}, budget: {gpuHours: 0, window: 12h}}\n";
    struct aiq_manifest *m = NULL;
    int n = parse(text, &m, NULL, 0);
    CHECK_INT(n, 3); /* the empty document between --- is skipped */
    if (n != 3) { aiq_manifests_free(m, n); return; }
    for (int i = 0; i < 3; i++)
        if (!CHECK_INT(m[i].rc, AIQ_OK)) fprintf(stderr, "    %s\n", m[i].err.message);
    const struct aiq_policy_spec *p = &m[0].u.policy.spec;
    CHECK_INT(m[0].kind, AIQ_KIND_QUEUEPOLICY);
    CHECK_STR(p->formula, "job.priority * 2");
    CHECK_INT(p->nlevels, 2);
    CHECK_STR(p->levels[0].name, "short");
    CHECK_STR(p->levels[0].when, "runtime.estimate_hours < 1");
    CHECK(p->levels[1].when == NULL);
    CHECK_INT(p->backfill, AIQ_BACKFILL_EASY);
    CHECK_INT(p->placement, AIQ_PLACE_SPREAD);
    CHECK_DBL(p->starvation_after_s, 86400, 0);
    CHECK_STR(p->starvation_promote_to, "short");
    CHECK_DBL(p->fairshare_half_life_s, 172800, 0);
    CHECK_DBL(p->rescore_interval_s, 300, 0);
    CHECK(p->active);
    const struct aiq_group_spec *g = &m[1].u.group.spec;
    CHECK_INT(m[1].kind, AIQ_KIND_GROUP);
    CHECK_INT(m[1].line, 16); /* the "---" line */
    CHECK_INT(g->level, 3);
    CHECK_INT(g->nnamespaces, 2);
    CHECK_STR(g->namespaces[1], "b");
    CHECK_INT(g->quota.gpus, 8);
    CHECK_INT(g->quota.cpu_milli, 64000);
    CHECK_INT(g->quota.memory_bytes, 1LL << 40);
    CHECK_INT(g->quota.gpu_memory_mib, -1); /* not limited */
    CHECK_INT(g->quota.jobs, -1);
    CHECK_DBL(g->budget.gpu_hours, 12.5, 0);
    CHECK_DBL(g->budget.window_s, 30 * 86400, 0); /* default window */
    CHECK_INT(g->nmembers, 2);
    CHECK_STR(g->members[0].user, "alice");
    CHECK_INT(g->members[0].level, 4);
    CHECK_INT(g->members[1].level, 0);
    CHECK_DBL(g->shares, 2.5, 0);
    const struct aiq_userquota_spec *u = &m[2].u.userquota.spec;
    CHECK_STR(m[2].u.userquota.meta.namespace_, "a");
    CHECK_INT(u->quota.jobs, 2);
    CHECK_INT(u->quota.gpus, -1);
    CHECK_DBL(u->budget.gpu_hours, 0, 0);
    CHECK_DBL(u->budget.window_s, 43200, 0);
    aiq_manifests_free(m, n);

    /* Policy defaults; a cluster-scoped kind ignores metadata.namespace. */
    n = parse("apiVersion: aiq.dev/v1alpha1\nkind: QueuePolicy\n"
              "metadata: {name: p, namespace: x}\nspec: {formula: '1', levels: [{name: all}]}\n",
              &m, NULL, 0);
    CHECK_INT(n, 1);
    if (n == 1) {
        CHECK_INT(m[0].rc, AIQ_OK);
        CHECK_INT(m[0].u.policy.spec.backfill, AIQ_BACKFILL_NONE);
        CHECK_INT(m[0].u.policy.spec.placement, AIQ_PLACE_BINPACK);
        CHECK_DBL(m[0].u.policy.spec.fairshare_half_life_s, 7 * 86400, 0);
        CHECK(!m[0].u.policy.spec.active);
        CHECK(m[0].u.policy.meta.namespace_ == NULL);
    }
    aiq_manifests_free(m, n);
}

TEST(preemption_elastic_and_cohort_fields) {
    static const char text[] =
        "apiVersion: aiq.dev/v1alpha1\n"
        "kind: AIJob\n"
        "metadata: {name: el, namespace: a}\n"
        "spec:\n"
        "  user: alice\n"
        "  replicas: 8\n"
        "  minReplicas: 2\n"
        "  maxReplicas: 6\n"
        "  checkpointable: true\n"
        "  checkpointInterval: 30m\n"
        "  minRuntime: 15m\n"
        "  nonPreemptible: true\n"
        "---\n"
        "apiVersion: aiq.dev/v1alpha1\n"
        "kind: QueuePolicy\n"
        "metadata: {name: p}\n"
        "spec:\n"
        "  formula: job.priority\n"
        "  levels: [{name: all}]\n"
        "  preemption:\n"
        "    lowerLevels: true\n"
        "    withinLevel: {scoreMargin: 2.5}\n"
        "    reclaimBorrowed: false\n"
        "    minRuntime: 10m\n"
        "    maxJobMinRuntime: 2h\n"
        "    maxPerJobPerHour: 3\n"
        "  elastic: {grow: false}\n"
        "---\n"
        "apiVersion: aiq.dev/v1alpha1\n"
        "kind: Group\n"
        "metadata: {name: g}\n"
        "spec:\n"
        "  quota: {gpus: 16}\n"
        "  cohort: research\n"
        "  borrowingLimit: {gpus: 8}\n"
        "  lendingLimit: {gpus: 4, cpu: 32}\n";
    struct aiq_manifest *m = NULL;
    int n = parse(text, &m, NULL, 0);
    CHECK_INT(n, 3);
    if (n != 3) { aiq_manifests_free(m, n); return; }
    for (int i = 0; i < 3; i++)
        if (!CHECK_INT(m[i].rc, AIQ_OK)) fprintf(stderr, "    %s\n", m[i].err.message);
    const struct aiq_aijob_spec *j = &m[0].u.job.spec;
    CHECK_INT(j->min_replicas, 2);
    CHECK_INT(j->max_replicas, 6);
    CHECK_INT(j->replicas, 2); /* an elastic gang starts at its minimum */
    CHECK(j->checkpointable);
    CHECK_DBL(j->checkpoint_interval_s, 1800, 0);
    CHECK_DBL(j->min_runtime_s, 900, 0);
    CHECK(j->non_preemptible);
    const struct aiq_policy_spec *p = &m[1].u.policy.spec;
    CHECK(p->preempt_lower_levels);
    CHECK(p->preempt_within_level);
    CHECK_DBL(p->preempt_score_margin, 2.5, 0);
    CHECK(p->preempt_no_reclaim);
    CHECK_DBL(p->preempt_min_runtime_s, 600, 0);
    CHECK_DBL(p->preempt_max_job_min_runtime_s, 7200, 0);
    CHECK_INT(p->preempt_max_per_hour, 3);
    CHECK(p->elastic_no_grow);
    const struct aiq_group_spec *g = &m[2].u.group.spec;
    CHECK_STR(g->cohort, "research");
    CHECK_INT(g->borrowing_limit.gpus, 8);
    CHECK_INT(g->borrowing_limit.cpu_milli, -1);
    CHECK_INT(g->lending_limit.gpus, 4);
    CHECK_INT(g->lending_limit.cpu_milli, 32000);
    aiq_manifests_free(m, n);

    /* Defaults: nothing preempts, reclaim and growth on, a job's own
     * minimum runtime counts up to 1h; no cohort, no limits. */
    n = parse("apiVersion: aiq.dev/v1alpha1\nkind: QueuePolicy\nmetadata: {name: p}\n"
              "spec: {formula: '1', levels: [{name: all}]}\n---\n"
              "apiVersion: aiq.dev/v1alpha1\nkind: Group\nmetadata: {name: g}\n"
              "---\napiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: j}\n"
              "spec: {user: u, replicas: 3}\n", &m, NULL, 0);
    CHECK_INT(n, 3);
    if (n == 3) {
        const struct aiq_policy_spec *d = &m[0].u.policy.spec;
        CHECK(!d->preempt_lower_levels && !d->preempt_within_level && !d->preempt_no_reclaim);
        CHECK(!d->elastic_no_grow);
        CHECK_DBL(d->preempt_max_job_min_runtime_s, 3600, 0);
        CHECK_INT(d->preempt_max_per_hour, 0);
        CHECK(m[1].u.group.spec.cohort == NULL);
        CHECK_INT(m[1].u.group.spec.borrowing_limit.gpus, -1);
        CHECK_INT(m[1].u.group.spec.lending_limit.gpus, -1);
        CHECK_INT(m[2].u.job.spec.replicas, 3);
        CHECK_INT(m[2].u.job.spec.min_replicas, 0);
        CHECK(!m[2].u.job.spec.checkpointable && !m[2].u.job.spec.non_preemptible);
    }
    aiq_manifests_free(m, n);

    /* Errors name the field. */
    static const struct {
        const char *doc, *want;
    } bad[] = {
        {"kind: AIJob\nmetadata: {name: j}\nspec: {user: u, minReplicas: 2}\n",
         "spec.maxReplicas: is required with spec.minReplicas (an elastic job needs both)"},
        {"kind: AIJob\nmetadata: {name: j}\nspec: {user: u, minReplicas: 4, maxReplicas: 2}\n",
         "spec.maxReplicas: must be >= 4, got 2"},
        {"kind: AIJob\nmetadata: {name: j}\nspec: {user: u, minRuntime: -1h}\n", NULL},
        {"kind: QueuePolicy\nmetadata: {name: p}\nspec: {formula: '1', levels: [{name: a}], "
         "preemption: {withinLevel: {scoreMargin: -1}}}\n",
         "spec.preemption.withinLevel.scoreMargin: must be >= 0, got -1"},
        {"kind: QueuePolicy\nmetadata: {name: p}\nspec: {formula: '1', levels: [{name: a}], "
         "preemption: {sometimes: true}}\n",
         "spec.preemption.sometimes: unknown field"},
        {"kind: Group\nmetadata: {name: g}\nspec: {cohort: Research}\n",
         "spec.cohort: must be a lowercase RFC 1123 label (a-z, 0-9, '-'; at most 63), got \"Research\""},
        {"kind: Group\nmetadata: {name: g}\nspec: {borrowingLimit: {gpus: -2}}\n",
         "spec.borrowingLimit.gpus: must be >= 0, got -2"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char doc[512], got[512];
        snprintf(doc, sizeof doc, "apiVersion: aiq.dev/v1alpha1\n%s", bad[i].doc);
        first_error(doc, got, sizeof got);
        if (bad[i].want) {
            if (!CHECK_STR(got, bad[i].want)) fprintf(stderr, "    case %zu\n", i);
        } else {
            CHECK(got[0] != '\0');
        }
    }
}

TEST(json_input_and_list) {
    static const char text[] =
        "{\"apiVersion\":\"aiq.dev/v1alpha1\",\"kind\":\"AIJob\",\"metadata\":{\"name\":\"a\"},"
        "\"spec\":{\"user\":\"u\",\"resources\":{\"cpu\":2,\"memory\":\"1Gi\"}}}\n"
        "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":["
        "{\"apiVersion\":\"aiq.dev/v1alpha1\",\"kind\":\"Group\",\"metadata\":{\"name\":\"g\"}},"
        "{\"apiVersion\":\"aiq.dev/v1alpha1\",\"kind\":\"AIJob\",\"metadata\":{\"name\":\"b\"},"
        "\"spec\":{\"user\":\"u\",\"replicas\":2.0}}]}";
    struct aiq_manifest *m = NULL;
    int n = parse(text, &m, NULL, 0);
    CHECK_INT(n, 3);
    if (n == 3) {
        CHECK_INT(m[0].rc, AIQ_OK);
        CHECK_INT(m[0].u.job.spec.resources.cpu_milli, 2000); /* integer quantity */
        CHECK_INT(m[0].u.job.spec.resources.memory_bytes, 1 << 30);
        CHECK_INT(m[1].kind, AIQ_KIND_GROUP);
        CHECK_INT(m[1].rc, AIQ_OK);
        CHECK_INT(m[2].line, 2);
        CHECK_INT(m[2].u.job.spec.replicas, 2); /* integral double accepted */
    }
    aiq_manifests_free(m, n);

    /* aiq_*_from_json directly, as the operator uses it on watch events. */
    json_object *o = json_tokener_parse(
        "{\"apiVersion\":\"aiq.dev/v1alpha1\",\"kind\":\"Group\",\"metadata\":{\"name\":\"g\"},"
        "\"spec\":{\"level\":2000}}");
    struct aiq_group g;
    memset(&g, 0x5a, sizeof g);
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(aiq_group_from_json(o, &g, &e), AIQ_EINVAL);
    CHECK_STR(e.message, "spec.level: must be <= 1000, got 2000");
    CHECK_STR(e.field, "spec.level");
    CHECK(g.meta.name == NULL && g.spec.namespaces == NULL); /* zeroed */
    struct aiq_aijob j;
    aiq_err_clear(&e);
    CHECK_INT(aiq_aijob_from_json(o, &j, &e), AIQ_EINVAL);
    CHECK_STR(e.message, "kind: must be AIJob, got \"Group\"");
    CHECK_INT(aiq_manifest_kind(o), AIQ_KIND_GROUP);
    json_object_put(o);
    CHECK_INT(aiq_manifest_kind(NULL), AIQ_KIND_UNKNOWN);
}

TEST(yaml_scalar_types) {
    static const char text[] =
        "a: 12\nb: '12'\nc: 1.5\nd: yes\ne: off\nf: ~\ng:\nh: 0x1f\ni: 0755\nj: 1_000\n"
        "k: 1e3\nl: \"true\"\nm: !!str 5\nn: 99999999999999999999\no: 08\np: -7\n"
        "q: 1.5.5\nr: 2024-05-01\ns: |\n  two\n  lines\nt: [1, two, {x: null}]\n"
        "u: 18446744073709551615\nv: -9223372036854775808\nw: 0b101\nx: .5\n";
    json_object **docs = NULL;
    int n = 0;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(aiq_yaml_to_json(text, strlen(text), &docs, &n, &e), AIQ_OK);
    CHECK_INT(n, 1);
    if (n != 1) { aiq_json_docs_free(docs, n); return; }
    CHECK_STR(json_object_to_json_string_ext(docs[0], JSON_C_TO_STRING_PLAIN),
              "{\"a\":12,\"b\":\"12\",\"c\":1.5,\"d\":true,\"e\":false,\"f\":null,\"g\":null,"
              "\"h\":31,\"i\":493,\"j\":1000,\"k\":1000.0,\"l\":\"true\",\"m\":\"5\","
              "\"n\":1e+20,\"o\":8.0,\"p\":-7,\"q\":\"1.5.5\",\"r\":\"2024-05-01\","
              "\"s\":\"two\\nlines\\n\",\"t\":[1,\"two\",{\"x\":null}],"
              "\"u\":18446744073709551615,\"v\":-9223372036854775808,\"w\":5,\"x\":0.5}");
    aiq_json_docs_free(docs, n);
    aiq_json_docs_free(NULL, 0);
}

TEST(yaml_anchors_ok) {
    static const char text[] =
        "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a}\n"
        "spec:\n  user: &u alice\n  resources: &r {gpus: 1}\n"
        "  model: {name: *u}\n";
    struct aiq_manifest *m = NULL;
    int n = parse(text, &m, NULL, 0);
    CHECK_INT(n, 1);
    if (n == 1) {
        CHECK_INT(m[0].rc, AIQ_OK);
        CHECK_STR(m[0].u.job.spec.model_name, "alice");
    }
    aiq_manifests_free(m, n);
}

struct hostile {
    const char *name;
    const char *text; /* NULL: built by the test */
    const char *msg;  /* first error (whole text or first document) */
};

static const struct hostile hostiles[] = {
    {"wrong type string", "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a}\nspec: {user: [x]}\n",
     "spec.user: must be a string, got [\"x\"]"},
    {"wrong type bool", "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a}\nspec: {user: a, suspend: \"yes\"}\n",
     "spec.suspend: must be a boolean (true or false), got \"yes\""},
    {"yaml 1.1 bool as user", "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a}\nspec: {user: no}\n",
     "spec.user: must be a string, got false"},
    {"spec not object", "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a}\nspec: 5\n",
     "spec: must be an object, got 5"},
    {"resources unknown", "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a}\nspec: {user: a, resources: {gpu: 1}}\n",
     "spec.resources.gpu: unknown field"},
    {"odd unknown key", "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a}\nspec: {\"we ird\": 1}\n",
     "spec[\"we ird\"]: unknown field"},
    {"top unknown", "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a}\nspecs: {}\n",
     "specs: unknown field"},
    {"missing user", "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a}\n",
     "spec.user: is required"},
    {"missing name", "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nspec: {user: a}\n",
     "metadata.name: is required"},
    {"absurd int", "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a}\nspec: {user: a, replicas: 99999999999999999999999}\n",
     "spec.replicas: must be an integer, got 1e+23"},
    {"uint64 int", "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a}\nspec: {user: a, replicas: 18446744073709551615}\n",
     "spec.replicas: must be <= 1024, got 18446744073709551615"},
    {"int32 wrap", "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a}\nspec: {user: a, replicas: 4294967297}\n",
     "spec.replicas: must be <= 1024, got 4294967297"},
    {"fraction int", "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a}\nspec: {user: a, replicas: 1.5}\n",
     "spec.replicas: must be an integer, got 1.5"},
    {"absurd quantity", "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a}\nspec: {user: a, resources: {memory: 100Ei}}\n",
     "spec.resources.memory: invalid quantity \"100Ei\": too large (more than 9223372036854775807 units)"},
    {"quantity int overflow", "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a}\nspec: {user: a, resources: {cpu: 9223372036854775807}}\n",
     "spec.resources.cpu: invalid quantity \"9223372036854775807\": too large (more than 9223372036854775807 millis)"},
    {"negative duration", "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a}\nspec: {user: a, estimatedRuntime: -1h}\n",
     "spec.estimatedRuntime: invalid duration \"-1h\": must not be negative"},
    {"duration number", "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a}\nspec: {user: a, estimatedRuntime: 3600}\n",
     "spec.estimatedRuntime: must be a duration string like \"2h30m\", got 3600"},
    {"template not object", "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a}\nspec: {user: a, template: []}\n",
     "spec.template: must be an object (a pod template), got []"},
    {"enum", "apiVersion: aiq.dev/v1alpha1\nkind: QueuePolicy\nmetadata: {name: a}\nspec: {formula: x, levels: [{name: a}], backfill: easy}\n",
     "spec.backfill: must be one of \"None\", \"Easy\", got \"easy\""},
    {"level null", "apiVersion: aiq.dev/v1alpha1\nkind: QueuePolicy\nmetadata: {name: a}\nspec: {formula: x, levels: [null]}\n",
     "spec.levels[0]: must be an object, got null"},
    {"too many levels", "apiVersion: aiq.dev/v1alpha1\nkind: QueuePolicy\nmetadata: {name: a}\nspec: {formula: x, levels: [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}\n",
     "spec.levels: must have at most 16 levels, got 17"},
    {"budget without hours", "apiVersion: aiq.dev/v1alpha1\nkind: Group\nmetadata: {name: a}\nspec: {budget: {window: 1d}}\n",
     "spec.budget.gpuHours: is required"},
    {"quota memory negative", "apiVersion: aiq.dev/v1alpha1\nkind: Group\nmetadata: {name: a}\nspec: {quota: {memory: \"-1\"}}\n",
     "spec.quota.memory: must be >= 0, got -1"},
    {"wrong apiVersion", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: a}\n",
     "apiVersion: must be aiq.dev/v1alpha1, got \"batch/v1\""},
    {"unknown kind", "apiVersion: aiq.dev/v1alpha1\nkind: AIJobs\nmetadata: {name: a}\n",
     "kind: must be one of AIJob, QueuePolicy, Group, UserQuota, got \"AIJobs\""},
    {"no apiVersion", "kind: AIJob\n", "apiVersion: is required"},
    {"scalar document", "hello\n", "the document must be an object, got \"hello\""},
    {"list document", "- a\n- b\n", "the document must be an object, got [\"a\",\"b\"]"},
    {"bad timestamp", "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a, creationTimestamp: yesterday}\nspec: {user: a}\n",
     "metadata.creationTimestamp: invalid time \"yesterday\": want RFC 3339 like \"2024-05-01T10:00:00Z\""},
    {"NUL in string", "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a}\nspec: {user: \"a\\0b\"}\n",
     "spec.user: must not contain NUL characters, got \"a\\x00b\""},
    {"non-UTF-8", "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a}\nspec: {user: \"\xff\xfe\"}\n",
     "line 4, column 15: YAML syntax error: invalid leading UTF-8 octet"},
    {"non-UTF-8 JSON", "{\"apiVersion\": \"\xc3\x28\"}", "JSON syntax error at byte 17: invalid utf-8 string"},
    {"yaml syntax", "a: [1, 2\nb: 3\n", "line 2, column 2: YAML syntax error: did not find expected ',' or ']' while parsing a flow sequence"},
    {"duplicate key", "a: 1\na: 2\n", "line 2, column 4: duplicate key \"a\""},
    {"merge key", "a: &x {b: 1}\nc:\n  <<: *x\n", "line 3, column 3: YAML merge keys (<<) are not supported"},
    {"complex key", "? [a]\n: 1\n", "line 1, column 3: mapping keys must be scalars"},
    {"unknown anchor", "a: *nope\n", "line 1, column 4: unknown anchor \"nope\""},
    {"infinity", "a: .inf\n", "line 1, column 4: infinity and NaN cannot be represented in JSON; quote the value"},
    {"truncated JSON", "{\"a\": [1, 2", "JSON syntax error at byte 11: unexpected end of input"},
    {"huge string", NULL, "spec.user: must be at most 253 characters, got 5000"},
    {"deep nesting", NULL, "line 1, column 65: nesting too deep (more than 64 levels)"},
    {"deep JSON", NULL, "JSON syntax error at byte 320: nesting too deep"},
    {"alias bomb", NULL, "line 7, column 8: document too large (the document expands to more than 4194304 bytes; alias bomb?)"},
    {"huge list", NULL, "spec.namespaces: must have at most 256 items, got 300"},
    {"huge document", NULL, "line 1, column 4: document too large (document starting at line 1 is over 1048576 bytes)"},
};

/* Builds the generated hostile inputs; returns malloc'ed text. */
static char *build_hostile(const char *name) {
    size_t cap = 3 << 20;
    char *b = calloc(1, cap);
    size_t n = 0;
    if (!b) return NULL;
    if (strcmp(name, "huge string") == 0) {
        n += (size_t)snprintf(b, cap, "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: a}\nspec: {user: ");
        memset(b + n, 'x', 5000);
        n += 5000;
        snprintf(b + n, cap - n, "}\n");
    } else if (strcmp(name, "deep nesting") == 0) {
        for (int i = 0; i < 100; i++) b[n++] = '[';
        for (int i = 0; i < 100; i++) b[n++] = ']';
    } else if (strcmp(name, "deep JSON") == 0) {
        for (int i = 0; i < 100; i++) { memcpy(b + n, "{\"a\":", 5); n += 5; }
        b[n++] = '1';
        for (int i = 0; i < 100; i++) b[n++] = '}';
    } else if (strcmp(name, "alias bomb") == 0) {
        n += (size_t)snprintf(b, cap, "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
        for (char c = 'b'; c <= 'j'; c++)
            n += (size_t)snprintf(b + n, cap - n, "%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c]\n", c, c,
                                  c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1);
        snprintf(b + n, cap - n, "z: [*j, *j]\n");
    } else if (strcmp(name, "huge list") == 0) {
        n += (size_t)snprintf(b, cap, "apiVersion: aiq.dev/v1alpha1\nkind: Group\nmetadata: {name: a}\nspec:\n  namespaces:\n");
        for (int i = 0; i < 300; i++) n += (size_t)snprintf(b + n, cap - n, "  - ns%d\n", i);
    } else if (strcmp(name, "huge document") == 0) {
        n += (size_t)snprintf(b, cap, "a: \"");
        memset(b + n, 'y', 2 << 20);
        n += 2 << 20;
        snprintf(b + n, cap - n, "\"\n");
    }
    return b;
}

TEST(hostile_inputs) {
    for (size_t i = 0; i < sizeof hostiles / sizeof hostiles[0]; i++) {
        char *gen = hostiles[i].text ? NULL : build_hostile(hostiles[i].name);
        const char *text = hostiles[i].text ? hostiles[i].text : gen;
        char got[512];
        if (!CHECK(text != NULL)) continue;
        first_error(text, got, sizeof got);
        if (!CHECK_STR(got, hostiles[i].msg)) fprintf(stderr, "    case: %s\n", hostiles[i].name);
        free(gen);
    }
}

TEST(binary_and_limits) {
    /* Embedded NUL bytes and random binary: an error, never a crash. */
    static const char bin[] = "a: 1\n\0\x01\x02: [\n";
    struct aiq_manifest *m = NULL;
    int n = 0;
    aiq_err e;
    aiq_err_clear(&e);
    CHECK(aiq_manifest_parse_text(bin, sizeof bin - 1, &m, &n, &e) != AIQ_OK);
    CHECK(m == NULL && n == 0 && e.line > 0);
    /* Empty text and comment-only text: no documents, no error. */
    CHECK_INT(aiq_manifest_parse_text("", 0, &m, &n, NULL), AIQ_OK);
    CHECK_INT(n, 0);
    aiq_manifests_free(m, n);
    CHECK_INT(aiq_manifest_parse_text("# nothing\n---\n", 14, &m, &n, NULL), AIQ_OK);
    CHECK_INT(n, 0);
    aiq_manifests_free(m, n);
    aiq_manifests_free(NULL, 0);
    /* Missing file. */
    aiq_err_clear(&e);
    CHECK_INT(aiq_manifest_parse_file("/nonexistent/x.yaml", &m, &n, &e), AIQ_EIO);
    CHECK_STR(e.message, "/nonexistent/x.yaml: No such file or directory");
    /* Over the file cap. */
    aiq_err_clear(&e);
    json_object **docs = NULL;
    CHECK_INT(aiq_yaml_to_json("", (size_t)AIQ_MAX_FILE + 1, &docs, &n, &e), AIQ_ETOOBIG);
    CHECK(docs == NULL && n == 0);
}

/* Loads crds/<file> through our own YAML reader; NULL on failure. */
static json_object *load_crd(const char *file) {
    char path[512];
    snprintf(path, sizeof path, "%s/crds/%s", th_srcdir(), file);
    char *text = slurp(path);
    json_object **docs = NULL, *crd = NULL;
    int n = 0;
    if (text && aiq_yaml_to_json(text, strlen(text), &docs, &n, NULL) == AIQ_OK && n == 1)
        crd = json_object_get(docs[0]);
    aiq_json_docs_free(docs, n);
    free(text);
    return crd;
}

/* The value at a dotted path of plain keys ("a.b.c"; a number indexes an
 * array), or NULL. */
static json_object *at(json_object *o, const char *dotted) {
    char key[128];
    while (o && *dotted) {
        size_t l = strcspn(dotted, ".");
        snprintf(key, sizeof key, "%.*s", (int)l, dotted);
        if (json_object_is_type(o, json_type_array))
            o = json_object_array_get_idx(o, (size_t)strtol(key, NULL, 10));
        else if (!json_object_object_get_ex(o, key, &o))
            o = NULL;
        dotted += l + (dotted[l] == '.');
    }
    return o;
}

static long long at_int(json_object *o, const char *dotted) {
    json_object *v = at(o, dotted);
    return v ? json_object_get_int64(v) : -999;
}

#define SCHEMA "spec.versions.0.schema.openAPIV3Schema.properties."

/* Every property the CRD declares under spec (and one level below) is a
 * field the decoder knows: a document setting each to null must not fail
 * with "unknown field". */
static void crd_fields_known(json_object *crd, const char *kind, const char *extra) {
    json_object *props = at(crd, SCHEMA "spec.properties");
    if (!CHECK(props != NULL)) return;
    json_object_object_foreach(props, key, sub) {
        char text[1024];
        json_object *subprops = at(sub, "properties");
        char inner[512] = "null";
        if (subprops) {
            size_t n = (size_t)snprintf(inner, sizeof inner, "{");
            json_object_object_foreach(subprops, k2, v2) {
                (void)v2;
                n += (size_t)snprintf(inner + n, sizeof inner - n, "%s\"%s\": null",
                                      n > 1 ? ", " : "", k2);
            }
            snprintf(inner + n, sizeof inner - n, "}");
        }
        snprintf(text, sizeof text,
                 "{\"apiVersion\": \"aiq.dev/v1alpha1\", \"kind\": \"%s\", \"metadata\": "
                 "{\"name\": \"x\"}, \"spec\": {%s\"%s\": %s}}",
                 kind, extra, key, inner);
        char got[512];
        first_error(text, got, sizeof got);
        if (!CHECK(strstr(got, "unknown field") == NULL))
            fprintf(stderr, "    %s: %s\n", text, got);
    }
}

TEST(crds_match_model) {
    json_object *j = load_crd("aijobs.aiq.dev.yaml");
    json_object *p = load_crd("queuepolicies.aiq.dev.yaml");
    json_object *g = load_crd("groups.aiq.dev.yaml");
    json_object *u = load_crd("userquotas.aiq.dev.yaml");
    if (!CHECK(j && p && g && u)) goto out;
    CHECK_STR(json_object_get_string(at(j, "spec.names.shortNames.0")), "aij");
    CHECK_STR(json_object_get_string(at(p, "spec.names.shortNames.0")), "qp");
    CHECK_STR(json_object_get_string(at(u, "spec.names.shortNames.0")), "uq");
    CHECK_STR(json_object_get_string(at(j, "spec.scope")), "Namespaced");
    CHECK_STR(json_object_get_string(at(g, "spec.scope")), "Cluster");
    CHECK(at(j, "spec.versions.0.subresources.status") != NULL);
    CHECK(at(g, "spec.versions.0.subresources.status") != NULL);
    /* The limits the C model enforces are the schema's. */
    CHECK_INT(at_int(j, SCHEMA "spec.properties.replicas.maximum"), AIQ_MAX_REPLICAS);
    CHECK_INT(at_int(j, SCHEMA "spec.properties.replicas.default"), 1);
    CHECK_INT(at_int(j, SCHEMA "spec.properties.backoffLimit.default"), 3);
    CHECK_INT(at_int(j, SCHEMA "spec.properties.resources.properties.gpus.maximum"),
              AIQ_MAX_GPUS_PER_REPLICA);
    CHECK_INT(at_int(j, SCHEMA "spec.properties.user.maxLength"), AIQ_MAX_NAME);
    CHECK_INT(at_int(p, SCHEMA "spec.properties.levels.maxItems"), AIQ_MAX_LEVELS);
    CHECK_INT(at_int(p, SCHEMA "spec.properties.formula.maxLength"), AIQ_MAX_FORMULA);
    CHECK_INT(at_int(g, SCHEMA "spec.properties.namespaces.maxItems"), AIQ_MAX_LIST);
    CHECK_INT(at_int(g, SCHEMA "spec.properties.members.maxItems"), AIQ_MAX_LIST);
    /* The AIJob columns users read, in order. */
    static const char *const cols[] = {"User", "Level", "Pos", "Score", "Phase", "GPUs", "ETA", "Age"};
    for (int i = 0; i < 8; i++) {
        char path[96];
        snprintf(path, sizeof path, "spec.versions.0.additionalPrinterColumns.%d.name", i);
        CHECK_STR(json_object_get_string(at(j, path)), cols[i]);
    }
    /* The phase enum is the model's phase names. */
    json_object *en = at(j, SCHEMA "status.properties.phase.enum");
    CHECK_INT(en ? (long long)json_object_array_length(en) : 0, AIQ_PHASE_SUSPENDED);
    for (int i = 0; en && i < (int)json_object_array_length(en); i++)
        CHECK_STR(json_object_get_string(json_object_array_get_idx(en, (size_t)i)),
                  aiq_phase_name((aiq_phase)(i + 1)));
    crd_fields_known(j, "AIJob", "\"user\": \"a\", ");
    crd_fields_known(p, "QueuePolicy", "");
    crd_fields_known(g, "Group", "");
    crd_fields_known(u, "UserQuota", "");
out:
    json_object_put(j);
    json_object_put(p);
    json_object_put(g);
    json_object_put(u);
}

/* GPU memory: the quantity gpuMemory, the deprecated integer gpuMemoryMiB,
 * never both; a quantity must be a whole, non-negative MiB in range. */
TEST(gpu_memory_quantity_and_deprecated_mib) {
    static const struct {
        const char *res;
        int64_t mib; /* -1: an error, want */
        const char *want;
    } cases[] = {
        {"{gpus: 1, gpuMemory: 40Gi}", 40960, NULL},
        {"{gpus: 1, gpuMemory: 81920Mi}", 81920, NULL},
        {"{gpus: 1, gpuMemory: \"1Ti\"}", 1048576, NULL},
        {"{gpus: 1, gpuMemory: 1048576}", 1, NULL}, /* an integer is bytes */
        {"{gpus: 1, gpuMemory: 0}", 0, NULL},
        {"{gpus: 1, gpuMemoryMiB: 40000}", 40000, NULL},
        {"{gpus: 1, gpuMemory: 40Gi, gpuMemoryMiB: 40960}", -1,
         "spec.resources.gpuMemory: give gpuMemory or the deprecated gpuMemoryMiB, not "
         "both; got gpuMemory \"40Gi\" and gpuMemoryMiB 40960"},
        {"{gpus: 1, gpuMemory: 1.5Mi}", -1,
         "spec.resources.gpuMemory: invalid GPU memory \"1.5Mi\": must be a whole number "
         "of MiB (like \"40Gi\" or \"81920Mi\")"},
        {"{gpus: 1, gpuMemory: 40G}", -1,
         "spec.resources.gpuMemory: invalid GPU memory \"40G\": must be a whole number "
         "of MiB (like \"40Gi\" or \"81920Mi\")"},
        {"{gpus: 1, gpuMemory: -1Gi}", -1,
         "spec.resources.gpuMemory: invalid GPU memory \"-1Gi\": must be >= 0"},
        {"{gpus: 1, gpuMemory: 2Ti}", -1,
         "spec.resources.gpuMemory: must be at most 1048576Mi, got \"2Ti\""},
        {"{gpus: 1, gpuMemory: 40 GB}", -1, NULL},
        {"{gpus: 1, gpuMemory: [1]}", -1,
         "spec.resources.gpuMemory: must be a quantity (an integer or a string like "
         "\"500m\" or \"64Gi\"), got [1]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char doc[512], got[512];
        struct aiq_manifest *m = NULL;
        snprintf(doc, sizeof doc,
                 "apiVersion: aiq.dev/v1alpha1\nkind: AIJob\nmetadata: {name: j}\n"
                 "spec: {user: u, resources: %s}\n", cases[i].res);
        int n = parse(doc, &m, got, sizeof got);
        CHECK_INT(n, 1);
        if (cases[i].mib >= 0) {
            if (!CHECK(n == 1 && m[0].rc == AIQ_OK) ||
                !CHECK_INT(m[0].u.job.spec.resources.gpu_memory_mib, cases[i].mib))
                fprintf(stderr, "    case %zu: %s\n", i, n == 1 ? m[0].err.message : got);
        } else if (n == 1 && CHECK(m[0].rc != AIQ_OK) && cases[i].want) {
            if (!CHECK_STR(m[0].err.message, cases[i].want))
                fprintf(stderr, "    case %zu\n", i);
        }
        aiq_manifests_free(m, n);
    }
    /* Group and UserQuota quotas take the same two forms. */
    static const char grp[] =
        "apiVersion: aiq.dev/v1alpha1\nkind: Group\nmetadata: {name: g}\n"
        "spec: {quota: {gpuMemory: 320Gi}, borrowingLimit: {gpuMemoryMiB: 1024},"
        " lendingLimit: {gpuMemory: 1Ti}}\n";
    struct aiq_manifest *m = NULL;
    char msg[256];
    int n = parse(grp, &m, msg, sizeof msg);
    if (CHECK_INT(n, 1) && CHECK(m[0].rc == AIQ_OK)) {
        CHECK_INT(m[0].u.group.spec.quota.gpu_memory_mib, 327680);
        CHECK_INT(m[0].u.group.spec.borrowing_limit.gpu_memory_mib, 1024);
        CHECK_INT(m[0].u.group.spec.lending_limit.gpu_memory_mib, 1048576);
    }
    aiq_manifests_free(m, n);
    first_error("apiVersion: aiq.dev/v1alpha1\nkind: UserQuota\nmetadata: {name: q, "
                "namespace: ns}\nspec: {user: u, quota: {gpuMemory: 1Gi, gpuMemoryMiB: 1}}\n",
                msg, sizeof msg);
    CHECK_STR(msg, "spec.quota.gpuMemory: give gpuMemory or the deprecated gpuMemoryMiB, "
                   "not both; got gpuMemory \"1Gi\" and gpuMemoryMiB 1");
}
