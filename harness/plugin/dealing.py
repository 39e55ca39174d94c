"""How the controller deals the cells to xdist's workers. As xdist's `--dist load`, in the run's order, but a cell that
waits for another (`scheduling.first_compiles`) comes after every cell that waits for none, unless the cell it waits
for has ended or runs before it on the same worker; a cell whose case is compiled ahead, until the case's slices have
ended. Imported only where xdist runs the cells: the torch-free tools'
pytest has no xdist."""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadScheduling

from harness.model.cell import Cell
from harness.plugin.options import carried_cells, compiled_ahead, loaded, still_compiling_ahead
from harness.plugin.scheduling import COMPILED_AHEAD, first_compiles


class MatrixScheduling(LoadScheduling):
    """The controller's dealer. Cells that wait are not held back from a worker that has nothing else to run: the run
    takes no longer than xdist's order would, and its other cells, the other cases' and the controls, run while the
    awaited cells fill the cache (a library of one autotuned case has few of those: its cells then start beside the
    awaited one, as before). An xdist worker runs a cell only once it holds the next one (it runs each cell knowing
    what follows), so a worker is dealt the cells that wait for a cell it holds, behind it, before any other."""

    def __init__(self, config: Any, log: Any = None):
        super().__init__(config, log)
        self._waits: dict[int, int] | None = None  # a cell's place in the collection -> the place of the cell it waits for
        self._awaited: set[int] = set()  # the places of the cells that others wait for
        self._ahead: dict[int, str] = {}  # a cell's place -> its case, for the cells that wait for their case's slices

    def waits(self) -> dict[int, int]:
        """Who waits for whom, made at the first deal, once the workers' collections are in."""
        if self._waits is None:
            assert self.collection is not None
            cases = loaded(self.config).cases
            cells = [Cell.of_test(nodeid) for nodeid in self.collection]
            self._waits = first_compiles(cells, {name for name, case in cases.items() if case.autotune_configs},
                                         carried_cells(self.config), compiled_ahead(self.config))
            self._ahead = {place: cells[place].case for place, first in self._waits.items() if first == COMPILED_AHEAD}
            self._reorder()
        return self._waits

    def _reorder(self) -> None:
        """The pending cells: those others wait for, then those that wait for none, then those that wait, each in the run's
        order (their places in the collection)."""
        waits = self._waits or {}
        self._awaited = set(waits.values())
        self.pending.sort(key=lambda place: (0 if place in self._awaited else 2 if place in waits else 1, place))

    def _send_tests(self, node: Any, num: int) -> None:
        """Deal `node` up to `num` cells from the front of the pending ones; but to a worker that holds a cell others wait
        for, those first."""
        self.waits()
        self._release_compiled_ahead()
        waits = self.waits()
        if not waits:  # no cell waits, or none any longer: xdist's own dealing
            super()._send_tests(node, num)
            return
        chosen: list[int] = []
        queued = set(self.node2pending[node])
        while len(chosen) < num and self.pending:
            behind = next((p for p in self.pending if waits.get(p) in queued), None) if queued & self._awaited else None
            place = self.pending[0] if behind is None else behind
            self.pending.remove(place)
            chosen.append(place)
            queued.add(place)
        if chosen:
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

    def _release_compiled_ahead(self) -> None:
        """The cells of a case whose slices have all ended wait no more: they take their places in the run's order. Held
        after every other cell to the end, a case's longest cells started last and ended the run late."""
        if not self._ahead:
            return
        still = still_compiling_ahead(self.config)
        released = [place for place, case in self._ahead.items() if case not in still]
        if released:
            for place in released:
                del self._ahead[place]
                self._waits.pop(place, None)  # type: ignore[union-attr]
            self._reorder()

    def _release(self, ended: set[int]) -> None:
        """The cells that waited for one of `ended` wait no more: they take their places in the run's order."""
        if self._waits and ended & self._awaited:
            for place in [place for place, first in self._waits.items() if first in ended]:
                del self._waits[place]
            self._reorder()
