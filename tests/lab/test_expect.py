"""Paths, references and operators of the expectation language."""

from __future__ import annotations

from typing import Any

import pytest

from esplab.lab.expect import Check, evaluate
from esplab.lab.paths import Filter, PathError, Seg, equal, parse_path, path_text, resolve
from esplab.lab.refs import REF, references, substitute, substitute_value

DATA: dict[str, Any] = {
    "delivered": True,
    "counts": {"wan.wire": 2, "host.rx": 1},
    "stages": [
        {"tap": "ap.out", "len": 31, "counters": {}},
        {"tap": "host.xfrm", "len": 92, "counters": {"XfrmInStateSeqError": 1}},
    ],
    "hex": "0011223344",
    "spi": "0x00001000",
    "none": None,
}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("delivered", True),
        ("stages[0].tap", "ap.out"),
        ("stages[-1].len", 92),
        ('counts["wan.wire"]', 2),
        ("counts['host.rx']", 1),
        ("stages[tap=host.xfrm].counters.XfrmInStateSeqError", 1),
        ('stages[tap="ap.out"].len', 31),
        ("hex[2:6]", "1122"),
        ("hex[-2:]", "44"),
        ("hex[:2]", "00"),
        ("stages[1:]", [DATA["stages"][1]]),
        ("none", None),
    ],
)
def test_resolve(path: str, value: Any) -> None:
    assert resolve(DATA, parse_path(path)) == value


def test_parse_and_print() -> None:
    parts = parse_path('stages[tap=host.xfrm].counters["a.b"][1:3][-1]')
    assert parts == [
        Seg("key", key="stages"),
        Filter("tap", "host.xfrm"),
        Seg("key", key="counters"),
        Seg("key", key="a.b"),
        Seg("slice", start=1, stop=3),
        Seg("index", index=-1),
    ]
    assert path_text(parts) == 'stages[tap=host.xfrm].counters["a.b"][1:3][-1]'


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("", "empty path"),
        ("a..b", "expected a key"),
        ("a[", "unclosed '['"),
        ("a[x y]", "is not an index"),
        ("a['x", "unclosed '"),
        ("a b", "expected '.' or '['"),
        ("a['x'b]", "expected ']'"),
    ],
)
def test_bad_paths(path: str, fragment: str) -> None:
    with pytest.raises(PathError, match=fragment.replace("[", r"\[").replace(".", r"\.")):
        parse_path(path)


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("nope", "the result has no key 'nope'; keys: delivered, counts"),
        ("stages[5]", "stages has 2 items, no [5]"),
        ("delivered.x", "delivered is true, it has no key 'x'"),
        (
            "stages[tap=host.deliver]",
            "no item of stages has tap=host.deliver; tap values: ap.out, host.xfrm",
        ),
        ("stages[nope=1]", "no item of stages has a key 'nope'"),
        ("counts[0]", "counts is a mapping, not a list or text"),
        ("counts[0:1]", "cannot be sliced"),
        ("hex[tap=x]", "hex is text, not a list"),
    ],
)
def test_paths_that_lead_nowhere(path: str, fragment: str) -> None:
    with pytest.raises(PathError) as info:
        resolve(DATA, parse_path(path))
    assert fragment in str(info.value)


def test_equality_is_lenient_about_numbers_only() -> None:
    assert equal(4096, "0x00001000") and equal("0x1000", 4096) and equal(1.0, 1)
    assert not equal(1, True) and not equal("true", True) and not equal(None, "")
    assert equal([1, "0x2"], [1, 2]) and not equal([1], [1, 2])
    assert equal({"a": 1}, {"a": "1"}) and not equal({"a": 1}, {"a": 1, "b": 2})
    assert not equal("abc", 1)


@pytest.mark.parametrize(
    ("path", "spec", "holds"),
    [
        ("delivered", True, True),
        ("delivered", False, False),
        ("spi", 0x1000, True),
        ("counts", {"contains": "wan.wire"}, True),
        ("counts", {"excludes": "lan1.wire"}, True),
        ("stages[1].counters", {"len": 1}, True),
        ("hex", {"matches": "^00(11)+"}, True),
        ("hex", {"hex": "00 11 22 33 44"}, True),
        ("hex", {"hex": "0x0011223344"}, True),
        ("hex", {"len": 10, "contains": "2233"}, True),
        ("stages[-1].len", {"gt": 90, "le": 92}, True),
        ("stages[-1].len", {"lt": "0x10"}, False),
        ("stages[-1].len", {"in": [1, 92]}, True),
        ("stages[-1].len", {"ne": 92}, False),
        ("nope", {"exists": False}, True),
        ("delivered", {"exists": True}, True),
        ("delivered", {"exists": False}, False),
        ("nope", 1, False),
        ("delivered", {"gt": 1}, False),
        ("stages", {"eq": DATA["stages"]}, True),
    ],
)
def test_operators(path: str, spec: Any, holds: bool) -> None:
    failure = evaluate(Check.of(spec), path, lambda: resolve(DATA, parse_path(path)), {})
    assert (failure is None) == holds, failure


def test_failure_text() -> None:
    failure = evaluate(
        Check.of({"contains": "x"}), "hex", lambda: resolve(DATA, parse_path("hex")), {}
    )
    assert failure is not None
    assert failure.line() == 'hex: expected containing "x", got "0011223344"'
    missing = evaluate(Check.of(1), "nope", lambda: resolve(DATA, parse_path("nope")), {})
    assert missing is not None and missing.actual.startswith("nothing (the result has no key")
    odd = evaluate(
        Check.of({"gt": 1}), "delivered", lambda: resolve(DATA, parse_path("delivered")), {}
    )
    assert odd is not None and "which 'gt' cannot be applied to" in odd.actual


def test_long_texts_that_differ_say_where() -> None:
    expected, actual = "ab" * 150, "ab" * 112 + "XY" + "ab" * 37
    failure = evaluate(Check.of(expected), "hex", lambda: actual, {})
    assert failure is not None
    assert failure.actual.endswith(
        "; they first differ at character 224: expected "
        "...abababababababababababab..., got "
        "...ababababababXYababababab..."
    )
    short = evaluate(Check.of("abc"), "hex", lambda: "abd", {})
    assert short is not None and short.actual == '"abd"'  # shown whole: nothing to add


SAVED = {
    "lab": {"dir": "/labs", "seed": 24301},
    "w": {"hex": "abcd", "n": 3, "ok": True, "list": [1, 2], "none": None},
}


def test_references() -> None:
    assert references("a ${w.hex[0:2]} b $${not} ${lab.dir}") == [
        ("w", [Seg("key", key="w"), Seg("key", key="hex"), Seg("slice", start=0, stop=2)]),
        ("lab", [Seg("key", key="lab"), Seg("key", key="dir")]),
    ]
    assert (
        substitute("decode ESP ${w.hex[2:]} ${w.n} ${w.ok} [${w.none}] $${x}", SAVED)
        == "decode ESP cd 3 true [] ${x}"
    )
    assert substitute("load '${lab.dir}/x'", SAVED) == "load '/labs/x'"
    assert substitute_value("${w.n}", SAVED) == 3
    assert substitute_value(["${w.list}", {"k": "n=${w.n}"}], SAVED) == [[1, 2], {"k": "n=3"}]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("${x.hex}", "nothing was saved as 'x'"),
        ("${w.list}", "is a list; pick one value"),
        ("${w.nope}", "w has no key 'nope'"),
        ("${w.[}", "expected a key"),
    ],
)
def test_bad_references(text: str, fragment: str) -> None:
    with pytest.raises(PathError, match=fragment.replace("[", r"\[")):
        substitute(text, SAVED)


def test_unusable_reference_in_an_expectation_fails_the_expectation() -> None:
    failure = evaluate(Check.of("${nope.x}"), "hex", lambda: "x", SAVED)
    assert failure is not None and "an unusable reference" in failure.actual


def test_a_pattern_known_only_at_run_time_that_does_not_compile_is_a_failure() -> None:
    failure = evaluate(Check.of({"matches": "${w.hex}(["}), "hex", lambda: "abcd", SAVED)
    assert failure is not None and failure.actual.startswith("an invalid pattern (")


def test_the_reference_pattern() -> None:
    found = [(m.group(), m.group(1)) for m in REF.finditer("a ${s.x[0]} $${y} ${ lab.dir }")]
    assert found == [("${s.x[0]}", "s.x[0]"), ("$${", None), ("${ lab.dir }", " lab.dir ")]
