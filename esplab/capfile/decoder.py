"""The decode pipeline: one frame in, one verdict out, counters per SA and overall.

For every frame: find the ESP (``linklayer``), find its SA by SPI (the
destination, then the source address, break ties between SAs sharing an SPI;
addresses are not required to match, since captures are often taken behind
NAT), infer the full sequence number, check the ICV, decrypt, check the
trailer (pad length, the 1, 2, 3... padding of RFC 4303 2.4, next header),
summarise the inner packet and account the sequence number (``sequence``).

The ICV is checked for every packet, replays included; whether the kernel would
have dropped a packet for its sequence number is reported beside it, not
instead of it. Crypto runs on the software ESP core's keyed suites (one
:class:`~esplab.model.kernel.esp.sa.EspSA` per SA); per packet there are only ``bytes``
slices and small tuples, no scapy objects.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from ipaddress import ip_address

from esplab.capfile.inner import inner_ip, l4_ports, rebuild
from esplab.capfile.linklayer import (
    CUT,
    LINKTYPE_ETHERNET,
    LINKTYPE_IPV4,
    LINKTYPE_RAW,
    NATT_PORT,
    TRUNCATED,
    Located,
    ip_offset,
    locate_esp,
)
from esplab.capfile.opener import BAD, GOOD, NONE, SHORT, make_opener
from esplab.capfile.records import PacketRecord, SaCounters, SaResult, Summary
from esplab.capfile.safile import SaSpec
from esplab.capfile.sequence import SeqTracker

__all__ = ["CUT_ICV", "ESN_SYNC_TRIES", "MAX_UNKNOWN_SPIS", "Decoder"]

#: The ICV verdict of a packet cut by the snaplen: it was not there to check.
CUT_ICV = "cut"
#: A cut frame is padded to its original length, at most this much, to find its headers.
_CUT_PAD_MAX = 0x20000


#: ESN SAs: packets tried against the neighbouring high halves before inference alone.
ESN_SYNC_TRIES = 8

#: The padding RFC 4303 2.4 expects, by length: 1, 2, 3..
_PADS = tuple(bytes(range(1, n + 1)) for n in range(256))
_HH = struct.Struct("!HH")
_II = struct.Struct("!II")
#: An IPv4 header: version/IHL, total length, flags/fragment offset, protocol, addresses.
_V4 = struct.Struct("!BxHxxHxB2x4s4s")


class _SaRun:
    """One SA at run time: spec, opener, tracker, counters."""

    __slots__ = (
        "counters",
        "dst",
        "encap",
        "esn",
        "index",
        "mine",
        "opener",
        "spec",
        "src",
        "sync_tries",
        "tracker",
        "tunnel",
    )

    def __init__(self, spec: SaSpec) -> None:
        self.spec = spec
        self.index = spec.index
        self.opener = make_opener(spec)
        self.tracker = SeqTracker(spec.esn, spec.replay_window, spec.seq_hi)
        self.counters = SaCounters()
        self.mine = True  # this decoder's stripe checks this SA
        # Tunnel mode: True/False, None when the SA file does not say (by next header).
        self.tunnel = None if spec.mode is None else spec.mode == "tunnel"
        self.esn = spec.esn
        # ESN: tries left to find the high half of the first packets (see _esn_sync).
        self.sync_tries = ESN_SYNC_TRIES if spec.esn else 0
        # UDP encapsulation: True/False, None when the SA file does not say (Wireshark
        # esp_sa: any packet's encapsulation is the SA's, as Wireshark decrypts it).
        self.encap = None if not spec.encap_known else spec.encap is not None
        self.src = _packed(spec.src)
        self.dst = _packed(spec.dst)


def _packed(addr: str | None) -> bytes | None:
    return None if addr is None else ip_address(addr).packed


#: Unknown SPIs remembered one by one; more are counted together under -1.
MAX_UNKNOWN_SPIS = 256


class Decoder:
    """Feed frames in capture order with :meth:`feed`; call :meth:`finish` at the end.

    With ``keep_inner`` each authenticated packet carries its decrypted IP packet
    (``--out``); with ``keep_esp`` every record keeps its ESP bytes; with
    ``sniff_udp`` UDP on any port carrying a known SPI is taken as ESP (both for
    diagnose).

    ``stripe``/``stripes`` split the work between processes that all read the same
    capture: this decoder checks only the packets of SAs whose index modulo
    ``stripes`` is ``stripe``, and stripe 0 also reports the packets that belong to no
    SA. Frame, ESP and skip counts cover every frame in each stripe.

    ``wire_len`` gives the original length of the frame being fed (the record's, as
    :attr:`~esplab.pcapio.FrameReader.wire_len` keeps it); it is asked only when the
    IP header claims more bytes than the frame holds. A frame
    the snaplen cut (captured < original) whose headers up to the ESP SPI and
    sequence number were kept is an ESP packet with status ``truncated``.
    """

    def __init__(
        self,
        sas: Sequence[SaSpec],
        *,
        keep_inner: bool = False,
        keep_esp: bool = False,
        sniff_udp: bool = False,
        stripe: int = 0,
        stripes: int = 1,
        wire_len: Callable[[], int] | None = None,
    ) -> None:
        self.wire_len = wire_len
        self.keep_inner = keep_inner
        self.keep_esp = keep_esp
        self.runs = [_SaRun(spec) for spec in sas]
        self._by_spi: dict[int, list[_SaRun]] = {}
        self._single: dict[int, _SaRun] = {}
        self._wildcards: list[_SaRun] = []
        for run in self.runs:
            if run.spec.spi is None:
                self._wildcards.append(run)
            else:
                self._by_spi.setdefault(run.spec.spi, []).append(run)
        self._single = {spi: runs[0] for spi, runs in self._by_spi.items() if len(runs) == 1}
        self.stripe, self.stripes = stripe, stripes
        for run in self.runs:
            run.mine = run.index % stripes == stripe
        self._orphans = stripe == 0  # packets of no SA go to stripe 0
        self.encap_ports = frozenset(
            {NATT_PORT} | {p for s in sas if s.encap is not None for p in s.encap}
        )
        # UDP on any port that starts with a known SPI counts as ESP (diagnose).
        self.sniff_spis: frozenset[int] = frozenset(self._by_spi) if sniff_udp else frozenset()
        self.summary = Summary()
        self._status = self.summary.by_status
        self._skip = self.summary.skipped

    def finish(self) -> Summary:
        """The summary with every SA's totals (call once, after the last frame)."""
        self.summary.sas = [SaResult(r.spec, r.counters, r.tracker.stats) for r in self.runs]
        if self.summary.ok:
            self.summary.by_status["ok"] = self.summary.ok
        return self.summary

    # -- lookup ----------------------------------------------------------------

    def _find(self, spi: int, src: bytes, dst: bytes) -> _SaRun | None:
        runs = self._by_spi.get(spi)
        if runs is not None:
            if len(runs) == 1:
                return runs[0]
            return max(runs, key=lambda r: (r.dst == dst) * 2 + (r.src == src))
        for run in self._wildcards:
            if (run.dst is None or run.dst == dst) and (run.src is None or run.src == src):
                return run
        return None

    # -- per frame ---------------------------------------------------------------

    def _skip_frame(self, reason: str, linktype: int) -> None:
        self._skip[reason] = self._skip.get(reason, 0) + 1
        if reason == "link-type":
            lt = self.summary.linktypes_skipped
            lt[linktype] = lt.get(linktype, 0) + 1

    def feed(
        self, frame: int, iface: int, linktype: int, ts_ns: int, data: bytes
    ) -> PacketRecord | None:
        """Decode one frame; None when it holds no ESP (then it is counted as skipped)."""
        self.summary.frames += 1
        # Fast path: IPv4 without options behind plain Ethernet, or raw.
        off: int | str
        if linktype == LINKTYPE_ETHERNET and data[12:14] == b"\x08\x00":
            off = 14
        elif linktype in (LINKTYPE_RAW, LINKTYPE_IPV4):
            off = 0
        else:
            off = ip_offset(linktype, data)
        n = len(data)
        if type(off) is int and n >= off + 20 and data[off] == 0x45:
            _, total, frag, proto, src, dst = _V4.unpack_from(data, off)
            end = off + total
            if end > n or total < 20 or frag & 0x3FFF:  # fragments: the long way
                return self._general(frame, iface, ts_ns, data, linktype)
            if proto == 50:
                return self._esp(
                    frame, iface, ts_ns, data, 4, off, 20, 9, src, dst, data[off + 20 : end], None
                )
            if proto == 17 and total >= 28:
                ports = _HH.unpack_from(data, off + 20)
                body = data[off + 28 : end]
                if (
                    ports[0] in self.encap_ports
                    or ports[1] in self.encap_ports
                    or (self.sniff_spis and int.from_bytes(body[:4], "big") in self.sniff_spis)
                ):
                    if body == b"\xff":
                        self._skip_frame("keepalive", linktype)
                        return None
                    if body[:4] == b"\x00\x00\x00\x00":
                        self._skip_frame("ike", linktype)
                        return None
                    return self._esp(
                        frame, iface, ts_ns, data, 4, off, 20, 9, src, dst, body, ports
                    )
            self._skip_frame("other-ip", linktype)
            return None
        return self._general(frame, iface, ts_ns, data, linktype)

    def _general(
        self, frame: int, iface: int, ts_ns: int, data: bytes, linktype: int
    ) -> PacketRecord | None:
        loc = locate_esp(linktype, data, self.encap_ports, self.sniff_spis)
        if loc.skip in ("malformed-ip", TRUNCATED) and self.wire_len is not None:
            wire = self.wire_len()
            if wire > len(data):
                return self._cut(frame, iface, ts_ns, data, linktype, wire, loc)
        if loc.skip is not None:
            self._skip_frame(loc.skip, linktype)
            return None
        return self._esp(
            frame,
            iface,
            ts_ns,
            data,
            loc.version,
            loc.ip,
            loc.hlen,
            loc.nh_off,
            loc.src,
            loc.dst,
            loc.esp,
            loc.encap,
        )

    def _cut(
        self,
        frame: int,
        iface: int,
        ts_ns: int,
        data: bytes,
        linktype: int,
        wire: int,
        first: Located,
    ) -> PacketRecord | None:
        """A frame the snaplen cut: its headers are found as if the missing bytes were
        there (zeros); it is ESP when the bytes up to its SPI and sequence number were
        captured. Nothing after them can be checked."""
        n = len(data)
        padded = data + bytes(min(wire, _CUT_PAD_MAX) - n) if wire > n else data
        loc = locate_esp(linktype, padded, self.encap_ports, self.sniff_spis)
        if loc.skip is not None:
            self._skip_frame(_cut_skip(first, loc, n), linktype)
            return None
        start = loc.ip + loc.hlen + (8 if loc.encap is not None else 0)
        if start + 8 > n:
            self._skip_frame(CUT, linktype)
            return None
        summary = self.summary
        summary.esp += 1
        spi, lo = _II.unpack_from(data, start)
        run = self._single.get(spi) or self._find(spi, loc.src, loc.dst)
        if run is None:
            if not self._orphans:
                return None
            unknown = summary.unknown_spi
            key = spi if spi in unknown or len(unknown) < MAX_UNKNOWN_SPIS else -1
            unknown[key] = unknown.get(key, 0) + 1
            seq, sa = lo, 0
        elif not run.mine:
            return None
        else:
            seq, sa = (run.tracker.infer(lo) if run.esn else lo), run.index
            c = run.counters
            if not c.packets:
                c.first_frame = frame
            c.packets += 1
            c.last_frame = frame
            c.truncated += 1
        rec = PacketRecord(
            frame, ts_ns, iface, loc.src, loc.dst, loc.encap, spi, seq, sa, "truncated", CUT_ICV
        )
        if run is not None:
            rec.events, rec.gap = run.tracker.observe(seq, frame, False)
        rec.detail = f"cut by the snaplen: {n} of {wire} bytes captured"
        if self.keep_esp:
            rec.esp = data[start:]
        status = self._status
        status["truncated"] = status.get("truncated", 0) + 1
        summary.cut_captured = max(summary.cut_captured, n)
        summary.cut_wire = max(summary.cut_wire, wire)
        return rec

    def _esp(
        self,
        frame: int,
        iface: int,
        ts_ns: int,
        data: bytes,
        version: int,
        ip: int,
        hlen: int,
        nh_off: int,
        src: bytes,
        dst: bytes,
        esp: bytes,
        encap: tuple[int, int] | None,
    ) -> PacketRecord | None:
        summary = self.summary
        summary.esp += 1
        status = self._status
        if len(esp) < 8:
            if not self._orphans:
                return None
            rec = PacketRecord(frame, ts_ns, iface, src, dst, encap, -1, -1, 0, "malformed", SHORT)
            rec.detail = f"{len(esp)} bytes of ESP: no room for SPI and sequence number"
            status["malformed"] = status.get("malformed", 0) + 1
            if self.keep_esp:
                rec.esp = esp
            return rec
        spi, lo = _II.unpack_from(esp)
        run = self._single.get(spi) or self._find(spi, src, dst)
        if run is None:
            if not self._orphans:
                return None
            rec = PacketRecord(frame, ts_ns, iface, src, dst, encap, spi, lo, 0, "no-sa", NONE)
            status["no-sa"] = status.get("no-sa", 0) + 1
            unknown = summary.unknown_spi
            key = spi if spi in unknown or len(unknown) < MAX_UNKNOWN_SPIS else -1
            unknown[key] = unknown.get(key, 0) + 1
            if self.keep_esp:
                rec.esp = esp
            return rec
        if not run.mine:
            return None
        tracker = run.tracker
        if run.sync_tries:
            seq, icv, plain = _esn_sync(run, lo, esp)
        else:
            seq = tracker.infer(lo) if run.esn else lo
            icv, plain = run.opener(esp, seq >> 32)
        c = run.counters
        if not c.packets:
            c.first_frame = frame
        c.packets += 1
        c.last_frame = frame
        rec = PacketRecord(frame, ts_ns, iface, src, dst, encap, spi, seq, run.index, "ok", icv)
        if self.keep_esp:
            rec.esp = esp
        if icv == GOOD:
            c.icv_good += 1
            rec.events, rec.gap = tracker.observe(seq, frame, True)
            self._open(run, rec, plain, data, version, ip, hlen, nh_off, encap)
        elif icv == BAD:
            c.icv_bad += 1
            rec.status = "icv-bad"
            rec.events, rec.gap = tracker.observe(seq, frame, False)
        elif icv == SHORT:
            c.malformed += 1
            rec.status = "malformed"
            rec.detail = f"{len(esp)} bytes of ESP: no room for IV, ICV and trailer"
            rec.events, rec.gap = tracker.observe(seq, frame, False)
        else:  # no integrity to check: decrypt and look
            c.no_integrity += 1
            rec.events, rec.gap = tracker.observe(seq, frame, False)
            self._open(run, rec, plain, data, version, ip, hlen, nh_off, encap)
        st = rec.status
        if st == "ok":
            summary.ok += 1
            c.ok += 1
            if rec.padding_ok is False:
                c.ok_padding_bad += 1
        else:
            status[st] = status.get(st, 0) + 1
        return rec

    def _open(
        self,
        run: _SaRun,
        rec: PacketRecord,
        plain: bytes | None,
        data: bytes,
        version: int,
        ip: int,
        hlen: int,
        nh_off: int,
        encap: tuple[int, int] | None,
    ) -> None:
        """Trailer, mode and encapsulation checks, the inner summary (``rec`` updated)."""
        c = run.counters
        n = 0 if plain is None else len(plain)
        if n < 2 or plain is None:
            c.bad_trailer += 1
            rec.status = "bad-trailer"
            rec.detail = "ciphertext is not whole cipher blocks"
            return
        pad = plain[-2]
        nh = plain[-1]
        rec.pad_len = pad
        rec.next_header = nh
        size = n - 2 - pad  # the payload is plain[:size]
        if size <= 0:
            c.bad_trailer += 1
            rec.status = "bad-trailer"
            rec.detail = f"pad length {pad} leaves no payload in {n} bytes"
            return
        if pad and not plain.startswith(_PADS[pad], size):  # plain[size : n - 2]
            rec.padding_ok = False
            c.padding_nonstandard += 1
        else:
            rec.padding_ok = True
        c.inner_bytes += size
        if nh == 59:
            c.dummy += 1
            rec.detail = "next header 59: a dummy packet (RFC 4303 2.6)"
        elif run.tunnel or (run.tunnel is None and (nh == 4 or nh == 41)):
            inner = inner_ip(plain, size)
            if inner is None or (nh == 4) != (inner[0] == 4):
                c.mode_error += 1
                rec.status = "mode-error"
                rec.detail = f"next header {nh}, but the payload is not that IP packet"
                return
            rec.inner = inner
            if self.keep_inner:
                rec.inner_packet = plain[: inner[6]]
        else:
            sport, dport = l4_ports(plain, 0, size, nh)
            rec.inner = (version, rec.src, rec.dst, nh, sport, dport, hlen + size)
            if self.keep_inner:
                head = data[ip : ip + hlen]
                rec.inner_packet = rebuild(head, version, nh_off, nh, plain[:size])
        if run.encap is not None and run.encap != (encap is not None):
            c.encap_mismatch += 1
            rec.status = "encap-mismatch"
            rec.detail = (
                "plain ESP for an SA with UDP encapsulation"
                if run.encap
                else "ESP in UDP for an SA without encapsulation"
            )


def _cut_skip(first: Located, padded: Located, captured: int) -> str:
    """Why a cut frame holds no ESP: ``padded`` is what its zero-padded copy gave.
    Zeros the capture did not keep decide nothing: NAT-T whose four bytes after the
    UDP header (the non-ESP marker of IKE, RFC 3948 2.2, or the SPI) were not all
    captured is ESP cut before its SPI, not IKE."""
    if first.skip == TRUNCATED:
        return TRUNCATED
    if padded.skip == "ike" and padded.ip + padded.hlen + 8 + 4 > captured:
        return CUT
    return padded.skip or CUT


def _esn_sync(run: _SaRun, lo: int, esp: bytes) -> tuple[int, str, bytes | None]:
    """The first packets of an ESN SA: the receive window at the start of the capture is
    unknown, so try the high half the SA file gave (``seq_hi``, 0 for a new SA) and
    its neighbours until one authenticates; then inference takes over. After
    :data:`ESN_SYNC_TRIES` packets without success, inference from ``seq_hi`` goes on."""
    base = run.spec.seq_hi
    for hi in dict.fromkeys((base, (base - 1) & 0xFFFFFFFF, (base + 1) & 0xFFFFFFFF)):
        icv, plain = run.opener(esp, hi)
        if icv == SHORT:
            return (base << 32) | lo, icv, plain
        if icv != BAD:
            seq = (hi << 32) | lo
            run.tracker.start_at(seq)
            run.sync_tries = 0
            return seq, icv, plain
    run.sync_tries -= 1
    seq = run.tracker.infer(lo)
    return seq, BAD, None
