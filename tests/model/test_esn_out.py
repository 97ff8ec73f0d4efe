"""An outbound ESN state with a replay window of 0 (issue #21 item 1).

Linux 6.12 + iproute2 6.15: ``ip xfrm state add ... flag esn dir out`` succeeds and
lists ``replay-window 0 flag esn`` with ``replay_window 0, bitmap-length 0`` and ``dir
out``; net/xfrm/xfrm_replay.c ``xfrm_init_replay`` refuses ESN with a window of 0
only when ``dir`` is unset or ``in``. Such a state sends, with 64-bit numbers.
"""

from __future__ import annotations

import pytest

from esplab.commands.session import Session
from esplab.errors import InvalidValue, ToolUsageError
from esplab.model.kernel.esp import core as esp
from esplab.model.kernel.esp.replay import ReplayWindow
from esplab.model.kernel.esp.sa import EspSA
from tests.commands import seed
from tests.commands.results import journey, table, text

AUTH = bytes.fromhex(seed.AUTH[2:])
ENC = bytes.fromhex(seed.ENC[2:])
PLAIN = bytes.fromhex(
    # IP(src="192.0.2.1", dst="192.0.2.2")/UDP(sport=1234, dport=5201)/Raw(b"x"*8)
    "45000024000100004011f6c4c0000201c000020204d21451001065d57878787878787878"
)


def _sa(**kw: object) -> EspSA:
    return EspSA.build(0x1000, enc="cbc(aes)", enc_key=ENC, auth="hmac(sha1)", auth_key=AUTH, **kw)  # type: ignore[arg-type]


def test_the_window_refuses_esn_without_a_window_unless_outbound() -> None:
    with pytest.raises(InvalidValue, match="ESN with replay window 0"):
        ReplayWindow(0, esn=True)
    assert ReplayWindow(0, esn=True, outbound=True).size == 0


def test_an_outbound_esn_sa_sends_64_bit_numbers_a_peer_verifies() -> None:
    out = _sa(esn=True, outbound=True, oseq=(1 << 32) + 4)
    wire = esp.encrypt(out, PLAIN, iv=bytes(16))
    assert out.oseq == (1 << 32) + 5
    assert wire[24:28] == (5).to_bytes(4, "big")  # only the low half on the wire
    peer = _sa(esn=True, replay_window=32)
    peer.replay.top = 1 << 32  # the peer is in the same 2^32 subspace
    res = esp.decrypt(peer, wire)
    assert res.ok and res.seq == (1 << 32) + 5 and res.packet == PLAIN
    # Without the high half in the ICV (RFC 4303 2.2.1) it would not verify.
    legacy = _sa(replay_window=32)
    assert esp.decrypt(legacy, wire).reason == "auth-failed"


def _session() -> Session:
    s = Session()
    for line in (
        seed.SA_OUT + " flag esn dir out",
        seed.POL_OUT,
        "host " + seed.SA_OUT + " flag esn replay-window 32 dir in",
        "host " + seed.POL_IN_HOST,
    ):
        s.execute(line)
    return s


def test_the_state_sends_and_the_host_delivers() -> None:
    s = _session()
    j = journey(s, f"send ap wan {seed.UDP}")
    assert j.delivered, j.stages[-1]
    shown = text(s, "ip xfrm state")
    assert "replay-window 0 flag esn" in shown and "oseq-hi 0x0, oseq 0x1" in shown


def test_without_dir_out_the_add_is_refused_as_iproute2_does() -> None:
    # iproute2 6.15: "Error: esn flag set without replay-window." (exit 255).
    with pytest.raises(ToolUsageError, match="esn flag set without replay-window"):
        Session().execute(seed.SA_OUT + " flag esn")


def test_compare_gives_the_software_reference() -> None:
    s = _session()
    got = table(s, f"compare 0x1000 {seed.UDP} seq 7 iv 000102030405060708090a0b0c0d0e0f")
    sw = got.data["paths"]["sw"]
    assert sw["available"] and sw["len"] == 136
