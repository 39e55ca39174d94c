"""Environment probes: facts about this machine measured before any cell runs, never assumed."""

from __future__ import annotations

import json
import os

import torch
import triton
import triton.language as tl

from harness.case import DTYPES


@triton.jit
def _add_kernel(a, b, out, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out + offsets, tl.load(a + offsets, mask=mask) + tl.load(b + offsets, mask=mask), mask=mask)


RECORD = "tcm-dtype-probe.json"


def broken_dtypes(device: str, record_dir: str | None = None) -> dict[str, str]:
    """Dtypes in which a plain Triton add of small integers is not exact here (Triton's CPU interpreter
    and bfloat16, for one): cells leave them out and the report says why, instead of charting them wrong.
    With `record_dir` (the run's caches), the first runner process of a run probes and records the answer
    there, and the others read it: the same probe on the same device and versions gives the same answer,
    and on the interpreter it costs every runner process 1.6 s of CPU."""
    if record_dir is None:
        return _probe(device)
    from filelock import FileLock

    name = torch.cuda.get_device_name() if device == "cuda" else device
    key = f"{name}|torch {torch.__version__}|triton {triton.__version__}"  # a reused cache dir may outlive an upgrade
    path = os.path.join(record_dir, RECORD)
    os.makedirs(record_dir, exist_ok=True)
    with FileLock(path + ".lock"):
        try:
            with open(path) as f:
                records = json.load(f)
        except (OSError, ValueError):
            records = {}
        if key not in records:
            records[key] = _probe(device)
            tmp = f"{path}.{os.getpid()}"
            with open(tmp, "w") as f:
                json.dump(records, f)
            os.replace(tmp, path)
        return records[key]


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
