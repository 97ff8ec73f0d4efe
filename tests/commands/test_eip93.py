"""eip93 regs / ring / sa / state / stats: parse and execute without a terminal."""

from __future__ import annotations

from io import StringIO

import pytest
from rich.console import Console

from esplab.commands.handlers import core, eip93
from esplab.commands.registry import Registry
from esplab.commands.result import PacketResult, Result, TableResult
from esplab.commands.session import Session
from esplab.errors import BadArgument, NotFound
from esplab.layers import EIP93CommandDescriptor, EIP93ResultDescriptor, EIP93SARecord
from esplab.layers.sa_record import EIP93StateRecord
from esplab.model.kernel.esp import core as esp
from esplab.model.kernel.esp.sa import EspSA
from esplab.render import render
from tests.model.engine.support import kernel_skb, key, plain_packet

KEYS = dict(enc="cbc(aes)", enc_key=key(16, 1), auth="hmac(sha1)", auth_key=key(20, 2))


@pytest.fixture
def session() -> Session:
    """A session with the eip93 command, an outbound SA at 0x100 and one packet sent."""
    s = Session(registry=Registry([*core.COMMANDS, *eip93.COMMANDS]))
    drv = s.lab.eip93
    sa = drv.state_add(direction="out", spi=0x100, **KEYS).sa
    sw = EspSA.build(
        0x100, enc="cbc(aes)", enc_key=key(16, 1), auth="hmac(sha1)", auth_key=key(20, 2)
    )
    plain = plain_packet(4)
    skb, proto = kernel_skb(esp.encrypt(sw, plain, seq=1), plain, "transport", 16)
    assert drv.crypto_tx(sa, skb, proto=proto).ok
    return s


def _shown(result: Result) -> str:
    buffer = StringIO()
    Console(file=buffer, width=120, color_system=None).print(render(result))
    return buffer.getvalue()


def test_regs(session: Session) -> None:
    result = session.execute("eip93 regs")
    assert isinstance(result, TableResult)
    rows = {row[1]: row for row in result.rows}
    assert rows["PE_REVISION"][0] == "0x1fc" and rows["PE_REVISION"][2] == "0x0301a25d"
    assert "EIP 93" in rows["PE_REVISION"][3] and "v3.0.1" in rows["PE_REVISION"][3]
    assert rows["PE_OPTION_0"][2] == "0x41710041" and "ESP" in rows["PE_OPTION_0"][3]
    assert rows["PE_RING_CONFIG"][3].startswith("512 entries")
    assert rows["PE_CONFIG"][3] == "mode 3 (autonomous ring), CDR update"
    assert result.data["registers"]["PE_OPTION_1"] == 0x000FE007
    assert "PE_CD_COUNT" in _shown(result)


def test_ring_tables(session: Session) -> None:
    cdr = session.execute("eip93 ring cdr")
    assert isinstance(cdr, TableResult)
    first = cdr.rows[0]
    # The driver zeroed words 0 and 7 after use (eip93.md 1.5 step 4); 1-6 stay.
    assert first[0] == "0" and first[1] == "EMPTY/EMPTY" and first[6] == "0"
    assert first[5] == "0x08000000" and first[3] != "0x00000000"
    rdr = session.execute("eip93 ring rdr")
    assert isinstance(rdr, TableResult)
    assert rdr.rows[0][1] == "PE_READY/PE_READY" and rdr.rows[0][7] == "-"
    assert rdr.data["entries"] == 512
    assert "engine next" in _shown(cdr)


def test_ring_entry_as_a_layer(session: Session) -> None:
    entry = session.execute("eip93 ring cdr 0")
    assert isinstance(entry, PacketResult)
    assert isinstance(entry.packet, EIP93CommandDescriptor)
    assert entry.packet.sa_addr == 0x08000000
    result = session.execute("eip93 ring rdr 0x0")
    assert isinstance(result, PacketResult)
    assert isinstance(result.packet, EIP93ResultDescriptor)
    assert result.packet.errors() == [] and result.packet.ready == 2
    assert "status: no error" in result.notes
    assert "EIP93ResultDescriptor" in _shown(result)


def test_sa_record_field_by_field(session: Session) -> None:
    result = session.execute("eip93 sa 0x100")
    assert isinstance(result, PacketResult)
    assert isinstance(result.packet, EIP93SARecord)
    assert result.data["sa_cmd0"] == 0x133A1310 and result.data["sa_cmd1"] == 0x22001101
    assert result.data["fields"]["sa_seqnum_0"] == "1"  # the engine wrote seq 1 back
    assert result.data["address"] == 0x08000000
    shown = _shown(result)
    assert "iv_source" in shown and "PRNG" in shown and "0000" in shown  # fields and hex
    assert session.execute("eip93 sa 256 out").data["spi"] == 0x100


def test_unknown_spi_lists_the_valid_ones(session: Session) -> None:
    with pytest.raises(NotFound) as info:
        session.execute("eip93 sa 0x999")
    assert "no SA with SPI 0x999" in str(info.value) and "valid: 0x100" in str(info.value)
    with pytest.raises(NotFound, match=r"no offloaded SA with SPI 0x100 \(in\)"):
        session.lab.eip93.lookup(0x100, "in")


def test_state_record(session: Session) -> None:
    with pytest.raises(NotFound, match="no state record"):
        session.execute("eip93 state 0x100")
    session.lab.eip93.aead_setkey(spi=0x300, **KEYS)
    result = session.execute("eip93 state 0x300")
    assert isinstance(result, PacketResult)
    assert isinstance(result.packet, EIP93StateRecord)
    sa = session.execute("eip93 sa 0x300 in")
    assert isinstance(sa, PacketResult) and sa.data["sa_cmd0"] == 0x123013C9


def test_stats(session: Session) -> None:
    result = session.execute("eip93 stats")
    assert isinstance(result, TableResult)
    assert result.data["processed"] == 1 and result.data["esp outbound"] == 1
    assert result.data["ring full (refused)"] == 0 and result.data["offloaded SAs"] == 1
    assert result.summary == "1 descriptors processed, 0 with errors"


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("eip93", "needs a subcommand"),
        ("eip93 bogus", "unknown eip93 subcommand 'bogus'"),
        ("eip93 ring", "needs cdr or rdr"),
        ("eip93 ring cdr 512", r"valid: 0..511"),
        ("eip93 ring cdr x", "must be a number"),
        ("eip93 sa", "needs an SPI"),
        ("eip93 sa 0x100 sideways", "direction 'sideways'"),
        ("eip93 sa -1", r"SPI -1 out of range; valid: 0..0xffffffff"),
        ("eip93 state 0x100000000", r"out of range; valid: 0..0xffffffff"),
        ("eip93 regs now", "takes no argument"),
    ],
)
def test_bad_lines_are_usage_errors(session: Session, line: str, match: str) -> None:
    with pytest.raises(BadArgument, match=match):
        session.execute(line)
    assert session.run(line).ok is False


def test_completion(session: Session) -> None:
    command = session.registry.lookup("eip93")
    assert command.complete is not None
    assert list(command.complete(session, [])) == list(eip93.SUBCOMMANDS)
    assert list(command.complete(session, ["ring"])) == ["cdr", "rdr"]
    assert list(command.complete(session, ["sa"])) == ["0x100"]


def test_default_session_builds_the_engine_on_first_use() -> None:
    session = Session()
    if "eip93" not in session.registry:
        session.registry.register(eip93.COMMANDS[0])
    result = session.execute("eip93 regs")
    assert isinstance(result, TableResult) and result.data["registers"]["PE_REVISION"]
