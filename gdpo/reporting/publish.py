"""Publishing a workflow's results with the repository: the evidence behind ``paper_figures/<scale>/`` and the
provenance that produced it, so that readers see results without running anything and a change of rule shows
up as a diff of the committed ledger (``tests/test_published.py`` rebuilds it from the evidence).
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import shutil
import subprocess
from pathlib import Path

from gdpo.config import apply_grid, load_config
from gdpo.plan import describe_runs

#: Evidence files of a workflow run: where the workflow writes them → their name under ``evidence/``.
EVIDENCE = {
    "results/exact/distinct_counts.csv": "distinct_counts.csv",
    "results/sim/per_seed.csv": "sim_per_seed.csv",
    "results/{scale}/summary/eval.csv": "eval.csv",
    "results/{scale}/summary/steps.csv": "steps.csv",
}


def _git(*args: str, cwd: Path) -> str:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def publish(config_file: str | Path, root: str | Path = ".", grid: str = "default") -> Path:
    """Copy a finished run's evidence into ``paper_figures/<scale>/evidence/`` and write ``PROVENANCE.json``
    (git commit and state, config file and its SHA-256, grid, date, the ledger command's inputs).

    Raises:
        FileNotFoundError: the workflow has not produced the evidence or the ledger yet (run it first).
    """
    root = Path(root)
    config = apply_grid({**load_config(config_file), "grid": grid})
    scale = config["scale"]
    out = root / "paper_figures" / scale
    if not (out / "claims.csv").is_file():
        raise FileNotFoundError(f"{out / 'claims.csv'} does not exist: run the workflow with {config_file} first "
                                "(make workflow, or snakemake --cores N --configfile ...).")
    (out / "evidence").mkdir(parents=True, exist_ok=True)
    copied = {}
    for source, name in EVIDENCE.items():
        path = root / source.format(scale=scale)
        if path.is_file():
            shutil.copyfile(path, out / "evidence" / name)
            copied[name] = source.format(scale=scale)
    provenance = {
        "commit": _git("rev-parse", "HEAD", cwd=root),
        "ledger_commit": _git("rev-parse", "HEAD", cwd=root),
        "uncommitted_changes": bool(_git("status", "--porcelain", "--untracked-files=no", cwd=root)),
        "config": str(config_file),
        "config_sha256": hashlib.sha256(Path(config_file).read_bytes()).hexdigest(),
        "grid": grid,
        "scale": scale,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "evidence": copied,
        "reporting": config.get("reporting") or {},
        "runs": describe_runs(config),
        "inputs": input_hashes(out, root, config),
    }
    (out / "PROVENANCE.json").write_text(json.dumps(provenance, indent=2) + "\n", encoding="utf-8")
    return out.resolve()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def input_hashes(published: Path, root: Path, config: dict) -> dict[str, str]:
    """SHA-256 of every input of the published ledger: each evidence file, the config, and the sim study
    files the bench ran (``config/sim/<study>.yaml``), by path relative to the repository."""
    files = sorted((published / "evidence").glob("*.csv"))
    files += [root / "config" / "sim" / f"{study}.yaml" for study in (config.get("sim") or {}).get("studies", [])]
    return {path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix(): _sha256(path)
            for path in files if path.is_file()}


def republish_ledger(published: str | Path, root: str | Path = ".") -> Path:
    """Rebuild a published scale's ``claims.csv`` and ``CLAIMS.md`` from its committed evidence with the current
    rules, and record in ``PROVENANCE.json`` the commit of the rules (``ledger_commit``) and the hash of every
    input (:func:`input_hashes`). The evidence itself and the commit that produced it are left as they were."""
    import tempfile

    from gdpo.reporting.ledger import LEDGER_COLUMNS, ledger_markdown

    published, root = Path(published), Path(root)
    provenance = json.loads((published / "PROVENANCE.json").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as workdir:
        ledger = rebuild_ledger(published, workdir)
    ledger[LEDGER_COLUMNS].to_csv(published / "claims.csv", index=False, float_format="%.3f")
    (published / "CLAIMS.md").write_text(ledger_markdown(ledger, provenance["scale"]), encoding="utf-8")
    config = apply_grid({**load_config(root / provenance["config"]), "grid": provenance.get("grid", "default")})
    provenance["ledger_commit"] = _git("rev-parse", "HEAD", cwd=root)
    provenance["inputs"] = input_hashes(published, root, config)
    (published / "PROVENANCE.json").write_text(json.dumps(provenance, indent=2) + "\n", encoding="utf-8")
    return published


def rebuild_ledger(published: str | Path, workdir: str | Path):
    """The ledger the current rules give on a published scale's evidence, built as the workflow builds it
    (the same relative paths, inside ``workdir``)."""
    from gdpo.reporting.ledger import build_ledger

    published, workdir = Path(published), Path(workdir)
    provenance = json.loads((published / "PROVENANCE.json").read_text(encoding="utf-8"))
    for name, source in provenance["evidence"].items():
        target = workdir / source
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(published / "evidence" / name, target)
    evidence = provenance["evidence"]
    with contextlib.chdir(workdir):
        return build_ledger(provenance["scale"], evidence.get("distinct_counts.csv"), evidence.get("sim_per_seed.csv"),
                            evidence.get("eval.csv"), evidence.get("steps.csv"), provenance["reporting"],
                            runs=provenance["runs"])
