"""The order and the split of a run's cells: costliest first, and --shard's parts balanced by expected cost."""

from __future__ import annotations

import math
from typing import Callable

import pytest

from harness.model.cell import Cell
from harness.model.columns import Wrapping
from harness.model.errors import ResultsError
from harness.model.results import load
from harness.model.rows import Row, package_wave
from harness.plugin import estimate, shard
from harness.plugin.options import loaded, profile_name, requested


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The order the workers take the cells in (a stable sort, the same on every worker): costliest first, so that
    the last cells to start are short, in the waves and the interleaving `order_key` says."""
    if not requested(config):
        return
    cases = loaded(config).cases
    expected = expected_costs(config)
    cells = [cell if (cell := cell_of(item)) is not None and cell.case in cases else None for item in items]
    keys = order_keys(cells, expected)
    order = sorted(range(len(items)), key=lambda n: keys[n])
    items[:] = [items[n] for n in order]


def order_keys(cells: list[Cell | None], expected: Callable[[Cell], float]) -> list[tuple[int, int, int, int, bool]]:
    """Each cell's place in the run (None: not a cell of the loaded cases, last).

    - Package waves first (rows.package_wave): a row that takes another row's AOTInductor package starts after
      every cell of that row has started, so it takes the package, where side by side it would wait while
      another cell built it (a worker idle: a fifth of the matrix's time went to such waits). Its cells are then
      cheap, a short tail.
    - Then costliest first, by the power of two of the cell's expected seconds: rows of about one cost take turns
      cell by cell rather than a row at a time, so that the first cells do not all wait on one build (the C++
      wrapper's precompiled header, which the first cell of that kind makes and the others wait for).
    - In a row, a case's control before its styles: a cell that fails where its control failed is shown as ENV.
    """
    rows = list(Row)
    cases = {cell.case: None for cell in cells if cell is not None}  # in the order they came
    case_rank = {case: n for n, case in enumerate(cases)}
    # Each cell's turn in its row: case by case, the control first.
    in_row = sorted((n for n, cell in enumerate(cells) if cell is not None),
                    key=lambda n: (cells[n].row, case_rank[cells[n].case], cells[n].wrapping is not Wrapping.CONTROL, n))  # type: ignore[union-attr]
    turn: dict[int, int] = {}
    taken: dict[Row, int] = {}
    for n in in_row:
        row = cells[n].row  # type: ignore[union-attr]
        turn[n] = taken[row] = taken.get(row, -1) + 1
    keys = []
    for n, cell in enumerate(cells):
        if cell is None:
            keys.append((1 << 20, 0, 0, 0, False))
            continue
        keys.append((package_wave(cell.row), -math.floor(math.log2(max(expected(cell), 1 / 64))), turn[n],
                     rows.index(cell.row), cell.wrapping is not Wrapping.CONTROL))
    return keys


class MatrixShard:
    """The role of --shard=K/N in every process that collects: keep this runner's part of the cells."""

    def __init__(self, config: pytest.Config, part: shard.Shard):
        self.config, self.part = config, part

    @pytest.hookimpl(trylast=True)  # after -k, --deselect and --lf have chosen the cells: the parts split what they left
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        cells = {cell: item for item in items if (cell := cell_of(item)) is not None}
        parts = shard.partition(cells, shard_costs(config), self.part.count)
        others = {cells[cell] for n, part in enumerate(parts, 1) if n != self.part.index for cell in part}
        if others:
            config.hook.pytest_deselected(items=[item for item in items if item in others])
            items[:] = [item for item in items if item not in others]


def cell_of(item: pytest.Item) -> Cell | None:
    cell = getattr(item, "callspec", None) and item.callspec.params.get("cell")
    return cell if isinstance(cell, Cell) else None


def expected_costs(config: pytest.Config, measured: Callable[[Cell], float | None] = lambda cell: None) -> Callable[[Cell], float]:
    """What a cell is expected to cost, in seconds of work: `measured` (an earlier run's), else the estimate's
    row means for this device and profile, else the row's relative cost (a profile never measured)."""
    import torch  # here, not at the top: the torch-free tools import this module's names

    cases = loaded(config).cases
    mode, profile = ("gpu" if torch.cuda.is_available() else "interpreter"), profile_name(config)

    def cost(cell: Cell) -> float:
        found = measured(cell)
        if found is None:
            found = estimate.cell_seconds(cell, mode, profile, cases)
        return cell.row.spec.cost if found is None else found

    return cost


def shard_costs(config: pytest.Config) -> Callable[[Cell], float]:
    """What balances the parts of --shard: each cell's work in --shard-timings, else its expected cost."""
    timings = config.getoption("shard_timings")
    if not timings:
        return expected_costs(config)
    try:
        return expected_costs(config, shard.costs_from(load(timings)))
    except ResultsError as exc:
        raise pytest.UsageError(f"--shard-timings: {exc}") from None
