"""memory_plan: the memory side of a sizing alone, which the findings' way out of a candidate that does not
fit asks of every alternative it tries. It must judge each alternative as the full sizing would."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from core.estimate.memory_plan import memory_plan
from core.estimate.sizing import size_candidate
from core.hardware.catalogue import device_from_entry, find_device, load_catalogue
from core.network.presets import load_presets
from core.spec.workload import parse_workload

CATALOGUE = load_catalogue()
# this machine's CPU, whose RAM is the host's (a CPU to buy is judged against its platform's)
HERE = replace(
    device_from_entry({"name": "Test CPU", "kind": "cpu", "fp32_tflops": 1.0, "source": "test"}),
    name="this machine (Test CPU)",
    origin="this-machine",
)


def workload(preset: str, **training):
    p = load_presets()[preset]
    doc = copy.deepcopy({k: p[k] for k in ("name", "model", "data", "training")})
    doc["training"].update(training)
    return parse_workload(doc)


CASES = [
    ("llama-8b", {}, "RTX 4090", 1),  # does not fit, whatever the micro-batch
    ("llama-8b", {}, "H100 SXM", 4),
    ("llama-8b", {"sharding": "none", "checkpointing": False}, "H100 SXM", 8),
    ("gpt2-small", {"batch_size": 512, "micro_batch_size": 480}, "RTX 4090", 1),  # its own micro-batch
    ("gpt2-small", {"batch_size": 4096}, "RTX 4090", 2),  # the largest micro-batch that fits
    ("resnet-50", {"batch_size": 256}, "T4", 1),
    ("seed-mlp", {}, "H100 SXM", 1),
]


@pytest.mark.parametrize(("preset", "training", "device", "count"), CASES)
def test_the_memory_plan_is_the_sizings_memory(preset: str, training: dict, device: str, count: int) -> None:
    w = workload(preset, **training)
    dev = find_device(device, CATALOGUE)
    plan, full = memory_plan(w, dev, count), size_candidate(w, dev, count)
    assert (plan.fits, plan.capacity, plan.largest) == (full.fits, full.capacity_bytes, full.largest_batch)
    assert (plan.micro_batch, plan.accumulation_steps) == (full.micro_batch, full.accumulation_steps)
    assert plan.memory == full.memory


def test_this_machines_cpu_is_judged_against_the_ram_it_has() -> None:
    w = workload("gpt2-small", batch_size=64)
    small, large = memory_plan(w, HERE, 1, 2 * 2**30), memory_plan(w, HERE, 1, 512 * 2**30)
    assert small.fits is False and large.fits is True
    assert small.fits == size_candidate(w, HERE, 1, 2 * 2**30).fits
    assert memory_plan(w, HERE, 1).fits is None  # no RAM known: neither fits nor does not
