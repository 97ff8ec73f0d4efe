"""curlft.use_time on input: set by xfrm_state_check_expire before the ICV is checked."""

from __future__ import annotations

from esplab.commands.session import Session

KEY = "0x000102030405060708090a0b0c0d0e0f"
STATE = "src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1 mode transport enc aes " + KEY
POLICY = (
    "ip xfrm policy add src 192.0.2.1/32 dst 192.0.2.2/32 dir out "
    "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 1 mode transport"
)
SEND = 'send ap wan IP(dst="192.0.2.2")/UDP(sport=1234,dport=5201)/Raw(b"x"*64)'


def _host_lifetime(ap_auth: str, host_auth: str) -> str:
    session = Session()
    session.execute(f"ip xfrm state add {STATE} auth sha1 {ap_auth}")
    session.execute(POLICY)
    session.execute(f"host ip xfrm state add {STATE} auth sha1 {host_auth}")
    session.execute(SEND)
    text: str = session.execute("host ip -s xfrm state").text  # type: ignore[attr-defined]
    return next(line.strip() for line in text.splitlines() if line.strip().startswith("add "))


def test_a_packet_that_fails_its_icv_still_sets_the_use_time() -> None:
    # Linux 6.12 lists "add <time> use <time>" after one packet with a bad ICV
    # (tests/kernel/ bad-icv-wrong-key): the state was used, though nothing counted.
    line = _host_lifetime("0x" + "11" * 20, "0x" + "22" * 20)
    assert not line.endswith("use -"), line


def test_an_unused_state_has_no_use_time() -> None:
    session = Session()
    session.execute(f"host ip xfrm state add {STATE} auth sha1 0x{'22' * 20}")
    text: str = session.execute("host ip -s xfrm state").text  # type: ignore[attr-defined]
    assert "use -" in text
