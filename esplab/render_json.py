"""Every command's result as JSON: one renderer for all of them.

A command's structured result (``Result.data``, ``esplab.commands.result``) is the
same value lab files check with ``expect:``: :func:`result_view` makes it plain data
(bytes as hex text, addresses and other objects as text, a journey as its list of
stages, a packet as ``layers`` of fields), and :func:`result_json` wraps it in one
JSON object a line::

    {"command": "eip93 sa 0x1000", "ok": true, "type": "packet",
     "summary": "...", "result": {"spi": 4096, "sa_cmd0": 322573072, ...}}

so ``jq '.result.stages[-1].tap'`` reads what ``expect: stages[-1].tap`` checks. A
failed command is ``{"command": ..., "ok": false, "error": "..."}``.

JSON is asked for with ``--json`` anywhere on a command line (a word of its own,
not quoted), with ``set output json`` for every command after it, or with
``esplab --json`` for ``-c`` and piped commands. :func:`json_flag` takes the word
off the line; the session marks the result (``Result.output``) and the front ends'
printer (``esplab.batch.emit``) prints it with :func:`result_json`.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from esplab.commands.tokens import JSON_FLAG, json_flag

if TYPE_CHECKING:
    from scapy.packet import Packet

    from esplab.commands.result import Result

__all__ = [
    "JSON_FLAG",
    "error_json",
    "json_flag",
    "packet_layers",
    "plain",
    "result_json",
    "result_view",
]


def packet_layers(packet: Packet) -> dict[str, dict[str, Any]]:
    """Every layer of ``packet`` as ``{name: {field: value}}``; a repeated layer is
    ``NAME_2``..."""
    from scapy.packet import NoPayload

    layers: dict[str, dict[str, Any]] = {}
    seen: dict[str, int] = {}
    layer: Any = packet
    while layer is not None and not isinstance(layer, NoPayload) and len(layers) < 64:
        name = type(layer).__name__
        seen[name] = seen.get(name, 0) + 1
        key = name if seen[name] == 1 else f"{name}_{seen[name]}"
        layers[key] = {f.name: plain(layer.getfieldval(f.name)) for f in layer.fields_desc}
        layer = layer.payload
    return layers


def plain(value: Any) -> Any:
    """``value`` as JSON data: bytes as hex text, a journey as its stages, a packet as
    its layers, a dataclass as its fields, an enum as its value; addresses and any
    other object as text."""
    from scapy.packet import Packet

    from esplab.model.stage import Journey

    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return [plain(v) for v in items]
    if isinstance(value, Journey):
        from esplab.commands.result import journey_data

        return plain(journey_data(value))
    if isinstance(value, Packet):
        return {"summary": value.summary(), "hex": bytes(value).hex(), **packet_layers(value)}
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return str(value)


def result_view(result: Result) -> dict[str, Any]:
    """What ``expect:`` paths, ``save:`` and ``--json`` see of a result: its data as
    plain data, its ``summary``, and for a packet its ``layers``."""
    from esplab.commands.result import PacketResult

    view: dict[str, Any] = plain(result.data)
    view.setdefault("summary", result.summary)
    if isinstance(result, PacketResult) and result.packet is not None and "layers" not in view:
        view["layers"] = packet_layers(result.packet)
    return view


def _kind(result: Result) -> str:
    name = type(result).__name__
    return name.removesuffix("Result").lower() or "result"


def result_json(result: Result, command: str = "") -> str:
    """One line of JSON for a command's result."""
    doc = {
        "command": command,
        "ok": result.ok,
        "type": _kind(result),
        "summary": result.summary,
        "result": result_view(result),
    }
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


def error_json(command: str, message: str) -> str:
    """One line of JSON for a command that failed."""
    doc = {"command": command, "ok": False, "error": message}
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
