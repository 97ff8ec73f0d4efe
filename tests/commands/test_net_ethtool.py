"""ethtool on the ap's ports: the ESP features, what holds them, and bad input."""

from __future__ import annotations

import pytest

from esplab.commands.session import Session
from esplab.errors import KernelError
from tests.commands import seed

# Seed SAs on wan: SA_OUT with crypto offload, a second SA (spi 0x2000) with packet
# offload, and an outbound policy with packet offload.
CRYPTO_SA = seed.SA_OUT + " offload dev wan dir out"
PACKET_SA = (
    seed.SA_OUT.replace("spi 0x1000 reqid 1", "spi 0x2000 reqid 2")
    + " offload packet dev wan dir out"
)
PACKET_POLICY = seed.POL_OUT.replace("reqid 1", "reqid 2") + " offload packet dev wan"


def busy(s: Session, line: str) -> str:
    with pytest.raises(KernelError) as info:
        s.execute(line)
    assert info.value.errno_name == "EBUSY"
    return str(info.value)


def test_busy_counts_states_and_policies_apart() -> None:
    s = Session()
    for line in (CRYPTO_SA, PACKET_SA, PACKET_POLICY):
        s.execute(line)
    message = busy(s, "ethtool -K wan esp-hw-offload off")
    assert "(2 offloaded SAs and 1 offloaded policy on wan)" in message
    assert "ip xfrm state flush; ip xfrm policy flush" in message
    assert s.lab.node("ap").devs["wan"].features["esp-hw-offload"] is True


def test_busy_names_a_lone_sa_or_a_lone_policy() -> None:
    s = Session()
    s.execute(CRYPTO_SA)
    message = busy(s, "ethtool -K wan esp-hw-offload off")
    assert "(1 offloaded SA on wan)" in message and "polic" not in message
    s.execute("ip xfrm state flush")
    s.execute(PACKET_POLICY)
    message = busy(s, "ethtool -K wan esp-hw-offload off")
    assert "(1 offloaded policy on wan)" in message and "SA" not in message
    s.execute("ip xfrm policy flush")
    s.execute("ethtool -K wan esp-hw-offload off")
    assert s.lab.node("ap").devs["wan"].features["esp-hw-offload"] is False
