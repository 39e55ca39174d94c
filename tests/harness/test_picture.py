"""The matrix's picture (harness.reporting.picture): each square its cell's colour, the same bytes for the same results,
shown in SUPPORT.md where matplotlib is installed and explained where it is not. No torch here: these tests
run where the results tools run."""

import io
import os
import subprocess
import sys

import pytest

from harness.model.cell import Cell
from harness.model.fingerprint import Fingerprint
from harness.model.judging import judged
from harness.model.outcome import CellResult, Outcome, Stage
from harness.model.results import Results, load, save
from harness.reporting import picture, report
from harness.reporting.support import picture_lines, support_chart

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
COMMITTED = os.path.join(ROOT, "reports", "gpu")
# Run before the code a test gives python -c: matplotlib cannot be imported, as where the extra is not installed.
WITHOUT_MATPLOTLIB = "import sys; sys.modules['matplotlib'] = None; "

# Three cases on three rows in two styles. Beside the passing cells: one failure, one skipped cell, one WRONG,
# one cell the environment is blamed for (its control crashes at the same stage), one that never reported,
# and one square no cell of the run fills.
PLANTED = {
    "alpha-raw-eager": (Outcome.PASS, None),
    "alpha-raw-compile_fullgraph": (Outcome.PASS, None),
    "alpha-raw-aoti_strict": (Outcome.PASS, None),
    "beta-raw-eager": (Outcome.PASS, None),
    "beta-raw-compile_fullgraph": (Outcome.FAIL, Stage.COMPILE),
    "beta-raw-aoti_strict": (Outcome.CRASH, Stage.AOT_LOAD),
    "gamma-raw-eager": (Outcome.WRONG, Stage.RUN),
    "gamma-raw-compile_fullgraph": (Outcome.SKIPPED, None),
    "alpha-control-eager": (Outcome.PASS, None),
    "beta-control-aoti_strict": (Outcome.CRASH, Stage.AOT_LOAD),
}
NEVER_REPORTED = "gamma-raw-aoti_strict"
EXPECTED = {  # written out, not derived from harness.reporting.picture: the test checks its choices
    **{cell: picture.PASS for cell, (outcome, _) in PLANTED.items() if outcome is Outcome.PASS},
    "beta-raw-compile_fullgraph": picture.FAIL,
    "beta-raw-aoti_strict": picture.ENVIRONMENT,
    "gamma-raw-eager": picture.WRONG,
    "gamma-raw-compile_fullgraph": picture.SKIPPED,
    "beta-control-aoti_strict": picture.CRASH,
    NEVER_REPORTED: picture.NOT_REPORTED,
}
FINGERPRINT = Fingerprint.from_json({"mode": "gpu", "torch": "2.11.0", "triton": "3.6.0", "cuda": "13.0",
                                     "gpu": {"available": True, "name": "H200"}, "git": {"commit": "0123456789abcdef"}})


def planted() -> Results:
    cells = [CellResult(Cell.parse(cell_id), outcome, stage=stage) for cell_id, (outcome, stage) in PLANTED.items()]
    return Results(fingerprint=FINGERPRINT, cells=cells, complete=False, missing=[NEVER_REPORTED])


def rgb(colour: str) -> tuple[int, int, int]:
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


def test_each_square_has_the_colour_of_its_cells_outcome_where_the_layout_puts_it():
    pytest.importorskip("matplotlib")
    from PIL import Image  # matplotlib writes its PNGs with Pillow, so it is there

    results = judged(planted())
    layout = picture.Layout.of(results)
    image = Image.open(io.BytesIO(picture.draw(results))).convert("RGB")
    assert image.size == layout.size
    assert layout.cases == ("alpha", "beta", "gamma") and [p.value for p in layout.rows] == ["eager", "compile_fullgraph", "aoti_strict"]
    squares = {Cell(case, wrapping, row) for wrapping in layout.wrappings for case in layout.cases for row in layout.rows}
    expected = {Cell.parse(cell_id): category for cell_id, category in EXPECTED.items()}
    expected.update({cell: picture.NOT_RUN for cell in squares - set(expected)})  # the control's other squares
    assert {cell: image.getpixel(layout.square(cell).centre) for cell in squares} == {cell: rgb(c.colour) for cell, c in expected.items()}
    # Outside the squares: the white gutter between two of them.
    beta_fail = layout.square(Cell.parse("beta-raw-compile_fullgraph"))
    assert image.getpixel((beta_fail.left, beta_fail.centre[1])) == (255, 255, 255)


def test_the_categories_tell_every_outcome_apart_and_the_legend_names_each_once():
    colours = [c.colour.lower() for c in picture.CATEGORIES]
    assert len(set(colours)) == len(colours)
    assert len({c.label.split(" (")[0] for c in picture.CATEGORIES}) == len(picture.CATEGORIES)
    for outcome in Outcome:
        assert picture.category(CellResult(Cell.parse("a-raw-eager"), outcome)) in picture.CATEGORIES
    degraded = CellResult(Cell.parse("a-raw-eager"), Outcome.PASS, degradations=["float scalar compiled as fp64"])
    assert picture.category(degraded) is picture.DEGRADED


def test_the_same_results_give_the_same_png_bytes_in_two_processes_whatever_the_users_matplotlibrc(tmp_path):
    pytest.importorskip("matplotlib")
    results_path = tmp_path / "results.json"
    save(planted(), str(results_path))
    (tmp_path / "matplotlibrc").write_text("font.size: 30\nfont.family: serif\ntext.color: red\nxtick.labelsize: 20\n"
                                           "ytick.labelcolor: blue\nlegend.labelspacing: 3\ntext.antialiased: False\n")
    pngs = []
    for seed, env in (("1", {}), ("2", {"MATPLOTLIBRC": str(tmp_path / "matplotlibrc")})):
        out = tmp_path / f"out-{seed}"
        done = subprocess.run([sys.executable, "-m", "harness", "report", str(results_path), "--out", str(out)], cwd=ROOT,
                              env={**os.environ, "PYTHONHASHSEED": seed, **env}, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        pngs.append((out / picture.FILENAME).read_bytes())
    assert pngs[0].startswith(b"\x89PNG\r\n\x1a\n")
    assert pngs[0] == pngs[1]
    assert b"Matplotlib" not in pngs[0]  # no metadata naming the version that drew it


def test_the_committed_gpu_picture_and_chart_are_what_their_results_draw(tmp_path):
    pytest.importorskip("matplotlib")
    written = report.write(load(os.path.join(COMMITTED, "results.json")), str(tmp_path))
    assert str(tmp_path / picture.FILENAME) in written
    for name in (picture.FILENAME, "SUPPORT.md", "MATRIX.md"):
        with open(os.path.join(COMMITTED, name), "rb") as committed:
            assert (tmp_path / name).read_bytes() == committed.read(), f"reports/gpu/{name} is stale: re-render it"


def test_support_shows_the_picture_near_its_top_when_drawn(tmp_path):
    pytest.importorskip("matplotlib")
    written = report.write(planted(), str(tmp_path))
    assert written == [str(tmp_path / name) for name in ("results.json", "MATRIX.md", picture.FILENAME, "SUPPORT.md")]
    support = (tmp_path / "SUPPORT.md").read_text()
    shown = f"]({picture.FILENAME})"
    assert support.index(shown) < support.index("## The tutorial's chart, measured")
    assert support.count("![") == 1 and picture.INSTALL not in support


def test_without_matplotlib_support_says_how_to_get_the_picture_and_an_earlier_picture_is_removed(tmp_path):
    results_path = tmp_path / "results.json"
    save(planted(), str(results_path))
    out = tmp_path / "reports"
    out.mkdir()
    (out / picture.FILENAME).write_bytes(b"a picture of other results")
    code = WITHOUT_MATPLOTLIB + (
        "from harness.reporting import picture; from harness.model.results import Results; from harness.model.fingerprint import Fingerprint\n"
        "try:\n    picture.draw(Results(fingerprint=Fingerprint(), cells=[]))\nexcept picture.Unavailable as exc:\n    print('UNAVAILABLE', exc)\n"
        f"from harness.__main__ import main; sys.exit(main(['report', {str(results_path)!r}, '--out', {str(out)!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    unavailable, *written = done.stdout.splitlines()
    assert unavailable.startswith("UNAVAILABLE drawing matrix.png needs matplotlib") and picture.INSTALL in unavailable
    assert written == [str(out / name) for name in ("results.json", "MATRIX.md", "SUPPORT.md")]
    assert sorted(p.name for p in out.iterdir()) == ["MATRIX.md", "SUPPORT.md", "results.json"]
    support = (out / "SUPPORT.md").read_text()
    assert "![" not in support
    assert picture_lines(drawn=False)[0] in support and picture.INSTALL in support
    assert "python -m harness report results.json --out DIR" in support
    # Everything else is as with the picture drawn: one line differs.
    drawn = support_chart(planted(), picture_drawn=True).splitlines()
    assert [line for line in support.splitlines() if line not in drawn] == picture_lines(drawn=False)
    assert len(drawn) == len(support.splitlines())
