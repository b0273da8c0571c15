"""ConvAI2's participants as convbank names them: the human is ``participant1``, the bot
``participant2`` (what every module of the package shares)."""

from __future__ import annotations

__all__ = ["BOT", "HUMAN"]

HUMAN, BOT = "participant1", "participant2"
