"""A page titled by a module's name is said with the one-line summary it opens with:
"celery.utils.log — Logging utilities", the way the Python manual titles its pages."""

from __future__ import annotations

from graphrag.graph import KnowledgeGraph
from graphrag.model import Community, Entity, Mention
from graphrag.reports import ExtractiveReportWriter, write_reports
from arborgraph.core.taglines import is_identifier_title, page_taglines, with_tagline

BANNER = "This document describes the current stable version of Celery (5.2). For development docs, go here."


def test_identifier_titles_are_dotted_paths_and_snake_case_names() -> None:
    assert is_identifier_title("celery.utils.log")
    assert is_identifier_title("oslo_log")
    assert not is_identifier_title("Calling Tasks")
    assert not is_identifier_title("Logging")
    assert not is_identifier_title("X.509 Reference")


def test_the_summary_after_a_banner_many_pages_share_is_the_tagline() -> None:
    pages = {
        "celery.utils.log": [BANNER, "Logging utilities.\n\nclass celery.utils.log.ColorFormatter(fmt=None)[source]"],
        "celery.schedules": [BANNER, "Schedules define the intervals at which periodic tasks run.\n\nexception x"],
        "Calling Tasks": [BANNER, "This document describes Celery's uniform Calling API."],
        "celery.app.task": [BANNER, "class celery.app.task.Task[source]\n\nTask base class."],
        "celery.bin.worker": [BANNER, "Program used to start a Celery worker instance, with the options the "
                                      "command line takes and their defaults."],
        "celery.result": [BANNER, "The celery.result module holds task results and state."],
    }
    assert page_taglines(pages.items()) == {
        "celery.utils.log": "Logging utilities",
        "celery.schedules": "Schedules define the intervals at which periodic tasks run",
    }


def test_a_page_alone_has_no_banner_to_pass_over() -> None:
    # with too few pages to call the opening sentence shared, it is the page's own
    pages = [("vine.promises", ["Promise implementation.\n\nclass vine.promises.promise(fun=None)"])]
    assert page_taglines(pages) == {"vine.promises": "Promise implementation"}
    assert page_taglines([("vine.promises", ["class vine.promises.promise(fun=None)"])]) == {}


def test_a_title_two_pages_carry_has_no_tagline_of_either() -> None:
    pages = [("celery.events.state", ["In-memory representation of cluster state."]),
             ("celery.events.state", ["Event dispatcher sends events."])]
    assert page_taglines(pages) == {}


def test_with_tagline() -> None:
    assert with_tagline("amqp.channel", "AMQP Channels") == "amqp.channel — AMQP Channels"
    assert with_tagline("amqp.channel", None) == "amqp.channel"


def _entity(eid: str, name: str, chunks: list[str]) -> Entity:
    return Entity(id=eid, name=name, type="term", mentions=[Mention(c, 0, len(name)) for c in chunks])


def _manual() -> tuple[KnowledgeGraph, dict[str, list[str]], dict[str, str]]:
    """A community at home on the page 'celery.utils.log', and four other pages with the
    site's banner."""
    log = ["log#0", "log#1", "log#2"]
    entities = [
        _entity("e1", "ColorFormatter", log[1:]),
        _entity("e2", "LoggingProxy", log[1:]),
        _entity("e3", "get_task_logger", log[1:]),
    ]
    headings = {c: ["celery.utils.log"] for c in log}
    texts = {
        "log#0": BANNER,
        "log#1": "Logging utilities.\n\nclass celery.utils.log.ColorFormatter(fmt=None, use_color=True)",
        "log#2": "class celery.utils.log.LoggingProxy(logger, loglevel=None)\n\nForward file object to logger.",
    }
    for page in ("calling", "canvas", "routing", "workers"):
        headings[f"{page}#0"] = [page.capitalize()]
        texts[f"{page}#0"] = BANNER
    kg = KnowledgeGraph({e.id: e for e in entities}, {}, {0: Community(0, 0, ["e1", "e2", "e3"])})
    return kg, headings, texts


def test_a_community_at_home_on_a_module_page_is_titled_with_its_summary() -> None:
    kg, headings, texts = _manual()
    reports = write_reports(kg, ExtractiveReportWriter(), headings=headings, texts=texts)
    assert reports[0].title == "celery.utils.log — Logging utilities"


def test_without_the_texts_the_page_name_alone() -> None:
    kg, headings, _ = _manual()
    reports = write_reports(kg, ExtractiveReportWriter(), headings=headings)
    assert reports[0].title == "celery.utils.log"


def test_a_title_two_pages_carry_gets_no_tagline() -> None:
    kg, headings, texts = _manual()
    # the dispatcher's page, copied with the state module's title
    headings["dispatcher#0"] = ["celery.utils.log"]
    texts["dispatcher#0"] = "Event dispatcher sends events."
    reports = write_reports(kg, ExtractiveReportWriter(), headings=headings, texts=texts)
    assert reports[0].title == "celery.utils.log"


# a small site: every page opens with the banner, then its own first sentence
SITE = {
    "celery.utils.log": [BANNER, "Logging utilities.\n\nclass celery.utils.log.ColorFormatter(fmt=None)"],
    "Calling Tasks": [BANNER, "This document describes Celery's uniform Calling API."],
    "Canvas": [BANNER, "A signature wraps the arguments of a single task invocation."],
    "Routing": [BANNER, "Routing sends messages to the right queues."],
    "Workers": [BANNER, "Workers run the tasks."],
}


def _outline_nodes(pages: dict[str, list[str]]) -> dict[str, str]:
    """Title -> digest of each outline node of a tree over ``pages``."""
    from outline_digests import outline_digests
    from raptor.tree import Leaf

    leaves = [
        Leaf(chunk_id=f"p{p}#{n}", doc_id=f"p{p}", text=text, heading_path=[title])
        for p, (title, chunks) in enumerate(pages.items()) for n, text in enumerate(chunks)
    ]
    return outline_digests(leaves)


def test_the_trees_page_node_is_said_with_its_summary_too() -> None:
    titles = set(_outline_nodes(SITE))
    assert "celery.utils.log — Logging utilities" in titles
    assert {"Calling Tasks", "Canvas", "Routing", "Workers"} <= titles


def test_the_sentences_more_than_three_pages_open_with_are_the_banner() -> None:
    from arborgraph.core.taglines import banner_key, banner_sentences, page_opening

    shared_by_three = "Routing sends messages to the right queues."
    openings = [page_opening([BANNER, f"Page {n} is about topic {n}."]) for n in range(4)]
    openings += [page_opening([shared_by_three]) for _ in range(3)]
    banner = banner_sentences(openings)
    assert banner == {
        banner_key("This document describes the current stable version of Celery (5.2)."),
        banner_key("For development docs, go here."),
    }
    assert banner_sentences(openings[:3]) == frozenset()  # three pages are no site


def test_no_tree_digest_or_name_quotes_the_banner() -> None:
    from arborgraph.core.taglines import banner_key
    from raptor.naming import _prose_runs

    digests = _outline_nodes(SITE)
    assert digests["Canvas"].startswith("A signature wraps the arguments")
    assert not any("development docs" in text or "stable version" in text for text in digests.values())
    banner = frozenset({banner_key("For development docs, go here.")})
    text = "For development docs, go here.\n\nThe workers execute the queued tasks quickly."
    assert ["development", "docs"] in _prose_runs(text)
    assert _prose_runs(text, banner) == [["workers", "execute"], ["queued", "tasks", "quickly"]]


# five pen pages, each with its own opening, then the docstrings every pen inherits
INHERITED = ("closePath()\n\nYou must call either pen.closePath() or pen.endPath() after each sub path.\n\n"
             "curveTo(*points)\n\nDraw a cubic bezier with an arbitrary number of control points.")
PENS = {
    "areaPen": ["Calculate the area of a glyph.\n\n" + INHERITED],
    "boundsPen": ["Pen to calculate the bounds of a shape.\n\n" + INHERITED],
    "perimeterPen": ["Calculate the perimeter of a glyph.\n\n" + INHERITED],
    "recordingPen": ["Pen recording operations that can be accessed or replayed.\n\n" + INHERITED],
    # a page of nothing but what the others share: its own node still says it
    "basePen": [INHERITED],
}


def test_sentences_more_than_three_documents_carry_are_shared() -> None:
    from arborgraph.core.taglines import banner_key, shared_sentences

    chunks = [(page, text) for page, texts in PENS.items() for text in texts]
    shared = shared_sentences(chunks)
    assert banner_key("You must call either pen.closePath() or pen.endPath() after each sub path.") in shared
    assert banner_key("Draw a cubic bezier with an arbitrary number of control points.") in shared
    assert banner_key("Calculate the area of a glyph.") not in shared
    assert shared_sentences(chunks[:3]) == frozenset()
    # one document saying it in many chunks is one carrier
    assert shared_sentences([("basePen", INHERITED)] * 5) == frozenset()


def test_no_tree_digest_quotes_what_many_pages_share_beside_words_of_its_own() -> None:
    digests = _outline_nodes(PENS)
    assert digests["areaPen"] == "Calculate the area of a glyph."
    assert digests["recordingPen"] == "Pen recording operations that can be accessed or replayed."
    # (not its title alone)
    assert digests["basePen"] == "Draw a cubic bezier with an arbitrary number of control points."


def test_no_report_overview_quotes_what_many_pages_share() -> None:
    log = ["log#0", "log#1"]
    entities = [_entity("e1", "ColorFormatter", log), _entity("e2", "LoggingProxy", log)]
    headings = {c: ["Logging"] for c in log}
    texts = {
        "log#0": "The logging helpers colour records. ColorFormatter colours records by level.",
        "log#1": "LoggingProxy forwards a file object to a logger. "
                 "Register a virtual subclass of an ABC with ColorFormatter and LoggingProxy.",
    }
    for page in ("calling", "canvas", "routing", "workers"):
        headings[f"{page}#0"] = [page.capitalize()]
        texts[f"{page}#0"] = f"{page.capitalize()} is a topic. Register a virtual subclass of an ABC with ColorFormatter and LoggingProxy."
    kg = KnowledgeGraph({e.id: e for e in entities}, {}, {0: Community(0, 0, ["e1", "e2"])})
    summary = write_reports(kg, ExtractiveReportWriter(), headings=headings, texts=texts)[0].summary
    assert "LoggingProxy forwards a file object to a logger." in summary
    assert "virtual subclass" not in summary


def test_a_section_many_pages_share_is_listed_without_its_lead() -> None:
    from outline_digests import outline_digests
    from raptor.tree import Leaf

    drawing = "You must call either pen.closePath() or pen.endPath() after each sub path. Draw a cubic bezier."
    leaves = []
    for p, own in enumerate(["Calculate the area of a glyph.", "Pen to calculate the bounds of a shape.",
                             "Calculate the perimeter of a glyph.", "Pen recording operations to replay.",
                             "Pen drawing onto a path object."]):
        leaves += [
            Leaf(chunk_id=f"p{p}#0", doc_id=f"p{p}", text=own, heading_path=[f"pen{p}"]),
            Leaf(chunk_id=f"p{p}#1", doc_id=f"p{p}", text=f"Pen {p} keeps its state in memory.", heading_path=[f"pen{p}"]),
            Leaf(chunk_id=f"p{p}#2", doc_id=f"p{p}", text=drawing, heading_path=[f"pen{p}", "Drawing"]),
            Leaf(chunk_id=f"p{p}#3", doc_id=f"p{p}", text=drawing + " Then stop.", heading_path=[f"pen{p}", "Drawing"]),
        ]
    digests = outline_digests(leaves)
    # the shared section's own node says what it is; its page lists it by name only
    assert digests["pen0: Drawing"].startswith("You must call either pen.closePath()")
    assert digests["pen0"] == "Calculate the area of a glyph.\nPen 0 keeps its state in memory.\nAlso: Drawing."
