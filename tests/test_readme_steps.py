"""The README's first five minutes, read as a new user follows them: in order, one step at a
time."""

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def _steps() -> list[str]:
    section = (
        README.read_text(encoding="utf-8")
        .split("## The first five minutes", 1)[1]
        .split("\n## ", 1)[0]
    )
    return [
        step.strip()
        for step in re.split(r"\n(?=\d+\. )", section)
        if re.match(r"\d+\. ", step.strip())
    ]


def test_the_steps_sign_in_before_they_open_an_admin_page():
    """A step that opens /admin/... (the runs list) comes after the one that signs in: a new user
    following the steps in order would otherwise meet a login page the steps have not explained."""
    steps = _steps()
    signs_in = next(i for i, step in enumerate(steps) if "Sign in at" in step)
    opens_admin = next(
        i for i, step in enumerate(steps) if re.search(r"/admin/\S", step) and "Sign in" not in step
    )
    assert signs_in < opens_admin, (steps[signs_in][:60], steps[opens_admin][:60])


def test_the_steps_are_numbered_in_order():
    assert [int(step.split(".", 1)[0]) for step in _steps()] == list(range(1, len(_steps()) + 1))
