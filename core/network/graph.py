"""The tensor graph a layer list builds: what each primitive op owns, reads, makes and saves.

The layer handlers in ``core.network.layers`` describe every layer as primitive ops over tensors sized
*per sample* (the batch dimension is left out). ``core.estimate.memory`` replays that graph to find the
live-tensor high-water mark of a training step. Sizes are element counts; a tensor's element
type is either the compute precision (``dtype_bytes`` None) or fixed (bool masks, int64 indices).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TensorInfo:
    elems: int  # elements per sample
    dtype_bytes: int | None = None  # None: the activation precision; else fixed (1 bool, 8 int64)
    fp32: bool = False  # stays fp32 under autocast (embeddings, norms, softmax, the residual stream)
    copy: bool = False  # autocast's cast of another tensor (cheap: selective checkpointing recomputes it)


@dataclass(frozen=True)
class Op:
    name: str
    input_id: int
    output_id: int
    saved: tuple[int, ...]  # tensor ids kept alive for backward by this op
    params: int  # trainable elements owned (0 for tied weights)
    matmul_params: int  # weights autocast copies to half precision
    largest_param: int  # biggest single parameter tensor, elements
    segment: int  # checkpoint segment (top-level layer or one repeat iteration)
    pending_grad: int = 0  # gradient elements held for a residual's other path during this backward
    math_scores: int = 0  # L×L×heads score elements the math attention kernel keeps (CPU with dropout)
    scores: int = 0  # attention: L×L×heads score elements (what the math kernel keeps, whatever the dropout)
    attn_dropout: bool = False  # attention: dropout on the attention weights (PyTorch's CPU flash kernel has none)
    decomposed_saves: int = 0  # elements the decomposed CPU kernel saves beyond the fused one (RMSNorm)
    flops: int = 0  # forward matrix-product FLOPs per sample (0 for elementwise ops)
    kernel_area: int = 0  # a convolution's kernel height × width
    # a convolution with a square kernel at stride 1, undilated and ungrouped: the shapes cuDNN's
    # Winograd kernels take (core/estimate/gpu_kernels.py winograd)
    winograd_shape: bool = False
    tensor_sizes: tuple[int, ...] = ()  # elements of each trainable tensor (the optimizer steps each)
    heads: int = 0  # attention: query heads (the GPU kernel model sizes its score tiles by them)
    causal: bool = False  # attention: causal mask (flash kernels skip the masked half)
    # the implementation of an op whose eager kernels differ ("rmsnorm_fp32": RMSNorm decomposed in
    # fp32; "rotary_complex" / "rotary_half": rotary embeddings), "" for PyTorch's own module
    variant: str = ""
    # a recurrent layer: the layers of its module's one cuDNN call (0 for other ops); PyTorch gives cuDNN's
    # persistent kernel single-layer calls only (core/estimate/gpu_rnn.py rnn_algorithms)
    rnn_layers: int = 0


@dataclass(frozen=True)
class LayerRow:
    """One user-visible layer: where it is, its output, parameters and forward FLOPs per sample."""

    path: str
    type: str
    output_shape: tuple[int, ...]
    params: int
    flops: int  # forward FLOPs per sample, 2 per multiply-add (torch.utils.flop_counter convention)
    t1_ops: int  # Jamgharyan eq. 2 contribution: sum over neurons of their cost
    t2_ops: int  # Jamgharyan eq. 3 contribution: the cost of the costliest neuron
    neurons: int
    count: int = 1  # times this row repeats (inside a ``repeat`` container)


@dataclass(eq=False)  # identity-hashed: analyses are cached per graph
class Graph:
    tensors: list[TensorInfo] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    rows: list[LayerRow] = field(default_factory=list)
    buffers: int = 0  # non-trainable state elements (BatchNorm running statistics)
    segment: int = 0
    recording: bool = True  # rows are recorded once for a repeated block
    multiplier: int = 1
    embedding: tuple[int, int] | None = None  # (num, dim) of the first embedding, for tied heads

    def tensor(self, elems: int, dtype_bytes: int | None = None, fp32: bool = False, copy: bool = False) -> int:
        self.tensors.append(TensorInfo(int(elems), dtype_bytes, fp32, copy))
        return len(self.tensors) - 1

    def op(
        self,
        name: str,
        input_id: int,
        out_elems: int,
        *,
        save_input: bool = False,
        save_output: bool = False,
        extra: tuple[tuple[int, int | None], ...] = (),
        params: int = 0,
        matmul_params: int = 0,
        largest_param: int = 0,
        output_id: int | None = None,
        autocast: str = "same",
        out_fp32: bool | None = None,
        flops: int = 0,
        kernel_area: int = 0,
        tensor_sizes: tuple[int, ...] | None = None,
    ) -> int:
        """Append an op reading ``input_id``; returns the id of its output tensor.

        ``extra`` lists further tensors the op creates and saves: (elements, dtype bytes).
        ``output_id`` given means the output aliases an existing tensor (a view).
        ``tensor_sizes``: the elements of each of its trainable tensors; by default one weight of
        ``largest_param`` elements and one bias or shift holding the rest of ``params``.
        ``autocast`` says what torch.autocast does with the op: "lower" (matmuls: half output; an
        fp32 input is saved as a half copy), "fp32" (norms, softmax: fp32 output; a half input is
        saved as an fp32 copy) or "same" (runs in its input's type).
        """
        inp = self.tensors[input_id]
        fp32_out = {"lower": False, "fp32": True}.get(autocast, inp.fp32) if out_fp32 is None else out_fp32
        out = self.tensor(out_elems, fp32=fp32_out) if output_id is None else output_id
        saved: list[int] = []
        if save_input:
            if input_id != 0 and inp.dtype_bytes is None and autocast == "lower" and inp.fp32:
                saved.append(self.tensor(inp.elems, copy=True))  # the half-precision copy autocast makes
            elif input_id != 0 and inp.dtype_bytes is None and autocast == "fp32" and not inp.fp32:
                saved.append(self.tensor(inp.elems, fp32=True, copy=True))  # the fp32 copy autocast makes
            else:
                saved.append(input_id)
        if save_output:
            saved.append(out)
        for elems, dtype_bytes in extra:
            saved.append(self.tensor(elems, dtype_bytes))
        self.ops.append(
            Op(
                name,
                input_id,
                out,
                tuple(saved),
                params,
                matmul_params,
                largest_param,
                self.segment,
                flops=flops,
                kernel_area=kernel_area,
                tensor_sizes=tuple(n for n in (largest_param, params - largest_param) if n > 0)
                if tensor_sizes is None
                else tensor_sizes,
            )
        )
        return out

    def row(self, row: LayerRow) -> None:
        if self.recording:
            self.rows.append(
                LayerRow(
                    row.path,
                    row.type,
                    row.output_shape,
                    row.params,
                    row.flops,
                    row.t1_ops,
                    row.t2_ops,
                    row.neurons,
                    self.multiplier,
                )
            )
