"""statediff: what changed between two snapshots, and when that is just counters."""

from __future__ import annotations

from dataclasses import dataclass, field

from esplab.model.accel import statediff


@dataclass
class _Counters:
    packets: int = 0
    bytes: int = 0


@dataclass
class _Root:
    counters: _Counters = field(default_factory=_Counters)
    mib: dict[str, int] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)
    label: str = "a"
    buf: bytearray = field(default_factory=lambda: bytearray(64))
    members: set[str] = field(default_factory=set)
    pair: tuple[int, _Counters] = field(default_factory=lambda: (1, _Counters()))


def test_integer_moves_become_deltas_that_replay() -> None:
    root = _Root(mib={"InNoPols": 0})
    before = statediff.snapshot(root)
    root.counters.packets += 1
    root.counters.bytes += 92
    root.mib["InNoPols"] += 2
    deltas = statediff.diff(before, statediff.snapshot(root))
    assert deltas is not None
    assert sorted((d.key, d.amount) for d in deltas) == [
        ("InNoPols", 2),
        ("bytes", 92),
        ("packets", 1),
    ]
    moves, rest = statediff.as_moves(deltas)
    assert len(moves) == 3 and rest == []
    statediff.apply(deltas)
    assert (root.counters.packets, root.counters.bytes, root.mib["InNoPols"]) == (2, 184, 4)


def test_anything_but_integer_moves_is_no_replay() -> None:
    for change in (
        lambda r: r.mib.__setitem__("new", 1),  # a new entry
        lambda r: r.names.append("x"),  # a list that grew
        lambda r: setattr(r, "label", "b"),  # a string replaced
        lambda r: setattr(r, "counters", _Counters()),  # an object replaced
        lambda r: r.buf.__setitem__(7, 1),  # a buffer's byte
        lambda r: r.members.add("x"),  # a set that grew
        lambda r: setattr(r, "pair", (2, r.pair[1])),  # a tuple replaced
    ):
        root = _Root()
        before = statediff.snapshot(root)
        change(root)
        assert statediff.diff(before, statediff.snapshot(root)) is None


def test_counters_inside_a_tuple_still_move() -> None:
    # A tuple is one value (its items never change in place); what it holds is read.
    root = _Root()
    before = statediff.snapshot(root)
    root.pair[1].packets += 3
    deltas = statediff.diff(before, statediff.snapshot(root, before=False))
    assert deltas is not None and [(d.key, d.amount) for d in deltas] == [("packets", 3)]


def test_skipped_objects_are_not_read() -> None:
    root = _Root()
    before = statediff.snapshot(root, skip=[root.names])
    root.names.append("x")
    assert statediff.diff(before, statediff.snapshot(root, skip=[root.names])) == []
