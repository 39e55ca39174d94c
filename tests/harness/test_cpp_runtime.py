"""AOTInductor's C++ runtime: its runner is built once and a failed build is named by its first error;
a package runs in a process with no Python, shared with the Python runtime's cell of the same key; a
package that calls back into Python fails there."""

import os

import pytest

from harness.execution import cpp_runtime
from harness.model.outcome import Outcome, Stage


@pytest.fixture(scope="module")
def caches(tmp_path_factory):
    return str(tmp_path_factory.mktemp("caches"))  # one runner build for the module's tests


def test_a_failed_build_is_named_by_its_first_error_and_tried_once_a_run(tmp_path, monkeypatch):
    monkeypatch.setattr(cpp_runtime, "_compiler", lambda: ("/bin/false", "a compiler that always fails"))
    caches, run = str(tmp_path / "caches"), str(tmp_path / "run")
    with pytest.raises(cpp_runtime.BuildFailure, match=r"building the C\+\+ runner failed \(false\): CMake Error") as first:
        cpp_runtime.executable(caches, run)
    real_build = cpp_runtime._build
    monkeypatch.setattr(cpp_runtime, "_build", lambda *args: pytest.fail("built again in the same run"))
    with pytest.raises(cpp_runtime.BuildFailure) as again:
        cpp_runtime.executable(caches, run)
    assert str(again.value) == str(first.value)
    tried = []
    monkeypatch.setattr(cpp_runtime, "_build", lambda *args: tried.append(args) or real_build(*args))
    with pytest.raises(cpp_runtime.BuildFailure, match="CMake Error"):
        cpp_runtime.executable(caches, str(tmp_path / "next-run"))  # a new run, the same caches
    assert len(tried) == 1  # it tried again


def test_the_runner_is_kept_in_the_users_cache_folder_and_in_the_runs_caches_where_that_folder_cannot_be_written(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert cpp_runtime.built_runners("run-caches") == str(tmp_path / "cache" / "triton-compat-matrix")
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "a-file"))  # no folder can be made under it
    assert cpp_runtime.built_runners("run-caches") == "run-caches"


def test_a_runner_of_another_torch_build_compiler_or_source_has_another_key(monkeypatch):
    key = cpp_runtime._key("/usr/bin/g++", "g++ 13")
    assert cpp_runtime._key("/usr/bin/g++", "g++ 14") != key and cpp_runtime._key("/usr/bin/clang++", "g++ 13") != key
    monkeypatch.setattr(cpp_runtime, "_libtorch", lambda: "another libtorch of the same version")
    assert cpp_runtime._key("/usr/bin/g++", "g++ 13") != key


def test_first_error_line_takes_cmakes_reason_from_the_next_line():
    output = "-- configuring\nCMake Error at CMakeLists.txt:3 (project):\n  No CMAKE_CXX_COMPILER could be found.\n"
    assert cpp_runtime.first_error_line(output) == "CMake Error at CMakeLists.txt:3 (project): No CMAKE_CXX_COMPILER could be found."
    assert cpp_runtime.first_error_line("a.cpp:1:1: error: 'x' was not declared\nmore") == "a.cpp:1:1: error: 'x' was not declared"


def test_a_package_runs_from_cpp_and_one_that_calls_python_fails_there(run_planted, planted_runner, caches, tmp_path):
    shared = dict(caches=caches, packages=str(tmp_path / "packages"))
    control = run_planted("planted_ok", wrapping="control", row="aoti_cpp_strict", **shared)
    assert control.outcome is Outcome.PASS, control.message
    assert control.examples_run > 1

    custom = run_planted("planted_ok", wrapping="custom_op", row="aoti_cpp_strict", **shared)
    assert custom.outcome is Outcome.FAIL and custom.stage in (Stage.AOT_LOAD, Stage.RUN), custom
    assert "planted_ok" in custom.message, custom.message  # the operator the package cannot find without Python

    # The Python runtime's cell of the same key loads the package the C++ cell built, and passes: the
    # package calls back into the Python implementation.
    in_python = run_planted("planted_ok", wrapping="custom_op", row="aoti_strict", **shared)
    assert in_python.outcome is Outcome.PASS, in_python.message
    built = {name for name in os.listdir(planted_runner.workdir) if name.endswith(".pt2")}
    assert "planted_ok-custom_op-aoti_cpp_strict-float32.pt2" in built
    assert "planted_ok-custom_op-aoti_strict-float32.pt2" not in built
    packages = sorted(os.listdir(shared["packages"]))
    assert [name.rsplit("-", 1)[0] for name in packages] == [f"planted_ok-{w}-float32" for w in ("control", "custom_op") for _ in range(3)]
    assert {name.split(".", 1)[1] for name in packages} == {"lock", "pt2", "targets.json"}

    # Non-strict export gives this operator the same program: its cell runs the package strict export's built.
    nonstrict = run_planted("planted_ok", wrapping="custom_op", row="aoti_nonstrict", **shared)
    assert nonstrict.outcome is Outcome.PASS, nonstrict.message
    assert sorted(os.listdir(shared["packages"])) == packages
    assert "planted_ok-custom_op-aoti_nonstrict-float32.pt2" not in os.listdir(planted_runner.workdir)
