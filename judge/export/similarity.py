"""Suspiciously similar pairs of submissions, through copydetect's
fingerprints (winnowed k-grams of the tokenized code; names and comments
do not matter): the challenge's starter code is boilerplate and excluded."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from itertools import combinations

K = 25  # tokens per k-gram (copydetect's default)
WINDOW = 1
THRESHOLD = 0.5  # pairs at or above this similarity (the larger of the two sides) are reported


@dataclass
class Pair:
    a: str
    b: str
    similarity_a: float  # share of a's code found in b
    similarity_b: float
    overlap_tokens: int

    @property
    def similarity(self) -> float:
        return max(self.similarity_a, self.similarity_b)


def _fingerprint(name: str, source: str, boilerplate=None):
    from copydetect import CodeFingerprint
    return CodeFingerprint(f"{name}.py", K, WINDOW, boilerplate=boilerplate if boilerplate is not None else [],
                           fp=io.StringIO(source))


def similar_pairs(sources: dict[str, str], starter: str | None = None,
                  threshold: float = THRESHOLD) -> list[Pair]:
    """Pairs of ids whose code overlaps at least `threshold`, most similar first."""
    from copydetect import compare_files
    import numpy as np
    boilerplate = np.array(sorted(_fingerprint("starter", starter).hashes)) if starter else []
    prints = {}
    for sid, source in sorted(sources.items()):
        try:
            fp = _fingerprint(sid, source, boilerplate)
        except Exception:  # noqa: BLE001 - a file the tokenizer cannot read is left out
            continue
        if len(fp.hashes):
            prints[sid] = fp
    pairs = []
    for a, b in combinations(sorted(prints), 2):
        overlap, (sim_a, sim_b), _ = compare_files(prints[a], prints[b])
        pair = Pair(a, b, float(sim_a), float(sim_b), int(overlap))
        if pair.similarity >= threshold:
            pairs.append(pair)
    return sorted(pairs, key=lambda p: -p.similarity)


def to_csv(pairs: list[Pair]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["id_a", "id_b", "similarity", "share_of_a_in_b", "share_of_b_in_a", "overlap_tokens"])
    for p in pairs:
        writer.writerow([_safe(p.a), _safe(p.b), f"{p.similarity:.3f}", f"{p.similarity_a:.3f}",
                         f"{p.similarity_b:.3f}", p.overlap_tokens])
    return buffer.getvalue()


def _safe(text: str) -> str:
    from .gradebook import escape
    return escape(text)
