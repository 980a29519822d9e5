from __future__ import annotations

from transport.backend import ContextChunk
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


def test_suffix_first_where_the_template_was_trained_with_it() -> None:
    assert render_fim("starcoder", "A", "B", suffix_first=True) == (
        "<fim_prefix><fim_suffix>B<fim_middle>A"
    )
    assert render_fim("codellama", "A", "B", suffix_first=True) == "<PRE> <SUF>B <MID> A"
    # Qwen2.5-Coder and DeepSeek-Coder know only prefix-first
    assert render_fim("qwen", "A", "B", suffix_first=True) == render_fim("qwen", "A", "B")


def test_suffix_first_prompts_grow_only_at_their_end_while_typing() -> None:
    suffix = "\n    return total\n"
    before = render_fim("starcoder", "def f():\n    total = 1", suffix, suffix_first=True)
    after = render_fim("starcoder", "def f():\n    total = 12", suffix, suffix_first=True)
    assert after.startswith(before)


def test_suffix_first_keeps_other_files_ahead_of_everything() -> None:
    chunk = ContextChunk("lib.py", "X = 1\n")
    prompt = render_fim("starcoder", "A", "B", (chunk,), filename="m.py", repo_name="r",
                        suffix_first=True)
    assert prompt == "<repo_name>r<file_sep>lib.py\nX = 1\n<file_sep>m.py\n" + (
        "<fim_prefix><fim_suffix>B<fim_middle>A"
    )


def test_a_growing_prefix_keeps_its_cut_for_a_step_of_typing() -> None:
    base = "".join(f"line {i:03d} of the file\n" for i in range(400))
    typed = "".join(f"    value_{i} = compute({i})\n" for i in range(40))
    cuts = [fit_prompt(base + typed[:n], "", 2000, 0)[0] for n in range(len(typed))]
    moves = sum(not new.startswith(old) for old, new in zip(cuts, cuts[1:], strict=False))
    assert moves <= len(typed) // (2000 // 8) + 1
    assert all(len(c) <= 2000 and c.startswith(("line", "    ")) for c in cuts)
