"""What a case must give, each problem named with its fix.

`check(case)` raises CaseError with the case's name, its first problem and what to change. The registry calls it as it
loads a module, so one malformed case is left out and reported while its neighbours still run."""

from __future__ import annotations

import inspect
import re
import types
import typing
from typing import Any, Callable

import torch
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st

from harness.authoring.case import DEFAULT_TOLERANCES, DTYPES, Case, is_optional_tensor, kernel_name, without_namespace
from harness.authoring.launcher import takes_namespace, unreached
from harness.model.errors import CaseError, described


def _tensor_or_none(annotation: Any) -> bool:
    """Whether a launcher's annotated result is a tensor (or an optional one): what every wrapping style can return."""
    if annotation is torch.Tensor or annotation is type(None):
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return all(_tensor_or_none(a) for a in typing.get_args(annotation))
    return False


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


def check(case: Case) -> None:
    """Raise CaseError naming this case, its first problem and the fix. The registry calls it, so one
    malformed case is left out and reported while its neighbours still run."""
    _check_given(case)
    _check_dtypes_and_sizes(case)
    params = case.input_parameters()
    _check_signature(case, params)
    _check_results(case, params)
    _check_backward(case)
    _check_inputs(case, params)


def _check_given(case: Case) -> None:
    """What every case gives: a name, its functions, kernels, shapes and example."""
    if not isinstance(case.name, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", case.name):
        raise CaseError(str(case.name), "name must be lower_snake_case letters, digits and '_'")
    for attr, what in (
        ("launch", "the launcher, launch(k, *inputs), that calls the kernels"),
        ("reference", "the same computation in plain PyTorch, reference(*inputs)"),
        ("make_inputs", "make_inputs(shape, dtype, device, generator) returning the launcher's inputs"),
        ("shapes", "a hypothesis strategy of input shapes, e.g. inputs.shapes(4096)"),
    ):
        if getattr(case, attr) is None:
            raise CaseError(case.name, f"no {attr}: give {attr}=, {what}")
    if not case.example_shape:
        raise CaseError(case.name, "no example_shape: give the shape export and AOTInductor trace with, e.g. (300,)")
    if not case.kernels:
        raise CaseError(case.name, "kernels is empty: list the @triton.jit kernels the launcher calls")
    for kernel in case.kernels:
        try:
            kernel_name(kernel)
        except TypeError as exc:
            raise CaseError(case.name, str(exc)) from None
    for attr in ("launch", "reference", "make_inputs"):
        if not callable(getattr(case, attr)):
            raise CaseError(case.name, f"{attr} must be a function")
    _check_reached(case, case.launch, case.kernels, "launcher")
    if case.shipped is not None and not callable(case.shipped):
        raise CaseError(case.name, "shipped must be the library's op: a torch.library operator, an autograd.Function's "
                                   "apply, or a function")
    if not isinstance(case.shapes, st.SearchStrategy):
        raise CaseError(case.name, "shapes must be a hypothesis strategy of shape tuples")
    if len(case.example_shape) < 1 or case.example_shape[0] < 2:
        raise CaseError(case.name, "example_shape needs a batch (dim 0) of at least 2, or export specialises it")
    if not 1 <= case.min_batch <= case.example_shape[0] <= case.max_batch:
        raise CaseError(case.name, f"min_batch {case.min_batch} must lie in 1..example_shape's batch ({case.example_shape[0]}), "
                                   f"and that at most max_batch ({case.max_batch})")
    if case.benchmark_batch is not None and not 1 <= case.benchmark_batch <= case.max_batch:
        raise CaseError(case.name, f"benchmark_batch {case.benchmark_batch} must lie in 1..max_batch ({case.max_batch})")


def _check_dtypes_and_sizes(case: Case) -> None:
    """The dtypes, each with a tolerance, and the dims that vary."""
    if not case.dtypes:
        raise CaseError(case.name, "dtypes is empty")
    for dim, largest in case.dynamic_dims.items():
        if not isinstance(dim, int) or not 1 <= dim < len(case.example_shape):
            raise CaseError(case.name, f"dynamic_dims names dim {dim!r}: give dims 1..{len(case.example_shape) - 1} of "
                                       f"example_shape {case.example_shape} (dim 0 is the batch, always dynamic)")
        if case.example_shape[dim] < 2 or largest < case.example_shape[dim]:
            raise CaseError(case.name, f"dynamic_dims[{dim}]: example_shape's size there ({case.example_shape[dim]}) must be "
                                       f"at least 2 (or export specialises it) and at most its largest size {largest}")
    for dtype in case.dtypes:
        if not isinstance(dtype, torch.dtype):
            raise CaseError(case.name, f"unknown dtype {dtype!r}: give torch dtypes, e.g. torch.float16 (known: {', '.join(DTYPES)})")
        if dtype not in DEFAULT_TOLERANCES and dtype not in case.tolerances:
            raise CaseError(case.name, f"dtype {dtype} has no default tolerance: give one in tolerances")


def _check_signature(case: Case, params: list[inspect.Parameter]) -> None:
    """The launcher's parameters and result, annotated (the schema is inferred from them), or the schema given."""
    for p in params:
        if p.annotation is inspect.Parameter.empty:
            raise CaseError(case.name, f"launcher parameter {p.name!r} needs a type annotation (the schema is inferred), "
                                       "or give the case schema=\"(Tensor x, ...) -> Tensor\"")
    if case.signature.return_annotation is inspect.Signature.empty:
        raise CaseError(case.name, "launcher needs a return annotation (-> torch.Tensor, -> None, ...), or give the case "
                                   "schema=\"(Tensor x, ...) -> Tensor\"")
    if case.schema is not None:
        try:
            launcher_params = list(without_namespace(case.launch, inspect.signature(case.launch)).parameters.values())
            inspect.Signature(launcher_params).bind(*params)
        except TypeError as exc:
            raise CaseError(case.name, f"schema {case.schema!r} gives {len(params)} inputs the launcher cannot take: {exc}") from None
        except ValueError:
            pass  # a builtin without a signature: checked when it first runs
    for attr in ("mutates", "unbatched"):
        unknown = set(getattr(case, attr)) - {p.name for p in params}
        if unknown:
            raise CaseError(case.name, f"{attr} names {sorted(unknown)}, which are not launcher parameters")


def _check_results(case: Case, params: list[inspect.Parameter]) -> None:
    """The names of a tuple-returning launcher's results, and the outputs among them."""
    inputs = {p.name for p in params}
    for name in case.returns:
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("grad") or name in inputs:
            raise CaseError(case.name, f"returns names {name!r}: give each result a Python name that is not an input's "
                                       f"({', '.join(sorted(inputs))}) and does not start with 'grad' (rename it, e.g. "
                                       f"{str(name) + '_saved'!r})")
    if len(set(case.returns)) != len(case.returns):
        raise CaseError(case.name, f"returns {list(case.returns)} names a result twice")
    if case.outputs and not case.returns:
        raise CaseError(case.name, "outputs= picks among the launcher's results: name them all first, in order, with returns=")
    if not set(case.outputs) <= set(case.returns) or len(set(case.outputs)) != len(case.outputs):
        raise CaseError(case.name, f"outputs {list(case.outputs)} must name results of returns {list(case.returns)}, each once")
    if not case.returns:
        return
    annotated = case._declared_signature.return_annotation
    if annotated is torch.Tensor and len(case.returns) > 1:
        raise CaseError(case.name, f"returns names {len(case.returns)} results but the launcher is annotated to return one "
                                   "tensor: annotate it -> tuple[torch.Tensor, ...], or leave returns= out")
    if typing.get_origin(annotated) is tuple:
        count = [a for a in typing.get_args(annotated) if a is not Ellipsis]
        if Ellipsis not in typing.get_args(annotated) and len(count) != len(case.returns):
            raise CaseError(case.name, f"returns names {len(case.returns)} results but the launcher is annotated to return "
                                       f"{len(count)}: name each element of its tuple, in order")
        for name, kind in zip(case.returns, count):
            if not _tensor_or_none(kind):
                raise CaseError(case.name, f"returns names {name!r}, which the launcher is annotated to return as "
                                           f"{getattr(kind, '__name__', kind)}: the wrapping styles carry only tensors between "
                                           "a forward and its backward (returns=, takes=), so no operator style could return it; "
                                           f"return {name!r} as a tensor, or compute it where it is needed (in the backward)")


def _check_backward(case: Case) -> None:
    """The backward, where one is given: its signature, its kernels, reached by its launcher."""
    if case.backward is not None:
        if case.mutates:
            raise CaseError(case.name, "a case that mutates its inputs cannot declare a backward")
        if not callable(case.backward.launch):
            raise CaseError(case.name, "backward.launch must be a function")
        _check_backward_names(case)
        # The operator styles register the backward as an operator too: its schema comes from its annotations, or
        # from what it takes and gives.
        signature = case.backward_signature
        try:
            inspect.Signature([p.replace(annotation=inspect.Parameter.empty) for p in without_namespace(
                case.backward.launch, inspect.signature(case.backward.launch)).parameters.values()]).bind(*signature.parameters)
        except TypeError as exc:
            raise CaseError(case.name, f"backward cannot take the {len(signature.parameters)} arguments it is given "
                                       f"({', '.join(signature.parameters)}): {exc}; say what it takes, in order, with "
                                       "Backward(takes=(...))") from None
        except ValueError:
            pass  # a builtin without a signature: checked when it first runs
        for kernel in case.backward.kernels:
            try:
                kernel_name(kernel)
            except TypeError as exc:
                raise CaseError(case.name, f"backward: {exc}") from None
        _check_reached(case, case.backward.launch, case.backward.kernels, "backward")


def _check_backward_names(case: Case) -> None:
    """Backward.takes names what there is to take; Backward.gives names tensor inputs."""
    assert case.backward is not None
    inputs = [p.name for p in case.input_parameters()]
    known = [*case.gradient_names, *inputs, *case.returns]
    for name in case.backward.takes:
        if name not in known:
            raise CaseError(case.name, f"Backward takes {name!r}, which is none of what a backward can be given: "
                                       f"{', '.join(known)}")
    tensors = [p.name for p in case.input_parameters() if p.annotation is torch.Tensor or is_optional_tensor(p.annotation)]
    for name in case.backward.gives:
        if name not in tensors:
            raise CaseError(case.name, f"Backward gives {name!r}, which is not a tensor input ({', '.join(tensors)})")
    if len(set(case.backward.gives)) != len(case.backward.gives):
        raise CaseError(case.name, f"Backward gives {list(case.backward.gives)} names an input twice")
    untaken = [name for name in case.gradients_given if name not in case.backward_takes]
    if case.backward.kernels and untaken:
        raise CaseError(case.name, f"Backward gives the gradient of {', '.join(untaken)} without taking {'it' if len(untaken) == 1 else 'them'}: "
                                   "the operator styles register a backward with kernels as an operator, whose fake makes each "
                                   "gradient like its input; add them to takes, or list in gives only the inputs it takes")


def _check_inputs(case: Case, params: list[inspect.Parameter]) -> None:
    """What the case draws and makes: the reference takes it, the scalars close the signature, make_inputs takes every shape."""
    if case.requires is not None and not callable(case.requires):
        raise CaseError(case.name, "requires must be a function of the device returning a reason or None")
    if case.flops is not None and not callable(case.flops):
        raise CaseError(case.name, "flops must be a function of the input shapes")
    try:
        inspect.signature(case.reference).bind(*params)
    except TypeError as exc:
        defaulted = [p.name for p in params if p.default is not inspect.Parameter.empty and p.name not in case.scalars]
        hint = (f"; the launcher's parameters with defaults ({', '.join(defaulted)}) count as inputs: give schema= without "
                "them (they keep their defaults), declare them in scalars=, or launch through a function that leaves "
                "them out" if defaulted else "")
        raise CaseError(case.name, f"reference cannot take the launcher's {len(params)} inputs: {exc}{hint}") from None
    except ValueError:
        pass  # a builtin without a signature: checked when it first runs
    trailing = [p.name for p in params[len(params) - len(case.scalars):]] if case.scalars else []
    if list(case.scalars) != trailing:
        raise CaseError(case.name, f"scalars {list(case.scalars)} must name the launcher's last parameters, in order ({[p.name for p in params]})")
    for name, strategy in case.scalars.items():
        if not isinstance(strategy, st.SearchStrategy):
            raise CaseError(case.name, f"scalars[{name!r}] must be a hypothesis strategy, e.g. st.sampled_from([1, 2])")
    tensor_names = {p.name for p in params if p.annotation is torch.Tensor or is_optional_tensor(p.annotation)}
    if not case.no_grad <= tensor_names:
        raise CaseError(case.name, f"no_grad names {sorted(case.no_grad - tensor_names)}, which are not tensor inputs of the launcher "
                                   f"({', '.join(sorted(tensor_names))})")
    if set(case.example_scalars) != set(case.scalars):
        raise CaseError(case.name, f"example_scalars must give a value for each of the scalars {list(case.scalars)}")
    try:
        made = tuple(case.make_inputs(case.example_shape, case.dtypes[0], "cpu", torch.Generator().manual_seed(0)))
    except Exception as exc:  # noqa: BLE001 - the author's code: report it, whatever it raised
        raise CaseError(case.name, f"make_inputs fails on example_shape {case.example_shape}: {type(exc).__name__}: {exc}") from None
    tensors = params[: len(params) - len(case.scalars)]
    if len(made) != len(tensors):
        raise CaseError(
            case.name,
            f"make_inputs gives {len(made)} inputs but the launcher takes {len(tensors)} before its scalars "
            f"({', '.join(p.name for p in tensors)}): make them match",
        )
    # Every strategy draws now, so that one hypothesis rejects leaves the case out at load, named, instead
    # of failing every cell; make_inputs must take the simplest shape `shapes` draws (1 or 0 in a dimension).
    for name, strategy in case.scalars.items():
        _simplest(case.name, f"scalars[{name!r}]", strategy)
    shape = _simplest(case.name, "shapes", case.shapes)
    if not isinstance(shape, tuple) or not all(isinstance(d, int) for d in shape):
        raise CaseError(case.name, f"shapes drew {shape!r}: it must draw tuples of ints, e.g. inputs.shapes(4096)")
    try:
        case.make_inputs(shape, case.dtypes[0], "cpu", torch.Generator().manual_seed(0))
    except Exception as exc:  # noqa: BLE001 - the author's code
        raise CaseError(case.name, f"make_inputs fails on shape {shape}, which shapes draws: {described(exc)}; "
                        f"make it accept every shape that shapes draws, or narrow shapes") from None


def _check_reached(case: Case, launch: Callable[..., Any], kernels: tuple[Any, ...], what: str) -> None:
    if takes_namespace(launch) or not kernels:
        return
    missed = unreached(launch, kernels)
    if missed:
        names = ", ".join(kernel_name(k) for k in missed)
        raise CaseError(case.name, f"the {what} never reads {names} as a global (its own, or of a Python function it calls), "
                                   "so the harness cannot wrap it for the triton_op style: call each kernel by its global "
                                   f"name, or take the namespace first, {what}(k, ...), and call k.{kernel_name(missed[0])}[grid](...)")
