"""The guide beside the wizard's form pages: what each field decides in the sizing, and the source
the rule comes from — the tooltips' content laid out to be read, in the space a wide window has."""

from __future__ import annotations

GUIDES: dict[str, str] = {
    "Goal": """
<h3>What the goal decides</h3>
<p><b>Name</b> — how the report, the results browser and the database call this workload.</p>
<p><b>Purpose</b> — training from scratch sizes for the whole data set; fine-tuning keeps the
batch you give (it is a hyperparameter, so no rule proposes a larger one); a hyperparameter study
runs several trainings; for reverse-engineering an overfitted model a rule asks for Jamgharyan's
25–30 % memory reserve (Training page) when it is lower.</p>
<p><b>Concurrent runs</b> — networks training on one machine at the same time: the CPU in the bill
of materials gets 8 MB of L3 cache for each, on one socket to avoid NUMA traffic.</p>
<p><b>Deadline</b> and <b>budget</b> give every candidate a verdict on the results page (met or
missed, within budget or not) and decide the recommendation.</p>
<p><b>Expected use</b> (runs of this training, or hours a year) decides whether <i>buying</i> or
<i>renting</i> the same devices costs less: capex, maintenance and energy against each device's
dated on-demand cloud price (docs/advice.md). <b>Own cloud price</b> replaces those prices;
clear <b>Renting allowed</b> when the data must stay on site.</p>
<p><b>Currency</b> — catalogue prices are in US dollars: another currency needs the
<b>exchange rate</b> (per USD) and the day it was taken (<b>rate dated</b>), so the report can say
which rate it used.</p>
""",
    "Data": """
<h3>What the data decides</h3>
<p><b>Samples</b>, <b>features per sample</b> and <b>outputs per sample</b> give the size of the data set: Jamgharyan's
N<sub>na</sub> (eq. 1) keeps it resident in memory, and the storage line of the bill holds it twice
beside the checkpoints.</p>
<p><b>Element type</b> — bytes per value as the data loader hands it to the model.</p>
<p><b>Format on disk</b> — raw arrays (npy) read without decoding; JPEG, PNG or TIFF images cost CPU
time per sample to decode and augment (published decode rates, docs/sizing.md), which sets the
loader cores each GPU needs, and take more or less room on disk (Panaite &amp; Leba 2024).</p>
<p><b>Stored on</b> — the storage tier's sustained read rate (HDD, SATA SSD, NVMe, RAM disk, a
network share): a step waits for data when the tier reads slower than training consumes. A data
set that fits in half the RAM is read from the page cache after the first epoch.</p>
""",
    "Training": """
<h3>What the training settings decide</h3>
<p><b>Batch size</b> — the global batch, split over the data-parallel devices. Memory grows with it;
on a GPU a small batch leaves the device idle between framework calls (Finocchiaro §4: GPU load grows
with depth, width and batch size). A batch that does not fit runs as micro-batches with gradient
accumulation.</p>
<p><b>Epochs</b> — passes over the data: the training time and the energy scale with them.</p>
<p><b>Optimizer</b> — its states per parameter: none for SGD, one for momentum, RMSprop and Adagrad,
two for Adam and AdamW (4 bytes each in fp32).</p>
<p><b>Precision</b> — fp32, TF32, or mixed bf16/fp16 (autocast keeps fp32 weights and adds
half-precision copies). fp32 is priced as IEEE fp32 on CUDA cores; PyTorch's default lets cuDNN run
convolutions and LSTM/GRU layers on TF32 tensor cores on Ampere and later GPUs — tick <i>cuDNN TF32</i>
under Large models and kernels if your code keeps it, and <i>cuDNN benchmark</i> if it sets
<code>torch.backends.cudnn.benchmark = True</code> (cuDNN then picks Winograd kernels for fp32 3 × 3
convolutions: VGG-11 fp32 on an H200 measured 29 ms, where the heuristics' kernels are priced at 84).
TF32 puts every matrix product on them. In bf16/fp16 under autocast the residual stream and the norms
stay fp32 and each matrix product casts its input; a model held in half precision (a precision
layout below) moves 2-byte activations.</p>
<p><b>Checkpointing</b> — <i>full</i> keeps one activation per block and recomputes the rest in
backward: about a third more compute for much less memory; <i>selective</i> keeps the matrix
products' and attention's outputs and recomputes only the cheap ops (norms, activations, dropout):
little extra time, a large share of the saving (Korthikanti et al. 2022); <i>torchtitan's per-op
policy</i> also recomputes every second matrix product of a block: less memory, about a tenth more
matrix work.</p>
<p><b>Sharding</b> — ZeRO-1/2/3 or FSDP split optimizer states, gradients and weights over the
devices (Rajbhandari et al. 2020), so a model too large for one device fits on several.</p>
<p><b>Nodes</b> — machines: between them the gradients travel over the network adapter, slower
than NVLink or PCIe within a machine.</p>
<p><b>Memory reserve</b> — headroom added to the peak (Jamgharyan 2024: +25–30 % when
reverse-engineering overfitted models).</p>
<p><b>Training loop</b> — how your script feeds the device: tensors already on it, a DataLoader over
data in memory, or one that decodes files. On small networks the host — Python, PyTorch's dispatch
of each call, the DataLoader, synchronisations — sets the step, not the GPU (Finocchiaro §4: GPU
load of 0.02–0.26 on small MLPs; docs/sizing.md §4b).</p>
<p><b>Loader workers</b> — the DataLoader's <code>num_workers</code>: 0 builds every batch in the
training process, between steps; workers build them in parallel and hand them over.</p>
<p><b>Synchronise every</b> — steps between calls that wait for the device (<code>loss.item()</code>,
metrics, <code>.cpu()</code>): the host cannot run ahead of the GPU past them.</p>
<p><b>pin_memory and non_blocking copies</b> — page-locked batches copied asynchronously, so the copy
to the GPU overlaps its work (PyTorch's data loading documentation).</p>
<p><b>Large models and kernels</b> (a group, closed until you open it) — full checkpointing of every
Nth block only (torchtitan's layer policy); the attention kernel; the precision layout of FSDP,
DeepSpeed or Megatron (where the fp32 master weights live, sharded); fp8 matrix products, and FSDP
gathering the weights already in fp8; offloading the optimizer or the parameters to CPU RAM or NVMe (memory saved,
PCIe/NVMe traffic paid); fused, foreach or per-tensor optimizers; tensor, pipeline (with its bubble
of (p − 1)/m), sequence and context parallelism and HYBRID_SHARD; channels_last, torch.compile,
cuDNN's TF32 in fp32 and cuDNN's algorithm search.
Each control's tooltip says what it changes; docs/sizing.md §4e gives every term and its source.</p>
""",
}
