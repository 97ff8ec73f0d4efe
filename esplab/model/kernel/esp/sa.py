"""The software ESP security association and what it counts.

:class:`EspSA` holds everything one direction of ESP needs: SPI, mode, keyed suites,
tunnel endpoints, NAT-T ports, ESN, the anti-replay window, the output sequence
counter, lifetimes and statistics. It is built once; its derived per-SA values
(packed SPI and addresses, alignment, ICV length) are computed at construction,
so change algorithms or addresses by building a new SA.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from esplab.errors import InvalidValue
from esplab.model.kernel.esp.algos import (
    AeadSuite,
    AuthSuite,
    EncSuite,
    make_aead,
    make_auth,
    make_enc,
)
from esplab.model.kernel.esp.replay import ReplayWindow
from esplab.model.kernel.stack.ipident import IpIdents

__all__ = [
    "LIFETIME_INF",
    "DecryptResult",
    "DfPolicy",
    "EspSA",
    "EspStats",
    "Lifetime",
    "Mode",
    "UdpEncap",
]

Mode = Literal["transport", "tunnel"]
#: Outer IPv4 DF in tunnel mode: ``copy`` from the inner packet (kernel default),
#: ``clear`` (``flag nopmtudisc``), or ``set``.
DfPolicy = Literal["copy", "set", "clear"]

#: ``XFRM_INF``: no limit.
LIFETIME_INF = (1 << 64) - 1


@dataclass(frozen=True)
class UdpEncap:
    """ESP in UDP (RFC 3948; ``encap espinudp SPORT DPORT``)."""

    sport: int = 4500
    dport: int = 4500

    def __post_init__(self) -> None:
        for port in (self.sport, self.dport):
            if not 0 < port <= 0xFFFF:
                raise InvalidValue(f"NAT-T UDP port {port}", valid="1 to 65535")


@dataclass
class Lifetime:
    """Byte and packet limits (``limit byte-soft ... packet-hard ...``).

    Counted as the kernel counts ``curlft``: the length of the data ESP protects (the
    inner packet in tunnel mode, the upper-layer payload in transport mode) and one
    per packet, both checked *before* the packet is counted (``xfrm_state_check_expire``:
    a hard limit of N lets N packets through).
    """

    soft_bytes: int = LIFETIME_INF
    hard_bytes: int = LIFETIME_INF
    soft_packets: int = LIFETIME_INF
    hard_packets: int = LIFETIME_INF


@dataclass
class EspStats:
    """Counters of one SA, named after the kernel fields and MIBs they mirror."""

    packets: int = 0  # curlft.packets
    bytes: int = 0  # curlft.bytes
    replay: int = 0  # x->stats.replay (duplicates)
    replay_window: int = 0  # x->stats.replay_window (too old)
    integrity_failed: int = 0  # x->stats.integrity_failed
    seq_overflow: int = 0  # XfrmOutStateSeqError
    out_expired: int = 0  # XfrmOutStateExpired
    in_expired: int = 0  # XfrmInStateExpired
    in_seq_error: int = 0  # XfrmInStateSeqError (duplicate, too old, zero)
    in_proto_error: int = 0  # XfrmInStateProtoError (ICV, lengths, padding)
    in_hdr_error: int = 0  # XfrmInHdrError (no room for SPI and sequence number)
    in_mode_error: int = 0  # XfrmInStateModeError (tunnel payload is not IP)
    in_mismatch: int = 0  # XfrmInStateMismatch (encapsulation differs from the SA's)
    soft_expired: bool = False  # km.dying: the soft limit was reached (flagged once)
    hard_expired: bool = False  # km.state EXPIRED
    # xfrm_state_check_expire ran for a packet: it sets curlft.use_time on first use,
    # before the ICV is checked, so a packet that then fails sets it too [K].
    used: bool = False

    def mib(self) -> dict[str, int]:
        """This SA's share of ``/proc/net/xfrm_stat``, by counter name."""
        return {
            "XfrmInHdrError": self.in_hdr_error,
            "XfrmInStateProtoError": self.in_proto_error,
            "XfrmInStateModeError": self.in_mode_error,
            "XfrmInStateSeqError": self.in_seq_error,
            "XfrmInStateExpired": self.in_expired,
            "XfrmInStateMismatch": self.in_mismatch,
            "XfrmOutStateSeqError": self.seq_overflow,
            "XfrmOutStateExpired": self.out_expired,
        }


@dataclass(slots=True)
class DecryptResult:
    """What :func:`esplab.model.kernel.esp.core.decrypt` found.

    ``ok`` with ``packet`` the inner packet (tunnel) or the rebuilt IP packet
    (transport); otherwise ``reason`` is a stable code, ``detail`` says why in words
    and ``mib`` names the ``/proc/net/xfrm_stat`` counter the kernel bumps for it
    (None when the kernel counts nothing, or nothing in XFRM). The remaining fields
    hold whatever was parsed before the verdict.
    """

    ok: bool
    reason: str | None = None
    detail: str = ""
    mib: str | None = None
    packet: bytes = b""
    spi: int | None = None
    seq: int | None = None
    iv: bytes = b""
    icv: bytes = b""
    pad_len: int | None = None
    padding: bytes = b""
    padding_ok: bool | None = None
    next_header: int | None = None
    encap_ports: tuple[int, int] | None = None
    soft_expired: bool = False


@dataclass(eq=False)
class EspSA:
    """One ESP security association (one direction; RFC 4301 4.1).

    Exactly one of ``aead`` or ``enc`` is needed (the kernel's ESP needs a cipher);
    ``auth`` goes with ``enc`` and may be None (no integrity, RFC 4303 3.2).
    ``oseq`` is the last sequence number sent; the next packet takes ``oseq + 1``.
    ``replay_window`` defaults to 0 as in ``ip xfrm state add`` (no anti-replay
    check); ESN needs a window unless ``outbound`` (a state marked ``dir out``, which
    the kernel lets send 64-bit numbers with a window of 0: ``xfrm_init_replay``).

    Determinism: IVs come from ``iv_seq_source(seq) -> IV`` when set (the kernel's
    generators, :mod:`esplab.model.kernel.esp.ivgen`; the lab's SAs use them), else from
    ``iv_source(n) -> n bytes``, by default a ``random.Random`` seeded with the SPI;
    outer IPv4 identifications come from ``ident_source()`` when set, else as kernel
    ``ip_select_ident`` without a socket gives them: 0 for DF unless the skb has
    ``ignore_df``, else the next number of the (daddr, saddr, protocol) bucket of
    ``idents``, the node's (:mod:`esplab.model.kernel.stack.ipident`).

    Tunnel headers follow the kernel's ``xfrm4/6_tunnel_encap_add``: TTL/hop limit
    ``ttl``; DS field copied from the inner packet (zero with ``encap_dscp=False``,
    ``XFRM_SA_XFLAG_DONT_ENCAP_DSCP``) with the ECN rules of RFC 6040 (cleared with
    ``noecn``); IPv6 flow label copied from an IPv6 inner packet; DF per ``df``.
    On input, ``noecn`` and ``decap_dscp`` control how the outer DS field reaches
    the inner packet.

    ``tfcpad`` (``tfcpad LENGTH``, tunnel mode only as ``verify_newsa_info`` demands)
    pads each packet's payload with zeros up to that length, bounded by the route's
    MTU (:func:`esplab.model.kernel.esp.core.tfc_len`).

    ``strict_padding`` also rejects padding that is not 1, 2, 3, ... (RFC 4303 2.4
    default); the kernel only checks the pad length, and so does the default.
    ``esp_after_v6_fragment`` places transport-mode ESP after an IPv6 fragment
    header (RFC 4303 3.1.1 figure); False places it before, as Linux does.
    """

    spi: int
    mode: Mode = "transport"
    enc: EncSuite | None = None
    auth: AuthSuite | None = None
    aead: AeadSuite | None = None
    tunnel_src: str | None = None
    tunnel_dst: str | None = None
    esn: bool = False
    replay_window: int = 0
    outbound: bool = False
    encap: UdpEncap | None = None
    oseq: int = 0
    lifetime: Lifetime = field(default_factory=Lifetime)
    iv_source: Callable[[int], bytes] | None = None
    iv_seq_source: Callable[[int], bytes] | None = None
    ident_source: Callable[[], int] | None = None
    idents: IpIdents | None = field(default=None, repr=False)
    ttl: int = 64
    df: DfPolicy = "copy"
    encap_dscp: bool = True
    decap_dscp: bool = False
    noecn: bool = False
    tfcpad: int = 0
    strict_padding: bool = False
    esp_after_v6_fragment: bool = True
    stats: EspStats = field(default_factory=EspStats)
    replay: ReplayWindow = field(init=False)
    # Derived once (see the module docstring).
    spi_bytes: bytes = field(init=False, repr=False)
    iv_size: int = field(init=False, repr=False)
    align: int = field(init=False, repr=False)
    icv_len: int = field(init=False, repr=False)
    block_size: int = field(init=False, repr=False)
    seq_max: int = field(init=False, repr=False)
    outer_version: int = field(init=False, repr=False)
    outer_src: bytes = field(init=False, repr=False)
    outer_dst: bytes = field(init=False, repr=False)
    # Headers built for this SA that are the same every time (engine_path.build_skb's
    # skbs for a pinned sequence number, by packet and number), a few flows at a time.
    headers: dict[tuple[bytes, int], tuple[tuple[bytes, int, int], tuple[int, int, int]]] = field(
        init=False, repr=False, default_factory=dict, compare=False
    )

    def __post_init__(self) -> None:
        # RFC 4303 2.1 reserves SPI 0 for local use, but published vectors use it
        # (draft-mcgrew-gcm-test-01 case 4), so it is accepted.
        if not 0 <= self.spi <= 0xFFFFFFFF:
            raise InvalidValue(f"SPI {self.spi:#x}", valid="0x0 to 0xffffffff")
        if self.mode not in ("transport", "tunnel"):
            raise InvalidValue(
                f"unknown mode {self.mode!r}", valid=["transport", "tunnel"], value=self.mode
            )
        if self.df not in ("copy", "set", "clear"):
            raise InvalidValue(f"DF policy {self.df!r}", valid=["copy", "set", "clear"])
        if self.tfcpad and self.mode != "tunnel":
            # verify_newsa_info: XFRMA_TFCPAD outside tunnel mode is EINVAL [C].
            raise InvalidValue(
                f"TFC padding ({self.tfcpad}) in {self.mode} mode", valid="tunnel mode only"
            )
        if not 0 <= self.tfcpad <= 0xFFFFFFFF:
            raise InvalidValue(f"TFC padding {self.tfcpad}", valid="0 to 4294967295")
        if not 0 <= self.ttl <= 255:
            raise InvalidValue(f"TTL {self.ttl}", valid="0 to 255")
        if self.aead is not None and (self.enc is not None or self.auth is not None):
            raise InvalidValue(
                "an SA with aead takes no enc or auth", hint="use either aead, or enc (+ auth)"
            )
        if self.aead is None and self.enc is None:
            raise InvalidValue(
                "an ESP SA needs an encryption algorithm",
                hint="use ecb(cipher_null) for integrity only",
            )
        self.replay = ReplayWindow(self.replay_window, self.esn, self.outbound)
        self.seq_max = (1 << 64) - 1 if self.esn else 0xFFFFFFFF
        if not 0 <= self.oseq <= self.seq_max:
            raise InvalidValue(
                f"output sequence number {self.oseq:#x}", valid=f"0 to {self.seq_max:#x}"
            )
        self.spi_bytes = self.spi.to_bytes(4, "big")
        if self.aead is not None:
            suite: EncSuite | AeadSuite = self.aead
            self.icv_len = self.aead.icv_len
        else:
            assert self.enc is not None
            suite = self.enc
            self.icv_len = self.auth.icv_len if self.auth is not None else 0
        self.iv_size, self.align, self.block_size = suite.iv_size, suite.align, suite.block_size
        if self.iv_source is None:
            self.iv_source = random.Random(self.spi).randbytes
        self.outer_version, self.outer_src, self.outer_dst = 0, b"", b""
        if self.mode == "tunnel":
            self._set_tunnel()

    def _set_tunnel(self) -> None:
        if self.tunnel_src is None or self.tunnel_dst is None:
            raise InvalidValue("tunnel mode needs tunnel_src and tunnel_dst")
        try:
            src = ipaddress.ip_address(self.tunnel_src)
            dst = ipaddress.ip_address(self.tunnel_dst)
        except ValueError as exc:
            raise InvalidValue(str(exc), valid="IPv4 or IPv6 addresses") from exc
        if src.version != dst.version:
            raise InvalidValue(
                f"tunnel endpoints {src} and {dst} differ in family",
                hint="the outer header has one family; the inner packet may have the other",
            )
        self.outer_version, self.outer_src, self.outer_dst = src.version, src.packed, dst.packed

    @classmethod
    def build(
        cls,
        spi: int,
        *,
        enc: str | None = None,
        enc_key: bytes = b"",
        auth: str | None = None,
        auth_key: bytes = b"",
        auth_trunc: int | None = None,
        aead: str | None = None,
        aead_key: bytes = b"",
        aead_icv: int | None = None,
        **kwargs: Any,
    ) -> EspSA:
        """An SA from kernel algorithm names and keys (``ip xfrm state add`` style)."""
        return cls(
            spi,
            enc=make_enc(enc, enc_key) if enc is not None else None,
            auth=make_auth(auth, auth_key, auth_trunc) if auth is not None else None,
            aead=make_aead(aead, aead_key, aead_icv) if aead is not None else None,
            **kwargs,
        )

    def next_ident(self, df: bool, proto: int = 50, ignore_df: bool = True) -> int:
        """Identification for the next outer IPv4 header (``proto``: the outer
        header's protocol; ``ignore_df``: the skb's, :func:`esplab.model.kernel.stack.ipident.
        ignore_df_for`): ``ip_select_ident`` without a socket, from the node's
        ``idents`` (:class:`~esplab.model.kernel.stack.ipident.IpIdents`; the SA's own, keyed by
        its SPI, when it has none)."""
        if self.ident_source is not None:
            return self.ident_source() & 0xFFFF
        if self.idents is None:
            self.idents = IpIdents.for_node(f"spi {self.spi:#x}", "")
        return self.idents.ident(self.outer_src, self.outer_dst, proto, df, ignore_df)
