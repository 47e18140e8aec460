"""The sampling pipeline and the decoding pages' claims on the real Gemma 3 270M logits,
against transformers' logits processors (the reference implementations)."""
import math

import numpy as np
import pytest
import torch
from transformers import (MinPLogitsWarper, SequenceBiasLogitsProcessor, TemperatureLogitsWarper,
                          TopKLogitsWarper, TopPLogitsWarper)

from lib.decoding import generate, sampling
from lib.concepts.logit_bias import logit_bias
from lib.reference import sampling_reference
from lib.concepts.stable_softmax import stable_softmax
from lib.concepts.top_k_top_p import top_k_top_p
from lib.model.tokens import encode_prompt

pytestmark = pytest.mark.real_model
PROMPTS = ("The capital of France is", "Once upon a time, in a small village by the sea,", "def fibonacci(n):")


@pytest.fixture(scope="module")
def real_logits(real_model):
    """{prompt: next-token logits (V,)} for a confident, a vague and a code prompt."""
    tok = real_model.tokenizer
    return {p: generate.next_token_logits(real_model.engine, encode_prompt(tok, p).ids) for p in PROMPTS}


def hf(proc, x, ids=None):
    return proc(ids if ids is not None else torch.tensor([[0]]), x.float()[None].clone())[0]


@pytest.mark.parametrize("prompt", PROMPTS)
def test_masks_and_probabilities_identical_to_transformers(real_logits, prompt):
    x = real_logits[prompt]
    for T in (0.5, 1.0, 1.8):
        ours = sampling.apply_temperature(x, T)
        assert torch.equal(ours, hf(TemperatureLogitsWarper(T), x))
        for k in (1, 50, 1000, 262_144):
            assert torch.equal(sampling.top_k_mask(ours, k), torch.isfinite(hf(TopKLogitsWarper(k), ours)))
        for p in (0.3, 0.9, 0.99, 1.0):
            assert torch.equal(sampling.top_p_mask(ours, p), torch.isfinite(hf(TopPLogitsWarper(p), ours))), (T, p)
        for mp in (0.05, 0.2):
            assert torch.equal(sampling.min_p_mask(ours, mp), torch.isfinite(hf(MinPLogitsWarper(mp), ours)))


def test_sequence_bias_identical_to_transformers(real_model, real_logits):
    x = real_logits[PROMPTS[0]]
    tok = real_model.tokenizer
    paris = tok(" Paris", add_special_tokens=False).input_ids
    two = tok(" Bahasa Indonesia", add_special_tokens=False).input_ids
    assert len(paris) == 1 and len(two) > 1
    ctx = tuple(encode_prompt(tok, "We speak Bahasa").ids)       # ends with the first part of `two`?
    seqs = ((tuple(paris), -math.inf), ((9,), 2.5), (tuple(two), -4.0), ((ctx[-1], 17), 3.0))
    theirs = hf(SequenceBiasLogitsProcessor([[list(s), float(b)] for s, b in seqs]), x, torch.tensor([list(ctx)]))
    ours = sampling.apply_sequence_bias(x, seqs, ctx)
    assert torch.equal(ours, theirs)
    assert ours[17] == x[17] + 3.0 and ours[paris[0]] == -math.inf       # the context rule fired


def test_whole_chain_identical_to_transformers(real_logits):
    x = real_logits[PROMPTS[1]]
    for k in (5, 50, 2000):                    # top-p after top-k sorts only the finite logits
        kept = sampling.keep_only(x, sampling.top_k_mask(x, k))
        for p in (0.3, 0.9, 0.99):
            assert torch.equal(sampling.top_p_mask(kept, p), torch.isfinite(hf(TopPLogitsWarper(p), kept)))
    for cfg in (sampling.SamplingConfig(0.8, top_k=50, top_p=0.9, min_p=0.05, bias=((9079, -math.inf), (506, 1.5))),
                sampling.SamplingConfig(1.3, top_p=0.95), sampling.SamplingConfig(0.5, top_k=5)):
        assert sampling_reference.pipeline_max_diff(x, cfg) <= 1e-7


def test_fixed_seed_sampling_is_reproducible_and_matches_generate(real_model):
    eng, tok = real_model.engine, real_model.tokenizer
    ids = encode_prompt(tok, PROMPTS[1]).ids
    cfg = sampling.SamplingConfig(1.0, top_p=0.95)
    a = generate.generated_ids(generate.continuation(eng, ids, cfg, 7, 4))
    b = generate.generated_ids(generate.continuation(eng, ids, cfg, 7, 4))
    c = generate.generate(eng, ids, cfg, 7, 4)                 # the loop without a recorder
    assert a == b == c
    assert generate.generated_ids(generate.continuation(eng, ids, cfg, 8, 4)) != a


def test_invalid_settings_raise_clear_errors(real_logits):
    x = real_logits[PROMPTS[0]]
    with pytest.raises(sampling.InvalidSamplingParameter, match="outside the vocabulary of 262,144"):
        sampling.run_pipeline(x, sampling.SamplingConfig(1.0, bias=((300_000, 1.0),)))
    with pytest.raises(sampling.InvalidSamplingParameter, match="top_p"):
        sampling.SamplingConfig(1.0, top_p=1.5)
    with pytest.raises(sampling.EmptyDistribution):
        sampling.run_pipeline(x, sampling.SamplingConfig(
            1.0, top_k=1, bias=((int(x.argmax()), -math.inf),), order=logit_bias.FILTER_FIRST))


def test_stream_records_every_stage(real_model):
    ids = encode_prompt(real_model.tokenizer, PROMPTS[0]).ids
    cfg = sampling.SamplingConfig(0.7, top_k=40, top_p=0.9, bias=((9079, 2.0),))
    (step,) = generate.continuation(real_model.engine, ids, cfg, 0, 1)
    assert [s.name for s in step.stages] == ["input", "bias", "temperature", "top_k", "top_p"]
    assert step.stage("top_k").kept == 40 and step.stage("top_p").kept == step.kept <= 40
    assert step.stage("top_p").kept_mass >= 0.9 - 1e-6
    assert abs(sum(pf for _, _, pf in step.alternatives) - 1) < 0.5 or step.kept > len(step.alternatives)


# ---- the pages' claims ---------------------------------------------------------------------
def test_same_p_keeps_few_tokens_at_one_step_and_many_at_another(real_model, real_logits):
    sizes = {p: top_k_top_p.cut_curve(real_logits[p], 1.0, 40, 0.9).nucleus for p in PROMPTS}
    assert max(sizes.values()) >= 10 * min(sizes.values()), sizes
    ids = encode_prompt(real_model.tokenizer, PROMPTS[1]).ids
    tr = top_k_top_p.nucleus_trace(real_model.engine, ids, 1.0, 0.9, 0, 4)
    assert (tr.reach_margin >= -1e-6).all() and (tr.minimal_margin > -1e-6).all()
    assert (tr.p_mass >= 0.9 - 1e-5).all()
    k_mass = top_k_top_p.top_k_mass(tr, 40)
    assert k_mass.max() - k_mass.min() > 0.05             # top-k's mass moves from step to step
    assert (k_mass <= 1 + 1e-6).all() and (np.diff(tr.top_probs, axis=1) <= 0).all()


def test_naive_fp16_softmax_breaks_on_real_logits_exactly_as_predicted(real_logits):
    x = real_logits[PROMPTS[0]]
    r = stable_softmax.report(x, 1.0, 0.0, "fp16")
    assert r.z_max > 11.09 and r.exp_inf == r.exp_inf_predicted > 0
    assert r.naive_status == r.predicted_status == "overflow" and r.naive_nan > 0
    assert r.stable_nan == 0 and r.stable_vs_torch <= stable_softmax.agreement_tolerance("fp16")
    f32 = stable_softmax.report(x, 1.0, 0.0, "fp32")
    assert f32.naive_status == "ok" and f32.stable_vs_torch <= 1e-5
    sweep = stable_softmax.offset_sweep(x, 1.0, (-130.0, -40.0, -20.0, 0.0, 69.0, 90.0))
    assert sweep.mismatches() == 0
    assert sweep.measured["fp32"] == ["underflow", "ok", "ok", "ok", "overflow", "overflow"]
    assert sweep.measured["fp16"] == ["underflow", "underflow", "ok", "overflow", "overflow", "overflow"]


def test_banning_paris_routes_the_model_around_it(real_model):
    eng, tok = real_model.engine, real_model.tokenizer
    ids = encode_prompt(tok, "The capital of France is the city of").ids
    entries = logit_bias.word_tokens(tok, ["Paris"])
    bias, seq = logit_bias.bias_settings(entries, -math.inf, "first")
    plain = generate.continuation(eng, ids, sampling.SamplingConfig(0.0), 0, 2)
    banned = generate.continuation(eng, ids, sampling.SamplingConfig(0.0, bias=bias), 0, 2)
    assert tok.decode([plain[0].token]) == " Paris"
    assert logit_bias.completed_sequences(ids, [s.token for s in banned], [(t,) for t, _ in bias]) == 0
    assert banned[0].token != plain[0].token and banned[0].model_prob < plain[0].model_prob
    x = generate.next_token_logits(eng, ids)
    r = logit_bias.odds_report(x, bias[0][0] if tok.decode([bias[0][0]]) == " Paris" else 9079, -3.0, 0.5)
    assert r.target_err <= logit_bias.odds_tolerance(x, -3.0, 0.5) and r.others_err < 1e-6
