from __future__ import annotations

import pytest

from esplab.commands.parser import parse, parse_int
from esplab.commands.registry import Command, Param, Registry
from esplab.commands.result import MessageResult, Result
from esplab.errors import BadArgument, UnknownCommand, UsageError


def _noop(session: object, inv: object) -> Result:
    return MessageResult(summary="ok")


REG = Registry(
    [
        Command(
            "show",
            "show a thing",
            _noop,
            params=(
                Param("what", choices=("ring", "regs", "stats")),
                Param("count", kind="int", optional=True),
                Param("hex", kind="flag"),
                Param("limit", kind="option", metavar="N"),
            ),
            aliases=("sh",),
        ),
        Command("say", "say words", _noop, params=(Param("words", kind="rest"),)),
        Command(
            "ping",
            "ping an address",
            _noop,
            params=(
                Param("dst"),
                Param("count", kind="option", metavar="N", short=("-c",)),
                Param("quiet", kind="flag", short=("-q",)),
            ),
        ),
    ]
)


def test_positional_choice_int_flag_and_option() -> None:
    inv = parse("show ring 0x10 --hex --limit 3", REG)
    assert inv.command.name == "show"
    assert inv.args == {"what": "ring", "count": 16, "hex": True, "limit": "3"}


def test_optional_positional_defaults_to_none_and_flags_to_false() -> None:
    inv = parse("sh regs", REG)
    assert inv.args == {"what": "regs", "count": None, "hex": False, "limit": None}


def test_choices_are_case_insensitive_and_canonicalised() -> None:
    assert parse("show RING", REG).args["what"] == "ring"


def test_rest_keeps_values_and_raw_text() -> None:
    inv = parse("say 'a b'  c(d e)", REG)
    assert inv.args["words"] == ["a b", "c(d e)"]
    assert inv.rest_raw == "'a b'  c(d e)"


def test_node_prefix() -> None:
    inv = parse("host show stats", REG, nodes=("ap", "host"))
    assert inv.node == "host"
    assert inv.command.name == "show"


def test_unknown_command_suggests() -> None:
    with pytest.raises(UnknownCommand) as info:
        parse("shwo ring", REG)
    assert "did you mean show?" in str(info.value)


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("show", "show needs WHAT"),
        ("show rung", "unknown what 'rung'; valid: ring, regs, stats; did you mean ring?"),
        ("show ring ten", "count must be a number, got 'ten'"),
        ("show ring 1 2", "unexpected argument '2' at column 13"),
        ("show ring --hx", "unknown option '--hx' for show"),
        ("show ring --limit", "option '--limit' needs a value"),
        ("say", "say needs WORDS..."),
    ],
)
def test_bad_arguments(line: str, fragment: str) -> None:
    with pytest.raises(BadArgument) as info:
        parse(line, REG)
    assert fragment in str(info.value)


def test_empty_line_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="empty command"):
        parse("   ", REG)


def test_parse_int() -> None:
    assert parse_int("0x1000", "spi") == 4096
    assert parse_int("17", "n") == 17
    with pytest.raises(BadArgument, match="spi must be a number"):
        parse_int("0xzz", "spi")


def test_registry_rejects_duplicate_names() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        Registry([Command("a", "", _noop), Command("b", "", _noop, aliases=("a",))])


NODES = ("ap", "host", "pc1", "pc2")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "pc9 show ring",
            "unknown command or node 'pc9'; nodes: ap, host, pc1, pc2; help lists the commands",
        ),
        (
            "HOST show ring",
            "unknown command or node 'HOST'; nodes: ap, host, pc1, pc2; did you mean host?",
        ),
        (
            "shwo ring",
            "unknown command or node 'shwo'; nodes: ap, host, pc1, pc2; did you mean show?",
        ),
    ],
)
def test_a_first_word_that_is_neither_command_nor_node(line: str, message: str) -> None:
    with pytest.raises(UnknownCommand) as info:
        parse(line, REG, nodes=NODES)
    assert str(info.value) == message


def test_a_lone_unknown_word_lists_the_commands() -> None:
    with pytest.raises(UnknownCommand) as info:
        parse("pc9", REG, nodes=NODES)
    assert str(info.value) == "unknown command 'pc9'; valid: show, say, ping"


def test_the_session_names_its_nodes() -> None:
    from esplab.commands.session import Session

    with pytest.raises(UnknownCommand) as info:
        Session().execute("HOST ip addr")
    assert str(info.value) == (
        "unknown command or node 'HOST'; nodes: ap, host, pc1, pc2, pc3, pc4; did you mean host?"
    )


@pytest.mark.parametrize(
    "line",
    ["ping -c 3 192.0.2.2", "ping -c3 192.0.2.2", "ping 192.0.2.2 --count 3", "ping -q -c 3 h"],
)
def test_short_spellings_of_an_option(line: str) -> None:
    inv = parse(line, REG)
    assert inv.args["count"] == "3"
    assert inv.args["dst"] in ("192.0.2.2", "h")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("ping -s 100 192.0.2.2", "unknown option '-s' for ping; valid: --count, -c, --quiet, -q"),
        ("ping 192.0.2.2 -c", "option '-c' needs a value; usage: ping DST [--count N|-c N]"),
        ("ping -qc 2 h", "unknown option '-qc' for ping"),
        (
            "ping --cuont 2 h",
            "unknown option '--cuont' for ping; valid: --count, --quiet; did you mean --count?",
        ),
    ],
)
def test_unknown_short_options_are_named(line: str, message: str) -> None:
    with pytest.raises(BadArgument) as info:
        parse(line, REG)
    assert message in str(info.value)


def test_a_negative_number_is_no_option() -> None:
    assert parse("ping -1", REG).args == {"dst": "-1", "count": None, "quiet": False}
    with pytest.raises(BadArgument, match="unknown option '-x' for ping"):
        parse("ping -x", REG)


def test_rest_only_commands_read_their_own_long_options() -> None:
    # ethtool and ip parse their own options, long spellings included
    # (ethtool --statistics, ip --stats as ip/ip.c reads --x as -x).
    from esplab.commands.result import TextResult
    from esplab.commands.session import Session

    s = Session()
    stats = s.execute("ethtool --statistics lan1")
    assert isinstance(stats, TextResult) and "tx_packets: 0" in stats.text
    link = s.execute("ip --stats link show wan")
    assert isinstance(link, TextResult) and "RX:  bytes packets" in link.text


def test_a_node_name_alone_asks_for_its_command() -> None:
    from esplab.commands.result import ErrorResult
    from esplab.commands.session import Session

    result = Session().run("host")
    assert isinstance(result, ErrorResult)
    assert result.summary == "host: which command? e.g. host ip addr"


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("host eip93 regs", "the EIP-93 is the ap's engine"),
        ("host node", "node NAME picks the current node"),
        ("host trace", "journeys belong to the lab"),
    ],
)
def test_a_node_prefix_a_command_cannot_use_is_refused(line: str, why: str) -> None:
    from esplab.commands.result import ErrorResult
    from esplab.commands.session import Session

    result = Session().run(line)
    assert isinstance(result, ErrorResult)
    assert "takes no node prefix ('host')" in result.summary and why in result.summary


def test_a_lab_wide_setting_refuses_a_node_prefix() -> None:
    from esplab.commands.session import Session

    s = Session()
    assert not s.run("host set tracing off").ok
    assert s.lab.settings.tracing is True  # unchanged
    assert s.run("host set policy-priority rfc").ok
