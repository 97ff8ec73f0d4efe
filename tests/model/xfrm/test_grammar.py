"""iproute2's ``ip xfrm`` grammar and the checks it makes (reference 5.1, 5.2)."""

from __future__ import annotations

import shlex
from ipaddress import ip_address, ip_interface

import pytest

from esplab.errors import ToolUsageError
from esplab.model.kernel.xfrm.objects import XFRM_INF, PolicyId, StateId, XfrmMark
from esplab.model.tools.iproute2.xfrm_grammar import IpXfrm, parse_ip_xfrm

from .fakes import FakeDevice
from .support import AUTH, ENC, GCM, ip, make_node, snapshot

SA = "src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000"


def parse(line: str) -> IpXfrm:
    return parse_ip_xfrm(shlex.split(line))


def test_state_add_fields() -> None:
    cmd = parse(
        f"ip xfrm state add {SA} reqid 0x10 mode tunnel {AUTH} {ENC} replay-window 32 "
        "flag noecn af-unspec extra-flag oseq-may-wrap sel src 198.51.100.0/24 proto udp dport 53 "
        "limit time-soft 10 limit byte-hard 1000 limit packet-soft 7 mark 5 mask 0xff "
        "encap espinudp-nonike 4500 4501 198.51.100.9 if_id 42 tfcpad 64 dir out seq 3 "
        "offload crypto dev wan dir out"
    )
    x = cmd.state
    assert x is not None and cmd.verb == "add"
    assert (x.src, x.dst, x.proto, x.spi, x.reqid) == (
        ip_address("192.0.2.1"),
        ip_address("192.0.2.2"),
        50,
        0x1000,
        16,
    )
    assert x.mode == "tunnel" and x.replay_window == 32 and x.seq == 3
    assert x.flags == {"noecn", "af-unspec"} and x.extra_flags == {"oseq-may-wrap"}
    assert x.sel.src == ip_interface("198.51.100.0/24") and x.sel.proto == 17
    assert (x.sel.dport, x.sel.dport_mask, x.sel.family) == (53, 0xFFFF, 4)
    assert x.lifetime.soft_add_expires_seconds == 10 and x.lifetime.hard_byte_limit == 1000
    assert x.lifetime.soft_packet_limit == 7 and x.lifetime.hard_packet_limit == XFRM_INF
    assert x.mark == XfrmMark(5, 0xFF)
    assert x.encap is not None and x.encap.type == "espinudp-nonike" and x.encap.dport == 4501
    assert (x.if_id, x.tfcpad, x.sa_dir) == (42, 64, "out")
    assert x.auth is not None and x.auth.name == "hmac(sha1)" and x.auth.icv_bits == 0
    assert x.enc is not None and x.enc.key == bytes(range(16))
    assert cmd.offload is not None and (cmd.offload.type, cmd.offload.dev) == ("crypto", "wan")
    assert cmd.devices == ("wan",)


def test_offload_mode_defaults_to_crypto_and_packet_word() -> None:
    # Reference 5.1: the mode word is optional; default crypto.
    off = parse(f"ip xfrm state add {SA} {GCM} offload dev wan dir in").offload
    assert off is not None and (off.type, off.dir) == ("crypto", "in")
    off = parse(f"ip xfrm state add {SA} {GCM} offload packet dev wan dir out").offload
    assert off is not None and off.type == "packet"


@pytest.mark.parametrize(
    ("tail", "message"),
    [
        # Reference 5.1: offload needs dev and dir.
        (f"{GCM} offload crypto wan dir out", 'argument "wan" is wrong: Missing dev keyword'),
        (f"{GCM} offload dev wan out", 'argument "out" is wrong: Missing DIR keyword'),
        (f"{GCM} offload dev wan", '"dev wan" must be followed by "dir in|out"'),
        (f"{GCM} offload full dev wan dir out", 'the RFC called it "full"'),
        (f"{GCM} offload dev wan dir fwd", 'argument "fwd" is wrong: DIR value is invalid'),
        # ESP needs enc or aead; AH needs auth.
        (AUTH, 'ALGO-TYPE value "enc" or "aead" is required with XFRM-PROTO value "esp"'),
        (f"{GCM} {ENC}", 'duplicate "ALGO-TYPE": "enc" is the second value.'),
        # esn needs a replay window unless the SA is dir out.
        (f"{GCM} flag esn", "esn flag set without replay-window"),
        (f"{GCM} replay-window 5000", "replay-window (5000) > XFRMA_REPLAY_ESN_MAX (4096)"),
        (f"{GCM} mode ro", 'MODE value is invalid with XFRM-PROTO value "esp"'),
        (f"{GCM} mode tunel", 'argument "tunel" is wrong: MODE value is invalid'),
        (f"{GCM} reqid -1", 'argument "-1" is wrong: value after "reqid" is invalid'),
        (f"{GCM} reqid 0x100000000", 'value after "reqid" is invalid'),
        (f"{GCM} flag esm", "did you mean esn?"),
        (f"{GCM} replay-windw 32", "did you mean replay-window?"),
        (f"{GCM} limit time-soft 1 byte-hard 2", 'each LIMIT needs its own "limit"'),
        (f"{GCM} coa 192.0.2.9", "not modelled by esplab"),
        (f"{GCM} src 192.0.2.3", "src, dst, proto and spi form one group"),
        (f"{GCM} aead", 'duplicate "ALGO-TYPE"'),
        (f"{GCM} mark", 'Command line is not complete. Try option "help"'),
        ("enc aes", 'argument "ALGO-KEYMAT" is required'),
    ],
)
def test_state_add_errors(tail: str, message: str) -> None:
    with pytest.raises(ToolUsageError) as err:
        parse(f"ip xfrm state add {SA} {tail}")
    assert message in str(err.value)


def test_esn_without_window_is_fine_for_an_output_sa() -> None:
    x = parse(f"ip xfrm state add {SA} {GCM} flag esn dir out").state
    assert x is not None and x.esn and x.replay_window == 0


def test_missing_spi_and_proto() -> None:
    # SPI 0 (no spi word) passes iproute2 and Linux 6.12 (tests/kernel/ cp-state-spi-zero).
    state = parse(f"ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp {GCM}").state
    assert state is not None and state.spi == 0
    with pytest.raises(ToolUsageError, match='SPI value is too large with XFRM-PROTO value "comp"'):
        parse("ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto comp spi 0x10000 comp deflate")
    with pytest.raises(ToolUsageError, match='argument "XFRM-PROTO" is required'):
        parse(f"ip xfrm state add src 192.0.2.1 dst 192.0.2.2 spi 1 {GCM}")
    with pytest.raises(ToolUsageError, match="Not enough information: ID is required"):
        parse(f"ip xfrm state add {GCM}")
    with pytest.raises(ToolUsageError, match="same address family"):
        parse(f"ip xfrm state add src 192.0.2.1 dst 2001:db8::1 proto esp spi 1 {GCM}")


def test_numbers_follow_strtoul_base_zero() -> None:
    # get_u32(..., 0): decimal, 0x hex and leading-0 octal.
    x = parse(
        f"ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 010 {GCM} reqid 0x1f"
    ).state
    assert x is not None and (x.spi, x.reqid) == (8, 31)


def test_key_as_literal_string() -> None:
    x = parse(f"ip xfrm state add {SA} aead 'rfc4106(gcm(aes))' 1234567890123456dcba 128").state
    assert x is not None and x.aead is not None and x.aead.key == b"1234567890123456dcba"


def test_abbreviations() -> None:
    # iproute2 matches(): "ip x s l", "ip xfrm s", "ip x p", "d" is delete, "dela" deleteall.
    assert (parse("ip x s l").obj, parse("ip x s l").verb) == ("state", "list")
    assert parse("ip xfrm s").verb == "list"
    assert parse("ip xfrm sa show").verb == "list"
    assert parse("ip x p").obj == "policy"
    assert parse(f"ip x s d {SA}").verb == "delete"
    assert parse("ip x s dela").verb == "deleteall"
    assert parse("ip x p f").verb == "flush"
    assert parse("ip x s c").verb == "count"
    assert parse("ip -s -s x p c").stats == 2
    assert parse("ip -stats xfrm state").stats == 1
    assert parse("xfrm state list").obj == "state"
    assert parse("ip -6 x s").family == 6


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("ip xfrm stte", 'Object "stte" is unknown'),
        ("ip xfrm state lsit", 'Command "lsit" is unknown, try "ip xfrm state help".'),
        # Both as iproute2 6.15 answers on Linux 6.12.
        ("ip xfrm state allocspi src 1.2.3.4", 'argument "XFRM-PROTO" is required'),
        ("ip xfrm monitor bogus", 'Argument "bogus" is unknown, try "ip xfrm monitor help".'),
        ("ip link show", 'Object "link" is unknown'),
        # ip.c main() knows -j (-json); esplab does not model it, as the ip command says.
        ("ip -j xfrm state", 'Option "-j" (-json) is not modelled by esplab'),
        ("ip -z xfrm state", 'Option "-z" is unknown, try "ip -help".'),
        ("ip xfrm", "Usage: ip xfrm XFRM-OBJECT"),
        ("ip xfrm state flush proto esq", "did you mean esp?"),
        ("ip xfrm policy flush ptype mian", "did you mean main?"),
    ],
)
def test_top_level_errors(line: str, message: str) -> None:
    with pytest.raises(ToolUsageError) as err:
        parse(line)
    assert message in str(err.value)


def test_state_get_delete_ids() -> None:
    cmd = parse(f"ip xfrm state get {SA} mark 7")
    assert cmd.state_id == StateId(ip_address("192.0.2.2"), 0x1000, 50, 7)
    with pytest.raises(ToolUsageError, match='argument "ID" is required'):
        parse("ip xfrm state delete mark 7")


def test_state_list_filter() -> None:
    cmd = parse("ip xfrm state list nokeys dst 192.0.2.0/24 proto esp mode tunnel reqid 3")
    f = cmd.state_filter
    assert cmd.nokeys and f is not None
    assert (f.dst, f.proto, f.mode, f.reqid, f.family) == (
        ip_interface("192.0.2.0/24"),
        50,
        "tunnel",
        3,
        4,
    )


def test_policy_add_fields() -> None:
    cmd = parse(
        "ip xfrm policy add src 198.51.100.0/24 dst 203.0.113.0/24 proto tcp sport 80 dir fwd "
        "priority 7 action block index 10 ptype main flag localok icmp mark 1 if_id 3 "
        "limit time-hard 60 tmpl src 192.0.2.1 dst 192.0.2.2 proto esp spi 9 reqid 3 "
        "mode tunnel level use tmpl proto ah offload packet dev wan"
    )
    p = cmd.policy
    assert p is not None
    assert (p.dir, p.priority, p.action, p.index, p.if_id) == ("fwd", 7, "block", 10, 3)
    assert p.flags == {"localok", "icmp"} and p.sel.proto == 6 and p.sel.sport == 80
    assert p.lifetime.hard_add_expires_seconds == 60
    t1, t2 = p.templates
    assert (t1.spi, t1.reqid, t1.mode, t1.level) == (9, 3, "tunnel", "use")
    # validate_tmpl: template addresses left out are zero of the policy family.
    assert (t2.proto, str(t2.src), str(t2.dst)) == (51, "0.0.0.0", "0.0.0.0")
    assert cmd.offload is not None and (cmd.offload.dev, cmd.offload.dir) == ("wan", "fwd")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("src 10.0.0.0/8", "Not enough information: DIR is required."),
        ("dir out offload crypto dev wan", 'argument "crypto" is wrong: Invalid offload mode'),
        ("dir out offload packet wan", "Missing dev keyword"),
        ("dir out tmpl mode tunnel", 'argument "XFRM-PROTO" is required'),
        ("dir out action deny", "ACTION value is invalid"),
        ("dir in dir out", 'duplicate "dir"'),
        ("dir out proto icmp sport 1", '"sport" and "dport" are invalid with PROTO value "1"'),
        ("dir out priorty 5", "did you mean priority?"),
        ("dir out src 10.0.0.1 dst 2001:db8::1", "same address family"),
    ],
)
def test_policy_add_errors(line: str, message: str) -> None:
    with pytest.raises(ToolUsageError) as err:
        parse(f"ip xfrm policy add {line}")
    assert message in str(err.value)


def test_policy_get_ids() -> None:
    cmd = parse("ip xfrm policy delete src 192.0.2.1 dst 192.0.2.2 dir out")
    pid = cmd.policy_id
    assert pid is not None and pid.sel is not None and pid.sel.family == 4
    assert parse("ip xfrm policy get index 9 dir out").policy_id == PolicyId("out", index=9)
    with pytest.raises(ToolUsageError, match="either SELECTOR or INDEX is required"):
        parse("ip xfrm policy get dir out")
    with pytest.raises(ToolUsageError, match='either "SELECTOR" or "INDEX" is duplicate'):
        parse("ip xfrm policy get src 10.0.0.1 index 9 dir out")


def test_help_prints_usage() -> None:
    node = make_node()
    assert ip(node, "ip xfrm state help").text.startswith("Usage: ip xfrm state { add | update }")
    assert "offload packet dev DEV" in ip(node, "ip xfrm policy help").text


def test_unknown_device_is_invalid_device_name() -> None:
    # iproute2 ll_name_to_index fails before anything reaches the kernel.
    node = make_node(FakeDevice("wan"))
    before = snapshot(node)
    with pytest.raises(ToolUsageError, match='argument "lan9" is wrong: Invalid device name'):
        ip(node, f"ip xfrm state add {SA} {GCM} offload dev lan9 dir out")
    with pytest.raises(ToolUsageError, match="Invalid device name"):
        ip(node, "ip xfrm policy add dir out dev lan9")
    assert snapshot(node) == before


def test_a_double_dash_ends_ips_options() -> None:
    # ip.c main(): "--" ends the options; load and SA files read lines as the prompt does.
    assert parse(f"ip -s -- xfrm state add {SA} {AUTH} {ENC}") == parse(
        f"ip -s xfrm state add {SA} {AUTH} {ENC}"
    )
    with pytest.raises(ToolUsageError, match='Object "-4" is unknown'):
        parse("ip -- -4 xfrm state")
