"""A student whose id changed only in case or Unicode form between two runs
of a batch (a roster added: `Z.PY`, graded as `Z`, is then `z`) keeps the
store's row, result and all, under the new id. The old row had stayed as a
phantom, "submitted, not graded: no file in the class folder", beside the
student graded again under the new id."""

from __future__ import annotations

import sqlite3

from .discover import id_key


def follow(conn: sqlite3.Connection, found: set[str], digests: dict[str, str]) -> list[tuple[str, str]]:
    """Rename, inside the caller's transaction, each stored id that is no
    longer found and matches exactly one found id that is not stored;
    `digests` (the store's record of its own writes) follows. Returns the
    (old, new) pairs."""
    stored = {row[0] for row in conn.execute("SELECT id FROM submissions")}
    gone = stored - found
    renamed = []
    for new in sorted(found - stored):
        olds = [old for old in gone if id_key(old) == id_key(new)]
        if len(olds) != 1:
            continue
        conn.execute("PRAGMA defer_foreign_keys = ON")  # both tables renamed before the commit checks
        conn.execute("UPDATE submissions SET id = ? WHERE id = ?", (new, olds[0]))
        conn.execute("UPDATE results SET submission_id = ? WHERE submission_id = ?", (new, olds[0]))
        if olds[0] in digests:
            digests[new] = digests.pop(olds[0])
        gone.discard(olds[0])
        renamed.append((olds[0], new))
    return renamed
