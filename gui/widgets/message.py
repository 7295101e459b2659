"""A status line's text as a word-wrapped label can show it: a word longer than a line (a pasted
100,000-character run name, a path) is cut in its middle, and the whole message kept to a few lines.
Such a word set the label's smallest width, and with it the window's (709,408 pixels), and laying it
out blocked the window for over a second."""

from __future__ import annotations

import re

LONGEST_WORD = 80  # characters of one word shown: a long path still reads, start and end
LONGEST_MESSAGE = 600  # characters of a whole message


def fit_message(text: str) -> str:
    """``text`` with each word over LONGEST_WORD characters shortened to its start and end around "…", the
    whole at most LONGEST_MESSAGE characters."""
    half = LONGEST_WORD // 2 - 1

    def shorten(m: re.Match[str]) -> str:
        word = m.group(0)
        return f"{word[:half]}…{word[-half:]}"

    text = re.sub(rf"\S{{{LONGEST_WORD + 1},}}", shorten, text)
    return text if len(text) <= LONGEST_MESSAGE else f"{text[: LONGEST_MESSAGE - 1]}…"
