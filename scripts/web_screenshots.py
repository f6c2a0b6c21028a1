"""Photograph each page of the web explorer for docs/web.md (docs/screenshots/*.png).

    python scripts/web_screenshots.py [--docs DIR] [--out docs/screenshots]

Builds an index of DIR (default: the 20 pages of the sample manual the tests use, copied
to a temporary folder) with the default settings, serves it with the real ``arborgraph
serve --docs`` on a loopback port with a key that may write, and drives Debian's
headless Chromium (Playwright) at 1280x800 through Ask, Tree, Graph, Communities,
Documents (after adding one document, before the rebuild) and Index. Nothing is fetched
from the network: the pages load only what the server ships.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "tests"))

from conftest import SLICE  # noqa: E402  (the 20 pages of the sample manual the tests index)
from service_server import running_server  # noqa: E402

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
NEW_DOC = "---\ntitle: Osprey runbook\n---\n# Osprey runbook\n\nThe Osprey queue runs in WAL mode and checkpoints every 1000 frames.\n"


def shoot(url: str, key: str, out: Path, chromium: str) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.set_default_timeout(120_000)
        page.goto(url + "/")
        page.wait_for_selector("#key-dialog[open]")
        page.fill("#key-input", key)
        page.click("#key-save")
        page.wait_for_selector("#ask-form")

        page.fill("#question", "How does a WAL checkpoint move pages back into the database?")
        page.click("#ask-submit")
        page.wait_for_selector("#ask-result[data-done='1']")
        page.screenshot(path=str(out / "ask.png"))

        page.goto(url + "/#tree")
        page.wait_for_selector("#icicle rect")
        page.locator("#outline li[data-level] .title").nth(2).click()
        page.wait_for_selector("#node-details #node-text")
        page.screenshot(path=str(out / "tree.png"))

        page.goto(url + "/#graph")
        page.wait_for_selector("#graph[data-rendered='1'] canvas")
        page.wait_for_timeout(600)  # the camera's fit animation
        page.screenshot(path=str(out / "graph.png"))

        page.goto(url + "/#communities")
        page.locator("#community-list button").first.click()
        page.wait_for_selector("#graph[data-rendered='1'] canvas")
        page.wait_for_timeout(600)
        entity = page.locator("#graph-nodes button").first
        box = page.locator("#graph").bounding_box()
        assert box is not None
        page.mouse.click(box["x"] + float(entity.get_attribute("data-x") or 0), box["y"] + float(entity.get_attribute("data-y") or 0))
        page.wait_for_selector("#entity-name")
        page.evaluate("() => window.scrollTo(0, 0)")
        page.screenshot(path=str(out / "communities.png"))

        with tempfile.TemporaryDirectory() as tmp:
            upload = Path(tmp) / "osprey.md"
            upload.write_text(NEW_DOC, encoding="utf-8")
            page.goto(url + "/#documents")
            page.wait_for_selector("#doc-table")
            page.set_input_files("#upload-file", str(upload))
            page.click("#upload")
            page.wait_for_selector("#doc-table tr[data-doc='osprey.md']")
            page.locator("#doc-table tr[data-doc='osprey.md']").scroll_into_view_if_needed()
            page.evaluate("() => window.scrollTo(0, 0)")
            page.screenshot(path=str(out / "documents.png"))

        page.goto(url + "/#index")
        page.wait_for_selector("#documents")
        page.screenshot(path=str(out / "index.png"))
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, help="documents to index (default: 20 pages of the sample manual)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args()
    from arborgraph.pipeline import build_index
    from arborgraph.service.keys import KeyStore

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        docs = work / "docs"
        if args.docs:
            shutil.copytree(args.docs, docs)
        else:
            docs.mkdir()
            for name in SLICE:
                shutil.copy(ROOT / "examples" / "sqlite" / name, docs / name)
        index = work / "index"
        print(f"building an index of {docs} ...", file=sys.stderr)
        build_index([docs], index)
        key = KeyStore(work / "keys.json").add("editor", write=True)[0]
        with running_server(index, work / "logs", "--keys", str(work / "keys.json"), "--docs", str(docs)) as server:
            shoot(server.url, key, args.out, args.chromium)
    print(f"wrote {', '.join(sorted(p.name for p in args.out.glob('*.png')))} in {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
