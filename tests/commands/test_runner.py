"""The runner: several commands per text, and memory dumps pasted after ``decode``."""

from __future__ import annotations

from io import StringIO

from rich.console import Console

from esplab.batch import Outcome, command_pieces, run_text
from esplab.commands.result import PacketResult
from esplab.commands.session import Session

# eip93.md 4.1: the seed SA record (AES-128-CBC + HMAC-SHA1-96 outbound) starts with
# sa_cmd0 0x133A1310 and sa_cmd1 0x22001101; u-boot md.l prints little-endian words
# (eip93.md 5.2). The ASCII columns hold ; # and " on purpose: they are not syntax there.
MD_L = """\
08000000: 133a1310 22001101 03020100 07060504    ..:..";.....#...
08000010: 0b0a0908 0f0e0d0c 00000000 00000000    ................
08000020: 00000000 00000000 f88aff6f 8b489540    ...........o@.H.
08000030: 6769710d f12dc516 60098ab7 00000000    giq...-....`....
08000040: 00000000 00000000 aed3bf5a c5c08086    ........Z.......
08000050: cfbf72c1 74c71b8f 4837e208 00000000    .r.....t..7H....
08000060: 00000000 00000000 00001000 00000000    ................
08000070: 00000000 ffffffff 00000000 00000000    ................"""


def _record_from_words() -> bytes:
    words = [w for line in MD_L.splitlines() for w in line.split()[1:5]]
    return b"".join(int(w, 16).to_bytes(4, "little") for w in words)


def run(text: str) -> tuple[Session, list[Outcome], str]:
    session = Session()
    buf = StringIO()
    console = Console(file=buf, width=120, color_system=None)
    outcomes = run_text(session, text, console, console)
    return session, outcomes, buf.getvalue()


def test_a_pasted_dump_goes_to_decode_whole() -> None:
    text = "decode sa\n" + MD_L + "\nxfrm stat"
    pieces = command_pieces(text)
    assert [whole for _, whole in pieces] == [True, False]
    assert pieces[0][0].count("\n") == 8
    _, outcomes, _ = run(text)
    assert [o.ok for o in outcomes] == [True, True]
    result = outcomes[0].result
    assert isinstance(result, PacketResult)
    assert result.data["hex"] == _record_from_words().hex()
    sa = result.packet
    assert sa is not None and (sa.sa_cmd0, sa.sa_cmd1) == (0x133A1310, 0x22001101)


def test_the_dump_may_start_on_the_decode_line_and_follow_a_node_name() -> None:
    first, rest = MD_L.split("\n", 1)
    _, outcomes, _ = run(f"host decode sa {first}\n{rest}")
    assert len(outcomes) == 1 and outcomes[0].ok
    result = outcomes[0].result
    assert isinstance(result, PacketResult)
    assert result.data["hex"] == _record_from_words().hex()


def test_hexdump_c_lines_with_ascii_that_looks_like_syntax() -> None:
    text = (
        "decode rdr 00000000  12 11 00 06 2c 00 00 10  14 00 00 10 00 00 00 08  "
        '|....,..;"..#....|\n'
        "00000010  00 00 00 00 00 00 00 00  01 00 05 00 74 00 80 00  |............t...|"
    )
    _, outcomes, _ = run(text)
    assert len(outcomes) == 1 and outcomes[0].ok
    result = outcomes[0].result
    assert isinstance(result, PacketResult) and result.packet is not None
    assert result.packet.length == 116 and result.packet.src_addr == 0x1000002C


def test_a_dump_line_without_decode_is_one_error_with_the_way_to_do_it() -> None:
    _, outcomes, err = run('08000000: 133a1310 22001101    ..:.;#"\nhelp quit')
    assert [o.ok for o in outcomes] == [False, True]
    assert "looks like a line of a memory dump" in err and "decode sa" in err


def test_decode_without_a_dump_still_splits_at_semicolons_and_comments() -> None:
    names = Session().registry.names(aliases=True)
    assert command_pieces("decode sa 10133a13; help quit", (), names) == [
        ("decode sa 10133a13; help quit", False)
    ]
    _, outcomes, _ = run("decode sa 10133a13; help quit")
    assert [o.line for o in outcomes] == ["decode sa 10133a13", "help quit"]
    # The help example (an address column, no ASCII column), then more.
    example = (
        "decode rdr 1fb70000: 06001112 1000002c 10000014 08000000 00000000 00000000 "
        "00050001 00800074"
    )
    _, outcomes, _ = run(f"{example}; help decode")
    assert [o.ok for o in outcomes] == [True, True]
    _, outcomes, _ = run(f"{example} # from the board")
    assert len(outcomes) == 1 and outcomes[0].ok


def test_a_one_line_dump_whose_ascii_column_looks_like_syntax_is_taken_whole() -> None:
    # One md.l line: 16 bytes of an Ethernet frame, read as little-endian words.
    for ascii_column in ("..;.....", '.."....', "..;..#..", "..(...["):
        line = f"decode Ether 1fb70000: 00000202 02000000 00000101 00000100    {ascii_column}"
        _, outcomes, _ = run(line)
        assert len(outcomes) == 1 and outcomes[0].ok, (ascii_column, outcomes)
        result = outcomes[0].result
        assert isinstance(result, PacketResult)
        assert result.data["hex"] == "02020000000000020101000000010000"


def test_only_a_decode_line_takes_the_dump_lines_after_it() -> None:
    first = MD_L.split("\n", 1)[0]
    # help decode is not a decode: the dump lines after it are stray, help still runs.
    _, outcomes, err = run(f"help decode\n{first}")
    assert [o.ok for o in outcomes] == [True, False] and "memory dump" in err
    _, outcomes, _ = run(f"# decode sa\n{first}")
    assert [o.ok for o in outcomes] == [False]
    # Blank lines between decode and its dump change nothing.
    _, outcomes, _ = run(f"decode sa\n\n{MD_L}\n")
    assert len(outcomes) == 1 and outcomes[0].ok


def test_quoted_hex_on_one_line_still_works() -> None:
    result = Session().execute('decode mtk "0000000000020000000000010000000100000800"')
    assert isinstance(result, PacketResult) and result.data["length"] == 20
