"""The decrypted ESP trailer (RFC 4303) and an XFRM offload metadata record.

* :class:`ESPTrailer` is the plaintext view of an ESP payload, RFC 4303 section 2
  (figure 1 and sections 2.3-2.8): payload data, padding, pad length, next
  header, ICV. The wire ESP header is scapy's :class:`scapy.layers.ipsec.ESP`,
  re-exported here unchanged.
* :class:`XfrmOffload` is esplab's own capture record that prefixes a packet with
  what the Linux XFRM offload path knew about it: the offload type and direction
  (``include/uapi/linux/xfrm.h``), the SA, the result. Its enums follow section 3
  of ``airoha-dsa-xfrm.md`` in the shared reference.
"""

from __future__ import annotations

from functools import cache
from typing import ClassVar

from scapy.config import conf
from scapy.data import IP_PROTOS
from scapy.fields import (
    ByteEnumField,
    ByteField,
    IntField,
    LongField,
    SignedIntField,
    StrField,
    StrFixedLenField,
    XByteField,
    XIntField,
    XShortField,
    XStrField,
)
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.ipsec import ESP
from scapy.packet import Packet, Raw, bind_layers

from esplab.layers._fixed import TruncatablePacket
from esplab.layers.linktypes import DLT_XFRM_OFFLOAD

__all__ = [
    "ESP",
    "ESP_DEFAULT_ALIGN",
    "ESP_DEFAULT_ICV_LEN",
    "XFRM_OFFLOAD_DATAPATH",
    "XFRM_OFFLOAD_DIR",
    "XFRM_OFFLOAD_MAGIC",
    "XFRM_OFFLOAD_PROTO",
    "XFRM_OFFLOAD_STATUS",
    "XFRM_OFFLOAD_VERSION",
    "ESPTrailer",
    "XfrmOffload",
    "esp_padding",
]

# ---------------------------------------------------------------------------
# ESP trailer (RFC 4303 section 2)

ESP_DEFAULT_ICV_LEN = 16  # AES-GCM (RFC 4106) full ICV; the only one netdevsim takes
ESP_DEFAULT_ALIGN = 4  # RFC 4303 2.4: pad length and next header end a 4-byte word
_NH_NONE = 59  # RFC 4303 2.6: "no next header", a dummy packet

# Next header of a Packet given as ``data`` when ``nh`` is None.
_NH_OF_LAYER: dict[type[Packet], int] = {IP: 4, IPv6: 41, TCP: 6, UDP: 17, ICMP: 1}
_IP_VERSION_OF_NH = {4: 4, 41: 6}


def esp_padding(length: int) -> bytes:
    """RFC 4303 2.4 default padding: the bytes 1, 2, 3, ... ``length``."""
    if not 0 <= length <= 255:
        raise ValueError(f"ESP padding length {length} out of range; valid: 0-255")
    return bytes(range(1, length + 1))


class ESPTrailer(Packet):
    """The decrypted ESP payload: data, padding and trailer (RFC 4303 section 2).

    ::

        +---------------------------------------------------------------+
        |                 data (variable, the inner payload)            |
        +---------------+-----------------------------------------------+
        |               |        padding (0-255 bytes: 1, 2, 3, ...)    |
        +---------------+---------------+---------------+---------------+
        |                               |    pad_len    |      nh       |
        +---------------+---------------+---------------+---------------+
        |                 icv (``icv_len`` bytes)                       |
        +---------------------------------------------------------------+

    Building: ``padding``, ``pad_len``, ``nh`` and ``icv`` default to None and are
    computed only while None: padding is the bytes 1, 2, 3, ... that make
    ``len(data) + len(padding) + 2`` a multiple of ``align``; ``pad_len`` is
    ``len(padding)``; ``nh`` comes from a Packet given as ``data`` (IP 4, IPv6 41,
    TCP 6, UDP 17, ICMP 1) and is 59 ("no next header") for plain bytes; ``icv``
    is ``icv_len`` zero bytes, a placeholder for the engine's tag. Explicit values
    are never changed, so malformed trailers (bad padding, a lying ``pad_len``,
    a wrong ``nh``, a short ICV) build as given.

    Dissecting runs from the end, so the ICV length must be known in advance: it
    is the class attribute ``icv_len`` (default 16) and ``align`` (default 4).
    Use ``ESPTrailer.parse(buf, icv_len=12)`` or a subclass from
    ``ESPTrailer.with_icv_len(12)``. Any bytes dissect: too few for an ICV, a pad
    length and a next header, or a ``pad_len`` longer than what precedes it, give
    a partial result that :meth:`problems` describes. ``raw()`` of a dissected,
    unmodified trailer is its input.
    """

    name = "ESP trailer"
    icv_len: ClassVar[int] = ESP_DEFAULT_ICV_LEN
    align: ClassVar[int] = ESP_DEFAULT_ALIGN
    fields_desc = [
        StrField("data", b""),
        XStrField("padding", None),
        ByteField("pad_len", None),
        ByteEnumField("nh", None, IP_PROTOS),
        XStrField("icv", None),
    ]

    # -- variants and parsing ------------------------------------------------

    @classmethod
    def with_icv_len(cls, icv_len: int, align: int | None = None) -> type[ESPTrailer]:
        """The subclass that dissects with this ICV length and alignment."""
        return _variant(cls, icv_len, cls.align if align is None else align)

    @classmethod
    def parse(cls, buf: bytes, icv_len: int | None = None, align: int | None = None) -> ESPTrailer:
        """Dissect ``buf`` with an ICV of ``icv_len`` bytes (default: the class's)."""
        variant = cls.with_icv_len(cls.icv_len if icv_len is None else icv_len, align)
        trailer = variant(buf)
        if not buf:
            trailer.dissect(buf)  # Packet() skips dissection of empty input
        return trailer

    # -- computed values -----------------------------------------------------

    def _data_bytes(self) -> bytes:
        value = self.getfieldval("data")
        return self.get_field("data").i2m(self, value)  # type: ignore[no-any-return]

    def _resolved(self) -> tuple[bytes, bytes, int, int, bytes]:
        """``(data, padding, pad_len, nh, icv)`` with None values computed."""
        data = self._data_bytes()
        padding = self.getfieldval("padding")
        if padding is None:
            padding = esp_padding(-(len(data) + 2) % self.align)
        padding = bytes(padding)
        pad_len = self.getfieldval("pad_len")
        if pad_len is None:
            pad_len = len(padding) & 0xFF
        nh = self.getfieldval("nh")
        if nh is None:
            nh = self._default_nh()
        icv = self.getfieldval("icv")
        if icv is None:
            icv = bytes(self.icv_len)
        return data, padding, int(pad_len), int(nh), bytes(icv)

    def _default_nh(self) -> int:
        value = self.getfieldval("data")
        if isinstance(value, Packet):
            for layer, nh in _NH_OF_LAYER.items():
                if isinstance(value, layer):
                    return nh
        return _NH_NONE

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        # The field-by-field build cannot place computed values; rebuild from them.
        data, padding, pad_len, nh, icv = self._resolved()
        return data + padding + bytes((pad_len & 0xFF, nh & 0xFF)) + icv + pay

    # -- dissection from the end ---------------------------------------------

    def do_dissect(self, s: bytes) -> bytes:
        self.raw_packet_cache_fields = {}
        end = len(s)
        icv_start = max(0, end - self.icv_len)
        self.fields["icv"] = s[icv_start:]
        if icv_start >= 1:
            self.fields["nh"] = s[icv_start - 1]
        body = b""
        if icv_start >= 2:
            pad_len = s[icv_start - 2]
            self.fields["pad_len"] = pad_len
            body = s[: icv_start - 2]
        # A pad_len longer than the bytes before it takes all of them as padding.
        split = max(0, len(body) - self.fields.get("pad_len", 0))
        self.fields["padding"] = body[split:]
        self.fields["data"] = body[:split]
        self.raw_packet_cache = s
        self.explicit = 1
        return b""

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes | None]:
        return b"", None

    # -- checks ----------------------------------------------------------------

    def padding_ok(self) -> bool:
        """True when the padding is RFC 4303's 1, 2, 3, ... (or empty)."""
        padding = self._resolved()[1]
        return len(padding) <= 255 and padding == esp_padding(len(padding))

    def problems(self) -> list[str]:
        """What is wrong with this trailer, one message each; empty when valid."""
        data, padding, pad_len, nh, icv = self._resolved()
        found: list[str] = []
        total = len(bytes(self))
        truncated = total < self.icv_len + 2
        if truncated:
            found.append(
                f"truncated: length {total}; a trailer needs at least {self.icv_len + 2} "
                f"(ICV {self.icv_len} + pad length + next header)"
            )
        if len(icv) != self.icv_len:
            found.append(f"ICV length {len(icv)}; expected {self.icv_len}")
        if pad_len != len(padding):
            found.append(f"pad_len {pad_len} but {len(padding)} padding bytes precede it")
        if not self.padding_ok():
            found.append(f"padding {padding.hex()} is not 1, 2, 3, ... (RFC 4303 2.4)")
        covered = len(data) + len(padding) + 2
        if covered % self.align and not truncated:
            found.append(f"data + padding + 2 = {covered} bytes, not a multiple of {self.align}")
        version = _IP_VERSION_OF_NH.get(nh)
        if version is not None and (not data or data[0] >> 4 != version):
            seen = f"version {data[0] >> 4}" if data else "no data"
            found.append(f"nh {nh} announces IPv{version} but the data has {seen}")
        return found

    def inner(self) -> Packet:
        """``data`` dissected by ``nh``: IP for 4, IPv6 for 41; Raw otherwise or on failure."""
        data, _, _, nh, _ = self._resolved()
        layer: type[Packet] = {4: IP, 41: IPv6}.get(nh, Raw) if data else Raw
        try:
            return layer(data)
        except Exception:  # as scapy does for payloads: what does not dissect stays Raw
            return Raw(data)

    def mysummary(self) -> str:
        data, _, pad_len, nh, icv = self._resolved()
        return f"ESPTrailer data={len(data)}B pad_len={pad_len} nh={nh} icv={len(icv)}B"


@cache
def _variant(base: type[ESPTrailer], icv_len: int, align: int) -> type[ESPTrailer]:
    if not 0 <= icv_len <= 64:
        raise ValueError(f"ICV length {icv_len} out of range; valid: 0-64")
    if not 1 <= align <= 256:
        raise ValueError(f"ESP alignment {align} out of range; valid: 1-256")
    if icv_len == base.icv_len and align == base.align:
        return base
    suffix = f"{icv_len}" if align == ESP_DEFAULT_ALIGN else f"{icv_len}A{align}"
    attrs = {"icv_len": icv_len, "align": align, "__module__": base.__module__}
    return type(f"{base.__name__}ICV{suffix}", (base,), attrs)


# ---------------------------------------------------------------------------
# XFRM offload metadata record (esplab's own format)

XFRM_OFFLOAD_MAGIC = 0x584F  # "XO"
XFRM_OFFLOAD_VERSION = 1

# Which data path handled the packet (reference section 3.1/3.2).
XFRM_OFFLOAD_DATAPATH = {0: "none", 1: "sw+aead", 2: "crypto", 3: "packet"}
# Values of the kernel's offload dir (XFRM_DEV_OFFLOAD_IN/OUT/FWD, section 3.1).
XFRM_OFFLOAD_DIR = {0: "unspec", 1: "in", 2: "out", 3: "fwd"}
# esplab's result codes; the comments give the counter each maps to (section 3.8).
XFRM_OFFLOAD_STATUS = {
    0: "ok",
    1: "auth-failed",  # XfrmInStateProtoError, state "failed" +1
    2: "replay",  # duplicate: XfrmInStateSeqError, state "replay" +1
    3: "replay-window",  # too old: XfrmInStateSeqError, state "replay-window" +1
    4: "bad-padding",
    5: "no-state",  # XfrmInNoStates / XfrmOutNoStates
    6: "dropped",  # packet offload not possible: XfrmOutError, -EHOSTUNREACH
    7: "invalid-protocol",  # CRYPTO_INVALID_PROTOCOL: XfrmInStateProtoError
    8: "error",  # any other failure: XfrmInBufferError
    9: "seq-overflow",  # XfrmOutStateSeqError
    10: "expired",  # XfrmIn/OutStateExpired
}
# Inner protocol: decides the payload class.
XFRM_OFFLOAD_PROTO = {0: "raw", 4: "IPv4", 41: "IPv6"}

_IFNAMSIZ = 16


class _IfNameField(StrFixedLenField):
    """A NUL-padded interface name; trailing NULs are dropped when dissecting."""

    def m2i(self, pkt: Packet | None, x: bytes) -> bytes:
        return x.rstrip(b"\0")


class XfrmOffload(TruncatablePacket):
    """esplab's XFRM offload metadata record, followed by the packet it describes.

    Our own fixed 44-byte format, all fields in network byte order::

         0                   1                   2                   3
         0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
        +-------------------------------+---------------+---------------+
        |        magic 0x584f "XO"      |    version    |   datapath    |
        +---------------+---------------+---------------+---------------+
        |      dir      |    status     |     proto     |   reserved    |
        +---------------+---------------+---------------+---------------+
        |                       errno (signed)                          |
        +---------------------------------------------------------------+
        |                             spi                               |
        +---------------------------------------------------------------+
        |                  seq (64 bits; high half = ESN seq-hi)        |
        +---------------------------------------------------------------+
        |                 len (of the packet that follows)              |
        +---------------------------------------------------------------+
        |            dev (16 bytes, IFNAMSIZ, NUL padded)               |
        +---------------------------------------------------------------+

    ``datapath``: 0 none, 1 software ESP (AEAD in the kernel), 2 crypto offload,
    3 packet offload. ``dir`` uses the kernel's offload dir values (1 in,
    2 out, 3 fwd); the name ``direction`` is taken by scapy's Packet. ``status``
    is an esplab result code (:data:`XFRM_OFFLOAD_STATUS`) and ``errno`` the
    kernel-style return value (0 or a negative errno, e.g. -113 for
    -EHOSTUNREACH). ``proto`` picks the payload: 4 IP, 41 IPv6, anything else
    Raw; ``XfrmOffload()/IP()`` sets it. ``len`` None is the payload length.
    """

    name = "XFRM offload metadata"
    fields_desc = [
        XShortField("magic", XFRM_OFFLOAD_MAGIC),
        ByteField("version", XFRM_OFFLOAD_VERSION),
        ByteEnumField("datapath", 0, XFRM_OFFLOAD_DATAPATH),
        ByteEnumField("dir", 0, XFRM_OFFLOAD_DIR),
        ByteEnumField("status", 0, XFRM_OFFLOAD_STATUS),
        ByteEnumField("proto", 0, XFRM_OFFLOAD_PROTO),
        XByteField("reserved", 0),
        SignedIntField("errno", 0),
        XIntField("spi", 0),
        LongField("seq", 0),
        IntField("len", None),
        _IfNameField("dev", b"", length=_IFNAMSIZ),
    ]

    @property
    def seq_hi(self) -> int:
        """The ESN high half of ``seq``."""
        return int(self.seq) >> 32

    @property
    def seq_lo(self) -> int:
        """The 32 bits carried in the ESP header."""
        return int(self.seq) & 0xFFFFFFFF

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        if self.len is None and len(pkt) >= 28:
            pkt = pkt[:24] + len(pay).to_bytes(4, "big") + pkt[28:]
        return pkt + pay

    def mysummary(self) -> str:
        return self.sprintf(
            "XfrmOffload %XfrmOffload.datapath% %XfrmOffload.dir% "
            "dev=%XfrmOffload.dev% spi=%XfrmOffload.spi% seq=%XfrmOffload.seq% "
            "%XfrmOffload.status%"
        )


bind_layers(XfrmOffload, IP, proto=4)
bind_layers(XfrmOffload, IPv6, proto=41)

conf.l2types.register(DLT_XFRM_OFFLOAD, XfrmOffload)
