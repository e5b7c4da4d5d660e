/* sim_svg.c -- inline-SVG line and bar charts for aiq-sim's HTML report:
 * escaping, nice ticks, axes with labels, legend, "no data" panel. The
 * layout is fixed (W x H pixels, the plot on the left, the legend on the
 * right) so every chart of a report lines up. See sim_svg.h. */
#include "simulator/sim_svg.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define W 780.0
#define H 380.0
#define PL 74.0           /* plot left */
#define PT 44.0           /* plot top */
#define PR (W - 200.0)    /* plot right; the legend starts 10 px after */
#define PB (H - 70.0)     /* plot bottom; room for rotated category labels */
#define LEGEND_CHARS 24   /* legend names are cut here (full name in the tooltip) */

static const char *const palette[SIM_SVG_NCOLOURS] = {
    "#0072B2", "#E69F00", "#009E73", "#CC79A7",
    "#D55E00", "#56B4E9", "#000000", "#F0E442",
};

/* Dash pattern of series k: solid for the first round of colours. */
static const char *dash(int k) {
    static const char *const d[] = {"", "6 3", "2 2", "8 3 2 3"};
    return d[(k / SIM_SVG_NCOLOURS) % 4];
}

const char *sim_svg_colour(int k) {
    return palette[(k < 0 ? -k : k) % SIM_SVG_NCOLOURS];
}

/* Length of the well-formed UTF-8 sequence at s (1..4), or 0. */
static int utf8_len(const unsigned char *s) {
    int n = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
    if (n == 0 || (n == 3 && s[0] > 0xEF))
        return 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    /* overlong 3- and 4-byte forms, surrogates, past U+10FFFF */
    if ((n == 3 && s[0] == 0xE0 && s[1] < 0xA0) || (n == 3 && s[0] == 0xED && s[1] >= 0xA0) ||
        (n == 4 && s[0] == 0xF0 && s[1] < 0x90) || (n == 4 && s[0] == 0xF4 && s[1] >= 0x90))
        return 0;
    return n;
}

/* Escaping; see sim_svg.h. */
void sim_svg_escape(FILE *out, const char *s, int max_chars) {
    if (!s)
        return;
    const unsigned char *p = (const unsigned char *)s;
    for (int chars = 0; *p; chars++) {
        if (max_chars > 0 && chars == max_chars) {
            fputs("...", out);
            return;
        }
        switch (*p) {
        case '&': fputs("&amp;", out); p++; continue;
        case '<': fputs("&lt;", out); p++; continue;
        case '>': fputs("&gt;", out); p++; continue;
        case '"': fputs("&quot;", out); p++; continue;
        case '\'': fputs("&#39;", out); p++; continue;
        default: break;
        }
        if (*p < 0x80) {
            fputc(*p < 0x20 && *p != '\t' && *p != '\n' ? '?' : *p == 0x7F ? '?' : *p, out);
            p++;
            continue;
        }
        int n = utf8_len(p);
        if (n == 0) {
            fputc('?', out);
            p++;
            continue;
        }
        fwrite(p, 1, (size_t)n, out);
        p += n;
    }
}

/* Ticks; see sim_svg.h. */
void sim_svg_ticks(double lo, double hi, struct sim_svg_ticks *t) {
    if (!isfinite(lo) || !isfinite(hi) || !isfinite(hi - lo)) {
        lo = 0;
        hi = 1;
    }
    if (hi < lo) {
        double x = lo;
        lo = hi;
        hi = x;
    }
    if (hi - lo <= 1e-12 * fmax(fabs(lo), fabs(hi))) {
        double pad = lo == 0 ? 1 : fabs(lo) * 0.5;
        lo = lo >= 0 && lo - pad < 0 ? 0 : lo - pad;
        hi += pad;
    }
    double raw = (hi - lo) / 5, mag = pow(10, floor(log10(raw))), norm = raw / mag;
    double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
    t->lo = floor(lo / step) * step;
    t->hi = ceil(hi / step) * step;
    t->step = step;
    t->n = (int)llround((t->hi - t->lo) / step) + 1;
    if (!isfinite(step) || step <= 0 || t->n < 2 || t->n > 50) {
        t->lo = lo;
        t->hi = hi;
        t->step = hi - lo;
        t->n = 2;
    }
}

struct frame {
    struct sim_svg_ticks x, y;
};

static double px(const struct frame *f, double x) {
    return PL + (x - f->x.lo) / (f->x.hi - f->x.lo) * (PR - PL);
}

static double py(const struct frame *f, double y) {
    double v = PB - (y - f->y.lo) / (f->y.hi - f->y.lo) * (PB - PT);
    return v < PT ? PT : v > PB ? PB : v;
}

/* <svg> open tag, the title on top and the axis labels. */
static void open_svg(FILE *out, const struct sim_svg_chart *c) {
    fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" id=\"%s\" "
            "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
            "aria-labelledby=\"%s-t\">\n", c->id, W, H, W, H, c->id);
    fprintf(out, "<title id=\"%s-t\">", c->id);
    sim_svg_escape(out, c->title, 0);
    fputs("</title>\n<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n",
          out);
    fprintf(out, "<text class=\"title\" x=\"%.0f\" y=\"24\">", PL);
    sim_svg_escape(out, c->title, 0);
    fprintf(out, "</text>\n<text class=\"axis-label\" x=\"%.1f\" y=\"%.0f\" "
            "text-anchor=\"middle\">", (PL + PR) / 2, H - 8);
    sim_svg_escape(out, c->xlabel, 0);
    fprintf(out, "</text>\n<text class=\"axis-label\" transform=\"translate(16 %.1f) "
            "rotate(-90)\" text-anchor=\"middle\">", (PT + PB) / 2);
    sim_svg_escape(out, c->ylabel, 0);
    fputs("</text>\n", out);
}

/* The "no data" panel in place of the plot. */
static void no_data(FILE *out) {
    fprintf(out, "<rect class=\"no-data\" x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" "
            "fill=\"#f4f4f4\" stroke=\"#999999\"/>\n<text class=\"no-data\" x=\"%.1f\" "
            "y=\"%.1f\" text-anchor=\"middle\">no data</text>\n</svg>\n",
            PL, PT, PR - PL, PB - PT, (PL + PR) / 2, (PT + PB) / 2);
}

/* Grid lines and tick labels of the y axis, and of the x axis when
 * xticks (bar charts label categories instead). */
static void axes(FILE *out, const struct frame *f, bool xticks) {
    fputs("<g class=\"axes\" font-size=\"11\" fill=\"#333333\">\n", out);
    for (int i = 0; i < f->y.n; i++) {
        double v = f->y.lo + f->y.step * i, y = py(f, v);
        fprintf(out, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#dddddd\"/>"
                "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n",
                PL, y, PR, y, PL - 6, y + 4, v);
    }
    for (int i = 0; xticks && i < f->x.n; i++) {
        double v = f->x.lo + f->x.step * i, x = px(f, v);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#999999\"/>"
                "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%.4g</text>\n",
                x, PB, x, PB + 5, x, PB + 18, v);
    }
    fprintf(out, "<path d=\"M%.0f %.0fV%.0fH%.0f\" fill=\"none\" stroke=\"#333333\"/>\n</g>\n",
            PL, PT, PB, PR);
}

/* One legend entry at row k: a swatch (line or box) and the name. */
static void legend_entry(FILE *out, int k, const char *name, const char *colour,
                         const char *dsh, bool box) {
    double y = PT + 6 + 20 * k, x = PR + 14;
    fputs("<g class=\"legend-item\"><title>", out);
    sim_svg_escape(out, name, 0);
    fputs("</title>", out);
    if (box)
        fprintf(out, "<rect x=\"%.0f\" y=\"%.0f\" width=\"18\" height=\"10\" fill=\"%s\"/>",
                x, y - 5, colour);
    else
        fprintf(out, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" "
                "stroke-width=\"3\" stroke-dasharray=\"%s\"/>", x, y, x + 18, y, colour, dsh);
    fprintf(out, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\">", x + 24, y + 4);
    sim_svg_escape(out, name, LEGEND_CHARS);
    fputs("</text></g>\n", out);
}

static bool finite_pt(const struct sim_svg_series *s, int i) {
    return isfinite(s->x[i]) && isfinite(s->y[i]);
}

/* The frame of a line chart from the finite points; returns their count. */
static int line_frame(const struct sim_svg_chart *c, const struct sim_svg_series *s, int ns,
                      struct frame *f) {
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    int n = 0;
    for (int k = 0; k < ns; k++)
        for (int i = 0; i < s[k].n; i++) {
            if (!finite_pt(&s[k], i))
                continue;
            x0 = fmin(x0, s[k].x[i]);
            x1 = fmax(x1, s[k].x[i]);
            y0 = fmin(y0, s[k].y[i]);
            y1 = fmax(y1, s[k].y[i]);
            n++;
        }
    if (n == 0)
        return 0;
    if (c->x_from_zero)
        x0 = fmin(x0, 0);
    if (c->y_from_zero)
        y0 = fmin(y0, 0);
    if (c->y_max > 0 && y1 <= c->y_max && y0 < c->y_max)
        y1 = c->y_max;
    sim_svg_ticks(x0, x1, &f->x);
    sim_svg_ticks(y0, y1, &f->y);
    return n;
}

/* One series as a polyline (with steps when asked) and optional
 * markers, each with a tooltip. */
static void series_path(FILE *out, const struct sim_svg_chart *c, const struct frame *f,
                        const struct sim_svg_series *s, int k) {
    const char *yfmt = c->yfmt ? c->yfmt : "%.3g";
    fprintf(out, "<g class=\"series\" data-series=\"%d\"><title>", k);
    sim_svg_escape(out, s->name, 0);
    fprintf(out, "</title>\n<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
            "stroke-dasharray=\"%s\" points=\"", sim_svg_colour(k), dash(k));
    bool first = true;
    double prev_y = 0;
    int last = s->n - 1;
    while (last >= 0 && !finite_pt(s, last))
        last--;
    for (int i = 0; i <= last; i++) {
        if (!finite_pt(s, i))
            continue;
        double x = px(f, s->x[i]), y = py(f, s->y[i]);
        /* steps: a point at the level of the one before adds nothing
         * (binned series repeat levels), except the last */
        if (c->steps && !first && y == prev_y && i < last)
            continue;
        if (c->steps && !first && y != prev_y)
            fprintf(out, "%.1f,%.1f ", x, prev_y);
        fprintf(out, "%.1f,%.1f ", x, y);
        prev_y = y;
        first = false;
    }
    fputs("\"/>\n", out);
    for (int i = 0; c->markers && i < s->n; i++) {
        if (!finite_pt(s, i))
            continue;
        fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>",
                px(f, s->x[i]), py(f, s->y[i]), sim_svg_colour(k));
        sim_svg_escape(out, s->name, 0);
        fprintf(out, ": x %.4g, y ", s->x[i]);
        fprintf(out, yfmt, s->y[i]);
        fputs("</title></circle>\n", out);
    }
    fputs("</g>\n", out);
}

/* Line chart; see sim_svg.h. */
int sim_svg_lines(FILE *out, const struct sim_svg_chart *c, const struct sim_svg_series *s,
                  int ns) {
    struct frame f;
    open_svg(out, c);
    int n = line_frame(c, s, ns, &f);
    if (n == 0) {
        no_data(out);
        return 0;
    }
    axes(out, &f, true);
    for (int k = 0; k < ns; k++)
        series_path(out, c, &f, &s[k], k);
    fputs("<g class=\"legend\">\n", out);
    for (int k = 0; k < ns; k++)
        legend_entry(out, k, s[k].name, sim_svg_colour(k), dash(k), false);
    fputs("</g>\n</svg>\n", out);
    return n;
}

/* The y frame of a bar chart; returns the number of bars. */
static int bar_frame(const struct sim_svg_chart *c, int ncat, const struct sim_svg_bars *s,
                     int ns, struct frame *f) {
    double y0 = c->y_from_zero ? 0 : INFINITY, y1 = -INFINITY;
    int n = 0;
    for (int k = 0; k < ns; k++)
        for (int i = 0; i < ncat; i++) {
            if (!isfinite(s[k].value[i]))
                continue;
            y0 = fmin(y0, s[k].value[i]);
            y1 = fmax(y1, s[k].value[i]);
            if (s[k].whisker && isfinite(s[k].whisker[i]))
                y1 = fmax(y1, s[k].whisker[i]);
            n++;
        }
    if (n == 0)
        return 0;
    sim_svg_ticks(0, 1, &f->x);
    sim_svg_ticks(y0, y1, &f->y);
    return n;
}

/* Bar k of category i with its whisker and tooltip. */
static void bar(FILE *out, const struct frame *f, const char *cat, const struct sim_svg_bars *s,
                int k, int i, double x, double bw, const char *wname) {
    double v = s->value[i], top = py(f, v), base = py(f, f->y.lo > 0 ? f->y.lo : 0);
    double w = s->whisker ? s->whisker[i] : NAN;
    fputs("<g class=\"bar\"><title>", out);
    sim_svg_escape(out, cat, 0);
    fputs(" / ", out);
    sim_svg_escape(out, s->name, 0);
    fprintf(out, ": %.4g", v);
    if (isfinite(w)) {
        fprintf(out, ", %s ", wname);
        fprintf(out, "%.4g", w);
    }
    fprintf(out, "</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"%s\"/>", x, fmin(top, base), bw, fabs(base - top), sim_svg_colour(k));
    if (isfinite(w))
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222222\" "
                "stroke-width=\"1.5\"/><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#222222\" stroke-width=\"1.5\"/>", x + bw / 2, top, x + bw / 2,
                py(f, w), x, py(f, w), x + bw, py(f, w));
    fputs("</g>\n", out);
}

/* A category's label under its bars, rotated when there are many. */
static void cat_label(FILE *out, const char *cat, double cx, bool rotate) {
    if (rotate)
        fprintf(out, "<text class=\"cat\" font-size=\"11\" text-anchor=\"end\" "
                "transform=\"translate(%.1f %.0f) rotate(-40)\"><title>", cx + 3, PB + 10);
    else
        fprintf(out, "<text class=\"cat\" font-size=\"11\" text-anchor=\"middle\" x=\"%.1f\" "
                "y=\"%.0f\"><title>", cx, PB + 16);
    sim_svg_escape(out, cat, 0);
    fputs("</title>", out);
    sim_svg_escape(out, cat, 14);
    fputs("</text>\n", out);
}

/* Bar chart; see sim_svg.h. */
int sim_svg_bar_chart(FILE *out, const struct sim_svg_chart *c, const char *const *cats,
                      int ncat, const struct sim_svg_bars *s, int ns, const char *whisker_name) {
    struct frame f;
    open_svg(out, c);
    int n = ncat > 0 && ns > 0 ? bar_frame(c, ncat, s, ns, &f) : 0;
    if (n == 0) {
        no_data(out);
        return 0;
    }
    axes(out, &f, false);
    double slot = (PR - PL) / ncat, bw = slot * 0.8 / ns;
    bool rotate = ncat > 6;
    for (int i = 0; i < ncat; i++) {
        double x0 = PL + slot * i + slot * 0.1;
        for (int k = 0; k < ns; k++)
            if (isfinite(s[k].value[i]))
                bar(out, &f, cats[i], &s[k], k, i, x0 + bw * k, bw, whisker_name);
        cat_label(out, cats[i], PL + slot * (i + 0.5), rotate);
    }
    fputs("<g class=\"legend\">\n", out);
    for (int k = 0; k < ns; k++)
        legend_entry(out, k, s[k].name, sim_svg_colour(k), "", true);
    if (whisker_name)
        legend_entry(out, ns, whisker_name, "#222222", "", false);
    fputs("</g>\n</svg>\n", out);
    return n;
}
