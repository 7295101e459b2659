"""CNN kernels priced from lent GPUs' profiles (benchmarks/cnn_kernels.py): max pooling at its kernels'
element rate, cuDNN's NCHW ↔ NHWC transposes at the SMs' clock and cuDNN's NCHW batch norm a block a
channel. Each rate is the fit of its profiles, held out on another lease's and on ResNet-50's."""

from __future__ import annotations

import pytest

from benchmarks.cnn_kernels import CONSTANTS, _get, fit, rows
from core.estimate import gpu_memory as gm
from core.estimate.gpu_kernels import figures, nchw_transpose_s
from core.hardware.catalogue import find_device, load_catalogue

CATALOGUE = tuple(load_catalogue())


def held_out(part: str, floor_s: float = 1e-4) -> list[dict]:
    """The held-out profiles whose kernels of ``part`` take at least ``floor_s`` a step (shorter ones are
    their launches')."""
    return [r for r in rows(part) if r["role"] == "held out" and r["measured_s"] >= floor_s]


@pytest.mark.parametrize("part", list(CONSTANTS))
def test_each_rate_is_the_fit_of_its_profiles(part: str) -> None:
    module, name, _ = CONSTANTS[part]
    assert fit(part) == pytest.approx(_get(module, name))


def test_max_pooling_held_out_on_another_lease() -> None:
    # a lent H200's pools (fitted on a lent H100's): backward in NCHW within 1 % (2.53 ms for one layer of
    # 268 M elements, where its bytes stream in 0.28 ms), forward +9 … +20 %, NHWC backward +7 … +37 %;
    # ResNet-50's single 3 × 3 pool −14 … −27 %
    for part, bar in (("maxpool backward NCHW", 0.16), ("maxpool forward", 0.22), ("maxpool backward NHWC", 0.38)):
        errors = [r["predicted_s"] / r["measured_s"] - 1 for r in held_out(part)]
        assert len(errors) >= 3 and max(map(abs, errors)) <= bar, (part, errors)
    big = next(r for r in rows("maxpool backward NCHW") if r["label"].startswith("random-2027-27"))
    assert big["predicted_s"] == pytest.approx(big["measured_s"], rel=0.02)
    streamed = 4 * 2 * 268_435_456 / figures(find_device("H200 SXM", CATALOGUE)).bandwidth  # the old price
    assert streamed < 0.25 * big["measured_s"]


def test_the_transposes_held_out_on_resnet50_and_another_lease() -> None:
    # ResNet-50 fp16 b256 in NCHW: 12.9 ms of transposes on the H100 and 13.4 ms on the H200 (1.43 × its
    # bandwidth): +18 and +13 % at the SMs' clock, where the old price by bytes said 39.5 and 27.6 ms
    errors = {r["label"]: r["predicted_s"] / r["measured_s"] - 1 for r in held_out("transposes", 1e-3)}
    assert len(errors) == 4 and max(map(abs, errors.values())) <= 0.3, errors
    h100, h200 = (r for r in held_out("transposes", 1e-3) if "ResNet-50" in r["label"])
    assert h100["measured_s"] == pytest.approx(h200["measured_s"], rel=0.05)  # not the bandwidth's 1.43 ×


def test_cudnn_batch_norm_a_block_a_channel_held_out_on_resnet50() -> None:
    # ResNet-50 fp16 b256 in NCHW ran 39 ms of cuDNN's per-channel batch-norm kernels on either GPU (its
    # bytes stream in 17 on the H100): 31 ms priced, −20 % (fitted on random CNNs of 16–128 channels)
    fwd = {r["label"]: r for r in rows("batch norm forward") if "ResNet-50" in r["label"]}
    bwd = {r["label"]: r for r in rows("batch norm backward") if "ResNet-50" in r["label"]}
    assert len(fwd) == len(bwd) == 2
    for label in fwd:
        measured = fwd[label]["measured_s"] + bwd[label]["measured_s"]
        priced = fwd[label]["predicted_s"] + bwd[label]["predicted_s"]
        assert measured > 0.035 and priced / measured - 1 == pytest.approx(-0.2, abs=0.06)


def test_the_prices_switch_where_the_kernels_do() -> None:
    h100 = figures(find_device("H100 SXM", CATALOGUE))
    # a channel of up to 16,384 elements: cuDNN's single-read kernels, priced by their bytes alone
    assert gm.cudnn_batchnorm_s(16384, 64, h100) == 0.0
    assert gm.cudnn_batchnorm_s(65536, 64, h100) > 0.0
    # twice the channels of four blocks an SM: two waves
    one, two = (float(gm.cudnn_batchnorm_s(1e6, c, h100)) for c in (528, 529))
    assert two == pytest.approx(2 * one)
    # NHWC pools' backward runs faster than NCHW's
    assert gm.maxpool_s(1e8, "channels_last", h100) < gm.maxpool_s(1e8, "contiguous", h100)
    # a 1 × 1 convolution pays a third of a spatial one's transposes
    assert float(nchw_transpose_s(1e8, True, 2, h100)) == pytest.approx(
        float(nchw_transpose_s(1e8, False, 2, h100)) / 3
    )
    # a GPU without a known clock: no element-rate price, the transposes by bytes
    b200 = figures(find_device("B200", CATALOGUE))
    assert b200.clock == 0
    assert float(gm.maxpool_s(1e8, "contiguous", b200)) == 0.0
    assert float(nchw_transpose_s(1e8, False, 2, b200)) > 0.0


def test_the_report_tells_purchasing_what_cudnns_nchw_batch_norm_costs() -> None:
    from core.advice.recommendation import recommend
    from core.output.report import build_report
    from core.spec.workload import parse_workload

    device = find_device("H100 SXM", CATALOGUE)

    def kernels(precision: str, layout: str) -> str:
        doc = {"model": {"preset": "resnet-50"}, "training": {"precision": precision, "memory_format": layout}}
        return dict(build_report(recommend(parse_workload(doc), [device])).assumptions).get("GPU kernels", "")

    fp16 = kernels("fp16_mixed", "contiguous")
    assert "cuDNN's batch norm runs one block a channel" in fp16 and "channels_last avoids it" in fp16
    assert "13 ms of it the transposes" in fp16
    # fp16 is no way out of bf16's per-channel batch norm in NCHW: the note no longer says it is
    bf16 = kernels("bf16_mixed", "contiguous")
    assert "or fp16" not in bf16 and "fp16 in NCHW runs cuDNN's, a block a channel too" in bf16
    assert kernels("fp16_mixed", "channels_last") == ""


def test_a_card_that_runs_nchw_as_it_is_is_not_told_of_transposes() -> None:
    # the RTX 4090 (compute capability 8.9) pays no transposes in the model, so its report does not name them;
    # cuDNN's per-channel batch norm is the library's on any card
    from core.advice.recommendation import recommend
    from core.output.report import build_report
    from core.spec.workload import parse_workload

    doc = {"model": {"preset": "resnet-50"}, "training": {"precision": "fp16_mixed"}}
    rtx = find_device("RTX 4090", CATALOGUE)
    row = dict(build_report(recommend(parse_workload(doc), [rtx])).assumptions).get("GPU kernels", "")
    assert "layout transposes" not in row and "cuDNN's batch norm runs one block a channel" in row
