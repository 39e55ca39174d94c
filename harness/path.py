"""Compile paths (the chart's rows): how a wrapped callable is turned into something that runs."""

from __future__ import annotations

import enum
import os
from typing import Any, Callable

import torch

from harness.outcome import Stage


class Kind(str, enum.Enum):
    EAGER = "eager"
    COMPILE = "compile"
    EXPORT = "export"
    AOTI = "aoti"


class Path(str, enum.Enum):
    EAGER = "eager"
    COMPILE_FULLGRAPH = "compile_fullgraph"
    COMPILE_DEFAULT = "compile_default"
    COMPILE_DYNAMIC = "compile_dynamic"
    EXPORT_STRICT = "export_strict"
    EXPORT_NONSTRICT = "export_nonstrict"
    AOTI_STRICT = "aoti_strict"
    AOTI_NONSTRICT = "aoti_nonstrict"

    @property
    def kind(self) -> Kind:
        return _KINDS[self]

    @property
    def title(self) -> str:
        return _TITLES[self]

    @property
    def strict(self) -> bool:
        return self in (Path.EXPORT_STRICT, Path.AOTI_STRICT)

    @property
    def timeout_s(self) -> float:
        """Default limit for one cell; AOTInductor builds C++, so it gets the most."""
        return {Kind.EAGER: 300.0, Kind.COMPILE: 600.0, Kind.EXPORT: 600.0, Kind.AOTI: 900.0}[self.kind]


_KINDS = {
    Path.EAGER: Kind.EAGER,
    Path.COMPILE_FULLGRAPH: Kind.COMPILE,
    Path.COMPILE_DEFAULT: Kind.COMPILE,
    Path.COMPILE_DYNAMIC: Kind.COMPILE,
    Path.EXPORT_STRICT: Kind.EXPORT,
    Path.EXPORT_NONSTRICT: Kind.EXPORT,
    Path.AOTI_STRICT: Kind.AOTI,
    Path.AOTI_NONSTRICT: Kind.AOTI,
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


def dynamic_batch(inputs: tuple[Any, ...], max_batch: int) -> tuple[Any, ...]:
    """Dim 0 of every tensor input is one dynamic batch dimension (forward takes them as *inputs)."""
    batch = torch.export.Dim("batch", min=1, max=max_batch)
    return (tuple({0: batch} if isinstance(x, torch.Tensor) else None for x in inputs),)


def build(
    path: Path,
    fn: Callable[..., Any],
    example_inputs: tuple[Any, ...],
    max_batch: int,
    workdir: str,
    label: str,
    on_stage: Callable[[Stage], None],
) -> Callable[..., Any]:
    """Turn `fn` into what runs on this path, doing every ahead-of-time step now.

    Raises StageFailure naming the stage that failed. Compile paths compile lazily, on the
    first call, so their first call happens here too.
    """
    kind = path.kind
    if kind is Kind.EAGER:
        return fn

    if kind is Kind.COMPILE:
        compiled = torch.compile(
            fn,
            fullgraph=path is Path.COMPILE_FULLGRAPH,
            dynamic=True if path is Path.COMPILE_DYNAMIC else None,
        )
        on_stage(Stage.COMPILE)
        call(compiled, example_inputs)
        return compiled

    on_stage(Stage.EXPORT)
    try:
        exported = torch.export.export(
            _Program(fn),
            example_inputs,
            dynamic_shapes=dynamic_batch(example_inputs, max_batch),
            strict=path.strict,
        )
    except Exception as exc:
        raise StageFailure(Stage.EXPORT, exc) from exc
    if kind is Kind.EXPORT:
        return exported.module()

    on_stage(Stage.AOT_COMPILE)
    package = os.path.join(workdir, f"{label}.pt2")
    try:
        package = torch._inductor.aoti_compile_and_package(exported, package_path=package)
    except Exception as exc:
        raise StageFailure(Stage.AOT_COMPILE, exc) from exc
    on_stage(Stage.AOT_LOAD)
    try:
        return torch._inductor.aoti_load_package(package)
    except Exception as exc:
        raise StageFailure(Stage.AOT_LOAD, exc) from exc


def call(artifact: Callable[..., Any], inputs: tuple[Any, ...]) -> Any:
    """Run an artifact; on a compiled call, a Dynamo/Inductor exception is a compile failure."""
    from harness.outcome import compile_stage_exception_types

    try:
        result = artifact(*inputs)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return result
    except Exception as exc:
        is_compile = isinstance(exc, compile_stage_exception_types())
        raise StageFailure(Stage.COMPILE if is_compile else Stage.RUN, exc) from exc
