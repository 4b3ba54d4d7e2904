"""Pure parts of the simulator: performance model, answers, token rule, argument validation."""

import random

import pytest

from backends.core.paths import problems_file
from backends.sim import answers, model
from backends.sim.args import SGLangValueError, parse

PRESETS = ["b4-t4-w2048", "b8-t4-w2048", "b16-t4-w2048", "b12-t6-w2048", "b8-t4-nowindow"]


def test_documented_best_preset_at_4k_context_8_streams():
    speeds = {name: model.tokens_per_second(model.PRESETS[name], 4096, 8) for name in PRESETS}
    best = max(speeds, key=speeds.get)
    assert best == "b8-t4-w2048", speeds
    # non-trivial: the best is neither the smallest nor the largest budget
    assert speeds["b16-t4-w2048"] < speeds[best] and speeds["b4-t4-w2048"] < speeds[best]


def test_acceptance_grows_with_budget_and_topk_with_diminishing_returns():
    tau = lambda b, k: model.acceptance(model.Knobs("DDTREE", 16, b, k, 2048), 1024).tau  # noqa: E731
    assert tau(4, 4) < tau(8, 4) < tau(16, 4)
    assert (tau(16, 4) - tau(8, 4)) < (tau(8, 4) - tau(4, 4))
    assert tau(8, 1) < tau(8, 4)
    assert model.acceptance(model.Knobs(), 4096).tau == 1.0


def test_window_costs_acceptance_but_saves_time_at_long_context():
    w = model.Knobs("DDTREE", 16, 8, 4, 2048)
    nw = model.Knobs("DDTREE", 16, 8, 4, None)
    assert model.acceptance(w, 32768).tau < model.acceptance(nw, 32768).tau
    assert model.step_ms(w, 8, 8 * 32768) < model.step_ms(nw, 8, 8 * 32768)
    assert model.tokens_per_second(w, 32768, 8) > model.tokens_per_second(nw, 32768, 8)


def test_sampled_acceptance_matches_expected_mean_and_is_seeded():
    acc = model.acceptance(model.Knobs("DDTREE", 16, 8, 4, 2048), 2048)
    draws = [model.sample_accept(random.Random(7), acc) for _ in range(3)]
    assert draws == [model.sample_accept(random.Random(7), acc) for _ in range(3)]
    rng = random.Random(1)
    mean = sum(model.sample_accept(rng, acc) for _ in range(20000)) / 20000
    assert abs(mean - acc.tau) < 0.05


def test_model_table_prints_every_preset():
    text = model.table()
    for name in PRESETS:
        assert name in text


def test_problems_load_and_answers_have_wrong_draft_then_final_solution():
    problems = answers.load_problems(problems_file())
    assert len(problems) >= 3
    p = problems[0]
    ans = answers.compose(problems, f"Write `{p.function}` please", random.Random(3), 0.0)
    text = "".join(ans.tokens)
    think, _, final = text.partition("</think>")
    assert think.startswith("<think>") and "```python" in think and "return None" in think
    assert p.solution.strip() in final and ans.correct is True
    wrong = answers.compose(problems, f"Write `{p.function}` please", random.Random(3), 1.0)
    assert wrong.correct is False and p.solution.strip() not in "".join(wrong.tokens).partition("</think>")[2]


def test_generic_prompt_and_thinking_off():
    ans = answers.compose((), "tell me about rivers", random.Random(0), 0.1, thinking=False)
    assert ans.problem is None and ans.think_end == 0 and "<think>" not in ans.tokens


def test_token_rule_is_stable():
    assert answers.count_prompt_tokens("a" * 400) == 100
    assert answers.count_prompt_tokens("") == 1
    assert answers.tokenize("<think>\nhi there</think>") == ["<think>", "\n", "hi", " there", "</think>"]


@pytest.mark.parametrize("argv,message", [
    (["--speculative-algorithm", "DFLASH"],
     "DFLASH speculative decoding requires setting --speculative-draft-model-path."),
    (["--speculative-algorithm", "FOO"], "Unknown speculative algorithm name: FOO"),
    (["--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "d",
      "--speculative-draft-window-size", "8"],
     "--speculative-draft-window-size must be >= --speculative-num-draft-tokens (block_size). "
     "window_size=8, block_size=16."),
    (["--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "d",
      "--speculative-draft-window-size", "0"], "--speculative-draft-window-size must be positive, got 0."),
])
def test_sglang_validation_messages(argv, message):
    with pytest.raises(SGLangValueError) as info:
        parse(["--model-path", "m", *argv], environ={})
    assert str(info.value) == message


def test_ddtree_knobs_from_flags_and_env():
    a = parse(["--model-path", "m", "--speculative-algorithm", "ddtree", "--speculative-draft-model-path", "d",
               "--speculative-ddtree-budget", "8"], environ={"SGLANG_DDTREE_MAX_TOPK": "4"})
    assert (a.algorithm, a.budget, a.topk, a.block_size, a.ddtree_flavour) == ("DDTREE", 8, 4, 16, "pr29907")
    f = parse(["--model-path", "m", "--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "d",
               "--speculative-dflash-enable-ddtree", "--speculative-num-draft-tokens", "9"], environ={})
    assert (f.algorithm, f.budget, f.topk, f.ddtree_flavour) == ("DDTREE", 8, 6, "fork")


def test_old_release_spelling():
    a = parse(["--model-path", "m", "--sim-version", "0.5.11", "--speculative-algorithm", "DFLASH",
               "--speculative-draft-model-path", "d", "--speculative-dflash-draft-window-size", "1024"], environ={})
    assert a.window == 1024
    with pytest.raises(SystemExit) as info:
        parse(["--model-path", "m", "--speculative-dflash-draft-window-size", "1024"], environ={})
    assert info.value.code == 2
