"""The web explorer in a real browser: Debian's Chromium driven by Playwright, against
the real ``arborgraph serve`` on a loopback port, over an index whose tenant documents
carry ACLs, with the loopback OpenAI-API stand-in as the server's LLM.

Every test fails on any browser console error or uncaught page error, and saves a
screenshot of what it checked under the session's tmp dir (``web-screens``).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_server import FakeOpenAIServer
from service_server import Server, request, running_server
from tenants import SECRET_A, SECRET_B

from arborgraph.pipeline import build_index

pytest.importorskip("playwright", reason="the browser tests need playwright (pip install playwright)")
from playwright.sync_api import Page, sync_playwright  # noqa: E402

ROUTES = ["auto", "lookup", "tree", "graph", "global"]
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
ANSWER = "WAL appends changes to a separate log [1]; a checkpoint copies them back [2]."
SLOW = 90_000  # ms: a first query loads the embedding model on a shared machine


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    missing = "Debian's Chromium is not installed (apt-get install -y chromium)"
    if os.environ.get("CI"):
        pytest.fail(f"{missing}: CI must run the browser tests")
    pytest.skip(missing)


# a file name whose right-to-left override would make it read "rtldm.png"
SPOOFED_NAME = "rtl\u202egnp.md"


# -- fixtures -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def web_index(tmp_path_factory: pytest.TempPathFactory, sample_slice: Path, sample_index: Path) -> Path:
    """The manual slice plus two documents only team-a and team-b may read: a copy of
    the session's index of the slice, updated with the two (its pages are reused, not
    embedded again)."""
    docs = tmp_path_factory.mktemp("web-docs")
    for page in sample_slice.iterdir():
        shutil.copy(page, docs / page.name)
    (docs / "bluefin.md").write_text(SECRET_A)
    (docs / "marlin.md").write_text(SECRET_B)
    (docs / SPOOFED_NAME).write_text("---\nacl: [team-a]\n---\n# Release notes\n\nThe pager keeps dirty pages until the checkpoint.\n")
    index = tmp_path_factory.mktemp("web-index") / "idx"
    shutil.copytree(sample_index, index)
    report = build_index([docs], index)
    assert (report.stages["documents"]["added"], report.stages["documents"]["unchanged"]) == (3, 20)
    return index


@pytest.fixture(scope="module")
def web_keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from arborgraph.service.keys import KeyStore

    path = tmp_path_factory.mktemp("web-keys") / "keys.json"
    store = KeyStore(path)
    return {"path": path, "team-a": store.add("team-a")[0], "team-b": store.add("team-b")[0]}


@pytest.fixture(scope="module")
def web_server(web_index: Path, web_keys: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with FakeOpenAIServer() as llm:
        llm.set_reply(lambda body: ANSWER)
        with running_server(
            web_index, tmp_path_factory.mktemp("web-logs"), "--keys", str(web_keys["path"]), "--llm-model", "stand-in",
            env={"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "stand-in-key"},
        ) as server:
            yield server


@pytest.fixture(scope="module")
def screens(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("web-screens")


class Browser:
    """A fresh browser context (its own cookies and storage, as a new profile has);
    ``console`` collects every error the pages report."""

    def __init__(self, chromium: Any) -> None:
        self.context = chromium.new_context(viewport={"width": 1280, "height": 800})
        self.console: list[str] = []

    def page(self, url: str, key: str | None) -> Page:
        """A new tab at ``url`` that answered the key prompt with ``key`` (None: anonymous)."""
        page = self.context.new_page()
        page.on("console", lambda msg: self.console.append(f"console.{msg.type}: {msg.text}") if msg.type == "error" else None)
        page.on("pageerror", lambda exc: self.console.append(f"page error: {exc}"))
        page.set_default_timeout(SLOW)
        page.goto(url + "/")
        page.wait_for_selector("#key-dialog[open]")
        if key is None:
            page.click("#key-anonymous")
        else:
            page.fill("#key-input", key)
            page.click("#key-save")
        page.wait_for_selector("#ask-form")
        return page


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One headless Chromium for the module (starting one costs seconds of CPU); each
    test gets its own context in it."""
    _chromium()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS, headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture()
def browser(chromium: Any) -> Iterator[Browser]:
    opened = Browser(chromium)
    try:
        yield opened
    finally:
        opened.context.close()
    assert opened.console == [], opened.console


def ask(page: Page, question: str, route: str = "auto", answer: bool = False) -> None:
    page.fill("#question", question)
    page.select_option("#route", route)
    page.set_checked("#want-answer", answer)
    page.evaluate("delete document.getElementById('ask-result').dataset.done")
    page.click("#ask-submit")
    page.wait_for_selector("#ask-result[data-done='1']")


# -- the pages ------------------------------------------------------------------------

def test_page_and_assets_are_served_by_the_package(web_server: Server) -> None:
    status, headers, body = request("GET", web_server.url + "/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in headers["content-security-policy"]
    assets = re.findall(rb'(?:src|href)="(/static/[^"]+)"', body)
    assert b"/static/main.js" in assets
    for asset in assets:
        assert request("GET", web_server.url + asset.decode())[0] == 200
    assert b"http://" not in body and b"https://" not in body  # nothing fetched from elsewhere


def test_ask_on_each_route_shows_ranked_contexts_and_why(web_server: Server, browser: Browser, screens: Path) -> None:
    page = browser.page(web_server.url, None)
    for route in ROUTES:
        ask(page, "How does a WAL checkpoint move pages back into the database?", route)
        cards = page.locator("#contexts > li")
        assert cards.count() >= 1, route
        taken = page.inner_text("#route-taken")
        assert taken in ROUTES[1:] and (route == "auto" or taken == route), (route, taken)
        first = cards.first
        assert first.get_attribute("data-kind") in {"chunk", "summary", "entity", "relation", "community_report"}
        assert first.locator(".ctx-rank").inner_text() == "[1]"
        assert re.search(r"score \d", first.inner_text())
        assert "route" in page.inner_text("#routing") and page.locator("#explain").count() == 1
        assert "contexts kept" in page.locator("#explain").text_content()
        page.screenshot(path=str(screens / f"ask-{route}.png"))


def test_a_citation_opens_its_passage_highlighted_in_its_page(web_server: Server, browser: Browser, screens: Path) -> None:
    page = browser.page(web_server.url, None)
    ask(page, "How does a checkpoint move WAL content back into the database?", "lookup")
    card = page.locator("#contexts > li[data-kind='chunk'][data-source='wal.md']").first
    snippet = card.locator(".ctx-text").inner_text()[:60]
    card.locator("[data-open]").click()
    cited = page.locator("#doc-dialog .passage.cited")
    cited.wait_for()
    assert cited.count() == 1 and snippet.split("\n")[0][:40] in cited.inner_text()
    assert page.locator("#doc-dialog .passage").count() > 1  # the whole page, the passage marked in it
    page.screenshot(path=str(screens / "passage.png"))
    page.click("#doc-close")

    # with the server's LLM: the streamed answer, its [n] citations opening their passages
    ask(page, "How does a WAL checkpoint work?", "lookup", answer=True)
    assert page.inner_text("#answer-text").startswith("WAL appends changes to a separate log")
    assert page.locator("#answer-citations li").count() == 2
    page.locator("#answer-text .cite").nth(1).click()
    page.locator("#doc-dialog .passage.cited").wait_for()
    page.screenshot(path=str(screens / "answer.png"))


def test_tree_expands_three_levels_and_shows_the_tree_walk(web_server: Server, browser: Browser, screens: Path) -> None:
    page = browser.page(web_server.url, None)
    page.goto(web_server.url + "/#tree")
    root = page.locator("#outline > li")
    root.locator(".toggle[aria-expanded='true']").first.wait_for()  # the root opens by itself
    root_level = int(root.get_attribute("data-level"))
    assert root_level >= 3
    assert page.locator("#icicle rect").count() >= 10
    for depth in (1, 2, 3):
        level = f"#outline li[data-level='{root_level - depth}']"
        page.locator(level).first.wait_for()
        item = page.locator(f"{level}:has(> .node-row .toggle:not([disabled]))").first
        if depth < 3:
            item.locator(":scope > .node-row .toggle").click()
    assert page.locator(f"#outline li[data-level='{root_level - 3}']").count() >= 1
    # the deepest summary shown (with a root at level 3, the level 3 below holds chunks)
    page.locator(f"#outline li[data-level='{max(root_level - 3, 1)}'] .title").first.click()
    page.wait_for_selector("#node-details #node-text")
    assert page.locator("#node-docs li").count() >= 1
    page.locator("#node-details summary").click()  # the chunks the node covers, each opening its passage
    page.locator("#node-chunks button").first.click()
    page.locator("#doc-dialog .passage.cited").wait_for()
    page.click("#doc-close")
    page.screenshot(path=str(screens / "tree.png"))

    # an Ask result on the tree route: its walk is highlighted in the outline and the icicle
    page.goto(web_server.url + "/#ask")
    ask(page, "How does a WAL checkpoint work?", "tree")
    page.locator("text=Show tree walk").first.click()
    page.wait_for_selector("#walk-note")
    page.wait_for_selector("#outline .node-row.on-path .title >> nth=1")
    assert page.locator("#icicle rect.on-path").count() >= 2
    page.screenshot(path=str(screens / "tree-walk.png"))


def test_a_community_opens_as_a_graph_and_an_entity_can_be_selected(web_server: Server, browser: Browser, screens: Path) -> None:
    page = browser.page(web_server.url, None)
    page.goto(web_server.url + "/#communities")
    page.locator("#community-list button").first.click()
    page.wait_for_selector("#report-title")
    nodes = page.locator("#graph g.node")
    nodes.first.wait_for()
    assert nodes.count() >= 2 and page.locator("#graph line").count() >= 1
    before = nodes.count()
    nodes.nth(1).locator("circle").click()
    page.wait_for_selector("#entity-name")
    assert page.locator("#graph g.node.selected").count() == 1
    page.click("#expand-entity")
    page.locator(f"#graph g.node >> nth={before}").wait_for()  # its neighbours joined the graph
    page.evaluate("() => window.scrollTo(0, 0)")
    page.screenshot(path=str(screens / "communities.png"))
    page.locator("#mentions button").first.click()
    page.locator("#doc-dialog .passage.cited").wait_for()
    page.click("#doc-close")

    # search an entity by name; keyboard: Tab to it and Enter selects it
    page.fill("#entity-search", "checkpoint")
    page.locator("#entity-hits button").first.click()
    # (no wait_for_function: the page's CSP forbids the eval it needs)
    page.locator("#entity-name", has_text=re.compile("checkpoint", re.IGNORECASE)).wait_for()
    picked = page.locator("#graph g.node.selected")
    assert picked.count() == 1 and "checkpoint" in (picked.get_attribute("aria-label") or "").lower()
    page.locator("#graph g.node").first.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#graph g.node.selected:focus")


def test_index_page_shows_what_inspect_shows(web_server: Server, browser: Browser, screens: Path) -> None:
    page = browser.page(web_server.url, None)
    page.goto(web_server.url + "/#index")
    page.wait_for_selector("#documents")
    assert int(page.inner_text("#stat-docs b")) == page.locator("#documents tbody tr").count() == 20
    assert page.inner_text("#stat-generation b").startswith("gen-")
    text = page.inner_text("main")
    assert "without an LLM" in text and "skipped files" in text and "warnings" in text
    page.set_viewport_size({"width": 390, "height": 844})  # a phone: nothing wider than the screen
    for tab in ("#ask", "#tree", "#communities", "#index"):
        page.goto(web_server.url + "/" + tab)
        page.wait_for_selector("main .panel")
        assert page.evaluate("document.scrollingElement.scrollWidth <= innerWidth + 1"), tab
    page.screenshot(path=str(screens / "narrow-index.png"))


def test_bidi_controls_in_names_are_shown_escaped(web_server: Server, web_keys: dict[str, Any], browser: Browser) -> None:
    page = browser.page(web_server.url, web_keys["team-a"])
    page.goto(web_server.url + "/#index")
    page.wait_for_selector("#documents")
    listed = page.inner_text("#documents")
    assert "rtl\\u202egnp.md" in listed and "\u202e" not in listed
    page.get_by_role("button", name="rtl\\u202egnp.md").click()
    page.wait_for_selector("#doc-dialog[open]")
    assert "\u202e" not in page.inner_text("#doc-dialog")
    page.close()


def test_one_principals_key_never_shows_another_principals_document(
    web_server: Server, web_keys: dict[str, Any], browser: Browser
) -> None:
    def sees(key: str | None) -> str:
        page = browser.page(web_server.url, key)
        seen = []
        for route in ROUTES:
            ask(page, "What is the launch code for Project Bluefin?", route)
            seen.append(page.inner_text("#ask-result"))
        page.goto(web_server.url + "/#index")
        page.wait_for_selector("#documents")
        seen.append(page.inner_text("main"))
        page.goto(web_server.url + "/#communities")
        page.fill("#entity-search", "Bluefin")
        page.wait_for_selector("#entity-hits li")
        seen.append(page.inner_text("#entity-hits"))
        page.close()
        return "\n".join(seen)

    owner = sees(web_keys["team-a"])
    assert "ZEBRA-7731" in owner and "bluefin.md" in owner  # the owner's key does show it
    for other in (web_keys["team-b"], None):
        shown = sees(other)
        assert "ZEBRA" not in shown and "bluefin.md" not in shown


def test_the_web_list_endpoints_show_only_what_the_key_may_read(web_server: Server, web_keys: dict[str, Any]) -> None:
    import json
    from urllib.parse import urlencode

    def lists(key: str | None) -> str:
        out = []
        for path, params in [
            ("/v1/web/tree", {"depth": 8, "max_nodes": 20000}), ("/v1/web/entities", {"q": "bluefin", "limit": 100}),
            ("/v1/web/entities", {"q": "zebra", "limit": 100}), ("/v1/web/communities", {"level": 0}),
        ]:
            status, _, body = request("GET", f"{web_server.url}{path}?{urlencode(params)}", key=key)
            assert status == 200, (path, status, body[:300])
            listed = json.loads(body)
            listed.pop("query", None)  # the search text itself
            out.append(json.dumps(listed))
        communities = json.loads(out[-1])["communities"]
        for com in communities:
            status, _, body = request("GET", f"{web_server.url}/v1/web/communities/{com['id']}/graph?max_nodes=200", key=key)
            assert status == 200
            out.append(body.decode())
        return "\n".join(out).lower()

    owner = lists(web_keys["team-a"])
    # team-a's own document is in its tree (named "Project Bluefin") and graph; its
    # secret code was shown only while tree titles listed key terms
    assert "project bluefin" in owner and "bluefin.md" in owner
    for other in (web_keys["team-b"], None):
        shown = lists(other)
        assert "bluefin" not in shown and "zebra" not in shown
    assert request("GET", web_server.url + "/v1/web/tree", key="ag_not-a-key")[0] == 401
    assert request("GET", web_server.url + "/v1/web/communities/999999/graph")[0] == 404
