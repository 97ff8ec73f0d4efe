"""The journey as a picture: trace --svg, esplab run --html, and the page in Chromium."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from esplab.lab.check import check_file
from esplab.lab.cli import main_run
from esplab.lab.runner import LabRun
from esplab.picture.page import EspMemory, changed, lab_page
from esplab.picture.svg import DROP, ROLE_COLOURS, journey_svg
from tests.lab.support import LABS

BASICS = LABS / "01-esp-basics.yaml"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def _run(path: Path = BASICS, memory: EspMemory | None = None) -> LabRun:
    lab, errors = check_file(path)
    assert errors == [] and lab is not None
    run = LabRun(lab)
    while run.pending is not None:
        run.run_next()
        if memory is not None:
            memory.remember(run)  # as esplab run --html does after each step
    assert run.report().passed
    return run


def _page() -> str:
    memory = EspMemory()
    return lab_page(_run(memory=memory), memory)


def test_changed_bytes() -> None:
    assert changed(None, b"abc") == {0, 1, 2}
    assert changed(b"abcd", b"abXd") == {2}
    # an 8-byte ESP header put in front: only the new bytes changed
    assert changed(b"payload!", b"HEADER__payload!") == set(range(8))


def test_svg_of_a_delivered_journey() -> None:
    run = _run()
    journey = run.session.lab.journeys.get(1)
    assert journey is not None
    svg = journey_svg(journey)
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg"')
    stages = re.findall(r'data-stage="(\d+)" data-tap="([^"]+)"', svg)
    assert [tap for _, tap in stages] == [s.tap for s in journey.stages]
    assert [int(n) for n, _ in stages] == list(range(1, len(journey.stages) + 1))
    assert len(re.findall(r'class="hop"', svg)) >= 3  # ap -> wan -> host at least
    assert DROP not in svg  # nothing dropped


def test_svg_of_a_drop_is_red_with_its_reason() -> None:
    from esplab.commands.session import Session

    session = Session()
    session.execute(
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1 "
        "mode transport enc 'cbc(aes)' 0x202122232425262728292a2b2c2d2e2f"
    )
    session.execute(
        "ip xfrm policy add src 192.0.2.1/32 dst 192.0.2.2/32 proto udp dir out "
        "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 1 mode transport"
    )
    session.execute('send ap wan IP(dst="192.0.2.2")/UDP()')  # the host has no SA
    journey = session.lab.journeys.get()
    assert journey is not None and not journey.delivered
    drop = next(s for s in journey.stages if s.drop)
    svg = journey_svg(journey)
    assert 'class="stage drop"' in svg
    assert f'fill="{DROP}" class="drop-reason"' in svg
    assert f"DROPPED: {drop.drop}" in svg


def test_trace_svg_writes_the_file(tmp_path: Path) -> None:
    run = _run()
    target = tmp_path / "j1.svg"
    result = run.session.execute(f"trace 1 --svg {target}")
    assert result.data["svg"] == str(target)
    assert "drawn in" in result.summary
    assert target.read_text(encoding="utf-8").startswith("<svg")
    from esplab.errors import EsplabError

    with pytest.raises(EsplabError, match="exists; add --force"):
        run.session.execute(f"trace 1 --svg {target}")
    run.session.execute(f"trace 1 --svg {target} --force")


def test_lab_page_is_self_contained_and_coloured() -> None:
    page = _page()
    assert not re.search(r"(src|href)=\"(https?:)?//", page)  # no CDN, no network
    assert "<script src" not in page and "<link" not in page
    links = set(re.findall(r'href="#(j\d+-s\d+)"', page))
    ids = set(re.findall(r'<details id="(j\d+-s\d+)"', page))
    assert links and links == ids
    for role in ("esp-header", "iv", "payload", "padding", "icv"):
        assert f"r-{role}" in page, role
    assert " chg" in page
    assert "ESP header" in page and "ICV" in page


def test_run_html_writes_one_page_per_lab(tmp_path: Path) -> None:
    out = tmp_path / "html"
    assert main_run(["--html", str(out), "--outdir", str(tmp_path), str(BASICS)]) == 0
    assert [p.name for p in out.iterdir()] == ["01-esp-basics.html"]
    # the SAs of journey 1 are deleted later in the lab: their layout was remembered
    assert (out / "01-esp-basics.html").read_text(encoding="utf-8") == _page()


def test_without_memory_the_deleted_sas_leave_the_bytes_uncoloured() -> None:
    page = lab_page(_run())
    first = page[page.index('id="j1-s4"') : page.index('id="j1-s5"')]
    assert "r-iv" not in first and "r-esp-header" in first


def _browser(chromium: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / "profile"
    return subprocess.run(
        [chromium, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def test_page_in_a_real_browser(chromium: str, tmp_path: Path) -> None:
    page = _page()
    # A probe appended to the page reads what the browser computed and writes it
    # into the DOM, which --dump-dom then shows.
    probe = (
        "<script>var out=[];"
        "['esp-header','iv','payload','icv'].forEach(function(r){"
        "var e=document.querySelector('pre.hex span.r-'+r);"
        "out.push(r+'='+(e?getComputedStyle(e).backgroundColor:'none'));});"
        "document.querySelector('a.stage-link').dispatchEvent(new MouseEvent('click'));"
        "out.push('open='+document.querySelectorAll('details[open]').length);"
        "document.body.setAttribute('data-probe',out.join(';'));</script>"
    )
    html = tmp_path / "lab.html"
    html.write_text(page.replace("</body>", probe + "</body>"), encoding="utf-8")
    dom = _browser(chromium, tmp_path, "--dump-dom", html.as_uri()).stdout
    assert dom.count('class="stage-detail') == page.count('class="stage-detail')
    assert dom.count('class="stage-link"') >= 9
    probe_text = re.search(r'data-probe="([^"]+)"', dom)
    assert probe_text is not None
    found = dict(item.split("=", 1) for item in probe_text.group(1).split(";"))

    def rgb(colour: str) -> str:
        r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
        return f"rgb({r}, {g}, {b})"

    for role in ("esp-header", "iv", "payload", "icv"):
        assert found[role] == rgb(ROLE_COLOURS[role]), role
    assert found["open"] == "1"  # clicking a stage opened its details
    plain = tmp_path / "plain.html"  # the page as written, without the probe's navigation
    plain.write_text(page, encoding="utf-8")
    shot = tmp_path / "shot.png"
    _browser(
        chromium,
        tmp_path,
        "--window-size=1000,800",
        "--virtual-time-budget=3000",  # lay the page out before the shot
        f"--screenshot={shot}",
        plain.as_uri(),
    )
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000  # a drawn page, not a blank one (a blank one is ~5 kB)
