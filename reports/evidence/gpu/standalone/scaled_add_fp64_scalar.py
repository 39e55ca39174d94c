"""Signatures: "CompilationError: at 7:4: ... Loop-carried variable acc has initial type fp32 but is re-assigned to
fp64 in loop" (InductorError, stage compile), and the same Triton error as "RuntimeError: Failed to run autotuning
code block: at 7:4:" on compile_cpp_wrapper (compile) and aoti_* (aot_compile).
Cells: scaled_add, raw/raw_autograd/triton_op on the compile rows, train_compile_* and warm_cache_edit; raw and
triton_op on compile_cpp_wrapper and aoti_*. The harness (harness/builders.py:compiled, _package) compiles the
style's callable with the row's options and calls it on example_shape (300,) float32, alpha=0.5, repeat=1
(harness/execute.py:artifact), or exports it with a dynamic batch and runs aoti_compile_and_package. Eager Triton
types a Python float argument fp32; Inductor's wrapper types a user kernel's float argument fp64, so
`acc += alpha * y` makes the fp32 accumulator fp64 inside the loop.
Verdict: FAIL like the chart = PyTorch's own behaviour; PASS = a harness artifact. Contrast (expected PASS): the
kernel with `alpha = alpha.to(tl.float32)` first, under torch.compile: the fp64 scalar is the cause.
"""
import os
import tempfile

import torch
import triton
import triton.language as tl
from torch.library import wrap_triton

DEVICE = torch.device("cuda")


@triton.jit
def scaled_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, alpha, repeat, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
    acc = x.to(tl.float32)
    for _ in range(repeat):  # the int scalar is a loop bound
        acc += alpha * y
    tl.store(out_ptr + offsets, acc.to(x.dtype), mask=mask)


@triton.jit
def scaled_add_f32_kernel(x_ptr, y_ptr, out_ptr, n_elements, alpha, repeat, BLOCK: tl.constexpr):
    alpha = alpha.to(tl.float32)  # the contrast's one change
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
    acc = x.to(tl.float32)
    for _ in range(repeat):
        acc += alpha * y
    tl.store(out_ptr + offsets, acc.to(x.dtype), mask=mask)


def scaled_add(x, y, alpha, repeat):
    out = torch.empty_like(x)
    n_elements = out.numel()
    scaled_add_kernel[(triton.cdiv(n_elements, 256),)](x, y, out, n_elements, alpha, repeat, BLOCK=256)
    return out


@torch.library.triton_op("standalone::scaled_add", mutates_args=())
def scaled_add_op(x: torch.Tensor, y: torch.Tensor, alpha: float, repeat: int) -> torch.Tensor:
    out = torch.empty_like(x)
    n_elements = out.numel()
    wrap_triton(scaled_add_kernel)[(triton.cdiv(n_elements, 256),)](x, y, out, n_elements, alpha, repeat, BLOCK=256)
    return out


@torch.library.triton_op("standalone::scaled_add_f32", mutates_args=())
def scaled_add_f32_op(x: torch.Tensor, y: torch.Tensor, alpha: float, repeat: int) -> torch.Tensor:
    out = torch.empty_like(x)
    n_elements = out.numel()
    wrap_triton(scaled_add_f32_kernel)[(triton.cdiv(n_elements, 256),)](x, y, out, n_elements, alpha, repeat, BLOCK=256)
    return out


def op(x, y, alpha, repeat):
    return torch.ops.standalone.scaled_add(x, y, alpha, repeat)


def op_f32(x, y, alpha, repeat):
    return torch.ops.standalone.scaled_add_f32(x, y, alpha, repeat)


class Model(torch.nn.Module):
    def forward(self, x, y, alpha, repeat):
        return op(x, y, alpha, repeat)


def aoti(*args):
    batch = torch.export.Dim("batch", min=1, max=1 << 22)
    ep = torch.export.export(Model(), args, strict=True, dynamic_shapes=({0: batch}, {0: batch}, None, None))
    path = torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(tempfile.mkdtemp(), "scaled_add.pt2"))
    return torch._inductor.aoti_load_package(path)(*args)


x, y = torch.randn(300, device=DEVICE), torch.randn(300, device=DEVICE)
for label, run in [
    ("raw launcher, torch.compile(fullgraph=True) (raw compile_fullgraph)", torch.compile(scaled_add, fullgraph=True)),
    ("triton_op, torch.compile(fullgraph=True) (triton_op compile_fullgraph)", torch.compile(op, fullgraph=True)),
    ("triton_op, torch.compile(fullgraph=True, options cpp_wrapper=True) (triton_op compile_cpp_wrapper)",
     torch.compile(op, fullgraph=True, options={"cpp_wrapper": True})),
    ("triton_op, strict export then AOTInductor (triton_op aoti_strict)", aoti),
    ("triton_op, kernel casting alpha to fp32, torch.compile(fullgraph=True) (contrast)", torch.compile(op_f32, fullgraph=True)),
]:
    torch._dynamo.reset()  # each check compiles from scratch, as each cell does
    try:
        out = run(x, y, 0.5, 1)
        torch.cuda.synchronize()
    except BaseException as e:
        print(f"CHECK {label}: FAIL {type(e).__name__}: {(str(e).splitlines() or [''])[0]}", flush=True)
        continue
    try:
        torch.testing.assert_close(out, x + 0.5 * y)  # repeat=1
        print(f"CHECK {label}: PASS", flush=True)
    except BaseException as e:
        print(f"CHECK {label}: WRONG {' '.join(str(e).split())[:200]}", flush=True)
