#!/usr/bin/env python3
"""Build a tiny Qwen3 target and two matching DFlash drafts for ``ddtune selftest``, offline.

Run by the server's interpreter: ``python build_tiny.py --out DIR [--block-size 16] [--no-weights]``.
Stdlib only, plus torch and safetensors for the weights (``--no-weights`` skips them: the
simulator reads only the configs). No hub, no download. Prints one JSON line describing the models.

  DIR/target/        config.json (Qwen3ForCausalLM), generation_config.json, tokenizer.json,
                     tokenizer_config.json, special_tokens_map.json, model.safetensors
  DIR/draft-agree/   config.json (DFlashDraftModel), model.safetensors: final norm all zero
  DIR/draft-random/  the same shapes, final norm one

Why the drafts agree or not (SGLang's DFlash, 0.5.11 on): the target's final RMSNorm weight is
zero, so every hidden state reaching its LM head is 0, all logits tie and greedy argmax is token 0.
The draft has no LM head of its own (it uses the target's); with its final norm zero it predicts
token 0 too and every drafted token is accepted (acceptance = block size). With its final norm
one its random hidden states pick other tokens: acceptance about 1 per verify step.

The draft config follows sglang/srt/speculative/dflash_utils.py ``parse_dflash_draft_config``:
top-level ``block_size`` and ``num_target_layers``, ``dflash_config {mask_token, mask_token_id,
target_layer_ids}``. SGLang captures a target hidden state *before* layer id + 1
(``set_dflash_layers_to_capture``: ``val + 1``), so a target layer id must be at most
``num_layers - 2``. Its weights are named as ``DFlashDraftModel.load_weights`` maps them:
``layers.N.*`` (q/k/v_proj stacked into qkv_proj, gate/up_proj into gate_up_proj), ``norm``,
``fc`` [hidden, K * hidden] and ``hidden_norm``; names it does not know are silently ignored.
``ddtune_selftest`` in each config.json is read by ddtune's simulator only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

BUILDER_VERSION = 1
SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|MASK|>")
MASK = "<|MASK|>"
VOCAB = 512            # 256 bytes + 252 two-byte tokens + 4 specials: the embedding rows exactly
HIDDEN, INTERMEDIATE, HEADS, KV_HEADS, HEAD_DIM = 256, 768, 4, 2, 64
TARGET_LAYERS, DRAFT_LAYERS = 4, 2
MAX_POSITIONS = 8192
STD = 0.02
CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] "
          "+ '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
          "{% endif %}")


def byte_alphabet() -> list[str]:
    """GPT-2's byte-to-unicode table, the ByteLevel pre-tokenizer's alphabet: byte b -> one char."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("\xa1"), ord("\xac") + 1), *range(ord("\xae"), 256)]
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return [table[b] for b in range(256)]


def special_ids() -> dict[str, int]:
    first = VOCAB - len(SPECIALS)
    return {tok: first + i for i, tok in enumerate(SPECIALS)}


def tokenizer_json() -> dict:
    """A byte-level BPE with no merges: every byte is a token (ids 0-255, so any text encodes),
    then two-byte tokens up to the special tokens, which are added tokens at the top ids."""
    alphabet = byte_alphabet()
    vocab = {ch: i for i, ch in enumerate(alphabet)}
    pairs = (a + b for a in alphabet for b in alphabet)
    while len(vocab) < VOCAB - len(SPECIALS):
        vocab.setdefault(next(pairs), len(vocab))
    added = [{"id": i, "content": tok, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for tok, i in special_ids().items()]
    level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": level, "post_processor": None, "decoder": level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": vocab, "merges": []},
    }


def _qwen3_common(layers: int) -> dict:
    return {
        "model_type": "qwen3", "vocab_size": VOCAB, "hidden_size": HIDDEN, "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": layers, "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM, "hidden_act": "silu", "max_position_embeddings": MAX_POSITIONS,
        "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
        "attention_bias": False, "attention_dropout": 0.0, "tie_word_embeddings": False,
        "use_sliding_window": False, "sliding_window": None, "layer_types": ["full_attention"] * layers,
        "max_window_layers": layers, "initializer_range": STD, "torch_dtype": "bfloat16",
    }


def target_config() -> dict:
    ids = special_ids()
    return {"architectures": ["Qwen3ForCausalLM"], **_qwen3_common(TARGET_LAYERS), "use_cache": True,
            "bos_token_id": None, "eos_token_id": ids["<|im_end|>"], "pad_token_id": ids["<|endoftext|>"],
            "ddtune_selftest": {"role": "target", "builder": BUILDER_VERSION}}


def target_layer_ids(layers: int = TARGET_LAYERS, draft_layers: int = DRAFT_LAYERS) -> list[int]:
    """Spread over the capturable ids 0 .. layers - 2 (captured before id + 1, which must exist)."""
    top = layers - 2
    if draft_layers == 1:
        return [top // 2]
    return sorted({round(i * top / (draft_layers - 1)) for i in range(draft_layers)})


def draft_config(agree: bool, block_size: int) -> dict:
    return {"architectures": ["DFlashDraftModel"], **_qwen3_common(DRAFT_LAYERS),
            "block_size": block_size, "num_target_layers": TARGET_LAYERS,
            "dflash_config": {"mask_token": MASK, "mask_token_id": special_ids()[MASK],
                              "target_layer_ids": target_layer_ids()},
            "ddtune_selftest": {"role": "draft", "draft": "agree" if agree else "random",
                                "builder": BUILDER_VERSION}}


def _layer_tensors(prefix: str) -> dict[str, tuple[tuple[int, ...], str]]:
    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    return {
        f"{prefix}input_layernorm.weight": ((HIDDEN,), "ones"),
        f"{prefix}post_attention_layernorm.weight": ((HIDDEN,), "ones"),
        f"{prefix}self_attn.q_proj.weight": ((q, HIDDEN), "normal"),
        f"{prefix}self_attn.k_proj.weight": ((kv, HIDDEN), "normal"),
        f"{prefix}self_attn.v_proj.weight": ((kv, HIDDEN), "normal"),
        f"{prefix}self_attn.o_proj.weight": ((HIDDEN, q), "normal"),
        f"{prefix}self_attn.q_norm.weight": ((HEAD_DIM,), "ones"),
        f"{prefix}self_attn.k_norm.weight": ((HEAD_DIM,), "ones"),
        f"{prefix}mlp.gate_proj.weight": ((INTERMEDIATE, HIDDEN), "normal"),
        f"{prefix}mlp.up_proj.weight": ((INTERMEDIATE, HIDDEN), "normal"),
        f"{prefix}mlp.down_proj.weight": ((HIDDEN, INTERMEDIATE), "normal"),
    }


def target_tensors() -> dict[str, tuple[tuple[int, ...], str]]:
    """name -> (shape, init) of the target, as HF Qwen3ForCausalLM names them."""
    out: dict[str, tuple[tuple[int, ...], str]] = {"model.embed_tokens.weight": ((VOCAB, HIDDEN), "normal")}
    for i in range(TARGET_LAYERS):
        out.update(_layer_tensors(f"model.layers.{i}."))
    out["model.norm.weight"] = ((HIDDEN,), "zeros")   # every logit 0: greedy argmax is token 0
    out["lm_head.weight"] = ((VOCAB, HIDDEN), "normal")
    return out


def draft_tensors(agree: bool) -> dict[str, tuple[tuple[int, ...], str]]:
    """name -> (shape, init) of a DFlash draft: no embedding, no LM head (the target's are used)."""
    out: dict[str, tuple[tuple[int, ...], str]] = {}
    for i in range(DRAFT_LAYERS):
        out.update(_layer_tensors(f"layers.{i}."))
    out["norm.weight"] = ((HIDDEN,), "zeros" if agree else "ones")
    out["fc.weight"] = ((HIDDEN, len(target_layer_ids()) * HIDDEN), "normal")
    out["hidden_norm.weight"] = ((HIDDEN,), "ones")
    return out


def write_json(path: str, doc: dict) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2, ensure_ascii=False)
        fh.write("\n")


def write_tokenizer(target_dir: str) -> None:
    write_json(os.path.join(target_dir, "tokenizer.json"), tokenizer_json())
    eos, pad = "<|im_end|>", "<|endoftext|>"
    write_json(os.path.join(target_dir, "tokenizer_config.json"), {
        "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": MAX_POSITIONS, "bos_token": None,
        "eos_token": eos, "pad_token": pad, "unk_token": None, "mask_token": MASK,
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"], "clean_up_tokenization_spaces": False,
        "add_bos_token": False, "chat_template": CHATML})
    write_json(os.path.join(target_dir, "special_tokens_map.json"), {
        "eos_token": eos, "pad_token": pad, "mask_token": MASK, "additional_special_tokens": ["<|im_start|>", eos]})


def check_tokenizer(target_dir: str) -> str:
    """Load tokenizer.json with the ``tokenizers`` library when it is installed and round-trip a prompt."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return "not checked (no tokenizers library)"
    tok = Tokenizer.from_file(os.path.join(target_dir, "tokenizer.json"))
    text = "def add(a, b):\n    return a + b  # héllo"
    ids = tok.encode(text).ids
    back = tok.decode(ids)
    if back != text or tok.token_to_id(MASK) != special_ids()[MASK]:
        raise SystemExit(f"tokenizer round trip failed: {text!r} -> {ids} -> {back!r}")
    return f"checked with tokenizers {getattr(sys.modules.get('tokenizers'), '__version__', '?')}"


def write_weights(path: str, tensors: dict[str, tuple[tuple[int, ...], str]], seed: int) -> None:
    import torch
    from safetensors.torch import save_file

    gen = torch.Generator().manual_seed(seed)
    state = {}
    for name, (shape, init) in tensors.items():
        if init == "normal":
            value = torch.randn(*shape, generator=gen) * STD
        else:
            value = (torch.zeros if init == "zeros" else torch.ones)(*shape)
        state[name] = value.to(torch.bfloat16).contiguous()
    save_file(state, path, metadata={"format": "pt"})


def build(out: str, block_size: int, weights: bool) -> dict:
    if weights:
        try:
            import safetensors  # noqa: F401
            import torch  # noqa: F401
        except ImportError as exc:
            raise SystemExit(f"the weights need torch and safetensors in {sys.executable}: {exc}") from None
    target = os.path.join(out, "target")
    drafts = {"agree": os.path.join(out, "draft-agree"), "random": os.path.join(out, "draft-random")}
    for path in (target, *drafts.values()):
        os.makedirs(path, exist_ok=True)
    write_tokenizer(target)
    cfg = target_config()
    write_json(os.path.join(target, "config.json"), cfg)
    write_json(os.path.join(target, "generation_config.json"),
               {"eos_token_id": cfg["eos_token_id"], "pad_token_id": cfg["pad_token_id"], "do_sample": False})
    if weights:
        write_weights(os.path.join(target, "model.safetensors"), target_tensors(), seed=0)
    for seed, (kind, path) in enumerate(drafts.items(), start=1):
        write_json(os.path.join(path, "config.json"), draft_config(kind == "agree", block_size))
        if weights:
            write_weights(os.path.join(path, "model.safetensors"), draft_tensors(kind == "agree"), seed=seed)
    return {"target": target, "draft_agree": drafts["agree"], "draft_random": drafts["random"],
            "block_size": block_size, "weights": weights, "tokenizer": check_tokenizer(target),
            "builder": BUILDER_VERSION, "python": sys.executable}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Build ddtune selftest's tiny target and DFlash drafts, offline.")
    ap.add_argument("--out", required=True, help="folder to write target/, draft-agree/, draft-random/ into")
    ap.add_argument("--block-size", type=int, default=16, help="the drafts' DFlash block size (default 16)")
    ap.add_argument("--no-weights", action="store_true", help="configs and tokenizer only (no torch needed)")
    a = ap.parse_args(argv)
    if a.block_size < 2:
        ap.error("--block-size must be at least 2")
    print(json.dumps(build(a.out, a.block_size, not a.no_weights)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
