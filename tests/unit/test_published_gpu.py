"""The GPU step time against published per-GPU training throughputs (resources/published/
gpu_throughputs.json: the Lambda deep-learning benchmark's PyTorch tables, 8 GPUs, ResNet-50 and
BERT-base/large SQuAD in fp16 and TF32). ResNet-50 on the H100 SXM (the kernel model's NCHW
transposes were set on the recorded H100 ResNet-50 steps) and on the RTX 3090 and 4090 (the cards of
compute capability 8.6/8.9 that pay no transposes were set there) is the fit part; every other row
is held out. The
bars asserted are the errors reached; SPEC 9's cross-GPU bar (within 25 %) is not met and is an
expected failure with its figures. Table: benchmarks/accuracy_published.py."""

from __future__ import annotations

import json
import statistics

import pytest

from benchmarks.accuracy_published import DATA, errors
from core.hardware.catalogue import find_device, load_catalogue

ROWS = errors()
HELD_OUT = [(c, e) for c, _, e in ROWS if c["part"] == "held-out"]


def test_every_published_figure_is_kept_with_its_source() -> None:
    doc = json.loads(DATA.read_text(encoding="utf-8"))
    assert len(doc["rows"]) == len(ROWS) == 48
    for r in doc["rows"]:
        src = doc["sources"][r["source"]]
        assert src["url"] and src["date"] and src["version"] and src["what"]
        assert r["batch"] > 0 and r["throughput"] > 0
        find_device(r["device"], load_catalogue())  # every GPU is a catalogue device


def test_the_fit_gpus_and_network_are_reproduced() -> None:
    # ResNet-50 fp16 (NCHW, AMP): on one H100 SXM 2,616 images/s published, 2,691 predicted (the NCHW
    # transposes were fitted there); on the RTX 3090 and 4090 905 and 1,301 published, 876 and 1,278
    # predicted (the cards of compute capability 8.6/8.9 pay no transposes: set there)
    fit = {c["device"]: e for c, _, e in ROWS if c["part"] == "fit" and c["precision"] == "fp16_mixed"}
    assert set(fit) == {"NVIDIA H100 SXM", "NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 4090"}
    assert all(abs(e) <= 0.04 for e in fit.values())


def test_resnet50_on_gpus_it_was_not_fitted_on() -> None:
    # reached: 9 of 10 within 25 %, mean |error| 12 %, worst +25 % (A10 fp16); the cards of compute
    # capability 8.6/8.9 held out of the NCHW rule (A10, RTX A6000, RTX 6000 Ada) read +11 … +25 % in
    # fp16, −26 … −34 % when they paid the H100's transposes
    errs = [e for c, e in HELD_OUT if c["benchmark"] == "resnet50"]
    assert len(errs) == 10
    assert statistics.mean(abs(e) for e in errs) <= 0.13
    assert max(abs(e) for e in errs) <= 0.26
    assert sum(abs(e) <= 0.25 for e in errs) >= 9


@pytest.mark.xfail(
    strict=True,
    reason="held out: 33 of 42 published throughputs within 25 %, mean |error| 14 % (SPEC 9: within 25 %). "
    "BERT in TF32 on the H100s and the A10 too fast (+24 … +36 %) and in fp16 on the GeForce cards too slow "
    "(−21 … −29 %); ResNet-50 fp16 on the A10 +25 % (docs/accuracy.md)",
)
def test_published_throughputs_of_held_out_gpus_and_networks_within_25_percent() -> None:
    errs = [abs(e) for _, e in HELD_OUT]
    assert sum(e <= 0.25 for e in errs) >= 0.9 * len(errs), f"{sum(e <= 0.25 for e in errs)} of {len(errs)}"
    assert statistics.mean(errs) <= 0.15


def test_bert_priced_as_the_published_code_computes_its_attention() -> None:
    # DeepLearningExamples' BERT computes attention unfused (matmul, division, mask, softmax, dropout,
    # matmul), priced as training.attention "eager". Reached: 24 of 32 within 25 %, mean |error| 15 %,
    # worst +36 % (A10 TF32); with PyTorch 2's flash attention it read 9 of 32, mean 47 %, +114 %
    errs = [e for c, e in HELD_OUT if c["benchmark"].startswith("bert")]
    assert len(errs) == 32
    assert all(c["training"] == {"attention": "eager"} for c, _ in HELD_OUT if c["benchmark"].startswith("bert"))
    assert statistics.mean(abs(e) for e in errs) <= 0.16
    assert max(abs(e) for e in errs) <= 0.37
    assert sum(abs(e) <= 0.25 for e in errs) >= 24
    # the expensive cards, where a wrong answer costs most: H100 SXM / PCIe and A100 in fp16 within 10 %
    fp16 = [
        e
        for c, e in HELD_OUT
        if c["benchmark"].startswith("bert")
        and c["precision"] == "fp16_mixed"
        and ("H100" in c["device"] or "A100" in c["device"])
    ]
    assert len(fp16) == 6 and max(abs(e) for e in fp16) <= 0.10
