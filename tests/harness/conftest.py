import os
import shutil
import tempfile

import pytest

from harness.model.cell import Cell
from harness.model.columns import Wrapping
from harness.model.rows import Row
from harness.model.settings import Settings
from harness.runner import Runner, runner_env

PLANTED = os.path.join(os.path.dirname(__file__), "planted.py")


@pytest.fixture(scope="module")
def planted_runner():
    workdir = tempfile.mkdtemp(prefix="tcm-test-")
    with Runner([PLANTED], workdir, env=runner_env(workdir)) as runner:
        yield runner
    shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def run_planted(planted_runner):
    def run(case, wrapping="raw", row="eager", timeout=120.0, runner=None, **settings):
        runner = runner or planted_runner
        cell = Cell(case, Wrapping(wrapping), Row(row))
        return runner.run(cell, Settings(**{"max_examples": 10, **settings}, workdir=runner.workdir), timeout)

    return run
