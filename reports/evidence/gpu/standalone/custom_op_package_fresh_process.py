"""Signature checked: "Could not find schema for tcm::<op>." at stage aot_load (here standalone::add).

Cells: custom_op on aoti_fresh_nonstrict, aoti_cpp_strict, aoti_cpp_nonstrict, all 21 cases. The harness
(harness/builders.py:aoti_fresh, aoti_cpp) exports, aoti_compile_and_package, then loads the .pt2 in a new
process importing torch only (harness/aoti_serve.py) or in a C++ runner with no Python (cpp_runtime.py).
A custom_op's body is Python: the package calls it through the dispatcher, where it exists only once its
module was imported. A C++ runner cannot import it at all; the fresh Python process stands in for both.

Verdict: this-process loads PASS and torch-only fresh loads FAIL with the schema message = the style/path's
own behaviour (a custom_op package is not self-contained). If the fresh process that imports this file
first also FAILS, the package itself is broken; if it PASSES, registering the op is all a server needs.
"""
import os
import subprocess
import sys
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

@torch.library.custom_op("standalone::add", mutates_args=())
def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=128)
    return out

@add.register_fake
def _(x, y):
    return torch.empty_like(x)

class Model(torch.nn.Module):
    def forward(self, x, y):
        return torch.ops.standalone.add(x, y)

LOAD_AND_RUN = """
import sys, torch
{imports}
x, y = torch.randn(1000, device={device!r}), torch.randn(1000, device={device!r})
try:
    out = torch._inductor.aoti_load_package({package!r})(x, y)
    torch.testing.assert_close(out[0] if isinstance(out, (list, tuple)) else out, x + y)
    print("PASS")
except BaseException as e:
    print(f"FAIL {{type(e).__name__}}: {{(str(e).splitlines() or [''])[0]}}")
"""

def fresh_process(package, imports):
    code = LOAD_AND_RUN.format(imports=imports, device=str(DEVICE), package=package)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return (done.stdout.strip().splitlines() or [f"FAIL ProcessExit: exit {done.returncode}, {done.stderr.strip()[-300:]}"])[-1]

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    defines_op = f"sys.path.insert(0, {here!r}); import custom_op_package_fresh_process  # registers standalone::add"
    x, y = torch.randn(300, device=DEVICE), torch.randn(300, device=DEVICE)
    batch = torch.export.Dim("batch", min=1, max=1 << 22)
    workdir = tempfile.mkdtemp()
    for strict in (True, False):
        mode = "strict" if strict else "non-strict"
        try:
            ep = torch.export.export(Model(), (x, y), strict=strict, dynamic_shapes=({0: batch}, {0: batch}))
            package = torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(workdir, f"add_{mode}.pt2"))
            x2, y2 = torch.randn(1000, device=DEVICE), torch.randn(1000, device=DEVICE)
            torch.testing.assert_close(torch._inductor.aoti_load_package(package)(x2, y2), x2 + y2)
            print(f"CHECK custom_op {mode} export + AOTInductor, loaded in this process: PASS")
        except BaseException as e:
            print(f"CHECK custom_op {mode} export + AOTInductor, loaded in this process: FAIL {type(e).__name__}: {(str(e).splitlines() or [''])[0]}")
            continue
        print(f"CHECK custom_op {mode} package, fresh process importing torch only: {fresh_process(package, '')}")
        print(f"CHECK custom_op {mode} package, fresh process importing the op's module first: {fresh_process(package, defines_op)}")
