"""The reference engine's token probabilities: where the corpus parts, it is unsure."""

from __future__ import annotations

from lsp_server.kit.reference.dialects import Ask, OpenAICompletions
from lsp_server.kit.reference.engine import CorpusEngine
from lsp_server.kit.reference.local_dialects import LlamaInfill, OllamaGenerate


def scoring() -> CorpusEngine:
    engine = CorpusEngine(CORPUS)
    engine.probabilities = True
    return engine


CORPUS = (
    "def area(width, height):\n    return width * height\n",
    "def volume(depth):\n    total = scale(depth, 2)\n",
    "def volume2(depth):\n    total = scale(depth, 3)\n",
)


def test_a_continuation_the_corpus_has_once_is_sure_throughout() -> None:
    prefix = "def area(width, height):\n    return "
    done = scoring().complete(prefix, probabilities=True)
    assert done.text == "width * height"
    assert done.probabilities == (1.0,) * len(done.tokens)


def test_the_token_where_two_copies_part_has_their_share() -> None:
    done = scoring().complete("    total = ", probabilities=True)
    assert done.text == "scale(depth, 2)"
    shares = dict(zip(done.tokens, done.probabilities, strict=True))
    assert shares["scale"] == 1.0 and shares[" 2"] == 0.5 and shares[")"] == 1.0


def test_without_asking_or_without_the_flag_there_are_none() -> None:
    assert scoring().complete("    total = ").probabilities == ()
    assert CorpusEngine(CORPUS).complete("    total = ", probabilities=True).probabilities == ()


def test_each_dialect_parses_the_ask_and_renders_the_probability() -> None:
    assert OpenAICompletions().parse({"prompt": "x", "logprobs": 1}).probabilities
    assert not OpenAICompletions().parse({"prompt": "x"}).probabilities
    assert LlamaInfill().parse({"input_prefix": "x", "n_probs": 1}).probabilities
    assert OllamaGenerate().parse({"prompt": "x", "logprobs": True}).probabilities
    ask = Ask(prefix="x", probabilities=True)
    assert b'"token_logprobs":[0.0]' in OpenAICompletions().chunk(ask, "a", 1.0)
    assert b'"completion_probabilities"' in LlamaInfill().chunk(ask, "a", 0.5)
    assert b'"logprobs"' in OllamaGenerate().chunk(ask, "a", 0.5)
    assert b"probabilit" not in LlamaInfill().chunk(ask, "a")
