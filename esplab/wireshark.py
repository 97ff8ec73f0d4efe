"""Wireshark's ESP SA table (the ``esp_sa`` UAT file) and the tshark command line.

Wireshark decrypts ESP from a table of SAs, one CSV record each::

    "IPv4","192.0.2.1","192.0.2.2","0x00001000","AES-CBC [RFC3602]","0x00..0f",
    "HMAC-SHA-1-96 [RFC2404]","0x01..14"

The algorithm strings are Wireshark's own (epan/dissectors/packet-ipsec.c, 4.x),
mapped here from the Linux kernel's canonical names. Key material is given as the
kernel holds it: for ``rfc3686(ctr(aes))`` and ``rfc4106(gcm(aes))`` the last 4
bytes are the nonce/salt, which is also what Wireshark expects.

Not every SA fits: :func:`wireshark_form` says how one is written and what Wireshark
will then do differently from the kernel (an ICV it does not check, an ICV it reports
as bad), and raises
``ValueError`` for one it cannot decrypt at all.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from ipaddress import ip_address

__all__ = [
    "ANY_NAMES",
    "AUTH_NAMES",
    "ENC_NAMES",
    "GCM_NAMES",
    "EspSaEntry",
    "WiresharkForm",
    "esp_sa_file",
    "esp_sa_record",
    "tshark_command",
    "tshark_options",
    "wireshark_form",
]

# Kernel encryption name -> Wireshark's ESP encryption algorithm string.
ENC_NAMES = {
    "ecb(cipher_null)": "NULL",
    "cbc(des3_ede)": "TripleDES-CBC [RFC2451]",
    "cbc(aes)": "AES-CBC [RFC3602]",
    "rfc3686(ctr(aes))": "AES-CTR [RFC3686]",
    "cbc(des)": "DES-CBC [RFC2405]",
}

# AEAD: the ICV length is part of Wireshark's algorithm name.
GCM_NAMES = {
    64: "AES-GCM with 8 octet ICV [RFC4106]",
    96: "AES-GCM with 12 octet ICV [RFC4106]",
    128: "AES-GCM with 16 octet ICV [RFC4106]",
}

# (kernel auth name, truncation bits) -> Wireshark's authentication algorithm string.
AUTH_NAMES = {
    ("hmac(sha1)", 96): "HMAC-SHA-1-96 [RFC2404]",
    ("hmac(sha256)", 96): "HMAC-SHA-256-96 [draft-ietf-ipsec-ciph-sha-256-00]",
    ("hmac(sha256)", 128): "HMAC-SHA-256-128 [RFC4868]",
    ("hmac(sha384)", 192): "HMAC-SHA-384-192 [RFC4868]",
    ("hmac(sha512)", 256): "HMAC-SHA-512-256 [RFC4868]",
    ("hmac(md5)", 96): "HMAC-MD5-96 [RFC2403]",
}

# ICV length in bits -> Wireshark's authentication that skips the ICV without checking it;
# it decrypts an SA whose MAC Wireshark lacks (xcbc(aes), hmac(sha384) 128 ...).
ANY_NAMES = {
    bits: f"ANY {bits} bit authentication [no checking]" for bits in (64, 96, 128, 192, 256)
}


@dataclass(frozen=True)
class EspSaEntry:
    """One SA as Wireshark needs it, described with the kernel's names."""

    src: str
    dst: str
    spi: int
    enc: str
    enc_key: bytes
    auth: str | None = None
    auth_key: bytes = b""
    icv_bits: int = 0
    # Extended sequence numbers (XFRM_STATE_ESN): the ICV covers the high 32 bits
    # (RFC 4303 2.2.1), which the esp_sa record has no field for.
    esn: bool = False

    @property
    def family(self) -> str:
        return "IPv6" if ip_address(self.src).version == 6 else "IPv4"

    def wireshark_enc(self) -> str:
        if self.enc == "rfc4106(gcm(aes))":
            try:
                return GCM_NAMES[self.icv_bits]
            except KeyError:
                raise ValueError(
                    f"Wireshark has no AES-GCM with a {self.icv_bits}-bit ICV; valid: 64, 96, 128"
                ) from None
        try:
            return ENC_NAMES[self.enc]
        except KeyError:
            raise ValueError(
                f"Wireshark cannot decrypt '{self.enc}'; valid: "
                + ", ".join([*ENC_NAMES, "rfc4106(gcm(aes))"])
            ) from None

    def wireshark_auth(self) -> str:
        if self.enc == "rfc4106(gcm(aes))" or self.auth is None:
            return "NULL"
        try:
            return AUTH_NAMES[(self.auth, self.icv_bits)]
        except KeyError:
            valid = ", ".join(f"{n} {b}" for n, b in AUTH_NAMES)
            raise ValueError(
                f"Wireshark cannot check '{self.auth}' truncated to {self.icv_bits} bits; "
                f"valid: {valid}"
            ) from None


@dataclass(frozen=True)
class WiresharkForm:
    """How an SA is written for Wireshark, and what Wireshark then does differently."""

    enc: str
    auth: str
    caveat: str = ""  # empty when Wireshark decrypts and checks the ICV as the kernel does


def wireshark_form(entry: EspSaEntry) -> WiresharkForm:
    """The esp_sa algorithms for ``entry``; ``ValueError`` when Wireshark cannot decrypt it.

    An authentication Wireshark lacks is written as ``ANY n bit authentication [no
    checking]``: the packets still decrypt, the ICV is skipped unchecked.
    """
    enc = entry.wireshark_enc()
    try:
        auth = entry.wireshark_auth()
    except ValueError as exc:
        if entry.icv_bits not in ANY_NAMES:
            raise ValueError(
                f"{exc}; and it has no unchecked {entry.icv_bits}-bit authentication to "
                f"decrypt with (valid: {', '.join(map(str, ANY_NAMES))} bits)"
            ) from None
        auth = ANY_NAMES[entry.icv_bits]
        return WiresharkForm(
            enc,
            auth,
            f"Wireshark cannot check '{entry.auth}' truncated to {entry.icv_bits} bits; "
            f'written as "{auth}": the packets decrypt, the ICV is not checked',
        )
    if entry.esn and (auth != "NULL" or entry.enc == "rfc4106(gcm(aes))"):
        return WiresharkForm(
            enc,
            auth,
            "ESN: the esp_sa record has no ESN flag, so Wireshark leaves the high 32 "
            "sequence bits out of the ICV and reports every ICV as bad; the packets "
            "still decrypt",
        )
    return WiresharkForm(enc, auth)


def _hex(key: bytes) -> str:
    return "0x" + key.hex() if key else ""


def esp_sa_record(entry: EspSaEntry) -> str:
    """One CSV record of the ``esp_sa`` UAT (also what ``-o uat:esp_sa:`` takes)."""
    form = wireshark_form(entry)
    checked = form.auth != "NULL" and form.auth not in ANY_NAMES.values()
    fields = (
        entry.family,
        entry.src,
        entry.dst,
        f"0x{entry.spi:08x}",
        form.enc,
        _hex(entry.enc_key),
        form.auth,
        _hex(entry.auth_key) if checked else "",
    )
    return ",".join(f'"{f}"' for f in fields)


def esp_sa_file(entries: Iterable[EspSaEntry]) -> str:
    """The whole ``esp_sa`` file, to drop into a Wireshark profile directory."""
    header = "# This file is automatically generated, DO NOT MODIFY.\n"
    return header + "".join(esp_sa_record(e) + "\n" for e in entries)


def tshark_options(entries: Iterable[EspSaEntry]) -> list[str]:
    """The ``-o`` arguments that make tshark decrypt and check ICVs with these SAs."""
    args = [
        "-o",
        "esp.enable_encryption_decode:TRUE",
        "-o",
        "esp.enable_authentication_check:TRUE",
    ]
    for entry in entries:
        args += ["-o", f"uat:esp_sa:{esp_sa_record(entry)}"]
    return args


def tshark_command(pcap: str, entries: Sequence[EspSaEntry]) -> str:
    """A ready-to-paste shell command that decodes ``pcap`` with these SAs."""
    argv = ["tshark", "-r", pcap, *tshark_options(entries)]
    return " ".join(shlex.quote(a) for a in argv)
