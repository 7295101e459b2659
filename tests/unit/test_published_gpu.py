"""The GPU step time against published per-GPU training throughputs (resources/published/
gpu_throughputs.json: the Lambda deep-learning benchmark's PyTorch tables, 9 GPUs, ResNet-50 and
BERT-base/large SQuAD in fp16 and TF32, IEEE fp32 on the V100). The fit part: ResNet-50 on the RTX 3090
and 4090 (the cards of compute capability 8.6/8.9 that pay no transposes were set there; the H100 SXM's
rows, on which the transposes' price was fitted until the lent GPUs' profiles priced it, are held out),
and BERT-base in TF32 on the H100 SXM and the RTX 3090 (TF32's share of the GEMM efficiency was fitted
there); every other row is held out. The bars asserted are SPEC 9's cross-GPU bar (within 25 %) and the errors reached.
Table: benchmarks/accuracy_published.py."""

from __future__ import annotations

import json
import statistics

from benchmarks.accuracy_published import DATA, errors
from core.hardware.catalogue import find_device, load_catalogue

ROWS = errors()
HELD_OUT = [(c, e) for c, _, e in ROWS if c["part"] == "held-out"]


def test_every_published_figure_is_kept_with_its_source() -> None:
    doc = json.loads(DATA.read_text(encoding="utf-8"))
    assert len(doc["rows"]) == len(ROWS) == 54
    for r in doc["rows"]:
        src = doc["sources"][r["source"]]
        assert src["url"] and src["date"] and src["version"] and src["what"]
        assert r["batch"] > 0 and r["throughput"] > 0
        find_device(r["device"], load_catalogue())  # every GPU is a catalogue device


def test_the_fit_gpus_and_network_are_reproduced() -> None:
    # ResNet-50 fp16 (NCHW, AMP) on the RTX 3090 and 4090: 905 and 1,301 images/s published, 990 and 1,326
    # predicted (the cards of compute capability 8.6/8.9 pay no transposes: set there when their matrix rates
    # were the datasheet's × the H100's efficiency, −3 and −2 %; since their published matmul measurements set
    # those rates, +9 … +14 and +2 … +3 %: the 3090's convolutions gain less than its GEMMs)
    fit = {c["device"]: e for c, _, e in ROWS if c["part"] == "fit" and c["precision"] == "fp16_mixed"}
    assert set(fit) == {"NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 4090"}
    assert abs(fit["NVIDIA GeForce RTX 4090"]) <= 0.04
    assert abs(fit["NVIDIA GeForce RTX 3090"]) <= 0.15


def test_resnet50_on_the_h100_sxm_held_out() -> None:
    # the NCHW transposes' price was fitted on these rows (+2 % in fp16) until cuDNN's transposes and its NCHW
    # batch norm were priced from lent GPUs' kernel profiles (benchmarks/cnn_kernels.py): held out since,
    # 2,878 images/s predicted against 2,616 published in fp16 (+10 %), 1,927 against 1,753 in TF32 (+10 %)
    errs = {c["precision"]: e for c, e in HELD_OUT if (c["benchmark"], c["device"]) == ("resnet50", "NVIDIA H100 SXM")}
    assert set(errs) == {"fp16_mixed", "tf32"}
    assert all(abs(e) <= 0.15 for e in errs.values())


def test_resnet50_on_gpus_it_was_not_fitted_on() -> None:
    # on tensor cores (fp16, TF32) reached 10 of 11 within 25 %, mean |error| 10 %, worst +25 % (A10
    # fp16; the V100 in fp16 −20 %, paying the transposes as Volta is assumed to); the cards of compute
    # capability 8.6/8.9 held out of the NCHW rule (A10, RTX A6000, RTX 6000 Ada) read +11 … +25 % in
    # fp16, −26 … −34 % when they paid the H100's transposes
    errs = [e for c, e in HELD_OUT if c["benchmark"] == "resnet50" and c["precision"] != "fp32"]
    assert len(errs) == 13
    assert statistics.mean(abs(e) for e in errs) <= 0.11
    assert max(abs(e) for e in errs) <= 0.26
    assert sum(abs(e) <= 0.25 for e in errs) >= 10


def test_resnet50_in_ieee_fp32_within_25_percent() -> None:
    # DeepLearningExamples' ConvNets turn cudnn.benchmark on (training.cudnn_benchmark in the published
    # network): the V100's 369 images/s read −12 % priced so, −46 % with the heuristics' kernels
    (err,) = [e for c, e in HELD_OUT if c["benchmark"] == "resnet50" and c["precision"] == "fp32"]
    assert abs(err) <= 0.25


def test_published_throughputs_of_held_out_gpus_and_networks_within_25_percent() -> None:
    # SPEC 9 on the held-out rows: reached 46 of 46 within 25 %, mean |error| 9.1 % with the V100's six
    # rows (44 of 46 and 10.0 % before ResNet-50 fp32 was priced with cuDNN's search, as DeepLearningExamples
    # runs it; 39 of 40 and 9.3 % without the V100; 37 of 40 and 11 % with every GPU's matrix rates from its
    # datasheet × the H100's efficiency; 33 of 42 and 14 % before TF32's GEMM efficiency and its spatial
    # convolutions' transposes); ResNet-50 fp16 on the A10 at the edge (+24.9 %, +25.4 % before a bias's
    # gradient and the first layer's autocast cast: held at 45); BERT fp16 on the RTX 4090 reads −23/−22 %
    # (was −29/−28 %)
    errs = [abs(e) for _, e in HELD_OUT]
    assert len(errs) == 48
    assert sum(e <= 0.25 for e in errs) >= 45, f"{sum(e <= 0.25 for e in errs)} of {len(errs)}"
    assert statistics.mean(errs) <= 0.10


def test_tf32_on_gpus_and_networks_it_was_not_fitted_on() -> None:
    # TF32 held out (BERT-large everywhere, BERT-base on six GPUs, ResNet-50 on five): reached 19 of 19
    # within 25 %, mean |error| 9.6 %, worst +15 %; at TF32's full tensor-core efficiency and without
    # transposes 14 of 19, mean 16 %, the H100s and the A10 +24 … +36 % too fast
    errs = [e for c, e in HELD_OUT if c["precision"] == "tf32"]
    assert len(errs) == 20
    assert max(abs(e) for e in errs) <= 0.25
    assert statistics.mean(abs(e) for e in errs) <= 0.12
    # ResNet-50 in TF32 on the A100 and the H100 PCIe, NCHW: −5.0 and +0.3 % (were +19 and +17 % before
    # TF32's own GEMM efficiency; −0 and +1 % at 0.8 of the tensor cores' share, refitted to 0.7 when
    # the RTX 3090's fit row took its published matmul rates)
    resnet = [e for c, e in HELD_OUT if c["benchmark"] == "resnet50" and c["precision"] == "tf32"]
    resnet_dc = [
        e
        for c, e in HELD_OUT
        if c["benchmark"] == "resnet50"
        and c["precision"] == "tf32"
        and c["device"] in ("NVIDIA A100 80GB SXM", "NVIDIA H100 PCIe")
    ]
    assert len(resnet) == 6 and len(resnet_dc) == 2
    assert max(abs(e) for e in resnet_dc) <= 0.055


def test_bert_priced_as_the_published_code_computes_its_attention() -> None:
    # DeepLearningExamples' BERT computes attention unfused (matmul, division, mask, softmax, dropout,
    # matmul), priced as training.attention "eager", and in fp16 holds the whole model in fp16 (apex amp
    # O2), priced as precision_layout "deepspeed" (the same states; no fp32 residual stream). Reached (held
    # out): 34 of 34 within 25 %, mean |error| 8.9 %, worst −24.3 % (RTX 4090 fp16: −23 % before the biases'
    # and layer norms' weight-gradient kernels were priced at the rates a lent H100's profiles showed, −22 %
    # before a bias's gradient was priced, −29 % before the GeForce cards' published matmul rates; the V100's four rows
    # −13 … +3 %); with PyTorch 2's flash attention it read 9 of 32, mean 47 %, +114 %; priced under
    # torch.autocast instead, its fp16 rows read 3–6 % slower and the RTX 4090's two −28/−30 %
    errs = [e for c, e in HELD_OUT if c["benchmark"].startswith("bert")]
    assert len(errs) == 34
    for c, _ in HELD_OUT:
        if c["benchmark"].startswith("bert"):
            layout = {"precision_layout": "deepspeed"} if c["precision"] == "fp16_mixed" else {}
            assert c["training"] == {"attention": "eager", **layout}
    assert statistics.mean(abs(e) for e in errs) <= 0.10
    assert max(abs(e) for e in errs) <= 0.245
    assert sum(abs(e) <= 0.25 for e in errs) == 34
    # the expensive cards, where a wrong answer costs most: H100 SXM / PCIe and A100 in fp16 within 10 %
    fp16 = [
        e
        for c, e in HELD_OUT
        if c["benchmark"].startswith("bert")
        and c["precision"] == "fp16_mixed"
        and ("H100" in c["device"] or "A100" in c["device"])
    ]
    assert len(fp16) == 6 and max(abs(e) for e in fp16) <= 0.10
