"""Completion of live names and packet expressions, fed as prompt-toolkit Documents;
the input-line lexer and the toolbar, which read the same session."""

from __future__ import annotations

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from esplab.commands.complete import expression_completions
from esplab.commands.handlers import all_commands, diff, settings
from esplab.commands.registry import Registry
from esplab.commands.session import Session
from esplab.commands.tokens import split_words, tokenize
from esplab.repl.app import _Toolbar
from esplab.repl.completer import EsplabCompleter, last_command
from esplab.repl.lexer import CommandLexer
from tests.commands import seed


def new_session() -> Session:
    commands = all_commands()
    names = {c.name for c in commands}
    extra = [c for c in (*diff.COMMANDS, *settings.COMMANDS) if c.name not in names]
    return Session(registry=Registry([*commands, *extra]))


@pytest.fixture(scope="module")
def session() -> Session:
    s = new_session()
    for line in seed.software():
        s.execute(line)
    s.execute(f"send ap wan {seed.UDP}")
    s.execute('let p1 = IP(dst="192.0.2.2")/UDP(dport=9)')
    return s


def completions(session: Session, text: str) -> list[tuple[str, int]]:
    doc = Document(text, cursor_position=len(text))
    return [
        (c.text, c.start_position)
        for c in EsplabCompleter(session).get_completions(doc, CompleteEvent())
    ]


def words(session: Session, text: str) -> list[str]:
    return [w for w, _ in completions(session, text)]


# --------------------------------------------------------------------------- expressions


def test_fields_inside_a_layer_call(session: Session) -> None:
    found = words(session, "send ap wan IP(")
    assert {"dst=", "src=", "ttl=", "proto="} <= set(found)
    assert all(w.endswith("=") for w in found)


def test_partial_field_replaces_only_the_partial_word(session: Session) -> None:
    assert completions(session, 'send ap wan IP(dst="192.0.2.2", t') == [("tos=", -1), ("ttl=", -1)]
    assert completions(session, "let x = UDP(sp") == [("sport=", -2)]


def test_given_fields_are_not_offered_again(session: Session) -> None:
    found = words(session, 'send ap wan IP(dst="192.0.2.2", ttl=3, ')
    assert "dst=" not in found and "ttl=" not in found and "src=" in found


def test_layer_names_after_a_slash_and_at_the_start(session: Session) -> None:
    after = words(session, "send ap wan IP()/")
    assert {"UDP", "TCP", "Raw", "ESP", "MTKEther"} <= set(after)
    assert completions(session, "send ap wan IP()/U") == [("UDP", -1)]
    first = words(session, "send ap wan ")
    assert first[0] == "p1" and "IP" in first and "Ether" in first
    assert words(session, "let x = IPv") == [
        "IPv6",
        "IPv6ExtHdrHopByHop",
        "IPv6ExtHdrRouting",
        "IPv6ExtHdrDestOpt",
        "IPv6ExtHdrFragment",
    ]


def test_nested_calls_and_strings(session: Session) -> None:
    assert "dport=" in words(session, 'send ap wan IP()/UDP(sport=1, dport=2)/Raw(b"x")/UDP(')
    assert words(session, "send ap wan IP(dst='192.0.2.(") == []  # inside a string
    assert words(session, "send ap wan IP(ttl=") == []  # values are the user's


def test_field_meta_names_the_field_type() -> None:
    found = expression_completions("IP(tt")
    assert found.words == ["ttl="] and found.meta["ttl="] == "ByteField"
    assert expression_completions("Nonsense(").words == []


def test_expressions_only_where_a_command_takes_one(session: Session) -> None:
    assert words(session, "decode IP(") == []
    assert words(session, "send ap wan IP() ") == ["count", "seq", "iv"]
    assert words(session, "send ap wan IP() seq ") == []


# --------------------------------------------------------------------------- live names


def test_send_completes_nodes_then_devices(session: Session) -> None:
    first = words(session, "send ")
    assert first[:6] == ["ap", "host", "pc1", "pc2", "pc3", "pc4"] and "wan" in first
    assert words(session, "send host ") == ["lo", "eth0", "dummy0"]
    assert words(session, "host send eth0 IP(d") == ["dst="]


def test_spis_and_reqids_of_the_addressed_node(session: Session) -> None:
    assert words(session, "ip xfrm state get spi ") == ["0x1000", "0x1001"]
    assert completions(session, "host ip xfrm state get spi 0x10") == [
        ("0x1000", -4),
        ("0x1001", -4),
    ]
    assert words(session, "ip xfrm state add reqid ") == ["1"]
    assert words(session, "pc1 ip xfrm state add spi ") == []


def test_algorithm_names_by_kind(session: Session) -> None:
    assert "cbc(aes)" in words(session, "ip xfrm state add enc ")
    assert "hmac(sha256)" in words(session, "ip xfrm state add auth ")
    assert words(session, "ip xfrm state add aead rfc41") == ["rfc4106(gcm(aes))"]
    assert completions(session, "ip xfrm state add enc cbc(a") == [("cbc(aes)", -5)]


def test_devices_follow_dev_on_the_addressed_node(session: Session) -> None:
    assert words(session, "host ip link set dev ") == ["lo", "eth0", "dummy0"]
    assert "wan" in words(session, "ip link set dev ")


@pytest.mark.parametrize(
    "line", ["ethtool -k ", "ip link set ", "xdp attach ", "xdpsock ", "xsk bind s0 "]
)
def test_a_device_command_completes_the_addressed_nodes_devices(
    session: Session, line: str
) -> None:
    # (a line "host ethtool -k ..." runs on host: its devices, not the ap's)
    here = words(session, line)
    there = words(session, "host " + line)
    assert "wan" in here and "wan" not in there
    assert "dummy0" in there


def test_taps_and_names_for_diff(session: Session) -> None:
    found = words(session, "diff ")
    assert found[0] == "p1" and "wan.wire" in found and "wan.wire#1" in found
    assert words(session, "diff wan.w") == ["wan.wire", "wan.wire#1"]
    assert words(session, "diff p1 wan.wire#1 ") == ["--ignore"]
    assert "ttl" in words(session, "diff p1 wan.wire#1 --ignore ")
    assert words(session, "diff p1 IP(d") == ["dst="]


def test_settings_and_capture_taps(session: Session) -> None:
    assert words(session, "set ") == [
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
    assert words(session, "set crypto-provider ") == ["software", "eip93"]
    assert words(session, "set output ") == ["text", "json", "board"]
    assert words(session, "set policy-priority ") == ["mainline", "rfc"]
    assert "wan.wire" in words(session, "capture show ")
    assert "host.xfrm" in words(session, "explain 1 ")


def test_node_prefix_then_commands(session: Session) -> None:
    assert words(session, "ho") == ["host"]
    found = words(session, "host ")
    assert "ip" in found and "host" not in found


def test_last_command_after_semicolons() -> None:
    assert last_command("help; se") == "se"
    assert last_command("help; ") == ""
    assert last_command('send ap wan Raw(b";"); let x = IP(').strip() == "let x = IP("
    assert last_command('send ap wan Raw(b";"); he') == "he"
    assert last_command("no separator") == "no separator"


# --------------------------------------------------------------------------- lexer, toolbar


def test_split_words_keeps_expressions_whole() -> None:
    line = 'send ap wan IP(dst="192.0.2.2", ttl=3)/UDP() ; help # note'
    kinds = [(line[a:b], kind) for a, b, kind in split_words(line)]
    assert kinds == [
        ("send", "word"),
        ("ap", "word"),
        ("wan", "word"),
        ('IP(dst="192.0.2.2", ttl=3)/UDP()', "word"),
        (";", "sep"),
        ("help", "word"),
        ("# note", "comment"),
    ]
    # Unfinished input still splits: the open bracket and quote run to the end.
    assert split_words('let p = IP(dst="1') == [
        (0, 3, "word"),
        (4, 5, "word"),
        (6, 7, "word"),
        (8, 17, "word"),
    ]


def test_split_words_reads_escaped_quotes_as_the_tokenizer_does() -> None:
    line = r'lab save "a\"b c" ; help'
    words = [line[a:b] for a, b, kind in split_words(line) if kind == "word"]
    assert words == ["lab", "save", r'"a\"b c"', "help"]
    assert [t.raw for t in tokenize(line.split(" ;")[0])] == words[:3]
    # A trailing backslash inside a quote does not run past the end.
    assert split_words('x "a\\') == [(0, 1, "word"), (2, 5, "word")]


def test_lexer_styles(session: Session) -> None:
    lexer = CommandLexer(session)
    line = 'host send eth0 IP(dst="192.0.2.1", ttl=3)/UDP() --x 0x10; nope'
    styled = lexer.lex_document(Document(line))(0)
    by_text = {piece[1]: piece[0] for piece in styled if piece[1].strip()}
    assert by_text["host"] == by_text["send"] == "class:command"
    assert by_text["IP"] == by_text["UDP"] == "class:layer"
    assert by_text["dst"] == by_text["ttl"] == "class:field"
    assert by_text['"192.0.2.1"'] == "class:string"
    assert by_text["3"] == by_text["0x10"] == "class:number"
    assert by_text["--x"] == "class:option" and by_text["nope"] == "class:unknown"
    assert "".join(piece[1] for piece in styled) == line


def test_toolbar_shows_node_step_mode_and_verdict(session: Session) -> None:
    bar = _Toolbar(session)
    text = "".join(t for _, t in bar.parts())
    journey = session.lab.journeys.get()
    assert journey is not None
    assert "node ap" in text and f"journey {journey.id}: {journey.verdict}" in text
    session.execute("step")
    try:
        stepping = "".join(t for _, t in bar.parts())
        assert f"stepping {journey.id} 1/{len(journey.stages)}" in stepping
    finally:
        session.execute("continue")
    bar.last_ok = False
    assert "last: failed" in "".join(t for _, t in bar.parts())
    assert bar()  # formatted text for prompt-toolkit


def test_toolbar_fits_80_columns_with_everything_on(session: Session) -> None:
    # Stepping, a long verdict and a failed command all at once: one line of 80.
    session.execute('send ap wan IP(dst="203.0.113.77")/UDP(sport=1234,dport=5201)')
    bar = _Toolbar(session)
    session.execute("step")
    try:
        bar.last_ok = False
        text = "".join(t for _, t in bar.parts())
        assert len(text) <= 80, text
        assert "node ap" in text and "stepping" in text and "last: failed" in text
        journey = session.lab.journeys.get()
        assert journey is not None and f"journey {journey.id}: " in text
    finally:
        session.execute("continue")
    bar.last_ok = True
    text = "".join(t for _, t in bar.parts())
    assert len(text) <= 80 and "help, Ctrl-D quits" in text
    assert len("".join(t for _, t in bar.parts(30))) <= 30
