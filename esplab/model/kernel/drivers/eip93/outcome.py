"""What the EIP-93 driver hands back: offloaded SAs, outcomes, counters, tickets."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from esplab.model.stage import Later, Stage, build_in_place

if TYPE_CHECKING:
    from esplab.model.kernel.drivers.eip93.rings import EIP93Rings

__all__ = [
    "DMA_BUFFER_SIZE",
    "AeadTfm",
    "Direction",
    "DriverStats",
    "Finish",
    "OffloadType",
    "OffloadedSA",
    "Outcome",
    "SAStats",
    "StateAdd",
    "Ticket",
    "defer_stages",
    "stage_items",
]

#: One DMA buffer per ring slot [M] dma-buffer.
DMA_BUFFER_SIZE = 16384

Direction = Literal["in", "out"]
OffloadType = Literal["crypto", "packet"]


@dataclass
class SAStats:
    """Per-SA counters, as ``xdo_dev_state_update_stats`` would report them."""

    packets: int = 0
    bytes: int = 0
    integrity_failed: int = 0
    replay: int = 0
    errors: Counter[str] = field(default_factory=Counter)


@dataclass
class OffloadedSA:
    """One xfrm state programmed into the engine (the driver's ``xso.offload_handle``)."""

    handle: int
    dev: str
    direction: Direction
    spi: int
    mode: str
    family: int
    offload: OffloadType
    enc: str
    auth: str
    icv_bits: int
    sa_addr: int
    state_addr: int
    iv_size: int
    stats: SAStats = field(default_factory=SAStats)
    #: ``EIP93SARecord.for_esp``'s arguments for this SA: the record the driver wrote,
    #: rebuilt when a fault is set or cleared (:mod:`esplab.model.kernel.drivers.eip93.faults`).
    recipe: dict[str, Any] = field(default_factory=dict, repr=False)
    #: Injected faults: kind -> its argument ("" for none), in the order set.
    faults: dict[str, str] = field(default_factory=dict)
    #: The (cipher key, HMAC key) a ``wrong-sa`` fault programs: the other SA's, taken
    #: when the fault is set (that SA may be gone by the next rebuild).
    wrong_keys: tuple[bytes, bytes] = field(default=(b"", b""), repr=False)

    @property
    def icv_len(self) -> int:
        return self.icv_bits // 8

    @property
    def key(self) -> tuple[int, str]:
        return self.spi, self.direction

    def describe(self) -> str:
        return (
            f"{self.dev} {self.direction} SPI {self.spi:#010x} {self.mode} {self.offload} "
            f"offload, {self.enc} + {self.auth}/{self.icv_bits}, SA at {self.sa_addr:#010x}"
        )


@dataclass
class StateAdd:
    """The answer of ``xdo_dev_state_add``: None or an errno name, and why."""

    errno: str | None
    reason: str
    sa: OffloadedSA | None = None
    stages: list[Stage] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.errno is None


@dataclass(slots=True)
class Outcome:
    """What the driver made of one packet or crypto request.

    ``data``: TX, the ESP packet for the wire; crypto RX, the packet with its ESP
    header and IV and the trailer removed (``XFRM_ESP_NO_TRAILER``); packet RX, the
    decapsulated packet; AEAD, the crypto API's output. ``status`` is the
    ``xo->status`` name on RX; ``errno`` the crypto API error of an AEAD request;
    ``mib`` the ``/proc/net/xfrm_stat`` counter bumped; ``errors`` the engine's
    status names; ``flushed`` the SAs a DMA error flushed. ``pending`` means the
    engine has not finished (it is paused); :meth:`EIP93Rings.poll` collects it later.
    """

    ok: bool
    data: bytes = b""
    stages: list[Stage] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    status: str = ""
    errno: str | None = None
    mib: str | None = None
    reason: str | None = None
    seq: int | None = None
    next_header: int | None = None
    flushed: list[OffloadedSA] = field(default_factory=list)
    slot: int | None = None
    pending: bool = False
    result: bytes = b""


_STAGES: Any = Outcome.__dict__["stages"]  # the slot that holds Outcome.stages


class _DeferredOutcome(Outcome):
    """An :class:`Outcome` whose stages hold :class:`~esplab.model.stage.Later` places
    (a job's stages), built when ``stages`` is first read; it is a plain Outcome again
    from then on."""

    __slots__ = ()

    @property
    def stages(self) -> list[Stage]:
        value: list[Stage] = build_in_place(_STAGES.__get__(self, Outcome))
        self.__class__ = Outcome  # type: ignore[assignment]
        return value

    @stages.setter
    def stages(self, value: list[Stage]) -> None:
        _STAGES.__set__(self, value)
        self.__class__ = Outcome  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        _ = self.stages  # a plain Outcome from here on: compare as one
        return self == other

    __hash__ = None  # type: ignore[assignment]

    def __reduce_ex__(self, protocol: Any) -> Any:
        _ = self.stages  # copies and pickles are of the plain Outcome
        return self.__reduce_ex__(protocol)


def defer_stages(outcome: Outcome) -> None:
    """Let ``outcome`` build the places in its stages still to be built
    (:func:`~esplab.model.stage.build_in_place`) when someone first reads them."""
    if type(outcome) is Outcome:
        items: list[Any] = outcome.stages
        for item in items:
            if type(item) is Later or type(item) is tuple:
                outcome.__class__ = _DeferredOutcome
                return


def stage_items(outcome: Outcome) -> list[Any]:
    """``outcome``'s stages as they are held, :class:`~esplab.model.stage.Later` places
    unbuilt (to hand on to a journey, which builds them when it is read)."""
    return _STAGES.__get__(outcome, Outcome)  # type: ignore[no-any-return]


@dataclass
class DriverStats:
    """Driver-wide counters (``eip93 stats``)."""

    submitted: int = 0
    completed: int = 0
    ring_full: int = 0
    not_ready: int = 0
    tx_packets: int = 0
    tx_errors: int = 0
    rx_packets: int = 0
    rx_errors: int = 0
    flushes: int = 0
    mib: Counter[str] = field(default_factory=Counter)


#: Finishes one completed descriptor: (driver, result words, ticket) -> Outcome.
Finish = Callable[["EIP93Rings", tuple[int, ...], "Ticket"], Outcome]


@dataclass(slots=True)
class Ticket:
    """One descriptor in flight: its slot, what to do when it completes, its stages and
    its ``context``: what ``finish`` needs of the request, as its datapath packed it."""

    slot: int
    finish: Finish
    stages: list[Stage]
    context: Any = None
    outcome: Outcome | None = None


@dataclass
class AeadTfm:
    """``authenc(hmac(H),C)`` keyed on the engine: two SA records and a state record."""

    handle: int
    name: str
    alg: str
    authsize: int
    iv_size: int
    blocksize: int
    ctr: bool
    nonce: bytes
    sa_out: int
    sa_in: int
    state: int
    cmd1_out: int
    cmd1_in: int
    spi: int | None = None
    #: How setkey took an HMAC key longer than a block ("" for the others).
    key_note: str = ""
    #: SA records (sa_out/sa_in) whose digest words an ``eip93 swap-digest`` reversed.
    swapped: set[int] = field(default_factory=set)
