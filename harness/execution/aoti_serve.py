"""Serve AOTInductor packages from a new Python process, as a serving process loads its models. It imports
torch and nothing of the harness or the case (run as a script by path, not as part of the package), so an
operator a package calls back into must be registered by the package itself, or the call fails here.

    python aoti_serve.py DEVICE

Answers "ready" once torch is imported. Then, a line at a time (harness.execution.cpp_runtime.PackageProcess):
"load N PACKAGE" loads a package as model N and answers "loaded"; "N INPUTS.pt OUTPUTS.pt" runs model N and
answers "ok"; either answers "error MESSAGE" (newlines as \\n) instead. One process serves every package of
a cell (one per dtype): each is loaded by a process that never imported the case, as before, without paying
for a new process and torch's import per package. Inductor's CPU ISA probe, which loading runs, is answered from
the run's record as in the runners (below).
"""

import importlib.util
import os
import sys

import torch


def _isa_probe_answered_from_the_runs_record() -> None:
    """Loading a package checks the machine against the one it was built on, and that asks Inductor which CPU
    vector ISAs this CPU has: the first time in a process, a probe that builds test libraries and starts a Python
    process per ISA, 20-60 s under the matrix's load, before the package is loaded. The run's runners recorded
    the probe's answers (harness/environment/vec_isa.py); this process takes them the same way, loading that one module by
    its path. It registers no operator and changes no answer: the case and the rest of the harness stay unimported."""
    cache = os.environ.get("TCM_RECORDS") or os.environ.get("TORCHINDUCTOR_CACHE_DIR")  # harness.environment.machine.records_dir
    if not cache:
        return
    harness_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location("_tcm_vec_isa", os.path.join(harness_dir, "environment", "vec_isa.py"))
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.share(cache)


def _error(exc: BaseException) -> str:
    return "error " + f"{type(exc).__name__}: {exc}"[:2000].replace("\n", "\\n")


def main(device: str) -> int:
    models = {}
    _isa_probe_answered_from_the_runs_record()
    print("ready", flush=True)
    for line in sys.stdin:
        if line.startswith("load "):
            _, index, package = line.rstrip("\n").split(" ", 2)
            try:
                models[index] = torch._inductor.aoti_load_package(package)
                print("loaded", flush=True)
            except Exception as exc:  # noqa: BLE001 - whatever loading raises is the answer
                print(_error(exc), flush=True)
            continue
        index, sent, received = line.split()
        try:
            # With their own strides (a view's gaps between rows): the package was compiled for them.
            inputs = [torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=device).copy_(t)
                      for t in torch.load(sent, weights_only=False)]
            out = models[index](*inputs)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            outputs = list(out) if isinstance(out, (list, tuple)) else [out]
            torch.save(([None if o is None else o.detach().cpu() for o in outputs], [t.detach().cpu() for t in inputs]), received)
            print("ok", flush=True)
        except Exception as exc:  # noqa: BLE001
            print(_error(exc), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
