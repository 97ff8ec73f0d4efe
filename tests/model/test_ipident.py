"""Outer IPv4 identifications as Linux picks them (issue #21 item 9).

ip_select_ident_segs (include/net/ip.h): no socket owns a tunnel's outer header,
so DF without skb->ignore_df gives 0, and anything else __ip_select_ident
(net/ipv4/route.c): a bucket chosen by a keyed hash of (daddr, saddr, protocol),
counting from a random start. A local UDP socket's skb has ignore_df (__ip_make_skb:
ip_sk_ignore_df, IP_PMTUDISC_WANT), so a real kernel sent a local UDP packet through
a tunnel with DF set and a non-zero outer ID.
"""

from __future__ import annotations

from scapy.layers.inet import IP

from esplab.commands.result import JourneyResult
from esplab.commands.session import Session
from esplab.model.kernel.stack.ipident import IpIdents, ignore_df_for

A, B = bytes([192, 0, 2, 1]), bytes([192, 0, 2, 2])
TUNNEL = (
    "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x4000 reqid 4 mode tunnel "
    "auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314 "
    "enc aes 0x000102030405060708090a0b0c0d0e0f"
)
POLICY = (
    "ip xfrm policy add src 198.51.100.0/24 dst 203.0.113.0/24 dir out "
    "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 4 mode tunnel"
)


def test_the_rule() -> None:
    idents = IpIdents.for_node(1, "ap")
    assert idents.ident(A, B, 50, df=True, ignore_df=False) == 0
    first = idents.ident(A, B, 50, df=True, ignore_df=True)
    assert idents.ident(A, B, 50, df=False, ignore_df=False) == (first + 1) & 0xFFFF
    # another bucket (the protocol is in the hash), another start
    assert IpIdents.for_node(1, "ap").select(A, B, 17) != first
    # the key is per boot: another seed, another number
    assert IpIdents.for_node(2, "ap").select(A, B, 50) != first
    assert ignore_df_for(17, forwarded=False) and not ignore_df_for(6, forwarded=False)
    assert not ignore_df_for(17, forwarded=True)


def _outer_ids(inner: str, count: int = 2) -> list[tuple[int, bool]]:
    """(outer identification, DF) of each packet the ap sends through the tunnel."""
    s = Session()
    s.execute(TUNNEL)
    s.execute(POLICY)
    result = s.execute(f"send ap wan {inner} count {count}")
    assert isinstance(result, JourneyResult)
    out = []
    for record in s.lab.captures.get("wan.wire"):
        ip = IP(record.data[14:])
        out.append((ip.id, bool(ip.flags.DF)))
    return out


def test_a_local_udp_packet_with_df_gets_a_hashed_outer_id() -> None:
    udp = 'IP(src="198.51.100.1",dst="203.0.113.5",flags="DF")/UDP(dport=5201)'
    ids = _outer_ids(udp)
    assert all(df for _, df in ids)
    (a, _), (b, _) = ids
    assert a != 0 and b == (a + 1) & 0xFFFF
    # deterministic: the same session seed gives the same numbers
    assert _outer_ids(udp) == ids


def test_a_local_tcp_packet_with_df_gets_zero() -> None:
    tcp = 'IP(src="198.51.100.1",dst="203.0.113.5",flags="DF")/TCP(dport=80)'
    assert _outer_ids(tcp) == [(0, True), (0, True)]


def test_without_df_the_id_is_hashed_not_counted_from_one() -> None:
    udp = 'IP(src="198.51.100.1",dst="203.0.113.5")/UDP(dport=5201)'
    (a, df), (b, _) = _outer_ids(udp)
    assert not df and a not in (0, 1) and b == (a + 1) & 0xFFFF
