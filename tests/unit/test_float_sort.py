"""Sorting floats by their integer keys gives exactly torch.sort's values (and stable order)."""
import pytest
import torch

from lib.decoding.float_sort import order_keys, sort_floats


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("descending", [False, True])
def test_same_values_and_stable_order_as_torch_sort(dtype, descending):
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(3, 5000, generator=g) * 20).to(dtype)
    x[0, :50] = x[0, 50]                                         # ties
    x[1, :3] = torch.tensor([float("inf"), float("-inf"), 0.0], dtype=dtype)
    x[2, 7] = torch.finfo(dtype).tiny / 4                        # a subnormal
    ours = sort_floats(x, descending=descending, stable=True)
    ref = torch.sort(x, dim=-1, descending=descending, stable=True)
    assert torch.equal(ours.values, ref.values)
    assert torch.equal(ours.indices, ref.indices)


def test_keys_order_like_the_floats():
    x = torch.tensor([-float("inf"), -3.5, -1.0, -1e-30, 0.0, 1e-30, 2.0, float("inf")])
    k = order_keys(x)
    assert torch.all(k[1:] > k[:-1])
