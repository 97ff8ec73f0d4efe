"""ip: iproute2 on a node, one entry point for its objects.

``ip xfrm ...`` is handed to the XFRM model; link and addr (``net_link``), route
(``net_route``, its show in ``net_route_show``) and neigh (``net_neigh``) work on the
node's devices, addresses, routes and neighbours. Output follows iproute2's layouts
so it reads like a board's console.
"""

from __future__ import annotations

from collections.abc import Callable

from esplab.commands.base import Session
from esplab.commands.handlers.net_args import FAMILIES, IpArgs, IpOpts, Keyword, resolve
from esplab.commands.handlers.net_link import ip_addr, ip_link
from esplab.commands.handlers.net_neigh import ip_neigh
from esplab.commands.handlers.net_route import ip_route
from esplab.commands.parser import Invocation
from esplab.commands.registry import Command, Param, StepCheck
from esplab.commands.result import Result, TextResult
from esplab.errors import BadArgument, EsplabError
from esplab.model.kernel.node import Node
from esplab.model.tools.iproute2.options import parse_options

__all__ = ["COMMANDS", "OBJECTS", "ip_global_options", "ip_object", "xfrm_oneline"]

# The objects esplab models.
OBJECTS = ("link", "address", "route", "neighbour", "xfrm")

# ip/ip.c cmds[]: do_cmd takes the first object the word abbreviates, in this order, so
# "a" is address (before addrlabel), "r" route (before rule), "n" neighbour (before
# ntable, netns and netconf) and "l" link (before l2tp).
_OBJECT_WORDS = (
    Keyword("address", "address"),
    Keyword("addrlabel", None),
    Keyword("maddress", None),
    Keyword("route", "route"),
    Keyword("rule", None),
    Keyword("neighbor", "neighbour"),
    Keyword("neighbour", "neighbour"),
    Keyword("ntable", None),
    Keyword("ntbl", None),
    Keyword("link", "link"),
    Keyword("l2tp", None),
    Keyword("fou", None),
    Keyword("ila", None),
    Keyword("macsec", None),
    Keyword("tunnel", None),
    Keyword("tunl", None),
    Keyword("tuntap", None),
    Keyword("tap", None),
    Keyword("token", None),
    Keyword("tcpmetrics", None),
    Keyword("tcp_metrics", None),
    Keyword("monitor", None),
    Keyword("xfrm", "xfrm"),
    Keyword("mroute", None),
    Keyword("mrule", None),
    Keyword("netns", None),
    Keyword("netconf", None),
    Keyword("vrf", None),
    Keyword("sr", None),
    Keyword("nexthop", None),
    Keyword("mptcp", None),
    Keyword("ioam", None),
    Keyword("stats", None),
    Keyword("help", None),
)


def ip_object(word: str) -> str:
    """The object ``word`` names, one of ``OBJECTS``, as ip.c's ``do_cmd`` reads it."""
    return resolve(word, _OBJECT_WORDS, OBJECTS, "Object")


def xfrm_oneline(text: str) -> str:
    """``ip -o xfrm``: ip/ipxfrm.c ends each line inside a record with ``_SL_``, so
    with -o a record (a line that starts without a tab, and the tabbed lines after
    it) is one line, its lines joined by a backslash."""
    records: list[list[str]] = []
    for line in text.split("\n"):
        if line.startswith("\t") and records:
            records[-1].append(line)
        else:
            records.append([line])
    return "\n".join("\\".join(r) for r in records)


def ip_global_options(words: list[str]) -> tuple[IpOpts, list[str], list[str]]:
    """iproute2's global options, before the object (ip/ip.c ``main``, read by
    :func:`~esplab.model.tools.iproute2.options.parse_options`): the options, their
    words as ip.c reads them, and the words from the object on. ``-d`` is for ip link
    and ip addr, and for ip xfrm, which ignores it as iproute2 does (ip/ipxfrm.c never
    reads show_details); route and neigh details are not modelled. ``-o`` prints each
    record on one line. Pure: the lab checker parses run lines with it too."""
    opts, read, rest = parse_options(words)
    at = len(words) - len(rest)
    if opts.details and at < len(words):
        try:
            obj = ip_object(words[at])
        except BadArgument:
            obj = "xfrm"  # the object's own error comes next
        if obj not in ("xfrm", "link", "address"):
            raise BadArgument(
                f'Option "-details" is not modelled by esplab for ip {obj}',
                valid="ip -d link|addr|xfrm ... (ip -d xfrm prints as without -d, as "
                "iproute2 does)",
                hint=f"leave -d out of ip {obj}",
            )
    return opts, read, words[at:]


def _ip(session: Session, inv: Invocation) -> Result:
    node = session.lab.node(inv.node)
    opts, read, words = ip_global_options(list(inv.args["args"]))
    if not words:
        raise BadArgument("ip needs an object", valid=OBJECTS)
    obj = ip_object(words[0])
    if obj == "xfrm":
        # The ip xfrm grammar takes the option words too, and reads them with the same
        # parser (esplab.model.tools.iproute2.options): -s repeated, -4/-6, -f FAMILY.
        from esplab.commands.handlers.net_xfrm import run_ip_xfrm

        result: Result = run_ip_xfrm(session, node, [*read, *words])
        if opts.oneline and isinstance(result, TextResult):
            result.text = xfrm_oneline(result.text)
        return result
    words.pop(0)
    handler = _IP_OBJECTS[obj]
    return handler(session, node, IpArgs(words), opts)


_IP_OBJECTS: dict[str, Callable[[Session, Node, IpArgs, IpOpts], Result]] = {
    "link": ip_link,
    "address": ip_addr,
    "route": ip_route,
    "neighbour": ip_neigh,
}


def _ip_complete(session: Session, words: list[str]) -> list[str]:
    if words and words[-1] in ("-f", "-family", "--family"):
        return list(FAMILIES)
    try:
        _, _, rest = ip_global_options(words)  # the object on, as the command reads it
    except BadArgument:
        return []
    if not rest:
        # After "--" the next word is the object, whatever it looks like.
        return list(OBJECTS) if "--" in words else [*OBJECTS, "-s", "-4", "-6", "-br"]
    words = [w for w in rest if not w.startswith("-")]
    if not words:
        return []
    try:
        obj: str | None = ip_object(words[0])
    except BadArgument:
        obj = None
    if len(words) == 1:
        return {
            "link": ["show", "set"],
            "address": ["show", "add", "del"],
            "route": ["show", "get", "add", "del", "replace", "flush"],
            "neighbour": ["show", "add", "replace", "del"],
            "xfrm": ["state", "policy"],
        }.get(obj or "", [])
    if obj in ("link", "address", "neighbour") and words[-1] == "dev":
        return list(session.lab.node().devs)
    if obj == "link" and len(words) == 2:
        return list(session.lab.node().devs)
    if obj == "link" and words[1] == "set" and len(words) >= 3:
        return ["up", "down", "mtu"]
    if obj == "route" and words[1] == "flush" and len(words) == 2:
        return ["cache"]
    if obj == "xfrm":
        from esplab.commands.handlers.net_xfrm import xfrm_completions

        completions: list[str] = xfrm_completions(session, words[1:])
        return completions
    return []


def _refused_word(words: list[str], exc: EsplabError) -> int:
    """Which of ip's option ``words`` :func:`ip_global_options` refused with ``exc``: the
    first that, read with those before it, gives the same refusal."""
    for end in range(1, len(words) + 1):
        try:
            ip_global_options(words[:end])
        except EsplabError as found:
            if str(found) == str(exc):
                return end - 1
    return len(words) - 1


def _ip_check(check: StepCheck, inv: Invocation) -> list[str]:
    """``esplab check``: the global options and the object, as the handler reads them;
    ``ip xfrm`` as a whole, with the iproute2 grammar. Hands on the words from the
    object on."""
    from esplab.model.tools.iproute2.xfrm_grammar import parse_ip_xfrm

    words: list[str] = list(inv.args["args"])
    try:
        _, read, rest = ip_global_options(words)  # the handler's own reading
    except EsplabError as exc:
        check.refuse(exc, inv.tokens[1 + _refused_word(words, exc)])
    if not rest:
        check.refuse(BadArgument("ip needs an object", valid=OBJECTS), inv.tokens[-1])
    at = len(words) - len(rest)
    try:
        obj = ip_object(rest[0])
    except EsplabError as exc:
        check.refuse(exc, inv.tokens[1 + at])
    if obj == "xfrm":
        # As the handler hands it on: the options as ip.c read them, then the rest.
        parse_ip_xfrm([*read, *rest])  # the whole of ip xfrm parses without the model
    return rest


COMMANDS = (
    Command(
        name="ip",
        summary="iproute2 on the current node: link, addr, route, neigh, xfrm",
        handler=_ip,
        check=_ip_check,
        params=(Param("args", kind="rest", metavar="OBJECT"),),
        usage_text="[NODE] ip [-s] [-d] [-4|-6] [-br] link|addr|route|neigh|xfrm ...",
        example="host ip -s link show eth0",
        details="ip link set DEV up|down|mtu N; ip addr add|del ADDR/PLEN dev DEV; "
        "ip route show [SELECTOR] | get ADDR | add|del|replace PREFIX ... | flush cache; "
        "ip neigh add ADDR lladdr MAC dev DEV; ip xfrm state|policy ...",
        complete=_ip_complete,
        complete_on_node=True,
    ),
)
