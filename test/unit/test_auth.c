/* test_auth.c -- the local API server's static token file (auth.c,
 * apisrv__tokens_load): kube-apiserver's CSV format with quoted group
 * lists, comments and blank lines, system:authenticated added, and
 * malformed lines rejected with the file, line and text. */
#include "test/apiserver/apisrv_int.h"
#include "test/unit/th.h"

#include <stdlib.h>
#include <unistd.h>

/* Writes text to a temp file; returns its malloc'd path. */
static char *write_tmp(const char *text) {
    char *path = strdup("/tmp/aiq-test-tokens.XXXXXX");
    int fd = mkstemp(path);
    size_t n = strlen(text);
    if (fd < 0 || write(fd, text, n) != (ssize_t)n) {
        if (fd >= 0) close(fd);
        free(path);
        return NULL;
    }
    close(fd);
    return path;
}

TEST(auth_tokens_file) {
    struct apisrv s;
    aiq_err err;
    char *path = write_tmp("# demo users\n"
                           "t-alice,alice,u1,\"aiq:vision,team-x\"\n"
                           "\n"
                           "t-bob,bob,u2\r\n"
                           "t-q,\"quoted, name\",u3,\"a\"\"b\"\n");
    memset(&s, 0, sizeof s);
    aiq_err_clear(&err);
    CHECK(path != NULL);
    CHECK_INT(apisrv__tokens_load(&s, path, &err), AIQ_OK);
    CHECK(s.authn);
    CHECK_INT(s.n_tokens, 3);
    if (s.n_tokens == 3) {
        CHECK_STR(s.tokens[0].token, "t-alice");
        CHECK_STR(s.tokens[0].user.name, "alice");
        CHECK_STR(s.tokens[0].user.uid, "u1");
        CHECK_INT(s.tokens[0].user.n_groups, 3);
        CHECK(apisrv__user_in(&s.tokens[0].user, "aiq:vision"));
        CHECK(apisrv__user_in(&s.tokens[0].user, "team-x"));
        CHECK(apisrv__user_in(&s.tokens[0].user, "system:authenticated"));
        CHECK(!apisrv__user_in(&s.tokens[0].user, "aiq"));
        CHECK_STR(s.tokens[1].token, "t-bob");
        CHECK_INT(s.tokens[1].user.n_groups, 1);
        CHECK_STR(s.tokens[2].user.name, "quoted, name");
        CHECK(apisrv__user_in(&s.tokens[2].user, "a\"b"));
    }
    apisrv__tokens_free(&s);
    CHECK(!s.authn);
    CHECK(s.tokens == NULL);
    apisrv__tokens_free(&s);   /* twice is harmless */
    unlink(path);
    free(path);
}

TEST(auth_tokens_file_errors) {
    static const struct { const char *text, *want; } t[] = {
        {"t1,alice,u1\nonly-a-token\n", ":2: want token,user,uid"},
        {"t1,,u1\n", ":1: want token,user,uid"},
        {",alice,u1\n", ":1: want token,user,uid"},
        {"t1,alice,u1,\"unterminated\n", ":1: want token,user,uid"},
        {"t1,alice,u1,\"g\"junk\n", ":1: want token,user,uid"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        struct apisrv s;
        aiq_err err;
        char *path = write_tmp(t[i].text);
        memset(&s, 0, sizeof s);
        aiq_err_clear(&err);
        CHECK(path != NULL);
        CHECK_INT(apisrv__tokens_load(&s, path, &err), AIQ_EPARSE);
        if (!CHECK(strstr(err.message, t[i].want) && strstr(err.message, path)))
            fprintf(stderr, "    case %zu: %s\n", i, err.message);
        CHECK(!s.authn);
        CHECK_INT(s.n_tokens, 0);
        unlink(path);
        free(path);
    }
    /* a missing file names itself */
    struct apisrv s;
    aiq_err err;
    memset(&s, 0, sizeof s);
    aiq_err_clear(&err);
    CHECK_INT(apisrv__tokens_load(&s, "/nonexistent/tokens.csv", &err), AIQ_EIO);
    CHECK(strstr(err.message, "/nonexistent/tokens.csv") != NULL);
    /* an overlong line is refused, not split */
    char *big = malloc(10000);
    memset(big, 'x', 9000);
    memcpy(big + 9000, ",u,1\n", 6);
    char *path = write_tmp(big);
    memset(&s, 0, sizeof s);
    aiq_err_clear(&err);
    CHECK_INT(apisrv__tokens_load(&s, path, &err), AIQ_EPARSE);
    CHECK(strstr(err.message, "longer than") != NULL);
    CHECK_INT(s.n_tokens, 0);
    unlink(path);
    free(path);
    free(big);
}
