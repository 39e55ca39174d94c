"""New Python processes forked from a zygote: the interpreter's start and torch's import paid once a run.

A runner process, the warm-cache row's new process and the fresh-process row's serving process each stand for a
process that has never compiled anything, never touched the GPU and (but the runner) never imported the case.
Started with `python`, each paid the interpreter's start and its imports again, about 9-12 s of CPU under the
matrix's load: every runner, and every replacement after a crash or a poisoned CUDA context, and every cell of those
two rows. A zygote pays it once: a process run as a script by its path (so it imports nothing of the harness), which
imports torch, triton and what loading an AOTInductor package imports (PRELOADED), never initializes CUDA, never
compiles, and forks a child for each request. The child is such a new process: its own session, the caller's pipes
as stdin and stdout, its log as stderr, the caller's environment, working directory and import path, and then the
module or script asked for, run as `python -m MODULE` or `python SCRIPT.py` runs it (runpy). The zygote reaps each
child and writes its exit status and CPU time to a file the caller named, since the caller is not the child's parent.

A run with pytest workers has one zygote (harness.plugin starts it): each worker asks it for its runner processes,
and each runner for its helper processes, over a socket in the run's own folder. A process without a run's zygote (a
runner started alone) starts its own at its first helper. The zygote ends when the process that started it closes
its end of the lifeline (or dies). Where it cannot serve (it died, fork is refused, its imports initialized the CUDA
driver, or the request's environment differs from its own in what torch's and triton's imports read: IMPORT_TIME_ENV)
it answers so, and the caller starts the process with subprocess.

A process given a zygote (ZYGOTE_ENV: the test suite gives its matrix runs its own) forks its run's zygote from that
one rather than starting it: the same imports, made once. The given zygote forks it only where the two environments
agree in everything but READ_WHEN_USED and the harness's own variables (torch's modules read more as they import
than IMPORT_TIME_ENV names), and only for its own interpreter; else the run's zygote is started with subprocess.

A run's zygote also forks its runner template (harness.processes.runner_template) where asked: a child that goes on
to import what a runner process imports before its first cell, and forks the run's runners from a socket of its own.

    python zygote.py LIFELINE_FD [SOCKET_PATH [RUNNERS_SOCKET_PATH TEMPLATE_MODULE RUNNERS_PYTHONPATH CASE_SPEC...]]
        (harness.processes.helper_process starts it)
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import importlib
import json
import os
import select
import signal
import socket
import sys
from typing import Any, Callable, Iterator

# What every child imports anyway: torch, triton, and what a process that loads an AOTInductor package imports first
# (torch._inductor.package, and torch._dynamo with it). Not Inductor's compiler (torch._inductor.graph, compile_fx),
# which the warm-cache row's process imports itself: it registers operators (prims::inductor_*,
# quantized_decomposed::*) that a serving process has not, and the fresh-process row must meet a package that calls
# back into an operator it does not register.
PRELOADED = ("torch", "triton", "torch._inductor.package")
CUDA_ERROR_NOT_INITIALIZED = 3  # what the driver answers every call with until cuInit
# What the interpreter's start and the imports read from the environment and keep (libgomp its threads at load,
# Inductor's config its defaults, the loader its paths, ...): a child asking for other values would run with the
# zygote's, so its request is refused and its caller starts it with subprocess.
IMPORT_TIME_ENV = ("TORCH", "PYTORCH", "TRITON", "OMP_", "MKL_", "KMP_", "CUDA_", "LD_", "PYTHONHASHSEED", "PYTHONOPTIMIZE",
                   "PYTHONDONTWRITEBYTECODE", "PYTHONWARNINGS", "PYTHONDEVMODE", "PYTHONMALLOC", "PYTHONUTF8", "PYTHONIOENCODING")
# But these, read where they are used: CUDA_VISIBLE_DEVICES (one GPU a worker on a machine with several) by the driver
# at cuInit, which the zygote never calls; the compile caches (each test's runner has its own) at each compile. And
# those the asking process's own code set while it ran (the request's `set_while_running`: torch sets
# CUDA_MODULE_LOADING as it initializes CUDA, Inductor CUDA_HOME and Triton's tools' paths as it compiles), read
# after that, where they are used, as in the child.
READ_WHEN_USED = ("CUDA_VISIBLE_DEVICES", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
HARNESS_ENV_PREFIX = "TCM_"  # the harness's own variables (harness.execution.conditions), which no library reads
FORKED_ENV = "TCM_FORKED_BY"  # in a child's environment: the zygote's pid (a runner says so in its log)
# Set in a zygote's environment by a caller that has not imported torch: the zygote adds interpreter_env's part itself,
# once it has imported torch, so that the run's processes start before the run's controller imports torch.
DECIDE_ENV = "TCM_ZYGOTE_DECIDES_DEVICE"


@dataclasses.dataclass(frozen=True)
class ForkRequest:
    """A new process as the interpreter would start one to run a module (-m), code (-c) or a script file with `args`
    (one of module, code, script), with its working directory, environment and stderr file; `status` is the file the zygote writes its exit
    status and CPU time to once it reaps it; `set_while_running`, what the asking process's code set in its environment
    (READ_WHEN_USED). Sent as one JSON message, the child's stdin and stdout beside it."""

    args: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    stderr: str
    status: str
    module: str | None = None
    code: str | None = None
    script: str | None = None
    safe_path: bool = False  # python -P: neither the script's folder nor the working directory goes on sys.path
    set_while_running: tuple[str, ...] = ()
    executable: str = sys.executable  # the asking process's interpreter: a zygote stands only for its own

    @classmethod
    def of_command(cls, command: list[str], **where: Any) -> ForkRequest | None:
        """The request for `command` run by this interpreter, or None where it is no Python module, script or -c code."""
        if len(command) < 2 or command[0] != sys.executable:
            return None
        safe_path = command[1] == "-P"
        arguments = command[2:] if safe_path else command[1:]
        if len(arguments) >= 2 and arguments[0] in ("-m", "-c"):
            target = {"module" if arguments[0] == "-m" else "code": arguments[1], "args": tuple(arguments[2:])}
        elif arguments and arguments[0].endswith(".py"):
            target = {"script": arguments[0], "args": tuple(arguments[1:])}
        else:
            return None
        return cls(**target, safe_path=safe_path, **where)

    def what(self) -> str:
        """What the child runs, as a log line names it."""
        return self.module or self.script or "-c"

    def message(self) -> bytes:
        return json.dumps(dataclasses.asdict(self)).encode()

    @classmethod
    def parse(cls, message: bytes) -> ForkRequest:
        data = json.loads(message)
        return cls(**{**data, "args": tuple(data["args"]), "set_while_running": tuple(data["set_while_running"])})


def cuda_initialized() -> bool:
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


def _imported_with(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(IMPORT_TIME_ENV) and k not in READ_WHEN_USED}


def _decided(env: dict[str, str]) -> dict[str, str] | None:
    """`env` with what its DECIDE_ENV leaves to the zygote decided as this one decided it (on the GPUs it saw, through
    the same CUDA_VISIBLE_DEVICES), or None where this zygote cannot decide it for that environment."""
    if DECIDE_ENV not in env:
        return env
    if _GPUS_SEEN is None or env.get("CUDA_VISIBLE_DEVICES") != os.environ.get("CUDA_VISIBLE_DEVICES"):
        return None
    return {**{k: v for k, v in env.items() if k != DECIDE_ENV}, **interpreter_env(_GPUS_SEEN > 0)}


def _refusal(request: ForkRequest) -> str | None:
    """Why this zygote cannot stand for the process the request asks for, or None."""
    if request.executable != sys.executable:
        return f"it runs {sys.executable}, not {request.executable}"
    decided = _decided(request.env)
    if decided is None:
        return "the request leaves the device to its zygote, and this one saw other devices"
    if request.script is not None and os.path.abspath(request.script) == os.path.abspath(__file__):
        ours, theirs = _all_but_harness(dict(os.environ)), _all_but_harness(decided)
    else:
        ours, theirs = _imported_with(dict(os.environ)), _imported_with(decided)
    differ = sorted(k for k in ours.keys() | theirs.keys() if ours.get(k) != theirs.get(k) and k not in request.set_while_running)
    return f"its environment differs in {', '.join(differ)}, read when torch and triton were imported" if differ else None


def _all_but_harness(env: dict[str, str]) -> dict[str, str]:
    """What a zygote asked to fork another zygote compares: the whole environment but READ_WHEN_USED and the harness's own
    variables. The new zygote stands for every process of a run, and torch's modules read more as they import than
    IMPORT_TIME_ENV names (Inductor its compiler from CXX, AOTInductor's build flags, ...)."""
    return {k: v for k, v in env.items() if k not in READ_WHEN_USED and not k.startswith(HARNESS_ENV_PREFIX)}


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
            try:
                with open(path + ".part", "w") as f:
                    f.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_utime + usage.ru_stime}")
                os.replace(path + ".part", path)
            except OSError:  # its caller's folder is gone (a run that ended first): no one is left to read it
                pass


def _child(request: ForkRequest, fds: list[int], sockets: list[socket.socket], base_path: list[str], in_child: Callable[[], None] | None) -> None:
    """In the forked child: become the new process the request asks for; never returns."""
    code = 1
    try:
        os.setsid()
        for sock in sockets:
            sock.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        stdin, stdout = fds
        stderr = os.open(request.stderr, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = os.fdopen(0, "r", closefd=False)
        sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
        sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
        os.chdir(request.cwd)
        os.environ.clear()
        os.environ.update(request.env)
        os.environ[FORKED_ENV] = str(os.getppid())
        if in_child is not None:
            in_child()
        if os.environ.get("PYTHONFAULTHANDLER"):
            import faulthandler

            faulthandler.enable(file=sys.stderr)
        pythonpath = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        import runpy

        # What `python -m MODULE` (the working directory), `python -c CODE` (the working directory, as "") or `python
        # SCRIPT.py` (the script's folder) puts first, unless -P.
        if request.module:
            where = request.cwd
        elif request.code is not None:
            where = ""
        else:
            where = os.path.dirname(os.path.abspath(request.script or ""))
        first = [] if request.safe_path else [where]
        sys.path[:] = [*first, *pythonpath, *base_path]
        if request.module:
            sys.argv = ["-m", *request.args]
            runpy.run_module(request.module, run_name="__main__", alter_sys=True)
        elif request.code is not None:
            sys.argv = ["-c", *request.args]
            exec(compile(request.code, "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        else:
            assert request.script is not None
            sys.argv = [request.script, *request.args]
            runpy.run_path(request.script, run_name="__main__")
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


def interpreter_env(gpu: bool) -> dict[str, str]:
    """What a process's environment needs where torch sees a GPU (`gpu`), or none: without one, Triton's interpreter runs
    the kernels on the CPU (TRITON_INTERPRET, which Triton reads as it decorates kernels, its own among them at its
    import). The runners' environment (harness.processes.runner.runner_env) takes it from here, and so does a zygote left to
    decide it (DECIDE_ENV), since its caller has not imported torch."""
    return {} if gpu else {"TRITON_INTERPRET": "1"}


def gpus_torch_sees() -> int:
    """How many GPUs torch.cuda.is_available() and device_count() see (0: none), asked in a child forked for the
    question: asked here, they would start a thread (the CUDA driver's, or NVML's where NVML answers, which stays after
    nvmlShutdown), and a child forked from a process that runs a thread may deadlock."""
    import torch

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(write, str(torch.cuda.device_count() if torch.cuda.is_available() else 0).encode())
        finally:
            os._exit(0)
    os.close(write)
    answer = os.read(read, 16)
    os.close(read)
    os.waitpid(pid, 0)
    return int(answer or 0)


_GPUS_SEEN: int | None = None  # what gpus_torch_sees answered this zygote (main)
NVML_CHECK_ENV = "PYTORCH_NVML_BASED_CUDA_CHECK"  # torch's own switch for a device check that does not poison fork


@contextlib.contextmanager
def gpus_known(count: int) -> Iterator[None]:
    """While torch's own modules import: torch.cuda.is_available() answered by torch itself from `count` (gpus_torch_sees'
    answer), without the CUDA driver or NVML: torch's check for a process that will fork (NVML_CHECK_ENV) returns
    device_count(), which returns the count torch caches once CUDA is initialized (torch.cuda._cached_device_count),
    here set for the imports and cleared after. Torch's modules may ask as they import (Inductor's benchmarking module
    does: `use_experimental_benchmarker = ... and torch.cuda.is_available()`), which would start a thread here. No
    function is replaced: Dynamo's tables (the functions it constant-folds, those it skips) are filled with torch's
    own, as in a fresh process. Not for the case modules' imports: they ask as they would anywhere, and where that
    initializes CUDA the process serves none (unsafe_to_fork). A torch without that cache asks for real, with the same
    consequence."""
    import torch.cuda

    if getattr(torch.cuda, "_cached_device_count", 0) is not None:  # another torch, or CUDA already initialized
        yield
        return
    switch = os.environ.get(NVML_CHECK_ENV)
    os.environ[NVML_CHECK_ENV] = "1"
    torch.cuda._cached_device_count = count
    try:
        yield
    finally:
        torch.cuda._cached_device_count = None
        if switch is None:
            del os.environ[NVML_CHECK_ENV]
        else:
            os.environ[NVML_CHECK_ENV] = switch


def unsafe_to_fork() -> str | None:
    """Why a child forked from this process might not work, or None: the CUDA driver initialized, or another thread."""
    if cuda_initialized():
        return "the CUDA driver was initialized by the imports"
    threads = len(threads_running())
    return f"{threads} threads run" if threads > 1 else None


def threads_running() -> set[int]:
    """The threads this process runs, its main thread among them: their ids."""
    try:
        return {int(tid) for tid in os.listdir("/proc/self/task")}
    except OSError:
        import threading

        return {thread.native_id or 0 for thread in threading.enumerate()}


def _listening(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.bind(path)
    sock.listen(256)
    return sock


def _lifeline_fd(fd: int) -> int:
    """The lifeline's descriptor, moved off stdin where this zygote was forked with it as its stdin (by another zygote,
    helper_process.start_zygote): stdin becomes /dev/null, as a zygote started with subprocess has it, so that no
    descriptor a child receives is ever numbered 0 and closed as it is put there."""
    if fd != 0:
        return fd
    moved, devnull = os.dup(0), os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return moved


def main(argv: list[str]) -> int:
    """LIFELINE_FD [SOCKET_PATH [RUNNERS_SOCKET_PATH TEMPLATE_MODULE RUNNERS_PYTHONPATH CASE_SPEC...]]: serve on the
    lifeline (and the socket); with a runners' socket, fork a runner template (TEMPLATE_MODULE's main(), as
    harness.processes.runner_template has it) that serves there once its imports are done."""
    lifeline = socket.socket(fileno=_lifeline_fd(int(argv[0])))
    # Bound before the imports: the run's workers connect at once and wait for the greeting.
    listening = [_listening(argv[1])] if len(argv) > 1 else []
    runners = _listening(argv[2]) if len(argv) > 2 else None
    # The interpreter put this script's folder first on the path: not for torch's import to find modules in. The
    # rest, less the PYTHONPATH a child brings its own of, is the installation's.
    del sys.path[0]
    ours = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    base_path = [p for p in sys.path if p not in ours]
    global _GPUS_SEEN
    gpus = _GPUS_SEEN = gpus_torch_sees()  # torch imported, Triton not yet
    if os.environ.pop(DECIDE_ENV, None):  # before Triton's import, which reads it
        os.environ.update(interpreter_env(gpus > 0))
    with gpus_known(gpus):
        for module in PRELOADED:  # the imports every child would pay
            importlib.import_module(module)
    # The children's collections need not walk what the imports made (nor copy its pages from this process's).
    gc.collect()
    gc.freeze()
    unsafe = unsafe_to_fork()
    if unsafe:  # a child could not use the GPU, or might deadlock: let the callers start their processes themselves
        print(f"zygote: not serving: {unsafe}", file=sys.stderr, flush=True)
        return 1
    print(f"zygote: {', '.join(PRELOADED)} imported", file=sys.stderr, flush=True)
    if runners is not None:
        _fork_runner_template(runners, argv[3], argv[4], argv[5:], [lifeline, *listening], base_path)
    return serve(listening, base_path, lifeline=lifeline)


def _fork_runner_template(runners: socket.socket, module: str, pythonpath: str, specs: list[str], ours: list[socket.socket],
                          base_path: list[str]) -> None:
    """A child that goes on to import what a runner imports before its first cell, then forks the run's runners from
    runners' socket (harness.processes.runner_template). Where it cannot be forked, the socket closes: the runners are
    asked of this zygote."""
    try:
        pid = os.fork()
    except OSError as exc:
        print(f"zygote: no runner template: {exc}", file=sys.stderr, flush=True)
        runners.close()
        return
    if pid:
        runners.close()  # the template's now
        return
    code = 1
    try:
        for sock in ours:
            sock.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        # As `python -m` with that PYTHONPATH puts it, in the working directory the runners share with the run.
        sys.path[:] = [os.getcwd(), *(p for p in pythonpath.split(os.pathsep) if p), *base_path]
        # Imported, not run as __main__: the runners forked from it find its module as the one they import.
        code = importlib.import_module(module).main([str(runners.fileno()), pythonpath, *specs])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - the template's failure is logged, and its socket closes with it
        import traceback

        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(code)


def serve(listening: list[socket.socket], base_path: list[str], lifeline: socket.socket | None = None, parent: int | None = None,
          refusal: Callable[[ForkRequest], str | None] | None = None, in_child: Callable[[], None] | None = None, name: str = "zygote") -> int:
    """Fork a child for each request until the lifeline closes (or, without one, the `parent` process ends): a
    request's `refusal` (the environment's, by default) answered instead; `in_child` run in each child once its
    environment is the request's. `name` says in the log who refused."""
    children: dict[int, str] = {}
    signal.signal(signal.SIGCHLD, lambda signum, frame: _reap(children))
    greeting = f"ready {os.getpid()}".encode()
    clients = []
    if lifeline is not None:
        lifeline.sendall(greeting)
        clients.append(lifeline)
    while True:
        readable, _, _ = select.select([*clients, *listening], [], [], None if parent is None else 1.0)
        if parent is not None and os.getppid() != parent:
            return 0
        for sock in readable:
            if sock in listening:
                client, _ = sock.accept()
                try:
                    client.sendall(greeting)
                except OSError:
                    client.close()
                    continue
                clients.append(client)
                continue
            try:
                message, fds, _flags, _address = socket.recv_fds(sock, 1 << 20, 2)
            except OSError:
                message, fds = b"", []
            if not message:  # the caller has gone; with the lifeline, the run
                if sock is lifeline:
                    return 0
                clients.remove(sock)
                sock.close()
                continue
            request = ForkRequest.parse(message)
            refused = _refusal(request) or (refusal(request) if refusal else None)
            answer = f"refused {refused}" if refused else _serve(request, fds, children, [*clients, *listening], base_path, in_child)
            if refused:
                print(f"{name} {os.getpid()}: refused {request.what()}: {refused}",
                      file=sys.stderr, flush=True)
                for fd in fds:
                    os.close(fd)
            try:
                sock.sendall(answer.encode())
            except OSError:
                pass
            _reap(children)


def _serve(request: ForkRequest, fds: list[int], children: dict[int, str], sockets: list[socket.socket], base_path: list[str],
           in_child: Callable[[], None] | None) -> str:
    """Fork the child a request asks for: its pid, or why not."""
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})  # the child's pid is known before it is reaped
        try:
            pid = os.fork()
        except OSError as exc:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
            return f"refused fork: {exc}"
        if pid == 0:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
            _child(request, fds, sockets, base_path, in_child)
        children[pid] = request.status
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        return str(pid)
    finally:
        for child_fd in fds:
            os.close(child_fd)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
