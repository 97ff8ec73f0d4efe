"""Citations a user can follow: every reference-note section the code cites has public
sources in esplab.citation_sources, and no user-visible text names a note."""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from esplab.citation_sources import SECTIONS
from esplab.citations import cite, sources_of
from esplab.commands.result import JourneyResult
from esplab.commands.session import Session
from esplab.errors import EsplabError
from esplab.render import render
from tests.commands import seed

ROOT = Path(__file__).resolve().parents[1]
#: A note citation as the code writes them ("eip93.md 5.2", "af_xdp.md 2.6-2.8").
CITED = re.compile(r"(eip93|airoha-dsa-xfrm|af_xdp)\.md`*\s*(\d+(?:\.\d+)?)")
#: What must never reach a user: a note's name with a section.
NOTE = re.compile(r"(eip93|airoha-dsa-xfrm|af_xdp)\.md\b")


def test_every_cited_section_has_public_sources() -> None:
    cited = set()
    for path in (ROOT / "esplab").rglob("*.py"):
        for m in CITED.finditer(path.read_text()):
            cited.add((m.group(1) + ".md", m.group(2)))
    assert len(cited) > 50
    missing = sorted(f"{n} {s}" for n, s in cited if not sources_of(n, s))
    assert missing == []


def test_sources_are_openable_text() -> None:
    for key, sources in SECTIONS.items():
        assert sources, key
        for source in sources:
            assert not NOTE.search(source), (key, source)


def test_cite_renders_kernel_file_and_function() -> None:
    # eip93.md 5.2 rests on mainline eip93_hmac_setkey and vschagen's mtk_authenc_setkey.
    text = cite("hash state in the wrong byte order (eip93.md 5.2)")
    assert "drivers/crypto/inside-secure/eip93/eip93-common.c: eip93_hmac_setkey" in text
    assert "mtk_authenc_setkey" in text and ".md" not in text
    assert cite("checks (airoha-dsa-xfrm.md 3.4)") == (
        "checks (net/xfrm/xfrm_device.c: xfrm_dev_offload_ok)"
    )
    # a range, and a fact list item falling back to its section
    assert ".md" not in cite("af_xdp.md 2.6-2.8; eip93.md 7.18 and 8.10")


def _lines(s: Session, line: str) -> str:
    try:
        result = s.execute(line)
    except EsplabError as exc:  # an error's message is user-visible too
        return str(exc)
    out = StringIO()
    Console(file=out, width=200, color_system=None).print(render(result))
    text = out.getvalue()
    if isinstance(result, JourneyResult):
        for j in result.journeys:
            text += "\n".join(f"{st.decision} {st.why} {st.drop}" for st in j.stages)
    return text


def test_no_user_visible_text_names_a_note() -> None:
    s = Session()
    lines = [
        *seed.CRYPTO_OUT,
        f"send ap wan {seed.UDP}",
        "explain",
        "eip93 sa 0x1000",
        "eip93 state 0x1000",
        "eip93 fault set 0x1000 digest-byte-order",
        f"send ap wan {seed.UDP}",
        "explain",
        f"compare 0x1000 {seed.UDP}",
        "eip93 ring cdr 0",
        "eip93 regs",
        "help eip93",
        "help compare",
        "help sources",
        "xdp attach wan native",
        "xsk create s0 wan 0",
        "xdp costs",
        "xdpsock wan rxdrop",
    ]
    seen = "\n".join(_lines(s, line) for line in lines)
    assert "drivers/crypto/inside-secure/eip93" in seen
    assert NOTE.findall(seen) == []


@pytest.mark.parametrize("lab", sorted((ROOT / "labs").glob("*.yaml")), ids=lambda p: p.name)
def test_labs_show_no_note_citation(
    lab: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    monkeypatch.chdir(tmp_path)  # what a lab's commands write lands here

    doc = yaml.safe_load(lab.read_text())
    s = Session()
    text = []
    for step in doc.get("steps", []):
        line = str(step.get("run", "")).replace("${lab.dir}", str(lab.parent))
        if not line or "${" in line:
            continue
        text.append(_lines(s, line))
        if "send" in line or "ping" in line:
            text.append(_lines(s, "explain"))
    assert NOTE.findall("\n".join(text)) == []
