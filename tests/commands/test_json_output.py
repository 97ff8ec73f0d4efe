"""Every command's result as JSON: --json on any line, set output json, esplab --json.
One renderer (esplab.render_json) for all of them, the same view expect: paths see."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from esplab.batch import run_text
from esplab.cli import main
from esplab.commands.session import Session
from esplab.lab.paths import parse_path, resolve
from esplab.render_json import json_flag, plain, result_view

STATE = (
    "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1 mode "
    "transport auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314 enc aes "
    "0x000102030405060708090a0b0c0d0e0f offload dev wan dir out"
)
SEND = 'send ap wan IP(dst="192.0.2.2")/UDP(sport=1234,dport=5201)'


def run(session: Session, text: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    run_text(
        session,
        text,
        Console(file=out, width=100, color_system=None),
        Console(file=err, width=100, color_system=None),
    )
    return out.getvalue(), err.getvalue()


def objects(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_json_flag_anywhere_but_not_quoted() -> None:
    assert json_flag("eip93 sa 0x1000 --json") == ("eip93 sa 0x1000", True)
    assert json_flag("eip93 --json sa 0x1000") == ("eip93 sa 0x1000", True)
    assert json_flag('send ap wan IP()/Raw(b"--json")') == (
        'send ap wan IP()/Raw(b"--json")',
        False,
    )
    assert json_flag("ip -json xfrm state") == ("ip -json xfrm state", False)
    assert json_flag('send "--json') == ('send "--json', False)  # does not split: as it is


def test_dash_dash_json_on_one_line_gives_one_json_object() -> None:
    s = Session()
    out, _ = run(s, f"{STATE}\neip93 sa 0x1000 --json\n{SEND} --json\neip93 sa 0x1000")
    docs = objects(out)
    assert [d["command"] for d in docs] == ["eip93 sa 0x1000", SEND]
    sa, journey = docs
    assert sa["ok"] and sa["type"] == "packet"
    # The README's words: sa_cmd0 0x133a1310 reads as 322573072.
    assert sa["result"]["sa_cmd0"] == 0x133A1310
    assert sa["result"]["layers"]["EIP93SARecord"]["sa_spi"] == 0x1000
    assert sa["result"]["hex"].startswith("10133a13")  # bytes as hex
    # A journey is its list of stages; a path from a lab's expect: finds the same value.
    assert journey["type"] == "journey" and journey["result"]["delivered"] is True
    assert journey["result"]["stages"][-1]["tap"] == "host.deliver"
    assert "word0" in out  # the line without --json printed as text
    assert s.history[-2] == SEND  # the history keeps the command, not the flag


def test_json_is_the_view_lab_expect_paths_walk() -> None:
    s = Session()
    s.execute(STATE)
    result = s.execute(SEND + " --json")
    view = result_view(result)
    assert result.output == "json"
    doc = json.loads(json.dumps(view))
    assert resolve(view, parse_path("stages[-1].tap")) == doc["stages"][-1]["tap"]
    wire = resolve(view, parse_path("stages[tap=wan.wire].decision"))
    assert wire == next(st for st in doc["stages"] if st["tap"] == "wan.wire")["decision"]


def test_set_output_json_then_text() -> None:
    s = Session()
    out, _ = run(s, f"set output json\n{STATE}\nnosuch\nset output text\nip xfrm state")
    docs = objects(out)
    assert [d["command"] for d in docs] == ["set output json", STATE, "nosuch"]
    docs = docs[1:]
    assert docs[0]["result"]["summary"] == "ap: state added, crypto offload on wan dir out"
    assert docs[1] == {
        "command": "nosuch",
        "ok": False,
        "error": docs[1]["error"],
    } and docs[1]["error"].startswith("unknown command 'nosuch'")
    assert "output text" in out and "proto esp spi 0x00001000" in out


def test_set_output_takes_text_or_json() -> None:
    s = Session()
    with pytest.raises(Exception, match=r"output 'yaml'; valid: text, json"):
        s.execute("set output yaml")


def test_esplab_json_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--json", "-c", f"{STATE}; capture list; help send"]) == 0
    docs = objects(capsys.readouterr().out)
    assert [d["type"] for d in docs] == ["message", "table", "help"]
    assert docs[2]["result"]["usage"].startswith("send [NODE] DEV PACKET")


def test_every_registered_command_result_serialises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each command's own example, run once: its JSON is one parseable line. What the
    # examples write (wireshark-keys esp_sa) lands in tmp_path.
    monkeypatch.chdir(tmp_path)
    s = Session()
    s.execute(STATE)
    s.execute(SEND)
    failures = []
    for command in s.registry:
        if not command.example or command.name in ("quit", "lab", "save", "load", "peer"):
            continue
        try:
            result = s.execute(command.example + " --json")
        except Exception:  # an example that needs other set-up: not this test's subject
            continue
        try:
            json.loads(json.dumps(result_view(result)))
        except (TypeError, ValueError) as exc:
            failures.append(f"{command.name}: {exc}")
    assert failures == []


def test_plain_makes_json_data() -> None:
    from ipaddress import ip_address

    from scapy.layers.inet import IP

    got = plain({"a": b"\x01\x02", "ip": ip_address("192.0.2.1"), "s": {3, 1}, "p": IP()})
    assert got["a"] == "0102" and got["ip"] == "192.0.2.1" and got["s"] == [1, 3]
    assert got["p"]["IP"]["ttl"] == 64 and got["p"]["hex"].startswith("45")
