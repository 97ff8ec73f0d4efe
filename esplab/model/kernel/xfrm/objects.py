"""XFRM states (SAD entries) and policies (SPD entries) as the kernel keeps them.

Field names follow ``include/uapi/linux/xfrm.h`` (``struct xfrm_usersa_info``,
``struct xfrm_userpolicy_info``, ``struct xfrm_user_tmpl``) and the words
``ip xfrm`` prints for them (reference ``airoha-dsa-xfrm.md`` 5.1, 5.2, 5.4).
Addresses use :mod:`ipaddress`; selector prefixes are interfaces, not networks,
because the kernel stores the address exactly as given (host bits included) and
iproute2 prints it back that way.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from ipaddress import (
    IPv4Address,
    IPv4Interface,
    IPv6Address,
    IPv6Interface,
    ip_address,
    ip_interface,
)
from types import MappingProxyType
from typing import Literal, TypeAlias

from esplab.model.kernel.xfrm.algos import XfrmAlgo
from esplab.model.kernel.xfrm.runtime import PolicyRuntime, StateRuntime

__all__ = [
    "ACTIONS",
    "IPPROTO_AH",
    "IPPROTO_COMP",
    "IPPROTO_ESP",
    "MODES",
    "POLICY_DIRS",
    "POLICY_FLAGS",
    "STATE_EXTRA_FLAGS",
    "STATE_FLAGS",
    "XFRM_INF",
    "XFRM_PROTOS",
    "Address",
    "Flow",
    "LifetimeCfg",
    "LifetimeCur",
    "PolicyId",
    "Prefix",
    "ReplayState",
    "Selector",
    "StateId",
    "StateStats",
    "XfrmEncap",
    "XfrmMark",
    "XfrmOffload",
    "XfrmPolicy",
    "XfrmState",
    "XfrmTemplate",
    "any_address",
    "proto_name",
    "upper_proto_number",
]

Address: TypeAlias = IPv4Address | IPv6Address
Prefix: TypeAlias = IPv4Interface | IPv6Interface

# include/uapi/linux/xfrm.h: XFRM_INF, the "no limit" lifetime value.
XFRM_INF = (1 << 64) - 1

IPPROTO_ESP = 50
IPPROTO_AH = 51
IPPROTO_COMP = 108

# iproute2 ip/ipxfrm.c xfrmproto_types: the XFRM-PROTO words and their numbers.
XFRM_PROTOS = MappingProxyType(
    {"esp": IPPROTO_ESP, "ah": IPPROTO_AH, "comp": IPPROTO_COMP, "route2": 43, "hao": 60}
)

# iproute2 ip/ipxfrm.c xfrm_mode_parse; include/uapi/linux/xfrm.h XFRM_MODE_*.
MODES = ("transport", "tunnel", "ro", "in_trigger", "beet")

# include/uapi/linux/xfrm.h XFRM_STATE_* bits, in the order iproute2 prints them
# (ip/ipxfrm.c xfrm_state_info_print).
STATE_FLAGS = MappingProxyType(
    {
        "noecn": 1,
        "decap-dscp": 2,
        "nopmtudisc": 4,
        "wildrecv": 8,
        "icmp": 16,
        "af-unspec": 32,
        "align4": 64,
        "esn": 128,
    }
)
# XFRM_SA_XFLAG_* (XFRMA_SA_EXTRA_FLAGS).
STATE_EXTRA_FLAGS = MappingProxyType({"dont-encap-dscp": 1, "oseq-may-wrap": 2})
# XFRM_POLICY_LOCALOK / XFRM_POLICY_ICMP.
POLICY_FLAGS = MappingProxyType({"localok": 1, "icmp": 2})
# XFRM_POLICY_IN / OUT / FWD (the number is also the low bits of the policy index).
POLICY_DIRS = MappingProxyType({"in": 0, "out": 1, "fwd": 2})
ACTIONS = ("allow", "block")

# Upper-layer protocol names as /etc/protocols gives them to iproute2
# (getprotobyname/getprotobynumber in ip/ipxfrm.c); the usual Debian table.
_UPPER_PROTOS = MappingProxyType(
    {
        "ip": 0,
        "icmp": 1,
        "igmp": 2,
        "ipencap": 4,
        "tcp": 6,
        "udp": 17,
        "ipv6": 41,
        "ipv6-route": 43,
        "ipv6-frag": 44,
        "gre": 47,
        "esp": 50,
        "ah": 51,
        "ipv6-icmp": 58,
        "ipv6-nonxt": 59,
        "ipv6-opts": 60,
        "ipcomp": 108,
        "sctp": 132,
        "dccp": 33,
        "mobility-header": 135,
        "udplite": 136,
    }
)
_UPPER_NAMES = MappingProxyType({v: k for k, v in _UPPER_PROTOS.items() if k != "ip"})


def proto_name(number: int) -> str:
    """The /etc/protocols name of an upper-layer protocol, or its number."""
    return _UPPER_NAMES.get(number, str(number))


def upper_proto_number(name: str) -> int | None:
    """The number for an /etc/protocols name, or None."""
    return _UPPER_PROTOS.get(name)


def any_address(family: int) -> Address:
    """The all-zero address of a family (``0.0.0.0`` or ``::``)."""
    return ip_address("::") if family == 6 else ip_address("0.0.0.0")


def _any_prefix(family: int) -> Prefix:
    return ip_interface("::/0") if family == 6 else ip_interface("0.0.0.0/0")


@dataclass(frozen=True)
class XfrmMark:
    """``struct xfrm_mark``: a packet matches when ``mark & mask == value``."""

    value: int
    mask: int = 0xFFFFFFFF

    def matches(self, mark: int) -> bool:
        return (mark & self.mask) == self.value


@dataclass(frozen=True)
class Selector:
    """``struct xfrm_selector``.

    ``family`` 0 is AF_UNSPEC: a state added with ``flag af-unspec`` and no ``sel``
    keeps an all-zero selector, which ``ip xfrm state`` does not print (iproute2
    ``xfrm_selector_iszero``). For ICMP the type and code live in ``sport`` and
    ``dport``, for GRE the key is split across both, as in the kernel.
    """

    src: Prefix = field(default_factory=lambda: _any_prefix(4))
    dst: Prefix = field(default_factory=lambda: _any_prefix(4))
    proto: int = 0
    sport: int = 0
    sport_mask: int = 0
    dport: int = 0
    dport_mask: int = 0
    dev: str | None = None
    family: int = 4

    @classmethod
    def zero(cls) -> Selector:
        """The all-zero selector (family AF_UNSPEC)."""
        return cls(family=0)

    @classmethod
    def any(cls, family: int) -> Selector:
        """``src 0.0.0.0/0 dst 0.0.0.0/0`` (or ``::/0``) of a family."""
        return cls(src=_any_prefix(family), dst=_any_prefix(family), family=family)

    @property
    def is_zero(self) -> bool:
        return self == Selector.zero()

    def with_family(self, family: int) -> Selector:
        """The same selector with ``family`` set (kernel ``copy_from_user_state``)."""
        if self.family:
            return self
        return dataclasses.replace(
            self, src=_any_prefix(family), dst=_any_prefix(family), family=family
        )

    def matches(self, flow: Flow) -> bool:
        """Kernel ``xfrm_selector_match``: prefixes, ports under their masks, proto, dev."""
        if self.family and self.family != flow.src.version:
            return False
        if flow.src not in self.src.network or flow.dst not in self.dst.network:
            return False
        if (flow.sport ^ self.sport) & self.sport_mask:
            return False
        if (flow.dport ^ self.dport) & self.dport_mask:
            return False
        if self.proto and flow.proto != self.proto:
            return False
        return not (self.dev is not None and flow.dev != self.dev)

    @property
    def is_exact(self) -> bool:
        """Both prefixes full length: the policy sits in an exact hash chain
        (kernel ``policy_hash_bysel`` with the default hthresh 32/32, 128/128)."""
        full = 128 if self.src.version == 6 else 32
        return self.src.network.prefixlen >= full and self.dst.network.prefixlen >= full


@dataclass(frozen=True)
class XfrmEncap:
    """``struct xfrm_encap_tmpl``: NAT-T (UDP) or TCP encapsulation."""

    type: Literal["espinudp", "espinudp-nonike", "espintcp"]
    sport: int
    dport: int
    oaddr: Address


@dataclass(frozen=True)
class LifetimeCfg:
    """``struct xfrm_lifetime_cfg`` (``limit ...`` in the grammar)."""

    soft_byte_limit: int = XFRM_INF
    hard_byte_limit: int = XFRM_INF
    soft_packet_limit: int = XFRM_INF
    hard_packet_limit: int = XFRM_INF
    soft_add_expires_seconds: int = 0
    hard_add_expires_seconds: int = 0
    soft_use_expires_seconds: int = 0
    hard_use_expires_seconds: int = 0


@dataclass
class LifetimeCur:
    """``struct xfrm_lifetime_cur``: what has been used so far (seconds since the epoch)."""

    bytes: int = 0
    packets: int = 0
    add_time: int = 0
    use_time: int = 0


@dataclass
class StateStats:
    """``struct xfrm_stats``: ``ip -s xfrm state`` prints ``replay-window N replay N failed N``."""

    replay_window: int = 0
    replay: int = 0
    integrity_failed: int = 0


@dataclass
class ReplayState:
    """The anti-replay context (``struct xfrm_replay_state`` / ``xfrm_replay_state_esn``).

    ``bitmap`` holds the whole window, bit 0 the newest sequence number; with the
    ESN form it is printed as ``bmp_len`` 32-bit words, most significant first.
    """

    seq: int = 0
    oseq: int = 0
    seq_hi: int = 0
    oseq_hi: int = 0
    bitmap: int = 0


@dataclass(frozen=True)
class XfrmOffload:
    """A device binding (``XFRMA_OFFLOAD_DEV``).

    For a state ``dir`` is ``in`` or ``out`` (``XFRM_OFFLOAD_INBOUND``); for a
    policy it is the policy's own direction and ``type`` is always ``packet``.
    """

    type: Literal["crypto", "packet"]
    dev: str
    dir: Literal["in", "out", "fwd"]


@dataclass
class XfrmState:
    """One SA. Algorithms are kept as (canonical kernel name, key, ICV bits) so the
    ESP data path can be built from them."""

    src: Address
    dst: Address
    proto: int = IPPROTO_ESP
    spi: int = 0
    reqid: int = 0
    mode: str = "transport"
    replay_window: int = 0
    flags: frozenset[str] = frozenset()
    extra_flags: frozenset[str] = frozenset()
    sel: Selector = field(default_factory=Selector.zero)
    sa_dir: Literal["in", "out"] | None = None
    encap: XfrmEncap | None = None
    lifetime: LifetimeCfg = field(default_factory=LifetimeCfg)
    auth: XfrmAlgo | None = None
    enc: XfrmAlgo | None = None
    aead: XfrmAlgo | None = None
    comp: XfrmAlgo | None = None
    offload: XfrmOffload | None = None
    if_id: int = 0
    tfcpad: int = 0
    mark: XfrmMark | None = None
    # XFRMA_SET_MARK/_MASK: the mark Linux puts on a packet this SA outputs. Stored and
    # listed as the kernel does [K]; the lab's packets carry no mark, so it changes no
    # journey (our design [M]).
    output_mark: XfrmMark | None = None
    seq: int = 0
    stats: StateStats = field(default_factory=StateStats)
    curlft: LifetimeCur = field(default_factory=LifetimeCur)
    replay: ReplayState = field(default_factory=ReplayState)
    lastused: int = 0
    # km.state XFRM_STATE_ACQ: a larval state that ``ip xfrm state allocspi`` (or an
    # ACQUIRE) made; it holds an SPI and no keys, and no packet uses it.
    larval: bool = False
    # What the kernel and the lab build for this object (esplab.model.kernel.xfrm.runtime):
    # a state made again from a request starts with an empty one.
    runtime: StateRuntime = field(
        default_factory=StateRuntime, init=False, repr=False, compare=False
    )

    @property
    def family(self) -> int:
        return self.dst.version

    @property
    def esn(self) -> bool:
        return "esn" in self.flags

    @property
    def uses_esn_replay(self) -> bool:
        """iproute2 sends ``XFRMA_REPLAY_ESN_VAL`` for ``flag esn`` or a window wider
        than the 32-bit legacy bitmap (ip/xfrm_state.c), and the kernel then dumps the
        ``anti-replay esn context`` and a legacy ``replay-window 0``."""
        return self.esn or self.replay_window > 32

    @property
    def bmp_len(self) -> int:
        """Words in the ESN bitmap: the window rounded up to 32 bits."""
        return (self.replay_window + 31) // 32

    @property
    def is_packet_offload(self) -> bool:
        return self.offload is not None and self.offload.type == "packet"


@dataclass(frozen=True)
class XfrmTemplate:
    """``struct xfrm_user_tmpl``. A zero ``src``/``dst`` is a wildcard."""

    src: Address
    dst: Address
    proto: int = IPPROTO_ESP
    spi: int = 0
    reqid: int = 0
    mode: str = "transport"
    level: Literal["required", "use"] = "required"


@dataclass
class XfrmPolicy:
    """One SPD entry."""

    sel: Selector
    dir: Literal["in", "out", "fwd"]
    priority: int = 0
    action: Literal["allow", "block"] = "allow"
    index: int = 0
    ptype: Literal["main", "sub"] = "main"
    flags: frozenset[str] = frozenset()
    mark: XfrmMark | None = None
    if_id: int = 0
    lifetime: LifetimeCfg = field(default_factory=LifetimeCfg)
    curlft: LifetimeCur = field(default_factory=LifetimeCur)
    templates: tuple[XfrmTemplate, ...] = ()
    offload: XfrmOffload | None = None
    socket: bool = False
    # Insertion position (kernel ``pol->pos``): the older policy wins a priority tie.
    pos: int = 0
    # The device it is offloaded to (esplab.model.kernel.xfrm.runtime).
    runtime: PolicyRuntime = field(
        default_factory=PolicyRuntime, init=False, repr=False, compare=False
    )

    @property
    def family(self) -> int:
        return self.sel.family or 4

    @property
    def is_packet_offload(self) -> bool:
        return self.offload is not None

    def key(self) -> tuple[object, ...]:
        """The SPD identity ``xfrm_policy_insert`` uses for ``-EEXIST``: selector,
        direction, mark, if_id, type (reference 3.5)."""
        mark = (self.mark.value, self.mark.mask) if self.mark else (0, 0)
        return (self.socket, self.dir, self.sel, mark, self.if_id, self.ptype)


@dataclass(frozen=True)
class Flow:
    """What a lookup is asked about: the 5-tuple plus device, mark and if_id.

    For ICMP, ``sport``/``dport`` carry type/code, as in the kernel's flowi.
    """

    src: Address
    dst: Address
    proto: int = 0
    sport: int = 0
    dport: int = 0
    dev: str | None = None
    mark: int = 0
    if_id: int = 0


@dataclass(frozen=True)
class StateId:
    """How ``ip xfrm state get|delete`` names an SA (``struct xfrm_usersa_id`` +
    ``XFRMA_MARK``). For ESP, AH and IPComp the kernel ignores the source address
    (``xfrm_user_state_lookup``), so it is not kept."""

    dst: Address
    spi: int = 0
    proto: int = IPPROTO_ESP
    mark: int = 0


@dataclass(frozen=True)
class PolicyId:
    """How ``ip xfrm policy get|delete`` names a policy: a selector or an index,
    plus direction, mark, if_id and type (``struct xfrm_userpolicy_id``)."""

    dir: Literal["in", "out", "fwd"]
    sel: Selector | None = None
    index: int = 0
    mark: XfrmMark | None = None
    if_id: int = 0
    ptype: Literal["main", "sub"] = "main"
