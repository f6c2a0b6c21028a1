"""KnowledgeBase stays a small facade: its own public names (methods, properties and the
attributes its ``__init__`` sets) number at most 12; everything else is reached through
``kb.index``, ``kb.engine`` and ``kb.explorer`` (issue #37)."""

from __future__ import annotations

import ast
import inspect
import textwrap

from arborgraph.kb import KnowledgeBase

MAX_PUBLIC_NAMES = 12


def _public_class_names() -> set[str]:
    """Public names defined on the class itself (not inherited; dunders and private excluded)."""
    return {name for name in vars(KnowledgeBase) if not name.startswith("_")}


def _public_instance_attributes() -> set[str]:
    """Public attributes ``__init__`` sets (``self.NAME = ...``)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(KnowledgeBase.__init__)))
    names = set()
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                if not target.attr.startswith("_"):
                    names.add(target.attr)
    return names


def test_the_three_parts_are_attributes() -> None:
    assert _public_instance_attributes() == {"index", "engine", "explorer"}


def test_public_surface_is_at_most_twelve_names() -> None:
    surface = _public_class_names() | _public_instance_attributes()
    assert len(surface) <= MAX_PUBLIC_NAMES, (
        f"KnowledgeBase has {len(surface)} public names (at most {MAX_PUBLIC_NAMES}): {sorted(surface)}; "
        "reach the rest through kb.index, kb.engine or kb.explorer instead of adding a hand-off"
    )


def test_what_a_notebook_user_needs_is_there() -> None:
    assert {"open", "with_settings", "refresh", "close", "closed", "query", "query_store", "info"} <= _public_class_names()
