from __future__ import annotations

from transport.prompt import FIM_TEMPLATES, fit_prompt, render_fim


def test_short_prompt_is_untouched() -> None:
    assert fit_prompt("def f():\n    ", "\nx = 1\n", 100, 100) == ("def f():\n    ", "\nx = 1\n")


def test_prefix_is_cut_from_its_start_at_a_line_boundary() -> None:
    prefix = "".join(f"line {i}\n" for i in range(100)) + "    ret"
    cut, _ = fit_prompt(prefix, "", 40, 0)
    assert len(cut) <= 40
    assert prefix.endswith(cut)
    assert cut.startswith("line ")  # a whole line, not a fragment of one


def test_suffix_is_cut_from_its_end_at_a_line_boundary() -> None:
    suffix = "".join(f"after {i}\n" for i in range(100))
    _, cut = fit_prompt("x", suffix, 1, 30)
    assert suffix.startswith(cut)
    assert cut.endswith("\n")
    assert len(cut) <= 30 + 1 - 1 + 1


def test_unused_suffix_share_goes_to_the_prefix() -> None:
    prefix = "a" * 200
    cut, suffix = fit_prompt(prefix, "b" * 10, 100, 100)
    assert suffix == "b" * 10
    assert len(cut) == 190


def test_unused_prefix_share_goes_to_the_suffix() -> None:
    cut, suffix = fit_prompt("p" * 10, "s" * 500, 100, 50)
    assert cut == "p" * 10
    assert len(suffix) == 140


def test_a_single_long_line_is_cut_mid_line_rather_than_dropped() -> None:
    cut, _ = fit_prompt("x" * 1000, "", 50, 0)
    assert cut == "x" * 50


def test_fim_templates_wrap_prefix_and_suffix() -> None:
    assert render_fim("starcoder", "A", "B") == "<fim_prefix>A<fim_suffix>B<fim_middle>"
    assert render_fim("qwen", "A", "B") == "<|fim_prefix|>A<|fim_suffix|>B<|fim_middle|>"
    assert render_fim("deepseek", "A", "B") == "<｜fim▁begin｜>A<｜fim▁hole｜>B<｜fim▁end｜>"
    assert render_fim("codellama", "A", "B") == "<PRE> A <SUF>B <MID>"
    assert all(t.stop for t in FIM_TEMPLATES.values())
