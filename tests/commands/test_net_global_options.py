"""ip's global options as ip/ip.c main() reads them: abbreviations, -d for xfrm."""

from __future__ import annotations

import pytest

from esplab.commands.session import Session
from esplab.errors import BadArgument, UsageError
from tests.commands import seed
from tests.commands.results import text


def _session() -> Session:
    s = Session()
    s.execute(seed.SA_OUT)
    s.execute(seed.POL_OUT)
    return s


@pytest.mark.parametrize("opt", ["-d", "-det", "-details", "--details"])
def test_details_on_xfrm_prints_as_plain(opt: str) -> None:
    # ip.c: matches(opt, "-details"); ip/ipxfrm.c never reads show_details.
    s = _session()
    for obj in ("state", "policy"):
        assert text(s, f"ip {opt} xfrm {obj}") == text(s, f"ip xfrm {obj}")


@pytest.mark.parametrize("opt", ["-s", "-stat", "-stats", "-statis", "-statistics"])
def test_stats_abbreviations(opt: str) -> None:
    # ip.c: matches(opt, "-stats") || matches(opt, "-statistics").
    s = _session()
    assert text(s, f"ip {opt} xfrm state") == text(s, "ip -s xfrm state")
    assert text(s, f"ip {opt} -d xfrm state") == text(s, "ip -s xfrm state")


def test_family_abbreviation() -> None:
    s = _session()
    assert text(s, "ip -fam inet route") == text(s, "ip -4 route")


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("ip -d neigh", 'Option "-details" is not modelled by esplab for ip neigh'),
        ("ip -d route", 'Option "-details" is not modelled by esplab for ip route'),
        ("ip -t xfrm monitor", 'Option "-t" (-timestamp) is not modelled'),
        ("ip -j link", 'Option "-j" (-json) is not modelled'),
        ("ip -b link", 'Option "-b" (-batch) is not modelled'),
        ("ip -x link", 'Option "-x" is unknown'),
    ],
)
def test_what_is_not_modelled_is_named(line: str, why: str) -> None:
    with pytest.raises(UsageError) as err:
        _session().execute(line)
    assert why in str(err.value)


def test_a_double_dash_ends_the_options() -> None:
    # ip.c main(): strcmp(opt, "--") == 0 ends the option loop; the next word is the
    # object, even one that starts with a dash.
    s = _session()
    assert text(s, "ip -- route") == text(s, "ip route")
    assert text(s, "ip -s -- xfrm state") == text(s, "ip -s xfrm state")
    with pytest.raises(BadArgument, match='Object "-s" is unknown'):
        s.execute("ip -- -s link")
