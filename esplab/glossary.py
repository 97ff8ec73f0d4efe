"""The course's glossary: ``help glossary`` (and ``help glossary WORD``)."""

from __future__ import annotations

__all__ = ["GLOSSARY"]

#: Term -> what it means in esplab; the labs use these words.
GLOSSARY: dict[str, str] = {
    "journey": "Every stage one injected packet went through, in order, from the sender's "
    "stack to delivery or drop; 'trace ID' shows it, 'trace ID --svg FILE' draws it.",
    "stage": "One step of a journey at one tap: what the device decided, why, with a "
    "fidelity tag (C confirmed, D derived, U uncertain, M design).",
    "tap": "A named place a packet can be seen (ap.esp, wan.wire, host.xfrm, ...): "
    "'capture show TAP#N' dissects what passed there.",
    "SA": "Security association: one direction of protected traffic, found by "
    "destination, protocol and SPI; holds keys, algorithms, mode and the replay state.",
    "SPI": "Security parameters index: the 32-bit number in every ESP header that lets "
    "the receiver find the SA.",
    "SA record": "The 128-byte structure the EIP-93 driver writes in memory for an "
    "offloaded SA: command words, key, HMAC inner/outer hash state, SPI, sequence number "
    "('eip93 sa SPI').",
    "policy": "An SPD entry: which packets (selector) are protected by which SA "
    "(template), in a direction (out, in, fwd) and with a priority (lower wins).",
    "transport mode": "ESP protects what follows the original IP header; the header stays.",
    "tunnel mode": "ESP protects a whole inner IP packet behind a new outer header between "
    "the tunnel's ends; the trailer's next header is 4 (IPv4) or 41 (IPv6).",
    "crypto offload": "The kernel builds ESP (header, padding, trailer) and the engine only "
    "encrypts and computes the ICV ('offload dev DEV dir out').",
    "packet offload": "The engine does all of ESP, sequence numbers included; the policy "
    "must be offloaded to the same device ('offload packet dev DEV dir out').",
    "ICV": "Integrity check value: the truncated HMAC (or AEAD tag) at the end of an ESP "
    "packet; a changed byte or a wrong key makes it fail.",
    "IV": "Initialisation vector: the per-packet value in front of the ciphertext (16 "
    "bytes for AES-CBC, 8 for AES-GCM).",
    "replay window": "The receiver's record of recent sequence numbers: a number seen "
    "before or left of the window is dropped (XfrmInStateSeqError).",
    "ESN": "Extended sequence numbers: 64-bit counters of which only the low 32 bits are "
    "sent; the ICV covers all 64.",
    "NAT-T": "NAT traversal: ESP inside UDP port 4500 so NAT devices can rewrite it "
    "(encap espinudp 4500 4500).",
    "EIP-93": "The look-aside packet engine of the EN7581: descriptor rings, SA records, "
    "ESP and basic (hash/cipher) modes.",
    "DSA": "Distributed Switch Architecture: each switch port a netdev; frames leave "
    "through the conduit with a MediaTek special tag.",
    "checkpoint": "In step mode, the state a step expects: the earlier steps replayed with "
    "the reference answers into a fresh session ('reset', 'goto N', 'back').",
    "break-fix": "A lab that seeds a fault chosen from the seed and your name; you find "
    "it and repair it, and the lab checks the model.",
}
