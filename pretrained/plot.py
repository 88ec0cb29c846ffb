#!/usr/bin/env python3
"""Draws a training run's loss curve (pretrained/train.py's log.tsv) as an SVG: bits per byte
of the training batches and of each held-out corpus against the step. Plain SVG, written by
hand, so that the plot needs nothing beyond Python.

Usage: pretrained/plot.py LOG.tsv OUT.svg [TITLE]
"""

import sys

W, H, LEFT, RIGHT, TOP, BOTTOM = 720, 420, 60, 150, 30, 45
COLOURS = ["#444444", "#1f77b4", "#d62728", "#2ca02c", "#9467bd"]


def read(path):
    """Each column's (step, value) points; a run with other corpora repeats the header."""
    series, names = {}, []
    for line in open(path):
        cells = line.rstrip("\n").split("\t")
        if cells[0] == "step":
            names = cells
            continue
        step = int(cells[0])
        for name, cell in zip(names[2:], cells[2:]):
            series.setdefault(name, []).append((step, float(cell)))
    return series


def main():
    log, out = sys.argv[1], sys.argv[2]
    title = sys.argv[3] if len(sys.argv) > 3 else log
    series = read(log)
    points = [p for s in series.values() for p in s]
    x1 = max(s for s, _ in points)
    # The first steps' losses (near 8) would flatten the rest: the axis starts at the
    # smallest value seen after the first tenth of the run.
    late = [v for s, v in points if s >= x1 / 10] or [v for _, v in points]
    y0, y1 = min(late) - 0.05, min(max(late) + 0.3, max(v for _, v in points))
    px = lambda s: LEFT + (W - LEFT - RIGHT) * s / x1
    py = lambda v: TOP + (H - TOP - BOTTOM) * (1 - (min(max(v, y0), y1) - y0) / (y1 - y0))
    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{LEFT}" y="18" font-size="14">{title}</text>',
        f'<line x1="{LEFT}" y1="{H - BOTTOM}" x2="{W - RIGHT}" y2="{H - BOTTOM}" stroke="black"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{H - BOTTOM}" stroke="black"/>',
        f'<text x="{(W - RIGHT + LEFT) / 2}" y="{H - 8}" text-anchor="middle">step</text>',
        f'<text x="14" y="{TOP + (H - TOP - BOTTOM) / 2}" transform="rotate(-90 14 '
        f'{TOP + (H - TOP - BOTTOM) / 2})" text-anchor="middle">bits per byte</text>',
    ]
    for i in range(6):
        v = y0 + (y1 - y0) * i / 5
        svg.append(f'<text x="{LEFT - 6}" y="{py(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
        svg.append(f'<line x1="{LEFT}" y1="{py(v):.1f}" x2="{W - RIGHT}" y2="{py(v):.1f}" '
                   'stroke="#dddddd"/>')
        s = x1 * i / 5
        svg.append(f'<text x="{px(s):.1f}" y="{H - BOTTOM + 16}" text-anchor="middle">{s:.0f}</text>')
    for k, (name, pts) in enumerate(series.items()):
        colour = COLOURS[k % len(COLOURS)]
        path = " ".join(f"{px(s):.1f},{py(v):.1f}" for s, v in pts)
        svg.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        y = TOP + 16 * k
        svg.append(f'<line x1="{W - RIGHT + 10}" y1="{y}" x2="{W - RIGHT + 30}" y2="{y}" '
                   f'stroke="{colour}" stroke-width="2"/>')
        svg.append(f'<text x="{W - RIGHT + 34}" y="{y + 4}">{name} {pts[-1][1]:.3f}</text>')
    svg.append("</svg>")
    open(out, "w").write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
