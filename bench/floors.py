"""`python -m bench --only floors`: the least time this machine needs for issue 29's long runs.

Issue 29 asks a timing sweep or a run over 1,000 tokens to complete within 10 s for one student.
Three of them are far over it in `--explore` (attention-sinks with a new window 50-62 s,
speculative-speed with n = 48 85 s, chunked-prefill with L = 512 23 s). This topic asks whether any
code could meet it on this machine: from the arithmetic each experiment cannot skip and what this
machine was measured to do, a lower bound ("floor") on its time, with everything else left out
(attention scores, norms, the page, the other policies). A floor over 10 s means the goal needs a
smaller experiment or a faster machine, not faster code.

- `floor_matmul_gflops`: this machine's float32 matrix product rate on all cores, the best over
  a few shapes the model's forwards use (rows x 640 x columns) and repeats, in GFLOP/s.
- `floor_decode_step_ms`: one decoding step of one sequence (a token through the model and the LM
  head), the shortest of its repeats: what plain decoding costs per token at least.
  Both take the machine's best (bench.common.best_time), not a median: a slow spell of this VM
  (it has them: 3x for minutes) must not raise a lower bound. Other work on the machine does
  (a test suite running beside it: a 356 ms step), so the load average is reported with them:
  a floor is a bound only from a quiet machine.
- Each floor counts 2 FLOPs per weight per token for the layers' matrices (read from the loaded
  engine's weights) and for the LM head's vocabulary matrix where the experiment needs every
  token's logits; a step that decodes costs at least one decoding step (every weight is read).
"""
from __future__ import annotations

import inspect
import os

import torch

from bench.common import best_time
from lib.concepts.chunked_prefill.real_schedule import run_schedules
from lib.concepts.speculative_speed.timed_runs import REPEATS as SPEC_REPEATS

GOAL_S = 10.0
SINKS_TOKENS = 4096          # attention-sinks' default text length (CONCEPTS.md asks for >= 4,000 tokens)
SINKS_POLICIES_OF_W = 2      # its default policies that read the window W: "window" and "sinks 4" (dense does not)
SPEC_TOKENS = 48             # speculative-speed's largest n
CHUNKED_PROMPT = 512         # chunked-prefill's largest L ...
CHUNKED_CHUNK = 32           # ... prefilled in chunks of its default size
# its real schedule (real_schedule.run_schedules, the page's call): `repeats` passes of both policies,
# each `before` decoding steps, the prompt (one step, or one per chunk), then `after` steps
_SCHEDULE = {k: p.default for k, p in inspect.signature(run_schedules).parameters.items()}
CHUNKED_REPEATS = _SCHEDULE["repeats"]
CHUNKED_STEPS = sum(_SCHEDULE["before"] + n + _SCHEDULE["after"] for n in (1, -(-CHUNKED_PROMPT // CHUNKED_CHUNK)))
SHAPES = ((512, 640, 8192), (128, 640, 2048), (2048, 640, 2048))   # (rows, hidden, columns)


def matmul_gflops(repeat: int = 5) -> float:
    """The best float32 product rate over SHAPES, GFLOP/s (all cores)."""
    best = 0.0
    for m, k, n in SHAPES:
        a, b = torch.randn(m, k), torch.randn(k, n)
        s = best_time(lambda: torch.mm(a, b), repeat=repeat, warmup=2)
        best = max(best, 2 * m * k * n / s / 1e9)
    return best


def matrix_weights(engine) -> tuple[int, int]:
    """(weights of every layer's matrix products, weights of the LM head), from the engine."""
    body = sum(w.w_qkv.numel() + w.wo.numel() + w.w_gate_up.numel() + w.w_down.numel() for w in engine.layers)
    return body, engine.spec.vocab * engine.spec.hidden


def decode_step_ms(engine, prompt_tokens: int = 20, steps: int = 16) -> float:
    """The fewest milliseconds of one token through the model and the LM head (one sequence)."""
    cache = engine.new_cache(1, prompt_tokens + steps + 8)
    engine.forward(torch.arange(prompt_tokens)[None] % engine.spec.vocab, cache, logits="none")
    token = torch.tensor([[1]])
    return 1000 * best_time(lambda: engine.forward(token, cache), repeat=steps, warmup=2)


def floors(body: int, head: int, gflops: float, step_ms: float) -> dict:
    """The three long runs' floors in seconds (see the module docstring)."""
    per_token_all = 2 * (body + head)                  # FLOPs of a token whose logits are needed
    per_token_body = 2 * body                          # ... of a prompt token (no logits)
    return {
        "floor_attention_sinks_new_window_s": SINKS_POLICIES_OF_W * SINKS_TOKENS * per_token_all / (gflops * 1e9),
        "floor_speculative_speed_n48_s": (1 + SPEC_REPEATS) * SPEC_TOKENS * step_ms / 1000,   # plain decoding only
        "floor_chunked_prefill_l512_s": CHUNKED_REPEATS * (CHUNKED_STEPS * step_ms / 1000
                                                           + 2 * CHUNKED_PROMPT * per_token_body / (gflops * 1e9)),
    }


def measure(model) -> dict:
    eng = model.engine
    body, head = matrix_weights(eng)
    gflops, step = matmul_gflops(), decode_step_ms(eng)
    out = {"floor_matmul_gflops": round(gflops, 1), "floor_decode_step_ms": round(step, 1),
           "floor_layer_matrix_weights": body, "floor_head_weights": head, "floor_goal_s": GOAL_S,
           "floor_load_avg_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None}
    out.update({k: round(v, 1) for k, v in floors(body, head, gflops, step).items()})
    return out
