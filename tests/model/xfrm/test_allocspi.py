"""ip xfrm state allocspi: a larval state holding a fresh SPI.

Every expected text below is what Linux 6.12 with iproute2 6.15 printed for the same
commands (the kernel guest, kx); where the kernel draws at random the lab draws from a
seeded generator, so only the range and the reproducibility are checked.
"""

from __future__ import annotations

import random

import pytest

from esplab.errors import KernelError, ToolUsageError
from esplab.model.kernel.xfrm.tables import XfrmNode
from esplab.model.tools.iproute2.xfrm import run_ip_xfrm

ALLOC = "ip xfrm state allocspi src 192.0.2.1 dst 192.0.2.2 proto esp"
KEY = "0x000102030405060708090a0b0c0d0e0f"


def ip(node: XfrmNode, line: str) -> str:
    return run_ip_xfrm(node, line.split()).text


def larval(spi: int, extra: str = "", *, src: str = "192.0.2.1", mode: str = "transport") -> str:
    return (
        f"src {src} dst 192.0.2.2\n"
        f"\tproto esp spi 0x{spi:08x} reqid {5 if mode == 'tunnel' else 0} mode {mode}\n"
        "\treplay-window 0 \n"
        "\tanti-replay context: seq 0x0, oseq 0x0, bitmap 0x00000000\n"
        f"{extra}\tsel src {src}/32 dst 192.0.2.2/32 \n"
    )


def test_a_range_of_one_gives_that_spi_and_a_second_time_no_spi() -> None:
    n = XfrmNode()
    assert ip(n, f"{ALLOC} min 0x100 max 0x100") == larval(0x100)
    with pytest.raises(KernelError) as err:
        ip(n, f"{ALLOC} min 0x100 max 0x100")
    # Error: No SPI available in the requested range. (rc 2)
    assert err.value.board == "Error: No SPI available in the requested range."
    # The larval state the failed call made stays, with SPI 0; dumps list newest first.
    assert ip(n, "ip xfrm state") == larval(0) + larval(0x100)


def test_mode_reqid_mark_and_dir_as_the_kernel_prints_them() -> None:
    n = XfrmNode()
    out = ip(n, f"{ALLOC} mode tunnel reqid 5 min 0x300 max 0x300")
    assert out == larval(0x300, mode="tunnel")
    out = ip(n, f"{ALLOC} mark 5 mask 0xff reqid 7 seq 9 min 0x400 max 0x400")
    assert out == (
        "src 192.0.2.1 dst 192.0.2.2\n"
        "\tproto esp spi 0x00000400 reqid 7 mode transport\n"
        "\treplay-window 0 \n"
        "\tmark 0x5/0xff \n"
        "\tanti-replay context: seq 0x0, oseq 0x0, bitmap 0x00000000\n"
        "\tsel src 192.0.2.1/32 dst 192.0.2.2/32 \n"
    )
    assert ip(n, f"{ALLOC} dir in min 0x600 max 0x600") == larval(0x600, "\tdir in\n")
    no_src = ip(n, "ip xfrm state allocspi dst 192.0.2.2 proto esp min 0x601 max 0x601")
    assert no_src == larval(0x601, src="0.0.0.0")


def test_an_spi_held_by_any_state_of_the_protocol_is_not_given() -> None:
    n = XfrmNode()
    ip(n, f"{ALLOC} mark 5 mask 0xff reqid 7 min 0x400 max 0x400")
    ip(n, f"{ALLOC} min 0x400 max 0x401")  # 0x400 is held (by a marked state)
    assert n.states[0].spi == 0x401
    with pytest.raises(KernelError, match="No SPI available"):
        ip(n, f"{ALLOC} mode tunnel min 0x400 max 0x401")


def test_the_default_range_and_a_seeded_draw() -> None:
    spis = []
    for _ in range(2):
        n = XfrmNode(rng=random.Random("seed"))
        ip(n, ALLOC)
        spis.append(n.states[0].spi)
    # iproute2's default range is PF_KEY's: 0x100..0x0fffffff.
    assert spis[0] == spis[1] and 0x100 <= spis[0] <= 0x0FFFFFFF


@pytest.mark.parametrize(
    ("words", "message"),
    [
        # iproute2 6.15's own refusals (rc 1), then the kernel's (rc 2).
        ("spi 0x200", '"spi" is invalid'),
        ("min 0x500 max 0x400", 'value after "min" is larger than value after "max"'),
        ("min 0x500", '"max" is missing'),
        ("max 0x500", '"min" is missing'),
    ],
)
def test_refusals_of_iproute2(words: str, message: str) -> None:
    with pytest.raises(ToolUsageError) as err:
        ip(XfrmNode(), f"{ALLOC} {words}")
    assert message in str(err.value)


def test_ipcomp_range_is_refused_by_the_kernel() -> None:
    line = "ip xfrm state allocspi src 192.0.2.1 dst 192.0.2.2 proto comp min 0x500 max 0x10000"
    with pytest.raises(KernelError) as err:
        ip(XfrmNode(), line)
    assert err.value.board == "Error: IPCOMP SPI must be <= 65535."


def test_add_update_and_the_datapath_with_a_larval_state() -> None:
    n = XfrmNode()
    ip(n, f"{ALLOC} min 0x100 max 0x100")
    with pytest.raises(KernelError, match="File exists"):
        ip(n, f"ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x100 enc aes {KEY}")
    # update replaces the larval state whole (Linux 6.12 lists the keys and a zero sel).
    ip(n, f"ip xfrm state update src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x100 enc aes {KEY}")
    assert ip(n, "ip xfrm state") == (
        "src 192.0.2.1 dst 192.0.2.2\n"
        "\tproto esp spi 0x00000100 reqid 0 mode transport\n"
        "\treplay-window 0 \n"
        f"\tenc cbc(aes) {KEY}\n"
        "\tanti-replay context: seq 0x0, oseq 0x0, bitmap 0x00000000\n"
        "\tsel src 0.0.0.0/0 dst 0.0.0.0/0 \n"
    )
    assert not n.states[0].larval
    # An added SA takes the place of a larval state with no SPI for the same
    # addresses, protocol, mode and reqid (xfrm_state_add -> __find_acq_core).
    with pytest.raises(KernelError):
        ip(n, f"{ALLOC} min 0x100 max 0x100")
    assert [x.spi for x in n.states] == [0, 0x100]
    ip(n, f"ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x101 enc aes {KEY}")
    assert [x.spi for x in n.states] == [0x101, 0x100]
    assert "SAD count 2" in ip(n, "ip xfrm state count")
