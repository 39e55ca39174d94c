"""The harness is invisible: a cell has the outcome its program has in a fresh interpreter, and a runner differs from a
fresh `python` that imports the case only in the conditions harness.execution.conditions names.

One matrix run over the planted idioms of tests/harness/planted_invisible.py (libraries asking the device, versions,
a cached probe, the environment, Triton's target), their make_inputs also writing down what a case's code can see of
the process (tests/harness/process_state.py); then `repro --check` runs every cell's program alone, each in a fresh
interpreter. Without a GPU the control column goes down every kind of row (the other columns' traced paths meet Triton's
interpreter first); on a GPU every column of both cases.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from harness.execution import baseline, conditions
from harness.model.rows import Kind, Row
from harness.processes.helper_process import ZYGOTE_ENV, without_pytest
from harness.processes.runner import RUNNER_MODULE

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ON_GPU = torch.cuda.is_available()
# Without a GPU, every kind of row once or twice (its row the asserts below name, and the rows of a mechanism of their
# own: dynamic shapes, non-strict tracing, the C++ runner, a fresh process), on the CI machine's 2 cores; the production
# rows are left to tests/harness/test_production_rows.py, which checks their reproducers alone. On a GPU, every row.
ROWS_WITHOUT_GPU = ("eager", "compile_fullgraph", "compile_dynamic", "compile_cpp_wrapper", "export_strict", "export_nonstrict",
                    "aoti_nonstrict", "aoti_cpp_nonstrict", "aoti_fresh_nonstrict", "train_eager", "train_compile_fullgraph",
                    "cpu_fallback", "tensor_subclass")
SELECTION = "asks_" if ON_GPU else f"asks_the_device and control and ({' or '.join(ROWS_WITHOUT_GPU)})"
JOBS = str(max(2, os.cpu_count() or 2))  # the matrix's workers and the reproducers run at once: 2 in CI, 16 on the GPU runner
# Each program writes down what it sees of its process at every new state (tests/harness/process_state.py), and at
# the first inputs of each cell, marked BEGINS; then it sets a variable of its own, as a library may.
BEGINS = "begins_a_cell"
SET_BY_THE_CASE = "PLANTED_CASE_SET_THIS"
SEEING_CASES = '''
"""The planted idioms, their make_inputs also writing down what the case's code sees of its process."""
import dataclasses
import json
import os

from tests.harness import planted_invisible, process_state

SEEN = {seen!r}
BEGINS = {begins!r}
SET_BY_THE_CASE = {set_by_the_case!r}
_last = {{}}


def _seeing(make_inputs):
    def seen_and_made(shape, dtype, device, generator):
        state = process_state.snapshot()
        cell = os.environ.get("TCM_PROFILE_CELL")  # the runner names the cell it serves
        begins = cell != _last.get("cell")  # the cell's first inputs: nothing of the cell has run yet
        if state != _last.get("state") or begins:
            with open(os.path.join(SEEN, f"{{os.getpid()}}.jsonl"), "a") as f:
                f.write(json.dumps({{**state, BEGINS: begins}}) + "\\n")
            _last["state"], _last["cell"] = state, cell
        os.environ[SET_BY_THE_CASE] = "1"  # as a library may set one, once it runs: the cell's own, gone by the next
        return make_inputs(shape, dtype, device, generator)
    return seen_and_made


CASES = [dataclasses.replace(case, make_inputs=_seeing(case.make_inputs)) for case in planted_invisible.CASES]
'''


@pytest.fixture(scope="module")
def idioms(tmp_path_factory):
    """The matrix's run over the idioms: (results, the run's folder, snapshots, env, the cases' file)."""
    folder = tmp_path_factory.mktemp("invisible")
    seen = folder / "seen"
    seen.mkdir()
    cases = folder / "seeing_cases.py"
    cases.write_text(textwrap.dedent(SEEING_CASES.format(seen=str(seen), begins=BEGINS, set_by_the_case=SET_BY_THE_CASE)))
    # As a user's run: without the test process's zygote (tests/harness/conftest.py), the run starts its own.
    env = {k: v for k, v in without_pytest(os.environ).items() if k != ZYGOTE_ENV} | {"PYTHONPATH": ROOT}
    run = subprocess.run([sys.executable, "-m", "harness", "run", "-n", JOBS, "-q", "-p", "no:cacheprovider", f"--cases={cases}",
                          f"--report-dir={folder / 'reports'}", "-k", SELECTION],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    results = json.loads((folder / "reports" / "results.json").read_text())
    assert results["complete"], run.stdout[-3000:]
    snapshots = [json.loads(line) for path in seen.iterdir() for line in path.read_text().splitlines()]
    return results, folder, snapshots, env, cases


@pytest.fixture(scope="module")
def reproduced(idioms):
    """`repro --check` of every cell the run ran: (the command's result, REPRO.md)."""
    _, folder, _, env, _ = idioms
    check = subprocess.run([sys.executable, "-m", "harness", "repro", "--check", str(folder / "reports" / "results.json"),
                            "--out", str(folder / "repro"), "-n", JOBS, "--passing", "all"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    return check, (folder / "repro" / "REPRO.md").read_text()


def _every_cell_of_libraries_asking_the_device_has_the_outcome_its_program_has_in_a_fresh_interpreter(idioms, reproduced):
    results = idioms[0]
    check, repro = reproduced
    cells = {c["cell"]: c for c in results["cells"]}
    ran = [c for c in cells.values() if c["outcome"] != "skipped"]
    assert len(ran) >= (100 if ON_GPU else len(ROWS_WITHOUT_GPU)), sorted(cells)
    # What replacing torch.cuda.is_available while Dynamo's modules imported did: Dynamo no longer knew the real one.
    for row in ("compile_fullgraph", "export_strict", "train_compile_fullgraph", "compile_cpp_wrapper"):
        cell = cells[f"asks_the_device-control-{row}"]
        assert cell["outcome"] == "pass", (row, cell["message"])
        assert cell["graph_breaks"] == 0, row
    assert check.returncode == 0, repro
    assert f"{len(ran)} reproduced" in repro.replace("checked: ", ""), repro.splitlines()[3]
    # The cells compared span every kind of row: each kind's reproducer, against the chart's own verdict. Without a GPU
    # the warm-cache row is left out for every style (no compiled code holds an interpreted kernel).
    kinds = {Row(c["row"]).spec.kind for c in ran}
    left_to_production_rows = {Kind.EXPORT_LOAD, Kind.CACHE_ARTIFACTS, Kind.PRECOMPILE}  # ROWS_WITHOUT_GPU
    assert kinds == set(Kind) - (set() if ON_GPU else {Kind.WARM_CACHE, *left_to_production_rows}), sorted(k.value for k in kinds)


def test_every_cell_of_the_audit_has_the_outcome_of_its_program_alone_and_its_runner_differs_only_as_documented(idioms, reproduced):
    """The audit's two checks in one test: as two, xdist could give them to two workers, each running the audit's matrix."""
    _every_cell_of_libraries_asking_the_device_has_the_outcome_its_program_has_in_a_fresh_interpreter(idioms, reproduced)
    _runner_differs_from_a_fresh_python_that_imports_the_case_only_in_the_conditions_documented(idioms)


def _runner_differs_from_a_fresh_python_that_imports_the_case_only_in_the_conditions_documented(idioms):
    _, _, snapshots, env, cases = idioms
    in_runners = [s for s in snapshots if s["__main__"] == RUNNER_MODULE]
    assert in_runners, "no cell's make_inputs ran in a runner"
    fresh = subprocess.run([sys.executable, "-c", "import json, runpy, sys; from tests.harness import process_state; "
                            f"sys.path.insert(0, {str(cases.parent)!r}); import seeing_cases; print(json.dumps(process_state.snapshot()))"],
                           cwd=ROOT, env={**env, "PYTHONPATH": ROOT}, capture_output=True, text=True, timeout=300, check=True)
    alone = json.loads(fresh.stdout.strip().splitlines()[-1])
    unexplained = {}
    for state in in_runners:
        for key in sorted((set(state) | set(alone)) - {BEGINS, f"environ:{SET_BY_THE_CASE}"}):  # the case's own, checked below
            if state.get(key) != alone.get(key) and conditions.deliberate(key) is None:
                unexplained[key] = (state.get(key), alone.get(key))
    assert not unexplained, "\n".join(f"{k}: in a runner {v[0]!r}, alone {v[1]!r}" for k, v in unexplained.items())
    # What the case's code or torch (once a process, as a cell compiles) sets is the cell's own: no cell begins with an
    # earlier cell's.
    begun = [s for s in in_runners if s[BEGINS]]
    assert begun, "no snapshot at a cell's first inputs"
    for name in (SET_BY_THE_CASE, *(name for _, _, names in baseline.ONCE_A_PROCESS for name in names)):
        assert {s.get(f"environ:{name}") for s in begun} == {alone.get(f"environ:{name}")}, name


def test_the_docs_list_the_conditions_a_cell_runs_under():
    with open(os.path.join(ROOT, "docs", "how-cells-run.md")) as f:
        assert conditions.table() in f.read(), "docs/how-cells-run.md's table is not harness.execution.conditions.table()"
