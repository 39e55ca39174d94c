"""A cell is one (case, wrapping style, compile path); `run` executes it in this process."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import path as paths
from harness import perf
from harness import subsystems
from harness import training as train
from harness import wrapping as wrappings
from harness.case import Case, Example, dtype_name
from harness.outcome import CellResult, Outcome, Stage, Timings, detail, first_line
from harness.path import Kind, Path, StageFailure
from harness.wrapping import Wrapping


@dataclass(frozen=True, order=True)
class Cell:
    case: str
    wrapping: Wrapping
    path: Path

    @property
    def id(self) -> str:
        return f"{self.case}-{self.wrapping.value}-{self.path.value}"

    def __str__(self) -> str:
        return self.id

    @classmethod
    def parse(cls, cell_id: str) -> Cell:
        try:
            case, wrapping, path = cell_id.rsplit("-", 2)
            return cls(case, Wrapping(wrapping), Path(path))
        except ValueError:
            raise ValueError(
                f"{cell_id!r} is not a cell id: expected CASE-WRAPPING-PATH with WRAPPING one of "
                f"{[w.value for w in Wrapping]} and PATH one of {[p.value for p in Path]}"
            ) from None


# Seconds-like units, as Path.cost: the autotuner's cost per config it times, over a cell's examples.
AUTOTUNE_COST_PER_CONFIG = 20.0


def cost(cell: Cell, case: Case) -> float:
    """A cell's expected cost, to schedule the costliest first: its path's, plus the autotuning its case's
    kernels redo for each new input size."""
    return cell.path.cost + AUTOTUNE_COST_PER_CONFIG * case.autotune_configs


def all_cells(cases: list[str], wrappings_: list[Wrapping] | None = None, paths_: list[Path] | None = None) -> list[Cell]:
    return [Cell(c, w, p) for c in cases for w in (wrappings_ or list(Wrapping)) for p in (paths_ or list(Path))]


@dataclass(frozen=True)
class Settings:
    """How many examples and how they are drawn: from the hypothesis profile of the run."""

    max_examples: int = 20
    derandomize: bool = True
    checked_batch_max: int = 4096  # exported artifacts are checked on batches up to this; --perf runs the benchmark batch
    dtypes_per_cell: int | None = None  # check only a case's first N testable dtypes (each dtype is a build)
    # Examples a cell may run after its first failure (hypothesis generates on, then shrinks). Unbounded, a
    # failing cell ran about 100 examples and up to two minutes, ending the matrix late; 20 more still find
    # a small failing input.
    shrink_examples: int = 20
    workdir: str = "."
    perf: bool = False  # time the artifact after a pass (harness.perf)
    packages: str | None = None  # this run's AOTInductor packages, shared by its Python and C++ runtime cells
    caches: str | None = None  # the run's caches (the C++ runner is built there once)


class Mismatch(AssertionError):
    def __init__(self, what: str, max_error: float, mismatched: str):
        super().__init__(f"{what} differs from the reference: {mismatched} (max abs error {max_error:.3g})")
        self.max_error = max_error
        self.mismatched = mismatched


class CaseProblem(Exception):
    """The case itself broke (its inputs or its reference): not a finding about the path."""

    def __init__(self, stage: Stage, error: BaseException):
        super().__init__(f"{stage.value}: {type(error).__name__}: {first_line(error)}")
        self.stage = stage
        self.error = error


def _flatten(value: Any) -> list[Any]:
    """Outputs as a list: a None result is no output; a None inside a list (a missing gradient) stays."""
    if value is None:
        return []
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in (_flatten(v) if isinstance(v, (tuple, list)) else [v])]
    return [value]


def _clone(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(x.clone() if isinstance(x, torch.Tensor) else x for x in inputs)


def compare(case: Case, dtype: torch.dtype, expected: list[Any], actual: list[Any], names: list[str]) -> None:
    """Outputs, then every tensor input after the call (a mutation must happen, and only where declared)."""
    if len(expected) != len(actual):
        raise Mismatch("the number of outputs", math.inf, f"{len(actual)} vs {len(expected)}")
    tol = case.tolerance(dtype)
    for name, e, a in zip(names, expected, actual):
        if isinstance(e, torch.Tensor) and a is None:
            raise Mismatch(name, math.inf, "it is missing (None) where the reference has one: cut off from the autograd graph")
        if isinstance(e, torch.Tensor) and e.dim() == 0 and not e.is_floating_point() and isinstance(a, torch.Tensor):
            if int(a) != int(e):
                raise Mismatch(name, abs(int(a) - int(e)), f"{int(a)} where the reference has {int(e)}")
            continue
        if not isinstance(e, torch.Tensor):
            if e != a:
                raise Mismatch(name, math.inf, f"value {a!r} vs {e!r}")
            continue
        if not isinstance(a, torch.Tensor) or a.shape != e.shape or a.dtype != e.dtype:
            got = f"{tuple(a.shape)} {a.dtype}" if isinstance(a, torch.Tensor) else type(a).__name__
            raise Mismatch(name, math.inf, f"shape/dtype {got} vs {tuple(e.shape)} {e.dtype}")
        a, e = a.cpu(), e.cpu()
        close = torch.isclose(a, e, atol=tol.atol, rtol=tol.rtol, equal_nan=True)
        if not bool(close.all()):
            diff = (a.double() - e.double()).abs()
            max_error = float(diff.nan_to_num(nan=math.inf).max())
            unwritten = int((a.isnan() & ~e.isnan()).sum()) if a.is_floating_point() else 0
            note = f", {unwritten} NaN where the reference has a number (never written?)" if unwritten else ""
            raise Mismatch(name, max_error, f"{int((~close).sum())} of {e.numel()} elements{note}")


SUBSYSTEM_OUTPUTS = {Path.FLOP_COUNTER: ["the flop count"], Path.TENSOR_SUBCLASS: ["the result's .a", "the result's .b"]}


def _example_strategy(case: Case, path: Path, checked_batch_max: int = Settings.checked_batch_max) -> st.SearchStrategy[Example]:
    if path is Path.OPCHECK:  # opcheck is slow and shape-blind: once per dtype
        return st.builds(Example, dtype=st.sampled_from(case.dtypes), shape=st.just(case.example_shape), seed=st.just(0))
    if path.kind in (Kind.EXPORT, Kind.AOTI, Kind.AOTI_CPP):
        # The artifact is traced once per dtype; only the dynamic batch may change.
        shapes = st.integers(1, min(case.max_batch, checked_batch_max)).map(case.export_shape)
        return st.builds(Example, dtype=st.sampled_from(case.dtypes), shape=shapes, seed=st.integers(0, 2**31 - 1))
    # Scalars vary where the artifact is made per call (eager, compile): a new value may recompile.
    scalars = st.tuples(*(st.tuples(st.just(name), values) for name, values in case.scalars.items()))
    return st.builds(Example, dtype=st.sampled_from(case.dtypes), shape=case.shapes, seed=st.integers(0, 2**31 - 1), scalars=scalars)


def _shared(cell: Cell, dtype: torch.dtype, config: Settings) -> paths.Shared | None:
    """The key under which the AOTInductor rows of one export mode share a package across runtimes."""
    if config.packages is None or cell.path.kind not in (Kind.AOTI, Kind.AOTI_CPP):
        return None
    mode = "strict" if cell.path.strict else "nonstrict"
    key = f"{cell.case}-{cell.wrapping.value}-{mode}-{dtype_name(dtype)}"
    return paths.Shared(packages=config.packages, caches=config.caches or config.workdir, key=key)


def skip_reason(cell: Cell, case: Case) -> str | None:
    """Why a row does not apply to this cell (the chart leaves skipped cells out of its counts)."""
    if cell.path.kind is Kind.TRAIN:
        if case.mutates:
            return "the case mutates its inputs: it has no gradient to check"
        if case.backward is None and cell.wrapping in (Wrapping.RAW_AUTOGRAD, Wrapping.TRITON_OP, Wrapping.CUSTOM_OP):
            return "the case declares no backward"
    if cell.path.kind is Kind.SUBSYSTEM:
        return subsystems.not_applicable(cell.path, case, cell.wrapping)
    return None


def run(
    cell: Cell,
    case: Case,
    config: Settings,
    device: str,
    on_stage: Callable[[Stage], None] = lambda stage: None,
    broken_dtypes: dict[str, str] | None = None,
) -> CellResult:
    """Execute one cell in this process. Every PyTorch/Triton exception becomes an outcome.

    `broken_dtypes` (from harness.probe) are left out, and the result says why.
    """
    began = time.perf_counter()
    result = CellResult(cell=cell.id, case=cell.case, wrapping=cell.wrapping.value, path=cell.path.value, outcome=Outcome.PASS)
    try:
        return _run(cell, case, config, device, on_stage, broken_dtypes, result)
    finally:
        result.timings.work = time.perf_counter() - began


def _run(
    cell: Cell,
    case: Case,
    config: Settings,
    device: str,
    on_stage: Callable[[Stage], None],
    broken_dtypes: dict[str, str] | None,
    result: CellResult,
) -> CellResult:
    broken = broken_dtypes or {}
    result.dtypes_skipped = {dtype_name(d): broken[dtype_name(d)] for d in case.dtypes if dtype_name(d) in broken}
    testable = tuple(d for d in case.dtypes if dtype_name(d) not in broken)
    if config.dtypes_per_cell is not None:
        for d in testable[config.dtypes_per_cell:]:
            result.dtypes_skipped[dtype_name(d)] = f"this run's profile checks {config.dtypes_per_cell} dtype(s) a cell"
        testable = testable[: config.dtypes_per_cell]
    reason = skip_reason(cell, case) or (case.requires(device) if case.requires else None)
    if not testable:
        reason = "no dtype of this case can be tested here: " + "; ".join(f"{k}: {v}" for k, v in result.dtypes_skipped.items())
    if reason:
        result.outcome, result.message = Outcome.SKIPPED, reason
        return result
    case = dataclasses.replace(case, dtypes=testable)
    if cell.path is Path.CPU_FALLBACK:
        device = "cpu"
    os.makedirs(config.workdir, exist_ok=True)
    timings = result.timings
    torch._dynamo.reset()
    from torch._dynamo.utils import counters

    counters.clear()
    observer = paths.GraphObserver()
    with _captured_warnings(result), torch._inductor.config.patch(post_grad_custom_post_pass=observer.inductor_pass()):
        try:
            on_stage(Stage.WRAP)
            with _timed(timings, "setup"):
                try:
                    if cell.path.kind is Kind.SUBSYSTEM:
                        program, reference = subsystems.programs(cell.path, case, cell.wrapping)
                    else:
                        program, reference = wrappings.build(case, cell.wrapping), case.reference
                except Exception as exc:
                    raise StageFailure(Stage.WRAP, exc) from exc
            training = cell.path.kind is Kind.TRAIN
            if training:
                reference = train.step(reference)

            artifacts: dict[torch.dtype, Callable[..., Any]] = {}

            def artifact_for(dtype: torch.dtype) -> Callable[..., Any]:
                if dtype not in artifacts:
                    inputs = _make_inputs(case, Example(dtype, case.example_shape, seed=0), device)
                    if training:
                        inputs = train.leaves(inputs)
                    label = f"{cell.id}-{dtype_name(dtype)}"
                    start = time.perf_counter()
                    try:
                        built = paths.build(cell.path, program, inputs, case.max_batch, config.workdir, label, on_stage, observer,
                                            case.batched, _shared(cell, dtype, config))
                    finally:
                        timings.compile += time.perf_counter() - start
                    artifacts[dtype] = train.step(built) if training else built
                    on_stage(Stage.RUN)
                return artifacts[dtype]

            artifact_for(case.dtypes[0])
            checking = time.perf_counter()
            compiled_before = timings.compile
            try:
                failure = _check(case, cell, config, device, artifact_for, reference, result)
            finally:  # builds for the other dtypes happen lazily, inside the check: they count as compile
                timings.run = time.perf_counter() - checking - (timings.compile - compiled_before)
            if failure is not None:
                example_, error = failure
                result.example = str(example_)
                raise error
            if config.perf and perf.applies(cell.path):
                with _timed(timings, "perf"):
                    result.perf = perf.measure(
                        case,
                        artifact_for,
                        lambda ex: _make_inputs(case, ex, device),
                        lambda dtype, inputs, artifact: verify(case, cell, reference, artifact, dtype, inputs),
                        device,
                    )
        except Mismatch as exc:
            result.outcome, result.stage = Outcome.WRONG, Stage.RUN
            result.message, result.max_error, result.mismatched = first_line(exc), exc.max_error, exc.mismatched
        except StageFailure as exc:
            result.outcome, result.stage = Outcome.FAIL, exc.stage
            result.error_type, result.message, result.detail = _type_name(exc.error), first_line(exc.error), detail(exc.error)
        except CaseProblem as exc:
            result.outcome, result.stage = Outcome.ERROR, exc.stage
            result.error_type, result.message, result.detail = _type_name(exc.error), first_line(exc.error), detail(exc.error)
    result.graph_breaks = sum(counters["graph_break"].values())
    result.kernel_in_graph = observer.verdict(wrappings.OP_NAMESPACE)
    return result


WARNINGS_KEPT = 5


@contextlib.contextmanager
def _captured_warnings(result: CellResult) -> Iterator[None]:
    """Warnings PyTorch logs during the cell: silent degradation (a graph break, Triton mutation analysis
    "assuming every input is mutated") is a finding, not a quiet pass."""
    import logging

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


@contextlib.contextmanager
def _timed(timings: Timings, part: str) -> Iterator[None]:
    """Record a part's seconds even when it raises: a failing cell's work is work too."""
    start = time.perf_counter()
    try:
        yield
    finally:
        setattr(timings, part, time.perf_counter() - start)


def _type_name(error: BaseException) -> str:
    kind = type(error)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _make_inputs(case: Case, ex: Example, device: str) -> tuple[Any, ...]:
    try:
        return case.inputs(ex, device)
    except Exception as exc:
        raise CaseProblem(Stage.SETUP, exc) from exc


def verify(case: Case, cell: Cell, reference: Callable[..., Any], artifact: Callable[..., Any], dtype: torch.dtype, inputs: tuple[Any, ...]) -> None:
    """Run the artifact and the reference on the same inputs; raise Mismatch where they differ."""
    ref_inputs, act_inputs = _clone(inputs), _clone(inputs)
    try:
        expected = _flatten(reference(*ref_inputs))
    except Exception as exc:
        raise CaseProblem(Stage.REFERENCE, exc) from exc
    actual = _flatten(paths.call(artifact, act_inputs))
    input_names = [p.name for p in case.input_parameters()]
    tensors = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)]
    graded = [input_names[i] for i in tensors if inputs[i].is_floating_point()] if cell.path.kind is Kind.TRAIN else []
    names = SUBSYSTEM_OUTPUTS.get(cell.path) or (
        [f"output {n}" for n in range(len(expected) - len(graded))] + [f"gradient of input {n!r}" for n in graded]
    )
    compare(
        case,
        dtype,
        expected + [ref_inputs[i] for i in tensors],
        actual + [act_inputs[i] for i in tensors],
        names + [f"input {input_names[i]!r} after the call" for i in tensors],
    )


def _check(
    case: Case,
    cell: Cell,
    config: Settings,
    device: str,
    artifact_for: Callable[[torch.dtype], Callable[..., Any]],
    reference: Callable[..., Any],
    result: CellResult,
) -> tuple[Example, BaseException] | None:
    """Run the hypothesis examples; return the smallest failing example and its error, if any."""
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
    @given(ex=_example_strategy(case, cell.path, config.checked_batch_max))
    def check(ex: Example) -> None:
        nonlocal shrink_until
        if failures and result.examples_run >= shrink_until:
            return  # the shrinking budget is spent: hypothesis keeps the smallest failure found so far
        result.examples_run += 1
        dtypes_seen.add(dtype_name(ex.dtype))
        inputs = _make_inputs(case, ex, device)
        try:
            verify(case, cell, reference, artifact_for(ex.dtype), ex.dtype, inputs)
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
    except CaseProblem:
        raise
    except Exception as exc:  # hypothesis' own errors (Flaky and the like, as when the budget cut shrinking)
        if failures:
            return smallest()
        raise CaseProblem(Stage.RUN, exc) from exc
    finally:
        result.dtypes = sorted(dtypes_seen)
    return None
