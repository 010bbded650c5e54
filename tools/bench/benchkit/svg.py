"""A small grouped-bar-chart SVG writer (standard library only).

``bar_chart()`` returns the text of a standalone SVG document (``xmlns`` set, no external
fonts, scripts or stylesheets) that ``xml.etree`` parses:

* a title, centred at the top, and a legend below it (one colour per series);
* a y axis from 0 to a round top value (``nice_ticks``), with gridlines and tick labels at
  round steps (1, 2, 2.5 or 5 times a power of ten);
* one group of bars per category, labelled underneath (long labels wrap, ``\\n`` forces a
  line break); one ``<rect class="bar">`` per bar that has a value, its height proportional
  to the value (height = value / top * plot height), with the formatted value printed above
  it and a ``<title>`` tooltip;
* a slot whose value is ``None`` (or a string) draws no rect: the string (default "n/a")
  is printed at the baseline instead;
* optional error bars (``ranges``): a vertical line from the lowest to the highest run with
  a cap at each end, over the bar; the printed value moves above the bar's top cap;
* an optional ``note`` printed under the category labels (what the error bars mean).

Sizes are fixed: bar width, gaps, fonts and the plot height are constants; the document's
width grows with the number of bars so that the printed values never overlap. Every
piece of text is XML-escaped.

Elements carry classes so tests and readers can find them: ``bar``, ``swatch`` (legend),
``grid``, ``tick``, ``category``, ``value``, ``missing``, ``title``, ``axis-label``,
``error-bar`` (a ``<g>`` per bar with ``data-low`` / ``data-high``), ``note``.
"""

from __future__ import annotations

import math
from typing import Callable, Optional, Sequence, Union

__all__ = ["bar_chart", "nice_ticks", "escape", "clean_text", "DEFAULT_COLOURS"]

# Colour-blind-friendly palette (Okabe-Ito order, then a few more).
DEFAULT_COLOURS = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7",
    "#56B4E9", "#D55E00", "#F0E442", "#999999",
]

BAR_W = 44          # px, one bar
BAR_GAP = 4         # px, between bars of one group
GROUP_GAP = 28      # px, between groups
MIN_GROUP_W = 110   # px, so category labels have room
LEFT = 78           # px, y axis labels and title
RIGHT = 24
PLOT_H = 300
MIN_WIDTH = 520
CHAR_W = 6.6        # px, rough width of one character at 11 px sans-serif
FONT = "DejaVu Sans, Arial, Helvetica, sans-serif"

Value = Union[int, float, str, None]


def clean_text(text: object) -> str:
    """str(text) with the characters XML 1.0 does not allow (controls other than tab, CR and
    LF; lone surrogates; U+FFFE/U+FFFF) replaced by U+FFFD."""
    return "".join(ch if ch in "\t\n\r" or (0x20 <= ord(ch) < 0xD800 or 0xE000 <= ord(ch) < 0xFFFE
                                             or ord(ch) > 0xFFFF) else "\ufffd" for ch in str(text))


def escape(text: object) -> str:
    """Escape text for use in XML character data and in double-quoted attributes.

    Line breaks and tabs become character references, so that they survive attribute-value
    normalisation; other characters XML 1.0 does not allow (controls, lone surrogates) become U+FFFD.
    """
    s = clean_text(text)
    return (s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
             .replace('"', "&quot;").replace("'", "&#39;")
             .replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;"))


def _num(x: float) -> str:
    """A coordinate: at most two decimals, no trailing zeros."""
    s = f"{x:.2f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def nice_ticks(max_value: float, max_ticks: int = 6) -> list[float]:
    """Round tick values 0, step, 2*step, ... whose last value is >= max_value.

    step is 1, 2, 2.5 or 5 times a power of ten, chosen as the smallest giving at most
    ``max_ticks`` intervals. A max_value <= 0 (or not finite) gives [0, 1].
    """
    if not (isinstance(max_value, (int, float)) and math.isfinite(max_value)) or max_value <= 0:
        return [0.0, 1.0]
    raw = max_value / max_ticks
    exp = math.floor(math.log10(raw))
    step = None
    for e in (exp - 1, exp, exp + 1):
        for m in (1, 2, 2.5, 5):
            cand = m * 10.0 ** e
            if math.ceil(max_value / cand - 1e-9) <= max_ticks:
                step = cand
                break
        if step is not None:
            break
    if step is None:  # cannot happen, but stay safe
        step = 10.0 ** (exp + 1)
    n = max(1, math.ceil(max_value / step - 1e-9))
    # Rounding each tick to the step's precision keeps 0.1*3 from printing 0.30000000000000004.
    digits = max(0, -math.floor(math.log10(step)) + 2)
    return [round(i * step, digits) for i in range(n + 1)]


def _tick_label(v: float, step: float) -> str:
    if step >= 1 and float(v).is_integer():
        return f"{int(v):,}"
    decimals = 0
    while decimals < 6 and abs(round(v, decimals) - v) > 1e-9:
        decimals += 1
    d2 = 0
    while d2 < 6 and abs(round(step, d2) - step) > 1e-9:
        d2 += 1
    return f"{v:,.{max(decimals, d2)}f}"


def _default_format(v: float) -> str:
    if float(v).is_integer() and abs(v) >= 100:
        return f"{int(v):,}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.2f}"


def _wrap(label: str, max_chars: int, max_lines: int = 4) -> list[str]:
    """Word-wrap a label; explicit newlines break lines; at most max_lines (ellipsis)."""
    max_chars = max(4, max_chars)
    lines: list[str] = []
    for part in str(label).split("\n"):
        words = [w for w in part.split(" ") if w]  # a no-break space keeps words together
        if not words:
            lines.append("")
            continue
        cur = ""
        for w in words:
            while len(w) > max_chars:  # a very long word: hard-break it
                if cur:
                    lines.append(cur)
                    cur = ""
                lines.append(w[:max_chars])
                w = w[max_chars:]
            if not cur:
                cur = w
            elif len(cur) + 1 + len(w) <= max_chars:
                cur += " " + w
            else:
                lines.append(cur)
                cur = w
        if cur:
            lines.append(cur)
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        last = lines[-1]
        lines[-1] = (last[: max_chars - 1] if len(last) >= max_chars else last) + "\u2026"
    return lines


def bar_chart(
    title: str,
    categories: Sequence[str],
    series: Sequence[str],
    values: Sequence[Sequence[Value]],
    *,
    y_label: str = "",
    value_format: Optional[Callable[[float], str]] = None,
    colours: Optional[Sequence[str]] = None,
    subtitle: str = "",
    ranges: Optional[Sequence[Sequence[Optional[tuple]]]] = None,
    note: str = "",
) -> str:
    """Return a grouped bar chart as SVG text.

    ``values[s][c]`` is the value of series ``s`` in category ``c``: a number (a bar), or
    ``None`` / a string (no bar; the string, default "n/a", is printed at the baseline).
    Negative numbers are drawn as zero-height bars. ``value_format`` formats the printed
    values (default: thousands separators above 100, two decimals below). ``ranges[s][c]``
    is that bar's (low, high) or None: drawn as an error bar.
    """
    categories = [str(c) for c in categories]
    series = [str(s) for s in series]
    if len(values) != len(series):
        raise ValueError(f"values has {len(values)} rows for {len(series)} series")
    for s, row in enumerate(values):
        if len(row) != len(categories):
            raise ValueError(f"series {series[s]!r} has {len(row)} values for {len(categories)} categories")
    colours = list(colours) if colours else DEFAULT_COLOURS
    fmt = value_format or _default_format
    n_cat, n_ser = len(categories), max(1, len(series))

    def is_num(v: Value) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    def bounds(s: int, c: int) -> Optional[tuple]:
        r = ranges[s][c] if ranges and s < len(ranges) and c < len(ranges[s]) else None
        if isinstance(r, (list, tuple)) and len(r) == 2 and is_num(r[0]) and is_num(r[1]) \
                and is_num(values[s][c]):
            return max(0.0, float(min(r))), max(0.0, float(max(r)))
        return None

    numbers = [float(v) for row in values for v in row if is_num(v)]
    numbers += [bounds(s, c)[1] for s in range(len(values)) for c in range(len(categories))
                if bounds(s, c)]
    ticks = nice_ticks(max(numbers) if numbers else 0.0)
    top = ticks[-1]
    step = ticks[1] - ticks[0]

    bars_w = n_ser * BAR_W + (n_ser - 1) * BAR_GAP
    group_w = max(bars_w, MIN_GROUP_W)
    plot_w = max(1, n_cat) * group_w + max(0, n_cat - 1) * GROUP_GAP + GROUP_GAP
    width = max(MIN_WIDTH, LEFT + plot_w + RIGHT)
    if width > LEFT + plot_w + RIGHT:  # centre the plot area's content in the extra room
        plot_w = width - LEFT - RIGHT

    # Legend layout: items left to right, wrapping.
    legend_items = []
    x, row = 0.0, 0
    avail = width - LEFT - RIGHT
    for i, name in enumerate(series):
        item_w = 14 + 6 + len(name) * CHAR_W + 18
        if x > 0 and x + item_w > avail:
            x, row = 0.0, row + 1
        legend_items.append((x, row, name, colours[i % len(colours)]))
        x += item_w
    legend_rows = (row + 1) if series else 0

    title_y = 26
    subtitle_h = 18 if subtitle else 0
    legend_y = title_y + 14 + subtitle_h
    plot_top = legend_y + legend_rows * 20 + 22   # room for the values printed above bars
    plot_bottom = plot_top + PLOT_H
    label_chars = int(group_w / CHAR_W)
    wrapped = [_wrap(c, label_chars) for c in categories]
    label_lines = max((len(w) for w in wrapped), default=1)
    height = plot_bottom + 14 + label_lines * 14 + 16
    note_lines = _wrap(note, int((width - LEFT - RIGHT) / CHAR_W), 3) if note else []
    height += len(note_lines) * 14

    out: list[str] = []
    add = out.append
    add('<?xml version="1.0" encoding="UTF-8"?>')
    add(f'<svg xmlns="http://www.w3.org/2000/svg" width="{_num(width)}" height="{_num(height)}" '
        f'viewBox="0 0 {_num(width)} {_num(height)}" font-family="{escape(FONT)}" font-size="11">')
    add(f'<title>{escape(title)}</title>')
    add(f'<rect class="background" x="0" y="0" width="{_num(width)}" height="{_num(height)}" fill="#ffffff"/>')
    add(f'<text class="title" x="{_num(width / 2)}" y="{title_y}" text-anchor="middle" '
        f'font-size="16" font-weight="bold" fill="#222222">{escape(title)}</text>')
    if subtitle:
        add(f'<text class="subtitle" x="{_num(width / 2)}" y="{title_y + 18}" text-anchor="middle" '
            f'font-size="11" fill="#555555">{escape(subtitle)}</text>')

    # Legend, centred.
    if legend_items:
        rows_w: dict[int, float] = {}
        for lx, lrow, name, _ in legend_items:
            rows_w[lrow] = lx + 14 + 6 + len(name) * CHAR_W
        add('<g class="legend">')
        for lx, lrow, name, colour in legend_items:
            ox = LEFT + (avail - rows_w[lrow]) / 2 + lx
            oy = legend_y + lrow * 20
            add(f'<rect class="swatch" x="{_num(ox)}" y="{_num(oy)}" width="14" height="14" fill="{escape(colour)}"/>')
            add(f'<text class="legend-label" x="{_num(ox + 20)}" y="{_num(oy + 11)}" fill="#222222">{escape(name)}</text>')
        add('</g>')

    # Axis, gridlines and ticks.
    add('<g class="axis">')
    for t in ticks:
        y = plot_bottom - (t / top) * PLOT_H
        stroke = "#444444" if t == 0 else "#dddddd"
        cls = "baseline" if t == 0 else "grid"
        add(f'<line class="{cls}" x1="{LEFT}" y1="{_num(y)}" x2="{_num(LEFT + plot_w)}" y2="{_num(y)}" '
            f'stroke="{stroke}" stroke-width="1"/>')
        add(f'<text class="tick" x="{LEFT - 6}" y="{_num(y + 4)}" text-anchor="end" fill="#444444">'
            f'{escape(_tick_label(t, step))}</text>')
    add(f'<line class="y-axis" x1="{LEFT}" y1="{_num(plot_top)}" x2="{LEFT}" y2="{_num(plot_bottom)}" '
        f'stroke="#444444" stroke-width="1"/>')
    if y_label:
        cy = (plot_top + plot_bottom) / 2
        add(f'<text class="axis-label" x="16" y="{_num(cy)}" text-anchor="middle" fill="#444444" '
            f'transform="rotate(-90 16 {_num(cy)})">{escape(y_label)}</text>')
    add('</g>')

    # Bars.
    content_w = max(1, n_cat) * group_w + max(0, n_cat - 1) * GROUP_GAP
    x0 = LEFT + (plot_w - content_w) / 2
    add('<g class="bars">')
    for c, cat in enumerate(categories):
        gx = x0 + c * (group_w + GROUP_GAP)
        bx0 = gx + (group_w - bars_w) / 2
        for s, name in enumerate(series):
            v = values[s][c]
            bx = bx0 + s * (BAR_W + BAR_GAP)
            cx = bx + BAR_W / 2
            if is_num(v):
                fv = max(0.0, float(v))
                h = fv / top * PLOT_H
                y = plot_bottom - h
                label = fmt(float(v))
                b = bounds(s, c)
                tip = f"{label} (runs {fmt(b[0])}\u2013{fmt(b[1])})" if b else label
                add(f'<rect class="bar" x="{_num(bx)}" y="{_num(y)}" width="{BAR_W}" height="{_num(h)}" '
                    f'fill="{escape(colours[s % len(colours)])}" data-series="{escape(name)}" '
                    f'data-category="{escape(cat)}" data-value="{escape(repr(float(v)))}">'
                    f'<title>{escape(" ".join(cat.split()))} \u2014 {escape(name)}: {escape(tip)}</title></rect>')
                top_y = y
                if b:
                    lo_y, hi_y = (plot_bottom - e / top * PLOT_H for e in b)
                    top_y = min(y, hi_y)
                    add(f'<g class="error-bar" data-series="{escape(name)}" '
                        f'data-category="{escape(cat)}" data-low="{escape(repr(b[0]))}" '
                        f'data-high="{escape(repr(b[1]))}" stroke="#222222" stroke-width="1">')
                    add(f'<line x1="{_num(cx)}" y1="{_num(lo_y)}" x2="{_num(cx)}" y2="{_num(hi_y)}"/>')
                    for ey in (lo_y, hi_y):
                        add(f'<line x1="{_num(cx - 6)}" y1="{_num(ey)}" x2="{_num(cx + 6)}" y2="{_num(ey)}"/>')
                    add('</g>')
                add(f'<text class="value" x="{_num(cx)}" y="{_num(top_y - 4)}" text-anchor="middle" '
                    f'font-size="10" fill="#222222">{escape(label)}</text>')
            else:
                text = v if isinstance(v, str) else "n/a"
                add(f'<text class="missing" x="{_num(cx)}" y="{_num(plot_bottom - 4)}" text-anchor="middle" '
                    f'font-size="10" fill="#888888" data-series="{escape(name)}" '
                    f'data-category="{escape(cat)}">{escape(text)}</text>')
        # Category label.
        lx = gx + group_w / 2
        spans = "".join(f'<tspan x="{_num(lx)}" dy="{0 if i == 0 else 14}">{escape(line)}</tspan>'
                        for i, line in enumerate(wrapped[c]))
        add(f'<text class="category" x="{_num(lx)}" y="{_num(plot_bottom + 16)}" text-anchor="middle" '
            f'fill="#222222">{spans}</text>')
    add('</g>')
    for i, line in enumerate(note_lines):
        ny = plot_bottom + 14 + label_lines * 14 + 16 + i * 14
        add(f'<text class="note" x="{LEFT}" y="{_num(ny)}" fill="#555555">{escape(line)}</text>')
    add('</svg>')
    return "\n".join(out) + "\n"
