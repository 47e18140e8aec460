"""The foundation checks as CheckResults, for the model-check page and for every page that
shows the engine layer it plots (attention-scaling, gqa, rope-shift, sliding-window).

`t` is the model-check texts' lookup (assets/text/model-check.toml; tests pass a stub).
- `layer_result(lc, t)`: the engine's layer against transformers' `Gemma3DecoderLayer`;
- `vocab_results(vc, t)`: embedding rows against `gguf`, and the top logits recomputed from
  the `gguf` matrix over the whole vocabulary;
- `config_results(spec, config, t)`: the spec's scale, RoPE bases and windows against the
  config's own values (computed here from the config, not read from the spec)."""
from __future__ import annotations

from lib.concepts.check_result import CheckResult

LAYER_REL_TOL = 1e-4        # max |engine - transformers| / max |the layer's update| (float32: ~1e-6)
ROWS_TOL = 0.0              # the Q8_0 rows are exact float32 products: bit for bit
LOGIT_TOL = 1e-3            # float32 sums of 640 products of size ~20 against float64


def layer_result(lc, t) -> CheckResult:
    kind = t("kind_local", w=lc.window) if lc.window is not None else t("kind_global")
    return CheckResult(
        t("check_layer", l=lc.layer, kind=kind, T=lc.tokens), lc.rel <= LAYER_REL_TOL,
        t("check_layer_detail", d=lc.max_diff, u=lc.update, r=lc.rel, tol=LAYER_REL_TOL, s=lc.attn_scale,
          theta=lc.rope_theta),
        reference=t("ref_layer"))


def vocab_results(vc, t) -> list[CheckResult]:
    same = vc.ref_top == vc.engine_top
    return [
        CheckResult(t("check_rows", n=len(vc.row_ids)), vc.rows_max_diff <= ROWS_TOL,
                    t("check_rows_detail", d=vc.rows_max_diff, n=len(vc.row_ids)), reference=t("ref_gguf")),
        CheckResult(t("check_top", k=len(vc.ref_top), V=vc.vocab), same and vc.logit_max_diff <= LOGIT_TOL,
                    t("check_top_detail", same=t("yes") if same else t("no"), d=vc.logit_max_diff, tol=LOGIT_TOL,
                      top=vc.ref_logits[0]),
                    reference=t("ref_gguf_head")),
    ]


def config_results(spec, config: dict, t, which=("scale", "rope", "window")) -> list[CheckResult]:
    """The spec's attention scale, per-layer RoPE bases and windows against the config's
    (`which` of them, in that order)."""
    types = config["layer_types"]
    scale = float(config["query_pre_attn_scalar"]) ** -0.5
    thetas = tuple(float(config["rope_parameters"][k]["rope_theta"]) for k in types)
    windows = tuple(int(config["sliding_window"]) if k == "sliding_attention" else None for k in types)
    bad_theta = [l for l, (a, b) in enumerate(zip(spec.rope_thetas, thetas)) if a != b]
    bad_window = [l for l, (a, b) in enumerate(zip(spec.windows, windows)) if a != b]
    out = [
        CheckResult(t("check_cfg_scale"), abs(spec.attn_scale - scale) <= 1e-12 * scale,
                    t("check_cfg_scale_detail", a=spec.attn_scale, b=scale, q=config["query_pre_attn_scalar"]),
                    reference=t("ref_config")),
        CheckResult(t("check_cfg_rope"), not bad_theta and len(spec.rope_thetas) == len(thetas),
                    t("check_cfg_rope_detail", loc=thetas[types.index("sliding_attention")],
                      glo=thetas[types.index("full_attention")], bad=len(bad_theta), L=len(types)),
                    reference=t("ref_config")),
        CheckResult(t("check_cfg_window"), not bad_window and len(spec.windows) == len(windows),
                    t("check_cfg_window_detail", w=config["sliding_window"], bad=len(bad_window), L=len(types)),
                    reference=t("ref_config")),
    ]
    return [r for name, r in zip(("scale", "rope", "window"), out) if name in which]


def layers_result(lcs, t) -> CheckResult:
    """All recorded layers in one line: passes when the worst layer is within tolerance."""
    worst = max(lcs, key=lambda lc: lc.rel)
    return CheckResult(t("check_layers", L=len(lcs)), worst.rel <= LAYER_REL_TOL,
                       t("check_layers_detail", l=worst.layer, r=worst.rel, tol=LAYER_REL_TOL),
                       reference=t("ref_layer"))
