"""A truncation-tolerant base for fixed-size records (descriptors, SA records, tags).

Scapy raises on a header shorter than its fields. Records built on
:class:`TruncatablePacket` dissect short input cleanly instead: the fields whose
bytes are all present are filled (a little-endian word of bit fields is read
whole, since its bytes are reversed before any bit can be read), the others keep
their defaults, and the leftover bytes become a ``Raw`` payload, so ``raw(p)`` is
still the input.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from scapy.config import conf
from scapy.fields import _BitField
from scapy.packet import Packet

__all__ = ["TruncatablePacket"]


@cache
def _field_groups(cls: type[Packet]) -> tuple[tuple[int, int], ...]:
    """Split ``cls.fields_desc`` into independently decodable groups.

    Each group is ``(byte size, number of fields)``. A plain field is its own group.
    Big-endian bit fields group up to the next byte boundary; a little-endian word
    (``tot_size=-4`` on its first field) is one group, because its bytes are
    reversed before any of its bits can be read.
    """
    probe = cls()
    groups: list[tuple[int, int]] = []
    bits = 0
    span = 8
    count = 0
    for fld in cls.fields_desc:
        count += 1
        if isinstance(fld, _BitField):
            if bits == 0:
                span = 8 * fld.tot_size if fld.rev else 8
            bits += fld.size
            if bits % span:
                continue
            size = bits // 8
            bits = 0
        else:
            size = len(fld.addfield(probe, b"", probe.getfieldval(fld.name)))
        groups.append((size, count))
        count = 0
    return tuple(groups)


class TruncatablePacket(Packet):
    """Base class for fixed-size records that dissect short input cleanly.

    Scapy raises on a header shorter than its fields. Here a short input fills
    the fields whose bytes are all present (whole little-endian words for
    ``BitField`` groups), leaves the others at their defaults, and keeps the
    leftover bytes as a ``Raw`` payload, so ``raw(p)`` is still the input.
    :meth:`missing_fields` names what the input did not reach.
    """

    def do_dissect(self, s: bytes) -> bytes:
        groups = _field_groups(type(self))
        if len(s) >= sum(size for size, _ in groups):
            return super().do_dissect(s)
        taken = 0
        nfields = 0
        for size, count in groups:
            if taken + size > len(s):
                break
            taken += size
            nfields += count
        rest: Any = s[:taken]
        self.raw_packet_cache_fields = {}
        for fld in self.fields_desc[:nfields]:
            rest, value = fld.getfield(self, rest)
            self.fields[fld.name] = value
        self.raw_packet_cache = s[:taken]
        self.explicit = 1
        return s[taken:]

    def missing_fields(self) -> list[str]:
        """Fields a dissection did not reach (empty for a complete or built record)."""
        if self.raw_packet_cache is None:
            return []
        return [fld.name for fld in self.fields_desc if fld.name not in self.fields]

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        if any(fld.name not in self.fields for fld in self.fields_desc):
            return conf.raw_layer  # a short header: the leftover is not a payload
        return super().guess_payload_class(payload)
