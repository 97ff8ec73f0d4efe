"""``ip neigh``: show, add, replace and del on a node's neighbour table."""

from __future__ import annotations

from ipaddress import IPv4Network, IPv6Network, ip_network

from esplab.commands.handlers.net_args import SHOW_VERBS, IpArgs, IpOpts, addr_arg
from esplab.commands.result import MessageResult, Result, TextResult
from esplab.commands.session import Session
from esplab.errors import BadArgument, KernelError
from esplab.model.l2 import parse_mac
from esplab.model.node import Neighbour, Node

__all__ = ["ip_neigh"]


def ip_neigh(session: Session, node: Node, args: IpArgs, opts: IpOpts) -> Result:
    verb = args.take("command") if args.more() else "show"
    if verb in SHOW_VERBS:
        return _neigh_show(node, args, opts.family)
    if verb not in ("add", "replace", "del", "delete"):
        raise BadArgument(
            f'Command "{verb}" is unknown for ip neigh', valid=["show", "add", "replace", "del"]
        )
    addr = addr_arg(args.take("address"))
    mac = None
    dev_name = None
    while args.more():
        key = args.take("keyword")
        if key == "lladdr":
            mac = parse_mac(args.take("mac"))
        elif key == "dev":
            dev_name = node.dev(args.take("device")).name
        elif key == "nud":
            args.take("state")
        else:
            raise BadArgument(f'unknown neigh keyword "{key}"', valid=["lladdr", "dev", "nud"])
    if dev_name is None:
        raise BadArgument("ip neigh needs 'dev DEVICE'")
    current = node.lookup_neigh(addr, dev_name)
    if verb in ("del", "delete"):
        if current is None:
            raise KernelError("ENOENT", f"no neighbour {addr} on {dev_name}")
        node.neigh.remove(current)
        node.invalidate()
        return MessageResult(summary=f"neighbour {addr} deleted")
    if mac is None:
        raise BadArgument("ip neigh add needs 'lladdr MAC'")
    if current is not None and verb == "add":
        raise KernelError("EEXIST", f"neighbour {addr} on {dev_name}")
    if current is not None:
        node.neigh.remove(current)
    node.neigh.append(Neighbour(addr, dev_name, mac))
    node.invalidate()
    return MessageResult(summary=f"neighbour {addr} lladdr {mac} dev {dev_name}")


def _neigh_show(node: Node, args: IpArgs, family: int | None) -> Result:
    """``ip neigh show [dev DEV] [[to] PREFIX]`` (iproute2 ip/ipneigh.c
    ``do_show_or_flush``, ``print_neigh``): -4/-6 and the prefix filter by family and
    address; with ``dev`` the device is not repeated on each line."""
    dev_name: str | None = None
    prefix: IPv4Network | IPv6Network | None = None
    while args.more():
        word = args.take("filter")
        if word == "dev":
            dev_name = node.dev(args.take("device name after 'dev'")).name
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
    ]
    if dev_name is None:
        lines = [n.render() for n in shown]
    else:
        lines = [f"{n.addr} lladdr {n.mac} {n.state}" for n in shown]
    return TextResult(
        summary=f"{len(shown)} neighbour(s)",
        text="\n".join(lines),
        data={"neigh": [n.render() for n in shown]},
    )
