#!/usr/bin/env python3
"""Draws the plots of docs/sim for issue 18's sections 1 and 2 from the CSV files beside them:

- docs/sim/queue-grid/avg_vs_tiresias.svg and p99_vs_tiresias.svg: each queue policy's average
  (and p99) JCT over Tiresias' at every point of the grid (queue-grid/grid.csv, seed 202 and
  Philly), with gittins at the four more evaluation seeds of queue-grid/seeds.csv;
- docs/sim/placement-variants/balance_minus_fgd.svg: fgd-balance's GPU allocation at 130% demand
  minus fgd's, per order, for every variant of placement-variants/variants.csv.

Standard library only (the elastic plot does the same in scripts/sim_elastic_grid.sh): the
simulator's own SVG charts (src/sim/svg_plot.h) draw lines and bars, not these dot plots.
Usage: scripts/plot_sim_grids.py [DOCS_SIM_DIR]   (default docs/sim)
"""
import csv
import math
import os
import sys
from collections import defaultdict
from xml.sax.saxutils import escape

# Colours with at least 3:1 contrast on white, each with its own marker shape.
STYLE = {
    "gittins": ("#1f5fbf", "circle"),
    "las-qssf": ("#b35900", "square"),
    "qssf": ("#2e7d32", "diamond"),
    "other seeds": ("#6a8fd0", "ring"),
}


def marker(shape, x, y, color, r=4.0):
    if shape == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{color}"/>'
    if shape == "ring":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r - 0.5}" fill="none" stroke="{color}"/>'
    if shape == "square":
        return f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r}" height="{2 * r}" fill="{color}"/>'
    d = r * 1.3  # diamond
    return (f'<path d="M{x:.1f},{y - d:.1f} L{x + d:.1f},{y:.1f} L{x:.1f},{y + d:.1f} '
            f'L{x - d:.1f},{y:.1f} Z" fill="{color}"/>')


class DotPlot:
    """Categories along x, one value axis (linear or log) along y, dots per category."""

    def __init__(self, title, y_label, categories, y_min, y_max, log, width=1100, height=560):
        self.title, self.y_label, self.categories = title, y_label, categories
        self.y_min, self.y_max, self.log = y_min, y_max, log
        self.w, self.h = width, height
        self.left, self.right, self.top, self.bottom = 70, 80, 40, 190
        self.body = []

    def x(self, i):
        span = self.w - self.left - self.right
        return self.left + span * (i + 0.5) / len(self.categories)

    def y(self, v):
        f = (lambda t: math.log(t)) if self.log else (lambda t: t)
        frac = (f(v) - f(self.y_min)) / (f(self.y_max) - f(self.y_min))
        return self.top + (self.h - self.top - self.bottom) * (1 - frac)

    def dot(self, i, v, color, shape, offset=0.0):
        """A dot at category i; a value beyond the axis is drawn at its edge as an arrow."""
        x = self.x(i) + offset
        if v > self.y_max or v < self.y_min:
            edge = self.y(self.y_max if v > self.y_max else self.y_min)
            tip = edge - 6 if v > self.y_max else edge + 6
            self.body.append(f'<path d="M{x - 4:.1f},{edge:.1f} L{x + 4:.1f},{edge:.1f} '
                             f'L{x:.1f},{tip:.1f} Z" fill="{color}"/>')
            return
        self.body.append(marker(shape, x, self.y(v), color))

    def render(self, ticks, reference, legend, groups):
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.w}" height="{self.h}" '
               'font-family="sans-serif" font-size="11">',
               f'<rect width="{self.w}" height="{self.h}" fill="white"/>',
               f'<text x="{self.w / 2}" y="20" text-anchor="middle" font-size="14">'
               f'{escape(self.title)}</text>']
        x0, x1 = self.left, self.w - self.right
        for t in ticks:
            y = self.y(t)
            out.append(f'<line x1="{x0}" x2="{x1}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
            out.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end">{t:g}</text>')
        yr = self.y(reference)
        out.append(f'<line x1="{x0}" x2="{x1}" y1="{yr:.1f}" y2="{yr:.1f}" stroke="#333" '
                   'stroke-dasharray="6 3"/>')
        mid = (self.top + self.h - self.bottom) / 2
        out.append(f'<text transform="translate(16,{mid:.0f}) rotate(-90)" text-anchor="middle">'
                   f'{escape(self.y_label)}</text>')
        for start, end, name in groups:  # separators and group names under the labels
            xs = self.x(start) - (self.x(1) - self.x(0)) / 2
            out.append(f'<line x1="{xs:.1f}" x2="{xs:.1f}" y1="{self.top}" '
                       f'y2="{self.h - self.bottom + 150}" stroke="#bbb"/>')
            out.append(f'<text x="{(self.x(start) + self.x(end)) / 2:.1f}" '
                       f'y="{self.h - self.bottom + 165}" text-anchor="middle" font-size="12">'
                       f'{escape(name)}</text>')
        base = self.h - self.bottom + 8
        for i, label in enumerate(self.categories):
            out.append(f'<text transform="translate({self.x(i) + 3:.1f},{base}) rotate(60)">'
                       f'{escape(label)}</text>')
        out.extend(self.body)
        lx = x0 + 10
        for name, (color, shape) in legend:
            out.append(marker(shape, lx, self.top + 8, color))
            out.append(f'<text x="{lx + 9}" y="{self.top + 12}">{escape(name)}</text>')
            lx += 16 + 7 * len(name)
        out.append("</svg>")
        return "\n".join(out) + "\n"


def queue_plots(folder):
    rows = defaultdict(dict)  # point -> policy -> row (seed 202 and Philly)
    order = []
    for r in csv.DictReader(open(os.path.join(folder, "grid.csv"))):
        key = r["point"]
        if key not in rows:
            order.append(key)
        rows[key][r["policy"]] = r
    seeds = defaultdict(dict)  # (point, seed) -> policy -> row
    for r in csv.DictReader(open(os.path.join(folder, "seeds.csv"))):
        if r["seed"] != "202":
            seeds[(r["point"], r["seed"])][r["policy"]] = r
    labels = [p.replace(" (", "\n(").split("\n")[0].replace("/load ", "/") for p in order]
    philly = sum(1 for p in order if p.startswith(("demand", "philly")))
    groups = [(0, philly - 1, "Philly")]
    start = philly
    for shape in ("heavy", "bimodal", "narrow", "pareto"):
        n = sum(1 for p in order if p.startswith(shape + "/"))
        groups.append((start, start + n - 1, shape + " run times"))
        start += n
    for metric, name, top in (("avg_jct_h", "average JCT", 2.5), ("p99_jct_h", "p99 JCT", 2.5)):
        plot = DotPlot(f"{name} over Tiresias' at each grid point (below the dashed line: better "
                       "than Tiresias; arrows: off the chart)", f"{name} / Tiresias' (log)",
                       labels, 0.25, top, log=True)
        for i, point in enumerate(order):
            base = float(rows[point]["tiresias"][metric])
            policies = ["qssf", "las-qssf", "gittins"] if metric == "avg_jct_h" else ["gittins"]
            for k, policy in enumerate(policies):
                if policy in rows[point]:
                    color, shape = STYLE[policy]
                    offset = (k - (len(policies) - 1) / 2) * 5
                    plot.dot(i, float(rows[point][policy][metric]) / base, color, shape, offset)
            for seed in ("303", "404", "505", "606"):
                got = seeds.get((point, seed))
                if got:
                    color, shape = STYLE["other seeds"]
                    # Beside the seed-202 dots rather than on top of them.
                    plot.dot(i, float(got["gittins"][metric]) / float(got["tiresias"][metric]),
                             color, shape, 11 if metric == "avg_jct_h" else 6)
        legend = [(p, STYLE[p]) for p in (["qssf", "las-qssf"] if metric == "avg_jct_h" else [])]
        legend += [("gittins", STYLE["gittins"]), ("gittins, seeds 303-606", STYLE["other seeds"])]
        svg = plot.render([0.25, 0.5, 0.75, 1, 1.5, 2, 2.5], 1, legend, groups)
        out = os.path.join(folder, "avg_vs_tiresias.svg" if metric == "avg_jct_h"
                           else "p99_vs_tiresias.svg")
        open(out, "w").write(svg)
        print(f"wrote {out}", file=sys.stderr)


def placement_plot(folder):
    alloc = defaultdict(dict)  # variant -> (policy, seed) -> allocation
    order = []
    for r in csv.DictReader(open(os.path.join(folder, "variants.csv"))):
        if r["variant"] not in alloc:
            order.append(r["variant"])
        alloc[r["variant"]][(r["policy"], r["seed"])] = float(r["allocation_130"])
    plot = DotPlot("fgd-balance's GPU allocation at 130% demand minus fgd's, one dot per order "
                   "(above the dashed line: fgd-balance allocates more)",
                   "allocation difference (points of capacity)", order, -0.3, 1.05, log=False)
    for i, variant in enumerate(order):
        for (policy, seed), value in sorted(alloc[variant].items()):
            if policy == "fgd-balance" and ("fgd", seed) in alloc[variant]:
                plot.dot(i, value - alloc[variant][("fgd", seed)], *STYLE["gittins"])
    svg = plot.render([-0.3, 0, 0.3, 0.6, 0.9], 0, [], [])
    out = os.path.join(folder, "balance_minus_fgd.svg")
    open(out, "w").write(svg)
    print(f"wrote {out}", file=sys.stderr)


def main():
    docs = sys.argv[1] if len(sys.argv) > 1 else "docs/sim"
    queue_plots(os.path.join(docs, "queue-grid"))
    placement_plot(os.path.join(docs, "placement-variants"))


if __name__ == "__main__":
    main()
