/* test_sim_html.c -- aiq-sim's HTML report and its SVG charts: every
 * output is checked for balanced tags by a small checker here and for
 * NaN/infinity in numbers; escaping of trace strings (markup, quotes,
 * control characters, broken UTF-8, truncation); axis ticks on edge
 * ranges (empty, all equal, negative, not finite); charts with one
 * point, all-equal values and no data; a hand-built run whose waits,
 * queue length and JCT CDF are checked through the tooltips and points;
 * a run without jobs, a run of one job; the run limit and a mismatched
 * trace. */
#include "simulator/sim_html.h"
#include "simulator/sim_svg.h"
#include "test/unit/th.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers --------------------------------------------------------- */

struct cap {
    char *buf;
    size_t len;
    FILE *f;
};

static FILE *cap_open(struct cap *c) {
    c->buf = NULL;
    c->len = 0;
    c->f = open_memstream(&c->buf, &c->len);
    return c->f;
}

/* Closes the stream; the text stays in c->buf (free it). */
static const char *cap_text(struct cap *c) {
    fclose(c->f);
    c->f = NULL;
    return c->buf ? c->buf : "";
}

/* Tag checker, as strict as XML: every <x ...> is closed by </x> in
 * order (self-closing <x/> and <!DOCTYPE> aside; HTML's unclosed void
 * elements are errors too, since the report is also XHTML), no '<' inside a tag,
 * no bare '&' that does not start an entity, attribute quotes balanced.
 * Returns NULL when well-formed, else a static description. */
static const char *tags_balanced(const char *s) {
    static char why[160];
    const char *stack[256];
    size_t slen[256];
    int depth = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '&') {
            const char *q = p + 1;
            while (isalnum((unsigned char)*q) || *q == '#')
                q++;
            if (*q != ';' || q == p + 1) {
                snprintf(why, sizeof why, "bare & at %td", p - s);
                return why;
            }
            continue;
        }
        if (*p != '<')
            continue;
        const char *end = p + 1;
        int quotes = 0;
        for (; *end && (*end != '>' || quotes % 2); end++) {
            if (*end == '"')
                quotes++;
            if (*end == '<' && quotes % 2 == 0) {
                snprintf(why, sizeof why, "'<' inside a tag at %td", end - s);
                return why;
            }
        }
        if (!*end) {
            snprintf(why, sizeof why, "unterminated tag at %td", p - s);
            return why;
        }
        if (p[1] == '!') {
            p = end;
            continue;
        }
        bool closing = p[1] == '/';
        const char *name = p + 1 + closing;
        size_t n = strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
        if (n == 0) {
            snprintf(why, sizeof why, "tag without a name at %td", p - s);
            return why;
        }
        if (closing) {
            if (depth == 0 || slen[depth - 1] != n || strncmp(stack[depth - 1], name, n) != 0) {
                snprintf(why, sizeof why, "</%.*s> at %td closes %.*s", (int)n, name, p - s,
                         depth ? (int)slen[depth - 1] : 4, depth ? stack[depth - 1] : "none");
                return why;
            }
            depth--;
        } else if (end[-1] != '/') {
            if (depth == 256)
                return "too deep";
            stack[depth] = name;
            slen[depth++] = n;
        }
        p = end;
    }
    if (depth) {
        snprintf(why, sizeof why, "<%.*s> never closed", (int)slen[depth - 1], stack[depth - 1]);
        return why;
    }
    return NULL;
}

/* True when "nan" or "inf" appears as a word (any case): a number that
 * was not finite reached the output. */
static bool has_nonfinite(const char *s) {
    for (const char *p = s; *p; p++) {
        if (p > s && isalpha((unsigned char)p[-1]))
            continue;
        if ((strncasecmp(p, "nan", 3) == 0 || strncasecmp(p, "inf", 3) == 0) &&
            !isalpha((unsigned char)p[3]))
            return true;
    }
    return false;
}

static int count(const char *s, const char *needle) {
    int n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* needle occurs in [from, end). */
static bool found_in(const char *from, const char *end, const char *needle) {
    const char *p = from && end ? strstr(from, needle) : NULL;
    return p && p < end;
}

#define CHECK_WELLFORMED(s)                                   \
    do {                                                      \
        const char *why__ = tags_balanced(s);                 \
        if (!CHECK(why__ == NULL))                            \
            fprintf(stderr, "  not well-formed: %s\n", why__); \
        CHECK(!has_nonfinite(s));                             \
    } while (0)

/* ---- the checker itself ---------------------------------------------- */

TEST(checker_catches_bad_markup) {
    CHECK(tags_balanced("<svg><g><title>a</title></g></svg>") == NULL);
    CHECK(tags_balanced("<!DOCTYPE html><html><head><meta charset=\"utf-8\"/></head></html>") ==
          NULL);
    CHECK(tags_balanced("<html><head><meta charset=\"utf-8\"></head></html>") != NULL);
    CHECK(tags_balanced("<svg><g></svg>") != NULL);
    CHECK(tags_balanced("<svg>") != NULL);
    CHECK(tags_balanced("</g>") != NULL);
    CHECK(tags_balanced("<text>a & b</text>") != NULL);
    CHECK(tags_balanced("<text x=\"1\" <b>") != NULL);
    CHECK(tags_balanced("<text>&amp;&#39;</text>") == NULL);
    CHECK(has_nonfinite("<path d=\"M nan 3\"/>"));
    CHECK(has_nonfinite("x=\"-inf\""));
    CHECK(!has_nonfinite("the inflation protocol, finance"));
}

/* ---- escaping ---------------------------------------------------------- */

static char *esc(const char *s, int max) {
    struct cap c;
    if (!cap_open(&c))
        return NULL;
    sim_svg_escape(c.f, s, max);
    cap_text(&c);
    return c.buf;
}

TEST(escape_markup_quotes_controls_utf8) {
    char *a = esc("<script>alert('x&y')</script>\"", 0);
    CHECK_STR(a, "&lt;script&gt;alert(&#39;x&amp;y&#39;)&lt;/script&gt;&quot;");
    char *b = esc("a\x01" "b\x7f" "c\td", 0);
    CHECK_STR(b, "a?b?c\td");
    char *c = esc("caf\xc3\xa9 \xff\xfe \xe2\x82 x \xed\xa0\x80", 0); /* é, junk, cut, surrogate */
    CHECK_STR(c, "caf\xc3\xa9 ?? ?? x ???");
    char *d = esc("gr\xc3\xbcppe-long-name", 4);                /* 4 code points */
    CHECK_STR(d, "gr\xc3\xbcp...");
    char *e = esc("abc", 3);
    CHECK_STR(e, "abc");
    char *f = esc(NULL, 0);
    CHECK_STR(f, "");
    free(a);
    free(b);
    free(c);
    free(d);
    free(e);
    free(f);
}

/* ---- ticks ------------------------------------------------------------- */

TEST(ticks_nice_steps) {
    struct sim_svg_ticks t;
    sim_svg_ticks(0, 97, &t);
    CHECK_DBL(t.lo, 0, 0);
    CHECK_DBL(t.hi, 100, 1e-9);
    CHECK_DBL(t.step, 20, 1e-9);
    CHECK_INT(t.n, 6);
    sim_svg_ticks(0.013, 0.047, &t);         /* 0.034 / 5 = 0.0068 -> 0.005 */
    CHECK(t.lo <= 0.013 && t.hi >= 0.047);
    CHECK_DBL(t.step, 0.005, 1e-12);
    CHECK_DBL(t.lo, 0.01, 1e-12);
    CHECK_INT(t.n, 9);
    sim_svg_ticks(-35, 12, &t);
    CHECK(t.lo <= -35 && t.hi >= 12 && t.n >= 3 && t.n <= 12);
}

TEST(ticks_edge_ranges) {
    struct sim_svg_ticks t;
    sim_svg_ticks(0, 0, &t);                 /* nothing: 0..1 */
    CHECK_DBL(t.lo, 0, 0);
    CHECK_DBL(t.hi, 1, 1e-12);
    sim_svg_ticks(5, 5, &t);                 /* all equal: around 5, not below 0 */
    CHECK(t.lo >= 0 && t.lo < 5 && t.hi > 5);
    CHECK(t.n >= 2 && t.n <= 12);
    sim_svg_ticks(-3, -3, &t);
    CHECK(t.lo < -3 && t.hi > -3);
    sim_svg_ticks(1e9, 1e9, &t);
    CHECK(t.lo < 1e9 && t.hi > 1e9);
    sim_svg_ticks(NAN, 3, &t);               /* not finite: 0..1 */
    CHECK_DBL(t.lo, 0, 0);
    CHECK_DBL(t.hi, 1, 1e-12);
    sim_svg_ticks(0, INFINITY, &t);
    CHECK_DBL(t.hi, 1, 1e-12);
    sim_svg_ticks(10, 2, &t);                /* inverted */
    CHECK(t.lo <= 2 && t.hi >= 10);
    CHECK(isfinite(t.step) && t.step > 0);
}

/* ---- charts ------------------------------------------------------------ */

static const struct sim_svg_chart line_chart = {
    .id = "c", .title = "T <1>", .xlabel = "x (h)", .ylabel = "y (%)", .steps = true};

TEST(lines_no_data_panel) {
    struct cap c;
    if (!CHECK(cap_open(&c)))
        return;
    CHECK_INT(sim_svg_lines(c.f, &line_chart, NULL, 0), 0);
    double x[2] = {NAN, 1}, y[2] = {1, INFINITY};
    struct sim_svg_series s = {"only bad points", x, y, 2};
    CHECK_INT(sim_svg_lines(c.f, &line_chart, &s, 1), 0);
    const char *t = cap_text(&c);
    CHECK_WELLFORMED(t);
    CHECK_INT(count(t, ">no data</text>"), 2);
    CHECK(strstr(t, "polyline") == NULL);
    CHECK(strstr(t, "T &lt;1&gt;") != NULL);
    free(c.buf);
}

TEST(lines_one_point_and_equal_values) {
    struct cap c;
    if (!CHECK(cap_open(&c)))
        return;
    double x1[1] = {3}, y1[1] = {7};
    struct sim_svg_series one = {"one", x1, y1, 1};
    CHECK_INT(sim_svg_lines(c.f, &line_chart, &one, 1), 1);
    double x[3] = {2, 2, 2}, y[3] = {0, 0, 0};
    struct sim_svg_series eq = {"equal", x, y, 3};
    CHECK_INT(sim_svg_lines(c.f, &line_chart, &eq, 1), 3);
    const char *t = cap_text(&c);
    CHECK_WELLFORMED(t);
    CHECK_INT(count(t, "<polyline"), 2);
    CHECK(strstr(t, "no data") == NULL);
    free(c.buf);
}

/* Each point lands where the axes say: x 0..10 over the plot's 506 px
 * (74..580), y 0..100 over 266 px (310 up to 44). */
TEST(lines_scale_points) {
    struct cap c;
    if (!CHECK(cap_open(&c)))
        return;
    double x[3] = {0, 5, 10}, y[3] = {0, 50, 100};
    struct sim_svg_series s = {"a&b", x, y, 3};
    struct sim_svg_chart ch = {.id = "s", .title = "t", .xlabel = "x", .ylabel = "y",
                               .markers = true};
    CHECK_INT(sim_svg_lines(c.f, &ch, &s, 1), 3);
    const char *t = cap_text(&c);
    CHECK_WELLFORMED(t);
    CHECK(strstr(t, "points=\"74.0,310.0 327.0,177.0 580.0,44.0 \"") != NULL);
    CHECK_INT(count(t, "<circle"), 3);
    CHECK(strstr(t, "a&amp;b: x 5, y 50</title>") != NULL);
    CHECK(strstr(t, ">a&amp;b</text>") != NULL);        /* legend */
    free(c.buf);
}

TEST(many_series_colours_and_dashes) {
    struct cap c;
    if (!CHECK(cap_open(&c)))
        return;
    double x[2] = {0, 1}, y[2] = {1, 2};
    struct sim_svg_series s[10];
    for (int k = 0; k < 10; k++)
        s[k] = (struct sim_svg_series){"p", x, y, 2};
    sim_svg_lines(c.f, &line_chart, s, 10);
    const char *t = cap_text(&c);
    CHECK_WELLFORMED(t);
    CHECK(strcmp(sim_svg_colour(0), sim_svg_colour(SIM_SVG_NCOLOURS)) == 0);
    CHECK(strstr(t, "stroke-dasharray=\"6 3\"") != NULL); /* series 8 and 9 dashed */
    CHECK_INT(count(t, "class=\"legend-item\""), 10);
    free(c.buf);
}

TEST(bars_values_whiskers_no_data) {
    struct cap c;
    if (!CHECK(cap_open(&c)))
        return;
    const char *cats[3] = {"g<1>", "g2", "g3"};
    double v[3] = {1, NAN, 2}, w[3] = {4, NAN, 2};
    struct sim_svg_bars b = {"fifo", v, w};
    struct sim_svg_chart ch = {.id = "b", .title = "Wait", .ylabel = "wait (hours)",
                               .y_from_zero = true};
    CHECK_INT(sim_svg_bar_chart(c.f, &ch, cats, 3, &b, 1, "p95"), 2);
    double none[1] = {NAN};
    struct sim_svg_bars nb = {"x", none, NULL};
    CHECK_INT(sim_svg_bar_chart(c.f, &ch, cats, 1, &nb, 1, "p95"), 0);
    CHECK_INT(sim_svg_bar_chart(c.f, &ch, cats, 0, &nb, 1, "p95"), 0);
    const char *t = cap_text(&c);
    CHECK_WELLFORMED(t);
    CHECK(strstr(t, "<title>g&lt;1&gt; / fifo: 1, p95 4</title>") != NULL);
    CHECK_INT(count(t, "class=\"bar\""), 2);
    CHECK_INT(count(t, ">no data</text>"), 2);
    free(c.buf);
}

/* ---- the report -------------------------------------------------------- */

/* Three jobs of two groups: a (user u1) waits 1 h and 3 h, b (user u2)
 * waits 0; JCTs 2, 4, 1 h. */
struct fixture {
    struct sim_trace *tr;
    struct sim_jobres jr[3];
    double util[3];
    const char *gname[2], *uname[2];
    int ugroup[2];
    struct sim_result res;
    struct sim_metrics m;
};

static int fixture_init(struct fixture *f, const char *ga) {
    memset(f, 0, sizeof *f);
    aiq_err e;
    aiq_err_clear(&e);
    if (!(f->tr = sim_trace_create()))
        return -1;
    const char *grp[3] = {ga, ga, "b"}, *usr[3] = {"u1", "u1", "u2"};
    double sub[3] = {0, 0, 3600}, wait[3] = {1, 3, 0}, run[3] = {1, 1, 1};
    for (int i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof id, "j%d", i);
        struct sim_job j = {.id = id, .user = (char *)usr[i], .group = (char *)grp[i],
                            .submit = sub[i], .replicas = 1, .gpus = 1, .duration_s = 3600};
        if (sim_trace_add_job(f->tr, &j, &e) != AIQ_OK)
            return -1;
        double t0 = SIM_EPOCH + sub[i];
        f->jr[i] = (struct sim_jobres){.submit = t0, .start = t0 + wait[i] * 3600,
                                       .end = t0 + (wait[i] + run[i]) * 3600,
                                       .state = SIM_J_DONE};
    }
    f->util[0] = 0.5;
    f->util[1] = 1;
    f->util[2] = 0.25;
    f->gname[0] = ga;
    f->gname[1] = "b";
    f->uname[0] = "u1";
    f->uname[1] = "u2";
    f->ugroup[0] = 0;
    f->ugroup[1] = 1;
    f->res = (struct sim_result){.njobs = 3, .jobs = f->jr, .t0 = SIM_EPOCH,
                                 .t_end = SIM_EPOCH + 4 * 3600, .total_gpus = 8,
                                 .util = f->util, .nutil = 3, .ngroups = 2, .nusers = 2,
                                 .group_name = f->gname, .user_name = f->uname,
                                 .user_group = f->ugroup};
    f->m.njobs = f->m.ndone = 3;
    return 0;
}

static char *report(struct sim_html *h) {
    struct cap c;
    if (!cap_open(&c))
        return NULL;
    sim_html_write(c.f, h);
    cap_text(&c);
    return c.buf;
}

TEST(report_from_a_run) {
    struct fixture f;
    aiq_err e;
    aiq_err_clear(&e);
    struct sim_html *h = sim_html_create("report <&>");
    if (!CHECK(h) || !CHECK(fixture_init(&f, "<b>a&\"g\"</b>") == 0))
        goto out;
    CHECK_INT(sim_html_set_note(h, "trace 'x'", &e), AIQ_OK);
    CHECK_INT(sim_html_add_run(h, "fifo", f.tr, &f.res, &f.m, &e), AIQ_OK);
    CHECK_INT(sim_html_add_run(h, "srjf & co", f.tr, &f.res, &f.m, &e), AIQ_OK);
    char *t = report(h);
    if (!CHECK(t))
        goto out;
    CHECK_WELLFORMED(t);
    CHECK(strncmp(t, "<!DOCTYPE html>", 15) == 0);
    CHECK(strstr(t, "<title>report &lt;&amp;&gt;</title>") != NULL);
    CHECK(strstr(t, "trace &#39;x&#39;") != NULL);
    /* no trace string reaches the page unescaped; nothing external */
    CHECK(strstr(t, "<b>") == NULL);
    CHECK(strstr(t, "<script") == NULL);
    CHECK(strstr(t, "https:") == NULL);
    for (const char *u = strstr(t, "http:"); u; u = strstr(u + 1, "http:"))
        CHECK(strncmp(u, "http://www.w3.org/2000/svg\"", 27) == 0 ||
              strncmp(u, "http://www.w3.org/1999/xhtml\"", 29) == 0);
    CHECK_INT(count(t, "<svg "), 5);
    CHECK(strstr(t, "id=\"jct-cdf\"") && strstr(t, "id=\"gpu-util\"") &&
          strstr(t, "id=\"queue-len\"") && strstr(t, "id=\"wait-groups\"") &&
          strstr(t, "id=\"wait-users\""));
    /* group a: waits 1 and 3 h -> mean 2, p95 3; b: 0 */
    CHECK(strstr(t, "&lt;b&gt;a&amp;&quot;g&quot;&lt;/b&gt; / fifo: 2, p95 3</title>") != NULL);
    CHECK(strstr(t, "b / srjf &amp; co: 0, p95 0</title>") != NULL);
    CHECK(strstr(t, "&lt;b&gt;a&amp;&quot;g&quot;&lt;/b&gt;/u1 / fifo: 2, p95 3</title>") !=
          NULL);
    CHECK(strstr(t, ">srjf &amp; co</text>") != NULL);
    CHECK_INT(count(t, "class=\"legend-item\""), 2 * 5 + 2); /* + p95 in two bar charts */
    free(t);
out:
    sim_html_free(h);
    sim_trace_free(f.tr);
}

/* The series behind the charts: CDF steps at 1, 2, 4 h; utilisation
 * 50, 100, 25 % per hour; jobs waiting: two in hour 0 to 1, one to 3 h. */
TEST(report_series_values) {
    struct fixture f;
    aiq_err e;
    aiq_err_clear(&e);
    struct sim_html *h = sim_html_create("r");
    if (!CHECK(h) || !CHECK(fixture_init(&f, "a") == 0))
        goto out;
    CHECK_INT(sim_html_add_run(h, "p", f.tr, &f.res, &f.m, &e), AIQ_OK);
    char *t = report(h);
    if (!CHECK(t))
        goto out;
    CHECK_WELLFORMED(t);
    /* CDF: x 0..4 h over 506 px; y 0..1 over 266 px. Points (1,0)
     * (1,1/3) (2,2/3) (4,1), drawn as steps. */
    CHECK(strstr(t, "points=\"200.5,310.0 200.5,310.0 200.5,221.3 327.0,221.3 327.0,132.7 "
                    "580.0,132.7 580.0,44.0 \"") != NULL);
    /* utilisation: hours 0,1,2 at 50,100,25 % and the closing point at 3 */
    const char *u = strstr(t, "id=\"gpu-util\"");
    CHECK(u && strstr(u, "points=\"74.0,177.0 242.7,177.0 242.7,44.0 411.3,44.0 411.3,243.5 "
                         "580.0,243.5 \"") != NULL);
    free(t);
out:
    sim_html_free(h);
    sim_trace_free(f.tr);
}

TEST(report_queue_length) {
    struct fixture f;
    aiq_err e;
    aiq_err_clear(&e);
    struct sim_html *h = sim_html_create("r");
    if (!CHECK(h) || !CHECK(fixture_init(&f, "a") == 0))
        goto out;
    CHECK_INT(sim_html_add_run(h, "p", f.tr, &f.res, &f.m, &e), AIQ_OK);
    char *t = report(h);
    if (!CHECK(t))
        goto out;
    /* 400 bins of 36 s over 4 h, each the most jobs waiting in it: 2
     * (both group-a jobs) up to the bin holding 1 h, 1 up to the bin
     * holding 3 h, then 0; y axis 0..2 (266 px), x 0..4 h (506 px) */
    const char *q = strstr(t, "id=\"queue-len\"");
    const char *qe = q ? strstr(q, "</svg>") : NULL;
    CHECK(found_in(q, qe, "points=\"74.0,44.0 201.8,44.0 201.8,177.0 454.8,177.0 454.8,310.0 "
                          "580.0,310.0 \""));
    CHECK(found_in(q, qe, ">2</text>"));
    CHECK(found_in(q, qe, ">1.5</text>"));
    CHECK(!found_in(q, qe, ">2.5</text>"));
    free(t);
out:
    sim_html_free(h);
    sim_trace_free(f.tr);
}

TEST(report_zero_jobs_and_nothing_finished) {
    struct fixture f;
    aiq_err e;
    aiq_err_clear(&e);
    struct sim_html *h = sim_html_create("r");
    struct sim_trace *empty = sim_trace_create();
    if (!CHECK(h) || !CHECK(empty) || !CHECK(fixture_init(&f, "a") == 0))
        goto out;
    /* nothing started: no CDF, no bars; the queue still shows */
    for (int i = 0; i < 3; i++)
        f.jr[i] = (struct sim_jobres){.submit = f.jr[i].submit, .state = SIM_J_UNFINISHED};
    CHECK_INT(sim_html_add_run(h, "stuck", f.tr, &f.res, &f.m, &e), AIQ_OK);
    char *t = report(h);
    if (CHECK(t)) {
        CHECK_WELLFORMED(t);
        CHECK_INT(count(t, ">no data</text>"), 3); /* CDF, group bars, user bars */
        free(t);
    }
    sim_html_free(h);
    /* a trace without jobs (the report's own limit, not aiq-sim's) */
    h = sim_html_create("");
    struct sim_result r0 = {.t0 = SIM_EPOCH, .t_end = SIM_EPOCH};
    struct sim_metrics m0 = {0};
    if (!CHECK(h))
        goto out;
    CHECK_INT(sim_html_add_run(h, "none", empty, &r0, &m0, &e), AIQ_OK);
    t = report(h);
    if (CHECK(t)) {
        CHECK_WELLFORMED(t);
        CHECK_INT(count(t, ">no data</text>"), 4); /* all but the queue (0 jobs, flat) */
        free(t);
    }
out:
    sim_html_free(h);
    sim_trace_free(empty);
    sim_trace_free(f.tr);
}

TEST(report_limits_and_mismatch) {
    struct fixture f;
    aiq_err e;
    aiq_err_clear(&e);
    struct sim_html *h = sim_html_create("r");
    if (!CHECK(h) || !CHECK(fixture_init(&f, "a") == 0))
        goto out;
    for (int k = 0; k < SIM_HTML_MAX_RUNS; k++)
        CHECK_INT(sim_html_add_run(h, "p", f.tr, &f.res, &f.m, &e), AIQ_OK);
    CHECK_INT(sim_html_add_run(h, "p", f.tr, &f.res, &f.m, &e), AIQ_ETOOBIG);
    sim_html_free(h);
    h = sim_html_create("r");
    if (!CHECK(h))
        goto out;
    CHECK_INT(sim_html_add_run(h, "p", f.tr, &f.res, &f.m, &e), AIQ_OK);
    f.res.nusers = 1;
    aiq_err_clear(&e);
    CHECK_INT(sim_html_add_run(h, "q", f.tr, &f.res, &f.m, &e), AIQ_EINVAL);
    CHECK(strstr(e.message, "run 'q'") != NULL);
    f.res.nusers = 2;
    f.res.njobs = 2;
    CHECK_INT(sim_html_add_run(h, "r", f.tr, &f.res, &f.m, &e), AIQ_EINVAL);
out:
    sim_html_free(h);
    sim_trace_free(f.tr);
}

TEST(report_inflate_curves) {
    aiq_err e;
    aiq_err_clear(&e);
    struct sim_html *h = sim_html_create("inflate");
    if (!CHECK(h))
        return;
    double x[3] = {50, 60, 70}, y[3] = {0, 2.5, NAN}, z[3] = {1, 1, 1};
    CHECK_INT(sim_html_add_inflate(h, "binpack", x, y, 3, &e), AIQ_OK);
    CHECK_INT(sim_html_add_inflate(h, "spread", x, z, 3, &e), AIQ_OK);
    CHECK_INT(sim_html_add_inflate(h, "x", x, z, SIM_INFLATE_MAX_POINTS + 1, &e), AIQ_ETOOBIG);
    char *t = report(h);
    if (CHECK(t)) {
        CHECK_WELLFORMED(t);
        CHECK_INT(count(t, "<svg "), 1);
        CHECK(strstr(t, "id=\"unalloc\"") != NULL);
        CHECK(strstr(t, "binpack: x 60, y 2.50%</title>") != NULL);
        CHECK_INT(count(t, "<circle"), 5);              /* the NAN step is skipped */
        CHECK(strstr(t, "Summary") == NULL);            /* no runs, no run sections */
        CHECK(strstr(t, "<tr><td>60</td><td>2.50</td><td>1.00</td></tr>") != NULL);
        CHECK(strstr(t, "<tr><td>70</td><td>-</td><td>1.00</td></tr>") != NULL);
        free(t);
    }
    sim_html_free(h);
}

/* One job that waited 0 h and ran 1 h: every chart is drawn (nothing
 * collapses to a zero-width axis or a NaN), the CDF is one step at 1 h. */
TEST(report_one_job) {
    struct fixture f;
    aiq_err e;
    aiq_err_clear(&e);
    struct sim_html *h = sim_html_create("one");
    if (!CHECK(h) || !CHECK(fixture_init(&f, "a") == 0))
        goto out;
    f.tr->njobs = 1;        /* the first job only; put back before freeing */
    f.res.njobs = 1;
    f.res.ngroups = f.res.nusers = 1;
    f.jr[0].start = f.jr[0].submit;
    f.jr[0].end = f.jr[0].submit + 3600;
    f.res.t_end = f.jr[0].end;
    f.res.nutil = 1;
    CHECK_INT(sim_html_add_run(h, "p", f.tr, &f.res, &f.m, &e), AIQ_OK);
    char *t = report(h);
    if (CHECK(t)) {
        CHECK_WELLFORMED(t);
        CHECK(strstr(t, "no data") == NULL);
        CHECK_INT(count(t, "<polyline"), 3);
        CHECK_INT(count(t, "class=\"bar\""), 2);
        /* x 0..1 h: (1 h, 0) then the step up to 1 */
        CHECK(strstr(t, "points=\"580.0,310.0 580.0,310.0 580.0,44.0 \"") != NULL);
        CHECK(strstr(t, "a / p: 0, p95 0</title>") != NULL);
        free(t);
    }
    f.tr->njobs = 3;
out:
    sim_html_free(h);
    sim_trace_free(f.tr);
}
