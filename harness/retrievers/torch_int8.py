"""``backend: torch, quantize: int8``: a sentence-transformers model whose products run in torch's dynamic int8
kernels (fbgemm on x86), changed in place once it is loaded. torch is imported only when a model is quantised.

The feed-forward's GELU (the exact, erf one) runs in place on its int8 product's output instead of writing a second
intermediate-sized tensor (100 MB at batch 64 of 256-token passages, which glibc hands out fresh from the kernel,
its pages faulted in and zeroed on first touch, every time): the same arithmetic, the same vectors, and on 1,500
SciFact passages 1.48x fp32 torch's rate with it, 1.25x without. An intermediate that is not a product then an exact GELU keeps its own code."""

from __future__ import annotations

import warnings


def torch_int8(model):
    """``model`` (a sentence-transformers model, changed in place) with every ``nn.Linear`` run by torch's dynamic
    int8 kernel: weights int8 per output channel (symmetric), each product's input quantised per call to all 8 bits
    (torch's own ``quantize_dynamic`` modules ask for 7, ``reduce_range``, which moved SciFact vectors to a mean
    cosine of 0.983 against 0.994 here). LayerNorm, GELU (in place where it follows a product, module doc),
    softmax, attention and the embeddings stay fp32, and so does one product (below)."""
    import torch

    linears = [(parent, name, child) for parent in model.modules() for name, child in parent.named_children()
               if isinstance(child, torch.nn.Linear)]
    # The first down-projection (the first layer's feed-forward output, after its GELU) stays fp32: the widest
    # inputs to quantise; keeping it moved nDCG@10 from -0.0058 to -0.0025 of fp32's on 600 SciFact passages (a
    # noisy measure there) at the same speed, and its vectors' mean cosine to fp32 from 0.9942 to 0.9953.
    keep = next((child for _, _, child in linears if child.in_features > child.out_features), None)
    int8_linear = _int8_linear_class()
    for parent, name, child in linears:
        if child is not keep:
            setattr(parent, name, int8_linear(child))
    for module in list(model.modules()):
        _gelu_in_place(module, int8_linear)
    return model


def _int8_linear_class():
    import torch

    class Int8Linear(torch.nn.Module):
        def __init__(self, linear: torch.nn.Linear):
            super().__init__()
            self.in_features, self.out_features = linear.in_features, linear.out_features
            self.gelu = False  # set by _gelu_in_place: the exact GELU of the product, in place
            weight = linear.weight.detach().float()
            scales = (weight.abs().amax(dim=1).clamp(min=1e-8) / 127).double()
            with warnings.catch_warnings():  # quantised tensors are deprecated upstream, and still what fbgemm reads
                warnings.simplefilter("ignore")
                qweight = torch.quantize_per_channel(weight, scales, torch.zeros_like(scales, dtype=torch.int64), 0,
                                                     torch.qint8)
                bias = None if linear.bias is None else linear.bias.detach().float()
                self.packed = torch.ops.quantized.linear_prepack(qweight, bias)

        def forward(self, x):
            out = torch.ops.quantized.linear_dynamic(x, self.packed, False)  # False: no reduce_range
            if self.gelu:
                out = torch._C._nn.gelu_(out)  # the output is this call's own tensor: nobody else holds it
            return out.to(x.dtype)

    return Int8Linear


def _exact_gelu(act) -> bool:
    import torch

    if isinstance(act, torch.nn.GELU):
        return act.approximate == "none"
    # transformers' GELUActivation (hidden_act "gelu"): torch's exact GELU unless it was built with the Python one.
    return type(act).__name__ == "GELUActivation" and getattr(act, "act", None) is torch.nn.functional.gelu


def _gelu_in_place(module, int8_linear) -> None:
    """A BERT-style intermediate (exactly a ``dense`` int8 product and an exact GELU, ``act(dense(x))``): the GELU
    moves into the product, run in place on its output."""
    import torch

    children = dict(module.named_children())
    if (type(module).__name__.endswith("Intermediate") and set(children) == {"dense", "intermediate_act_fn"}
            and isinstance(children["dense"], int8_linear) and _exact_gelu(children["intermediate_act_fn"])
            and callable(getattr(torch._C._nn, "gelu_", None))):
        module.dense.gelu = True
        module.intermediate_act_fn = torch.nn.Identity()
