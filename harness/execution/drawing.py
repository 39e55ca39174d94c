"""The examples a cell checks: what hypothesis draws on each row (RowSpec.examples), and the phases it runs."""

from __future__ import annotations

from typing import Any

from hypothesis import Phase, settings
from hypothesis import strategies as st

from harness.authoring.case import Case, Example
from harness.model.rows import Examples, Row
from harness.model.settings import FULL_BATCH

def examples(case: Case, row: Row, checked_batch_max: int = FULL_BATCH) -> st.SearchStrategy[Example]:
    """The hypothesis examples a cell of this row checks (RowSpec.examples says how they vary). A case with
    optional tensor inputs also draws which of them are None."""
    how = row.spec.examples
    extra: dict[str, st.SearchStrategy[Any]] = {}
    if case.optional_inputs:
        extra["absent"] = st.sets(st.sampled_from(sorted(case.optional_inputs))).map(frozenset)
    if how is Examples.ONCE:
        return st.builds(Example, dtype=st.sampled_from(case.dtypes), shape=st.just(case.example_shape), seed=st.just(0), **extra)
    if how is Examples.BATCH:
        def sizes_to(largest: int, smallest: int = 1) -> st.SearchStrategy[int]:
            """From the row's (or the case's) smallest size, where the case reaches it, to the checks' largest."""
            smallest = max(row.spec.smallest_batch, smallest)
            cap = min(largest, max(checked_batch_max, smallest))
            return st.integers(min(smallest, cap), cap)

        shapes = sizes_to(case.max_batch, case.min_batch).map(case.export_shape)
        if case.dynamic_dims:  # the other dynamic dims are drawn too, each up to its largest size
            dims = sorted(case.dynamic_dims)
            sizes = st.tuples(*(sizes_to(case.dynamic_dims[d]) for d in dims))
            shapes = st.tuples(sizes_to(case.max_batch, case.min_batch), sizes).map(lambda drawn: case.export_shape(drawn[0], dict(zip(dims, drawn[1]))))
        return st.builds(Example, dtype=st.sampled_from(case.dtypes), shape=shapes, seed=st.integers(0, 2**31 - 1), **extra)
    # Scalars vary where the artifact is made per call (eager, compile): a new value may recompile.
    scalars = st.tuples(*(st.tuples(st.just(name), values) for name, values in case.scalars.items()))
    return st.builds(Example, dtype=st.sampled_from(case.dtypes), shape=case.shapes, seed=st.integers(0, 2**31 - 1), scalars=scalars,
                     **extra)


def traces_once(row: Row) -> bool:
    """Rows whose artifact is traced once (export, AOTInductor, opcheck): a None input is part of what was
    traced, so each structure of the inputs (which optional inputs are None) gets an artifact of its own."""
    return row.spec.examples is not Examples.DRAWN


# Hypothesis's phases a cell runs: all but `explain`, which, once an example has failed, traces every line of
# every later example (sys.settrace or sys.monitoring) to say which lines the failures covered. The cell records
# its own smallest failing example and error; under the trace, Dynamo, Inductor and Triton ran several times
# slower in every failing cell's shrinking. Which examples are drawn and how they shrink does not depend on it.
CHECKED_PHASES = tuple(phase for phase in Phase if phase.name != "explain")
# Set as the process's default settings, not in the check's @settings: a derandomized run draws its examples from
# a digest of the check's source, decorators included, so that a line added there draws other examples (two
# cells of the CPU chart then failed with another message).
settings.register_profile("tcm-cells", phases=CHECKED_PHASES)
settings.load_profile("tcm-cells")
