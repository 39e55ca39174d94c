"""An AOTInductor package loaded and run by a new Python process that imports torch and nothing else.

As a serving process loads a .pt2: an operator the package calls back into must be registered by the package itself,
or the call fails here. `main(DEVICE)` answers "ready", then a line at a time: "load N PACKAGE" loads a package as model
N and answers "loaded"; "N INPUTS.pt OUTPUTS.pt" runs model N and answers "ok"; either answers "error MESSAGE" (newlines
as \\n) instead. One process serves every package of a cell (one per dtype), each loaded by a process that never
imported the case; the C++ runtime's runner answers a caller the same way. The caller sends and takes tensors as
`sent_tensors` and `as_returned` say. Plain PyTorch: a cell's reproducer prints this file as it is, and runs it as its new process.
"""

import sys

import torch


def model_of(package):
    return torch._inductor.aoti_load_package(package)


def run_model(model, inputs, device):
    """The model run on the inputs, each with its own strides (a view's gaps between rows: the package was compiled for
    them); its outputs, and the inputs after the call (a package may write into them), on the CPU."""
    inputs = [torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=device).copy_(t) for t in inputs]
    out = model(*inputs)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    outputs = list(out) if isinstance(out, (list, tuple)) else [out]
    return [None if o is None else o.detach().cpu() for o in outputs], [t.detach().cpu() for t in inputs]


def sent_tensors(inputs):
    """What the caller sends for a call: its tensor inputs (the package took the others as constants), each with its own
    strides, on the CPU."""
    return [torch.empty_strided(x.shape, x.stride(), dtype=x.dtype).copy_(x.detach()) for x in inputs if isinstance(x, torch.Tensor)]


def as_returned(inputs, outputs, after, device):
    """The call as the caller sees it: what the package wrote into its inputs copied back into them, as on every other
    path, and its outputs on `device`; None where it returns nothing (an in-place program), as aoti_load_package's does."""
    with torch.no_grad():
        for x, written in zip([x for x in inputs if isinstance(x, torch.Tensor)], after):
            x.copy_(written)
    if all(o is None for o in outputs):
        return None
    return [None if o is None else o.to(device) for o in outputs]


def _error(exc):
    return "error " + f"{type(exc).__name__}: {exc}"[:2000].replace("\n", "\\n")


def main(device):
    models = {}
    print("ready", flush=True)
    for line in sys.stdin:
        if line.startswith("load "):
            _, index, package = line.rstrip("\n").split(" ", 2)
            try:
                models[index] = model_of(package)
                print("loaded", flush=True)
            except Exception as exc:  # noqa: BLE001 - whatever loading raises is the answer
                print(_error(exc), flush=True)
            continue
        index, sent, received = line.split()
        try:
            torch.save(run_model(models[index], torch.load(sent, weights_only=False), device), received)
            print("ok", flush=True)
        except Exception as exc:  # noqa: BLE001
            print(_error(exc), flush=True)
    return 0
