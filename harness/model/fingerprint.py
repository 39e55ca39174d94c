"""The environment a run measured, typed: what a chart is only true for. Recorded in results files under
"fingerprint"; keys a file holds that this harness does not know are kept as they were (`other`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

INTERPRETER = "cpu-interpreter"  # the mode of a run on Triton's CPU interpreter; "gpu" otherwise

_Record = TypeVar("_Record", bound="Record")


@dataclass
class Record:
    """A part of the fingerprint: its fields by their JSON names (`RENAMED` where a name cannot be a field's),
    None where a file does not say; what it holds beyond them is kept in `other` and written back."""

    RENAMED: ClassVar[dict[str, str]] = {}  # field -> JSON key
    NESTED: ClassVar[dict[str, type[Record]]] = {}  # field -> the record it holds
    OMITTED_WHEN_EMPTY: ClassVar[tuple[str, ...]] = ()  # fields written only when they hold something

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "other" or (f.name in self.OMITTED_WHEN_EMPTY and not value):
                continue
            if isinstance(value, Record):
                value = value.to_json()
            elif isinstance(value, list):
                value = [v.to_json() if isinstance(v, Record) else v for v in value]
            data[self.RENAMED.get(f.name, f.name)] = value
        return {**data, **self.other}

    @classmethod
    def from_json(cls: type[_Record], data: dict[str, Any] | None) -> _Record:
        data = dict(data or {})
        known = {}
        for f in dataclasses.fields(cls):
            key = cls.RENAMED.get(f.name, f.name)
            if f.name == "other" or key not in data:
                continue
            value = data.pop(key)
            nested = cls.NESTED.get(f.name)
            if nested is not None and isinstance(value, list):
                value = [nested.from_json(v) for v in value]
            elif nested is not None and isinstance(value, dict):
                value = nested.from_json(value)
            known[f.name] = value
        return cls(**known, other=data)  # type: ignore[call-arg]


@dataclass
class Gpu(Record):
    available: bool = False
    name: str | None = None
    count: int | None = None
    driver: str | None = None
    memory: str | None = None
    capability: str | None = None
    other: dict[str, Any] = field(default_factory=dict)
    OMITTED_WHEN_EMPTY: ClassVar[tuple[str, ...]] = ("name", "count", "driver", "memory", "capability")  # none without a GPU


@dataclass
class Compiler(Record):
    """The C++ compiler Inductor and AOTInductor call: CXX as set, the command Inductor resolved, its file."""

    RENAMED: ClassVar[dict[str, str]] = {"cxx": "CXX"}
    cxx: str | None = None
    resolved: str | None = None
    path: str | None = None
    version: str | None = None
    other: dict[str, Any] = field(default_factory=dict)


@dataclass
class GitCommit(Record):
    commit: str | None = None
    dirty: bool | None = None
    source: str | None = None  # "GIT_COMMIT" where the environment named the commit of a copied tree
    other: dict[str, Any] = field(default_factory=dict)
    OMITTED_WHEN_EMPTY: ClassVar[tuple[str, ...]] = ("source",)


@dataclass
class ProfileUsed(Record):
    """The hypothesis version and the run's profile (harness.model.settings.Profile) as recorded."""

    version: str | None = None
    profile: str | None = None
    max_examples: int | None = None
    derandomize: bool | None = None
    other: dict[str, Any] = field(default_factory=dict)  # the profile's other settings, as the run had them


@dataclass
class ShardPart(Record):
    """A --shard=K/N run's part, and what balanced the split."""

    index: int = 0
    count: int = 0
    balanced_by: str | None = None
    timings_sha256: str | None = None
    other: dict[str, Any] = field(default_factory=dict)
    OMITTED_WHEN_EMPTY: ClassVar[tuple[str, ...]] = ("balanced_by", "timings_sha256")


@dataclass
class ShardsMerged(Record):
    """The --shard parts a merged results file holds."""

    count: int = 0
    merged: list[int] = field(default_factory=list)
    timings_sha256: str | None = None
    other: dict[str, Any] = field(default_factory=dict)
    OMITTED_WHEN_EMPTY: ClassVar[tuple[str, ...]] = ("timings_sha256",)


@dataclass
class Rerun(Record):
    """A re-run folded over earlier results (`harness report --rerun`): which cells it replaced, from where."""

    file: str | None = None
    commit: str | None = None
    time: str | None = None
    command: str | None = None
    complete: bool | None = None
    gpu: str | None = None  # the card it ran on (recorded since runs of one architecture's cards merge)
    cells: list[str] = field(default_factory=list)
    other: dict[str, Any] = field(default_factory=dict)
    OMITTED_WHEN_EMPTY: ClassVar[tuple[str, ...]] = ("gpu",)


@dataclass
class Fingerprint(Record):
    NESTED: ClassVar[dict[str, type[Record]]] = {"gpu": Gpu, "compiler": Compiler, "hypothesis": ProfileUsed, "git": GitCommit,
                                                 "shard": ShardPart, "shards": ShardsMerged, "reruns": Rerun}
    OMITTED_WHEN_EMPTY: ClassVar[tuple[str, ...]] = ("cpu", "vec_isa", "runner_threads", "autotune_timing", "shard", "shards", "reruns",
                                                     "cases", "confirm")

    mode: str | None = None  # "gpu" or INTERPRETER
    torch: str | None = None
    triton: str | None = None
    cuda: str | None = None
    gpu: Gpu = field(default_factory=Gpu)
    python: str | None = None
    platform: str | None = None
    cpus: int | None = None
    cpu: str | None = None  # the CPU's model name: machines of one kind and core count can differ in speed
    compiler: Compiler = field(default_factory=Compiler)
    cmake: str | None = None  # builds the C++ runtime's runner (None: not found)
    hypothesis: ProfileUsed = field(default_factory=ProfileUsed)
    git: GitCommit = field(default_factory=GitCommit)
    workers: int | None = None
    caches: str | None = None  # "fresh" or "reused from DIR": a reused cache can hide a compile failure
    # Cells a runner process served before a fresh one took over: 1, each cell in a process of its own; 0, one process for
    # all of a worker's cells but after a fault. None: recorded before it was, when cells shared a process (0)
    cells_per_process: int | None = None
    # Which cells the run confirmed alone (--confirm, harness.plugin.confirmation). None: recorded before runs confirmed any
    confirm: str | None = None
    command: str | None = None
    # The run's --cases, files and folders as absolute paths (harness.authoring.registry.resolved); none: the built-ins
    cases: list[str] = field(default_factory=list)
    time: str | None = None
    vec_isa: dict[str, Any] | None = None  # what Inductor's CPU vector-ISA probe found (harness.environment.vec_isa)
    runner_threads: int | None = None  # CPU threads each runner's torch used (None: torch's default, one per core)
    # How autotuners timed their configs in the cells (harness.processes.autotune_timing.DESCRIBED); None: in full,
    # as every run did before the budget
    autotune_timing: str | None = None
    shard: ShardPart | None = None
    shards: ShardsMerged | None = None
    reruns: list[Rerun] = field(default_factory=list)
    other: dict[str, Any] = field(default_factory=dict)

    @property
    def interpreter(self) -> bool:
        return self.mode == INTERPRETER

    @property
    def profile(self) -> str | None:
        return self.hypothesis.profile

    @property
    def commit(self) -> str | None:
        return self.git.commit

    def case_specs(self) -> list[str]:
        """The case modules the run loaded, as --cases takes them: as recorded, or, in a file written before they were,
        the --cases options its command names; none: the built-in cases."""
        if self.cases:
            return list(self.cases)
        words = (self.command or "").split()
        specs = [w.split("=", 1)[1] for w in words if w.startswith("--cases=")]
        return specs + [after for before, after in zip(words, words[1:]) if before == "--cases"]

    def same_environment(self, other: Fingerprint) -> str | None:
        """The first fact two runs must share before their cells share one chart and that differs, or None. Of the
        GPU, its architecture and count: cards of one compute capability (an H100 and an H200) compile and run the
        same code, and each re-run folded in names its card (Rerun.gpu)."""
        for name in SAME_ENVIRONMENT:
            mine, theirs = getattr(self, name), getattr(other, name)
            if name == "gpu":
                mine, theirs = (mine.available, mine.count, mine.capability), (theirs.available, theirs.count, theirs.capability)
            if mine != theirs:
                return name
        return None

    def recorded(self, name: str) -> Any:
        """One field as the results file records it (a part as its JSON object)."""
        value = getattr(self, name)
        return value.to_json() if isinstance(value, Record) else value


# What must agree before two runs' cells may share one chart.
SAME_ENVIRONMENT = ("mode", "torch", "triton", "cuda", "gpu", "compiler")
