"""lib/decoding/vocab_max.py: argmax and top-k through block maxima give torch's answers."""
import pytest
import torch

from lib.decoding import vocab_max


@pytest.mark.parametrize("V", [262144, 151936, 50257, 1000, 513, 511, 7])
def test_argmax_and_top_k_equal_torch(V):
    g = torch.Generator().manual_seed(V)
    for trial in range(12):
        x = torch.randn(V, generator=g)
        if trial % 3 == 0:
            x = (x * 2).round()                                   # many ties: the first index must win
        if trial == 4:
            x[:] = float("-inf")
        if trial == 5:
            x[torch.randint(0, V, (2,), generator=g)] = float("inf")
        assert vocab_max.argmax(x) == int(torch.argmax(x)), trial
        for k in (1, 5, 10, 40):
            values, ids = vocab_max.top_k(x, k)
            assert torch.equal(values, torch.topk(x, min(k, V)).values), (trial, k)
            assert torch.equal(x[ids], values) and len(set(ids.tolist())) == len(ids)


def test_argmax_counts_nan_as_the_maximum_like_torch():
    for V in (262144, 1000, 600):
        x = torch.randn(V)
        x[V - 3] = float("nan")                                   # in the tail when V is not a multiple of W
        assert vocab_max.argmax(x) == int(torch.argmax(x)) == V - 3
