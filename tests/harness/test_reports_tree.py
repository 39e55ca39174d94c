"""The committed reports as a tree: small enough to travel with the checkout to a GPU runner (which copies at
most 64 MiB), and every link of a page a user reads leads somewhere."""

import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# bytes of tracked files: the GPU runner copies at most 64 MiB, the tree and what a session carries beside it (wheels, its
# scripts: under 20 MB). Results files are written a cell a line, timings to the millisecond: the chart of 4760 cells fits.
TREE_LIMIT = 42_000_000
LINK = re.compile(r"\]\(([^)\s]+)\)")
# Pages a run wrote into a part's folder link to a MATRIX.md and matrix.png only the merged chart has.
WRITTEN_BY_A_PART = re.compile(r"reports/evidence/.*/shard-[^/]*(/|-)SUPPORT\.md$")


def _tracked() -> list[str]:
    try:
        done = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        pytest.skip("no git here")
    if done.returncode != 0:
        pytest.skip("not a git checkout")
    return [p for p in done.stdout.split("\0") if p and os.path.isfile(os.path.join(ROOT, p))]


def test_the_tracked_tree_is_at_most_42_mb_so_that_a_gpu_runner_can_take_it():
    sizes = {p: os.path.getsize(os.path.join(ROOT, p)) for p in _tracked()}
    largest = sorted(sizes, key=sizes.get, reverse=True)[:5]
    assert sum(sizes.values()) <= TREE_LIMIT, (
        f"{sum(sizes.values()) / 1e6:.1f} MB tracked; the largest: {', '.join(f'{p} ({sizes[p] / 1e6:.1f} MB)' for p in largest)}. "
        "Keep evidence runs in reports/evidence and take superseded ones out of the tree (git keeps them)")


def test_every_relative_link_of_the_docs_and_report_pages_leads_to_a_file_in_the_tree():
    broken = []
    for page in (p for p in _tracked() if p.endswith(".md") and not WRITTEN_BY_A_PART.search(p)):
        with open(os.path.join(ROOT, page), errors="replace") as f:
            text = f.read()
        for target in LINK.findall(text):
            path = target.split("#")[0]
            if not path or path == "..." or re.match(r"[a-z]+:", path):
                continue
            if not os.path.exists(os.path.normpath(os.path.join(ROOT, os.path.dirname(page), path))):
                broken.append(f"{page}: ({target})")
    assert not broken, "links to nothing (a file taken out of the tree: write its name as code, not a link):\n" + "\n".join(broken)
