"""Every fault the lab can inject is one that ``esplab diagnose`` names.

For each kind of ``eip93 fault``: inject it into the seed scenario's offloaded SA,
send three packets, export the wire and the SA file as a user would, run diagnose,
and check that the mistake it names is the fault's. Lab 9's board capture (a
sequence number rewritten after the ICV) is diagnosed the same way.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from esplab.capfile.diagnose import diagnose, group_dict
from esplab.capfile.safile import load_sa_file
from esplab.commands.session import Session
from esplab.model.kernel.drivers.eip93.faults import FAULTS
from tests.commands import seed

LABS = Path(__file__).resolve().parents[2] / "labs"
SEND = 'send ap wan IP(dst="192.0.2.2")/UDP(dport=5201)/Raw(b"y"*64) count 3'
#: A second outbound SA of the same algorithms, other keys and reqid 2 (so the ap's
#: policy still picks 0x1000): the keys wrong-sa programs under 0x1000.
OTHER = (
    seed.SA_OUT.replace("0x1000", "0x2000")
    .replace("0102030405", "1112131415")
    .replace("reqid 1", "reqid 2")
    + " offload dev wan dir out"
)
ARGS = {"wrong-sa": " 0x2000"}


def _session() -> Session:
    return seed.crypto_session()


def test_every_fault_kind_names_a_hypothesis_diagnose_has() -> None:
    from esplab.capfile.hypotheses import HYPOTHESES

    keys = {h.key for h in HYPOTHESES}
    assert {f.hypothesis for f in FAULTS.values()} <= keys


@pytest.mark.parametrize("kind", sorted(FAULTS))
def test_diagnose_names_the_injected_fault(kind: str, tmp_path: Path) -> None:
    s = _session()
    s.execute(OTHER)
    s.execute(f"eip93 fault set 0x1000 {kind}{ARGS.get(kind, '')}")
    s.execute(SEND)
    cap, keys = tmp_path / "board.pcapng", tmp_path / "states.txt"
    s.execute(f"capture export {cap} wan.wire")
    if kind == "nat-t":
        # A Wireshark esp_sa record says nothing of encapsulation (decode then takes the
        # packet's): the mismatch shows against pasted ip xfrm state, as on a board.
        keys.write_text(s.execute("ip xfrm state").data["text"])
    else:
        s.execute(f"wireshark-keys {keys}")
    found = diagnose(str(cap), load_sa_file(str(keys)))
    groups = [group_dict(g) for g in found.groups]
    named = [g for g in groups if g["spi"] in ("0x00001000", "0x00100000")]
    assert named, groups
    group = named[0]
    assert group["explained"] is True, group
    findings = group["findings"]
    assert isinstance(findings, list)
    assert findings[0]["hypothesis"] == FAULTS[kind].hypothesis, findings
    assert group["failing"] == 3 if kind != "iv-source" else group["failing"] == 2


def test_without_a_fault_nothing_to_explain(tmp_path: Path) -> None:
    s = _session()
    s.execute(SEND)
    s.execute(f"capture export {tmp_path / 'c.pcapng'} wan.wire")
    s.execute(f"wireshark-keys {tmp_path / 'k.txt'}")
    found = diagnose(str(tmp_path / "c.pcapng"), load_sa_file(str(tmp_path / "k.txt")))
    assert found.groups == []


def test_lab_9_capture_names_the_sequence_number_rewritten_after_the_icv() -> None:
    data = LABS / "data"
    found = diagnose(
        str(data / "09-board.pcap"), load_sa_file(str(data / "09-board-xfrm-state.txt"))
    )
    # Frame 7 is frame 5 (seq 3) with 4 written over the number (make-09-board-capture);
    # frame 6, an exact duplicate, is a replay and not a reused IV.
    assert [(g.problem, g.spi, g.count) for g in found.groups] == [("icv-bad", 0xC0DE0001, 1)]
    best = found.groups[0].best
    assert best is not None and best.hypothesis.key == "seq-after-icv"
    assert "sequence number -1" in best.label and found.explained
