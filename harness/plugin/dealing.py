"""How the controller deals the cells to xdist's workers. As xdist's `--dist load`, in the run's order, but a cell that
waits for another (`scheduling.first_compiles`) comes after every cell that waits for none, unless the cell it waits
for has ended or runs before it on the same worker. Imported only where xdist runs the cells: the torch-free tools'
pytest has no xdist."""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadScheduling

from harness.model.cell import Cell
from harness.plugin.options import carried_cells, loaded
from harness.plugin.scheduling import first_compiles


class MatrixScheduling(LoadScheduling):
    """The controller's dealer. Cells that wait are not held back from a worker that has nothing else to run: the run
    takes no longer than xdist's order would, and its other cells, the other cases' and the controls, run while the
    awaited cells fill the cache (a library of one autotuned case has few of those: its cells then start beside the
    awaited one, as before). An xdist worker runs a cell only once it holds the next one (it runs each cell knowing
    what follows), so a worker is dealt the cells that wait for a cell it holds, behind it, before any other."""

    def __init__(self, config: Any, log: Any = None):
        super().__init__(config, log)
        self._waits: dict[int, int] | None = None  # a cell's place in the collection -> the place of the cell it waits for

    def waits(self) -> dict[int, int]:
        """Who waits for whom, made at the first deal, once the workers' collections are in."""
        if self._waits is None:
            assert self.collection is not None
            cases = loaded(self.config).cases
            self._waits = first_compiles([Cell.of_test(nodeid) for nodeid in self.collection],
                                         {name for name, case in cases.items() if case.autotune_configs},
                                         carried_cells(self.config))
        return self._waits

    def _send_tests(self, node: Any, num: int) -> None:
        """Deal `node` up to `num` cells: first those that others wait for; then, in the run's order, those that wait for
        a cell this worker runs before them; then those that wait for none; then, where none is left, those that wait."""
        waits = self.waits()
        awaited = set(waits.values())
        chosen = [place for place in self.pending if place in awaited][:num]
        queued = {*self.node2pending[node], *chosen}
        passes = (lambda place: waits.get(place) in queued, lambda place: place not in waits, lambda place: True)
        for deal in passes:
            for place in self.pending:
                if len(chosen) >= num:
                    break
                if place not in awaited and place not in chosen and deal(place):
                    chosen.append(place)
        if chosen:
            taken = set(chosen)
            self.pending[:] = [place for place in self.pending if place not in taken]
            self.node2pending[node].extend(chosen)
            node.send_runtest_some(chosen)

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        self._release({item_index})
        super().mark_test_complete(node, item_index, duration)

    def remove_node(self, node: Any) -> str | None:
        # A worker that died: its cells go back to the pending ones, but the one it was running is reported as its crash
        # and never ends; the cells that waited for one of them wait no more.
        self._release(set(self.node2pending.get(node, ())))
        return super().remove_node(node)

    def _release(self, ended: set[int]) -> None:
        """The cells that waited for one of `ended` wait no more."""
        if self._waits is not None:
            for place in [place for place, first in self._waits.items() if first in ended]:
                del self._waits[place]
