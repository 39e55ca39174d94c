"""Timings, memory, the benchmark's figures, cache reuse and --perf, checked on real runs of planted cases."""

import json
import os
import re
import subprocess
import sys

import pytest
import torch

from harness.environment import vec_isa
from harness.model.cell import Cell
from harness.model.columns import Wrapping
from harness.model.fingerprint import Fingerprint
from harness.model.outcome import CellResult, Memory, Outcome, Timings
from harness.model.results import Results, load
from harness.model.rows import Row
from harness.processes.helper_process import ZYGOTE_ENV, python_output
from harness.processes.runner import runner_env
from harness.reporting import figures as speed
from tests.harness.conftest import PLANTED, run_python
from tests.harness.test_pytest_matrix import ROOT, outcomes, run_matrix


def _cell(name, work, wall, worker="gw0", outcome=Outcome.PASS, allocated=None, finished=0.0, start=0.0):
    return CellResult(
        Cell.parse(name), outcome, worker=worker,
        timings=Timings(work=work, wall=wall, overhead=wall - work, finished=finished, process_start=start),
        memory=Memory(gpu_allocated_after_mb=allocated, gpu_peak_mb=(allocated or 0) + 10, host_peak_mb=900.0),
    )


def test_figures_bound_efficiency_overhead_and_memory_growth():
    cells = [
        _cell("a-raw-eager", 10.0, 12.0, "gw0", allocated=1.0, finished=1, start=1.5),
        _cell("b-raw-eager", 30.0, 30.2, "gw1", allocated=1.0, finished=2, start=1.5),
        _cell("c-raw-eager", 20.0, 20.1, "gw0", allocated=5.0, finished=3),
        _cell("d-raw-eager", 0.0, 99.0, "gw1", outcome=Outcome.CRASH, allocated=None, finished=4),
    ]
    results = Results(fingerprint=Fingerprint(workers=2), cells=cells)
    f = speed.figures(results, wall_s=40.0)
    assert f.work_s == 60.0 and f.longest_cell == "b-raw-eager"
    assert f.bound_s == 30.0  # max(30, 60 / 2)
    assert f.efficiency == pytest.approx(0.75)
    # the crashed cell did no work it could report: its wall time is not the harness's overhead
    assert f.overhead_worst_cell == "a-raw-eager" and f.overhead_worst_s == pytest.approx(2.0)
    assert f.overhead_median_s == pytest.approx(0.2)
    assert f.process_starts == 2
    growth = {w.worker: w for w in f.per_worker}
    assert growth["gw0"].gpu_growth_max_step_mb == pytest.approx(4.0)  # 1 MB after a-, 5 MB after c-
    assert growth["gw1"].gpu_growth_max_step_mb == 0.0
    text = speed.render(f, Fingerprint.from_json({"gpu": {"name": "test GPU"}}), "python -m harness bench")
    assert "efficiency                   0.750" in text and "| gw0 | 2 | 900 |" in text
    assert "CPU time per core" not in text  # without the machine's core count there is none
    f.cpu_s, f.cores = 48.0, 4
    assert "CPU time per core            12.0 s = the cells' CPU time / 4 cores" in speed.render(f, Fingerprint(), "python -m harness bench")


def test_the_figures_say_when_the_run_s_first_cell_began_and_its_last_ended_from_its_start():
    cells = [_cell("a-raw-eager", 10.0, 12.0, "gw0", finished=1000.0 + 20.0), _cell("b-raw-eager", 3.0, 4.0, "gw1", finished=1000.0 + 40.0)]
    results = Results(fingerprint=Fingerprint(workers=2), cells=cells, wall_time_s=43.0,
                      timeline={"started": 1000.0, "first_configured": 0.5, "last_configured": 1.5, "first_collected": 5.0,
                                "last_collected": 7.25})
    f = speed.figures(results, wall_s=50.0)
    assert f.timeline == {"first_configured": 0.5, "last_configured": 1.5, "first_collected": 5.0, "last_collected": 7.25, "first cell begun": 8.0,
                          "last cell done": 40.0, "reports begun": 43.0}
    assert ("timeline, s from the start    first worker set up 0.5, last worker set up 1.5, first collected 5.0, last collected 7.2, first cell begun 8.0, "
            "last cell done 40.0, reports begun 43.0") in speed.render(f, Fingerprint(), "python -m harness bench")
    assert speed.figures(Results(fingerprint=Fingerprint(), cells=cells), wall_s=50.0).timeline == {}  # a file written before


def test_version_1_results_files_still_load_with_their_timings_renamed():
    path = os.path.join(ROOT, "tests", "harness", "data", "results-v1.json")  # three cells of a CPU run of 1b7df5f
    old = load(path)
    raw = json.load(open(path))
    assert raw["version"] == 1
    first = raw["cells"][0]["timings"]
    t = old.by_cell()[Cell.parse(raw["cells"][0]["cell"])].timings
    assert (t.setup, t.compile, t.run) == (first["wrap"], first["build"], first["check"])
    assert t.work == pytest.approx(t.setup + t.compile + t.run)


def test_cells_report_their_work_overhead_and_memory_and_a_cache_dir_is_reused(tmp_path):
    caches = tmp_path / "caches"
    # The control compiles through Inductor as a kernel would; a raw kernel's compile on the interpreter
    # would walk the interpreter's Python for half a minute on a CI core.
    proc, results, reports = run_matrix(tmp_path, "test_cell[planted_ok-raw-eager] or test_cell[planted_ok-control-compile_default]",
                                        workers=1, extra=[f"--cache-dir={caches}"])
    assert proc.returncode == 0, proc.stdout[-3000:]
    for cell in outcomes(results).values():
        t = cell["timings"]
        assert t["work"] > 0 and t["wall"] >= t["work"]
        assert t["work"] >= t["setup"] + t["compile"] + t["run"] - 1e-6
        assert t["overhead"] == pytest.approx(t["wall"] - t["work"])
        assert cell["memory"]["host_peak_mb"] > 100  # torch is imported in the runner
        assert cell["worker"] == "gw0"
    assert outcomes(results)["planted_ok-control-compile_default"]["timings"]["compile"] > 0
    # The compile caches went where --cache-dir said, and the fingerprint says so (a fresh run's says "fresh").
    assert results["fingerprint"]["caches"] == f"reused from {caches}"
    assert (caches / "inductor-cache").is_dir() and any((caches / "inductor-cache").iterdir())
    assert f"compile caches: reused from {caches}" in (reports / "SUPPORT.md").read_text()
    # Autotuners timed their configs within the budget (no --perf), and the chart says so.
    assert results["fingerprint"]["autotune_timing"].startswith("budget: ")
    assert "- autotuning in the cells: budget: " in (reports / "SUPPORT.md").read_text()


def test_costliest_cells_are_scheduled_first(tmp_path):
    """By each row's measured mean on this kind of device (harness.plugin.estimate), plus the autotuning a case redoes."""
    from harness.authoring import registry
    from harness.plugin import estimate

    proc = run_python([sys.executable, "-m", "pytest", "--matrix", "--collect-only", "-q", "-p", "no:cacheprovider",
                       f"--report-dir={tmp_path}", "-k", "add-raw or add_autotuned-raw or add-control"], cwd=ROOT, timeout=300)
    assert list(tmp_path.iterdir()) == []  # collecting runs nothing, so it must not overwrite the last run's reports
    order = [Cell.parse(line.split("[", 1)[1].rstrip("]")) for line in proc.stdout.splitlines() if "test_cell[" in line]
    assert order, proc.stdout[-2000:] + proc.stderr[-2000:]
    # The autotuner times its three configs again for every new input size: a minute a cell on the GPU.
    last_autotuned = max(n for n, c in enumerate(order) if c.case == "add_autotuned")
    assert all(c.case == "add_autotuned" for c in order[:last_autotuned + 1]), order
    mode, profile = ("gpu", "matrix") if torch.cuda.is_available() else ("interpreter", "quick")
    cases = registry.load().cases
    expected = [estimate.cell_seconds(c, mode, profile, cases) for c in order if c.case == "add"]
    assert expected == sorted(expected, reverse=True), [(c.id, e) for c, e in zip([c for c in order if c.case == "add"], expected)]
    assert expected[0] == max(estimate.MEASURED[(mode, profile)][p.value] for p in Row if estimate.cell_seconds(
        Cell("add", Wrapping.RAW, p), mode, profile, cases) != estimate.SKIPPED_CELL_S)
    # In a row, the control first: a style that fails where its control failed is shown as the environment's.
    for row in Row:
        styles = [c.wrapping for c in order if c.case == "add" and c.row is row]
        assert not styles or styles[0] is Wrapping.CONTROL, (row, styles)


def test_a_cell_that_takes_what_another_builds_starts_spaced_from_the_first_that_builds_it():
    """Started beside the cell that builds its package or precompiled header, a cell waits on the lock, its worker idle."""
    from harness.plugin.scheduling import spaced

    shares = {"a1": ("A",), "a2": ("A",), "a3": ("A",), "b1": ("B",), "b2": ("B",), "ab": ("A", "B")}
    order = spaced(["a1", "x", "a2", "y", "z", "a3", "b1", "w", "b2"], lambda item: shares.get(item, ()), gap=3)
    assert order == ["a1", "x", "y", "a2", "z", "a3", "b1", "w", "b2"]
    # Held for one build, a cell that shares a second, begun meanwhile, waits for that one's gap too.
    order = spaced(["a1", "ab", "b1", "x", "y", "z", "v"], lambda item: shares.get(item, ()), gap=3)
    assert order == ["a1", "b1", "x", "y", "ab", "z", "v"]
    assert order.index("ab") >= order.index("b1") + 3
    # Nothing shared: the order stays.
    assert spaced(list("abcdef"), lambda item: (), gap=5) == list("abcdef")


def test_the_aoti_rows_of_a_case_and_style_share_its_package_and_header_the_cpp_rows_the_runner_and_the_cpp_wrapper_row_its_header():
    from harness.plugin.scheduling import shared_builds

    python = [Row.AOTI_STRICT, Row.AOTI_NONSTRICT, Row.AOTI_FRESH_NONSTRICT]
    assert {shared_builds(Cell("add", Wrapping.RAW, row)) for row in python} == {("package add-raw", "aoti_header")}
    cpp = [Row.AOTI_CPP_STRICT, Row.AOTI_CPP_NONSTRICT]
    assert {shared_builds(Cell("add", Wrapping.RAW, row)) for row in cpp} == {("package add-raw", "aoti_header", "cpp_runner")}
    assert shared_builds(Cell("add", Wrapping.TRITON_OP, Row.AOTI_STRICT))[0] == "package add-triton_op"
    assert shared_builds(Cell("add", Wrapping.RAW, Row.COMPILE_CPP_WRAPPER)) == ("cpp_wrapper_header",)
    assert shared_builds(Cell("add", Wrapping.RAW, Row.COMPILE_DEFAULT)) == ()
    assert shared_builds(Cell("add", Wrapping.RAW, Row.WARM_CACHE_EDIT)) == ()


def test_a_case_counts_the_configs_its_autotuners_time():
    from harness.authoring import registry

    cases = registry.load().cases
    assert cases["add_autotuned"].autotune_configs == 3
    assert cases["add"].autotune_configs == 0


def test_perf_refuses_xdist(tmp_path):
    proc, _, _ = run_matrix(tmp_path, "planted_ok-raw-eager", workers=2, extra=["--perf"])
    assert proc.returncode != 0
    assert "--perf times kernels: run it without -n" in proc.stderr + proc.stdout


def test_perf_times_passing_cells_and_the_reports_compare_them_with_eager(tmp_path):
    reports = tmp_path / "reports"
    selection = " or ".join(f"test_cell[planted_ok-{c}]" for c in ("raw-eager", "control-eager", "control-compile_default")) + \
        " or test_cell[planted_wrong-raw-eager]"
    proc = run_python(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", f"--cases={PLANTED}",
         f"--report-dir={reports}", "--matrix-profile=quick", "--perf", "-k", selection, "--matrix"],
        cwd=ROOT, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    cells = outcomes(json.loads((reports / "results.json").read_text()))
    ok = cells["planted_ok-raw-eager"]
    assert ok["perf"]["median_ms"] > 0 and ok["perf"]["dtype"] == "float32" and ok["timings"]["perf"] > 0
    assert cells["planted_ok-control-compile_default"]["perf"]["median_ms"] > 0
    assert cells["planted_wrong-raw-eager"]["perf"] is None  # only passing cells are timed
    matrix = (reports / "MATRIX.md").read_text()
    assert "pass, 1.00x eager" in matrix  # the raw eager cell against itself
    support = (reports / "SUPPORT.md").read_text()
    assert "## Speed vs eager (`--perf`)" in support and "(1)" in support



_PROBE = """
import json, sys
from torch._inductor import cpu_vec_isa
from harness.environment import vec_isa

real, calls = cpu_vec_isa.VecISA.check_build, []
def counting(isa, code):
    calls.append(str(isa))
    return real(isa, code)
cpu_vec_isa.VecISA.check_build = counting
vec_isa.share(sys.argv[1])
isas = cpu_vec_isa.valid_vec_isa_list()
print(json.dumps({"checks": len(calls), "isas": [[str(i), i.build_arch_flags()] for i in isas]}))
"""


def test_the_vector_isa_probe_runs_in_one_process_and_the_others_get_its_answers(tmp_path):
    def probe():
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"} | {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
        out = subprocess.run([sys.executable, "-c", _PROBE, str(tmp_path / "shared")], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        return json.loads(out.stdout.splitlines()[-1])

    first, second = probe(), probe()
    assert first["checks"] > 0  # Inductor's own checks ran (each builds a library and loads it in a new Python)
    assert second["checks"] == 0  # answered from the record
    assert second["isas"] == first["isas"]  # the same ISAs, with the same build flags
    assert vec_isa.recorded(str(tmp_path / "shared")) == {"isas": [i for i, _ in first["isas"]], "checks": first["checks"]}


def test_a_matrix_run_records_the_vector_isa_probe_in_its_fingerprint(tmp_path):
    cells = ["add-control-aoti_strict"]  # an AOTInductor package is built for the CPU: the probe runs
    proc = run_python(
        [sys.executable, "-m", "pytest", "--matrix", "-n", "0", "-q", "-p", "no:cacheprovider", f"--report-dir={tmp_path}",
         "--matrix-profile=quick", "-k", " or ".join(f"test_cell[{c}]" for c in cells)],
        cwd=ROOT, timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    assert all(c["outcome"] == "pass" for c in results["cells"]), [(c["cell"], c["message"]) for c in results["cells"]]
    found = results["fingerprint"]["vec_isa"]
    assert found is not None and found["checks"] > 0 and isinstance(found["isas"], list)


def test_what_a_process_of_its_own_reads_of_the_machine_is_what_this_process_reads(run_zygote, tmp_path):
    """The run reads the machine's facts in a process of its own, beside its first cells (no thread of the controller
    imports torch's modules while its main thread loads cases), forked from the run's zygote where it serves: the same
    facts, the CPU's model among them."""
    from harness.environment import machine

    read = machine.read_in_a_process()
    assert read is not None and read == machine.this_machine()
    assert read.torch and read.cpus and read.compiler.resolved and read.cpu == machine.cpu_model()
    served = []

    def start(command, env):
        served.append(python_output(command, env, timeout=machine.READ_S, zygote_at=run_zygote))
        return served[-1]

    assert machine.read_in_a_process({**os.environ, **runner_env(str(tmp_path))}, start) == read
    assert served and served[0] is not None  # the zygote forked it: the answer is not subprocess's


@pytest.mark.parametrize("workers, worker, collect_only, expected", [
    (None, False, False, True),  # the matrix without -n
    (0, False, False, True),
    (16, False, False, False),  # the xdist controller runs no cells
    (16, True, False, True),  # its workers do
    (None, False, True, False),  # collecting runs nothing
])
def test_the_runner_starts_with_pytest_only_where_matrix_cells_will_run(workers, worker, collect_only, expected):
    from types import SimpleNamespace

    from harness.plugin.options import runs_cells_here

    config = SimpleNamespace(option=SimpleNamespace(collectonly=collect_only, numprocesses=workers))
    if worker:
        config.workerinput = {}
    assert runs_cells_here(config) is expected


def test_what_the_cells_share_is_built_as_the_run_starts_and_a_build_failing_there_fails_each_cell_as_without_it(tmp_path):
    """With two workers the controller builds Inductor's precompiled headers and the C++ runner before the cells ask
    (harness.execution.prebuild); with one it builds nothing ahead. With a compiler that always fails, each prebuild
    records its failure, and each cell that needs it meets the failure again: the same outcome, stage and message as
    in the run that built nothing ahead."""
    cells = ["planted_ok-control-aoti_strict", "planted_ok-control-aoti_cpp_strict", "planted_ok-control-compile_cpp_wrapper"]
    # The failing compiler fails those cells within seconds, and a prebuild still running as the run ends says only that:
    # with two workers, a cell that hangs until its timeout keeps the run going until the prebuilds have failed (with
    # one, nothing is built ahead: it would only wait). They fail within 2-3 s of the run's collection on 2 idle cores,
    # against the hang's 15.
    runs = {}
    for workers in (1, 2):
        reports = tmp_path / f"n{workers}"
        selection = " or ".join(f"test_cell[{c}]" for c in [*cells, *(["planted_hang-raw-eager"] if workers == 2 else [])])
        proc = run_python(
            [sys.executable, "-m", "pytest", "-n", str(workers), "-q", "-p", "no:cacheprovider", f"--cases={PLANTED}",
             f"--report-dir={reports}", "--matrix-profile=quick", "--cell-timeout=eager=15", "-k", selection, "--matrix"],
            cwd=ROOT, timeout=600, env={**os.environ, "CXX": "/bin/false"},
        )
        assert (reports / "results.json").exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
        runs[workers] = json.loads((reports / "results.json").read_text())

    def said(results):  # the run's own folder named, as each run has its own
        return {c["cell"]: (c["outcome"], c["stage"], re.sub(r"tcm-caches-\w+", "RUN", c["message"] or "")) for c in results["cells"]}

    assert {cell: made for cell, made in said(runs[2]).items() if cell in cells} == said(runs[1])
    assert {cell: (outcome, stage) for cell, (outcome, stage, _) in said(runs[2]).items()} == {
        "planted_ok-control-aoti_strict": ("fail", "aot_compile"), "planted_ok-control-aoti_cpp_strict": ("error", "cpp_build"),
        "planted_ok-control-compile_cpp_wrapper": ("fail", "compile"), "planted_hang-raw-eager": ("timeout", "run")}
    assert runs[1]["prebuilt"] == []
    built = {p["build"]: p for p in runs[2]["prebuilt"]}
    assert list(built) == ["aoti_header", "cpp_wrapper_header", "cpp_runner"]
    assert "C++ compiler" in built["aoti_header"]["error"] and "building the C++ runner failed" in built["cpp_runner"]["error"]
    assert "C++ compiler" in built["cpp_wrapper_header"]["error"]
    assert "built for the cells as the run started, in no cell's work: aoti_header not built (" in (tmp_path / "n2" / "MATRIX.md").read_text()
    timeline = runs[2]["timeline"]  # the run's start, as the controller saw it
    began = min(c["timings"]["finished"] - c["timings"]["wall"] for c in runs[2]["cells"]) - timeline["started"]
    # The timeline's figures are rounded to 0.01 s; the first cell can begin within milliseconds of the last collection.
    assert 0 < timeline["first_configured"] <= timeline["last_configured"] <= timeline["first_collected"] <= timeline["last_collected"] <= began + 0.01
    # What the machine is (versions, GPU, compilers, commit: seconds) was read beside the cells, from their collection on.
    assert timeline["first_collected"] <= timeline["machine_read"]
    from harness.environment.machine import cpu_model

    assert runs[2]["fingerprint"]["cpu"] == cpu_model() and runs[2]["fingerprint"]["cpu"]


def test_with_shard_the_cells_that_take_what_another_builds_are_spaced_in_the_parts_own_order(monkeypatch):
    """A part's cells are spaced as a whole run's are: the gap counts the cells this runner runs, not those of every part."""
    from types import SimpleNamespace

    from harness.plugin import scheduling, shard

    class Item:  # as pytest's: hashable, its cell in its parameters
        def __init__(self, cell):
            self.callspec, self.nodeid = SimpleNamespace(params={"cell": cell}), cell.id

    item = Item

    cases = ["add", "sin", "silu", "matmul"]
    cells = [Cell(case, w, row) for case in cases for w in (Wrapping.RAW, Wrapping.CONTROL) for row in Row]
    items = [item(c) for c in cells]
    part = scheduling.MatrixShard(None, shard.Shard(1, 2))
    plugins = {"tcm-shard": part}
    config = SimpleNamespace(workerinput={"workercount": 2},
                             pluginmanager=SimpleNamespace(get_plugin=lambda name: plugins.get(name)),
                             hook=SimpleNamespace(pytest_deselected=lambda items: None), getoption=lambda name: None)
    part.config = config
    monkeypatch.setattr(scheduling, "requested", lambda config: True)
    monkeypatch.setattr(scheduling, "loaded", lambda config: SimpleNamespace(cases={c: SimpleNamespace(autotune_configs=0) for c in cases}))
    monkeypatch.setattr(scheduling, "cell_costs", lambda config: lambda cell: cell.row.spec.cost)
    scheduling.pytest_collection_modifyitems(config, items)
    kept = [scheduling.cell_of(i) for i in items]
    assert kept and len(kept) < len(cells)
    gap = scheduling.SPACING_ROUNDS * 2
    first: dict[str, int] = {}
    for place, cell in enumerate(kept):
        for build in scheduling.shared_builds(cell):
            if build in first:
                assert place >= first[build] + gap or place == first[build], (cell.id, build, place, first[build])
            first.setdefault(build, place)
    assert any(scheduling.shared_builds(c) for c in kept[gap:])


def test_with_shard_timings_the_cells_start_in_the_order_of_their_measured_work(monkeypatch, tmp_path):
    """An earlier run's timings order a part's cells as they split them: a cell measured long starts before cells its
    row's mean says cost more."""
    from types import SimpleNamespace

    from harness.model.fingerprint import Fingerprint
    from harness.model.outcome import CellResult, Outcome
    from harness.model.results import Results, save
    from harness.plugin import scheduling

    class Item:
        def __init__(self, cell):
            self.callspec, self.nodeid = SimpleNamespace(params={"cell": cell}), cell.id

    cells = [Cell("add", Wrapping.RAW, row) for row in (Row.EAGER, Row.AOTI_STRICT, Row.COMPILE_DEFAULT)]
    measured = []
    for cell, work in zip(cells, (90.0, 5.0, 1.0)):  # eager measured the longest
        result = CellResult(cell, Outcome.PASS)
        result.timings.work = work
        measured.append(result)
    timings = tmp_path / "results.json"
    save(Results(fingerprint=Fingerprint(), cells=measured), str(timings))
    options = {"shard_timings": str(timings)}
    config = SimpleNamespace(getoption=lambda name: options.get(name), pluginmanager=SimpleNamespace(get_plugin=lambda name: None))
    monkeypatch.setattr(scheduling, "requested", lambda config: True)
    monkeypatch.setattr(scheduling, "profile_name", lambda config: "matrix")
    case = SimpleNamespace(autotune_configs=0, module="harness.cases.add", tags=())
    monkeypatch.setattr(scheduling, "loaded", lambda config: SimpleNamespace(cases={"add": case}))
    items = [Item(c) for c in cells]
    scheduling.pytest_collection_modifyitems(config, items)
    assert [scheduling.cell_of(i).row for i in items] == [Row.EAGER, Row.AOTI_STRICT, Row.COMPILE_DEFAULT]
    options.clear()
    scheduling.pytest_collection_modifyitems(config, items)
    assert [scheduling.cell_of(i).row for i in items][-1] == Row.EAGER  # by the rows' means, eager is the cheapest


_FORKED_PROBE = """
import json, os, sys
from torch._inductor import cpu_vec_isa
from harness.environment import vec_isa
from harness.processes.helper_process import python_status

statuses = []
def python(command, env, cwd, timeout):
    # torch 2.12 and later point the loader at torch's libraries for a check's process that does not import torch,
    # which a process forked from the zygote has loaded already.
    env = {k: v for k, v in (env or os.environ).items() if k != "LD_LIBRARY_PATH"} | {
        k: v for k, v in os.environ.items() if k == "LD_LIBRARY_PATH"}
    statuses.append(python_status(command, env, cwd, timeout))
    return statuses[-1]
vec_isa.share(sys.argv[1], python=python)
isas = cpu_vec_isa.valid_vec_isa_list()
print(json.dumps({"statuses": statuses, "isas": [[str(i), i.build_arch_flags()] for i in isas]}))
"""


def test_the_vector_isa_probes_python_processes_forked_from_the_zygote_give_subprocesss_answers(tmp_path):
    """Each check of the probe loads its library in a new Python process: forked from the zygote (torch imported), the
    same code gives the same ISAs and flags as the processes Inductor starts with subprocess."""
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", ZYGOTE_ENV)}  # the process's own zygote

    def probe(script, name):
        out = subprocess.run([sys.executable, "-c", script, str(tmp_path / name)], cwd=ROOT,
                             env=env | {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / name / "inductor")},
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        return json.loads(out.stdout.splitlines()[-1])

    started, forked = probe(_PROBE, "subprocess"), probe(_FORKED_PROBE, "forked")
    assert forked["statuses"] and None not in forked["statuses"], forked  # every check's process was forked
    assert forked["isas"] == started["isas"]


def _deal(collection, seconds, workers=3, remove=None, scheduling=None):
    """Deal `collection` (cell ids) to `workers` simulated xdist workers with harness.plugin.dealing, each running a cell
    only once it holds the next one or was told to shut down, as xdist's do, for `seconds(cell)`: the cells as they were
    dealt, and each one's (worker, start, end). `remove(scheduler, nodes)` runs once the first cells are dealt (a worker
    that dies)."""
    from types import SimpleNamespace

    from harness.plugin import dealing

    dealt = []

    class Worker:
        def __init__(self, name):
            self.name, self.shutting_down, self.queue, self.running = name, False, [], None
            self.gateway = SimpleNamespace(id=name)

        def send_runtest_some(self, indices):
            self.queue.extend(indices)
            dealt.extend(collection[i] for i in indices)

        def shutdown(self):
            self.shutting_down = True

    config = SimpleNamespace(getvalue=lambda name: [f"{workers}*popen"], getoption=lambda name: 1)
    scheduler = (scheduling or dealing.MatrixScheduling)(config)
    nodes = [Worker(f"gw{n}") for n in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
        scheduler.add_node_collection(node, [f"matrix.py::test_cell[{cell}]" for cell in collection])
    scheduler.schedule()
    if remove is not None:
        remove(scheduler, nodes)
    now, ran = 0.0, {}
    while True:
        for node in nodes:
            if node.running is None and node.queue and (len(node.queue) >= 2 or node.shutting_down):
                node.running = (node.queue[0], now + seconds(collection[node.queue[0]]))
                ran[collection[node.queue[0]]] = (node.name, now, node.running[1])
        busy = [node for node in nodes if node.running is not None]
        if not busy and not scheduler.pending and not any(node.queue for node in nodes):
            return dealt, ran
        assert busy, f"every worker waits for a cell: {[(n.name, n.queue) for n in nodes]}, ran {sorted(ran)}"
        node = min(busy, key=lambda n: n.running[1])
        (index, now), node.running = node.running, None
        node.queue.remove(index)
        scheduler.mark_test_complete(node, index, 1.0)


def test_an_autotuned_case_s_cells_are_dealt_after_the_others_while_its_first_eager_cell_runs(monkeypatch):
    """The first eager cell of a style that launches the kernels fills the run's Triton cache; the case's other cells that
    launch them, started beside it, would each compile every config again (their examples are drawn in the same order).
    The controls and other cases run meanwhile; a worker with nothing else to run is not kept idle."""
    from types import SimpleNamespace

    from xdist.scheduler import LoadScheduling

    from harness.plugin import dealing

    cases = {"tuned": SimpleNamespace(autotune_configs=3), "plain": SimpleNamespace(autotune_configs=0)}
    monkeypatch.setattr(dealing, "loaded", lambda config: SimpleNamespace(cases=cases))
    monkeypatch.setattr(dealing, "carried_cells", lambda config: frozenset())
    monkeypatch.setattr(dealing, "compiled_ahead", lambda config: frozenset())
    rows, styles = ["compile_default", "compile_fullgraph", "eager", "export_strict"], ["control", "raw", "triton_op"]
    tuned = [f"tuned-{style}-{row}" for row in rows for style in styles]
    plain = [f"plain-{style}-{row}" for row in rows for style in styles]
    waiting = [c for c in tuned if "-control-" not in c and c != "tuned-raw-eager"]
    free = [c for c in tuned + plain if c not in waiting and c != "tuned-raw-eager"]
    # Enough other work to keep the other workers busy while it runs: the case's cells start after it ends, or behind it.
    dealt, ran = _deal(tuned + plain, lambda cell: 20.0 if cell == "tuned-raw-eager" else 3.0)
    assert sorted(ran) == sorted(tuned + plain) and dealt[0] == "tuned-raw-eager"  # dealt first, though it came seventh
    first, _, first_end = ran["tuned-raw-eager"]
    for cell in waiting:
        worker, start, _ = ran[cell]
        assert start >= first_end or worker == first, (cell, ran[cell])
    # Little other work: once it is dealt, the workers take the waiting cells rather than idle.
    dealt, ran = _deal(tuned + plain, lambda cell: 100.0 if cell == "tuned-raw-eager" else 1.0)
    assert max(dealt.index(cell) for cell in free) < min(dealt.index(cell) for cell in waiting if ran[cell][0] != ran["tuned-raw-eager"][0])
    assert max(end for _, _, end in ran.values()) == 101.0  # the cell dealt behind it on its worker; the rest ran beside it
    # Two autotuned cases: their first eager cells start at once, on two workers, each with its own case's cells behind it.
    monkeypatch.setitem(cases, "plain", SimpleNamespace(autotune_configs=2))
    dealt, ran = _deal(tuned + plain, lambda cell: 20.0 if cell.endswith("-raw-eager") else 3.0)
    assert ran["tuned-raw-eager"][1] == ran["plain-raw-eager"][1] == 0.0 and ran["tuned-raw-eager"][0] != ran["plain-raw-eager"][0]
    monkeypatch.setitem(cases, "plain", SimpleNamespace(autotune_configs=0))
    # No autotuned case: xdist's own dealing, in the run's order.
    monkeypatch.setitem(cases, "tuned", SimpleNamespace(autotune_configs=0))
    seconds = lambda cell: 1.0 + len(cell) % 3  # noqa: E731
    assert _deal(tuned, seconds) == _deal(tuned, seconds, scheduling=LoadScheduling)


def test_a_case_compiled_ahead_has_its_cells_that_launch_kernels_dealt_after_the_others_until_its_slices_end(monkeypatch):
    """Its slices, the first work of the workers, fill the run's Triton cache: a cell dealt first would keep its worker
    waiting while the controls and the other cases could run. Once the slices have ended, its cells take their places
    in the run's order: held last to the end, its longest cells would start last and end the run late."""
    from types import SimpleNamespace

    from harness.plugin import dealing

    monkeypatch.setattr(dealing, "loaded", lambda config: SimpleNamespace(cases={"tuned": SimpleNamespace(autotune_configs=3),
                                                                                   "plain": SimpleNamespace(autotune_configs=0)}))
    monkeypatch.setattr(dealing, "carried_cells", lambda config: frozenset())
    monkeypatch.setattr(dealing, "compiled_ahead", lambda config: frozenset({"tuned"}))
    started: list[str] = []
    slices_end_after = [float("inf")]  # the slices end once this many cells have started
    monkeypatch.setattr(dealing, "still_compiling_ahead",
                        lambda config: frozenset({"tuned"}) if len(started) < slices_end_after[0] else frozenset())
    rows, styles = ["compile_default", "eager", "export_strict"], ["control", "raw", "triton_op"]
    cells = [f"{case}-{style}-{row}" for case in ("tuned", "plain") for row in rows for style in styles]
    waiting = [c for c in cells if c.startswith("tuned-") and "-control-" not in c]

    def seconds(cell):
        started.append(cell)
        return 2.0

    dealt, ran = _deal(cells, seconds)
    assert sorted(ran) == sorted(cells)
    assert dealt[len(cells) - len(waiting):] == waiting, dealt  # every other cell first, then the case's in the run's order
    # Its slices end while other cells are still to deal: its cells are dealt from then on, before the rest of the others.
    started.clear()
    slices_end_after[0] = 5
    dealt, ran = _deal(cells, seconds)
    assert sorted(ran) == sorted(cells)
    first = min(dealt.index(cell) for cell in waiting)
    assert dealt[:first] == [c for c in cells if c not in waiting][:first], dealt  # none while the slices ran
    assert dealt[first:first + len(waiting)] == waiting, dealt  # then in the run's order, ahead of the plain case's rest
    assert first + len(waiting) < len(cells), dealt


def test_the_cells_that_waited_for_a_dead_worker_s_cell_wait_no_more(monkeypatch):
    from types import SimpleNamespace

    from harness.plugin import dealing

    monkeypatch.setattr(dealing, "loaded", lambda config: SimpleNamespace(cases={"tuned": SimpleNamespace(autotune_configs=3)}))
    monkeypatch.setattr(dealing, "carried_cells", lambda config: frozenset())
    monkeypatch.setattr(dealing, "compiled_ahead", lambda config: frozenset())
    cells = [f"tuned-{style}-{row}" for row in ["compile_default", "compile_dynamic", "eager", "export_strict"] for style in ["raw", "triton_op"]]

    def dies(scheduler, nodes):
        holder = next(node for node in nodes if scheduler.collection.index("matrix.py::test_cell[tuned-raw-eager]") in node.queue)
        assert scheduler.waits()
        nodes.remove(holder)
        scheduler.remove_node(holder)
        assert not scheduler.waits()

    _, ran = _deal(cells, lambda cell: 1.0, workers=2, remove=dies)
    assert sorted(ran) == sorted(cell for cell in cells if cell != "tuned-raw-eager")  # xdist reports that one as the crash


def test_in_a_run_with_workers_an_autotuned_case_s_first_eager_cell_begins_before_its_other_cells(tmp_path):
    """The dealing above, through xdist itself (harness.plugin.dealing replaces its `--dist load` scheduler): by the run's
    order, costliest first, the eager cell would come after the case's other cells."""
    proc, results, _ = run_matrix(tmp_path, "planted_autotune_adds_up and (eager or export_strict) and not train")
    assert results is not None, proc.stdout[-2000:] + proc.stderr[-2000:]
    began = {c["cell"]: c["timings"]["finished"] - c["timings"]["wall"] for c in results["cells"]}
    first = began.pop("planted_autotune_adds_up-raw-eager")
    assert all(start >= first for cell, start in began.items() if "-control-" not in cell), (first, began)


def test_an_autotuned_case_is_compiled_ahead_in_as_many_slices_as_the_workers_share_and_its_configs_allow(tmp_path):
    from types import SimpleNamespace

    from harness.execution import compile_ahead

    tuned = [SimpleNamespace(configs=[1, 2, 3]), SimpleNamespace(configs=[1] * 27)]
    cells = [Cell.parse(f"{case}-{style}-{row}") for case in ("tuned", "few", "plain")
             for style in ("control", "raw", "custom_op") for row in ("compile_default", "eager", "train_eager")]
    slices = compile_ahead.plan(cells, {"tuned": tuned, "few": tuned[:1]}, workers=16, carried={"few-raw-eager"})
    assert [(s.case, s.index, s.count) for s in slices] == [("tuned", k, 8) for k in range(8)] + [("few", k, 3) for k in range(3)]
    # the first eager and train_eager cells of a style that launches the kernels, never the control's nor a carried one
    assert {s.case: [c.id for c in s.cells] for s in slices} == {"tuned": ["tuned-raw-eager", "tuned-raw-train_eager"],
                                                                  "few": ["few-raw-train_eager", "few-custom_op-eager"]}
    # a case with one cell to run has nothing to share its compiles with
    assert compile_ahead.plan([cells[1], cells[4]], {"tuned": tuned}, workers=16) == []  # the control's and raw's eager cells
    # Each worker runs its share before its first cell: the n-th slice falls to worker n, modulo the workers.
    compile_ahead.write_plan(str(tmp_path), slices)
    assert compile_ahead.mine(str(tmp_path), 0, 16) == [slices[0]] and compile_ahead.mine(str(tmp_path), 15, 16) == []
    assert compile_ahead.mine(str(tmp_path), 2, 4) == [slices[2], slices[6], slices[10]]
    assert compile_ahead.mine(str(tmp_path / "no-plan"), 0, 4) == []  # a run that compiles nothing ahead


def test_in_a_slice_each_autotuner_tries_only_every_nth_config_and_runs_each_once(monkeypatch):
    from types import SimpleNamespace

    from triton.runtime.autotuner import Autotuner

    from harness.execution import compile_ahead

    original = Autotuner.__dict__["prune_configs"]
    monkeypatch.setattr(Autotuner, "prune_configs", original)  # put back after the test
    monkeypatch.setattr(Autotuner, "do_bench", Autotuner.__dict__["do_bench"])
    tuner = SimpleNamespace(configs=["a", "b", "c", "d", "e"], early_config_prune=None, perf_model=None, nargs={})
    monkeypatch.delenv(compile_ahead.SLICE_ENV, raising=False)
    compile_ahead.keep_slice()  # no slice here: nothing changes
    assert Autotuner.prune_configs(tuner, {}) == ["a", "b", "c", "d", "e"]
    monkeypatch.setenv(compile_ahead.SLICE_ENV, "1/2")
    compile_ahead.keep_slice()
    assert Autotuner.prune_configs(tuner, {}) == ["b", "d"]
    runs = []
    assert Autotuner.do_bench.fget(tuner)(lambda: runs.append(1), quantiles=(0.5, 0.2, 0.8)) == [1.0, 1.0, 1.0] and runs == [1]
    monkeypatch.setenv(compile_ahead.SLICE_ENV, "3/4")
    Autotuner.prune_configs = original
    compile_ahead.keep_slice()
    assert Autotuner.prune_configs(SimpleNamespace(**{**vars(tuner), "configs": ["a", "b"]}), {}) == ["b"]  # fewer configs than slices


NOTED_CASE = '''
import os
import time

import torch
import triton
import triton.language as tl

from harness import Case, inputs


def _noted(nargs):
    """Each config this process runs, and the slice it is, if it is one."""
    with open({log!r}, "a") as f:
        f.write(f"{{os.getpid()}} {{os.environ.get('TCM_COMPILE_AHEAD_SLICE', '-')}} {{nargs['BLOCK']}} {{time.time()}}\\n")


def _time_once(kernel_call, quantiles=None):
    kernel_call()
    return [1.0, 1.0, 1.0] if quantiles else 1.0


@triton.autotune(configs=[triton.Config({{"BLOCK": b}}, pre_hook=_noted) for b in (16, 32, 64)], key=["n"], do_bench=_time_once)
@triton.jit
def noted_copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


def launch(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    n = x.numel()
    k.noted_copy_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    return out


CASE = Case(name="noted_copy", kernels=(noted_copy_kernel,), launch=launch, reference=torch.clone, make_inputs=inputs.randn(1),
            shapes=inputs.shapes(300), example_shape=(40,), dtypes=(torch.float32,))
'''


def test_compiled_ahead_each_slice_times_only_its_configs_in_a_worker_before_its_cells_with_their_outcomes_unchanged(tmp_path):
    """--compile-ahead=on (auto leaves Triton's interpreter, which compiles nothing, alone): two slices of three configs,
    each a runner process timing every second config, each run by one of the two workers before its first cell (no worker
    waits for the other's), and the cells, which each time all three, as they are without the slices."""
    log = tmp_path / "configs.log"
    (tmp_path / "noted.py").write_text(NOTED_CASE.format(log=str(log)))

    def run(ahead):
        reports = tmp_path / f"reports-{ahead}"
        proc = run_python([sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider", f"--cases={tmp_path / 'noted.py'}",
                           f"--report-dir={reports}", "--matrix-profile=quick", "--cell-timeout=120", f"--compile-ahead={ahead}",
                           "-k", "eager and not train", "--matrix"], cwd=ROOT, timeout=600)
        assert (reports / "results.json").exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
        return json.loads((reports / "results.json").read_text())

    results = run("on")
    heard = [line.split() for line in log.read_text().splitlines()]
    built = results["prebuilt"]
    assert built == [{"build": "compile_ahead noted_copy (2 slices)", "case": "noted_copy", "seconds": built[0]["seconds"],
                      "cpu_s": built[0]["cpu_s"], "error": None}], built
    assert {int(block) for _, part, block, _ in heard if part == "0/2"} == {16, 64}
    assert {int(block) for _, part, block, _ in heard if part == "1/2"} == {32}
    cells = {pid for pid, part, _, _ in heard if part == "-"}
    assert cells and all({int(b) for p, _, b, _ in heard if p == pid} == {16, 32, 64} for pid in cells)
    # Each worker's cells begin after its own slice has ended: the slice is its first work.
    ended = {part: max(float(at) for _, p, _, at in heard if p == part) for part in ("0/2", "1/2")}
    began = {c["cell"]: (c["worker"], c["timings"]["finished"] - c["timings"]["wall"]) for c in results["cells"]}
    for cell, (worker, at) in began.items():
        assert at >= ended[f"{worker[-1]}/2"], (cell, worker, at, ended)

    log.unlink()
    without = run("off")
    assert "prebuilt" not in without or not without["prebuilt"]
    assert not any(part != "-" for _, part, _, _ in (line.split() for line in log.read_text().splitlines()))
    assert ({c["cell"]: (c["outcome"], c["stage"]) for c in results["cells"]}
            == {c["cell"]: (c["outcome"], c["stage"]) for c in without["cells"]})
