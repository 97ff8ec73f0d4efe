from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout.strip()


def test_layers_do_not_import_scapy_all_or_the_rest_of_esplab() -> None:
    out = _run(
        "import sys, esplab.layers; "
        "print('scapy.all' in sys.modules, "
        "sorted(m for m in sys.modules if m.startswith('esplab') "
        "and not m.startswith('esplab.layers') and m != 'esplab'))"
    )
    assert out == "False []"


def test_star_import_in_a_plain_scapy_session() -> None:
    out = _run(
        "from scapy.all import *\nfrom esplab.layers import *\n"
        "print(EIP93SARecord.__name__, len(bytes(EIP93SARecord())))"
    )
    assert out == "EIP93SARecord 128"  # eip93.md 1.3: the SA record is 128 bytes
