"""ip route get/add and what a device going down or up does to the routing table."""

from __future__ import annotations

import pytest

from esplab.commands.result import TextResult
from esplab.commands.session import Session
from esplab.errors import BadArgument, KernelError


@pytest.fixture
def session() -> Session:
    return Session()


def text(session: Session, line: str) -> str:
    result = session.execute(line)
    assert isinstance(result, TextResult)
    return result.text


# -- ip route get ------------------------------------------------------------
# iproute2 ip/iproute.c print_route over the RTM_GETROUTE answer: the address itself
# (rtm_dst_len 32, so no prefix and never "default"); IPv4 answers are clones
# (RTM_F_CLONED: no proto/scope, "cache" on a second line) carrying RTA_UID.


def test_route_get_connected_prints_the_address_not_the_prefix(session: Session) -> None:
    get = session.execute("ip route get 198.51.100.2")
    assert isinstance(get, TextResult)
    assert get.text == "198.51.100.2 dev lan1 src 198.51.100.1 uid 0 \n    cache "
    assert get.data == {"dev": "lan1", "via": "", "src": "198.51.100.1"}


def test_route_get_through_the_default_route_prints_no_default(session: Session) -> None:
    get = session.execute("pc3 ip route get 203.0.113.1")
    assert isinstance(get, TextResult)
    assert (
        get.text == "203.0.113.1 via 198.51.100.129 dev eth0 src 198.51.100.130 uid 0 \n    cache "
    )
    assert get.data["dev"] == "eth0" and get.data["via"] == "198.51.100.129"


def test_route_get_ipv6_prints_from_metric_and_pref(session: Session) -> None:
    # net/ipv6/route.c rt6_fill_node: RTA_SRC from the unset flow source ("from ::"),
    # protocol (boot is not printed), RTA_PREFSRC, RTA_PRIORITY, RTA_PREF.
    assert text(session, "ip route get 2001:db8:1:1::2") == (
        "2001:db8:1:1::2 from :: dev lan1 proto kernel src 2001:db8:1:1::1 metric 256 pref medium"
    )
    assert text(session, "pc1 ip route get to 2001:db8:3::1") == (
        "2001:db8:3::1 from :: via 2001:db8:1:1::1 dev eth0 src 2001:db8:1:1::2 "
        "metric 1024 pref medium"
    )


def test_route_get_a_local_address_answers_from_the_local_table(session: Session) -> None:
    get = session.execute("ip route get 192.0.2.1")
    assert isinstance(get, TextResult)
    assert get.text == "local 192.0.2.1 dev lo table local src 192.0.2.1 uid 0 \n    cache <local> "
    assert get.data["dev"] == "lo"


def test_route_get_refuses_words_it_does_not_model(session: Session) -> None:
    with pytest.raises(BadArgument, match='"from" after the address is not modelled'):
        session.execute("ip route get 1.2.3.4 from 192.0.2.1")
    with pytest.raises(BadArgument, match=r'inet6 prefix is expected rather than "1\.2\.3\.4"'):
        session.execute("ip -6 route get 1.2.3.4")
    session.execute("pc1 ip route del default")
    with pytest.raises(KernelError) as info:
        session.execute("pc1 ip route get 8.8.8.8")
    assert info.value.errno_name == "ENETUNREACH"
