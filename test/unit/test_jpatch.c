/* test_jpatch.c -- merge patch (RFC 7386 appendix A), JSON patch (RFC 6902
 * appendix A) and strategic merge patch as kubectl sends it. Each case is
 * a target, a patch and the expected document (or an expected error). */
#include "test/apiserver/jpatch.h"
#include "test/unit/th.h"

#include <stdlib.h>

enum which { MERGE, JSONP, SMP };

struct pcase {
    enum which w;
    const char *target, *patch, *want; /* want NULL: must fail */
    const char *err_part;              /* substring of the error message */
};

static void run_cases(const struct pcase *t, size_t n) {
    for (size_t i = 0; i < n; i++) {
        json_object *tg = json_tokener_parse(t[i].target);
        json_object *p = json_tokener_parse(t[i].patch);
        char *before = strdup(json_object_to_json_string(tg));
        aiq_err e;
        aiq_err_clear(&e);
        json_object *got = t[i].w == MERGE ? jp_merge_patch(tg, p, &e)
                           : t[i].w == JSONP ? jp_json_patch(tg, p, &e)
                                             : jp_strategic_merge(tg, p, &e);
        if (t[i].want) {
            json_object *want = json_tokener_parse(t[i].want);
            if (!CHECK(got && jp_equal(got, want)))
                fprintf(stderr, "    case %zu: got %s\n    want %s\n    err %s\n", i,
                        got ? json_object_to_json_string(got) : "NULL", t[i].want, e.message);
            json_object_put(want);
        } else {
            if (!CHECK(got == NULL))
                fprintf(stderr, "    case %zu: expected failure, got %s\n", i,
                        json_object_to_json_string(got));
            if (t[i].err_part && !CHECK(strstr(e.message, t[i].err_part)))
                fprintf(stderr, "    case %zu: message \"%s\" lacks \"%s\"\n", i, e.message,
                        t[i].err_part);
        }
        /* inputs are borrowed and never modified */
        CHECK_STR(json_object_to_json_string(tg), before);
        free(before);
        json_object_put(got);
        json_object_put(tg);
        json_object_put(p);
    }
}

TEST(merge_patch_rfc7386_examples) {
    static const struct pcase t[] = {
        {MERGE, "{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}", NULL},
        {MERGE, "{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}", NULL},
        {MERGE, "{\"a\":\"b\"}", "{\"a\":null}", "{}", NULL},
        {MERGE, "{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}", NULL},
        {MERGE, "{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}", NULL},
        {MERGE, "{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}", NULL},
        {MERGE, "{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}",
         "{\"a\":{\"b\":\"d\"}}", NULL},
        {MERGE, "{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}", NULL},
        {MERGE, "[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"c\",\"d\"]", NULL},
        {MERGE, "{\"a\":\"b\"}", "[\"c\"]", "[\"c\"]", NULL},
        {MERGE, "{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}", NULL},
        {MERGE, "[1,2]", "{\"a\":\"b\",\"c\":null}", "{\"a\":\"b\"}", NULL},
        {MERGE, "{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}", NULL},
        /* kubectl apply's three-way patch for a custom resource */
        {MERGE, "{\"metadata\":{\"name\":\"j\",\"labels\":{\"team\":\"a\"}},"
                "\"spec\":{\"args\":[\"a\",\"b\"],\"gpus\":2,\"priority\":5,\"queue\":\"low\"}}",
         "{\"metadata\":{\"labels\":{\"team\":\"b\"}},\"spec\":{\"args\":[\"c\"],\"gpus\":4,"
         "\"priority\":null,\"queue\":\"high\"}}",
         "{\"metadata\":{\"name\":\"j\",\"labels\":{\"team\":\"b\"}},"
         "\"spec\":{\"args\":[\"c\"],\"gpus\":4,\"queue\":\"high\"}}", NULL},
        {MERGE, "{\"a\":1}", "null", NULL, "null"},
    };
    run_cases(t, sizeof t / sizeof t[0]);
}

TEST(json_patch_rfc6902_examples) {
    static const struct pcase t[] = {
        /* A.1 add an object member */
        {JSONP, "{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\"}]",
         "{\"baz\":\"qux\",\"foo\":\"bar\"}", NULL},
        /* A.2 add an array element */
        {JSONP, "{\"foo\":[\"bar\",\"baz\"]}", "[{\"op\":\"add\",\"path\":\"/foo/1\",\"value\":\"qux\"}]",
         "{\"foo\":[\"bar\",\"qux\",\"baz\"]}", NULL},
        {JSONP, "{\"foo\":[\"bar\",\"baz\"]}", "[{\"op\":\"add\",\"path\":\"/foo/0\",\"value\":\"q\"}]",
         "{\"foo\":[\"q\",\"bar\",\"baz\"]}", NULL},
        /* A.3 remove an object member, A.4 remove an array element */
        {JSONP, "{\"baz\":\"qux\",\"foo\":\"bar\"}", "[{\"op\":\"remove\",\"path\":\"/baz\"}]",
         "{\"foo\":\"bar\"}", NULL},
        {JSONP, "{\"foo\":[\"bar\",\"qux\",\"baz\"]}", "[{\"op\":\"remove\",\"path\":\"/foo/1\"}]",
         "{\"foo\":[\"bar\",\"baz\"]}", NULL},
        /* A.5 replace */
        {JSONP, "{\"baz\":\"qux\",\"foo\":\"bar\"}",
         "[{\"op\":\"replace\",\"path\":\"/baz\",\"value\":\"boo\"}]",
         "{\"baz\":\"boo\",\"foo\":\"bar\"}", NULL},
        {JSONP, "{\"a\":[1,2,3]}", "[{\"op\":\"replace\",\"path\":\"/a/1\",\"value\":9}]",
         "{\"a\":[1,9,3]}", NULL},
        /* A.6 move a value, A.7 move an array element */
        {JSONP, "{\"foo\":{\"bar\":\"baz\",\"waldo\":\"fred\"},\"qux\":{\"corge\":\"grault\"}}",
         "[{\"op\":\"move\",\"from\":\"/foo/waldo\",\"path\":\"/qux/thud\"}]",
         "{\"foo\":{\"bar\":\"baz\"},\"qux\":{\"corge\":\"grault\",\"thud\":\"fred\"}}", NULL},
        {JSONP, "{\"foo\":[\"all\",\"grass\",\"cows\",\"eat\"]}",
         "[{\"op\":\"move\",\"from\":\"/foo/1\",\"path\":\"/foo/3\"}]",
         "{\"foo\":[\"all\",\"cows\",\"eat\",\"grass\"]}", NULL},
        /* A.8 test success, A.9 test failure */
        {JSONP, "{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}",
         "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"qux\"},"
         "{\"op\":\"test\",\"path\":\"/foo/1\",\"value\":2.0}]",
         "{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}", NULL},
        {JSONP, "{\"baz\":\"qux\"}", "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"bar\"}]",
         NULL, "op 0 (test): path \"/baz\": test failed"},
        /* A.10 add a nested member object */
        {JSONP, "{\"foo\":\"bar\"}",
         "[{\"op\":\"add\",\"path\":\"/child\",\"value\":{\"grandchild\":{}}}]",
         "{\"foo\":\"bar\",\"child\":{\"grandchild\":{}}}", NULL},
        /* A.12 add to a nonexistent target */
        {JSONP, "{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz/bat\",\"value\":\"qux\"}]",
         NULL, "op 0 (add): path \"/baz/bat\": missing key \"baz\""},
        /* A.14 ~ escapes */
        {JSONP, "{\"/\":9,\"~1\":10}", "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":10}]",
         "{\"/\":9,\"~1\":10}", NULL},
        {JSONP, "{\"metadata\":{\"labels\":{}}}",
         "[{\"op\":\"add\",\"path\":\"/metadata/labels/aiq.dev~1queue\",\"value\":\"hi\"}]",
         "{\"metadata\":{\"labels\":{\"aiq.dev/queue\":\"hi\"}}}", NULL},
        /* A.15 comparing strings and numbers */
        {JSONP, "{\"/\":9,\"~1\":10}", "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":\"10\"}]",
         NULL, "test failed"},
        /* A.16 adding an array value; "-" appends */
        {JSONP, "{\"foo\":[\"bar\"]}", "[{\"op\":\"add\",\"path\":\"/foo/-\",\"value\":[\"abc\",\"def\"]}]",
         "{\"foo\":[\"bar\",[\"abc\",\"def\"]]}", NULL},
        /* copy, whole-document replace, all-or-nothing */
        {JSONP, "{\"a\":{\"b\":1}}", "[{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/c\"},"
                                     "{\"op\":\"replace\",\"path\":\"/c/b\",\"value\":2}]",
         "{\"a\":{\"b\":1},\"c\":{\"b\":2}}", NULL},
        {JSONP, "{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"\",\"value\":[1]}]", "[1]", NULL},
        {JSONP, "{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/b\",\"value\":2},"
                             "{\"op\":\"remove\",\"path\":\"/zz\"}]",
         NULL, "op 1 (remove): path \"/zz\": missing key \"zz\""},
        /* errors name the op index and path */
        {JSONP, "{\"a\":[1]}", "[{\"op\":\"add\",\"path\":\"/a/5\",\"value\":2}]",
         NULL, "op 0 (add): path \"/a/5\": array index out of range or invalid \"5\""},
        {JSONP, "{\"a\":[1]}", "[{\"op\":\"add\",\"path\":\"/a/01\",\"value\":2}]",
         NULL, "invalid \"01\""},
        {JSONP, "{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"/b\",\"value\":2}]",
         NULL, "op 0 (replace): path \"/b\": missing key \"b\""},
        {JSONP, "{\"a\":1}", "[{\"op\":\"frob\",\"path\":\"/a\"}]", NULL, "op 0 (frob)"},
        {JSONP, "{\"a\":1}", "[{\"op\":\"add\",\"value\":1}]", NULL, "op 0: missing \"path\""},
        {JSONP, "{\"a\":1}", "[{\"op\":\"add\",\"path\":\"a\",\"value\":1}]", NULL, "start with '/'"},
        {JSONP, "{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/~2\",\"value\":1}]", NULL, "bad escape"},
        {JSONP, "{\"a\":{\"b\":1}}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a/b/c\"}]",
         NULL, "own child"},
        {JSONP, "{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/b\"}]", NULL, "missing \"value\""},
        {JSONP, "{\"a\":1}", "{\"op\":\"add\"}", NULL, "JSON array"},
        /* kubectl's gate removal */
        {JSONP, "{\"spec\":{\"schedulingGates\":[{\"name\":\"aiq.dev/admission\"}]}}",
         "[{\"op\":\"remove\",\"path\":\"/spec/schedulingGates/0\"}]",
         "{\"spec\":{\"schedulingGates\":[]}}", NULL},
    };
    run_cases(t, sizeof t / sizeof t[0]);
}

#define POD(spec) "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":" spec "}"

TEST(strategic_merge_kubectl_apply) {
    static const struct pcase t[] = {
        /* kubectl apply: the image is omitted from the patch and must stay */
        {SMP, POD("{\"containers\":[{\"name\":\"app\",\"image\":\"nginx:1\",\"args\":[\"a\"]},"
                  "{\"name\":\"side\",\"image\":\"busybox\"}]}"),
         "{\"metadata\":{\"annotations\":{\"x\":\"1\"}},\"spec\":{\"$setElementOrder/containers\":"
         "[{\"name\":\"app\"},{\"name\":\"side\"}],\"containers\":[{\"args\":[\"b\"],\"name\":\"app\"}]}}",
         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"annotations\":{\"x\":\"1\"}},"
         "\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"nginx:1\",\"args\":[\"b\"]},"
         "{\"name\":\"side\",\"image\":\"busybox\"}]}}", NULL},
        /* new container appended; $setElementOrder puts it first */
        {SMP, POD("{\"containers\":[{\"name\":\"app\",\"image\":\"a\"}]}"),
         "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"init\"},{\"name\":\"app\"}],"
         "\"containers\":[{\"name\":\"init\",\"image\":\"b\"}]}}",
         POD("{\"containers\":[{\"name\":\"init\",\"image\":\"b\"},{\"name\":\"app\",\"image\":\"a\"}]}"), NULL},
        /* env by name, ports by containerPort, volumeMounts by mountPath */
        {SMP, POD("{\"containers\":[{\"name\":\"app\",\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
                  "{\"name\":\"B\",\"value\":\"2\"}],\"ports\":[{\"containerPort\":80,\"name\":\"http\"}],"
                  "\"volumeMounts\":[{\"mountPath\":\"/d\",\"name\":\"v1\"}]}]}"),
         "{\"spec\":{\"containers\":[{\"name\":\"app\",\"env\":[{\"name\":\"B\",\"value\":\"3\"},"
         "{\"name\":\"A\",\"$patch\":\"delete\"}],\"ports\":[{\"containerPort\":80,\"protocol\":\"TCP\"},"
         "{\"containerPort\":443}],\"volumeMounts\":[{\"mountPath\":\"/d\",\"readOnly\":true}]}]}}",
         POD("{\"containers\":[{\"name\":\"app\",\"env\":[{\"name\":\"B\",\"value\":\"3\"}],"
             "\"ports\":[{\"containerPort\":80,\"name\":\"http\",\"protocol\":\"TCP\"},{\"containerPort\":443}],"
             "\"volumeMounts\":[{\"mountPath\":\"/d\",\"name\":\"v1\",\"readOnly\":true}]}]}"), NULL},
        /* tolerations are atomic: replaced; schedulingGates merged by name */
        {SMP, POD("{\"tolerations\":[{\"key\":\"a\"}],\"schedulingGates\":[{\"name\":\"g1\"},{\"name\":\"g2\"}]}"),
         "{\"spec\":{\"tolerations\":[{\"key\":\"b\"}],\"schedulingGates\":[{\"name\":\"g1\",\"$patch\":\"delete\"}]}}",
         POD("{\"tolerations\":[{\"key\":\"b\"}],\"schedulingGates\":[{\"name\":\"g2\"}]}"), NULL},
        /* whole list replace directive */
        {SMP, POD("{\"volumes\":[{\"name\":\"a\"},{\"name\":\"b\"}]}"),
         "{\"spec\":{\"volumes\":[{\"$patch\":\"replace\"},{\"name\":\"c\",\"emptyDir\":{}}]}}",
         POD("{\"volumes\":[{\"name\":\"c\",\"emptyDir\":{}}]}"), NULL},
        /* $retainKeys on a volume: switching the source type drops the old one */
        {SMP, POD("{\"volumes\":[{\"name\":\"a\",\"hostPath\":{\"path\":\"/x\"}}]}"),
         "{\"spec\":{\"volumes\":[{\"name\":\"a\",\"$retainKeys\":[\"emptyDir\",\"name\"],\"emptyDir\":{}}]}}",
         POD("{\"volumes\":[{\"name\":\"a\",\"emptyDir\":{}}]}"), NULL},
        /* $patch: replace on a map; null deletes; other lists replaced */
        {SMP, POD("{\"nodeSelector\":{\"a\":\"1\",\"b\":\"2\"},\"priority\":3,\"x\":[1,2]}"),
         "{\"spec\":{\"nodeSelector\":{\"$patch\":\"replace\",\"c\":\"3\"},\"priority\":null,\"x\":[3]}}",
         POD("{\"nodeSelector\":{\"c\":\"3\"},\"x\":[3]}"), NULL},
        {SMP, POD("{\"affinity\":{\"nodeAffinity\":{}},\"a\":1}"),
         "{\"spec\":{\"affinity\":{\"$patch\":\"delete\"}}}", POD("{\"a\":1}"), NULL},
        /* metadata: finalizers merge as a set, $deleteFromPrimitiveList,
         * ownerReferences by uid */
        {SMP, "{\"kind\":\"Lease\",\"metadata\":{\"finalizers\":[\"a\",\"b\"],"
              "\"ownerReferences\":[{\"uid\":\"u1\",\"name\":\"x\"}]}}",
         "{\"metadata\":{\"finalizers\":[\"c\",\"a\"],\"$deleteFromPrimitiveList/finalizers\":[\"b\"],"
         "\"ownerReferences\":[{\"uid\":\"u1\",\"controller\":true},{\"uid\":\"u2\",\"name\":\"y\"}]}}",
         "{\"kind\":\"Lease\",\"metadata\":{\"finalizers\":[\"a\",\"c\"],"
         "\"ownerReferences\":[{\"uid\":\"u1\",\"name\":\"x\",\"controller\":true},{\"uid\":\"u2\",\"name\":\"y\"}]}}",
         NULL},
        /* Node: kubectl cordon, taints atomic, conditions by type */
        {SMP, "{\"kind\":\"Node\",\"spec\":{\"taints\":[{\"key\":\"a\"}]},\"status\":{\"conditions\":"
              "[{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"DiskPressure\",\"status\":\"False\"}]}}",
         "{\"spec\":{\"unschedulable\":true,\"taints\":[{\"key\":\"b\"}]},\"status\":{\"conditions\":"
         "[{\"type\":\"Ready\",\"status\":\"False\"}]}}",
         "{\"kind\":\"Node\",\"spec\":{\"taints\":[{\"key\":\"b\"}],\"unschedulable\":true},\"status\":"
         "{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"},{\"type\":\"DiskPressure\",\"status\":\"False\"}]}}",
         NULL},
        /* errors name the field */
        {SMP, POD("{\"containers\":[{\"name\":\"app\"}]}"),
         "{\"spec\":{\"containers\":[{\"image\":\"x\"}]}}", NULL,
         "field \"spec.containers\": element 0 does not contain declared merge key: name"},
        {SMP, POD("{}"), "{\"spec\":{\"$patch\":\"frob\"}}", NULL,
         "field \"spec\": unknown $patch directive: frob"},
        {SMP, POD("{}"), "{\"spec\":{\"$frob\":1}}", NULL, "unknown directive $frob"},
        {SMP, POD("{}"), "[1]", NULL, "JSON object"},
    };
    run_cases(t, sizeof t / sizeof t[0]);
}

TEST(jp_equal_rules) {
    json_object *a = json_tokener_parse("{\"x\":[1,2.0,{\"y\":null}],\"s\":\"t\"}");
    json_object *b = json_tokener_parse("{\"s\":\"t\",\"x\":[1.0,2,{\"y\":null}]}");
    json_object *c = json_tokener_parse("{\"s\":\"t\",\"x\":[2,1,{\"y\":null}]}");
    CHECK(jp_equal(a, b));
    CHECK(!jp_equal(a, c));
    CHECK(jp_equal(NULL, NULL));
    CHECK(!jp_equal(a, NULL));
    json_object_put(a);
    json_object_put(b);
    json_object_put(c);
}

TEST(json_patch_op_cap) {
    json_object *ops = json_object_new_array();
    for (int i = 0; i < JP_MAX_OPS + 1; i++) {
        json_object *op = json_object_new_object();
        json_object_object_add(op, "op", json_object_new_string("test"));
        json_object_object_add(op, "path", json_object_new_string(""));
        json_object_array_add(ops, op);
    }
    aiq_err e;
    aiq_err_clear(&e);
    json_object *t = json_object_new_object();
    CHECK(jp_json_patch(t, ops, &e) == NULL);
    CHECK_INT(e.code, AIQ_ETOOBIG);
    json_object_put(t);
    json_object_put(ops);
}
