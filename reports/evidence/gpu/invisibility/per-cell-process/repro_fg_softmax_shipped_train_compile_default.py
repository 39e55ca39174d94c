"""Reproduces fg_softmax-shipped-train_compile_default: wrong @run (gradient of input 'x' differs from the reference: it is missing (None) where the reference has one: cut off from the autograd graph (max abs error inf)).

Recorded on torch 2.11.0+cu130, triton 3.6.0, NVIDIA H100 80GB HBM3.
The case 'fg_softmax' (training, torch.compile; the library's own op (shipped)), written as a user writes it: only torch, triton
and the case's module are imported. Run it with `python {this file}`; its last line says what happened.
Written by `python -m harness repro fg_softmax-shipped-train_compile_default`.
"""


import contextlib
import math
import sys
import traceback
from typing import Any, Callable

import torch
import triton

sys.path.insert(0, '/work/main/examples')  # where the case's module is found
import flag_gems_cases.softmax as case_module


DEVICE = "cuda"
case = case_module.CASE

@contextlib.contextmanager
def stage(name, called=False):
    """Run one stage of the path; an exception ends the script, named with its stage. In a call of the path's artifact
    (`called`), as the chart names it: a compilation error, or one raised while Dynamo traced, fails at compile; any
    other at run."""
    try:
        yield
    except Wrong as wrong:
        print(f"\nWRONG @{name}: {wrong}")
        sys.exit(1)
    except Exception as error:
        if torch.cuda.is_available():  # a kernel's fault is reported late: it is the error, not what came after it
            try:
                torch.cuda.synchronize()
            except Exception as fault:
                error = fault
        if called:
            name = "compile" if isinstance(error, compile_stage_exception_types()) or _raised_while_tracing(error) else "run"
        traceback.print_exc()
        kind = type(error).__qualname__ if type(error).__module__ == "builtins" else f"{type(error).__module__}.{type(error).__qualname__}"
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        print(f"\nFAILED @{name}: {kind}: {first}")
        sys.exit(1)


class Wrong(AssertionError):
    """The path ran, and its results differ from the plain PyTorch reference's."""


def check(actual, expected, names, atol, rtol):
    if len(actual) != len(expected):
        raise Wrong(f"the number of outputs: {len(actual)} vs {len(expected)}")
    for name, a, e in zip(names, actual, expected):
        if isinstance(e, torch.Tensor) and a is None:
            raise Wrong(f"{name} is missing (None) where the reference has one: cut off from the autograd graph")
        if not isinstance(e, torch.Tensor) or e is None:
            if a != e:
                raise Wrong(f"{name}: {a!r} where the reference has {e!r}")
            continue
        if e.dim() == 0 and not e.is_floating_point():
            if int(a) != int(e):
                raise Wrong(f"{name}: {int(a)} where the reference has {int(e)}")
            continue
        a, e = a.detach().cpu(), e.detach().cpu()
        if e.is_floating_point():
            nan = int((a.isnan() & ~e.isnan()).sum())
            if nan:
                raise Wrong(f"{name}: {nan} of {e.numel()} elements NaN where the reference has a number (never written?)")
        try:
            torch.testing.assert_close(a, e, atol=atol, rtol=rtol, equal_nan=True, check_stride=False)
        except AssertionError as differs:
            raise Wrong(f"{name} differs from the reference: " + " ".join(str(differs).split())[:300]) from None


def clone(inputs):
    return tuple(x.clone() if isinstance(x, torch.Tensor) else x for x in inputs)


def flatten(value: Any) -> list[Any]:
    """Outputs as a list: a None result is no output; a None inside a list (a missing gradient) stays."""
    if value is None:
        return []
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in (flatten(v) if isinstance(v, (tuple, list)) else [v])]
    return [value]


import torch._dynamo.exc as dynamo_exc
import torch._inductor.exc as inductor_exc


def compile_stage_exception_types() -> tuple[type[BaseException], ...]:
    """Exceptions that mean Dynamo or Inductor could not build the graph, raised on a compiled call."""
    types: list[type[BaseException]] = [dynamo_exc.TorchDynamoException]
    for name in ("InductorError", "LoweringException", "CppCompileError", "BackendCompilerFailed"):
        if hasattr(inductor_exc, name):
            types.append(getattr(inductor_exc, name))
    try:
        from triton.compiler.errors import CompilationError

        types.append(CompilationError)
    except ImportError:
        pass
    return tuple(types)


_TRACING_FILES = ('_dynamo/convert_frame.py', '_dynamo/symbolic_convert.py')


def _raised_while_tracing(error: BaseException) -> bool:
    frame = error.__traceback__
    while frame is not None:
        if frame.tb_frame.f_code.co_filename.endswith(_TRACING_FILES):
            return True
        frame = frame.tb_next
    return False


def make_inputs(dtype, shape, seed, scalars=None, absent=()):
    """The case's inputs as the chart drew them: make_inputs from a seeded generator, then the scalars."""
    tensors = case.make_inputs(shape, dtype, DEVICE, torch.Generator().manual_seed(seed))
    tensors = tuple(None if name in absent else x for name, x in zip(['x'], tensors))
    scalars = {**case.example_scalars, **(scalars or {})}
    return (*tensors, *(scalars[name] for name in ()))


def program(x):
    """What the path runs: the wrapped kernel called as a model calls it."""
    return case.shipped(x)


def leaves(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """Floating-point tensor inputs become leaves that require grad, like a model's activations."""
    return tuple(
        x.detach().clone().requires_grad_() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs
    )


def _cotangent(output: torch.Tensor) -> torch.Tensor:
    # Not uniform, so a backward that swaps or sums elements cannot pass by symmetry.
    return torch.linspace(-1.0, 1.0, output.numel(), device=output.device).reshape(output.shape)


def step(forward: Callable[..., Any]) -> Callable[..., list[Any]]:
    """fn(*inputs) -> [outputs..., gradient of each tensor input (None where autograd gives none)].

    Only the forward is compiled (backward runs from AOTAutograd's compiled graph). An output that is
    cut off from the autograd graph (a raw kernel's) leaves its inputs without gradients: the harness
    compares them with the reference's and reports them missing, never as a pass.
    """

    def train_step(*inputs: Any) -> list[Any]:
        xs = leaves(inputs)
        result = forward(*xs)
        outputs = [o for o in (result if isinstance(result, (tuple, list)) else (result,)) if o is not None]
        wrt = [x for x in xs if isinstance(x, torch.Tensor) and x.requires_grad]
        differentiable = [o for o in outputs if isinstance(o, torch.Tensor) and o.requires_grad]
        grads: list[Any] = [None] * len(wrt)
        if differentiable and wrt:
            loss = sum((o.float() * _cotangent(o)).sum() for o in differentiable)
            grads = list(torch.autograd.grad(loss, wrt, allow_unused=True))
        return [o.detach() if isinstance(o, torch.Tensor) else o for o in outputs] + grads

    return train_step


# The example the path is built with, and the smallest failing one: float32 shape=(4, 129) seed=0; float32 shape=(1, 1) seed=0.
traced = make_inputs(torch.float32, (4, 129), 0)
inputs = make_inputs(torch.float32, (1, 1), 0, {}, ())
ATOL, RTOL = 1e-05, 1e-05
# As the chart does before a cell: the launcher once in plain eager on each dtype's example (Triton compiles the kernel here).
with stage("run"):
    for dtype in [torch.float32]:
        case.shipped(*make_inputs(dtype, (4, 129), 0))


def build(dtype):
    compiled = torch.compile(program)
    called = compiled
    with stage("compile", called=True):
        called(*leaves(make_inputs(dtype, (4, 129), 0)))
    return step(called)


ARTIFACTS = {}


def artifact_of(dtype):
    if dtype not in ARTIFACTS:
        ARTIFACTS[dtype] = build(dtype)
    return ARTIFACTS[dtype]


artifact_of(torch.float32)


def run(values, path):
    expected_inputs, after = clone(values), clone(values)
    reference_outputs = flatten((step(case.reference))(*expected_inputs))
    count = len(reference_outputs)
    names = [f'output {n}' for n in range(count - 1)] + ["gradient of input 'x'"] + [f'input {n} after the call' for n in range(len(values))]
    with stage("run", called=True):
        actual = flatten(path(*after))
    with stage("run"):
        check(actual, reference_outputs, names, ATOL, RTOL)


# The inputs the cell made, in the order it made them, before its smallest failing one; Dynamo set as the
# cell's process was for so many calls of one compiled function (past its default recompile limit of 8 it
# would run the rest eagerly, or, with fullgraph=True, fail).
if hasattr(torch._dynamo.config, 'recompile_limit'):
    torch._dynamo.config.recompile_limit = 64
if hasattr(torch._dynamo.config, 'fail_on_recompile_limit_hit'):
    torch._dynamo.config.fail_on_recompile_limit_hit = True
RAN = [
    (torch.float32, (4, 129), 0, {}, ()),
    (torch.float32, (1, 1), 0, {}, ()),
    (torch.float32, (1, 1), 0, {}, ()),
    (torch.float32, (1, 1), 0, {}, ()),
]
for dtype, shape, seed, scalars, absent in RAN:
    run(make_inputs(dtype, shape, seed, scalars, absent), artifact_of(dtype))
run(inputs, artifact_of(torch.float32))
print("\nPASSED: the path ran and matched the reference")
