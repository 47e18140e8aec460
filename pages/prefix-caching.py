"""Prefix caching (CONCEPTS.md §14): widgets and layout only; the numbers come from lib/."""
import streamlit as st

from lib.ui import runtime
from lib.concepts.prefix_caching import prefix_cache
from lib.core.cache.block_manager import block_hashes
from lib.concepts.prefix_caching import checks
from lib.concepts.prefix_caching import figures as plots
from lib.model.tokens import EmptyPrompt, encode_prompt, token_texts
from lib.ui.page import ConceptPage

BLOCK_SIZES = (8, 16, 32)
SHIFTS = (1, 4, 16, 64)
TIME_REPEATS = 5
B_CAP = 256                      # prompt B is cut to this many tokens (the note says so)

page = ConceptPage("prefix-caching")
t = page.t
m = page.model()

page.section("controls")
left, right = st.columns(2)
a = page.prompt(default=t("default_a"), label=t("a_label"), container=left)
b_text = page.state.text("b", t("b_label"), t("default_b"), max_chars=8000, height=90, container=right)
c1, c2, c3 = st.columns(3)
bs = page.state.select("bs", t("bs_label"), BLOCK_SIZES, 16, help=t("bs_help"), container=c1)
edit = page.state.checkbox("edit", t("edit_label"), False, help=t("edit_help"), container=c2)
shift = page.state.select("shift", t("shift_label"), SHIFTS, 16, help=t("shift_help"), container=c3)
if edit:
    b_text = prefix_cache.one_char_edit(b_text)
    right.caption(t("edited", text=b_text[:60]))
try:
    b = encode_prompt(m.tokenizer, b_text, B_CAP)
except EmptyPrompt:
    right.warning(t("empty_b"))
    page.finish()
    st.stop()
if b.truncated_from:
    page.notes.append(t("note_b_truncated", n=b.truncated_from, cap=B_CAP))

A, B = list(a.ids), list(b.ids)
lcp = prefix_cache.common_prefix_len(A, B)
rows = prefix_cache.match_blocks(A, B, bs)
n_hit = sum(r.hit for r in rows)

# ---- token diff ------------------------------------------------------------------------------
st.subheader(t("diff_title"))
st.markdown(t("diff_summary", na=len(A), nb=len(B), lcp=lcp, hit=n_hit, bs=bs, reused=n_hit * bs))
ta, tb = token_texts(m.tokenizer, A), token_texts(m.tokenizer, B)
d1, d2 = st.columns(2)
d1.markdown(f"**{t('a_short')}**")
d1.html(plots.diff_html(ta, [i < lcp for i in range(len(A))], bs))
d2.markdown(f"**{t('b_short')}**")
d2.html(plots.diff_html(tb, [i < lcp for i in range(len(B))], bs))
st.caption(t("diff_caption"))

# ---- block hash chain (token ids only: drawn before the model runs) ----------------------------
k_hit = n_hit * bs           # the hit blocks' tokens: what the block manager will hand over (checked below)
options = sorted({0, k_hit, lcp, len(B)})
reuse_q = page.predict("reuse", t("predict_reuse_q", nb=len(B), bs=bs), options, k_hit,
                       t("predict_reuse_why", lcp=lcp, bs=bs, k=k_hit, nb=len(B)),
                       format_func=lambda k: t("predict_reuse_opt", k=k))
if reuse_q:
    labels = {"hit": t("hit"), "miss": t("miss"), "partial": t("partial"), "new": t("b_short"), "cached": t("a_short"),
              "x": t("chain_x"), "title": t("chain_title", bs=bs)}
    fig = plots.hash_chain(block_hashes(A, bs), rows, labels, present=page.present)
    page.figure(fig, "hash_chain", {"block": [r.index for r in rows], "first_token": [r.start for r in rows],
                                    "tokens": [r.n_tokens for r in rows], "hash_new": [r.hash_new for r in rows],
                                    "hash_cached": [r.hash_cached for r in rows], "hit": [r.hit for r in rows]},
                wide=True)      # a label in every block: on a phone the chain keeps its width and scrolls


# ---- the real model: reuse vs recompute (timed alone, so drawn last), shifted positions -------
st.subheader(t("time_title"))
time_box = st.container()       # the timing's place: it runs alone, after everything else is drawn
bar = time_box.progress(0.0, text=t("running", r=TIME_REPEATS))
note = time_box.caption(t("browser_note"))     # item 5: the browser draws the figure below meanwhile
n_keep = max(1, min(len(B) - 1, (len(B) - 1) // bs * bs))
kv = runtime.cached(prefix_cache.prefix_kv)(m.engine, tuple(B), n_keep)     # shared by every shift
sh = runtime.cached(prefix_cache.reuse_at_shifted_positions)(m.engine, tuple(B), n_keep, shift, _prefix=kv)

st.subheader(t("shift_title"))
tok = lambda i: token_texts(m.tokenizer, [i])[0]  # noqa: E731
shown = [tok(i) for i, _, _ in sh.top]
shown = [f"{x} ({i})" if shown.count(x) > 1 else x for x, (i, _, _) in zip(shown, sh.top)]   # alike: with ids
fig = plots.shift_figure(shown, [p for _, p, _ in sh.top], [q for _, _, q in sh.top],
                         {"title": t("shift_fig_title", k=n_keep, shift=shift), "y": t("shift_y"),
                          "recompute": t("shift_recompute", shift=shift), "reuse": t("shift_reuse")})
page.figure(fig, "shifted_positions", {"token": shown, "token_id": [i for i, _, _ in sh.top],
                                       "p_recompute": [p for _, p, _ in sh.top], "p_reuse": [q for _, _, q in sh.top]})
if sh.top_reuse == sh.top_recompute:
    st.markdown(t("shift_line_same", k=n_keep, shift=shift, d=sh.max_abs_diff, a=tok(sh.top_reuse)))
else:
    a_txt, b_txt = tok(sh.top_reuse), tok(sh.top_recompute)
    if a_txt == b_txt:       # two different ids that print alike: show the ids
        a_txt, b_txt = f"{a_txt} (id {sh.top_reuse})", f"{b_txt} (id {sh.top_recompute})"
    st.markdown(t("shift_line_diff", k=n_keep, shift=shift, d=sh.max_abs_diff, a=a_txt, b=b_txt))

sh0 = runtime.cached(prefix_cache.reuse_at_shifted_positions)(m.engine, tuple(B), n_keep, 0, _prefix=kv)  # for the checks
res = runtime.cached(prefix_cache.reuse_vs_recompute)(m.engine, tuple(A), tuple(B), bs, TIME_REPEATS)
bar.empty()
note.empty()
if not reuse_q:      # the timing's labels and sentence count the reused tokens: the answer
    time_box.caption(page.c("predict_hidden"))
else:
    with time_box:
        names = [t("t_full", n=res.n_tokens), t("t_reuse", n=res.n_tokens - res.n_reused)]
        fig = plots.timing_figure(names, [res.t_full_s, res.t_reuse_s], {"title": t("time_fig_title", r=res.repeats),
                                                                          "x": t("time_x")})
        page.figure(fig, "prefill_time", {"run": names, "median_seconds": [res.t_full_s, res.t_reuse_s],
                                          "spread_seconds": [res.spread_full_s, res.spread_reuse_s]})
        saved = res.t_full_s - res.t_reuse_s
        noise = max(res.spread_full_s, res.spread_reuse_s)
        key = "time_line_saved" if saved > noise else "time_line_none" if res.n_reused == 0 else "time_line_noise"
        st.markdown(t(key, saved=saved * 1000, pct=100 * saved / res.t_full_s if res.t_full_s else 0.0,
                      reused=res.n_reused, n=res.n_tokens, full=res.t_full_s * 1000, reuse=res.t_reuse_s * 1000,
                      noise=noise * 1000, r=res.repeats, load=res.load_avg))

page.notice()
page.checks(checks.page_checks(res, sh0, sh, lcp, len(B), bs, t) + [checks.chain_check(A, B, bs, t)])
page.try_this()
page.code(prefix_cache.match_blocks, block_hashes, prefix_cache.reuse_vs_recompute, prefix_cache.prefix_kv,
          prefix_cache.reuse_at_shifted_positions)
page.sources()
page.finish()
