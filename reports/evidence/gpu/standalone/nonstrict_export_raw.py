"""Signature checked: "Cannot access data pointer of Tensor (e.g. FakeTensor, FunctionalTensor). If you're using
torch.compile/export/fx, it is likely that we are erroneously tracing into a custom kernel..." at stage export.

Cells: styles raw and raw_autograd on rows export_nonstrict, aoti_nonstrict, aoti_cpp_nonstrict,
aoti_fresh_nonstrict (18 cases; the AOTI rows fail at their export step). Case here: add (cases/add.py).
The harness (harness/builders.py:_export) calls torch.export.export(_Program(fn), inputs, strict=False,
dynamic_shapes=dynamic_batch(...)), where fn is the raw launcher (harness/wrapping.py:_build RAW) or the
autograd.Function's apply (RAW_AUTOGRAD). Non-strict export runs the Python code on FakeTensors, so a raw
Triton launch asks a fake tensor for its data pointer.

Verdict: FAIL with this message for the raw launcher and the Function = the style/path's own behaviour
(non-strict export cannot trace into an opaque kernel launch); a PASS there would make it a harness
artifact. The triton_op (wrap_triton) contrast is expected to PASS: it is the supported way.
"""
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

def add_fn(x, y):
    return AddFn.apply(x, y)

@torch.library.triton_op("standalone::add", mutates_args=())
def add_op(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    torch.library.wrap_triton(add_kernel)[grid](x, y, out, n_elements, BLOCK_SIZE=128)
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
for label, fn in [("raw launcher, export_nonstrict", add),
                  ("autograd.Function through a plain function, export_nonstrict", add_fn),
                  ("triton_op (wrap_triton), export_nonstrict", lambda a, b: torch.ops.standalone.add(a, b))]:
    try:
        ep = torch.export.export(Model(fn), (x, y), strict=False, dynamic_shapes=({0: batch}, {0: batch}))
        torch.testing.assert_close(ep.module()(x2, y2), x2 + y2)  # another batch size through the program
        print(f"CHECK {label}: PASS")
    except BaseException as e:
        print(f"CHECK {label}: FAIL {type(e).__name__}: {(str(e).splitlines() or [''])[0]}")
