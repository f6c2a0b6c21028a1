"""Community titles and summaries as the fourth blind rating asked (issue #35 item 3,
Apache httpd and zsh): no title bar's site name in a title, no version requirement, side
detail or table cell for a section's lead, no list of names for a summary.

The chunks are the manuals' own text (Apache httpd 2.4's mpm_common, mod_http2 and core
pages, zsh's Prompt Expansion chapter, as the HTML loader reads them); the graphs are made
by hand so that each rule's answer is known; sections, leads, titles and reports are made
by the real code."""

from __future__ import annotations

from arborgraph.index.structure_check import is_template_sentence
from graphrag.build import section_leads
from graphrag.model import Community
from graphrag.naming import SectionIndex, community_titles, shared_title_suffix
from graphrag.reports import ExtractiveReportWriter, sets_terms, states_something, write_reports
from hand_graphs import entity as _entity
from hand_graphs import graph as _graph
from hand_graphs import page_chunks as _chunks

_BAR = " - Apache HTTP Server Version 2.4"

APACHE = {
    "mpm_common": [
        ([f"mpm_common{_BAR}", "Apache MPM Common Directives"],
         "A collection of directives that are implemented by more than one multi-processing module (MPM)."),
        ([f"mpm_common{_BAR}", "Apache MPM Common Directives", "MinSpareThreads Directive ¶"],
         "Description: | Minimum number of idle threads available to handle request spikes\n"
         "Syntax: | MinSpareThreads number\nDefault: | See usage for details\n\n"
         "Minimum number of idle threads to handle request spikes. Different MPMs deal with this directive"
         " differently."),
    ],
    "mod_http2": [
        ([f"mod_http2{_BAR}", "Apache Module mod_http2", "H2PushPriority Directive ¶"],
         "Description: | H2 Server Push Priority\nSyntax: | H2PushPriority mime-type [after|before|interleaved]"
         " [weight]\nCompatibility: | Available in version 2.4.18 and later.\n\n"
         "For having an effect, a nghttp2 library version 1.5.0 or newer is necessary. This directive defines"
         " the priority handling of pushed responses based on the content-type of the response."),
    ],
    "core": [
        ([f"core{_BAR}", "Apache Core Features", "QualifyRedirectURL Directive ¶"],
         "Description: | Controls whether the REDIRECT_URL environment variable is fully qualified\n\n"
         "By default, the variable contains the verbatim URL requested by the client, such as \"/index.html\"."
         " This directive ensures that the REDIRECT_URL variable is fully qualified."),
    ],
}

ZSH = {
    "prompt": [
        (["13 Prompt Expansion", "13.2 Simple Prompt Escapes", "13.2.4 Date and time"],
         "%D\n\nThe date in yy-mm-dd format.\n\n%T\n\nCurrent time of day, in 24-hour format.\n\n%t\n\n%@\n\n"
         "Current time of day, in 12-hour, am/pm format."),
    ],
}


def test_the_site_name_every_title_bar_repeats_is_no_part_of_a_title() -> None:
    chunks = _chunks(APACHE)
    assert shared_title_suffix(c.heading_path[0] for c in chunks) == _BAR
    # a manual whose pages have their own titles has no such suffix
    assert shared_title_suffix(["Prompt Expansion", "Zsh Line Editor", "Parameters - Array Subscripts"]) == ""
    kg = _graph([_entity("m", "MinSpareThreads", ["mpm_common#0", "mpm_common#1"])], [], [Community(0, 0, ["m"])])
    index = SectionIndex(kg, {c.chunk_id: list(c.heading_path) for c in chunks})
    # the page's own heading below the title bar is its title
    assert index.paths["mpm_common#0"] == ("Apache MPM Common Directives",)
    titles = community_titles(kg, {c.chunk_id: list(c.heading_path) for c in chunks})
    assert "Apache HTTP Server" not in titles[0].text


def test_a_table_cell_or_a_headword_less_definition_states_nothing() -> None:
    assert not states_something("Minimum number of idle threads to handle request spikes.")
    assert not states_something("Current time of day, in 24-hour format.")
    assert not states_something("The filename of the DBM format file.")
    assert not states_something("The restriction of access to network realms.")  # "access" is no "-s" form
    assert states_something("A checkpoint copies frames back into the database.")
    assert states_something("This directive defines the priority handling of pushed responses.")
    assert states_something("The server closes the connection after a timeout.")
    assert states_something("Use the following command to start the server.")


def test_a_lead_is_no_version_requirement_default_or_table_cell() -> None:
    leads = section_leads(_chunks(APACHE) + _chunks(ZSH))
    # a noun phrase (the Description cell again) leads only a section with nothing else
    # ("this directive" after it leans on the heading): it says what that heading is
    assert leads["mpm_common#1"] == "Minimum number of idle threads to handle request spikes."
    assert section_leads(_chunks({"p": [(["CMakeDependentOption"], "Macro to provide an option dependent on"
                                        " other options. CMake presents the option only when its conditions"
                                        " hold.")]})) == {"p#0": "CMake presents the option only when its conditions hold."}
    # a library's version requirement is the terms the directive applies on, not what it
    # is; a default is one detail ("This directive ..." after them leans on the heading)
    assert "mod_http2#0" not in leads
    assert "core#0" not in leads
    assert not states_something("Current time of day, in 12-hour, am/pm format.")
    # nor a summary's sentence (mod_reqtimeout's report quoted it)
    assert sets_terms("The handshake stage is available since version 2.4.39.")
    assert not sets_terms("The version 2 protocol is used by default on every listener.")


def test_a_community_no_lead_names_is_told_by_its_pages_lead_not_a_list_of_names() -> None:
    chunks = _chunks(APACHE)
    headings = {c.chunk_id: list(c.heading_path) for c in chunks}
    # two names the manual mentions in the directive's table only: no sentence of them
    kg = _graph(
        [_entity("n", "number", ["mpm_common#1"]), _entity("s", "MinSpareThreads number", ["mpm_common#1"])],
        [], [Community(0, 0, ["n", "s"])],
    )
    summary = write_reports(kg, ExtractiveReportWriter(), headings=headings, leads=section_leads(chunks))[0].summary
    assert not is_template_sentence(summary)
    assert ", in " not in summary


def test_a_noun_phrase_is_quoted_only_under_its_own_heading() -> None:
    # the page's opening is a table: the report of a community titled by the page must not
    # quote the noun phrase opening a directive's section ("Apache MPM Common Directives:
    # Minimum number of idle threads to handle request spikes." was marked a pasted cell)
    pages = {"mpm_common": [
        ([f"mpm_common{_BAR}", "Apache MPM Common Directives"], "Directive | Module\nMinSpareThreads | event"),
        *APACHE["mpm_common"][1:],
        ([f"mpm_common{_BAR}", "Apache MPM Common Directives", "ListenBacklog Directive ¶"],
         "The maximum length of the queue of pending connections sets how many clients may wait."),
    ]}
    chunks = _chunks(pages)
    headings = {c.chunk_id: list(c.heading_path) for c in chunks}
    kg = _graph(
        [_entity("m", "MinSpareThreads", ["mpm_common#0", "mpm_common#1", "mpm_common#2"]),
         _entity("e", "event", ["mpm_common#0", "mpm_common#2"])],
        [], [Community(0, 0, ["m", "e"])],
    )
    report = write_reports(kg, ExtractiveReportWriter(), headings=headings, leads=section_leads(chunks))[0]
    assert report.title == "Apache MPM Common Directives"
    assert "Minimum number of idle threads" not in report.summary


def test_a_page_calling_itself_a_quick_reference_is_an_index_not_a_home() -> None:
    # Apache httpd's "Directive Quick Reference" names a few hundred of its thousands of
    # entities, under a fifth of them, in one table; the directive's own page is its home
    rows = "\n".join(f"Directive{i} on|off | off | svdh | E" for i in range(24))
    pages = {
        "quickreference": [([f"Directive Quick Reference{_BAR}", "Directive Quick Reference"], rows)],
        **{f"p{k}": [([f"page{k}{_BAR}", f"Page {k}"], f"Page {k} explains some other topic at length.")]
           for k in range(200)},
        "mod_dir": [([f"mod_dir{_BAR}", "Apache Module mod_dir", "DirectoryIndex Directive ¶"],
                     "The DirectoryIndex directive sets the list of resources to look for.")],
    }
    chunks = _chunks(pages)
    headings = {c.chunk_id: list(c.heading_path) for c in chunks}
    entities = [_entity(f"d{i}", f"Directive{i}", ["quickreference#0"]) for i in range(24)]
    entities += [_entity(f"x{k}", f"Topic{k}", [f"p{k}#0"]) for k in range(200)]
    entities += [_entity("di", "DirectoryIndex", ["quickreference#0", "quickreference#0", "mod_dir#0"])]
    kg = _graph(entities, [], [Community(0, 0, ["di", "d1"])])
    index = SectionIndex(kg, headings)
    assert ("Directive Quick Reference",) in index.index_like
    assert not community_titles(kg, headings)[0].text.startswith("Directive Quick Reference")


def test_a_heading_other_pages_have_too_is_titled_with_its_page() -> None:
    # FFmpeg's tools each have a "Main options" section: alone, the title does not say
    # whose (raters: "doesn't say whether it means ffmpeg, ffprobe or ffplay")
    pages = {
        tool: [([f"{tool} Documentation", "Options", "Main options"], f"The {tool} tool takes -f to force a format.")]
        for tool in ("ffmpeg", "ffprobe")
    }
    pages["ffmpeg"].append((["ffmpeg Documentation", "Stream selection"], "The ffmpeg tool picks one stream of each kind."))
    chunks = _chunks(pages)
    headings = {c.chunk_id: list(c.heading_path) for c in chunks}
    kg = _graph([_entity("f", "-f", ["ffprobe#0", "ffprobe#0"]), _entity("s", "-show_streams", ["ffprobe#0"])], [],
                [Community(0, 0, ["f", "s"])])
    assert community_titles(kg, headings)[0].text == "ffprobe Documentation: Main options"
    index = SectionIndex(kg, headings)
    # a heading only one page has keeps its own words
    assert index.title(("ffmpeg Documentation", "Stream selection")) == "Stream selection"
