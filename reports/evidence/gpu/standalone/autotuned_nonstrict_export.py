"""Signature (stage export): "unhashable type: non-nested SymInt" (TypeError).

Cells: raw and raw_autograd on export_nonstrict, aoti_nonstrict, aoti_cpp_nonstrict, aoti_fresh_nonstrict
(which fail at their export step) for add_autotuned, heuristics_autotune and histogram_atomic: cases whose kernel
is under @triton.autotune. Case here: add_autotuned (cases/add_autotuned.py), float32, example_shape (300,).
The harness (harness/builders.py:_export) runs torch.export.export(_Program(fn), inputs, strict=False,
dynamic_shapes=dynamic_batch(...)): dim 0 a Dim("batch", min=1, max=1 << 22). Non-strict export runs the
launcher in Python on fake tensors, so the autotuner's key (n_elements = out.numel()) is a SymInt, and
the autotuner looks that key up in its cache dict.
Verdict: FAIL like the chart = the style/path's own behaviour; PASS = a harness artifact. Contrasts: the raw
launcher with static shapes (expected to fail otherwise: the autotuner then runs the kernel on fake tensors,
"Cannot access data pointer of Tensor"), and the triton_op (wrap_triton) with the dynamic batch (expected PASS).
"""
import torch
import triton
import triton.language as tl

DEVICE = torch.device("cuda")


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE": 64}, num_stages=3, num_warps=4),
        triton.Config({"BLOCK_SIZE": 128}, num_stages=4, num_warps=4),
        triton.Config({"BLOCK_SIZE": 256}, num_stages=3, num_warps=8),
    ],
    key=["n_elements"],
)
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
    add_kernel[grid](x, y, out, n_elements)  # BLOCK_SIZE comes from the config the autotuner picks
    return out


class AddFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return add(x, y)

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


def op(x, y):
    return AddFn.apply(x, y)


@torch.library.triton_op("standalone::add_autotuned", mutates_args=())
def add_op(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    torch.library.wrap_triton(add_kernel)[grid](x, y, out, n_elements)
    return out


class Model(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x, y):
        return self.fn(x, y)


x, y = torch.randn(300, device=DEVICE), torch.randn(300, device=DEVICE)
x2, y2 = torch.randn(1000, device=DEVICE), torch.randn(1000, device=DEVICE)
batch = torch.export.Dim("batch", min=1, max=1 << 22)
for label, fn, dynamic in [
    ("raw launcher, export(strict=False), dynamic batch (raw export_nonstrict)", add, True),
    ("autograd.Function through a plain function, export(strict=False), dynamic batch (raw_autograd export_nonstrict)", op, True),
    ("raw launcher, export(strict=False), static shapes (contrast)", add, False),
    ("triton_op, export(strict=False), dynamic batch (contrast)", lambda a, b: torch.ops.standalone.add_autotuned(a, b), True),
]:
    try:
        ep = torch.export.export(Model(fn), (x, y), strict=False,
                                 dynamic_shapes=({0: batch}, {0: batch}) if dynamic else None)
        a, b = (x2, y2) if dynamic else (x, y)  # another batch size where the program has a dynamic one
        out = ep.module()(a, b)
        torch.cuda.synchronize()
    except BaseException as e:
        print(f"CHECK {label}: FAIL {type(e).__name__}: {(str(e).splitlines() or [''])[0]}", flush=True)
        continue
    try:
        torch.testing.assert_close(out, a + b)
        print(f"CHECK {label}: PASS", flush=True)
    except BaseException as e:
        print(f"CHECK {label}: WRONG {' '.join(str(e).split())[:200]}", flush=True)
