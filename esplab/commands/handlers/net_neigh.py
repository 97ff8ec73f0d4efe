"""``ip neigh``: show, add, replace and del on a node's neighbour table."""

from __future__ import annotations

from ipaddress import IPv4Network, IPv6Network, ip_network

from esplab.commands.base import Session
from esplab.commands.handlers.net_args import IpArgs, IpOpts, Keyword, addr_arg, resolve
from esplab.commands.result import MessageResult, Result, TextResult
from esplab.errors import BadArgument, KernelError
from esplab.model.journey.l2 import parse_mac
from esplab.model.kernel.node import Node
from esplab.model.kernel.stack.route import Neighbour

__all__ = ["ip_neigh"]

# ip/ipneigh.c do_ipneigh tries these in order, so "s" is show and "d" delete.
_NEIGH_VERBS = (
    Keyword("add", "add"),
    Keyword("change", None),
    Keyword("chg", None, exact=True),
    Keyword("replace", "replace"),
    Keyword("delete", "delete"),
    Keyword("show", "show"),
    Keyword("lst", "show"),
    Keyword("list", "show"),
    Keyword("flush", None),
    Keyword("get", None),
    Keyword("help", None),
)


def ip_neigh(session: Session, node: Node, args: IpArgs, opts: IpOpts) -> Result:
    word = args.take("command") if args.more() else "show"
    verb = resolve(
        word, _NEIGH_VERBS, ["show", "add", "replace", "del"], "Command", " for ip neigh"
    )
    if verb == "show":
        return _neigh_show(node, args, opts.family)
    addr = addr_arg(args.take("address"))
    state = "PERMANENT"  # iproute2 ipneigh_modify: NUD_PERMANENT unless nud says
    mac = None
    dev_name = None
    while args.more():
        key = args.take("keyword")
        if key == "lladdr":
            mac = parse_mac(args.take("mac"))
        elif key == "dev":
            dev_name = node.dev(args.take("device")).name
        elif key == "nud":
            state = _nud(args.take("state after 'nud'"))
        else:
            raise BadArgument(f'unknown neigh keyword "{key}"', valid=["lladdr", "dev", "nud"])
    if dev_name is None:
        raise BadArgument("ip neigh needs 'dev DEVICE'")
    current = node.lookup_neigh(addr, dev_name)
    if verb == "delete":
        if current is None:
            raise KernelError("ENOENT", f"no neighbour {addr} on {dev_name}")
        node.neigh.remove(current)
        node.invalidate()
        return MessageResult(summary=f"neighbour {addr} deleted")
    if mac is None:
        # The kernel refuses a neighbour without a link-layer address for every state
        # but failed and incomplete (net/core/neighbour.c neigh_add) [C].
        raise KernelError(
            "EINVAL", "No link layer address given.", hint="ip neigh add needs 'lladdr MAC'"
        )
    if current is not None and verb == "add":
        raise KernelError("EEXIST", f"neighbour {addr} on {dev_name}")
    if current is not None:
        node.neigh.remove(current)
    node.neigh.append(Neighbour(addr, dev_name, mac, state))
    node.invalidate()
    return MessageResult(summary=f"neighbour {addr} lladdr {mac} dev {dev_name} {state}")


#: The states ``nud`` takes (iproute2 ip/ipneigh.c ``nud_state_a2n``), those esplab
#: keeps. A neighbour keeps the state it is given: the lab has no timers, so reachable
#: does not age to stale, nor delay and probe to failed, as they would on Linux
#: without traffic [M]. failed, incomplete and none are not modelled: the kernel keeps
#: no valid link-layer address in them (neigh_fill_info sends NDA_LLADDR only for
#: NUD_VALID), so the walk would have to resolve one, and it has no ARP or ND.
NUD_STATES = ("permanent", "reachable", "stale", "noarp", "delay", "probe")
_NUD_OTHERS = ("failed", "incomplete", "none")


def _nud(word: str) -> str:
    """The NUD state ``word`` names, as ip neigh prints it."""
    if word in NUD_STATES:
        return word.upper()
    if word in _NUD_OTHERS:
        raise BadArgument(
            f"nud {word} is not modelled: a neighbour has a valid link-layer address here",
            valid=NUD_STATES,
            value=word,
        )
    raise BadArgument(f'argument "{word}" is wrong: nud state is bad', valid=NUD_STATES, value=word)


def _neigh_show(node: Node, args: IpArgs, family: int | None) -> Result:
    """``ip neigh show [dev DEV] [[to] PREFIX]`` (iproute2 ip/ipneigh.c
    ``do_show_or_flush``, ``print_neigh``): -4/-6 and the prefix filter by family and
    address; with ``dev`` the device is not repeated on each line."""
    dev_name: str | None = None
    prefix: IPv4Network | IPv6Network | None = None
    # ip/ipneigh.c do_show_or_flush: every state but NOARP (and NONE) unless nud says
    # ("nud all" shows every one) [C].
    states: set[str] | None = None
    while args.more():
        word = args.take("filter")
        if word == "dev":
            dev_name = node.dev(args.take("device name after 'dev'")).name
            continue
        if word == "nud":
            name = args.take("state after 'nud'")
            states = states or set()
            if name == "all":
                states |= {s.upper() for s in NUD_STATES}
            else:
                states.add(_nud(name))
            continue
        if word == "to":
            word = args.take("prefix after 'to'")
        try:
            prefix = ip_network(word, strict=False)
        except ValueError:
            raise BadArgument(
                f'"{word}" is neither a filter nor a prefix',
                valid=["dev DEVICE", "[to] PREFIX"],
            ) from None
    if prefix is not None and family is None:
        family = prefix.version
    shown = [
        n
        for n in node.neigh
        if (family is None or n.addr.version == family)
        and (dev_name is None or n.dev == dev_name)
        and (prefix is None or (n.addr.version == prefix.version and n.addr in prefix))
        and (n.state in states if states is not None else n.state != "NOARP")
    ]
    # print_neigh ends each state with a blank (as iproute2 6.15 prints it).
    if dev_name is None:
        lines = [n.render() for n in shown]
    else:
        lines = [f"{n.addr} lladdr {n.mac} {n.state} " for n in shown]
    return TextResult(
        summary=f"{len(shown)} neighbour(s)",
        text="\n".join(lines),
        data={"neigh": [n.render() for n in shown]},
    )
