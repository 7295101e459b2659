"""Runtime overheads belong to the runtime that has them: CUDA's only on NVIDIA GPUs."""

from __future__ import annotations

import pytest

from core.estimate.sizing import size_workload
from core.hardware.catalogue import find_device, load_catalogue
from core.spec.workload import parse_workload

CATALOGUE = load_catalogue()
BERT = parse_workload({"model": {"preset": "bert-base"}, "training": {"batch_size": 32}})


@pytest.mark.parametrize("name", ["TPU v4", "Trainium2"])
def test_tpus_and_trainium_get_no_cuda_context_and_say_their_overhead_is_unknown(name: str) -> None:
    (c,) = size_workload(BERT, [find_device(name, CATALOGUE)]).candidates
    device = c.device.name
    assert c.memory.overhead == 0  # was 768 MiB of CUDA context + 5 % of the tensor peak
    assert c.memory.total == c.memory.tensor_peak
    assert c.step.overhead_s == 0  # was the 1.8 ms per step measured on an H100 host
    text = " ".join(c.assumptions)
    assert f"no runtime memory overhead is known for {device}" in text and "a lower bound" in text
    assert f"no per-step overhead is known for {device}; the step time is a lower bound" in text


def test_an_nvidia_gpu_keeps_the_cuda_overheads() -> None:
    (c,) = size_workload(BERT, [find_device("H100 SXM", CATALOGUE)]).candidates
    assert c.memory.overhead > 700 * 2**20  # the CUDA context measured on an H100 (779 MiB)
    assert c.step.overhead_s > 1e-3
    assert "no per-step overhead is known" not in " ".join(c.assumptions)


def test_a_summary_model_counts_no_invented_op_overhead() -> None:
    """A published summary (Jamgharyan Table 1) gives parameters and FLOPs, not its layers: with a
    measured 1 ms per op the step must not charge an invented number of ops."""
    from core.estimate.sizing import size_candidate

    w = parse_workload({"model": {"preset": "ssd-pascal-mobilenet-ft"}, "training": {"batch_size": 8}})
    measured = {"per_op_s": 1e-3, "per_step_s": 0.0}
    c = size_candidate(w, find_device("H100 SXM", CATALOGUE), 1, calibrated=measured)
    assert c.step.overhead_s == 0  # was 50 invented ops × (3 + 2) × 1 ms = 250 ms
    assert "per-op overhead unknown for a summary model" in " ".join(c.assumptions)


def test_fine_tuning_says_it_is_sized_as_full_fine_tuning() -> None:
    w = parse_workload({"model": {"preset": "bert-base"}, "goal": {"purpose": "finetune"}})
    (c,) = size_workload(w, [find_device("H100 SXM", CATALOGUE)]).candidates
    (scratch,) = size_workload(
        parse_workload({"model": {"preset": "bert-base"}}), [find_device("H100 SXM", CATALOGUE)]
    ).candidates
    assert c.memory.total == scratch.memory.total  # every weight trained: nothing frozen is modelled
    assert "fine-tuning sized as full fine-tuning" in " ".join(c.assumptions)
