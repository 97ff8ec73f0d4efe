"""Software ESP (RFC 4303) on bytes: the reference every other datapath is measured
against.

:func:`encrypt` turns an IPv4/IPv6 packet into an ESP packet (transport or tunnel
mode, optionally in UDP per RFC 3948); :func:`decrypt` reverses it with the checks
and counters of the Linux receive path (``xfrm_input`` + ``esp_input``): replay
check, lifetime, ICV before decryption, trailer. Both work on ``bytes``: no scapy
objects, per-SA precomputation in :class:`~esplab.model.kernel.esp.sa.EspSA`.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from types import MappingProxyType

from esplab.errors import DecodeError, IntegrityError, InvalidValue, KernelError
from esplab.model.kernel.esp.ip import (
    IPPROTO_ESP,
    IPPROTO_IPIP,
    IPPROTO_IPV6,
    IPPROTO_NONE,
    IPPROTO_UDP,
    inner_set_ce_and_dscp,
    ipv4_fix,
    parse_ip,
    trim_to_ip_length,
)
from esplab.model.kernel.esp.layout import pad_len
from esplab.model.kernel.esp.replay import ReplayVerdict
from esplab.model.kernel.esp.sa import (
    LIFETIME_INF,
    DecryptResult,
    DfPolicy,
    EspSA,
    EspStats,
    Lifetime,
    Mode,
    UdpEncap,
)
from esplab.model.kernel.esp.tfc import tfc_len
from esplab.model.kernel.esp.tunnel import OUTPUT, check_size, outer_df, tunnel_header, udp6_fill
from esplab.model.kernel.stack.ipident import ignore_df_for

__all__ = [
    "DECRYPT_REASONS",
    "LIFETIME_INF",
    "DecryptResult",
    "DfPolicy",
    "EspSA",
    "EspStats",
    "Lifetime",
    "Mode",
    "UdpEncap",
    "check_pins",
    "check_seq",
    "decrypt",
    "encrypt",
    "input_expiry",
    "take_seq",
]

#: Self-describing padding, RFC 4303 2.4: 1, 2, 3, ...
_PAD = bytes(range(1, 256))
_U32 = 0xFFFFFFFF

#: Failure codes of :func:`decrypt` and the ``/proc/net/xfrm_stat`` counter the kernel
#: bumps for each (None: not an XFRM counter, or the packet never reaches XFRM).
DECRYPT_REASONS: Mapping[str, str | None] = MappingProxyType(
    {
        "malformed": None,  # outer IP header unusable (dropped by ip_rcv)
        "fragment": None,  # reassemble first (RFC 4303 3.4.1)
        "not-esp": None,  # neither ESP nor UDP
        "keepalive": None,  # NAT-T keepalive, RFC 3948 2.3
        "non-esp": None,  # non-ESP marker (IKE), RFC 3948 2.2
        "encap-mismatch": "XfrmInStateMismatch",
        "wrong-spi": None,  # not this SA's packet; the caller's lookup is XfrmInNoStates
        "truncated": "XfrmInStateProtoError",  # XfrmInHdrError below 8 bytes of ESP
        "seq-zero": "XfrmInStateSeqError",
        "replay": "XfrmInStateSeqError",
        "too-old": "XfrmInStateSeqError",
        "expired": "XfrmInStateExpired",
        "auth-failed": "XfrmInStateProtoError",
        "bad-length": "XfrmInStateProtoError",
        "bad-padding": "XfrmInStateProtoError",
        "dummy": None,  # next header 59: a TFC dummy packet, discarded (RFC 4303 2.6)
        "mode-error": "XfrmInStateModeError",
    }
)


# --------------------------------------------------------------------------- output


def check_seq(sa: EspSA, seq: int) -> None:
    """A pinned sequence number must lie in the SA's sequence space (32 bits, or 64
    with ESN): InvalidValue otherwise."""
    if not 0 <= seq <= sa.seq_max:
        raise InvalidValue(f"sequence number {seq:#x}", valid=f"0 to {sa.seq_max:#x}")


def take_seq(sa: EspSA, seq: int | None, nbytes: int) -> int:
    """Lifetime and sequence-number checks in the order of ``xfrm_output_one``."""
    st, lt = sa.stats, sa.lifetime
    if st.bytes >= lt.hard_bytes or st.packets >= lt.hard_packets:
        st.hard_expired = True
        st.out_expired += 1
        raise KernelError("EINVAL", "XfrmOutStateExpired: SA hard lifetime reached", prefix=OUTPUT)
    if not st.soft_expired and (st.bytes >= lt.soft_bytes or st.packets >= lt.soft_packets):
        st.soft_expired = True
    if seq is None:
        if sa.oseq >= sa.seq_max:
            # Kernel xfrm_replay_overflow*: the counter stays, -EOVERFLOW, no wrap.
            st.seq_overflow += 1
            raise KernelError(
                "EOVERFLOW",
                f"XfrmOutStateSeqError: sequence numbers exhausted at {sa.oseq:#x}"
                + ("" if sa.esn else " without ESN"),
                prefix=OUTPUT,
            )
        sa.oseq += 1
        seq = sa.oseq
    st.packets += 1
    st.bytes += nbytes
    return seq


def _esp(sa: EspSA, payload: bytes, nh: int, seq: int, iv: bytes | None, tfclen: int = 0) -> bytes:
    """SPI || SEQ || IV || E(payload || TFC || pad || pad length || next header) || ICV.
    TFC padding is ``tfclen`` zero bytes before the padding (``esp_output_fill_trailer``:
    ``memset(tail, 0, tfclen)``, then 1, 2, 3, ...) [C]."""
    if iv is None:
        if sa.iv_seq_source is not None:
            iv = sa.iv_seq_source(seq)  # the kernel's seqiv/echainiv (esp_ivgen)
        else:
            assert sa.iv_source is not None
            iv = sa.iv_source(sa.iv_size) if sa.iv_size else b""
    if tfclen:
        payload += bytes(tfclen)
    plen = pad_len(len(payload), sa.align)
    plain = payload + _PAD[:plen] + bytes((plen, nh))
    head = sa.spi_bytes + (seq & _U32).to_bytes(4, "big")
    aead = sa.aead
    if aead is not None:
        # RFC 4106 5: AAD = SPI || SEQ, or SPI || SEQ-hi || SEQ-lo with ESN.
        aad = sa.spi_bytes + seq.to_bytes(8, "big") if sa.esn else head
        return head + iv + aead.seal(iv, plain, aad)
    assert sa.enc is not None
    esp = head + iv + sa.enc.encrypt(iv, plain)
    if sa.auth is not None and sa.icv_len:
        # RFC 4303 2.2.1: with ESN the high half is appended for the ICV only.
        esp += sa.auth.icv(esp, (seq >> 32).to_bytes(4, "big") if sa.esn else b"")
    return esp


def check_pins(sa: EspSA, seq: int | None, iv: bytes | None) -> None:
    """Refuse a pinned sequence number or IV that ``sa`` cannot take, before anything
    is counted or consumed (:class:`InvalidValue`)."""
    if seq is not None:
        check_seq(sa, seq)
    if iv is not None and len(iv) != sa.iv_size:
        raise InvalidValue(f"IV of {len(iv)} bytes", valid=f"{sa.iv_size} bytes for this SA")


def encrypt(
    sa: EspSA,
    packet: bytes,
    *,
    seq: int | None = None,
    iv: bytes | None = None,
    ident: int | None = None,
    mtu: int | None = None,
    ignore_df: bool | None = None,
) -> bytes:
    """ESP-protect one IPv4 or IPv6 packet.

    ``seq``: the (64-bit with ESN) sequence number to use, leaving the SA's counter
    alone; by default the counter is pre-incremented (the first packet is 1).
    ``iv``: the IV bytes, by default from ``sa.iv_source``. ``ident``: the outer IPv4
    identification in tunnel mode, by default ``ip_select_ident``'s with ``ignore_df``
    (the skb's; by default a local socket's for the inner protocol:
    :func:`esplab.model.kernel.stack.ipident.ignore_df_for`). ``mtu``: the route's MTU, which
    bounds TFC padding
    (:func:`tfc_len`; None: only ``sa.tfcpad`` does).

    Raises :class:`DecodeError` for a packet that is not IP, :class:`InvalidValue` for
    a bad ``seq``/``iv`` or a fragment in transport mode, and :class:`KernelError`
    when the kernel would refuse: ``EOVERFLOW`` when the sequence numbers are
    exhausted (counted as ``XfrmOutStateSeqError``), ``EINVAL`` after the hard
    lifetime (``XfrmOutStateExpired``).
    """
    check_pins(sa, seq, iv)
    tunnel = sa.mode == "tunnel"
    info = parse_ip(packet, esp_split=not tunnel, after_fragment=sa.esp_after_v6_fragment)
    if tunnel:
        payload = packet if info.end == len(packet) else packet[: info.end]
        nh = IPPROTO_IPIP if info.version == 4 else IPPROTO_IPV6
    else:
        if info.fragment:
            raise InvalidValue(
                "transport-mode ESP of a fragment",
                valid="whole datagrams (RFC 4303 3.3.4); use tunnel mode for fragments",
            )
        payload = packet[info.hlen : info.end]
        nh = info.proto
    tfclen = tfc_len(sa, len(payload), mtu)
    check_size(sa, info.version, info.hlen, len(payload) + tfclen, tunnel)
    # xfrm_output_one counts the payload before esp_output adds TFC padding [C].
    seq = take_seq(sa, seq, len(payload))
    body = _esp(sa, payload, nh, seq, iv, tfclen)
    encap = sa.encap
    proto = IPPROTO_ESP
    if encap is not None:
        # RFC 3948 2.1: UDP header in front of ESP; checksum 0 over IPv4.
        proto = IPPROTO_UDP
        body = struct.pack("!HHHH", encap.sport, encap.dport, 8 + len(body), 0) + body
    if tunnel:
        if ident is None and sa.outer_version == 4:
            # ip_select_ident in xfrm4_tunnel_encap_add, no socket
            # (esplab.model.kernel.stack.ipident):
            # the skb's ignore_df is its sender's (a local non-TCP socket sets it).
            if ignore_df is None:
                ignore_df = ignore_df_for(info.proto, forwarded=False)
            df = outer_df(sa, info.version, info.df, len(payload))
            ident = sa.next_ident(df, proto, ignore_df)
        return tunnel_header(
            sa, packet, info.version, info.dsfield, info.df, len(payload), proto, body, ident
        )
    if info.version == 4:
        return ipv4_fix(packet[: info.hlen], info.hlen + len(body), proto) + body
    head = bytearray(packet[: info.hlen])
    head[info.nh_off] = proto
    head[4:6] = (info.hlen - 40 + len(body)).to_bytes(2, "big")
    if encap is not None:
        body = udp6_fill(bytes(head[8:24]), bytes(head[24:40]), body)
    return bytes(head) + body


# --------------------------------------------------------------------------- input


def _icv_values(sa: EspSA, covered: bytes, icv: bytes, seq_hi: bytes) -> str:
    """The check's values for an ICV that failed: what the packet carries, and what this
    SA computes over the same bytes (RFC 4303 3.4.4.1; ESN high bits appended, 2.2.1).
    An AEAD tag has no separate value to show: only what was received."""
    esn = " + ESN high bits" if seq_hi else ""
    if sa.aead is not None:
        return f": received tag {icv.hex()} ({sa.aead.name}, {len(icv)} bytes{esn})"
    assert sa.auth is not None
    mine = sa.auth.icv(covered, seq_hi)
    return (
        f": received {icv.hex()}, this SA computes {mine.hex()} ({sa.auth.name}, "
        f"{len(icv)}-byte ICV over {len(covered)} bytes{esn})"
    )


def _failed(res: DecryptResult, reason: str, detail: str) -> DecryptResult:
    res.reason, res.detail, res.mib = reason, detail, DECRYPT_REASONS[reason]
    return res


def decrypt(sa: EspSA, packet: bytes, *, strict: bool = False) -> DecryptResult:
    """Check and decrypt one ESP packet (IPv4/IPv6, plain or UDP-encapsulated).

    Never changes ``packet``; never raises except :class:`IntegrityError` for an ICV
    that does not verify when ``strict`` is true. Order (kernel ``xfrm_input``):
    header, replay check, lifetime, ICV, decryption, trailer; only then the replay
    window advances and the lifetime counts the packet.
    """
    st = sa.stats
    res = DecryptResult(False)
    try:
        info = parse_ip(packet)
    except DecodeError as exc:
        return _failed(res, "malformed", str(exc))
    if info.fragment:
        return _failed(res, "fragment", "an IP fragment: reassemble first (RFC 4303 3.4.1)")
    off, end = info.hlen, info.end
    if info.proto == IPPROTO_UDP:
        if end - off < 8:
            return _failed(res, "malformed", f"UDP header truncated: {end - off} bytes")
        res.encap_ports = struct.unpack_from("!HH", packet, off)
        off += 8
        if end - off == 1 and packet[off] == 0xFF:
            return _failed(res, "keepalive", "NAT-keepalive (RFC 3948 2.3)")
        if packet[off : off + 4] == b"\x00\x00\x00\x00":
            return _failed(res, "non-esp", "non-ESP marker: IKE (RFC 3948 2.2)")
        if sa.encap is None:
            st.in_mismatch += 1
            return _failed(res, "encap-mismatch", "ESP in UDP for an SA without encap")
    elif info.proto == IPPROTO_ESP:
        if sa.encap is not None:
            st.in_mismatch += 1
            return _failed(res, "encap-mismatch", "plain ESP for an SA with UDP encap")
    else:
        return _failed(res, "not-esp", f"IP protocol {info.proto}: neither ESP (50) nor UDP (17)")
    esp = packet[off:end]
    if len(esp) < 8:
        st.in_hdr_error += 1
        _failed(res, "truncated", f"{len(esp)} bytes: no room for SPI and sequence number")
        res.mib = "XfrmInHdrError"
        return res
    spi, seq_lo = struct.unpack_from("!II", esp)
    res.spi = spi
    if spi != sa.spi:
        res.seq = seq_lo
        return _failed(res, "wrong-spi", f"SPI {spi:#010x}, SA has {sa.spi:#010x}")
    replay = sa.replay
    seq = res.seq = replay.infer(seq_lo)
    verdict = replay.check(seq)
    if verdict is not ReplayVerdict.OK:
        st.in_seq_error += 1
        if verdict is ReplayVerdict.DUPLICATE:
            st.replay += 1
            return _failed(res, "replay", f"sequence number {seq:#x} already received")
        if verdict is ReplayVerdict.TOO_OLD:
            st.replay_window += 1
            return _failed(res, "too-old", f"sequence number {seq:#x} left of the window")
        return _failed(res, "seq-zero", "sequence number 0 is never sent (RFC 4303 3.3.3)")
    expiry = input_expiry(sa)
    if expiry == "hard":
        return _failed(res, "expired", "SA hard lifetime reached")
    sa.stats.used = True
    res.soft_expired = expiry == "soft"
    return _open(sa, res, packet, info.version, info.hlen, info.nh_off, info.dsfield, esp, strict)


def input_expiry(sa: EspSA) -> str | None:
    """``xfrm_state_check_expire`` on input, after the replay check: ``"hard"`` (counted
    in XfrmInStateExpired) when the SA's hard lifetime is reached, ``"soft"`` when its
    soft one is crossed now, else None [C]."""
    st, lt = sa.stats, sa.lifetime
    if st.bytes >= lt.hard_bytes or st.packets >= lt.hard_packets:
        st.hard_expired = True
        st.in_expired += 1
        return "hard"
    if not st.soft_expired and (st.bytes >= lt.soft_bytes or st.packets >= lt.soft_packets):
        st.soft_expired = True
        return "soft"
    return None


def _open(
    sa: EspSA,
    res: DecryptResult,
    packet: bytes,
    version: int,
    hlen: int,
    nh_off: int,
    outer_ds: int,
    esp: bytes,
    strict: bool,
) -> DecryptResult:
    """ICV, decryption, trailer and decapsulation (kernel ``esp_input`` onwards)."""
    st = sa.stats
    seq = res.seq
    assert seq is not None
    ivs, icv_len = sa.iv_size, sa.icv_len
    ct_end = len(esp) - icv_len
    if ct_end - 8 - ivs < 2:
        st.in_proto_error += 1
        return _failed(
            res, "truncated", f"{len(esp)} bytes of ESP: no room for IV, ICV and trailer"
        )
    iv = res.iv = esp[8 : 8 + ivs]
    icv = res.icv = esp[ct_end:]
    seq_hi = (seq >> 32).to_bytes(4, "big") if sa.esn else b""
    plain: bytes | None
    if sa.aead is not None:
        aad = esp[:4] + seq_hi + esp[4:8] if sa.esn else esp[:8]
        plain = sa.aead.open(iv, esp[8 + ivs :], aad)
    elif sa.auth is not None and icv_len and not sa.auth.verify(esp[:ct_end], icv, seq_hi):
        plain = None
    else:
        plain = b""
    if plain is None:
        # RFC 4303 3.4.4.1: the ICV is checked before decryption; kernel -EBADMSG.
        st.integrity_failed += 1
        st.in_proto_error += 1
        what = f"ICV does not verify (SPI {sa.spi:#010x}, seq {seq:#x})"
        what += _icv_values(sa, esp[:ct_end], icv, seq_hi)
        if strict:
            raise IntegrityError(what, hint="check keys, ICV length and ESN")
        return _failed(res, "auth-failed", what)
    if sa.aead is None:
        assert sa.enc is not None
        ct = esp[8 + ivs : ct_end]
        if len(ct) % sa.block_size:
            st.in_proto_error += 1
            return _failed(
                res,
                "bad-length",
                f"{len(ct)} bytes of ciphertext: not whole {sa.block_size}-byte blocks",
            )
        plain = sa.enc.decrypt(iv, ct)
    pad_len = res.pad_len = plain[-2]
    nh = res.next_header = plain[-1]
    if pad_len + 2 >= len(plain):
        # Kernel esp_remove_trailer: "ipsec esp packet is garbage".
        st.in_proto_error += 1
        return _failed(
            res, "bad-padding", f"pad length {pad_len} leaves no payload in {len(plain)} bytes"
        )
    padding = res.padding = plain[-2 - pad_len : -2]
    res.padding_ok = padding == _PAD[:pad_len]
    if sa.strict_padding and not res.padding_ok:
        st.in_proto_error += 1
        return _failed(res, "bad-padding", "padding is not 1, 2, 3, ... (RFC 4303 2.4)")
    data = plain[: -2 - pad_len]
    sa.replay.advance(seq)
    st.packets += 1
    st.bytes += len(data)
    if nh == IPPROTO_NONE:
        return _failed(res, "dummy", "next header 59: dummy packet (RFC 4303 2.6)")
    if sa.mode == "tunnel":
        # Kernel xfrm4/6_remove_tunnel_encap: the next header picks the inner family.
        version = data[0] >> 4
        if not (
            (nh == IPPROTO_IPIP and version == 4 and len(data) >= 20)
            or (nh == IPPROTO_IPV6 and version == 6 and len(data) >= 40)
        ):
            st.in_mode_error += 1
            return _failed(
                res, "mode-error", f"tunnel payload is not the IP packet next header {nh} announces"
            )
        data = trim_to_ip_length(data)  # TFC padding goes in ip_rcv_core / ipv6_rcv
        if sa.decap_dscp or (outer_ds & 3 == 3 and not sa.noecn):  # outer CE
            data = inner_set_ce_and_dscp(data, outer_ds, ecn=not sa.noecn, dscp=sa.decap_dscp)
        res.packet = data
    elif version == 4:
        res.packet = ipv4_fix(packet[:hlen], hlen + len(data), nh) + data
    else:
        head = bytearray(packet[:hlen])
        head[nh_off] = nh
        head[4:6] = (hlen - 40 + len(data)).to_bytes(2, "big")
        res.packet = bytes(head) + data
    res.ok = True
    return res
