"""Tables at any width: a value (SPI, address, hex word, mode, counter) is never
split across lines, free text wraps at spaces, and a table too wide for the
terminal turns compact, then into one block of lines a row."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from rich.console import Console, RenderableType

from esplab.commands.result import TableResult
from esplab.commands.session import Session
from esplab.render import render
from tests.commands.seed import POL_OUT, SA_OUT

BOX = re.compile(r"[│┃┏┓┗┛┡┩┳┻╇━─┬┴┼└┘┌┐├┤]")


def plain(renderable: RenderableType, width: int) -> str:
    buf = StringIO()
    Console(file=buf, width=width, color_system=None, soft_wrap=True).print(renderable)
    return buf.getvalue()


def words(text: str) -> set[str]:
    return set(BOX.sub(" ", text).split())


def seeded() -> Session:
    session = Session()
    for line in (SA_OUT, POL_OUT):
        session.execute(line)
    return session


def assert_no_value_split(result: TableResult, width: int) -> str:
    out = plain(render(result), width)
    shown = words(out)
    for row in result.rows:
        for cell in row:
            for word in str(cell).split():
                assert word in shown, f"{word!r} split at width {width}:\n{out}"
    return out


@pytest.mark.parametrize("width", [40, 60, 80, 100, 160])
def test_xfrm_states_keep_spi_mode_and_headers_whole(width: int) -> None:
    result = seeded().execute("xfrm states")
    assert isinstance(result, TableResult)
    out = assert_no_value_split(result, width)
    assert {"0x00001000", "transport", "algorithms"} <= words(out)
    assert all(len(line.rstrip()) <= width for line in out.splitlines())


@pytest.mark.parametrize("width", [40, 60, 80, 100])
def test_eip93_ring_keeps_addresses_whole(width: int) -> None:
    session = seeded()
    result = session.execute("eip93 ring cdr")
    assert isinstance(result, TableResult)
    out = assert_no_value_split(result, width)
    assert "0x00000000" in words(out)
    assert not re.search(r"0x0000\s*\n", out)
    assert all(len(line.rstrip()) <= width for line in out.splitlines())


def test_xfrm_states_at_80_columns_is_one_line_per_value() -> None:
    out = plain(render(seeded().execute("xfrm states")), 80)
    row = next(line for line in out.splitlines() if "0x00001000" in line)
    assert re.search(r"0x00001000\s+192\.0\.2\.1 >\s+transport\s", row)


def test_free_text_wraps_at_spaces_and_values_stay_in_their_column() -> None:
    prose = "the engine takes the next descriptor when the driver rings the doorbell"
    result = TableResult(
        title="t",
        columns=("index", "addr", "why"),
        rows=[("0", "0x1fb70000", prose), ("1", "0x1fb70020", "-")],
    )
    out = plain(render(result), 40)
    assert "│ 0     │ 0x1fb70000 │" in out  # boxed, values whole
    lines = [line.split("│")[3].strip() for line in out.splitlines() if line.count("│") == 4]
    assert " ".join(w for w in lines if w and w != "-") == prose  # wrapped at spaces only
    assert all(len(line) <= 40 for line in out.splitlines())


def test_a_word_of_free_text_longer_than_text_word_folds() -> None:
    long = "k" * 50  # longer than any column may be made for one word of text
    result = TableResult(
        columns=("spi", "note"),
        rows=[("0x00001000", f"the key is {long} as given by the board")],
    )
    out = plain(render(result), 50)
    assert "0x00001000" in words(out)
    assert "".join(BOX.sub("", out).split()).count(long) == 1  # folded, nothing lost
    assert all(len(line) <= 50 for line in out.splitlines())


def test_a_table_that_fits_is_rich_s_own_boxed_table() -> None:
    result = TableResult(title="captures", columns=("tap", "packets"), rows=[("wan.wire", "1")])
    out = plain(render(result), 80)
    assert "┃ tap      ┃ packets ┃" in out
    assert "│ wan.wire │ 1       │" in out


def test_too_wide_for_any_table_gives_one_block_a_row() -> None:
    columns = ("index", "ctrl", "src", "dst", "sa", "length")
    rows = [
        (str(i), "0x00000000", "0x1000002c", "0x10000014", "0x08000000", "1500") for i in (0, 1)
    ]
    out = plain(render(TableResult(title="ring", columns=columns, rows=rows)), 30)
    lines = [line.rstrip() for line in out.splitlines()]
    assert lines[0] == "ring"
    assert re.fullmatch(r"src\s+0x1000002c", lines[3])
    assert "" in lines  # a blank line between two rows
    assert all(len(line) <= 30 for line in lines)
