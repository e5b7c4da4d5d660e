/* test_operator_loop.c -- how long the operator's loop waits for a watch
 * event before its cron is due again (srv_wait_ms, operator/server.c): a
 * wanted cycle is woken for at its minimum spacing, a cycle waiting for
 * Nodes to settle just after the settle window, and an operator that
 * would run no cycle (not ready, not leading, store failing) never spins
 * on a zero wait. */
#include <stdlib.h>

#include "operator/server.h"
#include "test/unit/th.h"

static struct server *loop_server(long cycle_ms) {
    struct server *s = calloc(1, sizeof *s);
    if (s) {
        s->flags.cycle_ms = cycle_ms;
        s->ready = true;
        s->leading = true;
    }
    return s;
}

TEST(loop_waits_at_most_200_ms_or_the_cycle) {
    struct server *s = loop_server(1000);
    CHECK(s != NULL);
    double now = 1e9;
    s->last_cycle = now - 0.1;
    CHECK_INT(srv_wait_ms(s, now), 200); /* nothing wanted */
    s->flags.cycle_ms = 50;
    CHECK_INT(srv_wait_ms(s, now), 50);
    free(s);
}

TEST(loop_wakes_when_a_wanted_cycle_comes_due) {
    struct server *s = loop_server(1000);
    CHECK(s != NULL);
    double now = 1e9;
    s->cycle_wanted = true;
    s->last_cycle = now - 0.1; /* due 250 ms after the last: in 150 */
    long w = srv_wait_ms(s, now);
    CHECK(w >= 150 && w <= 152);
    s->last_cycle = now - 0.3; /* overdue: do not wait at all */
    CHECK_INT(srv_wait_ms(s, now), 0);
    s->last_cycle = now - 0.01; /* due in 240: the 200 ms tick first */
    CHECK_INT(srv_wait_ms(s, now), 200);
    free(s);
}

TEST(loop_wakes_just_after_nodes_settle) {
    struct server *s = loop_server(1000);
    CHECK(s != NULL);
    double now = 1e9;
    s->cycle_wanted = true;
    s->last_cycle = now - 2; /* the cycle is due: only the nodes hold it */
    s->settle_from = now - 0.2;
    s->nodes_grew_at = now - 0.03;
    long w = srv_wait_ms(s, now);
    CHECK(w >= (long)(SRV_SETTLE_S * 1e3) - 30 && w <= (long)(SRV_SETTLE_S * 1e3) - 28);
    free(s);
}

TEST(loop_never_spins_when_no_cycle_would_run) {
    struct server *s = loop_server(1000);
    CHECK(s != NULL);
    double now = 1e9;
    s->cycle_wanted = true; /* overdue, but srv_cron would not run it */
    s->last_cycle = now - 5;
    s->settle_from = now - 5;
    s->nodes_grew_at = now - 5;
    s->ready = false;
    CHECK_INT(srv_wait_ms(s, now), 200);
    s->ready = true;
    s->leading = false;
    CHECK_INT(srv_wait_ms(s, now), 200);
    s->leading = true;
    s->store_bad = true;
    CHECK_INT(srv_wait_ms(s, now), 200);
    free(s);
}
