"""Where a cell's time goes (`--profile-dir DIR`): a sampling profile of each process that works for a cell.

While a cell runs, a thread looks at the process's main thread every SAMPLE_S seconds and files the sample under
the first part of PARTS whose code is anywhere on the stack, so the parts split the cell's time without
overlap: a g++ build inside Inductor inside Dynamo counts as the C++ compiler's. It counts the innermost
function too. Sampling, unlike a tracing profiler, sees the frames Dynamo runs and barely slows the cell. The
runner and the warm-cache row's new process each leave `<cell id>.<role>.<pid>-<n>.json` in DIR (the cell id
comes from the runner's environment, which the processes a cell starts inherit); `python -m harness profile DIR`
sums them (harness.tools.profile).

A profiled run's outcomes are not a chart's: a sample holds the main thread's frames, and so their locals, for a
moment, which changes when tensors and dispatch modes are let go. In a profiled run of the whole matrix on the GPU
runner, 135 of 2415 cells that pass unprofiled failed (CUDA graph pools with untracked tensors, fake tensors that
outlived their mode, flaky first examples); the samples then also held each frame until the next sample.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sys
import threading
import time
from collections import Counter
from typing import Iterator

DIR_ENV = "TCM_PROFILE_DIR"  # where the samples go; unset: nothing is profiled
CELL_ENV = "TCM_PROFILE_CELL"  # the cell a process works for, set by the runner before each cell
SAMPLE_S = 0.01

# The parts of a cell's time, most specific first: a sample is the first part with a frame on its stack (a path
# ending, or a path ending and a function name).
PARTS: tuple[tuple[str, tuple[tuple[str, str | None], ...]], ...] = (
    ("waiting on a file lock (a package another cell builds, Inductor's cache)", (("filelock/_api.py", "acquire"),)),
    ("C++ compiler (Inductor's builds)", (("torch/_inductor/cpp_builder.py", None),)),
    ("Triton compile", (("triton/compiler/compiler.py", "compile"),)),
    ("autotuning: timing configs", (("triton/testing.py", None), ("torch/_inductor/runtime/benchmarking.py", None))),
    ("waiting for a helper process (new process, C++ runner)", (("harness/processes/helper_process.py", None),)),
    ("AOTInductor load", (("torch/_inductor/__init__.py", "aoti_load_package"),)),
    ("Inductor (lowering, code generation, loading)", (("torch/_inductor/", None),)),
    ("AOTAutograd", (("torch/_functorch/", None),)),
    ("export", (("torch/export/", None), ("torch/_export/", None))),
    ("Dynamo", (("torch/_dynamo/", None),)),
    ("Triton launches", (("triton/runtime/", None),)),
    ("the reference", (("harness/execution/execute.py", "verify"),)),
    ("the case's inputs", (("harness/execution/execute.py", "inputs"),)),
    ("hypothesis", (("hypothesis/", None),)),
    ("importing modules", (("<frozen importlib._bootstrap>", None),)),
)
OTHER = "other (the harness, torch's eager ops)"
_dumped = itertools.count()


def _part(frame: object) -> tuple[str, str]:
    """(part, innermost function) of one sample of a stack."""
    codes = []
    while frame is not None:
        codes.append(frame.f_code)  # type: ignore[attr-defined]
        frame = frame.f_back  # type: ignore[attr-defined]
    leaf = f"{codes[0].co_name} ({_short(codes[0].co_filename)}:{codes[0].co_firstlineno})" if codes else "?"
    for part, places in PARTS:
        for code in codes:
            path = code.co_filename.replace(os.sep, "/")
            if any((path.endswith(p) or (p.endswith("/") and p in path)) and (name is None or code.co_name == name)
                   for p, name in places):
                return part, leaf
    return OTHER, leaf


def _short(path: str) -> str:
    """A source path from its package folder on (site-packages/torch/... -> torch/...)."""
    path = path.replace(os.sep, "/")
    for package in ("torch/", "triton/", "harness/", "hypothesis/", "sympy/"):
        at = path.rfind("/" + package)
        if at >= 0:
            return path[at + 1:]
    return path


class _Sampler(threading.Thread):
    def __init__(self, target: int):
        super().__init__(name="tcm-profile", daemon=True)
        self.target, self.stop = target, threading.Event()
        self.parts: Counter[str] = Counter()
        self.leaves: Counter[str] = Counter()

    def run(self) -> None:
        while not self.stop.wait(SAMPLE_S):
            frame = sys._current_frames().get(self.target)
            if frame is not None:
                part, leaf = _part(frame)
                self.parts[part] += 1
                self.leaves[leaf] += 1
            del frame  # not held until the next sample: a frame keeps its locals (tensors, modes) alive


@contextlib.contextmanager
def profiled(role: str) -> Iterator[None]:
    """Sample the block as `role`'s work for the cell named in CELL_ENV, where --profile-dir asked for it."""
    directory, cell = os.environ.get(DIR_ENV), os.environ.get(CELL_ENV, "no-cell")
    if not directory:
        yield
        return
    sampler = _Sampler(threading.get_ident())
    began = time.perf_counter()
    sampler.start()
    try:
        yield
    finally:
        sampler.stop.set()
        sampler.join()
        seconds = time.perf_counter() - began
        samples = sum(sampler.parts.values()) or 1
        record = {"cell": cell, "role": role, "seconds": seconds,
                  "parts": {k: v * seconds / samples for k, v in sampler.parts.items()},
                  "leaves": {k: v * seconds / samples for k, v in sampler.leaves.most_common(40)}}
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, f"{cell}.{role}.{os.getpid()}-{next(_dumped)}.json"), "w") as f:
            json.dump(record, f)
