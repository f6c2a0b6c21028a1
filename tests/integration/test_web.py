"""The web explorer in a real browser: Debian's Chromium driven by Playwright, against
the real ``arborgraph serve`` on a loopback port, over an index whose tenant documents
carry ACLs, with the loopback OpenAI-API stand-in as the server's LLM.

Every test fails on any browser console error or uncaught page error, and saves a
screenshot of what it checked under the session's tmp dir (``web-screens``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import copy_pages
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
def web_llm() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as llm:
        llm.set_reply(lambda body: ANSWER)
        yield llm


@pytest.fixture(scope="module")
def web_server(web_index: Path, web_keys: dict[str, Any], web_llm: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(
        web_index, tmp_path_factory.mktemp("web-logs"), "--keys", str(web_keys["path"]), "--llm-model", "stand-in",
        env={"OPENAI_BASE_URL": web_llm.base_url, "OPENAI_API_KEY": "stand-in-key"},
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

    def open(self, url: str) -> Page:
        """A new tab at ``url``, its errors collected."""
        page = self.context.new_page()
        page.on("console", lambda msg: self.console.append(f"console.{msg.type}: {msg.text}") if msg.type == "error" else None)
        page.on("pageerror", lambda exc: self.console.append(f"page error: {exc}"))
        # the console names a failed request's status only; its address says which page asked
        page.on("response", lambda r: self.console.append(f"{r.status} from {r.request.method} {r.url}") if r.status >= 400 else None)
        page.set_default_timeout(SLOW)
        page.goto(url + "/")
        return page

    def page(self, url: str, key: str | None) -> Page:
        """A new tab at ``url`` that answered the key prompt with ``key`` (None: anonymous)."""
        page = self.open(url)
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


def node_point(page: Page, entity: Any) -> tuple[float, float]:
    """Where the graph canvas draws the entity of a ``#graph-nodes`` button, on the page."""
    box = page.locator("#graph").bounding_box()
    assert box is not None
    return box["x"] + float(entity.get_attribute("data-x")), box["y"] + float(entity.get_attribute("data-y"))


def drawn_nodes(page: Page) -> int:
    return int(page.locator("#graph").get_attribute("data-nodes") or 0)


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
    # the graph libraries are the vendored files scripts/vendor-web recorded, licences beside them
    vendor = Path(__file__).resolve().parents[2] / "arborgraph" / "web" / "static" / "vendor"
    recorded = [line.split() for line in (vendor / "VERSIONS.txt").read_text().splitlines() if not line.startswith("#")]
    files = {row[2]: row[3] for row in recorded if not row[2].startswith("bundled-in:")}
    assert set(files) == {"sigma.min.js", "graphology.umd.min.js", "graphology-library.min.js"}
    import hashlib

    for name, digest in files.items():
        assert f"/static/vendor/{name}".encode() in assets
        status, _, served = request("GET", f"{web_server.url}/static/vendor/{name}")
        assert status == 200 and hashlib.sha256(served).hexdigest() == digest
    assert {f"{row[0]}-{row[1]}.txt" for row in recorded} == {p.name for p in (vendor / "licenses").iterdir()}


def test_ask_on_each_route_shows_ranked_contexts_and_why(web_server: Server, browser: Browser, screens: Path) -> None:
    page = browser.page(web_server.url, None)
    for route in ROUTES:
        ask(page, "How does a WAL checkpoint move pages back into the database?", route)
        cards = page.locator("#contexts > li")
        assert cards.count() >= 1, route
        taken = page.inner_text("#route-taken")
        assert taken in ROUTES[1:] and (route == "auto" or taken == route), (route, taken)
        first = cards.first
        assert first.get_attribute("data-kind") in {"chunk", "digest", "summary", "entity", "relation", "community_report"}
        assert first.locator(".ctx-rank").inner_text() == "[1]"
        assert re.search(r"score \d", first.inner_text())
        assert "route" in page.inner_text("#routing") and page.locator("#explain").count() == 1
        assert "contexts kept" in page.locator("#explain").text_content()
        assert page.locator(".ctx-trace").count() == 0  # no raw ranker trace unless asked
        page.screenshot(path=str(screens / f"ask-{route}.png"))
    page.check("#show-why")
    page.locator(".ctx-trace").first.wait_for()
    assert page.locator(".ctx-trace").count() == page.locator("#contexts > li").count()
    page.uncheck("#show-why")
    page.wait_for_selector(".ctx-trace", state="detached")


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

    # without an LLM answer: the manual's sentences most likely to answer, each opening its passage
    marks = page.locator("#highlights li")
    assert 1 <= marks.count() <= 3 and "checkpoint" in page.inner_text("#highlights").lower()
    marks.first.locator(".cite").click()
    page.locator("#doc-dialog .passage.cited").wait_for()
    page.screenshot(path=str(screens / "highlights.png"))
    page.click("#doc-close")

    # with the server's LLM: the streamed answer, its [n] citations opening their passages
    ask(page, "How does a WAL checkpoint work?", "lookup", answer=True)
    assert page.inner_text("#answer-text").startswith("WAL appends changes to a separate log")
    assert page.locator("#answer-citations li").count() == 2
    page.locator("#answer-text .cite").nth(1).click()
    page.locator("#doc-dialog .passage.cited").wait_for()
    page.screenshot(path=str(screens / "answer.png"))


def test_answers_keep_the_conversation(web_server: Server, web_llm: FakeOpenAIServer, browser: Browser, screens: Path) -> None:
    page = browser.page(web_server.url, None)
    first, second = "How does a WAL checkpoint work?", "And what stops it from finishing?"
    ask(page, first, "lookup", answer=True)
    assert page.locator("#conversation").count() == 0
    ask(page, second, "lookup", answer=True)
    assert "1 earlier turn" in page.inner_text("#conversation h2")
    assert first in page.inner_text("#conversation")
    asked = [r.body["messages"] for r in web_llm.requests if r.path.endswith("/chat/completions")]
    last = asked[-1]
    # the earlier turn went with the question: its question, its answer without the [n] marks
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user"]
    assert last[1]["content"] == first and "[1]" not in last[2]["content"] and "separate log" in last[2]["content"]
    assert second in last[3]["content"]
    page.screenshot(path=str(screens / "conversation.png"))
    page.click("#new-conversation")
    page.wait_for_selector("#conversation", state="detached")


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
    page.wait_for_selector("#graph[data-rendered='1'] canvas")  # sigma.js drew it
    nodes = page.locator("#graph-nodes button")
    assert nodes.count() >= 2 and int(page.locator("#graph").get_attribute("data-edges")) >= 1
    before = drawn_nodes(page)
    picked = nodes.nth(1)
    page.mouse.click(*node_point(page, picked))  # on the canvas, where sigma drew it
    page.wait_for_selector("#entity-name")
    assert page.locator("#graph").get_attribute("data-selected") == picked.get_attribute("data-id")
    assert page.locator("#graph-nodes button.selected").count() == 1
    page.click("#expand-entity")
    page.wait_for_selector(f"#graph:not([data-nodes='{before}'])")  # its neighbours joined the graph
    assert drawn_nodes(page) > before
    counted = re.match(r"(\d+) of (\d+) members shown(?:, (\d+) neighbours outside it)?", page.inner_text("#graph-count"))
    assert counted and int(counted.group(1)) + int(counted.group(3) or 0) == drawn_nodes(page)
    page.evaluate("() => window.scrollTo(0, 0)")
    page.screenshot(path=str(screens / "communities.png"))
    page.locator("#mentions button").first.click()
    page.locator("#doc-dialog .passage.cited").wait_for()
    page.click("#doc-close")

    # search an entity by name; keyboard: Tab to it in the list and Enter selects it
    page.fill("#entity-search", "checkpoint")
    page.locator("#entity-hits button").first.click()
    # (no wait_for_function: the page's CSP forbids the eval it needs)
    page.locator("#entity-name", has_text=re.compile("checkpoint", re.IGNORECASE)).wait_for()
    picked = page.locator("#graph-nodes button.selected")
    assert picked.count() == 1 and "checkpoint" in (picked.get_attribute("aria-label") or "").lower()
    page.locator("#graph-box details summary").click()
    page.locator("#graph-nodes button").first.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#graph-nodes button.selected:focus")


def test_the_graph_page_draws_the_whole_graph_by_community(web_server: Server, browser: Browser, screens: Path) -> None:
    page = browser.page(web_server.url, None)
    page.goto(web_server.url + "/#graph")
    page.wait_for_selector("#graph[data-rendered='1'] canvas")
    shown, total = map(int, re.match(r"(\d+) of (\d+) entities", page.inner_text("#graph-count")).groups())  # type: ignore[union-attr]
    assert shown == drawn_nodes(page) and 50 <= shown <= total
    legend = page.locator("#graph-legend li")
    assert legend.count() >= 3 and "(" in legend.first.inner_text()
    # labels: sigma's grid thins them, and none that is drawn crosses another
    import json

    boxes = json.loads(page.locator("#graph").get_attribute("data-labels") or "[]")
    assert len(boxes) >= 5
    for i, (x, y, w, h, _) in enumerate(boxes):
        for (x2, y2, w2, h2, _) in boxes[i + 1:]:
            assert not (x < x2 + w2 - 1 and x2 < x + w - 1 and y < y2 + h2 - 1 and y2 < y + h - 1), (boxes[i], (x2, y2, w2, h2))
    page.screenshot(path=str(screens / "graph.png"))

    # a double click on a node grows the graph around it; the header stays true and no text is selected
    page.locator("#graph-label").fill("checkpoint")
    page.locator("#graph-filter button[type='submit']").click()
    page.wait_for_selector("#graph[data-rendered='1'][data-layout='force'] canvas")
    page.wait_for_selector("text=Entities matching")
    before = drawn_nodes(page)
    names = page.locator("#graph-nodes button")
    grow = next(names.nth(i) for i in range(names.count()) if "checkpoint" in (names.nth(i).get_attribute("aria-label") or "").lower())
    page.mouse.dblclick(*node_point(page, grow))
    page.wait_for_selector("#graph[data-grown='1']")
    assert drawn_nodes(page) >= before
    assert page.inner_text("#graph-count").startswith(f"{drawn_nodes(page)} of ")
    assert page.evaluate("() => String(window.getSelection())") == ""
    # node detail: every field filled, never "null" or "undefined"
    page.mouse.click(*node_point(page, grow))
    page.wait_for_selector("#entity-name")
    values = page.locator("#entity-details dd").all_inner_texts()
    assert values and all(v.strip() and v.strip() not in ("null", "undefined") for v in values), values
    # another layout, the depth and node limit
    page.select_option("#graph-layout", "circle")
    page.wait_for_selector("#graph[data-layout='circle']")
    page.select_option("#graph-depth", "2")
    page.wait_for_selector("#graph-depth option[value='2'][selected]", state="attached")  # the page drawn again
    page.wait_for_selector("#graph[data-rendered='1'] canvas")
    assert drawn_nodes(page) >= before
    page.goto(web_server.url + "/#graph?limit=100")
    page.wait_for_selector("#graph[data-rendered='1'] canvas")
    assert drawn_nodes(page) == 100
    # from an entity to its neighbourhood, two hops out, the entity selected
    hub = page.locator("#graph-nodes button").first
    hub_id = hub.get_attribute("data-id")
    page.mouse.click(*node_point(page, hub))
    page.wait_for_selector("#entity-name")
    page.click("#entity-around")
    page.wait_for_selector(f"#graph[data-selected='{hub_id}'][data-rendered='1']")
    assert "Around" in page.inner_text("main h2")


def test_index_page_shows_what_inspect_shows(web_server: Server, browser: Browser, screens: Path) -> None:
    page = browser.page(web_server.url, None)
    page.goto(web_server.url + "/#index")
    page.wait_for_selector("#documents")
    assert int(page.inner_text("#stat-docs b")) == page.locator("#documents tbody tr").count() == 20
    assert page.inner_text("#stat-generation b").startswith("gen-")
    versions = page.locator("#documents tbody tr td:nth-child(4)").all_inner_texts()
    assert versions.count("3.40.1") == 20  # the sample manual's pages say so in their metadata
    # the index was an update of the session's index: the full build's times first, the update's beside them
    head = page.locator("#timings thead").inner_text()
    assert "full build" in head and "update to gen-" in head
    embed = page.locator("#timings tbody tr", has_text="embed").locator("td").all_inner_texts()
    assert float(embed[0]) > float(embed[1])  # the full build embedded every chunk, the update three pages
    text = page.inner_text("main")
    assert "without an LLM" in text and "skipped files" in text and "warnings" in text
    page.set_viewport_size({"width": 390, "height": 844})  # a phone: nothing wider than the screen
    for tab in ("#ask", "#tree", "#graph", "#communities", "#documents", "#index"):
        page.goto(web_server.url + "/" + tab)
        page.wait_for_selector("main .panel")
        assert page.evaluate("document.scrollingElement.scrollWidth <= innerWidth + 1"), tab
    page.screenshot(path=str(screens / "narrow-index.png"))


def test_a_service_without_keys_opens_as_anonymous_without_asking_for_a_key(
    sample_index: Path, browser: Browser, screens: Path, tmp_path: Path
) -> None:
    with running_server(sample_index, tmp_path / "logs") as server:  # no --keys
        page = browser.open(server.url)
        page.wait_for_selector("#ask-form")
        ask(page, "How does a WAL checkpoint move pages back into the database?", "lookup")
        assert page.locator("#contexts > li").count() > 0
        page.screenshot(path=str(screens / "no-keys.png"))
        assert page.evaluate("document.getElementById('key-dialog').open") is False
        assert page.inner_text("#who") == "anonymous (this server takes no keys)"
        assert not page.is_visible("#change-key")  # no key could be accepted
        status, _, body = request("GET", server.url + "/v1/web/access")
        assert status == 200 and json.loads(body) == {"keys": False, "require_key": False}


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


def test_a_key_with_a_scope_of_its_own_browses_the_largest_and_can_switch(
    web_server: Server, web_keys: dict[str, Any], browser: Browser, screens: Path
) -> None:
    """team-a reads the public pages and two documents of its own: each scope has its own
    tree and graph, and the pages must not fall back to the two-document one."""
    def totals() -> tuple[int, int]:
        page.wait_for_selector("#graph[data-rendered='1'] canvas")
        return tuple(map(int, re.match(r"(\d+) of (\d+) entities", page.inner_text("#graph-count")).groups()))  # type: ignore[return-value, union-attr]

    public = request("GET", web_server.url + "/v1/web/graph?max_nodes=1")
    public_entities = __import__("json").loads(public[2])["entities"]
    page = browser.page(web_server.url, web_keys["team-a"])
    page.goto(web_server.url + "/#graph")
    assert page.locator("#scope-pick").is_visible()
    assert sorted(o.split(" (")[0] for o in page.locator("#scope option").all_inner_texts()) == ["acl:team-a", "public"]
    assert page.locator("#scope").input_value() == "public"  # the largest, not the most specific
    assert totals()[1] == public_entities
    page.screenshot(path=str(screens / "scope-public.png"))
    page.select_option("#scope", "acl:team-a")
    page.wait_for_selector(f"#graph-count:not(:has-text('of {public_entities} entities'))")
    assert totals()[1] < public_entities
    page.select_option("#scope", "public")

    # a tree walk through team-a's own tree opens in that tree, whatever scope was chosen
    page.goto(web_server.url + "/#ask")
    ask(page, "What is the launch code for Project Bluefin?", "tree")
    own = page.locator("li.ctx[data-source='bluefin.md']").first
    own.get_by_role("button", name="Show tree walk").click()
    page.wait_for_selector("#walk-note")
    assert page.locator("#scope").input_value() == "acl:team-a"
    assert page.locator("#outline .node-row.on-path").count() >= 1
    page.select_option("#scope", "public")

    # a summary's details and a community's report never print "null" for what they lack
    page.goto(web_server.url + "/#tree")
    page.locator("#outline > li > .node-row .title").click()
    page.wait_for_selector("#node-details #node-text")
    assert "null" not in page.inner_text("#node-details")
    page.goto(web_server.url + "/#communities")
    buttons = page.locator("#community-list button")
    for i in range(min(4, buttons.count())):
        buttons.nth(i).click()
        page.wait_for_selector(f"#community-list button[data-id='{buttons.nth(i).get_attribute('data-id')}'][aria-current='true']")
        page.wait_for_selector("#report-title")
        assert "null" not in page.inner_text("#community-report")
    # leaving the page stops its graph: a resize elsewhere makes no renderer measure a detached box
    page.goto(web_server.url + "/#index")
    page.wait_for_selector("#documents")
    page.set_viewport_size({"width": 1000, "height": 700})
    page.wait_for_timeout(300)
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
        page.goto(web_server.url + "/#graph?label=bluefin&depth=2")
        page.wait_for_selector("#graph-count")
        seen.append(page.inner_text("main"))
        if page.locator("#graph-nodes").count():
            seen.append(" ".join(page.locator("#graph-nodes button").evaluate_all("(bs) => bs.map((b) => b.getAttribute('aria-label'))")))
        page.goto(web_server.url + "/#documents")
        page.wait_for_selector("#doc-counts")
        seen.append(page.inner_text("main"))
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
            ("/v1/web/entities", {"q": "zebra", "limit": 100}), ("/v1/web/graph", {"max_nodes": 20000}),
            ("/v1/web/graph", {"label": "bluefin", "depth": 4}), ("/v1/documents", {}), ("/v1/web/communities", {"level": 0}),
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


# -- the documents page, on a server of its own (its rebuilds change what it serves) ------

@pytest.fixture(scope="module")
def docs_server(tmp_path_factory: pytest.TempPathFactory, sample_slice: Path) -> Iterator[tuple[Server, dict[str, str], Path]]:
    from arborgraph.service.keys import KeyStore

    docs = copy_pages(sample_slice, tmp_path_factory.mktemp("web-folder") / "docs", ["wal.md", "autoinc.md", "foreignkeys.md"])
    index = tmp_path_factory.mktemp("web-folder-index") / "idx"
    build_index([docs], index)
    keys_file = tmp_path_factory.mktemp("web-folder-keys") / "keys.json"
    store = KeyStore(keys_file)
    keys = {"writer": store.add("team-a", write=True)[0], "reader": store.add("team-a")[0]}
    with running_server(index, tmp_path_factory.mktemp("web-folder-logs"), "--keys", str(keys_file), "--docs", str(docs), "--poll-seconds", "0.2") as server:
        yield server, keys, docs


def test_documents_page_adds_rebuilds_and_deletes_for_a_writer(docs_server: tuple[Server, dict[str, str], Path], browser: Browser, screens: Path, tmp_path: Path) -> None:
    server, keys, docs = docs_server
    page = browser.page(server.url, keys["writer"])
    page.on("dialog", lambda dialog: dialog.accept())  # "Delete …?"
    page.goto(server.url + "/#documents")
    page.wait_for_selector("#doc-table")
    assert page.locator("#doc-table tbody tr").count() == 3
    upload = tmp_path / "osprey.md"
    upload.write_text("---\nacl: [team-a]\n---\n# Osprey runbook\n\nThe Osprey queue checkpoints every OSPREY-8080 frames.\n")
    page.set_input_files("#upload-file", str(upload))
    page.click("#upload")
    page.wait_for_selector("#doc-table tr[data-doc='osprey.md'][data-status='new']")
    assert (docs / "osprey.md").is_file()

    page.click("#rebuild")
    page.wait_for_selector("#rebuild-state[data-state='running']")
    page.screenshot(path=str(screens / "documents-rebuilding.png"))
    page.wait_for_selector("#doc-table tr[data-doc='osprey.md'][data-status='indexed']", timeout=300_000)  # reloaded once served
    page.wait_for_selector("#rebuild-state[data-state='done'][data-served='1']")
    assert "is served" in page.inner_text("#rebuild-state")
    page.screenshot(path=str(screens / "documents.png"))

    page.locator("#doc-table tr[data-doc='osprey.md'] button.danger").click()
    page.wait_for_selector("#doc-table tr[data-doc='osprey.md'][data-status='deleted']")
    assert not (docs / "osprey.md").exists()

    # a key that only reads sees the list, and no way to change it
    reader = browser.page(server.url, keys["reader"])
    reader.goto(server.url + "/#documents")
    reader.wait_for_selector("#read-only-note")
    assert reader.locator("#upload-form, #rebuild, #doc-table button.danger").count() == 0
    anonymous = browser.page(server.url, None)
    anonymous.goto(server.url + "/#documents")
    anonymous.wait_for_selector("#read-only-note")
    assert "osprey" not in anonymous.inner_text("main").lower()
