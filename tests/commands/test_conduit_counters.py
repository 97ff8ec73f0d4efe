"""The DSA conduit's counters move with its user ports' traffic (GDM1's MIB)."""

from __future__ import annotations

from esplab.commands.session import Session


def test_user_port_traffic_counts_on_the_conduit_with_the_tag() -> None:
    s = Session()
    ap = s.lab.node("ap")
    s.execute('send ap lan1 IP(dst="198.51.100.2")/UDP()/Raw(b"x"*10) count 2')
    s.execute('pc3 send eth0 IP(dst="198.51.100.129")/UDP()')
    lan1, lan3, eth0 = ap.devs["lan1"].counters, ap.devs["lan3"].counters, ap.devs["eth0"].counters
    assert (lan1.tx_packets, lan1.tx_bytes) == (2, 2 * 52)  # 14 + 20 + 8 + 10
    # The conduit carries both frames with the 4-byte MTK tag (airoha-dsa-xfrm.md 2.2).
    assert (eth0.tx_packets, eth0.tx_bytes) == (2, 2 * 56)
    assert (lan3.rx_packets, lan3.rx_bytes) == (1, 42)
    assert (eth0.rx_packets, eth0.rx_bytes) == (1, 46)
    # wan traffic does not touch the conduit.
    s.execute('send ap wan IP(dst="192.0.2.2")/UDP()')
    assert eth0.tx_packets == 2
    trace = s.lab.journeys.get(1)
    assert trace is not None
    dma = trace.stage("eth0.dma")
    assert dma is not None and dma.counters == {"tx_packets": 1}


def test_a_frame_for_a_port_that_is_down_never_reaches_the_conduit() -> None:
    s = Session()
    s.execute("ip link set lan3 down")
    s.execute('pc3 send eth0 IP(dst="198.51.100.129")/UDP()')
    ap = s.lab.node("ap")
    assert ap.devs["eth0"].counters.rx_packets == 0
    assert ap.devs["lan3"].counters.rx_dropped == 1
    j = s.lab.journeys.get()
    assert j is not None and "eth0.dma" not in j.taps()


def test_the_conduit_descriptors_are_what_the_driver_reads_and_writes() -> None:
    # airoha-dsa-xfrm.md 1.6: the RX descriptor the driver reads has DONE set and a
    # buffer address; both directions carry NEXT_ID of the next ring entry.
    from esplab.layers.qdma import QDMADescriptor, QDMARxDescriptor
    from esplab.model.journey.l2 import QDMA_NEXT_ID, QDMA_RX_BUF_ADDR, QDMA_TX_BUF_ADDR

    s = Session()
    s.execute('send pc2 eth0 IP(dst="198.51.100.65")/UDP()')
    s.execute('send ap lan2 IP(dst="198.51.100.66")/UDP()')
    rx_stage = s.lab.journeys.get(1).stage("eth0.dma")  # type: ignore[union-attr]
    tx_stage = s.lab.journeys.get(2).stage("eth0.dma")  # type: ignore[union-attr]
    assert rx_stage is not None and rx_stage.data is not None
    assert tx_stage is not None and tx_stage.data is not None
    rx = QDMARxDescriptor(rx_stage.data)
    assert (rx.done, rx.addr, rx.next_id, rx.sptag) == (1, QDMA_RX_BUF_ADDR, QDMA_NEXT_ID, 2)
    assert (rx.ip4, rx.l4_valid, rx.l4f) == (1, 1, 0)
    tx = QDMADescriptor(tx_stage.data)
    assert (tx.done, tx.addr, tx.next_id, tx.sp_tag) == (0, QDMA_TX_BUF_ADDR, QDMA_NEXT_ID, 4)
