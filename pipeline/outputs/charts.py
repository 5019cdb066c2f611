"""The report's charts as inline SVG, written directly: bars, columns and dots, with their text as text.

matplotlib drew the same charts in a time that, whatever the log's size, was a good part of a small
audit's; these are a few hundred elements of markup. Lengths are in pixels of a 12 px font, whose
characters are taken as 8 px wide to leave room for labels.
"""

from __future__ import annotations

import html
import math

FONT = 12
CHAR = 8  # the width allowed per character of a label (capitals and digits are the widest)
WIDTH = 640
RED, BLUE, GREEN = "#c62828", "#1565c0", "#2e7d32"
INK, FAINT = "#1a1a1a", "#999"


def ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round values (1, 2 or 5 times a power of ten apart) spanning [low, high], about `count` of them."""
    if high <= low:
        high = low + 1
    rough = (high - low) / count
    power = 10 ** math.floor(math.log10(rough))
    step = next(s * power for s in (1, 2, 5, 10) if s * power >= rough)
    first = math.floor(low / step) * step
    return [first + i * step for i in range(math.ceil((high - first) / step - 1e-9) + 1)]


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:.3g}"


def _text(x: float, y: float, text: str, anchor: str = "start", size: int = FONT, extra: str = "") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
            f'dominant-baseline="middle"{extra}>{html.escape(text)}</text>')


def _svg(width: float, height: float, title: str, body: list[str]) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{html.escape(title)}" '
            f'font-family="system-ui, sans-serif" fill="{INK}">'
            + _text(0, 12, title, size=FONT + 2, extra=' font-weight="600"') + "".join(body) + "</svg>")


def _x_axis(left: float, right: float, y: float, marks: list[float], scale, label: str) -> list[str]:
    out = [f'<line x1="{left:.1f}" y1="{y:.1f}" x2="{right:.1f}" y2="{y:.1f}" stroke="{FAINT}"/>']
    for mark in marks:
        x = scale(mark)
        out += [f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{x:.1f}" y2="{y + 4:.1f}" stroke="{FAINT}"/>',
                _text(x, y + 14, _number(mark), "middle", FONT - 2)]
    return [*out, _text((left + right) / 2, y + 32, label, "middle", FONT - 1)]


def bars(labels: list[str], counts: list[int], title: str, unit: str = "findings") -> str:
    """Horizontal bars, first label on top, each with its count at its end."""
    left = 12 + CHAR * max(map(len, labels), default=1)
    right, top, row = WIDTH - 56, 28, 22
    marks = ticks(0, max(counts, default=1))
    scale = lambda value: left + value / marks[-1] * (right - left)  # noqa: E731
    body = []
    for i, (label, count) in enumerate(zip(labels, counts)):
        y = top + i * row
        body += [_text(left - 6, y + row / 2, label, "end"),
                 f'<rect x="{left:.1f}" y="{y + 3:.1f}" width="{scale(count) - left:.1f}" height="{row - 6}" fill="{RED}"/>',
                 _text(scale(count) + 4, y + row / 2, f"{count:,}", size=FONT - 2)]
    axis = top + len(labels) * row + 2
    return _svg(WIDTH, axis + 44, title, body + _x_axis(left, right, axis, marks, scale, unit))


def columns(labels: list[str], counts: list[int], title: str, unit: str = "findings") -> str:
    """Vertical columns, one per label in order, the labels slanted under them."""
    left, top, plot = 56, 28, 150
    step = max(12.0, min(48.0, (WIDTH - left) / max(len(labels), 1)))
    width = left + step * len(labels) + 8
    marks = ticks(0, max(counts, default=1))
    base = top + plot
    scale = lambda value: base - value / marks[-1] * plot  # noqa: E731
    body = [f'<line x1="{left:.1f}" y1="{base:.1f}" x2="{width:.1f}" y2="{base:.1f}" stroke="{FAINT}"/>',
            _text(12, top + plot / 2, unit, "middle", FONT - 1, f' transform="rotate(-90 12 {top + plot / 2:.1f})"')]
    for mark in marks:
        body.append(_text(left - 6, scale(mark), _number(mark), "end", FONT - 2))
    for i, (label, count) in enumerate(zip(labels, counts)):
        x = left + i * step
        body += [f'<rect x="{x + 1:.1f}" y="{scale(count):.1f}" width="{step - 2:.1f}" height="{base - scale(count):.1f}" '
                 f'fill="{RED}"><title>{html.escape(label)}: {count:,}</title></rect>',
                 _text(x + step / 2, base + 8, label, "end", FONT - 3,
                       f' transform="rotate(-60 {x + step / 2:.1f} {base + 8:.1f})"')]
    return _svg(max(width, WIDTH / 2), base + 12 + 0.9 * (FONT - 3) * max(map(len, labels), default=1), title, body)


def dots(groups: list[str], series: dict[str, list[tuple[float, float, float]]], colours: dict[str, str],
         title: str, unit: str) -> str:
    """Per group (a row), one dot per series at its observed value, over a bar from its expected value
    minus to plus its band: `series` name -> per group (observed, expected, band)."""
    left = 12 + CHAR * max(map(len, groups), default=1)
    right, top, row = WIDTH - 16, 48, 26
    values = [v for rows in series.values() for observed, expected, band in rows
              for v in (observed, expected - band, expected + band)]
    marks = ticks(min(values, default=0), max(values, default=1))
    scale = lambda value: left + (value - marks[0]) / (marks[-1] - marks[0]) * (right - left)  # noqa: E731
    body = []
    for i, (name, colour) in enumerate(colours.items()):  # the legend, under the title
        x = left + i * 130
        body += [f'<circle cx="{x + 4:.1f}" cy="30" r="4" fill="{colour}"/>', _text(x + 12, 30, name, size=FONT - 1)]
    offsets = (-0.25, 0, 0.25)
    for i, group in enumerate(groups):
        middle = top + (i + 0.5) * row
        body.append(_text(left - 6, middle, group, "end"))
        for offset, (name, colour) in zip(offsets, colours.items()):
            observed, expected, band = series[name][i]
            y = middle + offset * row
            low, high = scale(expected - band), scale(expected + band)
            body += [f'<g stroke="{colour}" stroke-opacity="0.45">'
                     f'<line x1="{low:.1f}" y1="{y:.1f}" x2="{high:.1f}" y2="{y:.1f}"/>'
                     f'<line x1="{low:.1f}" y1="{y - 3:.1f}" x2="{low:.1f}" y2="{y + 3:.1f}"/>'
                     f'<line x1="{high:.1f}" y1="{y - 3:.1f}" x2="{high:.1f}" y2="{y + 3:.1f}"/></g>',
                     f'<circle cx="{scale(observed):.1f}" cy="{y:.1f}" r="3.5" fill="{colour}">'
                     f'<title>{html.escape(group)} {html.escape(name)}: {observed:.4f} '
                     f'(expected {expected:.4f} ± {band:.4f})</title></circle>']
    axis = top + len(groups) * row + 4
    return _svg(WIDTH, axis + 44, title, body + _x_axis(left, right, axis, marks, scale, unit))
