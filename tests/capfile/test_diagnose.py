"""Each mistake diagnose knows, injected on purpose, is named with its evidence."""

from __future__ import annotations

import hmac
import json
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from hypothesis import given, settings
from hypothesis import strategies as st

from esplab.capfile.diagnose import Group, diagnose
from esplab.capfile.hypotheses import HYPOTHESES, Suspect, TrialContext
from esplab.capfile.safile import SaFile, SaSpec
from esplab.cli import main
from esplab.pcap import LINKTYPE_RAW

from .support import (
    AUTH_KEY,
    ENC_KEY,
    GCM_KEY,
    SA_TEXT,
    esp_icv_patch,
    ipv4_udp,
    make_packets,
    sa_file,
    sender,
    swapped_state_icv,
    write_frames,
)

N = 12

# A fifth SA with other keys, for the wrong-mapping case.
OTHER_KEYS = bytes(range(0x80, 0x90)), bytes(range(0xA0, 0xB4))
EXTRA = (
    "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x5000 mode tunnel "
    f"auth sha1 0x{OTHER_KEYS[1].hex()} enc aes 0x{OTHER_KEYS[0].hex()}\n"
)
# hmac(sha256) at the kernel's default truncation (96 bits), and an ESN SA.
SHA256_96 = (
    "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x6000 mode tunnel "
    f"auth sha256 0x{bytes(range(32)).hex()} enc aes 0x{ENC_KEY.hex()}\n"
)
ESN = (
    "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x7000 mode tunnel "
    f"auth sha1 0x{AUTH_KEY.hex()} enc aes 0x{ENC_KEY.hex()} flag esn replay-window 64\n"
)


def sas() -> SaFile:
    return sa_file(SA_TEXT + EXTRA + SHA256_96 + ESN)


def run(tmp_path: Path, packets: list[bytes]) -> list[Group]:
    path = write_frames(tmp_path / "d.pcapng", [(LINKTYPE_RAW, p) for p in packets])
    return diagnose(str(path), sas(), sample=8).groups


def only(groups: list[Group]) -> Group:
    assert len(groups) == 1, [g.title for g in groups]
    return groups[0]


def assert_named(groups: list[Group], key: str, label: str = "") -> Group:
    group = only(groups)
    best = group.best
    assert best is not None, group.title
    assert group.explained, best.evidence
    assert best.hypothesis.key == key, [(f.hypothesis.key, f.label) for f in group.findings]
    assert label in best.label
    assert best.evidence.endswith("8/8 packets authenticate")
    return group


def spec(index: int) -> SaSpec:
    return sas().sas[index - 1]


def test_hmac_digest_words_byte_swapped(tmp_path: Path) -> None:
    good = make_packets(sender(spec(1)), N)
    for inner, outer, what in (
        (True, True, "the inner and outer HMAC digest words"),
        (True, False, "the inner HMAC digest words"),
        (False, True, "the outer HMAC digest words"),
    ):
        wrong = swapped_state_icv(AUTH_KEY, "sha1", 12, inner=inner, outer=outer)
        packets = [esp_icv_patch(p, 12, wrong) for p in good]
        group = assert_named(run(tmp_path, packets), "hmac-state-byte-order", what)
        assert group.count == N and group.problem == "icv-bad"


def test_icv_words_in_state_order(tmp_path: Path) -> None:
    def word_swapped(body: bytes) -> bytes:
        digest = hmac.new(AUTH_KEY, body, "sha1").digest()
        return b"".join(digest[i : i + 4][::-1] for i in range(0, 20, 4))[:12]

    packets = [esp_icv_patch(p, 12, word_swapped) for p in make_packets(sender(spec(1)), N)]
    assert_named(run(tmp_path, packets), "icv-word-order")


def test_wrong_icv_truncation(tmp_path: Path) -> None:
    packets = make_packets(sender(spec(6), icv_bits=128), N)
    group = assert_named(
        run(tmp_path, packets), "icv-length", "a 128-bit ICV instead of the SA's 96"
    )
    assert group.spec is not None and group.spec.index == 6


def test_esn_missing_on_the_sender(tmp_path: Path) -> None:
    packets = make_packets(sender(spec(7), esn=False), N)
    assert_named(run(tmp_path, packets), "esn", "left out")


def test_esn_added_by_the_sender(tmp_path: Path) -> None:
    packets = make_packets(sender(spec(1), esn=True, replay_window=32), N)
    assert_named(run(tmp_path, packets), "esn", "ESN high bits 0x0 added")


def test_keys_swapped(tmp_path: Path) -> None:
    swapped = sender(spec(1), enc_key=AUTH_KEY[:16], auth_key=ENC_KEY)
    assert_named(run(tmp_path, make_packets(swapped, N)), "keys-swapped")


@pytest.mark.parametrize(
    ("index", "change", "label"),
    [
        (1, {"auth_key": AUTH_KEY[::-1]}, "the authentication key bytes reversed"),
        (1, {"auth_key": b"".join(AUTH_KEY[i : i + 4][::-1] for i in range(0, 20, 4))},
         "each 32-bit word of the authentication key byte-swapped"),
        (2, {"aead_key": GCM_KEY[:16][::-1] + GCM_KEY[16:]}, "the key bytes reversed (salt kept)"),
    ],
)  # fmt: skip
def test_key_bytes_reversed(
    tmp_path: Path, index: int, change: dict[str, bytes], label: str
) -> None:
    packets = make_packets(sender(spec(index), **change), N)
    assert_named(run(tmp_path, packets), "key-byte-order", label)


def test_wrong_spi_to_sa_mapping(tmp_path: Path) -> None:
    # Packets with SA 1's SPI, made with SA 5's keys.
    packets = make_packets(sender(spec(5), spi=0x1000), N)
    assert_named(run(tmp_path, packets), "wrong-sa", "the keys of SA 5")


def test_spi_in_the_wrong_byte_order(tmp_path: Path) -> None:
    packets = make_packets(sender(spec(1), spi=0x00100000), N)
    group = assert_named(run(tmp_path, packets), "spi-byte-order", "SA 1")
    assert group.problem == "no-sa" and group.spi == 0x00100000


def test_implicit_iv(tmp_path: Path) -> None:
    # RFC 8750: no IV on the wire, nonce = salt || 64-bit sequence number.
    gcm = AESGCM(GCM_KEY[:16])
    packets = []
    for seq in range(1, N + 1):
        inner = ipv4_udp(60 + seq, seq)
        pad = -(len(inner) + 2) % 4
        plain = inner + bytes(range(1, pad + 1)) + bytes((pad, 4))
        head = struct.pack("!II", 0x2000, seq)
        esp = head + gcm.encrypt(GCM_KEY[16:] + seq.to_bytes(8, "big"), plain, head)
        outer = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(esp), 0, 0, 64, 50, 0,
                            bytes([192, 0, 2, 2]), bytes([192, 0, 2, 1]))  # fmt: skip
        packets.append(outer + esp)
    assert_named(run(tmp_path, packets), "iv-handling", "implicit IV")


def test_nat_t_expected_but_plain(tmp_path: Path) -> None:
    packets = make_packets(sender(spec(4), encap=None), N)
    group = assert_named(run(tmp_path, packets), "nat-t", "the packets are plain ESP")
    assert group.problem == "encap-mismatch"


def test_nat_t_on_a_port_nobody_expects(tmp_path: Path) -> None:
    packets = make_packets(sender(spec(1), encap=(4501, 4501)), N)
    assert_named(run(tmp_path, packets), "nat-t", "ESP in UDP 4501>4501, the SA has no encap")


def test_no_known_mistake(tmp_path: Path) -> None:
    garbage: Callable[[bytes], bytes] = lambda body: bytes(12)  # noqa: E731
    packets = [esp_icv_patch(p, 12, garbage) for p in make_packets(sender(spec(1)), N)]
    group = only(run(tmp_path, packets))
    assert group.best is None and not group.explained and group.trials > 10


def test_the_hypothesis_table() -> None:
    keys = [h.key for h in HYPOTHESES]
    assert len(keys) == len(set(keys))
    assert {
        "hmac-state-byte-order", "icv-length", "esn", "keys-swapped", "key-byte-order",
        "wrong-sa", "iv-handling", "nat-t", "spi-byte-order", "icv-word-order",
    } <= set(keys)  # fmt: skip
    assert all(h.mistake and h.fix and h.problems for h in HYPOTHESES)


def test_cli_report_and_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sa_path = tmp_path / "sa.txt"
    sa_path.write_text(SA_TEXT + EXTRA + SHA256_96 + ESN)
    wrong = swapped_state_icv(AUTH_KEY, "sha1", 12)
    bad = [esp_icv_patch(p, 12, wrong) for p in make_packets(sender(spec(1)), 40)]
    cap = write_frames(tmp_path / "c.pcapng", [(LINKTYPE_RAW, p) for p in bad])
    assert main(["diagnose", str(cap), "--sa-file", str(sa_path), "--sample", "40"]) == 0
    out = capsys.readouterr().out
    assert (
        "explained: with the inner and outer HMAC digest words byte-swapped per 32-bit word, "
        "40/40 packets authenticate" in out
    )
    assert "sa_i_digest/sa_o_digest" in out
    assert main(["diagnose", str(cap), "--sa-file", str(sa_path), "--json", "--spi", "1000"]) == 0
    report = json.loads(capsys.readouterr().out)
    (group,) = report["groups"]
    assert (group["sa"], group["failing"], group["examined"], group["explained"]) == (
        1,
        40,
        32,
        True,
    )
    assert group["findings"][0]["hypothesis"] == "hmac-state-byte-order"
    # An SPI no packet carries is a question the capture cannot answer: said, exit 2,
    # with the SPIs that could be asked about.
    assert main(["diagnose", str(cap), "--sa-file", str(sa_path), "--spi", "0x2000"]) == 2
    out = capsys.readouterr().out
    assert "no ESP packet carries SPI 0x00002000; valid: 0x00001000" in out
    garbage = [esp_icv_patch(p, 12, lambda b: bytes(12)) for p in make_packets(sender(spec(1)), 3)]
    cap2 = write_frames(tmp_path / "g.pcapng", [(LINKTYPE_RAW, p) for p in garbage])
    assert main(["diagnose", str(cap2), "--sa-file", str(sa_path)]) == 1
    assert "no known mistake explains this" in capsys.readouterr().out
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x01\x02\x03\x04garbage")
    assert main(["diagnose", str(junk), "--sa-file", str(sa_path)]) == 2
    assert "is not a capture" in capsys.readouterr().err


@settings(max_examples=150, deadline=None)
@given(body=st.binary(max_size=120), seq=st.integers(0, (1 << 40)))
def test_every_trial_survives_any_packet(body: bytes, seq: int) -> None:
    ctx = TrialContext(sas().sas)
    for spec_ in (None, *sas().sas):
        for problem in ("icv-bad", "no-sa", "encap-mismatch"):
            spi = spec_.spi if spec_ is not None and spec_.spi is not None else 0x00100000
            esp = struct.pack("!II", spi, seq & 0xFFFFFFFF) + body
            suspect = Suspect(1, esp, spi, seq, spec_.index if spec_ else 0, problem, None)
            for hyp in HYPOTHESES:
                if problem in hyp.problems:
                    for trial in hyp.trials(ctx, spec_, [suspect]):
                        assert trial.check(suspect) in (True, False)


def test_spis_without_sa_are_examined_up_to_a_bound(tmp_path: Path) -> None:
    from esplab.capfile.diagnose import MAX_UNKNOWN_GROUPS

    packets = [make_packets(sender(spec(1), spi=0x7700 + i), 1)[0] for i in range(40)]
    path = write_frames(tmp_path / "u.pcapng", [(LINKTYPE_RAW, p) for p in packets])
    found = diagnose(str(path), sas(), sample=2)
    assert len(found.groups) == MAX_UNKNOWN_GROUPS
    assert found.not_examined == 40 - MAX_UNKNOWN_GROUPS
    # Made with SA 1's keys: each group is explained as a wrong SPI-to-SA mapping.
    assert all(g.problem == "no-sa" and g.explained for g in found.groups)
    assert {g.findings[0].hypothesis.key for g in found.groups} == {"wrong-sa"}


def test_frames_of_an_undecoded_link_type_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sa_path = tmp_path / "sa.txt"
    sa_path.write_text(SA_TEXT)
    good = make_packets(sender(spec(1)), 2)
    cap = write_frames(
        tmp_path / "w.pcapng", [(105, b"\x00" * 24), *((LINKTYPE_RAW, p) for p in good)]
    )
    assert main(["diagnose", str(cap), "--sa-file", str(sa_path)]) == 0
    assert "1 frame(s) of" in capsys.readouterr().out
