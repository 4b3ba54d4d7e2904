"""Counting tokens as the server counts them: ddtune has no tokenizer of its own.

``ServerCounter.start()`` asks the server's ``/tokenize`` (SGLang's, ``{"prompt": [texts],
"add_special_tokens": false}`` -> ``{"count": [n, ...]}``) once:

- where it answers (``mode == "tokenize"``), a text's tokens are the server's count of it, and a chat
  request's prompt tokens are the sum over its messages plus what the chat template adds per message,
  learnt from two calibration requests (one message, three messages) whose ``usage.prompt_tokens``
  the server reported. Nothing ddtune measures is ever sent to count it, so the server's prefix cache
  holds none of the measured prompts;
- where it does not (``mode == "probe"``), each count is a 1-token chat request
  (``usage.prompt_tokens``), and a text's tokens are estimated from the characters per token those
  requests showed. The measured prompts have then been prefilled once: ``probed`` says so, and the
  bench flushes the cache (``/flush_cache``) before it measures them.
"""

from __future__ import annotations

import math
import time

from backends.core import ServerError

_CALIBRATION = ("Count the tokens of this sentence, calibration {n}.", "Counted, calibration {n}.",
                "And of this one, calibration {n}, as well.")


class ServerCounter:
    def __init__(self, client) -> None:
        self.client = client
        self.mode: str | None = None      # "tokenize" or "probe", once started
        self.base = 0.0                   # tokenize mode: a chat request's tokens beyond its messages' ...
        self.per_message = 0.0            # ... and per message
        self.chars_per_token = 4.0        # probe mode: the estimate for a text on its own
        self.probes = 0                   # chat requests sent to count
        self.probed = False               # a prompt that is measured later was sent to count it

    async def start(self) -> None:
        if self.mode is not None:
            return
        got = await self._tokenize(["ddtune"])
        if got is None:
            self.mode = "probe"
            text = _CALIBRATION[0].format(n=time.time_ns())
            self.chars_per_token = max(1.0, len(text) / max(1, await self._probe([{"role": "user", "content": text}])))
            return
        n = time.time_ns()
        one = [{"role": "user", "content": _CALIBRATION[0].format(n=n)}]
        three = [*one, {"role": "assistant", "content": _CALIBRATION[1].format(n=n)},
                 {"role": "user", "content": _CALIBRATION[2].format(n=n)}]
        counts = await self._tokenize([m["content"] for m in three])
        p1, p3 = await self._probe(one), await self._probe(three)
        if counts is None:
            raise ServerError("/tokenize stopped answering while ddtune calibrated its token counts")
        self.per_message = ((p3 - sum(counts)) - (p1 - counts[0])) / 2
        self.base = p1 - counts[0] - self.per_message
        self.mode = "tokenize"

    async def texts(self, texts: list[str]) -> list[int]:
        await self.start()
        if self.mode == "tokenize":
            counts = await self._tokenize(texts)
            if counts is None:
                raise ServerError("/tokenize stopped answering", hint="is the server still up? 'ddtune status'")
            return counts
        return [math.ceil(len(t) / self.chars_per_token) for t in texts]

    async def messages(self, messages: list[dict]) -> int:
        await self.start()
        if self.mode == "tokenize":
            counts = await self.texts([str(m["content"]) for m in messages])
            return round(sum(counts) + self.base + self.per_message * len(messages))
        self.probed = True
        return await self._probe(messages)

    async def _tokenize(self, texts: list[str]) -> list[int] | None:
        answer = await self.client.post_json("/tokenize", {"prompt": texts, "add_special_tokens": False})
        counts = answer.get("count") if answer is not None else None
        if not isinstance(counts, list) or len(counts) != len(texts) or not all(
                isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 1 << 31 for c in counts):
            return None
        return counts

    async def _probe(self, messages: list[dict]) -> int:
        self.probes += 1
        result = await self.client.chat(messages, max_tokens=1)
        tokens = result.prompt_tokens
        if not result.ok or not isinstance(tokens, int) or isinstance(tokens, bool) or not 0 < tokens < 1 << 31:
            dropped = f" (dropped: {', '.join(result.dropped)})" if result.dropped else ""
            why = result.error or f"the response carried no usable usage.prompt_tokens{dropped}"
            raise ServerError(f"cannot count prompt tokens: {why}",
                              hint="ddtune counts prompt tokens with the server itself")
        return tokens
