"""heuristics_autotune as a triton_op: is "wrap_triton only works on functions annotated with triton.jit or
triton.autotune" torch's own answer to @triton.heuristics stacked outermost?

Chart signatures, case heuristics_autotune, style triton_op (float32): "wrap_triton only works on functions
annotated with triton.jit or triton.autotune" (RuntimeError) on eager, train_eager, tensor_subclass (run),
export_nonstrict, aoti_*nonstrict (export) and opcheck's test_schema; "RuntimeError when making fake tensor
call ... Dynamo failed to run FX node with fake tensors" (TorchRuntimeError; detail: got RuntimeError('wrap_triton
only works ...')) on every compile row and export_strict/aoti_strict/aoti_cpp_strict.
Harness: wrapping.py:_triton_op_body (wrap_triton(gelu_kernel) in a generated body calling the launcher),
builders.py:compiled / _export (Dim("batch", max=1 << 22) on dim 0).
Here: the kernel exactly as the case declares it (@triton.heuristics over @triton.autotune over @triton.jit)
in a triton_op as a user writes it: eager, compile fullgraph, strict export. Contrast: @triton.autotune
outermost over @triton.heuristics (the order torch's TritonHOPifier unwraps): eager, compile, strict export.
Verdict: FAIL like the chart = wrap_triton's own rule (it accepts JITFunction or Autotuner, never Heuristics);
PASS = a harness artifact.
"""
import sys

import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton

DEVICE = torch.device("cuda")


@triton.heuristics({"MASKLESS": lambda args: args["n_elements"] % 1024 == 0})  # as in cases/heuristics_autotune.py
@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 256}, num_warps=4)],
                 key=["n_elements"])
@triton.jit
def gelu_kernel(in_ptr, out_ptr, n_elements, BLOCK: tl.constexpr, MASKLESS: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if MASKLESS:
        x = tl.load(in_ptr + offsets).to(tl.float32)
    else:
        x = tl.load(in_ptr + offsets, mask=offsets < n_elements).to(tl.float32)
    y = 0.5 * x * (1 + tl.math.erf(x * 0.7071067811865476))
    if MASKLESS:
        tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty))
    else:
        tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=offsets < n_elements)


# Contrast, the same @triton.jit function stacked the other way: @triton.autotune(...) over @triton.heuristics(...).
gelu_kernel_swapped = triton.autotune(configs=gelu_kernel.fn.configs, key=["n_elements"])(
    triton.heuristics({"MASKLESS": lambda args: args["n_elements"] % 1024 == 0})(gelu_kernel.fn.fn))


@triton_op("standalone::gelu", mutates_args=())
def gelu(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK"]),)
    wrap_triton(gelu_kernel)[grid](x, out, n_elements)  # BLOCK from the autotuner, MASKLESS from the heuristic
    return out


@triton_op("standalone::gelu_swapped", mutates_args=())
def gelu_swapped(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK"]),)
    wrap_triton(gelu_kernel_swapped)[grid](x, out, n_elements)
    return out


class Model(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn  # the user's function

    def forward(self, x):
        return self.fn(x)


def check(label, how, fn):
    try:
        torch._dynamo.reset()
        x = torch.randn(1024, device=DEVICE)  # the case's example_shape
        if how == "compile":
            fn = torch.compile(fn, fullgraph=True)
        elif how == "export":
            batch = torch.export.Dim("batch", min=1, max=1 << 22)  # the case's max_batch
            fn = torch.export.export(Model(fn), (x,), strict=True, dynamic_shapes=({0: batch},)).module()
        got, want = fn(x), torch.nn.functional.gelu(x)
        bad = ~torch.isclose(got, want, rtol=1.3e-6, atol=1e-5)
        print(f"CHECK {label}: " + (f"WRONG {bad.sum().item()} of {got.numel()} elements differ from gelu" if bad.any() else "PASS"), flush=True)
    except BaseException as e:
        print(f"CHECK {label}: FAIL {type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}", flush=True)
        if "fake tensor" in str(e):  # the compile failure's real error is further on: on stderr
            print(f"  {label}: " + " ".join(str(e).split())[:600], file=sys.stderr)


for how in ("eager", "compile", "export"):
    check(f"triton_op, @heuristics over @autotune (as the case), {how}", how, lambda x: torch.ops.standalone.gelu(x))
for how in ("eager", "compile", "export"):
    check(f"triton_op, @autotune over @heuristics (contrast), {how}", how, lambda x: torch.ops.standalone.gelu_swapped(x))
