"""The whole matrix as one picture (matrix.png, beside SUPPORT.md). A panel per wrapping style, its cases
down and its rows across, each square coloured by its cell's outcome.

matplotlib is an optional extra (`pip install "triton-compat-matrix[picture]"`): it is imported only when a
picture is drawn, and `draw` raises `Unavailable` where it cannot be. Like every results tool, this module
imports no torch.

The picture is a function of the results alone, byte for byte: the same results give the same PNG on any
machine with the same matplotlib and Pillow, so a committed picture can be checked by re-rendering it. Hence
the Agg canvas on a figure of its own (no pyplot state), matplotlib's default settings whatever the user's
matplotlibrc says, its bundled DejaVu Sans, fixed pixel sizes and no metadata that names a version.

Every position is computed here in whole pixels (`Layout`), before matplotlib draws anything: the axes are
placed where the layout says, so where a cell's square lands in the PNG can be known without drawing it.
"""

from __future__ import annotations

import contextlib
import io
import math
from collections import Counter
from dataclasses import dataclass
from typing import Iterable

from harness.model.cell import Cell
from harness.model.columns import Wrapping
from harness.model.errors import CellIdError
from harness.model.outcome import CellResult, Outcome
from harness.model.results import Results
from harness.model.rows import Row

FILENAME = "matrix.png"
INSTALL = 'pip install "triton-compat-matrix[picture]"'


class Unavailable(RuntimeError):
    """matplotlib cannot be imported here, so no picture can be drawn."""


@dataclass(frozen=True)
class Category:
    label: str  # as the legend says it
    colour: str


# Okabe and Ito's palette, which readers with any common colour-vision deficiency tell apart; the greys and
# white for the squares that hold no outcome of the wrapping's own. Order: the legend's.
PASS = Category("pass", "#009E73")
DEGRADED = Category("pass, degraded (lost something silently)", "#0072B2")
WRONG = Category("WRONG (ran; numbers differ)", "#D55E00")
FAIL = Category("fail (an exception)", "#E69F00")
TIMEOUT = Category("timeout", "#F0E442")
CRASH = Category("CRASH (the process died)", "#000000")
ERROR = Category("error (the case or the harness broke)", "#CC79A7")
ENVIRONMENT = Category("env (the control fails there too)", "#56B4E9")
SKIPPED = Category("skipped (does not apply here)", "#D9D9D9")
NOT_REPORTED = Category("not reported (the run stopped first)", "#808080")
NOT_RUN = Category("not in this run", "#FFFFFF")
CATEGORIES = (PASS, DEGRADED, WRONG, FAIL, TIMEOUT, CRASH, ERROR, ENVIRONMENT, SKIPPED, NOT_REPORTED, NOT_RUN)

_BY_OUTCOME = {Outcome.PASS: PASS, Outcome.WRONG: WRONG, Outcome.FAIL: FAIL, Outcome.TIMEOUT: TIMEOUT,
               Outcome.CRASH: CRASH, Outcome.ERROR: ERROR, Outcome.SKIPPED: SKIPPED}


def category(result: CellResult | None, reported_missing: bool = False) -> Category:
    """A square's category: the environment's fault before the outcome it caused (as the charts count it),
    and a passing cell that lost something silently apart from one that did not."""
    if result is None:
        return NOT_REPORTED if reported_missing else NOT_RUN
    if result.blamed_on:
        return ENVIRONMENT
    if result.outcome is Outcome.PASS and result.degradations:
        return DEGRADED
    return _BY_OUTCOME[result.outcome]


DPI = 100  # pixels are what the layout computes; at 100 dpi a point is 100/72 of one
SIZE_STEP = 25  # the figure's sides are rounded up to this: width / DPI is then exact in binary (see Layout)
SQUARE = 24  # pixels a cell takes, its white gutter included
TICK_PT = 10
CHAR_PX = 7  # a generous width of one DejaVu Sans character at TICK_PT, to reserve room for labels
MARGIN = 20
GAP = 30  # between one panel's labels and the next panel
PANEL_TITLE_PX = 44  # two lines: the style and its counts
HEADER_PX = 90  # the picture's title: two lines
HEADING_CHAR_PX, LINE_CHAR_PX = 14, 10  # generous widths of its characters, in bold at 16 pt and at 12 pt
LEGEND_SIZE = (420, 13 * SQUARE)  # the legend's own slot needs room whatever the panels' size
COLUMNS = 3


@dataclass(frozen=True)
class Box:
    """A rectangle in the PNG's pixels, from its top-left corner."""

    left: int
    top: int
    width: int
    height: int

    @property
    def centre(self) -> tuple[int, int]:
        return self.left + self.width // 2, self.top + self.height // 2


def _missing_cells(results: Results) -> list[Cell]:
    """The cells that never reported. An id this harness cannot parse (a results file from a version with
    other rows) has no square to take; SUPPORT.md lists it by name all the same."""
    cells = []
    for cell_id in results.missing:
        with contextlib.suppress(CellIdError):
            cells.append(Cell.parse(cell_id))
    return cells


@dataclass(frozen=True)
class Layout:
    """Where everything goes, in whole pixels: the wrapping styles' panels in columns order, left to right
    then down, and the legend in the slot after the last panel. Each panel's squares: its cases top to
    bottom (by name, as MATRIX.md lists them), its rows left to right (in chart order)."""

    cases: tuple[str, ...]
    rows: tuple[Row, ...]
    wrappings: tuple[Wrapping, ...]
    label_px: int  # room left of each panel for the case names
    tick_px: int  # room below each panel for the row names, written upwards
    title: tuple[str, str]  # the picture's heading and the line below it

    @classmethod
    def of(cls, results: Results) -> Layout:
        """The cases, rows and styles the results hold, cells that never reported included."""
        cells = [c.cell for c in results.cells] + _missing_cells(results)
        cases = tuple(sorted({c.case for c in cells}))
        rows = tuple(p for p in Row if p in {c.row for c in cells})
        wrappings = tuple(w for w in Wrapping if w in {c.wrapping for c in cells})
        counts = f"{len(results.cells)} cells reported" + (f", {len(results.missing)} not reported" if results.missing else "")
        return cls(
            cases=cases,
            rows=rows,
            wrappings=wrappings,
            label_px=max((len(case) for case in cases), default=0) * CHAR_PX + 10,
            tick_px=max((len(p.value) for p in rows), default=0) * CHAR_PX + 10,
            title=(f"triton-compat-matrix: every cell, {len(cases)} cases x {len(wrappings)} columns x {len(rows)} rows",
                   f"{_environment(results)}: {counts}"),
        )

    @property
    def grid(self) -> tuple[int, int]:
        """One panel's squares, in pixels: (width, height)."""
        return len(self.rows) * SQUARE, len(self.cases) * SQUARE

    @property
    def slot(self) -> tuple[int, int]:
        """What one panel takes with its titles and labels; the legend's slot is the same."""
        grid_w, grid_h = self.grid
        return (max(self.label_px + grid_w, LEGEND_SIZE[0]) + GAP,
                PANEL_TITLE_PX + max(grid_h + self.tick_px, LEGEND_SIZE[1]) + GAP)

    @property
    def columns(self) -> int:
        return min(COLUMNS, len(self.wrappings) + 1)

    def _slot_corner(self, index: int) -> tuple[int, int]:
        slot_w, slot_h = self.slot
        row, column = divmod(index, self.columns)
        return MARGIN + column * slot_w, HEADER_PX + row * slot_h

    @property
    def size(self) -> tuple[int, int]:
        """The PNG's (width, height). Rounded up to SIZE_STEP so that the figure's size in inches times DPI
        gives back these pixels exactly: Agg truncates a size a rounding error below a whole pixel."""
        slot_w, slot_h = self.slot
        rows = math.ceil((len(self.wrappings) + 1) / self.columns)
        heading_px = max(len(self.title[0]) * HEADING_CHAR_PX, len(self.title[1]) * LINE_CHAR_PX)
        width = 2 * MARGIN + max(self.columns * slot_w, heading_px)
        height = HEADER_PX + rows * slot_h + MARGIN
        return tuple(math.ceil(side / SIZE_STEP) * SIZE_STEP for side in (width, height))  # type: ignore[return-value]

    def panel(self, wrapping: Wrapping) -> Box:
        """The squares of one style's panel (its titles and labels lie around it)."""
        left, top = self._slot_corner(self.wrappings.index(wrapping))
        return Box(left + self.label_px, top + PANEL_TITLE_PX, *self.grid)

    def legend(self) -> Box:
        left, top = self._slot_corner(len(self.wrappings))
        return Box(left, top, *LEGEND_SIZE)

    def square(self, cell: Cell) -> Box:
        panel = self.panel(cell.wrapping)
        return Box(panel.left + self.rows.index(cell.row) * SQUARE, panel.top + self.cases.index(cell.case) * SQUARE,
                   SQUARE, SQUARE)


def categories(results: Results, layout: Layout) -> dict[Cell, Category]:
    """Every square's category. The results must be judged as the reports show them (harness.model.judging.judged), so
    that a cell failing where its control fails too is the environment's."""
    by_cell = results.by_cell()
    missing = set(results.missing)
    return {cell: category(by_cell.get(cell), cell.id in missing)
            for cell in (Cell(case, w, p) for w in layout.wrappings for case in layout.cases for p in layout.rows)}


def _environment(results: Results) -> str:
    fp = results.fingerprint
    if fp.interpreter:
        device = "no GPU: Triton's CPU interpreter"
    elif fp.gpu.available:
        device = f"{fp.gpu.name}, CUDA {fp.cuda}"
    else:
        device = "CPU only"
    commit = str(fp.commit or "unknown")[:12]
    return f"torch {fp.torch}, Triton {fp.triton}, {device} (commit {commit})"


def _panel_counts(found: Iterable[Category]) -> str:
    found = list(found)
    reported = [c for c in found if c not in (NOT_REPORTED, NOT_RUN)]
    passed = sum(c in (PASS, DEGRADED) for c in found)
    skipped = sum(c is SKIPPED for c in found)
    return f"{passed} of {len(reported)} cells pass, {skipped} skipped"


def draw(results: Results) -> bytes:
    """The picture as PNG bytes. Raises Unavailable where matplotlib cannot be imported."""
    try:
        import matplotlib  # here, not at the top: matplotlib is the optional `picture` extra
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.colors import ListedColormap
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError as exc:
        raise Unavailable(f"drawing {FILENAME} needs matplotlib ({exc}): {INSTALL}") from None

    layout = Layout.of(results)
    found = categories(results, layout)
    width, height = layout.size
    # The user's matplotlibrc and style must not reach the picture: the defaults, restored afterwards.
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update({"font.family": "DejaVu Sans", "font.size": TICK_PT})
        figure = Figure(figsize=(width / DPI, height / DPI), dpi=DPI, facecolor="white")
        canvas = FigureCanvasAgg(figure)

        def at(left: int, top: int) -> tuple[float, float]:  # figure coordinates run from the bottom-left corner
            return left / width, 1 - top / height

        heading, line = layout.title
        figure.text(*at(MARGIN, 20), heading, fontsize=16, fontweight="bold", va="top")
        figure.text(*at(MARGIN, 52), line, fontsize=12, va="top")
        colours = ListedColormap([c.colour for c in CATEGORIES])
        for wrapping in layout.wrappings:
            panel = layout.panel(wrapping)
            squares = [[found[Cell(case, wrapping, row)] for row in layout.rows] for case in layout.cases]
            axes = figure.add_axes([*at(panel.left, panel.top + panel.height), panel.width / width, panel.height / height])
            # Unsmoothed squares: each one's inside is exactly its category's colour.
            axes.pcolormesh([[CATEGORIES.index(c) for c in row] for row in squares], cmap=colours, vmin=-0.5,
                            vmax=len(CATEGORIES) - 0.5, edgecolors="white", linewidth=1.5, antialiased=False)
            axes.set_xlim(0, len(layout.rows))
            axes.set_ylim(len(layout.cases), 0)  # the first case at the top
            axes.set_xticks([i + 0.5 for i in range(len(layout.rows))], [p.value for p in layout.rows], rotation=90)
            axes.set_yticks([i + 0.5 for i in range(len(layout.cases))], list(layout.cases))
            axes.tick_params(length=0, pad=3)
            for spine in axes.spines.values():
                spine.set_visible(False)
            figure.text(*at(panel.left, panel.top - 24), wrapping.title, fontsize=12, fontweight="bold", va="bottom")
            figure.text(*at(panel.left, panel.top - 6), _panel_counts(sum(squares, [])), fontsize=10, va="bottom")
        tally = Counter(found.values())
        figure.legend(
            handles=[Patch(facecolor=c.colour, edgecolor="#999999", linewidth=0.8) for c in CATEGORIES],
            labels=[f"{c.label}: {tally[c]}" for c in CATEGORIES],
            loc="upper left", bbox_to_anchor=at(layout.legend().left, layout.legend().top), frameon=False, fontsize=11,
            title="One square per cell, coloured by its outcome;\ncases down, compile paths across",
            title_fontsize=12, alignment="left", handlelength=1.4, handleheight=1.4,
        )
        out = io.BytesIO()
        # No "Software" entry: it names matplotlib's version, which the picture must not depend on.
        canvas.print_png(out, metadata={"Software": None})
    return out.getvalue()
