"""ip xfrm completion offers what the parser accepts after each word, for each verb."""

from __future__ import annotations

import pytest

from esplab.commands.complete import candidates
from esplab.commands.session import Session
from esplab.model.kernel.xfrm.objects import POLICY_FLAGS, STATE_FLAGS
from tests.commands import seed

ADD = "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 "
ESP = ADD + "proto esp spi 0x2000 "
POLICY = "ip xfrm policy add src 192.0.2.1/32 dst 192.0.2.2/32 dir out "


@pytest.fixture(scope="module")
def session() -> Session:
    s = Session()
    for line in seed.software():
        s.execute(line)
    return s


def test_short_algorithm_names_the_parser_takes(session: Session) -> None:
    assert candidates(session, ESP + "enc a") == ["aes"]
    # hmac(sha384) and hmac(sha512) have no short name in Linux (xfrm_algo.c, no .compat)
    assert candidates(session, ESP + "auth sha") == ["sha1", "sha256"]
    assert candidates(session, ESP + "auth-trunc sha2") == ["sha256"]
    assert {"cbc(aes)", "aes", "des3_ede", "cipher_null"} <= set(candidates(session, ESP + "enc "))
    assert "hmac(sha1)" in candidates(session, ESP + "auth ")


def test_short_names_complete_a_line_that_runs(session: Session) -> None:
    line = seed.SA_OUT.replace("0x1000", "0x3000")
    assert candidates(session, line.split(" enc ")[0] + " enc ae") == ["aes"]
    s = Session()
    s.execute(line)


def test_protocols_after_proto(session: Session) -> None:
    assert candidates(session, ADD + "proto ") == ["esp", "ah", "comp"]
    # proto comp names a protocol; the next word is a keyword, not a compression algorithm.
    after = candidates(session, ADD + "proto comp ")
    assert "spi" in after and "deflate" not in after
    every = ["esp", "ah", "comp", "route2", "hao", "ipsec-any"]
    assert candidates(session, "ip xfrm state flush proto ") == every
    assert candidates(session, "ip xfrm state list proto ") == every


def test_encap_flag_and_selector_values(session: Session) -> None:
    assert candidates(session, ESP + "encap ") == ["espinudp", "espinudp-nonike", "espintcp"]
    assert candidates(session, ESP + "flag ") == list(STATE_FLAGS)
    more = candidates(session, ESP + "flag esn ")
    assert "noecn" in more and "mode" in more
    assert candidates(session, ESP + "extra-flag ") == ["dont-encap-dscp", "oseq-may-wrap"]
    assert candidates(session, ESP + "sel ") == [
        "src",
        "dst",
        "dev",
        "proto",
        "sport",
        "dport",
        "type",
        "code",
        "key",
    ]
    assert "udp" in candidates(session, ESP + "sel src 10.0.0.0/8 proto ")
    in_sel = candidates(session, ESP + "sel src 10.0.0.0/8 ")
    assert "dst" in in_sel and "src" not in in_sel and "mode" in in_sel and "sel" not in in_sel
    assert candidates(session, ESP + "limit ")[:2] == ["time-soft", "time-hard"]
    assert candidates(session, ESP + "mode ") == ["transport", "tunnel", "beet"]


def test_add_offers_each_word_once_and_the_id_as_one_group(session: Session) -> None:
    start = candidates(session, "ip xfrm state add ")
    assert start[:4] == ["src", "dst", "proto", "spi"]
    after_id = candidates(session, ADD + "proto esp ")
    assert after_id[0] == "spi" and "src" not in after_id
    assert not {"src", "dst", "proto", "spi"} & set(candidates(session, ESP + "mode tunnel "))
    after_aead = candidates(session, ESP + "aead rfc4106(gcm(aes)) 0x00 128 ")
    assert not {"aead", "enc", "auth", "auth-trunc"} & set(after_aead)
    assert "comp" in after_aead
    assert "limit" in candidates(session, ESP + "limit time-soft 10 ")


def test_offload_words_in_order(session: Session) -> None:
    assert candidates(session, ESP + "offload ") == ["crypto", "packet", "dev"]
    assert candidates(session, ESP + "offload packet ") == ["dev"]
    assert candidates(session, ESP + "offload dev wan ") == ["dir"]
    assert candidates(session, ESP + "offload dev wan dir ") == ["in", "out"]
    assert "mask" in candidates(session, ESP + "mark 7 ")


def test_each_verb_offers_only_its_words(session: Session) -> None:
    assert candidates(session, "ip xfrm state flush ") == ["proto"]
    listing = candidates(session, "ip xfrm state list ")
    assert set(listing) == {"src", "dst", "proto", "spi", "nokeys", "mode", "reqid", "flag"}
    assert set(candidates(session, "ip xfrm state deleteall ")) == set(listing)
    assert set(candidates(session, "ip x s l ")) == set(listing)
    assert set(candidates(session, "ip xfrm state get ")) == {"src", "dst", "proto", "spi", "mark"}
    assert set(candidates(session, "ip xfrm state delete ")) == {
        "src",
        "dst",
        "proto",
        "spi",
        "mark",
    }
    assert candidates(session, "ip xfrm state count ") == []
    for verb in ("flush", "list", "get", "delete", "deleteall"):
        offered = set(candidates(session, f"ip xfrm state {verb} "))
        assert not offered & {"enc", "auth", "aead", "offload", "encap"}, verb


def test_template_words_after_tmpl(session: Session) -> None:
    tmpl = candidates(session, POLICY + "tmpl ")
    assert tmpl == ["src", "dst", "proto", "spi", "mode", "reqid", "level"]
    assert candidates(session, POLICY + "tmpl proto ") == ["esp", "ah", "comp"]
    assert candidates(session, POLICY + "tmpl proto esp level ") == ["required", "use"]
    inside = candidates(session, POLICY + "tmpl src 192.0.2.1 ")
    assert {"dst", "proto", "reqid", "tmpl", "priority"} <= set(inside)
    assert "src" not in inside and "dir" not in inside


def test_policy_verbs_and_values(session: Session) -> None:
    assert candidates(session, "ip xfrm policy flush ") == ["ptype"]
    assert candidates(session, "ip xfrm policy flush ptype ") == ["main", "sub"]
    assert candidates(session, "ip xfrm policy add dir ") == ["in", "out", "fwd"]
    assert candidates(session, POLICY + "action ") == ["allow", "block"]
    assert candidates(session, POLICY + "flag ")[: len(POLICY_FLAGS)] == list(POLICY_FLAGS)
    assert candidates(session, POLICY + "offload ") == ["packet"]
    listing = set(candidates(session, "ip xfrm policy list "))
    assert "nosock" in listing and "tmpl" not in listing
    assert "tmpl" not in set(candidates(session, "ip xfrm policy get "))


def test_live_values_still_follow_their_keywords(session: Session) -> None:
    assert candidates(session, "ip xfrm state get spi ") == ["0x1000", "0x1001"]
    assert "wan" in candidates(session, ESP + "offload dev ")
