"""The runner process's own side: its end of the protocol, its start, and what it checks between two cells.

A runner process (harness.processes.runner.Runner starts it; harness.execution.runner_main is what it runs) answers
its parent on its original stdout with Events; its own stdout and stderr (kernels' prints, warnings, faulthandler
dumps) go to the log file its parent reads on a crash. Between two cells it reads what the cell left (memory) and
whether the GPU still works (health): a cell that broke the CUDA context costs that cell, not the next.

torch is imported inside the functions, as the runner's imports order it: the environment the run gave the process
is read before anything in it may set a variable (RunnerChild).
"""

from __future__ import annotations

import gc
import os
import resource
import sys
import time
from typing import Callable

from harness.model.messages import CellRequest, Event, EventKind
from harness.model.outcome import CellResult, Memory
from harness.processes.helper_process import exit_with_asker, forked_by
from harness.processes.zygote import FORKED_ENV

CellRun = Callable[[CellRequest], tuple[CellResult, bool]]  # a cell's result, and whether the case's code ran


class RunnerChild:
    """This process as a runner: made first thing in its main, it keeps the run's environment as it came, moves the
    process's stdout to the log, and times the phases of its start."""

    def __init__(self) -> None:
        self.started_env = dict(os.environ)  # the run's environment, before anything in this process sets a variable
        exit_with_asker()
        self._protocol = os.fdopen(os.dup(1), "w", buffering=1)
        os.dup2(2, 1)  # anything printed by kernels or PyTorch goes to the log, not the protocol
        sys.stdout = os.fdopen(1, "w", buffering=1)
        # Since the parent started this process: the interpreter and every import up to here.
        self._phases = {"start": round(time.time() - float(os.environ.get("TCM_SPAWNED", time.time())), 2)}
        self._began = time.perf_counter()

    def send(self, event: Event) -> None:
        self._protocol.write(event.line())
        self._protocol.flush()

    def phase(self, name: str) -> None:
        """The part of the start that ended now, timed since the last one (the ready line in the log lists them)."""
        self._phases[name] = round(time.perf_counter() - self._began, 2)
        self._began = time.perf_counter()

    def start_device(self, device: str) -> None:
        """CUDA's start (the driver, the device's context, torch's allocator: 1-4 s where twenty processes start at once)
        made before the runner says it is ready, while it waits as a standby, not inside its cell. A program's first CUDA
        call does the same; the cell's code finds CUDA started, as the condition "what torch leaves in a process" says."""
        if device == "cuda":
            import torch

            torch.empty(1, device="cuda")
            torch.cuda.synchronize()
            self.phase("CUDA")

    def ready(self, device: str, broken_dtypes: list[str]) -> None:
        """Set aside what the imports left, and tell the parent this process takes cells."""
        # torch's import leaves millions of long-lived objects: the collection after every cell need not
        # walk them (it took 0.4-0.8 s a cell on the GPU runner).
        gc.collect()
        gc.freeze()
        self.phase("gc freeze")
        forker = forked_by() or "zygote"
        origin = f" (forked by the {forker} {os.environ[FORKED_ENV]})" if os.environ.get(FORKED_ENV) else ""
        print(f"runner ready{origin}: {', '.join(f'{k} {v:.2f} s' for k, v in self._phases.items())}", file=sys.stderr, flush=True)
        self.send(Event(EventKind.READY, device=device, broken_dtypes=broken_dtypes))

    def serve(self, device: str, run: CellRun) -> None:
        """Each CellRequest on stdin, run by `run`, answered with its result and then this process's health."""
        for line in sys.stdin:
            request = CellRequest.parse(line)
            before = _memory_before(device)
            result, ran_case_code = run(request)
            result.memory = _memory_after(device, before, between_cells=not (request.last and ran_case_code))
            self.send(Event(EventKind.RESULT, result=result, ran_case_code=ran_case_code))
            if not _health_check(device):
                self.send(Event(EventKind.UNHEALTHY))
                os._exit(3)
            self.send(Event(EventKind.HEALTHY))


def _health_check(device: str) -> bool:
    """Can this process still use the GPU? (Run after _memory_after, which synchronized and freed.)"""
    import torch

    if device != "cuda":
        return True
    try:
        return torch.ones(1, device="cuda").add_(1).item() == 2.0
    except Exception:
        return False


def _memory_before(device: str) -> float | None:
    import torch

    if device != "cuda":
        return None
    try:
        torch.cuda.reset_peak_memory_stats()
        return torch.cuda.memory_allocated() / 2**20
    except Exception:  # a context the previous cell broke: the health check deals with it
        return None


def _memory_after(device: str, allocated_before: float | None, between_cells: bool = True) -> Memory:
    """Read once the cell's artifacts are gone: what stays allocated is what the next cell inherits. After a process's
    last cell nothing is cleared away (0.3-1 s a cell: the process ends, and no cell inherits anything)."""
    import torch

    if between_cells:
        torch._dynamo.reset()  # the cell's compiled code goes now (the next cell resets too), so it is collected here
        gc.collect()
        # What survives is long-lived (registered operators, Inductor's and Triton's in-memory caches): frozen, the
        # next cell's collection does not walk it again. Unfrozen, the collection grew to 0.6 s a cell after some
        # hundred cells on a 2-core CPU, a fifth of a CI run's wall time.
        gc.freeze()
    memory = Memory(host_peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    try:
        with open("/proc/self/statm") as f:
            memory.host_rss_mb = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError):
        pass
    if device == "cuda":
        try:
            torch.cuda.synchronize()
            memory.gpu_allocated_before_mb = allocated_before
            if between_cells:
                torch.cuda.empty_cache()
                memory.gpu_allocated_after_mb = torch.cuda.memory_allocated() / 2**20
            memory.gpu_peak_mb = torch.cuda.max_memory_allocated() / 2**20
            memory.gpu_reserved_mb = torch.cuda.memory_reserved() / 2**20
        except Exception:
            pass
    return memory
