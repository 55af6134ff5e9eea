"""The graph page in a real headless Chromium: loads clean, draws every current record, clicks, filters."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .cdp import Browser, find_chromium
from .conftest import DOCKET, Repo, rec
from .graph_fixture import fixture_records, seed_fixture

DOCS_SHOT = Path(__file__).resolve().parent.parent / "docs" / "graph.png"


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    executable = find_chromium()
    if executable is None:
        if os.environ.get("REQUIRE_TEST_TOOLS"):
            pytest.fail("chromium is missing; .ci/run installs it (apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    b = Browser(executable, tmp_path / "profile")
    try:
        yield b
    finally:
        b.close()


def open_page(repo: Repo, browser: Browser, tmp_path: Path) -> Path:
    page = tmp_path / "page.html"
    assert repo.ok("graph", "--out", str(page)).out == f"{page}\n"
    browser.navigate(page.as_uri())
    assert browser.evaluate("window.docketGraph && window.docketGraph.ready") is True
    return page


def drawn(browser: Browser) -> list[str]:
    return browser.evaluate("Array.from(document.querySelectorAll('#nodes .node')).map(n => n.dataset.id)")


def test_page_loads_clean_draws_clicks_and_filters(repo: Repo, browser: Browser, tmp_path: Path) -> None:
    records = seed_fixture(repo)
    page = open_page(repo, browser, tmp_path)
    current = [r["id"] for r in records if r["id"] not in {t for x in records for t in x["supersedes"]}]

    # Every current record is drawn, nothing else; the page asked the network for nothing.
    assert sorted(drawn(browser)) == sorted(current)
    assert all(url.startswith(("file://", "data:")) for url in browser.requests()), browser.requests()
    assert browser.errors() == []

    # The blocked decisions are outlined and their chain's depends_on edges are red.
    assert sorted(
        browser.evaluate("Array.from(document.querySelectorAll('.node.blocked')).map(n => n.dataset.id)")
    ) == [
        "d6",
        "d7",
    ]
    red = browser.evaluate("Array.from(document.querySelectorAll('.edge.blocked')).map(e => e.dataset.edge)")
    assert sorted(red) == ["d7>d6:depends_on"]  # d6 -> c4 is not drawn: c4 is retired and hidden

    # A real click on a node shows that record in full, with its derived state.
    browser.click_selector("#node-q3")
    assert browser.evaluate("document.querySelector('#details h2').textContent") == "q3  question  resolved"
    shown = browser.evaluate("JSON.parse(document.getElementById('record-json').textContent)")
    graph = {e["id"]: e for e in repo.ok("graph", "--json").json()["entries"]}
    assert shown == graph["q3"]
    details = browser.evaluate("document.getElementById('details').innerText")
    assert "Recorded state\nopen" in details and "Resolved by\nd5" in details
    assert browser.evaluate("document.querySelector('#node-q3').classList.contains('selected')") is True

    # Unticking "claims" hides every claim and nothing else.
    browser.click_selector("input[name=kind][value=claim]")
    assert sorted(drawn(browser)) == sorted(i for i in current if not i.startswith("c"))
    browser.click_selector("input[name=kind][value=claim]")
    assert sorted(drawn(browser)) == sorted(current)

    # Text and scope filters, typed as a person would.
    browser.click_selector("#text")
    browser.type_text("redis")
    time.sleep(0.4)
    assert sorted(drawn(browser)) == ["c2", "c8", "d5"]  # text, choice or rationale; case-insensitive
    browser.evaluate(
        "(() => { const t = document.getElementById('text'); t.value = ''; t.dispatchEvent(new Event('input')); })()"
    )
    time.sleep(0.4)
    browser.click_selector("#scope")
    browser.type_text("src/pay/")
    time.sleep(0.4)
    assert sorted(drawn(browser)) == ["c1", "d5", "d7", "q3"]

    # Retired records come back with the toggle, dashed.
    browser.evaluate(
        "(() => { const t = document.getElementById('scope'); t.value = ''; t.dispatchEvent(new Event('input')); })()"
    )
    time.sleep(0.4)
    browser.click_selector("#retired")
    assert sorted(drawn(browser)) == sorted(r["id"] for r in records)
    assert browser.evaluate("document.querySelector('#node-c4').classList.contains('retired')") is True

    # Select d7 and show it: chain edges thicken.
    browser.click_selector("#node-d7")
    chain = browser.evaluate("Array.from(document.querySelectorAll('.edge.chain')).map(e => e.dataset.edge)")
    assert sorted(chain) == ["d6>c4:depends_on", "d7>d6:depends_on"]

    assert browser.errors() == []
    shot = tmp_path / "graph.png"
    browser.screenshot(shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("UPDATE_DOCS_SCREENSHOT"):
        shutil.copyfile(shot, DOCS_SHOT)
    assert page.exists()


def test_ten_thousand_records_open_without_hanging(repo: Repo, browser: Browser, tmp_path: Path) -> None:
    records = [
        rec(
            f"c{i}" if i % 3 else f"d{i}",
            f"record number {i} about {'payments' if i % 7 == 0 else 'search'}",
            **(
                {"state": "accepted"}
                if i % 3
                else {"depends_on": [f"c{i - 1}"], "supports": [[f"c{i - 2}"]] if (i - 2) % 3 else []}
            ),
        )
        for i in range(1, 10_001)
    ]
    repo.write_ledger(records)
    page = tmp_path / "big.html"
    repo.ok("graph", "--out", str(page))
    started = time.monotonic()
    browser.navigate(page.as_uri(), timeout=60)
    assert browser.evaluate("window.docketGraph.ready") is True
    opened = time.monotonic() - started
    assert len(drawn(browser)) == 400
    assert "Drawing the newest 400 of 10000" in browser.evaluate("document.getElementById('notice').textContent")
    started = time.monotonic()
    browser.click_selector("#text")
    browser.type_text("payments")
    time.sleep(0.2)
    browser.evaluate("new Promise(r => setTimeout(r, 150))")
    filtered = time.monotonic() - started
    ids = drawn(browser)
    assert 0 < len(ids) <= 400 and all(int(i[1:]) % 7 == 0 for i in ids)
    assert browser.errors() == []
    # Generous bounds: the point is "does not hang the tab", not a benchmark.
    assert opened < 30 and filtered < 10, (opened, filtered)
    print(f"10k records: page opened in {opened:.2f}s, text filter in {filtered:.2f}s")


def test_fixture_records_cover_every_relation() -> None:
    fields = {f for r in fixture_records() for f in ("supports", "depends_on", "answers", "supersedes") if r[f]}
    assert fields == {"supports", "depends_on", "answers", "supersedes"}


def _transform(browser: Browser) -> tuple[float, float, float]:
    value = browser.evaluate("document.getElementById('viewport').getAttribute('transform')")
    numbers = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", value)]
    return numbers[0], numbers[1], numbers[2]


def test_page_pans_zooms_filters_by_state_and_focuses(repo: Repo, browser: Browser, tmp_path: Path) -> None:
    seed_fixture(repo)
    open_page(repo, browser, tmp_path)
    # The wheel zooms in around the pointer.
    x, y, k = _transform(browser)
    browser.call("Input.dispatchMouseEvent", session=True, type="mouseWheel", x=600, y=400, deltaX=0, deltaY=-200)
    assert _transform(browser)[2] > k
    # Dragging the background pans by the distance dragged.
    x, y, k = _transform(browser)
    browser.call("Input.dispatchMouseEvent", session=True, type="mousePressed", x=900, y=800, button="left", buttons=1)
    browser.call("Input.dispatchMouseEvent", session=True, type="mouseMoved", x=1000, y=850, button="left", buttons=1)
    browser.call("Input.dispatchMouseEvent", session=True, type="mouseReleased", x=1000, y=850, button="left")
    nx, ny, nk = _transform(browser)
    assert (round(nx - x), round(ny - y), nk) == (100, 50, k)

    # The state filter keeps one effective state.
    browser.evaluate(
        "(() => { const s = document.getElementById('state'); s.value = 'adopted';"
        " s.dispatchEvent(new Event('change')); })()"
    )
    assert sorted(drawn(browser)) == ["d5", "d6", "d7"]
    browser.evaluate(
        "(() => { const s = document.getElementById('state'); s.value = ''; s.dispatchEvent(new Event('change')); })()"
    )

    # Focus: the selection and its neighbours, one step, then two.
    browser.click_selector("#node-d7")
    browser.click_selector("#focus")
    browser.evaluate(
        "(() => { const s = document.getElementById('depth'); s.value = '1'; s.dispatchEvent(new Event('change')); })()"
    )
    assert sorted(drawn(browser)) == ["d6", "d7"]
    browser.evaluate(
        "(() => { const s = document.getElementById('depth'); s.value = '2'; s.dispatchEvent(new Event('change')); })()"
    )
    assert sorted(drawn(browser)) == ["d5", "d6", "d7"]  # c4 is two steps away too, but retired

    # An ID in the details is a link to that record.
    browser.click_selector("#details a.ref[data-ref='d6']")
    assert browser.evaluate("document.querySelector('#details h2').textContent") == "d6  decision  adopted"
    assert browser.evaluate("window.docketGraph.selected()") == "d6"
    assert browser.errors() == []


def test_graph_open_hands_the_page_to_the_browser(repo: Repo, tmp_path: Path) -> None:
    seed_fixture(repo)
    opener = tmp_path / "open.sh"
    opened = tmp_path / "opened.txt"
    opener.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    opener.chmod(0o755)
    page = tmp_path / "page.html"
    result = subprocess.run(
        [DOCKET, "graph", "--out", str(page), "--open"],
        cwd=repo.path,
        env={**repo.env, "BROWSER": str(opener)},
        capture_output=True,
        text=True,
    )
    assert (result.returncode, result.stdout) == (0, f"{page}\n"), result.stderr
    assert opened.read_text().strip() == page.resolve().as_uri()
    failed = subprocess.run(
        [DOCKET, "graph", "--out", str(page), "--open"],
        cwd=repo.path,
        env={**repo.env, "BROWSER": "false"},
        capture_output=True,
        text=True,
    )
    assert failed.returncode == 1
    assert failed.stderr == f"docket: no browser to open; open {page} yourself\n"
