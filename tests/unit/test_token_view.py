"""The streamed-generation view: per-stage records of one step and the hover text built from them."""
import torch

from lib.decoding.sampling import SamplingConfig, run_pipeline
from lib.decoding.step_record import describe_step
from lib.ui.token_view import steps_table, tokens_html

LABELS = {"model": "model", "final": "final", "rank": "rank", "kept": "kept",
          "stage_temperature": "after T", "stage_top_k": "top-k", "stage_bias": "bias"}


class Tok:
    def decode(self, ids):
        return "".join(f" w{i}" for i in ids)

    def convert_ids_to_tokens(self, i):
        return f"w{i}"


def step():
    x = torch.tensor([2.0, 1.0, 0.5, 0.0, -1.0, -2.0])
    res = run_pipeline(x, SamplingConfig(0.5, top_k=2, bias=((3, 3.0),)))
    return describe_step(x, res, 3, top_n=2)


def test_step_records_every_stage_and_the_chosen_token():
    s = step()
    assert [v.name for v in s.stages] == ["input", "bias", "temperature", "top_k"]
    assert s.stage("top_k").kept == 2 and s.kept == 2
    alt_ids = [i for i, _, _ in s.alternatives]
    assert 3 in alt_ids and alt_ids[0] == 3                       # biased token is now the most likely
    j = alt_ids.index(3)
    assert s.stages[0].alt_probs[j] < s.stages[1].alt_probs[j]   # the bias raised it
    assert s.rank == 3 and 0 < s.stage("top_k").kept_mass <= 1


def test_hover_text_shows_the_stage_chain_and_kept_counts():
    html = tokens_html(Tok(), "prompt <b>", [step()], LABELS)
    assert "prompt &lt;b&gt;" in html                              # escaped
    assert "kept: top-k 2" in html and "bias" in html and "after T" in html and "▶" in html


def test_table_has_a_row_per_step_and_kept_columns():
    cols = steps_table(Tok(), [step(), step()], LABELS)
    assert cols["kept: top-k"] == [2, 2] and len(cols["final"]) == 2


def test_numbers_follow_the_page_language_when_a_writer_is_given():
    from lib.ui.i18n import format_number

    def fmt(v, spec):
        return format_number(v, spec, "id")

    step_ = step()
    tip = tokens_html(Tok(), "", [step_], LABELS, fmt=fmt).split('title="')[1].split('"')[0]
    assert f"final {format_number(step_.prob, '.3f', 'id')}," in tip and "0." not in tip
    cols = steps_table(Tok(), [step_], LABELS, fmt=fmt)
    assert cols["final"] == [format_number(step_.prob, ".4f", "id")] and cols["kept: top-k"] == ["2"]
