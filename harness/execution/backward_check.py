"""What a case's backward does that a torch.library operator may not: gradients that alias, writes into its arguments.

The operator styles register a backward with kernels as an operator of their own (harness.execution.wrapping). A
library's autograd.Function may return one tensor as two inputs' gradients, or write a gradient into the incoming
one, and autograd takes it; an operator may not: torch refuses outputs that alias, and an undeclared write corrupts
what the caller still holds. Such a backward is the case's to fix, said once, in the case's words, rather than charted
as each operator style's failure. Called plainly, on the example input, once a runner process per case and dtype.
"""

from __future__ import annotations

from typing import Any

import torch

from harness.authoring.case import Case, Example
from harness.execution import wrapping
from harness.execution.paths import training


def _storage(x: Any) -> int | None:
    return x.untyped_storage().data_ptr() if isinstance(x, torch.Tensor) and x.numel() else None


def _same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    return bool((a.eq(b) | (a.isnan() & b.isnan())).all()) if a.is_floating_point() else torch.equal(a, b)


def _arguments(case: Case, example: Example, device: str) -> dict[str, Any]:
    """What the backward can be given, by the names Backward.takes uses: the inputs (requiring grad, as the training
    rows make them: a library's backward may ask), the launcher's results, and a gradient for each output shaped like
    it (as the training rows' cotangent)."""
    inputs = training.leaves(case.inputs(example, device), case.no_grad_positions)
    results = wrapping.plain_call(case.launch, case.kernels)(*inputs)
    outputs = case.outputs_of(results)
    outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    named = dict(zip([p.name for p in case.input_parameters()], inputs))
    named.update(zip(case.returns, results if case.returns else ()))
    named.update((name, torch.linspace(-1.0, 1.0, o.numel(), device=o.device).reshape(o.shape).to(o.dtype))
                 for name, o in zip(case.gradient_names, outputs))
    return named


def _aliases(given: dict[str, Any], args: dict[str, Any]) -> list[str]:
    problems, seen = [], {}  # storage -> the first gradient's input
    for name, grad in given.items():
        storage = _storage(grad)
        if storage is None:
            continue
        if storage in seen:
            problems.append(f"returns one tensor as the gradients of {seen[storage]!r} and {name!r}")
        taken = [arg for arg, value in args.items() if _storage(value) == storage]
        if taken:
            problems.append(f"returns its argument {taken[0]!r} (or a view of it) as the gradient of {name!r}")
        seen.setdefault(storage, name)
    return problems


def misdeclared(case: Case, example: Example, device: str) -> str | None:
    """What the backward does that an operator may not, with the fix, or None."""
    assert case.backward is not None
    with torch.no_grad():  # as autograd runs a backward
        args = _arguments(case, example, device)
        taken = {name: args[name] for name in case.backward_takes}
        before = {name: value.clone() for name, value in taken.items() if isinstance(value, torch.Tensor)}
        result = wrapping.plain_call(case.backward.launch, case.backward.kernels)(*taken.values())
    grads = result if isinstance(result, (tuple, list)) else (result,)
    problems = _aliases(dict(zip(case.gradients_given, grads)), taken)
    problems += [f"writes into its argument {name!r}" for name, value in before.items() if not _same_values(taken[name], value)]
    if not problems:
        return None
    return (f"the backward {'; '.join(problems)} (called plainly, {example}); the operator styles register a backward with "
            "kernels as an operator, which may not return aliases of its arguments or of each other, nor write into what it "
            "is given: give Backward a function that calls the library's backward and returns a copy where it aliases "
            "(dx, dx.clone()), or passes it a copy of what it writes into")
