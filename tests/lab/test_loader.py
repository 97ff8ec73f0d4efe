from __future__ import annotations

from pathlib import Path

import pytest

from esplab.errors import LabFileError
from esplab.lab.loader import MAX_BYTES, MAX_NODES, Mark, load_document, load_text


def test_values_and_positions() -> None:
    doc = load_text("name: x\nseed: 0x10\nsteps:\n  - name: one\n    run: help\n", "f.yaml")
    assert doc.data == {"name": "x", "seed": 16, "steps": [{"name": "one", "run": "help"}]}
    assert doc.mark(("steps", 0, "run")) == Mark(5, 10, "help", None)
    assert doc.key_mark(("steps", 0, "run")).line == 5
    assert doc.key_mark(("steps", 0, "run")).col == 5
    # Unknown paths fall back to the nearest ancestor.
    assert doc.mark(("steps", 0, "nope")).line == 4


def test_keys_are_text_even_when_yaml_would_read_a_boolean() -> None:
    doc = load_text("on: 1\nyes: 2\n3: x\n", "f.yaml")
    assert doc.data == {"on": 1, "yes": 2, "3": "x"}


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbfname: caf\xc3\xa9\n")
    assert load_document(path).data == {"name": "café"}


def test_aliases_expand_but_are_bounded() -> None:
    doc = load_text("a: &x [1, 2]\nb: *x\n", "f.yaml")
    assert doc.data == {"a": [1, 2], "b": [1, 2]}
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 7):
        bomb.append(
            f"{'abcdefg'[i]}: &{'abcdefg'[i]} [" + ", ".join(["*" + "abcdefg"[i - 1]] * 10) + "]"
        )
    with pytest.raises(LabFileError, match=f"more than {MAX_NODES} values"):
        load_text("\n".join(bomb) + "\n", "bomb.yaml")


@pytest.mark.parametrize(
    ("text", "position", "fragment"),
    [
        ("a: 1\na: 2\n", (2, 1), "duplicate key 'a' (first at line 1)"),
        ("a:\n\t- 1\n", (2, 1), "tab character"),
        ("a: 'x\ty'\n", (1, 6), "tab character"),
        ("", (1, 1), "the file is empty"),
        ("   \n\n", (1, 1), "the file is empty"),
        ("# nothing\n", (1, 1), "only comments"),
        ("- 1\n", (1, 1), "the top level must be a mapping, got a list"),
        ("just text\n", (1, 1), "got text 'just text'"),
        ("a: [1\n", (2, 1), "invalid YAML"),
        ("a: 1\n---\nb: 2\n", (2, 1), "a second YAML document"),
        ("? [a]\n: 1\n", (1, 3), "a key must be text"),
        ("x: &x {a: 1}\ny:\n  <<: *x\n", (3, 3), "merge keys"),
        ("a: !!python/name:os.system ''\n", (1, 4), "the tag !!python/name:os.system"),
        ("a: !!binary aGk=\n", (1, 4), "the tag !!binary is not allowed"),
        ("a: !!set {x}\n", (1, 4), "the tag !!set is not allowed"),
        ("a: !custom 1\n", (1, 4), "the tag !custom is not allowed"),
        ("a: \x00\n", (1, 4), "control character U+0000"),
    ],
)
def test_refused(text: str, position: tuple[int, int], fragment: str) -> None:
    with pytest.raises(LabFileError) as info:
        load_text(text, "f.yaml")
    error = info.value
    assert (error.line, error.col) == position, str(error)
    assert fragment in str(error)
    assert str(error).startswith(f"f.yaml:{position[0]}:{position[1]}: ")


def test_undecodable_bytes_point_at_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: ok\ndescription: caf\xe9\n")
    with pytest.raises(LabFileError, match=r"latin1.yaml:2:17: byte 0xe9 is not UTF-8"):
        load_document(path, "latin1.yaml")


def test_size_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"name: x\n" + b"#" * MAX_BYTES)
    with pytest.raises(LabFileError) as info:
        load_document(path, "big.yaml")
    assert str(info.value) == (
        f"big.yaml:1:1: the file is too big ({MAX_BYTES + 8} bytes); "
        f"valid: at most {MAX_BYTES} bytes (1 MiB)"
    )


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(
        LabFileError, match=r"nope\.yaml:1:1: cannot read lab file '.*nope\.yaml': No such file"
    ):
        load_document(tmp_path / "nope.yaml", "nope.yaml")
    with pytest.raises(LabFileError, match="is a directory"):
        load_document(tmp_path)


SCALARS = """\
plain: send ap wan IP(dst="192.0.2.2")
quoted: "send ap wan IP()"
single: 'send ap wan IP()'
escaped: "send \\"ap\\" wan IP()"
doubled: 'it''s wan IP()'
folded: >-
  send ap wan
  IP(dst="192.0.2.2")

  UDP()
literal: |
  send ap
    wan IP()
multiline: send ap
  wan IP()
number: 42
"""


@pytest.mark.parametrize(
    ("key", "word", "position"),
    [
        ("plain", "IP(", (1, 20)),
        ("plain", "send", (1, 8)),
        ("quoted", "IP(", (2, 22)),
        ("single", "wan", (3, 18)),
        ("folded", "IP(", (8, 3)),
        ("folded", "UDP", (10, 3)),
        ("folded", "wan", (7, 11)),
        ("literal", "wan", (13, 5)),
        ("multiline", "wan", (15, 3)),
        # Escapes (\" and '') change lengths: the scalar's start.
        ("escaped", "wan", (4, 10)),
        ("doubled", "wan", (5, 10)),
    ],
)
def test_offset_mark_finds_a_word_inside_a_scalar(
    key: str, word: str, position: tuple[int, int]
) -> None:
    doc = load_text(SCALARS, "f.yaml")
    offset = doc.data[key].index(word)
    mark = doc.offset_mark((key,), offset)
    assert (mark.line, mark.col) == position
    line = SCALARS.splitlines()[mark.line - 1]
    if key not in ("escaped", "doubled"):
        assert line[mark.col - 1 :].startswith(word)


def test_offset_mark_outside_the_value_is_the_start() -> None:
    doc = load_text(SCALARS, "f.yaml")
    start = doc.mark(("plain",))
    assert doc.offset_mark(("plain",), 999) == start
    assert doc.offset_mark(("plain",), -1) == start
    assert doc.offset_mark(("number",), 5) == doc.mark(("number",))
