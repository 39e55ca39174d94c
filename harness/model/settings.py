"""What a run asks of every cell: the hypothesis profile and where the run keeps its files."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    """How many examples and how they are drawn (from the run's profile), and the run's directories."""

    max_examples: int = 20
    derandomize: bool = True
    checked_batch_max: int = 4096  # exported artifacts are checked on batches up to this; --perf runs the benchmark batch
    dtypes_per_cell: int | None = None  # check only a case's first N testable dtypes (each dtype is a build)
    # Examples a cell may run after its first failure (hypothesis generates on, then shrinks). Unbounded, a
    # failing cell ran about 100 examples and up to two minutes, ending the matrix late; 20 more still find
    # a small failing input.
    shrink_examples: int = 20
    # Rows this run checks only on the cases with `limited_rows_tag` (a profile for the interpreter on a small
    # machine: each cell of these rows costs a C++ build, an autotuning or a new Python process).
    limited_rows: tuple[str, ...] = ()
    limited_rows_tag: str | None = None
    workdir: str = "."
    perf: bool = False  # time the artifact after a pass (harness.execution.perf)
    packages: str | None = None  # this run's AOTInductor packages, shared by its Python and C++ runtime cells
    caches: str | None = None  # the run's caches (the C++ runner is built there once)


# The matrix's profiles: derandomized, so the same versions see the same inputs on every run.
PROFILES = {
    "matrix": dict(max_examples=20, derandomize=True),
    # The default without a CUDA device (a first run on a laptop, and CI), on Triton's CPU interpreter: every
    # cell, fewer and smaller inputs (the interpreter runs each program in numpy, so a batch of 4096 rows
    # costs seconds), one dtype (an AOTInductor package is built per dtype) and a smaller search for the
    # smallest failure. The rows whose every cell builds C++ (AOTInductor, the C++ wrapper), autotunes
    # (max-autotune) or starts a process run on the tutorial's cases only: on 2 cores they were two thirds
    # of the run's time.
    "quick": dict(max_examples=2, derandomize=True, checked_batch_max=256, dtypes_per_cell=1, shrink_examples=5,
                  limited_rows=("aoti_strict", "aoti_nonstrict", "aoti_cpp_strict", "aoti_cpp_nonstrict", "aoti_fresh_nonstrict",
                                "compile_cpp_wrapper", "compile_max_autotune"),
                  limited_rows_tag="tutorial"),
    "thorough": dict(max_examples=200, derandomize=True),
    "explore": dict(max_examples=50, derandomize=False),
}
DEFAULT_PROFILE = "matrix"  # with a CUDA device
INTERPRETER_PROFILE = "quick"  # without one

# What each profile does, as the run's first lines say it.
ABOUT = {
    "matrix": "20 examples a cell, every dtype, every row on every case",
    "quick": "2 small examples a cell, one dtype, the AOTInductor, C++ wrapper and max-autotune rows on the 3 tutorial cases only",
    "thorough": "200 examples a cell, every dtype, every row on every case",
    "explore": "50 random (not derandomized) examples a cell, every dtype, every row on every case",
}
