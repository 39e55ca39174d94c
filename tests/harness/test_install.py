"""The package as a user installs it: a wheel in a fresh virtual environment, run from a folder of their own."""

import json
import os
import shutil
import site
import subprocess
import sys

from tests.harness.test_pytest_matrix import ROOT


def test_the_wheel_in_a_fresh_venv_runs_the_matrix_on_a_users_module_from_a_folder_outside_the_checkout(tmp_path):
    wheels = tmp_path / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(wheels), ROOT],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = wheels.glob("triton_compat_matrix-*.whl")
    # torch, triton and pytest come from this environment: its site-packages are on the venv's path (a .pth
    # file, which works where this Python is itself a venv; their own .pth files, such as an editable
    # install's, are not run). The package itself comes only from the wheel, with no index to fall back on.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    venv_site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(venv_site, "_base.pth"), "w") as f:
        f.write("\n".join(site.getsitepackages()) + "\n")
    installed = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)],
                               capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr[-3000:]

    project = tmp_path / "my_project"
    project.mkdir()
    shutil.copy(os.path.join(ROOT, "examples", "my_kernels.py"), project / "kernels.py")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CI")}
    where = subprocess.run([str(python), "-c", "import harness, harness.cases, harness.plugin as p; print(harness.__file__, p.MATRIX_MODULE)"],
                           cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert where.stdout.startswith(str(venv)) and str(venv) in where.stdout.split()[1], where.stdout + where.stderr

    proc = subprocess.run([str(venv / "bin" / "triton-compat-matrix"), "run", "-n", "0", "--cases", "kernels.py", "-k", "eager"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads((project / "reports" / "partial" / "results.json").read_text())
    cells = {c["cell"]: c["outcome"] for c in results["cells"]}
    assert set(cells) == {f"my_leaky_relu-{style}-{row}" for style in ("control", "raw", "raw_autograd", "triton_op", "custom_op")
                          for row in ("eager", "train_eager")}, cells
    assert cells["my_leaky_relu-raw-eager"] == cells["my_leaky_relu-triton_op-eager"] == "pass"
    assert results["complete"] is True and results["problems"] == []
    assert "my_leaky_relu" in (project / "reports" / "partial" / "SUPPORT.md").read_text()
    assert (project / ".pytest_cache").is_dir()  # pytest rooted the run in the user's folder

    # The pytest form, `--cases` with a space, and the built-in cases found inside the installed package.
    proc = subprocess.run([str(python), "-m", "pytest", "--matrix", "-q", "--cases", "kernels.py", "--cases", "harness.cases",
                           "--report-dir", "both", "-k", "my_leaky_relu-raw-eager or test_cell[add-raw-eager]"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    both = json.loads((project / "both" / "results.json").read_text())
    assert {c["cell"]: c["outcome"] for c in both["cells"]} == {"my_leaky_relu-raw-eager": "pass", "add-raw-eager": "pass"}


def test_every_package_of_the_harness_is_one_the_wheel_installs():
    """The wheel holds the packages pyproject.toml lists and no others: a subpackage left out installs a harness whose
    every runner dies importing it (harness.execution.paths: 'No module named ...' in each cell, as the wheel above met)."""
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        listed = set(tomllib.load(f)["tool"]["setuptools"]["packages"])
    found = {os.path.relpath(folder, ROOT).replace(os.sep, ".") for folder, _, files in os.walk(os.path.join(ROOT, "harness"))
             if "__init__.py" in files}
    assert found - listed == set(), f"add these to pyproject.toml's packages: {sorted(found - listed)}"
