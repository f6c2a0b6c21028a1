"""Community titles and reports as a reader rates them (issue #35 item 3, second rating):
a community spread over the manual is titled by the page holding most of it and told by
that page's sentences; no bare identifier or list dash in a title; no keyword-list stub,
credits line, repeated or dangling sentence in a summary.

The graphs are made by hand so that each rule's answer is known; the sections, leads,
titles and reports are made by the real code (section_leads over real chunks,
SectionIndex, community_titles, write_reports)."""

from __future__ import annotations

from arborgraph.core.text import reads_alone
from arborgraph.index.structure_check import is_template_sentence
from graphrag.build import section_leads
from graphrag.model import Community, Relation
from graphrag.naming import SectionIndex, community_titles, page_title
from graphrag.reports import ExtractiveReportWriter, is_credit, write_reports
from hand_graphs import entity as _entity
from hand_graphs import graph as _graph
from hand_graphs import page_chunks as _chunks


# four pages of a mail server's manual: a reference of parameters, a TLS guide, a queue
# guide and an install guide whose headings are numbered list items
PAGES = {
    "params": [
        (["Mail Configuration Parameters"], "The main.cf file holds the parameters that control the mail system."),
        (["Mail Configuration Parameters", "mail_owner"], "The UNIX system account that owns the mail queue and most files."),
        (["Mail Configuration Parameters", "queue_directory"], "The location of the mail queue directory on the host."),
    ],
    "tls": [
        (["TLS Support"], "Transport Layer Security provides certificate-based authentication and encrypted sessions."),
        (["TLS Support", "Server settings"], "In order to use TLS, the server needs a certificate and a private key."),
        (["TLS Support", "Server settings"], "Liviu Daia added support for certificate chains in the server."),
    ],
    "queue": [
        (["Queue Guide"], "The queue manager moves mail through the active queue to the delivery agents."),
        (["Queue Guide", "Deferred mail"], "In that case the queue manager tries the delivery again later."),
    ],
    "install": [
        (["Installing", "4 - Building on a supported system"], "The build runs on FreeBSD, Linux and Solaris systems."),
    ],
}


def test_a_heading_loses_its_number_and_list_dash() -> None:
    assert page_title("4 - Building on a supported system") == "Building on a supported system"
    assert page_title("- Mandatory configuration file edits") == "Mandatory configuration file edits"
    assert page_title("--outfile") == "--outfile"  # an option is a name, not a bullet
    assert page_title("DANE TLS authentication.") == "DANE TLS authentication"


def test_a_spread_community_is_titled_by_the_page_holding_most_of_it_and_told_by_that_page() -> None:
    chunks = _chunks(PAGES)
    headings = {c.chunk_id: list(c.heading_path) for c in chunks}
    kg = _graph(
        [
            # mail_owner: named on three pages, most on the TLS guide; none of them a
            # third below its page
            _entity("owner", "mail_owner", ["tls#1", "tls#2", "queue#0", "params#2", "install#0"]),
            _entity("dir", "queue_directory", ["tls#1", "queue#1", "install#0", "params#1"],
                    "The queue_directory parameter sets where the queue lives.", "queue#1"),
        ],
        [Relation("owner|co_occurs|dir", "owner", "dir", "co_occurs", 2.0, "", ["tls#1"])],
        [Community(0, 0, ["owner", "dir"])],
    )
    titles = community_titles(kg, headings)
    # the page it lives on most, not a bare "queue_directory" (the central member: a tie
    # broken by id), nor that name tacked on: no heading of the TLS guide is it
    # (test_graphrag_member_titles.py)
    assert (titles[0].text, titles[0].source) == ("TLS Support", "page")
    reports = write_reports(kg, ExtractiveReportWriter(), headings=headings, leads=section_leads(chunks))
    # the page's lead, not queue_directory's sentence from the queue guide, nor a list of
    # names and pages
    assert reports[0].summary.split("\n")[0].startswith("Transport Layer Security provides")
    assert "queue_directory parameter sets" not in reports[0].summary
    assert not is_template_sentence(reports[0].summary)


def test_an_identifier_heading_alone_below_its_page_is_said_after_the_page() -> None:
    chunks = _chunks(PAGES)
    kg = _graph([_entity("x", "mail_owner", ["params#1"])], [], [Community(0, 0, ["x"])])
    index = SectionIndex(kg, {c.chunk_id: list(c.heading_path) for c in chunks})
    assert index.title(("Mail Configuration Parameters", "mail_owner")) == "Mail Configuration Parameters: mail_owner"
    assert index.title(("TLS Support", "Server settings")) == "Server settings"
    assert index.title(("Installing", "Building on a supported system")) == "Building on a supported system"


def test_a_lead_many_pages_share_is_boilerplate_and_no_lead() -> None:
    boiler = "Parameter names are case-insensitive in every module."
    pages = {f"mod{i}": [([f"Module {i}", "Parameters"], boiler)] for i in range(5)}
    pages["tls"] = PAGES["tls"]
    chunks = _chunks(pages)
    kg = _graph([_entity("x", "TLS", ["tls#0"])], [], [Community(0, 0, ["x"])])
    index = SectionIndex(kg, {c.chunk_id: list(c.heading_path) for c in chunks}, section_leads(chunks))
    assert index.opening(("Module 1", "Parameters")) is None
    assert index.opening(("TLS Support",)) is not None


def test_a_summary_has_no_credits_no_repeats_and_no_dangling_sentence() -> None:
    assert is_credit("Liviu Daia added support for certificate chains in the server.")
    assert not is_credit("Postfix added support for certificate chains in version 2.2.")
    assert not reads_alone("In that case the queue manager tries the delivery again later.")
    assert not reads_alone("In other words the first reply says nothing about the state of the route.")
    assert not reads_alone("Next, let's try to filter the commits we see based on their author.")
    assert not reads_alone("If this is set to 0, the system will not route transit packets at all.")
    assert reads_alone("If the file already exists, new data is appended to it by the module.")
    assert not reads_alone("The default value is smtpd, corresponding to a configuration file named smtpd.conf.")
    assert reads_alone("The default queue directory is /var/spool/postfix on most systems.")
    # a programmer's note in a docstring is for the code's maintainers
    assert not reads_alone("NOTE(harlowja): This merge does not deep copy the incoming objects results attribute.")
    assert not reads_alone("TODO: remove this once every backend supports the new claim protocol.")
    assert reads_alone("Note that the merge does not deep copy the incoming objects results attribute.")
    chunks = _chunks(PAGES)
    headings = {c.chunk_id: list(c.heading_path) for c in chunks}
    said = "The server keeps one certificate for each of its host names."
    kg = _graph(
        [_entity("srv", "server", ["tls#0", "tls#1", "tls#2"], "Liviu Daia added support for certificate chains.",
                 "tls#2"),
         _entity("cert", "certificate", ["tls#1", "tls#2"])],
        # the same sentence twice, once in other spacing
        [Relation("srv|keep|cert", "srv", "cert", "keep", 3.0, said, ["tls#1"]),
         Relation("cert|keep|srv", "cert", "srv", "keep", 2.0, said.replace(" one ", "  one "), ["tls#2"])],
        [Community(0, 0, ["srv", "cert"])],
    )
    summary = write_reports(kg, ExtractiveReportWriter(), headings=headings, leads=section_leads(chunks))[0].summary
    assert "Liviu Daia" not in summary
    assert summary.count("one certificate for each") <= 1
