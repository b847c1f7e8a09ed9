"""The container installs from ``requirements.lock``: it is made from the dependencies
``pyproject.toml`` names now, and pins a version each of them accepts."""

from __future__ import annotations

from packaging.requirements import Requirement

from .lockfile import HEAD, LOCK, REPO, dependencies, dependencies_hash, normalised, pins


def test_the_lock_was_made_from_the_dependencies_named_now() -> None:
    header = next(line for line in LOCK.read_text().splitlines() if line.startswith(HEAD))
    assert header.removeprefix(HEAD) == dependencies_hash(), "run `make lock` and commit it"


def test_every_dependency_is_pinned_at_a_version_it_accepts() -> None:
    pinned = pins()
    lines = [x for x in LOCK.read_text().splitlines() if x and not x.startswith("#")]
    assert len(lines) == len(pinned)  # no package twice
    assert "aster-persist" not in pinned
    for dep in dependencies():  # the team extra's too: the image can join a team
        wanted = Requirement(dep)
        name = normalised(wanted.name)
        assert name in pinned, f"{wanted.name} is not in the lock: run `make lock`"
        assert wanted.specifier.contains(pinned[name], prereleases=True), (dep, pinned[name])


def test_the_dockerfile_installs_the_lock_then_the_project_alone() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "requirements.lock" in dockerfile
    assert "--no-deps -r requirements.lock" in dockerfile and "--no-deps ." in dockerfile
    assert "pip check" in dockerfile  # nothing missing from the lock goes unnoticed
