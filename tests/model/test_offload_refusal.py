"""A packet-offload state the driver refuses is not added, and nothing remembers it but
the driver's journey, which the error says it kept."""

from __future__ import annotations

from ipaddress import ip_address

import pytest

from esplab.commands.session import Session
from esplab.errors import KernelError
from esplab.model.kernel.xfrm.algos import XfrmAlgo
from esplab.model.kernel.xfrm.objects import XfrmOffload, XfrmState

GCM = "aead 'rfc4106(gcm(aes))' 0x" + "11" * 20 + " 128"


def test_a_refused_packet_offload_leaves_no_fallback_and_says_what_it_kept() -> None:
    session = Session()
    journeys = len(session.lab.journeys)
    with pytest.raises(KernelError) as caught:
        # The EIP-93 has no AES-GCM in ESP mode: the driver answers EOPNOTSUPP, and
        # packet offload has no software fallback (xfrm_dev_state_add).
        session.execute(
            "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x4000 "
            f"reqid 4 mode transport {GCM} offload packet dev wan dir out"
        )
    assert "Device failed to offload this state" in str(caught.value)
    assert "kept as the last journey" in str(caught.value)
    assert session.lab.node("ap").xfrm.states == ()
    assert len(session.lab.journeys) == journeys + 1  # the driver's, as said


def test_a_refused_crypto_offload_falls_back_and_remembers_why() -> None:
    session = Session()
    session.execute(
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x4000 "
        f"reqid 4 mode transport {GCM} offload dev wan dir out"
    )
    (state,) = session.lab.node("ap").xfrm.states
    assert state.runtime.refused


def test_only_a_refused_crypto_offload_notes_why_on_the_state() -> None:
    """The port notes the refusal in the state's runtime record for crypto offload
    (it falls back to software), never for packet offload (the state is not added)."""
    session = Session()
    port = session.lab.port("ap", "wan")
    assert port is not None
    states = {}
    for kind in ("crypto", "packet"):
        req = XfrmState(
            ip_address("192.0.2.1"),
            ip_address("192.0.2.2"),
            spi=0x4000,
            aead=XfrmAlgo("rfc4106(gcm(aes))", bytes(20), 128),
            offload=XfrmOffload(kind, "wan", "out"),
        )
        assert port.state_add(req) == "EOPNOTSUPP"  # no AES-GCM in the EIP-93's ESP mode
        states[kind] = req.runtime.refused
    assert states["crypto"] and states["packet"] is None
