"""The data and training a workload is sized with, filled in where its file leaves them out: a preset's
own (the wizard shows every preset chosen this way, so each must stand alone)."""

from __future__ import annotations

import pytest

from core.network.presets import load_presets
from core.spec.effective import effective_sections


@pytest.mark.parametrize("name", sorted(load_presets()))
def test_every_preset_alone_gives_the_values_its_pages_show(name: str) -> None:
    preset = load_presets()[name]
    doc = {"model": {"preset": name}, "data": dict(preset.get("data", {}))}
    data, training = effective_sections(doc)
    for key in ("samples", "outputs", "dtype", "format", "storage"):
        assert key in data
    assert {k: v for k, v in preset.get("training", {}).items() if k != "learning_rate"}.items() <= training.items()
    assert training["batch_size"] >= 1 and training["epochs"] >= 1


def test_a_file_that_names_a_preset_only_is_sized_with_the_presets_settings() -> None:
    data, training = effective_sections({"model": {"preset": "resnet-50"}})
    assert (data["samples"], data["outputs"], data["format"]) == (1_281_167, 1000, "jpeg")
    assert (training["batch_size"], training["epochs"], training["optimizer"]) == (256, 90, "sgd_momentum")
