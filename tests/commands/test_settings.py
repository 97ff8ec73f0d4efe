"""set and save: parse and execute, with no terminal."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest
import yaml

from esplab.commands.handlers import all_commands, settings
from esplab.commands.registry import Registry
from esplab.commands.result import MessageResult, TableResult
from esplab.commands.session import Session, SessionOptions
from esplab.errors import BadArgument, EsplabError
from tests.commands import seed


def new_session(seed_value: int | None = None) -> Session:
    """A session that has set and save (once, whether or not they are registered)."""
    commands = all_commands()
    names = {c.name for c in commands}
    extra = [c for c in settings.COMMANDS if c.name not in names]
    options = SessionOptions() if seed_value is None else SessionOptions(seed=seed_value)
    return Session(registry=Registry([*commands, *extra]), options=options)


def test_set_alone_shows_every_setting() -> None:
    result = new_session().execute("set")
    assert isinstance(result, TableResult)
    assert [row[0] for row in result.rows] == [
        "tracing",
        "journeys",
        "captures",
        "policy-priority",
        "sub-policy",
        "crypto-provider",
        "hmac-long-key",
        "output",
        "seed",
    ]
    assert result.data == {
        "tracing": "on",
        "journeys": "256",
        "captures": "1024",
        "policy-priority": "mainline",
        "sub-policy": "off",
        "crypto-provider": "software",
        "hmac-long-key": "mainline",
        "output": "text",
        "seed": "0x5eed",
        "node": "ap",
    }


def test_sub_policy_is_a_node_setting_that_prints_ptype_main() -> None:
    # A kernel with CONFIG_XFRM_SUB_POLICY=y (Debian's 6.12) lists every policy with
    # "ptype main" and accepts "ptype sub" (checked against it in tests/kernel/).
    session = new_session()
    session.execute("host set sub-policy on")
    session.execute("host ip xfrm policy add src 1.1.1.1 dst 2.2.2.2 dir out")
    session.execute("host ip xfrm policy add src 1.1.1.1 dst 2.2.2.3 dir out ptype sub")
    listing = session.execute("host ip xfrm policy").text  # type: ignore[attr-defined]
    assert "dir out priority 0 ptype main \n" in listing + "\n"
    assert session.execute("set sub-policy").data["sub-policy"] == "off"  # the ap's
    with pytest.raises(EsplabError, match="Invalid policy type"):
        session.execute("ip xfrm policy add src 1.1.1.1 dst 2.2.2.3 dir out ptype sub")


def test_set_one_name_shows_it() -> None:
    result = new_session(0x1234).execute("set seed")
    assert result.data == {"seed": "0x1234", "node": "ap"}
    assert result.summary == "seed 0x1234"


def test_tracing_off_keeps_no_snapshots() -> None:
    s = new_session()
    assert s.execute("set tracing off").summary == "tracing off"
    s.execute('send ap wan IP(dst="192.0.2.2")/UDP(dport=9)')
    assert s.lab.captures.counts() == {}
    s.execute("set tracing ON")
    s.execute('send ap wan IP(dst="192.0.2.2")/UDP(dport=9)')
    assert s.lab.captures.counts()["wan.wire"] == 1


def test_ring_sizes() -> None:
    s = new_session()
    for _ in range(3):
        s.execute('send ap wan IP(dst="192.0.2.2")/UDP(dport=9)')
    s.execute("set journeys 2")
    assert s.lab.journeys.ids() == [2, 3] and s.lab.settings.journey_ring == 2
    s.execute("set captures 0x1")
    assert len(s.lab.captures.get("wan.wire")) == 1 and s.lab.settings.capture_ring == 1
    assert s.execute("set").data["captures"] == "1"
    with pytest.raises(BadArgument, match="journey ring size 0; valid: 1 to 10000"):
        s.execute("set journeys 0")
    with pytest.raises(BadArgument, match="must be a number"):
        s.execute("set captures lots")


def test_policy_priority_is_per_node() -> None:
    s = new_session()
    # Mainline's rule by default (reference 3.6's emulator rule); rfc on request.
    assert s.lab.node("ap").xfrm.settings.policy_priority_rule == "mainline"
    result = s.execute("host set policy-priority rfc")
    assert isinstance(result, MessageResult)
    assert result.summary == "policy-priority rfc on host"
    assert s.lab.node("host").xfrm.settings.policy_priority_rule == "rfc"
    assert s.lab.node("ap").xfrm.settings.policy_priority_rule == "mainline"
    s.execute("set policy-priority RFC")
    assert s.lab.node("ap").xfrm.settings.policy_priority_rule == "rfc"
    with pytest.raises(BadArgument, match="valid: mainline, rfc"):
        s.execute("set policy-priority kernel")


def test_bad_names_and_read_only_seed() -> None:
    s = new_session()
    with pytest.raises(BadArgument, match=r"seed is read-only .*--seed N"):
        s.execute("set seed 7")
    with pytest.raises(BadArgument, match=r"unknown SETTING 'tracin'.*did you mean tracing"):
        s.execute("set tracin on")
    with pytest.raises(BadArgument, match="tracing 'maybe'; valid: on, off"):
        s.execute("set tracing maybe")


def test_save_writes_a_lab_file(tmp_path: Path) -> None:
    s = new_session(0x77)
    lines = [*seed.software(), "help", f"send ap wan {seed.UDP}", "set captures 64"]
    for line in lines:
        s.execute(line)
    with pytest.raises(BadArgument):
        s.execute("set journeys 0")  # failed lines are not in the history
    path = tmp_path / "mine.yaml"
    result = s.execute(f"save {path} --description 'an offload session'")
    assert result.data == {"file": str(path), "steps": len(lines) - 1, "name": "mine"}
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert list(doc) == ["name", "description", "seed", "steps"]
    assert doc["name"] == "mine" and doc["description"] == "an offload session"
    assert doc["seed"] == 0x77
    assert [step["run"] for step in doc["steps"]] == [line for line in lines if line != "help"]
    assert doc["steps"][0]["name"] == "1: ip xfrm state add"
    assert len({step["name"] for step in doc["steps"]}) == len(doc["steps"])
    # Saving again leaves the earlier save out.
    with pytest.raises(EsplabError, match=r"mine\.yaml' exists; add --force to overwrite it"):
        s.execute(f"save {path} --name again")
    s.execute(f"save {path} --name again --force")
    again = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert again["name"] == "again" and len(again["steps"]) == len(doc["steps"])


def test_saved_lab_matches_the_lab_schema(tmp_path: Path) -> None:
    import jsonschema  # a test dependency (pyproject: test extra)

    schema_file = resources.files("esplab.lab") / "schema.json"
    assert schema_file.is_file(), "the package ships the lab file schema"
    s = new_session()
    s.execute(f"send ap wan {seed.UDP}")
    path = tmp_path / "lab.yaml"
    s.execute(f"save {path}")
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    jsonschema.validate(yaml.safe_load(path.read_text(encoding="utf-8")), schema)


def test_save_failures_name_the_path(tmp_path: Path) -> None:
    s = new_session()
    with pytest.raises(BadArgument, match=r"nothing to save to .* no command has run"):
        s.execute(f"save {tmp_path / 'empty.yaml'}")
    s.execute("set")
    missing = tmp_path / "no" / "such" / "dir" / "lab.yaml"
    expected = re.escape(f"cannot write lab file {missing}: No such file")
    with pytest.raises(BadArgument, match=expected):
        s.execute(f"save {missing}")


def test_a_saved_lab_passes_check_after_lab_commands_and_a_reset(tmp_path: Path) -> None:
    from esplab.lab.check import check_file
    from esplab.lab.command import every_command

    lab = Path(__file__).resolve().parents[2] / "labs" / "01-esp-basics.yaml"
    s = Session(every_command())
    s.execute("ip link set lan4 down")  # before the reset: not part of what is saved
    s.execute(f"lab step {lab}")  # starts over under the lab's seed
    s.execute("ip link set lan3 down")
    s.execute(f"lab check {lab}")
    path = tmp_path / "saved.yaml"
    s.execute(f"save {path}")
    runs = [step["run"] for step in yaml.safe_load(path.read_text(encoding="utf-8"))["steps"]]
    assert runs == ["ip link set lan3 down"]
    loaded, errors = check_file(path)
    assert loaded is not None and not errors, [str(e) for e in errors]


@pytest.mark.parametrize("literal", ["${x}", "$${x}", "a$${", "${"])
def test_a_saved_line_with_a_literal_dollar_brace_checks_and_replays_the_same_bytes(
    tmp_path: Path, literal: str
) -> None:
    from esplab.lab.check import check_file
    from esplab.lab.runner import LabRun

    s = new_session(0x5EED)
    lines = [
        f'let p = IP(dst="192.0.2.2")/UDP(sport=1,dport=2)/Raw(b"{literal}")',
        "send ap wan p",
    ]
    for line in lines:
        s.execute(line)
    path = tmp_path / "dollar.yaml"
    s.execute(f"save {path}")
    lab, errors = check_file(path)
    assert lab is not None and not errors, [str(e) for e in errors]
    run = LabRun(lab)
    report = run.run_all()
    assert report.passed, [f.line() for step in report.steps for f in step.failures]
    assert run.session.history == lines  # the lines as typed, ${ and all
    wire = [r.data for r in s.lab.captures.get("wan.wire")]
    assert wire and [r.data for r in run.session.lab.captures.get("wan.wire")] == wire
    assert literal.encode() in wire[0]
