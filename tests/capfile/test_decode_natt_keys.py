"""The README's flow for a UDP-encapsulated SA: wireshark-keys, then decode with the
file it wrote (issue #21 item 6). Wireshark's ``esp_sa`` record has no encapsulation
field and tshark decrypts ESP in UDP with it; so does decode, while an SA file that
does say (``ip xfrm state`` text without ``encap``) still finds the mismatch."""

from __future__ import annotations

from pathlib import Path

from esplab.capfile.pipeline import decode_capture
from esplab.capfile.records import PacketRecord
from esplab.capfile.safile import load_sa_file
from esplab.commands.session import Session
from tests.commands import seed

NATT = " encap espinudp 4500 4500 0.0.0.0"


def _capture(tmp_path: Path) -> tuple[Path, Path]:
    s = Session()
    for line in (seed.SA_OUT + NATT, seed.POL_OUT):
        s.execute(line)
    s.execute('send ap wan IP(dst="192.0.2.2")/UDP(dport=5201)/Raw(b"y"*64) count 3')
    pcap, keys = tmp_path / "natt.pcapng", tmp_path / "keys.txt"
    s.execute(f"capture export {pcap} wan.wire")
    s.execute(f"wireshark-keys {keys}")
    return pcap, keys


def _decode(pcap: Path, sa_path: Path) -> list[PacketRecord]:
    records: list[PacketRecord] = []
    decode_capture(pcap, load_sa_file(str(sa_path)).sas, records.append)
    return records


def test_natt_packets_decode_with_the_labs_own_esp_sa_export(tmp_path: Path) -> None:
    pcap, keys = _capture(tmp_path)
    assert keys.read_text().count('"IPv4"') == 1
    records = _decode(pcap, keys)
    assert [(r.status, r.encap) for r in records] == [("ok", (4500, 4500))] * 3


def test_an_sa_file_that_says_no_encap_still_finds_the_mismatch(tmp_path: Path) -> None:
    pcap, _ = _capture(tmp_path)
    states = tmp_path / "states.txt"
    states.write_text(seed.SA_OUT + "\n")
    assert {r.status for r in _decode(pcap, states)} == {"encap-mismatch"}
