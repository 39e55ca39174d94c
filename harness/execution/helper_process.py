"""A child process the harness talks to a line at a time over its stdin and stdout, its stderr kept in a log file."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import tempfile
import weakref
from typing import IO


class HelperProcess:
    """A process started from `command` that takes requests, a line each on its stdin, and answers each with a
    line on its stdout. It gets a folder of its own under `workdir` (`dir`: the place for the files its requests
    name), and its stderr goes to stderr.log there, whose last line says why it died where it does. `who` names it
    in the `failure` (the caller's exception class) raised when it dies or takes too long. It is stopped by
    close(), else when this object is collected.
    """

    def __init__(self, command: list[str], workdir: str, prefix: str, who: str, failure: type[Exception],
                 env: dict[str, str] | None = None):
        self.who, self.failure = who, failure
        self.dir = tempfile.mkdtemp(prefix=prefix, dir=workdir)
        self.stderr = open(os.path.join(self.dir, "stderr.log"), "w+")
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, text=True, env=env, start_new_session=True)
        self._finalizer = weakref.finalize(self, _stop, self.proc, self.stderr)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self, kill: bool = False) -> None:
        """Stop the process now (else when this object is collected); `kill` kills it rather than asking it to end."""
        if self._finalizer.detach() is not None:
            _stop(self.proc, self.stderr, kill)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died: answer() says how

    def answer(self, timeout_s: float | None = None) -> str:
        """Its next line, stripped. `failure` where it dies first, with how and its stderr's last line, or where it
        says nothing for `timeout_s` (when given): then it is killed, since it is stuck or too slow to wait for."""
        assert self.proc.stdout is not None
        if timeout_s is not None:
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
            if not ready:
                self.close(kill=True)
                raise self.failure(f"{self.who} took over {timeout_s:.0f} s")
        line = self.proc.stdout.readline()
        if line:
            return line.strip()
        code = self.proc.wait(timeout=30)
        died = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
        self.stderr.seek(0)
        tail = [line.strip() for line in self.stderr.read().splitlines() if line.strip()][-1:]
        raise self.failure(f"{self.who} died ({died})" + (f": {tail[0][:300]}" if tail else ""))


def _stop(proc: subprocess.Popen, stderr: IO[str], kill: bool = False) -> None:
    """End the process: closing its stdin ends its loop; one that does not end in 10 s, or is to be killed, is
    killed. Its stderr file is closed. A function of its own, not a method: the finalizer must not hold the object."""
    if proc.poll() is None:
        try:
            if kill:
                raise OSError("kill")
            proc.stdin.close()  # type: ignore[union-attr]
            proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
    stderr.close()
