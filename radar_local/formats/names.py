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
# formats whose export writes per-prompt items back (from a config's tasks)
ITEMS = ("healthbench", "prometheus", "promptfoo")
EXPORTS = tuple(f for f in FORMATS if f != "healthbench")  # formats whose export writes a rubric back
