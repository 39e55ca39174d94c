"""A run's pytest processes freeze their heap once torch and the cells are in it. They keep what they imported and
collected to their end: torch's modules, the cases and the cells. Python's garbage collector walks all of it at every
full collection, and pytest collects five times as it ends (its check for exceptions raised in finalizers): about 2.5
s of CPU a run in a process that imported torch. Frozen, it is left out of every later collection, and thawed as the
interpreter exits, so that its own last collection frees it as before (nanobind, Triton's bindings, reports what is
still alive then as leaked). The cells run in runner processes, which this never reaches."""

from __future__ import annotations

import atexit
import gc

_frozen = False


def freeze() -> None:
    """Move every object this process holds now out of the collector's way, until the interpreter exits."""
    global _frozen
    gc.freeze()
    if not _frozen:
        _frozen = True
        atexit.register(gc.unfreeze)
