from __future__ import annotations

import pytest

from esplab.commands.tokens import split_commands, tokenize
from esplab.errors import UsageError


def values(line: str) -> list[str]:
    return [t.value for t in tokenize(line)]


def test_plain_words_and_columns() -> None:
    toks = tokenize("help  decode")
    assert [t.value for t in toks] == ["help", "decode"]
    assert [t.col for t in toks] == [0, 6]


def test_shell_quotes_removed_at_top_level() -> None:
    # iproute2 users quote algorithm names for their shell (reference 5: 'cbc(aes)').
    assert values("enc 'cbc(aes)' 0x00") == ["enc", "cbc(aes)", "0x00"]
    assert values('auth "hmac(sha1)" key') == ["auth", "hmac(sha1)", "key"]
    assert values("enc cbc(aes) 0x00") == ["enc", "cbc(aes)", "0x00"]


def test_brackets_group_packet_expressions() -> None:
    line = 'send ap wan IP(dst="198.51.100.2", ttl=3)/UDP(dport=5201)/Raw(b"x"*64)'
    assert values(line) == [
        "send",
        "ap",
        "wan",
        'IP(dst="198.51.100.2", ttl=3)/UDP(dport=5201)/Raw(b"x"*64)',
    ]


def test_quotes_inside_brackets_kept_verbatim() -> None:
    assert values("x Raw(b'a b')") == ["x", "Raw(b'a b')"]


def test_raw_text_is_kept() -> None:
    tok = tokenize("enc 'cbc(aes)'")[1]
    assert tok.raw == "'cbc(aes)'"
    assert tok.col == 4


def test_comment_ends_the_line() -> None:
    assert values("help # list them") == ["help"]
    assert values("# nothing") == []


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("send IP(dst='1'", "unclosed '('"),
        ("send IP())", "unbalanced ')'"),
        ("say 'hello", "unterminated ' quote"),
        ("x (]", "unbalanced ']'"),
    ],
)
def test_malformed_lines_give_one_clear_error(line: str, fragment: str) -> None:
    with pytest.raises(UsageError) as info:
        tokenize(line)
    assert fragment in str(info.value)


def test_split_commands_on_semicolons_and_newlines() -> None:
    text = "help; help decode\n# comment\nquit ;; \n"
    assert split_commands(text) == ["help", "help decode", "quit"]


def test_split_commands_respects_quotes_and_brackets() -> None:
    assert split_commands("a 'x;y'; b Raw(b';')") == ["a 'x;y'", "b Raw(b';')"]
