"""Where the matrix's time goes, and the work cut that changes nothing a cell measures: the autotuners' timing
budget, new processes forked from a zygote, the sampling profile."""

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from harness.processes.helper_process import HelperProcess, _Forked, forked_cpu_seconds
from tests.harness.conftest import run_python
from tests.harness.test_pytest_matrix import ROOT, run_matrix

CAPPED = textwrap.dedent("""
    import json, triton.testing
    calls = []
    def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
        calls.append([warmup, rep, quantiles])
        return 0.0
    triton.testing.do_bench = do_bench
    from harness.processes import autotune_timing
    autotune_timing.install()
    bench = triton.testing.do_bench
    bench(None, quantiles=(0.5, 0.2, 0.8))  # as Triton's autotuner calls it
    bench(None, 50, 200)
    bench(None, rep=0.5)
    print(json.dumps(calls))
""")


@pytest.mark.parametrize("timing, expected", [
    ("budget", [[1, 1, [0.5, 0.2, 0.8]], [1, 1, None], [1, 0.5, None]]),
    ("full", [[25, 100, [0.5, 0.2, 0.8]], [50, 200, None], [25, 0.5, None]]),
])
def test_cells_time_autotuning_configs_within_the_budget_and_perf_times_them_in_full(timing, expected):
    env = {**os.environ, "TCM_AUTOTUNE_TIMING": timing}
    proc = subprocess.run([sys.executable, "-c", CAPPED], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    calls = json.loads(proc.stdout.splitlines()[-1])
    assert [[w, r, q if q is None else list(q)] for w, r, q in calls] == expected


class Died(Exception):
    pass


ECHO = textwrap.dedent("""
    import os, sys
    print("ready", os.environ.get("TCM_TEST_MARK"), sys.argv[1:], os.getcwd(), sys.path[0] == os.path.dirname(os.path.abspath(__file__)),
          "harness" in sys.modules, os.getsid(0) == os.getpid(), flush=True)
    for line in sys.stdin:
        print("got", line.strip(), flush=True)
        if line.strip() == "abort":
            print("aborting now", file=sys.stderr, flush=True)
            os.abort()
        if line.strip() == "spin":
            end = __import__("time").process_time() + 0.3
            while __import__("time").process_time() < end:
                pass
""")


def test_a_python_helper_process_is_forked_from_the_zygote_as_a_new_process_with_the_callers_environment(tmp_path):
    script = tmp_path / "echo.py"
    script.write_text(ECHO)
    first = HelperProcess([sys.executable, str(script), "a"], str(tmp_path), "echo-", "the echo", Died,
                          env={**os.environ, "TCM_TEST_MARK": "one"})
    assert isinstance(first.proc, _Forked)
    assert first.answer(120) == f"ready one ['a'] {os.getcwd()} True False True"
    started = time.perf_counter()
    second = HelperProcess([sys.executable, str(script), "b"], str(tmp_path), "echo-", "the echo", Died,
                           env={**os.environ, "TCM_TEST_MARK": "two"})
    assert second.answer(60) == f"ready two ['b'] {os.getcwd()} True False True"
    assert time.perf_counter() - started < 5  # torch was imported once, by the zygote
    # python -P (the fresh-process row's serving script): forked too, without the script's folder on its path.
    safe = HelperProcess([sys.executable, "-P", str(script), "c"], str(tmp_path), "echo-", "the echo", Died, env=dict(os.environ))
    assert isinstance(safe.proc, _Forked)
    assert safe.answer(60) == f"ready None ['c'] {os.getcwd()} False False True"
    safe.close()
    # Its CPU time counts where a subprocess's would (the cell's CPU figure), once it has ended.
    cpu = forked_cpu_seconds()
    second.send("spin")
    assert second.answer(30) == "got spin"
    second.close()
    assert second.proc.returncode == 0
    assert forked_cpu_seconds() - cpu >= 0.25
    # A death is told as a subprocess's is: the signal, and its stderr's last line.
    first.send("abort")
    assert first.answer(30) == "got abort"
    with pytest.raises(Died, match=r"the echo died \(signal SIGABRT\): aborting now"):
        first.answer(30)


def test_a_helper_is_forked_with_what_its_caller_set_while_running_but_not_with_other_import_time_settings(tmp_path, monkeypatch):
    script = tmp_path / "echo.py"
    script.write_text(ECHO)
    # As torch sets CUDA_MODULE_LOADING when it initializes CUDA: read where it is used, after the child's fork too.
    monkeypatch.setenv("CUDA_MODULE_LOADING", "LAZY-SET-WHILE-RUNNING")
    inherited = HelperProcess([sys.executable, str(script), "a"], str(tmp_path), "echo-", "the echo", Died, env=dict(os.environ))
    assert isinstance(inherited.proc, _Forked)
    inherited.close()
    # Asked for with another value than the zygote imported torch with: the zygote would stand for another process.
    other = HelperProcess([sys.executable, str(script), "b"], str(tmp_path), "echo-", "the echo", Died,
                          env={**os.environ, "TORCHINDUCTOR_MAX_AUTOTUNE": "1"})
    assert isinstance(other.proc, subprocess.Popen)
    assert other.answer(120).startswith("ready None ['b']")
    other.close()


def test_a_command_that_is_not_a_python_module_or_script_is_started_with_subprocess(tmp_path):
    helper = HelperProcess(["cat"], str(tmp_path), "cat-", "cat", Died)
    assert isinstance(helper.proc, subprocess.Popen)
    helper.send("line")
    assert helper.answer(10) == "line"
    helper.close()


def test_a_profiled_run_says_where_each_rows_time_went(tmp_path):
    samples = tmp_path / "samples"
    proc, results, _ = run_matrix(tmp_path, "test_cell[planted_ok-control-compile_default] or test_cell[planted_ok-raw-eager]",
                                  workers=1, extra=[f"--profile-dir={samples}"])
    assert proc.returncode == 0, proc.stdout[-3000:]
    files = sorted(p.name for p in samples.iterdir())
    assert [f.split(".")[:2] for f in files] == [["planted_ok-control-compile_default", "runner"], ["planted_ok-raw-eager", "runner"]]
    record = json.loads((samples / files[0]).read_text())
    assert record["seconds"] > 0 and sum(record["parts"].values()) == pytest.approx(record["seconds"])
    assert record["parts"].get("Dynamo", 0) + record["parts"].get("Inductor (lowering, code generation, loading)", 0) > 0
    shown = run_python([sys.executable, "-m", "harness", "profile", str(samples)], cwd=ROOT, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert "| compile_default | 1 |" in shown.stdout and "| eager | 1 |" in shown.stdout


def test_a_cells_check_runs_every_hypothesis_phase_but_explain():
    # explain traces every line of every example after a failure; the cell records its own smallest failing example.
    proc = subprocess.run([sys.executable, "-c", "import harness.execution.execute; from hypothesis import settings; "
                           "print(sorted(p.name for p in settings.default.phases))"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split("\n")[-2] == str(sorted(["explicit", "reuse", "generate", "target", "shrink"]))


FAKE_DRIVER = """
static int initialized = 0;
int cuInit(unsigned int flags) { initialized = 1; return 0; }
int cuDeviceGetCount(int *count) { if (!initialized) return 3; *count = 1; return 0; }
"""

ASK_ZYGOTE = textwrap.dedent("""
    import ctypes, json, sys
    from harness.processes import zygote
    answers = [zygote.cuda_initialized()]
    driver = ctypes.CDLL(sys.argv[1])  # as torch's and Triton's imports load the driver: loaded, not initialized
    answers.append(zygote.cuda_initialized())
    driver.cuInit(0)
    answers.append(zygote.cuda_initialized())
    print(json.dumps(answers))
""")


def test_the_zygote_serves_after_imports_that_load_the_cuda_driver_and_refuses_once_it_is_initialized(tmp_path):
    # On the GPU runner torch's and Triton's imports load libcuda without calling cuInit; a child forked then can use
    # the GPU, and one forked after cuInit cannot. A stand-in driver answers as the real one does before and after cuInit.
    compiler = os.environ.get("CC") or "cc"
    (tmp_path / "driver.c").write_text(FAKE_DRIVER)
    library = tmp_path / "libcuda.so.1"
    built = subprocess.run([compiler, "-shared", "-fPIC", "-o", str(library), str(tmp_path / "driver.c")], capture_output=True, text=True)
    if built.returncode != 0:
        pytest.skip(f"no C compiler to build the stand-in driver: {built.stderr[-300:]}")
    proc = subprocess.run([sys.executable, "-c", ASK_ZYGOTE, str(library)], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.splitlines()[-1]) == [False, False, True]


def test_a_run_whose_folder_is_too_deep_for_a_socket_starts_its_runners_without_a_zygote(tmp_path):
    # A Unix socket's path holds 107 bytes on Linux: under a long TMPDIR each runner is started alone, at once,
    # rather than each worker waiting for a zygote that cannot open its socket.
    from harness.plugin.run_processes import RunProcesses

    processes = RunProcesses(config=None, folder=str(tmp_path / ("d" * 120)))
    assert processes.zygote(workers=2) is None and processes._zygote is None
