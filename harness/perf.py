"""Kernel speed (`--perf`): the median latency of a cell's artifact on the case's benchmark input, and
how it compares with the raw kernel run eagerly. It answers: does wrapping or compiling cost speed?"""

from __future__ import annotations

import math
import statistics
import time
from collections import defaultdict
from typing import Any, Callable

import torch

from harness.case import Case, Example, dtype_name
from harness import path as paths
from harness.path import Kind, Path
from harness.wrapping import Wrapping

TIMED_KINDS = (Kind.EAGER, Kind.COMPILE, Kind.EXPORT, Kind.AOTI, Kind.TRAIN)


def applies(path: Path) -> bool:
    return path.kind in TIMED_KINDS


def baseline_cell(case: str, path: Path) -> str:
    """What a cell's speed is compared with: the raw kernel in eager mode (its autograd.Function for training)."""
    if path.kind is Kind.TRAIN:
        return f"{case}-{Wrapping.RAW_AUTOGRAD.value}-{Path.TRAIN_EAGER.value}"
    return f"{case}-{Wrapping.RAW.value}-{Path.EAGER.value}"


def benchmark_dtype(case: Case) -> torch.dtype:
    return torch.float16 if torch.float16 in case.dtypes else case.dtypes[0]


def median_ms(fn: Callable[[], Any], device: str) -> float:
    """Median latency in ms: triton.testing.do_bench (CUDA events, cache flushed) on a GPU; a wall clock
    on the CPU interpreter, whose figures say nothing about a GPU."""
    if device == "cuda":
        from triton.testing import do_bench

        return float(do_bench(fn, warmup=25, rep=100, return_mode="median"))
    fn()
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def measure(
    case: Case,
    artifact_for: Callable[[torch.dtype], Callable[..., Any]],
    make_inputs: Callable[[Example], tuple[Any, ...]],
    check: Callable[[torch.dtype, tuple[Any, ...], Any], None],
    device: str,
) -> dict[str, Any]:
    """Time the artifact on the benchmark input, after checking its output there against the reference."""
    dtype = benchmark_dtype(case)
    example = Example(dtype, case.benchmark_shape, seed=0)
    inputs = make_inputs(example)
    artifact = artifact_for(dtype)
    figures: dict[str, Any] = {"shape": list(case.benchmark_shape), "dtype": dtype_name(dtype)}
    try:
        check(dtype, inputs, artifact)
        figures["median_ms"] = median_ms(lambda: paths.call(artifact, inputs), device)
    except Exception as exc:  # a failure only at the benchmark size: recorded beside the figure, not hidden
        figures["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
    return figures


def speedup(cell: Any, by_id: dict[str, Any]) -> float | None:
    """Eager raw kernel's latency / this cell's: above 1 is faster than eager."""
    if not cell.perf or "median_ms" not in cell.perf:
        return None
    base = by_id.get(baseline_cell(cell.case, Path(cell.path)))
    if base is None or not base.perf or "median_ms" not in base.perf or cell.perf["median_ms"] <= 0:
        return None
    return base.perf["median_ms"] / cell.perf["median_ms"]


def speed_table(cells: list[Any]) -> list[list[str]]:
    """Rows of (path, one geometric-mean speed vs eager per wrapping, over the cases that passed)."""
    by_id = {c.cell: c for c in cells}
    ratios: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for c in cells:
        ratio = speedup(c, by_id)
        if ratio is not None:
            ratios[c.path][c.wrapping].append(ratio)
    rows = []
    for path in Path:
        if path.value not in ratios:
            continue
        row = [path.title]
        for w in Wrapping:
            values = ratios[path.value].get(w.value)
            row.append(f"{math.exp(sum(map(math.log, values)) / len(values)):.2f}x ({len(values)})" if values else "")
        rows.append(row)
    return rows
