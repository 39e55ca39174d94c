"""Builders: how each kind of row turns a wrapped callable into what runs on it, doing every
ahead-of-time step now. One builder per `Kind` (harness.rows); a row of a new kind needs one here.

A builder announces each stage it enters through `Build.stage`, which also turns whatever PyTorch raises
inside into a failure at that stage (harness.execute maps foreign exceptions, in one place).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from typing import Any, Callable, ContextManager

import torch
from filelock import FileLock

from harness import cpp_runtime
from harness.observer import GraphObserver
from harness.outcome import Stage
from harness.rows import Kind, Path

Artifact = Callable[..., Any]


@dataclasses.dataclass(frozen=True)
class Shared:
    """Where a run's processes share what they build: `packages`, fresh for every run, holds each
    AOTInductor package under `key` (Cell.package_key), so the Python and the C++ runtime cells build it
    once; `caches` (reused with --cache-dir) holds the C++ runner."""

    packages: str
    caches: str
    key: str


@dataclasses.dataclass(frozen=True)
class Build:
    """What a builder is given: the callable, the example inputs it traces with, and the cell's means."""

    path: Path
    fn: Artifact
    inputs: tuple[Any, ...]
    max_batch: int
    batched: tuple[bool, ...]
    workdir: str
    label: str  # names the cell's files (its package)
    observer: GraphObserver
    shared: Shared | None
    stage: Callable[[Stage], ContextManager[None]]  # enter a stage: announced, its failures attributed to it
    call: Callable[[Artifact, tuple[Any, ...]], Any]  # run an artifact once, as the checks do


class _Program(torch.nn.Module):
    """export needs a Module; it calls the wrapped callable and nothing else."""

    def __init__(self, fn: Artifact):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs: Any) -> Any:
        return self.fn(*inputs)


def dynamic_batch(inputs: tuple[Any, ...], max_batch: int, batched: tuple[bool, ...] | None = None) -> tuple[Any, ...]:
    """Dim 0 of every batched tensor input is one dynamic batch dimension (forward takes them as *inputs)."""
    batch = torch.export.Dim("batch", min=1, max=max_batch)
    batched = batched or (True,) * len(inputs)
    return (tuple({0: batch} if isinstance(x, torch.Tensor) and b else None for x, b in zip(inputs, batched)),)


def as_is(build: Build) -> Artifact:
    """Eager rows, eager training and the subsystems run the callable itself."""
    return build.fn


def compiled(build: Build) -> Artifact:
    """torch.compile with the row's options; it compiles lazily, on the first call, so that call is made here."""
    options = build.path.spec.compile_options
    if options is None:  # training without a compiler
        return build.fn
    artifact = torch.compile(build.fn, **options)
    with build.stage(Stage.COMPILE):
        build.call(artifact, build.inputs)
    return artifact


def _export(build: Build) -> torch.export.ExportedProgram:
    with build.stage(Stage.EXPORT):
        exported = torch.export.export(_Program(build.fn), build.inputs, strict=bool(build.path.spec.strict),
                                       dynamic_shapes=dynamic_batch(build.inputs, build.max_batch, build.batched))
    build.observer.record(exported.graph)
    return exported


def exported(build: Build) -> Artifact:
    return _export(build).module()


def _package(build: Build) -> str:
    """The AOTInductor package: this cell's own, or the one its twin on the other runtime built in this run."""

    def make() -> str:
        exported = _export(build)
        with build.stage(Stage.AOT_COMPILE):
            return torch._inductor.aoti_compile_and_package(exported, package_path=os.path.join(build.workdir, f"{build.label}.pt2"))

    return _shared_package(make, build.shared, build.observer) if build.shared else make()


def aoti_python(build: Build) -> Artifact:
    package = _package(build)
    with build.stage(Stage.AOT_LOAD):
        return torch._inductor.aoti_load_package(package)


def aoti_cpp(build: Build) -> Artifact:
    with build.stage(Stage.CPP_BUILD):  # first: without a runner, building the package would be wasted
        shared = build.shared
        runner = cpp_runtime.executable(shared.caches, shared.packages) if shared else cpp_runtime.executable(build.workdir, build.workdir)
    package = _package(build)
    with build.stage(Stage.AOT_LOAD):
        device = next(str(x.device) for x in build.inputs if isinstance(x, torch.Tensor))
        return cpp_runtime.CppPackage(runner, package, device, build.workdir)


BUILDERS: dict[Kind, Callable[[Build], Artifact]] = {
    Kind.EAGER: as_is,
    Kind.SUBSYSTEM: as_is,
    Kind.COMPILE: compiled,
    Kind.TRAIN: compiled,
    Kind.EXPORT: exported,
    Kind.AOTI: aoti_python,
    Kind.AOTI_CPP: aoti_cpp,
}


def build(request: Build) -> Artifact:
    """What runs on the request's row. Raises StageFailure (through `stage`) naming the stage that failed."""
    return BUILDERS[request.path.spec.kind](request)


def _shared_package(make: Callable[[], str], shared: Shared, observer: GraphObserver) -> str:
    """The first cell of a key builds the package while the other waits; the other takes it, with the
    operators its graphs held. A failed build is not shared: each cell meets its own failure."""
    os.makedirs(shared.packages, exist_ok=True)
    package, targets = (os.path.join(shared.packages, shared.key + ext) for ext in (".pt2", ".targets.json"))
    with FileLock(os.path.join(shared.packages, shared.key + ".lock")):
        if not os.path.exists(package):
            built = make()
            with open(targets, "w") as f:
                json.dump(sorted(observer.targets), f)
            shutil.copyfile(built, package + ".part")
            os.replace(package + ".part", package)  # whole or absent, even if this process dies
        else:
            with open(targets) as f:
                observer.targets.update(json.load(f))
    return package


