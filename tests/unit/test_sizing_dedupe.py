"""`size` run twice on the same workload records one sizing, not two identical ones (they piled up
in "From database…"); a changed workload or result is recorded again."""

from __future__ import annotations

from core.storage.store import Store


def test_an_identical_sizing_is_not_recorded_twice() -> None:
    store = Store.open(None)
    doc = {"name": "w", "model": {"preset": "seed-mlp"}}
    first = store.save_sizing("w", doc, ["NVIDIA GeForce RTX 4090"], {"candidates": [{"step_time_s": 0.002}]})
    again = store.save_sizing("w", dict(doc), ["NVIDIA GeForce RTX 4090"], {"candidates": [{"step_time_s": 0.002}]})
    assert again == first and len(store.sizings()) == 1 and len(store.workloads()) == 1
    changed = store.save_sizing("w", doc, ["NVIDIA GeForce RTX 4090"], {"candidates": [{"step_time_s": 0.003}]})
    assert changed != first and len(store.sizings()) == 2
    other_name = store.save_sizing("v", doc, ["NVIDIA GeForce RTX 4090"], {"candidates": [{"step_time_s": 0.003}]})
    assert other_name[1] == 3
