"""The new process of a row that loads what a cell saved or compiles its edited kernels: one loop and one exchange.

The rows that save (harness.execution.saved) and the warm-cache row (harness.execution.warm_cache) each start, at a
cell's first call, a Python process that never ran the cell: it imports the case, builds the style, and then serves the
cell's requests one at a time (a load, then each call), until the cell is done. Each request is a dict pickled onto the
process's stdin, each answer a dict pickled onto its stdout: the standard library's pickle frames them, whole. What
torch, Triton or the case print there goes to the process's stderr, kept in its log.
"""

from __future__ import annotations

import os
import pickle
import sys
from typing import Any, Callable

from harness.processes.helper_process import HelperProcess


class CaseProcess(HelperProcess):
    """The cell's side of one such process, `python -m MODULE` (forked from the run's zygote where it can be)."""

    def __init__(self, module: str, workdir: str, prefix: str, failure: type[Exception], env: dict[str, str]):
        super().__init__([sys.executable, "-m", module], workdir, prefix=prefix, who="the new process", failure=failure,
                         env=env, binary=True)

    def ask(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """The process's answer to `request`; `failure` where it dies first or answers nothing for `timeout_s`."""
        try:
            pickle.dump(request, self.proc.stdin)
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died: reading its answer says how
        self.wait_for_answer(timeout_s)
        try:
            return pickle.load(self.proc.stdout)
        except EOFError:
            raise self.died() from None


def serve(answer: Callable[[dict[str, Any]], dict[str, Any]]) -> int:
    """The new process's side: each request read from stdin answered (`answer`, which returns what went wrong as part of
    its answer), until the cell's side closes it."""
    requests = os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # what torch, Triton or the case print: the log, not an answer
    while True:
        try:
            request = pickle.load(requests)
        except EOFError:
            return 0
        pickle.dump(answer(request), answers)
        answers.flush()
