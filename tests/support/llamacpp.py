"""A real llama.cpp server for tests and benchmarks, on a tiny model made at test time.

``write_tiny_model`` writes a GGUF file with random weights (llama
architecture, two layers, tiny dimensions) and a small SentencePiece-style
vocabulary: ``<unk>``, ``<s>``, ``</s>``, the 256 byte tokens, the FIM
control tokens (``<PRE>``, ``<SUF>``, ``<MID>``, ``<EOT>``, with their
``tokenizer.ggml.fim_*_token_id`` ids, so ``/infill`` works) and a few
word pieces. Its answers are gibberish, but sure gibberish (a peaked output
layer: each greedy token near probability 1), so the confidence bar shows
them; the tests that use it are about protocol, streaming, cancellation,
connections and token accounting. The
output rows of the control tokens and of the newline byte are zero, so
greedy decoding never ends an answer early: a request runs to its token
limit, long enough to be cancelled mid-stream.

``LlamaCppServer`` runs llama.cpp's own HTTP server (``llama-server``'s
code, through the ``xllamacpp`` wheel) in a subprocess on 127.0.0.1 with
``/slots`` and ``/metrics`` on, prompt caching on and two slots, and kills
it on ``stop()``. It answers ``Server: llama.cpp`` and speaks HTTP/1.1 only.

    with LlamaCppServer(tmp_path) as server:
        httpx.get(server.url + "/slots")

``python -m tests.support.llamacpp MODEL`` is the subprocess' entry point.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from tests.support.process import end_process

STARTUP_TIMEOUT = 60.0
#: llama-server's batch size here (its default is 2048); /infill cuts a
#: prompt to it without saying so
BATCH_TOKENS = 512
#: context per slot is CONTEXT_TOKENS / SLOTS
CONTEXT_TOKENS = 8192
SLOTS = 2

FIM_TOKENS = ("<PRE>", "<SUF>", "<MID>", "<EOT>")
WORDS = ("def", "return", "self", "if", "for", "in", "import", "class", "print", "x", "y")


def missing_reason() -> str | None:
    """Why the real llama.cpp server cannot run here, or None when it can."""
    try:
        import gguf  # noqa: F401
        import xllamacpp  # noqa: F401
    except ImportError as exc:
        return f"the xllamacpp/gguf test extra is not installed ({exc}); pip install -e '.[dev]'"
    return None


def write_tiny_model(path: Path, *, embedding: int = 512, layers: int = 2) -> Path:
    """Write the tiny random-weight llama GGUF model to ``path``."""
    import gguf
    import numpy as np

    writer = gguf.GGUFWriter(str(path), "llama")
    heads = 4
    writer.add_name("scopecache-tiny-random")
    writer.add_context_length(CONTEXT_TOKENS)
    writer.add_embedding_length(embedding)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(embedding * 2)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(embedding // heads)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)

    tokens: list[bytes] = []
    scores: list[float] = []
    types: list[int] = []

    def token(text: str, score: float, kind: int) -> int:
        tokens.append(text.encode())
        scores.append(score)
        types.append(kind)
        return len(tokens) - 1

    token("<unk>", 0.0, gguf.TokenType.UNKNOWN)
    bos = token("<s>", 0.0, gguf.TokenType.CONTROL)
    eos = token("</s>", 0.0, gguf.TokenType.CONTROL)
    newline = -1
    for byte in range(256):
        index = token(f"<0x{byte:02X}>", 0.0, gguf.TokenType.BYTE)
        if byte == 0x0A:
            newline = index
    fim = [token(text, 0.0, gguf.TokenType.CONTROL) for text in FIM_TOKENS]
    pieces = ["\u2581", *(chr(c) for c in range(33, 127)), *("\u2581" + w for w in WORDS)]
    for rank, piece in enumerate(pieces):
        token(piece, -float(rank), gguf.TokenType.NORMAL)

    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(bos)
    writer.add_eos_token_id(eos)
    writer.add_unk_token_id(0)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_uint32("tokenizer.ggml.fim_pre_token_id", fim[0])
    writer.add_uint32("tokenizer.ggml.fim_suf_token_id", fim[1])
    writer.add_uint32("tokenizer.ggml.fim_mid_token_id", fim[2])
    writer.add_uint32("tokenizer.ggml.eot_token_id", fim[3])

    rng = np.random.default_rng(16)
    vocab = len(tokens)

    def random(*shape: int) -> Any:
        return (rng.standard_normal(shape) * 0.05).astype(np.float32)

    ones = np.ones(embedding, dtype=np.float32)
    writer.add_tensor("token_embd.weight", random(vocab, embedding))
    writer.add_tensor("output_norm.weight", ones)
    # Scaled up: greedy decoding picks the same tokens, now with a probability
    # near 1, as a model sure of its answer (the confidence bar lets it through).
    output = random(vocab, embedding) * 40.0
    # Never predicted under greedy decoding: the end tokens, the FIM tokens, newline.
    for index in (0, bos, eos, newline, *fim):
        output[index] = 0.0
    writer.add_tensor("output.weight", output)
    for layer in range(layers):
        prefix = f"blk.{layer}"
        writer.add_tensor(f"{prefix}.attn_norm.weight", ones)
        for name in ("q", "k", "v", "output"):
            writer.add_tensor(f"{prefix}.attn_{name}.weight", random(embedding, embedding))
        writer.add_tensor(f"{prefix}.ffn_norm.weight", ones)
        writer.add_tensor(f"{prefix}.ffn_gate.weight", random(embedding * 2, embedding))
        writer.add_tensor(f"{prefix}.ffn_up.weight", random(embedding * 2, embedding))
        writer.add_tensor(f"{prefix}.ffn_down.weight", random(embedding, embedding * 2))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


class LlamaCppServer:
    """llama.cpp's HTTP server in a subprocess, on 127.0.0.1, over the tiny model."""

    def __init__(
        self,
        workdir: Path,
        *,
        batch: int = BATCH_TOKENS,
        embedding: int = 512,
        cache_reuse: int = 0,
        model: Path | None = None,
        threads: int = 1,
        slots: int = SLOTS,
        context: int = CONTEXT_TOKENS,
        port: int = 0,
    ) -> None:
        self.workdir = workdir
        #: the port on 127.0.0.1 to listen on (0: a free one)
        self.port = port
        self.batch = batch
        #: llama-server's ``--cache-reuse``: shortest cached chunk reused by shifting (0: off)
        self.cache_reuse = cache_reuse
        #: the tiny model's width: 512 generates slowly enough to cancel mid-stream
        self.embedding = embedding
        #: a real model file to serve instead of the tiny random one
        self.given_model = model
        self.model = model if model is not None else workdir / "tiny-random.gguf"
        self.threads = threads
        self.slot_count = slots
        self.context = context
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""
        self._client: httpx.Client | None = None

    def start(self) -> LlamaCppServer:
        """Write the model, start the server and wait until ``/health`` says ok."""
        if self.given_model is None and not self.model.exists():
            write_tiny_model(self.model, embedding=self.embedding)
        log = open(self.workdir / "llama-server.log", "wb")  # noqa: SIM115
        self.process = subprocess.Popen(
            [
                sys.executable, "-m", "tests.support.llamacpp",
                str(self.model), str(self.batch), str(self.cache_reuse),
                str(self.threads), str(self.slot_count), str(self.context), str(self.port),
            ],
            stdout=subprocess.PIPE,
            stderr=log,
            cwd=Path(__file__).resolve().parents[2],
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        log.close()
        assert self.process.stdout is not None
        line = self.process.stdout.readline().decode().strip()
        if not line.startswith("http://"):
            self.stop()
            raise RuntimeError(f"llama.cpp server did not start: {self.log_tail()}")
        self.url = line
        self._client = httpx.Client(base_url=self.url, timeout=10.0)
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            try:
                if self._client.get("/health").status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"llama.cpp server never became healthy: {self.log_tail()}")

    @property
    def context_per_slot(self) -> int:
        """Context tokens of each slot (what ``/props`` reports as ``n_ctx``)."""
        return self.context // self.slot_count

    def log_tail(self, lines: int = 20) -> str:
        """The end of the server's log."""
        path = self.workdir / "llama-server.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def slots(self) -> list[dict[str, Any]]:
        """The server's ``/slots`` answer."""
        assert self._client is not None
        answer: list[dict[str, Any]] = self._client.get("/slots").json()
        return answer

    def busy(self) -> bool:
        """Whether any slot is generating."""
        return any(slot.get("is_processing") for slot in self.slots())

    def metrics(self) -> dict[str, float]:
        """The server's Prometheus ``/metrics`` counters, by name."""
        assert self._client is not None
        values: dict[str, float] = {}
        for line in self._client.get("/metrics").text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.partition(" ")
                values[name.removeprefix("llamacpp:")] = float(value)
        return values

    def stop(self) -> None:
        """Kill the server."""
        if self._client is not None:
            self._client.close()
            self._client = None
        end_process(self.process)

    def __enter__(self) -> LlamaCppServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def serve(
    model: str,
    batch: int,
    cache_reuse: int = 0,
    threads: int = 1,
    slots: int = SLOTS,
    context: int = CONTEXT_TOKENS,
    port: int = 0,
) -> None:
    """Run llama.cpp's server on 127.0.0.1 (``port``; 0: any) until SIGTERM; print its URL."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = context
    params.n_batch = batch
    params.n_ubatch = batch
    params.n_parallel = slots
    params.endpoint_metrics = True
    params.endpoint_slots = True
    params.cache_prompt = True
    params.n_cache_reuse = cache_reuse
    params.warmup = False
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    server = xllamacpp.Server(params)
    print(server.listening_address, flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    del server


if __name__ == "__main__":
    numbers = [int(arg) for arg in sys.argv[2:]]
    serve(sys.argv[1], *numbers)
