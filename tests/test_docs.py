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
