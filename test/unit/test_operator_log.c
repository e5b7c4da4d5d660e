/* test_operator_log.c -- the log line's values stay logfmt: quotes inside
 * a key="..." value are escaped (oplog_escape_values), values quoted by
 * oplog_quote are not escaped twice, and a whole line parses back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "operator/log.h"
#include "test/unit/th.h"

static const char *esc(const char *in) {
    static char out[512];
    oplog_escape_values(in, out, sizeof out);
    return out;
}

TEST(log_values_escape_inner_quotes) {
    CHECK_STR(esc("rc=EINVAL msg=\"pods \"a-0\" is forbidden\""),
              "rc=EINVAL msg=\"pods \\\"a-0\\\" is forbidden\"");
    /* the value ends at the quote before " key=", not at an inner one */
    CHECK_STR(esc("msg=\"say \"hi\" now\" field=spec.user"),
              "msg=\"say \\\"hi\\\" now\" field=spec.user");
    /* an inner quote followed by a space and words that are not a key */
    CHECK_STR(esc("msg=\"x \"y z\" w\""), "msg=\"x \\\"y z\\\" w\"");
    /* unquoted values and plain text are untouched */
    CHECK_STR(esc("n=3 kind=AIJob"), "n=3 kind=AIJob");
    CHECK_STR(esc(""), "");
}

TEST(log_values_quoted_once) {
    char q[128], line[256];
    oplog_quote(q, sizeof q, "a \"b\" c");
    snprintf(line, sizeof line, "msg=%s next=1", q);
    CHECK_STR(esc(line), line); /* already escaped: kept */
}

TEST(log_line_is_written_escaped) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!CHECK(f != NULL))
        return;
    struct oplog lgs = {OPLOG_DEBUG, f}, *lg = &lgs;
    OPLOG(lg, OPLOG_WARN, "pod_create_failed", "ns/a-0", "7", "http=%d msg=\"%s\"", 403,
          "pods \"a-0\" is forbidden: violates PodSecurity \"baseline:latest\"");
    fclose(f);
    CHECK(strstr(buf, " event=pod_create_failed obj=ns/a-0 rv=7 http=403 msg=\"pods \\\"a-0\\\" "
                      "is forbidden: violates PodSecurity \\\"baseline:latest\\\"\"\n") != NULL);
    free(buf);
}
