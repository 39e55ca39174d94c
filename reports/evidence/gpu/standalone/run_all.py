"""Run every standalone program in this folder, each in a process of its own, and collect their CHECK lines.

    CXX=/usr/bin/g++ python reports/evidence/gpu/standalone/run_all.py OUT_DIR [--jobs N] [--timeout S]

Each program prints one `CHECK <label>: PASS|FAIL ...|WRONG ...` line per check; this writes OUT_DIR/<program>.log
(its whole output) and OUT_DIR/checks.md (every CHECK line, by program, with the program's exit status).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run(program: str, out: str, timeout: float) -> tuple[str, int | str, float, list[str]]:
    start = time.monotonic()
    try:
        done = subprocess.run([sys.executable, os.path.join(HERE, program)], capture_output=True, text=True, timeout=timeout)
        status: int | str = done.returncode
        stdout, stderr = done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        status = f"timed out after {timeout:.0f} s"
        stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        stderr = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
    seconds = time.monotonic() - start
    with open(os.path.join(out, program.removesuffix(".py") + ".log"), "w") as log:
        log.write(f"$ python {program}\n# exit {status}, {seconds:.1f} s\n--- stdout\n{stdout}\n--- stderr\n{stderr}")
    return program, status, seconds, [line for line in stdout.splitlines() if line.startswith("CHECK ")]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--jobs", type=int, default=6)
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    programs = sorted(p for p in os.listdir(HERE) if p.endswith(".py") and p != os.path.basename(__file__))
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda p: run(p, args.out, args.timeout), programs))
    lines = ["# Standalone checks", ""]
    for program, status, seconds, checks in results:
        lines += [f"## {program} (exit {status}, {seconds:.0f} s)", ""]
        lines += [f"- {check.removeprefix('CHECK ')}" for check in checks] or ["- no CHECK line: see its log"]
        lines.append("")
    with open(os.path.join(args.out, "checks.md"), "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
