"""Counting tokens as the server counts them, against the simulator: through /tokenize with the chat
template's cost learnt from two calibration requests, or, on a server without /tokenize, with 1-token
chat requests. A context built with either lands on the size the server then reports."""

import asyncio

from tests.workloads.sim_args import FAST, SPEC
from workloads.client.stream import StreamingClient
from workloads.prompts.context import ContextBuilder
from workloads.prompts.counting import ServerCounter
from workloads.prompts.sources import load_source

CONVERSATIONS = [
    [{"role": "user", "content": "Short."}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "What is a B-tree, in one line?"}],
    [{"role": "user", "content": "Plan a trip to Kyoto."}, {"role": "assistant", "content": "Day one: temples."},
     {"role": "user", "content": "Now make it cheaper, and keep the temples but skip the tea house."}],
]


def counted(url):
    async def go():
        async with StreamingClient(url) as client:
            counter = ServerCounter(client)
            predicted = [await counter.messages(c) for c in CONVERSATIONS]
            actual = [(await client.chat(c, max_tokens=1)).prompt_tokens for c in CONVERSATIONS]
            coding = load_source("coding")
            built = await ContextBuilder(coding, counter).build(coding.records[3], 3000, 0)
            sent = await client.chat(built.chat(), max_tokens=1)
            return counter, predicted, actual, built, sent.prompt_tokens
    return asyncio.run(go())


def test_tokenize_counts_match_what_the_server_reports(start_sim):
    sim = start_sim(*SPEC, *FAST)
    counter, predicted, actual, built, sent = counted(sim.url)
    assert counter.mode == "tokenize" and counter.probes == 2 and not counter.probed
    assert all(abs(p - a) <= 2 for p, a in zip(predicted, actual, strict=True)), (predicted, actual)
    assert abs(sent - 3000) <= 3 and abs(built.tokens - sent) <= 2


def test_without_tokenize_each_count_is_a_chat_request(start_sim):
    sim = start_sim(*SPEC, *FAST, "--sim-no-tokenize")
    counter, predicted, actual, built, sent = counted(sim.url)
    assert counter.mode == "probe" and counter.probed and counter.probes > 3
    assert predicted == actual  # the server's own count, exactly
    assert built.tokens == sent and abs(sent - 3000) <= 3
