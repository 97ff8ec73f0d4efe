"""The lab's XDP glue: ports per device, the receive hook's stages and verdicts, sockets,
the TX journeys and xdpsock on a device (esplab.model.journey.xdp, xdp_lab_xsk, xdp_lab_run)."""

from __future__ import annotations

import pytest

from esplab.errors import InvalidValue, KernelError, NoSuchPort, NotFound, StateConflict
from esplab.layers.xdp import XDPDesc
from esplab.model.journey import xsk
from esplab.model.journey.xdp import PROG_COUNTS, XdpLab, lab_xdp, undone_on_failure, with_errno
from esplab.model.journey.xdp_rx import xdp_rx_hook
from esplab.model.journey.xdpsock_run import run_xdpsock
from esplab.model.kernel.xdp.consts import AttachMode, Benchmark, BindFlag, XskMode
from esplab.model.kernel.xdp.program import XskRedirect
from esplab.model.kernel.xdp.umem import FrameState
from esplab.model.lab import Lab
from esplab.model.stage import Journey


@pytest.fixture
def lab() -> Lab:
    return Lab()


@pytest.fixture
def xl(lab: Lab) -> XdpLab:
    return lab_xdp(lab)


def frame(lab: Lab, index: int = 1, size: int = 64) -> bytes:
    """What host eth0 puts on the wire towards the ap's wan."""
    return xsk.tx_frame(lab, "host", "eth0", index, size)


def receive(lab: Lab, data: bytes | None = None) -> tuple[bool, Journey]:
    journey = lab.journeys.new("test")
    consumed = xdp_rx_hook(lab, "ap", "wan", frame(lab) if data is None else data, journey)
    return consumed, journey


def socket_on_wan(xl: XdpLab, flags: BindFlag | None = None, fill: int = 8, ring: int = 16) -> None:
    xsk.create(xl, "xsk0", "ap", 16, 4096, 0, ring)
    xsk.bind(xl, "xsk0", "ap", "wan", 0, flags, False)
    if fill:
        xsk.fill(xl, "xsk0", fill)


# ---- ports and state ---------------------------------------------------------------------
def test_state_lives_on_the_lab(lab: Lab) -> None:
    assert lab_xdp(lab) is lab_xdp(lab)
    assert lab_xdp(Lab()) is not lab_xdp(lab)


def test_default_profiles_and_ports_on_first_use(xl: XdpLab) -> None:
    assert not xl.ports
    assert xl.port("ap", "wan").profile == "zc"  # GDM: modelled zero-copy profile [M]
    assert xl.port("ap", "lan1").profile == "generic"  # DSA user port: no ndo_bpf
    assert xl.port("host", "eth0").tap == "host"  # the datapath's tap names
    assert xl.port("ap", "wan").tap == "wan"
    assert xl.port("ap", "wan") is xl.port("ap", "wan")
    with pytest.raises(NoSuchPort):
        xl.port("ap", "wan9")


def test_the_xdp_side_is_the_devices_own(lab: Lab, xl: XdpLab) -> None:
    wan = lab.node("ap").dev("wan")
    assert wan.xdp is None  # made on first use
    xp = xl.port("ap", "wan")
    assert wan.xdp is xp.port and xp.port.dev is wan and xp.port.name == "wan"
    wan.up = False  # the device's state, read by its XDP side with no copy to keep
    assert not xp.port.up and not xp.port.receive(frame(lab))
    old = xp.port
    xl.set_driver("ap", "wan", "am65-cpsw")
    assert wan.xdp is xp.port is not old and xp.port.driver.name == "am65-cpsw-nuss"


def test_a_failed_command_forgets_the_xdp_side_it_made(lab: Lab) -> None:
    with pytest.raises(KernelError), undone_on_failure(lab) as xl:
        xl.port("ap", "lan1")
        xsk.create(xl, "xsk0", "ap", 16, 4096, 0, 16)
        xsk.bind(xl, "xsk0", "ap", "lan1", 0, BindFlag.ZEROCOPY, False)  # generic: EOPNOTSUPP
    assert lab.xdp_state is None and lab.node("ap").dev("lan1").xdp is None


def test_am65_ports_of_a_node_share_one_cpsw(xl: XdpLab) -> None:
    a = xl.set_driver("ap", "wan", "am65-cpsw").port
    b = xl.set_driver("ap", "eth0", "am65-cpsw").port
    assert a.cpsw is not None and a.cpsw is b.cpsw  # 4.2 patch 3: shared RX flows


def test_driver_cannot_change_while_in_use(xl: XdpLab) -> None:
    xl.attach("ap", "wan", "native", "drop")
    with pytest.raises(StateConflict, match="in use"):
        xl.set_driver("ap", "wan", "am65-cpsw")
    with pytest.raises(NotFound, match="did you mean"):
        xl.set_driver("ap", "eth0", "am65")


def test_attach_errors_carry_errno_names(xl: XdpLab) -> None:
    xl.attach("ap", "wan", "native", "drop")
    with pytest.raises(KernelError) as err:
        xl.attach("ap", "wan", "native", "pass")  # iproute2 without -force
    assert err.value.errno_name == "EBUSY" and "[EBUSY]" in str(err.value)
    with pytest.raises(KernelError) as err:
        xl.attach("ap", "wan", "skb", "pass", force=True)
    assert err.value.errno_name == "EEXIST"
    with pytest.raises(KernelError) as err:
        xl.attach("ap", "lan1", "native", "drop")
    assert err.value.errno_name == "EOPNOTSUPP" and "mode skb" in str(err.value)
    with pytest.raises(KernelError) as err:
        xl.attach("ap", "lan1", "zc", "drop")
    assert err.value.errno_name == "EOPNOTSUPP" and "[EOPNOTSUPP]" in str(err.value)
    with pytest.raises(KernelError) as err:
        xl.detach("ap", "eth0")
    assert err.value.errno_name == "ENOENT"
    with pytest.raises(InvalidValue, match="no RX queue 4"):
        xl.attach("ap", "eth0", "native", "drop", queue=4)
    xl.attach("ap", "wan", "native", "pass", force=True)
    assert xl.port("ap", "wan").program == "pass"


def test_with_errno_is_idempotent() -> None:
    exc = KernelError("EBUSY", "queue 0 taken", prefix="bind")
    with_errno(exc, "why one")
    with_errno(exc, "why one")
    assert str(exc) == "bind: Device or resource busy [EBUSY] (queue 0 taken); why one"


# ---- the receive hook: one test per action ----------------------------------------------
def test_no_program_means_not_consumed_and_nothing_recorded(lab: Lab, xl: XdpLab) -> None:
    consumed, journey = receive(lab)
    assert consumed is False and journey.stages == []
    xl.port("ap", "wan")  # a port without a program
    consumed, journey = receive(lab)
    assert consumed is False and journey.stages == []


def test_pass(lab: Lab, xl: XdpLab) -> None:
    xl.attach("ap", "wan", "native", "pass")
    data = frame(lab)
    consumed, journey = receive(lab, data)
    assert consumed is False  # the caller delivers the frame
    (stage,) = journey.stages
    assert stage.tap == "wan.xdp" and stage.drop is None
    assert stage.decision.startswith("XDP_PASS by xdp_pass (native hook")
    assert stage.counters == {"xdp_pass": 1} and stage.data == data and stage.kind == "ether"
    assert journey.verdict == ""  # the datapath decides


def test_drop(lab: Lab, xl: XdpLab) -> None:
    xl.attach("ap", "wan", "skb", "drop")
    consumed, journey = receive(lab)
    assert consumed is True
    (stage,) = journey.stages
    assert stage.tap == "wan.xdp" and stage.drop == "XDP_DROP"
    assert "generic hook" in stage.decision and stage.counters == {"xdp_drop": 1}
    assert journey.verdict == "dropped at wan.xdp: XDP_DROP"
    assert xl.port("ap", "wan").describe()["xdp_drop"] == 1


def test_aborted(lab: Lab, xl: XdpLab) -> None:
    xl.attach("ap", "wan", "native", "aborted")
    consumed, journey = receive(lab)
    assert consumed is True
    (stage,) = journey.stages
    assert stage.drop == "XDP_ABORTED"
    assert stage.counters == {"xdp_aborted": 1, "xdp_exception": 1}  # the tracepoint (1.2)


def test_tx_bounces_the_swapped_frame(lab: Lab, xl: XdpLab) -> None:
    xl.attach("ap", "wan", "native", "swapmac")
    data = frame(lab)
    before = lab.node("ap").dev("wan").counters.tx_packets
    consumed, journey = receive(lab, data)
    assert consumed is True
    assert [s.tap for s in journey.stages] == ["wan.xdp", "wan.wire"]
    xdp, wire = journey.stages
    assert xdp.decision.startswith("XDP_TX by xdp_swap_macs_tx")
    assert wire.data == data[6:12] + data[0:6] + data[12:]  # MACs swapped
    assert journey.verdict == "bounced back out of wan by XDP_TX"
    assert lab.node("ap").dev("wan").counters.tx_packets == before + 1


@pytest.mark.parametrize(("flags", "zc"), [(BindFlag.COPY, False), (BindFlag.ZEROCOPY, True)])
def test_redirect_to_a_socket(lab: Lab, xl: XdpLab, flags: BindFlag, zc: bool) -> None:
    socket_on_wan(xl, flags)
    data = frame(lab)
    consumed, journey = receive(lab, data)
    assert consumed is True
    assert [s.tap for s in journey.stages] == ["wan.xdp", "xsk0.fill", "xsk0.rx"]
    xdp, fill, rx = journey.stages
    assert xdp.decision.endswith("XSKMAP[0] -> xsk0") and xdp.counters == {"xdp_redirect": 1}
    assert ("zero copy" in fill.decision) is zc
    assert rx.kind == "xdp" and rx.meta["rx_index"] == 0 and rx.data is not None
    desc = XDPDesc(rx.data)
    assert desc.addr == 0x100 and desc.len == 60  # chunk base + 256 (2.2, 6.9)
    assert bytes(desc.payload) == data
    mode = "zero copy" if zc else "copy mode"
    assert journey.verdict == f"redirected to AF_XDP socket xsk0 ({mode})"
    captured = lab.captures.get("xsk0.rx")[-1]
    assert captured.journey == journey.id and captured.packet().haslayer(XDPDesc)


def test_redirect_copy_mode_fill_empty(lab: Lab, xl: XdpLab) -> None:
    socket_on_wan(xl, BindFlag.COPY, fill=0)
    consumed, journey = receive(lab)
    assert consumed is True
    drop = journey.stages[-1]
    assert drop.tap == "xsk0.fill" and drop.drop is not None and "FILL ring empty" in drop.drop
    assert drop.counters["rx_dropped"] == 1 and drop.counters["rx_fill_ring_empty_descs"] == 1
    assert xl.socket("xsk0").sock.statistics().rx_dropped == 1  # 6.7


def test_redirect_rx_ring_full(lab: Lab, xl: XdpLab) -> None:
    xsk.create(xl, "xsk0", "ap", 16, 4096, 0, 2)
    xsk.bind(xl, "xsk0", "ap", "wan", 0, BindFlag.COPY, False)
    xsk.fill(xl, "xsk0", 2)
    assert receive(lab)[1].verdict.startswith("redirected")
    xsk.fill(xl, "xsk0", 1)
    assert receive(lab)[1].verdict.startswith("redirected")
    _, journey = receive(lab)  # RX holds two unreleased descriptors
    assert journey.stages[-1].tap == "xsk0.rx"
    assert journey.stages[-1].counters == {"rx_ring_full": 1, "xdp_redirect_err": 1}  # 6.6


def test_redirect_with_an_empty_map_slot_passes(lab: Lab, xl: XdpLab) -> None:
    xl.attach("ap", "wan", "native", "redirect")
    consumed, journey = receive(lab)
    assert consumed is False  # libxdp's fallback is XDP_PASS (1.2)
    assert journey.stages[0].decision.startswith("XDP_PASS by xsk_def_prog")


def test_zero_copy_nic_drop_without_posted_frames(lab: Lab, xl: XdpLab) -> None:
    socket_on_wan(xl, BindFlag.ZEROCOPY, fill=0)
    consumed, journey = receive(lab)
    assert consumed is True
    (stage,) = journey.stages
    assert stage.tap == "wan.nic" and stage.counters == {"rx_missed_errors": 1}
    assert "no UMEM frame posted" in journey.verdict


def test_other_cpsw_port_owns_the_zero_copy_queue(lab: Lab, xl: XdpLab) -> None:
    for dev in ("wan", "eth0"):
        xl.set_driver("ap", dev, "am65-cpsw")
    xsk.create(xl, "xsk0", "ap", 16, 4096, 0, 16)
    xsk.bind(xl, "xsk0", "ap", "eth0", 0, BindFlag.ZEROCOPY, False)
    xl.attach("ap", "wan", "native", "pass")
    consumed, journey = receive(lab)
    assert consumed is True and journey.stages[0].tap == "wan.nic"
    assert "other CPSW port" in journey.verdict  # 4.2 patch 3
    with pytest.raises(KernelError) as err:  # and wan cannot take queue 0 in zero copy
        xsk.create(xl, "xsk1", "ap", 16, 4096, 0, 16)
        xsk.bind(xl, "xsk1", "ap", "wan", 0, BindFlag.ZEROCOPY, False)
    assert err.value.errno_name == "EINVAL"


def test_down_device_drops_in_the_nic(lab: Lab, xl: XdpLab) -> None:
    xl.attach("ap", "wan", "native", "pass")
    lab.node("ap").dev("wan").up = False
    consumed, journey = receive(lab)
    assert consumed is True and journey.verdict == "dropped at wan.nic: device is down"


def test_tracing_off_keeps_stages_but_no_snapshots(lab: Lab, xl: XdpLab) -> None:
    lab.settings.tracing = False
    xl.attach("ap", "wan", "native", "drop")
    _, journey = receive(lab)
    assert journey.stages[0].data is None
    assert "wan.xdp" not in lab.captures.taps()


def test_hook_steers_to_the_attach_queue(lab: Lab, xl: XdpLab) -> None:
    xsk.create(xl, "xsk0", "ap", 16, 4096, 0, 16)
    xsk.bind(xl, "xsk0", "ap", "wan", 2, BindFlag.COPY, False)
    xsk.fill(xl, "xsk0", 4)
    xl.attach("ap", "wan", "native", "redirect", queue=2, force=True)
    _, journey = receive(lab)
    assert journey.stages[0].decision.endswith("XSKMAP[2] -> xsk0")


# ---- sockets ----------------------------------------------------------------------------
def test_create_errors(xl: XdpLab) -> None:
    for args, errno in (
        ((16, 3000, 0, 16), "EINVAL"),
        ((16, 1024, 0, 16), "EINVAL"),
        ((16, 4096, 4000, 16), "EINVAL"),
        ((16, 4096, 0, 12), "EINVAL"),
    ):
        with pytest.raises(KernelError) as err:
            xsk.create(xl, "bad", "ap", *args)
        assert err.value.errno_name == errno and f"[{errno}]" in str(err.value)
    assert "bad" not in xl.sockets  # nothing half made
    xsk.create(xl, "ok", "ap", 16, 2048, 0, 16)
    with pytest.raises(StateConflict, match="exists"):
        xsk.create(xl, "ok", "ap", 16, 2048, 0, 16)
    with pytest.raises(InvalidValue):
        xsk.create(xl, "9x", "ap", 16, 2048, 0, 16)
    with pytest.raises(InvalidValue):
        xsk.create(xl, "big", "ap", 0, 2048, 0, 16)
    with pytest.raises(NotFound):
        xl.socket("nope")


def test_bind_errors(xl: XdpLab) -> None:
    socket_on_wan(xl, fill=0)
    xsk.create(xl, "xsk1", "ap", 16, 4096, 0, 16)
    cases = [
        (("wan", 0, None), "EBUSY"),
        (("lan1", 0, BindFlag.ZEROCOPY), "EOPNOTSUPP"),
        (("wan", 9, None), "EINVAL"),
    ]
    for (dev, queue, flags), errno in cases:
        with pytest.raises(KernelError) as err:
            xsk.bind(xl, "xsk1", "ap", dev, queue, flags, False)
        assert err.value.errno_name == errno and "why:" in str(err.value)
    with pytest.raises(StateConflict, match="lives on ap"):
        xsk.bind(xl, "xsk1", "host", "eth0", 0, None, False)
    with pytest.raises(KernelError) as err:
        xsk.recv(xl, "xsk1", None)
    assert err.value.errno_name == "ENXIO"


def test_am65_refuses_2048_frames_in_zero_copy_and_falls_back_without_the_flag(xl: XdpLab) -> None:
    xl.set_driver("ap", "wan", "am65-cpsw")
    xsk.create(xl, "small", "ap", 16, 2048, 0, 16)
    with pytest.raises(KernelError) as err:
        xsk.bind(xl, "small", "ap", "wan", 0, BindFlag.ZEROCOPY, False)
    assert err.value.errno_name == "EOPNOTSUPP" and "1792 < 2024" in str(err.value)  # 6.22
    ls, _ = xsk.bind(xl, "small", "ap", "wan", 0, None, False)
    assert ls.mode == "copy" and ls.sock.fallback_reason is not None


def test_bind_loads_the_default_program_and_close_unloads_it(xl: XdpLab) -> None:
    socket_on_wan(xl, fill=0)
    xp = xl.port("ap", "wan")
    assert isinstance(xp.port.program, XskRedirect) and xp.port.attach_mode is AttachMode.DRV
    _, note = xsk.close(xl, "xsk0")
    assert note is not None and xp.port.program is None and xp.program is None
    xl.attach("ap", "wan", "native", "redirect")  # the user's own program stays
    socket_on_wan(xl, fill=0)
    _, note = xsk.close(xl, "xsk0")
    assert note is None and xp.program == "redirect"


@pytest.mark.parametrize("mode", [None, "native", "zc", "skb"])
def test_attach_mode_plays_no_part_in_a_bind_without_flags(
    lab: Lab, xl: XdpLab, mode: str | None
) -> None:
    # 2.6: no flag on a zero-copy capable driver gives zero copy, whatever is attached.
    if mode is not None:
        xl.attach("ap", "wan", mode, "redirect")
    socket_on_wan(xl)
    ls = xl.socket("xsk0")
    assert ls.mode == "zerocopy" and ls.sock.fallback_reason is None
    consumed, journey = receive(lab)
    assert consumed and journey.verdict == "redirected to AF_XDP socket xsk0 (zero copy)"


def test_fill_and_ownership(xl: XdpLab) -> None:
    xsk.create(xl, "xsk0", "ap", 16, 4096, 0, 16)
    addrs, kicked = xsk.fill(xl, "xsk0", 4)  # before bind: the socket's own FILL
    assert addrs == [0, 0x1000, 0x2000, 0x3000] and not kicked
    assert xl.socket("xsk0").free_frames()[0] == 0x4000
    xsk.bind(xl, "xsk0", "ap", "wan", 0, BindFlag.ZEROCOPY, True)
    owners = xl.socket("xsk0").umem.owners()
    assert owners[FrameState.DRIVER] == 4 and owners[FrameState.USER] == 12
    with pytest.raises(StateConflict, match="owns 12 free"):
        xsk.fill(xl, "xsk0", 13)


def test_recv_releases_and_extends_the_journey(lab: Lab, xl: XdpLab) -> None:
    socket_on_wan(xl, BindFlag.COPY)
    _, journey = receive(lab)
    got = xsk.recv(xl, "xsk0", None)
    assert [(i, d.addr, jid) for i, d, _, jid in got] == [(0, 0x100, journey.id)]
    assert journey.stages[-1].tap == "xsk0.recv"
    assert xsk.recv(xl, "xsk0", None) == []
    rx = xl.socket("xsk0").sock.rx
    assert rx is not None and rx.consumer == 1


# ---- send ------------------------------------------------------------------------------
@pytest.mark.parametrize("flags", [BindFlag.COPY, BindFlag.ZEROCOPY])
def test_send_walks_each_frame_to_the_peer(lab: Lab, xl: XdpLab, flags: BindFlag) -> None:
    socket_on_wan(xl, flags, fill=0)
    report = xsk.send(xl, "xsk0", 3, 64)
    assert (report.sent, report.invalid, report.pending, report.completed) == (3, 0, 0, 3)
    journey = report.journeys[-1]
    assert journey.taps()[:3] == ["xsk0.tx", "xsk0.xmit", "wan.wire"]
    assert "host.deliver" in journey.taps() and journey.taps()[-1] == "xsk0.comp"
    assert journey.verdict == "delivered to host" and journey.delivered
    data = journey.stages[0].data
    assert data is not None
    tx = XDPDesc(data)
    assert tx.len == 60 and tx.addr == 0x2000
    comp = xl.socket("xsk0").sock.comp
    assert comp is not None and comp.in_flight() == [0, 0x1000, 0x2000]  # the addrs echoed
    again = xsk.send(xl, "xsk0", 1, 64)
    assert again.reclaimed == 3  # completions drained before new frames are taken


def test_send_invalid_descriptors_count_without_an_errno(xl: XdpLab) -> None:
    socket_on_wan(xl, BindFlag.COPY, fill=0)
    report = xsk.send(xl, "xsk0", 1, 64, addr=0x100000)
    assert (report.sent, report.invalid, report.completed) == (0, 1, 0)
    stage = report.journeys[0].stages[-1]
    assert stage.drop is not None and "outside the UMEM" in stage.drop
    assert stage.counters == {"tx_invalid_descs": 1}
    report = xsk.send(xl, "xsk0", 1, 5000)  # len 4996 > 4096-byte chunk (6.13)
    assert report.invalid == 1
    assert xl.socket("xsk0").sock.statistics().tx_invalid_descs == 2


def test_send_refusals_change_nothing(lab: Lab, xl: XdpLab) -> None:
    socket_on_wan(xl, BindFlag.COPY, fill=0)
    tx = xl.socket("xsk0").sock.tx
    assert tx is not None
    with pytest.raises(InvalidValue):
        xsk.send(xl, "xsk0", 17, 64)  # more than the TX ring
    with pytest.raises(InvalidValue):
        xsk.send(xl, "xsk0", 1, 63)
    lab.node("ap").dev("wan").up = False
    with pytest.raises(KernelError) as err:
        xsk.send(xl, "xsk0", 1, 64)
    assert err.value.errno_name == "ENETDOWN"
    assert tx.producer == 0


# ---- xdpsock ---------------------------------------------------------------------------
def test_xdpsock_runs_and_puts_the_program_back(xl: XdpLab) -> None:
    xl.set_driver("ap", "wan", "am65-cpsw")
    xl.attach("ap", "wan", "native", "pass")
    run = run_xdpsock(xl, "ap", "wan", Benchmark.RXDROP, mode="native", packets=256)
    assert run.report.rx_npkts == 256 and run.report.mode is XskMode.NATIVE
    assert run.seed_kpps == 491 and run.prediction.limited_by == "kernel"
    assert run.journey.taps()[0] == "xdpsock.setup" and "xdpsock.rx" in run.journey.taps()
    port = xl.port("ap", "wan").port
    assert port.program is not None and port.program.name == "xdp_pass"
    assert not port.pools  # the socket is gone


def test_xdpsock_txonly_sends_what_was_asked(xl: XdpLab) -> None:
    run = run_xdpsock(xl, "ap", "wan", Benchmark.TXONLY, mode="zc", packets=128)
    assert run.report.tx_npkts == 128 and run.report.mode is XskMode.ZEROCOPY
    assert "xdpsock.tx" in run.journey.taps()


@pytest.mark.parametrize(("packets", "batch", "mode"), [(100, 64, "native"), (1000, 16, None)])
def test_xdpsock_txonly_sends_exactly_packets(
    xl: XdpLab, packets: int, batch: int, mode: str | None
) -> None:
    run = run_xdpsock(xl, "ap", "wan", Benchmark.TXONLY, mode=mode, packets=packets, batch=batch)
    assert run.report.tx_npkts == packets and run.port_delta["tx_packets"] == packets


@pytest.mark.parametrize(
    ("bench", "packets"), [(Benchmark.RXDROP, 64), (Benchmark.RXDROP, 1024), (Benchmark.L2FWD, 64)]
)
def test_xdpsock_zero_copy_misses_nothing_from_the_start(
    xl: XdpLab, bench: Benchmark, packets: int
) -> None:
    # xdpsock fills FILL after bind and its loop kicks the RX wakeup before traffic (3.2, 2.5)
    run = run_xdpsock(xl, "ap", "wan", bench, mode="zc", packets=packets)
    assert run.report.rx_npkts == packets and "rx_missed_errors" not in run.port_delta


def test_xdpsock_run_of_less_than_a_batch_gives_no_rate(xl: XdpLab) -> None:
    run = run_xdpsock(xl, "ap", "wan", Benchmark.RXDROP, mode="zc", packets=10)
    assert run.report.rx_npkts == 10 and run.report.interval_s is None
    assert run.no_rate is not None and "less than one batch of 64" in run.no_rate
    assert "no rate" in run.journey.stages[-1].decision
    steady = run_xdpsock(xl, "ap", "wan", Benchmark.RXDROP, mode="zc", packets=1024)
    assert steady.no_rate is None and steady.report.interval_s is not None


def test_xdpsock_failure_leaves_the_port_clean(xl: XdpLab) -> None:
    with pytest.raises(KernelError) as err:  # native attach on a generic-only device
        run_xdpsock(xl, "ap", "lan1", Benchmark.RXDROP, mode=None, packets=64)
    assert err.value.errno_name == "EOPNOTSUPP"
    port = xl.port("ap", "lan1").port
    assert not port.pools and port.program is None
    run = run_xdpsock(xl, "ap", "lan1", Benchmark.RXDROP, mode="skb", packets=64)
    assert run.report.rx_npkts == 64 and run.report.mode is XskMode.SKB


def test_xdpsock_leaves_the_users_program_counts_as_they_were(lab: Lab, xl: XdpLab) -> None:
    xl.attach("ap", "wan", "native", "drop")
    receive(lab)
    xp = xl.port("ap", "wan")
    before = xp.describe()
    assert before["xdp_drop"] == 1
    run = run_xdpsock(xl, "ap", "wan", Benchmark.RXDROP, mode=None, packets=256)
    after = xp.describe()
    assert after["prog_name"] == "xdp_drop"
    assert {k: after[k] for k in PROG_COUNTS} == {k: before[k] for k in PROG_COUNTS}
    assert run.port_delta["xdp_redirect"] == run.report.rx_npkts  # the run keeps its own
    receive(lab)
    assert xp.describe()["xdp_drop"] == 2 and xp.describe()["xdp_redirect"] == 0


def test_xdpsock_through_the_users_redirect_program_counts_there(xl: XdpLab) -> None:
    xl.attach("ap", "wan", "native", "redirect")
    run = run_xdpsock(xl, "ap", "wan", Benchmark.RXDROP, mode=None, packets=256)
    assert xl.port("ap", "wan").describe()["xdp_redirect"] == run.port_delta["xdp_redirect"]


def test_program_counts_start_at_zero_on_attach(lab: Lab, xl: XdpLab) -> None:
    xl.attach("ap", "wan", "native", "drop")
    receive(lab)
    xl.attach("ap", "wan", "native", "pass", force=True)
    assert xl.port("ap", "wan").describe()["xdp_drop"] == 0
