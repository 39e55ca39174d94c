"""Serve one AOTInductor package from a new Python process, as a serving process loads a model: it imports
torch and nothing of the harness or the case (run as a script by path, not as part of the package), so an
operator the package calls back into must be registered by the package itself, or the call fails here.

    python aoti_serve.py PACKAGE DEVICE

Speaks the C++ runner's protocol (harness.cpp_runtime.PackageProcess): "loaded" once, then for each line
"INPUTS.pt OUTPUTS.pt" on stdin runs the package and answers "ok" or "error MESSAGE" (newlines as \\n).
"""

import sys

import torch


def _error(exc: BaseException) -> str:
    return "error " + f"{type(exc).__name__}: {exc}"[:2000].replace("\n", "\\n")


def main(package: str, device: str) -> int:
    try:
        model = torch._inductor.aoti_load_package(package)
    except Exception as exc:  # noqa: BLE001 - whatever loading raises is the answer
        print(_error(exc), flush=True)
        return 0
    print("loaded", flush=True)
    for line in sys.stdin:
        sent, received = line.split()
        try:
            inputs = [t.to(device) for t in torch.load(sent, weights_only=False)]
            out = model(*inputs)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            outputs = list(out) if isinstance(out, (list, tuple)) else [out]
            torch.save(([None if o is None else o.detach().cpu() for o in outputs], [t.detach().cpu() for t in inputs]), received)
            print("ok", flush=True)
        except Exception as exc:  # noqa: BLE001
            print(_error(exc), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
