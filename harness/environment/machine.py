"""What this machine has, read for a run's fingerprint (harness.model.fingerprint): versions, GPU, compiler, commit."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
from typing import Callable

from harness.authoring import registry
from harness.model.fingerprint import INTERPRETER, Compiler, Fingerprint, GitCommit, Gpu, ProfileUsed
from harness.model.settings import Profile

# Where a runner finds the run's records of what this machine answered (harness.environment.vec_isa, probe): beside the
# run's Inductor cache, unless the runner's caches are its own (a cell confirmed alone starts from empty caches, but from
# the machine's answers, which are not a compile's).
RECORDS_ENV = "TCM_RECORDS"


def records_dir() -> str | None:
    """The folder of the run's records of this machine's answers: TCM_RECORDS, else the Inductor cache's folder."""
    return os.environ.get(RECORDS_ENV) or os.environ.get("TORCHINDUCTOR_CACHE_DIR")

READ_S = 300  # how long reading this machine in a process of its own may take


def _run(*cmd: str) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0].strip() if out.returncode == 0 and text else None


def compiler() -> Compiler:
    """The C++ compiler Inductor and AOTInductor will call, as CXX and Inductor's own search see it."""
    try:
        from torch._inductor import (
            cpp_builder,  # here, not at the top: the plugin is loaded into every pytest run, most of which need no torch
        )

        resolved = cpp_builder.get_cpp_compiler()
    except Exception as exc:  # noqa: BLE001 - recorded, not fatal
        resolved = f"unknown ({type(exc).__name__}: {exc})"
    path = shutil.which(resolved) if resolved and not resolved.startswith("unknown") else None
    return Compiler(cxx=os.environ.get("CXX"), resolved=resolved, path=os.path.realpath(path) if path else None,
                    version=_run(resolved, "--version") if path else None)


def cells_device() -> str:
    """The device a run's cells use, but rows that name their own: its GPU, else the CPU (Triton's interpreter)."""
    import torch  # here, not at the top: the plugin is loaded into every pytest run, most of which need no torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def gpu() -> Gpu:
    import torch  # here, not at the top: the plugin is loaded into every pytest run, most of which need no torch

    if not torch.cuda.is_available():
        return Gpu(available=False)
    query = _run("nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader")
    name, driver, memory = ([s.strip() for s in query.split(",")] + [None, None, None])[:3] if query else (None, None, None)
    return Gpu(available=True, name=name or torch.cuda.get_device_name(0), count=torch.cuda.device_count(), driver=driver,
               memory=memory, capability=".".join(map(str, torch.cuda.get_device_capability(0))))


def git_commit() -> GitCommit:
    # GIT_COMMIT, when set, names the commit of a copied tree (CI runners copy trees, sometimes with a
    # stale .git): it wins over what git says.
    if os.environ.get("GIT_COMMIT"):
        return GitCommit(commit=os.environ["GIT_COMMIT"], source="GIT_COMMIT")
    here = os.path.dirname(os.path.abspath(__file__))
    commit = _run("git", "-C", here, "rev-parse", "HEAD")
    dirty = None
    if commit:
        try:
            status = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=30)
            dirty = bool(status.stdout.strip())
        except (OSError, subprocess.TimeoutExpired):
            pass
    return GitCommit(commit=commit, dirty=dirty)


def this_machine() -> Fingerprint:
    """What this machine and its installs are, with nothing of a run: the versions, the GPU, the CPU, the C++ compiler,
    CMake and the commit. Seconds: it imports torch and Inductor's C++ builder, asks the GPU, and starts nvidia-smi,
    the compiler, cmake and git; a run reads it beside its first cells (read_in_a_process)."""
    import torch  # here, not at the top: the plugin is loaded into every pytest run, most of which need no torch
    import triton

    return Fingerprint(
        mode=INTERPRETER if cells_device() == "cpu" else "gpu",
        torch=torch.__version__,
        triton=triton.__version__,
        cuda=torch.version.cuda,
        gpu=gpu(),
        python=platform.python_version(),
        platform=platform.platform(),
        cpus=os.cpu_count(),
        cpu=cpu_model(),
        compiler=compiler(),
        cmake=_run("cmake", "--version"),
        git=git_commit(),
    )


def read_in_a_process(env: dict[str, str] | None = None,
                      start: Callable[[list[str], dict[str, str]], tuple[int, bytes] | None] | None = None) -> Fingerprint | None:
    """this_machine(), read by a Python process of its own in this one's environment or `env` (a thread of this process
    could meet a module half-initialized that the main thread, loading cases, imports at the same moment); None where
    that process fails. `start` runs it where it can, saying its exit status and what it printed (a run forks it from its
    zygote, which imported torch already: 0.1 s of CPU instead of 4 s), else subprocess does."""
    command = [sys.executable, "-m", "harness.environment.machine"]
    env = {**(os.environ if env is None else env), "PYTHONPATH": registry.search_path()}  # this harness, not another
    try:
        done = start(command, env) if start is not None else None
        if done is None:
            out = subprocess.run(command, capture_output=True, timeout=READ_S, check=False, env=env)
            done = out.returncode, out.stdout
        status, printed = done
        return Fingerprint.from_json(json.loads(printed)) if status == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None


def fingerprint(this: Fingerprint, profile: Profile, workers: int, caches: str = "fresh") -> Fingerprint:
    """A run's fingerprint: this machine (this_machine()) with the run's command, examples profile, workers, caches and time."""
    import hypothesis  # here, not at the top: the plugin is loaded into every pytest run, most of which need no hypothesis

    return dataclasses.replace(this, hypothesis=ProfileUsed.from_json({"version": hypothesis.__version__, **profile.to_json()}),
                               workers=workers, caches=caches,
                               command=shlex.join(["pytest" if "pytest" in sys.argv[0] else os.path.basename(sys.argv[0]), *sys.argv[1:]]),
                               time=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))


def cpu_model() -> str | None:
    """The CPU's model name: two machines of one kind, with as many cores, can differ in speed."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), None)
    except OSError:
        return platform.processor() or None


if __name__ == "__main__":  # read_in_a_process
    print(json.dumps(this_machine().to_json()))
