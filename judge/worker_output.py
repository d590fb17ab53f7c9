"""What the workers of one grading printed, joined for its result (trusted
side): each worker's output is already capped by the judge as it reads it;
here the whole is kept to the result's cap, and the file's import-time
output, printed alike by every worker that imports it, is kept once."""

from __future__ import annotations


def join_capped(parts: list[str], cap: int) -> str:
    """Output of every worker the submission used (each already capped),
    kept to `cap` characters in all, an equal share each, with a note of
    what was dropped."""
    parts = once_at_import(parts)
    share = cap // max(1, len(parts))
    kept = []
    for part in parts:
        if len(part) > share:
            cut = max(0, share - 64)  # room for the note
            part = part[:cut] + f"\n… [{len(part) - cut:,} more characters dropped]"
        kept.append(part)
    return "\n".join(kept)


def once_at_import(parts: list[str]) -> list[str]:
    """What every worker printed first, alike (the file's import: each
    worker imports it), kept once; then what each printed after it."""
    filled = [part.splitlines(keepends=True) for part in parts if part]
    if len(filled) < 2:
        return parts
    common = 0
    while all(len(lines) > common for lines in filled) and len({lines[common] for lines in filled}) == 1:
        common += 1
    if common == 0:
        return parts
    head = "".join(filled[0][:common]).rstrip("\n")
    return [head] + [rest for rest in ("".join(lines[common:]).rstrip("\n") for lines in filled) if rest]

