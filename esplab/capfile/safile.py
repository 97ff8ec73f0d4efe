"""The SA file of ``esplab decode``/``diagnose``: what a user has at hand, in any of three forms.

* ``ip xfrm state`` or ``ip -s xfrm state`` output pasted from a board;
* ``ip xfrm state add ...`` command lines (``sudo``, ``#`` comments and backslash
  continuations allowed; ``ip xfrm policy`` lines are read and ignored);
* Wireshark's ``esp_sa`` UAT file: one CSV record per SA (protocol, source,
  destination, SPI, encryption, key, authentication, key; ``esplab.wireshark``).

The form is detected from the first line that is neither blank nor a comment: a
record in double quotes is Wireshark's, anything else goes to the XFRM loader
(``esplab.model.tools.iproute2.xfrm_load``), which recreates the states with the kernel's
checks. Offload lines are accepted whatever device they name. Every error is a
:class:`~esplab.errors.LabFileError` with the file, the line and why.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Set
from dataclasses import dataclass, field, replace
from ipaddress import ip_address
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from esplab.capfile.xfrmdump import check_cipher, check_printed_lengths, spi_lines
from esplab.errors import EsplabError, LabFileError, did_you_mean
from esplab.model.kernel.esp.sa import EspSA, UdpEncap
from esplab.model.kernel.xfrm.objects import IPPROTO_ESP, XfrmPolicy, XfrmState

__all__ = ["SaFile", "SaSpec", "load_sa_file", "parse_sa_text"]

Mode = Literal["transport", "tunnel"]
SaForm = Literal["xfrm", "wireshark"]

# "ANY n bit authentication [no checking]": an ICV of n bits that nobody checks.
_WS_ANY = re.compile(r"ANY (\d+) bit authentication \[no checking\]")
# Strings Wireshark knows and esplab cannot decrypt.
_WS_UNSUPPORTED = (
    "CAST5-CBC [RFC2144]",
    "BLOWFISH-CBC [RFC2451]",
    "TWOFISH-CBC",
    "AES-GCM with IIV and 16 octet ICV [RFC4106 & RFC8750]",
    "ChaCha20 with Poly1305 [RFC7634]",
    "ChaCha20 with Poly1305 and IIV [RFC7634 & RFC8750]",
    "MAC-RIPEMD-160-96 [RFC2857]",
)
_WS_FIELDS = "protocol, source, destination, SPI, encryption, key, authentication, key"


@dataclass(frozen=True)
class SaSpec:
    """One SA as decode needs it: identity, algorithms with keys, and receive options.

    ``spi``, ``src`` and ``dst`` may be None: a Wireshark wildcard (``*``).
    ``icv_bits`` is the authentication truncation or the AEAD ICV; with
    ``unchecked_icv`` it is only the length of an ICV nobody checks (Wireshark's
    ``ANY n bit authentication``). ``mode`` is None when the file does not say
    (Wireshark): decode then goes by the next header. ``seq_hi`` is the high half of
    the receive counter an ``ip -s xfrm state`` dump showed (ESN). ``encap_known`` is
    False when the file cannot say whether the SA is UDP-encapsulated (Wireshark's
    ``esp_sa`` has no such field, and Wireshark decrypts ESP in UDP with the same
    record): decode then takes the packet's encapsulation as the SA's.
    """

    index: int
    line: int
    source: str
    spi: int | None
    src: str | None
    dst: str | None
    enc: str | None = None
    enc_key: bytes = field(default=b"", repr=False)
    auth: str | None = None
    auth_key: bytes = field(default=b"", repr=False)
    aead: str | None = None
    aead_key: bytes = field(default=b"", repr=False)
    icv_bits: int = 0
    unchecked_icv: bool = False
    mode: Mode | None = None
    esn: bool = False
    replay_window: int = 0
    encap: tuple[int, int] | None = None
    seq_hi: int = 0
    notes: tuple[str, ...] = ()
    encap_known: bool = True

    @property
    def spi_text(self) -> str:
        return "*" if self.spi is None else f"0x{self.spi:08x}"

    @property
    def label(self) -> str:
        """``SA 1 (spi 0x00001000 192.0.2.1 > 192.0.2.2)``."""
        return f"SA {self.index} (spi {self.spi_text} {self.src or '*'} > {self.dst or '*'})"

    @property
    def algorithms(self) -> str:
        """``cbc(aes)-128 + hmac(sha1)-96`` or ``rfc4106(gcm(aes))-128 ICV 128``."""
        if self.aead is not None:
            return f"{self.aead}-{(len(self.aead_key) - 4) * 8} ICV {self.icv_bits}"
        enc = self.enc or "ecb(cipher_null)"
        salt = 4 if enc == "rfc3686(ctr(aes))" else 0
        text = f"{enc}-{(len(self.enc_key) - salt) * 8}" if self.enc_key else enc
        if self.auth is not None:
            text += f" + {self.auth}-{self.icv_bits}"
        elif self.unchecked_icv:
            text += f" + unchecked {self.icv_bits}-bit ICV"
        return text

    @property
    def icv_len(self) -> int:
        return self.icv_bits // 8

    def build(self) -> EspSA:
        """The software SA (one per SA file entry). Raises InvalidValue for keys or
        lengths the ESP core refuses, NotFound for an algorithm it does not know."""
        window = self.replay_window if self.replay_window or not self.esn else 32
        encap = UdpEncap(*self.encap) if self.encap else None
        spi = self.spi or 0
        if self.aead is not None:
            return EspSA.build(
                spi,
                aead=self.aead,
                aead_key=self.aead_key,
                aead_icv=self.icv_bits,
                esn=self.esn,
                replay_window=window,
                encap=encap,
            )
        return EspSA.build(
            spi,
            enc=self.enc or "ecb(cipher_null)",
            enc_key=self.enc_key,
            auth=self.auth,
            auth_key=self.auth_key,
            auth_trunc=self.icv_bits if self.auth is not None else None,
            esn=self.esn,
            replay_window=window,
            encap=encap,
        )

    def variant(self, **changes: object) -> SaSpec:
        """A copy with some fields changed (diagnose's what-if SAs)."""
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class SaFile:
    """What an SA file held: the ESP SAs in file order, its form and remarks."""

    path: str
    form: SaForm
    sas: tuple[SaSpec, ...]
    notes: tuple[str, ...] = field(default=())


# -- XFRM text ----------------------------------------------------------------


@dataclass(frozen=True)
class _AnyDevice:
    """A netdev that accepts every offload request: the board's SAs were already
    accepted by its kernel, so offload lines only have to load."""

    name: str
    features: Set[str] = frozenset({"esp-hw-offload"})
    has_xfrmdev_ops: bool = True
    supports_policy_offload: bool = True
    supports_advance_esn: bool = True

    def state_add(self, state: XfrmState) -> str | None:
        return None

    def state_delete(self, state: XfrmState) -> None:
        return None

    def policy_add(self, policy: XfrmPolicy) -> str | None:
        return None

    def policy_delete(self, policy: XfrmPolicy) -> None:
        return None


def _from_state(x: XfrmState, index: int, line: int, source: str) -> SaSpec:
    notes: list[str] = []
    encap: tuple[int, int] | None = None
    if x.encap is not None:
        if x.encap.type == "espintcp":
            notes.append("espintcp: ESP in TCP (RFC 8229) is not decoded")
        else:
            encap = (x.encap.sport, x.encap.dport)
    mode: Mode | None = "tunnel" if x.mode == "tunnel" else "transport"
    if x.mode not in ("tunnel", "transport"):
        notes.append(f"mode {x.mode}: decoded as transport or tunnel by the next header")
        mode = None
    base = SaSpec(
        index,
        line,
        source,
        x.spi,
        str(x.src),
        str(x.dst),
        mode=mode,
        esn=x.esn,
        replay_window=x.replay_window,
        encap=encap,
        seq_hi=x.replay.seq_hi,
        notes=tuple(notes),
    )
    if x.aead is not None:
        return replace(base, aead=x.aead.name, aead_key=x.aead.key, icv_bits=x.aead.icv_bits)
    enc = x.enc.name if x.enc is not None else None
    spec = replace(base, enc=enc, enc_key=x.enc.key if x.enc is not None else b"")
    if x.auth is not None and x.auth.name != "digest_null":
        spec = replace(spec, auth=x.auth.name, auth_key=x.auth.key, icv_bits=x.auth.icv_bits)
    return spec


def _load_xfrm(text: str, source: str) -> SaFile:
    from esplab.model.kernel.xfrm.tables import XfrmNode
    from esplab.model.tools.iproute2.xfrm_load import load_xfrm

    check_printed_lengths(text, source)
    report = load_xfrm(XfrmNode(), text, source=source, resolve_dev=_AnyDevice)
    lines = spi_lines(text)
    used: dict[int, int] = {}
    placed: list[tuple[int, XfrmState]] = []
    notes: list[str] = []
    for x in report.states:
        candidates = lines.get(x.spi, [0])
        k = used.get(x.spi, 0)
        used[x.spi] = k + 1
        line = sorted(candidates)[min(k, len(candidates) - 1)]
        if x.proto != IPPROTO_ESP:
            notes.append(f"{source}:{line}: not an ESP SA (proto {x.proto}); ignored")
            continue
        check_cipher(x, line, source)
        placed.append((line, x))
    placed.sort(key=lambda item: item[0])
    specs = [_from_state(x, i, line, source) for i, (line, x) in enumerate(placed, 1)]
    for spec in specs:
        _check_buildable(spec)
    return SaFile(source, "xfrm", tuple(specs), tuple(notes))


# -- Wireshark esp_sa ---------------------------------------------------------


def _ws_key(text: str, line: int, source: str, what: str) -> bytes:
    """Wireshark's key syntax: ``0x`` + hex digits (odd count: a leading 0), else ASCII."""
    if len(text) > 2 and text[:2] in ("0x", "0X"):
        digits = text[2:]
        try:
            return bytes.fromhex(digits if len(digits) % 2 == 0 else "0" + digits)
        except ValueError:
            raise LabFileError(
                source, line, 1, f"{what} {text!r} is not hex", valid="0x followed by hex digits"
            ) from None
    if text in ("0x", "0X"):
        return b""
    return text.encode()


def _ws_address(text: str, line: int, source: str, what: str, family: str) -> str | None:
    if text in ("", "*"):
        return None
    if "*" in text:
        raise LabFileError(
            source,
            line,
            1,
            f"{what} {text!r}: partial address wildcards are not supported",
            valid="a full address or '*'",
        )
    try:
        addr = ip_address(text)
    except ValueError:
        raise LabFileError(
            source,
            line,
            1,
            f"{what} {text!r} is not an IP address",
            valid="an IPv4 or IPv6 address, or '*'",
        ) from None
    if family != "Any" and f"IPv{addr.version}" != family:
        raise LabFileError(
            source,
            line,
            1,
            f"{what} {text} is IPv{addr.version} in a {family} record",
            valid=f"an {family} address",
        )
    return str(addr)


def _ws_spi(text: str, line: int, source: str) -> int | None:
    if text in ("", "*"):
        return None
    try:
        spi = int(text, 0)
    except ValueError:
        spi = -1
    if not 0 <= spi <= 0xFFFFFFFF:
        raise LabFileError(
            source, line, 1, f"SPI {text!r}", valid="0x00000000 to 0xffffffff, decimal, or '*'"
        )
    return spi


#: Wireshark's encryption strings -> (kernel name, AEAD ICV bits or 0), and its
#: authentication strings -> (kernel name or None for NULL, truncation bits).
_WsNames = tuple[Mapping[str, tuple[str, int]], Mapping[str, tuple[str | None, int]]]


def _ws_names() -> _WsNames:
    """From ``esplab.wireshark``, imported for a Wireshark SA file only."""
    from esplab.wireshark import AUTH_NAMES, ENC_NAMES, GCM_NAMES

    enc = {
        **{ws: (kernel, 0) for kernel, ws in ENC_NAMES.items()},
        **{ws: ("rfc4106(gcm(aes))", bits) for bits, ws in GCM_NAMES.items()},
        # Deprecated entry without an ICV length; Wireshark then checks 16 octets.
        "AES-GCM [RFC4106]": ("rfc4106(gcm(aes))", 128),
    }
    auth = {**{ws: key for key, ws in AUTH_NAMES.items()}, "NULL": (None, 0)}
    return MappingProxyType(enc), MappingProxyType(auth)


def _ws_record(fields: list[str], index: int, line: int, source: str, names: _WsNames) -> SaSpec:
    if len(fields) != 8:
        raise LabFileError(
            source,
            line,
            1,
            f"a Wireshark esp_sa record of {len(fields)} field(s)",
            valid=f"8 fields: {_WS_FIELDS}",
        )
    family, src, dst, spi, enc, enc_key, auth, auth_key = fields
    ws_enc, ws_auth = names
    if family not in ("IPv4", "IPv6", "Any"):
        raise LabFileError(
            source, line, 1, f"protocol {family!r}", valid=["IPv4", "IPv6", "Any"], value=family
        )
    spec = SaSpec(
        index,
        line,
        source,
        _ws_spi(spi, line, source),
        _ws_address(src, line, source, "source address", family),
        _ws_address(dst, line, source, "destination address", family),
        encap_known=False,
    )
    valid_enc = list(ws_enc)
    if enc in _WS_UNSUPPORTED:
        raise LabFileError(source, line, 1, f"esplab cannot decrypt {enc!r}", valid=valid_enc)
    if enc not in ws_enc:
        raise LabFileError(
            source, line, 1, f"unknown Wireshark encryption {enc!r}", valid=valid_enc, value=enc
        )
    kernel, aead_bits = ws_enc[enc]
    key = _ws_key(enc_key, line, source, "encryption key")
    if aead_bits:
        return replace(
            spec, aead=kernel, aead_key=key, icv_bits=aead_bits, notes=_ws_auth_note(auth)
        )
    spec = replace(spec, enc=kernel, enc_key=key)
    m = _WS_ANY.fullmatch(auth)
    if m is not None:
        return replace(spec, icv_bits=int(m.group(1)), unchecked_icv=True)
    if auth not in ws_auth:
        valid_auth = [*ws_auth, "ANY 96 bit authentication [no checking]"]
        what = (
            "esplab cannot check" if auth in _WS_UNSUPPORTED else "unknown Wireshark authentication"
        )
        hint = did_you_mean(auth, valid_auth)
        raise LabFileError(
            source,
            line,
            1,
            f"{what} {auth!r}",
            valid=valid_auth,
            hint=f"did you mean {hint}?" if hint else None,
        )
    name, bits = ws_auth[auth]
    if name is None:
        return spec
    return replace(
        spec,
        auth=name,
        auth_key=_ws_key(auth_key, line, source, "authentication key"),
        icv_bits=bits,
    )


def _ws_auth_note(auth: str) -> tuple[str, ...]:
    if auth in ("", "NULL"):
        return ()
    return (f"authentication {auth!r} ignored: AES-GCM carries its own ICV",)


def _load_wireshark(text: str, source: str) -> SaFile:
    import csv

    names = _ws_names()
    specs: list[SaSpec] = []
    for n, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if not stripped.startswith('"'):
            raise LabFileError(
                source,
                n,
                1,
                "expected a Wireshark esp_sa record in double quotes",
                valid='"IPv4","SRC","DST","0xSPI","ENCRYPTION","0xKEY","AUTHENTICATION","0xKEY"',
                hint="a file holds one form: ip xfrm output/commands, or Wireshark esp_sa records",
            )
        try:
            fields = next(csv.reader([stripped], skipinitialspace=True, strict=True))
        except csv.Error as exc:
            raise LabFileError(source, n, 1, f"not a CSV record: {exc}") from exc
        spec = _ws_record(fields, len(specs) + 1, n, source, names)
        _check_buildable(spec)
        specs.append(spec)
    return SaFile(source, "wireshark", tuple(specs))


# -- common -------------------------------------------------------------------


def _check_buildable(spec: SaSpec) -> None:
    """Refuse what the ESP core cannot run (unsupported algorithm, key length) on its line."""
    from esplab.model.kernel.esp.algos import AEAD_ALGOS, AUTH_ALGOS, ENC_ALGOS

    for name, table in ((spec.enc, ENC_ALGOS), (spec.auth, AUTH_ALGOS), (spec.aead, AEAD_ALGOS)):
        if name is not None and name not in table:
            raise LabFileError(
                spec.source,
                spec.line,
                1,
                f"spi {spec.spi_text}: esplab cannot decrypt or check {name}",
                valid=[*ENC_ALGOS, *AUTH_ALGOS, *AEAD_ALGOS],
            )
    try:
        spec.build()
    except EsplabError as exc:
        raise LabFileError(spec.source, spec.line, 1, f"spi {spec.spi_text}: {exc}") from exc


def parse_sa_text(text: str, source: str = "<sa-file>") -> SaFile:
    """Read SA text in any of the three forms (module docstring)."""
    first = next(
        (ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")),
        "",
    )
    if not first:
        raise LabFileError(
            source,
            1,
            1,
            "no SA in this file",
            valid="ip xfrm state output, ip xfrm state add lines, or Wireshark esp_sa records",
        )
    sa_file = _load_wireshark(text, source) if first.startswith('"') else _load_xfrm(text, source)
    if not sa_file.sas:
        raise LabFileError(
            source,
            1,
            1,
            "no ESP SA in this file",
            valid="ip xfrm state output, ip xfrm state add lines, or Wireshark esp_sa records",
        )
    return sa_file


def load_sa_file(path: str | Path) -> SaFile:
    """Read an SA file; LabFileError (file, line, why) for anything unusable in it,
    FileError for a file that cannot be read (esplab.files)."""
    from esplab.files import read_input

    name = str(path)
    # A regular file or a pipe (--sa-file <(ip xfrm state)), at most MAX_TEXT_BYTES.
    raw = read_input(path, "SA file", pipes=True)
    try:
        text = raw.decode()
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise LabFileError(name, line, 1, "not text (invalid UTF-8)") from exc
    return parse_sa_text(text, name)
