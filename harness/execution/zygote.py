"""New Python processes forked from a zygote: the interpreter's start and torch's import paid once a runner.

The warm-cache row's new process and the fresh-process row's serving process each stand for a process that has
never compiled anything, never imported the case and never touched the GPU. Started with `python`, each paid the
interpreter's start and its imports again, about 12 s of CPU under the matrix's load, in every cell of those rows.
A zygote pays it once: a process run as a script by its path (so it imports nothing of the harness), which imports
torch, triton and what loading an AOTInductor package imports (PRELOADED), never initializes CUDA, never compiles,
and forks a child for each request. The child is such a new process: its own session, the caller's pipes as stdin
and stdout, its log as stderr, the caller's environment, working directory and import path, and then the module or
script asked for, run as `python -m MODULE` or `python SCRIPT.py` runs it (runpy). The zygote reaps each child and
writes its exit status and CPU time to a file the caller named, since the caller is not the child's parent. Where
the zygote cannot serve (it died, fork is refused, or its imports initialized the CUDA driver), the caller starts
the process with subprocess.

    python zygote.py SOCKET_FD     (harness.execution.helper_process starts it; one a runner process)
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

# What every child imports anyway: torch, triton, and what a process that loads an AOTInductor package imports first
# (torch._inductor.package, and torch._dynamo with it). Not Inductor's compiler (torch._inductor.graph, compile_fx),
# which the warm-cache row's process imports itself: it registers operators (prims::inductor_*,
# quantized_decomposed::*) that a serving process has not, and the fresh-process row must meet a package that calls
# back into an operator it does not register.
PRELOADED = ("torch", "triton", "torch._inductor.package")
CUDA_ERROR_NOT_INITIALIZED = 3  # what the driver answers every call with until cuInit


def _cuda_initialized() -> bool:
    """Whether this process has initialized the CUDA driver (cuInit), after which a forked child cannot use the GPU.
    Loading the driver's library is not that: on a GPU machine torch's and Triton's imports load it without
    initializing it, and until then the driver answers cuDeviceGetCount with CUDA_ERROR_NOT_INITIALIZED."""
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({line.split()[-1] for line in f if "/libcuda.so" in line})
    except OSError:
        return False
    if not paths:
        return False
    import ctypes

    try:
        driver = ctypes.CDLL(paths[0], mode=os.RTLD_NOLOAD | os.RTLD_LAZY)  # the library loaded, not a new one
        count = ctypes.c_int()
        return driver.cuDeviceGetCount(ctypes.byref(count)) != CUDA_ERROR_NOT_INITIALIZED
    except (OSError, AttributeError):
        return True  # it cannot be asked: taken as initialized, and the caller starts its processes itself


def _reap(children: dict[int, str]) -> None:
    """Every child that ended: its status written (whole or absent) where its caller looks."""
    while children:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        path = children.pop(pid, None)
        if path is not None:
            with open(path + ".part", "w") as f:
                f.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_utime + usage.ru_stime}")
            os.replace(path + ".part", path)


def _child(request: dict, fds: list[int], sock: socket.socket, base_path: list[str]) -> None:
    """In the forked child: become the new process the request asks for; never returns."""
    code = 1
    try:
        os.setsid()
        sock.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        stdin, stdout = fds
        stderr = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = os.fdopen(0, "r", closefd=False)
        sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
        sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        if os.environ.get("PYTHONFAULTHANDLER"):
            import faulthandler

            faulthandler.enable(file=sys.stderr)
        pythonpath = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        import runpy

        # What `python -m MODULE` (the working directory) or `python SCRIPT.py` (the script's folder) puts first, unless -P.
        where = request["cwd"] if request.get("module") else os.path.dirname(os.path.abspath(request["script"]))
        first = [] if request.get("safe_path") else [where]
        if request.get("module"):
            sys.argv = ["-m", *request["args"]]
            sys.path[:] = [*first, *pythonpath, *base_path]
            runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        else:
            sys.argv = [request["script"], *request["args"]]
            sys.path[:] = [*first, *pythonpath, *base_path]
            runpy.run_path(request["script"], run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - what the child raises ends it, as it would end `python -m`
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a closed pipe: the caller has gone
                pass
        os._exit(code)


def main(fd: int) -> int:
    sock = socket.socket(fileno=fd)
    # The interpreter put this script's folder first on the path: not for torch's import to find modules in. The
    # rest, less the PYTHONPATH a child brings its own of, is the installation's.
    del sys.path[0]
    ours = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    base_path = [p for p in sys.path if p not in ours]
    import gc
    import importlib

    # torch.cuda.is_available() initializes the CUDA driver unless NVML answers it, and a child forked after that
    # cannot use the GPU; torch's modules may ask it while they import (Inductor's benchmarking module does).
    asked = os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK")
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    for module in PRELOADED:  # the imports every child would pay
        importlib.import_module(module)
    if asked is None:
        del os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"]
    else:
        os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = asked
    # The children's collections need not walk what the imports made (nor copy its pages from this process's).
    gc.collect()
    gc.freeze()
    if _cuda_initialized():  # a child could not use the GPU: let the caller start its processes itself
        print("zygote: the CUDA driver was initialized by the imports; not serving", file=sys.stderr, flush=True)
        return 1
    print(f"zygote: {', '.join(PRELOADED)} imported", file=sys.stderr, flush=True)

    children: dict[int, str] = {}
    signal.signal(signal.SIGCHLD, lambda signum, frame: _reap(children))
    sock.sendall(b"ready\n")
    while True:
        try:
            message, fds, _flags, _address = socket.recv_fds(sock, 1 << 20, 2)
        except OSError:
            return 0
        if not message:
            return 0
        request = json.loads(message)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})  # the child's pid is known before it is reaped
        try:
            pid = os.fork()
        except OSError as exc:
            pid, answer = -1, f"error {exc}"
        if pid == 0:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
            _child(request, fds, sock, base_path)
        if pid > 0:
            children[pid] = request["status"]
            answer = str(pid)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        for child_fd in fds:
            os.close(child_fd)
        sock.sendall(answer.encode())
        _reap(children)


if __name__ == "__main__":
    raise SystemExit(main(int(sys.argv[1])))
