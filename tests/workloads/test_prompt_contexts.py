"""Real long contexts: whole units of real text (stdlib files, the set's own turns, Python's docs),
no filler, no unit twice, under 5% repeated word 8-grams, at the asked size as a counter counts it,
and distinct from the first unit on for different fronts. The builder is pure over its counter; here
the counter is the simulator's token rule (ceil(chars / 4) over a Qwen-style chat rendering), the
one the simulator's server applies (tests/workloads/test_bench_prompts_sim.py runs it for real)."""

import asyncio
import json
import math

import pytest

from workloads.prompts.context import REPO_HEAD, ContextBuilder, ContextError, as_is
from workloads.prompts.material import MAX_DUP, DupTracker, dup_share, stdlib_root
from workloads.prompts.records import PromptRecord, PromptSet, Turn
from workloads.prompts.sources import load_source


class SimRule:
    """The simulator's counts: a text is ceil(len / 4) tokens; a chat request counts its rendering."""

    def __init__(self) -> None:
        self.calls = 0

    async def texts(self, texts):
        self.calls += 1
        return [math.ceil(len(t) / 4) for t in texts]

    async def messages(self, messages):
        self.calls += 1
        rendered = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
        return math.ceil(len(rendered + "<|im_start|>assistant\n") / 4)


def build(prompts, record, target, front=0):
    return asyncio.run(ContextBuilder(prompts, SimRule()).build(record, target, front))


@pytest.mark.parametrize("target", [1024, 8192, 32768])
def test_a_coding_prompt_is_stdlib_files_then_its_task_at_the_size(target):
    coding = load_source("coding")
    record = coding.records[0]
    built = build(coding, record, target)
    assert abs(built.tokens - target) <= 2 and built.material == "stdlib"
    message = built.messages[-1].content
    assert message.startswith(REPO_HEAD) and message.endswith(record.prompt)  # the task, verbatim, last

    def block(name):
        return f"### {name}\n```python\n{(stdlib_root() / name).read_text(encoding='utf-8').strip()}\n```"

    whole = "\n\n".join(block(name) for name in built.units)  # whole real files, nothing added or left out
    context = message[len(REPO_HEAD) + 2:-len(record.prompt) - 2]
    assert context.startswith(whole) and len(set(built.units)) == len(built.units)
    head = context[len(whole):].removeprefix("\n\n")
    assert head and block(built.cut).startswith(head) and built.cut not in built.units  # one more, cut at a word
    assert dup_share(message) < MAX_DUP and built.dup_share == dup_share(message)


def test_fronts_differ_so_no_prompt_shares_a_prefix_with_another():
    coding = load_source("coding")
    builder = ContextBuilder(coding, SimRule())
    built = [asyncio.run(builder.build(coding.records[0], 4096, front)) for front in range(6)]
    assert len({b.front for b in built}) == 6
    heads = {b.messages[-1].content[len(REPO_HEAD):len(REPO_HEAD) + 200] for b in built}
    assert len(heads) == 6


def test_a_chat_set_takes_its_own_other_turns_with_their_replies():
    records = tuple(PromptRecord(f"q{i}", (Turn("user", f"Question {i}: how does {word} work in practice?"),),
                                 reply=f"Answer {i}: {word} works by steps one, two and three, {i} times.")
                    for i, word in enumerate("paxos raft gossip vector-clocks crdts leases quorum".split()))
    prompts = PromptSet("chat.jsonl", records)
    built = build(prompts, records[0], 200)
    roles = [t.role for t in built.messages]
    assert roles[-1] == "user" and built.messages[-1].content.endswith(records[0].prompt)
    assert "assistant" in roles and built.material == "turns"
    sent = json.dumps([t.content for t in built.messages])
    assert all(r.prompt not in sent for r in records if r.id not in built.units + (built.cut,) and r.id != "q0")
    assert abs(built.tokens - 200) <= 2


def test_story_and_small_sets_fall_back_to_pythons_docs():
    story = load_source("story")
    built = build(story, story.records[0], 2048)
    assert built.material == "docs" and all(u.startswith("python-docs:") for u in built.units)
    assert built.messages[-1].content.endswith(story.records[0].prompt) and abs(built.tokens - 2048) <= 2
    assert "Background notes" not in built.messages[-1].content


def test_a_prompt_already_past_the_size_is_sent_as_it_is():
    coding = load_source("coding")
    built = build(coding, coding.records[0], 20)
    assert built.messages == coding.records[0].messages and built.units == () and built.cut is None
    assert as_is(coding.records[0]).front == f"record:{coding.records[0].id}"


def test_a_prompt_that_would_repeat_itself_is_refused():
    loop = " ".join(["the keeper climbed the stairs to light the lamp again"] * 40)
    prompts = PromptSet("loop.jsonl", (PromptRecord("loop", (Turn("user", loop),)),))
    with pytest.raises(ContextError, match=r"repeats .* of its word 8-grams \(more than 5%\): refused"):
        build(prompts, prompts.records[0], 2000)


def test_dup_tracker_counts_repeated_8_grams():
    text = "a b c d e f g h i j"
    tracker = DupTracker(text)
    assert tracker.added_share("k l m n o p q r") == 0.0
    assert tracker.added_share(text) == 1.0  # every 8-gram of it is there already
    assert tracker.added_share("x y z w v u t s x y z w v u t s") == pytest.approx(1 / 9)  # repeats itself once
    assert dup_share(text + " " + text) == pytest.approx(3 / 13)  # 13 8-grams, the last 3 repeat the first 3
