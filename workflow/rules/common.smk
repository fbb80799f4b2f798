# Shared setup: config validation and the names every rule file uses.
# Rules call `python -m gdpo ...`; run from the repository root, that finds the package even inside a
# conda env that does not install it.
from pathlib import Path

from gdpo.config import validate_config

# Stop before any job if a key or value is wrong; the message names the key, the allowed values and
# the config file. Files are passed lowest precedence first.
validate_config(
    config,
    Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml",
    [f for f in workflow.configfiles if f not in workflow.overwrite_configfiles]
    + list(workflow.overwrite_configfiles),
)

SCALE = config["scale"]
