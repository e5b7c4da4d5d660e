/* sim_svg.h -- small inline-SVG charts for aiq-sim's HTML report
 * (sim_html.c): a line chart (one polyline per series, optionally drawn as
 * steps), a grouped bar chart with a p95 whisker per bar, "nice" axis
 * ticks, a legend with one colour per series from a colour-blind-safe
 * palette, and XML/HTML escaping of every string that came from a trace.
 *
 * Output is plain SVG 1.1 elements meant to sit inside an HTML5 page: no
 * script, no external reference. Tooltips are SVG <title> children.
 * Points that are not finite are skipped; a chart with no finite point
 * is drawn as a "no data" panel (never a NaN in a path). */
#ifndef AIQ_SIM_SVG_H
#define AIQ_SIM_SVG_H

#include <stdbool.h>
#include <stdio.h>

/* Colours of the palette (Okabe & Ito's colour-blind-safe set); series k
 * gets colour k % SIM_SVG_NCOLOURS and, from the second round on, a
 * dash pattern so more than 8 series stay apart. */
#define SIM_SVG_NCOLOURS 8
const char *sim_svg_colour(int k);

/* Writes s to out with & < > " ' as entities, control characters other
 * than tab and newline, and bytes that are not well-formed UTF-8, as '?'.
 * At most max_chars characters (code points) are written, then "..."
 * (max_chars <= 0: no limit). NULL writes nothing. */
void sim_svg_escape(FILE *out, const char *s, int max_chars);

/* Axis ticks: lo, hi widened to whole multiples of step (1, 2 or 5 x a
 * power of ten) with about 5 intervals. An empty or inverted range is
 * widened around its value (a range at 0 becomes 0..1; one that starts
 * at or above 0 stays at or above 0). Non-finite input gives 0..1. */
struct sim_svg_ticks {
    double lo, hi, step;
    int n;                   /* ticks drawn: lo, lo+step, ..., hi */
};
void sim_svg_ticks(double lo, double hi, struct sim_svg_ticks *t);

/* One line series: n points (x[i], y[i]); name borrowed. */
struct sim_svg_series {
    const char *name;
    const double *x, *y;
    int n;
};

/* What every chart has: a title, axis labels (with units) and ranges.
 * x_from_zero / y_from_zero put 0 into the axis range; y_max > 0 caps
 * the y axis (e.g. 1 for a fraction, 100 for a percentage). */
struct sim_svg_chart {
    const char *id;          /* id attribute of the <svg> (ASCII, no escaping) */
    const char *title, *xlabel, *ylabel;
    bool x_from_zero, y_from_zero;
    double y_max;
    bool steps;              /* draw each series as steps (post) */
    bool markers;            /* a circle with a tooltip at every point */
    const char *yfmt;        /* printf format of a y value in tooltips, "%.3g" */
};

/* Writes one line chart. Returns the number of finite points drawn (0:
 * the "no data" panel was drawn instead). */
int sim_svg_lines(FILE *out, const struct sim_svg_chart *c, const struct sim_svg_series *s,
                  int ns);

/* One bar series: a value and a whisker top per category (NAN = no bar,
 * e.g. no job of that group started). */
struct sim_svg_bars {
    const char *name;
    const double *value, *whisker;
};

/* Writes a grouped bar chart: categories along x (labels escaped and
 * shortened, full text in the tooltip), one bar per series in each
 * category, the whisker drawn as a line from the bar's top to its value.
 * whisker_name names the whisker in tooltips and the legend ("p95").
 * Returns the number of bars drawn (0: "no data" panel). */
int sim_svg_bar_chart(FILE *out, const struct sim_svg_chart *c, const char *const *cats,
                      int ncat, const struct sim_svg_bars *s, int ns, const char *whisker_name);

#endif
