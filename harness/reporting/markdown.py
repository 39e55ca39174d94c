"""Text from cells (error messages, examples, library names) made safe for the reports' markdown: shown as written.

A message may hold what markdown reads as markup: HTML (`<Wrapped operator <original wrapped_mul>>`, `</table>`), a
backslash before punctuation (a literal `\\|` would show as `|`), a pipe that ends a table cell, a backtick that ends a
code span. Each report puts such text through one of these helpers.
"""

from __future__ import annotations

import re

CELL_CHARS = 400  # of a message in one table cell
_PUNCTUATION_ESCAPED = re.compile(r"\\(?=[!-/:-@\[-`{-~])")  # a backslash markdown would read as an escape
_ENTITY = re.compile(r"&(?=#?\w+;)")  # an ampersand markdown would read as the start of an entity


def text(value: str) -> str:
    """Inline text: HTML, entities and backslash escapes shown as written."""
    value = _PUNCTUATION_ESCAPED.sub(r"\\\\", value)
    value = _ENTITY.sub("&amp;", value)
    return value.replace("<", "&lt;").replace(">", "&gt;")


def cell_text(value: str) -> str:
    """Text for one markdown table cell: shown as written, one line, bounded, its pipes escaped."""
    return text(value.replace("\n", " ")[:CELL_CHARS]).replace("|", "\\|")


def shortened(value: str, limit: int) -> str:
    """At most `limit` characters, cut after a whole word with an ellipsis where it had to be cut."""
    value = value.strip()
    if len(value) <= limit:
        return value
    cut = value[: limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(" ,;:") + "…"


def code(value: str, in_table: bool = False) -> str:
    """A code span that holds `value` whole: fenced with more backticks than any run inside it (padded where it starts
    or ends with one); in a table, its pipes escaped, which GitHub reads before the span."""
    value = value.replace("\n", " ")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", value)), default=0) + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    span = f"{fence}{pad}{value}{pad}{fence}"
    return span.replace("|", "\\|") if in_table else span
