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
    # machine: each cell of these rows costs a C++ build or a new Python process, about 10 s of CPU).
    limited_rows: tuple[str, ...] = ()
    limited_rows_tag: str | None = None
    workdir: str = "."
    perf: bool = False  # time the artifact after a pass (harness.perf)
    packages: str | None = None  # this run's AOTInductor packages, shared by its Python and C++ runtime cells
    caches: str | None = None  # the run's caches (the C++ runner is built there once)


# The matrix's profiles: derandomized, so the same versions see the same inputs on every run.
PROFILES = {
    "matrix": dict(max_examples=20, derandomize=True),
    # CI's run on the CPU interpreter: every cell, fewer and smaller inputs (the interpreter runs each
    # program in numpy, so a batch of 4096 rows costs seconds), one dtype (an AOTInductor package is
    # built per dtype, and its C++ build is most of a CPU run) and a smaller search for the smallest failure.
    # The production rows that build C++ or start a process per cell run on the tutorial's cases only.
    "ci": dict(max_examples=2, derandomize=True, checked_batch_max=256, dtypes_per_cell=1, shrink_examples=5,
               limited_rows=("compile_cpp_wrapper", "aoti_fresh_nonstrict"), limited_rows_tag="tutorial"),
    "thorough": dict(max_examples=200, derandomize=True),
    "explore": dict(max_examples=50, derandomize=False),
}
DEFAULT_PROFILE = "matrix"
