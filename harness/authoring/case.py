"""A case: one Triton kernel (or a few), its launcher, a plain PyTorch reference, and its inputs.

A case is data. The harness builds every wrapping style from the launcher and runs every
compile path on it; the case author never writes a style or a path by hand.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping

import torch
from hypothesis import strategies as st
from torch._library.custom_ops import CustomOpDef
from triton.runtime.autotuner import Autotuner
from triton.runtime.interpreter import InterpretedFunction
from triton.runtime.jit import KernelInterface

from harness.authoring.launcher import takes_namespace
from harness.model.columns import ShippedKind
from harness.model.errors import CaseError, described

# What @triton.jit, autotune and heuristics make. Triton's interpreter (TRITON_INTERPRET=1) makes an
# InterpretedFunction, which is no KernelInterface before Triton 3.5 or 3.6 (3.4 has it stand alone, 3.6 subclasses it).
KERNEL_TYPES: tuple[type, ...] = (KernelInterface, InterpretedFunction)

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


def kernel_function(kernel: Any) -> Any:
    """The Python function under a kernel, seen through @triton.jit, autotune, heuristics and a library's own
    wrappers, each of which keeps the next as `.fn`; None where no function lies under it."""
    inner = kernel
    while inner is not None and not inspect.isfunction(inner) and hasattr(inner, "fn"):
        inner = inner.fn
    return inner if inspect.isfunction(inner) else None


def kernel_name(kernel: Any) -> str:
    """The Python name of a @triton.jit function, seen through autotune/heuristics wrappers."""
    if not isinstance(kernel, KERNEL_TYPES):
        raise TypeError(f"{kernel!r} is not a Triton kernel (@triton.jit, @triton.autotune or @triton.heuristics)")
    function = kernel_function(kernel)
    if function is None:
        raise TypeError(f"{kernel!r} is not a Triton kernel")
    return function.__name__


def resolved_signature(fn: Callable[..., Any]) -> inspect.Signature:
    """fn's signature with its annotations as types: a module with `from __future__ import annotations` has
    them as strings, which the schema inference, the Optional check and the autograd wrapping cannot read."""
    return inspect.signature(fn, eval_str=True)


def _annotation(schema_type: Any, schema: str) -> Any:
    """The Python type torch.library's schema inference reads back as a schema type (Tensor, Tensor?, int[] ...)."""
    kind = schema_type.kind()
    simple = {"TensorType": torch.Tensor, "IntType": int, "SymIntType": int, "FloatType": float, "BoolType": bool}
    if kind in simple:
        return simple[kind]
    if kind == "OptionalType":
        return typing.Optional[_annotation(schema_type.getElementType(), schema)]
    if kind == "ListType":
        return list[_annotation(schema_type.getElementType(), schema)]  # type: ignore[misc]
    raise ValueError(f"schema {schema!r}: the harness does not know the type {schema_type}; give a launcher with annotations")


def schema_signature(schema: str) -> inspect.Signature:
    """A signature with the annotations a torch.library schema ("(Tensor x, int n) -> Tensor") stands for."""
    parsed = torch._C.parse_schema(f"launch{schema}")
    params = [inspect.Parameter(a.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=_annotation(a.type, schema))
              for a in parsed.arguments]
    returns = [_annotation(r.type, schema) for r in parsed.returns]
    result: Any = None if not returns else returns[0] if len(returns) == 1 else tuple[tuple(returns)]  # type: ignore[misc]
    return inspect.Signature(params, return_annotation=result)


def without_namespace(fn: Callable[..., Any], signature: inspect.Signature) -> inspect.Signature:
    """A launcher's signature as its callers see it: without the `k` of the namespace form."""
    params = list(signature.parameters.values())
    return signature.replace(parameters=params[1:] if takes_namespace(fn) else params)


def is_optional_tensor(annotation: Any) -> bool:
    """Optional[torch.Tensor], Union[torch.Tensor, None] or torch.Tensor | None."""
    args = typing.get_args(annotation)
    return typing.get_origin(annotation) in (typing.Union, types.UnionType) and set(args) == {torch.Tensor, type(None)}


@dataclass(frozen=True)
class Backward:
    """The gradient of a case.

    launch(grad, *inputs) returns the gradient of each tensor input (a tuple when there are several). Like the
    forward's launcher it may call its `kernels` as module globals, or take the namespace first,
    launch(k, grad, *inputs), and call `k.<kernel name>[grid](...)`; the harness wraps them for each style
    (their own triton_op for the triton_op style, as the tutorial's mysin/mycos). With no kernels it is
    plain PyTorch.

    takes: what launch receives, in order, by name, as a library's autograd.Function passes it from its ctx:
        the gradient of each output (`grad` where the op has one output, else `grad_<output>` for each output
        the case's `returns` names, or grad0, grad1, ... for a launcher's unnamed tuple), the case's inputs by
        their names, and the launcher's other results by the names `returns` gives them (what the forward
        saved: rstd, mean). Default: every output's gradient, then every input.
    gives: the inputs whose gradients launch returns, in order (layer norm's dx, dweight, dbias). Default: one
        for each tensor input.
    Unannotated (a library's backward as it ships), its operator schema comes from `takes` and `gives`.
    """

    launch: Callable[..., Any]
    kernels: tuple[Any, ...] = ()
    takes: tuple[str, ...] = ()
    gives: tuple[str, ...] = ()


@dataclass(frozen=True)
class Case:
    """A Triton kernel under test.

    launch(*inputs): the launcher as the library writes it, calling its kernels as module globals
        (`my_kernel[grid](...)`, directly or through its own helpers) and allocating with torch; for the
        triton_op style the harness rebinds the kernels it wraps (harness.authoring.launcher). Or
        launch(k, *inputs): calls the kernels as `k.<kernel name>[grid](...)` and allocates outputs with
        `k.empty_like` / `k.empty`, which the harness fills with NaN so an unwritten element fails.
        Every input parameter is annotated, and the return is annotated; the harness infers the operator
        schema from them.
    schema: the schema instead, "(Tensor x, Tensor w) -> Tensor" as torch.library writes it, for a launcher
        used as the library ships it, without annotations.
    kernels: every Triton kernel the launcher launches (@triton.jit, @triton.autotune, @triton.heuristics or a
        library's own kernel wrapper): the objects the harness wraps, edits and watches.
    reference(*inputs): the same computation in plain PyTorch (it also serves as the fake kernel).
    make_inputs(shape, dtype, device, generator): the positional inputs; dim 0 of every tensor is the
        batch, which export marks dynamic.
    shapes: a hypothesis strategy of shapes for the compile paths.
    example_shape: the shape export and AOTInductor trace with (batch at least 2); their checks
        vary only the batch, up to `max_batch` (at most 4096 in the checks; the rest of the range is
        exercised by the benchmark input).
    min_batch: the smallest batch export and AOTInductor trace for, and their checks draw (default 1): for a program
        that specialises the smaller ones, which would fail export for the control too. An output of cdiv(batch, 128)
        blocks has one block below 129, and export specialises a size of 1: such a case gives min_batch=129.
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
        then skipped with that reason (e.g. a kernel that needs a Hopper GPU), all but the control's, which runs the
        reference alone.
    mutates: names of inputs the launcher writes in place (declared as `mutates_args`).
    returns: names of the launcher's results where it returns a tuple as libraries' launchers do ((y, rstd),
        (y, mean, rstd)): `outputs` names those the op gives its callers; the others are what the forward keeps
        for the backward (Backward.takes names them). One name names a launcher's single output, for a backward
        that takes it (softmax's). The operator styles return every result and their callers
        take the outputs, as aten's native_layer_norm does; the reference returns every result too (it is the
        operator's fake), and the chart compares the outputs.
    outputs: the names among `returns` that the op gives its callers (default: all of them).
    no_grad: names of float tensor inputs that take no gradient (a rotary embedding's cos and sin buffers): training
        rows leave them as they are and check no gradient of theirs; the backward's value for them is not used.
    backward: how to differentiate it (training rows); None: the case has no gradient.
    flops: flops(*input shapes) -> int, registered with register_flop_formula on the operator styles.
    shipped: the op as the library ships it, called with the launcher's inputs: a torch.library operator
        (torch.ops.ns.name, a custom_op or triton_op with the library's own fake and autograd registrations), an
        autograd.Function's `apply`, or a plain function. It is a column of its own ("shipped") through every
        row that applies to it; None: the case has no such column.
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
    min_batch: int = 1
    benchmark_batch: int | None = None
    tolerances: Mapping[torch.dtype, Tolerance] = field(default_factory=dict)
    scalars: Mapping[str, st.SearchStrategy[Any]] = field(default_factory=dict)
    example_scalars: Mapping[str, Any] = field(default_factory=dict)
    unbatched: frozenset[str] = frozenset()
    dynamic_dims: Mapping[int, int] = field(default_factory=dict)
    requires: Callable[[str], str | None] | None = None
    mutates: frozenset[str] = frozenset()
    no_grad: frozenset[str] = frozenset()
    returns: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    backward: Backward | None = None
    flops: Callable[..., int] | None = None
    schema: str | None = None
    shipped: Callable[..., Any] | None = None
    tags: frozenset[str] = frozenset()
    description: str = ""
    module: str = ""

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

    @property
    def signature(self) -> inspect.Signature:
        """The operator's signature, inputs and return: the schema's where the case gives one, else the launcher's
        annotations (without `k`); with `returns`, a tuple of that many tensors. Every style's operator schema is
        inferred from it."""
        signature = self._declared_signature
        if len(self.returns) > 1:  # a tuple of tensors, whatever else the library annotates (a Union with its other modes)
            return signature.replace(return_annotation=tuple[(torch.Tensor,) * len(self.returns)])  # type: ignore[misc]
        if self.returns:
            return signature.replace(return_annotation=torch.Tensor)
        return signature

    @property
    def _declared_signature(self) -> inspect.Signature:
        """The schema's signature, or the launcher's annotations (without `k`)."""
        if self.schema is not None:
            try:
                return schema_signature(self.schema)
            except Exception as exc:  # noqa: BLE001 - torch's schema parser says what it could not read
                raise CaseError(self.name, f"schema {self.schema!r} does not parse ({described(exc)}): write it as "
                                           "torch.library does, \"(Tensor x, int n) -> Tensor\"") from None
        return without_namespace(self.launch, self._signature(self.launch, "launcher"))

    @property
    def backward_signature(self) -> inspect.Signature:
        """The backward as its callers see it (without `k`): its annotations, or, where it has none (a library's
        backward as it ships), the types of what it takes (Backward.takes) and gives (Backward.gives)."""
        assert self.backward is not None
        annotated = without_namespace(self.backward.launch, self._signature(self.backward.launch, "backward"))
        if annotated.return_annotation is not inspect.Signature.empty and all(
                p.annotation is not inspect.Parameter.empty for p in annotated.parameters.values()):
            return annotated
        inputs = {p.name: p.annotation for p in self.input_parameters()}
        params = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=inputs.get(name, torch.Tensor))
                  for name in self.backward_takes]
        grads = [typing.Optional[torch.Tensor] if is_optional_tensor(inputs[name]) else torch.Tensor for name in self.gradients_given]
        result: Any = grads[0] if len(grads) == 1 else tuple[tuple(grads)]  # type: ignore[misc]
        return inspect.Signature(params, return_annotation=result)

    @property
    def output_count(self) -> int:
        """How many outputs the op gives its callers."""
        if self.returns:
            return len(self.outputs or self.returns)
        annotation = self.signature.return_annotation
        if annotation is None or annotation is type(None):
            return 0
        if typing.get_origin(annotation) is tuple:
            return len([a for a in typing.get_args(annotation) if a is not Ellipsis])
        return 1

    @property
    def output_positions(self) -> tuple[int, ...] | None:
        """Where the op's outputs lie among the launcher's results (returns); None where its return is the output."""
        if not self.returns:
            return None
        return tuple(self.returns.index(name) for name in (self.outputs or self.returns))

    def outputs_of(self, results: Any) -> Any:
        """The op's outputs among the launcher's (or the reference's) results: one tensor, or a tuple of them."""
        positions = self.output_positions
        if positions is None:
            return results
        if len(self.returns) == 1:  # one named result: the launcher's return itself (an output the backward takes)
            return results
        picked = tuple(results[i] for i in positions)
        return picked[0] if len(picked) == 1 else picked

    def reference_outputs(self, *inputs: Any) -> Any:
        """The reference's outputs, as the op gives them to its callers: what every style is compared with."""
        return self.outputs_of(self.reference(*inputs))  # type: ignore[misc]

    @property
    def gradient_names(self) -> tuple[str, ...]:
        """The names Backward.takes gives the gradients of the op's outputs."""
        if self.output_count == 1:
            return ("grad",)
        if self.returns:
            return tuple(f"grad_{name}" for name in (self.outputs or self.returns))
        return tuple(f"grad{i}" for i in range(self.output_count))

    @property
    def backward_takes(self) -> tuple[str, ...]:
        """What the backward is given, in order (Backward.takes, or every output's gradient and then every input)."""
        assert self.backward is not None
        return self.backward.takes or (*self.gradient_names, *(p.name for p in self.input_parameters()))

    @property
    def kept_results(self) -> tuple[str, ...]:
        """The launcher's results the backward takes: what the forward saves for it."""
        takes = self.backward_takes if self.backward is not None else ()
        return tuple(name for name in self.returns if name in takes)

    @property
    def gradients_given(self) -> tuple[str, ...]:
        """The inputs whose gradients the backward returns, in order (Backward.gives, or every tensor input)."""
        assert self.backward is not None
        return self.backward.gives or tuple(p.name for p in self.input_parameters()
                                            if p.annotation is torch.Tensor or is_optional_tensor(p.annotation))

    @property
    def gives_positions(self) -> tuple[int, ...] | None:
        """The input positions of Backward.gives; None where it gives one gradient for each tensor input passed."""
        if self.backward is None or not self.backward.gives:
            return None
        names = [p.name for p in self.input_parameters()]
        return tuple(names.index(name) for name in self.backward.gives)

    @property
    def shipped_kind(self) -> ShippedKind | None:
        """What the shipped op is, or None where the case names none."""
        shipped = self.shipped
        if shipped is None:
            return None
        if isinstance(shipped, (torch._ops.OpOverloadPacket, torch._ops.OpOverload, CustomOpDef)):
            return ShippedKind.OPERATOR
        owner = getattr(shipped, "__self__", None)
        if getattr(shipped, "__name__", None) == "apply" and isinstance(owner, type) and issubclass(owner, torch.autograd.Function):
            return ShippedKind.AUTOGRAD_FUNCTION
        return ShippedKind.FUNCTION

    def input_parameters(self) -> list[inspect.Parameter]:
        return list(self.signature.parameters.values())

    @property
    def no_grad_positions(self) -> tuple[int, ...]:
        """The positions of the inputs that take no gradient (no_grad), as training.leaves takes them."""
        return tuple(i for i, p in enumerate(self.input_parameters()) if p.name in self.no_grad)

    def graded(self, inputs: tuple[Any, ...]) -> list[str]:
        """The names of the inputs a training step differentiates: the floating-point tensors outside no_grad."""
        names = [p.name for p in self.input_parameters()]
        return [n for n, x in zip(names, inputs) if isinstance(x, torch.Tensor) and x.is_floating_point() and n not in self.no_grad]

    @functools.cached_property  # beside the fields, in the instance's own dict: a frozen dataclass allows that
    def takes_gradient(self) -> bool:
        """Whether a training row has anything to differentiate (`graded`), in the inputs make_inputs gives at
        example_shape in any of the case's dtypes (an int8 matmul whose float scales are all no_grad has none). Where
        make_inputs fails here, True: its cells say why it fails."""
        for dtype in self.dtypes:
            try:
                made = self.make_inputs(self.example_shape, dtype, "cpu", torch.Generator().manual_seed(0))
            except Exception:  # noqa: BLE001 - the author's code: the cells that run it report its failure
                return True
            if self.graded(made):
                return True
        return False

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
        return frozenset(p.name for p in self.input_parameters() if is_optional_tensor(p.annotation))

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
