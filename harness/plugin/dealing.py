"""How the controller deals the cells to xdist's workers: xdist's `--dist load`, in the run's order, except that a cell
that waits for another (`scheduling.first_compiles`) is dealt once that cell has ended, or to the worker that runs that
cell before it. Imported only where xdist runs the cells: the torch-free tools' pytest has no xdist."""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadScheduling

from harness.model.cell import Cell
from harness.plugin.options import carried_cells, loaded
from harness.plugin.scheduling import first_compiles


class MatrixScheduling(LoadScheduling):
    """The controller's dealer. An xdist worker runs a cell only once it holds the next one (it runs each cell knowing
    what follows), so a worker dealt one cell waits; a worker holds the cell that others wait for, and may always be
    dealt those others, which it runs after it: no cell waits for a cell that waits. A worker dealt the last cell that
    waits for nothing holds it until the awaited cell ends: dealt a waiting cell behind it instead, the worker would
    compile the kernels beside the awaited cell. What no cell waits for any longer, a worker whose cell ended takes as
    before."""

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
        a cell this worker runs before them (behind it, a cell that waits for nothing would wait as long); then those that
        wait for none."""
        waits = self.waits()
        awaited = set(waits.values())
        chosen = [place for place in self.pending if place in awaited][:num]
        queued = {*self.node2pending[node], *chosen}
        for behind in (True, False):
            for place in self.pending:
                if len(chosen) >= num:
                    break
                if place not in awaited and place not in chosen and (waits.get(place) in queued if behind else place not in waits):
                    chosen.append(place)
        if chosen:
            taken = set(chosen)
            self.pending[:] = [place for place in self.pending if place not in taken]
            self.node2pending[node].extend(chosen)
            node.send_runtest_some(chosen)

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        released = self._release({item_index})
        super().mark_test_complete(node, item_index, duration)
        if released:  # workers waiting for one more cell may have one now
            for other in self.nodes:
                if other is not node:
                    self.check_schedule(other)

    def remove_node(self, node: Any) -> str | None:
        # A worker that died: the cells that waited for one of its cells wait no longer (that cell goes back into the
        # pending cells, to run again or to be reported as the worker's crash).
        self._release(set(self.node2pending.get(node, ())))
        return super().remove_node(node)

    def _release(self, ended: set[int]) -> bool:
        """The cells that waited for one of `ended` wait no more; whether there were any."""
        if self._waits is None:
            return False
        released = [place for place, first in self._waits.items() if first in ended]
        for place in released:
            del self._waits[place]
        return bool(released)
