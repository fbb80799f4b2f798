"""Stand-ins for what a paper config's jobs read and no rule makes (:mod:`gdpo.preflight`: hub models and data, the
BFCL interpreter, ToolRL's data), so that tests plan and submit paper jobs without the hub: empty files at the
paths the pre-flight checks. The jobs under test stop before they read them."""

from __future__ import annotations

from pathlib import Path

from gdpo.preflight import missing_inputs, workflow_config

REPO = Path(__file__).resolve().parents[1]
#: The Hugging Face cache of the stand-ins, under the workflow's working directory (``--config hf_home=...``).
HF_HOME = "hf_home"


def stand_in_inputs(config_files: list[str | Path], directory: Path) -> list[str]:
    """Put a stand-in in ``directory`` (the workflow's working directory) for every input the config of
    ``config_files`` would find missing there; returns the ``--config`` arguments the workflow must run with
    (its hub cache inside ``directory``)."""
    config = workflow_config([str(file) for file in config_files], {"hf_home": HF_HOME})
    directory.mkdir(parents=True, exist_ok=True)
    for item in missing_inputs(config, directory, REPO):
        # the first place inside the directory (an interpreter's other place is the repository)
        path = next(directory / path for path in item.paths if (directory / path).is_relative_to(directory))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}" if path.suffix == ".json" else "")
    return ["--config", f"hf_home={HF_HOME}"]
