"""Small charts as inline SVG, with the standard library only: line charts (optional markers and dashes) and
stacked bar charts, one or more panels side by side in one figure, each with a title, axis labels, round ticks,
a light grid and a legend.

:func:`render` returns one ``<svg>`` element with a ``viewBox``, so that it scales with the page, and without ids,
so that many can sit in one HTML document.
"""

from __future__ import annotations

import html
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# The "tab10" palette: ten distinct colours, the ones the page's plots had before.
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
          "#17becf")
FONT = 10  # px: titles one larger, ticks and legend one smaller
_CHAR = 0.6  # a character's mean width in ems: text is laid out without measuring it
_GRID = "#e2e8f0"
_AXIS = "#a0aec0"
_MUTED = "#4a5568"


@dataclass(frozen=True)
class Line:
    """A series drawn as a line through ``(xs[i], ys[i])``; points without a finite y are left out."""

    label: str
    xs: Sequence[float]
    ys: Sequence[float | None]
    color: str | None = None  # None: the panel's next colour
    dashed: bool = False
    markers: bool = False


@dataclass(frozen=True)
class Bars:
    """One layer of a stacked bar chart: x -> height, stacked on the panel's layers before it."""

    label: str
    values: Mapping[float, float]
    color: str | None = None  # None: the panel's next colour


@dataclass(frozen=True)
class Panel:
    """One plot area. With ``xticks`` (or bars) the x values are discrete positions, such as cycles: the x axis
    reaches half a step beyond the outer ones; otherwise it runs between round ticks around the data, as the y
    axis does unless ``ylim`` is given."""

    lines: Sequence[Line] = ()
    bars: Sequence[Bars] = ()
    title: str = ""
    xlabel: str = ""
    ylabel: str = ""
    xticks: Sequence[float] | None = None  # None: the bars' positions, or round numbers
    ylim: tuple[float, float] | None = None  # None: from round ticks around the data
    integer_y: bool = False  # counts: no ticks between whole numbers
    log_y: bool = False
    note: str = ""  # text in the middle of the plot area, e.g. why it is empty


def nice_ticks(lo: float, hi: float, count: int = 6, integer: bool = False) -> list[float]:
    """Round ticks (steps of 1, 2 or 5 times a power of ten, about ``count`` of them) from ``lo`` or below to
    ``hi`` or above."""
    lo, hi = min(lo, hi), max(lo, hi)
    if hi == lo:  # a flat series: room around it, but no negative ticks under values that cannot be negative
        room = abs(lo) / 2 or 1.0
        lo, hi = (lo - room if lo < 0 else max(lo - room, 0.0)), hi + room
    raw = (hi - lo) / count
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw * (1 - 1e-9))
    if integer:
        step = max(step, 1.0)
    digits = max(0, -math.floor(math.log10(step)))  # rounding drops float noise such as 0.30000000000000004
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    return [round(k * step, digits) for k in range(first, last + 1)]


def _log_ticks(lo: float, hi: float) -> list[float]:
    """Powers of ten from ``lo`` or below to ``hi`` or above (both positive), at least two."""
    first = math.floor(math.log10(min(lo, hi)))
    last = max(math.ceil(math.log10(max(lo, hi))), first + 1)
    return [10.0**k for k in range(first, last + 1)]


@dataclass(frozen=True)
class _Scale:
    """Data values ``lo``..``hi`` onto pixels ``start``..``end``."""

    lo: float
    hi: float
    start: float
    end: float
    log: bool = False

    def __call__(self, value: float) -> float:
        f = math.log10 if self.log else float
        return self.start + (f(value) - f(self.lo)) / (f(self.hi) - f(self.lo)) * (self.end - self.start)


def _num(value: float) -> str:
    return f"{value:g}"


def _text(x: float, y: float, text: str, size: int = FONT, anchor: str = "middle", extra: str = "") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}"{extra}>'
            f"{html.escape(text)}</text>")


def _text_width(text: str, size: int) -> float:
    return len(text) * size * _CHAR


def _points(line: Line, log: bool) -> list[tuple[float, float]]:
    return [(x, y) for x, y in zip(line.xs, line.ys, strict=True)
            if y is not None and math.isfinite(y) and (y > 0 or not log)]


def _legend(entries: list[tuple[Line | Bars, str]], left: float, right: float, top: float) -> tuple[list[str], float]:
    """The legend as rows of entries above the plot area (so it never hides data), and the height it takes."""
    size = FONT - 1
    parts, x, y = [], left, top + size
    for series, color in entries:
        width = 22 + _text_width(series.label, size)
        if x > left and x + width > right:
            x, y = left, y + size + 5
        if isinstance(series, Bars):
            parts.append(f'<rect x="{x:.1f}" y="{y - 8:.1f}" width="10" height="10" fill="{color}"/>')
        else:
            parts.append(_line_svg([(x, y - 3), (x + 16, y - 3)], color, series.dashed))
            if series.markers:
                parts.append(f'<circle cx="{x + 8:.1f}" cy="{y - 3:.1f}" r="2.5" fill="{color}"/>')
        parts.append(_text(x + (14 if isinstance(series, Bars) else 20), y, series.label, size, "start"))
        x += width + 10
    return parts, (y - top + 6 if entries else 0)


def _line_svg(points: list[tuple[float, float]], color: str, dashed: bool) -> str:
    dash = ' stroke-dasharray="5 3"' if dashed else ""
    coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    return f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="1.5"{dash}/>'


def _x_axis(panel: Panel, data_x: list[float], positions: list[float]) -> tuple[list[float], float, float, float]:
    """The x ticks, range and step between discrete positions: with ticks given (or bars) half a step of room
    beyond the outer positions, else round ticks around the data."""
    ticks = list(panel.xticks) if panel.xticks is not None else positions
    if not ticks:
        ticks = nice_ticks(min(data_x, default=0.0), max(data_x, default=1.0))
        return ticks, ticks[0], ticks[-1], 1.0
    every = sorted({*ticks, *data_x})
    step = min((b - a for a, b in itertools.pairwise(every)), default=1.0)
    return ticks, every[0] - step / 2, every[-1] + step / 2, step


def _y_axis(panel: Panel, data_y: list[float]) -> tuple[list[float], float, float]:
    """The y ticks and range: ``panel.ylim`` with the ticks inside it, else the outer ticks around the data."""
    lo, hi = panel.ylim or (min(data_y, default=1.0 if panel.log_y else 0.0),
                            max(data_y, default=10.0 if panel.log_y else 1.0))
    ticks = _log_ticks(lo, hi) if panel.log_y else nice_ticks(lo, hi, integer=panel.integer_y)
    if panel.ylim:
        return [t for t in ticks if lo <= t <= hi], lo, hi
    return ticks, ticks[0], ticks[-1]


def _panel(panel: Panel, left: float, width: float, height: float, plot_top: float = 0.0) -> tuple[list[str], float]:
    """One panel's SVG elements, drawn in the box ``left``..``left + width`` by ``0``..``height``, and the top of
    its plot area: below its title and legend, and not above ``plot_top``."""
    colors = itertools.cycle(COLORS)
    entries: list[tuple[Line | Bars, str]] = [(s, s.color or next(colors)) for s in (*panel.bars, *panel.lines)]
    points = [_points(line, panel.log_y) for line in panel.lines]

    # Stacks: each layer's bars as (label, colour, x, value, base), the base being the layers below.
    positions = sorted({x for layer in panel.bars for x in layer.values})
    tops = dict.fromkeys(positions, 0.0)
    stacks = []
    for layer, color in entries[:len(panel.bars)]:
        for x, value in layer.values.items():
            stacks.append((layer.label, color, x, value, tops[x]))
            tops[x] += value

    xticks, xlo, xhi, step = _x_axis(panel, [x for pts in points for x, _ in pts], positions)
    bars_y = [0.0, *tops.values()] if tops else []  # bars stand on 0
    yticks, ylo, yhi = _y_axis(panel, [y for pts in points for _, y in pts] + bars_y)

    # Margins: room for the tick labels, axis labels, title and legend.
    tick = FONT - 1
    x0 = left + 8 + (FONT + 6 if panel.ylabel else 0) + max(_text_width(_num(t), tick) for t in yticks) + 6
    x1 = left + width - 12
    top = 8 + (FONT + 8 if panel.title else 0)
    legend, legend_height = _legend(entries, x0, x1, top)
    y0, y1 = max(top + legend_height + 6, plot_top), height - (tick + 10) - (FONT + 8 if panel.xlabel else 0) - 4
    sx, sy = _Scale(xlo, xhi, x0, x1), _Scale(ylo, yhi, y1, y0, panel.log_y)
    # Many discrete ticks (a long crawl's cycles): label every n-th so that the labels do not overlap.
    label_width = max(_text_width(_num(t), tick) for t in xticks) + 8
    xticks = xticks[::max(1, math.ceil(len(xticks) * label_width / (x1 - x0)))]

    out = legend
    if panel.title:
        out.append(_text((x0 + x1) / 2, 8 + FONT + 1, panel.title, FONT + 1, extra=' font-weight="bold"'))
    for t in yticks:
        out.append(f'<line x1="{x0:.1f}" x2="{x1:.1f}" y1="{sy(t):.1f}" y2="{sy(t):.1f}" stroke="{_GRID}"/>')
        out.append(_text(x0 - 4, sy(t) + 3, _num(t), tick, "end", f' fill="{_MUTED}"'))
    for t in xticks:
        out.append(f'<line x1="{sx(t):.1f}" x2="{sx(t):.1f}" y1="{y0:.1f}" y2="{y1:.1f}" stroke="{_GRID}"/>')
        out.append(_text(sx(t), y1 + tick + 4, _num(t), tick, extra=f' fill="{_MUTED}"'))
    out.append(f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{x1 - x0:.1f}" height="{y1 - y0:.1f}" fill="none" '
               f'stroke="{_AXIS}"/>')
    if panel.xlabel:
        out.append(_text((x0 + x1) / 2, height - 6, panel.xlabel))
    if panel.ylabel:
        lx, ly = left + 8 + FONT, (y0 + y1) / 2
        out.append(_text(lx, ly, panel.ylabel, extra=f' transform="rotate(-90 {lx:.1f} {ly:.1f})"'))

    half = 0.4 * step  # a bar fills 80 % of a step
    for label, color, x, value, base in stacks:
        if value:
            bar_top, bar_bottom = sy(base + value), sy(base)
            out.append(f'<rect x="{sx(x - half):.1f}" y="{bar_top:.1f}" width="{sx(x + half) - sx(x - half):.1f}" '
                       f'height="{bar_bottom - bar_top:.1f}" fill="{color}"><title>{html.escape(label)} '
                       f"({_num(x)}): {_num(value)}</title></rect>")
    for (line, color), pts in zip(entries[len(panel.bars):], points, strict=True):
        pixels = [(sx(x), sy(y)) for x, y in pts]
        out.append(_line_svg(pixels, color, line.dashed))
        if line.markers:
            out += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>' for x, y in pixels]
    if panel.note:
        out.append(_text((x0 + x1) / 2, (y0 + y1) / 2, panel.note, extra=f' fill="{_MUTED}"'))
    return out, y0


def render(panels: Sequence[Panel], width: int = 900, height: int = 320) -> str:
    """One figure as an ``<svg>`` element: ``panels`` side by side, each as wide as the others."""
    share = width / len(panels)
    plot_top = max(_panel(p, 0, share, height)[1] for p in panels)  # the panels' plot areas line up
    body = "".join(part for i, p in enumerate(panels) for part in _panel(p, i * share, share, height, plot_top)[0])
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
            f'height="{height}" font-family="system-ui, sans-serif" fill="#1a202c">{body}</svg>')
