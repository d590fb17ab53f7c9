"""README.md's two commands are the ones that work: CI runs the test command
verbatim, and the main command grades a file that exists."""

from __future__ import annotations

import re

from tests.helpers import ROOT

README = (ROOT / "README.md").read_text()
COMMANDS = re.findall(r"^    (python3 -m venv .*)$", README, flags=re.M)


def test_readme_gives_two_commands():
    assert len(COMMANDS) == 2
    assert "judge submit" in COMMANDS[0]
    assert "pytest" in COMMANDS[1]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert COMMANDS[1] in ci


def test_main_command_grades_an_existing_example():
    path = COMMANDS[0].split("judge submit ", 1)[1].split()[0]
    assert (ROOT / path).is_file()


def test_results_linked_from_readme_exist():
    for link in re.findall(r"\]\((bench/results/[^)]+)\)", README):
        assert (ROOT / link.split("#")[0]).is_file(), link  # an anchor names a part of the file


def test_links_in_docs_resolve():
    """The long-form pages under docs/ link to results, fixtures and code by
    relative paths: each must name a file or folder that exists."""
    for page in sorted((ROOT / "docs").glob("*.md")):
        text = re.sub(r"`[^`]*`", "", page.read_text())  # code spans hold no links
        for link in re.findall(r"\]\(([^)\s]+)\)", text):
            if link.startswith(("http:", "https:", "#", "mailto:")):
                continue
            target = (page.parent / link.split("#")[0]).resolve()
            assert target.exists(), f"{page.name}: {link}"


def test_readme_links_to_docs_resolve():
    for link in re.findall(r"\]\((docs/[^)\s#]+)", README):
        assert (ROOT / link).exists(), link
