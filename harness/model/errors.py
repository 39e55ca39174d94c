"""The harness's own exceptions, under one base.

Exceptions from PyTorch, Triton and a case's own code are foreign: `harness.execution.execute` maps them to a cell's
outcome in one place (a StageFailure, a CaseCodeError: an error at a stage, defined beside the stages in
harness.model.outcome). An exception defined elsewhere in the harness derives from HarnessError too. A results file records a harness exception as `harness.<Class>` whichever module
defines it (harness.execution.failures.type_name), so a module can move without changing recorded data; class names are
unique across the harness for that reason.
"""

from __future__ import annotations


def first_line(exc: BaseException) -> str:
    """The first non-empty line of an exception's message, which is what the chart shows.

    Dynamo puts a terse title first, the reason on an `Explanation:` line and the user's own exception
    on a `Developer debug context:` line; those are kept with it. A recompile it refuses (error_on_recompile) names
    the guard that failed on the line after "triggered by the following guard failure(s):"; that is kept too.
    """
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return ""
    parts = [lines[0]]
    for previous, line in zip(lines, lines[1:]):
        for prefix in ("Explanation:", "Developer debug context:"):
            if line.startswith(prefix) and line.removeprefix(prefix).strip():
                parts.append(line.removeprefix(prefix).strip() if prefix.startswith("Developer") else line)
        if previous.startswith("triggered by the following guard failure"):
            parts.append(f"guard failed: {line.removeprefix('- ')}")
    return " - ".join(parts)[:500]


def described(exc: BaseException) -> str:
    """An exception as one line: its type and its first line ("ValueError: bad shape")."""
    return f"{type(exc).__name__}: {first_line(exc)}"


class HarnessError(Exception):
    """Base of every exception the harness raises on purpose."""


class UsageError(HarnessError, ValueError):
    """A command-line option or argument the user gave is wrong: the message names it and the fix."""


class CellIdError(HarnessError, ValueError):
    """Text that is not a cell id (CASE-WRAPPING-ROW)."""


class ResultsError(HarnessError, ValueError):
    """A results file that cannot be used: the message names the file and what is wrong."""


class OutputNotWritten(HarnessError):
    """A report or a tool's output could not be written (a full disk, a file that may not change, a folder that is
    not there): the message names it; where it replaced a set of reports, the old set is as it was."""


class CaseError(HarnessError, ValueError):
    """A case is malformed: the message names the case and what to fix."""

    def __init__(self, case: str, problem: str):
        super().__init__(f"case {case!r}: {problem}")
        self.case = case


class RunnerDied(HarnessError):
    """A runner process did not start."""


class Mismatch(HarnessError):
    """An output (or an input after the call) differs from the reference's."""

    def __init__(self, what: str, max_error: float | None, mismatched: str | None, message: str | None = None):
        super().__init__(message or f"{what} differs from the reference: {mismatched} (max abs error {max_error:.3g})")
        self.max_error = max_error
        self.mismatched = mismatched
