"""esplab check parses each run: line as the run will, without running it, and points
at the offending word."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from esplab.commands.base import Session as Core
from esplab.commands.handlers import all_commands
from esplab.commands.parser import Invocation
from esplab.commands.registry import Registry
from esplab.commands.result import Result
from esplab.commands.session import Session
from esplab.errors import EsplabError
from esplab.lab.check import check_file
from esplab.lab.cli import main_check
from esplab.lab.refs import substitute
from esplab.lab.runline import STAND_IN, RunLines, stand_in
from tests.lab.support import write_lab


def _errors(tmp_path: Path, steps: str) -> list[str]:
    """What esplab check prints for a lab with ``steps``, file name 'lab.yaml'."""
    path = write_lab(tmp_path, steps)
    _, errors = check_file(path, "lab.yaml")
    return [str(e) for e in errors]


def _one_step(tmp_path: Path, run: str) -> list[str]:
    return _errors(tmp_path, f"  - name: one\n    run: {run}\n")


# The run value starts at line 5, column 10; the columns below count from there.
@pytest.mark.parametrize(
    ("run", "expected"),
    [
        (
            "ip lnk show",
            "lab.yaml:5:13: 'run' does not parse: Object \"lnk\" is unknown; valid: link, "
            "address, route, neighbour, xfrm; did you mean link?",
        ),
        (
            "host ip -s lnk",
            "lab.yaml:5:21: 'run' does not parse: Object \"lnk\" is unknown",
        ),
        ("nonsense", "lab.yaml:5:10: 'run': unknown command 'nonsense'; 'help' lists the commands"),
        ("host nonsense x", "lab.yaml:5:15: 'run': unknown command 'nonsense'"),
        (
            'send ap wan __import__("os").system("x")',
            "lab.yaml:5:22: 'run': '__import__('os').system' cannot be called at column 1 "
            'in \'__import__("os").system("x")\'; valid: layer names',
        ),
        (
            'send ap wan IP(dst=open("/etc/passwd").read())',
            "lab.yaml:5:29: 'run': 'open('/etc/passwd').read()' is not a literal at column 8",
        ),
        (
            'send ap wan IP(dst="192.0.2.2")/UDP(dport=99999)',
            "lab.yaml:5:46: 'run': UDP dport 99999 out of range",
        ),
        ('send ap wan IP(dst="192.0.2.2"', "lab.yaml:5:22: 'run' does not parse: unclosed '('"),
        ("send ap wlan IP()", "lab.yaml:5:18: 'run': ap has no device 'wlan'"),
        ("send ap wan IP() cuont 3", "lab.yaml:5:27: 'run' does not parse: unknown option 'cuont'"),
        ("ping 192.0.2.2 --cuont 3", "lab.yaml:5:25: 'run' does not parse: unknown option"),
        (
            'send ap wan IP(dst="192.0.2.2"))',
            "lab.yaml:5:41: 'run' does not parse: unbalanced ')' at column 32",
        ),
        ("load", "lab.yaml:5:10: 'run' does not parse: load needs FILE"),
        ("lab run x.yaml", "lab.yaml:5:10: 'lab' cannot be a step"),
        (
            "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 1 mode trnsport",
            "lab.yaml:5:77: 'run' does not parse: argument \"trnsport\" is wrong",
        ),
        ("ip xfrm state lsit", "lab.yaml:5:24: 'run' does not parse: Command \"lsit\" is unknown"),
        (
            "ip -f inet7 route",
            "lab.yaml:5:16: 'run' does not parse: argument \"inet7\" is wrong: invalid protocol "
            "family",
        ),
        # ip.c: a bare "-" abbreviates -loops.
        (
            "ip - route",
            "lab.yaml:5:13: 'run' does not parse: Option \"-\" (-loops) is not modelled",
        ),
        ("ip -s -f", "lab.yaml:5:16: 'run' does not parse: argument \"family type\" is required"),
        (
            "ip --family inet6 xfrm stat lsit",
            "lab.yaml:5:38: 'run' does not parse: Command \"lsit\" is unknown",
        ),
        ("node pc9", "lab.yaml:5:15: 'run': unknown node 'pc9'"),
        ("xdp atach wan", "lab.yaml:5:14: 'run' does not parse: unknown xdp subcommand 'atach'"),
        ("xsk opne s", "lab.yaml:5:14: 'run' does not parse: unknown xsk subcommand 'opne'"),
        ("compare 0xzz IP()", "lab.yaml:5:18: 'run' does not parse: SPI must be a number"),
        ("compare 1 IP(ttl=-1)", "lab.yaml:5:23: 'run': IP ttl -1 out of range"),
        ("let 9p = IP()", "lab.yaml:5:14: 'run' does not parse: '9p' cannot name a packet"),
        ("let p = Foo()", "lab.yaml:5:18: 'run': 'Foo' is not a layer"),
        ("diff IP(tll=1) IP()", "lab.yaml:5:15: 'run': IP has no field 'tll'"),
    ],
)
def test_a_run_line_that_would_not_parse(tmp_path: Path, run: str, expected: str) -> None:
    errors = _one_step(tmp_path, run)
    assert len(errors) == 1, errors
    assert errors[0].startswith(expected), errors[0]


@pytest.mark.parametrize(
    "run",
    [
        "help",
        "ip link show",
        "host ip -s -4 addr",
        "ip x s l",
        "ip --family inet6 xfrm state",
        "ip -f inet6 -s x s",
        "ip -s -s -br link",
        'send ap wan IP(dst="192.0.2.2")/UDP(dport=5201) count 2 seq 7',
        'host send eth0 IP(dst="192.0.2.1")/UDP()',
        'send pc2 eth0 IP(dst="192.0.2.1")',
        'compare 0x1000 IP(dst="192.0.2.2")/UDP() seq 3',
        "diff wan.wire#1 wan.wire#2",
        "diff 4500001c 4500001d",
        "xdp costs",
        "xsk",
    ],
)
def test_good_lines_pass(tmp_path: Path, run: str) -> None:
    assert _one_step(tmp_path, run) == []


def test_the_current_node_follows_node_steps(tmp_path: Path) -> None:
    steps = """\
  - name: to the host
    run: node host
  - name: a host device
    run: send eth0 IP(dst="192.0.2.1")
  - name: not a host device
    run: send wan IP(dst="192.0.2.1")
  - name: another node for one line
    run: ap send wan IP(dst="192.0.2.2")
"""
    assert _errors(tmp_path, steps) == [
        "lab.yaml:9:15: 'run': host has no device 'wan' and no node is called that (nodes: ap, "
        "host, pc1, pc2, pc3, pc4); valid: lo, eth0, dummy0",
    ]


def test_packets_named_by_let(tmp_path: Path) -> None:
    steps = """\
  - name: name one
    run: let p1 = IP(dst="192.0.2.2")/UDP()
  - name: send it
    run: send ap wan p1
  - name: build on it
    run: send ap wan p1/Raw(b"x")
  - name: a name never given
    run: send ap wan p2/Raw(b"x")
  - name: a let that is refused
    run: let p3 = IP(ttl=300)
  - name: is reported once, not again where its name is used
    run: send ap wan p3/UDP()
"""
    errors = _errors(tmp_path, steps)
    assert [e.split(": ", 2)[:2] for e in errors] == [
        ["lab.yaml:11:22", "'run'"],
        ["lab.yaml:13:22", "'run'"],
    ]
    assert "unknown name 'p2'" in errors[0] and "IP ttl 300 out of range" in errors[1]


def test_references_leave_only_their_own_words_to_run_time(tmp_path: Path) -> None:
    steps = """\
  - name: keep
    run: help
    save: s
  - name: the device and fields are references
    run: send ap ${s.dev} IP(dst="${s.addr}")/UDP(dport=${s.port})
  - name: another field is wrong all the same
    run: send ap wan IP(dst="${s.addr}", ttl=3)/UDP(dport=99999)
  - name: the command is a reference
    run: ${s.cmd} and more
  - name: the node is a reference
    run: node ${s.node}
  - name: so a device cannot be judged
    run: send eth9 IP(dst="192.0.2.2")
  - name: a packet made from saved bytes
    run: let p = Ether(hex("${s.hex}"))
  - name: and sent
    run: send ap wan p/Raw(b"x")
  - name: a word before a reference is wrong
    run: ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 1 mode trnsport reqid ${s.r}
  - name: parsing stops at a reference it cannot read, so what follows waits for the run
    run: ip xfrm state add src ${s.a} dst 192.0.2.2 proto esp spi 1 mode trnsport
"""
    errors = _errors(tmp_path, steps)
    assert [e.split(": ", 2)[0:2] for e in errors] == [
        ["lab.yaml:10:53", "'run'"],
        ["lab.yaml:22:77", "'run' does not parse"],
    ], errors
    # The message shows the expression as written, its column counted there.
    assert (
        "out of range at column 32 in 'IP(dst=\"${s.addr}\", ttl=3)/UDP(dport=99999)'"
        in (errors[0])
    )


def test_a_step_that_expects_the_error(tmp_path: Path) -> None:
    steps = """\
  - name: the whitelist refuses it
    run: send ap wan __import__("os")
    error: is not a layer
  - name: but not with this message
    run: send ap wan __import__("os")
    error: something else
  - name: a message known at run time
    run: help
    save: s
  - name: judged at run time
    run: send ap wan __import__("os")
    error: ${s.summary}
"""
    errors = _errors(tmp_path, steps)
    assert len(errors) == 1 and errors[0].startswith("lab.yaml:8:22: 'run': '__import__' is not")


def test_a_word_in_a_folded_run_line(tmp_path: Path) -> None:
    steps = """\
  - name: folded
    run: >-
      send ap wan
      IP(dst="192.0.2.2")/UDP(dport=99999)
  - name: escaped
    run: "send ap wan IP(dst=\\"192.0.2.2\\")/UDP(dport=99999)"
"""
    errors = _errors(tmp_path, steps)
    assert [e.split(": ", 1)[0] for e in errors] == ["lab.yaml:7:31", "lab.yaml:9:10"]


def test_check_prints_every_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    steps = """\
  - name: one
    run: ip lnk show
  - name: two
    run: nonsense
  - name: three
    run: send ap wan __import__("os").system("x")
  - name: four
    run: send ap wan IP(dst=open("/etc/passwd").read())
"""
    path = write_lab(tmp_path, steps)
    assert main_check(["-q", str(path)]) == 2
    out = capsys.readouterr().out.splitlines()
    assert [line.split(": ", 1)[0] for line in out] == [
        f"{path}:5:13",
        f"{path}:7:10",
        f"{path}:9:22",
        f"{path}:11:29",
    ]


def _state(session: Session) -> tuple[object, ...]:
    """Everything a line could change: the session's fields and the whole lab (its
    fields, current node included, the attributes it builds, its random state)."""
    lab = session.lab
    return repr(session), lab.current, repr(vars(lab)), lab.rng.getstate()


def test_nothing_is_executed(tmp_path: Path) -> None:
    target = tmp_path / "touched"
    ran: list[str] = []

    def refuse(session: Core, inv: Invocation) -> Result:
        ran.append(inv.line)
        raise AssertionError(f"a handler ran: {inv.line}")

    registry = Registry([replace(c, handler=refuse) for c in all_commands()])
    session = Session(registry=registry)
    lines = RunLines(session)
    before = _state(session)
    for line in [
        f'send ap wan __import__("os").system("touch {target}")',
        f'let p = IP(dst=open("{target}", "w").name)',
        "node host",
        'send eth0 IP(dst="192.0.2.1")/UDP()',
        "send pc2 eth0 IP()",
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 1 mode transport",
        "ip -f inet xfrm state flush",
        "ip link set wan down",
        "xdp attach wan native prog",
        "diff IP() IP(ttl=1)",
        "node pc1",
        'send eth0 IP(dst="192.0.2.1")',
    ]:
        lines.check(line)
    assert not target.exists() and ran == []
    assert _state(session) == before
    assert lines.current == "pc1" and session.lab.current == "ap"


@pytest.mark.parametrize("bug", [AssertionError, KeyError])
def test_a_bug_in_a_parser_is_not_hidden(
    monkeypatch: pytest.MonkeyPatch, bug: type[Exception]
) -> None:
    def broken(*_: object) -> None:
        raise bug("a bug")

    monkeypatch.setattr("esplab.commands.handlers.journey.parse_send", broken)
    with pytest.raises(bug):
        RunLines().check('send ap wan IP(dst="192.0.2.2")')


def test_stand_ins_keep_the_written_offsets() -> None:
    stood = stand_in("send ${s.dev} $${x} IP()")
    assert stood.text == "send 0 ${x} IP()"
    assert stood.spans == ((5, 6),)
    assert stood.written(5) == 5 and stood.written(7) == 14 and stood.written(12) == 20
    assert stood.holds_stand_in(5, 6) and not stood.holds_stand_in(7, 11)


@pytest.mark.parametrize(
    "line",
    ["send ${s.dev} $${x} IP(ttl=${s.ttl})", "$${", "${s.dev}${s.ttl} ${ s.dev }", "plain"],
)
def test_check_reads_references_as_the_run_does(line: str) -> None:
    """The stand-ins are where the run substitutes, with the same pattern."""
    assert stand_in(line).text == substitute(line, {"s": {"dev": STAND_IN, "ttl": 0}})


@pytest.mark.parametrize(
    "line",
    [
        "ip -s -f",
        "ip -f inet7 route",
        "ip - route",
        "ip --family inet5 xfrm state",
        "ip -s",
        "ip -x route",
        "ip rote",
        "ip -4 xfrm state add src 192.0.2.1",
    ],
)
def test_check_and_run_refuse_an_ip_line_alike(line: str) -> None:
    _, problem = RunLines(Session()).check(line)
    with pytest.raises(EsplabError) as refused:
        Session().execute(line)
    assert problem is not None and problem.runtime == str(refused.value)


def test_an_ip_step_that_expects_its_option_error(tmp_path: Path) -> None:
    steps = """\
  - name: the family is missing, which is what the run says
    run: ip -s -f
    error: family type
  - name: not that there is no object
    run: ip -s -f
    error: ip needs an object
"""
    assert _errors(tmp_path, steps) == [
        "lab.yaml:8:16: 'run' does not parse: argument \"family type\" is required; valid: "
        "inet, inet6"
    ]


def test_an_sa_added_twice_with_a_family_option(tmp_path: Path) -> None:
    add = (
        "ip -f inet xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 1 mode transport "
        "enc aes 0x00112233445566778899aabbccddeeff"
    )
    again = add.replace("-f", "--family")
    steps = f"  - name: add\n    run: {add}\n  - name: again\n    run: {again}\n"
    errors = _errors(tmp_path, steps)
    assert len(errors) == 1 and errors[0].startswith(
        "lab.yaml:7:10: ap already has the SA dst 192.0.2.2 proto esp spi 0x1 (added at line 5)"
    ), errors
