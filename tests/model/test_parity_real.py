"""Our engine on the real Gemma 3 270M against transformers' forward (eager attention)."""
import pytest
import torch

from lib.decoding.generate import greedy

pytestmark = pytest.mark.real_model
TOL = 1e-4


def test_prompt_facts(real_model):
    """The known next tokens for the classic prompt (see FACTS.md), through the app's loader."""
    from lib.decoding.generate import next_token_logits
    from lib.model.tokens import encode_prompt

    p = encode_prompt(real_model.tokenizer, "The capital of France is")
    assert p.ids[0] == real_model.spec.bos_id
    probs = torch.softmax(next_token_logits(real_model.engine, p.ids), -1)
    top = [real_model.tokenizer.decode([i]) for i in probs.topk(3).indices.tolist()]
    assert top == [" the", " a", " Paris"]
    assert probs.max().item() == pytest.approx(0.191, abs=0.005)


def test_spec_of_bundled_model(real_model):
    s = real_model.spec
    assert (s.n_layers, s.hidden, s.n_heads, s.n_kv_heads, s.head_dim, s.vocab) == (18, 640, 4, 1, 256, 262144)
    assert [i for i, w in enumerate(s.windows) if w is None] == [5, 11, 17]
    assert set(s.windows) == {512, None}
    assert s.rope_thetas[0] == 10_000.0 and s.rope_thetas[5] == 1_000_000.0
    assert s.attn_scale == pytest.approx(1 / 16)


def test_prefill_and_64_decode_steps_past_the_window(real_hf, real_engine_with_hf, real_model, gpl_text):
    """700-token prompt (past the 512 window) then 64 greedy decode steps, logits within 1e-4."""
    tok = real_model.tokenizer
    ids = tok(gpl_text, return_tensors="pt").input_ids[:, :700]
    eng = real_engine_with_hf
    cache = eng.new_cache(capacity=800)
    ours = eng.forward(ids, cache, logits="last")[0, -1]
    with torch.no_grad():
        out = real_hf(ids, use_cache=True)
    assert (ours - out.logits[0, -1]).abs().max().item() <= TOL
    past = out.past_key_values
    nxt = out.logits[:, -1].argmax(-1, keepdim=True)
    worst = 0.0
    for _ in range(64):
        ours = eng.forward(nxt, cache)[0, -1]
        with torch.no_grad():
            out = real_hf(nxt, past_key_values=past, use_cache=True)
        past = out.past_key_values
        worst = max(worst, (ours - out.logits[0, -1]).abs().max().item())
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
    assert worst <= TOL, worst


def test_greedy_tokens_equal_transformers_generate(real_hf, real_engine_with_hf, real_model):
    tok = real_model.tokenizer
    for text in ["The capital of France is", "def fibonacci(n):", "Ibu kota Indonesia adalah"]:
        ids = tok(text, return_tensors="pt").input_ids
        with torch.no_grad():
            ref = real_hf.generate(ids, max_new_tokens=24, do_sample=False, min_new_tokens=24)
        ours = greedy(real_engine_with_hf, ids[0].tolist(), 24)
        assert ours.new_ids == ref[0, ids.shape[1]:].tolist(), text


def test_app_engine_equals_reference_engine(real_model, real_engine_with_hf):
    """The app's engine (memory-mapped engine file, the embedding kept as Q8_0 int8 values and
    scales) holds bit for bit the weights of the engine built from transformers' model, and
    computes the same logits (the LM head's sums run in another order: float rounding only)."""
    app, ref = real_model.engine, real_engine_with_hf
    e_ref = ref.embed.dense()                                            # (D, V) float32
    for s in range(0, app.spec.vocab, 65536):
        assert torch.equal(app.embed.rows(s, s + 65536), e_ref[:, s:s + 65536].t())
    for la, lb in zip(app.layers, ref.layers):
        assert torch.equal(la.w_qkv, lb.w_qkv) and torch.equal(la.w_down, lb.w_down)
    ids = torch.tensor([[2, 818, 5279, 529, 7001, 563]])
    a = app.forward(ids, app.new_cache(), logits="all")
    b = ref.forward(ids, ref.new_cache(), logits="all")
    assert (a - b).abs().max() <= 1e-4
    assert torch.equal(a.argmax(-1), b.argmax(-1))


def test_float16_weights_give_finite_logits_and_the_same_top_tokens(real_model):
    """float16 on the CPU (the temperature page crashed with NaN logits): the engine keeps the
    residual stream in float32, so the logits are finite and rank like float32's."""
    from lib.core import engine_weights
    from lib.core.engine import Engine
    from lib.decoding.sampling import SamplingConfig, run_pipeline

    e32 = real_model.engine
    w16 = engine_weights.to(engine_weights.EngineWeights(e32.embed, e32.lm_head, e32.final_norm, e32.layers),
                            "cpu", torch.float16)
    e16 = Engine(e32.spec, w16)
    ids = torch.tensor([[2, 818, 5279, 529, 7001, 563]])                        # The capital of France is
    a = e16.forward(ids, e16.new_cache())[0, -1].float()                          # (V,)
    b = e32.forward(ids, e32.new_cache())[0, -1]
    assert torch.isfinite(a).all()
    assert a.topk(3).indices.tolist() == b.topk(3).indices.tolist()
    assert run_pipeline(a, SamplingConfig(0.7)).kept_count > 1


def test_the_apps_slimmer_tokenizer_encodes_and_decodes_like_a_fresh_one(real_model):
    """model_loader.load_tokenizer drops transformers' Python copies of the BPE vocabulary and
    merges; ids, decoded texts and special tokens stay those of a fresh AutoTokenizer."""
    from transformers import AutoTokenizer

    fresh = AutoTokenizer.from_pretrained(str(real_model.folder), local_files_only=True)
    ours = real_model.tokenizer
    assert len(fresh._merges) > 100_000 and ours._merges == []          # the copy is really gone
    texts = ["The capital of France is", "Ibu kota Indonesia adalah Jakarta 🇮🇩 — naïve café",
             "def f(x):\n    return x  # 日本語", "<start_of_turn>user\nhi<end_of_turn>", "   spaces \t tabs\n\n",
             "", "a" * 300, "Привет, мир! مرحبا بالعالم"]
    for text in texts:
        assert ours(text).input_ids == fresh(text).input_ids
        ids = fresh(text).input_ids
        assert ours.decode(ids) == fresh.decode(ids)
        assert ours.convert_ids_to_tokens(ids) == fresh.convert_ids_to_tokens(ids)
    assert (ours.bos_token_id, ours.eos_token_id, ours.pad_token_id, len(ours)) == \
           (fresh.bos_token_id, fresh.eos_token_id, fresh.pad_token_id, len(fresh))


def test_float32_vocabulary_option_expands_the_q8_matrix(real_model, monkeypatch):
    """LLM_LAB_VOCAB=float32: the server's choice of the faster, larger vocabulary matrix. The
    same values (bit for bit), its own engine key (results are not shared with the Q8_0 one),
    the same greedy tokens and logits within float rounding."""
    from lib.core.vocab_matrix import Q8VocabMatrix, VocabMatrix
    from lib.model import model_loader

    assert isinstance(real_model.engine.embed, Q8VocabMatrix)
    monkeypatch.setenv(model_loader.VOCAB_ENV, "float32")
    m32 = model_loader.load("bundled", "cpu")
    e32, e8 = m32.engine, real_model.engine
    assert isinstance(e32.embed, VocabMatrix) and e32.lm_head is e32.embed and e32.key != e8.key
    assert torch.equal(e32.embed.blocks[3].t(), e8.embed.rows(3 * 8192, 4 * 8192))
    ids = [2, 818, 5279, 529, 7001, 563]
    a = e32.forward(torch.tensor([ids]), e32.new_cache())
    b = e8.forward(torch.tensor([ids]), e8.new_cache())
    assert (a - b).abs().max() <= 1e-4
    assert greedy(e32, ids, 8).new_ids == greedy(e8, ids, 8).new_ids


def test_compiled_layers_equal_the_eager_layers_past_the_window(real_model):
    """The real model's hook-free forward (each layer as two compiled calls: lib/core/one_call.py)
    against the same forward through the eager building blocks (a hook inside the layer), over 600 tokens: past
    Gemma 3's 512-token sliding window, so the local layers' masks cut. Bit for bit."""
    from lib.concepts.model_check.foundation import long_ids
    from lib.core import one_call
    from lib.core.layer import attention_in

    assert one_call.compiled(attention_in) is not None
    eng, ids = real_model.engine, long_ids(real_model)[None]              # (1, 600)
    fast = eng.forward(ids, eng.new_cache(1, ids.shape[1]), logits="none")
    eager = eng.forward(ids, eng.new_cache(1, ids.shape[1]), logits="none", hooks={"mlp_act": lambda l, x: None})
    assert ids.shape[1] > max(w for w in real_model.spec.windows if w) and torch.equal(fast, eager)
