"""The streaming client against the simulator over real sockets."""

import asyncio
import os
import signal

import httpx

from tests.workloads.sim_args import FAST, INLINE, SEPARATED, SPEC
from workloads.client.stream import StreamingClient
from workloads.grading.problems import load_problems, select_problems

FIB = select_problems(load_problems(), ["fib"])[0]


def ask(url, **kw):
    async def go():
        async with StreamingClient(url, api_key=kw.pop("api_key", None)) as client:
            return await client.chat([{"role": "user", "content": FIB.chat_prompt()}], **kw)
    return asyncio.run(go())


def test_separated_reasoning_timings_and_acceptance(start_sim):
    sim = start_sim(*SEPARATED)
    r = ask(sim.url, max_tokens=4000)
    assert r.ok, r.error
    assert r.finish_reason == "stop"
    assert r.reasoning_content and "<think>" not in r.content
    assert "def fib" in r.content and "```python" in r.content
    assert r.ttft_s is not None and r.ttft_s <= r.e2e_s
    assert len(r.itl_s) >= 2 and all(x >= 0 for x in r.itl_s)
    assert r.prompt_tokens and r.output_tokens > 10
    assert r.spec_verify_ct and r.spec_verify_ct < r.output_tokens
    assert r.acceptance == r.output_tokens / r.spec_verify_ct
    assert r.acceptance > 1.0


def test_inline_reasoning_stays_in_content(start_sim):
    sim = start_sim(*INLINE)
    r = ask(sim.url, max_tokens=4000)
    assert r.ok and r.reasoning_content is None
    assert r.content.count("</think>") == 1 and r.content.lstrip().startswith("<think>")


def test_generate_endpoint_reads_meta_info(start_sim):
    sim = start_sim(*SEPARATED)

    async def go():
        async with StreamingClient(sim.url) as client:
            return await client.generate(FIB.chat_prompt(), max_tokens=40)
    r = asyncio.run(go())
    assert r.ok, r.error
    assert r.finish_reason == "length" and r.output_tokens == 40
    assert r.content.startswith("<think>") and r.spec_verify_ct and r.prompt_tokens


def test_api_key_is_sent(start_sim):
    sim = start_sim(*SPEC, *FAST, "--api-key", "s3cret")
    denied = ask(sim.url, max_tokens=5)
    assert not denied.ok and "HTTP 401" in denied.error
    allowed = ask(sim.url, max_tokens=5, api_key="s3cret")
    assert allowed.ok, allowed.error


def test_abort_mid_stream_is_an_error_with_partial_text(start_sim):
    sim = start_sim(*SPEC, "--sim-step-ms", "20", "--reasoning-parser", "qwen3")

    async def go():
        first = asyncio.Event()
        async with StreamingClient(sim.url) as client:
            task = asyncio.ensure_future(client.chat([{"role": "user", "content": FIB.chat_prompt()}],
                                                     max_tokens=5000, extra={"ignore_eos": True},
                                                     on_tokens=lambda n, exact: first.set()))
            await asyncio.wait_for(first.wait(), 60)
            async with httpx.AsyncClient() as http:
                await http.post(sim.url + "/abort_request", json={"abort_all": True})
            return await asyncio.wait_for(task, 60)
    r = asyncio.run(go())
    assert not r.ok and "aborted" in r.error
    assert r.output_tokens >= 1 and (r.reasoning_content or r.content)


def test_server_killed_mid_stream_is_a_clear_error(start_sim):
    sim = start_sim(*SPEC, "--sim-step-ms", "20")

    async def go():
        first = asyncio.Event()
        async with StreamingClient(sim.url) as client:
            task = asyncio.ensure_future(client.chat([{"role": "user", "content": FIB.chat_prompt()}],
                                                     max_tokens=5000, extra={"ignore_eos": True},
                                                     on_tokens=lambda n, exact: first.set()))
            await asyncio.wait_for(first.wait(), 60)
            os.killpg(sim.pid, signal.SIGKILL)
            r = await asyncio.wait_for(task, 60)
            sim.proc.wait(timeout=30)  # a dying server can accept for a moment; once it is gone, nothing can
            again = await client.chat([{"role": "user", "content": "hi"}], max_tokens=5)
            return r, again
    r, again = asyncio.run(go())
    assert not r.ok and r.content and ("connection" in r.error or "ended" in r.error)
    assert not again.ok and again.unreachable and "cannot connect" in again.error
