"""The seed-000 scenario as command lines: ap to host over wan, IPv4 transport,
hmac(sha1) + cbc(aes)-128 (airoha-dsa-xfrm.md 5.5 (a); keys as printed there)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from esplab.commands.session import Session

AUTH = "0x0102030405060708090a0b0c0d0e0f1011121314"
ENC = "0x000102030405060708090a0b0c0d0e0f"
SA_OUT = (
    f"ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1 "
    f"mode transport auth sha1 {AUTH} enc aes {ENC}"
)
SA_IN = (
    f"ip xfrm state add src 192.0.2.2 dst 192.0.2.1 proto esp spi 0x1001 reqid 1 "
    f"mode transport auth 'hmac(sha1)' {AUTH} enc 'cbc(aes)' {ENC}"
)
POL_OUT = (
    "ip xfrm policy add src 192.0.2.1/32 dst 192.0.2.2/32 dir out "
    "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 1 mode transport"
)
POL_IN_HOST = (
    "ip xfrm policy add src 192.0.2.1/32 dst 192.0.2.2/32 dir in "
    "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 1 mode transport"
)
POL_BACK_HOST = (
    "ip xfrm policy add src 192.0.2.2/32 dst 192.0.2.1/32 dir out "
    "tmpl src 192.0.2.2 dst 192.0.2.1 proto esp reqid 1 mode transport"
)
UDP = 'IP(dst="192.0.2.2")/UDP(sport=1234,dport=5201)/Raw(b"x"*64)'


def software(offload: str = "") -> list[str]:
    """Command lines setting up both ends (the ap's outbound SA optionally offloaded)."""
    return [
        SA_OUT + offload,
        POL_OUT,
        "host " + SA_OUT,
        "host " + POL_IN_HOST,
        SA_IN,
        "host " + SA_IN,
        "host " + POL_BACK_HOST,
    ]


#: The ap's outbound SA in crypto offload on wan, and the host's end of it.
CRYPTO_OUT = [SA_OUT + " offload dev wan dir out", POL_OUT, "host " + SA_OUT, "host " + POL_IN_HOST]


def crypto_session() -> Session:
    """A session with :data:`CRYPTO_OUT` set up."""
    from esplab.commands.session import Session

    s = Session()
    for line in CRYPTO_OUT:
        s.execute(line)
    return s
