"""Facts about the loaded model, read from its spec/config and its tensors (never typed in)."""
from __future__ import annotations

from lib.core.vocab_matrix import Q8VocabMatrix


def parameter_counts(engine) -> dict[str, int]:
    """Embedding and transformer-block parameter counts, counted from the engine's tensors."""
    embed = engine.embed.numel()
    rest = engine.final_norm.numel()
    for w in engine.layers:
        rest += sum(t.numel() for t in vars(w).values() if t is not None)
    head = 0 if engine.lm_head is engine.embed else engine.lm_head.numel()
    return {"embedding": embed, "blocks": rest, "lm_head": head, "total": embed + rest + head}


def weight_bytes(engine) -> int:
    seen, total = set(), 0
    tensors = [*engine.embed.storage(), *engine.lm_head.storage(), engine.final_norm]
    for w in engine.layers:
        tensors += [t for t in vars(w).values() if t is not None]
    for t in tensors:
        if t.data_ptr() not in seen:
            seen.add(t.data_ptr())
            total += t.nbytes
    return total


def _weights_text(m, t) -> str:
    mib, dtype = weight_bytes(m.engine) / 2**20, str(m.dtype).replace("torch.", "")
    if isinstance(m.engine.embed, Q8VocabMatrix):
        return t("weights_value_q8", mib=mib, dtype=dtype)
    return f"{t.num(mib, ',.0f')} MiB ({dtype})"


def model_facts(m, t, name: str | None = None) -> dict[str, str]:
    """{label key: value text} for the home page table; t is the page's Texts (numbers are
    written with its language's separators), `name` the model's name in that language."""
    s = m.spec
    glob = [i for i, w in enumerate(s.windows) if w is None]
    counts = parameter_counts(m.engine)
    thetas = sorted(set(s.rope_thetas))
    return {
        "fact_name": name or m.name,
        "fact_layers": t.num(s.n_layers, ","),
        "fact_hidden": t.num(s.hidden, ","),
        "fact_mlp": f"{t.num(s.intermediate, ',')} ({s.activation})",
        "fact_heads": f"{s.n_heads} / {s.n_kv_heads}",
        "fact_head_dim": t.num(s.head_dim, ","),
        "fact_vocab": t.num(s.vocab, ","),
        "fact_window": next((t.num(w, ",") for w in s.windows if w), "—"),
        "fact_layout": t("layout_value", local=s.n_layers - len(glob), glob=len(glob),
                         which=", ".join(map(str, glob))),
        "fact_rope": " / ".join(t.num(x, ",.0f") for x in thetas),
        "fact_params": t("fact_params_value", total=counts["total"], embed=counts["embedding"],
                         rest=counts["blocks"] + counts["lm_head"]),
        "fact_weights": _weights_text(m, t),
        "fact_context": t.num(s.max_context, ","),
        "fact_device": m.device,
    }
