"""An HMAC key longer than 64 bytes on the engine's authenc (issue #21 item 5).

Mainline drivers/crypto/inside-secure/eip93/eip93-common.c ``eip93_hmac_setkey``:
``if (keylen > SHA256_BLOCK_SIZE) { digest into ipad; keylen = hashlen; }`` then
``memset(ipad + keylen, 0, ...)``, and eip93-aead.c passes ``ctx->authsize`` as
hashlen: the key's digest is cut to the ICV length. RFC 2104 keys HMAC with the
whole digest. The expected tags below come from Python's ``hmac`` with each key.
"""

from __future__ import annotations

import hashlib
import hmac

import pytest

from esplab.commands.session import Session
from esplab.model.kernel.drivers.eip93 import new_eip93
from tests.commands import seed
from tests.commands.results import journey, table

LONG = bytes(range(1, 81))  # 80 bytes: more than the 64-byte block
SHORT = bytes(range(1, 21))
ENC = bytes(16)
IV = bytes(range(16))
ASSOC = bytes.fromhex("0000100000000001") + IV


@pytest.mark.parametrize(
    ("key", "rule", "hmac_key"),
    [
        (LONG, "mainline", hashlib.sha1(LONG).digest()[:12]),
        (LONG, "fixed", LONG),
        (SHORT, "mainline", SHORT),
    ],
)
def test_the_tag_is_keyed_as_the_rule_says(key: bytes, rule: str, hmac_key: bytes) -> None:
    drv = new_eip93(1)
    drv.settings.hmac_long_key = rule  # type: ignore[assignment]
    tfm = drv.aead_setkey(enc="cbc(aes)", enc_key=ENC, auth="hmac(sha1)", auth_key=key, authsize=12)
    out = drv.aead_encrypt(tfm, ASSOC, IV, b"p" * 32)
    assert out.ok
    sealed = bytes(out.data)
    body, tag = sealed[:-12], sealed[-12:]
    assert tag == hmac.new(hmac_key, body, "sha1").digest()[:12]
    assert bool(tfm.key_note) == (len(key) > 64)


def _session(rule: str | None) -> Session:
    key = "0x" + LONG.hex()
    s = Session()
    sa = seed.SA_OUT.replace(f"auth sha1 {seed.AUTH}", f"auth sha1 {key}")
    for line in (sa, seed.POL_OUT, "host " + sa, "host " + seed.POL_IN_HOST):
        s.execute(line)
    s.execute("set crypto-provider eip93")
    if rule is not None:
        s.execute(f"set hmac-long-key {rule}")
    return s


def test_mainline_fails_at_the_peer_and_explains_why() -> None:
    s = _session(None)
    j = journey(s, f"send ap wan {seed.UDP}")
    assert not j.delivered and "ICV does not verify" in j.stages[-1].decision
    note = next(st for st in j.stages if "HMAC key" in st.decision)
    assert note.fidelity == "C" and "ctx->authsize" in note.why
    paths = table(s, f"compare 0x1000 {seed.UDP}").data["paths"]
    assert not paths["sw+aead"]["identical"]


def test_the_labelled_fix_delivers() -> None:
    s = _session("fixed")
    assert journey(s, f"send ap wan {seed.UDP}").delivered
    assert table(s, f"compare 0x1000 {seed.UDP}").data["paths"]["sw+aead"]["identical"]
    assert s.execute("set hmac-long-key").summary == "hmac-long-key fixed"
