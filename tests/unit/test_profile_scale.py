"""Measure-and-scale: reading profiles and Chrome traces, sorting kernels, scaling them to other GPUs.

The H100 traces in tests/fixtures/profiles are built by hand from the documented trace format
(their README says so); the CPU profile and trace are real output of the measure worker. These
tests check parsing and the scaling arithmetic, not how well the scaling predicts real GPUs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.estimate.gemm import GEMM_FIXED_S
from core.estimate.profile_read import (
    KernelRecord,
    ProfileError,
    StepProfile,
    classify_kernel,
    kernel_precision,
    parse_chrome_trace,
    read_profile_file,
)
from core.estimate.profile_scale import LAUNCH_FLOOR_S, scale_kernel, scale_profile, sm_count
from core.hardware.catalogue import find_device, load_catalogue

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "profiles"
RESNET = FIXTURES / "h100-sxm-resnet50-fp16.trace.json"
BERT = FIXTURES / "h100-sxm-bert-base-bf16.trace.json"
CAT = load_catalogue()


def dev(name: str):
    return find_device(name, CAT)


H100_SXM, H100_PCIE, A100 = dev("H100 SXM"), dev("H100 PCIe"), dev("A100 80GB SXM")


def test_chrome_trace_fixture_adds_up_to_the_recorded_h100_step() -> None:
    p = read_profile_file(RESNET, precision="fp16_mixed")
    assert p.device_name == "NVIDIA H100 80GB HBM3" and p.sm_count == 132 and p.steps == 2
    assert p.wall_s == pytest.approx(0.0939, rel=0.01)  # ResNet-50 fp16 NCHW on an H100 SXM: 93.9 ms
    assert 0.9 * p.wall_s < p.device_s < p.wall_s
    assert p.host_s == pytest.approx(0.21 * 0.0939, rel=0.02)  # the step less its cudaDeviceSynchronize
    kinds = p.by_kind()
    assert max(kinds, key=lambda k: kinds[k]) == "conv"
    # 53 convolutions forward, 52 input gradients (the first layer computes none), 53 weight gradients
    assert sum(k.calls for k in p.kernels if k.kind == "conv") == 158
    assert "not measured" in p.about.lower()


def test_precision_is_read_from_the_kernel_names_when_the_user_does_not_say() -> None:
    assert read_profile_file(BERT).precision == "bf16_mixed"  # nvjet names carry none; flash and xmma do
    assert kernel_precision("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", "fp32") == "bf16_mixed"
    assert kernel_precision("ampere_sgemm_128x64_tn", "fp16_mixed") == "fp32"
    assert kernel_precision("cutlass_80_tensorop_s1688gemm_tf32_128x128", "fp32") == "tf32"
    assert kernel_precision("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTT", "bf16_mixed") == "bf16_mixed"


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize64x64x64_cublas", "gemm"),
        ("nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNT", "gemm"),
        ("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn", "gemm"),
        ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x1_tn_align8>", "gemm"),
        ("void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>", "conv"),
        ("sm80_xmma_fprop_implicit_gemm_indexed_f16f16_f16f32_f32_nhwckrsc_nchw", "conv"),
        ("void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>", "conv"),
        ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4>>", "attention"),
        ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80", "attention"),
        ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<__half, float, 512, true, 1>", "sm_bound"),
        ("void cudnn::bn_bw_1C11_kernel_new<__half, float, float2, 128, true, 1>", "sm_bound"),
        ("void at::native::batch_norm_collect_statistics_kernel<at::native::Var, c10::BFloat16>", "sm_bound"),
        ("void at::native::(anonymous namespace)::max_pool_backward_nchw<c10::Half, float, int>", "sm_bound"),
        ("void at::native::(anonymous namespace)::max_pool_forward_nhwc<float, int>", "sm_bound"),
        ("void cudnn::bn_fw_tr_1C11_singleread<__half, 512, true, 1, 2, 0>", "norm"),
        ("void cudnn::batchnorm_fwtr_nhwc_semiPersist<__half, float, __half, 512, 16, 5>", "norm"),
        ("void at::native::batch_norm_collect_statistics_channels_last_kernel<at::native::Var, float>", "norm"),
        ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>", "norm"),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>", "elementwise"),
        ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps>>", "reduction"),
        ("void at::native::multi_tensor_apply_kernel<TensorListMetadata<4>, FusedAdamMathFunctor<float>>", "optimizer"),
        ("void at::native::cunn_SoftMaxForward<4, float, float, float, LogSoftMaxForwardEpilogue>", "softmax_loss"),
        ("void cudnn::engines_precompiled::nchwToNhwcKernel<__half, __half, float, false, true>", "sm_bound"),
        ("Memcpy DtoD (Device -> Device)", "copy"),
        ("Memcpy HtoD (Pageable -> Device)", "transfer"),
        ("aten::mkldnn_convolution", "conv"),
        ("aten::addmm", "gemm"),
        ("aten::threshold_backward", "elementwise"),
        ("some_custom_kernel_v2", "other"),
    ],
)
def test_kernels_are_sorted_by_what_limits_them(name: str, kind: str) -> None:
    assert classify_kernel(name) == kind


def test_the_real_kernels_the_model_prices_per_sm_clock_are_sorted_as_such() -> None:
    # every kernel name two lent GPUs' profiles hold (tests/fixtures/gpu/h*-profiles-*.jsonl, benchmarks/
    # profile_cases.py): the ones the kernel model prices per SM clock (benchmarks/cnn_kernels.py's, and
    # PyTorch's NCHW batch norm for bf16) are sm_bound; their channels-last and single-read siblings are not
    gpu = FIXTURES.parent / "gpu"
    names = {
        k["name"]
        for path in (gpu / "h100-profiles-2026-11-26d.jsonl", gpu / "h200-profiles-2026-11-26e.jsonl")
        for line in path.read_text(encoding="utf-8").splitlines()
        for k in json.loads(line)["profile"]["kernels"]
    }
    per_clock = (
        "max_pool_forward_nchw",
        "max_pool_backward_nchw",
        "max_pool_forward_nhwc",
        "max_pool_backward_nhwc",
        "nchwToNhwcKernel",
        "nhwcToNchwKernel",
        "bn_fw_tr_1C11_kernel_NCHW",
        "bn_bw_1C11_kernel_new",
        "batch_norm_collect_statistics_kernel<",
        "batch_norm_backward_kernel<",
    )
    for part in per_clock:
        found = [n for n in names if part in n]
        assert found, part  # each kind is in the real profiles
        assert {classify_kernel(n) for n in found} == {"sm_bound"}, part
    for part in ("batchnorm_fwtr_nhwc_semiPersist", "bn_fw_tr_1C11_singleread", "batch_norm_transform_input_kernel"):
        found = [n for n in names if part in n]
        assert found and {classify_kernel(n) for n in found} == {"norm"}, part
    assert len([n for n in names if classify_kernel(n) == "sm_bound"]) >= 20


def kernel(name: str, per_call_us: float, calls: float = 1.0, bps: float | None = None) -> KernelRecord:
    return KernelRecord(name, classify_kernel(name), calls, per_call_us * 1e-6 * calls, bps)


SMS = (132, 108)  # H100 SXM, A100


def test_a_compute_bound_kernel_scales_by_the_ratio_of_the_peaks() -> None:
    gemm = kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas", 1000.0, bps=8.0)
    t = scale_kernel(gemm, H100_SXM, A100, "bf16_mixed", SMS)
    # 989.4 / 312 TFLOP/s dense BF16; a matrix product's 5 µs fixed time stays
    assert t == pytest.approx(GEMM_FIXED_S + (1000e-6 - GEMM_FIXED_S) * 989.4 / 312, rel=1e-9)
    fp32 = kernel("ampere_sgemm_128x64_tn", 1000.0)  # an fp32 kernel in an fp32 step: 66.9 / 19.5
    assert scale_kernel(fp32, H100_SXM, A100, "fp32", SMS) == pytest.approx(
        GEMM_FIXED_S + (1000e-6 - GEMM_FIXED_S) * 66.9 / 19.5
    )


def test_a_memory_bound_kernel_scales_by_the_ratio_of_the_bandwidths() -> None:
    add = kernel("void at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add<c10::Half>>", 500.0, 4, 396.0)
    t = scale_kernel(add, H100_SXM, A100, "fp16_mixed", SMS)
    assert t == pytest.approx(4 * (LAUNCH_FLOOR_S + (500e-6 - LAUNCH_FLOOR_S) * 3350 / 2039))


def test_a_short_kernel_never_goes_below_the_launch_floor() -> None:
    tiny = kernel("void at::native::vectorized_elementwise_kernel<4, FillFunctor<float>>", 3.0, 10)
    faster = dev("H200 SXM")  # more bandwidth: the scalable part shrinks, the floor stays
    t = scale_kernel(tiny, H100_SXM, faster, "fp32", (132, 132))
    assert t >= 10 * LAUNCH_FLOOR_S
    assert t < 10 * 3e-6
    one_us = kernel("void at::native::vectorized_elementwise_kernel<4, FillFunctor<float>>", 1.0, 5)
    assert scale_kernel(one_us, H100_SXM, A100, "fp32", SMS) == pytest.approx(5 * 1e-6)  # all of it is launch


def test_a_grid_smaller_than_the_gpu_gains_nothing_from_more_sms() -> None:
    # 96 blocks: one wave on both GPUs, so only the per-SM rate counts, not the whole-GPU peak
    attn = kernel("void pytorch_flash::flash_fwd_kernel<cutlass::bfloat16_t>", 1000.0, bps=96 / 132)
    t = scale_kernel(attn, H100_SXM, A100, "bf16_mixed", SMS)
    per_sm = (989.4 / 132) / (312 / 108)
    assert t == pytest.approx(LAUNCH_FLOOR_S + (1000e-6 - LAUNCH_FLOOR_S) * per_sm)  # attention: the launch floor
    assert t < scale_kernel(kernel(attn.name, 1000.0), H100_SXM, A100, "bf16_mixed", SMS)


def test_a_kernel_that_runs_at_a_rate_per_sm_clock_scales_by_the_sms_and_their_clock() -> None:
    # cuDNN's layout transposes: a lent H100 and H200 ran ResNet-50's in the same time (8.9 ms a step, 1.04 ×),
    # although the H200 has 1.43 × the bandwidth (the same 132 SMs at 1,980 MHz)
    transpose = kernel("void cudnn::engines_precompiled::nchwToNhwcKernel<__half, __half, float>", 500.0, 4, 250.0)
    h200 = dev("H200 SXM")
    assert scale_kernel(transpose, H100_SXM, h200, "fp16_mixed", (132, 132)) == pytest.approx(4 * 500e-6)
    # to an A100: 132 SMs × 1,980 MHz against 108 × 1,410 (the bandwidths would say 3,350 / 2,039)
    t = scale_kernel(transpose, H100_SXM, A100, "fp16_mixed", SMS)
    assert t == pytest.approx(4 * (LAUNCH_FLOOR_S + (500e-6 - LAUNCH_FLOOR_S) * (132 * 1980) / (108 * 1410)))
    # cuDNN's NCHW batch norm, a block a channel, four channels an SM at once (gpu_memory.block_a_channel_s):
    # ResNet-50's 140 channels a call are one wave on either GPU, so the clock alone
    norm = kernel("void cudnn::bn_bw_1C11_kernel_new<__half, float, float2, 512, true, 1>", 300.0, 2, 140 / 132)
    one_wave = 2 * (LAUNCH_FLOOR_S + (300e-6 - LAUNCH_FLOOR_S) * 1980 / 1410)
    assert scale_kernel(norm, H100_SXM, A100, "fp16_mixed", SMS) == pytest.approx(one_wave)
    # 1,024 channels: two waves on the H100's 528 slots, 2.4 on the A100's 432
    wide = kernel(norm.name, 300.0, 2, 1024 / 132)
    two_waves = 2 * (LAUNCH_FLOOR_S + (300e-6 - LAUNCH_FLOOR_S) * 1980 / 1410 * (1024 / 432) / (1024 / 528))
    assert scale_kernel(wide, H100_SXM, A100, "fp16_mixed", SMS) == pytest.approx(two_waves)


def test_a_per_sm_clock_kernel_without_a_clock_or_sm_count_falls_back_to_what_is_known() -> None:
    transpose = kernel("void cudnn::engines_precompiled::nhwcToNchwKernel<__half, __half, float>", 500.0, 4, 250.0)
    b200 = dev("B200 (HGX)")  # the catalogue gives no boost clock: the bandwidths' ratio, as the kernel model's
    assert b200.clock_hz is None
    assert scale_kernel(transpose, H100_SXM, b200, "fp16_mixed", (132, 148)) == pytest.approx(
        4 * (LAUNCH_FLOOR_S + (500e-6 - LAUNCH_FLOOR_S) * 3350 / 7700)
    )
    assert scale_kernel(transpose, b200, H100_SXM, "fp16_mixed", (148, 132)) == pytest.approx(
        4 * (LAUNCH_FLOOR_S + (500e-6 - LAUNCH_FLOOR_S) * 7700 / 3350)
    )
    # the measured GPU's SM count unknown (a trace without deviceProperties): the clocks alone
    assert scale_kernel(transpose, H100_SXM, A100, "fp16_mixed", (None, 108)) == pytest.approx(
        4 * (LAUNCH_FLOOR_S + (500e-6 - LAUNCH_FLOOR_S) * 1980 / 1410)
    )
    # every current GPU of the catalogue (measure's default candidates) takes it within a factor of ten of the
    # H100 SXM, both ways (a 1 Hz stand-in for a missing clock once gave the B200 a step of 4.8 million seconds)
    for gpu in (d for d in CAT if d.kind == "gpu" and d.runs_cuda and d.bandwidth and d.availability == "current"):
        for a, b in ((H100_SXM, gpu), (gpu, H100_SXM)):
            t = scale_kernel(transpose, a, b, "fp16_mixed", (sm_count(a), sm_count(b)))
            assert 0.1 * 2e-3 < t < 10 * 2e-3, gpu.name


def test_sm_counts_come_from_cuda_cores_and_compute_capability() -> None:
    assert sm_count(H100_SXM) == 132 and sm_count(H100_PCIE) == 114 and sm_count(A100) == 108
    assert sm_count(dev("RTX 4090")) == 128


def test_h100_pcie_is_not_a_derated_sxm_compute_and_memory_move_apart() -> None:
    r = scale_profile(read_profile_file(RESNET, precision="fp16_mixed"), H100_SXM, [H100_PCIE])
    pcie = r.predictions[0]
    ratios = {c.kind: c.predicted_s / c.measured_s for c in pcie.by_class}
    assert ratios["conv"] == pytest.approx(989.4 / 756, rel=0.02)  # tensor peaks
    assert ratios["elementwise"] == pytest.approx(3350 / 2000, rel=0.03)  # HBM3 vs HBM2e
    # batch norm and layout transposes: 132 SMs at 1,980 MHz against 114 at 1,755
    assert ratios["sm_bound"] == pytest.approx(132 * 1980 / (114 * 1755), rel=0.01)
    assert ratios["conv"] < pcie.step_s / r.measured.step_s < ratios["elementwise"]
    assert pcie.bound == "device"


def test_the_measured_gpu_predicts_its_own_measured_step() -> None:
    p = read_profile_file(BERT)
    r = scale_profile(p, H100_SXM, [H100_SXM])
    assert r.measured.step_s == pytest.approx(p.wall_s)
    assert r.predictions[0].step_s == pytest.approx(p.wall_s)
    assert r.measured.gap_s == pytest.approx(p.wall_s - p.device_s)


def test_a_host_bound_step_keeps_its_host_time_on_a_faster_gpu() -> None:
    k = kernel("void at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add<float>>", 200.0, 5, 400.0)
    p = StepProfile("NVIDIA H100 80GB HBM3", "cuda", (k,), 3, wall_s=0.002, host_s=0.002, sm_count=132)
    r = scale_profile(p, H100_SXM, [dev("H200 SXM"), A100])
    h200, a100 = r.predictions
    assert h200.bound == a100.bound == "host"
    assert h200.step_s == pytest.approx(0.002) and a100.step_s == pytest.approx(0.002)
    assert any("host" in n for n in r.notes)


def test_candidates_it_cannot_scale_to_are_named_with_the_reason() -> None:
    r = scale_profile(read_profile_file(BERT), H100_SXM, [dev("TPU v4"), dev("Xeon w9-3495X"), A100])
    reasons = {x.device: x.reason for x in r.refused}
    assert "TPU" in reasons["Google TPU v4"]
    assert "not a GPU" in reasons["Intel Xeon w9-3495X"]
    assert [p.device for p in r.predictions] == ["NVIDIA A100 80GB SXM"]


def test_a_gpu_without_a_bandwidth_figure_is_refused() -> None:
    from dataclasses import replace

    blank = replace(A100, name="my GPU", bandwidth=None)
    r = scale_profile(read_profile_file(BERT), H100_SXM, [blank])
    assert r.refused[0].device == "my GPU" and "bandwidth" in r.refused[0].reason


def test_a_real_cpu_profile_is_read_but_not_scaled_to_gpus() -> None:
    p = read_profile_file(FIXTURES / "cpu-small-cnn.profile.json")
    assert p.device_type == "cpu" and p.steps == 3 and p.torch_version.startswith("2.")
    kinds = p.by_kind()
    # a CNN's training step on a CPU: the convolutions (oneDNN) are the largest part
    assert max(kinds, key=lambda k: kinds[k]) == "conv"
    assert p.wall_s is not None and p.host_s is not None and p.host_s <= p.wall_s * 1.01
    with pytest.raises(ProfileError, match="recorded on the CPU"):
        scale_profile(p, H100_SXM, [A100])


def test_a_real_cpu_chrome_trace_is_refused_for_having_no_device_kernels() -> None:
    with pytest.raises(ProfileError, match="no device kernels"):
        read_profile_file(FIXTURES / "cpu-seed-mlp.trace.json")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k"', "not valid JSON"),
        ('{"displayTimeUnit": "ms"}', "no 'traceEvents' list"),
        ('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm", "ts": 1, "dur": -4}]}', "dur must be"),
        ('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm", "ts": 1, "dur": "5"}]}', "dur must be"),
        # a kernel of 1e308 µs printed step times of 300 digits
        ('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm", "ts": 0, "dur": 1e308}]}', "dur must be 0 to"),
        (
            '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm", "ts": "abc", "dur": 5}]}',
            "ts must be a number,",
        ),
        ('{"format": "trainrig-profile", "version": 1, "steps": 2, "kernels": []}', "lists no kernels"),
        ('{"format": "trainrig-profile", "version": 9, "steps": 2, "kernels": []}', "version 9"),
    ],
)
def test_a_damaged_file_is_refused_with_a_clear_message(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "trace.json"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(ProfileError, match=message) as info:
        read_profile_file(f)
    assert str(f) in str(info.value)


def test_a_missing_or_binary_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="cannot be read"):
        read_profile_file(tmp_path / "nothing.json")
    (tmp_path / "b.json").write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(ProfileError, match="not text"):
        read_profile_file(tmp_path / "b.json")


def test_a_trace_without_profiler_steps_is_one_step_with_unknown_host_time() -> None:
    events = [
        {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_tn", "ts": 10.0, "dur": 400.0, "args": {}},
        {"ph": "X", "cat": "kernel", "name": "vectorized_elementwise_kernel", "ts": 420.0, "dur": 100.0},
    ]
    p = parse_chrome_trace({"traceEvents": events}, "t.json", precision="fp32")
    assert p.steps == 1 and p.host_s is None and p.wall_s is None
    assert p.device_s == pytest.approx(500e-6)
    r = scale_profile(p, H100_SXM, [A100])
    assert r.predictions[0].step_s == pytest.approx(r.predictions[0].device_s)
    assert any("host time is unknown" in n for n in r.predictions[0].notes)


def test_the_compact_profile_divides_totals_by_the_profiled_steps(tmp_path: Path) -> None:
    doc = {
        "format": "trainrig-profile",
        "version": 1,
        "device": "NVIDIA A100-SXM4-80GB",
        "device_type": "cuda",
        "sm_count": 108,
        "precision": "tf32",
        "steps": 4,
        "step_wall_s": [0.011, 0.010, 0.012, 0.010],
        "step_host_s": [0.003, 0.003, 0.004, 0.003],
        "kernels": [{"name": "cutlass_80_tensorop_s1688gemm_tf32_256x128", "count": 8, "total_us": 36000.0}],
    }
    f = tmp_path / "p.json"
    f.write_text(json.dumps(doc), encoding="utf-8")
    p = read_profile_file(f)
    assert p.kernels[0].calls == 2 and p.kernels[0].total_s == pytest.approx(0.009)
    assert p.wall_s == pytest.approx(0.0105) and p.host_s == pytest.approx(0.003)
    r = scale_profile(p, A100, [H100_SXM])
    # tf32: 156 → 494.7 TFLOP/s makes the 9 ms of GEMMs 2.84 ms, below the 3 ms the host needs to issue
    # them: the H100 step is host-bound, 3 ms + the 1.5 ms gap the A100 step had (10.5 − 9 ms)
    gemm = 2 * (GEMM_FIXED_S + (4.5e-3 - GEMM_FIXED_S) * 156 / 494.7)
    h100 = r.predictions[0]
    assert h100.device_s == pytest.approx(gemm, rel=1e-9) and gemm < 0.003
    assert h100.bound == "host" and h100.step_s == pytest.approx(0.003 + 0.0015, rel=1e-9)


def test_the_report_notes_say_which_candidates_used_the_measurement() -> None:
    from core.output.measure_report import report_notes

    r = scale_profile(read_profile_file(BERT), H100_SXM, [H100_PCIE, dev("TPU v4")])
    notes = report_notes(r)
    assert notes[0].startswith("Measured on this GPU: NVIDIA H100 80GB HBM3, bf16_mixed, 41.3 ms per step")
    pcie = r.predictions[0].step_s
    assert any(n.startswith("Measured and scaled: NVIDIA H100 PCIe: ") and f"{pcie * 1e3:.1f} ms" in n for n in notes)
    assert any(n.startswith("Not scaled (the model's figure is used): Google TPU v4") for n in notes)


def test_scaling_between_a_geforce_and_a_professional_card_says_it_is_rough() -> None:
    r = scale_profile(read_profile_file(BERT), H100_SXM, [dev("RTX 4090"), A100])
    rtx, a100 = r.predictions
    assert any("GeForce" in n and "8–30 %" in n for n in rtx.notes)
    assert not any("GeForce" in n for n in a100.notes)
    from core.output.measure_report import report_notes, scale_to_text

    assert "GeForce" in scale_to_text(r)
    line = next(x for x in report_notes(r) if x.startswith("Note on"))
    assert line.startswith("Note on NVIDIA GeForce RTX 4090: scaled between a GeForce card") and "A100" not in line


def test_every_ga102_pair_within_the_issues_15_percent() -> None:
    # RTX 3090 ↔ RTX A6000: 12 of 12 within 15 %, worst −14 % (BERT-large fp16 3090 → A6000 read −15.1 % before
    # autocast's casts and the foreach optimizer were priced from real profiles, 2026-11-26; −14.8 % before a
    # bias's gradient was priced)
    from benchmarks.measure_scale_published import pair_errors

    ga102 = [e for *_, e in pair_errors("NVIDIA GeForce RTX 3090", "NVIDIA RTX A6000")]
    assert len(ga102) == 12 and max(abs(e) for e in ga102) <= 0.15


def test_the_scaling_rules_against_published_throughputs_of_one_gpu_class() -> None:
    # a proxy for the issue's bar (within 15 % between GPUs of one generation): each published step
    # split into matrix and memory-bound kernels as the kernel model splits it, scaled to the other
    # GPU and compared with its published throughput (benchmarks/measure_scale_published.py).
    # H100 SXM ↔ H100 PCIe (ResNet-50, BERT-base/large, fp16 and TF32): 12 of 12 within 15 %,
    # mean 3.7 %, worst −8 % (2026-11-27). Between GeForce and professional cards of one architecture the GeForce
    # card's published matmul rates (not its datasheet's half-rate peaks) bring RTX 3090 ↔ RTX A6000 to
    # 12 of 12 within 15 %, mean 7.7 %, worst −14 % (the test above; 3 of 12, 20 % from the datasheets); RTX
    # 3090 ↔ A10 still misses (4 of 12, mean 18 %; was 0 of 12, 39 %): the report says so (the test above)
    from benchmarks.measure_scale_published import pair_errors

    hopper = [e for *_, e in pair_errors("NVIDIA H100 SXM", "NVIDIA H100 PCIe")]
    assert len(hopper) == 12
    assert max(abs(e) for e in hopper) <= 0.15
    assert sum(abs(e) for e in hopper) / len(hopper) <= 0.04
    ga102 = [e for *_, e in pair_errors("NVIDIA GeForce RTX 3090", "NVIDIA RTX A6000")]
    assert len(ga102) == 12 and sum(abs(e) for e in ga102) / len(ga102) <= 0.09
    a10 = [e for *_, e in pair_errors("NVIDIA GeForce RTX 3090", "NVIDIA A10")]
    assert sum(abs(e) <= 0.15 for e in a10) <= 5
