"""A community at home on an API reference page is summarised by what its classes are
("GroupManager: Manager class for manipulating Identity groups."), after the module's
own docstring, instead of by its methods' docstrings (raters: "lists of method
docstrings with no overview sentence", 3 of 5).

The page is text as the HTML loader makes it of Sphinx's autodoc output; titles and
reports are made by the real code (write_reports)."""

from __future__ import annotations

from graphrag.model import Community
from arborgraph.core.api_pages import before_first_class, class_one_liners
from hand_graphs import entity as _entity
from hand_graphs import extractive_reports
from hand_graphs import graph as _graph
from hand_graphs import page_chunks as _chunks

GROUPS = [
    "Identity groups of users, and the manager that lists, creates and deletes them.\n\n"
    "class keystoneclient.v3.groups.Group(manager, info, loaded=False)\n\nBases: Resource\n\n"
    "Represents an Identity user group.\n\n"
    "update(name=None, description=None)\n\nUpdate the group's name and description on the server.",
    "class keystoneclient.v3.groups.GroupManager(client)\n\nBases: CrudManager\n\n"
    "Manager class for manipulating Identity groups.\n\n"
    "create(name, domain=None, description=None, **kwargs)\n\nCreate a group in a domain on the server.\n\n"
    "list(user=None, domain=None, **kwargs)\n\nList the groups the server holds for a user or a domain.\n\n"
    "class keystoneclient.v3.groups.GroupNotFound\n\n- a bare list item",
]
PAGES = {"groups": [(["keystoneclient.v3.groups module"], text) for text in GROUPS]}


def test_the_classes_of_an_api_page_and_its_own_words_before_them() -> None:
    chunks = [(c.chunk_id, c.text) for c in _chunks(PAGES)]
    assert class_one_liners(chunks) == [
        ("Group", "Represents an Identity user group.", "groups#0"),
        ("GroupManager", "Manager class for manipulating Identity groups.", "groups#1"),
    ]
    assert before_first_class(chunks) == [
        "Identity groups of users, and the manager that lists, creates and deletes them."
    ]
    assert class_one_liners([("prose#0", "Groups hold users. Each group has a name.")]) == []


def test_an_api_page_community_is_said_by_its_classes_after_the_modules_docstring() -> None:
    chunks = _chunks(PAGES)
    members = ["groups#0", "groups#1"]
    kg = _graph([_entity("g", "Group", members), _entity("gm", "GroupManager", members),
                 _entity("create", "create()", ["groups#1"])], [], [Community(0, 0, ["g", "gm", "create"])])
    report = extractive_reports(kg, chunks)[0]
    assert report.summary.split("\n") == [
        "Identity groups of users, and the manager that lists, creates and deletes them.",
        "Group: Represents an Identity user group.",
        "GroupManager: Manager class for manipulating Identity groups.",
    ]


def test_a_page_with_no_docstring_of_its_own_opens_with_no_members() -> None:
    # without the module's docstring, the page's first sentence is a member's ("Create a
    # group ..."): no lead then, only what the classes are
    pages = {"groups": [(["keystoneclient.v3.groups module"], text) for text in
                        ["create(name, domain=None)\n\nCreate a group in a domain on the server.\n\n" + GROUPS[0].split("\n\n", 1)[1],
                         GROUPS[1]]]}
    chunks = _chunks(pages)
    members = ["groups#0", "groups#1"]
    kg = _graph([_entity("g", "Group", members), _entity("gm", "GroupManager", members)], [],
                [Community(0, 0, ["g", "gm"])])
    report = extractive_reports(kg, chunks)[0]
    assert report.summary.split("\n") == [
        "Group: Represents an Identity user group.",
        "GroupManager: Manager class for manipulating Identity groups.",
    ]


def test_the_trees_node_of_an_api_page_lists_its_classes() -> None:
    from outline_digests import outline_digests
    from raptor.tree import Leaf

    pages = {"groups": GROUPS, "users": ["Users of the Identity service.\n\nclass keystoneclient.v3.users.User\n\n"
                                         "Represents an Identity user.\n\nget(user)\n\nRetrieve a user from the server."]}
    leaves = [Leaf(chunk_id=f"{page}#{n}", doc_id=page, text=text, heading_path=[f"keystoneclient.v3.{page} module"])
              for page, texts in pages.items() for n, text in enumerate(texts)]
    digests = outline_digests(leaves)
    assert digests["keystoneclient.v3.groups module"].split("\n") == [
        "Identity groups of users, and the manager that lists, creates and deletes them.",
        "Group: Represents an Identity user group.",
        "GroupManager: Manager class for manipulating Identity groups.",
    ]
    # one class is no list: the page's digest as before
    assert digests["keystoneclient.v3.users module"].startswith("Users of the Identity service.")
