"""Running one cell in this process: `Execution(...).run()`.

One method per stage (wrap, build per dtype, check, time), each announcing its stage before entering it,
so a runner that dies or hangs knows where. Exceptions from PyTorch, Triton and the case's own code are
foreign: they become the cell's outcome in `stage` and `case_code` (harness.execution.failures). Before a style cell
runs, one plain eager call of the launcher tells a mistake in the case's own code, which every style would meet, from
what the cell measures (harness.execution.plain_eager).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import resource
import time
from typing import Any, Callable, Iterator

import torch
from hypothesis import HealthCheck, given, settings
from torch._dynamo.utils import counters
from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

from harness.authoring.case import Case, Example, dtype_name
from harness.execution import applicability, builders, degradation, perf, poison, subsystems
from harness.execution.paths import training as train
from harness.execution import wrapping as wrappings
from harness.execution.drawing import examples, traces_once
from harness.execution.failures import DECIDED, failure, record
from harness.execution.numerics import assert_close, flatten
from harness.execution.observer import GraphObserver
from harness.execution.plain_eager import NotTestedHere, PlainEagerChecks
from harness.execution.transfer import copied
from harness.model.cell import Cell
from harness.model.columns import OP_NAMESPACE, ShippedKind, Wrapping
from harness.model.errors import Mismatch, first_line
from harness.model.messages import PlainEager
from harness.model.outcome import CaseCodeError, CellResult, HarnessFault, Outcome, Stage, StageFailure, Timings
from harness.model.rows import Kind
from harness.model.settings import Settings
from harness.processes.helper_process import CellProcesses, forked_cpu_seconds

WARNINGS_KEPT = 5
RAN_KEPT = 200  # the inputs a cell that does not pass keeps, in order, for its reproducer (CellResult.ran)


def _clone(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """Copies with the inputs' own strides (clone() makes a view with gaps contiguous: the path would get another layout),
    a view the same view of a copy of its base (Dynamo guards on a view's base: a plain copy would recompile, or be
    refused by precompiled code, where the user's views are not)."""
    return tuple(copied(x, x.device) if isinstance(x, torch.Tensor) else x for x in inputs)


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


class Execution(PlainEagerChecks):
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
            self.reference_in_plain_eager()
            self.launcher_in_plain_eager()
            self.backward_in_plain_eager()
        except DECIDED as exc:
            record(self.result, exc)
            return
        except NotTestedHere as exc:
            self.result.outcome, self.result.message = Outcome.SKIPPED, str(exc)
            return
        as_a_new_process(self.case)
        poison.take_unpoisoned()
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
            except DECIDED as exc:
                record(self.result, exc)
        self.result.unchecked += [f"unwritten elements of {what}: allocated unpoisoned, as written (torch.empty_like), since Inductor "
                                  "cannot compile its fill" for what in poison.take_unpoisoned()]
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
            except DECIDED:
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
        except DECIDED:
            raise
        except Exception as exc:
            raise failure(stage, exc) from exc
        finally:
            self.spent(stage.value, time.perf_counter() - entered)

    @contextlib.contextmanager
    def case_code(self, stage: Stage) -> Iterator[None]:
        """The case's own code runs inside: what it raises is the case's error, not a finding about the path."""
        try:
            yield
        except DECIDED:
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
        except DECIDED:
            raise
        except Exception as exc:
            raise failure(Stage.RUN, exc, called=True) from exc

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
            smallest = self._smallest_failure()
        finally:  # builds for the other dtypes happen lazily, inside the check: they count as compile
            timings.run = time.perf_counter() - checking - (timings.compile - compiled_before)
        if smallest is not None:
            example, error = smallest
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
