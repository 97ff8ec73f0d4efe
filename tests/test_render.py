"""Rendering: field-coloured hexdumps with a legend, width-adaptive rows, NO_COLOR,
the ESP trailer from a decrypt, and the diff view."""

from __future__ import annotations

import re
from io import StringIO

from rich.color import ColorSystem
from rich.console import Console, RenderableType
from rich.style import Style
from rich.text import Text
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from esplab.commands.handlers.diff import ByteView, DiffResult
from esplab.commands.result import PacketResult, TableResult
from esplab.diff import find_esp, open_esp
from esplab.layers import MTKEther
from esplab.model.kernel.esp.core import EspSA, encrypt
from esplab.render import ICV_STYLE, ROLE_STYLES, bytes_per_row, hexdump, render

AUTH_KEY = bytes.fromhex("0102030405060708090a0b0c0d0e0f1011121314")
ENC_KEY = bytes.fromhex("000102030405060708090a0b0c0d0e0f")
IV = bytes(range(16))
HEX_ROW = re.compile(r"^([0-9a-f]{4,})  [0-9a-f]{2} ")


def plain(renderable: RenderableType, width: int = 100) -> str:
    buf = StringIO()
    Console(file=buf, width=width, color_system=None).print(renderable)
    return buf.getvalue()


def coloured(renderable: RenderableType, **kw: object) -> str:
    buf = StringIO()
    console = Console(file=buf, width=100, color_system="truecolor", force_terminal=True, **kw)  # type: ignore[arg-type]
    console.print(renderable)
    return buf.getvalue()


def esp_result() -> tuple[PacketResult, bytes]:
    """The seed SA's ESP packet as ``capture show`` gives it, with the decrypt's layout."""
    sa = EspSA.build(0x1000, enc="cbc(aes)", enc_key=ENC_KEY, auth="hmac(sha1)", auth_key=AUTH_KEY)
    inner = IP(src="192.0.2.1", dst="192.0.2.2") / UDP(sport=1234, dport=5201) / Raw(b"x" * 64)
    packet = Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01") / IP(
        encrypt(sa, bytes(inner), seq=5, iv=IV)
    )
    offset, esp = find_esp(packet) or (0, b"")
    opened = open_esp(sa, esp, offset)
    assert opened is not None
    result = PacketResult(
        summary="esp", packet=packet, title="wan.wire#1", data={"esp": opened.as_data()}
    )
    return result, opened.icv


def hex_rows(text: str, total: int) -> list[int]:
    """How many bytes each hexdump row of plain output shows (from the row offsets)."""
    offsets = [int(m.group(1), 16) for m in map(HEX_ROW.match, text.splitlines()) if m]
    return [b - a for a, b in zip(offsets, [*offsets[1:], total], strict=True)]


def styled_hex(out: str, style: str) -> str:
    """The hex digits printed in ``style`` (ANSI output), spaces removed."""
    codes = Style.parse(style)._make_ansi_codes(ColorSystem.TRUECOLOR)
    return "".join(
        text
        for sgr, text in re.findall(r"\x1b\[([0-9;]*)m([^\x1b]*)", out)
        if sgr == codes and re.fullmatch(r"[0-9a-f ]+", text)
    ).replace(" ", "")


def styles_at(text: Text) -> list[str]:
    marks = [""] * len(text.plain)
    for span in text.spans:
        for i in range(span.start, span.end):
            marks[i] = str(span.style)
    return marks


def test_packet_result_shows_tree_hexdump_and_legend() -> None:
    packet = Ether() / IP(dst="192.0.2.2") / UDP(dport=9) / Raw(b"hello")
    out = plain(render(PacketResult(summary="p", packet=packet, title="a packet")))
    assert "a packet" in out and "├── IP" in out and "dport" in out
    assert hex_rows(out, len(packet)) == [16, 16, 15]
    assert "Ether: dst@0-5 src@6-b type@c-d" in out
    assert "ttl@16" in out and "load@2a-2e" in out
    assert "\x1b[" not in out  # no colour codes without a colour system


def test_hexdump_rows_follow_the_terminal_width() -> None:
    packet = IP(dst="192.0.2.2") / UDP(dport=9) / Raw(b"x" * 40)
    result = PacketResult(summary="p", packet=packet)
    size = len(packet)
    assert set(hex_rows(plain(render(result), width=100), size)[:-1]) == {16}
    assert set(hex_rows(plain(render(result), width=50), size)[:-1]) == {8}
    assert set(hex_rows(plain(render(result), width=30), size)[:-1]) == {4}
    assert bytes_per_row(100) == 16 and bytes_per_row(71) == 8 and bytes_per_row(38) == 4


def test_hexdump_layout_and_span_styles() -> None:
    text = hexdump(bytes(range(20)), [(0, 2, "red"), (18, 20, "blue")], per_row=8)
    lines = text.plain.splitlines()
    assert lines[0].startswith("0000  00 01 02 03 04 05 06 07")
    assert lines[2].startswith("0010  10 11 12 13")
    marks = styles_at(text)
    first = text.plain.index("00 01")
    assert marks[first : first + 5] == ["red"] * 5  # the gap inside a field is styled too
    assert marks[first + 5] == ""  # not the gap after it
    last = text.plain.index("12 13")
    assert marks[last : last + 5] == ["blue"] * 5


def test_esp_packet_shows_the_decrypted_trailer() -> None:
    result, icv = esp_result()
    out = plain(render(result))
    assert "ESP trailer (decrypted with the lab's SA)" in out
    assert "010203040506" in out and f"{icv.hex()} (good)" in out
    legend = next(line for line in out.splitlines() if line.startswith("ESPTrailer:"))
    assert legend.startswith("ESPTrailer: padding@") and "pad_len@" in legend
    assert "icv@8a-95" in legend
    assert "ESP: spi@22-25 seq@26-29 iv@2a-39 data@" in out


def test_icv_bytes_carry_the_icv_style_in_truecolor() -> None:
    result, icv = esp_result()
    out = coloured(render(result))
    assert styled_hex(out, ICV_STYLE) == icv.hex()
    assert ROLE_STYLES["padding"] != ICV_STYLE


def test_no_color_console_drops_colours() -> None:
    result, _ = esp_result()
    out = coloured(render(result), no_color=True)
    assert not re.search(r"\x1b\[[0-9;]*(3[0-7]|4[0-7]|38;|48;)", out)


def test_mtk_tag_has_its_role_style() -> None:
    frame = MTKEther(bytes(MTKEther(port_mask=2, type=0x0800) / IP()))
    out = coloured(render(PacketResult(summary="m", packet=frame)))
    # tpid_sel 0, then unused/sa_dis/port_mask (port 1), then the zero TCI: bytes 12-15
    assert styled_hex(out, ROLE_STYLES["mtk-tag"]) == "00020000"


def test_packet_that_does_not_build_still_renders() -> None:
    out = plain(render(PacketResult(summary="bad", packet=IP(dst="192.0.2.2") / UDP(len=3))))
    assert "UDP" in out


def test_diff_view_marks_changed_bytes() -> None:
    left, right = bytes(range(64)), bytes(range(40)) + b"\xff" + bytes(range(41, 64))
    view = ByteView("bytes", left, right, ((40, 41),))
    result = DiffResult(
        summary="a vs b",
        title="diff a b",
        columns=("layer", "field", "a", "b"),
        rows=[("Raw", "load", "...", "...")],
        views=[view],
        left_label="a",
        right_label="b",
    )
    out = plain(render(result))
    lines = out.splitlines()
    minus = next(i for i, line in enumerate(lines) if line.startswith("0020 - "))
    assert lines[minus + 1].startswith("0020 + ") and "ff" in lines[minus + 1]
    assert lines[minus + 2].index("^^") == lines[minus + 1].index("ff")
    assert "... 1 identical row(s)" in out  # row 0 folds; row 1 is context
    assert "0010   10 11" in out
    assert "bytes: 1 byte(s) differ; - a (64 bytes), + b (64 bytes)" in out


def test_identical_diff_and_plain_tables() -> None:
    same = DiffResult(summary="a vs b: identical", views=[ByteView("bytes", b"ab", b"ab")])
    assert same.identical and plain(render(same)).strip() == "a vs b: identical"
    table = TableResult(title="t", columns=("x",), rows=[("1",)])
    assert "│ 1 │" in plain(render(table))


def test_an_empty_table_says_why_it_is_empty() -> None:
    empty = TableResult(
        summary="ap: 0 XFRM counter(s) moved (--all shows every counter)",
        title="ap /proc/net/xfrm_stat",
        columns=("counter", "value"),
    )
    assert "0 XFRM counter(s) moved (--all shows every counter)" in plain(render(empty))
    full = TableResult(
        summary="not shown", columns=("counter", "value"), rows=[("XfrmInNoStates", "1")]
    )
    out = plain(render(full))
    assert "XfrmInNoStates" in out and "not shown" not in out


def test_ping_and_send_count_show_their_summary_after_the_traces() -> None:
    from esplab.commands.session import Session

    s = Session()
    out = plain(render(s.execute("ping 192.0.2.2 --count 2")), width=120)
    assert out.rstrip().endswith("2 packets transmitted, 2 received, 0% packet loss")
    out = plain(
        render(s.execute('send ap wan IP(dst="192.0.2.2")/UDP(dport=5201) count 3')), width=120
    )
    assert out.rstrip().endswith("3 packets: 3 delivered; last journey 7: delivered to host")
    one = plain(render(s.execute('send ap wan IP(dst="192.0.2.2")/UDP(dport=5201)')), width=120)
    assert "last journey" not in one  # one packet: the trace's title says it all


def test_conditional_fields_that_do_not_apply_are_not_shown() -> None:
    # An ICMP echo has no timestamps or gateway (Scapy's show leaves them out too);
    # showing them would also print the wall clock (ts_ori's default).
    from scapy.layers.inet import ICMP

    from esplab.render import field_rows

    names = [name for name, _ in field_rows(ICMP(type=8))]
    assert names[:5] == ["type", "code", "chksum", "id", "seq"]
    assert not {"ts_ori", "ts_rx", "ts_tx", "gw", "addr_mask", "nexthopmtu"} & set(names)
    assert "nexthopmtu" in [name for name, _ in field_rows(ICMP(type=3, code=4))]
