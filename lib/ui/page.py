"""The page template every concept page uses, in the order CONCEPTS.md defines:

    intro (claim) -> controls -> figures -> What to notice -> Check it yourself
    -> Try this -> The code -> Sources

A page file only creates widgets and lays out figures; the numbers come from lib/.

    page = ConceptPage("temperature")
    T = page.state.number_slider("T", page.t("temp_label"), 0.05, 5.0, 1.0)
    ...
    page.figure(fig, "entropy_vs_T", data={...})
    page.notice(); page.checks(results); page.try_this(); page.code(fn1, fn2); page.sources()
    page.finish()

Teaching mode:
- `page.predict(name, question, options, answer, why)` asks a question in
  `st.container(key="predict-<name>")` and returns True once the visitor answered or clicked
  "Show me"; the page draws the figure that answers it only then. "What to notice", "Check it
  yourself" and "Try this" state, measure or foretell the answers, so while any question of the
  run is open they show only a line saying so (drawn in place at `finish()`). `?reveal=1`
  reveals all.
- `?view=present` (or the sidebar toggle) is the presenter view: large type, compact checks,
  no "The code" and no downloads (`page.present`).
"""
from __future__ import annotations

import functools
import inspect
import time

import streamlit as st

from lib.ui import estimate, live_class, predict_reveal, provenance, responsive, runtime
from lib.concepts import plot_marks
from lib.concepts.check_result import CONSISTENCY, ICONS, CheckResult
from lib.concepts.catalog import Concept, by_slug
from lib.model.tokens import EmptyPrompt, Prompt, encode_prompt
from lib.serving import memo
from lib.ui.boot import leave_pages_folder_mode
from lib.ui.download import figure_downloads
from lib.ui.i18n import SEPARATORS, load_texts, texts
from lib.ui.present import PRESENT, VIEW_PARAM, presenter_view  # noqa: F401 (re-exported)
from lib.ui.state import UrlState

PROMPT_PARAM = "prompt"
REVEAL_PARAM = "reveal"


@functools.lru_cache(maxsize=256)
def _source_of(fn) -> tuple[str, str]:
    """(module name, source text) of a lib function, read once per server: inspect.getsource
    tokenizes the whole file, on every run of every page otherwise."""
    return inspect.getmodule(fn).__name__, inspect.getsource(fn)


class ConceptPage:
    def __init__(self, slug: str, icon: str | None = None):
        """`slug` of a concept in lib/concepts/catalog.py; a teaching page that is not one of
        the concepts (e.g. life-of-a-token) passes its own `icon` instead."""
        leave_pages_folder_mode(page=True)
        self.slug = slug
        self.concept = by_slug(slug) if icon is None else Concept(0, slug, "teaching", icon)
        self.t = texts(slug)
        self.c = texts("common")
        self.notes: list[str] = []
        self.state = UrlState(slug, self.notes, self.c)
        self.state.claimed.update({VIEW_PARAM, REVEAL_PARAM} | live_class.PARAMS)
        self.present = presenter_view()      # its CSS is applied by the shell (lib/ui/shell.py)
        self.reveal_all = st.query_params.get(REVEAL_PARAM) == "1"
        self._n_fig, self._so_far = 0, {}
        self._held = predict_reveal.HeldBack()     # notice and checks, until the questions are answered
        self._t0 = time.perf_counter()
        st.title(f"{self.concept.icon} {self.t('title')}")
        self._notes_box = st.container()
        st.markdown(self.t("intro"))
        self._long_box = st.empty() if self.concept.long else None
        self._query0 = st.query_params.to_dict()          # the state this run was opened in
        if self._long_box is not None:
            self._long_box.caption(self._long_running())

    def _long_running(self) -> str:
        """The long-page caption, with what a new setting cost last time on this server (so a
        change's wait is known before it runs; lib/ui/estimate.py)."""
        s = estimate.change_seconds(self.slug)
        return self.c("long_running") + ("" if s is None else " " + self.c("long_estimate", s=s))

    # ---- model and prompt ------------------------------------------------------------------
    def model(self):
        return runtime.model()

    def prompt(self, default: str | None = None, max_tokens: int = 256, label: str | None = None,
               container=st) -> Prompt:
        """The prompt text box (URL-bound, shared name `prompt`). Empty -> a message and the
        page stops; over `max_tokens` -> truncated with a note."""
        preset = st.session_state.pop("preset_prompt", None)
        if preset is not None:
            st.session_state[self.state._key(PROMPT_PARAM)] = preset
        default_text = default if default is not None else self.c("default_prompt")
        text = self.state.text(PROMPT_PARAM, label or self.c("prompt_label"), default_text,
                               max_chars=8000, height=90, container=container)
        tok = self.model().tokenizer
        try:
            prompt = encode_prompt(tok, text, max_tokens)
        except EmptyPrompt:
            container.warning(self.c("empty_prompt"))
            self.finish()
            st.stop()
        if prompt.truncated_from:
            self.notes.append(self.c("note_truncated", n=prompt.truncated_from, cap=max_tokens))
        if text == default_text and self._untranslated(default_text):
            container.caption(self.c("english_default"))
        return prompt

    def _untranslated(self, text: str) -> bool:
        """Is `text` a default kept in English on purpose (identical in every language's texts)?"""
        if self.t.lang == "en":
            return False
        for name in (self.slug, "common"):
            table = load_texts(name)
            if any(v == text and table[self.t.lang].get(k) == text for k, v in table["en"].items()):
                return True
        return False

    def layer_select(self, default: int = 3, container=st) -> int:
        """URL-bound layer picker (`layer`), each option labelled local (with its window,
        read from the model) or global."""
        spec = self.model().spec

        def label(l):
            w = spec.windows[l]
            return self.c("layer_fmt", l=l, kind=self.c("kind_global") if w is None else self.c("kind_local", w=w))

        return self.state.select("layer", self.c("layer_label"), tuple(range(spec.n_layers)),
                                 min(default, spec.n_layers - 1), format_func=label, container=container)

    # ---- sections --------------------------------------------------------------------------
    def section(self, key: str) -> None:
        st.subheader(self.c(key))

    def controls(self):
        """The controls section: returns (left, right) columns, the wide one for the prompt.
        In the presenter view the controls fold into a closed expander, so the first screen
        shows the question and the key figure, not the widgets."""
        if self.present:
            return st.expander(f"⚙️ {self.c('controls')}", expanded=False).columns([3, 2])
        self.section("controls")
        return st.columns([3, 2])

    def figure(self, fig, name: str, data: dict[str, list] | None = None, caption: str | None = None,
               wide: bool = False, so_far: bool = False):
        """Show a Plotly figure with its HTML/CSV downloads. On the page its title is an HTML
        line above the chart that wraps at any width and its legend sits below the plot
        (lib/ui/responsive.py: phones); the downloaded HTML keeps Plotly's own title. The
        presenter view enlarges ticks, legends, hover labels and text marks and keeps the chart
        within a 1280x720 projector's height. `wide`: a chart that needs its width (a tree with
        a label at every node; any figure of 3+ panels side by side) keeps responsive.WIDE_PX on a
        phone and scrolls sideways in its box (two heatmaps side by side too). `so_far`: a computation's
        picture while it runs, redrawn in the caller's `st.empty()` (no downloads; counted once; keys
        of its own, so the page's figures keep theirs from run to run)."""
        if so_far:
            self._so_far[name] = self._so_far.get(name, 0) + 1
        else:
            self._n_fig += 1
        if not so_far or self._so_far[name] == 1:
            memo.figure_drawn()                    # this run's next computations queue behind blank pages
        n = f"{name}-so-far-{self._so_far[name]}" if so_far else self._n_fig
        own_top = fig.layout.margin.t
        lines = plot_marks.wrap_title(fig, plot_marks.TITLE_CHARS)     # the download's title wraps
        top = 10 + 22 * lines + 26 if lines > 1 else 50
        if lines > 1:        # pinned to the top, with room under it for subplot titles and top annotations
            fig.update_layout(title=dict(yref="container", y=1 - 12 / (fig.layout.height or 450), yanchor="top"))
        top = max(fig.layout.margin.t or 0, top)                       # a figure's own larger top margin stays
        fig.update_layout(margin=dict(l=10, r=10, t=top, b=10), separators=SEPARATORS[self.t.lang])
        fig.update_xaxes(separatethousands=True)                       # 1,400 / 1.400 on every numeric axis, not 1400
        fig.update_yaxes(separatethousands=True)
        wide = wide or responsive.needs_width(fig)                     # 3+ panels side by side
        shown, title = responsive.shown_figure(fig, self.present, own_top, wide)
        if title:
            st.markdown(title, unsafe_allow_html=True)
        box = st.container(key=f"{responsive.WIDE_KEY}{self.slug}-{n}") if wide else st
        if wide:
            shown.update_layout(dragmode=False)        # a finger's drag scrolls the box, not zooms
        box.plotly_chart(shown, width="stretch", key=f"{self.slug}.fig{n}",
                        config={"displaylogo": False, "responsive": True,
                                "toImageButtonOptions": {"filename": f"{self.slug}-{name}"}})
        if caption:
            st.caption(caption)
        if self.present or so_far:
            return
        figure_downloads(fig, f"{self.slug}-{name}", data,
                         {"html": self.c("download_html"), "csv": self.c("download_csv")},
                         key=f"{self.slug}.dl{self._n_fig}")

    def notice(self) -> None:
        self.section("what_to_notice")
        lines = "\n".join(f"- {s}" for s in self.t.list("notice_"))
        self._held.hold(self.c("answer_first_notice"), lambda: st.markdown(lines))
        from lib.ui import glossary

        line = glossary.page_terms_line(self.slug)
        if line:
            st.markdown(f"📖 **{self.c('terms_here')}** {line}")

    def predict(self, name: str, question: str, options, answer, why: str, format_func=str) -> bool:
        """Predict, then reveal (lib/ui/predict_reveal.py). Asks `question` with `options` in
        st.container(key="predict-<name>"); `answer` (one of the options) must come from this run.
        Returns True once the visitor answered or clicked "Show me" (or the URL says `reveal=1`;
        in a live class, once the lecturer revealed): draw the figure that answers it only then."""
        options = list(options)
        from lib.ui import live_predict

        in_class = live_predict.predict(self, name, question, options, answer, why, format_func)
        answered = in_class if in_class is not None else predict_reveal.ask(
            self, name, question, options, answer, why, format_func)
        if not answered:
            self._held.open.append(name)
        return answered

    def checks(self, results: list[CheckResult]) -> None:
        """Each check with its verdict, numbers, and what it was compared against; a
        consistency check (the app against itself) is labelled so. Compact in presenter view.
        Shown once this run's questions are answered (their checks measure the answers)."""
        self.section("check_it")
        self._held.hold(self.c("answer_first_checks"), lambda: self._draw_checks(results))

    def _draw_checks(self, results: list[CheckResult]) -> None:
        if self.present:
            n = sum(r.passed is True for r in results)
            st.markdown(" ".join(ICONS[r.verdict] for r in results)
                        + " " + self.c("checks_compact", n=n, total=len(results)))
            refs = list(dict.fromkeys(r.reference or self.c("reference_missing") for r in results))
            n_cons = sum(r.kind == CONSISTENCY for r in results)
            st.caption(self.c("checks_references", refs="; ".join(refs))
                       + (" " + self.c("checks_consistency", n=n_cons) if n_cons else ""))
            return
        st.caption(self.c("check_caption"))
        if self.slug != "model-check":
            st.caption(self.c("model_check_link"))
        for r in results:
            icon, word = ICONS[r.verdict], self.c(r.verdict)
            ref = self.c("compared_against", ref=r.reference or self.c("reference_missing"))
            kind = self.c("kind_consistency") if r.kind == CONSISTENCY else self.c("kind_proof")
            st.markdown(f"{icon} **{word}** — {r.name}  \n`{r.detail}`  \n🔎 *{ref}* · {kind}")

    def spec_checks(self, m, *which: str) -> list[CheckResult]:
        """The spec's values this page's engine runs on, against the model's config (read from
        the config, not the spec; lib/concepts/model_check/checks.config_results): `which` of
        "scale", "rope", "window". [] for a model whose config lacks Gemma 3's fields."""
        from lib.concepts.model_check.checks import config_results

        if not {"layer_types", "rope_parameters", "query_pre_attn_scalar"} <= set(m.config):
            return []
        return config_results(m.spec, m.config, texts("model-check"), which)

    def try_this(self) -> None:
        """Things to try next, each with its expected result: held back like the notice."""
        self.section("try_this")
        lines = "\n".join(f"{i}. {s}" for i, s in enumerate(self.t.list("try_"), 1))
        self._held.hold(self.c("answer_first_try"), lambda: st.markdown(lines))

    def code(self, *fns) -> None:
        if self.present:
            return
        self.section("the_code")
        st.caption(self.c("code_caption"))
        for fn in fns:
            module, source = _source_of(fn)
            with st.expander(f"`{module}.{fn.__name__}`"):
                st.code(source, language="python")

    def sources(self) -> None:
        self.section("sources")
        st.markdown("\n".join(f"- {s}" for s in self.t.list("source_")))

    def finish(self) -> None:
        """Drop unknown URL parameters and show every note collected on this run."""
        self.state.finish()
        live_class.publish(self.slug, self.state.claimed)     # the lecturer's page, to the class
        self._held.release()
        for note in self.notes:
            self._notes_box.info(note, icon="ℹ️")
        used = memo.run_provenance()
        for query in {estimate.state_key(self._query0): self._query0,      # as opened, and as left
                      estimate.state_key(st.query_params.to_dict()): st.query_params.to_dict()}.values():
            estimate.record(self.slug, query, used)
        if self._long_box is not None:       # what this run took, and what the next change may take
            ahead = estimate.change_seconds(self.slug)
            self._long_box.caption(self.c("long_done", s=time.perf_counter() - self._t0)
                                   + ("" if ahead is None else " " + self.c("long_estimate", s=ahead)))
        self.cached_caption()

    def cached_caption(self) -> None:
        """Say when and where this run's shared results were computed (lib.ui.provenance)."""
        provenance.show()
