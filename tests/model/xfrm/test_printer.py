"""Byte-exact ``ip xfrm`` output (reference airoha-dsa-xfrm.md 5.4, 5.5, 6.27-6.29)."""

from __future__ import annotations

import pytest

from esplab.errors import NotFound
from esplab.model.kernel.xfrm.stats import XFRM_MIB, XfrmMib
from esplab.model.kernel.xfrm.tables import XfrmNode

from .fakes import FakeDevice
from .support import AUTH, ENC, GCM, ip, make_node

# Reference 5.5 (a): the seeds' SA, as `ip xfrm state` prints it.
EXAMPLE_A_STATE = (
    "src 192.0.2.1 dst 192.0.2.2\n"
    "\tproto esp spi 0x00001000 reqid 1 mode transport\n"
    "\treplay-window 0 \n"
    "\tauth-trunc hmac(sha1) 0x0102030405060708090a0b0c0d0e0f1011121314 96\n"
    "\tenc cbc(aes) 0x000102030405060708090a0b0c0d0e0f\n"
    "\tanti-replay context: seq 0x0, oseq 0x0, bitmap 0x00000000\n"
    "\tsel src 0.0.0.0/0 dst 0.0.0.0/0 \n"
)

# Reference 5.5 (c): the packet-offload SA and policy on wan.
EXAMPLE_C_STATE = (
    "src 192.0.2.1 dst 192.0.2.2\n"
    "\tproto esp spi 0x00003000 reqid 3 mode tunnel\n"
    "\treplay-window 0 \n"
    "\taead rfc4106(gcm(aes)) 0x00112233445566778899aabbccddeeff01020304 128\n"
    "\tanti-replay context: seq 0x0, oseq 0x0, bitmap 0x00000000\n"
    "\tcrypto offload parameters: dev wan dir out mode packet\n"
    "\tsel src 198.51.100.0/24 dst 203.0.113.0/24 \n"
)
EXAMPLE_C_POLICY = (
    "src 198.51.100.0/24 dst 203.0.113.0/24 \n"
    "\tdir out priority 100 \n"
    "\ttmpl src 192.0.2.1 dst 192.0.2.2\n"
    "\t\tproto esp reqid 3 mode tunnel\n"
    "\tcrypto offload parameters: dev wan mode packet\n"
)


def example_a() -> XfrmNode:
    node = make_node()
    # Reference 5.5 (a), the four commands: aliases for the first SA, canonical
    # names for the second.
    ip(
        node,
        f"ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1 "
        f"mode transport {AUTH} {ENC}",
    )
    ip(
        node,
        "ip xfrm state add src 192.0.2.2 dst 192.0.2.1 proto esp spi 0x1001 reqid 1 "
        "mode transport auth 'hmac(sha1)' 0x0102030405060708090a0b0c0d0e0f1011121314 "
        "enc 'cbc(aes)' 0x000102030405060708090a0b0c0d0e0f",
    )
    ip(
        node,
        "ip xfrm policy add src 192.0.2.1/32 dst 192.0.2.2/32 dir out "
        "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 1 mode transport",
    )
    ip(
        node,
        "ip xfrm policy add src 192.0.2.2/32 dst 192.0.2.1/32 dir in "
        "tmpl src 192.0.2.2 dst 192.0.2.1 proto esp reqid 1 mode transport",
    )
    return node


def test_example_a_state_byte_exact() -> None:
    node = example_a()
    got = ip(node, "ip xfrm state get src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000").text
    assert got == EXAMPLE_A_STATE


def test_example_a_listing_is_newest_first() -> None:
    # Kernel __xfrm_state_insert / __xfrm_policy_link use list_add: dumps start
    # with the newest entry.
    node = example_a()
    text = ip(node, "ip xfrm state").text
    assert text.index("spi 0x00001001") < text.index("spi 0x00001000")
    assert text.endswith(EXAMPLE_A_STATE)
    policies = ip(node, "ip xfrm policy").text
    # Reference 5.4, policy lines 1-3.
    assert policies == (
        "src 192.0.2.2/32 dst 192.0.2.1/32 \n"
        "\tdir in priority 0 \n"
        "\ttmpl src 192.0.2.2 dst 192.0.2.1\n"
        "\t\tproto esp reqid 1 mode transport\n"
        "src 192.0.2.1/32 dst 192.0.2.2/32 \n"
        "\tdir out priority 0 \n"
        "\ttmpl src 192.0.2.1 dst 192.0.2.2\n"
        "\t\tproto esp reqid 1 mode transport\n"
    )


def test_fact_6_27_canonical_names_and_auth_trunc() -> None:
    # Reference 6.27: sha1 -> hmac(sha1), aes -> cbc(aes), plain auth prints as auth-trunc 96.
    node = example_a()
    text = ip(node, "ip xfrm state").text
    assert text.count("\tauth-trunc hmac(sha1) ") == 2
    assert text.count(" 96\n") == 2
    assert text.count("\tenc cbc(aes) ") == 2
    assert " sha1 " not in text and " aes " not in text


def test_example_c_byte_exact() -> None:
    wan = FakeDevice("wan")
    node = make_node(wan)
    # Reference 5.5 (c), on a device that supports packet offload.
    ip(
        node,
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x3000 reqid 3 "
        f"mode tunnel {GCM} sel src 198.51.100.0/24 dst 203.0.113.0/24 "
        "offload packet dev wan dir out",
    )
    ip(
        node,
        "ip xfrm policy add src 198.51.100.0/24 dst 203.0.113.0/24 dir out priority 100 "
        "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 3 mode tunnel "
        "offload packet dev wan",
    )
    assert ip(node, "ip xfrm state").text == EXAMPLE_C_STATE
    assert ip(node, "ip xfrm policy").text == EXAMPLE_C_POLICY


def test_fact_6_28_offload_line_formats() -> None:
    # Reference 6.28: dir and mode on states, only the mode on policies.
    assert "\tcrypto offload parameters: dev wan dir out mode packet\n" in EXAMPLE_C_STATE
    node = make_node(FakeDevice("wan"))
    ip(
        node,
        f"ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 9 {GCM} "
        "offload dev wan dir in",
    )
    assert "\tcrypto offload parameters: dev wan dir in mode crypto\n" in ip(node, "ip x s").text


def test_esn_context_lines() -> None:
    # iproute2 xfrm_xfrma_print: the ESN form, one TAB plus a space, and each
    # bitmap word followed by a space.
    node = make_node()
    ip(
        node,
        f"ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 7 {GCM} "
        "flag esn replay-window 64 replay-seq 3",
    )
    text = ip(node, "ip xfrm state").text
    assert "\treplay-window 0 flag esn\n" in text
    assert (
        "\tanti-replay esn context:\n"
        "\t seq-hi 0x0, seq 0x3, oseq-hi 0x0, oseq 0x0\n"
        "\t replay_window 64, bitmap-length 2\n"
        "\t 00000000 00000000 \n"
    ) in text


def test_stats_listing_lines() -> None:
    # Reference 3.8 and iproute2 xfrm_stats_print / xfrm_lifetime_print.
    node = example_a()
    x = node.states[-1]
    x.stats.replay, x.stats.integrity_failed, x.stats.replay_window = 2, 1, 3
    x.curlft.bytes, x.curlft.packets = 1500, 10
    text = ip(node, "ip -s xfrm state get src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000").text
    assert "\tproto esp spi 0x00001000(4096) reqid 1(0x00000001) mode transport\n" in text
    assert "\treplay-window 0 seq 0x00000000 flag  (0x00000000)\n" in text
    assert "(160 bits) 96\n" in text
    assert "\tsel src 0.0.0.0/0 dst 0.0.0.0/0 uid 0\n" in text
    assert text.endswith(
        "\tlifetime config:\n"
        "\t  limit: soft (INF)(bytes), hard (INF)(bytes)\n"
        "\t  limit: soft (INF)(packets), hard (INF)(packets)\n"
        "\t  expire add: soft 0(sec), hard 0(sec)\n"
        "\t  expire use: soft 0(sec), hard 0(sec)\n"
        "\tlifetime current:\n"
        "\t  1500(bytes), 10(packets)\n"
        "\t  add 2026-01-01 00:00:00 use -\n"
        "\tstats:\n"
        "\t  replay-window 3 replay 2 failed 1\n"
    )


def test_optional_lines_in_order() -> None:
    # Reference 5.4 items 4-7: mark before the algorithms; encap, anti-replay,
    # offload, if_id, tfcpad, dir, then the selector.
    node = make_node()
    ip(
        node,
        f"ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 5 mode tunnel {GCM} "
        "mark 5 encap espinudp 4500 4500 0.0.0.0 if_id 0x2a tfcpad 32 dir out",
    )
    lines = ip(node, "ip xfrm state").text.splitlines()
    heads = [line.split()[0] for line in lines[2:]]
    assert heads == [
        "replay-window",
        "mark",
        "aead",
        "encap",
        "anti-replay",
        "if_id",
        "tfcpad",
        "dir",
        "sel",
    ]
    assert "\tmark 0x5/0xffffffff " in lines
    assert "\tif_id 0x2a" in lines and "\ttfcpad 32" in lines and "\tdir out" in lines


def test_nokeys_and_af_unspec() -> None:
    node = make_node()
    ip(node, f"ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 5 {GCM} flag af-unspec")
    text = ip(node, "ip xfrm state list nokeys").text
    assert "\taead rfc4106(gcm(aes)) <<Keys hidden>> 128\n" in text
    # copy_from_user_state leaves an af-unspec SA's selector zero: no sel line.
    assert "sel" not in text
    assert "\treplay-window 0 flag af-unspec\n" in text


def test_counts() -> None:
    node = example_a()
    # iproute2 print_sadinfo / print_spdinfo.
    assert ip(node, "ip xfrm state count").text == "\t SAD count 2\n"
    assert ip(node, "ip xfrm policy count").text == "\t SPD IN  1 OUT 1 FWD 0\n"
    assert ip(node, "ip -s xfrm policy count").text == (
        "\t SPD IN  1 OUT 1 FWD 0 (Sock: IN 0 OUT 0 FWD 0)\n"
    )


def test_fact_6_29_proc_xfrm_stat() -> None:
    # Reference 6.29 / 3.8: "%-24s\t%lu" per counter, in the fixed order.
    mib = XfrmMib()
    mib.bump("XfrmOutNoStates", 3)
    lines = mib.render().splitlines()
    assert [line.split("\t")[0].rstrip() for line in lines] == list(XFRM_MIB)
    assert lines[0] == "XfrmInError             \t0"
    assert "XfrmOutNoStates         \t3" in lines
    assert all(len(line.split("\t")[0]) == 24 for line in lines)
    assert XFRM_MIB[:3] == ("XfrmInError", "XfrmInBufferError", "XfrmInHdrError")
    assert XFRM_MIB[-4:] == (
        "XfrmOutStateDirError",
        "XfrmInStateDirError",
        "XfrmInIptfsError",
        "XfrmOutNoQueueSpace",
    )


def test_mib_rejects_unknown_counter() -> None:
    with pytest.raises(NotFound, match="did you mean XfrmOutNoStates"):
        XfrmMib().bump("XfrmOutNoState")
