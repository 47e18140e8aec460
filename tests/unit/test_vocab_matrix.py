"""The blocked vocabulary matrix is the plain (D, V) matrix, stored differently."""
import pytest
import torch

from lib.core.vocab_matrix import VocabMatrix


@pytest.mark.parametrize("V", [262_144 // 64, 1000, 997])   # divisible by 32, by 8 only, prime
def test_blocked_matrix_is_the_dense_one(V):
    g = torch.Generator().manual_seed(0)
    e_t = torch.randn(24, V, generator=g)                              # (D, V)
    vm = VocabMatrix.from_dense(e_t)
    assert vm.vocab == V and vm.blocks.shape[0] * vm.block_width == V
    assert torch.equal(vm.dense(), e_t)
    ids = torch.tensor([[0, V - 1, 5], [V // 2, 1, V - 2]])
    assert torch.equal(vm.embed(ids), e_t[:, ids].permute(1, 2, 0))  # (B, T, D)
    assert torch.equal(vm.columns(ids[0]), e_t[:, ids[0]])
    x = torch.randn(2, 3, 24, generator=g)
    assert torch.allclose(vm.logits(x), x @ e_t, atol=1e-5, rtol=0)
    assert vm.logits(x[0]).shape == (3, V)


def test_logits_of_a_real_sized_head_equal_the_dense_product():
    """Same dot products in the same order: the blocked layout changes speed, not numbers
    (bit-identical on the development machine; allow float rounding on other BLAS kernels)."""
    g = torch.Generator().manual_seed(1)
    e_t = torch.randn(640, 32 * 512, generator=g)
    x = torch.randn(1, 1, 640, generator=g)
    assert (VocabMatrix.from_dense(e_t).logits(x) - x @ e_t).abs().max() <= 1e-5


def _q8_of(V: int, D: int, seed: int = 0):
    """A random (V, D) matrix quantized to GGUF Q8_0 by the gguf package: (raw blocks, the
    package's own float32 dequantization)."""
    import gguf
    import numpy as np

    a = np.random.default_rng(seed).standard_normal((V, D)).astype(np.float32)
    raw = gguf.quants.quantize(a, gguf.GGMLQuantizationType.Q8_0)            # (V, D / 32 * 34) bytes
    deq = gguf.quants.dequantize(raw, gguf.GGMLQuantizationType.Q8_0)
    return raw.reshape(V, D // 32, 34), torch.from_numpy(np.ascontiguousarray(deq, dtype=np.float32))


@pytest.mark.parametrize("V", [5000, 97])          # several chunks and a ragged last one; one small chunk
def test_q8_matrix_reads_exactly_the_dequantized_values(V, monkeypatch):
    from lib.core.vocab_matrix import Q8VocabMatrix

    monkeypatch.setattr(Q8VocabMatrix, "CHUNK", 1024)
    monkeypatch.setattr(Q8VocabMatrix, "CHUNK_MANY", 1024)   # the chunk edges these tests place targets at
    raw, e = _q8_of(V, 64)
    m = Q8VocabMatrix.from_gguf_blocks(raw)
    assert (m.vocab, m.hidden, m.dtype) == (V, 64, torch.float32)
    assert sum(t.nbytes for t in m.storage()) == V * 64 + V * 2 * 4 and m.numel() == V * 64
    assert torch.equal(m.rows(0, V), e) and torch.equal(m.dense(), e.t())     # bit for bit
    ids = torch.tensor([[0, V - 1, 5], [V // 2, 1, V - 2]])
    assert torch.equal(m.embed(ids), e[ids])
    assert torch.equal(m.columns(ids[0]), e[ids[0]].t())
    g = torch.Generator().manual_seed(2)
    for n in (1, 3):                                                  # one row, and the many-rows path
        x = torch.randn(n, 64, generator=g)
        assert torch.allclose(m.logits(x), x @ e.t(), atol=1e-4, rtol=0)
        assert torch.allclose(m.logits(x), VocabMatrix.from_dense(e.t()).logits(x), atol=1e-4, rtol=0)


def test_q8_matrix_to_another_dtype_is_the_dense_matrix_in_that_dtype():
    """Built one column block at a time (4096 / 32 = 128 rows each)."""
    from lib.core.vocab_matrix import Q8VocabMatrix

    raw, e = _q8_of(4096, 32, seed=3)
    m = Q8VocabMatrix.from_gguf_blocks(raw)
    assert m.to("cpu", torch.float32) is m
    for dtype in (torch.bfloat16, torch.float16):
        half = m.to("cpu", dtype)
        assert isinstance(half, VocabMatrix) and half.dtype == dtype
        assert torch.equal(half.blocks, VocabMatrix.from_dense(e.t()).blocks.to(dtype))


def test_q8_matrix_refuses_wrong_shapes():
    from lib.core.vocab_matrix import Q8VocabMatrix

    with pytest.raises(ValueError, match="Q8_0"):
        Q8VocabMatrix(torch.zeros(4, 30, dtype=torch.int8), torch.ones(4, 1))
    with pytest.raises(ValueError, match="Q8_0"):
        Q8VocabMatrix(torch.zeros(4, 64), torch.ones(4, 2))


@pytest.mark.parametrize("n_rows", [1, 2, 70])
def test_argmax_one_chunk_at_a_time_is_the_argmax_of_the_whole_logits(n_rows, monkeypatch):
    """Both matrices: the same ids as torch.argmax over all V logits, for one row and the
    many-rows path; a maximum tied across chunks goes to the first token (as torch.argmax),
    and a transform (a soft cap that saturates two different logits to one value) is applied
    before comparing."""
    from lib.core.layer import soft_cap
    from lib.core.vocab_matrix import Q8VocabMatrix

    monkeypatch.setattr(Q8VocabMatrix, "CHUNK", 1024)
    monkeypatch.setattr(Q8VocabMatrix, "CHUNK_MANY", 1024)   # the chunk edges these tests place targets at
    V, D = 5000, 64
    raw, e = _q8_of(V, D, seed=4)
    q8 = Q8VocabMatrix.from_gguf_blocks(raw)
    dense = VocabMatrix.from_dense(e.t().contiguous())        # 8 blocks of 625 columns
    x = torch.randn(n_rows, D, generator=torch.Generator().manual_seed(5))
    for m in (q8, dense):
        full = m.logits(x)                                             # (N, V)
        assert torch.equal(m.argmax(x), full.argmax(-1))
        cap = lambda y: soft_cap(y, 0.5)                               # noqa: E731 - every row saturates
        assert torch.equal(m.argmax(x, transform=cap), cap(full).argmax(-1))
        assert m.argmax(x[None]).shape == (1, n_rows)
    raw = raw.copy()
    raw[4000] = raw[10]                       # token 10's row again, in another chunk and block
    q8 = Q8VocabMatrix.from_gguf_blocks(raw)
    x = q8.rows(10, 11).repeat(n_rows, 1)     # its logit is the largest (the row's own norm)
    for m in (q8, VocabMatrix.from_dense(q8.dense())):
        full = m.logits(x)
        assert full[0, 4000] == full[0, 10] == full[0].max()
        assert m.argmax(x).tolist() == full.argmax(-1).tolist() == [10] * n_rows


@pytest.mark.parametrize("n_rows", [1, 2, 70])
def test_nll_one_chunk_at_a_time_is_logsumexp_minus_the_target_logit(n_rows, monkeypatch):
    """Both matrices: -ln softmax(x @ E^T)[target] from the running logsumexp equals the one
    computed on the whole (N, V) logits, with targets in the first, a middle and the last
    (ragged) chunk, a soft cap applied first, and logits large enough that exp() of them
    overflows float32 (the running maximum must be subtracted)."""
    from lib.core.layer import soft_cap
    from lib.core.vocab_matrix import Q8VocabMatrix

    monkeypatch.setattr(Q8VocabMatrix, "CHUNK", 1024)
    monkeypatch.setattr(Q8VocabMatrix, "CHUNK_MANY", 1024)   # the chunk edges these tests place targets at
    V, D = 5000, 64
    raw, e = _q8_of(V, D, seed=6)
    q8 = Q8VocabMatrix.from_gguf_blocks(raw)
    dense = VocabMatrix.from_dense(e.t().contiguous())        # 8 blocks of 625 columns
    g = torch.Generator().manual_seed(7)
    targets = torch.tensor([0, 1023, 1024, 2500, 4999, V - 1] * 12)[:n_rows]
    for scale in (1.0, 400.0):                                 # 400: logits of thousands, exp overflows
        x = scale * torch.randn(n_rows, D, generator=g)
        for m in (q8, dense):
            full = m.logits(x).double()                                        # (N, V)
            want = torch.logsumexp(full, -1) - full.gather(-1, targets[:, None])[:, 0]
            got = m.nll(x, targets)
            assert got.shape == (n_rows,) and torch.isfinite(got).all()
            assert torch.allclose(got.double(), want, rtol=1e-5, atol=1e-4 * scale)
            cap = lambda y: soft_cap(y, 3.0)                                   # noqa: E731
            capped = cap(full)
            want = torch.logsumexp(capped, -1) - capped.gather(-1, targets[:, None])[:, 0]
            assert torch.allclose(m.nll(x, targets, transform=cap).double(), want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("n_runs", [1, 3])
def test_comparison_one_chunk_at_a_time_is_the_whole_logits_in_float64(n_runs, monkeypatch):
    """Both matrices: KL(p_ref || p_run), both NLLs and top-1 agreement from the running sums
    equal the ones log_softmax gives over the whole (rows, V) logits in float64, with targets in
    several chunks, a soft cap, logits large enough to overflow exp() in float32, a run equal to
    the reference (KL exactly 0) and one that differs."""
    from lib.core.layer import soft_cap
    from lib.core.vocab_matrix import Q8VocabMatrix

    monkeypatch.setattr(Q8VocabMatrix, "CHUNK", 1024)
    monkeypatch.setattr(Q8VocabMatrix, "CHUNK_MANY", 1024)
    V, D, n = 5000, 64, 6
    raw, e = _q8_of(V, D, seed=8)
    q8 = Q8VocabMatrix.from_gguf_blocks(raw)
    dense = VocabMatrix.from_dense(e.t().contiguous())
    g = torch.Generator().manual_seed(9)
    targets = torch.tensor([0, 1023, 1024, 2500, 4999, 7])
    for scale, cap in ((1.0, None), (300.0, None), (1.0, lambda y: soft_cap(y, 0.5))):
        ref = scale * torch.randn(n, D, generator=g)
        runs = [ref.clone()] + [ref + 0.3 * scale * torch.randn(n, D, generator=g) for _ in range(n_runs - 1)]
        x = torch.cat([ref, *runs])                                                  # ((K + 1) n, D)
        for m in (q8, dense):
            y = m.logits(x)
            y = (cap(y) if cap else y).double()                                      # the cap in float32, as the engine
            lp = torch.log_softmax(y, -1)                                            # ((K + 1) n, V)
            lr, lk = lp[:n], lp[n:].view(n_runs, n, V)
            want_kl = (lr.exp() * (lr - lk)).sum(-1)                                 # (K, n)
            want_nll = -lp.gather(-1, targets.repeat(n_runs + 1)[:, None])[:, 0]
            kl, nll_ref, nll, agree = m.compare(x, n, targets, transform=cap)
            assert kl.shape == agree.shape == nll.shape == (n_runs, n) and nll_ref.shape == (n,)
            assert torch.allclose(kl, want_kl.clamp_min(0), rtol=1e-9, atol=1e-9 * scale)
            assert torch.equal(kl[0], torch.zeros(n)) and agree[0].all()             # the run that is the reference
            assert torch.allclose(nll_ref, want_nll[:n], rtol=1e-9, atol=1e-9 * scale)
            assert torch.allclose(nll, want_nll[n:].view(n_runs, n), rtol=1e-9, atol=1e-9 * scale)
            assert torch.equal(agree, lk.argmax(-1) == lr.argmax(-1))
            if n_runs > 1:
                assert (kl[1:] > 1e-6).any()
