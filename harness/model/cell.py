"""A cell: one (case, wrapping style, compile path). Its id is made and parsed here and nowhere else.

This module imports no torch: results files, reports and diffs hold real cells too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Collection, Mapping

from harness.model.columns import Wrapping
from harness.model.errors import CellIdError
from harness.model.rows import Kind, Row

# The matrix's test is harness/plugin/matrix.py::test_cell, parametrized by cell id. Its node id names the module
# relative to pytest's rootdir, and is "::test_cell[...]" alone where the package lies outside it (installed).
_TEST_ID = re.compile(r"(?:^|(?:^|/)matrix\.py)::test_cell\[(?P<cell>[^\]]+)\]$")


@dataclass(frozen=True, order=True)
class Cell:
    case: str
    wrapping: Wrapping
    row: Row

    @property
    def id(self) -> str:
        return f"{self.case}-{self.wrapping.value}-{self.row.value}"

    def __str__(self) -> str:
        return self.id

    @classmethod
    def parse(cls, cell_id: str) -> Cell:
        try:
            case, wrapping, row = cell_id.rsplit("-", 2)
            return cls(case, Wrapping(wrapping), Row(row))
        except ValueError:
            raise CellIdError(
                f"{cell_id!r} is not a cell id: expected CASE-WRAPPING-ROW with WRAPPING one of "
                f"{[w.value for w in Wrapping]} and ROW one of {[p.value for p in Row]}"
            ) from None

    @classmethod
    def of_test(cls, nodeid: str) -> Cell | None:
        """The cell a pytest node id runs, or None for any other test."""
        match = _TEST_ID.search(nodeid)
        if match is None:
            return None
        try:
            return cls.parse(match.group("cell"))
        except CellIdError:  # a test of the same name in some other module
            return None

    def control(self) -> Cell:
        """The case's plain PyTorch reference down the same path: does the path itself work here?"""
        return Cell(self.case, Wrapping.CONTROL, self.row)

    def speed_baseline(self) -> Cell:
        """What `--perf` compares this cell's speed with: the raw kernel in eager mode, or for training
        its autograd.Function trained eagerly."""
        if self.row.spec.kind is Kind.TRAIN:
            return Cell(self.case, Wrapping.RAW_AUTOGRAD, Row.TRAIN_EAGER)
        return Cell(self.case, Wrapping.RAW, Row.EAGER)

    def package_key(self, dtype: str | None = None) -> str | None:
        """Names the AOTInductor packages this cell may build in `dtype` (every dtype's, without one), shared by the
        rows that run one package (the Python, fresh-process and C++ runtimes, strict and non-strict export) when the
        exported programs are the same (harness.execution.builders adds the program's digest); None on rows that
        build no package."""
        if self.row.spec.kind not in (Kind.AOTI, Kind.AOTI_CPP, Kind.AOTI_FRESH):
            return None
        return f"{self.case}-{self.wrapping.value}" + (f"-{dtype}" if dtype else "")


def all_cells(cases: list[str], wrappings: list[Wrapping] | None = None, rows: list[Row] | None = None,
              shipped: Collection[str] = ()) -> list[Cell]:
    """Every cell of these cases; the shipped column only for the cases in `shipped` (those that name their library's op)."""
    return [Cell(c, w, p) for c in cases for w in (wrappings or list(Wrapping)) for p in (rows or list(Row))
            if w is not Wrapping.SHIPPED or c in shipped]


def matrix_cells(cases: Mapping[str, Any]) -> list[Cell]:
    """The cells of the loaded cases (name -> Case)."""
    return all_cells(list(cases), shipped=[name for name, case in cases.items() if getattr(case, "shipped", None) is not None])
