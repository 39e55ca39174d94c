"""The paths: what a kind of row does with the wrapped kernel, each a module of plain PyTorch.

Torch and nothing of the harness: the cell's builder calls it (harness.execution.builders), and the cell's reproducer
prints its source as it is (harness.execution.reproducer), one program for both, which a test holds them to. A path
module takes another's names with `from harness.execution.paths.<module> import <name>`, the one line the reproducer
leaves out: it prints the other module before it (`printed`)."""

from __future__ import annotations

import inspect
import re
from types import ModuleType

from harness.execution.paths import aoti, compiling, export, saving, serving, subsystems, training
from harness.model.rows import Kind, Row

# The path modules each kind of row runs. The kinds not here (eager) run the style as it is.
_OF_KIND: dict[Kind, tuple[ModuleType, ...]] = {
    Kind.COMPILE: (compiling,), Kind.TRAIN: (compiling, training), Kind.WARM_CACHE: (compiling,), Kind.PRECOMPILE: (saving,),
    Kind.EXPORT: (export,), Kind.EXPORT_LOAD: (export, saving), Kind.AOTI: (export, aoti), Kind.AOTI_CPP: (export, aoti, serving),
    Kind.AOTI_FRESH: (export, aoti, serving), Kind.SUBSYSTEM: (subsystems,), Kind.CACHE_ARTIFACTS: (compiling, saving),
}

_TAKEN = re.compile(rf"^from {re.escape(__name__)}\.(\w+) import [^\n]*\n", re.M)


def of(row: Row) -> tuple[ModuleType, ...]:
    """The path modules a cell of `row` runs."""
    if row.spec.kind is Kind.TRAIN and row.spec.compile_options is None:
        return (training,)  # training without a compiler
    if row is Row.CPU_FALLBACK:
        return ()  # the style's own kernel registered for the CPU
    return _OF_KIND.get(row.spec.kind, ())


def printed(modules: tuple[ModuleType, ...]) -> list[str]:
    """The modules' sources as a reproducer prints them, each after the path modules it takes names from, once, and
    without the lines that take them (their names are defined above it in the same file)."""
    order: list[ModuleType] = []

    def visit(module: ModuleType) -> None:
        if module in order:
            return
        for name in _TAKEN.findall(inspect.getsource(module)):
            visit(globals()[name])
        order.append(module)

    for module in modules:
        visit(module)
    return [_TAKEN.sub("", inspect.getsource(module)) for module in order]
