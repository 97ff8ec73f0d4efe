"""A session with something of everything in it, and the lines that built it.

The fuzz tests run their failing commands against this session: states in software,
crypto and packet offload, IPv4 and IPv6, policies, sends on every datapath (so there
are journeys, captures, flows and counters), names, a route, a neighbour and an XDP
program.
"""

from __future__ import annotations

from esplab.commands.session import Session
from esplab.lab.command import every_command

__all__ = ["SETUP", "rich_session"]

_AUTH = "auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314"
_ENC = "enc aes 0x000102030405060708090a0b0c0d0e0f"
_GCM = "aead 'rfc4106(gcm(aes))' 0x000102030405060708090a0b0c0d0e0f10111213 128"
_SA = "src 192.0.2.1 dst 192.0.2.2 proto esp"
_POLICY = "src 192.0.2.1/32 dst 192.0.2.2/32"
_UDP = 'IP(dst="192.0.2.2")/UDP(sport=1234,dport={port})/Raw(b"x"*64)'

#: Each line must succeed; together they leave a session with every kind of state.
SETUP: tuple[str, ...] = (
    f"ip xfrm state add {_SA} spi 0x1000 reqid 1 mode transport {_AUTH} {_ENC}",
    f"ip xfrm state add {_SA} spi 0x2000 reqid 2 mode transport {_AUTH} {_ENC} "
    "offload dev wan dir out",
    f"ip xfrm state add {_SA} spi 0x3000 reqid 3 mode transport {_AUTH} {_ENC} "
    "offload packet dev wan dir out",
    f"ip xfrm state add {_SA} spi 0x5000 reqid 5 mode transport {_GCM}",
    "ip xfrm state add src 2001:db8::1 dst 2001:db8::2 proto esp spi 0x4000 reqid 4 "
    f"mode tunnel {_AUTH} {_ENC}",
    f"ip xfrm policy add {_POLICY} proto udp dport 5201 dir out tmpl {_SA} reqid 1 mode transport",
    f"ip xfrm policy add {_POLICY} proto udp dport 5202 dir out tmpl {_SA} reqid 2 mode transport",
    f"host ip xfrm state add {_SA} spi 0x1000 reqid 1 mode transport {_AUTH} {_ENC}",
    f"host ip xfrm state add {_SA} spi 0x2000 reqid 2 mode transport {_AUTH} {_ENC}",
    f"host ip xfrm state add {_SA} spi 0x3000 reqid 3 mode transport {_AUTH} {_ENC}",
    f"host ip xfrm policy add {_POLICY} dir in tmpl {_SA} reqid 1 mode transport",
    "send ap wan " + _UDP.format(port=5201),
    "send ap wan " + _UDP.format(port=5202) + " count 3",
    "send ap wan " + _UDP.format(port=5203),
    'pc2 send eth0 IP(dst="198.51.100.65")/UDP(sport=7,dport=1234)/Raw(b"y"*20)',
    "let p1 = " + _UDP.format(port=5201),
    "ip route add 203.0.113.0/24 via 192.0.2.2 dev wan",
    "ip neigh add 192.0.2.9 lladdr 02:00:00:00:00:09 dev wan",
    "set captures 512",
    "xdp attach lan3 skb drop",
)


def rich_session() -> Session:
    """A fresh session over every command (``lab`` too) after :data:`SETUP` (each
    line checked to succeed)."""
    session = Session(every_command())
    for line in SETUP:
        session.execute(line)
    return session
