"""The Wireshark Lua plugin: generated from the layers, shipped byte for byte, and
tshark decodes every record field for field as Scapy does."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
from scapy.config import conf
from scapy.fields import (
    ByteField,
    FlagsField,
    MACField,
    PacketListField,
    StrFixedLenField,
    XStrFixedLenField,
    _BitField,
)
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet

from esplab.layers import (
    EIP93CommandDescriptor,
    EIP93ResultDescriptor,
    EIP93SARecord,
    MTKEther,
    MTKEtherRx,
    QDMADescriptor,
    XDPDesc,
    XfrmOffload,
    linktypes,
)
from esplab.pcap import CaptureRecord, write_capture
from esplab.wireshark_lua import (
    LuaRecord,
    lua_plugin,
    record_spec,
    record_specs,
    shipped_plugin,
)


def test_the_shipped_plugin_is_what_the_layers_generate() -> None:
    # Regenerate with `python -m esplab.wireshark_lua` after changing a layer.
    assert shipped_plugin().read_text(encoding="utf-8") == lua_plugin()


def test_every_record_link_type_has_its_layer() -> None:
    specs = {s.dlt: s.layer for s in record_specs()}
    assert specs == {
        linktypes.DLT_EIP93_CMD_DESC: "EIP93CommandDescriptor",
        linktypes.DLT_EIP93_RES_DESC: "EIP93ResultDescriptor",
        linktypes.DLT_EIP93_SA_RECORD: "EIP93SARecord",
        linktypes.DLT_EIP93_STATE_RECORD: "EIP93StateRecord",
        linktypes.DLT_MTK_ETHER: "MTKEther",
        linktypes.DLT_QDMA_DESC: "QDMADescriptor",
        linktypes.DLT_XFRM_OFFLOAD: "XfrmOffload",
        linktypes.DLT_XDP_DESC: "XDPDesc",
        linktypes.DLT_MTK_ETHER_RX: "MTKEtherRx",
    }


def _field(cls: type[Packet], name: str) -> Any:
    return next(f for f in cls.fields_desc if f.name == name)


def _all_ones(cls: type[Packet], name: str) -> bytes:
    fld = _field(cls, name)
    zero: dict[str, Any] = {
        f.name: 0 for f in cls.fields_desc if isinstance(f, _BitField) or f.name == name
    }
    make: Any = cls
    pkt = make(**{**zero, name: (1 << fld.size) - 1})
    return bytes(pkt)[: len(bytes(cls(**zero)))]


@pytest.mark.parametrize("spec", record_specs(), ids=lambda s: s.layer)
def test_bit_masks_are_where_scapy_puts_the_bits(spec: LuaRecord) -> None:
    cls = conf.l2types.num2layer[spec.dlt]
    for item in spec.items:
        for f in item.fields:
            if not isinstance(_field(cls, f.name), _BitField):
                continue
            built = _all_ones(cls, f.name)[item.offset : item.offset + item.size]
            value = int.from_bytes(built, "little" if item.little else "big")
            assert value == (f.mask or (1 << 8 * item.size) - 1), (spec.layer, f.name)


def test_the_sa_record_words_carry_the_readme_values() -> None:
    # README: for_esp("out", AES-CBC 128, HMAC-SHA1-96) gives sa_cmd0 0x133a1310.
    spec = record_spec(EIP93SARecord, 149)
    word0 = spec.items[0]
    assert (word0.word, word0.offset, word0.size, word0.little) == ("word0", 0, 4, True)
    names = {f.name: f for f in word0.fields}
    assert names["digest_length"].mask == 0x00F00000
    assert dict(names["iv_source"].values) == {0: "NO_LOAD", 1: "INPUT", 2: "STATE", 3: "PRNG"}


def test_a_table_scapy_reads_from_the_system_is_not_copied() -> None:
    # MTKEther.type uses scapy's ETHER_TYPES (merged with /etc/ethertypes): the
    # payload dissector names the protocol instead, so the plugin is the same anywhere.
    spec = record_spec(MTKEther, 151)
    type_field = spec.items[-1].fields[0]
    assert (type_field.name, type_field.values) == ("type", ())
    assert dict(spec.payload)[0x0800] == "ip"


class _Entry(Packet):
    name = "test entry"
    fields_desc = [ByteField("code", 0), StrFixedLenField("tag", b"", 3)]

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


class _ListRecord(Packet):
    name = "test list record"
    fields_desc = [
        MACField("mac", "02:00:00:00:00:01"),
        FlagsField("mode", 0, 8, ["a", "b", "c", "d", "e", "f", "g", "h"]),
        XStrFixedLenField("key", b"", 4),
        PacketListField("entries", [], _Entry),
    ]


# --- tshark ------------------------------------------------------------------------


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """JSON object with repeated keys kept as lists (list entries repeat names)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            out[key] = [*(out[key] if isinstance(out[key], list) else [out[key]]), value]
        else:
            out[key] = value
    return out


def _flatten(tree: Any, into: dict[str, list[Any]]) -> dict[str, list[Any]]:
    if isinstance(tree, list):
        for value in tree:
            _flatten(value, into)
    elif isinstance(tree, dict):
        for key, value in tree.items():
            if isinstance(value, (dict, list)) and not (
                isinstance(value, list) and all(isinstance(v, str) for v in value)
            ):
                _flatten(value, into)
            else:
                values = value if isinstance(value, list) else [value]
                into.setdefault(key, []).extend(values)
    return into


def _tshark(tshark: str, plugin: Path, capture: Path) -> list[dict[str, Any]]:
    argv = [tshark, "-X", f"lua_script:{plugin}", "-r", str(capture), "-T", "json"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "Lua" not in done.stderr + done.stdout, done.stderr + done.stdout
    frames = json.loads(done.stdout, object_pairs_hook=_pairs)
    return [frame["_source"]["layers"] for frame in frames]


def _expected(pkt: Packet) -> dict[str, str]:
    """Scapy's value of every field the record's bytes reach, as tshark prints it."""
    abbr = type(pkt).__name__.lower()
    missing = set(pkt.missing_fields()) if hasattr(pkt, "missing_fields") else set()
    out = {}
    for fld in pkt.fields_desc:
        if fld.name in missing:
            continue
        value = pkt.getfieldval(fld.name)
        key = f"{abbr}.{fld.name}"
        if isinstance(fld, MACField):
            out[key] = str(value).lower()
        elif isinstance(fld, XStrFixedLenField):
            out[key] = bytes(value).hex()
        elif isinstance(fld, StrFixedLenField):
            out[key] = bytes(value).decode()
        else:
            out[key] = str(int(value))
            if isinstance(fld, FlagsField):
                for bit, flag in enumerate(fld.names):
                    out[f"{key}.{flag.lower()}"] = str(int(value) >> bit & 1)
    return out


def _shown(key: str, value: str, spec_kinds: dict[str, str]) -> str:
    kind = spec_kinds.get(key, "")
    if kind == "bytes":
        return value.replace(":", "")
    if kind.startswith(("uint", "int")) and value.startswith(("0x", "-0x")):
        return str(int(value, 16))
    return value


def _kinds(specs: list[LuaRecord]) -> dict[str, str]:
    return {f"{s.abbr}.{f.name}": f.kind for s in specs for item in s.items for f in item.fields}


def _records() -> list[Packet]:
    """Every record type: random bytes, built values with a payload, and a cut one."""
    rng = random.Random(0x5EED)
    sa = EIP93SARecord.for_esp(
        "out",
        spi=0x1000,
        crypt_algo="AES-CBC",
        crypt_key=bytes(range(16)),
        auth_algo="HMAC-SHA1-96",
        auth_key=bytes(range(1, 21)),
    )
    ip = IP(src="192.0.2.1", dst="192.0.2.2") / UDP(sport=1234, dport=5201)
    eth: Any = Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01") / ip
    built: list[Packet] = [
        sa,
        EIP93CommandDescriptor(pad_ctrl_stat=2, pad_value=4, hash_final=1, length=72),
        EIP93ResultDescriptor(ext_err=1, ext_err_code=5, auth_err=1, length=132),
        MTKEther(dst="02:00:00:00:00:02", port_mask=0x21, pcp=5, vid=100) / ip,
        MTKEtherRx(src="02:00:00:00:00:03", src_port=3) / ip,
        QDMADescriptor(sp_tag=0x21, chan=1, fport=1) / eth,
        XfrmOffload(datapath=2, dir=2, status=1, errno=-113, spi=0x1000, seq=7, dev=b"wan") / ip,
        XDPDesc(addr=0x1122334455667788, options=3) / eth,
    ]
    classes = [
        conf.l2types.num2layer[dlt]
        for dlt in sorted(linktypes.LINKTYPE_NAMES)
        if dlt != linktypes.DLT_XFRM_OFFLOAD
    ]
    randoms = [cls(rng.randbytes(len(bytes(cls())))) for cls in classes]
    # XfrmOffload.dev is a NUL-padded name: random letters, not random bytes.
    name = bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(11))
    randoms.append(XfrmOffload(rng.randbytes(28) + name + bytes(5)))
    cut = [cls(bytes(cls())[:9]) for cls in (EIP93SARecord, XfrmOffload, QDMADescriptor)]
    dissected = [type(p)(bytes(p)) for p in built]  # Scapy's dissection is the reference
    return [*dissected, *randoms, *cut]


def test_tshark_decodes_every_record_field_for_field(tmp_path: Path, tshark: str) -> None:
    records = _records()
    capture = tmp_path / "records.pcapng"
    dlt_of = {cls: dlt for dlt, cls in conf.l2types.num2layer.items() if 147 <= dlt <= 162}
    write_capture(
        capture,
        [
            CaptureRecord(type(p).__name__, dlt_of[type(p)], n, bytes(p))
            for n, p in enumerate(records)
        ],
    )
    kinds = _kinds(record_specs())
    frames = _tshark(tshark, shipped_plugin(), capture)
    assert len(frames) == len(records)
    for pkt, layers in zip(records, frames, strict=True):
        abbr = type(pkt).__name__.lower()
        assert abbr in layers, (abbr, list(layers))
        seen = _flatten(layers[abbr], {})
        got = {
            k: _shown(k, v[0], kinds)
            for k, v in seen.items()
            if k.count(".") >= 1 and not k.startswith((f"{abbr}.word", f"{abbr}.bits"))
        }
        assert got == _expected(pkt), pkt.summary()


def test_tshark_hands_the_payload_on_as_scapy_binds_it(tmp_path: Path, tshark: str) -> None:
    records = _records()[3:8]  # MTKEther, MTKEtherRx, QDMA, XfrmOffload, XDPDesc, with IP
    capture = tmp_path / "payloads.pcapng"
    dlts = [151, 155, 152, 153, 154]
    write_capture(
        capture,
        [
            CaptureRecord(str(d), d, n, bytes(p))
            for n, (d, p) in enumerate(zip(dlts, records, strict=True))
        ],
    )
    frames = _tshark(tshark, shipped_plugin(), capture)
    assert len(frames) == len(dlts)
    for layers in frames:
        assert layers["ip"]["ip.dst"] == "192.0.2.2"
        assert layers["udp"]["udp.dstport"] == "5201"


def test_without_the_plugin_wireshark_guesses_pktap(tmp_path: Path, tshark: str) -> None:
    # The symptom the plugin cures: DLT 149 read as a PKTAP header.
    capture = tmp_path / "sa.pcap"
    sa = EIP93SARecord.for_esp(
        "out", spi=1, crypt_algo="AES-CBC", crypt_key=bytes(16), auth_algo="HMAC-SHA1-96",
        auth_key=bytes(20),
    )  # fmt: skip
    write_capture(capture, [CaptureRecord("sa", 149, 0, bytes(sa))])
    plain = subprocess.run(
        [tshark, "-r", str(capture)], capture_output=True, text=True, timeout=60, check=False
    )
    assert "PKTAP" in plain.stdout
    layers = _tshark(tshark, shipped_plugin(), capture)[0]
    assert layers["eip93sarecord"]["eip93sarecord.word0"] == "0x133a1310"
    assert "pktap" not in layers


def test_a_packet_list_field_repeats_its_sub_record(tmp_path: Path, tshark: str) -> None:
    spec = record_spec(_ListRecord, 156)  # DLT_USER9, unused by esplab
    plugin = tmp_path / "list.lua"
    plugin.write_text(lua_plugin([spec]), encoding="utf-8")
    pkt: Any = _ListRecord(mode=0x05, key=b"\x01\x02\x03\x04")
    pkt.entries = [_Entry(code=7, tag=b"abc"), _Entry(code=9, tag=b"xyz")]
    capture = tmp_path / "list.pcapng"
    write_capture(capture, [CaptureRecord("list", 156, 0, bytes(pkt))])
    layers = _tshark(tshark, plugin, capture)[0]
    seen = _flatten(layers["_listrecord"], {})
    assert seen["_listrecord.mac"] == ["02:00:00:00:00:01"]
    assert seen["_listrecord.mode"] == ["5"]
    assert seen["_listrecord.mode.a"] == ["1"] and seen["_listrecord.mode.b"] == ["0"]
    assert seen["_listrecord.key"] == ["01:02:03:04"]
    assert seen["_listrecord.entries.code"] == ["7", "9"]
    assert seen["_listrecord.entries.tag"] == ["abc", "xyz"]


def test_a_field_without_a_wireshark_form_is_named() -> None:
    from scapy.fields import StrField

    class _Odd(Packet):
        fields_desc = [StrField("blob", b"")]

    with pytest.raises(TypeError, match=r"_Odd\.blob: a StrField has no Wireshark form"):
        record_spec(_Odd)
