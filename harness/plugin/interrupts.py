"""Ctrl-C stops a run once; the interrupts after it, while the run stops, are counted and otherwise ignored.

The first is Python's KeyboardInterrupt; the ones after it, while the workers end their runners and the controller
writes the reports, change nothing. In a pytest
worker, the interrupt ends the cell in flight and is raised once its runner has returned (`deferred`), and the worker
starts no cell after it; an idle worker waits for the controller to stop it. Either says it has dealt with the interrupt
(`acknowledge`) once nothing of it runs: the controller waits for that before it writes the reports.

A terminal sends Ctrl-C to every process of the run (the controller and each pytest worker). A second one pressed
while the run is stopping used to land wherever each process was: a traceback from inside a garbage collector's
callback in a worker, the controller's cleanup cut short. Installed where Python's own handler is (not where a
parent made the run ignore SIGINT, as a shell does for a background job).
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import threading
from types import FrameType
from typing import Any, Callable, Iterator


class OnceInterrupted:
    def __init__(self, raises: bool, acknowledge: Callable[[], None] | None = None) -> None:
        self.count = 0
        self._raises = raises
        self._instead: Callable[[], None] | None = None
        self._acknowledge = acknowledge
        self._acknowledged = False

    def __call__(self, signum: int, frame: Any) -> None:
        if self._raises and self._instead is None and redelivered_after_a_collection(signum, frame):
            return
        self.count += 1
        if self.count == 1:
            if self._instead is not None:
                self._instead()
            elif self._raises:
                raise KeyboardInterrupt
            else:
                self._acknowledge_once()  # nothing in flight

    @contextlib.contextmanager
    def deferred(self, instead: Callable[[], None]) -> Iterator[None]:
        """Inside, the first interrupt calls `instead` (ending what the block waits on) rather than raising wherever
        the block is; KeyboardInterrupt is raised once the block is done, and what it returned is not used. Interrupted
        before it (a worker waiting for its case's configs compiled ahead), the block is not begun."""
        if self.count:
            raise KeyboardInterrupt
        self._instead = instead
        try:
            yield
        finally:
            self._instead = None
            if self.count:
                self._acknowledge_once()  # what the block waited on has ended
                raise KeyboardInterrupt

    def _acknowledge_once(self) -> None:
        if self._acknowledge is not None and not self._acknowledged:
            self._acknowledged = True
            self._acknowledge()

    @classmethod
    def install(cls, raises: bool, acknowledge: Callable[[], None] | None = None) -> OnceInterrupted | None:
        """In this process's main thread, where SIGINT has Python's default handler; else None. Without `raises` (a
        pytest worker, which the run's controller stops), an interrupt outside `deferred` is only counted."""
        if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return None
        handler = cls(raises, acknowledge)
        signal.signal(signal.SIGINT, handler)
        return handler


def redelivered_after_a_collection(signum: int, frame: FrameType | None) -> bool:
    """Where the signal landed in a garbage collector's callback (hypothesis installs one), an exception raised there
    is printed as ignored and lost, and the run would go on as if never interrupted: the signal is sent to this process
    again once the collection is over (50 ms), and True returned; False where it may raise here."""
    callbacks = {getattr(callback, "__code__", None) for callback in gc.callbacks} - {None}
    while frame is not None:
        if frame.f_code in callbacks:
            threading.Timer(0.05, os.kill, (os.getpid(), signum)).start()
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def signals_deferred() -> Iterator[list[str]]:
    """Ctrl-C and SIGTERM are noted, not obeyed, while the reports are written (seconds): a second
    interrupt, or a time limit that strikes then, must not lose the cells that ran."""
    received: list[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = {sig: signal.signal(sig, lambda signum, frame: received.append(signal.Signals(signum).name))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
