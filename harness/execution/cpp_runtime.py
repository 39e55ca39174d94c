"""AOTInductor's C++ runtime. A small C++ program, built against the installed torch, that loads a package
and runs it with no Python in the process, as a C++ server would.

A package that still calls back into Python (a custom_op whose implementation is a Python function) loads
in Python with `aoti_load_package` but not here: only this runtime tells the truth for deployment.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import shutil
import subprocess
from typing import Any

import torch
from filelock import FileLock

from harness.environment import machine
from harness.execution.paths import serving
from harness.model.errors import HarnessError
from harness.processes.helper_process import HelperProcess

SOURCE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpp")
BUILD_TIMEOUT_S = 900.0


class BuildFailure(HarnessError):
    """The runner could not be built here, with the build's first error line: the harness's own program, so the cell's
    error, the harness's (harness.execution.builders.aoti_cpp), never a finding about the package it would run."""


class RuntimeFailure(HarnessError):
    """The package failed in the C++ runtime: it did not load, a call raised, or the process died."""


def _compiler() -> tuple[str, str]:
    """The compiler AOTInductor uses (so the runner and the packages agree), and its version line."""
    found = machine.compiler()
    return found.path or found.resolved or "c++", found.version or "unknown"


def built_runners(fallback: str) -> str:
    """Where runners are built and kept: the user's cache folder (XDG_CACHE_HOME, else ~/.cache), shared by every run
    and reproducer on this machine, or `fallback` (the run's caches) where that folder cannot be written. The runner is
    the harness's own program, not a compile the chart checks: a runner of the same key (torch's build and library,
    the compiler, the source) is the same program, so a fresh run need not build it again (25 s of CPU on the CI
    machine, as long as the AOTInductor cells that wait for it)."""
    home = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "triton-compat-matrix")
    try:
        os.makedirs(home, exist_ok=True)
    except OSError:
        return fallback
    return home if os.access(home, os.W_OK) else fallback


def _libtorch() -> str:
    """The library the runner links, as installed: its path, size and time (another build of one torch version differs)."""
    lib = os.path.join(os.path.dirname(os.path.abspath(torch.__file__)), "lib")
    found = []
    for name in ("libtorch.so", "libtorch_cpu.so", "libtorch_cuda.so", "libc10.so"):
        try:
            stat = os.stat(os.path.join(lib, name))
        except OSError:
            continue
        found.append(f"{name} {stat.st_size} {stat.st_mtime_ns}")
    return f"{lib}: {'; '.join(found)}"


def _key(compiler: str, version: str) -> str:
    digest = hashlib.sha256(f"{torch.__version__}\n{torch.version.git_version}\n{_libtorch()}\n{compiler}\n{version}\n".encode())
    for name in sorted(os.listdir(SOURCE_DIR)):
        with open(os.path.join(SOURCE_DIR, name), "rb") as f:
            digest.update(name.encode() + f.read())
    return digest.hexdigest()[:16]


def first_error_line(output: str) -> str:
    """The build's first error: CMake's first "CMake Error" with its reason (the indented lines after it), else
    the compiler's first line that says error. CMake's warnings are passed over, though their text may say
    "error" (torch's CUDA config, without the CUDA toolkit, warns that "the next warning / error will give you
    more info" before the error that says what failed)."""
    lines = output.splitlines()
    for n, line in enumerate(lines):
        if line.startswith("CMake Error"):
            reason = itertools.takewhile(lambda next_line: next_line.startswith(" ") and next_line.strip(), lines[n + 1:])
            return " ".join([line.strip(), *(part.strip() for part in reason)])[:300]
    in_cmake_warning = False
    for line in lines:
        # A CMake diagnostic runs from its "CMake Warning ..." line to the first empty line.
        in_cmake_warning = line.startswith("CMake ") or in_cmake_warning and bool(line.strip())
        if not in_cmake_warning and re.search(r"\berror\b", line, re.IGNORECASE):
            return line.strip()[:300]
    last = [line.strip() for line in lines if line.strip()]
    return (last[-1] if last else "no output")[:300]


def executable(cache_dir: str, run_dir: str) -> str:
    """The runner, built once per torch build, compiler and source under `cache_dir` (built_runners: the first
    process to need it builds it while the others wait). A failed build is recorded in `run_dir`, this run's own,
    so it is tried once a run: a later run (after installing CMake, say) tries again."""
    compiler, version = _compiler()
    key = _key(compiler, version)
    root = os.path.join(cache_dir, "aoti-runner", key)
    os.makedirs(root, exist_ok=True)
    os.makedirs(run_dir, exist_ok=True)
    exe, failed = os.path.join(root, "build", "aoti_runner"), os.path.join(run_dir, f"aoti-runner-{key}.FAILED")
    with FileLock(os.path.join(root, "lock")):  # fcntl underneath: the OS drops it if its holder dies
        if os.path.exists(exe):
            return exe
        if os.path.exists(failed):
            with open(failed) as f:
                raise BuildFailure(f.read())
        try:
            _build(root, compiler)
        except BuildFailure as exc:
            with open(failed, "w") as f:
                f.write(str(exc))
            raise
    return exe


def _build(root: str, compiler: str) -> None:
    cmake = shutil.which("cmake")
    if cmake is None:
        raise BuildFailure("cmake not found: install CMake (e.g. pip install cmake) to build the C++ runtime's runner")
    build = os.path.join(root, "build")
    log = os.path.join(root, "build.log")
    steps = [
        [cmake, "-S", SOURCE_DIR, "-B", build, f"-DCMAKE_PREFIX_PATH={torch.utils.cmake_prefix_path}",
         f"-DCMAKE_CXX_COMPILER={compiler}", "-DCMAKE_BUILD_TYPE=Release"],
        [cmake, "--build", build, "-j", str(os.cpu_count() or 1)],
    ]
    with open(log, "w") as out:
        for step in steps:
            try:
                done = subprocess.run(step, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False)
            except subprocess.TimeoutExpired:
                raise BuildFailure(f"building the C++ runner took over {BUILD_TIMEOUT_S:.0f} s") from None
            out.write(f"$ {' '.join(step)}\n{done.stdout}{done.stderr}\n")
            if done.returncode != 0:
                raise BuildFailure(f"building the C++ runner failed ({os.path.basename(compiler)}): "
                                   f"{first_error_line(done.stderr + done.stdout)} (log: {log})")




class PackageProcess(HelperProcess):
    """A package loaded in a process of its own (the C++ runner here, or a fresh Python process: see
    harness.execution.paths.serving), which answers `ready` ("loaded"), then "ok" or "error MESSAGE" for each call; calling
    it sends the tensors there. A process that serves several packages (`ready` is "ready") loads each with
    `load`, and each call names the package it runs.

    Like `aoti_load_package`'s model, it takes the flattened tensor inputs (non-tensor inputs were traced
    as constants) and returns the flat outputs. In-place writes made by the package are copied back into
    the caller's tensors, so mutation is checked as on every other path.
    """

    def __init__(self, command: list[str], device: str, workdir: str, who: str = "the C++ runner", ready: str = "loaded"):
        super().__init__(command, workdir, prefix="aoti-process-", who=who, failure=RuntimeFailure)
        self.device = device
        answer = self.answer()
        if answer != ready:
            raise RuntimeFailure(_message(answer) or f"{who} printed nothing")
        self.calls = 0
        self.packages: list[str] = []

    def load(self, package: str) -> ServedPackage:
        """Load one more package into a process that serves several; RuntimeFailure where it does not load."""
        self.packages.append(package)
        self.send(f"load {len(self.packages) - 1} {package}")
        answer = self.answer()
        if answer != "loaded":
            raise RuntimeFailure(_message(answer))
        return ServedPackage(self, len(self.packages) - 1)

    def __call__(self, *inputs: Any) -> list[torch.Tensor | None] | None:
        return self.call("", inputs)

    def call(self, prefix: str, inputs: tuple[Any, ...]) -> list[torch.Tensor | None] | None:
        """Run the package (the one `prefix` names, in a process that serves several) on the inputs: sent and taken back
        as harness.execution.paths.serving says, the package's writes into them copied back."""
        self.calls += 1
        sent, received = (os.path.join(self.dir, f"{self.calls}.{part}.pt") for part in ("in", "out"))
        torch.save(serving.sent_tensors(inputs), sent)
        self.send(f"{prefix}{sent} {received}")
        answer = self.answer()
        if answer != "ok":
            raise RuntimeFailure(_message(answer))
        outputs, after = torch.load(received, weights_only=False)  # written by our runner: torch::pickle_save or torch.save
        return serving.as_returned(inputs, outputs, after, self.device)


class ServedPackage:
    """One of the packages a serving process loaded: calling it runs that package there."""

    def __init__(self, process: PackageProcess, index: int):
        self.process, self.index = process, index

    def __call__(self, *inputs: Any) -> list[torch.Tensor | None] | None:
        return self.process.call(f"{self.index} ", inputs)


def _message(answer: str) -> str:
    return answer.removeprefix("error ").replace("\\n", "\n")  # the runner sends newlines as \n

