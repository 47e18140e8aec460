"""Streaming preparation: the files are byte-identical to the whole-state-dict path.

The bundled model used to be prepared by dequantizing every tensor into one state dict and
calling safetensors' `save_file` twice (transformers layout, engine layout): 3.4 GB resident.
The streaming writer must produce the same bytes (same MANIFEST checksums) a tensor or a slice
at a time. Checked here on a tiny Gemma 3 GGUF (2 layers, 128-token vocabulary in 32 column
blocks, embedding slices that do not divide a block) and on the safetensors writer alone."""
import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from lib.core import engine_weights
from lib.core.spec import spec_from_config
from lib.model import bundled_model
from lib.model.gguf_file import GGUFFile
from lib.model.safetensors_writer import SafetensorsWriter, dtype_name
from lib.model.weights_stream import write_weights


def _tensors():
    g = torch.Generator().manual_seed(0)
    return {"b.weight": torch.randn(5, 3, generator=g), "a": torch.randn(7, generator=g).half(),
            "z.é": torch.randn(2, 2, 2, generator=g).bfloat16(), "m": torch.arange(6).reshape(3, 2),
            "c": torch.randn(4, 4, generator=g).double(), "n": torch.randn(0, 3, generator=g)}


def test_writer_is_byte_identical_to_save_file_in_any_order_and_pieces(tmp_path):
    ts = _tensors()
    # One metadata key: safetensors keeps metadata in a hash map, so with two keys even two
    # save_file calls may order them differently (the bundled files carry one key each).
    save_file(ts, str(tmp_path / "ref.st"), metadata={"format": "pt ü"})
    plan = {k: (dtype_name(v.dtype), tuple(v.shape)) for k, v in ts.items()}
    with SafetensorsWriter(tmp_path / "new.st", plan, {"format": "pt ü"}) as w:
        for k, v in reversed(list(ts.items())):
            if v.dim() > 1 and v.shape[0] > 1:
                w.write(k, v[1:], row=1)
                w.write(k, v[:1])
            else:
                w.write(k, v)
    assert (tmp_path / "new.st").read_bytes() == (tmp_path / "ref.st").read_bytes()


def test_writer_refuses_to_close_with_a_missing_tensor(tmp_path):
    with pytest.raises(ValueError, match="not written"):
        with SafetensorsWriter(tmp_path / "x.st", {"a": ("F32", (2, 2)), "b": ("F32", (3,))}) as w:
            w.write("a", torch.zeros(2, 2))
    with pytest.raises(ValueError, match="overflows"):
        SafetensorsWriter(tmp_path / "y.st", {"a": ("F32", (2, 2))}).write("a", torch.zeros(3, 2))


_GGUF_OF = {v: k for k, v in bundled_model._LAYER_NAMES.items()}


def _tiny_gguf(path, cfg, seed=0, embed_type="Q8_0"):
    """A Gemma 3 GGUF with random weights: Q8_0 matrices (the embedding Q8_0 or F16), F32 norms
    (stored as 1 + w)."""
    import gguf
    from transformers import Gemma3ForCausalLM

    torch.manual_seed(seed)
    sd = Gemma3ForCausalLM(cfg).state_dict()
    w = gguf.GGUFWriter(str(path), "gemma3")
    for name, t in sd.items():
        if name == "lm_head.weight":
            continue
        parts = name.split(".")
        g = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight"}.get(name)
        if g is None:
            g = f"blk.{parts[2]}.{_GGUF_OF['.'.join(parts[3:-1])]}.weight"
        a = torch.randn(t.shape).numpy().astype(np.float32)
        if a.ndim == 1:
            w.add_tensor(g, a)
        elif g == "token_embd.weight" and embed_type == "F16":
            w.add_tensor(g, a.astype(np.float16))
        else:
            w.add_tensor(g, gguf.quants.quantize(a, gguf.GGMLQuantizationType.Q8_0),
                         raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return GGUFFile(path)


@pytest.mark.parametrize("embed_type", ["Q8_0", "F16"])
def test_streamed_files_equal_the_whole_state_dict_path(tmp_path, embed_type):
    """model.safetensors as save_file wrote it from the dequantized state dict; the engine file
    as engine_weights.save wrote it: a Q8_0 embedding kept as its int8 values and scales (whose
    float32 expansion is exactly the dequantized embedding), any other as float32 blocks."""
    from transformers import Gemma3TextConfig

    from lib.core.vocab_matrix import Q8VocabMatrix, VocabMatrix

    cfg = Gemma3TextConfig(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=1, head_dim=32,
                           query_pre_attn_scalar=32, sliding_window=8, max_position_embeddings=64)
    spec = spec_from_config(cfg)
    gg = _tiny_gguf(tmp_path / "tiny.gguf", cfg, embed_type=embed_type)
    # the old path: every tensor dequantized at once, then safetensors' save_file twice
    state = {}
    for n in gg.tensors:
        a = gg.dequantize(n)
        state[bundled_model.hf_name(n)] = torch.from_numpy(a - np.float32(1.0) if n.endswith("norm.weight") else a)
    (tmp_path / "old").mkdir()
    save_file(state, str(tmp_path / "old" / "model.safetensors"), metadata={"format": "pt"})
    old = engine_weights.from_named(spec, state.get)
    if embed_type == "Q8_0":
        q8 = Q8VocabMatrix.from_gguf_blocks(gg.raw("token_embd.weight").reshape(128, 2, 34))
        assert torch.equal(q8.rows(0, 128), state["model.embed_tokens.weight"])       # bit for bit
        old = engine_weights.EngineWeights(q8, q8, old.final_norm, old.layers)
    engine_weights.save(old, tmp_path / "old" / engine_weights.FILE)
    (tmp_path / "new").mkdir()
    write_weights(gg, tmp_path / "new", spec, bundled_model.hf_name, chunk_rows=3)
    for f in ("model.safetensors", engine_weights.FILE):
        assert (tmp_path / "new" / f).read_bytes() == (tmp_path / "old" / f).read_bytes(), f
    loaded = engine_weights.load(tmp_path / "new" / engine_weights.FILE, 2)
    assert isinstance(loaded.embed, Q8VocabMatrix if embed_type == "Q8_0" else VocabMatrix)
    assert loaded.lm_head is loaded.embed
    assert torch.equal(loaded.embed.dense(), state["model.embed_tokens.weight"].t())


@pytest.mark.parametrize("kind", ["gemma3", "llama", "qwen2"])
def test_layout_predicts_the_engine_files_tensors(kind):
    from tests.conftest import tiny_gemma3, tiny_llama

    hf = tiny_gemma3() if kind == "gemma3" else tiny_llama(kind)
    sd = hf.state_dict()
    spec = spec_from_config(hf.config)
    if spec.tied_embeddings:
        sd.pop("lm_head.weight", None)
    built = engine_weights.flatten(engine_weights.from_named(spec, sd.get))
    predicted = engine_weights.layout(spec, {n: tuple(t.shape) for n, t in sd.items()})
    assert predicted == {n: (tuple(t.shape), t.dtype) for n, t in built.items()}
    if spec.tied_embeddings:                  # the same weights with a Q8_0 vocabulary matrix
        from lib.core.vocab_matrix import Q8VocabMatrix

        w = engine_weights.from_named(spec, sd.get)
        e = sd["model.embed_tokens.weight"]
        q8 = Q8VocabMatrix(torch.zeros(e.shape, dtype=torch.int8), torch.ones(e.shape[0], e.shape[1] // 32))
        built = engine_weights.flatten(engine_weights.EngineWeights(q8, q8, w.final_norm, w.layers))
        predicted = engine_weights.layout(spec, {n: tuple(t.shape) for n, t in sd.items()}, q8_embed=True)
        assert predicted == {n: (tuple(t.shape), t.dtype) for n, t in built.items()}
