"""The tests' command template: the process the tests' own matrix runs (`python -m pytest --matrix ...`, `python -m
harness ...`) are forked from, with what a run's controller imports before its first cell already imported.

A matrix run's controller pays the interpreter's start, torch's import and the planted cases' (whose triton_op
decorator imports Dynamo): about 8.5 s of CPU on the CI machine's 2 cores, before it does what a test checks, and the
tests start about fifty. Forked from this process (by harness.processes.zygote.serve, as a run's zygote forks its
runners), each finds those modules imported, the same ones from the same files in the same environment. It preloads
nothing of a pytest plugin's own distribution (the harness, hypothesis, xdist): pytest rewrites the asserts of those as
it imports them, and would warn that it could not. Only the tests use it (tests/harness/conftest.py, `run_python`):
a user's run starts its controller as the interpreter does; so do the tests that check a run's process itself (its
signals, its interpreter, the invisibility audit).

    python command_template.py ZYGOTE_PY LIFELINE_FD SOCKET_PATH

ZYGOTE_PY is harness/processes/zygote.py, loaded by its path: this process imports nothing of the harness.
"""

import gc
import importlib
import importlib.util
import os
import socket
import sys

# What a run's controller imports besides the harness and the pytest plugins: torch, Triton, and what the planted cases'
# triton_op and custom_op import (Dynamo with them). Not Inductor's compiler, which the controller never imports.
CONTROLLER_IMPORTS = ("torch", "triton", "torch._inductor.package", "torch._dynamo", "torch._library.triton",
                      "torch._higher_order_ops.triton_kernel_wrap", "pytest", "sympy", "numpy")
# Variables pytest and xdist set in the test process (the test running, the worker's id): not read by any import.
PYTEST_VARIABLES = ("PYTEST_", "COLUMNS", "LINES")


def _zygote(path):
    spec = importlib.util.spec_from_file_location("tcm_tests_zygote", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # where its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _refusal(zygote, request):
    """Why a forked child would not be the process the request asks for: its environment differs from this one's in a
    variable an import may have read (Inductor reads CXX as it imports), or None."""
    def compared(env):
        return {k: v for k, v in zygote._all_but_harness(env).items() if not k.startswith(PYTEST_VARIABLES)}

    ours, theirs = compared(dict(os.environ)), compared(request.env)
    differ = sorted(k for k in ours.keys() | theirs.keys() if ours.get(k) != theirs.get(k) and k not in request.set_while_running)
    return f"its environment differs in {', '.join(differ)}" if differ else None


def main(argv):
    zygote = _zygote(argv[0])
    lifeline = socket.socket(fileno=int(argv[1]))
    listening = zygote._listening(argv[2])
    del sys.path[0]  # this script's folder, put first by the interpreter: the children bring their own path
    ours = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    base_path = [p for p in sys.path if p not in ours]
    with zygote.gpus_known(zygote.gpus_torch_sees()):  # as a run's zygote imports: no thread started by asking for GPUs
        for module in CONTROLLER_IMPORTS:
            importlib.import_module(module)
    gc.collect()
    gc.freeze()
    unsafe = zygote.unsafe_to_fork()
    if unsafe:
        print(f"command template: not serving: {unsafe}", file=sys.stderr, flush=True)
        return 1
    # A forked child is told its zygote's pid (FORKED_ENV), which the processes it starts would inherit: not this one's.
    return zygote.serve([listening], base_path, lifeline=lifeline, name="command template",
                        refusal=lambda request: _refusal(zygote, request), in_child=lambda: os.environ.pop(zygote.FORKED_ENV, None))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
