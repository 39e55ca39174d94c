"""Where an AOTInductor cell's compile time goes.

    python bench/profile_aoti.py [--case add] [--wrapping triton_op] [--dtype float16] [--variant NAME ...]

Each variant runs in its own process with its own fresh cache directory and compiles the same exported
program twice (a first package pays the one-off costs of a cache directory, a second one what every
later cell pays). It prints the seconds of each phase: export, Inductor lowering and code generation,
each C++ compiler call (precompiled header, wrapper, kernels, link), Triton kernel compiles, packaging.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time

TOP = 30  # functions shown, by cumulative time

VARIANTS = {
    "default": {},
    "no-precompiled-headers": {"aot_inductor.precompile_headers": False},
    "wrapper-O0": {"aot_inductor.compile_wrapper_opt_level": "O0"},
    "compile-threads-16": {"env": {"TORCHINDUCTOR_COMPILE_THREADS": "16"}},
}


def child(case_name: str, wrapping_name: str, dtype_name: str, options: dict, out: str) -> None:
    import torch
    import torch._inductor.cpp_builder as cpp_builder

    sys.path.insert(0, os.getcwd())
    from harness.authoring import registry
    from harness.execution import wrapping as wrappings
    from harness.authoring.case import Example
    from harness.execution.builders import _Program, dynamic_batch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    case = registry.load(["cases"]).cases[case_name]
    fn = wrappings.build(case, wrappings.Wrapping(wrapping_name))
    dtypes = [getattr(torch, dtype_name), torch.float32 if dtype_name != "float32" else torch.float16]

    calls: list[tuple[str, float]] = []
    original_build = cpp_builder.CppBuilder.build

    def timed_build(self, *args, **kwargs):  # every C++ compiler call, named by what it makes
        start = time.perf_counter()
        try:
            return original_build(self, *args, **kwargs)
        finally:
            target = os.path.basename(str(getattr(self, "_target_file", "") or self.get_target_file_path()))
            calls.append((target, time.perf_counter() - start))

    cpp_builder.CppBuilder.build = timed_build
    phases: list[dict] = []
    from harness.execution.observer import GraphObserver

    # As in a matrix cell: the graph observer's pass has no cache key, so Inductor's FX graph cache is bypassed.
    patches = {k: v for k, v in options.items() if k != "env"}
    patches["post_grad_custom_post_pass"] = GraphObserver().inductor_pass()
    with torch._inductor.config.patch(patches):
        for attempt, dtype in zip(("first package (new process)", "second package (another dtype)"), dtypes):
            inputs = case.inputs(Example(dtype, case.example_shape, seed=0), device)
            calls.clear()
            torch._dynamo.reset()
            start = time.perf_counter()
            exported = torch.export.export(_Program(fn), inputs, dynamic_shapes=dynamic_batch(inputs, case.max_batch, case.batched), strict=True)
            export_s = time.perf_counter() - start
            profile = cProfile.Profile()
            start = time.perf_counter()
            with tempfile.TemporaryDirectory() as tmp:
                profile.enable()
                package = torch._inductor.aoti_compile_and_package(exported, package_path=os.path.join(tmp, "p.pt2"))
                profile.disable()
                compile_s = time.perf_counter() - start
                start = time.perf_counter()
                loaded = torch._inductor.aoti_load_package(package)
                loaded(*inputs)
                load_s = time.perf_counter() - start
            stats = pstats.Stats(profile)
            rows = []
            for (filename, line, func), (_, _, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
                if any(part in filename for part in ("_inductor", "triton", "_export", "subprocess", "_dynamo", "_functorch")):
                    rows.append((cumulative, f"{func} ({'/'.join(filename.split('/')[-2:])}:{line})"))
            named = {label: seconds for seconds, label in sorted(rows, reverse=True)[:TOP]}
            for seconds, label in _callers(stats, ("check_call", "check_output", "run")):
                named[f"called by: {label}"] = seconds
            phases.append({
                "attempt": f"{attempt}, {dtype}",
                "export_s": round(export_s, 2),
                "aoti_compile_and_package_s": round(compile_s, 2),
                "load_and_first_call_s": round(load_s, 2),
                "named": {k: round(v, 2) for k, v in named.items()},
                "cpp_builds": [(name, round(s, 2)) for name, s in calls],
            })
    with open(out, "w") as f:
        json.dump({"device": device, "phases": phases}, f)


def _callers(stats: pstats.Stats, names: tuple[str, ...], depth: int = 6) -> list[tuple[float, str]]:
    """For the subprocess calls that took longest, the chain of callers that made them: whose build it was."""
    table = stats.stats  # type: ignore[attr-defined]
    found = []
    for key, (_, _, _, cumulative, callers) in table.items():
        if key[0].endswith("subprocess.py") and key[2] in names and cumulative > 1.0:
            chain, current = [], key
            for _ in range(depth):
                callers_of = table.get(current, (0, 0, 0, 0, {}))[4]
                if not callers_of:
                    break
                current = max(callers_of, key=lambda k: callers_of[k][3])
                chain.append(f"{current[2]} ({'/'.join(current[0].split('/')[-2:])}:{current[1]})")
            found.append((cumulative, f"{key[2]} <- " + " <- ".join(chain)))
    return sorted(found, reverse=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="add")
    parser.add_argument("--wrapping", default="triton_op")
    parser.add_argument("--dtype", default="float16")
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS), help="default: all")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, out = args.child.split(":", 1)
        child(args.case, args.wrapping, args.dtype, VARIANTS[name], out)
        return

    print(f"AOTInductor compile profile: case {args.case}, wrapping {args.wrapping}, dtype {args.dtype}, CXX={os.environ.get('CXX')}")
    for name in args.variant or list(VARIANTS):
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": os.path.join(cache, "inductor"),
                   "TRITON_CACHE_DIR": os.path.join(cache, "triton"), "TORCHINDUCTOR_COMPILE_THREADS": "1",
                   **VARIANTS[name].get("env", {})}
            out = os.path.join(cache, "profile.json")
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, __file__, "--case", args.case, "--wrapping", args.wrapping,
                                   "--dtype", args.dtype, "--child", f"{name}:{out}"], env=env, capture_output=True, text=True)
            wall = time.perf_counter() - start
            print(f"\n== variant {name} {VARIANTS[name]}: process wall {wall:.1f} s")
            if proc.returncode != 0:
                print(f"   FAILED (exit {proc.returncode}): {proc.stderr.strip().splitlines()[-3:]}")
                continue
            with open(out) as f:
                data = json.load(f)
            for phase in data["phases"]:
                print(f"-- {phase['attempt']}: export {phase['export_s']} s, aoti_compile_and_package "
                      f"{phase['aoti_compile_and_package_s']} s, load + first call {phase['load_and_first_call_s']} s")
                for label, seconds in phase["named"].items():
                    print(f"   {seconds:7.2f} s  {label}")
                for target, seconds in phase["cpp_builds"]:
                    print(f"   {seconds:7.2f} s  C++ build -> {target}")


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
