"""What happened in a cell, and where: the outcome vocabulary of the matrix."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from harness.model.cell import Cell
from harness.model.columns import Wrapping
from harness.model.errors import HarnessError, first_line
from harness.model.jsontext import number, strict
from harness.model.rows import Row


class Outcome(str, enum.Enum):
    PASS = "pass"
    WRONG = "wrong"  # ran, but numbers differ from the reference
    FAIL = "fail"  # an exception at a named stage
    CRASH = "crash"  # the process died on a signal
    TIMEOUT = "timeout"
    SKIPPED = "skipped"
    ERROR = "error"  # the case's own code or the harness broke, not the path (`fault` says which): a pytest failure


class Fault(str, enum.Enum):
    """Whose code broke in an ERROR cell."""

    CASE = "case"  # the case's own code: its make_inputs, reference or launcher raised (CaseCodeError)
    HARNESS = "harness"  # the harness's


class InGraph(str, enum.Enum):
    """Where the kernel is in what the compiler made of a path, read off its graphs (harness.execution.observer)."""

    TRACED = "traced"  # traced into: a triton_kernel_wrapper node
    OPAQUE = "opaque"  # an operator of the harness's namespace, called as a black box
    ABSENT = "absent"  # neither: the graph holds no kernel


# How a crash the controller records for a cell whose pytest worker died begins (harness.plugin.controller).
WORKER_DIED = "the pytest worker running this cell died: "

# Timings.stages' name for the time a cell waited for another cell's build of the package it runs.
WAITED_FOR_PACKAGE = "waiting for a package another cell builds"


class Stage(str, enum.Enum):
    SETUP = "setup"  # loading the case and making inputs
    WRAP = "wrap"
    CPP_BUILD = "cpp_build"  # building the C++ runtime's runner, before the package it will run
    COMPILE = "compile"  # Dynamo trace and Inductor compile
    EXPORT = "export"
    AOT_COMPILE = "aot_compile"
    AOT_LOAD = "aot_load"
    SAVE = "save"  # writing what a path saves for another process: an exported program, cache artifacts, a precompiled function
    LOAD = "load"  # loading it in a new process
    RUN = "run"
    REFERENCE = "reference"


class AtStage(HarnessError):
    """An exception raised at a named stage of a cell, which it carries with the stage."""

    def __init__(self, stage: Stage, error: BaseException):
        super().__init__(f"{stage.value}: {type(error).__name__}: {first_line(error)}")
        self.stage = stage
        self.error = error


class StageFailure(AtStage):
    """An exception raised by PyTorch or Triton, attributed to the stage it happened in."""


class CaseCodeError(AtStage):
    """The case's own code (make_inputs, reference) raised: the case's problem, not a finding about the path."""


class HarnessFault(AtStage):
    """The harness itself, or hypothesis as it drives the examples, broke while running a cell."""


@dataclass
class Timings:
    """Seconds spent in each part of a cell. `work` is what the cell itself costs in its runner process
    (setup + compile + run); `wall` is seen from the pytest worker, and `overhead` is the difference:
    the harness's own cost (the request and answer, the health check, a runner process started)."""

    setup: float = 0.0  # wrapping the kernel, building the program and the reference
    compile: float = 0.0  # torch.compile's first call, export, AOT compile and load: every dtype's
    run: float = 0.0  # the hypothesis examples: inputs, reference, the artifact's calls, comparison
    work: float = 0.0
    wall: float = 0.0
    overhead: float = 0.0
    process_start: float = 0.0  # a runner process started for this cell (first cell, or after a fault)
    perf: float = 0.0  # timing the artifact's speed, with --perf
    finished: float = 0.0  # when the cell's result came back (seconds since the epoch): orders a worker's cells
    # Where the work went: seconds inside each stage the cell entered (every dtype's), and WAITED_FOR_PACKAGE:
    # waiting while another cell built the AOTInductor package this one runs.
    stages: dict[str, float] = field(default_factory=dict)
    cpu: float = 0.0  # CPU seconds of the runner process during the cell, and of the processes it started and waited for

    # Version 1 of the results file named the parts by the harness's steps.
    V1_NAMES = {"wrap": "setup", "build": "compile", "check": "run"}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Timings:
        renamed = {cls.V1_NAMES.get(k, k): v for k, v in data.items()}
        timings = cls(**renamed)
        if "work" not in data:
            timings.work = timings.setup + timings.compile + timings.run
            timings.overhead = max(timings.wall - timings.work, 0.0)
        return timings


@dataclass
class Memory:
    """Memory of the runner process, in MB, read after the cell (its artifacts freed) and at its peak."""

    host_peak_mb: float | None = None  # the process's peak resident set, since it started
    host_rss_mb: float | None = None
    gpu_allocated_before_mb: float | None = None  # tensors alive on the GPU, before and after the cell
    gpu_allocated_after_mb: float | None = None
    gpu_peak_mb: float | None = None  # the most allocated at once during the cell
    gpu_reserved_mb: float | None = None  # the caching allocator's pool after the cell


@dataclass(frozen=True)
class Perf:
    """A cell's speed (`--perf`, harness.execution.perf): its artifact's median latency on the case's benchmark input,
    or what it raised there, at that shape and dtype."""

    shape: list[int]
    dtype: str
    median_ms: float | None = None
    error: str | None = None  # a failure only at the benchmark size: recorded beside the figure, not hidden

    def to_json(self) -> dict[str, Any]:
        """As results files keep it: the figure or the error, whichever there is."""
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Perf:
        return cls(shape=list(data["shape"]), dtype=data["dtype"], median_ms=number(data.get("median_ms")), error=data.get("error"))


class Confirmed(str, enum.Enum):
    """Why a cell ran again alone (harness.plugin.confirmation)."""

    NOT_PASSED = "did not pass"  # every cell that did not pass, where the run confirms any
    SAMPLED = "sampled"  # a passing cell of the run's sample
    CASE_ALONE = "its case runs alone"  # a cell of a case another cell of which differed alone: each of its cells runs alone


@dataclass(frozen=True)
class Attempt:
    """What one run of a cell did, in short: what must be the same for two runs to agree (harness.reporting.diff.signature)
    and the first line of its error."""

    outcome: Outcome
    stage: Stage | None = None
    error_type: str | None = None
    message: str | None = None

    @classmethod
    def of(cls, result: CellResult) -> Attempt:
        return cls(result.outcome, result.stage, result.error_type, (result.message or "")[:300] or None)

    @property
    def signature(self) -> tuple[object, ...]:
        """What must stay the same for two runs of a cell to agree: the outcome, and for a failure its stage and exception
        type (messages carry paths and addresses that change from run to run)."""
        return (Outcome.PASS,) if self.outcome is Outcome.PASS else (self.outcome, self.stage, self.error_type)

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome.value, "stage": self.stage.value if self.stage else None, "error_type": self.error_type,
                "message": self.message}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Attempt:
        return cls(Outcome(data["outcome"]), Stage(data["stage"]) if data.get("stage") else None, data.get("error_type"), data.get("message"))


@dataclass(frozen=True)
class Confirmation:
    """A cell run again alone: in a runner process of its own, forked as every runner is, with empty compile caches of its
    own and AOTInductor packages built for it alone, the same cell request its worker ran (harness.plugin.confirmation).
    `shared` is what it did in its worker's shared process (None: it never ran there, its case running alone), `alone`
    what it did alone. The cell is charted with what it did alone: where the two differ (`agreed` False), the shared
    outcome depended on what ran before it in its process."""

    why: Confirmed
    alone: Attempt
    shared: Attempt | None = None
    agreed: bool | None = None  # None where there is nothing to agree with (`shared` None)
    seconds: float = 0.0  # what running it again alone added to the run: its wall time alone (0 where it only ran alone)
    # Where those seconds went (SPENT_ON): waiting for its runner process; the cell's checks of the launcher and backward in
    # plain eager before its path (with empty caches, its kernels' first compiles); the style built; compiling; running
    # the examples; and the harness's own (the request and answer, the health check after the cell).
    spent: dict[str, float] = field(default_factory=dict)

    SPENT_ON = ("process_start", "plain_eager", "setup", "compile", "run", "harness")

    @classmethod
    def spending(cls, timings: Timings) -> dict[str, float]:
        """Where a run alone's `timings` went, by SPENT_ON."""
        path = timings.setup + timings.compile + timings.run
        return {"process_start": timings.process_start, "plain_eager": max(timings.work - path, 0.0), "setup": timings.setup,
                "compile": timings.compile, "run": timings.run, "harness": max(timings.wall - timings.process_start - timings.work, 0.0)}

    def to_json(self) -> dict[str, Any]:
        return {"why": self.why.value, "agreed": self.agreed, "alone": self.alone.to_json(),
                "shared": self.shared.to_json() if self.shared else None, "seconds": round(self.seconds, 3),
                **({"spent": {k: round(v, 3) for k, v in self.spent.items()}} if self.spent else {})}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Confirmation:
        return cls(Confirmed(data["why"]), Attempt.from_json(data["alone"]), Attempt.from_json(data["shared"]) if data.get("shared") else None,
                   data.get("agreed"), float(data.get("seconds") or 0.0), {k: float(v) for k, v in (data.get("spent") or {}).items()})


# Written only where set: most cells of a run are not carried over or confirmed, and files written before lack them.
OMITTED_WHEN_NONE = ("digest", "carried_from", "confirmation")


@dataclass
class CellResult:
    """What one cell gave. Built only as CellResult(cell, outcome, ...); its case, wrapping and row are the cell's."""

    cell: Cell
    outcome: Outcome
    stage: Stage | None = None
    error_type: str | None = None
    message: str | None = None  # first line of the error
    detail: str | None = None  # the whole message, bounded
    max_error: float | None = None
    mismatched: str | None = None  # "12 of 4096 elements"
    example: str | None = None  # smallest failing example hypothesis found
    # The inputs the cell checked, in order (str(Example)), kept where it did not pass: its reproducer replays them, since
    # what the path does with an example can depend on what it compiled or cached for those before it. Not the input a
    # path is built with (seed 0 at example_shape), which the reproducer builds with itself and the cell never checks.
    ran: list[str] = field(default_factory=list)
    examples_run: int = 0
    dtypes: list[str] = field(default_factory=list)
    graph_breaks: int | None = None
    kernel_in_graph: InGraph | None = None  # read off the compiled/exported graphs
    warnings: list[str] = field(default_factory=list)  # what PyTorch logged as a warning during the cell
    degradations: list[str] = field(default_factory=list)  # what a passing cell silently lost (harness.execution.degradation)
    dtypes_skipped: dict[str, str] = field(default_factory=dict)  # dtype -> why this run does not test it
    unchecked: list[str] = field(default_factory=list)  # examples the cell drew but could not check, and why
    signal: str | None = None
    fault: Fault | None = None  # for an error: whose code broke
    flaky: str | None = None  # set by hand in a baseline: why this cell's outcome may vary (it is not checked)
    blamed_on: str | None = None  # the control cell that fails on the same path: the environment, not the wrapping
    known_issue: str | None = None  # the known upstream issue its failure matches (harness.model.known_issues), set when judged
    log_tail: list[str] = field(default_factory=list)  # stderr of a crashed or hung runner
    timings: Timings = field(default_factory=Timings)
    memory: Memory = field(default_factory=Memory)
    worker: str | None = None  # the pytest worker that ran it
    perf: Perf | None = None  # with --perf: the artifact's median latency on a realistic input
    # What the outcome depends on, hashed (harness.plugin.carry_over): a later run with this file as --baseline carries the
    # cell over while its own digest is the same. None in files written before it was recorded: such a cell always runs.
    digest: str | None = None
    carried_from: str | None = None  # not run: carried over from this earlier run, whose outcome it is (--baseline)
    confirmation: Confirmation | None = None  # run again alone, and what it did there (harness.plugin.confirmation)

    @property
    def case(self) -> str:
        return self.cell.case

    @property
    def wrapping(self) -> Wrapping:
        return self.cell.wrapping

    @property
    def row(self) -> Row:
        return self.cell.row

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        cell = data.pop("cell")
        # The file keeps the id's parts beside it, so a reader without this harness can group cells.
        head = {"cell": cell.id, "case": cell.case, "wrapping": cell.wrapping.value, "row": cell.row.value}
        data.update(outcome=self.outcome.value, stage=self.stage.value if self.stage else None,
                    fault=self.fault.value if self.fault else None,
                    kernel_in_graph=self.kernel_in_graph.value if self.kernel_in_graph else None,
                    timings=_measured(asdict(self.timings)), memory=_measured(asdict(self.memory)),
                    perf=self.perf.to_json() if self.perf else None,
                    confirmation=self.confirmation.to_json() if self.confirmation else None)
        for key in OMITTED_WHEN_NONE:
            if data[key] is None:
                del data[key]
        return strict({**head, **data})  # a non-finite max_error as its name: results files are strict JSON

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CellResult:
        """Raises CellIdError for an id this harness does not know (a row or style it lacks)."""
        data = {k: v for k, v in data.items() if k not in ("case", "wrapping", "row", "path")}
        data["cell"] = Cell.parse(data["cell"])
        data["outcome"] = Outcome(data["outcome"])
        data["stage"] = Stage(data["stage"]) if data.get("stage") else None
        data["fault"] = Fault(data["fault"]) if data.get("fault") else None
        data["kernel_in_graph"] = InGraph(data["kernel_in_graph"]) if data.get("kernel_in_graph") else None
        data["timings"] = Timings.from_json(data.get("timings", {}))
        data["memory"] = Memory(**(data.get("memory") or {}))
        data["max_error"] = number(data.get("max_error"))
        data["perf"] = Perf.from_json(data["perf"]) if data.get("perf") else None
        data["confirmation"] = Confirmation.from_json(data["confirmation"]) if data.get("confirmation") else None
        return cls(**data)


def detail(exc: BaseException) -> str:
    """The whole message, bounded, for results.json: the first line rarely tells everything."""
    return str(exc)[:4000]


def _measured(values: Any) -> Any:
    """Seconds and megabytes to the millisecond and the kilobyte: what a timer and a memory count can tell, and a chart of
    thousands of cells a third smaller than with every digit a float has."""
    if isinstance(values, dict):
        return {key: _measured(value) for key, value in values.items()}
    return round(values, 3) if isinstance(values, float) else values
