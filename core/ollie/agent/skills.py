"""Skills: directories holding a SKILL.md, found under the config dir's `skills/` and the bundled set."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from ollie import paths, regularfile

SKILL_FILE = "SKILL.md"


@dataclass(frozen=True)
class Skill:
    """One skill: its name (the directory's, or the front matter's), a one-line description, its dir."""

    name: str
    description: str
    path: Path


def skills_dirs() -> list[Path]:
    """Where skills are looked up, in order: the user's config dir, then the bundled set."""
    return [paths.config_dir() / "skills", paths.bundled("skills")]


def _front_matter(text: str) -> tuple[dict, str]:
    """The YAML front matter (`---` ... `---`) as a dict, and the text after it."""
    if not text.startswith("---"):
        return {}, text
    head, sep, body = text[3:].partition("\n---")
    if not sep:
        return {}, text
    try:
        data = yaml.safe_load(head)
    except yaml.YAMLError:
        return {}, text
    return (data if isinstance(data, dict) else {}), body.partition("\n")[2]


def read_skill(directory: Path) -> Skill:
    """Describe the skill in `directory` from its SKILL.md: front matter, else the first lines."""
    text = regularfile.read_config_sync(directory / SKILL_FILE, errors="replace")
    meta, body = _front_matter(text)
    name = str(meta.get("name") or directory.name)
    description = str(meta.get("description") or "").strip()
    if not description:  # the first line of text, else the first heading
        lines = [line.strip() for line in body.splitlines() if line.strip()]
        description = next((line for line in lines if not line.startswith("#")), "") or next(
            (heading for line in lines if (heading := line.lstrip("#").strip())), "")
    return Skill(name=name, description=" ".join(description.split()), path=directory)


def find_skills() -> list[Skill]:
    """Every skill in `skills_dirs()`, sorted by name; the first of a name wins."""
    found: dict[str, Skill] = {}
    for root in skills_dirs():
        if not root.is_dir():
            continue
        for directory in sorted(root.iterdir()):
            if directory.name.startswith(".") or not (directory / SKILL_FILE).is_file():
                continue
            try:
                skill = read_skill(directory)
            except OSError:
                continue
            found.setdefault(skill.name, skill)
    return sorted(found.values(), key=lambda s: s.name)
