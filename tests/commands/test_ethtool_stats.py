"""ethtool -S: the DSA user port's four software counters and the switch port MIB,
the conduit's CPU-port MIB with its p06_ prefix, and no strings on wan."""

from __future__ import annotations

import pytest

from esplab.commands.handlers.ethtool import MT7530_MIB, NO_STATS
from esplab.commands.result import TextResult
from esplab.commands.session import Session
from esplab.errors import NotFound

SEND = 'send ap lan2 IP(dst="198.51.100.66")/UDP(sport=1234,dport=7)/Raw(b"x"*20)'


def stats(s: Session, dev: str) -> TextResult:
    result = s.execute(f"ethtool -S {dev}")
    assert isinstance(result, TextResult)
    return result


def names(result: TextResult) -> list[str]:
    return [line.split(":")[0].strip() for line in result.text.splitlines()[1:]]


def test_a_user_port_shows_its_counters_then_the_port_mib() -> None:
    # net/dsa/user.c dsa_user_get_strings: tx_packets, tx_bytes, rx_packets, rx_bytes,
    # then the switch driver's strings; mt7530_mib[] has 41 names, TxDrop first and
    # RxArlDrop last (drivers/net/dsa/mt7530.c).
    result = stats(Session(), "lan2")
    assert result.text.startswith("NIC statistics:\n     tx_packets: 0\n")
    assert names(result) == ["tx_packets", "tx_bytes", "rx_packets", "rx_bytes", *MT7530_MIB]
    assert len(MT7530_MIB) == 41
    assert MT7530_MIB[:5] == ("TxDrop", "TxCrcErr", "TxUnicast", "TxMulticast", "TxBroadcast")
    assert MT7530_MIB[-4:] == ("RxBytes", "RxCtrlDrop", "RxIngressDrop", "RxArlDrop")
    assert "rx_errors" not in result.text and "rx_otherhost_dropped" not in result.text


def test_the_conduit_shows_the_cpu_port_mib_prefixed_p06() -> None:
    # dsa_conduit_get_strings: the Ethernet driver's strings (airoha_eth has none),
    # then the CPU port's, each behind "p%.2d_" of port 6.
    result = stats(Session(), "eth0")
    assert names(result) == [f"p06_{name}" for name in MT7530_MIB]


def test_wan_has_no_strings_and_ethtool_fails() -> None:
    # airoha_eth's ethtool_ops have no get_strings/get_sset_count; ethtool's do_gstats
    # then prints "no stats available" on stderr and exits 94: an error, not output.
    s = Session()
    with pytest.raises(NotFound) as info:
        s.execute("ethtool -S wan")
    assert str(info.value) == (
        f"{NO_STATS} on wan: its driver has no ETH_SS_STATS strings; "
        "valid: eth0, lan1, lan2, lan3, lan4"  # lo has none either (Linux 6.12)
    )


def test_bytes_follow_the_frames_and_the_tag() -> None:
    s = Session()
    s.execute(SEND)
    lan2 = stats(s, "lan2").data
    wire = s.lab.node("ap").devs["lan2"].counters.tx_bytes
    assert lan2["tx_packets"] == 1 and lan2["tx_bytes"] == wire
    assert lan2["TxBytes"] == wire and lan2["RxBytes"] == 0
    # What GDM1 sends, CPU port 6 receives, with the 4-byte special tag.
    eth0 = stats(s, "eth0").data
    assert eth0["p06_RxBytes"] == wire + 4
    assert eth0["p06_TxBytes"] == 0
    # Counters the model does not keep read 0.
    assert lan2["TxCollision"] == 0 and eth0["p06_RxPause"] == 0


def test_frames_count_by_destination_class_and_size() -> None:
    # mt7530_mib[]: TxUnicast/Multicast/Broadcast by the destination MAC's group bit
    # (all ones: broadcast) and TxPktSz64 ... Tx1024ToMax by the frame's 802.3 size
    # (padded to 60 bytes, plus the 4-byte FCS); the same for Rx. Going out of lan2,
    # front port 2 sends and CPU port 6 receives (with the 4-byte special tag).
    s = Session()
    s.execute(SEND)  # 62 bytes: 66 on the wire, unicast
    s.execute('send ap lan2 Ether(dst="ff:ff:ff:ff:ff:ff")/IP(dst="198.51.100.66")/UDP()')
    s.execute('send ap lan2 Ether(dst="01:00:5e:00:00:01")/IP(dst="224.0.0.1")/UDP()')
    s.execute('send ap lan2 IP(dst="198.51.100.66")/UDP()/Raw(b"y"*1100)')  # 1142 bytes
    s.execute('send pc2 eth0 IP(dst="198.51.100.65")/UDP()/Raw(b"z"*100)')  # 142 bytes in
    lan2, eth0 = stats(s, "lan2").data, stats(s, "eth0").data
    sent = {k: lan2[k] for k in ("TxUnicast", "TxMulticast", "TxBroadcast")}
    assert sent == {"TxUnicast": 2, "TxMulticast": 1, "TxBroadcast": 1}
    # 42-byte frames are padded to 64: PktSz64; 62 bytes are 66: 65To127.
    buckets = (lan2["TxPktSz64"], lan2["TxPktSz65To127"], lan2["Tx1024ToMax"])
    assert buckets == (2, 1, 1)
    assert (lan2["RxUnicast"], lan2["RxPktSz128To255"], lan2["RxBytes"]) == (1, 1, 142)
    cpu = {k: eth0[f"p06_{k}"] for k in ("RxUnicast", "RxMulticast", "RxBroadcast")}
    assert cpu == {"RxUnicast": 2, "RxMulticast": 1, "RxBroadcast": 1}
    assert (eth0["p06_RxPktSz64"], eth0["p06_RxPktSz65To127"]) == (2, 1)
    assert (eth0["p06_TxUnicast"], eth0["p06_TxPktSz128To255"], eth0["p06_TxBytes"]) == (
        1,
        1,
        146,
    )


def test_a_vlan_frame_keeps_its_length_through_the_tagger() -> None:
    # mtk_tag_xmit merges the tag with an 802.1Q header (2.2): no bytes are added on the
    # GDM1 <-> CPU port link, so the conduit and the CPU port count the frame as sent.
    s = Session()
    s.execute('send ap lan2 Ether(dst="02:00:00:00:00:02")/Dot1Q(vlan=5)/IP(dst="198.51.100.66")')
    frame = s.lab.node("ap").devs["lan2"].counters.tx_bytes
    eth0 = stats(s, "eth0").data
    assert eth0["p06_RxBytes"] == frame == s.lab.node("ap").devs["eth0"].counters.tx_bytes


def test_frames_around_the_switch_count_too() -> None:
    # A frame the conduit sends itself (no user port's tag) still reaches CPU port 6.
    s = Session()
    s.execute('send ap eth0 Ether(dst="02:00:00:00:00:09")/IP(src="192.0.2.1",dst="192.0.2.9")')
    eth0 = stats(s, "eth0").data
    assert (eth0["p06_RxUnicast"], eth0["p06_RxPktSz64"], eth0["p06_RxBytes"]) == (1, 1, 34)


def test_ip_s_link_keeps_the_rtnl_counters() -> None:
    s = Session()
    s.execute(SEND)
    result = s.execute("ip -s link show lan2")
    assert isinstance(result, TextResult)
    # The header ends in blanks (print_stats64 pads its columns), as iproute2 6.15 prints it.
    assert (
        "    TX:  bytes packets errors dropped carrier collsns           \n            62       1"
        in (result.text)
    )


def test_xdp_and_af_xdp_transmits_cross_the_switch_and_count() -> None:
    # XDP_TX on lan2 sends the frame back out through the conduit and the switch; so
    # does an AF_XDP socket's transmit: front port Tx, CPU port Rx with the tag.
    s = Session()
    s.execute("xdp attach lan2 skb tx")
    s.execute('send pc2 eth0 IP(dst="198.51.100.65")/UDP()/Raw(b"x"*100)')  # 142 bytes
    lan2, eth0 = stats(s, "lan2").data, stats(s, "eth0").data
    assert (lan2["TxUnicast"], lan2["TxBytes"]) == (1, lan2["tx_bytes"]) == (1, 142)
    assert (eth0["p06_RxUnicast"], eth0["p06_RxBytes"]) == (1, 146)
    s = Session()
    for line in ("xsk create s0", "xsk bind s0 lan2 0 copy", "xsk send s0 1 size 100"):
        s.execute(line)
    lan2, eth0 = stats(s, "lan2").data, stats(s, "eth0").data
    assert (lan2["TxUnicast"], lan2["TxBytes"], eth0["p06_RxBytes"]) == (1, 96, 100)
