"""What a run asks of every cell: its profile (how many examples, how they are drawn) and where it keeps its files."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

FULL_BATCH = 4096  # the largest batch a profile checks exported artifacts on, unless it says less


@dataclass(frozen=True)
class Profile:
    """One `--matrix-profile`: every fact of it here, and the sentence the run's first lines say it in made from them."""

    name: str
    max_examples: int
    derandomize: bool = True  # the same versions see the same inputs on every run
    checked_batch_max: int = FULL_BATCH  # exported artifacts are checked on batches up to this; --perf runs the benchmark batch
    dtypes_per_cell: int | None = None  # check only a case's first N testable dtypes (each dtype is a build)
    # Examples a cell may run after its first failure (hypothesis generates on, then shrinks). Unbounded, a
    # failing cell ran about 100 examples and up to two minutes, ending the matrix late; 20 more still find
    # a small failing input.
    shrink_examples: int = 20
    # Rows this profile checks only on the built-in cases tagged `limited_rows_tag` (a profile for the
    # interpreter on a small machine: each cell of these rows costs a C++ build, an autotuning or a new Python
    # process). The limit is there for the time of the built-in matrix, whose cases a user did not write; a
    # user's own cases (--cases) are what their run is for, and get every row.
    limited_rows: tuple[str, ...] = ()
    limited_rows_tag: str | None = None

    def __post_init__(self) -> None:
        if bool(self.limited_rows) != bool(self.limited_rows_tag):
            raise TypeError(f"profile {self.name!r}: limited_rows and limited_rows_tag go together")

    @property
    def summary(self) -> str:
        """What the profile does, in words: "2 small examples a cell, one dtype, ...\""""
        size = " small" if self.checked_batch_max < FULL_BATCH else ""
        drawn = "" if self.derandomize else " random (not derandomized)"
        dtypes = "every dtype" if self.dtypes_per_cell is None else f"{self.dtypes_per_cell} dtype{'s' if self.dtypes_per_cell > 1 else ''}"
        rows = (f"the rows {', '.join(self.limited_rows)} only on the built-in cases tagged {self.limited_rows_tag!r} "
                "(a user's own cases get every row)" if self.limited_rows else "every row on every case")
        return f"{self.max_examples}{size}{drawn} examples a cell, {dtypes}, {rows}"

    def leaves_out(self, row: str, builtin: bool, tags: frozenset[str]) -> str | None:
        """Why this profile does not check `row` on a case (built-in or not, with these tags), or None: the
        reason its cells are skipped with, which the run's estimate counts as costing nothing."""
        if row not in self.limited_rows or not builtin or self.limited_rows_tag in tags:
            return None
        return (f"this run's profile checks this row only on the built-in cases tagged {self.limited_rows_tag!r} (each of its "
                "cells builds C++, autotunes or starts a process; a user's own cases get every row); the other profiles check every case")

    def to_json(self) -> dict[str, Any]:
        """As results files record it, beside the hypothesis version: the name under "profile"."""
        data = dataclasses.asdict(self)
        return {"profile": data.pop("name"), **data}


PROFILES = {profile.name: profile for profile in (
    Profile("matrix", max_examples=20),
    # The default without a CUDA device (a first run on a laptop, and CI), on Triton's CPU interpreter: every
    # cell, fewer and smaller inputs (the interpreter runs each program in numpy, so a batch of 4096 rows
    # costs seconds), one dtype (an AOTInductor package is built per dtype) and a smaller search for the
    # smallest failure. The rows whose every cell builds C++ (AOTInductor, the C++ wrapper), autotunes
    # (max-autotune) or starts a process run on the built-in tutorial cases only: on 2 cores they were two
    # thirds of the built-in matrix's time. So do the production rows (each of the fresh-process ones starts a process; the
    # inference-mode and no-recompile rows are torch.compile again, on the interpreter mostly the raw launch refused) and
    # training under torch.compile, whose backward graph doubles a compile (train_compile_default was a third of the CPU
    # matrix's time; train_eager trains every case). On the CPU every torch.compile builds C++ (Inductor's CPU kernels) and
    # the raw styles' compiles are refused on the interpreter, so the compile rows tell little more than the control's
    # reference compiled: torch.compile(fullgraph=True) compiles every case, the graph-breaking, dynamic and unbacked
    # compiles the tutorial cases (they were 265 s of the matrix's 716 s of cell time). The CI machine's 2 cores keep CI
    # under 20 minutes.
    Profile("quick", max_examples=2, checked_batch_max=256, dtypes_per_cell=1, shrink_examples=5,
            limited_rows=("compile_default", "compile_dynamic", "compile_unbacked",
                          "aoti_strict", "aoti_nonstrict", "aoti_cpp_strict", "aoti_cpp_nonstrict", "aoti_fresh_nonstrict",
                          "compile_cpp_wrapper", "compile_max_autotune", "export_load_fresh", "cache_artifacts_fresh", "precompile_fresh",
                          "compile_inference_mode", "compile_no_recompile", "train_compile_fullgraph", "train_compile_default"),
            limited_rows_tag="tutorial"),
    Profile("thorough", max_examples=200),
    Profile("explore", max_examples=50, derandomize=False),
)}
DEFAULT_PROFILE = "matrix"  # with a CUDA device
INTERPRETER_PROFILE = "quick"  # without one


@dataclass(frozen=True)
class Settings:
    """The run's profile and directories, as every cell of the run gets them."""

    profile: Profile = PROFILES[DEFAULT_PROFILE]
    workdir: str = "."
    perf: bool = False  # time the artifact after a pass (harness.execution.perf)
    packages: str | None = None  # this run's AOTInductor packages, shared by its Python and C++ runtime cells
    caches: str | None = None  # the run's caches (the C++ runner is built there once)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Settings:
        profile = data["profile"]
        return cls(**{**data, "profile": Profile(**{**profile, "limited_rows": tuple(profile["limited_rows"])})})
