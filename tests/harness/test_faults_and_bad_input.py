"""Nothing misleading under faults and bad input: reports replaced as a set or not at all, options refused before the
run, a crashing cell's output bounded, markdown that shows messages as written, one line for each error, and nothing
written over what is not the harness's (a device, a link) or into a folder that cannot take it."""

import contextlib
import errno
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile

import pytest

from harness.model.cell import Cell
from harness.model.errors import OutputNotWritten
from harness.model.outcome import CellResult, Outcome, Stage
from harness.model.results import Results, load, save, write_together
from harness.processes import runner as runner_module
from harness.processes.runner import LOG_LINE_CHARS, LOG_TAIL_LINES, Runner
from harness.reporting import markdown, report
from harness.reporting.support import support_chart
from tests.harness.conftest import PLANTED, run_python
from tests.harness.test_trustworthy_reports import _complete_chart, _matrix
from tests.harness.test_units import FINGERPRINT

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPORTS = ("results.json", "MATRIX.md", "SUPPORT.md")


def _results(message="boom", complete=True):
    cells = [CellResult(Cell.parse("add-raw-eager"), Outcome.FAIL, stage=Stage.COMPILE, error_type="RuntimeError", message=message)]
    return Results(fingerprint=FINGERPRINT, cells=cells, complete=complete, missing=[] if complete else ["add-raw-compile_default"],
                   interrupted=None if complete else "interrupted (Ctrl-C)")


def _tool(*args, cwd=ROOT):
    return run_python([sys.executable, "-m", "harness", *args], cwd=cwd, timeout=300)


# -- 1. the reports are replaced as a set ---------------------------------------------------------------------------


@pytest.mark.parametrize("fault", ["a full disk", "a report that may not change"])
def test_a_fault_while_the_reports_are_written_leaves_every_old_report_as_it_was(tmp_path, monkeypatch, fault):
    before = _complete_chart(tmp_path)
    real_replace, real_link = os.replace, os.link
    if fault == "a full disk":  # the last report cannot be written beside its target
        def replace(src, dst):
            if str(dst).endswith("SUPPORT.md"):
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_replace(src, dst)
        monkeypatch.setattr(os, "replace", replace)
    else:  # an immutable file: neither linked nor replaced
        def link(src, dst):
            if str(src).endswith("SUPPORT.md"):
                raise PermissionError(errno.EPERM, "Operation not permitted")
            return real_link(src, dst)

        def replace(src, dst):
            if str(dst).endswith("SUPPORT.md"):
                raise PermissionError(errno.EPERM, "Operation not permitted")
            return real_replace(src, dst)
        monkeypatch.setattr(os, "link", link)
        monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OutputNotWritten, match="were not replaced, and are as they were"):
        report.write(_results("new"), str(tmp_path))
    assert {name: (tmp_path / name).read_bytes() for name in REPORTS} == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # nothing left beside them


def test_on_a_file_system_without_hard_links_the_reports_are_still_replaced(tmp_path, monkeypatch):
    _complete_chart(tmp_path)

    def link(src, dst):
        raise PermissionError(errno.EPERM, "Operation not permitted")  # what FAT and some mounted volumes answer
    monkeypatch.setattr(os, "link", link)
    report.write(_results("new"), str(tmp_path))
    assert "new" in (tmp_path / "MATRIX.md").read_text()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_write_together_puts_back_what_it_replaced_when_an_interruption_stops_it(tmp_path, monkeypatch):
    (tmp_path / "a").write_text("old a")
    real_replace = os.replace

    def replace(src, dst):
        if str(dst).endswith("/b"):
            raise KeyboardInterrupt
        return real_replace(src, dst)
    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        write_together(str(tmp_path), {"a": "new a", "b": "new b"})
    assert (tmp_path / "a").read_text() == "old a" and not (tmp_path / "b").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["a"]


def test_a_run_whose_reports_cannot_be_written_keeps_the_old_ones_and_its_results_and_exits_3_without_a_traceback(tmp_path):
    reports = tmp_path / "reports"
    before = _complete_chart(reports)
    # During the run (refused at its start), a report becomes one that cannot be replaced, as an immutable file cannot.
    (tmp_path / "support_md_a_folder_once_collected.py").write_text(
        "import os\n\n\ndef pytest_collection_finish(session):\n"
        f"    os.remove({str(reports / 'SUPPORT.md')!r})\n    os.mkdir({str(reports / 'SUPPORT.md')!r})\n")
    proc = run_python([sys.executable, "-m", "pytest", "--matrix", "-n", "0", "-p", "no:cacheprovider", "-p", "support_md_a_folder_once_collected",
                       "--matrix-profile=quick", f"--cases={PLANTED}", "-k", "planted_ok-raw-eager", f"--report-dir={reports}"],
                      cwd=tmp_path, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), ROOT])}, timeout=300)
    assert proc.returncode == 3, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    line = next(line for line in proc.stdout.splitlines() if "REPORTS NOT WRITTEN" in line)
    assert f"the reports in {reports} were not replaced, and are as they were" in line
    assert {name: (reports / name).read_bytes() for name in ("results.json", "MATRIX.md")} == {k: before[k] for k in ("results.json", "MATRIX.md")}
    kept = line.split("this run's results are in ")[1].split(" ")[0]
    assert [c.cell.id for c in load(kept).cells] == ["planted_ok-raw-eager"]
    shutil.rmtree(os.path.dirname(kept))


# -- 2, 3, 6. options refused before any cell runs --------------------------------------------------------------------


@pytest.mark.parametrize("args, said", [
    (["--cell-timeout=0"], "--cell-timeout '0': give a number of seconds above 0"),
    (["--cell-timeout=-1"], "--cell-timeout '-1': give a number of seconds above 0"),
    (["--cell-timeout=aoti=0"], "--cell-timeout 'aoti=0': give a number of seconds above 0 (for example aoti=600)"),
    (["--baseline=nosuch.json"], "--baseline nosuch.json: no such file; to make it from this run, add --accept"),
    (["--baseline=truncated.json"], "--baseline: truncated.json: not JSON (truncated or corrupt?)"),
    (["--baseline=other.json"], "--baseline: other.json: not a triton-compat-matrix results file"),
    (["--accept"], "--accept rewrites the --baseline file: add --baseline RESULTS_JSON"),
    (["--full-run"], "--full-run runs the cells a --baseline would carry over: add --baseline RESULTS_JSON"),
    (["--report-dir=afile"], "--report-dir afile: "),
])
def test_a_bad_option_is_refused_before_the_run_in_one_line_naming_the_fix(tmp_path, args, said):
    (tmp_path / "truncated.json").write_text('{"schema": "triton-compat-matrix-results", "cells": [')
    (tmp_path / "other.json").write_text(json.dumps({"schema": "something-else"}))
    (tmp_path / "afile").write_text("")
    proc = _matrix(tmp_path, f"--cases={PLANTED}", "-k", "planted_ok-raw-eager", *args)
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert said in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "is a file, not a folder" in proc.stderr or "--report-dir" not in args[0]
    assert not (tmp_path / "reports").exists()  # no cell ran


def test_a_report_dir_this_user_cannot_write_is_refused_before_the_run(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("this user (root) can write any folder")
        proc = _matrix(tmp_path, f"--cases={PLANTED}", "-k", "planted_ok-raw-eager", f"--report-dir={locked / 'reports'}")
        assert proc.returncode == 4 and "is not writable by this user" in proc.stderr, proc.stderr[-2000:]
    finally:
        locked.chmod(0o700)


# -- 4. what a crashing cell keeps of its output is bounded -----------------------------------------------------------


def test_a_crashing_cells_log_tail_keeps_its_last_lines_each_cut_short(tmp_path):
    runner = Runner([], str(tmp_path))
    with open(runner.log_path, "w") as f:  # a case that prints megabyte lines, then dies with a short one
        f.write("earlier\n" * 10 + ("x" * 1_000_000 + "\n") * 60 + "".join(f"line {n}\n" for n in range(50)))
    tail = runner._log_tail(0)
    assert tail == [f"line {n}" for n in range(10, 50)] and len(tail) == LOG_TAIL_LINES
    with open(runner.log_path, "a") as f:
        f.write("y" * 1_000_000 + "\n")
    tail = runner._log_tail(0)  # the end of the log only is read: bounded however long its lines
    assert len(tail) <= LOG_TAIL_LINES and sum(len(line) for line in tail) < LOG_TAIL_LINES * (LOG_LINE_CHARS + 40)
    assert tail[-1].startswith("y" * LOG_LINE_CHARS + " [... ") and tail[-1].endswith(" more characters]")


def test_a_runner_log_past_its_cap_is_emptied_between_cells(tmp_path, monkeypatch):
    monkeypatch.setattr(runner_module, "LOG_CAP_BYTES", 1000)
    runner = Runner([], str(tmp_path))
    with open(runner.log_path, "w") as f:
        f.write("y" * 5000)
    size = runner._capped_log()
    text = open(runner.log_path).read()
    assert size == len(text) < 200 and text.startswith("[5000 bytes of earlier cells' output removed")


# -- 5. the results tools: one line and an exit status for each error -------------------------------------------------


def test_the_results_tools_answer_bad_input_unwritable_output_and_an_incomplete_run_with_one_line_and_their_exit_status(tmp_path):
    good, incomplete = tmp_path / "good.json", tmp_path / "incomplete.json"
    save(_results(), str(good))
    save(_results(complete=False), str(incomplete))
    data = json.loads(good.read_text())
    data["cells"][0]["timings"] = None
    (tmp_path / "null-timings.json").write_text(json.dumps(data))
    for args, status, said in [
        (["diff", str(good), str(tmp_path / "null-timings.json")], 2, "null-timings.json: malformed results"),
        (["report", str(tmp_path / "null-timings.json"), "--out", str(tmp_path / "r")], 2, "null-timings.json: malformed results"),
        (["diff", str(good), str(good), "--out", str(good / "d.md")], 3, "cannot write it"),
        (["report", str(good), "--out", str(good / "x")], 3, "were not replaced"),
        (["diff", str(good), str(incomplete)], 4, "incomplete.json: an incomplete run (killed or interrupted)"),
    ]:
        proc = _tool(*args)
        assert proc.returncode == status, (args, proc.stdout[-1000:], proc.stderr[-1000:])
        assert said in proc.stderr and "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    proc = _tool("diff", str(good), str(incomplete), "--out", str(tmp_path / "d.md"))
    assert proc.stdout.strip() == f"wrote {tmp_path / 'd.md'}: 0 regressed, 0 fixed, 0 failing differently, 0 new, 0 missing, 1 unchanged"
    assert f"**WARNING: {incomplete} is an incomplete run** (interrupted (Ctrl-C))" in (tmp_path / "d.md").read_text()


# -- 7. messages shown as written ---------------------------------------------------------------------------------------


def test_messages_with_html_backticks_pipes_and_backslashes_are_shown_as_written_in_the_reports(tmp_path):
    message = "<Wrapped operator <original wrapped_mul>> </table><script>x</script> `ab` a\\|b c|d"
    assert markdown.cell_text(message) == ("&lt;Wrapped operator &lt;original wrapped_mul&gt;&gt; &lt;/table&gt;&lt;script&gt;x&lt;/script&gt; "
                                           "`ab` a\\\\\\|b c\\|d")
    assert markdown.code("uses `x` here") == "``uses `x` here``" and markdown.code("uses `x`") == "`` uses `x` ``" and markdown.code("`x`") == "`` `x` ``"
    assert markdown.code("a|b", in_table=True) == "`a\\|b`"
    report.write(_results(message), str(tmp_path))
    matrix = (tmp_path / "MATRIX.md").read_text()
    assert "<script>" not in matrix and "</table>" not in matrix and "&lt;original wrapped_mul&gt;" in matrix
    # SUPPORT.md shows the failure's signature as code, where HTML is text: whole, inside one span
    (line,) = [line for line in (tmp_path / "SUPPORT.md").read_text().splitlines() if "<script>" in line]
    assert line.startswith("| ``fail @compile: RuntimeError: <Wrapped operator <original wrapped_mul>> </table><script>x</script> `ab` "
                           "a\\\\|b c\\|d`` |"), line


def test_a_shortened_message_is_cut_after_a_whole_word():
    assert markdown.shortened("one two three four", 12) == "one two…"
    assert markdown.shortened("short", 12) == "short"


# -- known issues: a shared package's findings are every cell's -------------------------------------------------------


def test_a_cell_that_takes_a_package_another_cell_built_gets_the_warnings_logged_while_it_was_built(tmp_path):
    from harness.execution.builders import Shared, _shared_package
    from harness.execution.observer import GraphObserver

    shared = Shared(packages=str(tmp_path / "packages"), caches=str(tmp_path), key="tma_add-triton_op")
    built = tmp_path / "built.pt2"
    built.write_bytes(b"package")
    first, second = ["exported with a graph break"], []

    def make():  # the build logs what the mutation analysis gave up on, as PyTorch's logging hands it to the cell
        first.append("Encountered an exception in identify_mutated_tensors, assuming every input is mutated")
        return str(built)

    _shared_package(make, shared, "k", GraphObserver(), lambda part, s: None, first)
    path = _shared_package(lambda: pytest.fail("built twice"), shared, "k", GraphObserver(), lambda part, s: None, second)
    assert open(path, "rb").read() == b"package"
    assert second == ["Encountered an exception in identify_mutated_tensors, assuming every input is mutated"]  # not the export's


# -- an interpreter limit is probed and said, not charted as every style's failure --------------------------------------


def test_on_the_interpreter_a_kernel_converting_a_python_float_argument_is_not_tested_here_with_the_probes_answer(tmp_path):
    import torch

    module = os.path.join(ROOT, "tests", "harness", "user_modules", "float_scalar.py")
    proc = _matrix(tmp_path, f"--cases={module}", "-k", "eager and not train", f"--report-dir={tmp_path / 'r'}")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    cells = {c.cell.id: c for c in load(str(tmp_path / "r" / "results.json")).cells}
    assert cells["float_scalar-control-eager"].outcome is Outcome.PASS
    for style in ("raw", "raw_autograd", "triton_op", "custom_op"):
        cell = cells[f"float_scalar-{style}-eager"]
        if torch.cuda.is_available():  # a GPU compiles the kernel: the argument is the kernel's scalar
            assert cell.outcome is Outcome.PASS, (style, cell.message)
            continue
        assert cell.outcome is Outcome.SKIPPED, (style, cell.outcome, cell.message)
        assert cell.message.startswith("not tested here: Triton's interpreter hands a kernel a Python float argument as the number "
                                       "itself, and this kernel converts one with .to(...) (probed once a run with a trivial kernel "
                                       "doing so: InterpreterError: AttributeError(\"'float' object has no attribute 'to'\")"), cell.message


# -- 8. a corrupted heap is said as such, not blamed on the stage that found it -------------------------------------------


def test_a_runner_that_aborts_on_a_corrupted_heap_says_it_was_written_earlier_by_an_out_of_bounds_store():
    tail = ["some kernel output", "malloc(): corrupted top size", "Fatal Python error: Aborted"]
    message = runner_module.crash_message(-6, "SIGABRT", Stage.WRAP, tail)
    assert message.startswith("killed by SIGABRT: the heap was corrupted (malloc(): corrupted top size), found during wrap but "
                              "written earlier in the cell: most likely a kernel's store out of its tensor's bounds")
    assert runner_module.crash_message(-11, "SIGSEGV", Stage.RUN, ["Fatal Python error: Segmentation fault"]) == (
        "killed by SIGSEGV during run: Fatal Python error: Segmentation fault")
    assert runner_module.crash_message(3, None, Stage.COMPILE, []) == "runner exited with status 3 during compile"


def test_where_an_interpreter_run_disagrees_with_the_tutorial_it_says_so_and_not_that_the_versions_are_wrong():
    import dataclasses

    from harness.model.fingerprint import INTERPRETER

    cells = [CellResult(Cell.parse(f"case{n}-raw-compile_default"), Outcome.FAIL, stage=Stage.COMPILE, message="no") for n in range(11)]
    for fingerprint, heading in ((FINGERPRINT, "### Where the tutorial is wrong for these versions"),
                                 (dataclasses.replace(FINGERPRINT, mode=INTERPRETER), "### Where this run disagrees with the tutorial")):
        support = support_chart(Results(fingerprint=fingerprint, cells=cells))
        assert heading in support and ("interpreter's" in support) == (fingerprint.mode == INTERPRETER)
        line = next(line for line in support.splitlines() if line.startswith("- **Supports torch.compile**, raw"))
        assert line.endswith("`case5-raw-compile_default`, `case6-raw-compile_default`, and 3 more"), line


# -- nothing is written over what is not the harness's; an unwritable folder or output is refused ----------------------


def _device(path):
    """A character device at `path` that takes nothing (the one /dev/full is), or a skip where this user cannot make one."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    except PermissionError:
        pytest.skip("this user cannot make a device node")
    return path


def _mounts():
    """A skip where this user cannot bind-mount a folder (remounted read-only over itself in these tests)."""
    probe = tempfile.mkdtemp(prefix="tcm-mount-")
    try:
        if subprocess.run(["mount", "--bind", probe, probe], capture_output=True).returncode:
            pytest.skip("this user cannot bind-mount a folder")
        subprocess.run(["umount", probe], capture_output=True)
    finally:
        os.rmdir(probe)


READ_ONLY = "mount --bind {0} {0} && mount -o remount,bind,ro {0}"  # a read-only mount over the folder, files open in it or not


@contextlib.contextmanager
def _read_only(folder):
    """`folder` read-only (a read-only bind mount over itself) inside."""
    _mounts()
    subprocess.run(READ_ONLY.format(shlex.quote(str(folder))), shell=True, check=True, capture_output=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], capture_output=True)


def test_a_tool_never_writes_over_a_device_or_a_link_and_refuses_in_one_line_with_exit_3(tmp_path):
    good = tmp_path / "good.json"
    save(_results(), str(good))
    device = _device(str(tmp_path / "myfull"))
    (tmp_path / "link").symlink_to(good)
    for args, said in [
        (["diff", str(good), str(good), "--out", device], f"{device} is a character device, not a regular file"),
        (["history", str(good), "--out", device], f"{device} is a character device, not a regular file"),
        (["diff", str(good), str(good), "--out", str(tmp_path / "link")], "link is a symbolic link, not a regular file"),
        (["report", str(good), "--out", device], f"{device} is a character device, not a folder"),
        (["repro", "add-raw-eager", "--results", str(good), "--out", device], f"{device} is a character device, not a regular file"),
    ]:
        proc = _tool(*args)
        assert proc.returncode == 3, (args, proc.stdout[-1000:], proc.stderr[-1000:])
        assert said in proc.stderr and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stdout == ""  # refused before any work: nothing said written
    assert stat.S_ISCHR(os.lstat(device).st_mode) and os.path.islink(tmp_path / "link")  # both as they were
    assert json.loads(good.read_text())["cells"]  # and the file the link names


def test_a_full_or_closed_standard_output_ends_the_tool_with_one_line_and_exit_3(tmp_path):
    good = tmp_path / "good.json"
    save(_results(), str(good))
    command = [sys.executable, "-m", "harness"]
    for args in (["diff", str(good), str(good)], ["cases", f"--cases={PLANTED}"]):
        with open("/dev/full", "w") as full:
            proc = subprocess.run([*command, *args], cwd=ROOT, stdout=full, stderr=subprocess.PIPE, text=True, timeout=300)
        assert proc.returncode == 3, (args, proc.stderr[-2000:])  # not 1: for diff, 1 says "regressions"
        assert proc.stderr.strip() == "error: standard output could not be written (No space left on device): nothing more was printed"
    proc = subprocess.run([*command, "diff", str(good), str(good)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, timeout=300, preexec_fn=lambda: os.close(1))
    assert proc.returncode == 3 and proc.stderr.strip() == ("error: standard output is closed: nothing was done; give the command "
                                                            "somewhere to print"), proc.stderr


def test_a_run_is_refused_before_any_cell_where_a_report_is_a_device(tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir()
    device = _device(str(reports / "results.json"))
    proc = _matrix(tmp_path, f"--cases={PLANTED}", "-k", "planted_ok-raw-eager", f"--report-dir={reports}")
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"the report folder: {device} is a character device, not a regular file" in proc.stderr and "Traceback" not in proc.stderr
    assert "planted_ok" not in proc.stdout and stat.S_ISCHR(os.lstat(device).st_mode)  # no cell ran; the device is as it was


def test_a_read_only_default_report_folder_is_refused_before_any_cell_runs(tmp_path):
    (tmp_path / "reports").mkdir()
    with _read_only(tmp_path / "reports"):
        proc = _matrix(tmp_path, f"--cases={PLANTED}", "-k", "planted_ok-raw-eager")
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "the report folder reports cannot be written (Read-only file system): give --report-dir a folder this user can write" \
        in proc.stderr and "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-2000:]


def test_a_report_folder_made_read_only_mid_run_keeps_the_results_exits_3_and_says_which_lock_files_are_left(tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir()
    _mounts()
    (tmp_path / "read_only_once_collected.py").write_text(  # the run has taken its folder's lock by then
        "import subprocess\n\n\ndef pytest_collection_finish(session):\n"
        f"    subprocess.run({READ_ONLY.format(shlex.quote(str(reports)))!r}, shell=True, check=True)\n")
    try:
        proc = run_python([sys.executable, "-m", "pytest", "--matrix", "-n", "0", "-p", "no:cacheprovider", "-p", "read_only_once_collected",
                           "--matrix-profile=quick", f"--cases={PLANTED}", "-k", "planted_ok-raw-eager"],
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), ROOT])}, timeout=300)
    finally:
        subprocess.run(["umount", str(reports)], capture_output=True)
    assert proc.returncode == 3, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout[-3000:] + proc.stderr[-3000:]
    line = next(line for line in proc.stdout.splitlines() if "REPORTS NOT WRITTEN" in line)
    kept = line.split("this run's results are in ")[1].split(" ")[0]
    assert [c.cell.id for c in load(kept).cells] == ["planted_ok-raw-eager"]
    shutil.rmtree(os.path.dirname(kept))
    assert "the report folder's lock files could not be removed (reports/.triton-compat-matrix.run, " \
           "reports/.triton-compat-matrix.lock): remove them; no run holds the folder" in proc.stderr, proc.stderr[-2000:]


def test_a_lock_whose_files_cannot_be_removed_is_released_all_the_same_and_names_them(tmp_path):
    from harness.plugin.report_lock import ReportFolderLock

    reports = tmp_path / "reports"
    lock = ReportFolderLock(str(reports), command="pytest --matrix")
    lock.acquire()
    with _read_only(reports):
        left = lock.release()
    assert left == [str(reports / ".triton-compat-matrix.run"), str(reports / ".triton-compat-matrix.lock")]
    assert not lock._lock.is_locked
    again = ReportFolderLock(str(reports), command="pytest --matrix")
    again.acquire()  # this process let it go: another run may take it now
    assert again.release() == []
