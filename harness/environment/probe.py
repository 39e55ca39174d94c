"""Environment probes: facts about this machine measured before any cell runs, never assumed."""

from __future__ import annotations

import importlib
import json
import os
from typing import Any, Callable, Mapping

import torch
import torch._dynamo
import triton
import triton.language as tl
from filelock import FileLock

from harness.authoring.case import DTYPES
from harness.model.errors import first_line
from harness.model.results import write_atomic


@triton.jit
def _add_kernel(a, b, out, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out + offsets, tl.load(a + offsets, mask=mask) + tl.load(b + offsets, mask=mask), mask=mask)


@triton.jit
def _add_kernel_for_autotune(a, b, out, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out + offsets, tl.load(a + offsets, mask=mask) + tl.load(b + offsets, mask=mask), mask=mask)


@triton.jit
def _extern_call_kernel(a, out, n, LIBRARY: tl.constexpr, NAME: tl.constexpr, ARITY: tl.constexpr, BLOCK: tl.constexpr):
    # The function is looked up on its module while the kernel runs, as a case's kernel looks it up: the
    # interpreter patches the modules it implements (tl, tl.math) only for the time of a launch.
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    value = tl.load(a + offsets, mask=mask)
    result = getattr(LIBRARY, NAME)(*((value,) * ARITY))
    tl.store(out + offsets, result, mask=mask)


@triton.jit
def _scalar_to_kernel(out, scalar):
    tl.store(out, scalar.to(tl.float32))


RECORD = "tcm-probes.json"


def _recorded(record_dir: str | None, what: str, measure: Callable[[], Any]) -> Any:
    """`measure()`, or, with `record_dir` (the run's caches), its answer as the first runner process of the
    run measured and recorded it there: the same probe on the same device and versions gives the same answer."""
    if record_dir is None:
        return measure()

    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    key = f"{what}|{device}|torch {torch.__version__}|triton {triton.__version__}"  # a reused cache dir may outlive an upgrade
    path = os.path.join(record_dir, RECORD)
    os.makedirs(record_dir, exist_ok=True)  # the lock file comes first
    with FileLock(path + ".lock"):
        try:
            with open(path) as f:
                records = json.load(f)
        except (OSError, ValueError):
            records = {}
        if key not in records:
            records[key] = measure()
            write_atomic(path, json.dumps(records))
        return records[key]


def broken_dtypes(device: str, record_dir: str | None = None) -> dict[str, str]:
    """Dtypes in which a plain Triton add of small integers is not exact here (Triton's CPU interpreter
    and bfloat16, for one): cells leave them out and the report says why, instead of charting them wrong.
    Probed once a run where `record_dir` is given: on the interpreter it costs every runner process 1.6 s."""
    return _recorded(record_dir, f"dtypes on {device}", lambda: _probe(device))


def interpreted_launch_under_compile(options: Mapping[str, Any], record_dir: str | None = None) -> str | None:
    """Why torch.compile with these options cannot run a function that launches a Triton kernel in Triton's
    CPU interpreter, or None where it can: a trivial add, launched as a raw kernel, compiled and run once.
    Dynamo sees no Triton kernel there (the interpreter's function is plain Python): it traces the
    interpreter's own code, for 5-10 s of CPU, and fails the same way for every kernel."""

    def measure() -> str | None:
        a = torch.arange(-18, 19, dtype=torch.float32)

        def launch(x: torch.Tensor) -> torch.Tensor:
            out = torch.empty_like(x)
            _add_kernel[(1,)](x, x, out, x.numel(), BLOCK=64)
            return out

        torch._dynamo.reset()
        try:
            out = torch.compile(launch, **options)(a)
            return None if torch.equal(out, a + a) else "the compiled launch gives wrong numbers"
        except Exception as exc:  # noqa: BLE001 - the failure is the answer
            text = str(exc).replace("\\n", "\n").strip()  # the interpreter's error holds the inner one's repr
            return f"{type(exc).__name__}: {first_line(Exception(text))}"[:300]
        finally:
            torch._dynamo.reset()

    return _recorded(record_dir, f"interpreted launch under torch.compile({dict(options)!r})", measure)


def autotuning(device: str, record_dir: str | None = None) -> str | None:
    """Why Triton's autotuner cannot run here, or None where it can: a trivial add with two configs, launched
    once. Triton's CPU interpreter has no driver to time the configs on ("0 active drivers"), so every
    autotuned kernel fails the same way there, whatever the wrapping: a limit of the machine, not a finding."""

    def measure() -> str | None:
        a = torch.arange(-18, 19, dtype=torch.float32, device=device)
        out = torch.empty_like(a)
        try:
            # Decorated here, not at import: Triton 3.3 and older ask the driver for a benchmarker as the
            # autotuner is made, which has none on the interpreter, and the harness must still import there.
            _autotuned_add_kernel = triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})],
                                                    key=["n"])(_add_kernel_for_autotune)
            _autotuned_add_kernel[lambda meta: (triton.cdiv(a.numel(), meta["BLOCK"]),)](a, a, out, a.numel())
            return None if torch.equal(out, a + a) else "the autotuned add gives wrong numbers"
        except Exception as exc:  # noqa: BLE001 - the failure is the answer
            return f"{type(exc).__name__}: {first_line(exc)}"[:300]

    return _recorded(record_dir, f"autotuning on {device}", measure)


def wrap_triton_takes_interpreted(record_dir: str | None = None) -> str | None:
    """Why torch.library.wrap_triton refuses a kernel of Triton's CPU interpreter (TRITON_INTERPRET=1), or None
    where it takes one: torch 2.11 and older check for a @triton.jit function, which the interpreter's kernels are
    not ("wrap_triton only works on functions annotated with triton.jit"); 2.13 takes them. Where it refuses,
    every triton_op cell fails the same way in eager: a limit of this machine's torch and interpreter, not a
    finding (on a GPU the kernel is a @triton.jit function and wrap_triton takes it)."""

    def measure() -> str | None:
        try:
            torch.library.wrap_triton(_add_kernel)
            return None
        except Exception as exc:  # noqa: BLE001 - the failure is the answer
            return f"{type(exc).__name__}: {first_line(exc)}"[:300]

    return _recorded(record_dir, "wrap_triton taking an interpreted kernel", measure)


def interpreted_scalar_to(kind: str, record_dir: str | None = None) -> str | None:
    """Why Triton's CPU interpreter cannot run `.to(...)` on a scalar argument given as a Python `kind` ("float",
    "int"), or None where it can: a trivial kernel converting its scalar argument, launched once under the
    interpreter. Triton 3.9's interpreter hands the kernel the Python number itself ("'float' object has no attribute
    'to'"); compiled for a GPU, the argument is a scalar of the kernel's, which has `.to`."""

    def measure() -> str | None:
        out = torch.zeros(1)
        try:
            _scalar_to_kernel[(1,)](out, {"float": 1.5, "int": 3}[kind])
            return None
        except Exception as exc:  # noqa: BLE001 - the failure is the answer
            return f"{type(exc).__name__}: {first_line(exc)}"[:300]

    return _recorded(record_dir, f"the interpreter converting a Python {kind} argument", measure)


def interpreted_extern(module: str, name: str, arity: int, record_dir: str | None = None) -> str | None:
    """Why Triton's CPU interpreter cannot run the device-library function `module.name` (a libdevice
    function, `triton.language.extra.libdevice.j0`), or None where it can: a trivial kernel calling it on a
    float32 block, launched once under the interpreter. Triton 3.9's interpreter has none of them: the generic
    libdevice functions are stubs that the GPU compiler replaces (they return None there: "cannot convert None
    ... to tensor"), and the CUDA and HIP ones need the compiler ("`_semantic` argument must be provided")."""

    def measure() -> str | None:
        a = torch.arange(1, 38, dtype=torch.float32) / 40
        out = torch.empty_like(a)
        try:
            library = importlib.import_module(module)
            _extern_call_kernel[(1,)](a, out, a.numel(), LIBRARY=library, NAME=name, ARITY=arity, BLOCK=64)
            return None
        except Exception as exc:  # noqa: BLE001 - the failure is the answer
            inner = exc.__cause__ or exc  # the interpreter wraps what the kernel raised (InterpreterError(repr(error)))
            return f"{type(inner).__name__}: {first_line(inner)}"[:300]

    return _recorded(record_dir, f"the interpreter running {module}.{name}", measure)


def _probe(device: str) -> dict[str, str]:
    broken: dict[str, str] = {}
    for name, dtype in DTYPES.items():
        a = torch.arange(-18, 19).to(device=device, dtype=dtype)
        b = torch.ones_like(a)
        out = torch.zeros_like(a)
        try:
            _add_kernel[(1,)](a, b, out, a.numel(), BLOCK=64)
            if not torch.equal(out, a + b):
                broken[name] = "a Triton add of small integers is not exact in this dtype here"
        except Exception as exc:  # noqa: BLE001 - any failure means the dtype cannot be tested here
            broken[name] = f"a Triton add fails in this dtype here: {type(exc).__name__}: {exc}"[:300]
    return broken
