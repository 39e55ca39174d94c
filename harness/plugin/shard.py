"""One run's cells split into N balanced parts, so that N runners (a CI job matrix) each run one.
`--shard=K/N`, then `python -m harness report` merges the parts' results into one chart.

The cells of one case and wrapping style always stay in one part: its AOTInductor rows (Python, C++ and
fresh-process runtimes, strict and non-strict export) share the packages they build within a run, and split across
runners each part would build them again. With an earlier run's timings (`--shard-timings`), a case's styles stay
together too, where the case fits in its part: they share the case's Triton kernels (the autotuned ones compile every
config), which each part that holds one of its styles compiles again (on the built-in matrix a small share of a part's
CPU, not measurable apart from the machine's variance: docs/speed.md). A case that would take the least loaded part
past an equal share of the work is split into its styles, so that few cases, or one costly one, still balance.
Without timings every case looks alike (each row's mean), and a case whole in one part would deal the real
differences between cases unevenly: the styles are dealt apart. The groups are dealt longest first to the part with
the least expected work so far (the LPT rule: within 4/3 of the best split), by what each cell is expected to cost:
its own work in the earlier run, else its row's mean there, else the measured row means the run's estimate uses
(harness.plugin.estimate). Every runner computes the same split from the same cells and costs, so the parts never
overlap and together hold every cell; only the order of the command line's options may differ.

This module imports no torch.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass
from typing import Callable, Iterable

from harness.model.cell import Cell
from harness.model.errors import UsageError
from harness.plugin.estimate import row_seconds

_SHARD = re.compile(r"^(?P<index>\d+)/(?P<count>\d+)$")


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based, as a CI job matrix counts
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def name(self) -> str:
        """As a folder's name: shard-2-of-4."""
        return f"shard-{self.index}-of-{self.count}"


def parse(text: str) -> Shard:
    """`K/N` with 1 <= K <= N. Raises UsageError naming what to fix."""
    match = _SHARD.match(text.strip())
    if match is None:
        raise UsageError(f"--shard={text!r}: give K/N, this runner's part K of N parts (--shard=1/4 ... --shard=4/4)")
    shard = Shard(int(match["index"]), int(match["count"]))
    if not 1 <= shard.index <= shard.count:
        raise UsageError(f"--shard={text}: K must be between 1 and N ({shard.count})")
    return shard


def group(cell: Cell) -> tuple[str, str]:
    """What always stays in one part: a case's cells of one wrapping style."""
    return cell.case, cell.wrapping.value


def partition(cells: Iterable[Cell], cost: Callable[[Cell], float], count: int, whole_cases: bool = False) -> list[list[Cell]]:
    """`count` parts of the cells, each a list in the cells' given order, balanced by expected cost. With
    `whole_cases` (the costs measured per cell), a case stays in one part where it fits in an equal share."""
    cells = list(cells)
    groups: dict[tuple[str, str], list[Cell]] = {}
    for cell in cells:
        groups.setdefault(group(cell), []).append(cell)
    weight = {key: sum(max(cost(c), 0.0) for c in members) for key, members in groups.items()}
    styles: dict[str, list[tuple[str, str]]] = {}
    for key in groups:
        styles.setdefault(key[0], []).append(key)
    case_weight = {case: sum(weight[key] for key in keys) for case, keys in styles.items()}
    share = sum(weight.values()) / count
    loads = [(0.0, part) for part in range(count)]  # (expected seconds so far, part): the least loaded on top
    heapq.heapify(loads)
    part_of: dict[tuple[str, str], int] = {}

    def deal(keys: list[tuple[str, str]], seconds: float) -> None:
        load, part = heapq.heappop(loads)
        part_of.update((key, part) for key in keys)
        heapq.heappush(loads, (load + seconds, part))

    # Longest first; equal weights by name, so every runner deals them alike.
    for case in sorted(styles, key=lambda case: (-case_weight[case], case)):
        if whole_cases and loads[0][0] + case_weight[case] <= share * (1 + 1e-9):
            deal(styles[case], case_weight[case])
            continue
        for key in sorted(styles[case], key=lambda key: (-weight[key], key)):
            deal([key], weight[key])
    parts: list[list[Cell]] = [[] for _ in range(count)]
    for cell in cells:
        parts[part_of[group(cell)]].append(cell)
    return parts


def costs_from(results: object) -> Callable[[Cell], float | None]:
    """A cost function from an earlier run's results: a cell's own work where it ran there, else the mean
    work of its row there, else None (the caller falls back to the estimate's row means)."""
    work = {c.cell: c.timings.work for c in results.cells if c.timings.work > 0}  # type: ignore[attr-defined]
    rows = row_seconds(results, ran_only=True)

    def cost(cell: Cell) -> float | None:
        return work.get(cell) or rows.get(cell.row.value) or None

    return cost
