"""A case: one Triton kernel (or a few), its launcher, a plain PyTorch reference, and its inputs.

A case is data. The harness builds every wrapping style from the launcher and runs every
compile path on it; the case author never writes a style or a path by hand.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping

import torch
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from triton.runtime.autotuner import Autotuner
from triton.runtime.jit import KernelInterface

from harness.model.errors import CaseError, described

DTYPES: Mapping[str, torch.dtype] = MappingProxyType(
    {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
)


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float


# Same order as torch.testing's defaults, widened for kernels that accumulate in another order.
DEFAULT_TOLERANCES: Mapping[torch.dtype, Tolerance] = MappingProxyType(
    {
        torch.float32: Tolerance(atol=1e-5, rtol=1e-5),
        torch.float16: Tolerance(atol=1e-3, rtol=1e-3),
        torch.bfloat16: Tolerance(atol=1e-2, rtol=1.6e-2),
    }
)


@dataclass(frozen=True)
class Example:
    """One input drawn by hypothesis: the data comes from `seed`, so an example is reproducible."""

    dtype: torch.dtype
    shape: tuple[int, ...]
    seed: int
    scalars: tuple[tuple[str, Any], ...] = ()  # drawn values of the case's scalar inputs; () = its example_scalars
    absent: frozenset[str] = frozenset()  # optional tensor inputs given as None in this example

    def __str__(self) -> str:
        drawn = "".join(f" {name}={value!r}" for name, value in self.scalars)
        drawn += "".join(f" {name}=None" for name in sorted(self.absent))
        return f"{dtype_name(self.dtype)} shape={self.shape}{drawn} seed={self.seed}"


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def kernel_name(kernel: Any) -> str:
    """The Python name of a @triton.jit function, seen through autotune/heuristics wrappers."""
    if not isinstance(kernel, KernelInterface):
        raise TypeError(f"{kernel!r} is not a Triton kernel (@triton.jit, @triton.autotune or @triton.heuristics)")
    inner = kernel
    while not inspect.isfunction(inner) and hasattr(inner, "fn"):
        inner = inner.fn
    name = getattr(inner, "__name__", None)
    if not isinstance(name, str):
        raise TypeError(f"{kernel!r} is not a Triton kernel")
    return name


def resolved_signature(fn: Callable[..., Any]) -> inspect.Signature:
    """fn's signature with its annotations as types: a module with `from __future__ import annotations` has
    them as strings, which the schema inference, the Optional check and the autograd wrapping cannot read."""
    return inspect.signature(fn, eval_str=True)


def _is_optional_tensor(annotation: Any) -> bool:
    """Optional[torch.Tensor], Union[torch.Tensor, None] or torch.Tensor | None."""
    args = typing.get_args(annotation)
    return typing.get_origin(annotation) in (typing.Union, types.UnionType) and set(args) == {torch.Tensor, type(None)}


def _simplest(case: str, field: str, strategy: st.SearchStrategy[Any]) -> Any:
    """The simplest value a strategy gives (hypothesis' find, deterministic): a strategy hypothesis rejects
    raises here, as the case's problem, naming the field."""
    # Hypothesis generates the simplest example first: one example, no shrinking, about 20 ms.
    once = settings(database=None, derandomize=True, max_examples=1, phases=[Phase.generate], deadline=None,
                    suppress_health_check=list(HealthCheck))
    try:
        return find(strategy, lambda _: True, settings=once)
    except Exception as exc:  # noqa: BLE001 - whatever hypothesis says of the author's strategy
        raise CaseError(case, f"{field}: hypothesis cannot draw from {strategy!r}: {described(exc)}; "
                              "fix the strategy") from None


@dataclass(frozen=True)
class Backward:
    """The gradient of a case with one output.

    launch(k, grad, *inputs) returns the gradient of each tensor input (a tuple when there are several).
    With `kernels`, it calls them as `k.<kernel name>[grid](...)` and the harness wraps them for each
    style (their own triton_op for the triton_op style, as the tutorial's mysin/mycos); with none, it is
    plain PyTorch.
    """

    launch: Callable[..., Any]
    kernels: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Case:
    """A Triton kernel under test.

    launch(k, *inputs): calls the kernels as `k.<kernel name>[grid](...)` and allocates outputs with
        `k.empty_like` / `k.empty`, which the harness fills with NaN so an unwritten element fails.
        Every parameter after `k` is annotated, and the return is annotated; the harness infers the
        operator schema from them.
    reference(*inputs): the same computation in plain PyTorch (it also serves as the fake kernel).
    make_inputs(shape, dtype, device, generator): the positional inputs; dim 0 of every tensor is the
        batch, which export marks dynamic.
    shapes: a hypothesis strategy of shapes for the compile paths.
    example_shape: the shape export and AOTInductor trace with (batch at least 2); their checks
        vary only the batch, up to `max_batch` (at most 4096 in the checks; the rest of the range is
        exercised by the benchmark input).
    benchmark_batch: the batch of the input `--perf` times every path on, a realistic size (default
        `max_batch`; the input is `example_shape` with this batch, so exported artifacts can run it).
    scalars: the launcher's trailing int/float/bool parameters, by name, each with the hypothesis strategy
        its values come from (e.g. st.sampled_from([1, 2, 7]): Triton specialises an int argument equal
        to 1); make_inputs makes only the tensors before them.
    example_scalars: their values where a path traces once (export, AOTInductor, opcheck, --perf).
    unbatched: names of tensor inputs without a batch dimension (weights, biases): export keeps their
        shapes static instead of tying their dim 0 to the batch.
    dynamic_dims: dims of example_shape besides the batch that export marks dynamic too, each with its
        largest size ({1: 1024}); every batched tensor input with that dim shares one Dim, and the exported
        artifacts' checks draw it.
    requires(device): why this case cannot run on this device ("cuda" or "cpu"), or None; its cells are
        then skipped with that reason (e.g. a kernel that needs a Hopper GPU).
    mutates: names of inputs the launcher writes in place (declared as `mutates_args`).
    backward: how to differentiate it (training rows); None: the case has no gradient.
    flops: flops(*input shapes) -> int, registered with register_flop_formula on the operator styles.
    """

    # Every field has a default, so a case missing one still loads and check() can say which.
    name: str = ""
    kernels: tuple[Any, ...] = ()
    launch: Callable[..., Any] | None = None
    reference: Callable[..., Any] | None = None
    make_inputs: Callable[..., tuple[Any, ...]] | None = None
    shapes: st.SearchStrategy[tuple[int, ...]] | None = None
    example_shape: tuple[int, ...] = ()
    dtypes: tuple[torch.dtype, ...] = (torch.float32, torch.float16, torch.bfloat16)
    max_batch: int = 1024
    benchmark_batch: int | None = None
    tolerances: Mapping[torch.dtype, Tolerance] = field(default_factory=dict)
    scalars: Mapping[str, st.SearchStrategy[Any]] = field(default_factory=dict)
    example_scalars: Mapping[str, Any] = field(default_factory=dict)
    unbatched: frozenset[str] = frozenset()
    dynamic_dims: Mapping[int, int] = field(default_factory=dict)
    requires: Callable[[str], str | None] | None = None
    mutates: frozenset[str] = frozenset()
    backward: Backward | None = None
    flops: Callable[..., int] | None = None
    tags: frozenset[str] = frozenset()
    description: str = ""
    module: str = ""

    def check(self) -> None:
        """Raise CaseError naming this case, its first problem and the fix. The registry calls it, so one
        malformed case is left out and reported while its neighbours still run."""
        if not isinstance(self.name, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", self.name):
            raise CaseError(str(self.name), "name must be lower_snake_case letters, digits and '_'")
        for attr, what in (
            ("launch", "the launcher, launch(k, *inputs), that calls the kernels"),
            ("reference", "the same computation in plain PyTorch, reference(*inputs)"),
            ("make_inputs", "make_inputs(shape, dtype, device, generator) returning the launcher's inputs"),
            ("shapes", "a hypothesis strategy of input shapes, e.g. inputs.shapes(4096)"),
        ):
            if getattr(self, attr) is None:
                raise CaseError(self.name, f"no {attr}: give {attr}=, {what}")
        if not self.example_shape:
            raise CaseError(self.name, "no example_shape: give the shape export and AOTInductor trace with, e.g. (300,)")
        if not self.kernels:
            raise CaseError(self.name, "kernels is empty: list the @triton.jit kernels the launcher calls")
        for kernel in self.kernels:
            try:
                kernel_name(kernel)
            except TypeError as exc:
                raise CaseError(self.name, str(exc)) from None
        for attr in ("launch", "reference", "make_inputs"):
            if not callable(getattr(self, attr)):
                raise CaseError(self.name, f"{attr} must be a function")
        if not isinstance(self.shapes, st.SearchStrategy):
            raise CaseError(self.name, "shapes must be a hypothesis strategy of shape tuples")
        if len(self.example_shape) < 1 or self.example_shape[0] < 2:
            raise CaseError(self.name, "example_shape needs a batch (dim 0) of at least 2, or export specialises it")
        if self.benchmark_batch is not None and not 1 <= self.benchmark_batch <= self.max_batch:
            raise CaseError(self.name, f"benchmark_batch {self.benchmark_batch} must lie in 1..max_batch ({self.max_batch})")
        if not self.dtypes:
            raise CaseError(self.name, "dtypes is empty")
        for dim, largest in self.dynamic_dims.items():
            if not isinstance(dim, int) or not 1 <= dim < len(self.example_shape):
                raise CaseError(self.name, f"dynamic_dims names dim {dim!r}: give dims 1..{len(self.example_shape) - 1} of "
                                           f"example_shape {self.example_shape} (dim 0 is the batch, always dynamic)")
            if self.example_shape[dim] < 2 or largest < self.example_shape[dim]:
                raise CaseError(self.name, f"dynamic_dims[{dim}]: example_shape's size there ({self.example_shape[dim]}) must be "
                                           f"at least 2 (or export specialises it) and at most its largest size {largest}")
        for dtype in self.dtypes:
            if not isinstance(dtype, torch.dtype):
                raise CaseError(self.name, f"unknown dtype {dtype!r}: give torch dtypes, e.g. torch.float16 (known: {', '.join(DTYPES)})")
            if dtype not in DEFAULT_TOLERANCES and dtype not in self.tolerances:
                raise CaseError(self.name, f"dtype {dtype} has no default tolerance: give one in tolerances")
        params = self.input_parameters()
        for p in params:
            if p.annotation is inspect.Parameter.empty:
                raise CaseError(self.name, f"launcher parameter {p.name!r} needs a type annotation (the schema is inferred)")
        if self._signature(self.launch, "launcher").return_annotation is inspect.Signature.empty:
            raise CaseError(self.name, "launcher needs a return annotation (-> torch.Tensor, -> None, ...)")
        for attr in ("mutates", "unbatched"):
            unknown = set(getattr(self, attr)) - {p.name for p in params}
            if unknown:
                raise CaseError(self.name, f"{attr} names {sorted(unknown)}, which are not launcher parameters")
        if self.backward is not None:
            if self.mutates:
                raise CaseError(self.name, "a case that mutates its inputs cannot declare a backward")
            if not callable(self.backward.launch):
                raise CaseError(self.name, "backward.launch must be a function")
            # The operator styles register the backward as an operator too: its schema comes from these.
            signature = self._signature(self.backward.launch, "backward")
            for p in list(signature.parameters.values())[1:]:
                if p.annotation is inspect.Parameter.empty:
                    raise CaseError(self.name, f"backward parameter {p.name!r} needs a type annotation (the schema is inferred)")
            if signature.return_annotation is inspect.Signature.empty:
                raise CaseError(self.name, "backward needs a return annotation (-> torch.Tensor, or a tuple with one per tensor input)")
            for kernel in self.backward.kernels:
                try:
                    kernel_name(kernel)
                except TypeError as exc:
                    raise CaseError(self.name, f"backward: {exc}") from None
        if self.requires is not None and not callable(self.requires):
            raise CaseError(self.name, "requires must be a function of the device returning a reason or None")
        if self.flops is not None and not callable(self.flops):
            raise CaseError(self.name, "flops must be a function of the input shapes")
        try:
            inspect.signature(self.reference).bind(*params)
        except TypeError as exc:
            raise CaseError(self.name, f"reference cannot take the launcher's {len(params)} inputs: {exc}") from None
        except ValueError:
            pass  # a builtin without a signature: checked when it first runs
        trailing = [p.name for p in params[len(params) - len(self.scalars):]] if self.scalars else []
        if list(self.scalars) != trailing:
            raise CaseError(self.name, f"scalars {list(self.scalars)} must name the launcher's last parameters, in order ({[p.name for p in params]})")
        for name, strategy in self.scalars.items():
            if not isinstance(strategy, st.SearchStrategy):
                raise CaseError(self.name, f"scalars[{name!r}] must be a hypothesis strategy, e.g. st.sampled_from([1, 2])")
        if set(self.example_scalars) != set(self.scalars):
            raise CaseError(self.name, f"example_scalars must give a value for each of the scalars {list(self.scalars)}")
        try:
            made = tuple(self.make_inputs(self.example_shape, self.dtypes[0], "cpu", torch.Generator().manual_seed(0)))
        except Exception as exc:  # noqa: BLE001 - the author's code: report it, whatever it raised
            raise CaseError(self.name, f"make_inputs fails on example_shape {self.example_shape}: {type(exc).__name__}: {exc}") from None
        tensors = params[: len(params) - len(self.scalars)]
        if len(made) != len(tensors):
            raise CaseError(
                self.name,
                f"make_inputs gives {len(made)} inputs but the launcher takes {len(tensors)} before its scalars "
                f"({', '.join(p.name for p in tensors)}): make them match",
            )
        # Every strategy draws now, so that one hypothesis rejects leaves the case out at load, named, instead
        # of failing every cell; make_inputs must take the simplest shape `shapes` draws (1 or 0 in a dimension).
        for name, strategy in self.scalars.items():
            _simplest(self.name, f"scalars[{name!r}]", strategy)
        shape = _simplest(self.name, "shapes", self.shapes)
        if not isinstance(shape, tuple) or not all(isinstance(d, int) for d in shape):
            raise CaseError(self.name, f"shapes drew {shape!r}: it must draw tuples of ints, e.g. inputs.shapes(4096)")
        try:
            self.make_inputs(shape, self.dtypes[0], "cpu", torch.Generator().manual_seed(0))
        except Exception as exc:  # noqa: BLE001 - the author's code
            raise CaseError(self.name, f"make_inputs fails on shape {shape}, which shapes draws: {described(exc)}; "
                            f"make it accept every shape that shapes draws, or narrow shapes") from None

    @property
    def autotune_configs(self) -> int:
        """Configs its kernels' autotuners time. They time them again for every new key (a new input size),
        in every path that launches the kernel: 40-60 s a cell for three configs on the GPU runner, against
        about 1 s for the same kernel untuned."""
        return sum(len(autotuner.configs) for autotuner in self.autotuners)

    @property
    def autotuners(self) -> list[Any]:
        """The autotuners of its kernels and its backward's kernels, seen through @triton.heuristics."""
        found: list[Any] = []
        for kernel in (*self.kernels, *(self.backward.kernels if self.backward is not None else ())):
            inner = kernel
            while inner is not None and not inspect.isfunction(inner):
                if isinstance(inner, Autotuner) and not any(inner is seen for seen in found):
                    found.append(inner)
                inner = getattr(inner, "fn", None)
        return found

    def _signature(self, fn: Callable[..., Any], what: str) -> inspect.Signature:
        try:
            return resolved_signature(fn)
        except Exception as exc:  # a name the string annotations use that their module does not define
            raise CaseError(self.name, f"{what}'s type annotations do not evaluate ({described(exc)}): "
                                       "import what they name in the case's module") from None

    def input_parameters(self) -> list[inspect.Parameter]:
        params = list(self._signature(self.launch, "launcher").parameters.values())
        if not params or params[0].annotation is not inspect.Parameter.empty:
            raise CaseError(self.name, "launcher must take the kernel namespace `k` first (unannotated), then the inputs")
        return params[1:]

    @property
    def batched(self) -> tuple[bool, ...]:
        """For each input, whether its dim 0 is the batch."""
        return tuple(p.name not in self.unbatched for p in self.input_parameters())

    def tolerance(self, dtype: torch.dtype) -> Tolerance:
        return self.tolerances.get(dtype) or DEFAULT_TOLERANCES[dtype]

    @property
    def optional_inputs(self) -> frozenset[str]:
        """Tensor inputs annotated Optional[torch.Tensor] (or torch.Tensor | None): each example draws whether
        it is given or None; make_inputs makes a tensor for it either way."""
        return frozenset(p.name for p in self.input_parameters() if _is_optional_tensor(p.annotation))

    def inputs(self, example: Example, device: str) -> tuple[Any, ...]:
        generator = torch.Generator().manual_seed(example.seed)
        scalars = {**self.example_scalars, **dict(example.scalars)}
        made = self.make_inputs(example.shape, example.dtype, device, generator)
        names = [p.name for p in self.input_parameters()]
        made = tuple(None if name in example.absent else x for name, x in zip(names, made))
        return (*made, *(scalars[name] for name in self.scalars))

    def export_shape(self, batch: int, sizes: Mapping[int, int] | None = None) -> tuple[int, ...]:
        """example_shape with this batch, and these sizes in its dynamic dims."""
        shape = [batch, *self.example_shape[1:]]
        for dim, size in (sizes or {}).items():
            shape[dim] = size
        return tuple(shape)

    @property
    def benchmark_shape(self) -> tuple[int, ...]:
        return self.export_shape(self.benchmark_batch or self.max_batch)
