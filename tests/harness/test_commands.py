"""Every command the project prints runs as printed: in README.md, docs/*.md, examples/**, the docstrings and
comments of harness/ and cases/, and the commands the harness itself prints.

Where the commands come from (`extract`):
- Markdown (README.md, docs/*.md, examples/**/*.md): each line of a fenced block without a language or with a
  shell one (bash, sh, shell, console), a trailing backslash joining it to the next and a trailing `# comment`
  dropped; and each inline code span of the prose, which may wrap a line.
- Python (harness/**, cases/**, examples/**/*.py): each inline code span on a line, in a docstring, a comment or a
  string alike; and each line of a docstring indented deeper than its text (a literal block).
- YAML (examples/**/*.yml): each line, a leading `#` dropped (a commented-out step is an example too), a trailing
  backslash joining it to the next and a trailing `# comment` dropped.
- Of those, a command is text whose first word (after `NAME=value` assignments and a folder such as `old/bin/`)
  is one of COMMAND_WORDS and has a word after it; `timeout @stage` (an outcome) is not one. Commands joined by
  `&&` are taken one by one.

How each is checked: CHECKS holds every command's text, exactly as extracted, with the way it is run (its `kind`)
and, where the text has placeholders (FILE, OLD.json, a CI variable, a user's module), what stands in for them and
what the run's folder holds. A command the table does not know fails the test, and so does an entry no text
prints any more. The kinds:
- collect: the matrix (or pytest) command as printed, plus `--collect-only -q` (a matrix run takes minutes): it
  must exit 0, collect cells (tests, for the harness's own) and leave no case module out. They run in one helper
  interpreter, which imports torch once, through the entry point the command's first word names (the console
  script's function, pytest.main), from the command's folder, with sys.path as that entry point has it and the
  modules the command imported dropped after each. The console script itself runs in the baseline test below.
  A `whole` one (`cases`, `python -c`) runs as printed instead. Under `timeout`, timeout's own options are run
  around `true`, the command it wraps collected.
- run: as printed, in bash (the results tools, on committed results files standing in for a run's: seconds).
- help: the command's `--help` form, for a synopsis (`[--out FILE]`) or a command named without its arguments;
  every option the synopsis names must be in the help; the arguments `bench` passes on to pytest are collected.
- pip-dry: `pip install --dry-run --no-deps --no-build-isolation --no-index ...` (a local install, offline).
- pip-parse: an install from a package index: pip's own parser reads the options and each requirement, offline.
- bash-n: `bash -n`, for the whole CI script (a quarter of an hour).
- script: the Python a heredoc (`python - <<'PY'`) feeds, compiled.
- library: needs a kernel library (`why` names the module it imports) and a GPU, as its README says: without the
  library, every module left out must be left out for want of that module alone.
- printed: printed by the harness, and checked where it is printed (the test named).
- internal: the harness's own child process, started with requests on stdin; not a command for a user.
- fragment: not a command line, a command or an option named in a sentence.
Commands the harness prints are got by running or calling the code that prints them, then run.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import dataclasses
import functools
import gc
import glob
import importlib.util
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from importlib.metadata import entry_points, version

from harness.model.cell import Cell
from harness.model.outcome import CellResult, Outcome, Stage
from harness.reporting import support
from harness.reporting.diff import accept_command, against_baseline

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLANTED = os.path.join(ROOT, "tests", "harness", "planted.py")  # conftest's, without importing the runner into the helper
COMMAND_WORDS = ("triton-compat-matrix", "python", "python3", "pytest", "pip", "bash", "cmake", "lint-imports", "timeout")
INSTALLED = any(ep.value == "harness.plugin" for ep in entry_points(group="pytest11"))
SMALL_RESULTS = "reports/evidence/gpu/isolation-fresh-process/results.json"  # a committed results file of 24 cells
UPGRADE = "reports/triton-upgrade/triton-{}/results.json"  # three environments: Triton 3.6.0, 3.8.0, 3.9.0


def _gpu_parts() -> dict[str, str]:
    """The GPU chart dealt into the four parts a --shard=K/4 run writes (each cell to one part, each part's
    fingerprint its own), in a temporary folder: what the commands that merge parts are run on."""
    folder = tempfile.mkdtemp(prefix="tcm-gpu-parts-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    with open(os.path.join(ROOT, "reports", "gpu", "results.json")) as f:
        chart = json.load(f)
    parts = {}
    for k in range(1, 5):
        fingerprint = {key: value for key, value in chart["fingerprint"].items() if key not in ("shards", "reruns")}
        part = {**chart, "fingerprint": {**fingerprint, "shard": {"index": k, "count": 4}}, "cells": chart["cells"][k - 1::4]}
        path = os.path.join(folder, f"shard-{k}-results.json")
        with open(path, "w") as f:
            json.dump(part, f)
        parts[f"reports/shard-{k}-of-4/results.json"] = path
    return parts


GPU_PARTS = _gpu_parts()
MY_KERNELS = "examples/my_kernels.py"
# The workflow's own env values, and the variables its steps set, for part 1 (examples/ci/gpu-matrix-shards.yml).
WORKFLOW = {'"$KILL_AFTER"': "5m", '"$SHARD_TIME_LIMIT"': "60m", "$MATRIX_ARGS": "-n auto", '"$CASES"': "tests/triton_cases.py",
            '"${timings[@]}"': "--shard-timings=reports/gpu/results.json", '"$SHARD/$SHARD_COUNT"': "1/4",
            '"$out/logs"': "reports/shard-1-of-4/logs", '"$out"': "reports/shard-1-of-4"}
TCM_PACKAGE = "triton-compat-matrix @ git+https://github.com/YOUR-ORG/triton-compat-matrix@v0.1.0"


@dataclasses.dataclass(frozen=True)
class Check:
    kind: str
    why: str = ""
    root: bool = False  # run from the checkout (the text names its files), else from a fresh folder
    plant: tuple[tuple[str, str], ...] = ()  # (path in the folder, the checkout's file it copies; "" an empty file, "." the checkout)
    subs: tuple[tuple[str, str], ...] = ()  # placeholders, replaced in order
    returncodes: tuple[int, ...] = (0,)
    whole: bool = False  # collect: run as printed, not its collect-only form (it takes a second)
    pytest_args: str | None = None  # help: the arguments a bench or repeat passes on to pytest, collected too


def collect(**kw) -> Check:
    return Check("collect", **kw)


def run(**kw) -> Check:
    return Check("run", **kw)


def helped(**kw) -> Check:
    return Check("help", **kw)


def pip_dry(**kw) -> Check:
    return Check("pip-dry", **kw)


def pip_parse(why: str, **kw) -> Check:
    return Check("pip-parse", why, **kw)


def fragment(why: str) -> Check:
    return Check("fragment", why)


def printed(test: str) -> Check:
    return Check("printed", test)


MY_PKG = (("my_pkg/__init__.py", ""), ("my_pkg/kernels.py", MY_KERNELS))
CHART = (("chart.json", SMALL_RESULTS),)
REGISTRY = "from a package index: the test stays offline"

CHECKS: dict[str, Check] = {
    # Installing.
    "pip install ./triton-compat-matrix": pip_dry(plant=(("triton-compat-matrix", "."),)),
    "pip install -e .": pip_dry(root=True),
    'pip install -e ".[test]"': pip_dry(root=True),
    "pip install --no-deps .": pip_dry(root=True),
    "pip install --no-deps ./triton-compat-matrix": pip_dry(plant=(("triton-compat-matrix", "."),)),
    "old/bin/pip install -e .": pip_dry(root=True, why="old/bin/ is the venv the line makes: this environment's pip"),
    "new/bin/pip install -e .": pip_dry(root=True, why="new/bin/ is the venv the line makes: this environment's pip"),
    # The extra of the installed package: pip takes the package as installed; only matplotlib would be downloaded.
    'pip install "triton-compat-matrix[picture]"': pip_dry(),
    "pip install torch --index-url https://download.pytorch.org/whl/cpu": pip_parse(f"PyTorch's CPU wheel, {REGISTRY}"),
    "old/bin/pip install torch==OLD triton==OLD": pip_parse(REGISTRY, subs=(("torch==OLD", f"torch=={version('torch')}"),
                                                                            ("triton==OLD", f"triton=={version('triton')}"))),
    "new/bin/pip install torch==NEW triton==NEW": pip_parse(REGISTRY, subs=(("torch==NEW", f"torch=={version('torch')}"),
                                                                            ("triton==NEW", f"triton=={version('triton')}"))),
    "pip install tabulate": pip_parse(REGISTRY),
    "pip install matplotlib": pip_parse(REGISTRY),
    "pip install tabulate matplotlib": pip_parse(REGISTRY),
    "pip install --no-deps flag-gems==5.0.2": pip_parse(REGISTRY),
    "pip install pyyaml sqlalchemy packaging": pip_parse(REGISTRY),
    'pip install --constraint "$RUNNER_TEMP/pins.txt" "$TCM_PACKAGE"': pip_parse(
        f"the workflow's git URL, {REGISTRY}",
        subs=(('"$RUNNER_TEMP/pins.txt"', "pins.txt"), ('"$TCM_PACKAGE"', shlex.quote(TCM_PACKAGE)))),
    'pip install --no-deps "$TCM_PACKAGE"': pip_parse(f"the workflow's git URL, {REGISTRY}",
                                                      subs=(('"$TCM_PACKAGE"', shlex.quote(TCM_PACKAGE)),)),
    "python -m venv old": helped(why="makes a venv with pip (seconds): its --help"),
    "python -m venv new": helped(why="makes a venv with pip (seconds): its --help"),
    'python3 -m venv --system-site-packages "$RUNNER_TEMP/tcm"': helped(why="makes a venv with pip (seconds): its --help"),
    # The matrix.
    "triton-compat-matrix run -n auto --cases my_pkg.kernels": collect(plant=MY_PKG),
    "triton-compat-matrix run -n auto": collect(),
    "triton-compat-matrix run": collect(),
    "python -m harness run": collect(),
    "python -m harness run [PYTEST ARGS ...]": collect(subs=((" [PYTEST ARGS ...]", ""),)),
    "pytest --matrix": collect(),
    "pytest --matrix -n auto": collect(),
    "pytest -n auto --matrix": collect(),
    "pytest --matrix -n auto --baseline=chart.json": collect(plant=CHART),
    "pytest --matrix -n auto --baseline=chart.json --junitxml=matrix.xml": collect(plant=CHART),
    "pytest --matrix -n auto --baseline=FILE": collect(plant=CHART, subs=(("FILE", "chart.json"),)),
    "triton-compat-matrix run -n auto --baseline=FILE --accept": collect(plant=CHART, subs=(("FILE", "chart.json"),)),
    "triton-compat-matrix run -n auto --baseline=chart.json": collect(plant=CHART),
    "triton-compat-matrix run -n auto --baseline=chart.json --accept": collect(plant=CHART),
    "triton-compat-matrix run -n auto --baseline=chart.json --full-run": collect(plant=CHART),
    'triton-compat-matrix run -k "silu and export"': collect(),
    "triton-compat-matrix run -n auto --cases examples/my_kernels.py": collect(root=True),
    "triton-compat-matrix run -n auto --cases examples/my_kernels.py --cases harness.cases": collect(root=True),
    "triton-compat-matrix run -n auto --cases mypackage.kernels_under_test": collect(
        plant=(("mypackage/__init__.py", ""), ("mypackage/kernels_under_test.py", MY_KERNELS))),
    "triton-compat-matrix run -n auto --shard=1/4 --shard-timings=reports/gpu/results.json": collect(root=True),
    "old/bin/triton-compat-matrix run -n auto --report-dir=reports/old": collect(why="old/bin/ is the venv made above: this environment"),
    "new/bin/triton-compat-matrix run -n auto --report-dir=reports/new": collect(why="new/bin/ is the venv made above: this environment"),
    'pytest --matrix -p no:xdist --perf -k "eager or compile or export or aoti" --report-dir=reports/perf': collect(),
    "pytest --matrix --profile-dir DIR": collect(),
    "pytest -n auto tests/harness": collect(root=True),
    "timeout -s INT -k 5m 60m triton-compat-matrix run -n auto --cases=tests/triton_cases.py --shard-timings=reports/gpu/results.json "
    "--shard=$k/4 --report-dir=reports/shard-$k-of-4": collect(
        why="the loop's first part, with the user's case module", subs=(("$k", "1"),),
        plant=(("tests/triton_cases.py", MY_KERNELS), ("reports/gpu/results.json", "reports/gpu/results.json"))),
    'timeout -s INT -k "$KILL_AFTER" "$SHARD_TIME_LIMIT" triton-compat-matrix run $MATRIX_ARGS --cases="$CASES" "${timings[@]}" '
    '--shard="$SHARD/$SHARD_COUNT" --report-dir="$out" --runner-logs="$out/logs" || status=$?': collect(
        why="the workflow's values for part 1, with the user's case module", subs=(*WORKFLOW.items(), (" || status=$?", "")),
        plant=(("tests/triton_cases.py", MY_KERNELS), ("reports/gpu/results.json", "reports/gpu/results.json"))),
    "triton-compat-matrix run -n auto --cases examples/flag_gems_cases --report-dir reports/libraries/flag_gems":
        Check("library", "flag_gems", root=True),
    "python -m harness cases --cases examples/flag_gems_cases": Check("library", "flag_gems", root=True, whole=True),
    "pip install --no-deps cut-cross-entropy==25.1.1": pip_parse(REGISTRY),
    "triton-compat-matrix run -n 16 --cases examples/cce_cases --report-dir reports/libraries/cut_cross_entropy":
        Check("library", "cut_cross_entropy", root=True),
    "python -m harness cases --cases examples/cce_cases": Check("library", "cut_cross_entropy", root=True, whole=True),
    "pip install --no-deps torchao==0.18.0": pip_parse(REGISTRY),
    "triton-compat-matrix run -n auto --cases examples/torchao_cases --report-dir reports/libraries/torchao":
        Check("library", "torchao", root=True),
    "python -m harness cases --cases examples/torchao_cases": Check("library", "torchao", root=True, whole=True),
    "python -m harness cases --cases examples/my_kernels.py": collect(root=True, whole=True),
    "python -m harness cases": collect(whole=True),
    "python -m harness bench --out bench.txt": helped(why="a whole matrix run (minutes)"),
    "python -m harness bench -k aoti --cell-timeout aoti=1800": helped(why="a matrix run (minutes)",
                                                                       pytest_args="-k aoti --cell-timeout aoti=1800"),
    'python -c "import torch, triton; print(\'torch\', torch.__version__, \'triton\', triton.__version__, \'cuda\', torch.version.cuda)"':
        collect(whole=True),
    # The results tools, on committed results files standing in for a run's.
    "python -m harness report reports/shard-*-of-4/results.json --out reports/merged": run(plant=tuple(GPU_PARTS.items())),
    'python -m harness report "${parts[@]}" --out reports/merged': run(
        subs=(('"${parts[@]}"', "parts/*/results.json"),), plant=tuple((f"parts/tcm-shard-{k}-of-4/results.json", p) for k, p in
                                                                      enumerate(GPU_PARTS.values(), 1))),
    'python -m harness report parts/tcm-shard-*-of-4-$image/results.json --out "reports/merged/$image"': run(
        subs=(("$image", "torch-2.11"),), plant=tuple((f"parts/tcm-shard-{k}-of-4-torch-2.11/results.json", p) for k, p in
                                                      enumerate(GPU_PARTS.values(), 1))),
    "python -m harness report OLD.json --out DIR": run(subs=(("OLD.json", "old.json"), ("DIR", "out")),
                                                       plant=(("old.json", SMALL_RESULTS),)),  # a version 1 file
    "python -m harness diff reports/old/results.json reports/new/results.json --out upgrade.md": run(
        plant=(("reports/old/results.json", UPGRADE.format("3.6.0")), ("reports/new/results.json", UPGRADE.format("3.9.0")))),
    # 0: both complete, and none of the cells compared regressed (the compiler change fixes 54)
    "python -m harness diff reports/evidence/gpu/default-cxx/results.json reports/gpu/results.json": run(root=True, returncodes=(0,)),
    "python -m harness diff reports/gpu/results.json reports/merged/results.json --out reports/merged/diff.md": run(
        plant=(("reports/gpu/results.json", UPGRADE.format("3.6.0")), ("reports/merged/results.json", UPGRADE.format("3.9.0")))),
    "python -m harness diff BASELINE reports/merged/results.json": run(
        subs=(("BASELINE", "reports/gpu/results.json"),),
        plant=(("reports/gpu/results.json", UPGRADE.format("3.6.0")), ("reports/merged/results.json", UPGRADE.format("3.9.0")))),
    'python -m harness diff "$BASELINE" reports/merged/results.json --out reports/merged/diff.md || diff_status=$?': run(
        subs=(('"$BASELINE"', "reports/gpu/results.json"), (" || diff_status=$?", "")), returncodes=(0, 1),
        plant=(("reports/gpu/results.json", UPGRADE.format("3.6.0")), ("reports/merged/results.json", UPGRADE.format("3.9.0")))),
    "python -m harness diff OLD.json NEW.json": run(
        subs=(("OLD.json", "old.json"), ("NEW.json", "new.json")), returncodes=(0, 1),
        plant=(("old.json", UPGRADE.format("3.6.0")), ("new.json", UPGRADE.format("3.9.0")))),
    "python -m harness history A.json B.json C.json": run(
        subs=(("A.json", "a.json"), ("B.json", "b.json"), ("C.json", "c.json")), returncodes=(0, 1),
        plant=tuple((f"{n}.json", UPGRADE.format(v)) for n, v in zip("abc", ("3.6.0", "3.8.0", "3.9.0")))),
    "python -m harness history reports/merged/torch-2.10/results.json reports/merged/torch-2.11/results.json "
    "--out reports/merged/HISTORY.md": run(returncodes=(0, 1), plant=(("reports/merged/torch-2.10/results.json", UPGRADE.format("3.6.0")),
                                   ("reports/merged/torch-2.11/results.json", UPGRADE.format("3.9.0")))),
    "cmake --version | head -1 || echo \"no cmake: the AOTInductor-from-C++ rows will fail at cpp_build\"": run(),
    # Synopses and commands named without their arguments: their --help.
    "python -m harness": helped(),
    "python -m harness report": helped(),
    "python -m harness diff": helped(),
    "triton-compat-matrix diff": helped(),
    "python -m harness history": helped(),
    "python -m harness repeat": helped(),
    "python -m harness bench": helped(),
    "python -m harness bench --results reports/evidence/gpu/carry-over/full-results.json": run(root=True),
    "python -m harness repro": helped(),
    "python -m harness profile DIR": helped(),
    "python -m harness profile DIR [--out FILE]": helped(),
    "python zygote.py LIFELINE_FD [SOCKET_PATH [RUNNERS_SOCKET_PATH TEMPLATE_MODULE RUNNERS_PYTHONPATH CASE_SPEC...]]":
        fragment("the zygote's usage line: the controller starts the run's with a socket path and its runner template's, a "
                 "runner alone its own; test_runner and test_pytest_matrix fork runners from both, test_time_spent helpers"),
    "python -m MODULE": fragment("the kind of command a helper process forked from the zygote stands for; test_time_spent"),
    "python SCRIPT.py": fragment("the kind of command a helper process forked from the zygote stands for; test_time_spent"),
    "python -c CODE": fragment("the kind of command a helper process forked from the zygote stands for (the vector-ISA "
                               "probe's checks); test_speed"),
    "python -m harness repro CELL [--results FILE] [--out FILE] [--cases SPEC]": helped(),
    "python -m harness repro CELL --results results.json": helped(),
    "python -m harness repro CELL --results reports/results.json --out repro.py": helped(),
    "python -m harness repro --check reports/results.json --out repro -n 8": helped(),
    "python -m harness repro CELL [--results FILE] [--out FILE] [--cases SPEC] [--device DEV]": helped(),
    "python -m harness repro --check RESULTS.json --out DIR [-n JOBS] [-k REGEX] [--passing N|all] [--timeout S]": helped(),
    "python -m harness repro --check reports/results.json --out repro --passing all": helped(),
    "python -m harness repro {cell.id}": fragment("a reproducer's docstring naming the command that wrote it; test_why_cells_fail writes and runs reproducers"),
    "python {{this file}}": fragment("a reproducer's docstring: run the file itself; test_why_cells_fail runs reproducers"),
    "python {args.out}": fragment("what repro --out prints after writing the script; test_why_cells_fail runs reproducers"),
    "python -m harness report A.json [B.json ...] --out DIR": helped(),
    "python -m harness report RESULTS.json [MORE.json ...] --out DIR": helped(),
    "python -m harness diff OLD.json NEW.json [--out FILE]": helped(),
    "python -m harness history A.json B.json [C.json ...] [--out FILE]": helped(),
    "python -m harness repeat [--runs N] [--out DIR] [--concurrent] [PYTEST ARGS ...]": helped(),
    "python -m harness repeat [--runs N] [--concurrent] [--out DIR] [PYTEST ARGS ...]": helped(),
    "python -m harness repeat --runs 3 --out DIR [PYTEST ARGS ...]": helped(),
    "python -m harness bench [--out FILE] [--report-dir DIR] [PYTEST ARGS ...]": helped(),
    # The rest.
    "bash .ci/run": Check("bash-n", "the whole CI run, a quarter of an hour", root=True),
    "python - <<'PY'": Check("script"),
    "python - <<'PY' || status=1": Check("script"),
    "triton-compat-matrix run ...": printed("test_the_matrix_commands_of_the_docs_and_of_the_harnesss_usage_errors_collect_as_printed"),
    "python -m harness report results.json --out DIR": printed("test_supports_picture_hint_and_historys_pointer_to_diff_run_as_printed"),
    "python -m harness.execution.warm_cache": Check("internal", "the warm-cache row's new process, fed pickled requests on stdin (harness.processes.case_process)"),
    "python -m harness.execution.saved": Check("internal", "the fresh process of the rows that save, fed pickled requests on stdin (harness.processes.case_process)"),
    "python -m harness run --collect-only -q": collect(whole=True),
    "python docs/bug_replay.py [results.json]": run(root=True, subs=((" [results.json]", " reports/gpu/results.json"),)),
    "python -m harness.execution.prebuild BUILD CACHES PACKAGES WORKDIR": Check(
        "internal", "a run's own build, which the controller starts as the run starts; test_speed runs it"),
    "python aoti_serve.py DEVICE": Check("internal", "the fresh-process row's server, fed packages a line on stdin"),
    "python -m": fragment("Python's -m, named in a comment"),
    "pip install": fragment("pip's install command, named in a sentence that adds options to it"),
    "timeout -s INT": fragment("GNU timeout's signal option, named in a sentence"),
    "timeout -s INT -k 5m 60m": fragment("GNU timeout's options, named in a sentence"),
    "bash -eo pipefail: a failing command fails its step.": fragment("a comment on the workflow's shell"),
}


# Extraction.


def _commands_in(text: str) -> list[str]:
    found = []
    for part in re.split(r"\s&&\s", text):
        part = " ".join(part.split())
        words = part.split()
        while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
            words = words[1:]
        if len(words) >= 2 and os.path.basename(words[0]) in COMMAND_WORDS and not words[1].startswith("@"):
            found.append(part)
    return found


def _without_comment(line: str) -> str:
    return re.sub(r"\s+#\s.*$", "", line)


def _markdown(path: str, text: str) -> list[tuple[str, str]]:
    found, prose, pos = [], [], 0
    for fence in re.finditer(r"^```([\w-]*)\n(.*?)^```", text, re.M | re.S):
        prose.append((text[pos:fence.start()], pos))
        pos = fence.end()
        if fence.group(1) in ("", "bash", "sh", "shell", "console"):
            line_no = text.count("\n", 0, fence.start(2)) + 1
            for line in fence.group(2).replace("\\\n", " ").splitlines():
                found += [(f"{path}:{line_no}", c) for c in _commands_in(_without_comment(line))]
                line_no += 1
    prose.append((text[pos:], pos))
    for chunk, start in prose:
        for span in re.finditer(r"`([^`]+)`", chunk):
            found += [(f"{path}:{text.count(chr(10), 0, start + span.start()) + 1}", c) for c in _commands_in(span.group(1))]
    return found


def _python(path: str, text: str) -> list[tuple[str, str]]:
    found = []
    for line_no, line in enumerate(text.splitlines(), 1):
        for span in re.findall(r"`([^`\n]+)`", line):
            found += [(f"{path}:{line_no}", c) for c in _commands_in(span)]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            for line in (ast.get_docstring(node) or "").replace("\\\n", " ").splitlines():
                if line[:1].isspace():
                    found += [(f"{path}:{node.body[0].lineno}", c) for c in _commands_in(_without_comment(line))]
    return found


def _yaml(path: str, text: str) -> list[tuple[str, str]]:
    lines = "\n".join(line.strip().lstrip("#") for line in text.splitlines()).replace("\\\n", " ").splitlines()
    return [(f"{path}:{n}", c) for n, line in enumerate(lines, 1) for c in _commands_in(_without_comment(line))]


@functools.lru_cache(maxsize=None)
def extract() -> tuple[tuple[str, str], ...]:
    """(where, command) for every command the rule in this module's docstring finds."""
    def files(*patterns):
        return sorted({f for p in patterns for f in glob.glob(os.path.join(ROOT, p), recursive=True)})

    found = []
    for readers, patterns in ((_markdown, ("README.md", "docs/*.md", "examples/**/*.md")),
                              (_python, ("harness/**/*.py", "cases/**/*.py", "examples/**/*.py")), (_yaml, ("examples/**/*.yml",))):
        for path in files(*patterns):
            with open(path) as f:
                found += readers(os.path.relpath(path, ROOT), f.read())
    return tuple(found)


# Running.


@functools.lru_cache(maxsize=None)
def _pythons() -> str:
    """A folder where `python` and `python3` are this interpreter (a system Python's folder may have no `python`)."""
    folder = tempfile.mkdtemp(prefix="tcm-pythons-")
    atexit.register(shutil.rmtree, folder, True)
    for name in ("python", "python3"):  # a script, not a link: a venv's Python knows its venv by the path it runs from
        with open(os.path.join(folder, name), "w") as f:
            f.write(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
        os.chmod(os.path.join(folder, name), 0o755)
    return folder


def _environment() -> dict[str, str]:
    """This environment first on PATH: its `python`, and its scripts `pytest`, `pip` and `triton-compat-matrix`."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT")}
    env["PATH"] = os.pathsep.join([_pythons(), os.path.dirname(sys.executable), env.get("PATH", "")])
    return env


def _folder(tmp_path, check: Check, name: str) -> str:
    if check.root:
        return ROOT
    folder = tmp_path / name
    folder.mkdir()
    for path, source in check.plant:
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if source == ".":
            target.symlink_to(ROOT)
        elif source:
            shutil.copy(os.path.join(ROOT, source), target)
        else:
            target.write_text("")
    return str(folder)


def _filled(text: str, check: Check) -> str:
    for placeholder, value in check.subs:
        text = text.replace(placeholder, value)
    return text


def _shell(command: str, cwd: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=_environment(), capture_output=True, text=True, timeout=timeout)


def _entry(argv: list[str]) -> tuple[str, list[str]]:
    """The entry point a command's words name, and the arguments it gets."""
    first, rest = os.path.basename(argv[0]), argv[1:]
    if first == "pytest":
        return "pytest", rest
    if first == "triton-compat-matrix":
        return "harness", rest
    if first in ("python", "python3") and rest[:2] == ["-m", "harness"]:
        return "python -m harness", rest[2:]
    if first in ("python", "python3") and rest[:2] == ["-m", "pytest"]:
        return "python -m pytest", rest[2:]
    if first in ("python", "python3") and rest[:1] == ["-c"]:
        return "python -c", rest[1:]
    raise AssertionError(f"no entry point for {argv}")


def _in_one_process(jobs: list[dict], tmp_path) -> list[dict]:
    """Run each job ({"argv", "cwd"}) in one helper interpreter: torch and the cases are imported once."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    jobs_file, answers = tmp_path / "jobs.json", tmp_path / "answers.json"
    jobs_file.write_text(json.dumps(jobs))
    serving = f"from tests.harness.test_commands import serve; serve({str(jobs_file)!r}, {str(answers)!r})"
    proc = subprocess.run([sys.executable, "-c", serving], cwd=ROOT, env=_environment(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(answers.read_text())


class _Probe:
    """What a pytest run collected, and the case modules it left out (a collect-only run reports neither)."""

    def __init__(self):
        self.cells, self.items, self.left_out = 0, 0, []

    def pytest_collection_finish(self, session):
        self.items = len(session.items)
        self.cells = sum(1 for item in session.items if Cell.of_test(item.nodeid))
        if session.config.getoption("matrix", False):
            from harness.plugin.options import loaded

            self.left_out = [str(problem) for problem in loaded(session.config).problems]


def serve(jobs_path: str, answers_path: str) -> None:
    """The helper interpreter's side of `_in_one_process`."""
    import pytest as pytest_module

    import harness.cases
    from harness import __main__ as cli

    # Modules from these folders stay imported from one command to the next; the user's modules go.
    keep = tuple(os.path.realpath(p) + os.sep
                 for p in {sys.prefix, sys.base_prefix, os.path.dirname(cli.__file__), harness.cases.__path__[0]})
    path = [p for p in sys.path if p not in ("", ROOT)]  # a console script's sys.path: not the folder it runs in
    real_main = pytest_module.main
    answers = []
    with open(jobs_path) as f:
        jobs = json.load(f)
    for job in jobs:
        gc.freeze()  # what is imported by now stays: pytest's collections at the end of each run need not walk torch again
        probe, before, environ, started = _Probe(), set(sys.modules), dict(os.environ), time.perf_counter()
        entry, args = _entry(job["argv"])
        os.chdir(job["cwd"])
        sys.path[:] = ([job["cwd"]] if entry.startswith("python") else []) + path
        pytest_module.main = lambda args, plugins=None: real_main(args, plugins=[*(plugins or []), probe])
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                if entry in ("pytest", "python -m pytest"):
                    code = pytest_module.main(args)
                elif entry == "python -c":
                    exec(compile(args[0], "<string>", "exec"), {"__name__": "__main__"})
                    code = 0
                else:
                    code = cli.main(args)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        finally:
            pytest_module.main = real_main
            os.environ.clear()
            os.environ.update(environ)
        for name in set(sys.modules) - before:  # the user's modules this command imported, so the next imports its own
            file = getattr(sys.modules[name], "__file__", None)
            if name.startswith("tcm_user_") or file and not os.path.realpath(file).startswith(keep):
                del sys.modules[name]
        answers.append({"code": int(code), "out": out.getvalue()[-6000:], "seconds": round(time.perf_counter() - started, 2),
                        "cells": probe.cells, "items": probe.items, "left_out": probe.left_out})
    with open(answers_path, "w") as f:
        json.dump(answers, f)


# pip's own parser reads the options and requirements of an install it is not asked to run. In a process of its
# own: importing pip's internals imports the standard library's distutils, and setuptools (which Inductor's C++
# builds import) refuses to load after it, failing later tests in the same pytest worker.
_PIP_PARSE = """
import shlex, sys
from pip._internal.commands import create_command
from pip._vendor.packaging.requirements import Requirement
words = shlex.split(sys.argv[1])
assert words[1] == "install", sys.argv[1]
options, requirements = create_command("install").parse_args(words[2:])
assert requirements, sys.argv[1]
for requirement in requirements:
    Requirement(requirement)
"""


def _pip_parse(text: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _PIP_PARSE, text], capture_output=True, text=True, timeout=120)


def _kind(kind: str) -> list[tuple[str, Check]]:
    extracted = {command for _, command in extract()}
    return [(command, check) for command, check in CHECKS.items() if check.kind == kind and command in extracted]


def _failures(results: list[tuple[str, bool, str]]) -> str:
    return "\n\n".join(f"{command}\n{detail}" for command, ok, detail in results if not ok)


# Tests.


def test_every_command_the_docs_examples_and_docstrings_print_is_in_the_table_and_every_entry_is_still_printed():
    found = extract()
    unknown = sorted({f"{where}: {command}" for where, command in found if command not in CHECKS})
    assert not unknown, "commands this test does not know how to check; add each to CHECKS:\n" + "\n".join(unknown)
    stale = sorted(set(CHECKS) - {command for _, command in found})
    assert not stale, "CHECKS entries that nothing prints any more:\n" + "\n".join(stale)
    for command, check in CHECKS.items():
        assert check.kind in ("collect", "run", "help", "pip-dry", "pip-parse", "bash-n", "script", "library", "printed", "internal",
                              "fragment"), (command, check)
        assert check.kind != "printed" or callable(globals().get(check.why)), f"{command}: no test {check.why}"
        assert check.why or check.kind not in ("pip-parse", "internal", "fragment"), f"{command}: say why it is not run"


def _job(words: list[str], cwd: str, whole: bool = False, expect: str | None = None) -> dict:
    """A command for the helper interpreter, with what it must show: a matrix run must collect cells, a pytest run
    tests, a command run whole its exit status; `library`, that only the library is missing."""
    entry, args = _entry(words)
    matrix = "--matrix" in args or entry in ("harness", "python -m harness") and args[:1] == ["run"]
    expect = expect or ("exit" if whole else "cells" if matrix else "items")
    return {"argv": words if whole else [*words, "--collect-only", "-q"], "cwd": cwd, "expect": expect}


def _answered(job: dict, answer: dict) -> bool:
    library = job.get("library")
    if library and importlib.util.find_spec(library) is None:  # each module left out for want of it alone
        problems = answer["left_out"] or re.findall(r"LEFT OUT (.*)", answer["out"])
        return bool(problems) and all(library in problem for problem in problems)
    expect = {"library": "exit" if "--collect-only" not in job["argv"] else "cells"}.get(job["expect"], job["expect"])
    shown = {"exit": True, "cells": answer["cells"] > 0, "items": answer["items"] > 0}[expect]
    return answer["code"] == 0 and not answer["left_out"] and shown


def _refused(argv: list[str], cwd: str) -> str:
    """What pytest says when it refuses a command (a usage error: no torch is imported)."""
    proc = subprocess.run([sys.executable, "-m", "pytest", *argv], cwd=cwd, env=_environment(), capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0, proc.stdout[-2000:]
    return proc.stdout + proc.stderr


def _usage_advice() -> list[tuple[str, dict]]:
    """The commands the plugin's usage errors advise, for a matrix option given without --matrix and for the
    matrix's module named on its own, with the refused run's arguments where the advice says `...`."""
    advice = []
    for args, given in ((["--cases=examples/my_kernels.py"], ["--cases=examples/my_kernels.py"]), (["harness/plugin/matrix.py"], [])):
        said = _refused([*args, "--collect-only", "-q"], ROOT)
        spans = sorted(set(re.findall(r"`([^`]+)`", said)))
        assert spans, said
        if "add --matrix" in said:
            spans.append("pytest --matrix " + " ".join(given))
        for span in spans:
            words = shlex.split(span.replace("...", " ".join(given)))
            job = _job([*words, *(a for a in given if a not in words)], ROOT, expect="cells")
            advice.append((f"advised by a usage error: {span}", job))
    return advice


def test_the_matrix_commands_of_the_docs_and_of_the_harnesss_usage_errors_collect_as_printed(tmp_path):
    """Every `collect` command, what bench passes on to pytest, the kernel libraries' commands and the commands the plugin's
    usage errors advise, in one helper interpreter."""
    jobs, results = [], []
    for n, (command, check) in enumerate(_kind("collect") + _kind("library")):
        words = shlex.split(_filled(command, check))
        if words[0] == "timeout":  # GNU timeout's own options, around a command that returns at once
            options = words[1:words.index("triton-compat-matrix")]
            wrapped = subprocess.run(["timeout", *options, "true"], capture_output=True, text=True)
            results.append((command, wrapped.returncode == 0, wrapped.stderr))
            words = words[len(options) + 1:]
        expect = "library" if check.kind == "library" else None
        job = _job(words, _folder(tmp_path, check, f"c{n}"), check.whole, expect)
        jobs.append((command, {**job, "library": check.why} if expect else job))
    for command, check in _kind("help"):
        if check.pytest_args:  # what bench passes on to pytest, collected as `run` passes it
            job = _job(["triton-compat-matrix", "run", *shlex.split(check.pytest_args)], str(tmp_path))
            jobs.append((f"{command} (its pytest arguments)", job))
    jobs += _usage_advice()
    for (command, job), answer in zip(jobs, _in_one_process([job for _, job in jobs], tmp_path)):
        said = f"exit {answer['code']}, {answer['cells']} cells, {answer['items']} items, left out {answer['left_out']}"
        results.append((command, _answered(job, answer), f"{said}\n{answer['out']}"))
    assert not _failures(results), _failures(results)


def test_the_results_tool_and_shell_commands_run_as_printed(tmp_path):
    results = []
    for n, (command, check) in enumerate(_kind("run")):
        cwd = _folder(tmp_path, check, f"r{n}")
        proc = _shell(_filled(command, check), cwd)
        said = f"exit {proc.returncode}\n{proc.stdout[-1500:]}{proc.stderr[-1500:]}"
        results.append((command, proc.returncode in check.returncodes, said))
    assert not _failures(results), _failures(results)


def _command_name(command: str) -> list[str]:
    """The words that name a command, before its options and placeholders: `python -m harness diff`."""
    words = shlex.split(command)
    named = words[:3] if words[1:2] == ["-m"] else words[:1]
    for word in words[len(named):]:
        if not re.fullmatch(r"[a-z][a-z-]*", word):
            break
        named.append(word)
    return named


def test_synopses_and_commands_named_without_arguments_answer_their_help_with_every_option_they_name(tmp_path):
    results = []
    for command, check in _kind("help"):
        proc = _shell(shlex.join([*_command_name(command), "--help"]), str(tmp_path))
        passed_on = set(shlex.split(check.pytest_args or ""))  # pytest's, collected with the matrix commands
        missing = [o for o in re.findall(r"(?<![\w-])--[a-z][\w-]*", command) if o not in proc.stdout and o not in passed_on]
        results.append((command, proc.returncode == 0 and not missing, f"exit {proc.returncode}, missing {missing}\n{proc.stderr[-1500:]}"))
    assert not _failures(results), _failures(results)


def test_local_installs_resolve_offline_and_index_installs_parse_as_pip_reads_them(tmp_path):
    results, started = [], []
    for n, (command, check) in enumerate(_kind("pip-dry")):  # at once: each mostly waits for its metadata build
        words = shlex.split(_filled(command, check))
        started.append((command, subprocess.Popen(
            [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-build-isolation", "--no-index", "-q", *words[2:]],
            cwd=_folder(tmp_path, check, f"p{n}"), env=_environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    for command, proc in started:
        out, _ = proc.communicate(timeout=300)
        results.append((command, proc.returncode == 0, out[-3000:]))
    for command, check in _kind("pip-parse"):
        parsed = _pip_parse(_filled(command, check))  # pip's parser exits on a bad option
        results.append((command, parsed.returncode == 0, parsed.stdout[-2000:] + parsed.stderr[-2000:]))
    assert not _failures(results), _failures(results)


def test_the_ci_script_parses_and_the_workflows_python_heredocs_compile():
    for command, check in _kind("bash-n"):
        proc = subprocess.run(["bash", "-n", *shlex.split(command)[1:]], cwd=ROOT, capture_output=True, text=True)
        assert proc.returncode == 0, (command, proc.stderr)
    scripts = 0
    for path in glob.glob(os.path.join(ROOT, "examples", "**", "*.yml"), recursive=True):
        with open(path) as f:
            for body in re.findall(r"<<'PY'[^\n]*\n(.*?)\n\s*PY\n", f.read(), re.S):
                compile(textwrap.dedent(body), path, "exec")
                scripts += 1
    assert scripts >= len(_kind("script"))


def test_internal_commands_name_modules_of_the_harness():
    for command, _ in _kind("internal"):
        words = shlex.split(command)
        if words[1] == "-m":
            assert importlib.util.find_spec(words[2]) is not None, command
        else:
            assert os.path.exists(os.path.join(ROOT, "harness", "execution", words[1])), command


def test_the_advice_for_perf_with_workers_runs_as_printed(tmp_path):
    said = _refused(["--matrix", "--perf", "-n", "2", "--collect-only", "-q"], str(tmp_path))
    (advice,) = re.findall(r"\((pytest [^)]*)\)", said)
    proc = _shell(f"{advice} --collect-only -q", str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


def test_supports_picture_hint_and_historys_pointer_to_diff_run_as_printed(tmp_path):
    (hint,) = support.picture_lines(drawn=False)
    install, render = re.findall(r"`([^`]+)`", hint)
    shutil.copy(os.path.join(ROOT, SMALL_RESULTS), tmp_path / "results.json")
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-index", "-q", *shlex.split(install)[2:]],
                          cwd=tmp_path, env=_environment(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    proc = _shell(render.replace("DIR", "out"), tmp_path)
    assert proc.returncode == 0 and (tmp_path / "out" / "SUPPORT.md").exists(), proc.stderr

    # history refuses files of one environment and points at diff, which compares them.
    shutil.copy(os.path.join(ROOT, UPGRADE.format("3.6.0")), tmp_path / "a.json")
    shutil.copy(os.path.join(ROOT, UPGRADE.format("3.6.0")), tmp_path / "b.json")
    proc = _shell("python -m harness history a.json b.json", tmp_path)
    assert proc.returncode == 2, proc.stderr
    (pointer,) = re.findall(r"`([^`]+)`", proc.stderr)
    proc = _shell(f"{pointer} a.json b.json", tmp_path)
    assert proc.returncode == 0 and "0 regressed" in proc.stdout, proc.stderr


def _cell(cell_id: str, outcome: Outcome, **fields) -> CellResult:
    return CellResult(Cell.parse(cell_id), outcome, **fields)


def test_the_accept_hint_repeats_the_runs_own_arguments_without_what_run_adds():
    args = ["-p", "harness.plugin", "--matrix", "-n", "auto", "--cases=my kernels.py", "-k", "silu and export", "--baseline=chart.json"]
    assert (accept_command(args, installed=False)
            == "python -m harness run -n auto '--cases=my kernels.py' -k 'silu and export' --baseline=chart.json --accept")
    assert accept_command(args[2:], installed=True) == accept_command(args, installed=True)
    assert accept_command(args[2:], installed=True).startswith("triton-compat-matrix run -n auto ")


def test_every_change_against_the_baseline_names_the_accept_command_and_a_regression_leaves_the_call_to_the_user():
    accept = "triton-compat-matrix run -n auto --baseline=chart.json --accept"
    passed = _cell("add-raw-eager", Outcome.PASS)
    failed = _cell("add-raw-eager", Outcome.FAIL, stage=Stage.RUN, error_type="RuntimeError", message="boom")
    regressed, improved = against_baseline(passed, failed, accept), against_baseline(failed, passed, accept)
    changed = against_baseline(failed, dataclasses.replace(failed, error_type="ValueError"), accept)
    assert regressed.startswith("REGRESSED: add-raw-eager") and "if you accept this regression" in regressed
    assert regressed.endswith(f"`{accept}`")
    assert improved.startswith("IMPROVED: add-raw-eager") and improved.endswith(f"`{accept}`")
    assert changed.startswith("FAILURE CHANGED: add-raw-eager") and changed.endswith(f"`{accept}`")
    assert against_baseline(passed, passed, accept) is None and against_baseline(None, failed, accept) is None
    assert against_baseline(dataclasses.replace(passed, flaky="varies"), failed, accept) is None


def test_a_baseline_run_prints_an_accept_command_that_runs_as_printed_and_accepts_the_change(tmp_path):
    """A baseline where planted_ok failed and planted_wrong passed: the run names the command for each change, the
    run's own arguments with --accept, and that command, run as printed, rewrites the baseline. Without workers
    (-n 0), to save two processes: xdist starts its workers with the run's own arguments, so a worker's
    invocation_params.args are the same."""
    with open(os.path.join(ROOT, "reports", "cpu", "results.json")) as f:  # a run of this version of the harness, as a template
        baseline = json.load(f)
    template = baseline["cells"][0]
    cells = {"planted_ok-raw-eager": ("fail", "run", "RuntimeError"), "planted_wrong-raw-eager": ("pass", None, None)}
    baseline["cells"] = [dict(template, cell=cell, case=cell.split("-")[0], wrapping="raw", row="eager", outcome=outcome, stage=stage,
                              error_type=error, message="planted" if error else None, flaky=None, blamed_on=None)
                         for cell, (outcome, stage, error) in cells.items()]
    (tmp_path / "baseline.json").write_text(json.dumps(baseline))
    args = ["-n", "0", "-q", "-p", "no:cacheprovider", f"--cases={PLANTED}", "--matrix-profile=quick", "--report-dir=reports",
            "-k", " or ".join(f"test_cell[{c}]" for c in cells), "--baseline=baseline.json"]
    launcher = ["triton-compat-matrix", "run"] if INSTALLED else ["python", "-m", "harness", "run"]
    proc = subprocess.run([*launcher, *args], cwd=tmp_path, env=_environment(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "REGRESSED: planted_wrong-raw-eager" in proc.stdout and "IMPROVED: planted_ok-raw-eager" in proc.stdout, proc.stdout[-3000:]
    hints = set(re.findall(r"(?:make it the baseline|accept it): `([^`]+)`", proc.stdout))
    assert hints == {shlex.join([*launcher, *args, "--accept"])}, proc.stdout[-3000:]

    (hint,) = hints
    proc = _shell(hint, tmp_path, timeout=600)
    assert proc.returncode == 0 and "accepted this run's outcomes of " in proc.stdout, proc.stdout[-3000:] + proc.stderr[-3000:]
    accepted = {c["cell"]: c["outcome"] for c in json.loads((tmp_path / "baseline.json").read_text())["cells"]}
    assert accepted == {"planted_ok-raw-eager": "pass", "planted_wrong-raw-eager": "wrong"}
