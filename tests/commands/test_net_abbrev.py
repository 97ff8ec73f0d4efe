"""iproute2's abbreviations: ``ip`` objects (ip/ip.c ``cmds[]``) and each object's verbs
(do_iplink, do_ipaddr, do_iproute, do_ipneigh) are resolved with ``matches()``, the
first entry in iproute2's source order winning; and an empty ``ip xfrm`` dump prints
nothing, as iproute2's does."""

from __future__ import annotations

from io import StringIO

import pytest
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from esplab.batch import run_text
from esplab.cli import main
from esplab.commands.handlers.net_args import Keyword, resolve
from esplab.commands.result import TextResult
from esplab.commands.session import Session
from esplab.errors import BadArgument
from esplab.repl.app import run_repl
from tests.commands.results import text


@pytest.fixture
def session() -> Session:
    return Session()


# -- objects ---------------------------------------------------------------------------


@pytest.mark.parametrize("obj", ["a", "ad", "addr", "address"])
def test_address_abbreviations(session: Session, obj: str) -> None:
    assert text(session, f"ip {obj} show lo") == text(session, "ip address show lo")


@pytest.mark.parametrize("obj", ["r", "ro", "route"])
def test_route_abbreviations(session: Session, obj: str) -> None:
    assert text(session, f"ip {obj} show") == text(session, "ip route show")


@pytest.mark.parametrize("obj", ["l", "li", "link"])
def test_link_abbreviations(session: Session, obj: str) -> None:
    assert text(session, f"ip {obj} show wan") == text(session, "ip link show wan")


@pytest.mark.parametrize("obj", ["n", "ne", "neigh", "neighbor", "neighbour"])
def test_neighbour_abbreviations(session: Session, obj: str) -> None:
    assert text(session, f"ip {obj} show") == text(session, "ip neighbour show")


@pytest.mark.parametrize("obj", ["x", "xf", "xfrm"])
def test_xfrm_abbreviations(session: Session, obj: str) -> None:
    result = session.execute(f"ip {obj} s list")
    assert isinstance(result, TextResult) and result.data["object"] == "state"


@pytest.mark.parametrize(
    ("word", "named"),
    [("addrl", "addrlabel"), ("m", "maddress"), ("ru", "rule"), ("nt", "ntable"), ("t", "tunnel")],
)
def test_an_object_iproute2_reads_first_is_not_modelled(
    session: Session, word: str, named: str
) -> None:
    # ip.c takes the first object the word abbreviates: "ru" is rule, never route.
    with pytest.raises(BadArgument) as exc:
        session.execute(f"ip {word}")
    assert str(exc.value) == (
        f'Object "{word}" ({named}) is not modelled; valid: link, address, route, neighbour, xfrm'
    )


def test_an_unknown_object_keeps_its_message(session: Session) -> None:
    with pytest.raises(BadArgument) as exc:
        session.execute("ip lnk")
    assert str(exc.value) == (
        'Object "lnk" is unknown; valid: link, address, route, neighbour, xfrm; did you mean link?'
    )


# -- verbs -----------------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["s", "sh", "l", "ls", "lst", "list"])
def test_ip_addr_s_is_show(session: Session, verb: str) -> None:
    # do_ipaddr tests list/show/lst before save.
    assert text(session, f"ip a {verb} wan") == text(session, "ip addr show wan")
    assert "inet 192.0.2.1/24" in text(session, f"ip a {verb} wan")


def test_ip_addr_add_and_delete_abbreviated(session: Session) -> None:
    ap = session.lab.node("ap")
    session.execute("ip a a 10.9.9.1/24 dev lan1")
    assert "10.9.9.1/24" in [str(a) for a in ap.devs["lan1"].addrs]
    session.execute("ip a d 10.9.9.1/24 dev lan1")
    assert "10.9.9.1/24" not in [str(a) for a in ap.devs["lan1"].addrs]


@pytest.mark.parametrize("verb", ["s", "sh", "l", "lst", "list"])
def test_ip_route_s_is_show(session: Session, verb: str) -> None:
    assert text(session, f"ip r {verb}") == text(session, "ip route show")


def test_ip_route_g_is_get(session: Session) -> None:
    assert text(session, "ip r g 192.0.2.2") == text(session, "ip route get 192.0.2.2")


def test_ip_route_add_replace_delete_abbreviated(session: Session) -> None:
    session.execute("ip r a 10.7.0.0/16 via 192.0.2.2")
    assert "10.7.0.0/16 via 192.0.2.2 dev wan" in text(session, "ip route")
    session.execute("ip r r 10.7.0.0/16 dev lan1")
    assert "10.7.0.0/16 dev lan1" in text(session, "ip route")
    session.execute("ip r d 10.7.0.0/16")
    assert "10.7.0.0/16" not in text(session, "ip route")


def test_ip_route_f_is_flush(session: Session) -> None:
    assert session.execute("ip r f cache").ok


@pytest.mark.parametrize("verb", ["s", "sh", "l", "ls", "list"])
def test_ip_neigh_s_is_show(session: Session, verb: str) -> None:
    assert text(session, f"ip n {verb} dev wan") == text(session, "ip neigh show dev wan")


def test_ip_neigh_add_replace_delete_abbreviated(session: Session) -> None:
    session.execute("ip n a 192.0.2.9 lladdr 02:00:00:00:00:09 dev wan")
    assert "192.0.2.9 lladdr 02:00:00:00:00:09" in text(session, "ip neigh show dev wan")
    session.execute("ip n r 192.0.2.9 lladdr 02:00:00:00:00:0a dev wan")
    assert "192.0.2.9 lladdr 02:00:00:00:00:0a" in text(session, "ip neigh show dev wan")
    session.execute("ip n d 192.0.2.9 dev wan")
    assert "192.0.2.9 " not in text(session, "ip neigh show dev wan")


@pytest.mark.parametrize("verb", ["s", "se", "set", "c", "change"])
def test_ip_link_s_is_set(session: Session, verb: str) -> None:
    # do_iplink tests "set" (and "change", the same request) before "show".
    session.execute(f"ip l {verb} wan mtu 1400")
    assert session.lab.node("ap").devs["wan"].mtu == 1400
    assert " mtu 1400 " in text(session, "ip link show wan")


@pytest.mark.parametrize("verb", ["sh", "l", "ls", "lst", "list"])
def test_ip_link_sh_is_show(session: Session, verb: str) -> None:
    assert text(session, f"ip l {verb} wan") == text(session, "ip link show wan")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("ip a sa", 'Command "sa" (save) is not modelled for ip addr; valid: show, add, del'),
        ("ip a chg", 'Command "chg" is not modelled for ip addr; valid: show, add, del'),
        ("ip l d wan", 'Command "d" (delete) is not modelled for ip link; valid: show, set'),
        (
            "ip r t 10.0.0.0/8 dev wan",
            'Command "t" (test) is not modelled for ip route; '
            "valid: show, get, add, del, replace, flush cache",
        ),
        (
            "ip n g 192.0.2.2",
            'Command "g" (get) is not modelled for ip neigh; valid: show, add, replace, del',
        ),
        (
            "ip a x",
            'Command "x" is unknown for ip addr; valid: show, add, del',
        ),
        (
            "ip l sow wan",
            'Command "sow" is unknown for ip link; valid: show, set; did you mean show?',
        ),
    ],
)
def test_verbs_esplab_does_not_model_say_so(session: Session, line: str, message: str) -> None:
    with pytest.raises(BadArgument) as exc:
        session.execute(line)
    assert str(exc.value) == message


def test_resolve_takes_the_first_match_and_exact_words_in_full() -> None:
    table = (
        Keyword("change", "change"),
        Keyword("chg", "chg", exact=True),
        Keyword("set", "set"),
        Keyword("show", "show"),
    )
    valid = ("change", "set", "show")
    assert resolve("s", table, valid, "Command") == "set"
    assert resolve("sh", table, valid, "Command") == "show"
    assert resolve("ch", table, valid, "Command") == "change"
    assert resolve("chg", table, valid, "Command") == "chg"
    with pytest.raises(BadArgument, match='Command "" is unknown'):
        resolve("", table, valid, "Command")
    with pytest.raises(BadArgument, match='Command "sets" is unknown'):
        resolve("sets", table, valid, "Command")


# -- empty ip xfrm dumps ---------------------------------------------------------------

_STATE = (
    "ip xfrm state add src 198.51.100.1 dst 198.51.100.2 proto esp spi 0x3000 reqid 3 "
    "mode transport auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314 "
    "enc aes 0x000102030405060708090a0b0c0d0e0f"
)
_POLICY = (
    "ip xfrm policy add src 198.51.100.1 dst 198.51.100.2 dir out "
    "tmpl src 198.51.100.1 dst 198.51.100.2 proto esp reqid 3 mode transport"
)
_DUMPS = (
    "ip xfrm state",
    "ip xfrm policy",
    "ip xfrm state list",
    "ip -s xfrm policy show",
    "ip x s",
    "ip x p l",
)


def _printed(session: Session, line: str) -> str:
    buf = StringIO()
    console = Console(file=buf, width=100, color_system=None)
    run_text(session, line, console, console)
    return buf.getvalue()


@pytest.mark.parametrize("line", _DUMPS)
def test_an_empty_xfrm_dump_prints_nothing(session: Session, line: str) -> None:
    result = session.execute(line)
    assert isinstance(result, TextResult) and result.text == ""
    assert _printed(session, line) == ""


def test_an_empty_xfrm_dump_prints_nothing_with_c(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--no-color", "-c", "ip xfrm state; ip xfrm policy"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_an_empty_xfrm_dump_prints_nothing_in_the_repl(session: Session) -> None:
    buf = StringIO()
    console = Console(file=buf, width=100, color_system=None)
    with create_pipe_input() as pipe:
        pipe.send_text("ip xfrm state\r")
        pipe.send_text("ip xfrm policy\r")
        pipe.send_text("\x04")
        run_repl(session, console, input=pipe, output=DummyOutput(), history=InMemoryHistory())
    out = buf.getvalue()
    assert session.history == ["ip xfrm state", "ip xfrm policy"]
    assert "list" not in out
    assert out.splitlines()[1:] == []  # the banner, then nothing


def test_a_non_empty_xfrm_dump_is_printed_as_iproute2_prints_it(session: Session) -> None:
    from esplab.model.tools.iproute2.xfrm import run_ip_xfrm

    session.execute(_STATE)
    session.execute(_POLICY)
    node = session.lab.node("ap")
    for line in ("ip xfrm state", "ip xfrm policy"):
        expected = run_ip_xfrm(node.xfrm, line.split()[1:]).text
        assert expected.startswith("src 198.51.100.1")
        assert text(session, line) == expected.rstrip("\n")
        assert _printed(session, line) == expected


def test_an_xfrm_change_still_says_what_it_did(session: Session) -> None:
    assert session.execute(_STATE).summary == "ap: state added"
    assert session.execute("ip xfrm state flush").summary == "ap: state flushed (1)"
