"""Silent degradations: what a passing cell lost without an error. Read off what PyTorch made during the cell
(the code Inductor generated, its mutation analysis, its CUDA graph decisions), never off the style's name.

- A float scalar that reaches a compiled user kernel as fp64: eager Triton passes a Python float as fp32, so
  the compiled kernel computes in double precision (on most GPUs many times slower) where eager did not.
- Mutation analysis: the tensors Triton/Inductor's analysis marks as written by a user kernel, against the
  tensors the kernel changes when launched eagerly. An extra entry costs a clone and blocks fusion; a
  missing one is a correctness risk (the compiler may reorder or reuse what the kernel writes).
- CUDA graphs skipped under mode="reduce-overhead", with Inductor's reason.
"""

from __future__ import annotations

import ast
import contextlib
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch
from torch._dynamo.utils import counters
from torch._inductor.graph import GraphLowering

from harness.authoring.case import kernel_name
from harness.execution.wrapping import launch_with


@dataclass
class Watch:
    """What one cell's compiles and launches showed; `degradations()` says what was lost."""

    kernels: tuple[str, ...]  # the case's kernel names
    output_code: list[str] = field(default_factory=list)  # every module Inductor generated or loaded from its cache
    marked_mutated: dict[str, set[str]] = field(default_factory=dict)  # kernel -> arguments the analysis marks written
    written: dict[str, set[str]] = field(default_factory=dict)  # kernel -> tensor arguments an eager launch changed
    tensor_arguments: dict[str, set[str]] = field(default_factory=dict)  # kernel -> its tensor arguments in that launch
    cudagraph_skips: list[str] = field(default_factory=list)
    cudagraph_skip_count: int = 0

    def degradations(self) -> list[str]:
        found = []
        for kernel, scalars in sorted(self.fp64_scalars().items()):
            found.append(f"{kernel}: float scalar{'s' if len(scalars) > 1 else ''} {', '.join(sorted(scalars))} compiled as fp64 "
                         "(eager Triton passes a Python float as fp32)")
        for kernel in sorted(set(self.marked_mutated) & set(self.written)):
            # Only tensors the eager launch passed as such are compared: a TMA descriptor's writes land in a
            # tensor the launch never sees.
            seen = self.tensor_arguments.get(kernel, set())
            extra = (self.marked_mutated[kernel] & seen) - self.written[kernel]
            missing = self.written[kernel] - self.marked_mutated[kernel]
            if extra:
                found.append(f"{kernel}: mutation analysis marks {', '.join(sorted(extra))} as written, which the kernel does not "
                             "write (an extra clone, no fusion)")
            if missing:
                found.append(f"{kernel}: mutation analysis misses {', '.join(sorted(missing))}, which the kernel writes "
                             "(a correctness risk)")
        if self.cudagraph_skip_count:
            reasons = "; ".join(self.cudagraph_skips) or "no reason logged"
            found.append(f"CUDA graphs skipped ({self.cudagraph_skip_count}x): {reasons}")
        return found

    def fp64_scalars(self) -> dict[str, set[str]]:
        """Per case kernel, the arguments its compiled launcher's signature gives as fp64."""
        found: dict[str, set[str]] = {}
        for code in self.output_code:
            for name, signature in _user_kernel_signatures(code, self.kernels):
                doubles = {arg for arg, kind in signature.items() if kind == "fp64"}
                if doubles:
                    found.setdefault(name, set()).update(doubles)
        return found


_SIGNATURE = re.compile(r"'signature':\s*(\{[^{}]*\})")


def _user_kernel_signatures(code: str, kernels: tuple[str, ...]) -> Iterator[tuple[str, dict[str, str]]]:
    """(kernel, signature) for each case kernel in generated code: Inductor emits a user kernel's source as
    `def <name>(` after its `triton_meta={'signature': {...}, ...}` decorator arguments."""
    for match in _SIGNATURE.finditer(code):
        rest = code[match.end():match.end() + 4000]
        defined = re.search(r"\ndef\s+(\w+)\s*\(", rest)
        if not defined or defined.group(1) not in kernels:
            continue
        try:
            signature = ast.literal_eval(match.group(1))
        except (ValueError, SyntaxError):
            continue
        if isinstance(signature, dict):
            yield defined.group(1), {str(k): str(v) for k, v in signature.items()}


@contextlib.contextmanager
def watching(kernels: tuple[Any, ...]) -> Iterator[Watch]:
    """Record, for the duration of a cell, the generated code, the mutation analysis and CUDA graph skips."""
    watch = Watch(tuple(kernel_name(k) for k in kernels))
    with contextlib.ExitStack() as stack:
        stack.enter_context(_output_code(watch.output_code.append))
        stack.enter_context(_mutation_analysis(watch.marked_mutated))
        stack.enter_context(_cudagraph_skips(watch))
        yield watch


@contextlib.contextmanager
def _output_code(keep: Callable[[str], None]) -> Iterator[None]:
    """Inductor hands every module it generates, or loads from its cache, to GraphLowering.save_output_code."""
    before = GraphLowering.save_output_code

    def save(code: str) -> None:
        keep(code)
        if before is not None:
            before(code)

    GraphLowering.save_output_code = save  # type: ignore[assignment]
    try:
        yield
    finally:
        GraphLowering.save_output_code = before  # type: ignore[assignment]


@contextlib.contextmanager
def _mutation_analysis(marked: dict[str, set[str]]) -> Iterator[None]:
    """The tensors the analysis says a user kernel writes, as functionalization asks for them."""
    try:
        from torch._higher_order_ops import triton_kernel_wrap as wrap  # inside: absent from some torch versions
    except ImportError:
        yield
        return
    analysed = getattr(wrap, "get_mutated_tensors", None)
    if analysed is None:  # another torch: the analysis is not readable here, and nothing is claimed
        yield
        return

    def recorded(kernel_idx: int, *args: Any, **kwargs: Any) -> list[str]:
        mutated = analysed(kernel_idx, *args, **kwargs)
        try:
            name = kernel_name(wrap.kernel_side_table.get_kernel(kernel_idx))
        except (TypeError, KeyError, AttributeError):
            name = f"kernel {kernel_idx}"
        marked.setdefault(name, set()).update(mutated)
        return mutated

    wrap.get_mutated_tensors = recorded
    try:
        yield
    finally:
        wrap.get_mutated_tensors = analysed


@contextlib.contextmanager
def _cudagraph_skips(watch: Watch) -> Iterator[None]:
    """Inductor logs each skip on its cudagraphs artifact logger and counts it."""
    try:
        from torch._inductor import cudagraph_utils  # inside: absent from some torch versions

        # Newer torch logs skips on the cudagraphs artifact logger; older (2.8 and before) on perf_hint_log, beside other hints.
        logger: logging.Logger | None = getattr(cudagraph_utils, "cudagraphs_log", None) or cudagraph_utils.perf_hint_log
    except (ImportError, AttributeError):
        logger = None

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            # The first line, without the stack trace Inductor appends ("Found from: ..."), once per reason.
            message = record.getMessage().strip()
            if not message.startswith("skipping cudagraphs"):
                return  # another perf hint, on the shared logger of older torch
            message = message.removeprefix("skipping cudagraphs due to ").strip()
            reason = re.sub(r"\.?\s*Found from\s*:.*$", "", message.splitlines()[0] if message else "").strip()[:200]
            if reason and reason not in watch.cudagraph_skips and len(watch.cudagraph_skips) < 3:
                watch.cudagraph_skips.append(reason)

    before = counters["inductor"]["cudagraph_skips"]
    handler = Keep(level=logging.WARNING)
    level = logger.level if logger else None
    disabled = logger.disabled if logger else None
    if logger is not None:
        logger.addHandler(handler)
        logger.disabled = False
        if logger.level == logging.NOTSET or logger.level > logging.WARNING:
            logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        watch.cudagraph_skip_count = counters["inductor"]["cudagraph_skips"] - before
        if logger is not None:
            logger.removeHandler(handler)
            logger.setLevel(level)  # type: ignore[arg-type]
            logger.disabled = bool(disabled)


def record_writes(watch: Watch, launch: Callable[..., Any], kernels: tuple[Any, ...], inputs: tuple[Any, ...]) -> None:
    """Per kernel, the tensor arguments whose contents one eager launch of it changed (watch.written), among its
    tensor arguments (watch.tensor_arguments): the launcher runs with each kernel's launches intercepted, every
    tensor argument copied before and compared after."""
    recorders = {kernel_name(k): _Recorder(k, kernel_name(k), watch) for k in kernels}
    with torch.no_grad():
        launch_with(launch, kernels, recorders, *tuple(x.clone() if isinstance(x, torch.Tensor) else x for x in inputs))


class _Recorder:
    """Stands for a kernel in the launcher's namespace: `k.name[grid](...)` launches the kernel and records
    which of its tensor arguments changed."""

    def __init__(self, kernel: Any, name: str, watch: Watch):
        self.kernel, self.name, self.watch = kernel, name, watch

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        launcher = self.kernel[grid]

        def launch(*args: Any, **kwargs: Any) -> Any:
            names = _parameter_names(self.kernel)
            bound = {**dict(zip(names, args)), **kwargs}
            tensors = {n: v for n, v in bound.items() if isinstance(v, torch.Tensor)}
            before = {n: v.clone() for n, v in tensors.items()}
            result = launcher(*args, **kwargs)
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            changed = {n for n, v in tensors.items() if not _same(before[n], v)}
            self.watch.written.setdefault(self.name, set()).update(changed)
            self.watch.tensor_arguments.setdefault(self.name, set()).update(tensors)
            return result

        return launch

    def __getattr__(self, name: str) -> Any:
        return getattr(self.kernel, name)


def _parameter_names(kernel: Any) -> list[str]:
    inner = kernel
    while not hasattr(inner, "arg_names") and hasattr(inner, "fn"):
        inner = inner.fn
    return list(getattr(inner, "arg_names", []))


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and bool(torch.equal(a, b) or (a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                                                          and torch.equal(a.nan_to_num(), b.nan_to_num())))
