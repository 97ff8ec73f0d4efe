"""The differential suite's scenarios: each a list of esplab command lines.

Every scenario runs twice (esplab.peer.check.run_scenario): with the emulated host,
and with a real Linux kernel as the host. Lines starting with ``host`` go to the
host; the rest configure the ap and send through it.
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["CASES", "Case"]

Case = tuple[str, list[str]]

A1 = "192.0.2.1"
A2 = "192.0.2.2"
B1 = "2001:db8:2::1"
B2 = "2001:db8:2::2"


def _key(n: int, seed: int) -> str:
    return "0x" + bytes((seed + i * 7) & 0xFF for i in range(n)).hex()


# (name, the algorithm words of ip xfrm state add): what the EIP-93ies offloads...
ENGINE_ALGOS = [
    (f"{enc}-{auth}", f"auth {auth} {_key(alen, 1)} enc {encname} {_key(elen, 2)}")
    for enc, encname, elen in (
        ("aes128", "aes", 16),
        ("aes192", "aes", 24),
        ("aes256", "aes", 32),
        ("3des", "des3_ede", 24),
        ("ctr128", "'rfc3686(ctr(aes))'", 20),
    )
    for auth, alen in (("md5", 16), ("sha1", 20), ("sha256", 32))
]
# ...and what only the kernel's software crypto does.
SOFTWARE_ALGOS = [
    ("gcm128", f"aead 'rfc4106(gcm(aes))' {_key(20, 3)} 128"),
    ("gcm256", f"aead 'rfc4106(gcm(aes))' {_key(36, 4)} 128"),
    ("aes128-sha384", f"auth 'hmac(sha384)' {_key(48, 5)} enc aes {_key(16, 6)}"),
    ("aes128-sha512", f"auth 'hmac(sha512)' {_key(64, 7)} enc aes {_key(16, 8)}"),
]
DEFAULT_ALGO = ENGINE_ALGOS[1][1]  # aes128 + sha1


def _udp(v6: bool, src: str | None = None, dst: str | None = None, size: int = 64) -> str:
    ip = "IPv6" if v6 else "IP"
    fields = ", ".join(
        f'{k}="{v}"' for k, v in (("src", src), ("dst", dst or (B2 if v6 else A2))) if v
    )
    return f'{ip}({fields})/UDP(sport=1234,dport=5201)/Raw(b"x"*{size})'


def _pair(
    algo: str,
    *,
    v6: bool = False,
    tunnel: bool = False,
    datapath: str = "sw",
    spi: str = "0x1000",
    host_extra: str = "",
    ap_extra: str = "",
    host_spi: str | None = None,
) -> list[str]:
    """An SA from the ap to the host on both, and the ap's policy for it."""
    a, b = (B1, B2) if v6 else (A1, A2)
    mode = "tunnel" if tunnel else "transport"
    state = f"src {a} dst {b} proto esp spi {{spi}} reqid 1 mode {mode} {algo}"
    offload = {
        "sw": "",
        "sw+aead": "",
        "crypto": " offload dev wan dir out",
        "packet": " offload packet dev wan dir out",
    }[datapath]
    pol_offload = " offload packet dev wan" if datapath == "packet" else ""
    if tunnel:
        sel = (
            "src 2001:db8:1::/48 dst 2001:db8:3::/64"
            if v6
            else "src 198.51.100.0/24 dst 203.0.113.0/24"
        )
    else:
        sel = f"src {a}/{128 if v6 else 32} dst {b}/{128 if v6 else 32}"
    lines = [f"host ip xfrm state add {state.format(spi=host_spi or spi)}{host_extra}"]
    if datapath == "sw+aead":
        lines.append("set crypto-provider eip93")
    lines += [
        f"ip xfrm state add {state.format(spi=spi)}{ap_extra}{offload}",
        f"ip xfrm policy add {sel} dir out tmpl src {a} dst {b} proto esp reqid 1 "
        f"mode {mode}{pol_offload}",
    ]
    return lines


def _send(v6: bool, tunnel: bool, size: int = 64, pins: str = "") -> str:
    if tunnel:
        src, dst = ("2001:db8:1:1::1", "2001:db8:3::1") if v6 else ("198.51.100.1", "203.0.113.1")
        return f"send ap wan {_udp(v6, src, dst, size)}{pins}"
    return f"send ap wan {_udp(v6, size=size)}{pins}"


def _interop() -> Iterator[Case]:
    for datapath in ("sw", "sw+aead", "crypto", "packet"):
        for name, algo in ENGINE_ALGOS:
            for v6 in (False, True):
                for tunnel in (False, True):
                    tag = f"tx-{datapath}-{name}-{'v6' if v6 else 'v4'}-{'tun' if tunnel else 'tr'}"
                    yield (
                        tag,
                        [
                            *_pair(algo, v6=v6, tunnel=tunnel, datapath=datapath),
                            _send(v6, tunnel),
                            _send(v6, tunnel, 200),
                        ],
                    )
    for name, algo in SOFTWARE_ALGOS:
        for v6 in (False, True):
            for tunnel in (False, True):
                tag = f"tx-sw-{name}-{'v6' if v6 else 'v4'}-{'tun' if tunnel else 'tr'}"
                yield tag, [*_pair(algo, v6=v6, tunnel=tunnel), _send(v6, tunnel)]


def _rx() -> Iterator[Case]:
    """The kernel sends (a real ping through its SA), esplab's ap decrypts and counts."""
    algos = [ENGINE_ALGOS[i] for i in (1, 5, 9, 13)] + [SOFTWARE_ALGOS[0]]
    for datapath in ("sw", "crypto", "packet"):
        for name, algo in algos:
            if datapath != "sw" and name.startswith("gcm"):
                continue
            for v6 in (False, True):
                a, b = (B1, B2) if v6 else (A1, A2)
                bits = 128 if v6 else 32
                state = f"src {b} dst {a} proto esp spi 0x2000 reqid 2 mode transport {algo}"
                offload = {
                    "sw": "",
                    "crypto": " offload dev wan dir in",
                    "packet": " offload packet dev wan dir in",
                }[datapath]
                yield (
                    f"rx-{datapath}-{name}-{'v6' if v6 else 'v4'}",
                    [
                        f"host ip xfrm state add {state}",
                        f"host ip xfrm policy add src {b}/{bits} dst {a}/{bits} dir out "
                        f"tmpl src {b} dst {a} proto esp reqid 2 mode transport",
                        f"ip xfrm state add {state}{offload}",
                        f"host ping -c 2 {a}",
                    ],
                )


def _padding() -> Iterator[Case]:
    for size in range(0, 18):
        yield f"pad-cbc-{size}", [*_pair(DEFAULT_ALGO), _send(False, False, size)]
    for size in (0, 1, 3, 4, 5, 15, 16):
        algo = SOFTWARE_ALGOS[0][1]
        yield f"pad-gcm-{size}", [*_pair(algo), _send(False, False, size)]
    for size in (0, 7, 8, 9):
        algo = ENGINE_ALGOS[9][1]  # 3des + sha1: 8-byte blocks
        yield (
            f"pad-3des-crypto-{size}",
            [
                *_pair(algo, datapath="crypto"),
                _send(False, False, size),
            ],
        )


def _natt() -> Iterator[Case]:
    encap = " encap espinudp 4500 4500 0.0.0.0"
    for datapath in ("sw", "crypto"):
        for tunnel in (False, True):
            tag = f"natt-{datapath}-{'tun' if tunnel else 'tr'}"
            yield (
                tag,
                [
                    *_pair(
                        DEFAULT_ALGO,
                        tunnel=tunnel,
                        datapath=datapath,
                        host_extra=encap,
                        ap_extra=encap,
                    ),
                    _send(False, tunnel),
                ],
            )


def _bad_packets() -> Iterator[Case]:
    yield "bad-unknown-spi", [*_pair(DEFAULT_ALGO, host_spi="0x2000"), _send(False, False)]
    wrong = DEFAULT_ALGO.replace(_key(20, 1), _key(20, 9))
    yield (
        "bad-icv-wrong-key",
        [
            f"host ip xfrm state add src {A1} dst {A2} proto esp spi 0x1000 reqid 1 "
            f"mode transport {wrong}",
            *_pair(DEFAULT_ALGO)[1:],
            _send(False, False),
        ],
    )
    yield (
        "bad-icv-swapped-digest",
        [
            *_pair(DEFAULT_ALGO, datapath="crypto"),
            "eip93 swap-digest 0x1000",
            _send(False, False),
        ],
    )
    window = " replay-window 32"
    yield (
        "bad-replayed",
        [
            *_pair(DEFAULT_ALGO, host_extra=window),
            _send(False, False, pins=" seq 5"),
            _send(False, False, pins=" seq 5"),
        ],
    )
    yield (
        "bad-outside-window",
        [
            *_pair(DEFAULT_ALGO, host_extra=window),
            _send(False, False, pins=" seq 100"),
            _send(False, False, pins=" seq 5"),
            _send(False, False, pins=" seq 69"),
            _send(False, False, pins=" seq 68"),
        ],
    )
    yield (
        "bad-no-window-replays-pass",
        [
            *_pair(DEFAULT_ALGO),
            _send(False, False, pins=" seq 5"),
            _send(False, False, pins=" seq 5"),
        ],
    )
    host_state = _pair(DEFAULT_ALGO)[0]
    for size in (0, 4, 8, 12, 16, 24, 28, 32, 40, 44):
        # SPI 0x1000, sequence 1, then zeros: an ESP packet cut to ``size`` bytes.
        body = (bytes.fromhex("0000100000000001") + bytes(max(size - 8, 0)))[:size]
        escaped = "".join(f"\\x{b:02x}" for b in body)
        yield (
            f"bad-truncated-{size}",
            [
                host_state,
                f'send ap wan IP(dst="{A2}",proto=50)/Raw(b"{escaped}")',
            ],
        )
    yield (
        "bad-no-state-for-proto",
        [f'send ap wan IP(dst="{A2}",proto=50)/Raw(b"\\x00\\x00\\x30\\x00" + b"\\x00"*60)'],
    )


def _lifetimes() -> Iterator[Case]:
    for extra, count in (
        (" limit packet-hard 3", 5),
        (" limit packet-soft 2", 4),
        (" limit packet-soft 2 limit packet-hard 4", 6),
        (" limit byte-hard 200", 4),
        (" limit byte-soft 100", 3),
    ):
        name = extra.strip().replace(" ", "-")
        yield (
            f"life-host-{name}",
            [
                *_pair(DEFAULT_ALGO, host_extra=extra),
                *[_send(False, False)] * count,
            ],
        )
    for extra, count in ((" limit packet-hard 2", 4), (" limit byte-hard 150", 3)):
        name = extra.strip().replace(" ", "-")
        yield (
            f"life-ap-{name}",
            [
                *_pair(DEFAULT_ALGO, ap_extra=extra),
                *[_send(False, False)] * count,
            ],
        )
    yield (
        "seq-wrap-no-esn",
        [
            *_pair(DEFAULT_ALGO, host_extra=" replay-window 32"),
            _send(False, False, pins=" seq 0xfffffffe"),
            _send(False, False, pins=" seq 0xffffffff"),
        ],
    )
    # ESN across 2^32: the high half is inferred at the receiver (xfrm_replay_seqhi),
    # from a fresh window and from one already past 2^32 - 2.
    esn_pair = _pair(
        DEFAULT_ALGO, host_extra=" flag esn replay-window 32", ap_extra=" flag esn dir out"
    )
    yield (
        "esn-wrap-fresh",
        [
            *esn_pair,
            *(
                _send(False, False, pins=f" seq {n:#x}")
                for n in (0xFFFFFFFE, 0xFFFFFFFF, 0x100000000, 0x100000001)
            ),
        ],
    )
    yield (
        "esn-wrap-running",
        [
            *esn_pair,
            *(
                _send(False, False, pins=f" seq {n:#x}")
                for n in (1, 40, 0xFFFFFFF0, 0xFFFFFFFF, 0x100000001, 0x100000002)
            ),
        ],
    )
    for datapath in ("sw", "crypto", "packet"):
        yield (
            f"esn-{datapath}",
            [
                *_pair(
                    DEFAULT_ALGO,
                    datapath=datapath,
                    host_extra=" flag esn replay-window 32",
                    ap_extra=" flag esn" + ("" if datapath != "sw" else " dir out"),
                ),
                _send(False, False),
                _send(False, False),
            ],
        )


_STATE = f"src {A1} dst {A2} proto esp spi 0x3000 reqid 3 mode transport {DEFAULT_ALGO}"
_ID = f"src {A1} dst {A2} proto esp spi 0x3000"


def _control() -> Iterator[Case]:
    adds = {
        "plain": "",
        "sel": " sel src 192.0.2.1/32 dst 192.0.2.2/32 proto udp dport 5201",
        "sel6-on-v4": " sel src 2001:db8::1/128 dst 2001:db8::2/128",
        "mark": " mark 7",
        "mark-mask": " mark 7 mask 3",
        "if_id": " if_id 5",
        "replay-window": " replay-window 64",
        "esn": " flag esn replay-window 64",
        "esn-no-window": " flag esn",
        "esn-dir-out": " flag esn dir out",
        "nopmtudisc": " flag nopmtudisc",
        "align4": " flag align4",
        "noecn": " flag noecn",
        "decap-dscp": " flag decap-dscp",
        "dir-in": " dir in",
        "dir-out": " dir out",
        "replay-oseq-in": " dir in replay-oseq 5",
        "replay-oseq-out": " dir out replay-oseq 5",
        "replay-seq-out": " dir out replay-seq 5",
        "lifetimes": " limit time-soft 100 limit time-hard 200 limit packet-hard 1000",
        "tfcpad": " tfcpad 300",
        "encap": " encap espinudp 4500 4500 0.0.0.0",
        "ctx-none": " flag wildrecv",
        "output-mark": " output-mark 9",
        "mark-output-mark": " mark 7 output-mark 9 mask 0xff",
    }
    for name, extra in adds.items():
        yield (
            f"cp-state-add-{name}",
            [
                f"host ip xfrm state add {_STATE}{extra}",
                "host ip xfrm state list",
            ],
        )
    bad = {
        "short-auth-key": f"auth sha1 {_key(19, 1)} enc aes {_key(16, 2)}",
        "short-enc-key": f"auth sha1 {_key(20, 1)} enc aes {_key(15, 2)}",
        "des3-short": f"auth sha1 {_key(20, 1)} enc des3_ede {_key(16, 2)}",
        "unknown-enc": f"auth sha1 {_key(20, 1)} enc foo {_key(16, 2)}",
        "unknown-auth": f"auth blake {_key(20, 1)} enc aes {_key(16, 2)}",
        # xfrm_algo.c gives hmac(sha384) and hmac(sha512) no short name (no .compat)
        "sha384-short-name": f"auth sha384 {_key(48, 1)} enc aes {_key(16, 2)}",
        "sha512-short-name": f"auth sha512 {_key(64, 1)} enc aes {_key(16, 2)}",
        "md5-long-name": f"auth 'hmac(md5)' {_key(16, 1)} enc 'cbc(aes)' {_key(16, 2)}",
        "des-short-name": f"auth sha1 {_key(20, 1)} enc des {_key(8, 2)}",
        "gcm-bad-icv": f"aead 'rfc4106(gcm(aes))' {_key(20, 3)} 72",
        "gcm-short-key": f"aead 'rfc4106(gcm(aes))' {_key(16, 3)} 128",
        "trunc-too-long": f"auth-trunc 'hmac(sha1)' {_key(20, 1)} 200 enc aes {_key(16, 2)}",
        "trunc-96": f"auth-trunc 'hmac(sha256)' {_key(32, 1)} 96 enc aes {_key(16, 2)}",
        "trunc-128": f"auth-trunc 'hmac(sha256)' {_key(32, 1)} 128 enc aes {_key(16, 2)}",
        "no-auth": f"enc aes {_key(16, 2)}",
        "null-enc": f"auth sha1 {_key(20, 1)} enc 'ecb(cipher_null)' ''",
    }
    for name, algo in bad.items():
        yield (
            f"cp-state-algo-{name}",
            [
                f"host ip xfrm state add src {A1} dst {A2} proto esp spi 0x3000 reqid 3 "
                f"mode transport {algo}",
                "host ip xfrm state list",
            ],
        )
    yield "cp-state-duplicate", [f"host ip xfrm state add {_STATE}"] * 2
    yield (
        "cp-state-update",
        [
            f"host ip xfrm state add {_STATE}",
            f"host ip xfrm state update {_STATE} replay-window 32",
            "host ip xfrm state list",
        ],
    )
    yield "cp-state-update-missing", [f"host ip xfrm state update {_STATE}"]
    yield "cp-state-get", [f"host ip xfrm state add {_STATE}", f"host ip xfrm state get {_ID}"]
    yield "cp-state-get-missing", [f"host ip xfrm state get {_ID}"]
    yield (
        "cp-state-delete",
        [
            f"host ip xfrm state add {_STATE}",
            f"host ip xfrm state delete {_ID}",
            "host ip xfrm state count",
        ],
    )
    yield "cp-state-delete-missing", [f"host ip xfrm state delete {_ID}"]
    yield (
        "cp-state-count",
        [
            f"host ip xfrm state add {_STATE}",
            f"host ip xfrm state add {_STATE.replace('0x3000', '0x3001')}",
            "host ip xfrm state count",
        ],
    )
    yield (
        "cp-state-deleteall",
        [
            f"host ip xfrm state add {_STATE}",
            f"host ip xfrm state add {_STATE.replace('0x3000', '0x3001')}",
            f"host ip xfrm state deleteall src {A1}",
            "host ip xfrm state count",
        ],
    )
    yield (
        "cp-state-flush",
        [
            f"host ip xfrm state add {_STATE}",
            "host ip xfrm state flush",
            "host ip xfrm state count",
        ],
    )
    yield (
        "cp-state-spi-zero",
        [
            f"host ip xfrm state add {_STATE.replace('spi 0x3000', 'spi 0')}",
            "host ip xfrm state list",
        ],
    )
    yield (
        "cp-state-comp-big-spi",
        [
            f"host ip xfrm state add src {A1} dst {A2} proto comp spi 0x10000 comp deflate",
        ],
    )
    yield (
        "cp-state-v6",
        [
            f"host ip xfrm state add src {B1} dst {B2} proto esp spi 0x3000 reqid 3 "
            f"mode tunnel {DEFAULT_ALGO}",
            "host ip xfrm state list",
        ],
    )
    yield (
        "cp-state-tunnel-v4-in-v6-sel",
        [
            f"host ip xfrm state add src {B1} dst {B2} proto esp spi 0x3000 reqid 3 "
            f"mode tunnel {DEFAULT_ALGO} sel src 10.0.0.0/8 dst 10.1.0.0/16",
            "host ip xfrm state list",
        ],
    )
    pol = f"src {A1}/32 dst {A2}/32"
    tmpl = f"tmpl src {A1} dst {A2} proto esp reqid 3 mode transport"
    policies = {
        "out": f"{pol} dir out {tmpl}",
        "in": f"{pol} dir in {tmpl}",
        "fwd": f"{pol} dir fwd {tmpl}",
        "priority": f"{pol} dir out priority 100 {tmpl}",
        "index-out": f"{pol} dir out index 9 {tmpl}",
        "index-in": f"{pol} dir in index 8 {tmpl}",
        "block": f"{pol} dir out action block",
        "allow": f"{pol} dir out action allow",
        "proto-port": f"{pol} proto udp dport 5201 dir out {tmpl}",
        "icmp-type": f"{pol} proto icmp type 8 code 0 dir out {tmpl}",
        "mark": f"{pol} dir out mark 7 {tmpl}",
        "mark-mask": f"{pol} dir out mark 7 mask 3 {tmpl}",
        "if_id": f"{pol} dir out if_id 5 {tmpl}",
        "level-use": f"{pol} dir out {tmpl} level use",
        "two-tmpl": f"{pol} dir out {tmpl} tmpl src {A1} dst {A2} proto ah reqid 4 mode transport",
        "tunnel-tmpl": f"src 198.51.100.0/24 dst 203.0.113.0/24 dir out "
        f"tmpl src {A1} dst {A2} proto esp reqid 3 mode tunnel",
        "route2": f"{pol} dir out tmpl src {A1} dst {A2} proto route2 mode ro",
        "ptype-sub": f"{pol} dir out ptype sub {tmpl}",
        "ptype-main": f"{pol} dir out ptype main {tmpl}",
        "v6": f"src 2001:db8:2::1/128 dst 2001:db8:2::2/128 dir out "
        f"tmpl src {B1} dst {B2} proto esp reqid 3 mode transport",
        "no-tmpl": f"{pol} dir out",
        "flag-localok": f"{pol} dir out flag localok {tmpl}",
    }
    for name, text in policies.items():
        yield (
            f"cp-policy-add-{name}",
            [
                f"host ip xfrm policy add {text}",
                "host ip xfrm policy list",
            ],
        )
    yield "cp-policy-duplicate", [f"host ip xfrm policy add {policies['out']}"] * 2
    yield (
        "cp-policy-update",
        [
            f"host ip xfrm policy add {policies['out']}",
            f"host ip xfrm policy update {pol} dir out priority 5 {tmpl}",
            "host ip xfrm policy list",
        ],
    )
    yield (
        "cp-policy-get",
        [
            f"host ip xfrm policy add {policies['out']}",
            f"host ip xfrm policy get {pol} dir out",
        ],
    )
    yield "cp-policy-get-missing", [f"host ip xfrm policy get {pol} dir out"]
    yield (
        "cp-policy-delete",
        [
            f"host ip xfrm policy add {policies['out']}",
            f"host ip xfrm policy delete {pol} dir out",
            "host ip xfrm policy count",
        ],
    )
    yield "cp-policy-delete-missing", [f"host ip xfrm policy delete {pol} dir out"]
    yield (
        "cp-policy-deleteall",
        [
            f"host ip xfrm policy add {policies['out']}",
            f"host ip xfrm policy add {policies['in']}",
            "host ip xfrm policy deleteall dir out",
            "host ip xfrm policy list",
        ],
    )
    yield (
        "cp-policy-flush",
        [
            f"host ip xfrm policy add {policies['out']}",
            "host ip xfrm policy flush",
            "host ip xfrm policy count",
        ],
    )
    yield (
        "cp-policy-index-wrong-dir",
        [
            f"host ip xfrm policy add {pol} dir out index 8 {tmpl}",
        ],
    )


def all_cases() -> list[Case]:
    return [
        *_interop(),
        *_rx(),
        *_padding(),
        *_natt(),
        *_bad_packets(),
        *_lifetimes(),
        *_control(),
    ]


CASES = all_cases()
