"""The cases as a table: what each one tests and which inputs hypothesis draws for it.

`python -m harness cases` prints it; the README's case list is this table, checked by a test.
"""

from __future__ import annotations

from typing import Iterable

from tabulate import tabulate

from harness.case import Case, dtype_name


def strategy_text(strategy: object) -> str:
    """A strategy as a reader wants it: inputs.shapes says its ranges; any other strategy shows its repr."""
    return getattr(strategy, "summary", None) or repr(strategy)


def _scalars(case: Case) -> str:
    if not case.scalars:
        return "none"
    drawn = ", ".join(f"`{name}`: {strategy_text(values)}" for name, values in case.scalars.items())
    traced = ", ".join(f"{name}={case.example_scalars[name]!r}" for name in case.scalars)
    return f"{drawn}; traced with {traced}"


def _more(case: Case) -> str:
    notes = []
    if configs := case.autotune_configs:
        notes.append(f"autotuned ({configs} configs)")
    if case.backward is None:
        notes.append("no backward")
    else:
        notes.append("backward: " + (", ".join(k.__name__ for k in case.backward.kernels) if case.backward.kernels else "PyTorch"))
    if case.mutates:
        notes.append("mutates " + ", ".join(sorted(case.mutates)))
    if case.unbatched:
        notes.append("no batch dimension: " + ", ".join(sorted(case.unbatched)))
    if case.flops:
        notes.append("flop formula")
    if case.requires:
        notes.append(f"requires: {case.requires.__name__}")
    return "; ".join(notes)


def table(cases: Iterable[Case]) -> str:
    rows = [
        [
            f"`{case.name}`",
            case.description,
            ", ".join(dtype_name(d) for d in case.dtypes),
            strategy_text(case.shapes),
            f"{case.example_shape}, batch 1..{case.max_batch}",
            _scalars(case),
            _more(case),
        ]
        for case in sorted(cases, key=lambda c: c.name)
    ]
    headers = ["case", "what it tests", "dtypes", "shapes drawn", "export/AOTInductor: traced at, batch", "scalars", "more"]
    return tabulate(rows, headers=headers, tablefmt="github")
