"""A manual split into one HTML page per section, its outline only in each page's
navigation (DocBook's chunked HTML): the build's tree follows that navigation, within
each access scope, and a change to it alone is a change to the tree.

Real files, the real loaders, chunker, embedding model and tree build.
"""

from __future__ import annotations

from pathlib import Path

import arborgraph
from arborgraph.config import Config
from arborgraph.pipeline import build_index

NO_GRAPH = Config(build_graph=False)

# file -> (title, the page above it, the page after it); the files' names sort in
# another order than the manual reads
PAGES: dict[str, tuple[str, str | None, str | None]] = {
    "index.html": ("The Sample Guide", None, "zz-start.html"),
    "zz-start.html": ("Chapter 1. Getting Started", "index.html", "aa-install.html"),
    "aa-install.html": ("1.1. Installing the Tool", "zz-start.html", "mm-config.html"),
    "mm-config.html": ("1.2. Writing the Configuration File", "zz-start.html", "bb-tuning.html"),
    "bb-tuning.html": ("Chapter 2. Tuning Performance", "index.html", "cc-cache.html"),
    "cc-cache.html": ("2.1. Sizing the Page Cache", "bb-tuning.html", "hr-chapter.html"),
    "hr-chapter.html": ("Chapter 3. Salary Bands", "index.html", "hr-public.html"),
    "hr-public.html": ("3.1. Public Holiday Calendar", "hr-chapter.html", None),
}
RESTRICTED = "hr-chapter.html"


def page(title: str, up: str | None, following: str | None) -> str:
    links = "".join(f'<link rel="{rel}" href="{href}"/>' for rel, href in (("up", up), ("next", following)) if href)
    subject = title.split(". ", 1)[-1]
    body = " ".join(
        f"{subject} is described here in sentence {n}, with the settings a reader needs for it." for n in range(1, 4)
    )
    return (
        f"<html><head><title>{title}</title>{links}</head><body><div class='section'>"
        f"<h2>{title}</h2><p>{body}</p><p>{body}</p></div></body></html>"
    )


def write_manual(docs: Path, pages: dict[str, tuple[str, str | None, str | None]]) -> None:
    docs.mkdir(exist_ok=True)
    for name, (title, up, following) in pages.items():
        (docs / name).write_text(page(title, up, following), encoding="utf-8")
    (docs / f"{RESTRICTED}.meta.yaml").write_text("acl: [hr]\n", encoding="utf-8")


def outline_of(index: Path, principal: str | None = None, scope: str | None = None) -> list[tuple[int, str]]:
    """The tree's summary nodes depth first from the root, as (depth, title)."""
    kb = arborgraph.open(index)
    try:
        tree = kb.explorer.tree_view(principal, scope=scope).tree
    finally:
        kb.close()
    out: list[tuple[int, str]] = []
    stack = [(tree.root_id, 0)]
    while stack:
        node_id, depth = stack.pop()
        node = tree.node(node_id)
        if node.level == 0:
            continue
        out.append((depth, node.title))
        stack.extend((c, depth + 1) for c in reversed(node.children))
    return out


def test_the_tree_follows_the_pages_navigation_in_reading_order(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write_manual(docs, PAGES)
    build_index([docs], tmp_path / "idx", NO_GRAPH)
    public = outline_of(tmp_path / "idx")
    assert public == [
        (0, "The Sample Guide"),  # the root over the two pages with nothing above them
        (1, "The Sample Guide"),
        (2, "Getting Started"),
        (3, "Installing the Tool"),
        (3, "Writing the Configuration File"),
        (2, "Tuning Performance"),
        (3, "Sizing the Page Cache"),
        # its chapter is restricted: in the public tree it has no parent page, and the
        # chapter's title appears nowhere
        (1, "Public Holiday Calendar"),
    ]
    # the restricted chapter's own tree holds it alone: nothing public is pulled in
    assert outline_of(tmp_path / "idx", "hr", scope="acl:hr") == [(0, "Salary Bands")]


def test_a_change_to_the_navigation_alone_rebuilds_the_tree(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write_manual(docs, PAGES)
    build_index([docs], tmp_path / "idx", NO_GRAPH)
    moved = dict(PAGES)
    moved["cc-cache.html"] = ("2.1. Sizing the Page Cache", "zz-start.html", "hr-chapter.html")  # now under chapter 1
    write_manual(docs, moved)
    again = build_index([docs], tmp_path / "idx", NO_GRAPH)
    assert (again.stages["tree"]["trees"], again.stages["tree"]["reused"]) == (1, 1)  # public rebuilt, hr kept
    assert outline_of(tmp_path / "idx")[2:8] == [
        (2, "Getting Started"),
        (3, "Installing the Tool"),
        (3, "Writing the Configuration File"),
        (3, "Sizing the Page Cache"),
        (2, "Tuning Performance"),  # without the section that moved
        (1, "Public Holiday Calendar"),
    ]


def test_navigation_stays_inside_the_input_folder_it_was_read_from(tmp_path: Path) -> None:
    # two manuals given as two inputs, each with its own index.html: the build keeps the
    # first one's; the second's chapters name "index.html" as their parent, which is not
    # the page their links point to
    write_manual(tmp_path / "guide", PAGES)
    other = {
        "index.html": ("Another Manual", None, "intro.html"),
        "intro.html": ("Chapter 1. Introduction to Another Manual", "index.html", "usage.html"),
        "usage.html": ("1.1. Using Another Manual", "intro.html", None),
    }
    write_manual(tmp_path / "other", other)
    build_index([tmp_path / "guide", tmp_path / "other"], tmp_path / "idx", NO_GRAPH)
    public = outline_of(tmp_path / "idx")
    assert (1, "The Sample Guide") in public
    guide = public.index((1, "The Sample Guide"))
    inside_guide = public[guide + 1 : next(i for i in range(guide + 1, len(public)) if public[i][0] <= 1)]
    assert all("Another Manual" not in title for _, title in inside_guide)
    # within the second manual, its own chapter still holds its section
    intro = public.index(next(p for p in public if p[1] == "Introduction to Another Manual"))
    assert public[intro + 1] == (public[intro][0] + 1, "Using Another Manual")
