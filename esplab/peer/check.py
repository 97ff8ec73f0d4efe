"""``kernel-check``: one scenario on the emulated host and on a real kernel, compared.

A scenario is a list of command lines in esplab's grammar. Lines that start with
``host`` configure or question the host; the rest act on the lab (the ap's states and
policies, ``send``). The scenario runs twice from the same seed: once with the
emulated host, once with a real kernel in its place (:mod:`esplab.peer.bridge`), and
each observation is set side by side:

* every ``host`` line: whether it succeeded, and for listings (``show``, ``list``,
  ``get``, ``count``, ``-s``) its text, timestamps masked; for a refusal, its message;
* every ``send``: whether the host delivered the packet;
* at the end: the ``/proc/net/xfrm_stat`` counters that moved, and ``ip -s xfrm
  state`` and ``ip xfrm policy`` on the host.

The real kernel is reset between scenarios (``ip xfrm state flush``, ``policy
flush``); counters are compared as deltas.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from esplab.peer.bridge import RealPeer
from esplab.peer.client import KernelPeer
from esplab.progress import Progress, silent

__all__ = ["Finding", "Report", "kernel_sub_policy", "mask", "reset_kernel", "run_scenario"]

_TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
_LISTING = re.compile(
    r"\b(show|list|lst|get|count)\b|^ip\s+(-\S+\s+)*-s|^ip\s+(-\S+\s+)*xfrm\s+\S+$"
)


def mask(text: str) -> str:
    """Text with what differs between any two runs masked: timestamps."""
    return _TIME.sub("<time>", text).rstrip()


@dataclass
class Finding:
    """One observation on both sides."""

    item: str
    emulated: str
    kernel: str

    @property
    def same(self) -> bool:
        return self.emulated == self.kernel

    def as_dict(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "emulated": self.emulated,
            "kernel": self.kernel,
            "same": self.same,
        }


@dataclass
class Report:
    """Every finding of one scenario."""

    name: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def differences(self) -> list[Finding]:
        return [f for f in self.findings if not f.same]

    def add(self, item: str, emulated: object, kernel: object) -> Finding:
        finding = Finding(item, str(emulated), str(kernel))
        self.findings.append(finding)
        return finding


def _xfrm_deltas(before: dict[str, int], after: dict[str, int]) -> str:
    moved = {
        k: after[k] - before.get(k, 0)
        for k in sorted(after)
        if k.startswith("Xfrm") and after[k] != before.get(k, 0)
    }
    return ", ".join(f"{k} +{v}" for k, v in moved.items()) or "none"


def _emulated_stat(session: Any) -> dict[str, int]:
    result = session.run("host cat /proc/net/xfrm_stat")
    out: dict[str, int] = {}
    for line in getattr(result, "text", "").splitlines():
        name, _, value = line.partition("\t")
        if value.strip().isdigit():
            out[name.strip()] = int(value)
    return out


def _is_listing(command: str) -> bool:
    return bool(_LISTING.search(command))


def _emulated_line(session: Any, line: str) -> tuple[bool, str]:
    from esplab.batch import board_error
    from esplab.commands.result import ErrorResult, TextResult
    from esplab.errors import EsplabError

    result = session.run(line)
    if isinstance(result, ErrorResult):
        error = result.error
        if isinstance(error, EsplabError):
            return False, board_error(error)[0]
        return False, f"Error: {result.summary.split('; ', 1)[0]}."
    return True, result.text if isinstance(result, TextResult) else ""


def _kernel_line(peer: RealPeer, line: str, session: Any = None) -> tuple[bool, str]:
    done = peer.run_line(line, datapath=None if session is None else session.lab.datapath)
    return done.rc == 0, (done.out if done.rc == 0 else (done.err or done.out).strip())


def reset_kernel(client: KernelPeer) -> None:
    """Flush what a scenario may have left on the real kernel's XFRM side."""
    client.must(
        ["ip", "-batch", "-"],
        stdin="xfrm state flush\nxfrm policy flush\nxfrm policy flush ptype sub\n",
    )


def kernel_sub_policy(release: str) -> bool:
    """Whether the kernel ``release`` was built with CONFIG_XFRM_SUB_POLICY (False when
    its config cannot be read)."""
    from esplab.peer.backends import kernel_config

    return bool(kernel_config(release, "CONFIG_XFRM_SUB_POLICY"))


def run_scenario(
    name: str,
    lines: Iterable[str],
    client: KernelPeer,
    seed: int = 0x5EED,
    sub_policy: bool | None = None,
    progress: Progress = silent,
) -> Report:
    """Run ``lines`` on an emulated host and on ``client``'s kernel (already configured
    as the host by :func:`esplab.peer.bridge.attach` under the same seed). The emulated
    host is built like the kernel: ``sub_policy`` (CONFIG_XFRM_SUB_POLICY) as given, or
    as the kernel's config says."""
    from esplab.commands.session import Session, SessionOptions

    lines = list(lines)
    report = Report(name)
    emulated = Session(options=SessionOptions(seed=seed))
    if sub_policy is None:
        sub_policy = kernel_sub_policy(client.release)
    emulated.lab.node("host").xfrm.settings.sub_policy = sub_policy
    real = Session(options=SessionOptions(seed=seed))
    peer = RealPeer("host", client)
    real.lab.real_peers["host"] = peer
    real.lab.deliver_hooks.append(peer.heard)
    reset_kernel(client)
    client.take_frames()
    e_before = _emulated_stat(emulated)
    k_before = client.read_counters()
    sends = 0
    with progress(f"kernel-check {name}", len(lines)) as tick:
        for n, line in enumerate(lines, 1):
            tick(1)
            words = line.split()
            if words[:1] == ["host"]:
                command = line.split(None, 1)[1]
                e_ok, e_text = _emulated_line(emulated, line)
                k_ok, k_text = _kernel_line(peer, command, real)
                peer.answer(real.lab.datapath)
                report.add(f"{n}: {command}: ok", e_ok, k_ok)
                if not k_ok or not e_ok:
                    report.add(f"{n}: {command}: message", e_text, k_text)
                elif _is_listing(command):
                    report.add(f"{n}: {command}: output", mask(e_text), mask(k_text))
                continue
            e_result = emulated.run(line)
            r_result = real.run(line)
            if words[:1] == ["send"]:
                sends += 1
                e_del = e_result.data.get("delivered") if e_result.ok else None
                r_del = r_result.data.get("delivered") if r_result.ok else None
                report.add(f"{n}: send #{sends}: delivered", e_del, r_del)
            elif e_result.ok != r_result.ok:
                report.add(f"{n}: {line}: ok", e_result.ok, r_result.ok)
    # Anything the kernel sent late is walked before the two sides are compared.
    client.read_counters()
    peer.answer(real.lab.datapath)
    report.add("xfrm_stat", _xfrm_deltas(e_before, _emulated_stat(emulated)), "")
    report.findings[-1].kernel = _xfrm_deltas(k_before, client.read_counters())
    for command in ("ip -s xfrm state", "ip xfrm policy"):
        _, e_text = _emulated_line(emulated, f"host {command}")
        _, k_text = _kernel_line(peer, command)
        report.add(f"end: {command}", mask(e_text), mask(k_text))
    # The ap is esplab's on both sides: what it counted of the emulated host's packets
    # against what it counted of the kernel's.
    _, e_ap = _emulated_line(emulated, "ip -s xfrm state")
    _, r_ap = _emulated_line(real, "ip -s xfrm state")
    report.add("end: ap ip -s xfrm state", mask(e_ap), mask(r_ap))
    emulated.close_peers()
    real.lab.real_peers.clear()
    return report
