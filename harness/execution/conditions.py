"""The conditions a cell runs under. Each way a runner process differs, on purpose, from a fresh `python` that imports
the case, with what code there sees and why; and what the audit finds the same.

A cell must have the outcome its program has in a fresh interpreter. The runner is not one: it was forked from a process
that imported torch, the harness and the cases for it, and keeps what a cell needs to be measured (its caches, its
limits, its own main program). It serves one cell, so nothing a cell's code leaves in a process (a library's own
caches) reaches another; with --cells-per-process it serves several, and the chart says so. The invisibility audit (tests/harness/test_invisible.py) reads what a
case's code can see of the process, in a runner during cells and in a fresh `python`, and fails on any difference no
condition here names. docs/how-cells-run.md's table is made from this list (`table`), and a test keeps them equal.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass


@dataclass(frozen=True)
class Condition:
    """One deliberate difference: where the audit sees it (`seen_as`: patterns of the audit's keys, fnmatch's), what a
    case's code there sees, and why a cell runs so."""

    name: str
    seen_as: tuple[str, ...]
    what: str
    why: str

    def covers(self, key: str) -> bool:
        return any(fnmatch.fnmatchcase(key, pattern) for pattern in self.seen_as)


CONDITIONS = (
    Condition("the runner is the main program", ("__main__", "argv0", "session_leader", "stdin.isatty", "stdout.isatty"),
              "`__main__` is harness.execution.runner_main; stdin is the pipe its worker sends cells on, stdout and stderr its log; it "
              "leads a session of its own",
              "a worker's cells are sent to it one at a time (sharing it until a fault unless --cells-per-process says "
              "otherwise, each that did not pass run again alone in a process of its own, and the chart says so), and a "
              "timeout kills its whole process group, compile workers included"),
    Condition("a thread watches the worker", ("threads",),
              "one thread more than the program's own",
              "it ends the runner when the pytest worker that asked for it dies, so a kernel spinning on the GPU does not "
              "outlive the run"),
    Condition("crashes leave a stack", ("faulthandler", "environ:PYTHONFAULTHANDLER", "environ:PYTHONUNBUFFERED"),
              "faulthandler enabled; PYTHONFAULTHANDLER and PYTHONUNBUFFERED set",
              "a segfault or abort is charted with the Python stack the log holds"),
    Condition("fresh compile caches for the run", ("environ:TORCHINDUCTOR_CACHE_DIR", "environ:TRITON_CACHE_DIR", "triton_knob:cache.dir"),
              "Inductor's and Triton's caches in the run's own folder, made empty when the run starts, shared by its cells (and its "
              "compile-ahead slices, which fill Triton's with an autotuned case's configs before its cells)",
              "a cache left by another run could serve a compile that fails today (--cache-dir reuses one on purpose, "
              "and the chart says so); within a run, each cell's Inductor graphs are its own (the graph observer below)"),
    Condition("one compile thread", ("environ:TORCHINDUCTOR_COMPILE_THREADS", "inductor_config:compile_threads"),
              "TORCHINDUCTOR_COMPILE_THREADS=1: Inductor compiles its kernels in the runner, without a pool of workers",
              "sixteen runners each starting a pool of compile workers starve the machine; what a kernel compiles to "
              "does not depend on where"),
    Condition("the cores split between the runners", ("environ:OMP_NUM_THREADS", "torch:threads", "torch:interop_threads"),
              "OMP_NUM_THREADS = cores / workers (unless set), and torch's thread counts with it",
              "runners that each start a thread per core make CPU-bound cells crawl when they run together"),
    Condition("Triton's interpreter without a GPU", ("environ:TRITON_INTERPRET", "triton_knob:runtime.interpret"),
              "TRITON_INTERPRET=1 where torch sees no GPU",
              "the kernels run on the CPU at all; the chart says so, and skips what the interpreter cannot test"),
    Condition("the run's import path", ("environ:PYTHONPATH", "sys.path"),
              "sys.path (and PYTHONPATH) is the pytest process's: the case files' folders first, then the installation's",
              "the runner imports the case modules where the run's collection found them, and the processes a cell starts "
              "(warm caches, a served package) import them as it does"),
    Condition("the harness's own variables", ("environ:TCM_*",),
              "TCM_* variables: the run's zygote, the worker that asked, the cell's name for the profiler, the autotune "
              "timing, and for a cell run alone the folder of the run's records of the machine's answers",
              "the runner and the processes a cell starts reach the run's zygote, profiler and records through them; no "
              "library reads them"),
    Condition("many examples in one process", ("dynamo_config:recompile_limit", "dynamo_config:fail_on_recompile_limit_hit"),
              "Dynamo's recompile_limit is 64, and hitting it fails instead of falling back to eager (a reproducer that "
              "replays the cell's inputs sets the same)",
              "a cell calls one compiled function on up to 20 drawn shapes and dtypes, more than a program's default limit "
              "of 8; past the limit Dynamo would run the rest eagerly and the cell would pass without compiling"),
    Condition("hypothesis draws the examples", ("hypothesis:*", "recursion_limit"),
              "hypothesis's settings profile `tcm-cells` (no `explain` phase); inside a cell, a hypothesis test is "
              "running and has raised the recursion limit",
              "the examples come from the case's strategies, reproducibly; explain traces every line and slows Dynamo "
              "several times, without changing which examples are drawn"),
    Condition("the collector's frozen objects", ("gc.frozen",),
              "gc.freeze() was called: what was imported before the first cell is never collected again",
              "the collection after each cell took 0.4-0.8 s walking torch's millions of long-lived objects"),
    Condition("autotuning within a budget", ("replaced:triton.testing.do_bench",),
              "triton.testing.do_bench is the harness's: at most 1 ms of warm-up and of repetitions per config (--perf: "
              "Triton's own)",
              "each config still runs on the cell's tensors, with its hooks; which is fastest is not what a cell checks, "
              "and timing in full took most of the matrix's time. The config chosen can differ, as it can between two runs"),
    Condition("modules imported before the case", ("modules.loaded",),
              "torch, Triton, Inductor's compiler, export's tracer and the harness are imported before the case module, and "
              "Triton's key of its own installation computed (triton_key: a hash of its files)",
              "imported once for the run rather than once per runner; a program imports the same modules at its first "
              "compile. Their imports ask torch for the device through torch itself (harness.processes.zygote.gpus_known), "
              "so no torch function is replaced and Dynamo's tables hold torch's own"),
    Condition("the graph observer", ("inductor_config:post_grad_custom_post_pass",),
              "Inductor's post_grad_custom_post_pass is a pass that reads each graph and changes nothing, with a cache "
              "key of the cell's own",
              "the chart says whether a compiled graph traced into the kernel; with a key, Inductor's FX graph and "
              "AOTAutograd caches save and look up as in a new process, and never serve a graph another cell compiled"),
    Condition("what torch leaves in a process", ("environ:_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR", "environ:CUDA_MODULE_LOADING",
                                                 "environ:TRITON_PTXAS_PATH", "triton_knob:nvidia.ptxas",
                                                 "cuda:*", "dynamo:counters", "inductor_config:aot_inductor.metadata"),
              "what torch sets in the process as it initializes CUDA, compiles a Triton kernel (torch's own ptxas for "
              "Triton), loads a C++ wrapper or builds an AOTInductor package, as the cell so far or the device probe left "
              "it (an earlier cell's variables are gone: the audit checks each cell's first inputs); Dynamo's counters of "
              "the cell so far",
              "torch sets the same in any program at the same step; the runner starts CUDA before its cell (while it waits as "
              "a standby) and checks the GPU after each, and puts torch's configuration and the environment back "
              "before each cell (harness.execution.baseline)"),
)

# What the audit compares and finds the same in a runner as in a fresh `python` (the rest of each group, where a
# condition above names some of its keys).
AUDITED_SAME = (
    ("the environment", "every variable but those above (pytest's, xdist's and execnet's own are removed)"),
    ("replaced functions", "every public function of torch, torch.cuda, torch.compiler, torch.library, torch.autograd, "
                           "torch._dynamo, torch.export, triton, triton.testing (but do_bench), triton.runtime, inspect, "
                           "functools, os, builtins, importlib, subprocess and multiprocessing is the one they define"),
    ("Dynamo's tables", "how Dynamo treats torch.cuda.is_available, device_count, current_device, "
                        "get_device_capability, get_device_properties, get_device_name, is_initialized, "
                        "torch.accelerator.is_available and torch.compiler.is_compiling: constant-folded or not, and their "
                        "trace rule"),
    ("configuration", "Dynamo's and Inductor's (but the entries above) and Triton's knobs; torch's configuration is put "
                      "back before each cell (harness.execution.baseline)"),
    ("torch's global state", "default dtype and device, grad and inference mode, deterministic algorithms, float32 "
                             "matmul precision, cuDNN benchmark, TF32"),
    ("the process", "working directory, signal handlers, umask, resource limits, warnings filters, the root logger, "
                    "gc thresholds"),
)


def deliberate(key: str) -> Condition | None:
    """The condition a difference the audit found is, or None: a difference nothing accounts for."""
    return next((c for c in CONDITIONS if c.covers(key)), None)


def table() -> str:
    """The conditions and what is audited the same, as docs/how-cells-run.md shows them."""
    lines = ["| condition | what a case's code sees in a runner | why |", "| --- | --- | --- |"]
    lines += [f"| {c.name} | {c.what} | {c.why} |" for c in CONDITIONS]
    lines += ["", "| audited the same as in a fresh `python` | what |", "| --- | --- |"]
    lines += [f"| {area} | {what} |" for area, what in AUDITED_SAME]
    return "\n".join(lines)
