"""The order and the split of a run's cells: costliest first, and --shard's parts balanced by expected cost."""

from __future__ import annotations

from typing import Callable

import pytest

from harness.model.cell import Cell
from harness.model.columns import Wrapping
from harness.model.errors import ResultsError
from harness.model.results import load
from harness.model.rows import Row
from harness.plugin import estimate, shard
from harness.plugin.options import loaded, profile_name, requested

# Seconds-like units, as a row's cost: the autotuner's cost per config it times, over a cell's examples.
AUTOTUNE_COST_PER_CONFIG = 20.0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Costliest cells first (a stable sort, the same on every worker): the last cells to start are short."""
    if not requested(config):
        return
    cases = loaded(config).cases
    rows = list(Row)

    expected = expected_costs(config)

    def cost(item: pytest.Item) -> tuple[float, int, bool]:
        cell = cell_of(item)
        if cell is None or cell.case not in cases:
            return 0.0, 0, False
        # The row's measured cost, plus the autotuning its case's kernels redo for each new input size. Among
        # cells of one cost, row by row: the AOTInductor rows that run one package (Python, C++ and fresh-process
        # runtimes; strict and non-strict export when they give the same program) then start a row apart, the
        # package built by the first while the others are still queued, not side by side with one waiting.
        # In a row, the controls first: a cell that fails where its control failed is shown as ENV.
        return (-(expected(cell) + AUTOTUNE_COST_PER_CONFIG * cases[cell.case].autotune_configs), rows.index(cell.row),
                cell.wrapping is not Wrapping.CONTROL)

    items.sort(key=cost)


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
