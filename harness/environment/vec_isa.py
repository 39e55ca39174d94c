"""Inductor's CPU vector-ISA probe, run once per run instead of once per runner process.

Before its first C++ build (every AOTInductor package, CPU code), Inductor checks the vector ISAs the
CPU claims: each check (`VecISA.check_build`) compiles a test library and starts a Python process that
imports torch to load it, holding a lock in the shared cache. That is 26 s of a 38 s first AOTInductor
compile on the GPU runner, paid again by every runner process, since the answers are kept only in memory.
Here the first process to need them runs Inductor's probe as usual, recording each check's answer beside
the run's caches; the others run the same probe code with every check answered from that record. Same
code, same answers on the same machine: the same ISA list and build flags, without the subprocesses.

The process that runs the probe may be given a way to start a Python process (`python`: the run's zygote forks it,
torch already imported): while the probe runs, each check's Python process (`python -c CODE`, which imports torch and
loads the library) is started that way, with the same code, environment and working directory, and its exit status
read as subprocess's would be. On the GPU runner each such process otherwise imports torch again, most of the
probe's 55-70 s of CPU there. Where the zygote cannot serve one (an environment it was not started in), subprocess
starts it, as Inductor does.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from typing import Any, Callable

# Runs a Python command (its argv, env, cwd, timeout) and answers its exit status, or None where it cannot.
PythonStarter = Callable[[list[str], "dict[str, str] | None", "str | None", "float | None"], "int | None"]

FILE = "tcm-vec-isa.json"


def _key(isa: Any, code: str) -> str:
    # The flags too: Inductor checks some extensions by appending to an ISA's flags for one check.
    return f"{type(isa).__name__}|{getattr(isa, '_arch_flags', '')}|{hashlib.sha256(code.encode()).hexdigest()}"


class _ForkingSubprocess:
    """Stands for the subprocess module in Inductor's probe while it runs: a check's `python -c CODE` is started by
    `python`, everything else (and that too, where `python` cannot) by subprocess itself."""

    def __init__(self, python: PythonStarter):
        self._python = python

    def __getattr__(self, name: str) -> Any:
        return getattr(subprocess, name)

    def _status(self, args: Any, kwargs: dict[str, Any]) -> int | None:
        if not (isinstance(args, (list, tuple)) and len(args) >= 3 and args[0] == sys.executable and args[1] == "-c"):
            return None
        if set(kwargs) - {"env", "cwd", "timeout", "check", "stderr", "stdout"}:
            return None  # asked for what a forked process's status cannot give (its output, its input)
        if any(kwargs.get(stream) not in (None, subprocess.DEVNULL) for stream in ("stderr", "stdout")):
            return None
        return self._python(list(args), kwargs.get("env"), kwargs.get("cwd"), kwargs.get("timeout"))

    def check_call(self, args: Any, **kwargs: Any) -> int:
        status = self._status(args, kwargs)
        if status is None:
            return subprocess.check_call(args, **kwargs)
        if status:
            raise subprocess.CalledProcessError(status, args)
        return 0

    def run(self, args: Any, **kwargs: Any) -> subprocess.CompletedProcess[Any]:
        status = self._status(args, kwargs)
        if status is None:
            return subprocess.run(args, **kwargs)
        if status and kwargs.get("check"):
            raise subprocess.CalledProcessError(status, args)
        return subprocess.CompletedProcess(args, status)


def share(cache_dir: str, python: PythonStarter | None = None) -> None:
    """Make this process's Inductor answer its ISA checks from the run's record, or write that record (its checks'
    Python processes started by `python`, where given)."""
    # Here, not at the top: the plugin, which reads the record, loads into every pytest run, most of which need
    # no torch, and into the torch-free tools' environment, which has no filelock either.
    import torch._inductor.config as config
    from filelock import FileLock
    from torch._inductor import cpu_vec_isa

    check = getattr(getattr(cpu_vec_isa, "VecISA", None), "check_build", None)
    if config.cpp.vec_isa_ok is not None or check is None or not hasattr(cpu_vec_isa, "valid_vec_isa_list"):
        return  # set by the user, or a torch whose probe this does not know
    original = cpu_vec_isa.valid_vec_isa_list
    path = os.path.join(cache_dir, FILE)

    def probe_with(checker: Any) -> list[Any]:
        cpu_vec_isa.VecISA.check_build = checker
        forking = python is not None and getattr(cpu_vec_isa, "subprocess", None) is subprocess
        if forking:
            cpu_vec_isa.subprocess = _ForkingSubprocess(python)
        try:
            return original()
        finally:
            cpu_vec_isa.VecISA.check_build = check
            if forking:
                cpu_vec_isa.subprocess = subprocess

    def valid_vec_isa_list() -> list[Any]:
        cpu_vec_isa.valid_vec_isa_list = original  # asked once: later calls go straight to Inductor
        os.makedirs(cache_dir, exist_ok=True)
        with FileLock(path + ".lock"):
            if not os.path.exists(path):
                answers: dict[str, bool] = {}

                def recording(isa: Any, code: str) -> bool:
                    answers[_key(isa, code)] = ok = bool(check(isa, code))
                    return ok

                isas = probe_with(recording)
                tmp = f"{path}.{os.getpid()}"
                with open(tmp, "w") as f:
                    json.dump({"isas": [str(isa) for isa in isas], "checks": answers}, f)
                os.replace(tmp, path)
                return isas
            with open(path) as f:
                answers = json.load(f)["checks"]

        def answered(isa: Any, code: str) -> bool:
            key = _key(isa, code)
            return answers[key] if key in answers else check(isa, code)  # a check the record lacks runs for real

        return probe_with(answered)

    cpu_vec_isa.valid_vec_isa_list = valid_vec_isa_list


def recorded(cache_dir: str) -> dict[str, Any] | None:
    """What the run's probe found, for the fingerprint (None: no process needed it)."""
    try:
        with open(os.path.join(cache_dir, FILE)) as f:
            found = json.load(f)
    except (OSError, ValueError):
        return None
    return {"isas": found.get("isas"), "checks": len(found.get("checks", {}))}
