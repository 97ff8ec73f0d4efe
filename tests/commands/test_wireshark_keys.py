"""wireshark-keys with SAs Wireshark takes only in part: it writes what Wireshark can
decrypt and warns, naming node and SPI, about each SA left out or written with a caveat."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from esplab.commands.result import TextResult
from esplab.commands.session import Session
from esplab.errors import BadArgument
from tests.commands import seed

KEY16 = "0x000102030405060708090a0b0c0d0e0f"
KEY48 = "0x" + "a5" * 48


def sa(spi: int, algos: str, node: str = "") -> str:
    line = (
        f"ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi {spi:#x} "
        f"mode transport {algos}"
    )
    return f"{node} {line}".strip()


XCBC = f"auth 'xcbc(aes)' {KEY16} enc aes {KEY16}"
SHA1 = f"auth sha1 {seed.AUTH} enc aes {seed.ENC}"
CCM = f"aead 'rfc4309(ccm(aes))' {KEY16}010203 128"
SHA384_128 = f"auth-trunc 'hmac(sha384)' {KEY48} 128 enc aes {KEY16}"


def keys(s: Session, path: Path, capture: str = "") -> TextResult:
    result = s.execute(f"wireshark-keys {path} {capture}".strip())
    assert isinstance(result, TextResult)
    return result


def test_an_sa_wireshark_cannot_take_does_not_block_the_others(tmp_path: Path) -> None:
    s = Session()
    for line in (sa(0x10, XCBC), sa(0x11, SHA1), sa(0x12, CCM), sa(0x13, SHA384_128)):
        s.execute(line)
    path = tmp_path / "esp_sa"
    result = keys(s, path)
    assert result.data["sas"] == 3
    assert result.data["skipped"] == ["0x00000012"]
    assert "1 left out" in result.summary
    text = path.read_text()
    assert '"0x00000011","AES-CBC [RFC3602]"' in text and "HMAC-SHA-1-96 [RFC2404]" in text
    assert '"0x00000010","AES-CBC [RFC3602]","0x000102030405060708090a0b0c0d0e0f",' \
        '"ANY 96 bit authentication [no checking]",""' in text  # fmt: skip
    assert '"0x00000013"' in text and "ANY 128 bit authentication [no checking]" in text
    assert "0x00000012" not in text
    warnings = result.data["warnings"]
    assert len(warnings) == 3  # one per SA that is not written as the kernel has it
    by_spi = {w.split(" ")[2]: w for w in warnings}
    assert by_spi["0x00000010"].startswith("ap SPI 0x00000010 (192.0.2.1 -> 192.0.2.2): ")
    assert "'xcbc(aes)'" in by_spi["0x00000010"]
    assert "ICV is not checked" in by_spi["0x00000010"]
    assert "'hmac(sha384)' truncated to 128 bits" in by_spi["0x00000013"]
    assert "not written" in by_spi["0x00000012"]
    assert "'rfc4309(ccm(aes))'" in by_spi["0x00000012"]
    # Every warning is a line of the text, and the tshark command has only what was written.
    for w in warnings:
        assert f"warning: {w}" in result.text.splitlines()
    assert "0x00000012" not in result.data["command"]


def test_the_node_named_is_the_one_holding_the_sa(tmp_path: Path) -> None:
    s = Session()
    s.execute(sa(0x11, SHA1))
    s.execute(sa(0x20, XCBC, node="host"))
    result = keys(s, tmp_path / "esp_sa")
    assert [w.split(":")[0] for w in result.data["warnings"]] == [
        "host SPI 0x00000020 (192.0.2.1 -> 192.0.2.2)"
    ]


def test_an_error_only_when_no_sa_can_be_written(tmp_path: Path) -> None:
    s = Session()
    s.execute(sa(0x12, CCM))
    path = tmp_path / "esp_sa"
    with pytest.raises(BadArgument, match=r"no SA can be written.*ap SPI 0x00000012.*ccm"):
        s.execute(f"wireshark-keys {path}")
    assert not path.exists()


def test_all_supported_gives_no_warning(tmp_path: Path) -> None:
    s = Session()
    s.execute(sa(0x11, SHA1))
    result = keys(s, tmp_path / "esp_sa")
    assert result.data["warnings"] == [] and result.data["skipped"] == []
    assert "warning" not in result.text


def tshark_rows(s: Session, tmp_path: Path, tshark: str) -> tuple[TextResult, list[list[str]]]:
    """Send two packets ap -> host, export wan.wire and decode it with the printed command."""
    s.execute(f"send ap wan {seed.UDP} count 2")
    pcap = tmp_path / "run.pcapng"
    s.execute(f"capture export {pcap} wan.wire")
    result = keys(s, tmp_path / "esp_sa", str(pcap))
    fields = "-T fields -e esp.spi -e esp.icv_good -e esp.icv_bad -e udp.dstport -e data.len"
    proc = subprocess.run(
        result.data["command"].replace("tshark", tshark, 1) + " " + fields,
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return result, [line.split("\t") for line in proc.stdout.splitlines()]


def two_ends(algos: str, extra: str = "") -> Session:
    out = seed.SA_OUT.replace(f"auth sha1 {seed.AUTH} enc aes {seed.ENC}", algos) + extra
    s = Session()
    for line in (out, seed.POL_OUT, "host " + out, "host " + seed.POL_IN_HOST):
        s.execute(line)
    return s


def test_tshark_decrypts_an_unchecked_authentication(tmp_path: Path, tshark: str) -> None:
    s = two_ends(SHA384_128)
    result, rows = tshark_rows(s, tmp_path, tshark)
    assert "ICV is not checked" in result.data["warnings"][0]
    # Decrypted (the UDP header and its 64 bytes are read), ICV neither good nor bad.
    assert rows == [["0x00001000", "0", "0", "5201", "64"]] * 2


@pytest.mark.parametrize(
    "algos",
    [SHA1, "aead 'rfc4106(gcm(aes))' 0x000102030405060708090a0b0c0d0e0f01020304 128"],
    ids=["sha1-aes", "gcm"],
)
def test_esn_is_written_with_a_warning_that_the_icv_shows_bad(
    tmp_path: Path, tshark: str, algos: str
) -> None:
    s = two_ends(algos, " replay-window 32 flag esn")
    result, rows = tshark_rows(s, tmp_path, tshark)
    assert result.data["sas"] == 1 and result.data["skipped"] == []
    [warning] = result.data["warnings"]
    assert warning.startswith("ap SPI 0x00001000 (192.0.2.1 -> 192.0.2.2): ESN: ")
    assert "no ESN flag" in warning and "ICV as bad" in warning
    assert f"warning: {warning}" in result.text
    # What the warning says: decrypted, and the ICV reported bad.
    assert rows == [["0x00001000", "0", "1", "5201", "64"]] * 2


def test_esn_without_an_icv_gives_no_warning(tmp_path: Path) -> None:
    s = Session()
    s.execute(sa(0x11, f"enc aes {KEY16} replay-window 32 flag esn"))
    result = keys(s, tmp_path / "esp_sa")
    assert result.data["sas"] == 1 and result.data["warnings"] == []
