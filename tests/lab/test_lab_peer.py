"""A lab's peer: key: a real kernel for a node, or one line saying why not."""

from __future__ import annotations

from pathlib import Path

import pytest

from esplab.errors import PeerError
from esplab.lab.check import check_file
from esplab.lab.runner import session_for

LAB = """\
name: real host
description: the host is a real kernel when one can be had
peer: {host: kernel, pc1: emulated}
steps:
  - name: add
    run: >-
      host ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000
      enc aes 0x000102030405060708090a0b0c0d0e0f
"""


def test_peer_is_read_and_emulated_entries_are_no_peers(tmp_path: Path) -> None:
    path = tmp_path / "lab.yaml"
    path.write_text(LAB)
    lab, errors = check_file(path)
    assert errors == [] and lab is not None
    assert lab.peers == (("host", "kernel"),)


def test_a_peer_that_cannot_start_is_one_note_and_the_node_stays_emulated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "lab.yaml"
    path.write_text(LAB)
    lab, _ = check_file(path)
    assert lab is not None

    def no_kernel(*args: object) -> str:
        raise PeerError("QEMU is not installed (no qemu-system-x86_64)")

    monkeypatch.setattr("esplab.commands.peers.start_peer", no_kernel)
    session = session_for(lab)
    assert session.notes == [
        "peer host kernel: QEMU is not installed (no qemu-system-x86_64); host stays emulated"
    ]
    assert session.lab.real_peers == {}
    assert session.execute(lab.steps[0].run).summary == "host: state added"


@pytest.mark.parametrize(
    ("peer", "message"),
    [
        ("{ap: kernel}", "3:8: unknown node 'ap' in 'peer'; valid: host, pc1"),
        ("{host: vm}", "3:14: unknown host 'vm'; valid: kernel, netns, emulated"),
    ],
)
def test_a_bad_peer_is_named_at_its_line_and_column(
    tmp_path: Path, peer: str, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(LAB.replace("{host: kernel, pc1: emulated}", peer))
    lab, errors = check_file(path)
    assert lab is None
    assert any(str(e).endswith(message) or message in str(e) for e in errors), errors
