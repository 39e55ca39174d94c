"""Signature (stage run): "CUDA error: an illegal memory access was encountered" (AcceleratorError).

Cells: tma_add, raw and raw_autograd on cpu_fallback (example float32 shape=(1,), which tma_add's make_inputs
turns into 8 elements, TMA's 16-byte alignment). The harness (harness/subsystems.py:programs) calls the style's
callable itself on CPU tensors; the launcher (cases/tma_add.py:launch) makes host-side tensor descriptors with
TensorDescriptor.from_tensor and launches. Unlike a pointer argument, a descriptor's base address is not checked
by Triton's launcher ("cpu tensor?"), so a CPU address reaches the GPU's TMA unit.
Verdict: FAIL like the chart = the raw style's own behaviour (no CPU path; a host address in a descriptor faults
on the device); PASS = a harness artifact. First a contrast on CUDA tensors (expected PASS on sm_90+); the CPU
check may poison the CUDA context: it is last, in a program of its own.
"""
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

DEVICE = torch.device("cuda")
BLOCK = 128  # TMA moves at least 16 bytes a block


@triton.jit
def tma_add_kernel(x_desc, y_desc, out_desc, BLOCK: tl.constexpr):
    offset = tl.program_id(0) * BLOCK
    out_desc.store([offset], x_desc.load([offset]) + y_desc.load([offset]))  # out-of-bounds parts are clipped


def tma_add(x, y):
    out = torch.empty_like(x)
    n_elements = out.numel()
    descs = [TensorDescriptor.from_tensor(t, block_shape=[BLOCK]) for t in (x, y, out)]
    tma_add_kernel[(triton.cdiv(n_elements, BLOCK),)](*descs, BLOCK=BLOCK)
    return out


def check(label, x, y):
    try:
        out = tma_add(x, y)
        torch.cuda.synchronize()  # a fault of the launch surfaces here, inside the check
    except BaseException as e:  # printed at once: after an illegal address nothing else may work
        print(f"CHECK {label}: FAIL {type(e).__name__}: {(str(e).splitlines() or [''])[0]}", flush=True)
        return
    try:
        torch.testing.assert_close(out, x + y)
        print(f"CHECK {label}: PASS", flush=True)
    except BaseException as e:
        print(f"CHECK {label}: WRONG {' '.join(str(e).split())[:200]}", flush=True)


check("raw launcher, CUDA tensors (contrast, eager)", torch.randn(8, device=DEVICE), torch.randn(8, device=DEVICE))
check("raw launcher, CPU tensors (raw cpu_fallback)", torch.randn(8), torch.randn(8))  # LAST: may poison the context
