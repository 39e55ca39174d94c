"""The paths: what a kind of row does with the wrapped kernel, each a module of plain PyTorch.

Torch and nothing of the harness: the cell's builder calls it (harness.execution.builders), and the cell's reproducer
prints its source as it is (harness.execution.reproducer), one program for both, which a test holds them to."""

from __future__ import annotations

from types import ModuleType

from harness.execution.paths import aoti, compiling, export, subsystems
from harness.model.rows import Kind, Row

# The path modules each kind of row runs, printed in this order into its reproducer. The kinds not here (eager, the
# cache artifacts) are still written out by the reproducer beside their builders.
_OF_KIND: dict[Kind, tuple[ModuleType, ...]] = {
    Kind.COMPILE: (compiling,), Kind.TRAIN: (compiling,), Kind.WARM_CACHE: (compiling,), Kind.PRECOMPILE: (compiling,),
    Kind.EXPORT: (export,), Kind.EXPORT_LOAD: (export,), Kind.AOTI: (export, aoti), Kind.AOTI_CPP: (export, aoti),
    Kind.AOTI_FRESH: (export, aoti), Kind.SUBSYSTEM: (subsystems,),
}


def of(row: Row) -> tuple[ModuleType, ...]:
    """The path modules a cell of `row` runs (training without a compiler runs none)."""
    if (row.spec.kind is Kind.TRAIN and row.spec.compile_options is None) or row is Row.CPU_FALLBACK:
        return ()  # training without a compiler; the CPU fallback, the style's own kernel registered for the CPU
    return _OF_KIND.get(row.spec.kind, ())
