"""Hypothesis building blocks for case inputs: sizes that hit block edges, and ready-made make_inputs."""

from __future__ import annotations

from hypothesis import strategies as st

# Odd sizes, 1, and both sides of the power-of-two block sizes kernels use.
EDGE_SIZES = (1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1023, 1024, 1025)


def sizes(max_size: int = 4096, min_size: int = 1) -> st.SearchStrategy[int]:
    """Sizes from min_size (0 for cases that accept empty tensors) to max_size, the edges drawn often."""
    edges = [s for s in (0, *EDGE_SIZES) if min_size <= s <= max_size]
    return st.one_of(st.sampled_from(edges), st.integers(min_size, max_size))


def shapes(*max_sizes: int, min_size: int | tuple[int, ...] = 1) -> st.SearchStrategy[tuple[int, ...]]:
    """Shapes with one dimension per maximum, e.g. shapes(1024, 300) for (rows, cols). `min_size`: the smallest size
    of every dimension (0 lets any be empty), or one a dimension, e.g. shapes(64, 1024, 32, min_size=(1, 2, 2)) where
    heads and sequence need two."""
    mins = min_size if isinstance(min_size, tuple) else (min_size,) * len(max_sizes)
    if len(mins) != len(max_sizes) or any(not 0 <= low <= high for low, high in zip(mins, max_sizes)):
        raise ValueError(f"shapes{max_sizes}: min_size {min_size!r} needs one size from 0 to each maximum, for each of "
                         f"the {len(max_sizes)} dimensions")
    strategy = st.tuples(*(sizes(high, low) for low, high in zip(mins, max_sizes)))
    strategy.summary = "(" + ", ".join(f"{low}..{high}" for low, high in zip(mins, max_sizes)) + ")"  # for the case table
    return strategy


def randn(count: int = 1, scale: float = 1.0):
    """A `make_inputs` for cases whose inputs are `count` standard-normal tensors of the drawn shape."""

    def make_inputs(shape, dtype, device, generator):
        import torch  # here, not at the top: `import harness` (the case API) stays torch-free until a case uses it

        return tuple(
            torch.randn(shape, generator=generator).mul_(scale).to(device=device, dtype=dtype) for _ in range(count)
        )

    return make_inputs
