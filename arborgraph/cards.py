"""Deprecated: import from arborgraph.core.cards; this module goes in 0.3."""

from arborgraph.core.cards import TITLE_CHARS, card, community_card, short_list, shorten  # noqa: F401

__all__ = ["TITLE_CHARS", "card", "community_card", "short_list", "shorten"]
