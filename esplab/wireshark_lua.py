"""Wireshark dissectors for esplab's records, generated from the Scapy layers.

Each non-Ethernet record has a DLT_USER link type (147-155,
``esplab.layers.linktypes``); Wireshark has no dissector for them (it shows DLT 149
as a PKTAP guess). :func:`lua_plugin` walks each layer class's ``fields_desc`` and
writes one Lua file that dissects every record type field for field as Scapy does:

* a run of bit fields is one item: a little-endian word (``tot_size``/
  ``end_tot_size`` negative: the word's bytes are reversed, the first field is its
  most significant bits) or a big-endian group up to a byte boundary, shown as the
  word with its value (``0x133a1310``) and each field under it with its bit mask;
* a plain field is an integer of its ``struct`` format's size and byte order, a
  MAC address, fixed-length bytes, or a NUL-padded name;
* an enum field's value strings come from its table (never a table scapy reads
  from the system, such as ``/etc/ethertypes``: a payload dissector names those),
  a flags field gets one boolean per flag;
* a ``PacketListField`` repeats its sub-record over the bytes that remain;
* the payload goes where ``bind_layers`` sends it (``IP``, ``IPv6``, ``Ether``...).

The layers are the one source: the shipped file (``esplab/esplab.lua``) is this
module's output, and a test regenerates it and compares byte for byte. Run
``python -m esplab.wireshark_lua`` to rewrite it after changing a layer.
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = [
    "PLUGIN_NAME",
    "LuaField",
    "LuaItem",
    "LuaRecord",
    "lua_plugin",
    "record_spec",
    "record_specs",
    "shipped_plugin",
]

PLUGIN_NAME = "esplab.lua"
_DLT_USER0 = 147

# Scapy payload class name -> the Wireshark dissector that takes it.
_DISSECTORS = {
    "Ether": "eth_withoutfcs",
    "IP": "ip",
    "IPv6": "ipv6",
    "ARP": "arp",
    "Dot1Q": "vlan",
    "Dot1AD": "vlan",
    "Raw": "data",
}


@dataclass(frozen=True)
class LuaField:
    """One Scapy field as a Wireshark field: ``kind`` is a ProtoField constructor
    (``uint32``, ``int32``, ``bytes``, ``ether``, ``stringz``), ``mask`` 0 for a
    whole item, ``values`` its value strings and ``flags`` its flag bits."""

    name: str
    kind: str
    base: str = "NONE"
    mask: int = 0
    values: tuple[tuple[int, str], ...] = ()
    flags: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class LuaItem:
    """Bytes ``offset``..``offset + size`` of a record: one field, a word of bit fields
    (``word`` names it), or a list of ``sub`` records."""

    offset: int
    size: int
    little: bool
    fields: tuple[LuaField, ...]
    word: str = ""
    sub: LuaRecord | None = None


@dataclass(frozen=True)
class LuaRecord:
    """A layer class as a Wireshark protocol; ``payload`` maps a selector field's
    values to dissector names (``selector`` empty: always ``default``)."""

    abbr: str
    title: str
    layer: str
    size: int
    items: tuple[LuaItem, ...]
    dlt: int = 0
    selector: str = ""
    payload: tuple[tuple[int, str], ...] = ()
    default: str = "data"


def _system_tables() -> list[dict[Any, Any]]:
    """Tables scapy reads from this machine's files (/etc/ethertypes, /etc/protocols,
    /etc/services): copying them would make the plugin depend on the machine."""
    from scapy import data

    tables = []
    for name in ("ETHER_TYPES", "IP_PROTOS", "TCP_SERVICES", "UDP_SERVICES"):
        table = getattr(data, name, None)
        if table is not None:
            tables.append({k: table[k] for k in table})
    return tables


def _values(fld: Any, system: list[dict[Any, Any]]) -> tuple[tuple[int, str], ...]:
    i2s = getattr(fld, "i2s", None)
    if not isinstance(i2s, dict) or not i2s or any(i2s == t for t in system):
        return ()
    return tuple(sorted((int(k), str(v)) for k, v in i2s.items()))


def _flags(fld: Any, mask: int) -> tuple[tuple[str, int], ...]:
    from scapy.fields import FlagsField

    if not isinstance(fld, FlagsField):
        return ()
    low = mask & -mask
    return tuple((str(n), low << i) for i, n in enumerate(fld.names) if n)


def _base(fld: Any) -> str:
    return "HEX" if type(fld).__name__.startswith("X") else "DEC"


def _plain(cls: type[Any], fld: Any, offset: int, system: list[dict[Any, Any]]) -> LuaItem:
    from scapy.fields import (
        MACField,
        PacketListField,
        StrField,
        StrFixedLenField,
        XStrFixedLenField,
    )

    if isinstance(fld, MACField):
        return LuaItem(offset, 6, False, (LuaField(fld.name, "ether"),))
    if isinstance(fld, StrFixedLenField):
        size = int(fld.length_from(None))  # type: ignore[arg-type]
        kind = "bytes" if isinstance(fld, XStrFixedLenField) else "stringz"
        return LuaItem(offset, size, False, (LuaField(fld.name, kind),))
    if isinstance(fld, PacketListField):
        sub = record_spec(fld.cls)  # type: ignore[arg-type]
        return LuaItem(offset, 0, False, (LuaField(fld.name, "none"),), sub=sub)
    fmt = getattr(fld, "fmt", "")
    code = fmt.lstrip("<>!=@")
    numeric = not isinstance(fld, StrField) and isinstance(fld.default, (int, type(None)))
    if numeric and len(code) == 1 and code in "bBhHiIqQ":
        size = struct.calcsize(fmt)
        kind = f"{'int' if code.islower() and code != 'b' else 'uint'}{8 * size}"
        if code == "b":
            kind = "int8"
        item = LuaField(fld.name, kind, _base(fld), 0, _values(fld, system))
        return LuaItem(offset, size, fmt[0] == "<", (item,))
    raise TypeError(
        f"{cls.__name__}.{fld.name}: a {type(fld).__name__} has no Wireshark form; valid: "
        "bit fields, integer fields, MACField, StrFixedLenField, PacketListField"
    )


def _bit_group(fields: list[Any], offset: int, system: list[dict[Any, Any]]) -> tuple[LuaItem, int]:
    """The item for the bit fields that start ``fields``, and how many it took (the
    grouping of ``esplab.layers._fixed``: a reversed word is whole, a big-endian run
    ends at a byte boundary)."""
    first = fields[0]
    span = 8 * first.tot_size if first.rev else 8
    bits = 0
    taken = []
    for fld in fields:
        taken.append((fld, bits))
        bits += fld.size
        if bits % span == 0:
            break
    size = bits // 8
    width = 8 * size
    out = []
    for fld, before in taken:
        mask = ((1 << fld.size) - 1) << (width - before - fld.size)
        out.append(
            LuaField(
                fld.name, f"uint{width}", _base(fld), mask, _values(fld, system), _flags(fld, mask)
            )
        )
    if len(out) == 1:  # one field fills the item: no word around it
        whole = out[0]
        out = [LuaField(whole.name, whole.kind, whole.base, 0, whole.values, whole.flags)]
        return LuaItem(offset, size, bool(first.rev), tuple(out)), 1
    word = f"word{offset // 4}" if first.rev and size == 4 and offset % 4 == 0 else ""
    word = word or f"bits{offset}"
    return LuaItem(offset, size, bool(first.rev), tuple(out), word=word), len(taken)


def record_spec(cls: type[Any], dlt: int = 0) -> LuaRecord:
    """The Wireshark form of one Scapy layer class (``TypeError`` for a field type
    that has none)."""
    from scapy.fields import _BitField

    system = _system_tables()
    items: list[LuaItem] = []
    offset = 0
    fields = list(cls.fields_desc)
    i = 0
    while i < len(fields):
        if isinstance(fields[i], _BitField):
            item, used = _bit_group(fields[i:], offset, system)
            i += used
        else:
            item = _plain(cls, fields[i], offset, system)
            i += 1
        items.append(item)
        offset += item.size
    selector = ""
    payload: list[tuple[int, str]] = []
    default = "data"
    for values, layer in cls.payload_guess:
        name = _DISSECTORS.get(layer.__name__)
        if name is None:
            raise TypeError(
                f"{cls.__name__} binds {layer.__name__}, which has no Wireshark dissector "
                f"here; valid: {', '.join(_DISSECTORS)}"
            )
        if not values:
            default = name
            continue
        (field_name, value), *more = values.items()
        if more or (selector and field_name != selector):
            raise TypeError(f"{cls.__name__}: payload chosen by more than one field")
        selector = field_name
        payload.append((int(value), name))
    abbr = cls.__name__.lower()
    return LuaRecord(
        abbr, str(cls._name), cls.__name__, offset, tuple(items), dlt, selector, tuple(payload),
        default,
    )  # fmt: skip


def record_specs() -> list[LuaRecord]:
    """Every record link type's layer (``conf.l2types``), in DLT order."""
    from scapy.config import conf

    from esplab.layers import linktypes

    return [
        record_spec(conf.l2types.num2layer[dlt], dlt) for dlt in sorted(linktypes.LINKTYPE_NAMES)
    ]


# --- Lua text ------------------------------------------------------------------


def _lua_str(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _lua_field(f: LuaField, pad: str) -> str:
    parts = [
        f"name = {_lua_str(f.name)}",
        f"kind = {_lua_str(f.kind)}",
        f"base = {_lua_str(f.base)}",
    ]
    if f.mask:
        parts.append(f"mask = 0x{f.mask:x}")
    if f.values:
        vals = ", ".join(f"[{k}] = {_lua_str(v)}" for k, v in f.values)
        parts.append(f"values = {{{vals}}}")
    if f.flags:
        flags = ", ".join(f"{{{_lua_str(n)}, 0x{m:x}}}" for n, m in f.flags)
        parts.append(f"flags = {{{flags}}}")
    return f"{pad}{{{', '.join(parts)}}},"


def _lua_record(rec: LuaRecord, pad: str) -> list[str]:
    lines = [
        f"{pad}abbr = {_lua_str(rec.abbr)}, title = {_lua_str(rec.title)}, "
        f"layer = {_lua_str(rec.layer)}, size = {rec.size}, dlt = {rec.dlt},",
        f"{pad}items = {{",
    ]
    for item in rec.items:
        head = (
            f"{pad}  {{off = {item.offset}, size = {item.size}, "
            f"le = {'true' if item.little else 'false'}, word = {_lua_str(item.word)},"
        )
        lines.append(head)
        if item.sub is not None:
            lines.append(f"{pad}    sub = {{")
            lines += _lua_record(item.sub, pad + "      ")
            lines.append(f"{pad}    }},")
        lines.append(f"{pad}    fields = {{")
        lines += [_lua_field(f, pad + "      ") for f in item.fields]
        lines.append(f"{pad}    }}}},")
    lines.append(f"{pad}}},")
    payload = ", ".join(f"[{v}] = {_lua_str(d)}" for v, d in rec.payload)
    lines.append(
        f"{pad}selector = {_lua_str(rec.selector)}, payload = {{{payload}}}, "
        f"default = {_lua_str(rec.default)},"
    )
    return lines


def lua_plugin(records: list[LuaRecord] | None = None) -> str:
    """The whole Lua plugin: the record tables, then the dissector that reads them."""
    specs = record_specs() if records is None else records
    lines = [_HEADER.rstrip("\n"), f"local DLT_USER0 = {_DLT_USER0}", "local RECORDS = {"]
    for rec in specs:
        lines.append("  {")
        lines += _lua_record(rec, "    ")
        lines.append("  },")
    lines.append("}")
    return "\n".join(lines) + "\n" + _RUNTIME


def shipped_plugin() -> Path:
    """The plugin file installed with the package."""
    return Path(str(resources.files("esplab") / PLUGIN_NAME))


_HEADER = """\
-- esplab's records in Wireshark: EIP-93 descriptors, SA and state records, the
-- MediaTek DSA tag, Airoha QDMA and AF_XDP descriptors, XFRM offload metadata
-- (pcap link types DLT_USER 147-155).
--
-- Generated from the Scapy layers (esplab.layers) by esplab.wireshark_lua; do not
-- edit: change the layer and run `python -m esplab.wireshark_lua`.
-- Install: `esplab wireshark-plugin --install` (into ~/.local/lib/wireshark/plugins/),
-- or once: `tshark -X lua_script:esplab.lua -r capture.pcapng`.
"""

_RUNTIME = """\
local function pfield(abbr, f)
  if f.kind == "bytes" or f.kind == "ether" then return ProtoField[f.kind](abbr, f.name) end
  if f.kind == "stringz" then return ProtoField.string(abbr, f.name) end
  return ProtoField[f.kind](abbr, f.name, base[f.base], f.values, f.mask)
end

local function declare(rec, prefix, list)
  rec.pf = {}
  for _, item in ipairs(rec.items) do
    if item.word ~= "" then
      item.wf = ProtoField["uint" .. (8 * item.size)](prefix .. "." .. item.word,
        string.format("%s (+0x%02x)", item.word, item.off), base.HEX)
      list[#list + 1] = item.wf
    end
    if item.sub ~= nil then
      declare(item.sub, prefix .. "." .. item.fields[1].name, list)
    end
    for _, f in ipairs(item.fields) do
      if item.sub == nil then
        f.pf = pfield(prefix .. "." .. f.name, f)
        list[#list + 1] = f.pf
        f.bools = {}
        for _, flag in ipairs(f.flags or {}) do
          local b = ProtoField.bool(prefix .. "." .. f.name .. "." .. string.lower(flag[1]),
            flag[1], 8 * item.size, nil, flag[2])
          f.bools[#f.bools + 1] = b
          list[#list + 1] = b
        end
      end
    end
  end
end

local function add(tree, item, pf, range)
  if item.le then return tree:add_le(pf, range) end
  return tree:add(pf, range)
end

-- Adds the record's items to tree from offset; returns the bytes used and whether
-- every item was there.
local function dissect_items(rec, tvb, tree, offset)
  local at = offset
  for _, item in ipairs(rec.items) do
    if item.sub ~= nil then
      local n = 0
      while tvb:len() - at >= item.sub.size and item.sub.size > 0 do
        n = n + 1
        local st = tree:add(tvb(at, item.sub.size),
          string.format("%s[%d]: %s", item.fields[1].name, n - 1, item.sub.title))
        at = at + dissect_items(item.sub, tvb, st, at)
      end
    else
      if at + item.size > tvb:len() then
        tree:append_text(string.format(" [truncated: %d of %d bytes]",
          tvb:len() - offset, rec.size))
        return at - offset, false
      end
      local range = tvb(at, item.size)
      local parent = tree
      if item.wf ~= nil then parent = add(tree, item, item.wf, range) end
      for _, f in ipairs(item.fields) do
        local fi
        if f.kind == "stringz" then
          fi = parent:add(f.pf, range, string.match(range:raw(), "^[^\0]*"))
        else
          fi = add(parent, item, f.pf, range)
        end
        for _, b in ipairs(f.bools) do add(fi, item, b, range) end
      end
      at = at + item.size
    end
  end
  return at - offset, true
end

local function selector_value(rec, tvb)
  for _, item in ipairs(rec.items) do
    if item.fields[1].name == rec.selector and item.word == "" then
      if item.le then return tvb(item.off, item.size):le_uint() end
      return tvb(item.off, item.size):uint()
    end
  end
  return nil
end

for _, rec in ipairs(RECORDS) do
  local proto = Proto(rec.abbr, rec.title)
  local list = {}
  declare(rec, rec.abbr, list)
  proto.fields = list
  proto.dissector = function(tvb, pinfo, tree)
    pinfo.cols.protocol = rec.layer
    pinfo.cols.info = rec.title
    local top = tree:add(proto, tvb(0, math.min(rec.size, tvb:len())))
    local used, whole = dissect_items(rec, tvb, top, 0)
    if used >= tvb:len() then return end
    local name = rec.default
    if whole and rec.selector ~= "" then
      name = rec.payload[selector_value(rec, tvb)] or "data"
    elseif not whole then
      name = "data"
    end
    Dissector.get(name):call(tvb(used):tvb(), pinfo, tree)
  end
  DissectorTable.get("wtap_encap"):add(wtap_encaps["USER" .. (rec.dlt - DLT_USER0)], proto)
end
"""


def main() -> int:
    """``python -m esplab.wireshark_lua``: rewrite the shipped plugin from the layers."""
    target = Path(__file__).with_name(PLUGIN_NAME)
    target.write_text(lua_plugin(), encoding="utf-8")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
