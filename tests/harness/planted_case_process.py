"""A new process served as harness.processes.case_process serves the rows' new processes, planted: it answers each
request with what it was sent, after printing to its stdout (which must not reach the answers); it dies or hangs where
the request says so."""

import os
import sys
import time

from harness.processes.case_process import serve


def answer(request):
    print("planted: what a library prints while it loads")
    if request.get("die"):
        print("planted: dying", file=sys.stderr, flush=True)
        os._exit(3)
    if request.get("hang"):
        time.sleep(600)
    return {"echo": request}


if __name__ == "__main__":
    raise SystemExit(serve(answer))
