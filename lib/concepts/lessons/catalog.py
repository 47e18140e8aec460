"""Curated lessons: ordered paths through the pages for one class session (issue 14 §4).

A step names a page (its URL slug), the preset state to open it in (URL parameters), and the
name of its answer function in lib/concepts/lessons/answers.py; the question and "what to
notice" texts live in assets/text/lessons.toml as `<lesson>_<n>_q`, `<lesson>_<n>_notice` and
`<lesson>_<n>_answer` (a template filled with the answer's numbers). Links to a step are
`/lessons?lesson=<id>&step=<n>` (n from 1)."""
from __future__ import annotations

from dataclasses import dataclass

DEFAULT_PROMPT = "The capital of France is"


@dataclass(frozen=True)
class Step:
    slug: str                                   # the page to open
    params: tuple[tuple[str, str], ...] = ()    # its URL state (name, value)
    answer: str = ""                            # answer function in answers.ANSWERS
    # parameters the answer needs that the page takes from its own texts when absent:
    # (param, text file, key), resolved in the page language by lib/ui/lessons.py
    text_defaults: tuple[tuple[str, str, str], ...] = ()

    def param(self, name: str, default: str = "") -> str:
        return dict(self.params).get(name, default)


@dataclass(frozen=True)
class Lesson:
    id: str
    minutes: int
    icon: str
    steps: tuple[Step, ...]


LESSONS = (
    Lesson("decoding", 45, "🎛️", (
        Step("life-of-a-token", (("prompt", DEFAULT_PROMPT), ("T", "0.8"), ("k", "40"), ("p", "0.9"), ("b", "0")),
             "pipeline_kept"),
        Step("temperature", (("prompt", DEFAULT_PROMPT), ("Ts", "0.5,1.0,2.0")), "temperature_entropy"),
        Step("top-k-top-p", (("prompt", "Monday, Tuesday, Wednesday,"), ("p", "0.9")), "nucleus_size"),
        Step("top-k-top-p", (("prompt", "Once upon a time, in a small village by the sea,"), ("p", "0.9")),
             "nucleus_size"),
        Step("stable-softmax", (("prompt", DEFAULT_PROMPT), ("dtype", "fp16"), ("offset", "20")), "softmax_overflow"),
        Step("logit-bias", (("prompt", "The capital of France is the city of"), ("words", "Paris"), ("ban", "1")),
             "ban_top"),
        Step("beam-search", (("prompt", DEFAULT_PROMPT),), "beam_vs_greedy"),
    )),
    Lesson("speculative", 30, "🎲", (
        Step("speculative-acceptance", (("prompt", DEFAULT_PROMPT), ("k", "6")), "acceptance"),
        Step("speculative-acceptance", (("prompt", DEFAULT_PROMPT), ("k", "14")), "acceptance"),
        Step("speculative-acceptance", (("prompt", DEFAULT_PROMPT), ("k", "6"), ("wrong", "none")), "correction"),
        Step("speculative-speed", (("prompt", DEFAULT_PROMPT), ("k", "14"), ("gammas", "2,4")), "tokens_per_call"),
    )),
    Lesson("serving", 45, "🗄️", (
        Step("life-of-a-token", (("prompt", DEFAULT_PROMPT),), "cache_growth"),
        Step("gqa", (), "kv_per_token"),
        Step("sliding-window", (("t", "700"),), "window_reach"),
        Step("prefix-caching", (), "prefix_hits",
             (("prompt", "prefix-caching", "default_a"), ("b", "prefix-caching", "default_b"))),
        Step("prefix-caching", (("edit", "1"),), "prefix_hits",
             (("prompt", "prefix-caching", "default_a"), ("b", "prefix-caching", "default_b"))),
        Step("model-memory", (("ctx", "4096"),), "kv_total"),
        Step("paged-attention", (), "cow_copies",
             (("prompt", "paged-attention", "default_prompt"), ("req_b", "paged-attention", "req_b"),
              ("req_c", "paged-attention", "req_c"), ("req_d", "paged-attention", "req_d"))),
    )),
)
BY_ID = {x.id: x for x in LESSONS}
