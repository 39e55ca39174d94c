"""The cases as a table: what each one tests and which inputs hypothesis draws for it.

`python -m harness cases` prints it; docs/cases.md's case list is this table, checked by a test.
"""

from __future__ import annotations

import re
from typing import Iterable

import torch
from tabulate import tabulate

from harness.authoring.case import Case, dtype_name, kernel_name

STRATEGY_CHARS = 80  # of a hand-made strategy's text in the case table


def strategy_text(strategy: object) -> str:
    """A strategy as a reader wants it: inputs.shapes says its ranges; any other strategy its repr, with hypothesis's
    integer ranges as `low..high`, tuples as parentheses, and cut after STRATEGY_CHARS characters."""
    summary = getattr(strategy, "summary", None)
    if summary:
        return summary
    text = re.sub(r"integers\(min_value=(-?\d+), max_value=(-?\d+)\)", r"\1..\2", repr(strategy))
    text = re.sub(r"\btuples\(", "(", text)
    return text if len(text) <= STRATEGY_CHARS else text[: STRATEGY_CHARS - 1] + "…"



def _scalars(case: Case) -> str:
    if not case.scalars:
        return "none"
    drawn = ", ".join(f"`{name}`: {strategy_text(values)}" for name, values in case.scalars.items())
    traced = ", ".join(f"{name}={case.example_scalars[name]!r}" for name in case.scalars)
    return f"{drawn}; traced with {traced}"


def arguments(case: Case) -> str:
    """Each launcher argument and its kind: a float tensor (in the case's dtype), another dtype's tensor
    (an int64 index, a bool mask), an optional tensor, or a scalar; as make_inputs makes them."""
    made = list(case.make_inputs(case.example_shape, case.dtypes[0], "cpu", torch.Generator().manual_seed(0)))
    values = made + [case.example_scalars[name] for name in case.scalars]
    kinds = []
    for param, value in zip(case.input_parameters(), values):
        if isinstance(value, torch.Tensor):
            kind = "float tensor" if value.dtype == case.dtypes[0] else f"{dtype_name(value.dtype)} tensor"
            if param.name in case.optional_inputs:
                kind = f"optional {kind} (or None)"
            if param.name in case.unbatched:
                kind += ", no batch"
        else:
            kind = f"{type(value).__name__} scalar"
        kinds.append(f"`{param.name}` {kind}")
    return "; ".join(kinds)


def _more(case: Case) -> str:
    notes = []
    if configs := case.autotune_configs:
        notes.append(f"autotuned ({configs} configs)")
    if case.returns:
        kept = [name for name in case.returns if name not in (case.outputs or case.returns)]
        notes.append(f"returns ({', '.join(case.returns)})" + (f", keeps {', '.join(kept)} for the backward" if kept else ""))
    if case.backward is None:
        notes.append("no backward")
    else:
        notes.append("backward: " + (", ".join(kernel_name(k) for k in case.backward.kernels) if case.backward.kernels else "PyTorch")
                     + (f", takes ({', '.join(case.backward.takes)})" if case.backward.takes else ""))
    if case.mutates:
        notes.append("mutates " + ", ".join(sorted(case.mutates)))
    elif not case.takes_gradient:
        notes.append("no input takes a gradient: no training cells")
    if case.flops:
        notes.append("flop formula")
    if case.requires:
        notes.append(f"requires: {case.requires.__name__}")
    if case.shipped_kind is not None:
        notes.append(f"shipped op: {case.shipped_kind.value}")
    return "; ".join(notes)


def table(cases: Iterable[Case]) -> str:
    rows = [
        [
            f"`{case.name}`",
            case.description,
            arguments(case),
            ", ".join(dtype_name(d) for d in case.dtypes),
            strategy_text(case.shapes),
            f"{case.example_shape}, batch {case.min_batch}..{case.max_batch}" + "".join(f", dim {d} 1..{m}" for d, m in sorted(case.dynamic_dims.items())),
            _scalars(case),
            _more(case),
        ]
        for case in sorted(cases, key=lambda c: c.name)
    ]
    headers = ["case", "what it tests", "arguments", "dtypes", "shapes drawn", "export/AOTInductor: traced at, batch", "scalars", "more"]
    return tabulate(rows, headers=headers, tablefmt="github")
