"""The cost model against the seed table: af_xdp.md 4.3, 5 and facts 6.25-6.27."""

from __future__ import annotations

import dataclasses

import pytest

from esplab.model.kernel.xdp.consts import Benchmark, XskMode
from esplab.model.tools.xdp_costmodel import (
    KNOWN_BUGS,
    MODEL_LABEL,
    SEED_KPPS,
    CostModel,
    CostParams,
    line_rate_pps,
    seed_table,
)

MODES = (XskMode.SKB, XskMode.NATIVE, XskMode.ZEROCOPY)
MODEL = CostModel()


def kpps(bench: Benchmark, mode: XskMode, size: int) -> float:
    value = MODEL.predict(bench, mode, size).kpps
    assert value is not None
    return value


@pytest.mark.parametrize(
    ("size", "pps"),
    [(64, 1_488_095), (128, 844_595), (512, 234_962), (1500, 82_237), (1518, 81_274)],
)
def test_line_rate_table(size: int, pps: int) -> None:
    # 5: pps = 1e9 / ((L + 20) * 8), the 20 bytes being preamble, SFD and IFG.
    assert round(line_rate_pps(size)) == pps
    assert line_rate_pps(size, 10e9) == pytest.approx(10 * pps, abs=10)  # the 10 GbE column


@pytest.mark.parametrize("bench", list(Benchmark))
@pytest.mark.parametrize("mode", MODES)
def test_1500_bytes_is_line_rate(bench: Benchmark, mode: XskMode) -> None:
    # 4.3 and 5: every benchmark at 1500 B is line-limited at 82.24 Kpps (seed: 82).
    pred = MODEL.predict(bench, mode, 1500)
    assert pred.limited_by == "line"
    assert pred.kpps == pytest.approx(82.237, rel=0.02)


@pytest.mark.parametrize("bench", list(Benchmark))
def test_64_byte_ratios_match_the_seed(bench: Benchmark) -> None:
    # 4.3: rxdrop 322/491/845, txonly 390/394/723, l2fwd 205/257 (ZC is the bug cell).
    seed = dict(zip(MODES, SEED_KPPS[(bench, 64)], strict=True))
    modes = [m for m in MODES if (bench, m, 64) not in KNOWN_BUGS]
    for mode in modes:
        model_ratio = kpps(bench, mode, 64) / kpps(bench, XskMode.NATIVE, 64)
        seed_ratio = seed[mode] / seed[XskMode.NATIVE]
        assert model_ratio == pytest.approx(seed_ratio, rel=0.04)
        assert kpps(bench, mode, 64) == pytest.approx(seed[mode], rel=0.02)


def test_512_byte_l2fwd_row() -> None:
    # 4.3: l2fwd 512 B is 140/167/231; ZC is effectively line-limited (98 % of 235).
    seed = dict(zip(MODES, SEED_KPPS[(Benchmark.L2FWD, 512)], strict=True))
    for mode in MODES:
        assert kpps(Benchmark.L2FWD, mode, 512) == pytest.approx(seed[mode], rel=0.02)
        ratio = kpps(Benchmark.L2FWD, mode, 512) / kpps(Benchmark.L2FWD, XskMode.NATIVE, 512)
        assert ratio == pytest.approx(seed[mode] / seed[XskMode.NATIVE], rel=0.04)
    assert kpps(Benchmark.L2FWD, XskMode.ZEROCOPY, 512) >= 0.95 * line_rate_pps(512) / 1e3


def test_orderings() -> None:
    # 6.27: SKB < Native < ZC for rxdrop and txonly at 64 B; 6.26: txonly SKB and
    # native share the copy-mode sendto path, so the model gives them one cost.
    for bench in (Benchmark.RXDROP, Benchmark.TXONLY):
        skb, native, zc = (kpps(bench, m, 64) for m in MODES)
        assert skb <= native < zc
    assert kpps(Benchmark.RXDROP, XskMode.SKB, 64) < kpps(Benchmark.RXDROP, XskMode.NATIVE, 64)
    tx_skb = MODEL.predict(Benchmark.TXONLY, XskMode.SKB, 64)
    tx_native = MODEL.predict(Benchmark.TXONLY, XskMode.NATIVE, 64)
    assert (tx_skb.kernel_ns, tx_skb.app_ns) == (tx_native.kernel_ns, tx_native.app_ns)


def test_zero_copy_l2fwd_64_is_the_known_bug() -> None:
    # 4.4: the seed's 0 is a bug with no known cause; the model does not invent a number.
    pred = MODEL.predict(Benchmark.L2FWD, XskMode.ZEROCOPY, 64)
    assert pred.kpps is None and pred.ns_per_packet is None
    assert pred.limited_by == "bug" and "not reproduced / bug" in pred.status
    assert MODEL.predict(Benchmark.L2FWD, XskMode.ZEROCOPY, 128).kpps is not None


def test_seed_table_rows_are_labelled_model() -> None:
    rows = seed_table()
    assert len(rows) == 3 * len(SEED_KPPS)
    assert all(row.source == MODEL_LABEL for row in rows)
    bug = [row for row in rows if row.model_kpps is None]
    assert [(r.benchmark, r.frame_size, r.mode) for r in bug] == [
        (Benchmark.L2FWD, 64, XskMode.ZEROCOPY)
    ]
    assert bug[0].seed_kpps == 0 and bug[0].ratio is None
    assert all(row.status == MODEL_LABEL for row in rows if row.model_kpps is not None)
    assert all(r.ratio == pytest.approx(1.0, rel=0.02) for r in rows if r.ratio is not None)


def test_limits_name_the_busy_core() -> None:
    # txonly copy is bound by the application core (sendto runs there, 2.6).
    assert MODEL.predict(Benchmark.TXONLY, XskMode.NATIVE, 64).limited_by == "app"
    assert MODEL.predict(Benchmark.RXDROP, XskMode.ZEROCOPY, 64).limited_by == "kernel"


def test_same_core_adds_the_work() -> None:
    # Design choice "two-cores": one core adds kernel and application work.
    one = CostModel(same_core=True)
    pred = one.predict(Benchmark.RXDROP, XskMode.ZEROCOPY, 64)
    assert pred.ns_per_packet == pytest.approx(pred.kernel_ns + pred.app_ns)
    assert pred.kpps is not None and pred.kpps < kpps(Benchmark.RXDROP, XskMode.ZEROCOPY, 64)


def test_every_parameter_matters_and_is_positive() -> None:
    base = CostParams()
    for param in dataclasses.fields(CostParams):
        value = getattr(base, param.name)
        assert value > 0, param.name
        bumped = CostModel(dataclasses.replace(base, **{param.name: value * 3}))
        changed = any(
            bumped.stages(b, m, 512) != MODEL.stages(b, m, 512) for b in Benchmark for m in MODES
        )
        assert changed, param.name


def test_faster_link_lifts_the_1500_byte_cap() -> None:
    # 4.3: "a test on a higher speed link might be worthwhile".
    fast = CostModel(link_bps=10e9)
    assert fast.predict(Benchmark.RXDROP, XskMode.ZEROCOPY, 1500).limited_by == "kernel"
