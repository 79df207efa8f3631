"""Small stock Hugging Face models for tests and benchmarks: transformers' own config classes at
2 layers, hidden 256, 4 heads, seq 64, random weights (nothing is downloaded).

``MODELS[name]`` is a :class:`SmallModel`: ``build()`` gives the model in eval mode with sdpa
attention (eager where the family needs it), ``example()`` its input (token ids, or pixels for ViT) and ``output(out)`` the tensor
to compare (logits, or the last hidden state). transformers is imported only when a model is
built. Used by tests/python/test_models.py and bench/hf_models.py.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch

__all__ = ["MODELS", "SmallModel", "scale_routers", "VOCAB", "HIDDEN", "LAYERS", "SEQ"]

VOCAB, HIDDEN, LAYERS, SEQ = 1000, 256, 2, 64


@dataclasses.dataclass(frozen=True)
class SmallModel:
    name: str
    make: Callable[[Any], torch.nn.Module]  # transformers module -> model
    kind: str = "decoder"  # decoder | encoder | vision | moe
    output_attr: str = "logits"
    attn: str = "sdpa"  # the attention implementation (Gemma-2's softcapping needs "eager")

    def build(self) -> torch.nn.Module:
        import transformers

        model = self.make(transformers)
        model.config._attn_implementation = self.attn
        return model.eval()

    def example(self, generator: torch.Generator | None = None) -> dict:
        if self.kind == "vision":
            return {"pixel_values": torch.randn(1, 3, 64, 64, generator=generator)}
        ids = torch.randint(3, VOCAB, (1, SEQ), generator=generator)
        if self.name == "roberta":
            ids[0, -5:] = 1  # padding at the end keeps position padding_idx
        return {"input_ids": ids}

    def output(self, out: Any) -> torch.Tensor:
        return getattr(out, self.output_attr)


def _common(**kw: Any) -> dict:
    return dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=4,
                intermediate_size=512, pad_token_id=0, bos_token_id=1, eos_token_id=2, **kw)


_MOE = dict(num_local_experts=4, num_experts_per_tok=2)


def _models():
    yield SmallModel("gpt2", lambda T: T.GPT2LMHeadModel(T.GPT2Config(
        vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=4, bos_token_id=1, eos_token_id=2)))
    yield SmallModel("llama", lambda T: T.LlamaForCausalLM(T.LlamaConfig(**_common(num_key_value_heads=2))))
    yield SmallModel("mistral", lambda T: T.MistralForCausalLM(T.MistralConfig(**_common(num_key_value_heads=2))))
    yield SmallModel("qwen2", lambda T: T.Qwen2ForCausalLM(T.Qwen2Config(**_common(num_key_value_heads=2))))
    yield SmallModel("granite", lambda T: T.GraniteForCausalLM(T.GraniteConfig(**_common(num_key_value_heads=2))))
    yield SmallModel("gemma", lambda T: T.GemmaForCausalLM(T.GemmaConfig(**_common(num_key_value_heads=2,
                                                                                    head_dim=64))))
    yield SmallModel("gpt_neox", lambda T: T.GPTNeoXForCausalLM(T.GPTNeoXConfig(**_common())))
    yield SmallModel("phi3", lambda T: T.Phi3ForCausalLM(T.Phi3Config(**_common(num_key_value_heads=2))))
    yield SmallModel("gptj", lambda T: T.GPTJForCausalLM(T.GPTJConfig(
        vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=4, rotary_dim=32, n_positions=128, bos_token_id=1,
        eos_token_id=2)))
    yield SmallModel("falcon", lambda T: T.FalconForCausalLM(T.FalconConfig(
        vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=4, bos_token_id=1,
        eos_token_id=2)))
    yield SmallModel("gemma2", lambda T: T.Gemma2ForCausalLM(T.Gemma2Config(**_common(num_key_value_heads=2,
                                                                                      head_dim=64))), attn="eager")
    yield SmallModel("bert", lambda T: T.BertForMaskedLM(T.BertConfig(
        vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=4,
        intermediate_size=512, pad_token_id=0)), kind="encoder")
    yield SmallModel("roberta", lambda T: T.RobertaForMaskedLM(T.RobertaConfig(
        vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=4,
        intermediate_size=512, pad_token_id=1, bos_token_id=0, eos_token_id=2, max_position_embeddings=SEQ + 2)),
        kind="encoder")
    yield SmallModel("t5_encoder", lambda T: T.T5EncoderModel(T.T5Config(
        vocab_size=VOCAB, d_model=HIDDEN, d_ff=512, num_layers=LAYERS, num_heads=4, d_kv=64, pad_token_id=0,
        eos_token_id=1)), kind="encoder", output_attr="last_hidden_state")
    yield SmallModel("vit", lambda T: T.ViTModel(T.ViTConfig(
        hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=4, intermediate_size=512,
        image_size=64, patch_size=16)), kind="vision", output_attr="last_hidden_state")
    yield SmallModel("granitemoe", lambda T: T.GraniteMoeForCausalLM(T.GraniteMoeConfig(
        **_common(num_key_value_heads=2), **_MOE)), kind="moe")
    yield SmallModel("mixtral", lambda T: T.MixtralForCausalLM(T.MixtralConfig(
        **_common(num_key_value_heads=2), **_MOE)), kind="moe")
    yield SmallModel("qwen2_moe", lambda T: T.Qwen2MoeForCausalLM(T.Qwen2MoeConfig(
        **_common(num_key_value_heads=2), num_experts=4, num_experts_per_tok=2, moe_intermediate_size=256,
        shared_expert_intermediate_size=512)), kind="moe")


MODELS: dict[str, SmallModel] = {m.name: m for m in _models()}


def scale_routers(model: torch.nn.Module, factor: float = 10.0) -> None:
    """Multiplies a MoE model's router weights by ``factor``: with the config's own init (std
    0.02) some tokens' 2nd and 3rd expert logits differ by ~1e-3, below fp16's resolution on the
    card, so the card may route them to another expert than fp32 does (test_models.py)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("router.weight", "mlp.gate.weight")):
                p.mul_(factor)
