"""The committed model diagram (docs/models.dot, docs/models.md) is what `make docs-models` writes now."""

from groupx_site.management.commands.docs_models import diagrams


def test_the_committed_model_diagrams_match_the_models():
    for path, text in diagrams().items():
        assert path.read_text(encoding="utf-8") == text, f"{path.name} is stale: run make docs-models"
