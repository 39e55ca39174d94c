"""Compile paths (the chart's rows): how a wrapped callable is turned into something that runs."""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import shutil
from typing import Any, Callable

import torch
from torch.utils._filelock import FileLock

from harness import cpp_runtime
from harness.outcome import Stage


class Kind(str, enum.Enum):
    EAGER = "eager"
    COMPILE = "compile"
    EXPORT = "export"
    AOTI = "aoti"
    AOTI_CPP = "aoti_cpp"  # the same package, loaded and run by a C++ program with no Python
    TRAIN = "train"  # forward and backward, gradients checked
    SUBSYSTEM = "subsystem"  # a PyTorch subsystem the style should compose with


class Path(str, enum.Enum):
    EAGER = "eager"
    COMPILE_FULLGRAPH = "compile_fullgraph"
    COMPILE_DEFAULT = "compile_default"
    COMPILE_DYNAMIC = "compile_dynamic"
    EXPORT_STRICT = "export_strict"
    EXPORT_NONSTRICT = "export_nonstrict"
    AOTI_STRICT = "aoti_strict"
    AOTI_NONSTRICT = "aoti_nonstrict"
    AOTI_CPP_STRICT = "aoti_cpp_strict"
    AOTI_CPP_NONSTRICT = "aoti_cpp_nonstrict"
    TRAIN_EAGER = "train_eager"
    TRAIN_COMPILE_FULLGRAPH = "train_compile_fullgraph"
    TRAIN_COMPILE_DEFAULT = "train_compile_default"
    OPCHECK = "opcheck"
    FLOP_COUNTER = "flop_counter"
    CPU_FALLBACK = "cpu_fallback"
    TENSOR_SUBCLASS = "tensor_subclass"

    @property
    def kind(self) -> Kind:
        return _KINDS[self]

    @property
    def title(self) -> str:
        return _TITLES[self]

    @property
    def strict(self) -> bool:
        return self in (Path.EXPORT_STRICT, Path.AOTI_STRICT, Path.AOTI_CPP_STRICT)

    @property
    def compile_options(self) -> dict[str, Any] | None:
        """torch.compile's arguments on the paths that compile the callable, else None."""
        if self in (Path.COMPILE_FULLGRAPH, Path.TRAIN_COMPILE_FULLGRAPH):
            return {"fullgraph": True}
        if self in (Path.COMPILE_DEFAULT, Path.TRAIN_COMPILE_DEFAULT):
            return {}
        if self is Path.COMPILE_DYNAMIC:
            return {"dynamic": True}
        return None

    @property
    def cost(self) -> float:
        """Rough relative cost of a cell on this path (training without a compiler costs as eager)."""
        if self.kind is Kind.TRAIN and self.compile_options is None:
            return _COST[Kind.EAGER]
        return _COST[self.kind]

    @property
    def timeout_s(self) -> float:
        """Default limit for one cell; AOTInductor builds C++, so it gets the most."""
        return {Kind.AOTI: 900.0, Kind.AOTI_CPP: 900.0, Kind.EAGER: 300.0, Kind.SUBSYSTEM: 300.0}.get(self.kind, 600.0)


def parse_timeouts(values: list[str]) -> dict[str, float]:
    """`--cell-timeout` values: "S" for every cell, or "ROW=S" with ROW a path (aoti_strict) or a kind
    (aoti: both AOTInductor rows). Raises ValueError naming what to fix."""
    names = {p.value for p in Path} | {k.value for k in Kind}
    chosen: dict[str, float] = {}
    for value in values:
        row, _, seconds = value.rpartition("=")
        if row and row not in names:
            raise ValueError(f"--cell-timeout {value!r}: unknown row {row!r}; give a path ({', '.join(p.value for p in Path)}) "
                             f"or a kind ({', '.join(k.value for k in Kind)})")
        try:
            chosen[row or "*"] = float(seconds)
        except ValueError:
            raise ValueError(f"--cell-timeout {value!r}: {seconds!r} is not a number of seconds") from None
    return chosen


def timeout_for(path: Path, chosen: dict[str, float]) -> float:
    """A cell's limit: its path's, else its kind's, else every cell's, else the path's default."""
    for name in (path.value, path.kind.value, "*"):
        if name in chosen:
            return chosen[name]
    return path.timeout_s


# Relative cost of a cell by kind, from the GPU runs' medians: the matrix schedules the costliest cells
# first, so no worker starts an AOTInductor build while the others have run out of work. A C++ runtime
# cell usually runs the package its Python twin built, so it comes right after them.
_COST = {Kind.AOTI: 50.0, Kind.AOTI_CPP: 10.0, Kind.TRAIN: 3.0, Kind.COMPILE: 2.5, Kind.EAGER: 1.0, Kind.EXPORT: 0.7, Kind.SUBSYSTEM: 0.5}

_KINDS = {
    Path.EAGER: Kind.EAGER,
    Path.COMPILE_FULLGRAPH: Kind.COMPILE,
    Path.COMPILE_DEFAULT: Kind.COMPILE,
    Path.COMPILE_DYNAMIC: Kind.COMPILE,
    Path.EXPORT_STRICT: Kind.EXPORT,
    Path.EXPORT_NONSTRICT: Kind.EXPORT,
    Path.AOTI_STRICT: Kind.AOTI,
    Path.AOTI_NONSTRICT: Kind.AOTI,
    Path.AOTI_CPP_STRICT: Kind.AOTI_CPP,
    Path.AOTI_CPP_NONSTRICT: Kind.AOTI_CPP,
    Path.TRAIN_EAGER: Kind.TRAIN,
    Path.TRAIN_COMPILE_FULLGRAPH: Kind.TRAIN,
    Path.TRAIN_COMPILE_DEFAULT: Kind.TRAIN,
    Path.OPCHECK: Kind.SUBSYSTEM,
    Path.FLOP_COUNTER: Kind.SUBSYSTEM,
    Path.CPU_FALLBACK: Kind.SUBSYSTEM,
    Path.TENSOR_SUBCLASS: Kind.SUBSYSTEM,
}

_TITLES = {
    Path.EAGER: "eager",
    Path.COMPILE_FULLGRAPH: "torch.compile(fullgraph=True)",
    Path.COMPILE_DEFAULT: "torch.compile (graph breaks allowed)",
    Path.COMPILE_DYNAMIC: "torch.compile(dynamic=True)",
    Path.EXPORT_STRICT: "torch.export(strict=True)",
    Path.EXPORT_NONSTRICT: "torch.export(strict=False)",
    Path.AOTI_STRICT: "AOTInductor (from strict export)",
    Path.AOTI_NONSTRICT: "AOTInductor (from non-strict export)",
    Path.AOTI_CPP_STRICT: "AOTInductor run from C++, no Python (strict export)",
    Path.AOTI_CPP_NONSTRICT: "AOTInductor run from C++, no Python (non-strict export)",
    Path.TRAIN_EAGER: "training, eager",
    Path.TRAIN_COMPILE_FULLGRAPH: "training, torch.compile(fullgraph=True)",
    Path.TRAIN_COMPILE_DEFAULT: "training, torch.compile",
    Path.OPCHECK: "torch.library.opcheck",
    Path.FLOP_COUNTER: "FlopCounterMode",
    Path.CPU_FALLBACK: "CPU fallback (CPU tensors)",
    Path.TENSOR_SUBCLASS: "tensor subclass (TwoTensor)",
}


class StageFailure(Exception):
    """An exception raised by PyTorch or Triton, attributed to the stage it happened in."""

    def __init__(self, stage: Stage, error: BaseException):
        super().__init__(f"{stage.value}: {type(error).__name__}: {error}")
        self.stage = stage
        self.error = error


class _Program(torch.nn.Module):
    """export needs a Module; it calls the wrapped callable and nothing else."""

    def __init__(self, fn: Callable[..., Any]):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs: Any) -> Any:
        return self.fn(*inputs)


def dynamic_batch(inputs: tuple[Any, ...], max_batch: int, batched: tuple[bool, ...] | None = None) -> tuple[Any, ...]:
    """Dim 0 of every batched tensor input is one dynamic batch dimension (forward takes them as *inputs)."""
    batch = torch.export.Dim("batch", min=1, max=max_batch)
    batched = batched or (True,) * len(inputs)
    return (tuple({0: batch} if isinstance(x, torch.Tensor) and b else None for x, b in zip(inputs, batched)),)


def build(
    path: Path,
    fn: Callable[..., Any],
    example_inputs: tuple[Any, ...],
    max_batch: int,
    workdir: str,
    label: str,
    on_stage: Callable[[Stage], None],
    observer: GraphObserver | None = None,
    batched: tuple[bool, ...] | None = None,
    shared: Shared | None = None,
) -> Callable[..., Any]:
    """Turn `fn` into what runs on this path, doing every ahead-of-time step now.

    Raises StageFailure naming the stage that failed. Compile paths compile lazily, on the
    first call, so their first call happens here too.
    """
    kind = path.kind
    if kind in (Kind.EAGER, Kind.SUBSYSTEM) or (kind is Kind.TRAIN and path.compile_options is None):
        return fn

    if kind in (Kind.COMPILE, Kind.TRAIN):
        options = path.compile_options
        assert options is not None
        compiled = torch.compile(fn, **options)
        on_stage(Stage.COMPILE)
        call(compiled, example_inputs)
        return compiled

    def export() -> torch.export.ExportedProgram:
        on_stage(Stage.EXPORT)
        try:
            exported = torch.export.export(
                _Program(fn), example_inputs, dynamic_shapes=dynamic_batch(example_inputs, max_batch, batched), strict=path.strict
            )
        except Exception as exc:
            raise StageFailure(Stage.EXPORT, exc) from exc
        if observer is not None:
            observer.record(exported.graph)
        return exported

    def package() -> str:
        exported = export()
        on_stage(Stage.AOT_COMPILE)
        try:
            return torch._inductor.aoti_compile_and_package(exported, package_path=os.path.join(workdir, f"{label}.pt2"))
        except Exception as exc:
            raise StageFailure(Stage.AOT_COMPILE, exc) from exc

    if kind is Kind.EXPORT:
        return export().module()
    if kind is Kind.AOTI_CPP:
        on_stage(Stage.CPP_BUILD)  # first: without a runner, building the package would be wasted
        try:
            runner = cpp_runtime.executable(shared.caches, shared.packages) if shared else cpp_runtime.executable(workdir, workdir)
        except cpp_runtime.BuildFailure as exc:
            raise StageFailure(Stage.CPP_BUILD, exc) from exc
    built = _shared_package(package, shared, observer) if shared else package()
    on_stage(Stage.AOT_LOAD)
    try:
        if kind is Kind.AOTI_CPP:
            device = next(str(x.device) for x in example_inputs if isinstance(x, torch.Tensor))
            return cpp_runtime.CppPackage(runner, built, device, workdir)
        return torch._inductor.aoti_load_package(built)
    except Exception as exc:
        raise StageFailure(Stage.AOT_LOAD, exc) from exc


@dataclasses.dataclass(frozen=True)
class Shared:
    """Where a run's processes share what they build: `packages`, fresh for every run, holds each
    AOTInductor package under `key` (case, style, export mode, dtype), so the Python and the C++ runtime
    cells build it once; `caches` (reused with --cache-dir) holds the C++ runner."""

    packages: str
    caches: str
    key: str


def _shared_package(make: Callable[[], str], shared: Shared, observer: GraphObserver | None) -> str:
    """The first cell of a key builds the package while the other waits; the other takes it, with the
    operators its graphs held. A failed build is not shared: each cell meets its own failure."""
    os.makedirs(shared.packages, exist_ok=True)
    package, targets = (os.path.join(shared.packages, shared.key + ext) for ext in (".pt2", ".targets.json"))
    with FileLock(os.path.join(shared.packages, shared.key + ".lock")):
        if not os.path.exists(package):
            built = make()
            with open(targets, "w") as f:
                json.dump(sorted(observer.targets) if observer else [], f)
            shutil.copyfile(built, package + ".part")
            os.replace(package + ".part", package)  # whole or absent, even if this process dies
        elif observer is not None:
            with open(targets) as f:
                observer.targets.update(json.load(f))
    return package


def call(artifact: Callable[..., Any], inputs: tuple[Any, ...]) -> Any:
    """Run an artifact; on a compiled call, a Dynamo/Inductor exception is a compile failure."""
    from harness.outcome import compile_stage_exception_types

    try:
        result = artifact(*inputs)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return result
    except Exception as exc:
        # A kernel that faulted before a Python error was raised is what went wrong first; unchecked, its
        # CUDA error would surface in whichever call came next, and the outcome would depend on timing.
        fault = _pending_device_fault() or exc
        is_compile = isinstance(fault, compile_stage_exception_types())
        raise StageFailure(Stage.COMPILE if is_compile else Stage.RUN, fault) from fault


def _pending_device_fault() -> BaseException | None:
    if not torch.cuda.is_available():
        return None
    try:
        torch.cuda.synchronize()
    except Exception as fault:  # an illegal address, a device-side assert: the context is now unusable
        return fault
    return None


def _target_name(target: Any) -> str:
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    name = target.name() if callable(getattr(target, "name", None)) else getattr(target, "__name__", target)
    return str(name)


class GraphObserver:
    """Records the operators in the graphs a path produced, to tell from the artifact itself (not from
    the style's name) whether the compiler traced into the Triton kernel or called an opaque operator."""

    def __init__(self) -> None:
        self.targets: set[str] = set()

    def record(self, graph: torch.fx.Graph) -> None:
        for node in graph.nodes:
            if node.op == "call_function":
                self.targets.add(_target_name(node.target))
                if "auto_functionalized" in _target_name(node.target) and node.args:
                    self.targets.add(_target_name(node.args[0]))  # a mutating operator, functionalized

    def verdict(self, op_namespace: str) -> str | None:
        if not self.targets:
            return None
        if any("triton_kernel_wrapper" in t for t in self.targets):
            return "traced"
        if any(t.startswith(f"{op_namespace}::") or t.startswith(f"{op_namespace}.") for t in self.targets):
            return "opaque"
        return "absent"

    def inductor_pass(self) -> Any:
        from torch._inductor.custom_graph_pass import CustomGraphPass

        observer = self

        class Observe(CustomGraphPass):
            def __call__(self, graph: torch.fx.Graph) -> None:
                observer.record(graph)

            def uuid(self) -> None:  # no cache key: every compile runs the pass, so every graph is seen
                return None

        return Observe()
