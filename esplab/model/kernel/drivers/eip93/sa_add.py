"""ESP offload on the EIP-93: SA programming.

``state_add`` is the JM series' ``xdo_dev_state_add`` (airoha-dsa-xfrm.md 3.10): it
refuses with EOPNOTSUPP what the engine or the driver cannot do, and otherwise
programs the vschagen SA record (eip93.md 4.1) at a DMA address.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from esplab.layers.hashstate import hmac_pad_blocks
from esplab.layers.sa_record import ESP_AUTH_ALGOS, ESP_CRYPT_ALGOS, SA_RECORD_SIZE, EIP93SARecord
from esplab.model.hw.eip93.regs import OPTION_1
from esplab.model.kernel.drivers.eip93.outcome import OffloadedSA, StateAdd
from esplab.model.kernel.xfrm.algos import algorithm

if TYPE_CHECKING:
    from esplab.model.kernel.drivers.eip93.rings import EIP93Rings

__all__ = ["AUTH_ALGOS", "ENC_ALGOS", "ESN_NOT_OFFLOADED_WHY", "state_add"]

#: What the engine offloads, by kernel name, with the OPTION_1 bit each needs (the
#: names, key sizes and Scapy names are the kernel table's: esplab.model.kernel.xfrm.algos).
ENC_ALGOS = {
    "cbc(aes)": 2,
    "rfc3686(ctr(aes))": 2,
    "cbc(des3_ede)": 0,
    "cbc(des)": 0,
    "ecb(cipher_null)": None,
}
AUTH_ALGOS = {"hmac(md5)": 16, "hmac(sha1)": 17, "hmac(sha256)": 19}
_AES_KEY_BITS = {24: 14, 32: 15}  # OPTION_1 bits for AES-192/256 (13 is AES-128)


def _refuse(
    drv: EIP93Rings,
    errno: str,
    what: str,
    dev: str,
    spi: int,
    why: str = "the JM series refuses what the EIP-93 backend cannot offload; crypto "
    "offload then stays in software (airoha-dsa-xfrm.md 3.3, 3.10)",
    fidelity: str = "C",
) -> StateAdd:
    stage = drv.stage(
        f"xdo_dev_state_add({dev}, spi {spi:#x}): {errno} ({what})", why, fidelity, errno=errno
    )
    return StateAdd(errno, what, None, [stage])


#: Why an ESN SA is not offloaded, though the series would take it.
ESN_NOT_OFFLOADED_WHY = (
    "the JM series takes ESN SAs: patch 3's airoha_xfrmdev_ops sets "
    "xdo_dev_state_advance_esn (airoha_xfrm.c), and patch 2's "
    "eip93_ipsec_init_sa_record programs sa_seqnum[1] from replay_esn seq_hi (in) / "
    "oseq_hi (out) with sa_seqmum_mask[1] (the struct's spelling) 0xffffffff, and "
    "eip93_ipsec_state_advance_esn rewrites it (eip93-ipsec.c) [C, the patches; "
    "airoha-dsa-xfrm.md 3.10 does not mention ESN, and eip93.md 3.1 has drivers write "
    "0 there, as the mainline and vschagen ones do]; it sets no ESN command bit, and "
    "whether the EN7581's EIP-93 hashes sa_seqnum[1] into the ICV is not known "
    "(OPTION_0 bit 15, ESN, is clear on the board readout; eip93.md 1.1, 6.1) "
    "[U]. The engine model ignores sa_seqnum[1] (choice esn-ignored), so its ICVs would "
    "fail at an ESN peer: the model's backend declines the SA instead and crypto "
    "offload stays in software (airoha-dsa-xfrm.md 3.3) [M]"
)


def state_add(
    drv: EIP93Rings,
    *,
    dev: str = "wan",
    direction: str,
    spi: int,
    mode: str = "transport",
    enc: str | None = None,
    enc_key: bytes = b"",
    auth: str | None = None,
    auth_key: bytes = b"",
    auth_trunc_bits: int | None = None,
    aead: str | None = None,
    offload: str = "crypto",
    family: int = 4,
    encap: bool = False,
    esn: bool = False,
    tfcpad: int = 0,
) -> StateAdd:
    """Offload one ESP SA given kernel-style parameters (``ip xfrm state add ... offload``).

    Algorithms are kernel names (``cbc(aes)``, ``rfc3686(ctr(aes))``, ``cbc(des3_ede)``,
    ``cbc(des)``, ``ecb(cipher_null)``; ``hmac(md5|sha1|sha256)``); keys as the kernel
    holds them (RFC 3686: key + 4-byte nonce); ``auth_trunc_bits`` the ICV truncation
    (kernel default 96). Refusals come back as ``errno`` "EOPNOTSUPP" (crypto offload
    then stays in software), "EINVAL" for a key the cipher rejects, "EEXIST" for an
    SPI and direction already offloaded.
    """

    def refuse(errno: str, what: str) -> StateAdd:
        return _refuse(drv, errno, what, dev, spi)

    if not drv.probed:
        return refuse("EOPNOTSUPP", "the EIP-93 backend is not present")
    if offload not in ("crypto", "packet"):
        return refuse("EOPNOTSUPP", f"offload type {offload!r}; valid: crypto, packet")
    if direction not in ("in", "out"):
        return refuse("EOPNOTSUPP", f"direction {direction!r}; valid: in, out")
    if family not in (4, 6):
        return refuse("EOPNOTSUPP", f"address family {family}; valid: 4, 6")
    if mode not in ("transport", "tunnel"):
        return refuse("EOPNOTSUPP", f"mode {mode}; valid: transport, tunnel")
    if encap:
        return refuse("EOPNOTSUPP", "NAT-T (UDP encapsulation) is not offloaded")
    if tfcpad:
        return refuse("EOPNOTSUPP", "TFC padding is not offloaded")
    if aead is not None:
        return refuse("EOPNOTSUPP", f"AEAD {aead} is not offloaded: the EIP-93 has no GCM")
    if enc is None or auth is None:
        return refuse("EOPNOTSUPP", "the SA needs both an encryption and an auth algorithm")
    if esn:
        return _refuse(
            drv,
            "EOPNOTSUPP",
            "ESN is not offloaded: the modelled engine ignores sa_seqnum[1]",
            dev,
            spi,
            ESN_NOT_OFFLOADED_WHY,
            "M",
        )
    option1 = drv.device.read_reg(OPTION_1)
    if enc not in ENC_ALGOS:
        return refuse("EOPNOTSUPP", f"encryption {enc}; valid: {', '.join(ENC_ALGOS)}")
    if auth not in AUTH_ALGOS:
        return refuse("EOPNOTSUPP", f"auth {auth}; valid: {', '.join(AUTH_ALGOS)}")
    enc_info, auth_info = algorithm(enc), algorithm(auth)
    crypt_name, auth_name = enc_info.scapy[0][1], auth_info.scapy[0][1]
    enc_bit, auth_bit = ENC_ALGOS[enc], AUTH_ALGOS[auth]
    aes_bit = _AES_KEY_BITS.get(len(enc_key) - enc_info.salt_bytes)
    for bit in (enc_bit, auth_bit, aes_bit if enc_bit == 2 else None):
        if bit is not None and not option1 >> bit & 1:
            return refuse("EOPNOTSUPP", f"OPTION_1 bit {bit} is clear: this engine lacks it")
    bits = auth_info.default_icv_bits if auth_trunc_bits is None else auth_trunc_bits
    digest_bits = auth_info.full_bits
    if bits % 32 or not 32 <= bits <= digest_bits:
        return refuse(
            "EOPNOTSUPP",
            f"ICV of {bits} bits; the engine counts ICVs in words: "
            f"valid: 32, 64, ... {digest_bits}",
        )
    if (spi, direction) in drv.sas:
        return refuse("EEXIST", f"SPI {spi:#x} {direction} is offloaded already")
    recipe: dict[str, Any] = {
        "direction": direction,
        "spi": spi,
        "crypt_algo": crypt_name,
        "crypt_key": enc_key,
        "auth_algo": auth_name,
        "auth_key": auth_key,
        "icv_size": bits // 8,
        "mode": mode,
    }
    try:
        record = EIP93SARecord.for_esp(**recipe)
    except ValueError as exc:
        return refuse("EINVAL", str(exc))
    memory = drv.memory
    sa_addr = memory.allocate(
        SA_RECORD_SIZE, label=f"SA {spi:#x} {direction}", pool="sa", align=128
    )
    raw = bytes(record)
    alg = ESP_AUTH_ALGOS[auth_name].algorithm
    drv.device.engine.learn_hmac_blocks(alg, *hmac_pad_blocks(alg, auth_key))
    memory.write(sa_addr, raw)
    state_addr = 0
    if drv.settings.esp_state_record:  # [M] esp-state-record
        state_addr = memory.allocate(56, label=f"state {spi:#x} {direction}", pool="state")
    sa = OffloadedSA(
        handle=drv.new_handle(),
        dev=dev,
        direction="in" if direction == "in" else "out",
        spi=spi,
        mode=mode,
        family=family,
        offload="packet" if offload == "packet" else "crypto",
        enc=enc,
        auth=auth,
        icv_bits=bits,
        sa_addr=sa_addr,
        state_addr=state_addr,
        iv_size=ESP_CRYPT_ALGOS[crypt_name].iv_size,
        recipe=recipe,
    )
    drv.sas[sa.key] = sa
    stage = drv.stage(
        f"xdo_dev_state_add({dev}, spi {spi:#x}): SA record at {sa_addr:#010x}",
        f"{direction}bound {mode} {offload} offload, {enc} + {auth}/{bits}: sa_cmd0 "
        f"{record.sa_cmd0:#010x}, sa_cmd1 {record.sa_cmd1:#010x} as the vschagen ESP offload "
        "programs them (eip93.md 4.1)",
        "D",
        data=raw,
        kind="sa",
        handle=sa.handle,
    )
    return StateAdd(None, "offloaded", sa, [stage])
