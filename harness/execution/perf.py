"""Kernel speed (`--perf`): the median latency of a cell's artifact on the case's benchmark input. The
reports compare it with the cell's speed baseline (Cell.speed_baseline, harness.reporting.support.speedup). It answers:
does wrapping or compiling cost speed?"""

from __future__ import annotations

import dataclasses
import statistics
import time
from typing import Any, Callable

import torch
from triton.testing import do_bench

from harness.authoring.case import Case, Example, dtype_name
from harness.model.errors import described
from harness.model.outcome import Perf


def benchmark_dtype(case: Case) -> torch.dtype:
    return torch.float16 if torch.float16 in case.dtypes else case.dtypes[0]


def median_ms(fn: Callable[[], Any], device: str) -> float:
    """Median latency in ms: triton.testing.do_bench (CUDA events, cache flushed) on a GPU; a wall clock
    on the CPU interpreter, whose figures say nothing about a GPU."""
    if device == "cuda":
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
    check: Callable[[Any, torch.dtype, tuple[Any, ...]], None],
    call: Callable[[Any, tuple[Any, ...]], Any],
    device: str,
) -> Perf:
    """Time the artifact on the benchmark input, after checking its output there against the reference."""
    dtype = benchmark_dtype(case)
    example = Example(dtype, case.benchmark_shape, seed=0)
    inputs = make_inputs(example)
    artifact = artifact_for(dtype)
    at = Perf(shape=list(case.benchmark_shape), dtype=dtype_name(dtype))
    try:
        check(artifact, dtype, inputs)
        return dataclasses.replace(at, median_ms=median_ms(lambda: call(artifact, inputs), device))
    except Exception as exc:  # a failure only at the benchmark size: recorded beside the figure, not hidden
        return dataclasses.replace(at, error=described(exc)[:300])
