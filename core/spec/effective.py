"""The data and training a workload is sized with, by the keys a workload file writes them under: what
the file gives, and for what it leaves out, what the workload's parser reads (a preset's data and
training, the defaults for its model). A file that names a preset and nothing else is sized with the
preset's batch, epochs and optimizer; shown with the pages' or a table's own defaults instead, it read
as another workload (the seed MLP's 80,909 samples for a ResNet-50; "adam" for an SGD run)."""

from __future__ import annotations

from typing import Any

from core.spec.workload import Workload, parse_workload


def settings_of(w: Workload) -> tuple[dict[str, Any], dict[str, Any]]:
    """(data, training) of a parsed workload as a file writes them: the keys the wizard's pages show."""
    d, t = w.data, w.training
    data = {"samples": d.samples, "outputs": d.outputs, "dtype": d.dtype, "format": d.format, "storage": d.storage}
    training = {
        "batch_size": t.batch_size,
        "epochs": t.epochs,
        "optimizer": t.optimizer,
        "precision": t.precision,
        "checkpointing": t.checkpointing,
        "sharding": t.sharding,
        "nodes": t.nodes,
        "reserve_percent": t.reserve_percent,
    }
    return data, training


def effective_sections(doc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``doc``'s "data" and "training" with every key ``settings_of`` names filled in as the parser reads
    it; WorkloadError when ``doc`` is not a valid workload."""
    data, training = settings_of(parse_workload(doc))
    return {**data, **(doc.get("data") or {})}, {**training, **(doc.get("training") or {})}
