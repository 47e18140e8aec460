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
