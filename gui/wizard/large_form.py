"""The Training page's "Large models" group: the settings of core/spec/large.py (attention kernel,
precision layout, fp8, offload, optimizer implementation, tensor / pipeline / sequence / context
parallelism, hybrid sharding) and the kernel options memory format and torch.compile. Collapsed
until the user opens it or a loaded workload uses one of them; a workload that uses none is written
back without these keys."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QCheckBox, QFormLayout, QGroupBox, QSpinBox, QVBoxLayout, QWidget

from core.spec.large import (
    ATTENTION_KERNELS,
    ATTENTION_TEXT,
    LARGE_KEYS,
    LAYOUT_DTYPES,
    LAYOUT_TEXT,
    OFFLOAD_TEXT,
    OFFLOADS,
    OPTIMIZER_IMPL_TEXT,
    OPTIMIZER_IMPLS,
    PRECISION_LAYOUTS,
)
from core.spec.workload import MEMORY_FORMATS
from gui.wizard.base import combo, set_combo, set_value, spin

LAYOUT_LABELS = {
    "autocast": "PyTorch autocast",
    "fsdp_mixed": "FSDP MixedPrecision",
    "deepspeed": "DeepSpeed bf16/fp16",
    "megatron": "Megatron-LM",
}
OFFLOAD_LABELS = {
    "none": "Nothing",
    "optimizer_cpu": "Optimizer to CPU RAM (ZeRO-Offload)",
    "optimizer_nvme": "Optimizer to NVMe (ZeRO-Infinity)",
    "params_cpu": "Parameters and optimizer to CPU RAM",
    "params_nvme": "Parameters and optimizer to NVMe",
}
FORMAT_LABELS = {"contiguous": "NCHW (PyTorch's default)", "channels_last": "channels_last (NHWC)"}
# the kernel options of the workload's training the group also holds (not large-model settings)
KERNEL_OPTIONS = ("memory_format", "compile", "cudnn_tf32", "cudnn_benchmark")
PARALLEL_KEYS = ("tensor", "pipeline", "microbatches", "sequence", "context", "hybrid_shard")


class LargeModelGroup(QGroupBox):
    """The large-model settings; ``changed`` fires on any edit."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Large models and kernels", parent)
        self.setCheckable(True)
        self.setChecked(False)
        self.setToolTip(
            "Settings practitioners choose for large models (DeepSpeed, FSDP, Megatron, torchtitan) and the "
            "kernel options; each changes memory, time or communication (docs/sizing.md §4e)"
        )
        outer = QVBoxLayout(self)
        self.body = QWidget()
        outer.addWidget(self.body)
        form = QFormLayout(self.body)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.FieldsStayAtSizeHint)
        self.attention = combo(
            ATTENTION_KERNELS,
            "Which kernel F.scaled_dot_product_attention runs, or eager: the attention written out in Python "
            "(Hugging Face's eager attention); unfused kernels cost memory and time over the sequence² scores",
        )
        _item_tips(self.attention, ATTENTION_TEXT)
        self.layout_ = combo(PRECISION_LAYOUTS, "Where weights, master weights and gradients live", LAYOUT_LABELS)
        _item_tips(self.layout_, LAYOUT_TEXT)
        self.param_dtype = combo(LAYOUT_DTYPES, "FSDP MixedPrecision param_dtype: weights gathered and computed in it")
        self.reduce_dtype = combo(LAYOUT_DTYPES, "FSDP MixedPrecision reduce_dtype: gradients reduce-scattered in it")
        self.fp8 = QCheckBox("fp8 matrix products (Transformer Engine / torchao float8)")
        self.fp8.setToolTip(
            "Linear layers on fp8 tensor cores (Hopper, Ada, Blackwell); devices without fp8 stay in bf16/fp16. "
            "Needs mixed precision"
        )
        self.fp8_gather = QCheckBox("FSDP gathers the fp8 weights (torchao enable_fsdp_float8_all_gather)")
        self.fp8_gather.setToolTip(
            "The matrix weights are cast to fp8 on their shard before FSDP's all-gather: half the gather "
            "traffic, the gathered unit in 1 byte, and no fp8 copy of every weight kept for backward. "
            "Needs fp8 and FSDP sharding"
        )
        self.every = spin(
            1,
            1_000_000,
            "Full checkpointing of every Nth block only (torchtitan's layer policy, selective_ac_option N; "
            "Megatron's recompute_num_layers): less recompute, more memory than checkpointing every block",
        )
        self.every.setSpecialValueText("every block")
        self.offload = combo(OFFLOADS, "What moves off the GPU, and the PCIe/NVMe traffic it costs", OFFLOAD_LABELS)
        _item_tips(self.offload, OFFLOAD_TEXT)
        self.optimizer_impl = combo(OPTIMIZER_IMPLS, "torch.optim's implementation: fused, foreach or per tensor")
        _item_tips(self.optimizer_impl, OPTIMIZER_IMPL_TEXT)
        self.tensor = spin(1, 4096, "Megatron tensor parallelism t: each layer's weights split over t GPUs of a node")
        self.pipeline = spin(1, 4096, "Pipeline stages p: the layers split over p GPUs, 1F1B schedule")
        self.microbatches = spin(0, 1_000_000, "Pipeline micro-batches m per step (0: the accumulation steps)")
        self.microbatches.setSpecialValueText("as accumulation")
        self.sequence = QCheckBox("Sequence parallel (norms and dropout split over the tensor group)")
        self.context = spin(1, 4096, "Context parallelism: the sequence split over this many GPUs (ring attention)")
        self.hybrid = QCheckBox("HYBRID_SHARD (shard within a node, replicate across nodes)")
        self.memory_format = combo(
            MEMORY_FORMATS,
            "Image tensor layout: channels_last spares cuDNN's layout transposes on tensor cores — in half "
            "precision on every convolution (ResNet-50 fp16 on an H100: 93.9 vs 54.3 ms), in TF32 on the "
            "3×3 and 7×7 ones; not needed on RTX 30/40-series, A10, L4, L40 (compute capability 8.6/8.9) "
            "or in IEEE fp32",
            FORMAT_LABELS,
        )
        self.compile = QCheckBox("torch.compile (elementwise chains fused)")
        self.compile.setToolTip("torch.compile fuses each chain of elementwise ops, so their bytes move once")
        self.cudnn_tf32 = QCheckBox("cuDNN TF32 in fp32 (what PyTorch does by default)")
        self.cudnn_tf32.setToolTip(
            "torch.backends.cudnn.allow_tf32, True by default in PyTorch: in fp32, cuDNN runs convolutions and "
            "LSTM/GRU layers on TF32 tensor cores on Ampere and later GPUs, while linear layers stay IEEE fp32 "
            "(torch.backends.cuda.matmul.allow_tf32 is False by default). TrainRig prices IEEE fp32 unless this "
            "is ticked; tick it if your code keeps PyTorch's default: ResNet-50 fp32 on an H100 then takes "
            "about 0.4 × the step"
        )
        self.cudnn_benchmark = QCheckBox("cuDNN benchmark (torch.backends.cudnn.benchmark = True)")
        self.cudnn_benchmark.setToolTip(
            "torch.backends.cudnn.benchmark = True: cuDNN times its algorithms for each convolution shape and "
            "keeps the fastest (PyTorch's default: off). In IEEE fp32 that means Winograd kernels for 3×3 "
            "convolutions and smaller tiles: VGG-11 fp32 at batch 32 on an H200 measured 29 ms with it, where "
            "TrainRig prices the heuristics' kernels at 84 ms. Tick it if your training code sets it (most "
            "image-model training scripts do)"
        )
        for label, w in (
            ("Checkpoint every Nth block", self.every),
            ("Attention kernel", self.attention),
            ("Precision layout", self.layout_),
            ("FSDP param dtype", self.param_dtype),
            ("FSDP reduce dtype", self.reduce_dtype),
            ("", self.fp8),
            ("", self.fp8_gather),
            ("Offload", self.offload),
            ("Optimizer implementation", self.optimizer_impl),
            ("Tensor parallel", self.tensor),
            ("Pipeline stages", self.pipeline),
            ("Pipeline micro-batches", self.microbatches),
            ("", self.sequence),
            ("Context parallel", self.context),
            ("", self.hybrid),
            ("Memory format", self.memory_format),
            ("", self.compile),
            ("", self.cudnn_tf32),
            ("", self.cudnn_benchmark),
        ):
            form.addRow(label, w)
        for c in (self.attention, self.layout_, self.param_dtype, self.reduce_dtype, self.offload):
            c.currentIndexChanged.connect(self._edited)
        for c in (self.optimizer_impl, self.memory_format):
            c.currentIndexChanged.connect(self._edited)
        for s in (self.tensor, self.pipeline, self.microbatches, self.context, self.every):
            s.valueChanged.connect(self._edited)
        for b in (
            self.fp8,
            self.fp8_gather,
            self.sequence,
            self.hybrid,
            self.compile,
            self.cudnn_tf32,
            self.cudnn_benchmark,
        ):
            b.toggled.connect(self._edited)
        self.toggled.connect(self.body.setVisible)
        self.body.setVisible(False)
        self._half = True
        self._fp32 = False
        self._sharding = "none"
        self._full = False
        self._enable()

    def _edited(self) -> None:
        self._enable()
        self.changed.emit()

    def context_changed(self, precision: str, sharding: str, checkpointing: str = "none") -> None:
        """The Training page's precision, sharding and checkpointing policy, which some settings need."""
        self._half = precision in ("fp16_mixed", "bf16_mixed")
        self._fp32 = precision == "fp32"
        self._sharding = sharding
        self._full = checkpointing == "full"
        self._enable()

    def _enable(self) -> None:
        fsdp = self.layout_.currentData() == "fsdp_mixed"
        self.param_dtype.setEnabled(fsdp)
        self.reduce_dtype.setEnabled(fsdp)
        self.fp8.setEnabled(self._half)
        self.fp8_gather.setEnabled(self._half and self.fp8.isChecked() and self._sharding == "fsdp")
        self.every.setEnabled(self._full)
        self.layout_.setEnabled(self._half)
        self.sequence.setEnabled(self.tensor.value() > 1)
        self.microbatches.setEnabled(self.pipeline.value() > 1)
        self.hybrid.setEnabled(self._sharding in ("fsdp", "zero3"))
        self.offload.setEnabled(self._sharding in ("zero1", "zero2", "zero3", "fsdp"))
        self.cudnn_tf32.setEnabled(self._fp32)

    def load(self, t: dict[str, Any]) -> None:
        blockers = [w.blockSignals(True) for w in self._widgets()]
        par = t.get("parallel") if isinstance(t.get("parallel"), dict) else {}
        set_combo(self.attention, t.get("attention", "auto"))
        set_combo(self.layout_, t.get("precision_layout", "autocast"))
        default_param = "fp16" if t.get("precision") == "fp16_mixed" else "bf16"
        set_combo(self.param_dtype, t.get("param_dtype", default_param))
        set_combo(self.reduce_dtype, t.get("reduce_dtype", "fp32"))
        self.fp8.setChecked(bool(t.get("fp8", False)))
        self.fp8_gather.setChecked(bool(t.get("fp8_all_gather", False)))
        set_value(self.every, int(t.get("checkpoint_every", 1)))
        set_combo(self.offload, t.get("offload", "none"))
        set_combo(self.optimizer_impl, t.get("optimizer_impl", "auto"))
        set_value(self.tensor, int(par.get("tensor", 1)))
        set_value(self.pipeline, int(par.get("pipeline", 1)))
        set_value(self.microbatches, int(par.get("microbatches") or 0))
        self.sequence.setChecked(bool(par.get("sequence", False)))
        set_value(self.context, int(par.get("context", 1)))
        self.hybrid.setChecked(bool(par.get("hybrid_shard", False)))
        set_combo(self.memory_format, t.get("memory_format", "contiguous"))
        self.compile.setChecked(bool(t.get("compile", False)))
        self.cudnn_tf32.setChecked(bool(t.get("cudnn_tf32", False)))
        self.cudnn_benchmark.setChecked(bool(t.get("cudnn_benchmark", False)))
        for w, was in zip(self._widgets(), blockers, strict=True):
            w.blockSignals(was)
        # the group's keys (core.spec.large.LARGE_KEYS) and the kernel options it also holds
        used = any(k in t for k in (*LARGE_KEYS, *KERNEL_OPTIONS))
        self.setChecked(used or self.isChecked())
        self._enable()

    def store(self, t: dict[str, Any]) -> None:
        """Write the non-default settings into ``training`` ``t`` and remove the default ones."""
        for k in (*LARGE_KEYS, *KERNEL_OPTIONS):
            t.pop(k, None)
        values = {
            "attention": (self.attention.currentData(), "auto"),
            "precision_layout": (self.layout_.currentData(), "autocast"),
            "offload": (self.offload.currentData(), "none"),
            "optimizer_impl": (self.optimizer_impl.currentData(), "auto"),
            "memory_format": (self.memory_format.currentData(), "contiguous"),
        }
        for k, (value, default) in values.items():
            if value != default and self._active(k):
                t[k] = value
        if t.get("precision_layout") == "fsdp_mixed":
            default_param = "fp16" if t.get("precision") == "fp16_mixed" else "bf16"
            if self.param_dtype.currentData() != default_param:
                t["param_dtype"] = self.param_dtype.currentData()
            if self.reduce_dtype.currentData() != "fp32":
                t["reduce_dtype"] = self.reduce_dtype.currentData()
        if self.fp8.isChecked() and self.fp8.isEnabled():
            t["fp8"] = True
        if self.fp8_gather.isChecked() and self.fp8_gather.isEnabled():
            t["fp8_all_gather"] = True
        if self.every.value() > 1 and self.every.isEnabled():
            t["checkpoint_every"] = self.every.value()
        if self.compile.isChecked():
            t["compile"] = True
        if self.cudnn_tf32.isChecked() and self.cudnn_tf32.isEnabled():
            t["cudnn_tf32"] = True
        if self.cudnn_benchmark.isChecked():
            t["cudnn_benchmark"] = True
        par: dict[str, Any] = {}
        for key, w in (("tensor", self.tensor), ("pipeline", self.pipeline), ("context", self.context)):
            if w.value() > 1:
                par[key] = w.value()
        if self.pipeline.value() > 1 and self.microbatches.value():
            par["microbatches"] = self.microbatches.value()
        if self.sequence.isChecked() and self.tensor.value() > 1:
            par["sequence"] = True
        if self.hybrid.isChecked() and self.hybrid.isEnabled():
            par["hybrid_shard"] = True
        if par:
            t["parallel"] = par

    def _active(self, key: str) -> bool:
        """A setting the page's precision and sharding allow (a disabled control writes nothing)."""
        return {"precision_layout": self.layout_, "offload": self.offload}.get(key, self.attention).isEnabled()

    def _widgets(self) -> list[QWidget]:
        spins: list[QSpinBox] = [self.tensor, self.pipeline, self.microbatches, self.context, self.every]
        return [
            self.attention,
            self.layout_,
            self.param_dtype,
            self.reduce_dtype,
            self.fp8,
            self.fp8_gather,
            self.offload,
            self.optimizer_impl,
            *spins,
            self.sequence,
            self.hybrid,
            self.memory_format,
            self.compile,
            self.cudnn_tf32,
            self.cudnn_benchmark,
        ]


def _item_tips(c: Any, tips: dict[str, str]) -> None:
    for i in range(c.count()):
        c.setItemData(i, tips.get(c.itemData(i), ""), Qt.ItemDataRole.ToolTipRole)
