"""torch.export with the batch dynamic.

The program the export rows run, and the first step of AOTInductor's rows and of the exported program saved and loaded.
Plain PyTorch: a cell's reproducer prints this file as it is."""

import torch


class Program(torch.nn.Module):
    """export needs a Module; it calls the wrapped callable and nothing else."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs):
        return self.fn(*inputs)


def dynamic_batch(inputs, max_batch, batched=None, dims=None, min_batch=1):
    """Dim 0 of every batched tensor input is one dynamic batch dimension (min_batch..max_batch), and each of `dims`
    ({dim: largest size}) one more, shared by the batched inputs that have it (forward takes them as *inputs)."""
    shared = {0: torch.export.Dim("batch", min=min_batch, max=max_batch)}
    shared.update({dim: torch.export.Dim(f"dim{dim}", min=1, max=largest) for dim, largest in (dims or {}).items()})
    batched = batched or (True,) * len(inputs)

    def spec(x, is_batched):
        if not isinstance(x, torch.Tensor) or not is_batched:
            return None
        return {dim: d for dim, d in shared.items() if dim < x.dim()}

    return (tuple(spec(x, b) for x, b in zip(inputs, batched)),)


def export(program, inputs, strict, max_batch, batched, dims, min_batch, stage):
    """The program exported on `inputs` (strict or not), its batch and `dims` dynamic; `stage("export")` around it."""
    with stage("export"):
        return torch.export.export(Program(program), inputs, strict=strict,
                                   dynamic_shapes=dynamic_batch(inputs, max_batch, batched, dims, min_batch))
