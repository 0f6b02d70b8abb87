"""The formats radar imports and exports, and the module of each (light: the CLI names them at start-up)."""

# format name -> its module
MODULES = {
    "promptfoo": "promptfoo",
    "openai-evals": "openai_evals",
    "mlflow": "mlflow",
    "prometheus": "prometheus",
    "inspect": "inspect_ai",
    "helpsteer": "helpsteer",
    "healthbench": "healthbench",
}
FORMATS = tuple(MODULES)
IMPORT_ONLY = ("healthbench",)  # formats whose per-prompt items radar does not yet write back
EXPORTS = tuple(f for f in FORMATS if f not in IMPORT_ONLY)
