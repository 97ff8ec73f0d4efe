"""xdp, xsk and xdpsock: parse and execute without a terminal, errors, rendering, the lab."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from esplab.commands.complete import candidates
from esplab.commands.handlers import xdp as xdp_commands
from esplab.commands.handlers import xsk as xsk_commands
from esplab.commands.result import ErrorResult, JourneyResult, PacketResult, TableResult, TextResult
from esplab.commands.session import Session, SessionOptions
from esplab.errors import (
    BadArgument,
    EsplabError,
    InvalidValue,
    KernelError,
    NotFound,
    StateConflict,
)
from esplab.lab import check, runner
from esplab.layers.xdp import XDPDesc
from esplab.model.journey.xdp_rx import xdp_rx_hook
from esplab.model.journey.xsk import tx_frame
from esplab.render import render

LAB = Path(__file__).resolve().parents[2] / "labs" / "10-af-xdp-seed-table.yaml"


def xdp_session(seed: int | None = None) -> Session:
    """A session (the default registry has the XDP commands: see test_default_registry)."""
    return Session() if seed is None else Session(options=SessionOptions(seed=seed))


def test_default_registry_has_xdp_xsk_and_xdpsock() -> None:
    registry = Session().registry
    assert {"xdp", "xsk", "xdpsock"} <= set(registry.names())
    assert [c.name for c in (*xdp_commands.COMMANDS, *xsk_commands.COMMANDS)] == [
        "xdp",
        "xdpsock",
        "xsk",
    ]


@pytest.fixture
def session() -> Session:
    return xdp_session()


def shown(session: Session, line: str) -> str:
    out = StringIO()
    Console(file=out, width=100, color_system=None).print(render(session.execute(line)))
    return out.getvalue()


def kernel_error(session: Session, line: str) -> KernelError:
    with pytest.raises(KernelError) as info:
        session.execute(line)
    message = str(info.value)
    assert f"[{info.value.errno_name}]" in message and "\n" not in message
    return info.value


# ---- xdp ---------------------------------------------------------------------------------
def test_attach_show_detach(session: Session) -> None:
    result = session.execute("xdp attach wan native drop")
    assert "xdp_drop attached (xdpdrv, native)" in result.summary
    assert result.data["program"] == "drop" and result.data["attach"] == "xdpdrv"
    show = session.execute("xdp show wan")
    assert isinstance(show, TableResult)
    assert show.data["prog_name"] == "xdp_drop" and show.data["xdp_drop"] == 0
    everything = session.execute("xdp show")
    assert set(everything.data["devs"]) == {"lo", "eth0", "lan1", "lan2", "lan3", "lan4", "wan"}
    assert everything.data["devs"]["lan1"]["driver"] == "generic"
    assert "xdp_drop" in shown(session, "xdp show")
    session.execute("xdp detach wan")
    assert session.execute("xdp show wan").data["program"] is None


def test_node_prefix(session: Session) -> None:
    session.execute("host xdp attach eth0 skb pass")
    assert session.execute("host xdp show eth0").data["attach"] == "xdpgeneric"
    assert session.execute("xdp show").data["devs"]["wan"]["program"] is None  # the ap's
    session.execute("host xsk create hs")
    result = session.execute("host xsk bind hs eth0 0")
    assert result.data["dev"] == "eth0"


def test_attach_errors(session: Session) -> None:
    session.execute("xdp attach wan native drop")
    assert kernel_error(session, "xdp attach wan native pass").errno_name == "EBUSY"
    assert kernel_error(session, "xdp attach wan skb pass force").errno_name == "EEXIST"
    assert kernel_error(session, "xdp attach lan1 native drop").errno_name == "EOPNOTSUPP"
    assert kernel_error(session, "xdp attach lan1 zc drop").errno_name == "EOPNOTSUPP"
    assert kernel_error(session, "xdp detach eth0").errno_name == "ENOENT"
    with pytest.raises(NotFound, match="did you mean drop"):
        session.execute("xdp attach eth0 native dorp")
    with pytest.raises(InvalidValue, match="unknown XDP mode"):
        session.execute("xdp attach eth0 xdpdrv drop")
    with pytest.raises(BadArgument, match="needs a number"):
        session.execute("xdp attach eth0 native drop queue")
    with pytest.raises(BadArgument, match="unexpected 'loud'"):
        session.execute("xdp attach eth0 native drop loud")
    with pytest.raises(BadArgument, match="missing DEV, MODE and PROG"):
        session.execute("xdp attach eth0")
    with pytest.raises(BadArgument, match="unknown xdp subcommand"):
        session.execute("xdp atach wan")
    with pytest.raises(NotFound):
        session.execute("xdp attach wan9 native drop")


def test_driver(session: Session) -> None:
    result = session.execute("xdp driver wan am65-cpsw")
    assert result.data == {
        "dev": "wan",
        "driver": "am65-cpsw",
        "name": "am65-cpsw-nuss",
        "native_xdp": True,
        "rx_queues": 1,
        "tx_queues": 8,
        "features": "basic,redirect,ndo-xmit,xsk-zerocopy",
        "zerocopy": True,
    }
    assert session.execute("xdp driver lan1").data["features"] == "none"
    session.execute("xdp attach wan native pass")
    with pytest.raises(StateConflict, match="in use"):
        session.execute("xdp driver wan zc")


def test_costs_are_labelled_a_model(session: Session) -> None:
    result = session.execute("xdp costs")
    assert isinstance(result, TableResult)
    assert result.data["label"] == "model" and result.data["rows"] == 21
    assert "MODEL" in result.title and "measured" in result.title
    cell = result.data["cells"]["rxdrop/64/XDP-Native (ZeroCopy)"]
    assert cell["seed_kpps"] == 845 and cell["status"] == "model"
    bug = result.data["cells"]["l2fwd/64/XDP-Native (ZeroCopy)"]
    assert bug["model_kpps"] is None and bug["status"].startswith("not reproduced / bug")
    params = session.execute("xdp costs params")
    assert params.data["line_rate_kpps"] == {"64": 1488.1, "512": 235.0, "1500": 82.2}
    assert params.data["params"]["sendto_xmit"] == 2370.0
    assert "line rate 1500 B" in shown(session, "xdp costs params")
    with pytest.raises(BadArgument):
        session.execute("xdp costs cheap")


# ---- xsk ---------------------------------------------------------------------------------
def test_socket_walkthrough(session: Session) -> None:
    created = session.execute("xsk create xsk0 frames 16 ring 16")
    assert created.data["rx_frame_size"] == 3840
    bound = session.execute("xsk bind xsk0 wan 0 zerocopy need-wakeup")
    assert bound.data["mode"] == "zerocopy" and "xsk_def_prog" in bound.data["note"]
    filled = session.execute("xsk fill xsk0 8")
    assert filled.data["posted"] == 8 and filled.data["nic"] == 8
    owners = session.execute("xsk ownership xsk0")
    assert owners.data["driver"] == 8 and owners.data["user"] == 8
    assert "0x0-0x7000" in shown(session, "xsk ownership xsk0")
    sent = session.execute("xsk send xsk0 2 size 128")
    assert isinstance(sent, JourneyResult)
    assert sent.data["sent"] == 2 and sent.data["verdict"] == "delivered to host"
    rings = session.execute("xsk rings xsk0")
    assert rings.data["completion"]["in_flight"] == 2
    assert rings.data["completion"]["addrs"] == ["0x8000", "0x9000"]
    drained = session.execute("xsk complete xsk0")
    assert drained.data["completed"] == 2
    stats = session.execute("xsk stats xsk0")
    assert stats.data["mode"] == "zerocopy" and stats.data["tx_invalid_descs"] == 0
    assert "XDP_OPTIONS_ZEROCOPY" in shown(session, "xsk stats xsk0")
    assert session.execute("xsk list").data["sockets"] == ["xsk0"]
    assert session.execute("xsk").data["sockets"] == ["xsk0"]
    closed = session.execute("xsk close xsk0")
    assert closed.data["unloaded"] is True


def test_receive_then_recv(session: Session) -> None:
    session.execute("xsk create xsk0 frames 16 ring 16")
    session.execute("xsk bind xsk0 wan 0 copy")
    session.execute("xsk fill xsk0 4")
    lab = session.lab
    journey = lab.journeys.new("host eth0")
    assert xdp_rx_hook(lab, "ap", "wan", tx_frame(lab, "host", "eth0", 7, 64), journey)
    rings = session.execute("xsk rings xsk0")
    assert rings.data["rx"]["descs"] == [{"addr": 0x100, "len": 60, "options": 0}]
    assert "XDPDesc addr=0x100 len=60" in shown(session, "xsk rings xsk0")
    got = session.execute("xsk recv xsk0")
    assert isinstance(got, TableResult)
    assert got.data["count"] == 1 and got.data["descs"][0]["journey"] == journey.id
    assert "UDP 192.0.2.2:4096 > 192.0.2.1:4096" in got.rows[0][4]
    trace = session.execute(f"trace {journey.id}")
    assert trace.data["stages"][-1]["tap"] == "xsk0.recv"
    capture = session.execute("capture show xsk0.rx#1")
    assert isinstance(capture, PacketResult)
    assert capture.packet is not None and capture.packet.haslayer(XDPDesc)


def test_invalid_descriptor_is_counted_not_refused(session: Session) -> None:
    session.execute("xsk create xsk0 frames 16 ring 16")
    session.execute("xsk bind xsk0 wan 0 copy")
    result = session.execute("xsk send xsk0 1 addr 0x100000")
    assert result.data["invalid"] == 1 and result.data["sent"] == 0
    assert "outside the UMEM" in result.summary and "tx_invalid_descs" in result.summary
    assert session.execute("xsk stats xsk0").data["tx_invalid_descs"] == 1


def test_xsk_errors(session: Session) -> None:
    assert kernel_error(session, "xsk create s frame-size 3000").errno_name == "EINVAL"
    assert kernel_error(session, "xsk create s frame-size 1024").errno_name == "EINVAL"
    assert kernel_error(session, "xsk create s headroom 3840").errno_name == "EINVAL"
    assert kernel_error(session, "xsk create s ring 100").errno_name == "EINVAL"
    session.execute("xsk create a")
    session.execute("xsk create b")
    assert kernel_error(session, "xsk send a 1").errno_name == "ENXIO"
    assert kernel_error(session, "xsk recv a").errno_name == "ENXIO"
    session.execute("xsk bind a wan 0")
    assert kernel_error(session, "xsk bind b wan 0").errno_name == "EBUSY"
    assert kernel_error(session, "xsk bind b lan1 0 zerocopy").errno_name == "EOPNOTSUPP"
    assert kernel_error(session, "xsk bind b wan 5").errno_name == "EINVAL"
    session.execute("ip link set wan down")
    assert kernel_error(session, "xsk send a 1").errno_name == "ENETDOWN"
    for line, text, error in (
        ("xsk bind b wan 0 copy zerocopy", "together", BadArgument),
        ("xsk bind b wan", "missing DEV and QUEUE", BadArgument),
        ("xsk fill b 65", "owns 64 free", StateConflict),
        ("xsk fill b", "how many", BadArgument),
        ("xsk create a", "exists", StateConflict),
        ("xsk create 1a", "cannot name", InvalidValue),
        ("xsk send a 1 size 10", "size 10", InvalidValue),
        ("xsk recv a 0", "count 0", BadArgument),
        ("xsk complete a -1", "count -1", BadArgument),
        ("xsk bind b wan zero", "must be a number", BadArgument),
        ("xsk nope a", "unknown xsk subcommand", BadArgument),
    ):
        with pytest.raises(error, match=text):
            session.execute(line)
    with pytest.raises(NotFound, match="no AF_XDP socket 'c'"):
        session.execute("xsk stats c")
    assert session.execute("xsk complete a").data["completed"] == 0  # the ring still works


def test_am65_zero_copy_rules(session: Session) -> None:
    session.execute("xdp driver wan am65-cpsw")
    session.execute("xsk create small frame-size 2048")
    err = kernel_error(session, "xsk bind small wan 0 zerocopy")
    assert err.errno_name == "EOPNOTSUPP" and "1792 < 2024" in str(err)
    fallback = session.execute("xsk bind small wan 0")
    assert fallback.data["mode"] == "copy" and "EOPNOTSUPP" in fallback.data["fallback"]


# ---- xdpsock -----------------------------------------------------------------------------
def test_xdpsock_reports_like_xdpsock(session: Session) -> None:
    session.execute("xdp driver wan am65-cpsw")
    result = session.execute("xdpsock wan rxdrop size 64 packets 256 mode native")
    assert isinstance(result, TextResult)
    assert result.text.splitlines()[0] == " sock0@wan:0 rxdrop xdp-drv "
    assert "rates come from the cost model, not from a measurement" in result.text
    data = result.data
    assert (data["mode"], data["rx"], data["kpps"], data["seed_kpps"], data["label"]) == (
        "XDP-Native",
        256,
        492,
        491,
        "model",
    )
    trace = session.execute(f"trace {data['journey']}")
    assert "xdpsock.rx" in [s["tap"] for s in trace.data["stages"]]
    bug = session.execute("xdpsock wan l2fwd size 64 packets 128 mode zc")
    assert isinstance(bug, TextResult)
    assert bug.data["kpps"] is None and bug.data["limited_by"] == "bug"
    assert "not reproduced / bug" in bug.text


def test_xdpsock_errors(session: Session) -> None:
    session.execute("xsk create a")
    session.execute("xsk bind a wan 0")
    assert kernel_error(session, "xdpsock wan rxdrop").errno_name == "EBUSY"
    assert kernel_error(session, "xdpsock lan1 rxdrop").errno_name == "EOPNOTSUPP"
    assert kernel_error(session, "xdpsock lan1 rxdrop mode zc").errno_name == "EOPNOTSUPP"
    session.execute("ip link set eth0 down")
    assert kernel_error(session, "xdpsock eth0 txonly").errno_name == "ENETDOWN"
    for line, text, error in (
        ("xdpsock wan rxdrp", "did you mean rxdrop", BadArgument),
        ("xdpsock wan rxdrop size 20", "size 20 is out of range", BadArgument),
        ("xdpsock wan rxdrop mode zz", "'mode' needs", BadArgument),
        ("xdpsock wan rxdrop packets 0", "packets 0", InvalidValue),
        ("xdpsock wan rxdrop batch 0", "batch 0 is out of range", BadArgument),
        ("xdpsock wan", "missing DEV", BadArgument),
    ):
        with pytest.raises(error, match=text):
            session.execute(line)


def test_bad_lines_never_escape_as_tracebacks(session: Session) -> None:
    lines = [
        "xdp",
        "xdp attach",
        "xdp show wan9",
        "xdp driver",
        "xsk create",
        "xsk bind x",
        "xsk send",
        "xsk rings nope",
        "xdpsock",
        "xdpsock wan l2fwd queue 9",
        "xsk create q frames 0",
        "xsk create q frames 99999999",
        "xdp attach wan native drop queue -1",
        "xsk create q ring 0",
    ]
    for line in lines:
        result = session.run(line)
        assert isinstance(result, ErrorResult), line
        assert isinstance(result.error, EsplabError) and "\n" not in result.summary


# ---- completion ----------------------------------------------------------------------------
def test_completion(session: Session) -> None:
    assert candidates(session, "xdp a") == ["attach"]
    assert candidates(session, "xdp attach w") == ["wan"]
    assert candidates(session, "xdp attach wan ") == ["skb", "native", "zc"]
    assert candidates(session, "xdp attach wan native sw") == ["swapmac"]
    assert candidates(session, "xdp driver wan a") == ["am65-cpsw"]
    session.execute("xsk create xsk0")
    assert candidates(session, "xsk st") == ["stats"]
    assert candidates(session, "xsk stats ") == ["xsk0"]
    assert candidates(session, "xsk bind xsk0 wan 0 z") == ["zerocopy"]
    assert candidates(session, "xdpsock wan ") == ["rxdrop", "txonly", "l2fwd"]
    assert candidates(session, "xdpsock wan rxdrop mode ") == ["skb", "native", "zc"]


# ---- the lab file --------------------------------------------------------------------------
def test_the_seed_table_lab_passes() -> None:
    lab, errors = check.check_file(LAB)
    assert lab is not None, [str(e) for e in errors]
    report = runner.LabRun(lab).run_all()
    failed = [
        (s.name, [f.line() for f in s.failures], s.note)
        for s in report.steps
        if s.status != "passed"
    ]
    assert report.passed, failed
    assert len(report.steps) == 36


def test_lo_takes_only_generic_xdp() -> None:
    # drivers/net/loopback.c has no ndo_bpf: xdpdrv is refused, xdpgeneric works.
    from esplab.errors import KernelError

    s = Session()
    with pytest.raises(KernelError, match="EOPNOTSUPP"):
        s.execute("xdp attach lo native drop")
    assert "xdpgeneric" in s.execute("xdp attach lo skb drop").summary


@pytest.mark.parametrize("attach", ["", "xdp attach wan native redirect; "])
def test_bind_without_flags_gets_zero_copy_whatever_is_attached(attach: str) -> None:
    # af_xdp.md 2.6: the attach mode plays no part in the bind's choice.
    session = xdp_session()
    for line in f"{attach}xsk create s frames 64".split("; "):
        session.execute(line)
    assert "zero copy" in session.execute("xsk bind s wan 0").summary
    assert session.execute("xsk stats s").data["mode"] == "zerocopy"


def test_attach_says_what_a_bind_without_flags_gets(session: Session) -> None:
    assert (
        "without copy|zerocopy get zero copy"
        in session.execute("xdp attach wan native drop").summary
    )
    assert "attach mode plays no part" in shown(session, "help xdp")


def test_xdpsock_without_a_steady_stream_prints_no_rate(session: Session) -> None:
    text = shown(session, "xdpsock wan rxdrop packets 10")
    assert "no rate" in text and "seed measured" not in text and "model rate" not in text
    assert session.execute("xdpsock wan rxdrop packets 10").data["kpps"] is None
    steady = shown(session, "xdpsock wan rxdrop packets 1024 mode native")
    assert "model rate 492 Kpps" in steady and "seed measured 491 Kpps" in steady


def test_binding_a_bound_socket_again_names_that_socket(session: Session) -> None:
    session.execute("xsk create x")
    session.execute("xsk bind x wan 0 copy")
    for line in ("xsk bind x wan 0 copy", "xsk bind x wan 1"):
        err = kernel_error(session, line)  # xsk_bind: not in the ready state
        assert err.errno_name == "EBUSY"
        assert "x is already bound to wan queue 0" in str(err)
        assert "other socket" not in str(err) and "xsk close x" in str(err)
    assert session.execute("xsk stats x").data["mode"] == "copy"  # still bound as it was


def test_close_says_whether_the_socket_was_bound(session: Session) -> None:
    session.execute("xsk create b")
    result = session.execute("xsk close b")
    assert result.summary == "b closed; it was never bound" and not result.data["was_bound"]
    session.execute("xsk create x")
    session.execute("xsk bind x wan 0")
    result = session.execute("xsk close x")
    assert result.summary.startswith("x closed; wan queue 0 is free") and result.data["was_bound"]
