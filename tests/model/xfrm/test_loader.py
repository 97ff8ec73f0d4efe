"""``load``: command lines and pasted ``ip xfrm`` output, round trips and errors."""

from __future__ import annotations

import pytest

from esplab.errors import KernelError, LabFileError, ToolUsageError
from esplab.model.kernel.xfrm.tables import XfrmNode
from esplab.model.tools.iproute2.xfrm_load import load_xfrm

from .fakes import FakeDevice
from .support import GCM, ip, listing, make_node
from .test_printer import EXAMPLE_A_STATE, EXAMPLE_C_POLICY, EXAMPLE_C_STATE

SCRIPT = r"""
# The seeds' SA pair (reference 5.5 (a)) plus a packet-offload tunnel (5.5 (c)).
ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1 mode transport \
    auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314 \
    enc aes 0x000102030405060708090a0b0c0d0e0f   # aliases, printed canonical
sudo ip xfrm state add src 192.0.2.2 dst 192.0.2.1 proto esp spi 0x1001 reqid 1 \
    auth 'hmac(sha1)' 0x0102030405060708090a0b0c0d0e0f1011121314 \
    enc 'cbc(aes)' 0x000102030405060708090a0b0c0d0e0f
ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x3000 reqid 3 mode tunnel \
    aead 'rfc4106(gcm(aes))' 0x00112233445566778899aabbccddeeff01020304 128 \
    sel src 198.51.100.0/24 dst 203.0.113.0/24 offload packet dev wan dir out
ip xfrm state add src 2001:db8::1 dst 2001:db8::2 proto esp spi 0x4000 mode tunnel \
    aead 'rfc4106(gcm(aes))' 0x00112233445566778899aabbccddeeff01020304 96 \
    flag esn af-unspec replay-window 300 replay-seq 9 replay-seq-hi 1 mark 5 mask 0xf \
    encap espinudp 4500 4500 2001:db8::9 if_id 0x2a tfcpad 64 limit packet-hard 1000
ip xfrm state add src 192.0.2.9 dst 192.0.2.8 proto esp spi 0x5000 reqid 5 \
    enc cipher_null "" replay-oseq 4 dir out extra-flag oseq-may-wrap \
    auth-trunc sha256 0x0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20 128

ip xfrm policy add src 198.51.100.0/24 dst 203.0.113.0/24 dir out priority 100 \
    tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 3 mode tunnel offload packet dev wan
ip xfrm policy add src 192.0.2.1/32 dst 192.0.2.2/32 dir out priority 7 \
    tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 1 mode transport
ip xfrm policy add src 2001:db8::/64 dst ::/0 proto ipv6-icmp type 135 dir in action block \
    mark 9 flag localok if_id 3 tmpl proto ah spi 7 reqid 2 level use
ip xfrm policy add dst 10.0.0.0/8 proto gre key 1.2.3.4 dir fwd limit time-hard 30
"""


def loaded() -> XfrmNode:
    node = make_node(FakeDevice("wan"))
    report = load_xfrm(node, SCRIPT)
    assert report.commands == 9 and len(report.states) == 5 and len(report.policies) == 4
    return node


def test_script_recreates_the_worked_examples() -> None:
    node = loaded()
    text = ip(node, "ip xfrm state").text
    assert EXAMPLE_A_STATE in text and EXAMPLE_C_STATE in text
    assert EXAMPLE_C_POLICY in ip(node, "ip xfrm policy").text


@pytest.mark.parametrize("stats", [False, True])
def test_round_trip_print_load_print(stats: bool) -> None:
    node = loaded()
    esn = next(x for x in node.states if x.spi == 0x4000)
    esn.curlft.bytes, esn.stats.replay = 1234, 2
    esn.replay.bitmap = 0x1_0000_0003
    esn.lastused = node.clock() + 60
    printed = listing(node, stats=stats)
    again = make_node(FakeDevice("wan"))
    load_xfrm(again, printed, source="board.txt")
    assert listing(again, stats=stats) == printed
    back = next(x for x in again.states if x.spi == 0x4000)
    assert back.replay.bitmap == 0x1_0000_0003 and back.lastused == esn.lastused
    if stats:
        assert back.curlft.bytes == 1234 and back.stats.replay == 2


def test_pasted_board_output_with_spaces() -> None:
    # Shape of a packet-offload SA/policy dump from an mlx5 board (netdev ML, 2025),
    # addresses moved to the documentation ranges, indentation as mail shows it.
    board = """\
src 192.0.2.2 dst 192.0.2.1
        proto esp spi 0xc88b7652 reqid 1 mode tunnel
        replay-window 0 flag af-unspec esn
        aead rfc4106(gcm(aes)) 0xe406a01083986e14d116488549094710e9c57bc6 128
        anti-replay esn context:
         seq-hi 0x0, seq 0x0, oseq-hi 0x0, oseq 0x0
         replay_window 1, bitmap-length 1
         00000000
        crypto offload parameters: dev eth2 dir out mode packet

src 198.51.0.0/16 dst 198.51.0.0/16
        dir out priority 383615 ptype main
        tmpl src 192.0.2.2 dst 192.0.2.1
                proto esp spi 0xc88b7652 reqid 1 mode tunnel
        crypto offload parameters: dev eth2 mode packet
"""
    eth2 = FakeDevice("eth2")
    node = make_node(eth2)
    report = load_xfrm(node, board)
    (x,) = report.states
    (p,) = report.policies
    assert x.is_packet_offload and x.esn and x.replay_window == 1 and "af-unspec" in x.flags
    assert x.sel.is_zero and eth2.states == [x] and eth2.policies == [p]
    assert p.priority == 383615 and p.templates[0].spi == 0xC88B7652
    assert "\t 00000000 \n" in listing(node)


def test_errors_name_the_line() -> None:
    node = make_node(FakeDevice("wan"))
    text = "# header\n\nip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 1 \\\n"
    text += f"    {GCM}\nip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 1 {GCM}\n"
    with pytest.raises(LabFileError) as err:
        load_xfrm(node, text, source="lab.txt")
    assert str(err.value).startswith("lab.txt:5:1: RTNETLINK answers: File exists")
    assert isinstance(err.value.__cause__, KernelError)
    # ip -batch semantics: the line before the error stays applied, and the error says so.
    assert len(node.states) == 1
    assert str(err.value).endswith(
        "the load stopped there; what came before line 5 stays, as ip -batch leaves it: "
        "1 command(s) run, 1 state(s) and 0 policy(ies) added"
    )


@pytest.mark.parametrize(
    ("text", "line", "why"),
    [
        ("ip xfrm state add src 192.0.2.1\n", 1, "XFRM-PROTO"),
        ("ip link set wan up\n", 1, 'Object "link" is unknown'),
        ("\nhello world\n", 2, "expected an 'ip xfrm' command"),
        ("\tproto esp spi 0x1 reqid 0 mode transport\n", 1, "indented line outside"),
        ("ip xfrm state add 'unclosed\n", 1, "No closing quotation"),
        (
            "src 192.0.2.1 dst 192.0.2.2\n"
            "\tproto esp spi 0x00000001 reqid 0 mode transport\n"
            "\treplay-window 0 \n"
            "\taead rfc4106(gcm(aes)) <<Keys hidden>> 128\n",
            4,
            "keys are hidden",
        ),
        (
            "src 192.0.2.1 dst 192.0.2.2\n"
            "\tproto esp spi 0x00000001 reqid 0 mode transport\n"
            "\tsecurity context system_u:object_r:ipsec_spd_t:s0 \n",
            3,
            "cannot read this line of an SA",
        ),
        (
            "src 192.0.2.1 dst 192.0.2.2\n"
            "\tproto esp spi 0x00000001 reqid 0 mode transport\n"
            f"\taead rfc4106(gcm(aes)) 0x{'00' * 20} 128\n"
            "\tcrypto offload parameters: dev lan7 dir out mode packet\n",
            1,
            "no netdev lan7",
        ),
        (
            "src 192.0.2.1 dst 192.0.2.2\n"
            "\tproto esp spi 0x00000001 reqid 0 mode transport\n"
            f"\tenc cbc(aes) 0x{'00' * 15}\n",
            1,
            "setkey rejects a 15-byte key",
        ),
    ],
)
def test_load_error_messages(text: str, line: int, why: str) -> None:
    node = make_node(FakeDevice("wan"))
    with pytest.raises(LabFileError) as err:
        load_xfrm(node, text, source="paste")
    assert err.value.line == line and err.value.file == "paste"
    assert why in str(err.value)
    assert node.states == () and node.policies == ()


def test_printed_policy_against_the_seed_rule_fails_with_its_line() -> None:
    # A board dump that mixes priorities the seed rule forbids cannot be recreated
    # with policy_priority_rule=rfc; mainline takes it.
    dump = (
        "src 10.0.0.0/8 dst 10.0.0.0/8 \n\tdir out priority 5 \n"
        "\tcrypto offload parameters: dev wan mode packet\n"
        "src 10.1.0.0/16 dst 10.0.0.0/8 \n\tdir out priority 10 \n"
    )
    with pytest.raises(LabFileError) as err:
        load_xfrm(make_node(FakeDevice("wan")), dump)
    # Bottom-up: the software policy (line 4) goes in first, the offloaded one fails.
    assert err.value.line == 1 and "must be above every software priority" in str(err.value)
    node = make_node(FakeDevice("wan"), rule="mainline")
    load_xfrm(node, dump)
    assert listing(node) == dump


def test_comment_and_blank_lines_only() -> None:
    node = make_node()
    report = load_xfrm(node, "# nothing\n\n   \n")
    assert report.commands == 0 and node.states == ()
    with pytest.raises(ToolUsageError):
        ip(node, "ip xfrm state add")
