"""The run's runner template: the process its runner processes are forked from, their imports already paid.

A runner process imports, before its first cell, the harness's execution modules (Inductor's compiler with them), the
run's cases, and at its first compile what Dynamo and Inductor import then: 3-4 s of CPU a runner under the matrix's
load, and a run starts a runner per worker at once, then one for each that a crash, a timeout or a poisoned CUDA
context replaces. The run's zygote (harness.processes.zygote) forks this template once its own imports are done; the
template imports all that once (`prepare`), then forks each runner the run's workers ask for (zygote.serve), over a
socket the zygote bound at its start. A runner forked from it runs RUNNER_MODULE as a new runner process does, finds
what it imports imported, and its device's dtype probe recorded by a process the template started before its imports.

It serves only what it stands for: a runner process (harness.processes.runner.RUNNER_MODULE) of its own case specs, from the
working directory it imported them in, with an import path that finds each module their import imported where the
template found it (a worker's path gains the case files' folders as it collects), in the environment the zygote
imported torch and Triton with (as the zygote checks), and with the autotune timing it installed (AS_PREPARED).
Anything else it refuses, and the worker asks the zygote, as it does when there is no template. A child forked after
the CUDA driver was initialized, or with another thread running, may not work at all: where the case modules' import
did either (a library that touches the GPU as it is imported), a child the template forked just before it serves the
runners instead, which import the cases themselves (`_spare_without_the_cases`); where the template's own imports did,
it serves none, its socket closes, and the runners are forked from the zygote.

Its main() runs in the child the run's zygote forks for it (zygote.main, told this module's name by
helper_process.RunnerTemplate), given the socket's descriptor, the runners' PYTHONPATH and their case specs.
"""

from __future__ import annotations

import functools
import gc
import importlib
import importlib.machinery
import os
import signal
import socket
import sys
import time
from typing import TYPE_CHECKING

from harness.authoring import registry
from harness.environment import machine
from harness.processes import autotune_timing, helper_process, zygote
from harness.processes.runner import RUNNER_MODULE
from harness.processes.zygote import ForkRequest

if TYPE_CHECKING:  # the plugin imports this module through the runner's parent side, which needs no torch
    from harness.authoring.case import Case

# What a runner's first compile and first export import, besides what the runner imports itself: Inductor's compile_fx
# and its graph passes, Dynamo's Inductor backend, export's tracer (about 150 modules; on the GPU runner a process's first
# compile took 0.6-2 s of CPU more than its second).
FIRST_COMPILE = ("torch._inductor.compile_fx", "torch._dynamo.backends.inductor", "torch.export._trace")
# Dynamo's configuration for a process that calls one compiled function on many examples (the condition "many
# examples in one process"): set in every runner before its first cell, and in a reproducer that replays a cell's inputs.
DYNAMO_FOR_MANY_EXAMPLES = {"recompile_limit": 64, "fail_on_recompile_limit_hit": True}
AS_PREPARED = (autotune_timing.ENV,)  # what `prepare` read from the environment, which a runner must share with it
# How long the dtype probe beside the template may take (its CUDA start and three small Triton compiles: about 2 s on the
# GPU runner, 1.6 s on the interpreter) before it is ended: the runners wait on its lock meanwhile.
PROBE_TIMEOUT_S = 120


# The cells' code (Inductor's compiler with it), the dtype probe's and the runner's own side, imported before the case
# modules as a runner always had them (named, not imported at the top: they are a floor above, or need torch).
CELLS_CODE = ("harness.execution.execute", "harness.environment.probe", "harness.processes.runner_child")


def prepare(case_specs: list[str]) -> dict[str, Case]:
    """What a runner process does before it knows its device (harness.execution.runner_main), and the template once for the run's
    runners: the cases (their problems the plugin reports), with the cells' code imported before them."""
    autotune_timing.install()  # before the case modules: one that binds Triton's benchmarker binds the capped one
    for module in CELLS_CODE:
        importlib.import_module(module)
    cases = _loaded(tuple(case_specs))
    import torch._dynamo.config as dynamo_config

    # Many dtypes and shapes per cell: never fall back to eager silently at the recompile limit.
    for name, value in DYNAMO_FOR_MANY_EXAMPLES.items():
        if hasattr(dynamo_config, name):
            setattr(dynamo_config, name, value)
    return cases


@functools.cache
def _loaded(case_specs: tuple[str, ...]) -> dict[str, Case]:
    """The cases, loaded once a process: a runner forked from the template has them as the template loaded them (their
    checks read each case's source, 0.2-0.4 s a runner), and no cell has run in the template."""
    return registry.load(case_specs).cases


def _where(spec: importlib.machinery.ModuleSpec | None) -> str | None:
    """A module's file (a namespace package's folders), as an import finds it."""
    if spec is None:
        return None
    return spec.origin if spec.origin else str(list(spec.submodule_search_locations or []))


def _found(name: str, path: list[str]) -> str | None:
    return _where(importlib.machinery.PathFinder.find_spec(name, path))


def _imported_from(name: str) -> str | None:
    """Where this process got a top-level module it imported: an editable install's own finder, not the path, finds
    `harness` in a project's checkout, which a runner's path may then find there too."""
    module = sys.modules.get(name)
    return _where(getattr(module, "__spec__", None)) if module is not None else None


def _refusal(specs: list[str], cwd: str, imported: dict[str, str | None], base_path: list[str], request: ForkRequest) -> str | None:
    """Why a runner the request asks for would not be the process this template stands for, or None."""
    if request.module != RUNNER_MODULE or list(request.args) != specs:
        return f"it forks runners of {specs} only"
    if request.cwd != cwd:
        return "its working directory differs from the one the cases were imported in"
    # A runner's path (as the interpreter's -m puts it) must find each module the cases' import imported where the
    # template got it; one its path does not find at all comes from the finders the template had (an editable install's).
    path = [request.cwd, *(p for p in request.env.get("PYTHONPATH", "").split(os.pathsep) if p), *base_path]
    elsewhere = sorted(name for name, origin in imported.items() if (found := _found(name, path)) is not None and found != origin)
    if elsewhere:
        return f"its PYTHONPATH finds {', '.join(elsewhere[:3])} elsewhere than the cases' import did"
    differ = [k for k in AS_PREPARED if request.env.get(k) != os.environ.get(k)]
    return f"its environment differs in {', '.join(differ)}, read as the template prepared" if differ else None


def _record_the_dtype_probe(runners: socket.socket) -> None:
    """Have the run's dtype probe (harness.environment.probe.broken_dtypes) measured and recorded in the run's caches
    while this template imports, by a grandchild nobody waits for: the runners forked from the template then read the
    record. Otherwise the first runner measures it once forked (about 2 s on the GPU runner) while the others wait on
    its lock, and a run's first cells begin that much later. Where the grandchild fails or is ended, a runner measures it
    as before; without a record folder (no TORCHINDUCTOR_CACHE_DIR) every runner does. It keeps no copy of the template's
    `runners` socket: where the template ends, the socket must close at once, so that the workers ask the zygote."""
    record_dir = machine.records_dir()
    if not record_dir:
        return
    try:
        pid = os.fork()
    except OSError:
        return
    if pid:
        os.waitpid(pid, 0)
        return
    try:
        runners.close()
        if os.fork() == 0:
            signal.alarm(PROBE_TIMEOUT_S)  # its default action ends the process, and its lock with it
            from harness.environment import probe

            probe.broken_dtypes(machine.cells_device(), record_dir)
    except BaseException:  # noqa: BLE001 - a runner measures it where this one did not
        import traceback

        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(0)


def _hash_triton_once() -> None:
    """Triton's key of its own installation (the hash of its sources and libtriton, which every kernel's cache key
    holds): a process's first Triton compile or launch computes it, 0.3-0.8 s, and keeps it for the process. Computed
    here, each runner forked has it: the same value, from the same files, as a new interpreter computes."""
    from triton.runtime import cache

    cache.triton_key()


def _begin_runner() -> None:
    helper_process.begin_anew("runner template")


def _spare_without_the_cases(runners: socket.socket, before: set[str], base_path: list[str], specs: list[str], cwd: str) -> tuple[int, int] | None:
    """A child forked before the case modules are imported, waiting to hear whether their import leaves this template
    safe to fork (harness.processes.zygote.unsafe_to_fork): a library that initializes CUDA as it is imported (FlagGems)
    does not, and then this child serves the runners instead, which import the cases themselves, everything else
    imported already. Without it each runner was forked from the zygote and imported the harness's cells' code,
    Inductor's compiler and export's tracer too (FlagGems's runners started in a median 7.9 s on the GPU runner, the
    built-in cases' 0.2-0.7 s). Returns the pipe's end that tells it and its pid; None where this process is not safe to
    fork even before the cases."""
    if zygote.unsafe_to_fork():
        return None
    told, tell = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(told), os.close(tell)
        return None
    if pid:
        os.close(told)
        return tell, pid
    os.close(tell)
    if os.read(told, 16) != b"serve":  # end of file: the template serves, or ended
        os._exit(0)
    _hash_triton_once()
    imported = {name: _imported_from(name) for name in {m.partition(".")[0] for m in set(sys.modules) - before}}
    gc.collect()
    gc.freeze()
    print(f"runner template {os.getpid()}: ready without the cases, which each runner imports", file=sys.stderr, flush=True)
    os._exit(zygote.serve([runners], base_path, parent=os.getppid(), in_child=_begin_runner, name="runner template",
                          refusal=lambda request: _refusal(specs, cwd, imported, base_path, request)))


def main(argv: list[str]) -> int:
    runners, pythonpath, specs = socket.socket(fileno=int(argv[0])), argv[1], argv[2:]
    parent, began, cwd = os.getppid(), time.perf_counter(), os.getcwd()
    ours = [p for p in pythonpath.split(os.pathsep) if p]
    base_path = [p for p in sys.path[1:] if p not in ours]  # the installation's, as the zygote's children get it
    before = set(sys.modules)
    _record_the_dtype_probe(runners)
    autotune_timing.install()  # first, as prepare() has it: a module that binds Triton's benchmarker binds the capped one
    with zygote.gpus_known(zygote.gpus_torch_sees()):  # torch's modules and the harness's; not the case modules
        for module in (*CELLS_CODE, *FIRST_COMPILE):  # a runner imports FIRST_COMPILE at its first compile, not before its first cell
            importlib.import_module(module)
    spare = _spare_without_the_cases(runners, before, base_path, specs, cwd)
    prepare(specs)
    why_not = zygote.unsafe_to_fork()
    if why_not and spare is not None:
        print(f"runner template: its cases' import left {why_not}: a template forked before it serves the runners",
              file=sys.stderr, flush=True)
        runners.close()
        os.write(spare[0], b"serve")
        while os.getppid() == parent:  # the spare serves while this process lives, which ends with the run's zygote
            time.sleep(0.5)
        return 0
    if spare is not None:
        os.close(spare[0])  # told nothing, it ends
        os.waitpid(spare[1], 0)
    if why_not:
        print(f"runner template: not serving: {why_not}; the runners are forked from the zygote", file=sys.stderr, flush=True)
        runners.close()
        return 1
    _hash_triton_once()
    # Where this process found each top-level module it imported: a runner must find them there too.
    imported = {name: _imported_from(name) for name in {m.partition(".")[0] for m in set(sys.modules) - before}}
    gc.collect()
    gc.freeze()
    print(f"runner template {os.getpid()}: ready in {time.perf_counter() - began:.2f} s", file=sys.stderr, flush=True)
    return zygote.serve([runners], base_path, parent=parent, in_child=_begin_runner, name="runner template",
                        refusal=lambda request: _refusal(specs, cwd, imported, base_path, request))
