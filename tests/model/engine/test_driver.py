"""The driver: state_add/state_delete per the JM series (airoha-dsa-xfrm.md 3.3, 3.10), the
journey stages it returns, flushes, the sw+aead datapath, determinism and choices."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from scapy.layers.inet import IP, UDP
from scapy.packet import Raw

from esplab.errors import NotFound
from esplab.layers.sa_record import EIP93SARecord, EIP93StateRecord
from esplab.model.hw.eip93 import choices as choices_module
from esplab.model.kernel.drivers.eip93 import CHOICES, DriverSettings, Outcome, explain, new_eip93
from esplab.model.kernel.drivers.eip93.xmit import locate_esp
from esplab.model.kernel.esp import core as esp
from esplab.model.kernel.esp.sa import EspSA

from .support import Pair, kernel_skb, key, make_pair, plain_packet

AES: dict[str, Any] = dict(
    enc="cbc(aes)", enc_key=key(16, 1), auth="hmac(sha1)", auth_key=key(20, 2)
)


@pytest.mark.parametrize(
    ("change", "errno", "text"),
    [
        ({"aead": "rfc4106(gcm(aes))", "enc": None, "auth": None}, "EOPNOTSUPP", "no GCM"),
        ({"encap": True}, "EOPNOTSUPP", "NAT-T"),
        ({"esn": True}, "EOPNOTSUPP", "ESN"),
        ({"tfcpad": 16}, "EOPNOTSUPP", "TFC"),
        ({"auth": None}, "EOPNOTSUPP", "both"),
        ({"enc": "cbc(serpent)"}, "EOPNOTSUPP", "encryption cbc(serpent)"),
        ({"auth": "hmac(sha384)", "auth_key": key(48, 1)}, "EOPNOTSUPP", "auth hmac(sha384)"),
        ({"auth_trunc_bits": 80}, "EOPNOTSUPP", "ICV of 80 bits"),
        ({"mode": "beet"}, "EOPNOTSUPP", "mode beet"),
        ({"family": 10}, "EOPNOTSUPP", "family"),
        ({"offload": "full"}, "EOPNOTSUPP", "offload type"),
        ({"enc_key": key(17, 1)}, "EINVAL", "17 bytes"),
    ],
)
def test_state_add_refusals(change: dict[str, Any], errno: str, text: str) -> None:
    drv = new_eip93(0)
    added = drv.state_add(direction="out", spi=0x100, **{**AES, **change})
    assert added.errno == errno and not added.ok and added.sa is None
    assert text in added.reason
    assert added.stages[0].meta["errno"] == errno
    assert added.stages[0].decision.startswith(f"xdo_dev_state_add(wan, spi 0x100): {errno}")
    assert drv.sas == {}


def test_duplicate_sa_is_eexist() -> None:
    drv = new_eip93(0)
    assert drv.state_add(direction="out", spi=0x100, **AES).ok
    assert drv.state_add(direction="in", spi=0x100, **AES).ok  # other direction: fine
    assert drv.state_add(direction="out", spi=0x100, **AES).errno == "EEXIST"


@pytest.mark.parametrize(
    ("enc", "elen", "auth", "bits", "words"),
    [
        # eip93.md 4.1: out sa_cmd0/sa_cmd1, in sa_cmd0/sa_cmd1.
        ("cbc(aes)", 16, "hmac(sha1)", 96, (0x133A1310, 0x22001101, 0x113A1318, 0x22001102)),
        ("cbc(aes)", 24, "hmac(md5)", 96, (0x133A0310, 0x23001101, 0x113A0318, 0x23001102)),
        ("cbc(aes)", 32, "hmac(sha256)", 128, (0x134A3310, 0x24001101, 0x114A3318, 0x24001102)),
        ("cbc(des3_ede)", 24, "hmac(sha1)", 96, (0x133A1110, 0x20001101, 0x113A1118, 0x20001102)),
        ("cbc(des)", 8, "hmac(md5)", 96, (0x133A0010, 0x20001101, 0x113A0018, 0x20001102)),
        (
            "rfc3686(ctr(aes))",
            20,
            "hmac(sha256)",
            128,
            (0x134A3310, 0x22001201, 0x114A3318, 0x22001202),
        ),
    ],
)
def test_state_add_programs_the_vschagen_record(
    enc: str, elen: int, auth: str, bits: int, words: tuple[int, ...]
) -> None:
    drv = new_eip93(0)
    got = []
    for direction in ("out", "in"):
        added = drv.state_add(
            direction=direction,
            spi=0x12345678,
            enc=enc,
            enc_key=key(elen, 1),
            auth=auth,
            auth_key=key(20, 2),
            auth_trunc_bits=bits,
        )
        assert added.sa is not None
        record = EIP93SARecord(drv.memory.read(added.sa.sa_addr, 128))
        got += [record.sa_cmd0, record.sa_cmd1]
        assert record.sa_spi == 0x12345678  # numeric, u32 LE (eip93.md 5.2)
        assert added.stages[0].data == bytes(record) and added.stages[0].kind == "sa"
    assert tuple(got) == words


def test_state_add_stage_names_the_record_address() -> None:
    drv = new_eip93(0)
    added = drv.state_add(direction="out", spi=0x100, **AES)
    assert added.sa is not None and added.sa.sa_addr == 0x08000000
    stage = added.stages[0]
    assert stage.tap == "eip93.driver" and stage.device == "ap"
    assert stage.decision == "xdo_dev_state_add(wan, spi 0x100): SA record at 0x08000000"
    assert stage.why and stage.fidelity == "D"


def test_state_delete_frees_the_record() -> None:
    drv = new_eip93(0)
    sa = drv.state_add(direction="in", spi=0x100, **AES).sa
    assert sa is not None
    stages = drv.state_delete(sa)
    assert "xdo_dev_state_delete(wan, spi 0x100)" in stages[0].decision
    assert drv.memory.region(sa.sa_addr) is None
    with pytest.raises(NotFound, match="no offloaded SA with SPI 0x100"):
        drv.lookup(0x100)
    with pytest.raises(NotFound):
        drv.state_delete(sa)


def _pair(offload: str = "crypto", **settings: Any) -> Pair:
    drv = new_eip93(4, settings=DriverSettings(**settings)) if settings else None
    return make_pair("cbc(aes)", 16, "hmac(sha1)", 20, 96, "transport", 4, offload, driver=drv)


def _tx(pair: Pair, seq: int = 1, *, iv: bytes | None = None) -> tuple[Outcome, bytes]:
    plain = plain_packet(4, 100, ident=seq)
    ref = esp.encrypt(pair.sw_out, plain, seq=seq, iv=iv or key(16, seq))
    skb, proto = kernel_skb(ref, plain, "transport", 16)
    send = pair.driver.crypto_tx if pair.out.offload == "crypto" else pair.driver.packet_tx
    return send(pair.out, skb, proto=proto, iv=iv), ref


def test_tx_stages_in_order_with_snapshots() -> None:
    pair = _pair()
    out, ref = _tx(pair, iv=key(16, 1))
    assert [s.tap for s in out.stages] == [
        "eip93.driver",
        "eip93.cdr",
        "eip93.sa",
        "eip93.in",
        "eip93.out",
        "eip93.rdr",
        "eip93.driver",
    ]
    kinds = {s.tap: (s.kind, len(s.data or b"")) for s in out.stages[1:-1]}
    assert kinds["eip93.cdr"] == ("cdr", 32) and kinds["eip93.rdr"] == ("rdr", 32)
    assert kinds["eip93.sa"] == ("sa", 128) and kinds["eip93.in"][0] == "raw"
    off, _ = locate_esp(ref)
    assert out.stages[4].data == ref[off:]  # eip93.out: the ESP the engine wrote
    assert out.stages[-1].data == ref and out.stages[-1].kind == "ip"
    for stage in out.stages:
        assert stage.fidelity in "CDUM" and stage.why and stage.device == "ap"
        assert set(stage.meta.get("choices", ())) <= set(CHOICES)
    # Snapshots decode into the esplab layers.
    assert type(out.stages[1].packet()).__name__ == "EIP93CommandDescriptor"
    assert type(out.stages[2].packet()).__name__ == "EIP93SARecord"


def test_rx_stages_and_state_record_when_asked_for() -> None:
    pair = _pair(esp_state_record=True)
    _, ref = _tx(pair)
    rx = pair.driver.rx(ref)
    assert rx is not None and rx.ok
    assert [s.tap for s in rx.stages] == [
        "eip93.driver",
        "eip93.cdr",
        "eip93.sa",
        "eip93.state",
        "eip93.in",
        "eip93.out",
        "eip93.rdr",
        "eip93.driver",
    ]
    # save_iv with a real state record: the last ciphertext block is written back.
    state = EIP93StateRecord(pair.driver.memory.read(pair.inb.state_addr, 56))
    assert state.state_iv == ref[-12 - 16 : -12]


def test_snapshots_off_keeps_stages_without_bytes() -> None:
    pair = _pair()
    pair.driver.snapshots = False
    out, ref = _tx(pair, iv=key(16, 1))
    assert out.ok and out.data == ref
    assert len(out.stages) == 7 and all(s.data is None for s in out.stages)
    pair.driver.snapshots = True
    out2, _ = _tx(pair, 2)
    assert out2.stages[1].data is not None


def test_ivs_come_from_the_seed() -> None:
    def first_iv(seed: int) -> bytes:
        drv = new_eip93(seed)
        pair = make_pair("cbc(aes)", 16, "hmac(sha1)", 20, 96, "transport", 4, "packet", driver=drv)
        out, _ = _tx(pair)
        off, _ = locate_esp(out.data)
        return out.data[off + 8 : off + 24]

    assert first_iv(11) == first_iv(11)
    assert first_iv(11) != first_iv(12)


def test_reset_flushes_and_the_engine_works_again() -> None:
    pair = _pair()
    drv = pair.driver
    assert _tx(pair)[0].ok
    flushed, stages = drv.reset()
    assert {(s.spi, s.direction) for s in flushed} == {(0x100, "out"), (0x100, "in")}
    assert "flush after an EIP-93 reset: 2 offloaded SA(s)" in stages[0].decision
    assert any(s.decision.startswith("probe:") for s in stages)
    assert drv.sas == {} and drv.device.read_reg(0x098) == 0
    again = make_pair("cbc(aes)", 16, "hmac(sha1)", 20, 96, "transport", 4, "crypto", driver=drv)
    out, ref = _tx(again, iv=key(16, 1))
    assert out.ok and out.data == ref


def test_rx_leaves_what_it_does_not_handle_to_software() -> None:
    pair = _pair()
    drv = pair.driver
    _, ref = _tx(pair)
    assert drv.rx(ref, dev="lan1") is None  # the SA is on wan
    assert drv.rx(plain_packet(4)) is None  # not ESP
    frag = bytearray(ref)
    frag[6] |= 0x20  # more fragments
    assert drv.rx(bytes(frag)) is None
    other = esp.encrypt(pair.sw_out, plain_packet(4), seq=1)
    assert drv.rx(other[:20] + b"\x00\x00\x09\x99" + other[24:]) is None  # unknown SPI
    udp = bytes(IP(src="192.0.2.1", dst="192.0.2.2") / UDP(sport=4500, dport=4500) / Raw(ref[20:]))
    assert drv.rx(udp) is None  # ESP in UDP: no NAT-T SA


@pytest.mark.parametrize("family", [4, 6])
def test_sw_aead_gives_the_software_bytes(family: int) -> None:
    # sw+aead: software framing, the engine's authenc (DESIGN.md).
    drv = new_eip93(0)
    ekey, akey = key(16, 0x11), key(20, 0x80)
    tfm = drv.aead_setkey(enc="cbc(aes)", enc_key=ekey, auth="hmac(sha1)", auth_key=akey, spi=0x100)
    sw = EspSA.build(0x100, enc="cbc(aes)", enc_key=ekey, auth="hmac(sha1)", auth_key=akey)
    plain = plain_packet(family, 120)
    iv = key(16, 9)
    ref = esp.encrypt(sw, plain, seq=5, iv=iv)
    skb, proto = kernel_skb(ref, plain, "transport", 16)
    out = drv.sw_aead_tx(tfm, skb, proto=proto, iv=iv)
    assert out.ok and out.data == ref and out.seq == 5
    back = drv.sw_aead_rx(tfm, ref)
    hlen = 20 if family == 4 else 40
    assert back.ok and back.data == plain[hlen:] and back.next_header == proto
    bad = drv.sw_aead_rx(tfm, ref[:-1] + bytes((ref[-1] ^ 1,)))
    assert not bad.ok and bad.mib == "XfrmInStateProtoError"


def test_every_choice_named_in_the_code_is_explained() -> None:
    keys: set[str] = set()
    source = ""
    # (the engine's modules and its driver's)
    engine = Path(choices_module.__file__).parent
    driver = engine.parents[1] / "kernel" / "drivers" / "eip93"
    for path in [*engine.glob("*.py"), *driver.glob("*.py")]:
        if path.name != "choices.py":
            source += path.read_text()
    keys |= set(re.findall(r"\[[UM]\] ([a-z0-9]+(?:-[a-z0-9]+)+)", source))
    assert keys and keys <= set(CHOICES), keys - set(CHOICES)
    # ... and every choice is made somewhere in the code.
    assert [key for key in CHOICES if key not in source] == []
    line = explain("iv-prng")
    # eip93.md 8.10 (the PRNG, an open question) rendered as what a user can open
    assert "seeded" in line and "[U]" in line and ".md" not in line
    assert "no public source settles this" in line and "eip93-regs.h" in line
    with pytest.raises(NotFound, match="no EIP-93 model choice"):
        explain("nope")
    assert all(c.text and c.tag in "UM" and c.ref for c in CHOICES.values())
