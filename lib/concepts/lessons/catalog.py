"""Curated lessons: ordered paths through the pages for one class session (issue 14 §4).

A step names a page (its URL slug), the preset state to open it in (URL parameters), and the
name of its answer function in lib/concepts/lessons/answers.py; the question and "what to
notice" texts live in assets/text/lessons.toml as `<lesson>_<n>_q`, `<lesson>_<n>_notice` and
`<lesson>_<n>_answer` (a template filled with the answer's numbers). Links to a step are
`/lessons?lesson=<id>&step=<n>` (n from 1).

Every step has its planned minutes (a lesson's steps add up to its `minutes`). A step's URL state
is the SAME in every language (issue 33 item 3): the projector in English and a student's phone
in `?lang=id` open the same prompt and so show the same numbers. The Indonesian prompt is a step
of its own ("now the same in Indonesian", `ID_PROMPT`), identical in both languages, whose answer
sets it beside the English one. `CLASS90` is a 90-minute path made of steps of the three lessons
(their texts are shared through `Step.texts`, so a sentence is written once)."""
from __future__ import annotations

from dataclasses import dataclass, replace

DEFAULT_PROMPT = "The capital of France is"
ID_PROMPT = "Ibu kota Prancis adalah"            # the same question in Indonesian


@dataclass(frozen=True)
class Step:
    slug: str                                   # the page to open
    params: tuple[tuple[str, str], ...] = ()    # its URL state (name, value)
    answer: str = ""                            # answer function in answers.ANSWERS
    # parameters the answer needs that the page takes from its own texts when absent:
    # (param, text file, key), resolved in the page language by lib/ui/lessons.py
    text_defaults: tuple[tuple[str, str, str], ...] = ()
    minutes: int = 0                            # planned class time for this step
    texts: str = ""                             # lessons.toml key prefix when borrowed ("decoding_2")

    def param(self, name: str, default: str = "") -> str:
        return dict(self.params).get(name, default)


@dataclass(frozen=True)
class Lesson:
    id: str
    minutes: int
    icon: str
    steps: tuple[Step, ...]

    def key(self, n: int) -> str:
        """lessons.toml key prefix of step n (from 1): `<lesson>_<n>`, or the borrowed step's."""
        return self.steps[n - 1].texts or f"{self.id}_{n}"


LESSONS = (
    Lesson("decoding", 45, "🎛️", (
        Step("life-of-a-token", (("prompt", DEFAULT_PROMPT), ("T", "0.8"), ("k", "40"), ("p", "0.9"), ("b", "0")),
             "pipeline_kept", minutes=6),
        Step("temperature", (("prompt", DEFAULT_PROMPT), ("Ts", "0.5,1.0,2.0")), "temperature_entropy",
             minutes=7),
        Step("top-k-top-p", (("prompt", "Monday, Tuesday, Wednesday,"), ("p", "0.9")), "nucleus_size",
             minutes=5),
        Step("top-k-top-p", (("prompt", "Once upon a time, in a small village by the sea,"), ("p", "0.9")),
             "nucleus_size", minutes=5),
        Step("stable-softmax", (("prompt", DEFAULT_PROMPT), ("dtype", "fp16"), ("offset", "20")), "softmax_overflow",
             minutes=6),
        Step("logit-bias", (("prompt", "The capital of France is the city of"), ("words", "Paris"), ("ban", "1")),
             "ban_top", minutes=6),
        Step("beam-search", (("prompt", DEFAULT_PROMPT), ("beams", "4")), "beam_vs_greedy", minutes=6),
        # now the same in Indonesian: step 2's question on the Indonesian prompt, beside the English one
        Step("temperature", (("prompt", ID_PROMPT), ("Ts", "0.5,1.0,2.0")), "entropy_en_id", minutes=4),
    )),
    Lesson("speculative", 30, "🎲", (
        Step("speculative-acceptance", (("prompt", DEFAULT_PROMPT), ("k", "6")), "acceptance",
             minutes=8),
        Step("speculative-acceptance", (("prompt", DEFAULT_PROMPT), ("k", "14")), "acceptance",
             minutes=7),
        Step("speculative-acceptance", (("prompt", DEFAULT_PROMPT), ("k", "6"), ("wrong", "none")), "correction",
             minutes=7),
        Step("speculative-speed", (("prompt", DEFAULT_PROMPT), ("k", "14"), ("gammas", "2,4")), "tokens_per_call",
             minutes=8),
    )),
    Lesson("serving", 45, "🗄️", (
        Step("life-of-a-token", (("prompt", DEFAULT_PROMPT),), "cache_growth", minutes=5),
        Step("gqa", (), "kv_per_token", minutes=6),
        Step("sliding-window", (("t", "700"),), "window_reach", minutes=6),
        Step("prefix-caching", (("bs", "16"),), "prefix_hits",
             (("prompt", "prefix-caching", "default_a"), ("b", "prefix-caching", "default_b")), minutes=6),
        Step("prefix-caching", (("bs", "16"), ("edit", "1")), "prefix_hits",
             (("prompt", "prefix-caching", "default_a"), ("b", "prefix-caching", "default_b")), minutes=6),
        Step("model-memory", (("ctx", "4096"),), "kv_total", minutes=5),
        Step("paged-attention", (), "cow_copies",
             (("prompt", "paged-attention", "default_prompt"), ("req_b", "paged-attention", "req_b"),
              ("req_c", "paged-attention", "req_c"), ("req_d", "paged-attention", "req_d")), minutes=7),
        # now the same in Indonesian: step 1's cache on the Indonesian prompt, beside the English one
        Step("life-of-a-token", (("prompt", ID_PROMPT),), "cache_en_id", minutes=4),
    )),
)
_BASE = {x.id: x for x in LESSONS}


def _borrow(lesson_id: str, n: int, minutes: int) -> Step:
    """Step n of another lesson, with its texts, in a new time plan."""
    return replace(_BASE[lesson_id].steps[n - 1], texts=f"{lesson_id}_{n}", minutes=minutes)


# A ready 90-minute class: the pipeline, what speculative decoding buys, where the memory goes.
CLASS90 = Lesson("class90", 90, "🏫", (
    _borrow("decoding", 1, 8), _borrow("decoding", 2, 7), _borrow("decoding", 8, 5),
    _borrow("decoding", 3, 4), _borrow("decoding", 4, 4), _borrow("decoding", 6, 6), _borrow("decoding", 7, 7),
    _borrow("speculative", 1, 7), _borrow("speculative", 4, 7),
    _borrow("serving", 1, 6), _borrow("serving", 8, 4), _borrow("serving", 2, 5), _borrow("serving", 4, 6),
    _borrow("serving", 6, 7), _borrow("serving", 7, 7),
))
LESSONS = LESSONS + (CLASS90,)
BY_ID = {x.id: x for x in LESSONS}
