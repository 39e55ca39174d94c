"""One matrix run at a time writes into a report folder.

Two runs into one folder would both finish and the last to write would win, silently replacing the other's
chart. The run's controller takes the folder's lock when it starts (filelock: an OS lock, released by the
kernel when the process dies, even by SIGKILL, so a killed run never leaves the folder locked) and holds it
until it ends. A second run into the folder refuses at once, naming the run that holds it. The lock's files
live in the folder and are removed when the run ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time

from harness.model import results as results_file
from harness.model.errors import OutputNotWritten, UsageError

LOCK_FILE = ".triton-compat-matrix.lock"
HOLDER_FILE = ".triton-compat-matrix.run"  # who holds the lock (filelock truncates the lock file itself on each try)


class ReportFolderBusy(UsageError):
    """Another run holds the report folder."""


class ReportFolderUnwritable(UsageError):
    """The report folder cannot be made or written, or something other than a regular file stands where the lock goes."""


class ReportFolderLock:
    def __init__(self, folder: str, command: str):
        # Here, not at the top: the plugin loads into every pytest run, also where only the results tools are
        # installed (no filelock, no torch), and only a matrix run takes the lock.
        from filelock import FileLock

        self.folder = folder
        self.command = command
        self._lock = FileLock(os.path.join(folder, LOCK_FILE))
        self._made_folder = False

    def acquire(self) -> None:
        """Hold the folder, or raise ReportFolderBusy naming the run that holds it; ReportFolderUnwritable where the
        folder cannot be made or written (a read-only file system), or where its lock's files are not regular files."""
        self._made_folder = not os.path.isdir(self.folder)
        from filelock import Timeout

        try:
            results_file.refuse_unless_folder(self.folder)
            results_file.refuse_unless_ours(*(os.path.join(self.folder, name) for name in (LOCK_FILE, HOLDER_FILE)))
            os.makedirs(self.folder, exist_ok=True)
            self._lock.acquire(timeout=0)
        except Timeout:  # first: filelock's Timeout is an OSError too
            self._forget_folder()
            raise ReportFolderBusy(f"{self.folder} is being written by another matrix run ({self._holder()}): wait for it to "
                                   "end, or give this run another --report-dir") from None
        except (OSError, OutputNotWritten) as exc:
            self._made_folder = self._made_folder and os.path.isdir(self.folder)
            self._forget_folder()
            raise self._unwritable(exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)) from None
        holder = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                  "command": self.command}
        try:
            with open(os.path.join(self.folder, HOLDER_FILE), "w") as f:
                json.dump(holder, f)
        except OSError as exc:
            self.release()
            raise self._unwritable(exc.strerror or str(exc)) from None

    def _unwritable(self, why: str) -> ReportFolderUnwritable:
        return ReportFolderUnwritable(f"the report folder {self.folder} cannot be written ({why}): give --report-dir a folder "
                                      "this user can write")

    def release(self) -> list[str]:
        """Let the folder go. The lock is the kernel's and goes with its file descriptor whatever happens; its files
        are removed where they can be, and those left (a folder that became read-only) are returned."""
        if not self._lock.is_locked:
            return []
        left = []
        # Removed while still held: a run that starts meanwhile waits on the lock, not on a file about to go.
        for name in (HOLDER_FILE, LOCK_FILE):
            path = os.path.join(self.folder, name)
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
            except OSError:
                left.append(path)
        self._lock.release()
        self._forget_folder()
        return left

    def _forget_folder(self) -> None:
        """A folder this run made and left empty (it wrote nothing) is removed again."""
        if self._made_folder:
            with contextlib.suppress(OSError):
                os.rmdir(self.folder)

    def _holder(self) -> str:
        try:
            with open(os.path.join(self.folder, HOLDER_FILE)) as f:
                holder = json.load(f)
            return f"pid {holder['pid']} on {holder['host']}, started {holder['started']}: `{holder['command']}`"
        except (OSError, ValueError, KeyError, TypeError):
            return "a run that has not yet said who it is"
