"""Cases planted to fail in known ways; the harness's own tests check what it records for each.

Not part of the default chart: the matrix loads them only when named with `--cases`.
"""

import ctypes
import os
import signal
import time

import torch
import triton
import triton.language as tl

from harness import Backward, Case, inputs


@triton.jit
def add_one_kernel(in_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(in_ptr + offsets, mask=mask) + 1, mask=mask)


@triton.jit
def copy_first_half_kernel(in_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements // 2
    tl.store(out_ptr + offsets, tl.load(in_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def copy_kernel(in_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(in_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def read_far_out_of_bounds_kernel(in_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    far = in_ptr + offsets + (1 << 40)  # a terabyte past the input: an illegal address on a GPU
    tl.store(out_ptr + offsets, tl.load(far, mask=mask), mask=mask)


@triton.jit
def spin_kernel(in_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    # Waits for the first input to reach 1e30, which it never does: the kernel spins until killed.
    while tl.load(in_ptr, volatile=True) < 1e30:
        pass


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_rows, K: tl.constexpr, BLOCK: tl.constexpr, COLUMNS: tl.constexpr):
    # Sums the first COLUMNS of K columns in float32 and rounds once: closer to the exact sum than a
    # float16 reference that rounds after every addition.
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.arange(0, K)
    x = tl.load(x_ptr + rows[:, None] * K + cols[None, :], mask=(rows[:, None] < n_rows) & (cols[None, :] < COLUMNS), other=0.0)
    tl.store(out_ptr + rows, tl.sum(x.to(tl.float32), axis=1).to(out_ptr.dtype.element_ty), mask=rows < n_rows)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, K: tl.constexpr, N: tl.constexpr, BLOCK_M: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    ks = tl.arange(0, K)
    ns = tl.arange(0, N)
    a = tl.load(a_ptr + rows[:, None] * K + ks[None, :], mask=rows[:, None] < M, other=0.0)
    b = tl.load(b_ptr + ks[:, None] * N + ns[None, :])
    tl.store(c_ptr + rows[:, None] * N + ns[None, :], tl.dot(a, b), mask=rows[:, None] < M)


def _launch_matmul(k, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out = k.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    k.matmul_kernel[(triton.cdiv(a.shape[0], 16),)](a, b, out, a.shape[0], K=16, N=16, BLOCK_M=16)
    return out


def _matmul_inputs(shape, dtype, device, generator):
    a = torch.randn(shape, generator=generator).to(device=device, dtype=dtype)
    b = torch.randn((16, 16), generator=generator).to(device=device, dtype=dtype)
    return a, b


def _identity_backward(k, grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return grad


def _doubling_backward(k, grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return grad * 2  # wrong: the copy's gradient is grad itself


def _launch_with(kernel_attr):
    def launch(k, x: torch.Tensor) -> torch.Tensor:
        out = k.empty_like(x)
        n = x.numel()
        getattr(k, kernel_attr)[(triton.cdiv(n, 64),)](x, out, n, BLOCK=64)
        return out

    return launch


def _time_once(kernel_call, quantiles=None):
    """The autotuner's timing, on Triton's interpreter too: one run of the config, the same time for each."""
    kernel_call()
    return [1.0, 1.0, 1.0] if quantiles else 1.0


@triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n_elements"], do_bench=_time_once)
@triton.jit
def accumulate_kernel(in_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    """out += in: each config the autotuner times adds in once more (it has no reset_to_zero for out)."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    total = tl.load(out_ptr + offsets, mask=mask) + tl.load(in_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, total, mask=mask)


@triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n_elements"])
@triton.jit
def copy_autotuned_kernel(in_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    """A copy autotuned by Triton's own benchmarker, which needs a driver (a GPU) to time the configs."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(in_ptr + offsets, mask=mask), mask=mask)


def _copy_autotuned(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    n = x.numel()
    k.copy_autotuned_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    return out


def _accumulate(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x).zero_()
    n = x.numel()
    k.accumulate_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    return out


def _copy_twice(k, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    copy = _launch_with("copy_kernel")
    return copy(k, x), copy(k, x)


def _identity(x):
    return x.clone()


def _double_into_alike(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)  # a transposed input's layout: Inductor cannot constant-fold a filled tensor of it with an unbacked size
    out.copy_(x * 2)
    return out


def _transposed(shape, dtype, device, generator):
    rows, cols = shape
    return (torch.randn((cols, rows), generator=generator).to(device=device, dtype=dtype).t(),)


def _launch_traceable(k, x: torch.Tensor) -> torch.Tensor:
    # PyTorch ops only: strict export traces it on any device, Triton's interpreter included.
    return x * 2 + 1


def _planted(name, kernel, launch, **overrides):
    fields = dict(
        name=name,
        kernels=(kernel,),
        launch=launch,
        reference=_identity,
        make_inputs=inputs.randn(1),
        shapes=inputs.shapes(300),
        example_shape=(40,),
        dtypes=(torch.float32,),
        tags=frozenset({"planted"}),
    )
    fields.update(overrides)
    return Case(**fields)


def _copy_then(action):
    copy = _launch_with("copy_kernel")

    def launch(k, x: torch.Tensor) -> torch.Tensor:
        action()
        return copy(k, x)

    return launch


# What a library keeps for the life of its process (a kernel cache, a counter): here, its launches since the process began.
_LAUNCHES_IN_THIS_PROCESS = [0]
WORN_AFTER = 5  # more launches than one eager cell of the quick profile makes (its two examples and the plain-eager call)


def _copy_until_worn(k, x: torch.Tensor) -> torch.Tensor:
    """Right until its process has launched it WORN_AFTER times, then off by one: a cell that shares its process with
    earlier cells of the case meets what they left there; in a process of its own it passes, as in a new interpreter."""
    _LAUNCHES_IN_THIS_PROCESS[0] += 1
    out = _launch_with("copy_kernel")(k, x)
    return out if _LAUNCHES_IN_THIS_PROCESS[0] <= WORN_AFTER else out + 1


_COLD_LAUNCHES_IN_THIS_PROCESS = [0]
COLD_FOR = 3  # as many launches as one eager cell of the quick profile makes: its plain-eager call and its two examples


def _copy_once_warm(k, x: torch.Tensor) -> torch.Tensor:
    """Off by one for its process's first COLD_FOR launches, then right: as a library whose first calls in a process take
    a path its later calls skip (a table filled, a kernel cached). A cell that follows another cell of the case in a
    shared process passes; alone, as in a new interpreter, it fails."""
    _COLD_LAUNCHES_IN_THIS_PROCESS[0] += 1
    out = _launch_with("copy_kernel")(k, x)
    return out + 1 if _COLD_LAUNCHES_IN_THIS_PROCESS[0] <= COLD_FOR else out


def _launch_then_raise(kernel_name):
    launch = _launch_with(kernel_name)

    def launcher(k, x: torch.Tensor) -> torch.Tensor:
        launch(k, x)
        raise TypeError("planted: a Python error raised after the kernel was launched")

    return launcher


def _raise_when_traced():
    if torch.compiler.is_compiling():
        raise RuntimeError("planted: this launcher refuses to be traced")


def _segfault():
    ctypes.string_at(0)


_CALLS_IN_THIS_PROCESS = [0]


def _hang_past_the_first_call():
    """Hang in every call of the process but its first, which is the harness's check of the launcher in plain eager
    before the cell's path: the path's call hangs, a timeout (one that hangs in the check is the case's error)."""
    _CALLS_IN_THIS_PROCESS[0] += 1
    if _CALLS_IN_THIS_PROCESS[0] > 1:
        _hang()


def _hang():
    marker = os.environ.get("TCM_PLANTED_HANGING")
    if marker:  # tells a test that the run is now stuck in this cell, and in which process
        with open(marker, "w") as f:
            f.write(str(os.getpid()))
    time.sleep(3600)


def _exhaust_memory(x: torch.Tensor) -> None:
    """Allocate past the device's memory: on a GPU chunk by chunk until it is full (the chunks die with
    the exception), on CPU one allocation larger than any host has."""
    if not x.is_cuda:
        torch.empty(1 << 44, dtype=torch.uint8)
    chunk = torch.cuda.get_device_properties(x.device).total_memory // 16
    held = []
    while True:
        held.append(torch.empty(chunk, dtype=torch.uint8, device=x.device))


def _launch_after_exhausting_memory(k, x: torch.Tensor) -> torch.Tensor:
    _exhaust_memory(x)
    return _launch_with("copy_kernel")(k, x)


def _inputs_refusing_large_shapes(shape, dtype, device, generator):
    # Takes the simplest shape (checked when the case loads), fails on the larger ones the checks draw.
    if shape[0] > 64:
        raise ValueError(f"planted: make_inputs refuses shape {shape}")
    return inputs.randn(1)(shape, dtype, device, generator)


def _reference_that_raises(x):
    raise ArithmeticError("planted: the reference raises")


def _row_sum_launcher(columns):
    def launch(k, x: torch.Tensor) -> torch.Tensor:
        out = k.empty(x.shape[0], dtype=x.dtype, device=x.device)
        k.row_sum_kernel[(triton.cdiv(x.shape[0], 16),)](x, out, x.shape[0], K=x.shape[1], BLOCK=16, COLUMNS=columns)
        return out

    return launch


def sum_in_order(x):
    """A row sum as naive code writes it: one rounding to the input's dtype after every addition."""
    total = x[:, 0].clone()
    for j in range(1, x.shape[1]):
        total = total + x[:, j]
    return total


ROW_SUM = dict(reference=sum_in_order, shapes=inputs.shapes(300).map(lambda s: (s[0], 64)), example_shape=(40, 64),
               dtypes=(torch.float16,))


def _kill_pytest_worker():
    # The pytest(-xdist) worker the runner serves (its parent, or where the run's zygote forked it, named in its
    # environment): this takes the worker down mid-cell.
    os.kill(int(os.environ.get("TCM_ASKED_BY") or os.getppid()), signal.SIGKILL)
    time.sleep(60)


@triton.jit
def scale_by_kernel(in_ptr, out_ptr, alpha, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(in_ptr + offsets, mask=mask) * alpha, mask=mask)


def _scale_by_half(k, x: torch.Tensor) -> torch.Tensor:
    out = k.empty_like(x)
    k.scale_by_kernel[(triton.cdiv(x.numel(), 64),)](x, out, 0.5, x.numel(), BLOCK=64)  # a Python float: fp32 in eager Triton
    return out


@triton.jit
def copy_through_asm_kernel(in_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    # Inline assembly not marked pure: Triton/Inductor's mutation analysis cannot see through it and falls
    # back to "every input is mutated", though only out_ptr is written. PTX: NVIDIA GPUs only.
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(in_ptr + offsets, mask=mask)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=False, pack=1)
    tl.store(out_ptr + offsets, y, mask=mask)


@triton.jit
def double_in_place_kernel(x_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


def _double_in_place(k, x: torch.Tensor) -> None:
    k.double_in_place_kernel[(triton.cdiv(x.numel(), 64),)](x, x.numel(), BLOCK=64)


def _double_reference(x: torch.Tensor) -> None:
    x.mul_(2)


CASES = [
    _planted("planted_wrong", add_one_kernel, _launch_with("add_one_kernel")),
    _planted("planted_unwritten", copy_first_half_kernel, _launch_with("copy_first_half_kernel")),
    _planted("planted_raises_at_trace", copy_kernel, _copy_then(_raise_when_traced)),
    _planted("planted_segfault", copy_kernel, _copy_then(_segfault)),
    _planted("planted_abort", copy_kernel, _copy_then(os.abort)),
    _planted("planted_hang", copy_kernel, _copy_then(_hang_past_the_first_call)),
    _planted("planted_spins", spin_kernel, _launch_with("spin_kernel")),
    _planted("planted_out_of_memory", copy_kernel, _launch_after_exhausting_memory),
    _planted("planted_kills_worker", copy_kernel, _copy_then(_kill_pytest_worker)),
    _planted("planted_illegal_address", read_far_out_of_bounds_kernel, _launch_with("read_far_out_of_bounds_kernel")),
    _planted("planted_faults_then_raises", read_far_out_of_bounds_kernel, _launch_then_raise("read_far_out_of_bounds_kernel")),
    _planted("planted_inputs_fail_on_large_shapes", copy_kernel, _launch_with("copy_kernel"), make_inputs=_inputs_refusing_large_shapes),
    _planted("planted_reference_raises", copy_kernel, _launch_with("copy_kernel"), reference=_reference_that_raises),
    _planted("planted_sums_in_fp32", row_sum_kernel, _row_sum_launcher(64), **ROW_SUM),
    _planted("planted_sums_half_the_row", row_sum_kernel, _row_sum_launcher(32), **ROW_SUM),
    _planted("planted_ok", copy_kernel, _launch_with("copy_kernel"), backward=Backward(_identity_backward)),
    _planted("planted_wears_out_its_process", copy_kernel, _copy_until_worn),
    _planted("planted_warmed_up", copy_kernel, _copy_once_warm),
    _planted("planted_traceable", copy_kernel, _launch_traceable, reference=lambda x: x * 2 + 1,
             backward=Backward(_doubling_backward)),
    _planted("planted_transposed_output", copy_kernel, _double_into_alike, reference=lambda x: x * 2, make_inputs=_transposed,
             shapes=inputs.shapes(64, 80), example_shape=(8, 65)),
    _planted("planted_fp64_scalar", scale_by_kernel, _scale_by_half, reference=lambda x: x * 0.5),
    _planted("planted_defeats_mutation_analysis", copy_through_asm_kernel, _launch_with("copy_through_asm_kernel")),
    _planted("planted_in_place", double_in_place_kernel, _double_in_place, reference=_double_reference, mutates=frozenset({"x"})),
    _planted("planted_two_outputs", copy_kernel, _copy_twice, reference=lambda x: (x.clone(), x.clone()), dtypes=(torch.float32, torch.float16)),
    _planted("planted_wrong_backward", copy_kernel, _launch_with("copy_kernel"), backward=Backward(_doubling_backward)),
    # the first call for each size times both configs on the caller's output, which then holds 3 x the input
    _planted("planted_autotune_adds_up", accumulate_kernel, _accumulate),
    _planted("planted_default_autotuner", copy_autotuned_kernel, _copy_autotuned, reference=torch.clone),
    # a matmul's flops are 2*M*N*K (FlopCounterMode counts the reference so); this formula forgets the 2
    _planted(
        "planted_wrong_flops", matmul_kernel, _launch_matmul, reference=torch.mm, make_inputs=_matmul_inputs,
        shapes=inputs.shapes(64).map(lambda s: (s[0], 16)), example_shape=(32, 16),
        flops=lambda a_shape, b_shape: a_shape[0] * a_shape[1] * b_shape[1],
    ),
]
