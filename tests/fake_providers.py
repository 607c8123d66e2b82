"""A fake model-provider HTTP server for offline tests and benchmarks.

It speaks just enough of two wire protocols for the REAL SDKs to work against
``127.0.0.1``:

* OpenAI Chat Completions: ``POST /v1/chat/completions`` (and
  ``/chat/completions``), ``GET /v1/models``, vLLM's ``GET /health``. Point
  ``openai.OpenAI(base_url=fp.openai_base_url, api_key="x", max_retries=0)`` at it.
* OpenAI Responses: ``POST /v1/responses`` (and ``/responses``), same client. A
  :class:`Reply` becomes a ``response`` object: a ``reasoning`` output item when
  ``reasoning`` is set (its paragraphs, split at blank lines, are the ``summary_text``
  parts), then the ``message`` item with one ``output_text`` part; ``finish_reason``
  "length" / "content_filter" make the status ``incomplete`` with that
  ``incomplete_details.reason`` (``max_output_tokens`` / ``content_filter``). Errors
  have the Chat Completions error body. Recorded with ``protocol="openai-responses"``.
* Gemini ``generateContent``: ``POST /{v1beta,v1,v1alpha}/models/{model}:generateContent``.
  Point ``genai.Client(api_key="x", http_options=types.HttpOptions(base_url=fp.gemini_base_url))``
  at it.
* The batch APIs of both (OpenAI Files + Batches, Gemini batch jobs and Files), served by
  ``tests/fake_batches.py`` (see its docstring): each batched request takes the next behaviour
  as a synchronous one does, and is recorded with ``Recorded.batch_id`` set.

Each request consumes the next scripted behaviour (:meth:`FakeProvider.script`),
or the default one when the queue is empty. With :attr:`FakeProvider.count_prompt` set (a
callable ``Recorded -> int``, e.g. ``fake_tokens.prompt_tokens``), a reply's
``prompt_tokens`` is what it counts in the request body received, not the scripted number. Behaviours are :class:`Reply`,
:class:`Error`, :class:`Raw`, or a callable ``Recorded -> Reply | Error | Raw``.
Every routed request is recorded in :attr:`FakeProvider.requests` (header names
lower-cased). :meth:`FakeProvider.reset` empties the script and the record and sets the
default, so that one running server can serve many tests.

Facts about the SDKs, checked by ``tests/backends/test_fake_providers.py``
(openai 3.57, google-genai 3.6 with httpx2 installed, aiohttp not installed):

openai
    * ``max_retries=0`` disables retries; ``timeout=<seconds>`` on the client
      (or per call) gives ``openai.APITimeoutError``.
    * Non-standard message fields such as vLLM's ``reasoning_content`` /
      ``reasoning`` are kept by the pydantic model as extras: read them with
      ``msg.model_extra["reasoning_content"]`` or ``getattr(msg, "reasoning_content")``.
    * 429 -> ``openai.RateLimitError``, 5xx -> ``openai.InternalServerError``;
      both are ``openai.APIStatusError`` with ``.status_code`` and ``.response``
      (an ``httpx2.Response`` in openai 3.x), so Retry-After is
      ``exc.response.headers.get("retry-after")`` (the SDK itself also honours
      ``retry-after-ms`` when it retries).
    * Malformed 200 bodies are NOT wrapped in an ``openai.APIError``:
      ``Raw(b"not json")`` (JSON content type) raises ``json.JSONDecodeError``
      (a ``ValueError``), sync and async; with a non-JSON content type
      (``text/plain``) ``create()`` silently RETURNS the body as a ``str``; JSON of
      the wrong shape is accepted without validation (``ChatCompletion`` with
      ``choices=None`` etc.). Callers must check what they got.

google-genai
    * Paths: with a custom ``base_url`` and an API key the client posts to
      ``{base_url}/v1/models/{model}:generateContent`` (default api_version is
      ``v1`` in google-genai 3.x; ``HttpOptions(api_version=...)`` or env
      ``GOOGLE_GENAI_API_VERSION`` change it). All of v1/v1beta/v1alpha are served.
    * Timeout: ``types.HttpOptions(timeout=<int MILLISECONDS>)``, converted to
      seconds for the HTTP client (it also sends ``X-Server-Timeout``); also
      settable per call with ``GenerateContentConfig(http_options=HttpOptions(...))``.
      Expiry raises the HTTP library's ``ReadTimeout`` (``httpx2.ReadTimeout`` when
      the ``httpx2`` package is installed, as here, else ``httpx.ReadTimeout``),
      NOT a ``google.genai.errors.APIError``.
    * Retries: with ``HttpOptions.retry_options`` unset (the default) the client
      makes exactly ONE attempt (tenacity ``stop_after_attempt(1)``), so nothing
      needs disabling. ``retry_options=types.HttpRetryOptions(attempts=N,
      initial_delay=.., max_delay=.., http_status_codes=[...])`` turns retries on
      (default retryable codes 408, 429, 500, 502, 503, 504; attempts 0/1 = none).
    * 4xx -> ``google.genai.errors.ClientError``, 5xx -> ``ServerError`` (both
      ``errors.APIError`` with ``.code`` (int), ``.status`` (e.g.
      ``"RESOURCE_EXHAUSTED"``), ``.message``, ``.details`` (parsed JSON body)).
      Any non-200 status raises. ``exc.response`` is the raw HTTP response object:
      ``httpx2.Response`` here (``httpx.Response`` without httpx2; an
      ``aiohttp.ClientResponse`` for the async client if aiohttp is installed).
      All of them have case-insensitive ``.headers``, so Retry-After is
      ``exc.response.headers.get("retry-after")`` (guard: ``response`` may be None
      for errors not built from an HTTP reply).
    * Malformed 200 body (``Raw(b"not json")``, any content type) raises
      ``json.JSONDecodeError`` (a ``ValueError``), sync and async, not an APIError.
    * The thought part comes back as ``Part(thought=True, text=...)``; ``resp.text``
      skips thought parts; ``usage_metadata.thoughts_token_count`` carries the count.
    * Request bodies mix cases: ``inlineData: {"data", "mime_type"}`` and
      ``thinkingConfig: {"include_thoughts"}`` are sent snake_case (the API accepts both).
    * Keep the ``genai.Client`` referenced during a call: a temporary
      ``genai.Client(...).models.generate_content(...)`` is garbage-collected,
      closing its HTTP client mid-call (``RuntimeError: Cannot send a request, as
      the client has been closed.``).

Run as a process for benchmarks::

    python tests/fake_providers.py --port 0 --delay 0.2 --text '{"box":[1,2,3,4]}'

The first stdout line is the bound URL; it serves until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import itertools
import json
import re
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

import fake_batches

DEFAULT_TEXT = '{"box": [0.1, 0.1, 0.5, 0.5]}'
FAKE_MODEL_ID = "fake-model"


@dataclass
class Reply:
    """A successful completion."""

    text: str
    reasoning: str | None = None
    finish_reason: str = "stop"
    prompt_tokens: int = 11
    completion_tokens: int = 7
    reasoning_tokens: int = 0
    # the part of prompt_tokens a prompt cache served (OpenAI's prompt_tokens_details /
    # input_tokens_details.cached_tokens, Gemini's cachedContentTokenCount)
    cached_tokens: int = 0
    delay: float = 0.0
    logprobs: list | None = None
    # what the provider says it served: the response's ``model`` (default: the one asked
    # for; OpenAI answers with a dated snapshot) and OpenAI's ``system_fingerprint``
    served_model: str | None = None
    system_fingerprint: str | None = None
    headers: dict[str, str] = field(default_factory=dict)  # e.g. x-ratelimit-remaining-*


@dataclass
class Error:
    """An HTTP error reply; ``body`` None means a provider-shaped error body."""

    status: int
    body: dict | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Raw:
    """Any raw body (e.g. malformed JSON)."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"
    delay: float = 0.0


@dataclass
class Recorded:
    protocol: str  # "openai", "openai-responses" or "gemini"
    path: str
    headers: dict[str, str]  # lower-cased names
    body: dict
    model: str
    # set for a request that came in a batch: the batch's id (OpenAI ``batch_...``, Gemini
    # ``batches/...``) and the line's ``custom_id`` (Gemini: the file line's ``key``, or an
    # inlined request's ``metadata["key"]``)
    batch_id: str | None = None
    custom_id: str | None = None


Behaviour = Reply | Error | Raw | Callable[[Recorded], "Reply | Error | Raw"]

_OPENAI_PATHS = {"/v1/chat/completions", "/chat/completions"}
_RESPONSES_PATHS = {"/v1/responses", "/responses"}
_GEMINI_RE = re.compile(
    r"^/(?:v1|v1beta|v1alpha|v1beta1)/(?:models|tunedModels)/([^/:]+):generateContent$"
)

_OPENAI_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_denied",
    404: "not_found_error",
    408: "timeout",
    409: "conflict",
    422: "invalid_request_error",
    429: "rate_limit_exceeded",
}
_GEMINI_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_GEMINI_FINISH = {
    "stop": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
    "tool_calls": "STOP",
}


def _openai_error_body(status: int) -> dict:
    etype = _OPENAI_ERROR_TYPES.get(status, "server_error" if status >= 500 else "api_error")
    return {"error": {"message": f"fake error {status}", "type": etype, "code": etype}}


def _gemini_error_body(status: int) -> dict:
    gstatus = _GEMINI_STATUSES.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
    return {"error": {"code": status, "message": f"fake error {status}", "status": gstatus}}


def _openai_reply(reply: Reply, model: str, seq: int) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
        message["reasoning"] = reply.reasoning
    out = {
        "id": f"chatcmpl-fake-{seq}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.served_model or model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": reply.finish_reason,
                "logprobs": None if reply.logprobs is None else {"content": reply.logprobs},
            }
        ],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            "completion_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
            "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
        },
    }
    if reply.system_fingerprint is not None:
        out["system_fingerprint"] = reply.system_fingerprint
    return out


_RESPONSES_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


def _responses_reply(reply: Reply, model: str, seq: int) -> dict:
    """A Responses API ``response`` object (``POST /v1/responses``, not streamed)."""
    reason = _RESPONSES_INCOMPLETE.get(reply.finish_reason)
    status = "incomplete" if reason else "completed"
    output: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        paragraphs = [p for p in reply.reasoning.split("\n\n") if p] or [reply.reasoning]
        output.append({
            "id": f"rs_fake{seq}",
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": p} for p in paragraphs],
        })
    output.append({
        "id": f"msg_fake{seq}",
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": reply.text, "annotations": [],
                     "logprobs": []}],
    })
    now = int(time.time())
    return {
        "id": f"resp_fake{seq}",
        "object": "response",
        "created_at": now,
        "completed_at": now if status == "completed" else None,
        "status": status,
        "error": None,
        "incomplete_details": {"reason": reason} if reason else None,
        "instructions": None,
        "max_output_tokens": None,
        "model": reply.served_model or model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": reply.prompt_tokens,
            "input_tokens_details": {"cached_tokens": reply.cached_tokens,
                                     "cache_write_tokens": 0},
            "output_tokens": reply.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
        "metadata": {},
    }


def _gemini_reply(reply: Reply, model: str, seq: int) -> dict:
    parts: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        parts.append({"text": reply.reasoning, "thought": True})
    parts.append({"text": reply.text})
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": parts},
                "finishReason": _GEMINI_FINISH.get(
                    reply.finish_reason, reply.finish_reason.upper()
                ),
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": reply.prompt_tokens,
            "candidatesTokenCount": reply.completion_tokens,
            "thoughtsTokenCount": reply.reasoning_tokens,
            **({"cachedContentTokenCount": reply.cached_tokens} if reply.cached_tokens else {}),
            "totalTokenCount": reply.prompt_tokens
            + reply.completion_tokens
            + reply.reasoning_tokens,
        },
        "modelVersion": reply.served_model or model,
        "responseId": f"fake-{seq}",
    }


def echo_key(status: int = 401) -> Callable[[Recorded], Error]:
    """A behaviour: an error whose message echoes the key the request carried (the OpenAI
    ``Authorization: Bearer`` header, Gemini's ``x-goog-api-key``), as a provider's "Incorrect
    API key provided: sk-..." does."""

    def behave(rec: Recorded) -> Error:
        auth = rec.headers.get("authorization", "")
        key = auth.removeprefix("Bearer ").strip() or rec.headers.get("x-goog-api-key", "")
        msg = (f"Incorrect API key provided: {key}. You can find your API key at "
               "https://platform.openai.com/account/api-keys.")
        if rec.protocol == "gemini":
            body = {"error": {"code": status, "message": msg, "status": "UNAUTHENTICATED"}}
        else:
            body = {"error": {"message": msg, "type": "invalid_request_error",
                              "code": "invalid_api_key"}}
        return Error(status, body=body)

    return behave


def limited_once(then: Reply) -> Callable[[Recorded], Reply | Error]:
    """A behaviour: each request a 429 (Retry-After 0, no rate-limit headers) the first
    time its body comes, ``then`` when it comes again; so a run gets one 429 a call."""
    seen: set[str] = set()
    lock = threading.Lock()

    def behave(rec: Recorded) -> Reply | Error:
        key = json.dumps(rec.body, sort_keys=True)
        with lock:
            first = key not in seen
            seen.add(key)
        return Error(429, headers={"Retry-After": "0"}) if first else then

    return behave


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, address, handler, provider: FakeProvider):
        self.provider = provider
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request, client_address):
        with self._conns_lock:
            self._conns.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self._conns_lock:
            self._conns.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._conns_lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request, client_address):  # silence disconnect noise
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):
            return
        traceback.print_exc()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeProvider/1.0"
    # headers and body go out in two writes; without TCP_NODELAY, Nagle plus the client's
    # delayed ACK stall each reply by tens of milliseconds (measured: 160 -> ~119 req/s)
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format, *args):  # noqa: A002 - silence request logging
        pass

    # ---------------------------------------------------------------- helpers
    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj).encode(), headers=headers)

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _not_found(self) -> None:
        self._send_json(
            404,
            {
                "error": {
                    "code": 404,
                    "message": f"no route for {self.command} {self.path}",
                    "status": "NOT_FOUND",
                    "type": "not_found_error",
                }
            },
        )

    # ---------------------------------------------------------------- routes
    def do_GET(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        if path in ("/v1/models", "/models"):
            # vLLM's ModelCard (vllm/entrypoints/openai/engine/protocol.py): id, object,
            # created, owned_by, root (the weights it loaded), parent, max_model_len
            data = [{"id": FAKE_MODEL_ID, "object": "model", "created": 0, "owned_by": "fake"}]
            data += [{"id": name, "object": "model", "created": 0, "owned_by": "vllm",
                      "root": name, "parent": None, "max_model_len": 32768, **fields}
                     for name, fields in self.server.provider.models.items()]
            self.server.provider.models_calls += 1
            self._send_json(200, {"object": "list", "data": data})
        elif path == "/health":  # vLLM's server: 200 and an empty body once it serves
            self._send(200, b"")
        elif not fake_batches.route(self, "GET"):
            self._not_found()

    def do_DELETE(self) -> None:
        self._read_body()
        if not fake_batches.route(self, "DELETE"):
            self._not_found()

    def do_POST(self) -> None:
        raw = self._read_body()
        path = urlsplit(self.path).path
        if path in _OPENAI_PATHS:
            protocol = "openai"
        elif path in _RESPONSES_PATHS:
            protocol = "openai-responses"
        elif m := _GEMINI_RE.match(path):
            protocol = "gemini"
            gemini_model = unquote(m.group(1))
        else:
            if not fake_batches.route(self, "POST", raw):
                self._not_found()
            return
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("request body is not a JSON object")
        except ValueError as exc:
            self._send_error(protocol, Error(400, body=None), detail=str(exc))
            return
        model = str(body.get("model", "")) if protocol != "gemini" else gemini_model
        rec = Recorded(
            protocol=protocol,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            model=model,
        )
        provider = self.server.provider
        seq, behaviour, detail = provider._take(rec)
        if detail is not None:  # surface bugs in test callables as a 500
            self._send_error(protocol, behaviour, detail=detail)
            return
        provider._enter()
        try:
            if not provider._sleep(getattr(behaviour, "delay", 0.0)):
                self.close_connection = True  # server stopping: drop the request
                return
            if isinstance(behaviour, Reply):
                make = {"openai": _openai_reply, "openai-responses": _responses_reply,
                        "gemini": _gemini_reply}[protocol]
                self._send_json(200, make(behaviour, model, seq), headers=behaviour.headers)
            elif isinstance(behaviour, Error):
                self._send_error(protocol, behaviour)
            elif isinstance(behaviour, Raw):
                self._send(behaviour.status, behaviour.body, content_type=behaviour.content_type)
            else:
                self._send_error(protocol, Error(500), detail=f"bad behaviour {behaviour!r}")
        finally:
            provider._leave()

    def _send_error(self, protocol: str, err: Error, detail: str | None = None) -> None:
        self._send_json(err.status, _error_body(protocol, err, detail), headers=err.headers)


def _error_body(protocol: str, err: Error, detail: str | None = None) -> dict:
    if err.body is not None:
        return err.body
    body = (_gemini_error_body if protocol == "gemini" else _openai_error_body)(err.status)
    if detail:
        body["error"]["message"] = detail
    return body


class FakeProvider(fake_batches.BatchesMixin):
    """Threaded fake OpenAI (chat and responses) + Gemini server on 127.0.0.1 (see module docstring)."""

    _recorded_type = Recorded  # what fake_batches records batched requests as

    def __init__(self, default: Behaviour | None = None, *, port: int = 0):
        self.default: Behaviour = default if default is not None else Reply(DEFAULT_TEXT)
        self.requests: list[Recorded] = []
        self.in_flight = 0  # requests being answered now, and the most at once since reset
        self.max_in_flight = 0
        self._port = port
        self._queue: collections.deque[Behaviour] = collections.deque()
        self._lock = threading.Lock()
        self._seq = itertools.count(1)
        self._stop = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        # the models GET /v1/models lists as a vLLM server does (``serve``); kept by reset
        self.models: dict[str, dict[str, Any]] = {}
        self.models_calls = 0
        # counts each reply's prompt_tokens from the request body (None: the Reply's own)
        self.count_prompt: Callable[[Recorded], int] | None = None
        self._init_batches()  # batch_calls, batch_polls, ... (fake_batches.BatchesMixin)

    def serve(self, model: str, **fields: Any) -> FakeProvider:
        """List ``model`` in GET /v1/models, as a vLLM server lists what it serves
        (``root``: the weights it loaded, default the name; ``max_model_len``: 32768)."""
        self.models[model] = fields
        return self

    # ------------------------------------------------------------- scripting
    def script(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self._queue.extend(behaviours)

    def reset(self, default: Behaviour | None = None) -> None:
        """Forget the scripted behaviours and the recorded requests; set the default
        behaviour (``Reply(DEFAULT_TEXT)`` when ``default`` is None), as a new server has."""
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.max_in_flight = self.in_flight
            self.default = default if default is not None else Reply(DEFAULT_TEXT)
            self.count_prompt = None
        self._reset_batches()

    def _next(self) -> Behaviour:
        with self._lock:
            return self._queue.popleft() if self._queue else self.default

    def _take(self, rec: Recorded) -> tuple[int, Behaviour, str | None]:
        """Record ``rec`` and take its behaviour, calling a callable one: (sequence number,
        behaviour, None), or (seq, Error(500), why) when the callable raised."""
        seq = self._record(rec)
        behaviour = self._next()
        try:
            if callable(behaviour) and not isinstance(behaviour, Reply | Error | Raw):
                behaviour = behaviour(rec)
            if isinstance(behaviour, Reply) and self.count_prompt is not None:
                behaviour = dataclasses.replace(behaviour, prompt_tokens=self.count_prompt(rec))
        except Exception as exc:
            return seq, Error(500), f"behaviour raised {exc!r}"
        return seq, behaviour, None

    def _batch_line(self, rec: Recorded) -> tuple[int, Any]:
        """A batched request's answer, as the synchronous endpoint would give it, without its
        delay: (200, the reply's body) for a Reply, (status, provider-shaped error body) for an
        Error, (status, parsed JSON or text) for a Raw, (0, the behaviour) for any other."""
        seq, behaviour, detail = self._take(rec)
        if isinstance(behaviour, Reply):
            make = {"openai": _openai_reply, "openai-responses": _responses_reply,
                    "gemini": _gemini_reply}[rec.protocol]
            return 200, make(behaviour, rec.model, seq)
        if isinstance(behaviour, Error):
            return behaviour.status, _error_body(rec.protocol, behaviour, detail)
        if isinstance(behaviour, Raw):
            text = behaviour.body.decode("utf-8", "replace")
            try:
                return behaviour.status, json.loads(text)
            except ValueError:
                return behaviour.status, text
        return 0, behaviour

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _record(self, rec: Recorded) -> int:
        with self._lock:
            self.requests.append(rec)
            return next(self._seq)

    def _sleep(self, delay: float) -> bool:
        """Sleep ``delay`` seconds in small steps; False if stop() was called."""
        deadline = time.monotonic() + max(0.0, delay)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return not self._stop.is_set()
            if self._stop.wait(min(remaining, 0.05)):
                return False

    # ------------------------------------------------------------- lifecycle
    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeProvider not started")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    @property
    def gemini_base_url(self) -> str:
        return self.url

    def start(self) -> FakeProvider:
        if self._server is not None:
            return self
        self._stop.clear()
        self._server = _Server(("127.0.0.1", self._port), _Handler, self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="FakeProvider",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stop.set()
        server.shutdown()
        server.server_close()
        server.close_connections()
        if thread is not None:
            thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fake OpenAI/Gemini server on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument("--text", default=DEFAULT_TEXT, help="completion text")
    parser.add_argument("--reasoning", default=None, help="optional reasoning text")
    args = parser.parse_args(argv)

    done = threading.Event()

    def _on_signal(signum, frame):
        done.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    fp = FakeProvider(
        Reply(args.text, reasoning=args.reasoning, delay=args.delay), port=args.port
    ).start()
    print(fp.url, flush=True)
    try:
        while not done.wait(0.2):
            pass
    finally:
        fp.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
