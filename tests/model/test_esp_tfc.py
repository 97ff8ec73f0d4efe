"""TFC padding on the software path (issue #21 item 2).

Kernel figures, Linux 6.12 (two namespaces over a veth, ``mode tunnel tfcpad 300``,
hmac(sha1) + cbc(aes)-128, a 10-byte UDP payload): the frame on the wire is 374
bytes; with 400 bytes of payload (above the pad-to length) 502; with the device
MTU lowered to 200, 214 (an IP packet of exactly the MTU: ``padto =
min(x->tfcpad, xfrm_state_mtu(x, mtu))``, net/ipv4/esp4.c ``esp_output``).
"""

from __future__ import annotations

import pytest

from esplab.commands.session import Session
from esplab.errors import InvalidValue
from esplab.model.kernel.esp import core as esp
from esplab.model.kernel.esp.sa import EspSA
from esplab.model.kernel.esp.tfc import state_mtu, tfc_len
from tests.commands import seed
from tests.commands.results import journey, table

KEYS = f"auth sha1 {seed.AUTH} enc aes {seed.ENC}"
TUNNEL = (
    f"ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1 mode tunnel {KEYS}"
)
POLICY = (
    "ip xfrm policy add src 192.0.2.1/32 dst 192.0.2.2/32 dir {} "
    "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 1 mode tunnel"
)


def _session(provider: str = "linux") -> Session:
    s = Session()
    for line in (
        TUNNEL + " tfcpad 300",
        POLICY.format("out"),
        "host " + TUNNEL,
        "host " + POLICY.format("in"),
    ):
        s.execute(line)
    if provider != "linux":
        s.execute(f"set crypto-provider {provider}")
    return s


def _udp(size: int) -> str:
    return f'IP(dst="192.0.2.2")/UDP(sport=1234,dport=5201)/Raw(b"x"*{size})'


@pytest.mark.parametrize("provider", ["linux", "eip93"])
@pytest.mark.parametrize(
    ("size", "mtu", "frame"), [(10, 1500, 374), (400, 1500, 502), (10, 200, 214)]
)
def test_the_wire_length_is_the_kernels(provider: str, size: int, mtu: int, frame: int) -> None:
    s = _session(provider)
    if mtu != 1500:
        s.execute(f"ip link set wan mtu {mtu}")
    j = journey(s, f"send ap wan {_udp(size)}")
    assert j.delivered
    tx = next(st for st in j.stages if st.tap == "wan.tx")
    assert f"xmit {frame} bytes" in tx.decision
    # The host trims the zeros away (ip_rcv_core: pskb_trim_rcsum to tot_len).
    assert f"{28 + size} bytes)" in j.stages[-1].decision


def test_the_padding_is_zeros_before_the_self_describing_padding() -> None:
    sa = EspSA.build(
        0x1000,
        enc="cbc(aes)",
        enc_key=bytes(16),
        auth="hmac(sha1)",
        auth_key=bytes(20),
        mode="tunnel",
        tunnel_src="192.0.2.1",
        tunnel_dst="192.0.2.2",
        tfcpad=64,
    )
    inner = bytes.fromhex("4500001c000100004011f6cec0000201c000020204d21451000800000000")[:28]
    wire = esp.encrypt(sa, inner, seq=1, iv=bytes(16))
    plain = sa.enc.decrypt(bytes(16), wire[20 + 8 + 16 : -12])  # type: ignore[union-attr]
    # 28 bytes of packet, 36 zeros up to 64, then pad 1..14, pad length 14, next header 4.
    assert plain == inner + bytes(36) + bytes(range(1, 15)) + bytes((14, 4))
    assert tfc_len(sa, 28, 200) == min(64, state_mtu(sa, 200)) - 28 == 36
    # xfrm_state_mtu(100) = ((100 - 20 - 8 - 16 - 12) & ~15) - 2 = 30
    assert tfc_len(sa, 28, 100) == state_mtu(sa, 100) - 28 == 2


def test_tfc_padding_outside_tunnel_mode_is_refused() -> None:
    with pytest.raises(InvalidValue, match="tunnel mode only"):
        EspSA.build(0x1, enc="cbc(aes)", enc_key=bytes(16), tfcpad=16)


def test_the_stage_says_who_pads_and_compare_says_why_offload_does_not() -> None:
    s = _session()
    j = journey(s, f"send ap wan {_udp(10)}")
    stage = next(st for st in j.stages if st.tap == "ap.esp")
    assert "TFC padding to 300" in stage.decision and "tfclen = 0" in stage.why
    got = table(s, f"compare 0x1000 {_udp(10)} seq 3")
    paths = got.data["paths"]
    assert paths["sw"]["len"] == 360 and paths["sw+aead"]["identical"]
    assert "TFC padding can't be offloaded" in paths["crypto"]["why"]
    assert "TFC padding can't be offloaded" in paths["packet"]["why"]
