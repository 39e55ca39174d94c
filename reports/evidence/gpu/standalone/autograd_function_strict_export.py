"""Signature checked: "GetAttrVariable(AutogradFunctionVariable(), setup_context) has no type" at stage export.

Cells: raw_autograd on export_strict, aoti_strict, aoti_cpp_strict, 21 cases (AOTI rows fail at export).
The harness (harness/wrapping.py:_build RAW_AUTOGRAD, at the chart's commit) returned the bound `Fn.apply`;
harness/builders.py:_Program stored it as self.fn, forward did `return self.fn(*inputs)`, and _export ran
torch.export.export(..., strict=True, dynamic batch). Checks, strict export with a dynamic batch, then
AOTInductor where it passes: (a) bound AddFn.apply stored on the module (the harness's shape), (b) a plain
function calling AddFn.apply stored the same way, (c) AddFn.apply(x, y) in forward; and the three with a
pure-PyTorch Function (x + y, no Triton; export only). Verdict: (a) FAILS like the chart while (b), (c)
PASS = a harness artifact (how the Function was held); all FAIL = the style/path's own behaviour; the
pure rows tell whether the Triton kernel matters.
"""
import os
import tempfile

import torch
import triton
import triton.language as tl

DEVICE = torch.device("cuda")

@triton.jit
def add_kernel(in_ptr0, in_ptr1, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(in_ptr0 + offsets, mask=mask)
    y = tl.load(in_ptr1 + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)

def add(x, y):
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=128)
    return out

class AddFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return add(x, y)

    @staticmethod
    def backward(ctx, grad):
        return grad, grad

class PureAddFn(torch.autograd.Function):  # the same Function without Triton
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x + y

    @staticmethod
    def backward(ctx, grad):
        return grad, grad

def add_op(x, y):
    return AddFn.apply(x, y)

def pure_add_op(x, y):
    return PureAddFn.apply(x, y)

class Stored(torch.nn.Module):  # as the harness's _Program
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs):
        return self.fn(*inputs)

class InForward(torch.nn.Module):
    def forward(self, x, y):
        return AddFn.apply(x, y)

class PureInForward(torch.nn.Module):
    def forward(self, x, y):
        return PureAddFn.apply(x, y)

def failed(e):
    return f"FAIL {type(e).__name__}: {(str(e).splitlines() or [''])[0]}"

x, y = torch.randn(300, device=DEVICE), torch.randn(300, device=DEVICE)
x2, y2 = torch.randn(1000, device=DEVICE), torch.randn(1000, device=DEVICE)
dim = {0: torch.export.Dim("batch", min=1, max=1 << 22)}
workdir = tempfile.mkdtemp()
for n, (label, model, dynamic_shapes, aoti) in enumerate([
    ("(a) bound AddFn.apply stored on the module", Stored(AddFn.apply), ((dim, dim),), True),
    ("(b) plain function calling AddFn.apply, stored on the module", Stored(add_op), ((dim, dim),), True),
    ("(c) AddFn.apply(x, y) written in forward", InForward(), (dim, dim), True),
    ("(a) pure-PyTorch: bound PureAddFn.apply stored on the module", Stored(PureAddFn.apply), ((dim, dim),), False),
    ("(b) pure-PyTorch: plain function calling PureAddFn.apply, stored", Stored(pure_add_op), ((dim, dim),), False),
    ("(c) pure-PyTorch: PureAddFn.apply(x, y) written in forward", PureInForward(), (dim, dim), False),
]):
    try:
        ep = torch.export.export(model, (x, y), strict=True, dynamic_shapes=dynamic_shapes)
        torch.testing.assert_close(ep.module()(x2, y2), x2 + y2)
        print(f"CHECK {label}, strict export: PASS")
    except BaseException as e:
        print(f"CHECK {label}, strict export: {failed(e)}")
        continue
    if aoti:
        try:
            path = torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(workdir, f"v{n}.pt2"))
            torch.testing.assert_close(torch._inductor.aoti_load_package(path)(x2, y2), x2 + y2)
            print(f"CHECK {label}, strict export + AOTInductor: PASS")
        except BaseException as e:
            print(f"CHECK {label}, strict export + AOTInductor: {failed(e)}")
