"""Student text as every export shows it: control characters made visible.

A submission's messages and output are the student's bytes: raw ESC, NUL,
BEL or form feed in gradebook.csv cleared the terminal of whoever ran `cat`
on it, and made report.html's <pre> unreadable. Each such character
becomes a visible escape (`\\x1b`); newline (CRLF too) and tab stay, as
they are layout. Bidirectional overrides and isolates (U+202A-U+202E,
U+2066-U+2069) are escaped too (`\\u202e`): they reorder what is shown
around them, so one student's text could display as another's."""

from __future__ import annotations

import re
import unicodedata

KEPT = "\n\t"
BIDI = {*range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def _hidden(ch: str) -> bool:
    return ch not in KEPT and (unicodedata.category(ch) == "Cc" or ord(ch) in BIDI)


# Fast path: most text has none of them.
_ANY = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def visible(text):
    """`text` with its control characters (other than newline and tab)
    written as escapes; anything not a str is returned as it is."""
    if not isinstance(text, str) or not _ANY.search(text):
        return text
    text = text.replace("\r\n", "\n")  # a Windows line end is a line end, not a \x0d on every line
    return "".join(_escape(ch) if _hidden(ch) else ch for ch in text)
