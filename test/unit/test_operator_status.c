/* test_operator_status.c -- AIJob status JSON, conditions and their
 * transition times, the status merge patch (written only on change),
 * restart recovery of placement, RFC 3339 times and Events
 * (operator/status.c). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "operator/status.h"
#include "test/unit/th.h"

static const char *js(json_object *o) {
    return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                 JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* 2026-01-02T03:04:05Z */
#define T0 1767323045.0

TEST(status_time_round_trip) {
    char b[40];
    CHECK_STR(opst_time(b, sizeof b, T0), "2026-01-02T03:04:05Z");
    CHECK_DBL(opst_parse_time("2026-01-02T03:04:05Z"), T0, 1e-9);
    CHECK_DBL(opst_parse_time("2026-01-02T03:04:05.250Z"), T0 + 0.25, 1e-9);
    CHECK_DBL(opst_parse_time("2026-01-02T05:04:05+02:00"), T0, 1e-9);
    CHECK_DBL(opst_parse_time("2026-01-02 03:04:05Z"), 0, 0);
    CHECK_DBL(opst_parse_time("2026-13-02T03:04:05Z"), 0, 0);
    CHECK_DBL(opst_parse_time("2026-01-02T03:04:05"), 0, 0);
    CHECK_DBL(opst_parse_time(NULL), 0, 0);
}

TEST(status_queued_golden) {
    struct opstatus st;
    memset(&st, 0, sizeof st);
    st.phase = AIQ_PHASE_QUEUED;
    CHECK_INT(opstatus_set_group(&st, "vision"), 0);
    snprintf(st.level, sizeof st.level, "interactive");
    st.position = 3;
    st.has_score = true;
    st.score = 12.345678;
    struct opst_term tm[2] = {{"job.priority", 10}, {"wait.hours * 2", 2.345678}};
    st.nterms = 2;
    st.terms = tm;
    st.total_gpus = 8;
    st.queued_at = T0;
    st.estimated_start = T0 + 60;
    snprintf(st.reason, sizeof st.reason, "WaitingForGPUs");
    CHECK_INT(opstatus_set_message(&st, "needs 8 GPUs, 4 free"), 0);
    st.observed_generation = 2;
    json_object *s = opstatus_to_json(&st, NULL, T0 + 5);
    CHECK(s != NULL);
    CHECK_STR(js(s),
        "{\"phase\":\"Queued\",\"group\":\"vision\",\"level\":\"interactive\",\"position\":3,"
        "\"score\":12.3457,\"scoreTerms\":[{\"name\":\"job.priority\",\"value\":10},"
        "{\"name\":\"wait.hours * 2\",\"value\":2.3457}],\"totalGpus\":8,"
        "\"estimatedStartTime\":\"2026-01-02T03:05:05Z\",\"queuedTime\":\"2026-01-02T03:04:05Z\","
        "\"attempts\":0,\"message\":\"needs 8 GPUs, 4 free\",\"observedGeneration\":2,"
        "\"conditions\":[{\"type\":\"Queued\",\"status\":\"True\",\"reason\":\"WaitingForGPUs\","
        "\"message\":\"needs 8 GPUs, 4 free\",\"lastTransitionTime\":\"2026-01-02T03:04:10Z\","
        "\"observedGeneration\":2}]}");
    json_object_put(s);
    opstatus_release(&st);
}

/* Finds condition `type` in a status and returns its field `key`. */
static const char *cond(json_object *s, const char *type, const char *key) {
    json_object *cs = NULL, *v = NULL;
    json_object_object_get_ex(s, "conditions", &cs);
    for (size_t i = 0; cs && i < json_object_array_length(cs); i++) {
        json_object *c = json_object_array_get_idx(cs, i);
        if (json_object_object_get_ex(c, "type", &v) &&
            strcmp(json_object_get_string(v), type) == 0 &&
            json_object_object_get_ex(c, key, &v))
            return json_object_get_string(v);
    }
    return NULL;
}

TEST(status_conditions_keep_transition_times) {
    struct opstatus st;
    memset(&st, 0, sizeof st);
    st.phase = AIQ_PHASE_QUEUED;
    st.observed_generation = 1;
    json_object *s1 = opstatus_to_json(&st, NULL, T0);

    /* Same phase later: nothing changes, so no patch is written. */
    json_object *s2 = opstatus_to_json(&st, s1, T0 + 100);
    bool changed = true;
    CHECK(opstatus_patch(s1, s2, &changed) == NULL);
    CHECK(!changed);

    /* Admitted: Queued flips to False (new time), Admitted True. */
    struct opst_place pl[1];
    memset(pl, 0, sizeof pl);
    snprintf(pl[0].node, sizeof pl[0].node, "n1");
    pl[0].gpus[0] = 3;
    pl[0].ngpus = 1;
    pl[0].gpu_memory_mib = 1000;
    st.phase = AIQ_PHASE_ADMITTED;
    st.placement = pl;
    st.nplacement = 1;
    st.admitted_at = T0 + 200;
    json_object *s3 = opstatus_to_json(&st, s2, T0 + 200);
    CHECK_STR(cond(s3, "Queued", "status"), "False");
    CHECK_STR(cond(s3, "Queued", "lastTransitionTime"), "2026-01-02T03:07:25Z");
    CHECK_STR(cond(s3, "Admitted", "status"), "True");
    CHECK_STR(cond(s3, "Admitted", "observedGeneration"), "1");

    /* Running: Admitted stays True with its original time. */
    st.phase = AIQ_PHASE_RUNNING;
    json_object *s4 = opstatus_to_json(&st, s3, T0 + 300);
    CHECK_STR(cond(s4, "Admitted", "status"), "True");
    CHECK_STR(cond(s4, "Admitted", "lastTransitionTime"), "2026-01-02T03:07:25Z");
    CHECK_STR(cond(s4, "Running", "status"), "True");
    CHECK(cond(s4, "Succeeded", "status") == NULL);

    json_object *patch = opstatus_patch(s3, s4, &changed);
    CHECK(changed);
    CHECK(patch != NULL);
    const char *p = js(patch);
    CHECK(strstr(p, "{\"status\":{\"phase\":\"Running\"") == p);
    CHECK(strstr(p, "placement") == NULL); /* unchanged keys are not sent */
    json_object_put(patch);

    /* Requeued: the placement goes away, sent as null. */
    st.phase = AIQ_PHASE_QUEUED;
    st.placement = NULL;
    st.nplacement = 0;
    json_object *s5 = opstatus_to_json(&st, s4, T0 + 400);
    patch = opstatus_patch(s4, s5, &changed);
    CHECK(strstr(js(patch), "\"placement\":null") != NULL);
    CHECK_STR(cond(s5, "Running", "status"), "False");
    CHECK_STR(cond(s5, "Admitted", "status"), "False");
    json_object_put(patch);

    json_object_put(s1);
    json_object_put(s2);
    json_object_put(s3);
    json_object_put(s4);
    json_object_put(s5);
}

TEST(status_rejected_carries_field_message) {
    struct opstatus st;
    memset(&st, 0, sizeof st);
    st.phase = AIQ_PHASE_REJECTED;
    snprintf(st.reason, sizeof st.reason, "Invalid");
    CHECK_INT(opstatus_set_message(&st, "spec.replicas: must be >= 1, got 0"), 0);
    st.observed_generation = 1;
    json_object *s = opstatus_to_json(&st, NULL, T0);
    CHECK_STR(cond(s, "Rejected", "status"), "True");
    CHECK_STR(cond(s, "Rejected", "reason"), "Invalid");
    CHECK_STR(cond(s, "Rejected", "message"), "spec.replicas: must be >= 1, got 0");
    json_object_put(s);
    opstatus_release(&st);
}

/* n replicas on node-0.. with g GPUs each (2i.. for g = 2) of mib MiB. */
static void places_fill(struct opst_place *pl, int n, int g, int64_t mib) {
    memset(pl, 0, (size_t)n * sizeof *pl);
    for (int i = 0; i < n; i++) {
        pl[i].replica = i;
        snprintf(pl[i].node, sizeof pl[i].node, "node-%d", i);
        for (int k = 0; k < g; k++)
            pl[i].gpus[k] = g * i + k;
        pl[i].ngpus = g;
        pl[i].gpu_memory_mib = mib;
    }
}

TEST(status_recovers_placement_after_restart) {
    struct opst_place pl[2], back[4];
    places_fill(pl, 2, 2, 81920);
    struct opstatus st, got;
    memset(&st, 0, sizeof st);
    st.phase = AIQ_PHASE_ADMITTED;
    st.placement = pl;
    st.nplacement = 2;
    st.attempts = 2;
    st.queued_at = T0;
    st.admitted_at = T0 + 9;
    CHECK_INT(opstatus_set_group(&st, "g1"), 0);
    json_object *s = opstatus_to_json(&st, NULL, T0 + 10);
    CHECK_INT(opstatus_from_json(s, &got, back, 4), 2);
    CHECK_INT(got.phase, AIQ_PHASE_ADMITTED);
    CHECK_INT(got.attempts, 2);
    CHECK_DBL(got.admitted_at, T0 + 9, 1e-9);
    CHECK_STR(opstatus_group(&got), "g1");
    opstatus_release(&got);
    CHECK(got.placement == back);
    CHECK_STR(back[1].node, "node-1");
    CHECK_INT(back[1].ngpus, 2);
    CHECK_INT(back[1].gpus[1], 3);
    CHECK_INT(back[1].gpu_memory_mib, 81920);
    CHECK(strstr(js(s), "\"gpuMemory\":\"80Gi\"") != NULL);
    CHECK(strstr(js(s), "gpuMemoryMiB") == NULL);
    /* A short buffer takes what fits. */
    CHECK_INT(opstatus_from_json(s, &got, back, 1), 1);
    opstatus_release(&got);
    CHECK_INT(opstatus_from_json(NULL, &got, back, 4), 0);
    json_object_put(s);
    opstatus_release(&st);
}

/* The store's attempt row keeps the placement as status.placement's JSON
 * (job_place_json); a restart between an admission's pods and its status
 * reads it back from there (job_recover_admission). */
TEST(status_placement_reads_back_from_store_text) {
    struct opst_place pl[2], back[4];
    places_fill(pl, 2, 2, 81920);
    struct opstatus st;
    memset(&st, 0, sizeof st);
    st.placement = pl;
    st.nplacement = 2;
    json_object *s = opstatus_to_json(&st, NULL, T0), *arr = NULL;
    CHECK(json_object_object_get_ex(s, "placement", &arr));
    const char *text = json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN);
    CHECK_INT(opstatus_places_text(text, back, 4), 2);
    CHECK_INT(back[0].replica, pl[0].replica);
    CHECK_STR(back[1].node, pl[1].node);
    CHECK_INT(back[1].ngpus, 2);
    CHECK_INT(back[1].gpus[1], pl[1].gpus[1]);
    CHECK_INT(back[1].gpu_memory_mib, 81920);
    CHECK_INT(opstatus_places_text(text, back, 1), 1); /* what fits */
    json_object_put(s);
    /* An entry without a node is skipped; what is not an array is refused. */
    CHECK_INT(opstatus_places_text("[{\"replica\":0},{\"replica\":1,\"node\":\"n1\"}]", back, 4), 1);
    CHECK_STR(back[0].node, "n1");
    CHECK_INT(opstatus_places_text("{\"replica\":0,\"node\":\"n1\"}", back, 4), -1);
    CHECK_INT(opstatus_places_text("[{", back, 4), -1);
    CHECK_INT(opstatus_places_text(NULL, back, 4), -1);
}

/* After a restart the operator takes the live status as what it last
 * published (reconcile_aijob.c job_load): so what it wrote must read
 * back with the same material fingerprint, position and estimated start,
 * in every phase that shows them, or an unchanged job would look changed
 * (a status built for nothing) or, worse, a changed one unchanged. */
TEST(status_reads_back_as_published) {
    struct opst_place pl[2], back[2];
    places_fill(pl, 2, 1, 40960);
    static const aiq_phase phases[] = {AIQ_PHASE_QUEUED, AIQ_PHASE_ADMITTED,
                                       AIQ_PHASE_RUNNING, AIQ_PHASE_SUCCEEDED,
                                       AIQ_PHASE_FAILED, AIQ_PHASE_SUSPENDED};
    for (size_t k = 0; k < sizeof phases / sizeof phases[0]; k++) {
        struct opstatus st, got;
        memset(&st, 0, sizeof st);
        st.phase = phases[k];
        CHECK_INT(opstatus_set_group(&st, "vision"), 0);
        snprintf(st.level, sizeof st.level, "normal");
        snprintf(st.reason, sizeof st.reason, "%s",
                 st.phase == AIQ_PHASE_QUEUED ? "WaitingForGPUs" : "Backfilled");
        CHECK_INT(opstatus_set_message(&st, "needs 2 GPUs: 1 free"), 0);
        st.total_gpus = 2;
        st.queued_at = T0;
        st.attempts = 1;
        st.observed_generation = 3;
        st.preemptions = 1;
        st.attained_gpu_hours = 1.25;
        struct opst_xcond *rz = opstatus_xc(&st, OPST_XC_RESIZED);
        CHECK(rz != NULL);
        if (!rz)
            return;
        snprintf(rz->reason, sizeof rz->reason, "Grown");
        snprintf(rz->message, sizeof rz->message, "grown from 1 to 2");
        if (st.phase == AIQ_PHASE_QUEUED) {
            st.position = 7;
            st.estimated_start = T0 + 3600;
            st.has_score = true;
            st.score = 1.5;
        } else {
            st.admitted_at = T0 + 10;
            st.placement = pl;
            st.nplacement = 2;
            st.current_replicas = st.phase == AIQ_PHASE_RUNNING ? 2 : 0;
        }
        json_object *s = opstatus_to_json(&st, NULL, T0 + 20);
        CHECK(opstatus_current_form(s));
        opstatus_from_json(s, &got, back, 2);
        CHECK(opstatus_material_hash(&got) == opstatus_material_hash(&st));
        CHECK_INT(got.position, st.position);
        CHECK_DBL(got.estimated_start, st.estimated_start, 0);
        CHECK_STR(got.reason, st.reason);
        CHECK_STR(got.level, "normal");
        CHECK(!opstatus_moved(got.position, got.estimated_start, st.position,
                              st.estimated_start, T0 + 20));
        /* One material change is seen. */
        got.attempts++;
        CHECK(opstatus_material_hash(&got) != opstatus_material_hash(&st));
        opstatus_release(&st);
        opstatus_release(&got);
        json_object_put(s);
    }
    /* Not in the current form: members an older operator (or someone
     * else) wrote; their next write replaces them. */
    const char *const stale[] = {
        "{\"phase\":\"Queued\",\"totalGPUs\":2}",
        "{\"phase\":\"Admitted\",\"placement\":[{\"replica\":0,\"node\":\"n1\","
        "\"gpuMemoryMiB\":40960}]}",
        "{\"phase\":\"Queued\",\"note\":\"added by hand\"}"};
    for (size_t k = 0; k < sizeof stale / sizeof stale[0]; k++) {
        json_object *o = json_tokener_parse(stale[k]);
        CHECK(o != NULL);
        CHECK(!opstatus_current_form(o));
        json_object_put(o);
    }
    CHECK(!opstatus_current_form(NULL));
}

/* A status an operator wrote before the renames (totalGPUs, placement
 * gpuMemoryMiB) reads back after an upgrade, and the next write replaces
 * the old names. */
TEST(status_reads_pre_rename_names) {
    struct opstatus got, st;
    struct opst_place back[2];
    json_object *old = json_tokener_parse(
        "{\"phase\":\"Admitted\",\"attempts\":1,\"totalGPUs\":2,"
        "\"placement\":[{\"replica\":0,\"node\":\"n1\",\"gpuIndexes\":[0,1],"
        "\"gpuMemoryMiB\":40960}]}");
    CHECK(old != NULL);
    CHECK_INT(opstatus_from_json(old, &got, back, 2), 1);
    CHECK_INT(back[0].gpu_memory_mib, 40960);
    st = got;
    st.total_gpus = 2;
    json_object *now = opstatus_to_json(&st, old, T0);
    bool changed = false;
    json_object *patch = opstatus_patch(old, now, &changed);
    CHECK(changed);
    CHECK(strstr(js(patch), "\"totalGPUs\":null") != NULL);
    CHECK(strstr(js(patch), "\"totalGpus\":2") != NULL);
    CHECK(strstr(js(patch), "\"gpuMemory\":\"40Gi\"") != NULL);
    /* A quantity that is not a whole MiB reads as absent (0). */
    json_object *odd = json_tokener_parse(
        "{\"placement\":[{\"replica\":0,\"node\":\"n1\",\"gpuMemory\":\"1.5Mi\"}]}");
    CHECK_INT(opstatus_from_json(odd, &got, back, 2), 1);
    CHECK_INT(back[0].gpu_memory_mib, 0);
    json_object_put(odd);
    json_object_put(patch);
    json_object_put(now);
    json_object_put(old);
}

/* opstatus_hash: the same status hashes the same whatever lies past a
 * string's NUL or past nterms/nplacement; a change to any field the JSON
 * shows changes the hash. */
static void hash_base(struct opstatus *st, struct opst_place *pl, struct opst_term *tm) {
    memset(st, 0, sizeof *st);
    memset(pl, 0, 2 * sizeof *pl);
    memset(tm, 0, OPST_MAX_TERMS * sizeof *tm);
    st->phase = AIQ_PHASE_ADMITTED;
    CHECK_INT(opstatus_set_group(st, "vision"), 0);
    snprintf(st->level, sizeof st->level, "batch");
    st->position = 2;
    st->has_score = true;
    st->score = 1.5;
    st->nterms = 2;
    tm[0].name = "priority";
    tm[0].value = 1;
    tm[1].name = "wait";
    tm[1].value = 0.5;
    st->terms = tm;
    st->total_gpus = 4;
    st->predicted_runtime_s = 60;
    st->estimated_start = T0 + 10;
    pl[0].replica = 0;
    pl[1].replica = 1;
    snprintf(pl[0].node, sizeof pl[0].node, "gpu-0");
    snprintf(pl[1].node, sizeof pl[1].node, "gpu-1");
    pl[0].ngpus = pl[1].ngpus = 2;
    pl[1].gpus[1] = 1;
    pl[0].gpu_memory_mib = pl[1].gpu_memory_mib = 1024;
    st->placement = pl;
    st->nplacement = 2;
    st->queued_at = T0;
    st->admitted_at = T0 + 1;
    st->attempts = 1;
    snprintf(st->reason, sizeof st->reason, "Admitted");
    CHECK_INT(opstatus_set_message(st, "admitted"), 0);
    st->observed_generation = 3;
}

/* Changes field f (0..29) of b, whose placement is pb and terms tb:
 * every field the status JSON shows, one at a time. */
static void hash_mutate(struct opstatus *b, struct opst_place *pb, struct opst_term *tb, int f) {
    switch (f) {
    case 0: b->phase = AIQ_PHASE_RUNNING; break;
    case 1: CHECK_INT(opstatus_set_group(b, "Vision"), 0); break;
    case 2: b->level[0] = 'B'; break;
    case 3: b->position = 3; break;
    case 4: b->has_score = false; break;
    case 5: b->score = 1.25; break;
    case 6: b->nterms = 1; break;
    case 7: tb[1].name = "Wait"; break;
    case 8: tb[0].value = 2; break;
    case 9: b->total_gpus = 8; break;
    case 10: b->predicted_runtime_s = 61; break;
    case 11: b->estimated_start += 1; break;
    case 12: b->nplacement = 1; break;
    case 13: pb[1].replica = 2; break;
    case 14: pb[0].node[4] = '9'; break;
    case 15: pb[0].ngpus = 1; break;
    case 16: pb[1].gpus[1] = 0; break;
    case 17: pb[1].gpu_memory_mib = 2048; break;
    case 18: b->queued_at += 1; break;
    case 19: b->admitted_at += 1; break;
    case 20: b->started_at = T0 + 2; break;
    case 21: b->finished_at = T0 + 3; break;
    case 22: b->attempts = 2; break;
    case 23: b->reason[0] = 'a'; break;
    case 24: CHECK_INT(opstatus_set_message(b, "Admitted"), 0); break;
    case 25: b->observed_generation = 4; break;
    case 26: b->placement = NULL; break;
    case 27: b->node_failures = 1; break;
    case 28: b->preemptions = 1; break;
    case 29: b->suspensions = 1; break;
    }
}

TEST(status_hash_covers_every_field) {
    struct opstatus a, b;
    struct opst_place pa[2], pb[2];
    struct opst_term ta[OPST_MAX_TERMS], tb[OPST_MAX_TERMS];
    hash_base(&a, pa, ta);
    hash_base(&b, pb, tb);
    uint64_t h = opstatus_hash(&a);
    /* Bytes the JSON never shows do not count, nor where the texts are. */
    opstatus_release(&b);
    CHECK_INT(opstatus_set_group(&b, "vision"), 0);
    CHECK_INT(opstatus_set_message(&b, "admitted"), 0);
    CHECK(b.group_ != a.group_ && b.message_ != a.message_);
    tb[5].value = 9;
    pb[0].gpus[3] = 7;
    CHECK(opstatus_hash(&b) == h);
    /* Extra conditions made but none set show nothing: the same hash. */
    struct opst_xcond *x = opstatus_xc(&b, OPST_XC_RESIZED);
    CHECK(x != NULL);
    CHECK(opstatus_hash(&b) == h);
    if (x) {
        snprintf(x->message, sizeof x->message, "not shown without a reason");
        CHECK(opstatus_hash(&b) == h);
        snprintf(x->reason, sizeof x->reason, "Grown");
        CHECK(opstatus_hash(&b) != h);
        CHECK(opstatus_material_hash(&b) != opstatus_material_hash(&a));
        uint64_t hr = opstatus_hash(&b);
        x->message[0] = 'N';
        CHECK(opstatus_hash(&b) != hr);
    }
    opstatus_release(&b);
    CHECK(b.xc == NULL);
    for (int f = 0; f < 30; f++) {
        hash_base(&b, pb, tb);
        hash_mutate(&b, pb, tb, f);
        if (!CHECK(opstatus_hash(&b) != h))
            printf("    field change %d left the hash unchanged\n", f);
        opstatus_release(&b);
    }
    opstatus_release(&a);
}

/* The group and message are kept to size: NULL or "" is none, a text
 * past the cap is cut there, the same text again keeps its allocation,
 * and opstatus_release frees both (the sanitizer build finds a leak). */
TEST(status_texts_kept_to_size) {
    struct opstatus st;
    memset(&st, 0, sizeof st);
    CHECK_STR(opstatus_group(&st), "");
    CHECK_STR(opstatus_message(&st), "");
    CHECK_INT(opstatus_set_message(&st, "needs 8 GPUs, 4 free"), 0);
    const char *was = st.message_;
    CHECK_INT(opstatus_set_message(&st, "needs 8 GPUs, 4 free"), 0);
    CHECK(st.message_ == was);
    CHECK_INT(opstatus_set_message(&st, "needs 8 GPUs, 3 free"), 0);
    CHECK_STR(opstatus_message(&st), "needs 8 GPUs, 3 free");
    CHECK_INT(opstatus_set_message(&st, ""), 0);
    CHECK(st.message_ == NULL);
    char big[2 * OPST_MESSAGE_MAX];
    memset(big, 'm', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK_INT(opstatus_set_messagef(&st, "%s", big), 0);
    CHECK_INT((int)strlen(opstatus_message(&st)), OPST_MESSAGE_MAX - 1);
    /* The same cut text again: nothing new. */
    was = st.message_;
    CHECK_INT(opstatus_set_message(&st, big), 0);
    CHECK(st.message_ == was);
    char name[AIQ_MAX_NAME + 20];
    memset(name, 'g', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    CHECK_INT(opstatus_set_group(&st, name), 0);
    CHECK_INT((int)strlen(opstatus_group(&st)), AIQ_MAX_NAME);
    CHECK_INT(opstatus_set_group(&st, NULL), 0);
    CHECK_STR(opstatus_group(&st), "");
    CHECK_INT(opstatus_set_group(&st, "vision"), 0);
    json_object *s = opstatus_to_json(&st, NULL, T0);
    CHECK_STR(json_object_get_string(json_object_object_get(s, "group")), "vision");
    CHECK(json_object_object_get(s, "message") != NULL);
    json_object_put(s);
    opstatus_release(&st);
    CHECK(st.group_ == NULL && st.message_ == NULL);
}

/* Status economy: the material hash ignores exactly the fields that
 * move with every cycle (position, score, terms, predicted runtime,
 * start estimate) and covers the rest. */
TEST(status_material_hash_ignores_cycle_noise) {
    struct opstatus a, b;
    struct opst_place pa[2], pb[2];
    struct opst_term ta[OPST_MAX_TERMS], tb[OPST_MAX_TERMS];
    hash_base(&a, pa, ta);
    uint64_t h = opstatus_material_hash(&a);
    for (int f = 0; f < 30; f++) {
        hash_base(&b, pb, tb);
        bool noise = f == 3 || (f >= 4 && f <= 8) || f == 10 || f == 11;
        hash_mutate(&b, pb, tb, f);
        bool same = opstatus_material_hash(&b) == h;
        if (!CHECK(same == noise))
            printf("    field change %d: material hash %s\n", f, same ? "unchanged" : "changed");
        opstatus_release(&b);
    }
    opstatus_release(&a);
}

/* opstatus_moved: the bands of docs/operator.md "Status writes". */
TEST(status_moved_bands) {
    double now = T0;
    CHECK(!opstatus_moved(0, 0, 0, 0, now));
    CHECK(opstatus_moved(0, 0, 5, 0, now));          /* a position appears */
    CHECK(opstatus_moved(5, 0, 0, 0, now));          /* and goes */
    CHECK(opstatus_moved(1, 0, 2, 0, now));          /* within the first 10: any move */
    CHECK(opstatus_moved(10, 0, 11, 0, now));
    CHECK(opstatus_moved(12, 0, 9, 0, now));
    CHECK(!opstatus_moved(500, 0, 540, 0, now));     /* 8% of 500 */
    CHECK(opstatus_moved(500, 0, 551, 0, now));      /* 10.2% */
    CHECK(!opstatus_moved(500, 0, 450, 0, now));     /* exactly 10% */
    CHECK(opstatus_moved(3, 0, 3, now + 100, now));  /* an estimate appears */
    CHECK(opstatus_moved(3, now + 100, 3, 0, now));  /* and goes */
    CHECK(!opstatus_moved(3, now + 100, 3, now + 150, now)); /* 50 s < 60 s */
    CHECK(opstatus_moved(3, now + 100, 3, now + 170, now));
    /* 10% of the 10,000 s left: 900 s is within, 1,100 s is not */
    CHECK(!opstatus_moved(3, now + 10000, 3, now + 10900, now));
    CHECK(opstatus_moved(3, now + 10000, 3, now + 11100, now));
}

TEST(status_event_fields) {
    struct opevent_obj o = {"aiq.dev/v1alpha1", "AIJob", "team-a", "train", "u1", "42"};
    json_object *ev = opevent_build(&o, "Normal", "Admitted", "placed on n1", T0, 1);
    json_object *ev2 = opevent_build(&o, "Normal", "Admitted", "placed on n1", T0, 2);
    CHECK(ev && ev2);
    const char *s = js(ev);
    CHECK(strstr(s, "\"involvedObject\":{\"apiVersion\":\"aiq.dev/v1alpha1\",\"kind\":\"AIJob\","
                    "\"name\":\"train\",\"namespace\":\"team-a\",\"uid\":\"u1\","
                    "\"resourceVersion\":\"42\"}") != NULL);
    CHECK(strstr(s, "\"source\":{\"component\":\"aiq-operator\"}") != NULL);
    CHECK(strstr(s, "\"count\":1,\"firstTimestamp\":\"2026-01-02T03:04:05Z\","
                    "\"lastTimestamp\":\"2026-01-02T03:04:05Z\"") != NULL);
    json_object *m1 = NULL, *m2 = NULL, *n1 = NULL, *n2 = NULL;
    json_object_object_get_ex(ev, "metadata", &m1);
    json_object_object_get_ex(ev2, "metadata", &m2);
    json_object_object_get_ex(m1, "name", &n1);
    json_object_object_get_ex(m2, "name", &n2);
    CHECK(strncmp(json_object_get_string(n1), "train.", 6) == 0);
    CHECK(strcmp(json_object_get_string(n1), json_object_get_string(n2)) != 0);
    json_object_put(ev);
    json_object_put(ev2);
}

/* The huge score: every score and term, however large, NaN or
 * infinite, encodes to JSON that parses back (the round trip
 * opstatus_to_json does), finite, never "inf" or "nan". */
TEST(status_numbers_never_unwritable) {
    static const double v[] = {1.8e304, 1e305, DBL_MAX, -DBL_MAX, INFINITY, -INFINITY,
                               NAN, 1e15, 999999999999999.9, -12.34567, 0};
    static const char *const want[] = {"1.7999999999999999e+304", "9.9999999999999994e+304",
                                       "1.7976931348623157e+308", "-1.7976931348623157e+308",
                                       "1.7976931348623157e+308", "-1.7976931348623157e+308",
                                       "0", "1000000000000000", "999999999999999.75",
                                       "-12.3457", "0"};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        struct opstatus st;
        memset(&st, 0, sizeof st);
        st.phase = AIQ_PHASE_QUEUED;
        st.has_score = true;
        st.score = v[i];
        struct opst_term tm = {"10 ^ 300 * job.gpus", v[i]};
        st.nterms = 1;
        st.terms = &tm;
        json_object *s = opstatus_to_json(&st, NULL, T0);
        CHECK(s != NULL);
        if (!s)
            continue;
        json_object *sc = NULL;
        CHECK(json_object_object_get_ex(s, "score", &sc));
        double got = json_object_get_double(sc);
        CHECK(isfinite(got));
        const char *text = js(s);
        CHECK(strstr(text, "inf") == NULL && strstr(text, "nan") == NULL);
        json_object *num = opst_num(v[i]);
        const char *nt = json_object_to_json_string(num);
        if (strcmp(nt, want[i]) != 0)
            printf("  %g: got %s want %s\n", v[i], nt, want[i]);
        CHECK_STR(nt, want[i]);
        json_object_put(num);
        json_object_put(s);
    }
}

/* Preemption and resizing: status.preemptions / currentReplicas /
 * attainedGPUHours, the Preempted / Preempting / Resized conditions (True
 * while set, their time kept while unchanged, False once cleared), the
 * hash sees them, and a restart reads them back. */
TEST(status_preemption_conditions) {
    struct opstatus st;
    memset(&st, 0, sizeof st);
    st.phase = AIQ_PHASE_QUEUED;
    st.attempts = 1;
    st.preemptions = 1;
    st.node_failures = 2;
    st.suspensions = 3;
    st.attained_gpu_hours = 0.5;
    uint64_t h0 = opstatus_hash(&st);
    struct opst_xcond *pre = opstatus_xc(&st, OPST_XC_PREEMPTED);
    CHECK(pre != NULL);
    if (!pre)
        return;
    snprintf(pre->reason, sizeof pre->reason, "Preempted");
    snprintf(pre->message, sizeof pre->message, "preempted by default/hi");
    CHECK(opstatus_hash(&st) != h0);
    json_object *s1 = opstatus_to_json(&st, NULL, T0);
    CHECK(s1 != NULL);
    CHECK(strstr(js(s1), "\"preemptions\":1,\"nodeFailures\":2,\"suspensions\":3,\"attainedGPUHours\":0.5") != NULL);
    CHECK(strstr(js(s1), "currentReplicas") == NULL);
    CHECK_STR(cond(s1, "Preempted", "status"), "True");
    CHECK_STR(cond(s1, "Preempted", "reason"), "Preempted");
    CHECK_STR(cond(s1, "Preempted", "message"), "preempted by default/hi");
    CHECK(cond(s1, "Resized", "status") == NULL);
    /* Unchanged later: same transition time. */
    json_object *s2 = opstatus_to_json(&st, s1, T0 + 100);
    CHECK_STR(cond(s2, "Preempted", "lastTransitionTime"), "2026-01-02T03:04:05Z");
    /* A restart reads the count and the condition back. */
    struct opstatus back;
    struct opst_place pl[1];
    opstatus_from_json(s2, &back, pl, 1);
    CHECK(back.preemptions == 1);
    CHECK(back.node_failures == 2);
    CHECK(back.suspensions == 3);
    CHECK_STR(opstatus_xc_reason(&back, OPST_XC_PREEMPTED), "Preempted");
    CHECK(back.xc != NULL && strcmp(back.xc[OPST_XC_PREEMPTED].message,
                                    "preempted by default/hi") == 0);
    CHECK_STR(opstatus_xc_reason(&back, OPST_XC_RESIZED), "");
    opstatus_release(&back);
    /* Resized, then the Preempted condition cleared: kept as False. */
    st.phase = AIQ_PHASE_RUNNING;
    st.current_replicas = 4;
    pre->reason[0] = '\0';
    struct opst_xcond *rz = opstatus_xc(&st, OPST_XC_RESIZED);
    CHECK(rz == &st.xc[OPST_XC_RESIZED]);
    snprintf(rz->reason, sizeof rz->reason, "Grown");
    snprintf(rz->message, sizeof rz->message, "grown from 2 to 4 replicas");
    json_object *s3 = opstatus_to_json(&st, s2, T0 + 200);
    CHECK(strstr(js(s3), "\"currentReplicas\":4") != NULL);
    CHECK_STR(cond(s3, "Preempted", "status"), "False");
    CHECK_STR(cond(s3, "Preempted", "reason"), "NotPreempted");
    CHECK_STR(cond(s3, "Resized", "reason"), "Grown");
    CHECK_STR(cond(s3, "Resized", "lastTransitionTime"), "2026-01-02T03:07:25Z");
    opstatus_release(&st);
    json_object_put(s1);
    json_object_put(s2);
    json_object_put(s3);
}

/* A nested object in the patch sends null for the members it lost (a
 * merge patch would keep them): a Group's usage.gpuMemoryMiB written
 * before the rename goes when usage.gpuMemory comes. */
TEST(status_patch_drops_lost_nested_members) {
    json_object *old = json_tokener_parse(
        "{\"usage\":{\"gpus\":2,\"gpuMemoryMiB\":1024},\"message\":\"m\"}");
    json_object *now = json_tokener_parse(
        "{\"usage\":{\"gpus\":2,\"gpuMemory\":\"1Gi\"},\"message\":\"m\"}");
    bool changed = false;
    json_object *patch = opstatus_patch(old, now, &changed);
    CHECK(changed);
    CHECK_STR(js(patch),
              "{\"status\":{\"usage\":{\"gpus\":2,\"gpuMemory\":\"1Gi\",\"gpuMemoryMiB\":null}}}");
    json_object_put(patch);
    json_object_put(now);
    json_object_put(old);
}

/* opst_num makes each number as json-c's parser makes its text (value,
 * type, and the text it writes back), without the parser: checked
 * against json_tokener_parse over rounded, whole, huge and tiny values. */
TEST(status_num_as_parsed) {
    const double v[] = {0, -0.0, 1, -1, 0.5, 2.25, 12.3456, 12.34567, -7.00001, 1e-5, 3e-4,
                        123456789.125, 999999999999999.9, 1e15, 1e16, 1e17, -1e15, 4e9,
                        2147483648.0, -2147483649.0, 1.7976931348623157e308, -1e300, 1e100,
                        0.0001, 9.99995, 100, 86400.5};
    int bad = 0;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        json_object *num = opst_num(v[i]);
        CHECK(num != NULL);
        if (!num)
            continue;
        const char *text = json_object_to_json_string(num);
        json_object *parsed = json_tokener_parse(text);
        CHECK(parsed != NULL);
        if (parsed &&
            (json_object_get_type(parsed) != json_object_get_type(num) ||
             !json_object_equal(parsed, num) ||
             strcmp(json_object_to_json_string(parsed), text) != 0)) {
            printf("  %.17g: made %s (type %d), parsed back as type %d\n", v[i], text,
                   (int)json_object_get_type(num), (int)json_object_get_type(parsed));
            bad++;
        }
        json_object_put(parsed);
        json_object_put(num);
    }
    CHECK_INT(bad, 0);
}

/* The status write budget: a turn that took a second may write a second's
 * worth (the bucket does not drop what accrued during the turn), a quiet
 * spell saves at most 1.25 s worth, and over a run of turns of uneven
 * length the writes stay within rate x elapsed + the burst. */
TEST(status_budget_keeps_what_a_long_turn_accrued) {
    struct opst_budget b = {0, 0};
    CHECK_INT((int)opst_budget_allow(&b, 1000, 100.0, false, 5000), 251); /* first turn */
    opst_budget_spend(&b, 251);
    CHECK_INT((int)opst_budget_allow(&b, 1000, 101.0, false, 5000), 1000); /* a 1 s turn */
    opst_budget_spend(&b, 1000);
    /* A quiet minute: a second's worth, not a minute's. */
    CHECK_INT((int)opst_budget_allow(&b, 1000, 161.0, false, 5000), 1000);
    opst_budget_spend(&b, 10); /* 990 left over: capped at the burst, 251 */
    CHECK_INT((int)opst_budget_allow(&b, 1000, 161.25, false, 5000), 501);
    CHECK_INT((int)opst_budget_allow(&b, 1000, 161.25, false, 7), 7);
    /* A turn that released pods: a quarter second's worth at most. */
    CHECK_INT((int)opst_budget_allow(&b, 1000, 161.25, true, 5000), 251);
    CHECK_INT((int)opst_budget_allow(&b, 0, 161.5, true, 123456), 123456); /* no limit */
    /* The bound, over turns of uneven length that take all they may, with
     * and without turns that released pods; without them the rate is
     * reached too. */
    for (int shorts = 0; shorts < 2; shorts++) {
        struct opst_budget r = {0, 0};
        double now = 1000, t0 = now, written = 0, worst = 0;
        for (int i = 0; i < 2000; i++) {
            now += (i % 7 == 0) ? 0.95 : (i % 3 == 0 ? 0.002 : 0.2);
            size_t n = opst_budget_allow(&r, 2, now, shorts && i % 5 == 0, 1000);
            opst_budget_spend(&r, n);
            written += (double)n;
            double over = written - 2 * (now - t0);
            if (over > worst)
                worst = over;
        }
        CHECK(worst <= 2.0 / 4 + 1 + 1e-9);
        if (!shorts)
            CHECK(written >= 2 * (now - t0) - 2);
    }
}
