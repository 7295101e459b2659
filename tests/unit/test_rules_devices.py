"""Device findings read the device's own figures: NVLink advice only for accelerators joined by
nothing but PCIe, "no tensor cores" only for a device whose half precision has no peak above FP32
(whatever its catalogue count says), and no mixed-precision advice where it gains nothing."""

from __future__ import annotations

from typing import Any

import pytest

from core.advice.rules import Finding, evaluate_rules
from core.estimate.sizing import size_workload
from core.hardware.catalogue import DeviceSpec, find_device, load_catalogue
from core.spec.workload import parse_workload

CATALOGUE = load_catalogue()
ACCELERATORS = [d for d in CATALOGUE if d.kind != "cpu"]
# BERT-base at batch 32 in bf16 over 8 devices: the all-reduce is 26–90 % of the step on every
# accelerator below (the step-time model), far above the rule's 5 %
BERT_8: dict[str, Any] = {
    "model": {"preset": "bert-base"},
    "training": {"batch_size": 32, "precision": "bf16_mixed"},
    "hardware": {"gpu_count": 8},
}
RESNET_FP32: dict[str, Any] = {"model": {"preset": "resnet-50"}, "training": {"batch_size": 256}}


def findings(doc: dict[str, Any], device: DeviceSpec) -> dict[str, Finding]:
    result = size_workload(parse_workload(doc), [device])
    return {f.rule: f for f in evaluate_rules(result, None)}


@pytest.mark.parametrize("name", ["MI300X", "TPU v5e", "Gaudi 3", "Trainium2", "H100 SXM"])
def test_no_nvlink_advice_for_devices_joined_by_their_own_fabric(name: str) -> None:
    # MI300X over Infinity Fabric, TPU v5e over ICI, Gaudi 3 over RoCE, Trainium over NeuronLink: the
    # rule read "nvlink" in the interconnect's name and told them to move to NVLink
    device = find_device(name, CATALOGUE)
    result = size_workload(parse_workload(BERT_8), [device])
    c = result.candidates[0]
    if name == "H100 SXM":  # its NVLink carries the all-reduce in 4 % of its host-paced step
        assert 0 < c.step.comm_s / c.step.step_s < 0.05
    else:  # the rule's other condition holds: only the fabric's name could keep it quiet
        assert c.step.comm_s / c.step.step_s >= 0.05
    assert "nvlink-multi-gpu" not in {f.rule for f in evaluate_rules(result, None)}


def test_pcie_cards_get_nvlink_advice_without_an_sxm_version_of_themselves() -> None:
    f = findings(BERT_8, find_device("4090", CATALOGUE))["nvlink-multi-gpu"]
    assert f.message.startswith("NVIDIA GeForce RTX 4090 × 8 talk over PCIe 4.0 x16: the gradient all-reduce takes")
    # there is no SXM RTX 4090: the advice names a class of boards, not a board of this card
    assert f.message.endswith(
        "accelerators on an NVLink/NVSwitch-class baseboard (SXM, OAM) exchange gradients without the CPU "
        "orchestration."
    )
    assert "(SXM boards)" not in f.message


def test_b200_has_tensor_cores() -> None:
    # the catalogue's B200 had no tensor core count, and the finding read
    # "NVIDIA B200 (HGX) has no tensor cores: mixed precision will not speed it up"
    b200 = find_device("B200", CATALOGUE)
    assert b200.extra["tensor_core_generation"] == "5th"
    found = findings(RESNET_FP32, b200)
    assert "gpu-no-tensor-cores" not in found
    assert found["gpu-tensor-cores"].message.startswith(
        "NVIDIA B200 (HGX): training in FP32 leaves its tensor cores idle — bf16/fp16 mixed precision raises the peak "
        "from 80 TFLOP/s to 2.25 PFLOP/s"
    )


@pytest.mark.parametrize("device", ACCELERATORS, ids=[d.name for d in ACCELERATORS])
def test_no_device_with_a_half_precision_tensor_peak_is_told_it_has_no_tensor_cores(device: DeviceSpec) -> None:
    fp32, fp16 = device.extra.get("fp32_tflops"), device.extra.get("fp16_tflops")
    found = findings({"model": {"preset": "seed-mlp"}}, device)
    tensor_peak = fp16 is not None and (fp32 is None or fp16 > fp32)
    assert ("gpu-no-tensor-cores" in found) == (not tensor_peak), (fp32, fp16)


def test_only_cards_without_a_half_precision_peak_have_no_tensor_cores() -> None:
    told = {d.name for d in ACCELERATORS if "gpu-no-tensor-cores" in findings({"model": {"preset": "seed-mlp"}}, d)}
    assert told == {"NVIDIA Quadro M4000", "NVIDIA GeForce GTX 1080 Ti", "NVIDIA Tesla P40"}


def test_a_tpu_is_not_told_mixed_precision_raises_its_peak() -> None:
    # XLA runs a TPU's FP32 matmuls as BF16 passes: the catalogue's one peak serves both, and the
    # finding read "raises the peak from 197 TFLOP/s to 197 TFLOP/s"
    found = findings(RESNET_FP32, find_device("TPU v5e", CATALOGUE))
    assert "gpu-tensor-cores" not in found and "gpu-no-tensor-cores" not in found
