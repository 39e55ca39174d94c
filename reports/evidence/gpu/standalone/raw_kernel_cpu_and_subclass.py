"""Signatures (stage run): "Pointer argument (at N) cannot be accessed from Triton (cpu tensor?)" (ValueError) and
"CUDA error: an illegal memory access was encountered" (AcceleratorError).

Cells: raw and raw_autograd on cpu_fallback (20 cases, all but tma_add: the ValueError) and on tensor_subclass
(21 cases: the illegal address; tma_add on cpu_fallback is tma_add_cpu.py). Case here: add, float32, shape (1,)
as the cells' example. The harness (harness/subsystems.py:programs) calls the style's callable on CPU tensors
(an operator style gets register_kernel("cpu") of the reference, harness/wrapping.py:_build), or on
TwoTensor(x, x * 0.5) inputs, the result to be a TwoTensor. A TwoTensor is a wrapper with no storage: data_ptr() 0.
Verdict: FAIL like the chart = the raw style's own behaviour (a Triton launch has no CPU kernel and does not
dispatch on a subclass); PASS = a harness artifact. The custom_op with a CPU kernel is a contrast (expected PASS).
The TwoTensor check may poison the CUDA context: it is last.
"""
import torch
import triton
import triton.language as tl
from torch.testing._internal.two_tensor import TwoTensor

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


def op(x, y):
    return AddFn.apply(x, y)


@torch.library.custom_op("standalone::add_cpu_fallback", mutates_args=())
def add_op(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return add(x, y)


add_op.register_fake(lambda x, y: torch.empty_like(x))
add_op.register_kernel("cpu")(lambda x, y: x + y)


def check(label, fn, expected):
    try:
        actual = fn()
        torch.cuda.synchronize()
    except BaseException as e:  # printed at once: after an illegal address nothing else may work
        print(f"CHECK {label}: FAIL {type(e).__name__}: {(str(e).splitlines() or [''])[0]}", flush=True)
        return
    try:
        torch.testing.assert_close(actual, expected)
        print(f"CHECK {label}: PASS", flush=True)
    except BaseException as e:
        print(f"CHECK {label}: WRONG {' '.join(str(e).split())[:200]}", flush=True)


def on_two_tensors(x, y):
    out = add(TwoTensor(x, x * 0.5), TwoTensor(y, y * 0.5))
    torch.cuda.synchronize()  # a fault of the launch surfaces here, inside the check
    if not isinstance(out, TwoTensor):
        raise TypeError(f"the result is a {type(out).__name__}, not a TwoTensor")
    return out.a, out.b


xc, yc = torch.randn(1), torch.randn(1)
check("raw launcher, CPU tensors (raw cpu_fallback)", lambda: add(xc, yc), xc + yc)
check("autograd.Function through a plain function, CPU tensors (raw_autograd cpu_fallback)",
      lambda: op(xc, yc), xc + yc)
check("custom_op with register_kernel cpu, CPU tensors (contrast)",
      lambda: torch.ops.standalone.add_cpu_fallback(xc, yc), xc + yc)
x, y = torch.randn(1, device=DEVICE), torch.randn(1, device=DEVICE)
check("raw launcher, TwoTensor inputs (raw tensor_subclass)",  # LAST: may poison the CUDA context
      lambda: on_two_tensors(x, y), (x + y, (x + y) * 0.5))
