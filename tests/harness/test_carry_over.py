"""Re-running only what changed: with --baseline, a cell whose digest is unchanged is carried over from the baseline."""

import dataclasses
import json
import os
import shutil
import sys

from harness.authoring import sources
from harness.model.fingerprint import Compiler, Fingerprint, Gpu
from harness.plugin import carry_over
from tests.harness.conftest import run_python

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
USER_MODULES = os.path.join(ROOT, "tests", "harness", "user_modules")
LIBRARY = "tcm_carried_library"  # a copy of tcm_fake_library under a name no other test imports


def _project(tmp_path):
    """A user's folder: a case file of its own, and a case file over a kernel library beside it."""
    work = tmp_path / "project"
    shutil.copytree(os.path.join(USER_MODULES, "tcm_fake_library"), work / LIBRARY)
    cases = open(os.path.join(USER_MODULES, "fake_library_cases.py")).read().replace("tcm_fake_library", LIBRARY)
    (work / "library_cases.py").write_text(cases)
    shutil.copy(os.path.join(ROOT, "examples", "my_kernels.py"), work / "own_cases.py")  # a user's case, importing no library
    return work


def _run(work, name, workers=0, extra=()):
    reports = work.parent / name
    proc = run_python([sys.executable, "-m", "pytest", "-n", str(workers), "-q", "-p", "no:cacheprovider", "--cases=library_cases.py",
                       "--cases=own_cases.py", f"--report-dir={reports}", "--matrix-profile=quick", "-k", "raw-eager or control-eager",
                       *extra, "--matrix"], cwd=work, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads((reports / "results.json").read_text())
    return proc, {c["cell"]: c for c in results["cells"]}, reports


def _carried(cells):
    return {cell for cell, c in cells.items() if c.get("carried_from")}


def test_a_change_to_one_case_file_or_to_a_library_it_imports_reruns_only_the_cells_it_touches(tmp_path):
    work = _project(tmp_path)
    _, first, first_reports = _run(work, "first")
    assert len(first) == 8 and all(c["digest"] for c in first.values()) and not _carried(first)
    library = {cell for cell in first if cell.startswith("fake_library")}

    # One case file edited: its cells run again, through workers; the library's cells are carried over, as they were.
    with open(work / "own_cases.py", "a") as f:
        f.write("# edited\n")
    proc, second, second_reports = _run(work, "second", workers=2, extra=[f"--baseline={first_reports / 'results.json'}"])
    assert _carried(second) == library
    assert "6 cells carried over from the run of" in proc.stdout
    for cell in library:
        assert second[cell]["carried_from"].startswith("the run of ") and "(results.json)" in second[cell]["carried_from"]
        assert {k: v for k, v in second[cell].items() if k != "carried_from"} == first[cell]  # the baseline's result, as it was
    assert second["my_leaky_relu-raw-eager"]["timings"]["finished"] > first["my_leaky_relu-raw-eager"]["timings"]["finished"]
    assert "6 cells carried over from the run of" in (second_reports / "MATRIX.md").read_text()

    # A module of the library edited: the library's cells run again; the own case's, run by the second run, are carried.
    with open(work / LIBRARY / "helpers.py", "a") as f:
        f.write("# edited\n")
    _, third, third_reports = _run(work, "third", extra=[f"--baseline={second_reports / 'results.json'}"])
    assert _carried(third) == set(third) - library
    assert _run_time(second_reports) in third["my_leaky_relu-raw-eager"]["carried_from"]

    # --full-run carries nothing.
    _, fourth, _ = _run(work, "fourth", extra=[f"--baseline={third_reports / 'results.json'}", "--full-run"])
    assert not _carried(fourth) and {c["outcome"] for c in fourth.values()} == {c["outcome"] for c in first.values()}


def _run_time(reports):
    return json.loads((reports / "results.json").read_text())["fingerprint"]["time"]


def _fingerprint(**changes):
    fingerprint = Fingerprint(mode="gpu", torch="2.11.0", triton="3.6.0", cuda="13.0", python="3.12.3",
                              gpu=Gpu(available=True, name="NVIDIA H100", count=1, driver="580.1", capability="9.0"),
                              compiler=Compiler(cxx="/usr/bin/g++", version="13.3"))
    return dataclasses.replace(fingerprint, **changes)


def test_a_cells_digest_changes_with_the_driver_the_compiler_and_the_variables_torch_reads_but_not_with_others():
    def digest(fingerprint, env):
        return carry_over.Digests(shared=carry_over._sha({"environment": carry_over.environment(fingerprint),
                                                          "variables": carry_over.read_variables(env)}), cases={"c": "x"}, timeouts={})

    base = digest(_fingerprint(), {"HOME": "/root"}).shared
    assert digest(_fingerprint(time="later", command="pytest -n 3", workers=3), {"HOME": "/elsewhere"}).shared == base
    assert digest(_fingerprint(gpu=Gpu(available=True, name="NVIDIA H100", count=1, driver="580.2", capability="9.0")), {}).shared != base
    assert digest(_fingerprint(compiler=Compiler(cxx="/opt/gcc/bin/g++", version="13.3")), {}).shared != base
    assert digest(_fingerprint(), {"TORCHINDUCTOR_MAX_AUTOTUNE": "1"}).shared != base
    assert digest(_fingerprint(), {"TRITON_INTERPRET": "1"}).shared != base


def test_a_case_reaches_the_modules_of_the_kernels_it_names_but_not_torch_triton_or_the_harness():
    import harness.cases.add
    import harness.cases.add_autotuned
    import harness.cases.sin
    import tests.harness.planted_shipped as shipped

    # A case file of a package reaches the package's __init__, not the case files beside it, unless it imports from one.
    assert sources.reached(harness.cases.sin) == ["harness.cases", "harness.cases.sin"]
    assert "harness.cases.add" in sources.reached(harness.cases.add_autotuned)

    reached = sources.reached(shipped)
    assert "tests.harness.planted_shipped" in reached
    assert any(name.startswith("tests.harness.planted_library") for name in reached)
    assert not [name for name in reached if name.split(".")[0] in ("torch", "triton", "harness", "hypothesis")]


def test_a_case_digest_changes_with_the_environment_variables_its_library_reads_by_name(tmp_path, monkeypatch):
    (tmp_path / "tcm_reads_a_variable.py").write_text('import os\nAUTOTUNE = os.getenv("TCM_LIBRARY_AUTOTUNE", "0") != "0"\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    import tcm_reads_a_variable

    unset = sources.case_digest(tcm_reads_a_variable, {"UNRELATED": "1"})
    assert sources.case_digest(tcm_reads_a_variable, {}) == unset
    assert sources.case_digest(tcm_reads_a_variable, {"TCM_LIBRARY_AUTOTUNE": "1"}) != unset


def test_a_timeout_a_harness_error_a_dead_worker_or_a_cell_without_digest_is_never_carried_over():
    from harness.model.cell import Cell
    from harness.model.outcome import WORKER_DIED, CellResult, Fault, Outcome
    from harness.model.results import Results

    digests = carry_over.Digests(shared="s", cases={"add": "a"}, timeouts={})
    recorded = {
        "add-raw-eager": dict(outcome=Outcome.FAIL),  # a finding: carried
        "add-raw-export_strict": dict(outcome=Outcome.ERROR, fault=Fault.CASE),  # the case's own error, as its source makes it
        "add-raw-compile_default": dict(outcome=Outcome.TIMEOUT),
        "add-raw-compile_fullgraph": dict(outcome=Outcome.ERROR, fault=Fault.HARNESS),
        "add-raw-compile_dynamic": dict(outcome=Outcome.CRASH, message=WORKER_DIED + "node down"),
        "add-raw-export_nonstrict": dict(outcome=Outcome.PASS, digest=None),
        "add-control-eager": dict(outcome=Outcome.PASS, digest="another run's inputs"),
    }
    cells = []
    for cell_id, fields in recorded.items():
        cell = Cell.parse(cell_id)
        cells.append(CellResult(cell, **{"digest": digests.of(cell), **fields}))
    kept = carry_over.carried(Results(fingerprint=_fingerprint(), cells=cells), digests, [c.cell for c in cells])
    assert {c.id for c in kept} == {"add-raw-eager", "add-raw-export_strict"}


def test_a_library_folder_is_read_once_a_run_however_many_of_its_modules_the_cases_reach(tmp_path, monkeypatch):
    # Read once for each of its modules each case reached, a library of hundreds of files (FlagGems) took the controller
    # minutes at the start and the end of a run.
    library = tmp_path / "tcm_wide_library"
    library.mkdir()
    (library / "__init__.py").write_text("from . import a, b, c\n")
    for name in "abc":
        (library / f"{name}.py").write_text(f"def kernel_{name}():\n    return {name!r}\n")
    (library / "tuning.json").write_text("{}")
    for case in ("wide_case_one", "wide_case_two"):
        (tmp_path / f"{case}.py").write_text("from tcm_wide_library.a import kernel_a\nfrom tcm_wide_library.b import kernel_b\n"
                                              "from tcm_wide_library.c import kernel_c\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import wide_case_one
    import wide_case_two

    reads = []
    monkeypatch.setattr(sources, "_file_digest", lambda path, *args, _real=sources._file_digest, **kwargs: reads.append(path) or _real(path, *args, **kwargs))
    cases = [dataclasses.make_dataclass("C", ["name", "module"])(name, name) for name in ("wide_case_one", "wide_case_two")]
    before = sources.case_digests(cases, {"wide_case_one": wide_case_one, "wide_case_two": wide_case_two}.get, {})
    in_library = [path for path in reads if os.path.dirname(path) == str(library)]
    assert sorted(in_library) == sorted(str(library / name) for name in ("__init__.py", "a.py", "b.py", "c.py", "tuning.json"))
    (library / "tuning.json").write_text('{"BLOCK": 64}')  # still every file of the folder, in each case's digest
    after = sources.case_digests(cases, {"wide_case_one": wide_case_one, "wide_case_two": wide_case_two}.get, {})
    assert before.keys() == after.keys() and all(before[case] != after[case] for case in before)
