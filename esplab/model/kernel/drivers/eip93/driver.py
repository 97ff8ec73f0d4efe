"""The Linux side of the EIP-93: offloaded SAs, flushes and the per-packet entry points.

:class:`EIP93Driver` is what the xfrm offload code of the JM series would call
(airoha-dsa-xfrm.md 3.3, 3.10): ``state_add``/``state_delete`` program SA records in
DMA memory, the per-packet methods build descriptors, hand them to the engine
through the CDR and map the results (eip93.md 1.5, 2.2) to what XFRM sees. Every
action returns journey stages in order: the driver's own on the tap
``eip93.driver``, the engine's on ``eip93.cdr``, ``eip93.sa``, ``eip93.state``,
``eip93.in``, ``eip93.out`` and ``eip93.rdr``.

Probe and the ring protocol (submit, poll, pause, resume) are in
:mod:`~esplab.model.kernel.drivers.eip93.rings`, which :class:`EIP93Driver` builds on.
The per-packet datapaths live in :mod:`~esplab.model.kernel.drivers.eip93.xmit` (crypto and
packet offload) and :mod:`~esplab.model.kernel.drivers.eip93.aead` (basic-mode ``authenc`` for
``sw+aead``); the methods here are their entry points.
"""

from __future__ import annotations

from typing import Any

from esplab.errors import NotFound
from esplab.layers.sa_record import SA_RECORD_SIZE, STATE_RECORD_SIZE
from esplab.model.hw.eip93.choices import DriverSettings
from esplab.model.hw.eip93.device import EIP93Device
from esplab.model.kernel.drivers.eip93 import aead, sa_add, xmit
from esplab.model.kernel.drivers.eip93.faults import faulty_outcome
from esplab.model.kernel.drivers.eip93.outcome import AeadTfm, OffloadedSA, Outcome, StateAdd
from esplab.model.kernel.drivers.eip93.rings import EIP93Rings
from esplab.model.stage import Stage

__all__ = ["EIP93Driver"]


class EIP93Driver(EIP93Rings):
    """The EIP-93 driver on the EN7581, with its device: the rings of
    :class:`~esplab.model.kernel.drivers.eip93.rings.EIP93Rings`, the offloaded SAs and
    the ``sw+aead`` transforms.

    ``probe`` runs the init sequence and sets up the rings (eip93.md 6.2); the lab
    gets a probed driver from :func:`esplab.model.kernel.drivers.eip93.new_eip93`.
    """

    def __init__(
        self, device: EIP93Device, settings: DriverSettings | None = None, seed: int = 0
    ) -> None:
        super().__init__(device, settings, seed)

    # --- offloaded SAs -------------------------------------------------------------

    def state_add(self, **kwargs: Any) -> StateAdd:
        """``xdo_dev_state_add`` for an ESP SA; see
        :func:`~esplab.model.kernel.drivers.eip93.sa_add.state_add`."""
        return sa_add.state_add(self, **kwargs)

    def lookup(self, spi: int, direction: str | None = None) -> OffloadedSA:
        """The offloaded SA with this SPI (and direction); NotFound lists the SPIs."""
        for key in ((spi, direction),) if direction else ((spi, "out"), (spi, "in")):
            sa = self.sas.get(key)
            if sa is not None:
                return sa
        valid = [f"{s.spi:#x} ({s.direction})" for s in self.sas.values()]
        raise NotFound(
            f"no offloaded SA with SPI {spi:#x}" + (f" ({direction})" if direction else ""),
            valid=valid,
        )

    def state_delete(self, sa: OffloadedSA) -> list[Stage]:
        """``xdo_dev_state_delete`` + ``_free``: forget the SA and release its records."""
        if self.sas.get(sa.key) is not sa:
            raise NotFound(
                f"SA {sa.spi:#x} ({sa.direction}) is not offloaded",
                valid=[f"{s.spi:#x} ({s.direction})" for s in self.sas.values()],
            )
        del self.sas[sa.key]
        self._release(sa)
        return [
            self.stage(
                f"xdo_dev_state_delete({sa.dev}, spi {sa.spi:#x}): SA record at {sa.sa_addr:#010x} "
                "freed",
                "the driver stops using the SA and frees its records (airoha-dsa-xfrm.md 3.3)",
                "D",
            )
        ]

    def reset(self) -> tuple[list[OffloadedSA], list[Stage]]:
        """Reset the engine: in-flight work is lost, the rings are set up again and every
        offloaded SA is flushed. Returns the flushed SAs and the stages."""
        lost = len(self._inflight)
        flushed, stages = self.flush("an EIP-93 reset")
        stages += self.probe()
        if lost:
            stages.append(
                self.stage(
                    f"{lost} descriptor(s) in flight were lost in the reset",
                    "a ring reset clears the engine's counts (eip93.md 6.1)",
                )
            )
        return flushed, stages

    # --- datapaths (see xmit.py and aead.py) -----------------------------------------

    def check_iv(self, sa: OffloadedSA, iv: bytes | None) -> None:
        """A pinned IV for ``sa``'s TX must fit its cipher; see
        :func:`~esplab.model.kernel.drivers.eip93.xmit.check_iv` (callers check before they
        count)."""
        xmit.check_iv(sa, iv)

    def crypto_tx(
        self,
        sa: OffloadedSA,
        skb: bytes,
        *,
        proto: int,
        esp_offset: int | None = None,
        iv: bytes | None = None,
    ) -> Outcome:
        """Crypto offload TX; see :func:`~esplab.model.kernel.drivers.eip93.xmit.esp_tx`."""
        outcome = xmit.esp_tx(self, sa, skb, "crypto", proto=proto, esp_offset=esp_offset, iv=iv)
        return faulty_outcome(self, sa, outcome) if sa.faults else outcome

    def packet_tx(
        self,
        sa: OffloadedSA,
        skb: bytes,
        *,
        proto: int,
        esp_offset: int | None = None,
        iv: bytes | None = None,
    ) -> Outcome:
        """Packet offload TX; see :func:`~esplab.model.kernel.drivers.eip93.xmit.esp_tx`."""
        outcome = xmit.esp_tx(self, sa, skb, "packet", proto=proto, esp_offset=esp_offset, iv=iv)
        return faulty_outcome(self, sa, outcome) if sa.faults else outcome

    def rx(self, skb: bytes, *, dev: str = "wan", esp_offset: int | None = None) -> Outcome | None:
        """Crypto or packet offload RX; see
        :func:`~esplab.model.kernel.drivers.eip93.xmit.esp_rx`."""
        return xmit.esp_rx(self, skb, dev=dev, esp_offset=esp_offset)

    def aead_setkey(self, **kwargs: Any) -> AeadTfm:
        """An ``authenc`` transform keyed on the engine; see :func:`~.aead.setkey`."""
        return aead.setkey(self, **kwargs)

    def aead_free(self, tfm: AeadTfm) -> None:
        """``crypto_free_aead``: the driver's ``cra_exit`` unmaps and frees the
        transform's records (eip93-aead.c); a transform already freed is left alone."""
        if self.tfms.get(tfm.handle) is tfm:
            del self.tfms[tfm.handle]
            self._free_records(
                (tfm.sa_out, SA_RECORD_SIZE),
                (tfm.sa_in, SA_RECORD_SIZE),
                (tfm.state, STATE_RECORD_SIZE),
            )

    def aead_encrypt(self, tfm: AeadTfm, assoc: bytes, iv: bytes, plain: bytes) -> Outcome:
        """``crypto_aead_encrypt``; see :func:`~esplab.model.kernel.drivers.eip93.aead.encrypt`."""
        return aead.encrypt(self, tfm, assoc, iv, plain)

    def aead_decrypt(self, tfm: AeadTfm, assoc: bytes, iv: bytes, sealed: bytes) -> Outcome:
        """``crypto_aead_decrypt``; see :func:`~esplab.model.kernel.drivers.eip93.aead.decrypt`."""
        return aead.decrypt(self, tfm, assoc, iv, sealed)

    def sw_aead_tx(
        self,
        tfm: AeadTfm,
        skb: bytes,
        *,
        proto: int,
        esp_offset: int | None = None,
        iv: bytes | None = None,
    ) -> Outcome:
        """The ``sw+aead`` datapath's TX; see
        :func:`~esplab.model.kernel.drivers.eip93.aead.esp_output`."""
        return aead.esp_output(self, tfm, skb, proto=proto, esp_offset=esp_offset, iv=iv)

    def sw_aead_rx(self, tfm: AeadTfm, skb: bytes, *, esp_offset: int | None = None) -> Outcome:
        """The ``sw+aead`` datapath's RX; see
        :func:`~esplab.model.kernel.drivers.eip93.aead.esp_input`."""
        return aead.esp_input(self, tfm, skb, esp_offset=esp_offset)
