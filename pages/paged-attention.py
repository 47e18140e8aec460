"""PagedAttention (CONCEPTS.md §15): widgets and layout only; the numbers come from lib/."""
import pandas as pd
import streamlit as st

from lib.concepts.paged_blocks import paged_generation
from lib.ui import runtime
from lib.concepts.paged_blocks.block_manager import BlockManager
from lib.concepts.check_result import CheckResult
from lib.concepts.paged_blocks.paged_attention import PagedBatch
from lib.concepts.paged_attention import figures as plots
from lib.model.tokens import encode_prompt
from lib.ui.page import ConceptPage

BLOCK_SIZES = (8, 16, 32)
MIB = 2 ** 20

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
requests = (
    paged_generation.Request("A", prompt.ids, n_new, 0, ((0.0, 0), (1.0, seed))),
    paged_generation.Request("B", others[0], max(2, n_new // 2), 0),
    paged_generation.Request("C", others[1], n_new, 0),
    paged_generation.Request("D", others[2], max(2, n_new // 2), 2),
)
with st.spinner(t("running", n=n_new)):
    run = runtime.cached(paged_generation.run_requests)(m.engine, requests, n_blocks, bs)
for rid in run.rejected:
    st.warning(t("rejected", rid=rid, blocks=n_blocks))
if not run.snapshots:
    page.finish()
    st.stop()

st.markdown(t("requests_line", **{f"n{r.rid}": len(r.prompt_ids) for r in requests}, m=n_new, bs=bs, nb=n_blocks,
              kib=run.bytes_per_token * bs / 1024))

# ---- pool map at one step ----------------------------------------------------------------------
last = len(run.snapshots) - 1
step = page.state.number_slider("step", t("step_label"), 0, max(last, 1), 0, help=t("step_help"))
sn = run.snapshots[min(step, last)]
st.markdown(t("step_event", step=sn.step, event=sn.event or t("no_event"), used=sn.used_blocks, nb=n_blocks))
colors = plots.owner_colors(list(run.tokens))
fill = [0] * n_blocks
for s, table in sn.tables.items():
    for i, bid in enumerate(table):
        fill[bid] = max(fill[bid], min(bs, sn.lengths[s] - i * bs))
fig = plots.pool_map(sn.owners, sn.ref_counts, fill, bs, colors, 8,
                     {"title": t("pool_title", step=sn.step), "shared": t("shared"), "free": t("free")})
page.figure(fig, "block_pool", {"block": list(range(n_blocks)), "owners": ["+".join(o) for o in sn.owners],
                                "ref_count": sn.ref_counts, "slots_filled": fill})

rows = [{t("col_seq"): s, t("col_table"): " → ".join(f"{i}:{b}" for i, b in enumerate(tab)),
         t("col_tokens"): sn.lengths[s], t("col_blocks"): len(tab), t("col_unused"): len(tab) * bs - sn.lengths[s]}
        for s, tab in sorted(sn.tables.items())]
st.markdown(f"**{t('tables_title')}**")
if rows:
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
else:
    st.caption(t("no_tables"))

# ---- memory over the run -----------------------------------------------------------------------
steps = [s.step for s in run.snapshots]
bpt = run.bytes_per_token
reserved = [len(s.tables) * reserve * bpt / MIB for s in run.snapshots]
allocated = [s.used_blocks * bs * bpt / MIB for s in run.snapshots]
stored = [s.filled_slots * bpt / MIB for s in run.snapshots]
fig = plots.memory_figure(steps, reserved, allocated, stored,
                          {"reserved": t("mem_reserved", r=reserve), "allocated": t("mem_allocated"),
                           "stored": t("mem_stored"), "title": t("mem_title"), "x": t("mem_x"), "y": "MiB"})
page.figure(fig, "memory", {"step": steps, "contiguous_reserved_mib": reserved, "paged_allocated_mib": allocated,
                            "tokens_stored_mib": stored})
peak = max(range(len(steps)), key=lambda i: reserved[i])
st.caption(t("mem_caption", bpt=bpt / 1024, s=steps[peak], r=reserved[peak], a=allocated[peak], k=stored[peak]))

# ---- what each sequence generated -----------------------------------------------------------------
st.markdown(f"**{t('gen_title')}**")
show = lambda ids: m.tokenizer.decode(ids, skip_special_tokens=True).replace("\n", "⏎")  # noqa: E731
st.dataframe(pd.DataFrame([{t("col_seq"): s, t("col_prompt_end"): "…" + show(run.tokens[s][max(1, run.n_prompt[s] - 8):run.n_prompt[s]]),
                            t("col_generated"): show(run.tokens[s][run.n_prompt[s]:])}
                           for s in sorted(run.tokens)]), hide_index=True, width="stretch")
st.caption(t("gen_caption", seed=seed))

page.notice()
worst_unused = max((len(tab) * bs - s.lengths[q] for s in run.snapshots for q, tab in s.tables.items()), default=0)
shared_full = sum(1 for s in run.snapshots for r in s.ref_counts if r > 1)
want_cow = 1 if len(prompt.ids) % bs else 0
# requests that had to wait for space, and whether they got blocks that finished sequences had freed
freed_before, waited, reused = set(), [], set()
for prev, cur in zip(run.snapshots, run.snapshots[1:]):
    freed_before |= {x for q, tab in prev.tables.items() if q not in cur.tables for x in tab}
    for r in requests:
        seqs = [q for q in cur.tables if q.split(".")[0] == r.rid and q not in prev.tables]
        if seqs and cur.step > r.arrival_step:
            waited.append(r.rid)
            reused |= {x for q in seqs for x in cur.tables[q]} & freed_before
page.checks([
    CheckResult(t("check_equal"), run.max_abs_diff <= 1e-3 and run.argmax_equal,
                t("check_equal_detail", n=run.n_checked, k=len(run.tokens), d=run.max_abs_diff, same=run.argmax_equal)),
    CheckResult(t("check_waste", bs=bs), worst_unused < bs,
                t("check_waste_detail", w=worst_unused, steps=len(run.snapshots))),
    CheckResult(t("check_invariants"), not run.invariant_errors,
                t("check_invariants_detail", steps=len(run.snapshots), e=len(run.invariant_errors),
                  first=(run.invariant_errors or ["—"])[0])),
    CheckResult(t("check_cow"), len(run.cow_copies) == want_cow,
                t("check_cow_detail", p=len(prompt.ids), bs=bs, c=len(run.cow_copies), w=want_cow, sh=shared_full)),
    CheckResult(t("check_reuse"), bool(reused) if waited else True,
                t("check_reuse_detail", w=", ".join(waited) or "—", r=len(reused)) if waited else t("check_reuse_none")),
])
page.try_this()
page.code(paged_generation.run_requests, PagedBatch, BlockManager.append_slots, BlockManager.fork)
page.sources()
page.finish()
