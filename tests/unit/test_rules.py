"""Every recommendation rule: one workload where it fires, one where it does not."""

from __future__ import annotations

import copy
import math
from dataclasses import replace
from typing import Any

import pytest

from core.advice.bom import choose_candidate, recommend_bom
from core.advice.expressions import ExpressionError, evaluate
from core.advice.rules import Rule, evaluate_rules, load_rules
from core.errors import TrainRigError
from core.estimate.sizing import size_workload
from core.hardware.catalogue import device_from_entry, find_device, load_catalogue
from core.hardware.platforms import load_platforms
from core.spec.workload import parse_workload

CATALOGUE = load_catalogue()
CPU = device_from_entry({"name": "Test CPU", "kind": "cpu", "fp32_tflops": 1.0, "source": "test"})
# this machine as a candidate: its CPU, or its GPU (an RTX 4090), as telemetry.machine makes them
HERE_CPU = replace(CPU, name="this machine (Test CPU, 8 cores)", origin="this-machine")
HERE_GPU = replace(find_device("4090", CATALOGUE), name="this machine (RTX 4090)", origin="this-machine")
HOST = {  # a plain 8-core, 64 GB, single-socket host with what the rules read from an inventory
    "cpu": {
        "physical_cores": 8,
        "logical_cores": 8,
        "sockets": 1,
        "tlb": "2048 4K pages",
        "caches": [{"level": 3, "total_bytes": 32 * 2**20}],
    },
    "memory": {"total_bytes": 64 * 10**9, "channels": None},
    "software": {"blas": [{"threads": 8}]},
}


def host(**changes: Any) -> dict[str, Any]:
    h = copy.deepcopy(HOST)
    for path, value in changes.items():
        section, key = path.split("__")
        h[section][key] = value
    return h


def fired(
    doc: dict[str, Any] | None = None,
    devices: tuple[str, ...] = ("4090",),
    count: int = 1,
    inventory: dict[str, Any] | None = None,
) -> set[str]:
    base: dict[str, Any] = {"model": {"preset": "seed-mlp"}, "hardware": {"gpu_count": count}}
    for key, value in (doc or {}).items():
        base[key] = {**base.get(key, {}), **value} if isinstance(value, dict) and key != "model" else value
    w = parse_workload(base)
    named = {"cpu": CPU, "here": HERE_CPU, "here-gpu": HERE_GPU}
    devs = [named[d] if d in named else find_device(d, CATALOGUE) for d in devices]
    inv = inventory if inventory is not None else HOST
    result = size_workload(w, devs, host_ram_bytes=inv["memory"]["total_bytes"])
    return {f.rule for f in evaluate_rules(result, inv)}


BIG_SAMPLES = {"data": {"samples": 100_000_000}}
INPUT_BOUND = {"data": {"storage": "network", "bytes_per_sample_on_disk": 10_000_000}}
# ResNet-50 on 12-megapixel camera JPEGs on an NVMe drive: 168 ms of one core a sample to decode
# and augment, 2.6 ms to read — the steps wait for the decoding, not for the drive
DECODE_BOUND = {
    "model": {"preset": "resnet-50"},
    "data": {"storage": "nvme", "stored_resolution": [3024, 4032]},
    "training": {"precision": "bf16_mixed"},
}
BERT_512 = {"model": {"preset": "bert-base"}, "training": {"batch_size": 512}}
LLAMA_8B = {"model": {"preset": "llama-8b"}, "training": {"batch_size": 8}}
LLAMA_FSDP = {"model": {"preset": "llama-8b"}, "hardware": {"gpu_count": {"min": 1, "max": 8}}}
BERT = {"model": {"preset": "bert-base"}}
GPT2_BF16 = {"model": {"preset": "gpt2-small"}, "training": {"batch_size": 8, "precision": "bf16_mixed"}}
HDD_BOUND = {"data": {"storage": "hdd", "bytes_per_sample_on_disk": 100_000}}
RESNET = {"model": {"preset": "resnet-50"}}
RESNET_FP16 = {**RESNET, "training": {"precision": "fp16_mixed"}}
# Each rule fires where it applies and stays quiet elsewhere (tests/unit/test_rules_fit.py checks
# the places where a seed's rule does not apply). The host rules read this machine's inventory, so
# they fire only with this machine among the candidates ("here": its CPU, "here-gpu": its GPU).
CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("cpu-multicore-parallel", {"count": 2}, {}),
    ("cpu-tlb-single-network", {"devices": ("cpu",)}, {}),
    (
        "cpu-cache-several-networks",
        {"doc": {"goal": {"concurrent_runs": 3}}, "devices": ("cpu",)},
        {"doc": {"goal": {"concurrent_runs": 3}}},
    ),
    (
        "cpu-avoid-multisocket",
        {"doc": {"goal": {"concurrent_runs": 2}}, "devices": ("here",), "inventory": host(cpu__sockets=2)},
        {"doc": {"goal": {"concurrent_runs": 2}}, "devices": ("here",)},
    ),
    (
        "cpu-blas-threads",
        {"devices": ("here",), "inventory": host(software__blas=[{"threads": 1}])},
        {"devices": ("here",)},
    ),
    ("cpu-clock-not-priority", {"doc": {**RESNET, "training": {"batch_size": 64}}}, {"devices": ("cpu",)}),
    (
        "cpu-itanium-large-samples",
        {"doc": {"data": {"samples": 20_000_000}}, "devices": ("cpu",)},
        {"devices": ("cpu",)},
    ),
    (
        "cpu-specialised-processors",
        {"doc": {"model": {"preset": "lenet-5"}}, "devices": ("cpu", "4090")},
        {"devices": ("cpu", "4090")},
    ),
    (
        "threads-physical-cores",
        {"devices": ("here",), "inventory": host(cpu__logical_cores=16)},
        {"devices": ("here",)},
    ),
    (
        "threads-loader-per-gpu",
        {"count": 2, "devices": ("here-gpu",), "inventory": host(cpu__physical_cores=4)},
        {"count": 2, "devices": ("here-gpu",)},
    ),
    ("gpu-memory-too-small", {"doc": LLAMA_8B}, {"doc": BERT_512}),
    ("gpu-memory-too-few-devices", {"doc": LLAMA_FSDP, "devices": ("H100 SXM",)}, {"doc": LLAMA_8B}),
    ("cpu-ram-too-small", {"doc": LLAMA_8B, "devices": ("cpu",)}, {"devices": ("cpu",)}),
    ("gpu-gradient-accumulation", {"doc": BERT_512}, {}),
    ("gpu-dataset-resident", {"doc": BIG_SAMPLES}, {}),
    ("gpu-k1-redundant", {"doc": {"data": {"samples": 100}}}, {}),
    (
        "gpu-overfit-reserve",
        {"doc": {"goal": {"purpose": "reverse_engineering"}}},
        {"doc": {"goal": {"purpose": "reverse_engineering"}, "training": {"reserve_percent": 30}}},
    ),
    ("gpu-tensor-cores", {"doc": RESNET}, {"doc": {**RESNET, "training": {"precision": "bf16_mixed"}}}),
    ("gpu-no-tensor-cores", {"devices": ("Tesla P40",)}, {}),
    # GPT-2's 50,257-token head in bf16 on an RTX 4090; quiet in fp32 (no tensor-core alignment to miss)
    ("gpu-half-unaligned-classes", {"doc": GPT2_BF16}, {"doc": {**GPT2_BF16, "training": {"precision": "fp32"}}}),
    # ResNet-50 in fp32 on an H100, priced with cuDNN's TF32 off (TrainRig's default) while PyTorch's
    # default runs its convolutions on TF32: quiet once the workload says cudnn_tf32 true
    (
        "gpu-fp32-cudnn-tf32",
        {"doc": RESNET, "devices": ("H100 SXM",)},
        {"doc": {**RESNET, "training": {"cudnn_tf32": True}}, "devices": ("H100 SXM",)},
    ),
    # ResNet-50 in fp16 on a T4 (320 GB/s): its tensor cores leave the step memory-bound (in fp32 its
    # CUDA-core convolutions bound it instead)
    ("gpu-bandwidth-million-params", {"doc": RESNET_FP16, "devices": ("T4",)}, {"doc": RESNET_FP16}),
    ("gpu-batch-headroom", {}, {"doc": BERT_512}),
    ("accelerator-pays-off", {"doc": RESNET, "devices": ("cpu", "4090")}, {"devices": ("cpu", "4090")}),
    ("nvlink-multi-gpu", {"doc": BERT, "count": 2}, {"doc": BERT, "count": 2, "devices": ("H100 SXM",)}),
    ("storage-iterated-data", {"doc": HDD_BOUND}, {"doc": {"data": {"storage": "hdd"}}}),
    ("storage-ramdisk-ups", {"doc": {"data": {"storage": "ramdisk"}}}, {}),
    ("storage-ssd-wear", {}, {"doc": {"data": {"storage": "hdd"}}}),
    ("storage-raid-throughput", {"doc": INPUT_BOUND}, {"doc": DECODE_BOUND}),
    (
        "memory-four-channels",
        {"devices": ("here-gpu",), "inventory": host(memory__channels=2)},
        {"devices": ("here-gpu",), "inventory": host(memory__channels=8)},
    ),
    ("memory-bandwidth-vs-gpus", {"count": 4}, {}),
    ("ramdisk-data-not-programs", {"doc": INPUT_BOUND}, {"doc": DECODE_BOUND}),
    ("input-decode-bound", {"doc": DECODE_BOUND}, {"doc": INPUT_BOUND}),
    ("format-jpeg-vs-lossless", {"doc": {"data": {"format": "png"}}}, {"doc": {"data": {"format": "jpeg"}}}),
    # the seed MLP at batch 512 on an RTX 4090: the host needs about 3.5 ms a step, the GPU 0.3 ms
    ("host-bound-step", {}, {"doc": {**RESNET, "training": {"batch_size": 256}}}),
    ("hp-gpu-load-idle", {}, {"doc": {**RESNET, "training": {"batch_size": 256}}}),
    ("hp-activations-dominate", {"doc": BERT_512}, {"doc": BERT_512, "devices": ("H100 SXM",)}),
    ("hp-batch-dominates-time", {"doc": {"training": {"batch_size": 32}}}, {}),
    ("hp-activation-optimizer-minor", {"doc": {"goal": {"purpose": "hpo"}}}, {}),
]


def test_every_rule_has_a_case() -> None:
    assert {r.id for r in load_rules()} == {c[0] for c in CASES}
    assert len(load_rules()) >= 30


@pytest.mark.parametrize(("rule", "fires", "quiet"), CASES, ids=[c[0] for c in CASES])
def test_rule_fires_and_stays_quiet(rule: str, fires: dict[str, Any], quiet: dict[str, Any]) -> None:
    assert rule in fired(**fires)
    assert rule not in fired(**quiet)


def test_every_rule_names_its_source_and_outdated_advice_says_so() -> None:
    rules = {r.id: r for r in load_rules()}
    assert all(r.source for r in rules.values())
    assert "discontinued" in (rules["cpu-itanium-large-samples"].today or "")
    assert "endurance" in (rules["storage-ssd-wear"].today or "")


@pytest.mark.parametrize(
    ("training", "at", "fix"),
    [
        # the batch does not fit at once but runs in micro-batches: no critical finding (below)
        # your own micro-batch that does not fit: the largest one that does
        (
            {"batch_size": 512, "micro_batch_size": 512},
            "at batch 512",
            "reduce the micro-batch to 425 (2 accumulation steps) or use 2 GPUs with ZeRO-2",
        ),
        ({"batch_size": 512, "micro_batch_size": 480}, "at micro-batch 480", "reduce the micro-batch to 425"),
    ],
)
def test_memory_finding_is_specific(training: dict[str, Any], at: str, fix: str) -> None:
    w = parse_workload({"model": {"preset": "bert-base"}, "training": training})
    result = size_workload(w, [find_device("4090", CATALOGUE)])
    (f,) = [f for f in evaluate_rules(result, HOST) if f.rule == "gpu-memory-too-small"]
    assert f.severity == "critical"
    need = result.candidates[0].memory.total / 2**30
    # NVML: 25,757,220,864 B (24,564 MiB) on an RTX 4090
    assert f"NVIDIA GeForce RTX 4090 × 1: memory 24 GiB < {need:.3g} GiB needed {at}" in f.message
    assert fix in f.message


def test_a_batch_that_fits_in_micro_batches_is_a_note_not_a_memory_failure() -> None:
    # BERT-base at batch 512 was "memory 24 GiB < 27.9 GiB needed at batch 512" on an RTX 4090;
    # it trains there in two micro-batches
    w = parse_workload({"model": {"preset": "bert-base"}, "training": {"batch_size": 512}})
    result = size_workload(w, [find_device("4090", CATALOGUE)])
    findings = {f.rule: f for f in evaluate_rules(result, HOST)}
    assert "gpu-memory-too-small" not in findings
    c = result.candidates[0]
    assert (c.fits, c.micro_batch, c.accumulation_steps) == (True, 425, 2)
    note = findings["gpu-gradient-accumulation"]
    assert note.severity == "info"
    assert "micro-batch 425 × 2 accumulation steps" in note.message
    assert "the global batch stays 512" in note.message


def test_the_memory_finding_names_the_counts_that_do_not_fit_and_those_that_do() -> None:
    # Llama-8B with FSDP on 1–8 H100s: one or two GPUs cannot hold a sample, four and eight can. This
    # was a critical "H100 SXM × 1 does not fit" finding beside a table where × 4 fits; the finding
    # now names every count of the table that does not fit and those that do, and is a warning
    doc = {
        "model": {"preset": "llama-8b"},
        "training": {"batch_size": 64, "optimizer": "adamw", "precision": "bf16_mixed", "sharding": "fsdp"},
        "hardware": {"gpu_count": {"min": 1, "max": 8}},
    }
    result = size_workload(parse_workload(doc), [find_device("H100 SXM", CATALOGUE)])
    findings = evaluate_rules(result, HOST)
    assert not [f for f in findings if f.severity == "critical"]
    (f,) = [f for f in findings if f.rule == "gpu-memory-too-few-devices"]
    short = [c.count for c in result.candidates if not c.fits]
    fit = [c.count for c in result.candidates if c.fits]
    assert (short, fit) == ([1, 2], [4, 8])
    assert f.severity == "warning"
    assert f.message.startswith("NVIDIA H100 SXM × 1 and × 2 cannot hold the training step: memory 79.6 GiB < ")
    assert "(× 1, FSDP); × 4 and × 8 can" in f.message


def test_a_model_that_does_not_fit_one_sample_says_so() -> None:
    w = parse_workload({"model": {"preset": "llama-8b"}, "training": {"batch_size": 8}})
    result = size_workload(w, [find_device("RTX 3060", CATALOGUE)])
    (f,) = [f for f in evaluate_rules(result, HOST) if f.rule == "gpu-memory-too-small"]
    assert "needed at a micro-batch of one sample per device" in f.message
    assert "choose a larger device" in f.message


def test_unknown_host_figures_never_fire_a_host_rule() -> None:
    empty = {"cpu": {}, "memory": {"total_bytes": None}, "software": {}}
    rules = fired(inventory=empty, count=2)
    assert not rules & {"threads-physical-cores", "threads-loader-per-gpu", "memory-four-channels"}


def test_host_rules_are_silent_when_this_machine_is_not_a_candidate() -> None:
    # the inventory that fires each host rule above, on catalogue devices: a report on other hardware
    # says nothing about the machine it was made on
    inv = host(cpu__sockets=2, cpu__logical_cores=16, cpu__physical_cores=4, memory__channels=2)
    inv["software"]["blas"] = [{"threads": 1}]
    host_rules = {
        "cpu-avoid-multisocket",
        "cpu-blas-threads",
        "threads-physical-cores",
        "threads-loader-per-gpu",
        "memory-four-channels",
    }
    for devices, count in ((("cpu",), 1), (("4090",), 2)):
        rules = fired({"goal": {"concurrent_runs": 2}}, devices=devices, count=count, inventory=inv)
        assert not rules & host_rules
    assert host_rules <= fired({"goal": {"concurrent_runs": 2}}, ("here",), 1, inv) | fired(
        {"goal": {"concurrent_runs": 2}}, ("here-gpu",), 2, inv
    )


def test_an_unaligned_vocabulary_is_named_with_its_padded_size() -> None:
    w = parse_workload({**GPT2_BF16, "hardware": {"gpu_count": 1}})
    result = size_workload(w, [find_device("4090", CATALOGUE), find_device("TPU v4", CATALOGUE)])
    (finding,) = [f for f in evaluate_rules(result) if f.rule == "gpu-half-unaligned-classes"]
    message = finding.message  # once for the workload, not per device
    # a TPU alone: XLA pads its own shapes, nothing to say
    tpu_only = size_workload(w, [find_device("TPU v4", CATALOGUE)])
    assert not [f for f in evaluate_rules(tpu_only) if f.rule == "gpu-half-unaligned-classes"]
    assert "50,257 classes are not a multiple of 8" in message and "padding them to 50,304" in message
    # Llama 3's 128,256-token vocabulary is a multiple of 8: nothing to pad
    llama = parse_workload({"model": {"preset": "llama-8b"}, "training": {"precision": "bf16_mixed"}})
    assert llama.analysis.output_shape[-1] == 128256
    quiet = size_workload(llama, [find_device("H100 SXM", CATALOGUE)])
    assert not [f for f in evaluate_rules(quiet) if f.rule == "gpu-half-unaligned-classes"]


def test_the_cudnn_tf32_finding_speaks_only_where_cudnn_could_use_tf32() -> None:
    def rules(doc: dict, device: str) -> set[str]:
        return {f.rule for f in evaluate_rules(size_workload(parse_workload(doc), [find_device(device, CATALOGUE)]))}

    assert "gpu-fp32-cudnn-tf32" in rules(RESNET, "H100 SXM")
    assert "gpu-fp32-cudnn-tf32" in rules({"model": {"preset": "lstm-lm"}}, "A100 80GB SXM")  # cuDNN's LSTM
    assert "gpu-fp32-cudnn-tf32" not in rules(RESNET, "T4")  # Turing: no TF32
    # a GeForce card's TF32 peak is its FP32 one: TrainRig prices its TF32 at its FP32 rate, nothing to say
    assert "gpu-fp32-cudnn-tf32" not in rules(RESNET, "RTX 4090")
    assert "gpu-fp32-cudnn-tf32" not in rules({"model": {"preset": "seed-mlp"}}, "H100 SXM")  # linear only
    assert "gpu-fp32-cudnn-tf32" not in rules({**RESNET, "training": {"precision": "tf32"}}, "H100 SXM")


def test_a_bad_rule_condition_is_reported_not_evaluated() -> None:
    with pytest.raises(ExpressionError):
        evaluate("__import__('os').system('x')", {})
    bad = Rule("x", "workload", "no_such_name > 1", "info", "m", "s")
    w = parse_workload({"model": {"preset": "seed-mlp"}})
    with pytest.raises(TrainRigError, match="rule x: unknown name 'no_such_name'"):
        evaluate_rules(size_workload(w, [CPU]), HOST, [bad])


def test_bill_of_materials_picks_a_fitting_candidate_and_explains_each_line() -> None:
    w = parse_workload(
        {
            "model": {"preset": "bert-base"},
            "training": {"batch_size": 512},
            "hardware": {"gpu_count": {"min": 1, "max": 4}},
            "cost": {"deadline_hours": 100},
        }
    )
    result = size_workload(w, [find_device("4090", CATALOGUE), find_device("H100 SXM", CATALOGUE)])
    best = choose_candidate(result)
    assert best is not None and best.fits and best.meets_deadline
    # BERT-base at batch 512 does not fit one 24 GB RTX 4090 at once; in two micro-batches it
    # does, well inside 100 hours, at the lowest TCO (it took two 4090s before micro-batches)
    assert (best.device.name, best.count, best.accumulation_steps) == ("NVIDIA GeForce RTX 4090", 1, 2)
    lines = {line.item: line for line in recommend_bom(result)}
    assert set(lines) >= {"Accelerator", "CPU", "Memory", "Storage", "Power supply"}
    assert lines["Accelerator"].spec == "NVIDIA GeForce RTX 4090 × 1"
    assert "micro-batch 425 × 2 accumulation steps" in lines["Accelerator"].reason
    assert all(line.reason and line.source for line in lines.values())
    # one 450 W card (NVIDIA's RTX 4090 board power) + the desktop's host (platforms.json),
    # × 1.25 headroom, rounded up to the next 100 W, on one supply
    ws = load_platforms().by_id("desktop")
    watts = math.ceil((450 + ws.host_power_w) * 1.25 / 100) * 100
    assert lines["Power supply"].spec.startswith(f"{watts:,} W of supply; ")
    assert lines["Power supply"].reason.startswith(f"GPUs 450 W + host {ws.host_power_w:,.0f} W")


def test_two_gpus_want_a_larger_power_supply() -> None:
    w = parse_workload(
        {"model": {"preset": "bert-base"}, "training": {"batch_size": 512}, "hardware": {"gpu_count": 2}}
    )
    lines = {line.item: line for line in recommend_bom(size_workload(w, [find_device("4090", CATALOGUE)]))}
    assert lines["Accelerator"].spec == "NVIDIA GeForce RTX 4090 × 2"
    # two 450 W cards + the host of the desktop that holds two 24 GB cards, × 1.25 headroom; above
    # what one 1,600 W supply gives on 120 V, it says so; a circuit that carries it continuously
    desk = load_platforms().by_id("desktop")
    watts = math.ceil((900 + desk.host_power_w) * 1.25 / 100) * 100
    assert lines["Power supply"].reason.startswith(f"GPUs 900 W + host {desk.host_power_w:,.0f} W (Desktop")
    assert lines["Power supply"].spec.startswith(f"{watts:,} W of supply")
    assert ("above one 1,600 W supply" in lines["Power supply"].spec) == (watts > 1600)
    assert ("120 V / 15 A" in lines["Power supply"].spec) == (watts <= 1440)


@pytest.mark.parametrize(
    ("device", "words"),
    [
        # SXM2 V100s join each other over NVLink 2 but reach the host over PCIe 3.0 ×16 (V100 data
        # sheet: "PCIe 32 GB/s" both ways): 4 × 15.75 GB/s = 63 GB/s, not 4 × NVLink
        ("V100", "4 × NVIDIA Tesla V100 SXM2 32GB can pull 63 GB/s from host memory over PCIe 3.0 x16"),
        # H100 SXM: PCIe Gen5 ×16 to the host (H100 data sheet: "PCIe Gen5: 128 GB/s" both ways)
        ("H100 SXM", "4 × NVIDIA H100 SXM can pull 252 GB/s from host memory over PCIe 5.0 x16"),
        ("4090", "4 × NVIDIA GeForce RTX 4090 can pull 126 GB/s from host memory over PCIe 4.0 x16"),
    ],
)
def test_host_traffic_goes_over_pcie_not_nvlink(device: str, words: str) -> None:
    w = parse_workload({"model": {"preset": "seed-mlp"}, "hardware": {"gpu_count": 4}})
    result = size_workload(w, [find_device(device, CATALOGUE)], host_ram_bytes=HOST["memory"]["total_bytes"])
    (f,) = [f for f in evaluate_rules(result, HOST) if f.rule == "memory-bandwidth-vs-gpus"]
    assert words in f.message
