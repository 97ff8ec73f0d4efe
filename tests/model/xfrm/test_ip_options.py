"""ip's global options (esplab.model.tools.iproute2.options), read as ip/ip.c main()
reads them. The answers quoted are iproute2 6.15's in the kernel guest (Linux 6.12)."""

from __future__ import annotations

import pytest

from esplab.commands.handlers.net import ip_global_options
from esplab.errors import ToolUsageError
from esplab.model.tools.iproute2.options import IpOpts, parse_options
from esplab.model.tools.iproute2.xfrm_grammar import parse_ip_xfrm


@pytest.mark.parametrize(
    ("line", "opts", "rest"),
    [
        # ip -s -s xfrm state: the stats, lifetime and counters (show_stats 2).
        ("-s -s xfrm state", IpOpts(stats=2), ["xfrm", "state"]),
        # ip -4 -s link: both read, the object follows.
        ("-4 -s link", IpOpts(stats=1, family=4), ["link"]),
        # matches(): -stat is -stats, --s is -s, -fam is -family, -bri is -brief.
        ("-stat link", IpOpts(stats=1), ["link"]),
        ("--s xfrm state", IpOpts(stats=1), ["xfrm", "state"]),
        ("-fam inet xfrm state", IpOpts(family=4), ["xfrm", "state"]),
        ("-bri link", IpOpts(brief=True), ["link"]),
        # The last family wins (ip -6 -4 xfrm state lists IPv4 SAs).
        ("-6 -4 xfrm state", IpOpts(family=4), ["xfrm", "state"]),
        ("-4 -f inet6 xfrm state", IpOpts(family=6), ["xfrm", "state"]),
        ("-br -o xfrm policy", IpOpts(brief=True, oneline=True), ["xfrm", "policy"]),
        ("-details xfrm state", IpOpts(details=1), ["xfrm", "state"]),
        # "--" ends the options: ip -- -s link says Object "-s" is unknown.
        ("-- -s link", IpOpts(), ["-s", "link"]),
    ],
)
def test_options_as_ip_reads_them(line: str, opts: IpOpts, rest: list[str]) -> None:
    assert parse_options(line.split())[0::2] == (opts, rest)


def test_the_words_read_drop_one_leading_dash() -> None:
    assert parse_options(["--s", "-f", "inet6", "--", "xfrm"]) == (
        IpOpts(stats=1, family=6),
        ["-s", "-f", "inet6"],
        ["xfrm"],
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("-z link", 'Option "-z" is unknown, try "ip -help".'),
        ("-x link", 'Option "-x" is unknown, try "ip -help".'),
        ("---s link", 'Option "--s" is unknown, try "ip -help".'),
        ("-sss xfrm state", 'Option "-sss" is unknown, try "ip -help".'),
        ("-statx link", 'Option "-statx" is unknown, try "ip -help".'),
        # 6.15 has no -D (DECnet is gone), and -echo is strcmp'd, so -e is unknown.
        ("-D link", 'Option "-D" is unknown, try "ip -help".'),
        ("-e link", 'Option "-e" is unknown, try "ip -help".'),
        ("-f foo link", 'argument "foo" is wrong: invalid protocol family'),
        ("-f ipx link", 'argument "ipx" is wrong: invalid protocol family'),
        ("-f", 'argument "family type" is required'),
        ("-fam", 'argument "family type" is required'),
    ],
)
def test_iproute2s_own_messages(line: str, message: str) -> None:
    with pytest.raises(ToolUsageError) as err:
        parse_options(line.split())
    assert str(err.value).startswith(message)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        # Options and families ip 6.15 takes (it ran each) that esplab does not model.
        ("-j link", 'Option "-j" (-json) is not modelled by esplab'),
        ("-h link", 'Option "-h" (-human) is not modelled by esplab'),
        ("- 3 link", 'Option "-" (-loops) is not modelled by esplab'),
        ("-0 link", 'Option "-0" is not modelled by esplab'),
        ("-M link", 'Option "-M" is not modelled by esplab'),
        ("-n foo link", 'Option "-n" (-netns) is not modelled by esplab'),
        ("-f link link", 'family "link" is not modelled by esplab'),
        ("-f mpls link", 'family "mpls" is not modelled by esplab'),
    ],
)
def test_what_ip_has_and_esplab_does_not_model(line: str, message: str) -> None:
    with pytest.raises(ToolUsageError) as err:
        parse_options(line.split())
    assert str(err.value).startswith(message)


@pytest.mark.parametrize(
    "options", ["-s -s", "-br", "-o", "-d", "-fam inet", "-f inet6", "--s", "-6 -4", "-s --"]
)
def test_the_ip_command_and_the_xfrm_grammar_read_options_alike(options: str) -> None:
    # ip -br xfrm state and ip -fam inet xfrm state list as ip does (iproute2 6.15).
    words = options.split()
    opts, _, rest = ip_global_options([*words, "xfrm", "state"])
    assert rest == ["xfrm", "state"]
    cmd = parse_ip_xfrm(["ip", *words, "xfrm", "state"])
    assert (cmd.stats, cmd.family) == (opts.stats, opts.family or 0)


def test_the_xfrm_grammar_refuses_as_the_ip_command_does() -> None:
    for line in ("-z", "---s", "-f", "-f foo", "-j"):
        with pytest.raises(ToolUsageError) as ours:
            ip_global_options([*line.split(), "xfrm", "state"])
        with pytest.raises(ToolUsageError) as grammar:
            parse_ip_xfrm(["ip", *line.split(), "xfrm", "state"])
        assert str(grammar.value) == str(ours.value)
