"""Build a tiny llama.cpp target and two DFlash drafts as GGUF files, offline, in about a second.

For ``ddtune selftest`` on a llama.cpp config and for the tests of the real llama.cpp tier. Needs
PyPI ``gguf`` and numpy (the ``llamacpp`` extra brings both); no torch, no hub, no download.

  DIR/target.gguf        a ``qwen3`` model: 4 layers, n_embd 64, F32, a byte-level BPE tokenizer
                         (``gpt2``) with the ChatML specials and a mask token
  DIR/draft-agree.gguf   a ``dflash`` draft that always proposes what the target will say
  DIR/draft-random.gguf  the same shapes with random weights and an output head of its own

Why they agree or not: every token embeds to one vector (all ones) and every attention and FFN
output projection is zero, so each hidden state is that vector whatever the text; after the final
RMSNorm it is all ones again, and the target's output head has one non-zero row, ``AGREE_TOKEN``'s:
greedy decoding says that token forever. The agreeing draft has no head of its own (llama.cpp
shares the target's) and the same zero projections, so it proposes ``AGREE_TOKEN`` at every
position: every drafted token is accepted. The random draft's projections and its own head are
random: it proposes other tokens, and almost nothing it drafts is accepted.

The draft's keys are those llama.cpp's ``dflash`` architecture reads: ``dflash.target_layers`` (the
target layers whose hidden states it reads, HF ``target_layer_ids`` + 1; its ``fc`` maps their
concatenation, ``len x n_embd``, to ``n_embd``), ``dflash.block_size`` (the clamp of
``--spec-draft-n-max``: block - 1), Qwen3-style hyper-parameters under ``dflash.*``, and the
target's tokenizer, vocabulary included (llama.cpp refuses a draft whose vocabulary differs).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

BUILDER_VERSION = 1
N_EMBD, N_FF, N_HEAD, N_HEAD_KV, HEAD_DIM = 64, 128, 4, 2, 16
TARGET_LAYERS, DRAFT_LAYERS = 4, 1
TARGET_LAYER_IDS = (0, 2)       # HF ids, captured before layer id + 1 (so at most TARGET_LAYERS - 2)
CONTEXT = 8192
BLOCK_SIZE = 16
SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|MASK|>")
AGREE_TEXT = "Ġa"               # the token the target always says (" a", as one merged token)
RMS_EPS = 1e-6
ROPE_BASE = 1_000_000.0
CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] "
          "+ '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
          "{% endif %}")
NAMES = {"target": "target.gguf", "agree": "draft-agree.gguf", "random": "draft-random.gguf"}


def byte_alphabet() -> list[str]:
    """GPT-2's byte-level alphabet: byte b -> one printable character (what a ``gpt2`` vocab holds)."""
    keep = {*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)}
    out, extra = [], 0
    for b in range(256):
        if b in keep:
            out.append(chr(b))
        else:
            out.append(chr(256 + extra))
            extra += 1
    return out


@dataclass(frozen=True)
class Vocab:
    tokens: tuple[str, ...]
    types: tuple[int, ...]      # 1 normal, 3 control (llama.cpp's token types)
    merges: tuple[str, ...]

    def id(self, text: str) -> int:
        return self.tokens.index(text)


def vocab() -> Vocab:
    """256 byte tokens, a few merged pairs (a ``gpt2`` tokenizer needs merges), then the specials."""
    alphabet = byte_alphabet()
    pairs = [("Ġ", "a"), ("Ġ", "t"), ("e", "r"), ("i", "n"), ("Ġ", "the"[0])]
    merges, merged = [], []
    for a, b in pairs:
        if a + b not in merged:
            merges.append(f"{a} {b}")
            merged.append(a + b)
    tokens = (*alphabet, *merged, *SPECIALS)
    types = (1,) * (len(alphabet) + len(merged)) + (3,) * len(SPECIALS)
    return Vocab(tuple(tokens), types, tuple(merges))


def _tokenizer(writer, v: Vocab) -> None:
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(list(v.tokens))
    writer.add_token_types(list(v.types))
    writer.add_token_merges(list(v.merges))
    writer.add_eos_token_id(v.id("<|im_end|>"))
    writer.add_bos_token_id(v.id("<|endoftext|>"))
    writer.add_pad_token_id(v.id("<|endoftext|>"))
    writer.add_add_bos_token(False)
    writer.add_mask_token_id(v.id("<|MASK|>"))
    writer.add_chat_template(CHATML)


def _hparams(writer, arch: str, layers: int) -> None:
    put = lambda key, value, kind: kind(f"{arch}.{key}", value)  # noqa: E731
    put("context_length", CONTEXT, writer.add_uint32)
    put("embedding_length", N_EMBD, writer.add_uint32)
    put("block_count", layers, writer.add_uint32)
    put("feed_forward_length", N_FF, writer.add_uint32)
    put("attention.head_count", N_HEAD, writer.add_uint32)
    put("attention.head_count_kv", N_HEAD_KV, writer.add_uint32)
    put("attention.key_length", HEAD_DIM, writer.add_uint32)
    put("attention.value_length", HEAD_DIM, writer.add_uint32)
    put("attention.layer_norm_rms_epsilon", RMS_EPS, writer.add_float32)
    put("rope.freq_base", ROPE_BASE, writer.add_float32)


def _layers(writer, np, rng, layers: int, random_outputs: bool) -> None:
    """Qwen3-style blocks; numpy shapes are (out, in): GGUF stores them as ne = (in, out)."""
    q, kv = N_HEAD * HEAD_DIM, N_HEAD_KV * HEAD_DIM

    def w(shape, zero=False):
        if zero:
            return np.zeros(shape, dtype=np.float32)
        return (rng.standard_normal(shape) * 0.1).astype(np.float32)

    ones = lambda n: np.ones(n, dtype=np.float32)  # noqa: E731
    for i in range(layers):
        blk = f"blk.{i}."
        writer.add_tensor(blk + "attn_norm.weight", ones(N_EMBD))
        writer.add_tensor(blk + "attn_q.weight", w((q, N_EMBD)))
        writer.add_tensor(blk + "attn_k.weight", w((kv, N_EMBD)))
        writer.add_tensor(blk + "attn_v.weight", w((kv, N_EMBD)))
        writer.add_tensor(blk + "attn_output.weight", w((N_EMBD, q), zero=not random_outputs))
        writer.add_tensor(blk + "attn_q_norm.weight", ones(HEAD_DIM))
        writer.add_tensor(blk + "attn_k_norm.weight", ones(HEAD_DIM))
        writer.add_tensor(blk + "ffn_norm.weight", ones(N_EMBD))
        writer.add_tensor(blk + "ffn_gate.weight", w((N_FF, N_EMBD)))
        writer.add_tensor(blk + "ffn_up.weight", w((N_FF, N_EMBD)))
        writer.add_tensor(blk + "ffn_down.weight", w((N_EMBD, N_FF), zero=not random_outputs))


def _head(np, v: Vocab) -> object:
    """The target's output head: one non-zero row, AGREE_TOKEN's, so greedy always picks it."""
    head = np.zeros((len(v.tokens), N_EMBD), dtype=np.float32)
    head[v.id(AGREE_TEXT)] = 1.0
    return head


def _write(writer) -> None:
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def build_target(path: Path, v: Vocab, gguf, np) -> None:
    rng = np.random.default_rng(1)
    writer = gguf.GGUFWriter(str(path), "qwen3")
    writer.add_name("ddtune tiny target")
    writer.add_file_type(0)  # all F32
    _hparams(writer, "qwen3", TARGET_LAYERS)
    _tokenizer(writer, v)
    writer.add_tensor("token_embd.weight", np.ones((len(v.tokens), N_EMBD), dtype=np.float32))
    writer.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    writer.add_tensor("output.weight", _head(np, v))
    _layers(writer, np, rng, TARGET_LAYERS, random_outputs=False)
    _write(writer)


def build_draft(path: Path, v: Vocab, agree: bool, gguf, np, block_size: int = BLOCK_SIZE) -> None:
    rng = np.random.default_rng(2 if agree else 3)
    writer = gguf.GGUFWriter(str(path), "dflash")
    writer.add_name(f"ddtune tiny dflash draft ({'agree' if agree else 'random'})")
    writer.add_file_type(0)
    _hparams(writer, "dflash", DRAFT_LAYERS)
    writer.add_array("dflash.target_layers", [i + 1 for i in TARGET_LAYER_IDS])
    writer.add_uint32("dflash.block_size", block_size)
    _tokenizer(writer, v)
    n_inp = len(TARGET_LAYER_IDS) * N_EMBD
    scale = 0.0 if agree else 0.1
    writer.add_tensor("fc.weight", (rng.standard_normal((N_EMBD, n_inp)) * scale).astype(np.float32))
    writer.add_tensor("enc.output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    writer.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    if not agree:
        writer.add_tensor("output.weight", rng.standard_normal((len(v.tokens), N_EMBD)).astype(np.float32))
    _layers(writer, np, rng, DRAFT_LAYERS, random_outputs=not agree)
    _write(writer)


@dataclass(frozen=True)
class TinyModels:
    target: Path
    agree: Path
    random: Path
    block_size: int
    mask_token_id: int
    seconds: float

    def to_json(self) -> dict:
        return {"target": str(self.target), "draft_agree": str(self.agree), "draft_random": str(self.random),
                "block_size": self.block_size, "mask_token_id": self.mask_token_id,
                "builder": BUILDER_VERSION, "seconds": round(self.seconds, 3)}


class MissingBuilderPackages(RuntimeError):
    """gguf or numpy is not installed (the ``llamacpp`` extra brings both)."""


def build(out: Path, block_size: int = BLOCK_SIZE) -> TinyModels:
    """The three GGUF files under ``out`` (made if missing); MissingBuilderPackages without gguf/numpy."""
    t0 = time.perf_counter()
    try:
        import gguf
        import numpy as np
    except ImportError as exc:
        raise MissingBuilderPackages(f"the tiny-GGUF builder needs {exc.name}: pip install 'ddtune[llamacpp]'") \
            from None
    out.mkdir(parents=True, exist_ok=True)
    v = vocab()
    paths = {role: out / name for role, name in NAMES.items()}
    build_target(paths["target"], v, gguf, np)
    build_draft(paths["agree"], v, True, gguf, np, block_size)
    build_draft(paths["random"], v, False, gguf, np, block_size)
    return TinyModels(paths["target"], paths["agree"], paths["random"], block_size, v.id("<|MASK|>"),
                      time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Build ddtune's tiny GGUF target and DFlash drafts.")
    parser.add_argument("--out", required=True, help="folder to write target.gguf, draft-agree.gguf, draft-random.gguf")
    parser.add_argument("--block-size", type=int, default=BLOCK_SIZE)
    args = parser.parse_args(argv)
    try:
        models = build(Path(args.out), args.block_size)
    except MissingBuilderPackages as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(models.to_json()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
