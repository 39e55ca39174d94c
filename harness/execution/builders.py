"""Builders: how each kind of row turns a wrapped callable into what runs on it, doing every
ahead-of-time step now. One builder per `Kind` (harness.model.rows); a row of a new kind needs one here.

A builder announces each stage it enters through `Build.stage`, which also turns whatever PyTorch raises
inside into a failure at that stage (harness.execution.execute maps foreign exceptions, in one place).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import sys
import time
from typing import Any, Callable, ContextManager, Mapping

import torch
from filelock import FileLock
from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

from harness.execution import cpp_runtime, saved
from harness.execution.observer import GraphObserver
from harness.execution.paths import aoti, compiling, export, saving
from harness.execution.warm_cache import EditedInNewProcess
from harness.model.outcome import WAITED_FOR_PACKAGE, HarnessFault, Stage
from harness.model.rows import Kind, Row
from harness.processes.helper_process import CellProcesses

Artifact = Callable[..., Any]


@dataclasses.dataclass(frozen=True)
class Shared:
    """Where a run's processes share what they build: `packages`, fresh for every run, holds each
    AOTInductor package under `key` (Cell.package_key) and the digest of the exported program it was built
    from, so each program is compiled once a run: by the first of the Python and C++ runtime cells, and by
    one export mode for both where strict and non-strict export give the same program. `caches` (reused
    with --cache-dir) holds the C++ runner."""

    packages: str
    caches: str
    key: str


@dataclasses.dataclass(frozen=True)
class Build:
    """What a builder is given: the callable, the example inputs it traces with, and the cell's means."""

    row: Row
    fn: Artifact
    inputs: tuple[Any, ...]
    max_batch: int
    min_batch: int
    batched: tuple[bool, ...]
    dims: Mapping[int, int]  # dynamic dims besides the batch, with their largest sizes
    workdir: str
    label: str  # names the cell's files (its package)
    observer: GraphObserver
    shared: Shared | None
    stage: Callable[[Stage], ContextManager[None]]  # enter a stage: announced, its failures attributed to it
    call: Callable[[Artifact, tuple[Any, ...]], Any]  # run an artifact once, as the checks do
    style: Style | None = None  # the case and style a new process builds again (the warm-cache row, the rows that save)
    spent: Callable[[str, float], None] = lambda part, seconds: None  # seconds of the cell's work outside any stage (waiting)
    warnings: list[str] = dataclasses.field(default_factory=list)  # the cell's (CellResult.warnings): a shared build's join them
    # The processes the cell's builds share: the one that serves its packages, one per dtype.
    processes: CellProcesses = dataclasses.field(default_factory=CellProcesses)


@dataclasses.dataclass(frozen=True)
class Style:
    case: Any  # the Case a new process finds (and, on the warm-cache row, whose kernels it edits)
    wrapping: str  # the style the new process builds


def as_is(build: Build) -> Artifact:
    """Eager rows, eager training and the subsystems run the callable itself."""
    return build.fn


def compiled(build: Build) -> Artifact:
    """torch.compile with the row's options (harness.execution.paths.compiling, which the cell's reproducer prints); it
    compiles lazily, on the first call, so that call is made here."""
    spec = build.row.spec
    if spec.compile_options is None:  # training without a compiler
        return build.fn
    artifact = compiling.compiled(build.fn, spec.compile_options, settings=spec.dynamo_config, marked_unbacked=spec.unbacked,
                                     batched=build.batched, inference_mode=spec.inference_mode)
    with build.stage(Stage.COMPILE):
        build.call(artifact, build.inputs)
    return artifact


def _named(build: Build) -> Callable[[str], ContextManager[None]]:
    """The cell's stages as a path module names them (harness.execution.paths): `stage("export")`."""
    return lambda name: build.stage(Stage(name))


def _export(build: Build) -> torch.export.ExportedProgram:
    """The export path (harness.execution.paths.export, which the cell's reproducer prints), its stage the cell's."""
    exported = export.export(build.fn, build.inputs, bool(build.row.spec.strict), build.max_batch, build.batched, build.dims,
                                  build.min_batch, stage=_named(build))
    build.observer.record(exported.graph)
    return exported


def exported(build: Build) -> Artifact:
    return _export(build).module()


def _package(build: Build) -> str:
    """The AOTInductor package of the cell's exported program: compiled here, or taken from the cell of this
    run that already compiled the same program (harness.execution.builders.Shared)."""
    exported = _export(build)

    def make() -> str:
        return aoti.package(exported, os.path.join(build.workdir, f"{build.label}.pt2"), stage=_named(build))

    if build.shared is None:
        return make()
    return _shared_package(make, build.shared, f"{build.shared.key}-{program_digest(exported)}", build.observer, build.spent,
                           build.warnings)


def program_digest(exported: torch.export.ExportedProgram) -> str:
    """What AOTInductor compiles, as a digest: every node (op, target, arguments, and the dtype, shape,
    strides and device of what it makes), the signature, the dynamic ranges, and the lifted tensors' bytes.
    A user-defined Triton kernel's node names its kernel and constants by index into a table of this
    process; the digest takes what they point to instead, so equal digests mean equal programs across
    processes. Source locations are left out: strict and non-strict export record different ones."""
    def described(value: Any) -> str:
        if isinstance(value, torch.Tensor):
            return f"Tensor({value.dtype}, {tuple(value.shape)}, {value.stride()}, {value.device})"
        if isinstance(value, (list, tuple)):
            return f"{type(value).__name__}({', '.join(described(v) for v in value)})"
        return repr(value)

    def kwargs(node: torch.fx.Node) -> dict[str, Any]:
        resolved = dict(node.kwargs)
        if "kernel_idx" in resolved:
            resolved["kernel_idx"] = _kernel_identity(kernel_side_table.get_kernel(resolved["kernel_idx"]))
        if "constant_args_idx" in resolved:
            resolved["constant_args_idx"] = sorted((k, repr(v)) for k, v in kernel_side_table.get_constant_args(resolved["constant_args_idx"]).items())
        return resolved

    parts = []
    for node in exported.graph.nodes:
        parts.append(repr((node.op, node.name, str(node.target), repr(node.args), repr(kwargs(node)), described(node.meta.get("val")))))
    parts.append(str(exported.graph_signature))
    parts.append(repr(sorted((str(k), str(v)) for k, v in exported.range_constraints.items())))
    parts.append(repr([(e.fqn, str(e.signature and e.signature.in_spec), str(e.signature and e.signature.out_spec))
                       for e in exported.module_call_graph]))
    lifted = sorted({**exported.state_dict, **exported.constants}.items())
    parts.extend(name + described(value) for name, value in lifted)
    # Sizes are symbols numbered by the process's count so far (s6 in one export, s21 in the next): number
    # them by first appearance instead.
    numbering: dict[str, str] = {}
    text = re.sub(r"\b[su]\d+\b", lambda m: numbering.setdefault(m.group(), f"{m.group()[0]}#{len(numbering)}"), "\n".join(parts))
    digest = hashlib.sha256(text.encode())
    for _, value in lifted:
        if isinstance(value, torch.Tensor):
            digest.update(value.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:16]


def aoti_python(build: Build) -> Artifact:
    return aoti.load(_package(build), stage=_named(build))


def aoti_cpp(build: Build) -> Artifact:
    with build.stage(Stage.CPP_BUILD):  # first: without a runner, building the package would be wasted
        shared = build.shared
        run_dir = shared.packages if shared else build.workdir
        try:
            runner = cpp_runtime.executable(cpp_runtime.built_runners(shared.caches if shared else build.workdir), run_dir)
        except Exception as exc:  # the runner is the harness's own program, not the package the row checks: its fault
            raise HarnessFault(Stage.CPP_BUILD, exc) from exc
    package = _package(build)
    with build.stage(Stage.AOT_LOAD):
        device = next(str(x.device) for x in build.inputs if isinstance(x, torch.Tensor))
        return cpp_runtime.PackageProcess([runner, package, device], device, build.workdir)


SERVE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "aoti_serve.py")


def aoti_fresh(build: Build) -> Artifact:
    """The package loaded and run by a new Python process that imports torch and nothing else (no case, no
    harness): what a serving process that loads the .pt2 has. The cell's packages (one per dtype) are loaded
    by one such process, started at its first package, and again only if it died."""
    package = _package(build)
    with build.stage(Stage.AOT_LOAD):
        server = build.processes.package_server
        if not isinstance(server, cpp_runtime.PackageProcess) or not server.alive():
            device = next(str(x.device) for x in build.inputs if isinstance(x, torch.Tensor))
            isolated = ["-P"] if sys.version_info >= (3, 11) else []  # the script's folder (harness/) stays off sys.path
            server = build.processes.package_server = cpp_runtime.PackageProcess(
                [sys.executable, *isolated, SERVE_SCRIPT, device], device, build.workdir, who="the fresh Python process", ready="ready")
        return server.load(package)


def warm_cache(build: Build) -> Artifact:
    """Compile here with the on-disk caches as a user's process does (the harness's own graph pass, which
    turns Inductor's cache off, is left out), then answer each call from a new process that compiles the
    edited kernel on the same caches (harness.execution.warm_cache). Every kernel is edited before the compile,
    which is not spent on a kernel the row cannot edit; the new process loads the edit after it. What the row
    cannot edit or load raises HarnessFault: the harness's, not the style's."""
    assert build.style is not None
    options = dict(build.row.spec.compile_options or {})
    with build.stage(Stage.WRAP):
        edited = EditedInNewProcess(build.style.case, build.style.wrapping, options, build.workdir, build.processes)
    with torch._inductor.config.patch(post_grad_custom_post_pass=None):
        artifact = compiling.compiled(build.fn, options)
        with build.stage(Stage.COMPILE):
            build.call(artifact, build.inputs)
    with build.stage(Stage.WRAP):
        edited.load()
    return edited


def export_loaded(build: Build) -> Artifact:
    """The exported program saved (torch.export.save), then loaded and run by a new process that imports the case
    (harness.execution.paths.saving, which the cell's reproducer prints)."""
    exported = _export(build)
    path = os.path.join(build.workdir, f"{build.label}.pt2")
    saving.save_program(exported, path, stage=_named(build))
    return _loaded_in_new_process(build, saved.PROGRAM, path)


def cache_artifacts(build: Build) -> Artifact:
    """Compiled here with the on-disk caches on (as warm_cache, without the harness's graph pass, which turns Inductor's
    cache off), the cache artifacts saved; a new process with empty caches loads them and compiles the style again."""
    options = dict(build.row.spec.compile_options or {})
    cache = getattr(torch.compiler, "_cache", None)
    if cache is not None and hasattr(cache, "CacheArtifactManager"):
        cache.CacheArtifactManager.clear()  # only this cell's compile: not what earlier cells in this process compiled
    with torch._inductor.config.patch(post_grad_custom_post_pass=None):
        artifact = compiling.compiled(build.fn, options)
        with build.stage(Stage.COMPILE):
            build.call(artifact, build.inputs)
    path = os.path.join(build.workdir, f"{build.label}.cache-artifacts")
    saving.save_caches(path, stage=_named(build))
    return _loaded_in_new_process(build, saved.CACHES, path, options)


def precompiled(build: Build) -> Artifact:
    """torch.compile's aot_compile on the example inputs, the compiled function saved (save_compiled_function); a new
    process that imports the case builds the style and loads it (torch.compiler.load_compiled_function) in its globals."""
    path = os.path.join(build.workdir, f"{build.label}.precompiled")
    saving.precompile(build.fn, dict(build.row.spec.compile_options or {}), build.row.spec.dynamo_config, build.inputs, path,
                      stage=_named(build))
    return _loaded_in_new_process(build, saved.PRECOMPILED, path)


def _loaded_in_new_process(build: Build, task: str, path: str, options: Mapping[str, Any] | None = None) -> Artifact:
    assert build.style is not None
    artifact = saved.SavedInNewProcess(build.style.case, build.style.wrapping, task, path, build.workdir, build.processes, options)
    with build.stage(Stage.LOAD):
        artifact.load()
    return artifact


BUILDERS: dict[Kind, Callable[[Build], Artifact]] = {
    Kind.EAGER: as_is,
    Kind.SUBSYSTEM: as_is,
    Kind.COMPILE: compiled,
    Kind.TRAIN: compiled,
    Kind.EXPORT: exported,
    Kind.AOTI: aoti_python,
    Kind.AOTI_CPP: aoti_cpp,
    Kind.AOTI_FRESH: aoti_fresh,
    Kind.WARM_CACHE: warm_cache,
    Kind.EXPORT_LOAD: export_loaded,
    Kind.CACHE_ARTIFACTS: cache_artifacts,
    Kind.PRECOMPILE: precompiled,
}


def build(request: Build) -> Artifact:
    """What runs on the request's row. Raises StageFailure (through `stage`) naming the stage that failed."""
    return BUILDERS[request.row.spec.kind](request)


# A kernel's attributes that Triton fills the first time the kernel is launched or hashed in a process: the source's
# hash (JITFunction.cache_key, None until then), which the source itself already stands for. Taken, they made the same
# program digest differently in a process that had launched the kernel and in one that had not, and a package could be
# built twice for one program (on one H200, 9 of 33 pairs of strict export's Python and C++ cells built theirs twice).
_FILLED_ON_USE = frozenset({"hash"})


def _kernel_identity(kernel: Any) -> list[str]:
    """A Triton kernel as its source and its wrappers' settings (autotune configs and keys, heuristics' code),
    never an address: the same kernel in two processes gives the same list."""
    parts: list[str] = []
    while kernel is not None:
        parts.append(f"{type(kernel).__name__} {getattr(kernel, '__module__', '')}.{getattr(kernel, '__qualname__', '')}")
        parts.append(getattr(kernel, "src", "") or "")
        if hasattr(kernel, "__code__"):  # the Python function under the interpreter, which keeps no source
            parts.append(kernel.__code__.co_code.hex() + repr(kernel.__code__.co_consts))
        for name, value in sorted(vars(kernel).items()) if hasattr(kernel, "__dict__") else []:
            if name in _FILLED_ON_USE:
                continue
            if name == "configs":
                parts.append(repr([str(config) for config in value]))
            elif isinstance(value, dict) and all(callable(v) for v in value.values()):  # heuristics
                parts.append(repr(sorted((k, v.__code__.co_code.hex(), repr(v.__code__.co_consts)) for k, v in value.items()
                                         if hasattr(v, "__code__"))))
            elif isinstance(value, (str, int, float, bool)) or (
                    isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float, bool)) for v in value)):
                parts.append(f"{name}={value!r}")
        kernel = getattr(kernel, "fn", None)
    return parts


def _shared_package(make: Callable[[], str], shared: Shared, key: str, observer: GraphObserver,
                    spent: Callable[[str, float], None], warnings: list[str]) -> str:
    """The first cell of a program builds the package while the others wait; they take it, with the
    operators its graphs held and the warnings PyTorch logged while it was built (a mutation analysis that gave
    up is a finding of every cell that runs the package). A failed build is not shared: each cell meets its own
    failure."""
    os.makedirs(shared.packages, exist_ok=True)
    package, targets = (os.path.join(shared.packages, key + ext) for ext in (".pt2", ".targets.json"))
    asked = time.perf_counter()
    with FileLock(os.path.join(shared.packages, key + ".lock")):
        spent(WAITED_FOR_PACKAGE, time.perf_counter() - asked)
        if not os.path.exists(package):
            before = len(warnings)
            built = make()
            with open(targets, "w") as f:
                json.dump({"targets": sorted(observer.targets), "warnings": warnings[before:]}, f)
            shutil.copyfile(built, package + ".part")
            os.replace(package + ".part", package)  # whole or absent, even if this process dies
        else:
            with open(targets) as f:
                recorded = json.load(f)
            observer.targets.update(recorded["targets"])
            warnings += [w for w in recorded["warnings"] if w not in warnings]
    return package
