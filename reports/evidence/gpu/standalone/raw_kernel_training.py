"""Signature checked: "gradient of input 'x' differs from the reference: it is missing (None) where the reference
has one: cut off from the autograd graph" (WRONG).

Cells: raw on train_eager, train_compile_default, train_compile_fullgraph (19 cases). The harness
(harness/training.py:step) makes the float inputs leaves with requires_grad, runs the forward (compiled with
the row's torch.compile options, or eager), and, if an output requires grad, takes torch.autograd.grad of
sum(out * cotangent) with allow_unused; an output with no grad_fn leaves every gradient None, and the cell
compares them with the reference's (x + y: both gradients are the cotangent).
Here: the raw add launcher and, as the contrast, the autograd.Function called through a plain function
(expected PASS), each eager, torch.compile() and torch.compile(fullgraph=True), out.backward(cotangent).
Verdict: WRONG for the raw launcher = the style's own behaviour (a raw launch writes into a fresh tensor
autograd knows nothing of, so out.backward would raise and x.grad stays None); a PASS = a harness artifact.
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

def train_step(fn, x, y, cotangent):
    """Forward and backward as a training loop does: the output and each input's .grad (None if autograd gives none)."""
    x, y = x.detach().clone().requires_grad_(), y.detach().clone().requires_grad_()
    out = fn(x, y)
    if out.requires_grad:  # else out.backward raises "element 0 of tensors does not require grad and does not have a grad_fn"
        out.backward(cotangent)
    return out.detach(), {"x": x.grad, "y": y.grad}, out.requires_grad

x, y = torch.randn(300, device=DEVICE), torch.randn(300, device=DEVICE)
cotangent = torch.linspace(-1.0, 1.0, 300, device=DEVICE)  # as harness/training.py's _cotangent
want, want_grads, _ = train_step(lambda a, b: a + b, x, y, cotangent)
for style, fn in [("raw launcher", add), ("autograd.Function through a plain function", add_fn)]:
    for row, options in [("train_eager", None), ("train_compile_default", {}), ("train_compile_fullgraph", {"fullgraph": True})]:
        label = f"{style}, {row}"
        try:
            torch._dynamo.reset()
            forward = fn if options is None else torch.compile(fn, **options)
            out, grads, differentiable = train_step(forward, x, y, cotangent)
            torch.testing.assert_close(out, want)
            missing = [name for name in grads if grads[name] is None and want_grads[name] is not None]
            if missing:
                print(f"CHECK {label}: WRONG gradient of {', '.join(missing)} is None where the reference has one "
                      f"(output requires_grad={differentiable}: cut off from the autograd graph)")
                continue
            for name in grads:
                torch.testing.assert_close(grads[name], want_grads[name], msg=lambda m: f"gradient of {name}: {m}")
            print(f"CHECK {label}: PASS")
        except AssertionError as e:
            print(f"CHECK {label}: WRONG {' '.join(str(e).split())[:300]}")
        except BaseException as e:
            print(f"CHECK {label}: FAIL {type(e).__name__}: {(str(e).splitlines() or [''])[0]}")
