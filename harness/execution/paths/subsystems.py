"""opcheck, FlopCounterMode and a tensor subclass (TwoTensor) around the wrapped kernel, with their references.

Each row's program and the reference its results are compared with. Plain PyTorch: a cell's reproducer prints this file
as it is."""

import torch
from torch.testing._internal.two_tensor import TwoTensor
from torch.utils.flop_counter import FlopCounterMode


class OpcheckFailed(AssertionError):
    """opcheck's tests failed for the operator: a finding about the style."""


def opchecked(op):
    """torch.library.opcheck of `op` on each call's inputs; it returns no outputs, and raises where a test fails."""
    def opcheck(*inputs):
        report = torch.library.opcheck(op, inputs, raise_exception=False)
        failed = {test: result for test, result in report.items() if result != "SUCCESS"}
        if failed:
            test, error = next(iter(failed.items()))
            raise OpcheckFailed(f"{len(failed)} of {len(report)} opcheck tests fail; {test}: {str(error).strip()}")
        return []

    return opcheck


def flop_count(fn, inputs):
    with FlopCounterMode(display=False) as counter:
        fn(*inputs)
    return int(counter.get_total_flops())


def flops_counted(fn):
    """The flops FlopCounterMode counts in a call of `fn`, as a one-element result."""
    return lambda *inputs: [torch.tensor(flop_count(fn, inputs))]


def flops_expected(reference, formula):
    """What the counter should report: where PyTorch can count the reference itself (a matmul, say), that count is the
    truth the declared formula must match; otherwise the formula (of the tensor inputs' shapes)."""
    def expected(*inputs):
        counted = flop_count(reference, inputs)
        return [torch.tensor(counted or formula(*[tuple(x.shape) for x in inputs if isinstance(x, torch.Tensor)]))]

    return expected


def second_half(x):
    """The TwoTensor's .b: half of a floating tensor, so .a and .b differ; an integer or bool tensor (an index, a mask)
    as it is, since halving would change its dtype and its meaning. With .a's strides and storage offset, which
    TwoTensor asks of both (x * 0.5 of a view with gaps between its rows is contiguous, and starts at 0)."""
    half = x * 0.5 if x.is_floating_point() else x
    extent = x.storage_offset() + (1 + sum((size - 1) * stride for size, stride in zip(x.shape, x.stride())) if x.numel() else 0)
    storage = torch.empty(extent, dtype=half.dtype, device=x.device)
    return storage.as_strided(x.shape, x.stride(), x.storage_offset()).copy_(half)


def on_two_tensors(fn, mutates):
    """`fn` called on TwoTensors of the inputs (.a each input, .b its second half); the results' .a then their .b. An
    in-place program (`mutates`) that returns nothing has its inputs compared after the call instead."""
    def call(*inputs):
        out = fn(*(TwoTensor(x, second_half(x)) if isinstance(x, torch.Tensor) else x for x in inputs))
        if out is None and mutates:
            return []
        outs = list(out) if isinstance(out, (tuple, list)) else [out]  # several outputs: each a TwoTensor
        for o in outs:
            if not isinstance(o, TwoTensor):
                raise TypeError(f"the result is a {type(o).__name__}, not a TwoTensor")
        return [o.a for o in outs] + [o.b for o in outs]

    return call


def on_halves(reference):
    """The reference on the inputs (.a), then on their second halves (.b), its results in that order."""
    def call(*inputs):
        results = []
        for halves in (inputs, tuple(second_half(x) if isinstance(x, torch.Tensor) else x for x in inputs)):
            result = reference(*halves)
            results += list(result) if isinstance(result, (tuple, list)) else [result]
        return [r for r in results if r is not None]

    return call
