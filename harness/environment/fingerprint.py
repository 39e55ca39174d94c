"""The environment a run measured: what a chart is only true for."""

from __future__ import annotations

import datetime
import os
import platform
import shutil
import subprocess
import sys
from typing import Any


def _run(*cmd: str) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0].strip() if out.returncode == 0 and text else None


def compiler() -> dict[str, Any]:
    """The C++ compiler Inductor and AOTInductor will call, as CXX and Inductor's own search see it."""
    try:
        from torch._inductor import cpp_builder

        resolved = cpp_builder.get_cpp_compiler()
    except Exception as exc:  # noqa: BLE001 - recorded, not fatal
        resolved = f"unknown ({type(exc).__name__}: {exc})"
    path = shutil.which(resolved) if resolved and not resolved.startswith("unknown") else None
    return {
        "CXX": os.environ.get("CXX"),
        "resolved": resolved,
        "path": os.path.realpath(path) if path else None,
        "version": _run(resolved, "--version") if path else None,
    }


def gpu() -> dict[str, Any]:
    import torch

    if not torch.cuda.is_available():
        return {"available": False}
    query = _run("nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader")
    name, driver, memory = ([s.strip() for s in query.split(",")] + [None, None, None])[:3] if query else (None, None, None)
    return {
        "available": True,
        "name": name or torch.cuda.get_device_name(0),
        "count": torch.cuda.device_count(),
        "driver": driver,
        "memory": memory,
        "capability": ".".join(map(str, torch.cuda.get_device_capability(0))),
    }


def git_commit() -> dict[str, Any]:
    # GIT_COMMIT, when set, names the commit of a copied tree (CI runners copy trees, sometimes with a
    # stale .git): it wins over what git says.
    if os.environ.get("GIT_COMMIT"):
        return {"commit": os.environ["GIT_COMMIT"], "dirty": None, "source": "GIT_COMMIT"}
    here = os.path.dirname(os.path.abspath(__file__))
    commit = _run("git", "-C", here, "rev-parse", "HEAD")
    dirty = None
    if commit:
        try:
            status = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=30)
            dirty = bool(status.stdout.strip())
        except (OSError, subprocess.TimeoutExpired):
            pass
    return {"commit": commit, "dirty": dirty}


def collect(interpreter: bool, profile: str, profile_settings: dict[str, Any], workers: int, caches: str = "fresh") -> dict[str, Any]:
    import hypothesis
    import torch
    import triton

    return {
        "mode": "cpu-interpreter" if interpreter else "gpu",
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": torch.version.cuda,
        "gpu": gpu(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "compiler": compiler(),
        "cmake": _run("cmake", "--version"),  # builds the C++ runtime's runner (None: not found)
        "hypothesis": {"version": hypothesis.__version__, "profile": profile, **profile_settings},
        "git": git_commit(),
        "workers": workers,
        "caches": caches,  # "fresh" or "reused from DIR": a reused cache can hide a compile failure
        "command": " ".join(["pytest" if "pytest" in sys.argv[0] else os.path.basename(sys.argv[0]), *sys.argv[1:]]),
        "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
