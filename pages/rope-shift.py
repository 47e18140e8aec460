"""RoPE position shift (CONCEPTS.md §11): widgets and layout only; the numbers come from lib/."""
import numpy as np
import streamlit as st

from lib.ui import runtime
from lib.decoding import generate
from lib.concepts.rope_shift import rope_shift
from lib.concepts.rope_shift import checks, hf_rotation
from lib.concepts.rope_shift import figures as plots
from lib.model.tokens import token_texts
from lib.ui.page import ConceptPage

DELTAS = (1, 4, 16, 64, 256, 1024, 4096)          # cache shifts the sweep (and the control) use
PAIRS = (0, 16, 48, 96, 127)                      # channel pairs drawn in the rotation figure

page = ConceptPage("rope-shift")
t = page.t
m = page.model()
spec = m.spec

left, right = page.controls()
prompt = page.prompt(default=t("prompt_default"), max_tokens=64, container=left)
if prompt.n_tokens < 2:
    left.warning(t("too_short"))
    page.finish()
    st.stop()
c1, c2 = right.columns(2)
layer = page.state.select("layer", t("layer_label"), tuple(range(spec.n_layers)), 5 if spec.n_layers > 5 else 0,
                          format_func=lambda l: t("layer_fmt", l=l, theta=spec.rope_thetas[l]), container=c1)
head = page.state.select("head", t("head_label"), tuple(range(spec.n_heads)), 0, container=c2)
T = prompt.n_tokens
if st.session_state.get("rope-shift.key", 0) > T - 1:   # a shorter prompt than before: keep the slider valid
    st.session_state["rope-shift.key"] = T - 1
key = page.state.number_slider("key", t("key_label", q=T - 1), 0, T - 1, min(1, T - 1), help=t("key_help"),
                               container=right)
delta = page.state.select("delta", t("delta_label"), DELTAS, 256, format_func=lambda d: t.num(d, ","),
                         help=t("delta_help"), container=right)
tokens = token_texts(m.tokenizer, prompt.ids)

# ---- the rotation ------------------------------------------------------------------------------
st.subheader(t("rot_title"))
thetas = tuple(sorted(set(spec.rope_thetas)))
sp = rope_shift.spectrum(spec.head_dim, thetas, spec.max_context)
fig = plots.spectrum_figure(sp.wavelengths, [t("spec_theta", theta=th) for th in thetas], spec.max_context,
                            {"title": t("fig_spec_title"), "context": t("spec_context", n=spec.max_context),
                             "x": t("spec_x"), "y": t("spec_y"), "hover": t("spec_hover", x="%{x}", y="%{y:,.1f}")},
                            fmt=t.num)
page.figure(fig, "rope_spectrum", {"pair": list(range(sp.wavelengths.shape[1])),
                                   **{f"wavelength_theta={th:g}": w.tolist() for th, w in zip(thetas, sp.wavelengths)}})
st.caption(t("spec_caption", **{"n_loc": int(sp.pairs_full_turn[0]), "n_glob": int(sp.pairs_full_turn[-1]),
                               "half": spec.head_dim // 2, "ctx": spec.max_context}))
positions = np.arange(0, 201)
inv = m.engine.inv_freq[layer].cpu()
ang = rope_shift.pair_angles(inv, PAIRS, positions)
fig = plots.angles_figure(positions, ang, [t("pair_name", i=i, wl=float(2 * np.pi / inv[i])) for i in PAIRS],
                          {"title": t("fig_angles_title", l=layer, theta=spec.rope_thetas[layer]), "x": t("angles_x"),
                           "y": t("angles_y")})
page.figure(fig, "pair_angles", {"position": positions.tolist(), **{f"pair_{i}": a.tolist() for i, a in zip(PAIRS, ang)}})

# ---- real q, k: only the offset matters ---------------------------------------------------------------
st.subheader(t("score_title"))
with st.spinner(page.c("working")):
    raw = runtime.cached(rope_shift.raw_qk)(m.engine, prompt.ids, layer)
shifts = np.arange(0, 513)
qi = T - 1
joint = rope_shift.score_at(raw, head, qi, key, qi + shifts, key + shifts)
key_only = rope_shift.score_at(raw, head, qi, key, np.full_like(shifts, qi), key + shifts)
unchanged = float(np.ptp(joint)) <= checks.JOINT_TOL
if page.predict("joint", t("predict_joint_q", q=tokens[qi], k=tokens[key], hi=int(shifts[-1])), ("same", "changes"),
                "same" if unchanged else "changes",
                t("predict_joint_why_same" if unchanged else "predict_joint_why_changes", spread=float(np.ptp(joint)),
                  lo=float(key_only.min()), hi=float(key_only.max())),
                format_func=lambda o: t(f"predict_joint_{o}")):
    fig = plots.shift_scores_figure(shifts, joint, key_only,
                                    {"title": t("fig_score_title", q=tokens[qi], k=tokens[key], l=layer, h=head),
                                     "joint": t("score_joint"), "key_only": t("score_key_only"), "x": t("score_x"),
                                     "y": t("score_y")})
    page.figure(fig, "score_vs_shift", {"delta": shifts.tolist(), "score_both_shifted": joint.tolist(),
                                        "score_key_shifted": key_only.tolist()})
    st.caption(t("score_caption", s=float(joint[0]), spread=float(np.ptp(joint)), lo=float(key_only.min()),
                 hi=float(key_only.max()), n=len(shifts)))

# ---- moving a real KV cache ----------------------------------------------------------------------------
st.subheader(t("cache_title"))
st.markdown(t("cache_intro", n=T - 1, d=delta))
with st.spinner(t("cache_running")):
    out = runtime.cached(rope_shift.shift_outcome)(m.engine, prompt.ids, int(delta))
    sweep = runtime.cached(rope_shift.shift_sweep)(m.engine, prompt.ids, DELTAS)
    base_logits = runtime.cached(generate.next_token_logits)(m.engine, prompt.ids)
    hf_err = runtime.cached(hf_rotation.hf_moved_key_error)(m.engine, prompt.ids, int(delta))
names = {"recompute": t("v_recompute"), "rerotated": t("v_rerotated"), "relabelled": t("v_relabelled")}
probs = {k: np.asarray(rope_shift.softmax_np(v)) for k, v in out.logits.items()}
top1 = {k: token_texts(m.tokenizer, [int(np.argmax(probs[k]))])[0] for k in names}
diffs = checks.logit_diffs(out)
kept = top1["relabelled"] == top1["recompute"]
if page.predict("relabel", t("predict_relabel_q", d=delta, r=top1["recompute"]), ("kept", "changed"),
                "kept" if kept else "changed",
                t("predict_relabel_why_kept" if kept else "predict_relabel_why_changed", r=top1["recompute"],
                  rl=top1["relabelled"], dl=diffs["relabelled"], dr=diffs["rerotated"]),
                format_func=lambda o: t(f"predict_relabel_{o}")):
    top = np.argsort(-probs["recompute"])[:8]
    top_tokens = token_texts(m.tokenizer, top.tolist())
    fig = plots.next_token_figure(top_tokens, {k: probs[k][top].tolist() for k in names},
                                  {"title": t("fig_next_title", d=delta), "y": t("next_y")}, names=names)
    page.figure(fig, "next_token_after_shift", {"token": top_tokens, **{k: probs[k][top].tolist() for k in names}})
    st.caption(t("next_caption", r=top1["recompute"], rr=top1["rerotated"], rl=top1["relabelled"],
                 dr=diffs["rerotated"], dl=diffs["relabelled"]))
    fig = plots.sweep_figure(sweep.deltas, sweep.max_logit_diff,
                             {"title": t("fig_sweep_title"), "x": t("sweep_x"), "y": t("sweep_y")}, fmt=t.num, names=names)
    page.figure(fig, "logit_error_vs_shift", {"delta": sweep.deltas.tolist(),
                                              **{f"max_abs_logit_diff_{k}": v.tolist() for k, v in sweep.max_logit_diff.items()},
                                              **{f"top1_same_{k}": v.tolist() for k, v in sweep.top1_same.items()}})

page.notice()

# ---- live checks ------------------------------------------------------------------------------------------
jerr = rope_shift.joint_shift_error(raw, checks.CHECK_DELTAS)
page.checks(checks.page_checks(jerr, out, hf_err, base_logits, layer, t) + page.spec_checks(m, "rope"))
page.try_this()
page.code(rope_shift.moved_cache, rope_shift.variants_hidden, rope_shift.raw_qk, rope_shift.score_at)
page.sources()
page.finish()
