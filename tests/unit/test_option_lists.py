"""A section that is a list of options (a man page's OPTIONS, as the HTML loader turns a
definition list into text: each term on a line of its own, then its gloss) is digested
as the options with their glosses ("-d, --dereference: Dereference tags into object
IDs as well."), not as glosses that name no option (raters: "context-free option
fragments as the whole summary", 2 of 5). Titles and reports are made by the real code."""

from __future__ import annotations

from arborgraph.core.definitions import is_term, opens_with_term, term_one_liners
from arborgraph.core.leads import announces_list, opening
from graphrag.model import Community
from hand_graphs import entity as _entity
from hand_graphs import extractive_reports
from hand_graphs import graph as _graph
from hand_graphs import page_chunks as _chunks
from outline_digests import outline_digests
from raptor.tree import Leaf

OPTIONS = [
    "--head\n\nShow the HEAD reference, even if it would normally be filtered out.\n\n"
    "-d\n\n--dereference\n\nDereference tags into object IDs as well. They will be shown with \"^{}\" appended.\n\n"
    "-s\n\n--hash[=<n>]\n\nOnly show the SHA-1 hash, not the reference name.",
    "--abbrev[=<n>]\n\n`git show-ref --abbrev`\n\n"
    "-q\n\n--quiet\n\nDo not print any results to stdout. It can check silently.\n\n"
    "<pattern>…\n\nShow references matching one or more patterns.\n\n"
    "-C <configs>\n\nSpecify the configuration(s) to be packaged (e.g. Debug or Release).",
]
DESCRIPTION = "Displays references available in a local repository along with the associated commit IDs."


def test_terms_and_their_glosses() -> None:
    assert all(is_term(t) for t in ["--head", "-f fmt (input/output)", "--hash[=<n>]", "<commit>", "core.fileMode"])
    assert not any(is_term(t) for t in ["Show the HEAD reference.", "Options:", "Remap to ancestor", "git diff <path>"])
    chunks = list(enumerate(OPTIONS))
    assert term_one_liners([(f"c{k}", text) for k, text in chunks]) == [
        ("--head", "Show the HEAD reference, even if it would normally be filtered out.", "c0"),
        ("-d, --dereference", "Dereference tags into object IDs as well.", "c0"),
        ("-s, --hash[=<n>]", "Only show the SHA-1 hash, not the reference name.", "c0"),
        # --abbrev's definition opens with code: left out
        ("-q, --quiet", "Do not print any results to stdout.", "c1"),
        ("<pattern>…", "Show references matching one or more patterns.", "c1"),
        # cut at "(e.g." by the sentence splitter: left out
    ]
    assert opens_with_term(OPTIONS)
    assert not opens_with_term([DESCRIPTION, *OPTIONS])


def _leaves() -> list[Leaf]:
    sections = [("DESCRIPTION", DESCRIPTION), ("OPTIONS", OPTIONS[0]), ("OPTIONS", OPTIONS[1])]
    return [Leaf(chunk_id=f"show-ref#{n}", doc_id="show-ref", text=text, heading_path=["git-show-ref(1)", heading])
            for n, (heading, text) in enumerate(sections)]


def test_the_trees_node_of_an_options_section_lists_its_options() -> None:
    leaves = _leaves()
    digests = outline_digests(leaves)
    options = next(text for title, text in digests.items() if title.endswith("OPTIONS"))
    assert options.split("\n")[:3] == [
        "--head: Show the HEAD reference, even if it would normally be filtered out.",
        "-d, --dereference: Dereference tags into object IDs as well.",
        "-s, --hash[=<n>]: Only show the SHA-1 hash, not the reference name.",
    ]
    # the page: its prose section's lead, and the options section under its name only
    assert digests["git-show-ref(1)"].split("\n") == [f"DESCRIPTION: {DESCRIPTION}", "Also: OPTIONS."]


def test_a_community_at_home_in_an_options_section_is_said_by_its_options() -> None:
    chunks = _chunks({"show-ref": [(["git-show-ref(1)", "OPTIONS"], text) for text in OPTIONS]})
    members = ["show-ref#0", "show-ref#1"]
    kg = _graph([_entity("h", "--head", members), _entity("d", "--dereference", members)], [],
                [Community(0, 0, ["h", "d"])])
    report = extractive_reports(kg, chunks)[0]
    assert report.summary.split("\n") == [
        "--head: Show the HEAD reference, even if it would normally be filtered out.",
        "-d, --dereference: Dereference tags into object IDs as well.",
        "-s, --hash[=<n>]: Only show the SHA-1 hash, not the reference name.",
        # the list goes on: the names of the rest
        "Also: -q, --quiet; <pattern>…",
    ]


# FFmpeg's filters: a sentence of what the filter does, then a list it announces, whose
# entries are named in plain words
CROP = (
    "Crop the input video to given dimensions.\n\nIt accepts the following parameters:\n\n"
    "w, out_w\n\nThe width of the output video. It defaults to iw.\n\n"
    "h, out_h\n\nThe height of the output video.\n\n"
    "keep_aspect\n\nNew in version 3.8.\n\n"
    "exact\n\nEnable exact cropping."
)


def test_an_announced_list_ends_the_opening_and_names_its_entries() -> None:
    assert opening(CROP, 3) == ["Crop the input video to given dimensions."]
    assert announces_list(CROP, 3)
    # a list of code lines after an announcement is no list of named entries
    files = "A package installs its headers. Its build script takes the following arguments:\n\n<prefix>/foo.h\n\n<prefix>/libfoo.a\n\nIt may also provide a file."
    assert not announces_list(files, 3)
    # only a list of named things (options, fields ...) is announced, not an example
    example = "Print the version first. It looks like this:\n\nGNU Emacs 19.30\n\nThe program's name should be a constant string."
    assert not announces_list(example, 3) and term_one_liners([("v#0", example)], announced=True) == []
    assert term_one_liners([("crop#0", CROP)]) == []  # plain names only when announced
    assert term_one_liners([("crop#0", CROP)], announced=True) == [
        ("w, out_w", "The width of the output video.", "crop#0"),
        ("h, out_h", "The height of the output video.", "crop#0"),
        # keep_aspect's gloss says only when it came: left out
        ("exact", "Enable exact cropping.", "crop#0"),
    ]


def test_the_trees_node_of_a_section_with_an_announced_list_says_what_it_is_then_its_entries() -> None:
    more = "The filter works on every pixel format of the input video."  # past the list: no opening
    leaves = [Leaf(chunk_id=f"crop#{n}", doc_id="filters", text=text, heading_path=["Video Filters", "crop"])
              for n, text in enumerate([CROP, more])]
    leaves.append(Leaf(chunk_id="scale#0", doc_id="filters", text="Scale the input video.", heading_path=["Video Filters", "scale"]))
    digests = outline_digests(leaves)
    assert digests["Video Filters: crop"].split("\n") == [
        "Crop the input video to given dimensions.",
        "w, out_w: The width of the output video.",
        "h, out_h: The height of the output video.",
        "exact: Enable exact cropping.",
    ]
