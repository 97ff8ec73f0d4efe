"""decode and tshark agree, packet by packet, on a mixed capture (tshark: Wireshark's
ESP dissector with decryption and ICV checking, the esp_sa table from esplab.wireshark)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from esplab.capfile.pipeline import decode_capture
from esplab.capfile.records import PacketRecord
from esplab.capfile.safile import SaSpec
from esplab.pcap import LINKTYPE_ETHERNET
from esplab.wireshark import EspSaEntry, tshark_options

from .support import ether, ipv4_udp, make_packets, sa_file, sender, write_frames


def entry(spec: SaSpec) -> EspSaEntry:
    assert spec.src is not None and spec.dst is not None and spec.spi is not None
    if spec.aead is not None:
        return EspSaEntry(spec.src, spec.dst, spec.spi, spec.aead, spec.aead_key,
                          icv_bits=spec.icv_bits)  # fmt: skip
    assert spec.enc is not None
    return EspSaEntry(
        spec.src, spec.dst, spec.spi, spec.enc, spec.enc_key, spec.auth, spec.auth_key,
        spec.icv_bits,
    )  # fmt: skip


def test_decode_and_tshark_agree_packet_by_packet(tmp_path: Path, tshark: str) -> None:
    sas = sa_file()
    one, gcm, v6, natt = sas.sas
    streams = [
        make_packets(sender(one), 9),
        make_packets(sender(gcm), 9),
        make_packets(sender(v6), 9, v6=True),
        make_packets(sender(natt), 9),
        make_packets(sender(one, spi=0x9999), 2),  # no SA for this SPI
    ]
    packets: list[bytes] = []
    for i in range(9):
        packets += [s[i] for s in streams if i < len(s)]
    # Some ICVs broken on purpose, some frames that are not ESP.
    for k in (3, 10, 17, 30):
        packets[k] = packets[k][:-1] + bytes([packets[k][-1] ^ 0x5A])
    packets.insert(5, ipv4_udp(80, 1))
    frames = [(LINKTYPE_ETHERNET, ether(p)) for p in packets]
    path = write_frames(tmp_path / "mixed.pcapng", frames)

    ours: dict[int, PacketRecord] = {}
    decode_capture(path, sas.sas, lambda r: ours.__setitem__(r.frame, r))

    fields = ["frame.number", "esp.spi", "esp.sequence", "esp.icv_good", "esp.icv_bad"]
    argv = [tshark, "-r", str(path), *tshark_options(entry(s) for s in sas.sas), "-T", "fields"]
    for f in fields:
        argv += ["-e", f]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)
    theirs: dict[int, tuple[int, int, str, str]] = {}
    for line in proc.stdout.splitlines():
        number, spi_text, seq_text, icv_good, icv_bad = line.split("\t")
        if spi_text:
            theirs[int(number)] = (int(spi_text, 16), int(seq_text), icv_good, icv_bad)

    assert sorted(ours) == sorted(theirs)
    verdicts = {"good": ("1", "0"), "bad": ("0", "1")}
    for frame, rec in ours.items():
        spi, seq, good, bad = theirs[frame]
        assert (spi, seq) == (rec.spi, rec.seq), frame
        if rec.status == "no-sa":
            assert (good, bad) == ("", ""), frame
        else:
            assert (good, bad) == verdicts[rec.icv], frame
    assert sum(1 for r in ours.values() if r.icv == "bad") == 4
    assert sum(1 for r in ours.values() if r.status == "no-sa") == 2
