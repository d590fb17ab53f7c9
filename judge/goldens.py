"""Golden submissions: example files with the verdict each must get, as
declared in an expected.toml beside them (submissions/, each challenge's
examples/, the test fixtures). The test suite, the GPU scripts and the
batch benchmark all read them through here."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from . import challenge as challenges

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Golden:
    path: Path  # absolute
    challenge: str
    verdict: str
    note: str = ""
    # Where a GPU says otherwise (a CPU-only cheat both refuse, by other
    # verdicts): what the GPU's verdict must be. Empty: the same.
    gpu_verdict: str = ""

    @property
    def on_gpu(self) -> str:
        return self.gpu_verdict or self.verdict

    def relative(self, root: Path = ROOT) -> str:
        return self.path.relative_to(root).as_posix()


def read(folder: Path, default_challenge: str | None = None) -> list[Golden]:
    """The entries of folder/expected.toml. An entry may name its challenge;
    otherwise it is the challenge whose folder holds the file, else
    `default_challenge`, else matrix_multiplication."""
    with (folder / "expected.toml").open("rb") as fh:
        table = tomllib.load(fh)
    out = []
    for rel, entry in table.items():
        path = (folder / rel).resolve()
        name = entry.get("challenge") or challenges.for_file(path) or default_challenge or "matrix_multiplication"
        out.append(Golden(path=path, challenge=name, verdict=entry["verdict"], note=entry.get("note", ""),
                          gpu_verdict=entry.get("gpu_verdict", "")))
    return out


def examples() -> list[Golden]:
    """submissions/ and every available challenge's examples/."""
    found = read(ROOT / "submissions")
    for name in challenges.available():
        folder = challenges.load(name).examples()
        if folder is not None and (folder / "expected.toml").is_file():
            found += read(folder, name)
    return found


def undeclared(folder: Path) -> set[str]:
    """.py files under `folder` that its expected.toml does not declare."""
    declared = {g.path for g in read(folder)}
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*.py") if p.resolve() not in declared}
