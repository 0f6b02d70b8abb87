"""The report's figures as SVG, drawn by hand: a chart is a plot area with its axes, marks and labels, written as
text in a millisecond (matplotlib took 0.1-0.2 s a figure and its import a second). Every mark is recorded in data
units beside its drawing (`Chart.marks`), so a test reads what a figure shows without parsing pixels; every text
is escaped (criterion names and probe labels come from the user's files)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

FONT = 11  # px; tick labels one smaller, cell texts two
CHAR = 0.6  # a character's width in ems, for the margins (a sans-serif's digits and lower case)

# ColorBrewer's diverging RdBu (reversed: blue low, red high) and sequential Oranges (matplotlib's maps by those names).
RDBU_R = ("#053061", "#2166ac", "#4393c3", "#92c5de", "#d1e5f0", "#f7f7f7", "#fddbc7", "#f4a582", "#d6604d",
          "#b2182b", "#67001f")  # fmt: skip
ORANGES = ("#fff5eb", "#fee6ce", "#fdd0a2", "#fdae6b", "#fd8d3c", "#f16913", "#d94801", "#a63603", "#7f2704")


def colour(cmap: Sequence[str], t: float) -> str:
    """The map's colour at t in [0, 1], interpolated between its anchors."""
    t = min(max(t, 0.0), 1.0) * (len(cmap) - 1)
    i = min(int(t), len(cmap) - 2)
    a, b = (tuple(int(c[k : k + 2], 16) for k in (1, 3, 5)) for c in cmap[i : i + 2])
    return "#" + "".join(f"{round(x + (y - x) * (t - i)):02x}" for x, y in zip(a, b))


def dark(hex_colour: str) -> bool:
    r, g, b = (int(hex_colour[k : k + 2], 16) for k in (1, 3, 5))
    return 0.299 * r + 0.587 * g + 0.114 * b < 128


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values spanning [lo, hi] (1, 2 or 5 times a power of ten apart)."""
    if not hi > lo:
        return [lo]
    raw = (hi - lo) / count
    step = min((m * 10 ** math.floor(math.log10(raw)) for m in (1, 2, 5, 10)), key=lambda s: abs(s - raw))
    first = math.ceil(lo / step - 1e-9)
    return [round(i * step, 10) for i in range(first, math.floor(hi / step + 1e-9) + 1)]


def span(values: list[float]) -> tuple[float, float]:
    """A linear axis over the values, padded and widened to round ticks."""
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.08 or 0.1
    ticks = nice_ticks(lo - pad, hi + pad)
    return min(ticks[0], lo - pad), max(ticks[-1], hi + pad)


def labelled(lo: float, hi: float) -> list[tuple[float, str]]:
    """Round ticks over [lo, hi], each with its label."""
    return [(v, f"{v:g}") for v in nice_ticks(lo, hi)]


def text_width(text: str, size: float = FONT) -> float:
    return max((len(line) for line in text.split("\n")), default=0) * CHAR * size


def slant_room(labels: Sequence[str]) -> float:
    """The height slanted tick labels (x_ticks, slanted) take below the plot area."""
    return max(map(text_width, labels), default=0) * 0.5 + 24


@dataclass
class Chart:
    """One figure: a plot area of `width` x `height` px inside margins, and the marks drawn on it."""

    title: str
    width: float
    height: float
    left: float = 60
    bottom: float = 50
    right: float = 20
    top: float = 30
    marks: dict[str, list] = field(default_factory=dict)  # what it shows, in data units, by kind
    _body: list[str] = field(default_factory=list)
    _x: tuple[str, float, float] = ("band", 0, 1)  # (kind, lo, hi): band (cells), linear or log
    _y: tuple[str, float, float] = ("band", 0, 1)

    def mark(self, kind: str, value: object) -> None:
        self.marks.setdefault(kind, []).append(value)

    # ---- data to pixels ----
    def scales(self, x: tuple[str, float, float], y: tuple[str, float, float]) -> None:
        self._x, self._y = x, y

    def _at(self, scale: tuple[str, float, float], v: float, length: float) -> float:
        kind, lo, hi = scale  # a band is linear: cell i spans [i, i + 1), its centre i + 0.5
        if kind == "log":
            lo, hi, v = math.log10(lo), math.log10(hi), math.log10(v)
        return (v - lo) / (hi - lo) * length

    def px(self, x: float) -> float:
        return self.left + self._at(self._x, x, self.width)

    def py(self, y: float) -> float:  # pixels grow downwards; a band's first row is at the top
        if self._y[0] == "band":
            return self.top + self._at(self._y, y, self.height)
        return self.top + self.height - self._at(self._y, y, self.height)

    # ---- drawing, in pixels ----
    def rect(self, x: float, y: float, w: float, h: float, fill: str, stroke: str = "none") -> None:
        self._body.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" fill="{fill}" stroke="{stroke}"/>'
        )

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = "#000", dash: str = "", w=1.0) -> None:
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        self._body.append(
            f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}" '
            f'stroke-width="{w}"{dashed}/>'
        )

    def circle(self, x: float, y: float, r: float, fill: str) -> None:
        self._body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{fill}"/>')

    def polyline(self, points: list[tuple[float, float]], stroke: str) -> None:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        self._body.append(f'<polyline points="{path}" fill="none" stroke="{stroke}" stroke-width="1.5"/>')

    def text(
        self, x: float, y: float, text: str, size: float = FONT, anchor="middle", fill="#000", rotate=0.0, role=""
    ) -> None:
        """Text centred on y (each line of a multi-line text in turn); `role` records it in `marks`."""
        if role:
            self.mark(role, text)
        lines = text.split("\n")
        turn = f' transform="rotate({rotate:g} {x:.1f} {y:.1f})"' if rotate else ""
        spans = "".join(
            f'<tspan x="{x:.1f}" dy="{(0.35 - 0.6 * (len(lines) - 1) if i == 0 else 1.2):.2f}em">{escape(line)}</tspan>'
            for i, line in enumerate(lines)
        )
        at = f'x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{fill}"{turn}'
        self._body.append(f"<text {at}>{spans}</text>")

    def reference(self, axis: str, value: float, stroke: str, dash: str) -> None:
        """A line across the plot area at `value` of the x or y axis (a threshold); recorded as vlines / hlines."""
        self.mark("vlines" if axis == "x" else "hlines", value)
        if axis == "x":
            self.line(self.px(value), self.top, self.px(value), self.top + self.height, stroke, dash)
        else:
            self.line(self.left, self.py(value), self.left + self.width, self.py(value), stroke, dash)

    def message(self, text: str) -> None:
        """A text in the middle of the plot area, where there is nothing to draw."""
        self.text(self.left + self.width / 2, self.top + self.height / 2, text, role="texts")

    # ---- axes ----
    def x_ticks(self, ticks: Sequence[tuple[float, str]], label: str = "", slanted: bool = False) -> None:
        base = self.top + self.height
        for v, name in ticks:
            x = self.px(v)
            self.line(x, base, x, base + 4)
            if slanted:
                self.text(x, base + 10, name, FONT - 1, "end", rotate=-30, role="xticks")
            else:
                self.text(x, base + 14, name, FONT - 1, role="xticks")
        if label:
            self.text(self.left + self.width / 2, self.top + self.height + self.bottom - 10, label, role="xlabel")

    def y_ticks(self, ticks: Sequence[tuple[float, str]], label: str = "") -> None:
        for v, name in ticks:
            y = self.py(v)
            self.line(self.left - 4, y, self.left, y)
            self.text(self.left - 7, y, name, FONT - 1, "end", role="yticks")
        if label:
            self.text(14, self.top + self.height / 2, label, rotate=-90, role="ylabel")

    def frame(self) -> None:
        self.rect(self.left, self.top, self.width, self.height, "none", "#444")

    def colorbar(self, cmap: Sequence[str], lo: float, hi: float, label: str) -> None:
        """A vertical bar right of the plot area, from lo (bottom) to hi (top); the chart's right margin holds it."""
        x, stops = self.left + self.width + 16, len(cmap) - 1
        gradient = "".join(f'<stop offset="{i / stops:.3f}" stop-color="{c}"/>' for i, c in enumerate(reversed(cmap)))
        self._body.append(f'<linearGradient id="bar" x1="0" y1="0" x2="0" y2="1">{gradient}</linearGradient>')
        self.rect(x, self.top, 14, self.height, "url(#bar)", "#444")
        for v in nice_ticks(lo, hi, 4):
            y = self.top + self.height * (hi - v) / (hi - lo)
            self.line(x + 14, y, x + 18, y)
            self.text(x + 21, y, f"{v:g}", FONT - 1, "start")
        self.text(x + 58, self.top + self.height / 2, label, FONT - 1, rotate=90, role="colorbar")

    def legend(self, entries: Sequence[tuple[str, str, str]]) -> None:
        """(label, colour, dash) entries right of the plot area, in a right margin widened to hold them."""
        x, y = self.left + self.width + 14, self.top + 12
        self.right = max(self.right, 14 + 26 + max(text_width(e[0], FONT - 1) for e in entries) + 8)
        for i, (name, stroke, dash) in enumerate(entries):
            self.line(x, y + 16 * i, x + 20, y + 16 * i, stroke, dash, 1.5)
            self.text(x + 26, y + 16 * i, name, FONT - 1, "start", role="legend")

    def svg(self) -> bytes:
        w, h = self.left + self.width + self.right, self.top + self.height + self.bottom
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0f}" height="{h:.0f}" viewBox="0 0 {w:.0f} {h:.0f}" '
            f'font-family="DejaVu Sans, Helvetica, Arial, sans-serif" role="img" aria-label={quoteattr(self.title)}>'
            '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse">'
            '<path d="M0,6 L6,0" stroke="#999" stroke-width="1"/></pattern></defs>'
            f'<rect width="{w:.0f}" height="{h:.0f}" fill="#fff"/>'
        )
        title = f'<text x="{w / 2:.1f}" y="18" font-size="{FONT + 1}" text-anchor="middle">{escape(self.title)}</text>'
        return (head + title + "".join(self._body) + "</svg>\n").encode()
