"""--shard=K/N: every cell in exactly one part, the parts balanced, the same split on every runner."""

import random

import pytest

from harness.model.cell import Cell, all_cells
from harness.model.errors import UsageError
from harness.model.fingerprint import Fingerprint
from harness.model.outcome import CellResult, Outcome
from harness.model.results import Results
from harness.model.rows import Row
from harness.plugin import shard
from tests.harness.conftest import run_python

CASES = [f"case{n}" for n in range(12)]


def row_cost(cell: Cell) -> float:
    return {Row.AOTI_STRICT: 20.0, Row.AOTI_FRESH_NONSTRICT: 90.0, Row.WARM_CACHE_EDIT: 50.0}.get(cell.row, 3.0)


def test_every_cell_lands_in_exactly_one_part_in_the_order_given():
    cells = all_cells(CASES)
    random.Random(0).shuffle(cells)
    parts = shard.partition(cells, row_cost, 4)
    assert sorted(c for part in parts for c in part) == sorted(cells)
    for part in parts:  # each part keeps the run's order (costliest first, controls first)
        assert part == [c for c in cells if c in set(part)]


def test_a_case_and_style_stay_in_one_part_so_its_aoti_packages_are_built_once():
    parts = shard.partition(all_cells(CASES), row_cost, 3)
    where = {}
    for n, part in enumerate(parts):
        for cell in part:
            assert where.setdefault(shard.group(cell), n) == n


@pytest.mark.parametrize("whole_cases", [False, True])
def test_the_parts_are_balanced_within_the_longest_first_bound(whole_cases):
    cells = all_cells(CASES)
    cost = lambda c: row_cost(c) * (4 if c.case == "case3" else 1)  # noqa: E731 - one case costs four times as much
    for count in (2, 3, 5, 8):
        loads = [sum(cost(c) for c in part) for part in shard.partition(cells, cost, count, whole_cases=whole_cases)]
        groups: dict = {}
        for c in cells:
            groups[shard.group(c)] = groups.get(shard.group(c), 0) + cost(c)
        best_possible = max(sum(loads) / count, max(groups.values()))
        assert max(loads) <= best_possible * 4 / 3, (count, loads)


def test_with_measured_costs_each_case_that_fits_stays_in_one_part_so_its_styles_share_its_triton_kernels():
    cells = all_cells(CASES)
    parts = shard.partition(cells, row_cost, 4, whole_cases=True)
    assert [len({c.case for c in part}) for part in parts] == [3, 3, 3, 3]
    assert len({frozenset(c.case for c in part) for part in parts}) == 4  # no case in two parts


def test_with_measured_costs_a_case_past_an_equal_share_is_split_by_style_and_the_parts_still_balance():
    cells = all_cells(CASES[:2])
    cost = lambda c: row_cost(c) * (3 if c.case == CASES[0] else 1)  # noqa: E731 - one case three times the other
    parts = shard.partition(cells, cost, 4, whole_cases=True)
    assert all(parts) and len({n for n, part in enumerate(parts) for c in part if c.case == CASES[0]}) >= 3
    # by style, never within one: each case's style in exactly one part
    assert len({shard.group(c) for c in cells}) == sum(len({shard.group(c) for c in part}) for part in parts)
    loads = [sum(cost(c) for c in part) for part in parts]
    largest_style = max(sum(cost(c) for c in cells if shard.group(c) == key) for key in {shard.group(c) for c in cells})
    assert max(loads) <= 4 / 3 * max(sum(loads) / 4, largest_style), loads


def test_without_measured_costs_a_case_s_styles_are_dealt_apart():
    parts = shard.partition(all_cells(CASES), row_cost, 4)
    assert sum(len({c.case for c in part}) for part in parts) > len(CASES)


def test_every_runner_computes_the_same_split_whatever_order_it_collected_in():
    cells = all_cells(CASES)
    shuffled = list(cells)
    random.Random(1).shuffle(shuffled)
    for whole_cases in (False, True):
        assert ([set(p) for p in shard.partition(cells, row_cost, 4, whole_cases)]
                == [set(p) for p in shard.partition(shuffled, row_cost, 4, whole_cases)])


def test_more_parts_than_groups_leaves_some_parts_empty_rather_than_failing():
    parts = shard.partition(all_cells(["only"]), row_cost, 7)
    assert sum(1 for p in parts if p) == 5 and sum(len(p) for p in parts) == len(all_cells(["only"]))


@pytest.mark.parametrize("text, says", [
    ("2", "give K/N"), ("1/0", "between 1 and N"), ("0/3", "between 1 and N"), ("4/3", "between 1 and N"), ("a/b", "give K/N"),
])
def test_a_malformed_shard_says_what_to_give(text, says):
    with pytest.raises(UsageError, match=says):
        shard.parse(text)


def test_a_shard_reads_as_k_of_n():
    part = shard.parse(" 2/4 ")
    assert (part.index, part.count, str(part), part.name) == (2, 4, "2/4", "shard-2-of-4")


def test_costs_from_an_earlier_run_use_each_cells_work_then_its_rows_mean():
    cells = all_cells(["a"], rows=[Row.EAGER])
    results = []
    for n, cell in enumerate(cells[:2]):
        r = CellResult(cell, Outcome.PASS)
        r.timings.work = 10.0 * (n + 1)
        results.append(r)
    skipped = CellResult(cells[2], Outcome.SKIPPED)
    skipped.timings.work = 0.01
    cost = shard.costs_from(Results(fingerprint=Fingerprint(), cells=[*results, skipped]))
    assert cost(cells[0]) == 10.0 and cost(cells[1]) == 20.0
    assert cost(cells[2]) == 0.01  # a cell that was skipped there costs what it cost there
    assert cost(cells[3]) == 15.0  # never ran there: its row's mean
    assert cost(Cell("a", cells[0].wrapping, Row.OPCHECK)) is None  # a row that never ran there: the caller's estimate


def _part(index: int, count: int, cells: list[Cell]) -> Results:
    return Results(fingerprint=Fingerprint.from_json({"mode": "gpu", "torch": "2.11", "shard": {"index": index, "count": count}}),
                   cells=[CellResult(c, Outcome.PASS) for c in cells])


def test_merging_every_part_of_a_split_gives_one_complete_chart_that_says_which_parts_it_holds():
    from harness.model.results import merge

    parts = shard.partition(all_cells(["a", "b", "c"]), row_cost, 3)
    merged = merge([(f"part{k}.json", _part(k, 3, cells)) for k, cells in enumerate(parts, 1)])
    assert merged.complete and merged.interrupted is None and len(merged.cells) == len(all_cells(["a", "b", "c"]))
    assert merged.fingerprint.shards.to_json() == {"count": 3, "merged": [1, 2, 3]} and merged.fingerprint.shard is None


def test_a_part_left_out_of_the_merge_marks_the_chart_incomplete_and_names_the_part():
    from harness.model.results import merge

    parts = shard.partition(all_cells(["a", "b", "c"]), row_cost, 3)
    merged = merge([("part1.json", _part(1, 3, parts[0])), ("part3.json", _part(3, 3, parts[2]))])
    assert not merged.complete
    assert merged.interrupted == "parts 2/3 of the --shard split not merged: their cells are not in this chart"


def test_parts_of_two_different_splits_do_not_merge():
    from harness.model.errors import ResultsError
    from harness.model.results import merge

    with pytest.raises(ResultsError, match="a part of 4 parts, merged with parts of 3"):
        merge([("a.json", _part(1, 3, all_cells(["a"]))), ("b.json", _part(2, 4, all_cells(["b"])))])


def test_the_parts_a_run_collects_with_shard_are_disjoint_and_together_every_cell(tmp_path):
    """Through pytest, as each runner of a CI job matrix collects: the same split on every runner."""
    import os
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

    def collected(*extra: str) -> set[str]:
        proc = run_python([sys.executable, "-m", "pytest", "--matrix", "--collect-only", "-q", "-p", "no:cacheprovider",
                           f"--report-dir={tmp_path}", "-k", "add- or sin-", *extra], cwd=root, timeout=300)
        return {line.split("[", 1)[1].rstrip("]") for line in proc.stdout.splitlines() if "test_cell[" in line}

    whole, parts = collected(), [collected(f"--shard={k}/3") for k in (1, 2, 3)]
    assert whole and all(parts)
    assert set().union(*parts) == whole and sum(len(p) for p in parts) == len(whole)


def test_parts_balanced_by_different_timings_do_not_merge():
    from harness.model.errors import ResultsError
    from harness.model.results import merge

    first, second = _part(1, 2, all_cells(["a"])), _part(2, 2, all_cells(["b"]))
    first.fingerprint.shard.timings_sha256, second.fingerprint.shard.timings_sha256 = "aaaa", "bbbb"
    with pytest.raises(ResultsError, match="a part of another split than a.json's"):
        merge([("a.json", first), ("b.json", second)])


def test_a_merged_chart_merges_again_with_the_parts_it_lacked():
    from harness.model.results import merge

    parts = shard.partition(all_cells(["a", "b", "c"]), row_cost, 3)
    partial = merge([("part1.json", _part(1, 3, parts[0]))])
    again = merge([("merged.json", partial)])  # re-rendered alone: the same words, still incomplete
    assert not again.complete and again.interrupted == partial.interrupted
    assert again.interrupted == "parts 2/3, 3/3 of the --shard split not merged: their cells are not in this chart"
    whole = merge([("merged.json", partial), ("part2.json", _part(2, 3, parts[1])), ("part3.json", _part(3, 3, parts[2]))])
    assert whole.complete and whole.interrupted is None and whole.fingerprint.shards.to_json() == {"count": 3, "merged": [1, 2, 3]}


def test_the_two_heaviest_groups_go_to_different_parts_whatever_their_names():
    cells = all_cells(CASES)
    names = sorted({shard.group(c) for c in cells})
    heavy = {names[0], names[2]}  # two apart: a split that dealt the groups by name in turn would put them together
    cost = lambda c: 1000.0 if shard.group(c) in heavy else 1.0  # noqa: E731
    parts = shard.partition(cells, cost, 2)
    assert [sum(shard.group(c) in heavy for c in part) > 0 for part in parts] == [True, True]


def test_a_runner_given_shard_timings_keeps_each_case_in_one_part_and_one_without_deals_its_styles_apart():
    from types import SimpleNamespace

    from harness.plugin import scheduling

    class Item:  # what the split reads of a pytest item
        def __init__(self, cell):
            self.callspec = SimpleNamespace(params={"cell": cell})

    cells = all_cells(CASES)
    items = {c: Item(c) for c in cells}

    def kept(timings):
        config = SimpleNamespace(getoption=lambda name: timings if name == "shard_timings" else None,
                                 hook=SimpleNamespace(pytest_deselected=lambda items: None))
        mine = list(items.values())
        scheduling.MatrixShard(config, shard.Shard(2, 4)).keep_this_part(mine, row_cost)
        return {scheduling.cell_of(item) for item in mine}

    with_timings, without = kept("earlier/results.json"), kept(None)
    assert len({c.case for c in with_timings}) == 3 and all(c in with_timings for c in cells if c.case in {c.case for c in with_timings})
    assert len({c.case for c in without}) == len(CASES)
