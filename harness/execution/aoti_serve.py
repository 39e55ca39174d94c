"""The fresh-process row's server: `python aoti_serve.py DEVICE`, a new Python process that serves AOTInductor packages.

As a serving process loads its models (harness.execution.paths.serving, which the cell's reproducer prints and runs the
same way). Run as a script by path, it imports torch and nothing of the harness or the case: the path module and the
vector-ISA records below are loaded by their paths, not as parts of the package.
"""

import importlib.util
import os
import sys

HARNESS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _by_path(name: str, *parts: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HARNESS_DIR, *parts))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _isa_probe_answered_from_the_runs_record() -> None:
    """Loading a package checks the machine against the one it was built on, and that asks Inductor which CPU
    vector ISAs this CPU has: the first time in a process, a probe that builds test libraries and starts a Python
    process per ISA, 20-60 s under the matrix's load, before the package is loaded. The run's runners recorded
    the probe's answers (harness/environment/vec_isa.py); this process takes them the same way, loading that one module by
    its path. It registers no operator and changes no answer: the case and the rest of the harness stay unimported."""
    cache = os.environ.get("TCM_RECORDS") or os.environ.get("TORCHINDUCTOR_CACHE_DIR")  # harness.environment.machine.records_dir
    if cache:
        _by_path("_tcm_vec_isa", "environment", "vec_isa.py").share(cache)


if __name__ == "__main__":
    _isa_probe_answered_from_the_runs_record()
    raise SystemExit(_by_path("_tcm_serving", "execution", "paths", "serving.py").main(sys.argv[1]))
