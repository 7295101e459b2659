"""One-factor experiments (Finocchiaro, Tables 4.1–4.5): a base workload, one field and its values;
each value gives a workload that is trained in turn with the same seeds.

A field is a workload path (``training.batch_size``, ``data.samples``, any key the workload format
has) or one of the paper's factors by name: ``depth`` (hidden blocks of an MLP), ``width`` (units
per hidden layer), ``activation`` (the hidden blocks' activation), ``batch_size``, ``optimizer``,
``learning_rate``, ``epochs``, ``precision``. Every variant is checked with the workload's own
rules before anything runs, so a bad value is refused with its reason and nothing is trained."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.errors import WorkloadError
from core.network.presets import load_presets
from core.spec.workload import parse_workload

# the paper's factors by name, where they are plain workload paths
TRAINING_FACTORS = {
    "batch_size": "training.batch_size",
    "optimizer": "training.optimizer",
    "learning_rate": "training.learning_rate",
    "epochs": "training.epochs",
    "precision": "training.precision",
}
MODEL_FACTORS = ("depth", "width", "activation")
ACTIVATIONS = ("relu", "leaky_relu", "tanh", "sigmoid", "gelu", "silu")
MAX_VALUES = 32
MAX_RUNS = 200  # values × repeats of one experiment


@dataclass(frozen=True)
class Factor:
    """The field an experiment varies and its values, in the order given."""

    name: str  # as the user wrote it: "batch_size", "training.batch_size", "depth"
    values: tuple[Any, ...]

    @property
    def path(self) -> str:
        return TRAINING_FACTORS.get(self.name, self.name)


@dataclass(frozen=True)
class Variant:
    value: Any
    label: str  # "batch_size=64"
    document: dict[str, Any]


def parse_vary(text: str) -> Factor:
    """``"training.batch_size=64,128,256"`` → the factor and its values (JSON numbers, true/false,
    or text)."""
    name, sep, rest = text.partition("=")
    name = name.strip()
    if not sep or not name or not rest.strip():
        raise WorkloadError("--vary", f"give FIELD=V1,V2,…, e.g. training.batch_size=64,128; got {text!r}")
    values = tuple(_value(v.strip()) for v in rest.split(",") if v.strip())
    if len(values) < 2:
        raise WorkloadError("--vary", f"an experiment compares two values or more; {name} has {len(values)}")
    if len(values) > MAX_VALUES:
        raise WorkloadError("--vary", f"at most {MAX_VALUES} values, got {len(values)}")
    if len(set(map(json.dumps, values))) != len(values):
        raise WorkloadError("--vary", f"{name} repeats a value: {', '.join(map(str, values))}")
    return Factor(name, values)


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def expand(document: Mapping[str, Any], factor: Factor) -> list[Variant]:
    """One workload per value, each checked by the workload's rules; the first bad value raises a
    WorkloadError that names it and why, before anything is trained."""
    out = []
    for value in factor.values:
        doc = copy.deepcopy(dict(document))
        label = f"{factor.name}={value}"
        try:
            if factor.name in MODEL_FACTORS:
                _inline_preset(doc)
                doc["model"] = _vary_mlp(_layer_model(doc), factor.name, value)
            else:
                _set_path(doc, factor.path, value)
            parse_workload(doc)
        except WorkloadError as exc:
            raise WorkloadError(exc.path or factor.path, f"{label}: {exc.message}") from None
        doc["name"] = f"{doc.get('name') or 'workload'} ({label})"
        out.append(Variant(value, label, doc))
    return out


def _set_path(doc: dict[str, Any], path: str, value: Any) -> None:
    keys = path.split(".")
    node: Any = doc
    for i, key in enumerate(keys[:-1]):
        nxt = node.get(key) if isinstance(node, dict) else None
        if nxt is None:
            nxt = node[key] = {}
        if not isinstance(nxt, dict):
            where = ".".join(keys[: i + 1])
            raise WorkloadError(where, "is not an object: an experiment cannot vary a field inside it")
        node = nxt
    node[keys[-1]] = value


def _inline_preset(doc: dict[str, Any]) -> None:
    """A model named by its preset keeps the preset's data and training defaults when its layers are
    written out (the document's own values win)."""
    model = doc.get("model")
    preset = load_presets().get(str(model.get("preset"))) if isinstance(model, Mapping) else None
    if preset is not None:
        for section in ("data", "training"):
            doc[section] = {**preset.get(section, {}), **(doc.get(section) or {})}


def _layer_model(doc: Mapping[str, Any]) -> dict[str, Any]:
    model = doc.get("model") or {}
    if isinstance(model, Mapping) and "preset" in model:
        preset = load_presets().get(str(model["preset"]))
        if preset is None or "layers" not in preset.get("model", {}):
            raise WorkloadError("model.preset", f"{model['preset']!r} has no layer list to vary")
        model = preset["model"]
    if not isinstance(model, Mapping) or not isinstance(model.get("layers"), list):
        raise WorkloadError("model", "depth, width and activation vary a layer list; this model has none")
    return copy.deepcopy(dict(model))


def _hidden_blocks(layers: Sequence[Mapping[str, Any]]) -> tuple[list[tuple[dict, dict]], dict]:
    """An MLP's hidden blocks (a linear layer and its activation) and its output layer."""
    blocks = []
    for i in range(0, len(layers) - 1, 2):
        lin, act = layers[i], layers[i + 1]
        if lin.get("type") != "linear" or act.get("type") not in ACTIVATIONS:
            raise WorkloadError(
                f"model.layers[{i}]",
                "depth, width and activation vary an MLP: linear layers each followed by an activation, "
                "then the output layer",
            )
        blocks.append((dict(lin), dict(act)))
    if len(layers) % 2 != 1 or layers[-1].get("type") != "linear":
        raise WorkloadError(f"model.layers[{len(layers) - 1}]", "an MLP ends with its linear output layer")
    return blocks, dict(layers[-1])


def _vary_mlp(model: dict[str, Any], factor: str, value: Any) -> dict[str, Any]:
    blocks, head = _hidden_blocks(model["layers"])
    if not blocks:
        raise WorkloadError("model.layers", "the MLP has no hidden block to vary")
    if factor == "depth":
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 64:
            raise WorkloadError("model.layers", f"depth counts hidden blocks, 1–64; got {value!r}")
        blocks = (blocks * value)[:value] if value > len(blocks) else blocks[:value]
    elif factor == "width":
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1_000_000:
            raise WorkloadError("model.layers", f"width counts units per hidden layer, 1–1,000,000; got {value!r}")
        blocks = [({**lin, "out_features": value}, act) for lin, act in blocks]
    else:
        if value not in ACTIVATIONS:
            raise WorkloadError("model.layers", f"activation is one of {', '.join(ACTIVATIONS)}; got {value!r}")
        blocks = [(lin, {"type": value}) for lin, _ in blocks]
    layers = [layer for block in blocks for layer in block] + [head]
    return {**model, "layers": layers}
