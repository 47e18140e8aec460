"""Our fast GGUF reader against the gguf package's own writer and reader."""
import numpy as np
import pytest

from lib.model.gguf_file import GGUFFile


@pytest.fixture()
def tiny_gguf(tmp_path):
    import gguf

    path = tmp_path / "tiny.gguf"
    w = gguf.GGUFWriter(str(path), "gemma3")
    w.add_block_count(2)
    w.add_string("general.name", "tiny ✓")
    w.add_array("tokenizer.ggml.tokens", ["<pad>", "▁hello", "世界", "🙂"])
    w.add_array("tokenizer.ggml.scores", [0.0, -1.5, -2.5, -3.5])
    w.add_float32("gemma3.rope.freq_base", 1e6)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 32)).astype(np.float32)
    b = rng.standard_normal((64, 32)).astype(np.float32)
    w.add_tensor("a.weight", a)
    w.add_tensor("b.weight", gguf.quants.quantize(b, gguf.GGMLQuantizationType.Q8_0),
                 raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path, a, b


def test_metadata_and_tensors_match_the_gguf_package(tiny_gguf):
    import gguf

    path, a, b = tiny_gguf
    f = GGUFFile(path)
    assert f.metadata["general.architecture"] == "gemma3"
    assert f.metadata["general.name"] == "tiny ✓"
    assert f.metadata["gemma3.block_count"] == 2
    assert f.metadata["tokenizer.ggml.tokens"] == ["<pad>", "▁hello", "世界", "🙂"]
    np.testing.assert_array_equal(f.metadata["tokenizer.ggml.scores"], [0.0, -1.5, -2.5, -3.5])
    np.testing.assert_array_equal(f.dequantize("a.weight"), a)
    ref = gguf.GGUFReader(str(path))
    t = next(t for t in ref.tensors if t.name == "b.weight")
    np.testing.assert_array_equal(f.dequantize("b.weight"), gguf.quants.dequantize(t.data, t.tensor_type))
    assert np.abs(f.dequantize("b.weight") - b).max() < 0.05   # Q8_0 is close to the original


def test_not_a_gguf_file_is_rejected(tmp_path):
    p = tmp_path / "x.gguf"
    p.write_bytes(b"NOPE" + bytes(64))
    with pytest.raises(ValueError, match="not a GGUF"):
        GGUFFile(p)


def test_row_ranges_dequantize_to_the_same_values(tiny_gguf):
    path, a, b = tiny_gguf
    f = GGUFFile(path)
    whole = f.dequantize("b.weight")                            # (64, 32), Q8_0
    for start, stop in [(0, 1), (3, 17), (60, 64), (60, 99)]:
        np.testing.assert_array_equal(f.dequantize_rows("b.weight", start, stop), whole[start:stop])
    np.testing.assert_array_equal(f.dequantize_rows("a.weight", 1, 3), a[1:3])


def _mapped_rss(path) -> int:
    """Resident bytes of this process's mappings of `path` (Linux: /proc/self/smaps)."""
    import psutil

    return sum(m.rss for m in psutil.Process().memory_maps(grouped=True) if m.path == str(path))


@pytest.mark.skipif(not hasattr(__import__("mmap"), "MADV_DONTNEED"), reason="needs madvise")
def test_drop_pages_hands_back_what_a_read_brought_in(tmp_path):
    """A reader a server keeps open held every page a check read (~250 MB of the bundled GGUF
    after the model-check page): drop_pages gives them back, and later reads still work."""
    import gguf

    path = tmp_path / "big.gguf"
    big = np.random.default_rng(1).standard_normal((1024, 1024)).astype(np.float32)   # 4 MiB
    w = gguf.GGUFWriter(str(path), "gemma3")
    w.add_tensor("big.weight", big)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    f = GGUFFile(path)
    np.testing.assert_array_equal(f.dequantize("big.weight"), big)
    assert _mapped_rss(path) >= 4 * 2**20                       # the whole tensor was read
    f.drop_pages("big.weight")
    assert _mapped_rss(path) < 2**20                            # only the header's pages may remain
    np.testing.assert_array_equal(f.dequantize("big.weight"), big)
    f.drop_pages()
    assert _mapped_rss(path) == 0

    from lib.reference.gguf_weights import GGUF

    ref = GGUF(path)                                            # the references' reader drops as it reads
    np.testing.assert_array_equal(ref.tensor("big.weight"), big)
    np.testing.assert_array_equal(ref.rows("big.weight", [3, 700]), big[[3, 700]])
    assert _mapped_rss(path) < 2**20
