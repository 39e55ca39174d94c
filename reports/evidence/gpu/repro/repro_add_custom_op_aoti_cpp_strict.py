"""Reproduces add-custom_op-aoti_cpp_strict: fail @aot_load (harness.RuntimeFailure: Could not find schema for tcm::add_custom_op.).

Recorded on torch 2.11.0+cu130, triton 3.6.0, NVIDIA H200.
The case 'add' (AOTInductor run from C++, no Python (strict export); custom_op + register_fake), written as a user writes it: only torch, triton
and the case's module are imported. Run it with `python {this file}`; its last line says what happened.
Written by `python -m harness repro add-custom_op-aoti_cpp_strict`.
"""


import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
import traceback
import types

import torch
import triton

sys.path.insert(0, '/tmp/site')  # where the case's module is found
import harness.cases.add as case_module


DEVICE = "cuda"
case = case_module.CASE


@contextlib.contextmanager
def stage(name):
    """Run one stage of the path; an exception ends the script, named with its stage."""
    try:
        yield
    except Wrong as wrong:
        print(f"\nWRONG @{name}: {wrong}")
        sys.exit(1)
    except Exception as error:
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


def flat(value):
    # Outputs as a list: a None result is no output; a None inside a list (a missing gradient) stays.
    if value is None:
        return []
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in (flat(v) if isinstance(v, (tuple, list)) else [v])]
    return [value]


def clone(inputs):
    return tuple(x.clone() if isinstance(x, torch.Tensor) else x for x in inputs)


def make_inputs(dtype, shape, seed, scalars=None, absent=()):
    """The case's inputs as the chart drew them: make_inputs from a seeded generator, then the scalars."""
    tensors = case.make_inputs(shape, dtype, DEVICE, torch.Generator().manual_seed(seed))
    tensors = tuple(None if name in absent else x for name, x in zip(['x', 'y'], tensors))
    scalars = {**case.example_scalars, **(scalars or {})}
    return (*tensors, *(scalars[name] for name in ()))


def poison(dtype):
    # An output starts as NaN (an int's largest value): an element the kernel never writes cannot pass.
    if dtype.is_floating_point or dtype.is_complex:
        return math.nan
    return True if dtype == torch.bool else torch.iinfo(dtype).max


def empty_like(tensor, **kwargs):
    return torch.full_like(tensor, poison(kwargs.get("dtype") or tensor.dtype), **kwargs)


def empty(*size, dtype=None, **kwargs):
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)) else size
    dtype = dtype or torch.get_default_dtype()
    return torch.full(shape, poison(dtype), dtype=dtype, **kwargs)


k = types.SimpleNamespace(add_kernel=case_module.add_kernel, empty_like=empty_like, empty=empty)


def launch(x, y):
    return case_module.launch(k, x, y)


@torch.library.custom_op("tcm::add_custom_op", mutates_args=())
def add_custom_op(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return case_module.launch(k, x, y)


@add_custom_op.register_fake
def _(x, y):
    return case.reference(x, y)


def program(x, y):
    """What the path runs: the wrapped kernel called as a model calls it."""
    return torch.ops.tcm.add_custom_op(x, y)


# The example the path is built with, and the smallest failing one: float32 shape=(300,) seed=0; float32 shape=(300,) seed=0.
traced = make_inputs(torch.float32, (300,), 0)
inputs = make_inputs(torch.float32, (300,), 0, {}, ())
ATOL, RTOL = 1e-05, 1e-05
# As the chart does before a cell: the launcher once in plain eager (Triton compiles the kernel here).
with stage("run"):
    launch(*clone(traced))

class Program(torch.nn.Module):
    def forward(self, *inputs):
        return program(*inputs)

batch = torch.export.Dim("batch", min=1, max=4194304)
dynamic_shapes = (({0: batch} if traced[0] is not None else None, {0: batch} if traced[1] is not None else None),)
with stage("export"):
    exported = torch.export.export(Program(), traced, strict=True, dynamic_shapes=dynamic_shapes)
with stage("aot_compile"):
    package = torch._inductor.aoti_compile_and_package(exported, package_path=os.path.join(tempfile.mkdtemp(), "add.pt2"))
# The chart ran the package from C++ (AOTIModelPackageLoader, no Python); this file loads it with the same loader in a new Python process that imports torch only: the case's module and its operators are not there.
SERVE = '''
import json, sys, traceback, torch
package, inputs_file, outputs_file = sys.argv[1:]
def failed(stage, error):
    kind = type(error).__qualname__ if type(error).__module__ == 'builtins' else f'{type(error).__module__}.{type(error).__qualname__}'
    traceback.print_exc()
    print(json.dumps([stage, kind, (str(error).strip().splitlines() or [''])[0]]))
    sys.exit(3)
try:
    runner = torch._inductor.aoti_load_package(package)
except Exception as error:
    failed('aot_load', error)
try:
    torch.save(runner(*torch.load(inputs_file)), outputs_file)
except Exception as error:
    failed('run', error)
'''


class ServeFailed(Exception):
    pass


def artifact(*values):
    folder = tempfile.mkdtemp()
    inputs_file, outputs_file = os.path.join(folder, 'inputs.pt'), os.path.join(folder, 'outputs.pt')
    torch.save(values, inputs_file)
    done = subprocess.run([sys.executable, '-c', SERVE, package, inputs_file, outputs_file], capture_output=True, text=True)
    if done.returncode == 0:
        return torch.load(outputs_file)
    print(done.stderr, file=sys.stderr)
    try:
        served_stage, kind, first = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        served_stage, kind, first = 'aot_load', 'ServeFailed', f'the process exited with {done.returncode}'
    print(f'\nFAILED @{served_stage}: {kind}: {first}')
    sys.exit(1)


def run(values):
    expected_inputs, after = clone(values), clone(values)
    reference_outputs = flat(case.reference(*expected_inputs))
    count = len(reference_outputs)
    names = [f'output {n}' for n in range(count)] + [f'input {n} after the call' for n in range(len(values))]
    with stage("run"):
        actual = flat(artifact(*after)) + [x for x in after if isinstance(x, torch.Tensor)]
    with stage("run"):
        check(actual, reference_outputs + [x for x in expected_inputs if isinstance(x, torch.Tensor)], names, ATOL, RTOL)


run(inputs)
print("\nPASSED: the path ran and matched the reference")
