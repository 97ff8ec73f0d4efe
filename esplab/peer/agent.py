"""The agent that runs on a real Linux peer: one JSON object a line on stdin/stdout.

It runs inside a QEMU guest (virtme-ng passes the guest program's standard streams
through) or inside a network namespace of the user's own kernel, as root, and it
imports nothing but the standard library, so it starts quickly under emulation.

Requests carry an ``id`` and an ``op``; each gets one answer with the same ``id``
(``ok`` true or false). Frames the kernel transmits on the agent's end of the veth
pair come at any time as ``{"ev": "frame", "hex": ...}``.

``run``      ``argv`` (no shell), ``timeout``: ``rc``, ``out``, ``err``. Several may run at
             once; frames flow while they run.
``inject``   ``hex``: one Ethernet frame written to the veth end, then the kernel's
             answers read until it is quiet (at most ``settle`` seconds); returns
             ``counters``.
``attach``   ``dev``: the device whose frames are carried (an AF_PACKET socket on it);
             ``encap_port``: UDP sockets there for ESP in UDP, as an IKE daemon has.
``counters`` ``/proc/net/xfrm_stat``, ``/proc/net/snmp`` and ``/proc/net/snmp6``, parsed.
``quit``     ends the agent.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time
from typing import Any

ETH_P_ALL = 0x0003
# esplab says "alive" every few seconds; after this long without a word from it (it
# was killed), the agent ends and the guest powers off rather than linger.
SILENCE = 60.0
# How long the kernel may stay silent after a frame before its answers are taken as
# complete (seconds); inject's ``settle`` bounds the whole wait.
QUIET = 0.004
UDP_ENCAP = 100  # include/uapi/linux/udp.h
UDP_ENCAP_ESPINUDP = 2
# Frames the peer sends to a group address (IPv6 router and neighbour solicitations,
# MLD reports) would reach the emulated ap as journeys nobody asked for: the agent
# keeps them back and counts them (``held``).
_GROUP_BIT = 0x01


def counters() -> dict[str, int]:
    """The kernel's XFRM MIB and IP/UDP/ICMP counters by name (``Ip6InDelivers``...)."""
    out: dict[str, int] = {}
    try:
        with open("/proc/net/xfrm_stat") as f:
            for line in f:
                name, _, value = line.partition("\t")
                if value.strip().isdigit():
                    out[name.strip()] = int(value)
    except OSError:
        pass
    try:
        with open("/proc/net/snmp") as f:
            lines = f.read().splitlines()
        for head, vals in zip(lines[::2], lines[1::2], strict=False):
            proto, _, names = head.partition(":")
            values = vals.partition(":")[2].split()
            for name, value in zip(names.split(), values, strict=False):
                out[proto + name] = int(value)
    except (OSError, ValueError):
        pass
    try:
        with open("/proc/net/snmp6") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[1].isdigit():
                    out[parts[0]] = int(parts[1])
    except OSError:
        pass
    return out


class Agent:
    def __init__(self) -> None:
        self.sock: socket.socket | None = None
        self.encap: list[socket.socket] = []
        self.procs: dict[int, tuple[subprocess.Popen[bytes], float, list[bytes], list[bytes]]] = {}
        self.held = 0
        self.inbuf = b""
        self.running = True
        self.heard = time.monotonic()

    # -- output ---------------------------------------------------------------
    def send(self, obj: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    # -- frames ---------------------------------------------------------------
    def attach(self, dev: str, encap_port: int | None = None) -> None:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        sock.bind((dev, 0))
        sock.setblocking(False)
        self.sock = sock
        if encap_port:
            self.open_encap(encap_port)

    def open_encap(self, port: int) -> None:
        """UDP sockets on ``port`` marked for ESP in UDP, as an IKE daemon opens them:
        Linux decapsulates ESP in UDP only on such a socket (udp_encap_rcv)."""
        for family, any_addr in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
            sock = socket.socket(family, socket.SOCK_DGRAM)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((any_addr, port))
            sock.setsockopt(socket.IPPROTO_UDP, UDP_ENCAP, UDP_ENCAP_ESPINUDP)
            self.encap.append(sock)

    def pump_frames(self) -> None:
        if self.sock is None:
            return
        while True:
            try:
                frame, where = self.sock.recvfrom(65536)
            except BlockingIOError:
                return
            if where[2] == socket.PACKET_OUTGOING:
                continue  # our own injection, seen on the way out
            if frame[:1] and frame[0] & _GROUP_BIT:
                self.held += 1
                continue
            self.send({"ev": "frame", "hex": frame.hex()})

    # -- commands -------------------------------------------------------------
    def start(self, rid: int, argv: list[str], timeout: float, stdin: str | None) -> None:
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError as exc:
            self.send({"id": rid, "ok": True, "rc": 127, "out": "", "err": f"{argv[0]}: {exc}\n"})
            return
        if stdin is not None and proc.stdin is not None:
            proc.stdin.write(stdin.encode())
            proc.stdin.close()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                os.set_blocking(pipe.fileno(), False)
        self.procs[rid] = (proc, time.monotonic() + timeout, [], [])

    def pump_procs(self) -> None:
        for rid, (proc, deadline, out, err) in list(self.procs.items()):
            for pipe, sink in ((proc.stdout, out), (proc.stderr, err)):
                if pipe is None:
                    continue
                try:
                    chunk = pipe.read()
                except BlockingIOError:
                    chunk = None
                if chunk:
                    sink.append(chunk)
            timed_out = time.monotonic() > deadline
            if proc.poll() is None and not timed_out:
                continue
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for pipe, sink in ((proc.stdout, out), (proc.stderr, err)):
                if pipe is not None:
                    try:
                        rest = pipe.read()
                    except BlockingIOError:
                        rest = None
                    if rest:
                        sink.append(rest)
                    pipe.close()
            del self.procs[rid]
            self.pump_frames()
            self.send(
                {
                    "id": rid,
                    "ok": True,
                    "rc": proc.returncode,
                    "out": b"".join(out).decode("utf-8", "replace"),
                    "err": b"".join(err).decode("utf-8", "replace"),
                    "timed_out": timed_out,
                }
            )

    def settle(self, seconds: float, quiet: float = QUIET) -> dict[str, int]:
        """Read what the kernel sends back, and its counters once they stand still.
        The frame is usually processed within the write (veth_xmit raises the receive
        softirq, run as the syscall returns), but a busy guest hands softirqs to
        ksoftirqd; so wait until ``quiet`` passes with no frame and the counters read
        the same twice, or ``seconds`` in all. Returns the counters."""
        end = time.monotonic() + seconds
        seen = counters()
        while self.sock is not None and time.monotonic() < end:
            left = end - time.monotonic()
            ready, _, _ = select.select([self.sock], [], [], max(min(quiet, left), 0.0))
            if ready:
                self.pump_frames()
                continue
            now = counters()
            if now == seen:
                break
            seen = now
        self.pump_frames()
        return seen

    def handle(self, req: dict[str, Any]) -> None:
        rid = req.get("id", 0)
        op = req.get("op")
        try:
            if op == "run":
                self.start(rid, list(req["argv"]), float(req.get("timeout", 30)), req.get("stdin"))
                return
            if op == "inject":
                if self.sock is None:
                    raise RuntimeError("no device attached")
                self.sock.send(bytes.fromhex(req["hex"]))
                seen = self.settle(float(req.get("settle", 0.2)))
                self.send({"id": rid, "ok": True, "counters": seen, "held": self.held})
                return
            if op == "attach":
                self.attach(req["dev"], req.get("encap_port"))
            elif op == "quit":
                self.running = False
            elif op == "alive":
                return  # a heartbeat: no answer
            elif op != "counters" and op != "hello":
                raise ValueError(f"unknown op {op!r}")
            self.send(
                {
                    "id": rid,
                    "ok": True,
                    "counters": counters(),
                    "held": self.held,
                    "release": os.uname().release,
                }
            )
        except Exception as exc:
            self.send({"id": rid, "ok": False, "error": f"{type(exc).__name__}: {exc}"})

    def read_requests(self) -> None:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            self.running = False
            return
        self.heard = time.monotonic()
        self.inbuf += chunk
        while b"\n" in self.inbuf:
            line, self.inbuf = self.inbuf.split(b"\n", 1)
            if line.strip():
                try:
                    req = json.loads(line)
                except ValueError:
                    self.send({"id": 0, "ok": False, "error": "not JSON"})
                    continue
                self.handle(req)

    def loop(self) -> None:
        self.send({"ev": "ready", "release": os.uname().release})
        while self.running:
            fds: list[Any] = [0]
            if self.sock is not None:
                fds.append(self.sock)
            for proc, _, _, _ in self.procs.values():
                fds += [p for p in (proc.stdout, proc.stderr) if p is not None and not p.closed]
            wait = 0.05 if self.procs else 1.0
            ready, _, _ = select.select(fds, [], [], wait)
            if time.monotonic() - self.heard > SILENCE:
                break  # esplab is gone (it says "alive" every few seconds): power off
            if self.sock is not None and self.sock in ready:
                self.pump_frames()
            if 0 in ready:
                self.read_requests()
            self.pump_procs()


def main() -> None:
    Agent().loop()


if __name__ == "__main__":
    main()
