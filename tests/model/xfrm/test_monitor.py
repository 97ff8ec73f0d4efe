"""ip xfrm monitor: each SAD/SPD event in iproute2's words.

The expected texts are what ``ip xfrm monitor`` printed on Linux 6.12 with iproute2
6.15 for the same commands (the kernel guest, kx; CONFIG_XFRM_SUB_POLICY is on there,
hence ``ptype main``).
"""

from __future__ import annotations

from io import StringIO

import pytest
from rich.console import Console

from esplab.commands.session import Session
from esplab.errors import ToolUsageError
from esplab.model.kernel.xfrm.objects import Flow
from esplab.model.kernel.xfrm.tables import FlowKey, XfrmNode, XfrmSettings
from esplab.model.tools.iproute2.xfrm import run_ip_xfrm
from esplab.model.tools.iproute2.xfrm_monitor import MONITOR_USAGE, XfrmMonitor
from esplab.render import render

SHA1 = "0x0102030405060708090a0b0c0d0e0f1011121314"
AES = "0x000102030405060708090a0b0c0d0e0f"
GCM = "0x000102030405060708090a0b0c0d0e0f00010203"
SA1 = (
    "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1 "
    f"mode transport auth sha1 {SHA1} enc aes {AES}"
)
SA2 = (
    "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1001 reqid 1 "
    f"mode tunnel aead rfc4106(gcm(aes)) {GCM} 128"
)
POL_OUT = (
    "ip xfrm policy add src 192.0.2.1/32 dst 192.0.2.2/32 dir out "
    "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 1 mode transport"
)
POL_IN = "ip xfrm policy add src 10.0.0.0/8 dst 10.1.0.0/16 dir in priority 5 action block"

STATE1 = (
    "src 192.0.2.1 dst 192.0.2.2\n"
    "\tproto esp spi 0x00001000 reqid 1 mode transport\n"
    "\treplay-window 0 \n"
    f"\tauth-trunc hmac(sha1) {SHA1} 96\n"
    f"\tenc cbc(aes) {AES}\n"
    "\tanti-replay context: seq 0x0, oseq 0x0, bitmap 0x00000000\n"
    "\tsel src 0.0.0.0/0 dst 0.0.0.0/0 \n"
)
STATE2 = (
    "src 192.0.2.1 dst 192.0.2.2\n"
    "\tproto esp spi 0x00001001 reqid 1 mode tunnel\n"
    "\treplay-window 0 \n"
    f"\taead rfc4106(gcm(aes)) {GCM} 128\n"
    "\tanti-replay context: seq 0x0, oseq 0x0, bitmap 0x00000000\n"
    "\tsel src 0.0.0.0/0 dst 0.0.0.0/0 \n"
)
POLICY_OUT = (
    "src 192.0.2.1/32 dst 192.0.2.2/32 \n"
    "\tdir out priority 0 ptype main \n"
    "\ttmpl src 192.0.2.1 dst 192.0.2.2\n"
    "\t\tproto esp reqid 1 mode transport\n"
)


def node(monitor: str = "ip xfrm monitor") -> XfrmNode:
    n = XfrmNode(settings=XfrmSettings(sub_policy=True))
    run_ip_xfrm(n, monitor.split())
    return n


def events(n: XfrmNode, *lines: str) -> str:
    for line in lines:
        run_ip_xfrm(n, line.split())
    assert isinstance(n.monitor, XfrmMonitor)
    return n.monitor.drain()


def test_every_event_of_the_kernel_run() -> None:
    n = node()
    assert events(n, SA1, SA2, POL_OUT, POL_IN) == (
        STATE1 + STATE2 + POLICY_OUT + "src 10.0.0.0/8 dst 10.1.0.0/16 \n"
        "\tdir in action block priority 5 ptype main \n"
    )
    assert events(n, SA1.replace(" add ", " update ")) == "Updated " + STATE1
    # allocspi sends no notification.
    assert events(n, "ip xfrm state allocspi src 192.0.2.1 dst 192.0.2.9 proto esp") == ""
    assert events(n, "ip xfrm state delete src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1001") == (
        "Deleted " + STATE2
    )
    assert events(n, "ip xfrm policy delete src 192.0.2.1/32 dst 192.0.2.2/32 dir out") == (
        "Deleted " + POLICY_OUT
    )
    assert events(n, POL_IN.replace(" add ", " update ").replace("5", "6")) == (
        "Updated src 10.0.0.0/8 dst 10.1.0.0/16 \n\tdir in action block priority 6 ptype main \n"
    )
    assert events(n, "ip xfrm policy setdefault out block") == (
        "Default policies:\n in:  accept\n fwd: accept\n out: block\n"
    )
    assert events(n, "ip xfrm state flush", "ip xfrm policy flush") == (
        "Flushed state proto 0\nFlushed policy ptype main \n"
    )
    v6 = "ip xfrm state add src 2001:db8::1 dst 2001:db8::2 proto esp spi 0x2000 mode transport"
    assert events(n, f"{v6} enc aes {AES}", "ip xfrm state flush proto esp") == (
        "src 2001:db8::1 dst 2001:db8::2\n"
        "\tproto esp spi 0x00002000 reqid 0 mode transport\n"
        "\treplay-window 0 \n"
        f"\tenc cbc(aes) {AES}\n"
        "\tanti-replay context: seq 0x0, oseq 0x0, bitmap 0x00000000\n"
        "\tsel src ::/0 dst ::/0 \n"
        "Flushed state proto esp\n"
    )
    run_ip_xfrm(n, f"{v6} enc aes {AES}".split())
    n.monitor.drain()  # type: ignore[union-attr]
    assert events(n, "ip xfrm state flush proto ipsec-any") == "Flushed state proto ipsec-any\n"
    # Flushing empty tables tells no one.
    assert events(n, "ip xfrm state flush", "ip xfrm policy flush") == ""


def test_objects_nokeys_and_all_nsid() -> None:
    n = node("ip xfrm monitor acquire expire SA")
    assert events(n, SA1, POL_OUT, "ip xfrm state flush") == STATE1 + "Flushed state proto 0\n"
    n = node("ip xfrm monitor policy")
    assert events(n, SA1, POL_OUT, "ip xfrm policy setdefault") == (
        POLICY_OUT + "Default policies:\n in:  accept\n fwd: accept\n out: accept\n"
    )
    n = node("ip xfrm monitor all-nsid")
    assert events(n, POL_OUT) == "[nsid current]" + POLICY_OUT
    n = node("ip xfrm monitor nokeys")
    quiet = events(n, SA1)  # nokeys: the algorithms without their keys
    assert SHA1 not in quiet and AES not in quiet and "auth-trunc hmac(sha1)" in quiet


def test_expire_and_acquire() -> None:
    n = node()
    run_ip_xfrm(n, SA1.split())
    run_ip_xfrm(n, POL_OUT.replace("192.0.2.2", "192.0.2.9").split())
    n.monitor.drain()  # type: ignore[union-attr]
    n.expire_state(n.states[0])
    # build_expire carries no algorithms and no replay state.
    assert n.monitor.drain() == (  # type: ignore[union-attr]
        "Expired src 192.0.2.1 dst 192.0.2.2\n"
        "\tproto esp spi 0x00001000 reqid 1 mode transport\n"
        "\treplay-window 0 \n"
        "\tsel src 0.0.0.0/0 dst 0.0.0.0/0 \n"
        "\thard 1\n"
    )
    assert n.states == ()
    flow = Flow(*run_flow())
    assert n.resolve_output(flow).verdict == "no-state"
    assert n.monitor.drain() == (  # type: ignore[union-attr]
        "acquire proto esp \n"
        "  sel src 192.0.2.1/32 dst 192.0.2.9/32 proto udp sport 45404 dport 1025 dev eth0 \n"
        "  policy src 192.0.2.1/32 dst 192.0.2.9/32 \n"
        "    \tdir out priority 0 ptype main \n"
        "    \ttmpl src 192.0.2.1 dst 192.0.2.9\n"
        "    \t\tproto esp reqid 1 mode transport\n"
        "\n"
    )
    # The larval state the ACQUIRE made, as Linux 6.12 lists it; no second ACQUIRE.
    assert run_ip_xfrm(n, ["ip", "xfrm", "state"]).text == (
        "src 192.0.2.1 dst 192.0.2.9\n"
        "\tproto esp spi 0x00000000 reqid 1 mode transport\n"
        "\treplay-window 0 \n"
        "\tanti-replay context: seq 0x0, oseq 0x0, bitmap 0x00000000\n"
        "\tdir out\n"
        "\tsel src 192.0.2.1/32 dst 192.0.2.9/32 proto udp sport 45404 dport 1025 dev eth0 \n"
    )
    assert n.resolve_output(flow).verdict == "no-state"
    assert n.monitor.drain() == ""  # type: ignore[union-attr]


def run_flow() -> FlowKey:
    from ipaddress import ip_address

    return (ip_address("192.0.2.1"), ip_address("192.0.2.9"), 17, 45404, 1025, "eth0")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("ip xfrm monitor bogus", 'Argument "bogus" is unknown, try "ip xfrm monitor help".'),
        ("ip xfrm monitor help", MONITOR_USAGE),
    ],
)
def test_monitor_refusals(line: str, message: str) -> None:
    with pytest.raises(ToolUsageError) as err:
        run_ip_xfrm(XfrmNode(), line.split())
    assert message in str(err.value)


def test_events_print_with_the_command_until_off() -> None:
    s = Session()
    assert "monitor on" in s.execute("ip xfrm monitor").summary
    result = s.execute(SA1)
    assert result.monitor == STATE1
    out = StringIO()
    Console(file=out, width=100, color_system=None).print(render(result))
    text = out.getvalue()
    assert text.startswith("ap: state added\nsrc 192.0.2.1 dst 192.0.2.2\n")
    assert text.endswith("sel src 0.0.0.0/0 dst 0.0.0.0/0 \n")
    # Another node's change is not this monitor's.
    assert s.execute("host " + SA1).monitor == ""
    s.execute("ip xfrm monitor off")
    assert s.execute("ip xfrm state flush").monitor == ""
