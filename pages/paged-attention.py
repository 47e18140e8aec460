"""PagedAttention (CONCEPTS.md §15): widgets and layout only; the numbers come from lib/."""
import pandas as pd
import streamlit as st

from lib.ui import runtime
from lib.concepts.paged_attention import checks, events, workload
from lib.concepts.paged_attention import figures as plots
from lib.decoding import paged_generation
from lib.core.cache.block_manager import BlockManager
from lib.core.cache.paged import PagedBatch
from lib.model.tokens import encode_prompt
from lib.reference import batch_reference
from lib.ui.page import ConceptPage
from lib.ui.step_through import step_through

BLOCK_SIZES = (8, 16, 32)
MIB = 2 ** 20
PLAY_EVERY_S = 1.5

page = ConceptPage("paged-attention")
t = page.t
m = page.model()

left, right = page.controls()
prompt = page.prompt(default=t("default_prompt"), max_tokens=96, label=t("prompt_label"), container=left)
c1, c2 = right.columns(2)
n_new = page.state.number_slider("n", t("n_label"), 4, 32, 12, container=c1)
bs = page.state.select("bs", t("bs_label"), BLOCK_SIZES, 16, container=c2)
n_blocks = page.state.number_slider("blocks", t("blocks_label"), 6, 64, 9, help=t("blocks_help"), container=c1)
reserve = page.state.number_slider("reserve", t("reserve_label"), 64, 2048, 512, step=64, help=t("reserve_help"),
                                   container=c2)
seed = page.state.integer("seed", t("seed_label"), 0, 2**31 - 1, 0, container=right)

others = [encode_prompt(m.tokenizer, t(k), 96).ids for k in ("req_b", "req_c", "req_d")]
requests = workload.page_requests(prompt.ids, others, n_new, seed)


def model_run():
    """The four requests on the real model through the pool, then the checks' references."""
    run = runtime.cached(paged_generation.run_requests)(m.engine, requests, n_blocks, bs)
    batch = runtime.cached(batch_reference.batched_vs_alone)(
        m.engine, tuple(tuple(r.prompt_ids) for r in requests), tuple(run.prompt_hidden.get(r.rid) for r in requests))
    return run, batch


# The schedule depends only on the lengths (every request generates its n tokens): the block
# tables, copies and memory are drawn from the plan at once while the model runs it.
plan = paged_generation.plan_requests(m.engine.spec, requests, n_blocks, bs, dtype=m.engine.dtype)
for rid in plan.rejected:
    st.warning(t("rejected", rid=rid, blocks=n_blocks))
if not plan.snapshots:
    page.finish()
    st.stop()
later = runtime.start(model_run)

st.markdown(t("requests_line", **{f"n{r.rid}": len(r.prompt_ids) for r in requests}, m=n_new, h=max(2, n_new // 2),
              bs=bs, nb=n_blocks, last=n_blocks - 1, kib=plan.bytes_per_token * bs / 1024, L=m.spec.n_layers))

# ---- predict: how many copies will copy-on-write make? ----------------------------------------
n_cow = len(plan.cow_copies)
answer = str(n_cow) if n_cow <= 2 else "many"
why = t("predict_why_partial" if len(prompt.ids) % bs else "predict_why_full",
        p=len(prompt.ids), bs=bs, q=len(prompt.ids) // bs, r=len(prompt.ids) % bs, c=n_cow)
revealed = page.predict("cow", t("predict_q", p=len(prompt.ids), bs=bs), ("0", "1", "2", "many"), answer, why,
                        format_func=lambda o: t(f"opt_{o}"))

# ---- step through the scheduler ----------------------------------------------------------------
last = len(plan.snapshots) - 1
colors = plots.owner_colors(list(plan.tokens))


def draw_step(step: int) -> None:
    sn = plan.snapshots[step]
    st.markdown(t("step_head", step=sn.step, used=sn.used_blocks, nb=n_blocks))
    st.markdown("\n".join(f"- {events.describe(e, t)}" for e in sn.events) or t("no_event"))
    fill = [0] * n_blocks
    for s, table in sn.tables.items():
        for i, bid in enumerate(table):
            fill[bid] = max(fill[bid], min(bs, sn.lengths[s] - i * bs))
    fig = plots.pool_map(sn.owners, sn.ref_counts, fill, bs, colors, 8,
                         {"title": t("pool_title", step=sn.step), "shared": t("shared"), "free": t("free"),
                          "ref": t("ref_word")})
    page.figure(fig, "block_pool", {"block": list(range(n_blocks)), "owners": ["+".join(o) for o in sn.owners],
                                    "ref_count": sn.ref_counts, "slots_filled": fill},
                wide=True)          # 8 labelled blocks a row: a phone scrolls the pool sideways
    rows = [{t("col_seq"): s, t("col_table"): " → ".join(f"{i}:#{b}" for i, b in enumerate(tab)),
             t("col_tokens"): sn.lengths[s], t("col_blocks"): len(tab), t("col_unused"): len(tab) * bs - sn.lengths[s]}
            for s, tab in sorted(sn.tables.items())]
    st.markdown(f"**{t('tables_title')}**")
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    else:
        st.caption(t("no_tables"))
    with st.expander(t("log_title", step=sn.step)):
        st.markdown("\n".join(f"{t('log_step', s=s)} {line}" for s, line in events.step_log(plan.snapshots, step, t)))


if revealed:
    st.subheader(t("steps_title"))
    step_through(page, last, t("step_label"), t("step_help"), draw_step, PLAY_EVERY_S)

# ---- memory over the run -----------------------------------------------------------------------
steps = [s.step for s in plan.snapshots]
bpt = plan.bytes_per_token
reserved = [len(s.tables) * reserve * bpt / MIB for s in plan.snapshots]
allocated = [s.used_blocks * bs * bpt / MIB for s in plan.snapshots]
stored = [s.filled_slots * bpt / MIB for s in plan.snapshots]
fig = plots.memory_figure(steps, reserved, allocated, stored,
                          {"reserved": t("mem_reserved", r=reserve), "allocated": t("mem_allocated"),
                           "stored": t("mem_stored"), "title": t("mem_title"), "x": t("mem_x"), "y": "MiB"})
page.figure(fig, "memory", {"step": steps, "contiguous_reserved_mib": reserved, "paged_allocated_mib": allocated,
                            "tokens_stored_mib": stored})
peak = max(range(len(steps)), key=lambda i: reserved[i])
st.caption(t("mem_caption", bpt=bpt / 1024, s=steps[peak], r=reserved[peak], a=allocated[peak], k=stored[peak],
             x=reserved[peak] / max(allocated[peak], 1e-12)))

# ---- what each sequence generated -----------------------------------------------------------------
st.markdown(f"**{t('gen_title')}**")
bar = st.progress(0.0, text=t("running", n=n_new))
[(run, batch)] = later.results()
bar.empty()
show = lambda ids: m.tokenizer.decode(ids, skip_special_tokens=True).replace("\n", "⏎")  # noqa: E731
st.dataframe(pd.DataFrame([{t("col_seq"): s, t("col_prompt_end"): "…" + show(run.tokens[s][max(1, run.n_prompt[s] - 8):run.n_prompt[s]]),
                            t("col_generated"): show(run.tokens[s][run.n_prompt[s]:])}
                           for s in sorted(run.tokens)]), hide_index=True, width="stretch")
st.caption(t("gen_caption", seed=seed))

page.notice()
page.checks(checks.page_checks(run, requests, len(prompt.ids), t, batch))
page.try_this()
page.code(paged_generation.run_requests, PagedBatch, BlockManager.append_slots, BlockManager.fork)
page.sources()
page.finish()
