"""Running one cell in this process: `Execution(...).run()`.

One method per stage (wrap, build per dtype, check, time), each announcing its stage before entering it,
so a runner that dies or hangs knows where. Exceptions from PyTorch, Triton and the case's own code are
foreign: they become the cell's outcome here and nowhere else (`stage`, `case_code`, `_failure`, `_record`).
Before a style cell runs, one plain eager call of the launcher tells a mistake in the case's own code, which
every style would meet, from what the cell measures (`_launcher_in_plain_eager`; harness.execution.blame).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import resource
import time
import traceback
from typing import Any, Callable, Iterator

import torch
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from torch._dynamo.utils import counters
from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

from harness.authoring.case import Case, Example, dtype_name
from harness.execution import applicability, backward_check, builders, degradation, paths, perf, subsystems
from harness.execution.paths import training as train
from harness.execution import wrapping as wrappings
from harness.execution.blame import LauncherRaised, case_files, harness_named_module, raised_by_case_code, shown
from harness.execution.call_stage import stage_of_call
from harness.execution.numerics import assert_close, flatten
from harness.execution.observer import GraphObserver
from harness.execution.transfer import copied
from harness.model.cell import Cell
from harness.model.columns import OP_NAMESPACE, OPERATOR_STYLES, ShippedKind, Wrapping
from harness.model.errors import CaseError, HarnessError, Mismatch, first_line
from harness.model.messages import PlainEager
from harness.model.outcome import CaseCodeError, CellResult, Fault, HarnessFault, Outcome, Stage, StageFailure, Timings, detail
from harness.model.rows import Examples, Kind, Row
from harness.model.settings import FULL_BATCH, Settings
from harness.processes.helper_process import CellProcesses, forked_cpu_seconds

# The harness's exceptions that already say what the cell's outcome is; everything else raised inside a
# stage is foreign and becomes a failure at that stage.
_DECIDED = (StageFailure, Mismatch, CaseCodeError, HarnessFault)

WARNINGS_KEPT = 5
RAN_KEPT = 200  # the inputs a cell that does not pass keeps, in order, for its reproducer (CellResult.ran)


def _pending_device_fault() -> BaseException | None:
    if not torch.cuda.is_available():
        return None
    try:
        torch.cuda.synchronize()
    except Exception as fault:  # an illegal address, a device-side assert: the context is now unusable
        return fault
    return None


def _failure(stage: Stage, error: BaseException, called: bool = False) -> StageFailure | HarnessFault:
    """The one place where a foreign exception becomes a failure at a stage. On a call of an artifact, a
    kernel that faulted before a Python error was raised is what went wrong first (unchecked, its CUDA error
    would surface in whichever call came next, and the outcome would depend on timing), and a Dynamo,
    Inductor or Triton compilation error is a compile failure, whichever stage announced the call. A module the
    harness named that cannot be imported is the harness's fault at that stage, whoever asked for it: the path
    was not measured (harness.execution.blame.harness_named_module)."""
    if called:
        error = _pending_device_fault() or error
        stage = stage_of_call(error)
    named = harness_named_module(error)
    if named is not None:
        return HarnessFault(stage, named)
    return StageFailure(stage, error)


def _type_name(error: BaseException) -> str:
    """The error kind a results file records: a builtin by its name, the harness's own by `harness.<Class>`
    whichever module defines it (so moving a module changes no recorded data), a path module's among them (plain
    PyTorch, its exceptions no HarnessError: harness.execution.paths), any other by its module path."""
    kind = type(error)
    if kind.__module__ == "builtins":
        return kind.__name__
    if isinstance(error, HarnessError) or kind.__module__.startswith(f"{paths.__name__}."):
        return f"harness.{kind.__qualname__}"
    return f"{kind.__module__}.{kind.__qualname__}"


def _record(result: CellResult, exc: BaseException) -> None:
    """A decided exception as the cell's outcome, stage and message."""
    if isinstance(exc, Mismatch):
        result.outcome, result.stage = Outcome.WRONG, Stage.RUN
        result.message, result.max_error, result.mismatched = first_line(exc), exc.max_error, exc.mismatched
        return
    assert isinstance(exc, (StageFailure, CaseCodeError, HarnessFault))
    if isinstance(exc, StageFailure):
        result.outcome = Outcome.FAIL
    else:  # not a finding about the path: the case's own code raised, or the harness broke
        result.outcome, result.fault = Outcome.ERROR, Fault.CASE if isinstance(exc, CaseCodeError) else Fault.HARNESS
    result.stage = exc.stage
    result.error_type, result.message, result.detail = _type_name(exc.error), first_line(exc.error), detail(exc.error)
    if isinstance(exc, LauncherRaised):  # what it raised, where in the case's code, and the fix; then the traceback
        result.message, result.detail = exc.explained, detail(Exception(f"{exc.explained}\n\n{exc.where}"))


def examples(case: Case, row: Row, checked_batch_max: int = FULL_BATCH) -> st.SearchStrategy[Example]:
    """The hypothesis examples a cell of this row checks (RowSpec.examples says how they vary). A case with
    optional tensor inputs also draws which of them are None."""
    how = row.spec.examples
    extra: dict[str, st.SearchStrategy[Any]] = {}
    if case.optional_inputs:
        extra["absent"] = st.sets(st.sampled_from(sorted(case.optional_inputs))).map(frozenset)
    if how is Examples.ONCE:
        return st.builds(Example, dtype=st.sampled_from(case.dtypes), shape=st.just(case.example_shape), seed=st.just(0), **extra)
    if how is Examples.BATCH:
        def sizes_to(largest: int, smallest: int = 1) -> st.SearchStrategy[int]:
            """From the row's (or the case's) smallest size, where the case reaches it, to the checks' largest."""
            smallest = max(row.spec.smallest_batch, smallest)
            cap = min(largest, max(checked_batch_max, smallest))
            return st.integers(min(smallest, cap), cap)

        shapes = sizes_to(case.max_batch, case.min_batch).map(case.export_shape)
        if case.dynamic_dims:  # the other dynamic dims are drawn too, each up to its largest size
            dims = sorted(case.dynamic_dims)
            sizes = st.tuples(*(sizes_to(case.dynamic_dims[d]) for d in dims))
            shapes = st.tuples(sizes_to(case.max_batch, case.min_batch), sizes).map(lambda drawn: case.export_shape(drawn[0], dict(zip(dims, drawn[1]))))
        return st.builds(Example, dtype=st.sampled_from(case.dtypes), shape=shapes, seed=st.integers(0, 2**31 - 1), **extra)
    # Scalars vary where the artifact is made per call (eager, compile): a new value may recompile.
    scalars = st.tuples(*(st.tuples(st.just(name), values) for name, values in case.scalars.items()))
    return st.builds(Example, dtype=st.sampled_from(case.dtypes), shape=case.shapes, seed=st.integers(0, 2**31 - 1), scalars=scalars,
                     **extra)


def traces_once(row: Row) -> bool:
    """Rows whose artifact is traced once (export, AOTInductor, opcheck): a None input is part of what was
    traced, so each structure of the inputs (which optional inputs are None) gets an artifact of its own."""
    return row.spec.examples is not Examples.DRAWN


def _clone(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """Copies with the inputs' own strides (clone() makes a view with gaps contiguous: the path would get another layout),
    a view the same view of a copy of its base (Dynamo guards on a view's base: a plain copy would recompile, or be
    refused by precompiled code, where the user's views are not)."""
    return tuple(copied(x, x.device) if isinstance(x, torch.Tensor) else x for x in inputs)


@dataclasses.dataclass(frozen=True)
class _Raised:
    """What a plain eager call of a case's launcher raised in the case's own code, kept without its traceback
    (whose frames would hold the call's tensors): LauncherRaised's parts."""

    error: BaseException
    explained: str
    where: str


# One plain eager call of each launcher a runner process tests, by (case, the callable's column, dtype, device):
# what it raised in the case's own code, why it cannot be tested here (an interpreter limit, as a str), or None where
# it ran or raised something the cells must measure.
_plain_eager: dict[tuple[str, str, str, str], _Raised | str | None] = {}


class _NotTestedHere(Exception):
    """The launcher's plain eager call met a limit of this machine every style would meet (applicability)."""


# Hypothesis's phases a cell runs: all but `explain`, which, once an example has failed, traces every line of
# every later example (sys.settrace or sys.monitoring) to say which lines the failures covered. The cell records
# its own smallest failing example and error; under the trace, Dynamo, Inductor and Triton ran several times
# slower in every failing cell's shrinking. Which examples are drawn and how they shrink does not depend on it.
CHECKED_PHASES = tuple(phase for phase in Phase if phase.name != "explain")
# Set as the process's default settings, not in the check's @settings: a derandomized run draws its examples from
# a digest of the check's source, decorators included, so that a line added there draws other examples (two
# cells of the CPU chart then failed with another message).
settings.register_profile("tcm-cells", phases=CHECKED_PHASES)
settings.load_profile("tcm-cells")


def as_a_new_process(case: Case) -> None:
    """Torch's and Triton's process-wide state as a new process has it, before a cell of `case` builds anything: what
    an earlier cell of this runner left would otherwise reach this one (Dynamo's compiled code and counters, the
    kernels torch traced, the configs the case's autotuners chose)."""
    torch._dynamo.reset()
    # torch 2.11's reset leaves the table of the Triton kernels Dynamo traced (later releases empty it there), and
    # aot_compile saves the whole table with the function it compiled. Measured on one H200: once an earlier cell
    # of a process left a constant argument pickle refuses, every later precompile_fresh cell of that process,
    # controls too, failed at save (`Can't pickle local object 'WeakValueDictionary.__init__.<locals>.remove'`)
    # where alone it passed (26 cells), and a saved function carried other cases' kernels, naming their modules for
    # the new process to import. A new process starts with the table empty.
    kernel_side_table.reset_table()
    counters.clear()
    # An autotuner keeps the config it chose for each key for the life of the process. Left alone, a cell
    # after another cell of the same case in this runner would not time the configs again, and what timing
    # them does (every config run on the cell's own tensors: why reset_to_zero and restore_value exist)
    # would depend on which cells this runner served before. Every cell starts as a new process does.
    for autotuner in case.autotuners:
        autotuner.cache.clear()


class Execution:
    """One cell, run in this process. `announce(stage, plain_eager)` is told each stage before it is entered (with what
    the harness's check of the case's code in plain eager calls, while it does); `broken_dtypes`
    (harness.environment.probe) are left out, and the result says why."""

    def __init__(
        self,
        cell: Cell,
        case: Case,
        settings: Settings,
        device: str,
        announce: Callable[[Stage, PlainEager | None], None] = lambda stage, plain_eager: None,
        broken_dtypes: dict[str, str] | None = None,
    ):
        self.cell, self.case, self.settings, self.announce = cell, case, settings, announce
        self.run_device = device  # where the run is; the row may run elsewhere (the CPU fallback)
        self.device = cell.row.spec.device or device
        self.environment = applicability.RunEnvironment.here(device, settings.profile, broken_dtypes)
        self.result = CellResult(cell, Outcome.PASS)
        self.made: list[str] = []  # the inputs checked, in order (CellResult.ran)
        self.training = cell.row.spec.kind is Kind.TRAIN
        self.observer = GraphObserver()
        self.artifacts: dict[tuple[torch.dtype, frozenset[str]], Callable[..., Any] | None] = {}
        self.processes = CellProcesses()  # what the cell's builds start and share (harness.execution.builders.Build.processes)
        self.program: Callable[..., Any] = case.reference_outputs
        self.reference: Callable[..., Any] = case.reference_outputs
        # Whether the case's code ran in this process: a cell its row does not apply to leaves the process as it was,
        # so the next cell may have it (with --cells-per-process=1, harness.processes.runner gives each cell that runs code a new one).
        self.ran_case_code = False

    # -- the cell ------------------------------------------------------------------------------

    def run(self) -> CellResult:
        began, cpu = time.perf_counter(), _cpu_seconds()
        try:
            selection = applicability.select(self.cell, self.case, self.environment)
            self.case, self.result.dtypes_skipped = selection.case, selection.dtypes_skipped
            # the case's `requires` is its code too, asked while selecting
            self.ran_case_code = not selection.skipped or self.case.requires is not None
            if selection.skipped:
                self.result.outcome, self.result.message = Outcome.SKIPPED, selection.skipped
            else:
                self._execute()
        finally:
            self._close_processes()
            if self.result.outcome not in (Outcome.PASS, Outcome.SKIPPED):
                self.result.ran = self.made
            self.result.timings.work = time.perf_counter() - began
            self.result.timings.cpu = _cpu_seconds() - cpu
        return self.result

    def _close_processes(self) -> None:
        """The processes the cell started (a package's C++ runner or serving process, the warm-cache row's new
        process) end with the cell: their CPU time counts in the cell's, and none outlives it."""
        for held in [*self.processes.held(), *self.artifacts.values()]:
            close = getattr(held, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # noqa: BLE001 - a process that will not stop is killed by its finalizer later
                    pass

    def spent(self, part: str, seconds: float) -> None:
        """Seconds of the cell's work in a stage, or waiting (Timings.stages)."""
        stages = self.result.timings.stages
        stages[part] = stages.get(part, 0.0) + seconds

    def _execute(self) -> None:
        os.makedirs(self.settings.workdir, exist_ok=True)
        try:
            self._reference_in_plain_eager()
            self._launcher_in_plain_eager()
            self._backward_in_plain_eager()
        except _DECIDED as exc:
            _record(self.result, exc)
            return
        except _NotTestedHere as exc:
            self.result.outcome, self.result.message = Outcome.SKIPPED, str(exc)
            return
        as_a_new_process(self.case)
        wrappings.take_unpoisoned()
        with (_captured_warnings(self.result), degradation.watching(self.case.kernels) as watch,
              torch._inductor.config.patch(post_grad_custom_post_pass=self.observer.inductor_pass())):
            try:
                self.wrap()
                artifact = self.artifact(self.case.dtypes[0])
                if self.cell.row.spec.replays and artifact is not None:
                    self.replay(artifact, self.case.dtypes[0])
                self.check()
                if self.settings.perf and self.cell.row.spec.timed:
                    self.time()
            except _DECIDED as exc:
                _record(self.result, exc)
        self.result.unchecked += [f"unwritten elements of {what}: allocated unpoisoned, as written (torch.empty_like), since Inductor "
                                  "cannot compile its fill" for what in wrappings.take_unpoisoned()]
        if self.result.outcome is Outcome.PASS:
            self.result.degradations = self._degradations(watch)
        self.result.graph_breaks = sum(counters["graph_break"].values())
        self.result.kernel_in_graph = self.observer.verdict(self._operator_namespace())

    def _operator_namespace(self) -> str:
        """Where the cell's opaque operator lives: the harness's namespace, or the shipped operator's own."""
        if self.cell.wrapping is Wrapping.SHIPPED and self.case.shipped_kind is ShippedKind.OPERATOR:
            return wrappings.shipped_qualname(self.case).partition("::")[0]
        return OP_NAMESPACE

    def _degradations(self, watch: degradation.Watch) -> list[str]:
        """What the passing cell lost silently. Where mutation analysis ran on a case kernel, one eager launch
        at example_shape says which tensors the kernel really writes."""
        if watch.marked_mutated and self.case.kernels:
            try:
                inputs = self.inputs(Example(self.case.dtypes[0], self.case.example_shape, seed=0))
                degradation.record_writes(watch, self.case.launch, self.case.kernels, inputs)
            except Exception as exc:  # noqa: BLE001 - the cell passed; an eager relaunch that fails only leaves the comparison out
                self.result.unchecked.append(f"mutation analysis not compared: the eager launch raised {type(exc).__name__}: {first_line(exc)}")
        if not self.device.startswith("cuda"):
            watch.cudagraph_skip_count = 0  # without CUDA there are no CUDA graphs to lose (max-autotune asks for them)
        # and what an artifact saw lost in a process of its own (harness.execution.saved: cache artifacts left unused)
        lost_elsewhere = [d for artifact in self.artifacts.values() for d in getattr(artifact, "degradations", ())]
        return watch.degradations() + list(dict.fromkeys(lost_elsewhere))

    def _launcher_in_plain_eager(self) -> None:
        """Raise the case's error where its launcher raises in the case's own code when called in plain eager.

        Before a style cell runs its row, the launcher (the shipped op, in its column) is called once, plain, on the
        example input of each dtype the cell checks, on the run's device: once a runner process per case, callable
        and dtype. What it raises in the case's own code (raised_by_case_code) every style meets on every row; it is
        the case's error, with its place and the fix, in each of them, not a failure of the styles. An interpreter
        limit every style meets, which a probe confirms (applicability.interpreter_scalar_limit), makes the cell not
        tested here. Whatever else the call raises (torch, a Triton compile error) is left for the cell to measure as
        it would without the call, except a device fault: the context it poisons would fail the cell's next step, in
        the wrong place, so it is the cell's failure at run. It runs before the cell resets Dynamo and the
        autotuners, so it leaves nothing the cell measures. The control runs no launcher."""
        if self.cell.wrapping is Wrapping.CONTROL:
            return
        called = self.cell.wrapping if self.cell.wrapping is Wrapping.SHIPPED else Wrapping.RAW
        for dtype in self.case.dtypes:
            key = (self.case.name, called.value, dtype_name(dtype), self.run_device)
            if key not in _plain_eager:
                _plain_eager[key] = self._call_in_plain_eager(called, dtype)
            raised = _plain_eager[key]
            if isinstance(raised, str):  # a cell that runs the reference alone (a CPU fallback) still measures it
                if applicability.runs_reference_only(self.cell):
                    continue
                raise _NotTestedHere(raised)
            if raised is not None:
                raise LauncherRaised(Stage.RUN, raised.error, raised.explained, raised.where)

    def _reference_in_plain_eager(self) -> None:
        """Call the case's reference once, plain, on the first dtype's example input, once a runner process per case and
        device, within the check's deadline (the parent's): a reference that never returns is the case's error in every
        cell, the control's too, not each cell's timeout. What it raises, the cell meets and records where it checks."""
        case = self.case
        key = (case.name, "reference", dtype_name(case.dtypes[0]), self.run_device)
        if key in _plain_eager:
            return
        example = Example(case.dtypes[0], case.example_shape, seed=0)
        self.announce(Stage.REFERENCE, PlainEager("reference"))
        try:
            case.reference_outputs(*case.inputs(example, self.run_device))
        except Exception:  # noqa: BLE001 - what the reference raises, the cell meets and measures
            pass
        finally:
            self.announce(Stage.SETUP, None)
        _plain_eager[key] = None

    def _backward_in_plain_eager(self) -> None:
        """Raise the case's error where its backward, which this training cell's operator style registers as an
        operator, returns aliases or writes into its arguments (harness.execution.backward_check): once a runner
        process per case and device, on the first dtype's example."""
        case = self.case
        if not (self.training and self.cell.wrapping in OPERATOR_STYLES and case.backward is not None and case.backward.kernels):
            return
        key = (case.name, "backward", dtype_name(case.dtypes[0]), self.run_device)
        if key not in _plain_eager:
            example = Example(case.dtypes[0], case.example_shape, seed=0)
            self.announce(Stage.RUN, PlainEager("backward", case.autotune_configs))
            try:
                problem = backward_check.misdeclared(case, example, self.run_device)
            except Exception:  # noqa: BLE001 - what the plain calls raise, the cell meets and measures
                problem = None
            finally:
                self.announce(Stage.RUN, None)
            _plain_eager[key] = None if problem is None else _Raised(CaseError(case.name, problem), problem, "")
        raised = _plain_eager[key]
        if isinstance(raised, _Raised):
            raise LauncherRaised(Stage.RUN, raised.error, raised.explained, raised.where)

    def _call_in_plain_eager(self, called: Wrapping, dtype: torch.dtype) -> _Raised | str | None:
        example = Example(dtype, self.case.example_shape, seed=0)
        with self.case_code(Stage.SETUP):
            inputs = self.case.inputs(example, self.run_device)
        try:
            call = wrappings.build(self.case, called)
        except Exception:  # noqa: BLE001 - the cell's wrap stage meets it again, and says why
            return None
        # A launcher that crashes does so running; one that hangs, in the harness's check, which the parent ends.
        self.announce(Stage.RUN, PlainEager("launcher", self.case.autotune_configs))
        start = time.perf_counter()
        try:
            call(*inputs)
        except Exception as exc:
            fault = _pending_device_fault()
            if fault is not None:
                raise _failure(Stage.RUN, fault) from exc
            return applicability.interpreter_scalar_limit(exc, self.environment) or self._raised_by_the_case(exc, called, example)
        finally:
            self.spent(Stage.RUN.value, time.perf_counter() - start)
            self.announce(Stage.RUN, None)  # the check is over: the cell's own deadline again
        fault = _pending_device_fault()
        if fault is not None:
            raise _failure(Stage.RUN, fault) from fault
        return None

    def _raised_by_the_case(self, error: BaseException, called: Wrapping, example: Example) -> _Raised | None:
        """The case's error, where the case's own code raised `error`, or None."""
        try:
            raiser = raised_by_case_code(error, case_files(self.case))
        except Exception:  # noqa: BLE001 - a traceback the harness cannot read blames no one: the cell measures
            return None
        if raiser is None:
            return None
        what = "the shipped op" if called is Wrapping.SHIPPED else "the launcher"
        place = f"{shown(raiser.filename)}:{raiser.lineno}, in {raiser.function}"
        if raiser.launch:
            where, fix = f"launching a Triton kernel at {place}: {raiser.source[:200]}", "fix the launch: pass the kernel each of its parameters"
        else:
            where, fix = f"raised at {place}", f"fix {what}"
        explained = (f"{what} raises in plain eager, before any wrapping ({example}): {type(error).__name__}: {first_line(error)} "
                     f"({where}): {fix}")
        frames = "".join(traceback.format_exception(type(error), error, error.__traceback__, limit=-12))
        error.__traceback__ = error.__context__ = error.__cause__ = None  # kept for the process: let go of the call's frames
        return _Raised(error, explained, frames)

    def replay(self, artifact: Callable[..., Any], dtype: torch.dtype) -> None:
        """CUDA graph replays: new values written into the same input buffers, the result checked each time."""
        buffers = self.inputs(Example(dtype, self.case.example_shape, seed=0))
        for replay in range(1, self.cell.row.spec.replays + 1):
            fresh = self.inputs(Example(dtype, self.case.example_shape, seed=replay))
            with torch.no_grad():
                for buffer, value in zip(buffers, fresh):
                    if isinstance(buffer, torch.Tensor):
                        buffer.copy_(value)
            try:
                self.verify(artifact, dtype, buffers, same_buffers=True)
            except _DECIDED:
                self.result.example = f"replay {replay} with new values in the same input buffers, {dtype_name(dtype)} {self.case.example_shape}"
                raise

    # -- stages --------------------------------------------------------------------------------

    @contextlib.contextmanager
    def stage(self, stage: Stage) -> Iterator[None]:
        """Announce a stage; whatever foreign exception is raised inside is a failure at it."""
        self.announce(stage, None)
        entered = time.perf_counter()
        try:
            yield
        except _DECIDED:
            raise
        except Exception as exc:
            raise _failure(stage, exc) from exc
        finally:
            self.spent(stage.value, time.perf_counter() - entered)

    @contextlib.contextmanager
    def case_code(self, stage: Stage) -> Iterator[None]:
        """The case's own code runs inside: what it raises is the case's error, not a finding about the path."""
        try:
            yield
        except _DECIDED:
            raise
        except Exception as exc:
            raise CaseCodeError(stage, exc) from exc

    def call(self, artifact: Callable[..., Any], inputs: tuple[Any, ...]) -> Any:
        """Run an artifact once and wait for the device: a compile failure or a run failure."""
        try:
            result = artifact(*inputs)
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            return result
        except _DECIDED:
            raise
        except Exception as exc:
            raise _failure(Stage.RUN, exc, called=True) from exc

    def inputs(self, example: Example, built_with: bool = False) -> tuple[Any, ...]:
        """The example's inputs; recorded in order (CellResult.ran) unless the path is only `built_with` them: the
        reproducer builds its path on the same input itself, and never checks it."""
        if not built_with and len(self.made) < RAN_KEPT:
            self.made.append(str(example))
        with self.case_code(Stage.SETUP):
            return self.case.inputs(example, self.device)

    def wrap(self) -> None:
        """The style's callable (or a subsystem's program) and the reference it is compared with."""
        with _timed(self.result.timings, "setup"), self.stage(Stage.WRAP):
            if self.cell.row.spec.kind is Kind.SUBSYSTEM:
                self.program, self.reference = subsystems.programs(self.cell.row, self.case, self.cell.wrapping)
            else:
                self.program, self.reference = wrappings.build(self.case, self.cell.wrapping), self.case.reference_outputs
        if self.training:
            self.reference = train.step(self.reference, self.case.no_grad_positions)

    def structure(self, inputs: tuple[Any, ...]) -> frozenset[str]:
        """Which inputs are None, where it matters: on rows that trace once."""
        if not traces_once(self.cell.row):
            return frozenset()
        return frozenset(p.name for p, x in zip(self.case.input_parameters(), inputs) if x is None)

    def artifact(self, dtype: torch.dtype, absent: frozenset[str] = frozenset()) -> Callable[..., Any] | None:
        """What runs on the row for this dtype (and structure of the inputs), built on first use; its builder
        announces its stages. None where the structure cannot be traced at example_shape (make_inputs gives
        None on its own there): the examples of that structure are not checked on this row, and the result says so."""
        key = (dtype, absent)
        if key not in self.artifacts:
            inputs = self.inputs(Example(dtype, self.case.example_shape, seed=0, absent=absent & self.case.optional_inputs), built_with=True)
            if self.structure(inputs) != absent:
                self.artifacts[key] = None
                self.result.unchecked.append(f"{dtype_name(dtype)} with {', '.join(sorted(absent)) or 'no input'} None: "
                                             f"make_inputs gives another structure at example_shape, where this row traces")
                return None
            if self.training:
                inputs = train.leaves(inputs, self.case.no_grad_positions)
            variant = dtype_name(dtype) + "".join(f"-no-{name}" for name in sorted(absent))
            key_name = self.cell.package_key(variant)
            shared = None
            if key_name is not None and self.settings.packages is not None:
                shared = builders.Shared(packages=self.settings.packages, caches=self.settings.caches or self.settings.workdir, key=key_name)
            request = builders.Build(
                row=self.cell.row, fn=self.program, inputs=inputs, max_batch=self.case.max_batch, min_batch=self.case.min_batch, batched=self.case.batched,
                dims=self.case.dynamic_dims,
                workdir=self.settings.workdir, label=f"{self.cell.id}-{variant}", observer=self.observer,
                shared=shared, stage=self.stage, call=self.call, spent=self.spent, processes=self.processes, warnings=self.result.warnings,
                style=builders.Style(self.case, self.cell.wrapping.value),
            )
            start = time.perf_counter()
            try:
                built = builders.build(request)
            finally:
                self.result.timings.compile += time.perf_counter() - start
            self.artifacts[key] = train.step(built, self.case.no_grad_positions) if self.training else built
            self.announce(Stage.RUN, None)
        return self.artifacts[key]

    def verify(self, artifact: Callable[..., Any], dtype: torch.dtype, inputs: tuple[Any, ...], same_buffers: bool = False) -> None:
        """Run the artifact and the reference on the same inputs; raise Mismatch where they differ. With
        `same_buffers` the artifact is called on `inputs` themselves (a CUDA graph replays on its buffers)."""
        ref_inputs, act_inputs = _clone(inputs), (inputs if same_buffers else _clone(inputs))
        inputs = _clone(inputs) if same_buffers else inputs  # as they were before the call, for the float64 answer
        with self.case_code(Stage.REFERENCE):
            expected = flatten(self.reference(*ref_inputs))
        actual = flatten(self.call(artifact, act_inputs))
        input_names = [p.name for p in self.case.input_parameters()]
        tensors = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)]
        graded = self.case.graded(inputs) if self.training else []
        names = list(self.cell.row.spec.outputs) or (
            [f"output {n}" for n in range(len(expected) - len(graded))] + [f"gradient of input {n!r}" for n in graded]
        )

        def float64() -> list[Any] | None:
            """The reference on the same inputs in float64: the exact answer both are judged against."""
            wide = tuple(x.detach().double() if isinstance(x, torch.Tensor) and x.is_floating_point() else
                         x.clone() if isinstance(x, torch.Tensor) else x for x in inputs)
            try:
                return flatten(self.reference(*wide)) + [wide[i] for i in tensors]
            except Exception:  # noqa: BLE001 - a reference that cannot run in float64 leaves the plain comparison
                return None

        assert_close(
            self.case,
            dtype,
            expected + [ref_inputs[i] for i in tensors],
            actual + [act_inputs[i] for i in tensors],
            names + [f"input {input_names[i]!r} after the call" for i in tensors],
            float64,
        )

    def check(self) -> None:
        """The hypothesis examples; the smallest failing one is raised, and recorded as the cell's example."""
        timings = self.result.timings
        checking, compiled_before = time.perf_counter(), timings.compile
        try:
            failure = self._smallest_failure()
        finally:  # builds for the other dtypes happen lazily, inside the check: they count as compile
            timings.run = time.perf_counter() - checking - (timings.compile - compiled_before)
        if failure is not None:
            example, error = failure
            self.result.example = str(example)
            raise error

    def _smallest_failure(self) -> tuple[Example, BaseException] | None:
        case, result, config = self.case, self.result, self.settings.profile
        failures: list[tuple[Example, BaseException]] = []
        dtypes_seen: set[str] = set()
        shrink_until = 0  # examples_run at which a failing cell stops running examples

        @settings(
            max_examples=config.max_examples,
            derandomize=config.derandomize,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
            print_blob=False,
        )
        @given(ex=examples(case, self.cell.row, config.checked_batch_max))
        def check(ex: Example) -> None:
            nonlocal shrink_until
            if failures and result.examples_run >= shrink_until:
                return  # the shrinking budget is spent: hypothesis keeps the smallest failure found so far
            result.examples_run += 1
            dtypes_seen.add(dtype_name(ex.dtype))
            inputs = self.inputs(ex)
            try:  # another dtype's (or structure's) artifact is built here, and may fail to build
                artifact = self.artifact(ex.dtype, self.structure(inputs))
                if artifact is None:
                    return  # a structure this row could not trace: said in result.unchecked
                self.verify(artifact, ex.dtype, inputs)
            except (StageFailure, Mismatch) as exc:
                if not failures:
                    shrink_until = result.examples_run + config.shrink_examples
                failures.append((ex, exc))
                raise

        def smallest() -> tuple[Example, BaseException]:
            # Hypothesis goes on generating after a failure, and stops shrinking when the budget is spent:
            # report the smallest failing input it ran, by element count, then shape, dtype and seed.
            return min(failures, key=lambda f: (math.prod(f[0].shape), f[0].shape, case.dtypes.index(f[0].dtype), f[0].seed))

        try:
            check()
        except (Mismatch, StageFailure) as exc:
            return smallest() if failures else (Example(case.dtypes[0], case.example_shape, 0), exc)
        except (CaseCodeError, HarnessFault):
            raise
        except Exception as exc:  # hypothesis' own errors (Flaky and the like, as when the budget cut shrinking)
            if failures:
                return smallest()
            raise HarnessFault(Stage.RUN, exc) from exc
        finally:
            result.dtypes = sorted(dtypes_seen)
        return None

    def time(self) -> None:
        """--perf: the artifact's median latency on the case's benchmark input."""
        with _timed(self.result.timings, "perf"):
            self.result.perf = perf.measure(self.case, self.artifact, self.inputs, self.verify, self.call, self.device)


@contextlib.contextmanager
def _captured_warnings(result: CellResult) -> Iterator[None]:
    """Warnings PyTorch logs during the cell: silent degradation (a graph break, Triton mutation analysis
    "assuming every input is mutated") is a finding, not a quiet pass."""

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            line = first_line(Exception(record.getMessage()))
            if line and line not in result.warnings and len(result.warnings) < WARNINGS_KEPT:
                result.warnings.append(line[:300])

    handler = Keep(level=logging.WARNING)
    # torch's own logging stops propagation at its component loggers (torch._dynamo, torch._inductor, ...),
    # so the handler goes on each of those as well as on "torch".
    names = ["torch"] + [
        name for name, logger in logging.Logger.manager.loggerDict.items()
        if name.startswith("torch.") and isinstance(logger, logging.Logger) and not logger.propagate
    ]
    loggers = [logging.getLogger(name) for name in names]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeHandler(handler)


def _cpu_seconds() -> float:
    """CPU time of this process and of the child processes it has waited for (a C++ build, a new Python
    process, forked by the zygote or not): what a cell costs the machine's cores, where its wall time may be waiting."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime + forked_cpu_seconds()


@contextlib.contextmanager
def _timed(timings: Timings, part: str) -> Iterator[None]:
    """Record a part's seconds even when it raises: a failing cell's work is work too."""
    start = time.perf_counter()
    try:
        yield
    finally:
        setattr(timings, part, time.perf_counter() - start)
