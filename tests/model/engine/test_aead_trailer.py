"""sw+aead's trailer check on input is the kernel's, whichever AEAD provider ran.

net/ipv4/esp4.c ``esp_remove_trailer``: ``if (padlen + 2 + alen >= elen)`` the packet
is garbage (-EINVAL): a trailer that leaves no payload is refused, exactly as
software ESP (:func:`esplab.model.kernel.esp.core.decrypt`) refuses it (issue #21 item 4).
"""

from __future__ import annotations

import pytest

from esplab.model.kernel.drivers.eip93 import new_eip93
from esplab.model.kernel.esp import core as esp
from esplab.model.kernel.esp.sa import EspSA
from tests.model.engine.support import key, plain_packet

SPI = 0x100


@pytest.mark.parametrize(("payload", "ok"), [(0, False), (1, True)])
def test_a_trailer_leaving_no_payload_is_refused_by_both(payload: int, ok: bool) -> None:
    ekey, akey = key(16, 0x11), key(20, 0x80)
    drv = new_eip93(1)
    tfm = drv.aead_setkey(enc="cbc(aes)", enc_key=ekey, auth="hmac(sha1)", auth_key=akey, spi=SPI)
    iv = key(16, 7)
    header = SPI.to_bytes(4, "big") + (9).to_bytes(4, "big") + iv
    # 16 bytes of plaintext: payload bytes, then padding 1, 2, ..., pad length, next header 17.
    pad = 14 - payload
    plain = b"x" * payload + bytes(range(1, pad + 1)) + bytes((pad, 17))
    sealed = drv.aead_encrypt(tfm, header, iv, plain)
    assert sealed.ok
    outer = bytearray(plain_packet(4, 20 + len(sealed.data))[:20])
    outer[9] = 50  # ESP
    wire = bytes(outer) + sealed.data
    got = drv.sw_aead_rx(tfm, wire)
    sw = EspSA.build(SPI, enc="cbc(aes)", enc_key=ekey, auth="hmac(sha1)", auth_key=akey)
    ref = esp.decrypt(sw, wire)
    assert got.ok is ok and ref.ok is ok
    if not ok:
        assert got.reason == ref.reason == "bad-padding"
        assert got.mib == "XfrmInStateProtoError"
