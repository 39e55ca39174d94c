"""The order and the split of a run's cells. Costliest first, cells that would wait for what another builds spaced
from it, an autotuned case's cells after the one that compiles its kernels first (`first_compiles`), and --shard's
parts balanced by expected cost."""

from __future__ import annotations

import heapq
from typing import Callable, Collection, Hashable, Sequence, TypeVar

import pytest

from harness.execution import prebuild
from harness.model.cell import Cell
from harness.model.columns import Wrapping
from harness.model.errors import ResultsError
from harness.model.results import load
from harness.model.rows import Row
from harness.plugin import estimate, heap, shard
from harness.plugin.options import SHARD, carried_cells, loaded, profile_name, requested

# Seconds-like units, as a row's cost: the autotuner's cost per config it times, over a cell's examples.
AUTOTUNE_COST_PER_CONFIG = 20.0
# How far a cell starts from the first cell that builds what it would wait for (see `shared_builds`), in cells
# dealt per worker: the first two go out to every worker at once, and the slowest such build, a run's first
# AOTInductor packages, took about 50 s of one cell on the GPU runner (about three of the costliest cells a worker).
SPACING_ROUNDS = 4

T = TypeVar("T")


@pytest.hookimpl(trylast=True)  # after -k, --deselect and --lf have chosen the cells
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Costliest cells first (a stable sort, the same on every worker): the last cells to start are short. With
    --shard, this runner's part of them (MatrixShard). Where workers run cells side by side, a cell that takes what
    another cell builds (`shared_builds`) starts SPACING_ROUNDS cells a worker after the first that builds it, not
    beside it waiting on its lock: counted in the cells this runner runs, so that a part's cells are spaced as a
    whole run's are."""
    if not requested(config):
        return
    cases = loaded(config).cases
    rows = list(Row)

    expected = cell_costs(config)
    carried = carried_cells(config)

    def cost(item: pytest.Item) -> tuple[float, int, bool]:
        cell = cell_of(item)
        if cell is None or cell.case not in cases:
            return 0.0, 0, False
        if cell.id in carried:  # first: no work, and what an interrupted run keeps
            return -float("inf"), 0, False
        # The cell's work in --shard-timings, else its row's measured mean; plus the autotuning its case's kernels
        # redo for each new input size, so that the autotuned cases' cells start first whatever they measured. Among
        # cells of one cost, row by row; in a row, the controls first: a cell that fails where its control failed
        # is shown as ENV. Then the cells that take what another builds are spaced from it (`spaced`).
        return (-(expected(cell) + AUTOTUNE_COST_PER_CONFIG * cases[cell.case].autotune_configs), rows.index(cell.row),
                cell.wrapping is not Wrapping.CONTROL)

    items.sort(key=cost)
    heap.freeze()  # what this process imported and collected stays to its end
    part = config.pluginmanager.get_plugin(SHARD)
    if part is not None:
        part.keep_this_part(items, lambda cell: 0.0 if cell.id in carried else expected(cell))
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    if workers > 1:  # one process runs one cell at a time: nothing waits for another cell there
        items[:] = spaced(items, lambda item: shared_builds(cell) if (cell := cell_of(item)) and cell.id not in carried else (),
                          SPACING_ROUNDS * workers)


def shared_builds(cell: Cell) -> tuple[str, ...]:
    """What the cell builds that other cells of the run take, waiting on a file lock while the first one builds it:
    an AOTInductor package of its case and style (harness.execution.builders), and the run's own builds (Inductor's
    precompiled headers, the C++ runner: harness.execution.prebuild), which the controller starts before the cells
    but which may still be building when the first cells ask for them."""
    package = cell.package_key()
    return *([f"package {package}"] if package is not None else []), *(p.key for p in prebuild.needed_by(cell))


COMPILED_AHEAD = -1  # the place a cell waits for when its case's configs are compiled ahead: its slices', no cell's (harness.execution.compile_ahead)


def first_compiles(cells: Sequence[Cell | None], autotuned: Collection[str], carried: Collection[str] = (),
                   ahead: Collection[str] = ()) -> dict[int, int]:
    """Which cells wait for which, by their places in `cells` (the run's order): each case of `autotuned` has its first
    eager cell of a style that launches its kernels compile them first, and its other cells that launch them wait for it
    to end (harness.plugin.dealing deals them after the cells that wait for none, never keeping a worker idle). Its
    autotuner compiles every config for each new specialization of the sizes it draws (a size's divisibility
    by 16, ...) into the run's shared Triton cache; the cells that started beside it compiled them all again, each for
    itself, before any had written the cache (torchao's int8 matmul on an H200: 104-153 s a cell at the run's start,
    10 s after). A case of `ahead` has its configs compiled by the run's slices instead, each the first work of a worker:
    all its cells that launch its kernels come after the others until its slices have ended (COMPILED_AHEAD, which no cell
    ends: the dealer releases them; no worker waits for a slice). The controls, which launch no kernel, and the carried
    cells do not wait."""
    first: dict[str, int] = {}
    for place, cell in enumerate(cells):
        if (cell is not None and cell.case in autotuned and cell.row is Row.EAGER and cell.wrapping is not Wrapping.CONTROL
                and cell.id not in carried):
            first.setdefault(cell.case, COMPILED_AHEAD if cell.case in ahead else place)
    return {place: first[cell.case] for place, cell in enumerate(cells)
            if cell is not None and cell.case in first and place != first[cell.case] and cell.wrapping is not Wrapping.CONTROL
            and cell.id not in carried}


def spaced(items: Sequence[T], builds: Callable[[T], tuple[Hashable, ...]], gap: int) -> list[T]:
    """`items` in their order, but each item that shares a build with an earlier one starts at least `gap` places
    after the first item of that build, which builds it: started beside it, it would wait for it, its worker idle.
    The items held back keep their order, and take their places as soon as they may."""
    first: dict[Hashable, int] = {}
    out: list[T] = []
    held: list[tuple[int, int, T]] = []  # (the first place it may take, its place before, the item)

    def earliest(item: T) -> int:
        return max((first[build] + gap for build in builds(item) if build in first), default=0)

    def place(item: T) -> None:
        for build in builds(item):
            first.setdefault(build, len(out))
        out.append(item)

    def release(until: float) -> None:
        """Place the held items whose place has come (all of them, in the order of their places, at the end)."""
        while held and held[0][0] <= max(until, len(out)):
            when, index, item = heapq.heappop(held)
            now = earliest(item)  # an item held for one build may since share another's, begun after it was held
            if now > when:
                heapq.heappush(held, (now, index, item))
            else:
                place(item)

    for index, item in enumerate(items):
        release(len(out))
        if (when := earliest(item)) > len(out):
            heapq.heappush(held, (when, index, item))
        else:
            place(item)
    release(float("inf"))
    return out


class MatrixShard:
    """The role of --shard=K/N in every process that collects: keep this runner's part of the cells."""

    def __init__(self, config: pytest.Config, part: shard.Shard):
        self.config, self.part = config, part

    def keep_this_part(self, items: list[pytest.Item], cost: Callable[[Cell], float]) -> None:
        """Of the cells -k, --deselect and --lf left, this runner's part (in their order) by `cost` (`cell_costs`);
        the others deselected."""
        config = self.config
        cells = {cell: item for item in items if (cell := cell_of(item)) is not None}
        parts = shard.partition(cells, cost, self.part.count, whole_cases=bool(config.getoption("shard_timings")))
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


def cell_costs(config: pytest.Config) -> Callable[[Cell], float]:
    """What orders the cells and balances the parts of --shard: each cell's work in --shard-timings, else its
    expected cost."""
    timings = config.getoption("shard_timings")
    if not timings:
        return expected_costs(config)
    try:
        return expected_costs(config, shard.costs_from(load(timings)))
    except ResultsError as exc:
        raise pytest.UsageError(f"--shard-timings: {exc}") from None
