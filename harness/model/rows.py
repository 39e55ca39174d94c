"""The chart's rows: every compile path and capability, one entry each with all of its facts.

Like an OpInfo entry, a `Row` member holds everything the harness needs to know about a row: its kind
(which builder makes its artifact, see harness.execution.builders), chart title, export strictness, torch.compile
options, default timeout, relative cost, whether `--perf` times it, how its examples vary, and where it
applies. Adding a row is one entry here and, for a new kind, its builder; a unit test fails when an entry
lacks a fact. This module imports no torch: reports and diffs read it too.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping

from harness.model.columns import OPERATOR_STYLES, ShippedKind, Wrapping
from harness.model.errors import UsageError


class Kind(str, enum.Enum):
    """What a row does with the wrapped callable; a kind has one builder (harness.execution.builders.BUILDERS)."""

    EAGER = "eager"
    COMPILE = "compile"
    EXPORT = "export"
    AOTI = "aoti"
    AOTI_CPP = "aoti_cpp"  # the same package, loaded and run by a C++ program with no Python
    AOTI_FRESH = "aoti_fresh"  # the same package, loaded and run in a new Python process that never imported the case
    WARM_CACHE = "warm_cache"  # compiled again in a new process, on the caches of the first compile, after a kernel edit
    EXPORT_LOAD = "export_load"  # the exported program saved, then loaded and run in a new process that imports the case
    CACHE_ARTIFACTS = "cache_artifacts"  # compiled in a new process, on empty caches but the saved cache artifacts
    PRECOMPILE = "precompile"  # torch.compile's aot_compile, saved, then loaded and run in a new process that imports the case
    TRAIN = "train"  # forward and backward, gradients checked
    SUBSYSTEM = "subsystem"  # a PyTorch subsystem the style should compose with


class Examples(str, enum.Enum):
    """How a row's hypothesis examples vary."""

    DRAWN = "drawn"  # shapes and scalars drawn per example: the artifact is made per call (eager, compile)
    BATCH = "batch"  # traced once per dtype at example_shape; only the dynamic batch varies (export, AOTInductor)
    ONCE = "once"  # one example per dtype at example_shape (a slow, shape-blind check such as opcheck)


# Where a row applies: a function of (case, wrapping) giving why the row does not apply, or None.
Applies = Callable[[Any, Wrapping], "str | None"]


def _has_gradient(case: Any, wrapping: Wrapping) -> str | None:
    # The shipped op is trained as it is: whatever gradient its library gives it is checked. The raw launcher is trained
    # as it is too, but only where the case declares a backward: the gradient its kernels have, which raw loses. Where
    # the case declares none there is no gradient to lose, and a raw cell would only say the case has no backward.
    if case.mutates:
        return "the case mutates its inputs: it has no gradient to check"
    if case.backward is None and wrapping in (Wrapping.RAW, Wrapping.RAW_AUTOGRAD, *OPERATOR_STYLES):
        return "the case declares no backward"
    if not case.takes_gradient:  # a training step would only run the forward: the eager row's check, passed as training
        return "no input of the case takes a gradient: its floating-point tensor inputs are all in no_grad, or it has none"
    return None


def _ships_operator(case: Any) -> str | None:
    kind = case.shipped_kind
    return None if kind is ShippedKind.OPERATOR else f"the case's shipped op is a{'n' if kind is ShippedKind.AUTOGRAD_FUNCTION else ''} {kind.value}"


def _is_operator(case: Any, wrapping: Wrapping) -> str | None:
    if wrapping is Wrapping.SHIPPED:
        why = _ships_operator(case)
        return why and f"opcheck tests torch.library operators; {why}"
    return None if wrapping in OPERATOR_STYLES else "opcheck tests torch.library operators; this style is none"


def _falls_back(case: Any, wrapping: Wrapping) -> str | None:
    # A generated operator style gets the case's reference as its CPU kernel; the shipped op runs as the library
    # registered it, so the row asks whether the library gave its operator a CPU kernel.
    why = _ships_operator(case) if wrapping is Wrapping.SHIPPED else None
    return why and f"the CPU fallback is a torch.library operator's CPU kernel; {why}"


def _counts_flops(case: Any, wrapping: Wrapping) -> str | None:
    if case.flops is None:
        return "the case declares no flop formula"
    if wrapping is Wrapping.CONTROL:
        return "the control's own flop count is the yardstick of the other styles"
    return None


def _everywhere(case: Any, wrapping: Wrapping) -> str | None:
    return None


@dataclass(frozen=True, eq=False)
class RowSpec:
    name: str  # the id's last part and the row's anchor in MATRIX.md
    kind: Kind
    title: str  # as the charts show it
    timeout_s: float  # default limit for one cell (--cell-timeout overrides it)
    cost: float  # relative cost of a cell, for ordering where no run of the profile was measured (harness.plugin.estimate has the means)
    timed: bool  # --perf times its passing cells
    examples: Examples
    strict: bool | None = None  # torch.export's strict=, on the rows that export
    compile_options: Mapping[str, Any] | None = None  # torch.compile's arguments, on the rows that compile
    unbacked: bool = False  # torch._dynamo.mark_unbacked on dim 0 of every batched tensor input before each call
    applies: Applies = _everywhere
    device: str | None = None  # a device the row always runs on ("cpu"), else the run's
    outputs: tuple[str, ...] = ()  # names of what the row's program returns, where it is not the case's outputs
    replays: int = 0  # after the first call, calls on new values written into the same input buffers, each checked
    needs_cuda: str | None = None  # why the row means nothing without a CUDA device (it is skipped there), else None
    inference_mode: bool = False  # the artifact built and called under torch.inference_mode()
    # Dynamo's settings the row's program sets (torch._dynamo.config); on a compile row each dtype's artifact then
    # compiles a function of its own, since Dynamo counts compiles (recompile_limit) per function.
    dynamo_config: Mapping[str, Any] | None = None
    smallest_batch: int = 1  # the smallest batch (and dynamic dim) its examples draw, on rows whose examples vary the batch
    needs_torch: str | None = None  # the torch API the row calls ("torch.compiler.load_compiled_function"): without it, not in this torch

    def __post_init__(self) -> None:
        """A row must hold every fact its kind needs: a mistake here is caught when the table is read."""
        problems = [what for what, missing in (
            ("a lower_snake_case name", not self.name.replace("_", "").isalnum() or self.name != self.name.lower()),
            ("a title", not self.title),
            ("a kind", not isinstance(self.kind, Kind)),
            ("how its examples vary", not isinstance(self.examples, Examples)),
            ("a timeout above 0", not self.timeout_s > 0),
            ("a cost above 0", not self.cost > 0),
            ("torch.compile options",
             self.kind in (Kind.COMPILE, Kind.WARM_CACHE, Kind.CACHE_ARTIFACTS, Kind.PRECOMPILE) and self.compile_options is None),
            ("export strictness (strict=True or False)",
             self.kind in (Kind.EXPORT, Kind.AOTI, Kind.AOTI_CPP, Kind.AOTI_FRESH, Kind.EXPORT_LOAD) and self.strict is None),
            ("a smallest batch of 1 or more", self.smallest_batch < 1),
            ("where it applies", not callable(self.applies)),
        ) if missing]
        if problems:
            raise TypeError(f"row {self.name!r} lacks {', '.join(problems)}")


def _options(**options: Any) -> Mapping[str, Any]:
    return MappingProxyType(options)


# Defaults by kind: AOTInductor builds C++, so it gets the most time; a C++ runtime cell usually runs the
# package its Python twin built, so it costs a load and comes right after them.
_EAGER = dict(timeout_s=300.0, cost=1.0)
_COMPILE = dict(timeout_s=600.0, cost=2.5)
_EXPORT = dict(timeout_s=600.0, cost=0.7)
_AOTI = dict(timeout_s=900.0, cost=50.0)
_AOTI_CPP = dict(timeout_s=900.0, cost=10.0)
_AOTI_FRESH = dict(timeout_s=900.0, cost=8.0)  # a Python process started and the package loaded in it
_TRAIN = dict(timeout_s=600.0, cost=3.0)
_NEW_PROCESS = dict(timeout_s=900.0, cost=6.0)  # a Python process started, the case imported and its style built there
_SUBSYSTEM = dict(timeout_s=300.0, cost=0.5)


class Row(str, enum.Enum):
    """The rows, in chart order. Each member's value is its name; `spec` holds its facts."""

    spec: RowSpec

    def __new__(cls, spec: RowSpec) -> Row:
        member = str.__new__(cls, spec.name)
        member._value_ = spec.name
        member.spec = spec
        return member

    EAGER = RowSpec("eager", Kind.EAGER, "eager", **_EAGER, timed=True, examples=Examples.DRAWN)
    COMPILE_FULLGRAPH = RowSpec("compile_fullgraph", Kind.COMPILE, "torch.compile(fullgraph=True)", **_COMPILE, timed=True,
                            examples=Examples.DRAWN, compile_options=_options(fullgraph=True))
    COMPILE_DEFAULT = RowSpec("compile_default", Kind.COMPILE, "torch.compile (graph breaks allowed)", **_COMPILE, timed=True,
                          examples=Examples.DRAWN, compile_options=_options())
    COMPILE_DYNAMIC = RowSpec("compile_dynamic", Kind.COMPILE, "torch.compile(dynamic=True)", **_COMPILE, timed=True,
                          examples=Examples.DRAWN, compile_options=_options(dynamic=True))
    COMPILE_UNBACKED = RowSpec("compile_unbacked", Kind.COMPILE, "torch.compile(fullgraph=True), batch unbacked (mark_unbacked)",
                           **_COMPILE, timed=True, examples=Examples.DRAWN, compile_options=_options(fullgraph=True), unbacked=True)
    EXPORT_STRICT = RowSpec("export_strict", Kind.EXPORT, "torch.export(strict=True)", **_EXPORT, timed=True,
                        examples=Examples.BATCH, strict=True)
    EXPORT_NONSTRICT = RowSpec("export_nonstrict", Kind.EXPORT, "torch.export(strict=False)", **_EXPORT, timed=True,
                           examples=Examples.BATCH, strict=False)
    AOTI_STRICT = RowSpec("aoti_strict", Kind.AOTI, "AOTInductor (from strict export)", **_AOTI, timed=True,
                      examples=Examples.BATCH, strict=True)
    AOTI_NONSTRICT = RowSpec("aoti_nonstrict", Kind.AOTI, "AOTInductor (from non-strict export)", **_AOTI, timed=True,
                         examples=Examples.BATCH, strict=False)
    AOTI_CPP_STRICT = RowSpec("aoti_cpp_strict", Kind.AOTI_CPP, "AOTInductor run from C++, no Python (strict export)", **_AOTI_CPP,
                          timed=False, examples=Examples.BATCH, strict=True)
    AOTI_CPP_NONSTRICT = RowSpec("aoti_cpp_nonstrict", Kind.AOTI_CPP, "AOTInductor run from C++, no Python (non-strict export)",
                             **_AOTI_CPP, timed=False, examples=Examples.BATCH, strict=False)
    AOTI_FRESH_NONSTRICT = RowSpec("aoti_fresh_nonstrict", Kind.AOTI_FRESH,
                               "AOTInductor run in a fresh Python process that never imported the case (non-strict export)",
                               **_AOTI_FRESH, timed=False, examples=Examples.BATCH, strict=False)
    # The paths production uses beyond the tutorial's.
    COMPILE_CUDAGRAPHS = RowSpec("compile_cudagraphs", Kind.COMPILE, 'torch.compile(mode="reduce-overhead"), CUDA graphs', **_COMPILE,
                             timed=True, examples=Examples.DRAWN, compile_options=_options(mode="reduce-overhead"), replays=3,
                             needs_cuda="CUDA graphs need a CUDA device")
    COMPILE_MAX_AUTOTUNE = RowSpec("compile_max_autotune", Kind.COMPILE, 'torch.compile(mode="max-autotune", fullgraph=True)',
                               timeout_s=900.0, cost=4.0, timed=True, examples=Examples.DRAWN,
                               compile_options=_options(mode="max-autotune", fullgraph=True))
    COMPILE_CPP_WRAPPER = RowSpec("compile_cpp_wrapper", Kind.COMPILE, "torch.compile(fullgraph=True), C++ wrapper (cpp_wrapper=True)",
                              timeout_s=900.0, cost=6.0, timed=True, examples=Examples.DRAWN,
                              compile_options=_options(fullgraph=True, options={"cpp_wrapper": True}))
    WARM_CACHE_EDIT = RowSpec("warm_cache_edit", Kind.WARM_CACHE,
                          "torch.compile(fullgraph=True) in a new process on warm caches, after the kernel was edited",
                          timeout_s=900.0, cost=6.0, timed=False, examples=Examples.ONCE, compile_options=_options(fullgraph=True))
    # What production does after the first compile: serve without autograd, forbid recompiles, ship what was compiled.
    COMPILE_INFERENCE_MODE = RowSpec("compile_inference_mode", Kind.COMPILE, "torch.compile(fullgraph=True) under torch.inference_mode()",
                                     **_COMPILE, timed=True, examples=Examples.DRAWN, compile_options=_options(fullgraph=True),
                                     inference_mode=True)
    # Sizes 0 and 1 are specialised by design (a dynamic size is assumed to be neither): the row draws from 2.
    COMPILE_NO_RECOMPILE = RowSpec("compile_no_recompile", Kind.COMPILE,
                                   "torch.compile(dynamic=True, fullgraph=True), a new size may not recompile (error_on_recompile)",
                                   **_COMPILE, timed=False, examples=Examples.BATCH, compile_options=_options(dynamic=True, fullgraph=True),
                                   dynamo_config=_options(error_on_recompile=True), smallest_batch=2,
                                   needs_torch="torch._dynamo.config.error_on_recompile")
    EXPORT_LOAD_FRESH = RowSpec("export_load_fresh", Kind.EXPORT_LOAD,
                                "torch.export.save, then load and run in a fresh process that imports the case (non-strict export)",
                                **_NEW_PROCESS, timed=False, examples=Examples.BATCH, strict=False)
    CACHE_ARTIFACTS_FRESH = RowSpec("cache_artifacts_fresh", Kind.CACHE_ARTIFACTS,
                                    "torch.compile(fullgraph=True) in a fresh process on empty caches but the saved cache artifacts",
                                    **_NEW_PROCESS, timed=False, examples=Examples.ONCE, compile_options=_options(fullgraph=True),
                                    needs_torch="torch.compiler.load_cache_artifacts")
    PRECOMPILE_FRESH = RowSpec("precompile_fresh", Kind.PRECOMPILE,
                               "torch.compile(dynamic=True, fullgraph=True).aot_compile, saved, loaded and run in a fresh process",
                               **_NEW_PROCESS, timed=False, examples=Examples.BATCH, compile_options=_options(dynamic=True, fullgraph=True),
                               dynamo_config=_options(enable_aot_compile=True), smallest_batch=2,
                               needs_torch="torch.compiler.load_compiled_function")
    # Training without a compiler costs as eager.
    TRAIN_EAGER = RowSpec("train_eager", Kind.TRAIN, "training, eager", timeout_s=600.0, cost=1.0, timed=True,
                      examples=Examples.DRAWN, applies=_has_gradient)
    TRAIN_COMPILE_FULLGRAPH = RowSpec("train_compile_fullgraph", Kind.TRAIN, "training, torch.compile(fullgraph=True)", **_TRAIN,
                                  timed=True, examples=Examples.DRAWN, compile_options=_options(fullgraph=True), applies=_has_gradient)
    TRAIN_COMPILE_DEFAULT = RowSpec("train_compile_default", Kind.TRAIN, "training, torch.compile", **_TRAIN, timed=True,
                                examples=Examples.DRAWN, compile_options=_options(), applies=_has_gradient)
    OPCHECK = RowSpec("opcheck", Kind.SUBSYSTEM, "torch.library.opcheck", **_SUBSYSTEM, timed=False, examples=Examples.ONCE,
                  applies=_is_operator)
    FLOP_COUNTER = RowSpec("flop_counter", Kind.SUBSYSTEM, "FlopCounterMode", **_SUBSYSTEM, timed=False, examples=Examples.DRAWN,
                       applies=_counts_flops, outputs=("the flop count",))
    CPU_FALLBACK = RowSpec("cpu_fallback", Kind.SUBSYSTEM, "CPU fallback (CPU tensors)", **_SUBSYSTEM, timed=False,
                       examples=Examples.DRAWN, device="cpu", applies=_falls_back)
    TENSOR_SUBCLASS = RowSpec("tensor_subclass", Kind.SUBSYSTEM, "tensor subclass (TwoTensor)", **_SUBSYSTEM, timed=False,
                          examples=Examples.DRAWN, outputs=("the result's .a", "the result's .b"))


# How long the harness's check of a case's own code in plain eager (its launcher, its backward, called once before a
# cell's path) may take before the case is charged with a hang every style would meet: PLAIN_EAGER_S, and for each
# autotuned config its first call compiles, PLAIN_EAGER_CONFIG_S more (torchao's 27 configs took 184 s on one busy core).
# `--cell-timeout plain_eager=S` sets the first.
PLAIN_EAGER, PLAIN_EAGER_S, PLAIN_EAGER_CONFIG_S = "plain_eager", 120.0, 15.0


def parse_timeouts(values: list[str]) -> dict[str, float]:
    """`--cell-timeout` values: "S" for every cell, or "ROW=S" with ROW a row (aoti_strict) or a kind
    (aoti: both AOTInductor rows), or PLAIN_EAGER=S. Raises UsageError naming what to fix."""
    names = {p.value for p in Row} | {k.value for k in Kind} | {PLAIN_EAGER}
    chosen: dict[str, float] = {}
    for value in values:
        row, _, seconds = value.rpartition("=")
        if row and row not in names:
            raise UsageError(f"--cell-timeout {value!r}: unknown row {row!r}; give a row ({', '.join(p.value for p in Row)}), "
                             f"a kind ({', '.join(k.value for k in Kind)}) or {PLAIN_EAGER}")
        try:
            chosen[row or "*"] = float(seconds)
        except ValueError:
            raise UsageError(f"--cell-timeout {value!r}: {seconds!r} is not a number of seconds") from None
        if not 0 < chosen[row or "*"] < float("inf"):  # 0 or less would time every cell out before it starts
            raise UsageError(f"--cell-timeout {value!r}: give a number of seconds above 0 (for example {row + '=' if row else ''}600)")
    return chosen


def plain_eager_timeout(chosen: dict[str, float], configs: int) -> float:
    """How long the check of a case's code in plain eager may take, its autotuned `configs` compiled on the way."""
    return chosen.get(PLAIN_EAGER, PLAIN_EAGER_S) + PLAIN_EAGER_CONFIG_S * configs


def timeout_for(row: Row, chosen: dict[str, float]) -> float:
    """A cell's limit: its row's, else its kind's, else every cell's, else the row's default."""
    for name in (row.value, row.spec.kind.value, "*"):
        if name in chosen:
            return chosen[name]
    return row.spec.timeout_s
