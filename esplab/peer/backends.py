"""Where a real Linux peer runs: a QEMU guest through virtme-ng, or a network namespace.

Both start :mod:`esplab.peer.agent` with its standard streams on a pipe; nothing else
differs for the caller.

``qemu``  A stock kernel image booted by ``vng`` with this machine's own userspace,
          read-only through 9p: no root and no KVM needed (TCG, about 15 s to boot).
          KVM is tried first when ``/dev/kvm`` opens and ``kvm`` is ``auto``; a guest
          that is not ready within :data:`KVM_GRACE` seconds is restarted under TCG
          (nested KVM can stall in the firmware).
``netns`` A fresh network namespace of the user's own kernel (``unshare --net``): needs
          root, and a kernel with ESP (``esp4``/``esp6``); starts at once.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from esplab.errors import PeerError

__all__ = [
    "BOOT_TIMEOUT",
    "KVM_GRACE",
    "Backend",
    "find_kernel_image",
    "kernel_config",
    "netns",
    "qemu",
]

BOOT_TIMEOUT = 180.0  # a TCG boot takes about 15 s on a 2-core machine; a loaded one more
KVM_GRACE = 10.0
AGENT = Path(__file__).with_name("agent.py")
# Modules the peer needs; a missing one is not fatal (built in, or the test says so).
MODULES = "esp4 esp6 xfrm_user xfrm_interface veth dummy"


@dataclass
class Backend:
    """How to start the agent: ``argv``, and what to call it in messages."""

    kind: str
    argv: list[str]
    label: str
    timeout: float = BOOT_TIMEOUT
    env: dict[str, str] = field(default_factory=dict)
    fallback: Backend | None = None


def _agent_command() -> str:
    return f"{sys.executable} -u {AGENT}"


def find_kernel_image(image: str | None = None) -> str:
    """The kernel image to boot: ``image`` as given (a path, or a release such as
    ``6.12.118+deb12-amd64``), else the newest ``/boot/vmlinuz-*`` whose config builds
    ESP (``CONFIG_INET_ESP``)."""
    if image:
        path = Path(image).expanduser()
        if path.is_file():
            return str(path)
        candidate = Path("/boot") / f"vmlinuz-{image}"
        if candidate.is_file():
            return str(candidate)
        raise PeerError(
            f"no kernel image '{image}'",
            valid="a vmlinuz file, or a release with /boot/vmlinuz-RELEASE",
            hint="install one, e.g. apt-get install linux-image-amd64",
            value=image,
        )
    found: list[tuple[tuple[int, ...], str]] = []
    for found_path in glob.glob("/boot/vmlinuz-*"):
        release = found_path[len("/boot/vmlinuz-") :]
        if kernel_config(release, "CONFIG_INET_ESP") is False:
            continue
        found.append((_release_key(release), found_path))
    if not found:
        raise PeerError(
            "no kernel image with ESP in /boot",
            hint="install one: apt-get install linux-image-amd64 (Debian), "
            "or give its path: peer host kernel /path/to/vmlinuz",
        )
    return max(found)[1]


def kernel_config(release: str, option: str) -> bool | None:
    """Whether kernel ``release`` was built with ``option`` (=y or =m), as its
    ``/boot/config-RELEASE`` says; None when there is no config to read."""
    try:
        text = Path(f"/boot/config-{release}").read_text(errors="replace")
    except OSError:
        return None
    return re.search(rf"^{re.escape(option)}=[ym]$", text, re.M) is not None


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", release)[:4])


def _kvm_usable() -> bool:
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
    except OSError:
        return False
    os.close(fd)
    return True


def qemu(image: str | None = None, *, kvm: str = "auto", memory: str = "1G") -> Backend:
    """A guest booted by virtme-ng on ``image`` (see :func:`find_kernel_image`)."""
    vng = shutil.which("vng") or _beside_python("vng")
    if vng is None:
        raise PeerError(
            "virtme-ng is not installed (no 'vng' command)", hint="pip install virtme-ng"
        )
    if shutil.which("qemu-system-x86_64") is None:
        raise PeerError(
            "QEMU is not installed (no qemu-system-x86_64)",
            hint="apt-get install qemu-system-x86",
        )
    if shutil.which("busybox") is None:
        raise PeerError(
            "virtme-ng needs busybox to build the guest's initramfs",
            hint="apt-get install busybox-static",
        )
    kernel = find_kernel_image(image)
    script = (
        f"for m in {MODULES}; do modprobe -q $m; done; cd /; exec {_agent_command()} 2>/dev/null"
    )
    base = [vng, "-r", kernel, "--force-9p", "-m", memory, "--cpus", "1"]
    release = kernel.rsplit("vmlinuz-", 1)[-1]
    # vng finds its helpers (virtme-run) beside itself; the guest finds the agent's
    # Python by its absolute path.
    env = {"PATH": f"{Path(vng).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    tcg = Backend("qemu", [*base, "--disable-kvm", "-e", script], f"QEMU guest ({release}, TCG)")
    tcg.env = env
    if kvm == "off" or (kvm == "auto" and not _kvm_usable()):
        return tcg
    with_kvm = Backend("qemu", [*base, "-e", script], f"QEMU guest ({release}, KVM)", env=env)
    if kvm == "auto":
        with_kvm.timeout = KVM_GRACE
        with_kvm.fallback = tcg
    return with_kvm


def _beside_python(name: str) -> str | None:
    path = Path(sys.executable).parent / name
    return str(path) if path.is_file() else None


def netns() -> Backend:
    """A network namespace of this machine's kernel (root only)."""
    if os.geteuid() != 0:
        raise PeerError(
            "a network-namespace peer needs root (it creates a namespace and a veth pair)",
            hint="run esplab as root, or use the QEMU peer: peer host kernel",
        )
    unshare = shutil.which("unshare")
    if unshare is None:
        raise PeerError("no 'unshare' command", hint="apt-get install util-linux")
    script = f"for m in {MODULES}; do modprobe -q $m 2>/dev/null; done; exec {_agent_command()}"
    return Backend(
        "netns",
        [unshare, "--net", "sh", "-c", script],
        f"network namespace ({os.uname().release})",
        timeout=20.0,
    )
