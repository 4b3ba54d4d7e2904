"""The selftest's tiny-model builder (backends/selftest/tinymodels/build_tiny.py) against SGLang's loader rules.

No torch here (CI has none): the configs, the tokenizer and the tensor names and shapes are checked
against what sglang/srt/models/dflash.py ``DFlashDraftModel`` and HF's Qwen3ForCausalLM expect;
``transformers`` and ``tokenizers`` load them when installed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from backends.selftest.tinymodels import BUILDER
from backends.selftest.tinymodels import build_tiny as b

# DFlashDraftModel.load_weights: q/k/v_proj are stacked into qkv_proj, gate/up_proj into gate_up_proj;
# then the name (with or without "model.") must be a parameter, or it is silently ignored
STACKED = (("q_proj", "qkv_proj"), ("k_proj", "qkv_proj"), ("v_proj", "qkv_proj"),
           ("gate_proj", "gate_up_proj"), ("up_proj", "gate_up_proj"))


def dflash_params(layers: int) -> set[str]:
    per_layer = ("input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.qkv_proj.weight",
                 "self_attn.o_proj.weight", "self_attn.q_norm.weight", "self_attn.k_norm.weight",
                 "mlp.gate_up_proj.weight", "mlp.down_proj.weight")
    return {f"layers.{i}.{p}" for i in range(layers) for p in per_layer} | {
        "norm.weight", "fc.weight", "hidden_norm.weight"}


def loaded_as(name: str) -> str:
    for weight, param in STACKED:
        if f".{weight}." in name:
            return name.replace(weight, param)
    return name


@pytest.mark.parametrize("agree", [True, False])
def test_draft_tensors_are_each_a_dflash_parameter_and_cover_them_all(agree):
    tensors = b.draft_tensors(agree)
    assert {loaded_as(name) for name in tensors} == dflash_params(b.DRAFT_LAYERS)
    assert not any(name.startswith(("embed_tokens", "lm_head", "model.")) for name in tensors)  # the target's
    k = len(b.draft_config(agree, 16)["dflash_config"]["target_layer_ids"])
    assert tensors["fc.weight"][0] == (b.HIDDEN, k * b.HIDDEN)   # ReplicatedLinear(K * hidden -> hidden)
    assert tensors["norm.weight"][1] == ("zeros" if agree else "ones")


def test_target_tensors_are_hf_qwen3_names_with_a_zero_final_norm():
    tensors = b.target_tensors()
    layer = re.compile(r"^model\.layers\.(\d+)\.(input_layernorm|post_attention_layernorm|self_attn\.[qkvo]_proj|"
                       r"self_attn\.[qk]_norm|mlp\.(gate|up|down)_proj)\.weight$")
    others = {n for n in tensors if not layer.match(n)}
    assert others == {"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"}
    assert {int(m[1]) for n in tensors if (m := layer.match(n))} == set(range(b.TARGET_LAYERS))
    assert len(tensors) == 3 + 11 * b.TARGET_LAYERS
    assert tensors["model.norm.weight"] == ((b.HIDDEN,), "zeros")
    assert tensors["model.embed_tokens.weight"][0] == (b.VOCAB, b.HIDDEN)
    assert tensors["model.layers.0.self_attn.q_proj.weight"][0] == (b.HEADS * b.HEAD_DIM, b.HIDDEN)


@pytest.mark.parametrize("block", [4, 16])
def test_draft_config_as_sglang_parses_it(block):
    cfg = b.draft_config(True, block)
    target = b.target_config()
    assert cfg["architectures"] == ["DFlashDraftModel"]
    assert cfg["block_size"] == block and cfg["num_target_layers"] == target["num_hidden_layers"]
    dflash = cfg["dflash_config"]
    assert set(dflash) == {"mask_token", "mask_token_id", "target_layer_ids"}
    # captured before layer id + 1, which must exist: every id at most num_layers - 2
    assert all(0 <= i <= target["num_hidden_layers"] - 2 for i in dflash["target_layer_ids"])
    assert len(dflash["target_layer_ids"]) == len(set(dflash["target_layer_ids"])) >= 1
    assert cfg["hidden_size"] == target["hidden_size"] and cfg["vocab_size"] == target["vocab_size"]
    assert cfg["hidden_act"] == "silu" and cfg["intermediate_size"] > 0   # DFlashMLP takes silu only
    assert target["architectures"] == ["Qwen3ForCausalLM"] and target["model_type"] == "qwen3"


def test_tokenizer_covers_every_byte_and_names_the_mask_token_of_the_draft():
    tok = b.tokenizer_json()
    vocab = tok["model"]["vocab"]
    alphabet = b.byte_alphabet()
    assert len(set(alphabet)) == 256 and all(vocab[ch] == i for i, ch in enumerate(alphabet))
    added = {t["content"]: t["id"] for t in tok["added_tokens"]}
    assert added[b.MASK] == b.draft_config(True, 16)["dflash_config"]["mask_token_id"]
    assert sorted([*vocab.values(), *added.values()]) == list(range(b.VOCAB))  # every embedding row a token
    assert b.target_config()["eos_token_id"] == added["<|im_end|>"]


def test_builder_runs_standalone_without_torch(tmp_path):
    out = subprocess.run([sys.executable, "-I", str(BUILDER), "--out", str(tmp_path), "--block-size", "8",
                          "--no-weights"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    draft = json.loads((tmp_path / "draft-agree" / "config.json").read_text())
    assert draft["block_size"] == 8 and draft["ddtune_selftest"]["draft"] == "agree"
    assert json.loads((tmp_path / "draft-random" / "config.json").read_text())["ddtune_selftest"]["draft"] == "random"
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        assert (tmp_path / "target" / name).is_file()
    assert info["weights"] is False and not list(tmp_path.rglob("*.safetensors"))


def test_builder_without_torch_refuses_weights_naming_the_interpreter(tmp_path):
    try:
        import torch  # noqa: F401
        pytest.skip("torch is installed here")
    except ImportError:
        pass
    out = subprocess.run([sys.executable, "-I", str(BUILDER), "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode != 0 and sys.executable in out.stderr and "torch" in out.stderr


def test_the_tokenizer_loads_with_tokenizers(tmp_path):
    b.write_tokenizer(str(tmp_path))
    assert b.check_tokenizer(str(tmp_path)).startswith("checked")


def test_the_configs_load_with_transformers(tmp_path):
    import transformers

    b.build(str(tmp_path), 16, weights=False)
    assert transformers.AutoConfig.from_pretrained(str(tmp_path / "target")).num_hidden_layers == b.TARGET_LAYERS
    draft = transformers.AutoConfig.from_pretrained(str(tmp_path / "draft-agree"))
    assert draft.block_size == 16 and draft.dflash_config["target_layer_ids"]
