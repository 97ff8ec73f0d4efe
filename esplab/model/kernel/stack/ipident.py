"""The IPv4 identification Linux gives a header no connected socket owns.

``ip_select_ident_segs`` (include/net/ip.h) [C]: a connected socket numbers its
own packets (``inet_id``); otherwise a header with DF set gets 0 unless the skb
has ``ignore_df``, and every other header gets ``__ip_select_ident``
(net/ipv4/route.c) [C]: a hash of (daddr, saddr, protocol) keyed with the
namespace's per-boot ``ip_id_key`` picks one of the ``ip_idents`` buckets, a
counter whose start ``ip_rt_init`` filled with random bytes, and
``ip_idents_reserve`` returns it and adds one per segment.

``skb->ignore_df``: ``__ip_make_skb`` (net/ipv4/ip_output.c) sets it from
``ip_sk_ignore_df(sk)``, true for a socket whose ``pmtudisc`` is below
``IP_PMTUDISC_DO``, as a UDP, raw or ping socket's default ``IP_PMTUDISC_WANT``
is [C]; TCP's ``ip_queue_xmit`` and a forwarded packet leave it 0 [C]. So the
outer header of a tunnel (``xfrm4_tunnel_encap_add`` calls ``ip_select_ident``
with no socket) carries a hashed identification for a local UDP or ICMP packet,
DF or not, and 0 for a forwarded or TCP packet with DF (a real-kernel capture
showed the former: DF set and a non-zero outer ID).

The lab's ``ip_id_key`` and bucket starts come from the session seed and the
node [D]; the kernel hashes with SipHash (``siphash_3u32``), the lab with keyed
BLAKE2b: with a per-boot random key no two boots agree anyway, and what the model
keeps is the structure (one counter per (daddr, saddr, protocol) bucket). The
timer perturbation ``ip_idents_reserve`` adds when a bucket's jiffies stamp
changes (a random jump below the ticks since) is left out [D].
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

__all__ = ["IP_IDENTS_SZ", "IpIdents", "ignore_df_for"]

#: Buckets (net/ipv4/route.c: at least IP_IDENTS_SZ 2048, more on large machines).
IP_IDENTS_SZ = 2048
_TCP = 6


def ignore_df_for(proto: int, forwarded: bool) -> bool:
    """``skb->ignore_df`` of a packet: set for a local non-TCP socket's (module
    docstring), not for TCP nor for a forwarded packet."""
    return not forwarded and proto != _TCP


@dataclass
class IpIdents:
    """``net->ipv4.ip_id_key`` and ``ip_idents`` of one node (one boot)."""

    key: bytes
    buckets: dict[int, int] = field(default_factory=dict)

    @classmethod
    def for_node(cls, seed: object, node: str) -> IpIdents:
        """The node's key, from the session seed."""
        digest = hashlib.blake2b(f"ip_id_key:{seed}:{node}".encode(), digest_size=16)
        return cls(digest.digest())

    def _hash(self, data: bytes) -> int:
        return int.from_bytes(hashlib.blake2b(data, key=self.key, digest_size=4).digest(), "little")

    def select(self, saddr: bytes, daddr: bytes, proto: int, segs: int = 1) -> int:
        """``__ip_select_ident``: the identification for one header (``segs`` numbers
        taken, as for a GSO packet)."""
        bucket = self._hash(daddr + saddr + bytes([proto & 0xFF])) & (IP_IDENTS_SZ - 1)
        start = self.buckets.get(bucket)
        if start is None:  # ip_rt_init: get_random_bytes(ip_idents, ...)
            start = self._hash(b"ip_idents" + bucket.to_bytes(4, "big"))
        self.buckets[bucket] = (start + segs) & 0xFFFFFFFF
        return start & 0xFFFF

    def ident(self, saddr: bytes, daddr: bytes, proto: int, df: bool, ignore_df: bool) -> int:
        """``ip_select_ident`` with no socket: 0 for DF without ``ignore_df``, else the
        hashed bucket's next number."""
        if df and not ignore_df:
            return 0
        return self.select(saddr, daddr, proto)
