"""The README is a front door and the user guide (docs/, mkdocs.yml) holds the rest: the guide builds in
strict mode without a warning (a broken link, a missing anchor or a page left out of the navigation fails
it), the README stays short, opens with the two commands and links only to what exists, and no section the
README held before it became a front door is lost.

Pages name files outside docs/ (code, configs, paper_figures/) as inline code paths, never as links: the site
holds only docs/, and the strict build refuses a link that leaves it."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"

#: The README's sections before it became a front door, each with the file and the heading it lives under now.
SECTIONS_MOVED = {
    "GDPO reproducibility suite": ("README.md", "GDPO reproducibility suite"),
    "What the CPU experiment tested, and what it could not":
        ("docs/cpu-experiments.md", "What the CPU experiment tested, and what it could not"),
    "What exists today": ("docs/index.md", "What exists today"),
    "Scales of evidence": ("docs/index.md", "Scales of evidence"),
    "Running the workflow yourself": ("docs/workstation.md", "Running the workflow yourself"),
    "Training": ("docs/training.md", "Training"),
    "Task families and evaluation": ("docs/tasks.md", "Task families and evaluation"),
    "The code sandbox": ("docs/tasks.md", "The code sandbox"),
    "The policy-gradient bench (scale sim)": ("docs/sim.md", "The policy-gradient bench (scale sim)"),
    "The sequence bench (`bench: sequence`, studies `config/sim/seq_*.yaml`)":
        ("docs/sim.md", "The sequence bench (`bench: sequence`, studies `config/sim/seq_*.yaml`)"),
    "Running on a SLURM cluster": ("docs/cluster.md", "Running on a SLURM cluster"),
    "CPU-scale plan": ("docs/cluster.md", "CPU-scale plan"),
    "GPU-scale plan (paper configs)": ("docs/cluster.md", "GPU-scale plan (paper configs)"),
    "The paper path in miniature": ("docs/paper-path.md", "The paper path in miniature"),
    "The paper path: what has run here": ("docs/paper-path.md", "The paper path: what has run here"),
    "GPU launch checklist": ("docs/cluster.md", "GPU launch checklist"),
    "Outputs": ("docs/outputs.md", "Outputs"),
    "Publishing and evidence": ("docs/outputs.md", "Publishing and evidence"),
    "Reading the claims ledger": ("docs/ledger.md", "Reading the claims ledger"),
    "The advantage API": ("docs/advantages.md", "The advantage API"),
    "Tests": ("docs/testing.md", "The two tiers"),
    "Benchmarks": ("docs/index.md", "Benchmarks"),
    "Layout": ("docs/architecture.md", "Layout"),
    # not a heading before ("Where a change goes:"), one now
    "Where a change goes": ("docs/architecture.md", "Where a change goes"),
}


def headings(text: str) -> list[str]:
    """The markdown headings of ``text``, outside fenced code."""
    found, fence = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and (match := re.match(r"#{1,6} (.+)", line)):
            found.append(match.group(1).strip())
    return found


def anchors(text: str) -> set[str]:
    """The ids mkdocs gives the headings of a page (Python-Markdown's toc slugs)."""
    from markdown.extensions.toc import slugify

    return {slugify(heading.replace("`", ""), "-") for heading in headings(text)}


def build(config: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # the theme's banner about MkDocs 2.0, not a finding
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], capture_output=True, text=True, env=env, check=False)


def test_the_guide_builds_in_strict_mode_without_a_warning(tmp_path):
    result = build(REPO / "mkdocs.yml", tmp_path / "site")
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "WARNING" not in output, output
    assert (tmp_path / "site" / "index.html").is_file()


def test_the_strict_build_refuses_broken_links_anchors_and_pages_left_out(tmp_path):
    """What `validation:` in mkdocs.yml promises: each kind of broken reference fails the build."""
    shutil.copytree(DOCS, tmp_path / "docs")
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    with (tmp_path / "docs" / "index.md").open("a", encoding="utf-8") as index:
        index.write("\n[a](ledger.md#no-such-heading) [b](../config/mini.yaml) [c](#nowhere)\n")
    (tmp_path / "docs" / "not-in-nav.md").write_text("# Left out\n", encoding="utf-8")
    result = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    for broken in ("'#no-such-heading'", "'../config/mini.yaml'", "'#nowhere'", "not-in-nav.md"):
        assert broken in output, (broken, output)


def test_every_page_is_in_the_nav():
    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    nav = set(re.findall(r"(?m)^\s+- (?:[^:\n]+: )?([\w.-]+\.md)$", config))
    assert nav == {page.name for page in DOCS.glob("*.md")}


def test_the_readme_is_a_front_door_that_opens_with_the_two_commands():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 180, f"README.md has {len(lines)} lines: move the detail to a page of docs/"
    start = lines.index("```bash")
    assert start < 12, "the two commands come first, right after what the suite is"
    commands = [line.split("#")[0].strip() for line in lines[start + 1:lines.index("```", start)]]
    assert commands == ["make workflow", "make test"]
    # The first screen answers where to look: the workstation, the cluster, the results and ledger, extending.
    first_screen = "\n".join(lines[:40])
    assert "## Where to look" in first_screen
    for page in ("docs/workstation.md", "docs/cluster.md", "docs/outputs.md", "docs/ledger.md",
                 "docs/architecture.md"):
        assert f"]({page}" in first_screen, page


def test_every_link_of_the_readme_reaches_a_file_and_its_heading():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert links
    for link in links:
        assert not re.match(r"[a-z]+://", link), f"README links outside the repository: {link}"
        path, _, anchor = link.partition("#")
        target = REPO / path
        assert target.is_file(), f"README.md links to {path}, which does not exist"
        if anchor:
            assert anchor in anchors(target.read_text(encoding="utf-8")), f"{path} has no heading #{anchor}"


@pytest.mark.parametrize("old", sorted(SECTIONS_MOVED))
def test_no_section_of_the_old_readme_is_lost(old):
    path, heading = SECTIONS_MOVED[old]
    assert heading in headings((REPO / path).read_text(encoding="utf-8")), (
        f"README's former section {old!r} should be the heading {heading!r} of {path}")
