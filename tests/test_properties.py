"""Property-based tests (hypothesis) for the code that reads text from strangers:
SKILL.md parse/render round trips, the lexical tokenizer, and name/path safety."""

from __future__ import annotations

import os
import string
import tempfile
import time
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import (  # noqa: E402
    HealthCheck,
    assume,
    configuration as _hyp_config,  # noqa: E402
    example,
    given,
    settings,
    strategies as st,  # noqa: E402
)

# hypothesis keeps caches in ./.hypothesis; keep the work tree clean
_hyp_config.set_hypothesis_home_dir(os.path.join(tempfile.gettempdir(), "skillshelf-hypothesis"))

from skillshelf import (
    skill as skillmod,  # noqa: E402
    text as textmod,  # noqa: E402
)
from skillshelf.errors import SkillshelfError  # noqa: E402
from skillshelf.evolution.evolve import check_new_name  # noqa: E402

# No example database: the suite leaves nothing behind in the work tree.
FAST = settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
LIGHT = settings(max_examples=40, deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])

# --- strategies ------------------------------------------------------------------------------------------

spec_names = st.from_regex(r"[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,3}", fullmatch=True)
# any text a caller could send, surrogates left out (they cannot be written as UTF-8 at all)
any_text = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=120)
tricky = st.sampled_from(["", " ", "---", "--- ", "\n---\n", ": ", "- x", "#", "# h", "## Lessons Learned", "```",
                          "&a", "*a", "!!python/object", "'", '"', "\t", "\r", "\r\n", "\x00", "\x1b[2J", "\u2028",
                          "\x85", "\ufeff", "[/bold]", "{", "}", "|", ">", "%", "@", "`", "...", "~", "null", "true",
                          "2024-13-45", "1e400", "99999999999999999999", "é", "\u202e", "\U0001F600"])
mixed_text = st.lists(st.one_of(tricky, any_text), max_size=8).map("".join)
meta_keys = st.one_of(st.sampled_from(skillmod.SEED_KEYS + ("status", "lineage", "derived-from", "origin")),
                      st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True))


def _description(s: str) -> str:
    return " ".join(s.split())[: skillmod.MAX_DESCRIPTION]


descriptions = st.one_of(any_text, mixed_text).map(_description).filter(bool)
# bodies as the writer hands them over (``evolve.check_body`` turns CR and CRLF into LF)
bodies = st.one_of(any_text, mixed_text).map(lambda s: s.replace("\r\n", "\n").replace("\r", "\n"))


meta_values = st.one_of(any_text, mixed_text)
field_text = any_text


@st.composite
def skills(draw) -> skillmod.Skill:
    name = draw(spec_names)
    meta = draw(st.dictionaries(meta_keys, meta_values, max_size=6))
    return skillmod.Skill(
        name=name, description=draw(descriptions), body=draw(bodies),
        license=draw(st.one_of(st.none(), st.sampled_from(["MIT", "Apache-2.0"]), field_text)) or None,
        compatibility=draw(st.one_of(st.none(), field_text.map(lambda s: s[:500]))) or None,
        allowed_tools=draw(st.one_of(st.none(), st.sampled_from(["Read Write", "Bash(git:*)"]))),
        metadata=meta)


# --- SKILL.md: render then parse ---------------------------------------------------------------------------

@FAST
@given(skills())
@example(skillmod.Skill(name="a", description="d", body="x", metadata={"tags": "a\u2028b"}))
@example(skillmod.Skill(name="a", description="d", body="---\nname: b\n---"))
def test_render_parses_back_equal_and_valid(sk):
    """Whatever passes the strict write check is read back as the same skill, without errors."""
    problems = skillmod.validate_for_write(sk, sk.name)
    assume(not problems)
    text = sk.render()
    parsed = skillmod.parse(text.encode("utf-8"), folder_name=sk.name)
    assert parsed.skill is not None, parsed.findings
    assert not parsed.errors(), parsed.errors()
    back = parsed.skill
    assert (back.name, back.description, back.license, back.compatibility, back.allowed_tools) == \
        (sk.name, sk.description, sk.license, sk.compatibility, sk.allowed_tools)
    assert back.metadata == sk.metadata
    assert back.body == sk.body.strip("\n")
    assert back.render() == text                      # a fixed point: rendering again changes nothing


def test_validate_for_write_refuses_what_does_not_read_back():
    sk = skillmod.Skill(name="a", description="d", body="x\ry")
    if not skillmod.validate_for_write(sk, "a"):
        assert skillmod.parse(sk.render(), folder_name="a").skill.body == sk.body


def test_render_keeps_a_nel_in_frontmatter():
    sk = skillmod.Skill(name="a", description="d", body="x", license="MIT\x85x", metadata={"tags": "a\x85b"})
    back = skillmod.parse(sk.render(), folder_name="a").skill
    assert (back.metadata, back.license) == (sk.metadata, sk.license)


@FAST
@given(skills())
def test_validate_for_write_never_raises(sk):
    assert isinstance(skillmod.validate_for_write(sk, sk.name), list)


# --- SKILL.md: parse is total ----------------------------------------------------------------------------------

@st.composite
def skill_files(draw) -> str:
    """Texts that look like SKILL.md files: frontmatter lines from tricky pieces, then a body."""
    keys = st.one_of(st.sampled_from(["name", "description", "metadata", "license", "version", "created",
                                      "ttl-days", "tags", "allowed-tools", "compatibility"]), mixed_text)
    scalar = st.one_of(mixed_text, st.from_regex(r"\d{1,5}-\d{1,2}-\d{1,2}", fullmatch=True),
                       st.sampled_from(["&a [*a]", "*a", "&x 1", "[1, [2, [3]]]", "{a: b}", "!!binary AAAA",
                                        "!!int 99999999999999999999", "!!float nan", "? x", "- x", "|\n  x",
                                        "'99999999999999999999'", "2024-13-45", "!!timestamp 2024-13-45"]))
    lines = draw(st.lists(st.tuples(st.sampled_from(["", "  ", "    "]), keys, scalar)
                          .map(lambda t: f"{t[0]}{t[1]}: {t[2]}"), max_size=8))
    opening = draw(st.sampled_from(["---\n", "---\r\n", "\ufeff---\n", "--- \n", ""]))
    closing = draw(st.sampled_from(["\n---\n", "\n---", "\n--- \n", "\n", ""]))
    return opening + "\n".join(lines) + closing + draw(st.one_of(any_text, mixed_text))


@LIGHT
@given(st.one_of(skill_files(), mixed_text, st.binary(max_size=300)))
@example("---\nname: x\ndescription: d\nmetadata:\n  created: 2024-13-45\n---\n")
@example("---\nname: x\ndescription: &a [*a]\n---\n")
@example("---\nname: x\ndescription: d\nmetadata:\n  version: '99999999999999999999'\n  ttl-days: '99999999999'\n---\n")
@example(b"---\nname: x\ndescription: \xff\n---\n")
def test_parse_never_raises(text):
    """Bad content is a finding, never an exception; a usable result always has a description."""
    parsed = skillmod.parse(text, folder_name="x")
    if parsed.skill is None:
        assert any(f.severity == "fatal" for f in parsed.findings)
    else:
        sk = parsed.skill
        assert sk.description.strip()
        # the derived values stay small and sane whatever the file says
        assert 1 <= sk.version <= 10 ** 12
        assert sk.ttl_days is None or 1 <= sk.ttl_days <= 10 ** 6
        sk.expires_on()
        textmod.headings(sk.body)
        textmod.section(sk.body, "Solution")


@pytest.mark.parametrize("value", ["!!int", "!!float", "!!bool"])
def test_parse_survives_an_explicitly_typed_empty_value(value):
    for text in (f"---\nname: x\ndescription: d\nv: {value}\n---\n",
                 f"---\nname: x\ndescription: d\nmetadata:\n  version: {value}\n---\n"):
        parsed = skillmod.parse(text, folder_name="x")
        assert parsed.skill is not None or any(f.severity == "fatal" for f in parsed.findings)


yaml_scalars = st.one_of(
    st.sampled_from(["plain", "'quoted: colon'", '"esc \\t tab"', "2024-01-31", "2024-13-45", "99999999999999999999",
                     "1e400", "-3", "0o17", "0x1F", "true", "no", "null", "~", ".nan", "|\n    block\n    text",
                     ">-\n    folded\n    text", "'it''s'", "[a, b]", "{k: v}", "&a anchored", "!!str 12", "é ü 日本",
                     "'[/bold]'", '"\\x1b[2J"', "'  spaced  '", '"\\u2028"']),
    st.from_regex(r"[A-Za-z0-9 _.,/()-]{1,30}", fullmatch=True).map(str.strip).filter(bool))


@st.composite
def valid_files(draw) -> str:
    meta = draw(st.dictionaries(meta_keys, yaml_scalars, max_size=5))
    meta_text = "".join(f"  {k}: {v}\n" for k, v in meta.items())
    return (f"---\nname: {draw(spec_names)}\ndescription: {draw(yaml_scalars)}\n"
            + (f"metadata:\n{meta_text}" if meta_text else "") + "---\n\n" + draw(bodies))


@FAST
@given(valid_files())
def test_parse_is_stable_under_render(text):
    """A file that parses with no errors renders to text that parses to the same skill."""
    parsed = skillmod.parse(text)
    assume(parsed.skill is not None and not parsed.errors())
    again = skillmod.parse(parsed.skill.render())
    assert again.skill is not None
    assert again.skill.name == parsed.skill.name
    assert again.skill.description == parsed.skill.description
    assert again.skill.metadata == parsed.skill.metadata


@LIGHT
@given(st.sampled_from(["", " x", " a#"]), st.sampled_from([" ", "\t", " \t", "# ", "#", "x "]),
       st.integers(100, 2000), st.sampled_from(["", "y", "#", " y #"]))
@example(" x", " ", 2000, "y")
def test_headings_are_linear(head, unit, n, tail):
    """A heading line made of thousands of spaces (and friends) is read at once (the naive
    regex takes ~18 s on '# x' + 2,000 spaces + 'y')."""
    line = "#" + head + unit * n + tail
    t0 = time.perf_counter()
    textmod.headings(line + "\n" + line)
    textmod.section(line, line)
    assert time.perf_counter() - t0 < 0.5


# --- the tokenizer --------------------------------------------------------------------------------------------

words = st.text(alphabet=st.sampled_from(string.ascii_letters + string.digits + "._-/ 'é日本ß"), max_size=60)


@FAST
@given(st.one_of(st.text(max_size=300), words, mixed_text))
@example("NextJsApi next.js api")
@example("\ud800 lone surrogate")
def test_tokenize_is_total_and_stable(text):
    toks = textmod.tokenize(text)
    assert all(isinstance(t, str) and t and not any(c.isspace() for c in t) for t in toks)
    every = textmod.tokenize(text, keep_stopwords=True)
    assert set(toks) <= set(every)
    assert textmod.tokenize(text) == toks                     # deterministic (the expansion cache)
    textmod.name_key(text)
    assert len(textmod.trim(text, 40)) <= 40
    # re-tokenising the tokens gives them back: indexing and querying agree. 'İ' lower-cases
    # to 'i' + a combining dot, which is not a word character (test_dotted_capital_i below).
    # (As a set: a digit beside a caseless letter, '0ਓ', is split again into its parts,
    # which are tokens already.)
    assume("\u0130" not in text)
    again = textmod.tokenize(" ".join(every), keep_stopwords=True)
    assert set(again) == set(every)
    assert all(t in textmod.tokenize(t, keep_stopwords=True) for t in every)


def test_dotted_capital_i_token_is_stable():
    every = textmod.tokenize("İstanbul", keep_stopwords=True)
    assert set(textmod.tokenize(" ".join(every), keep_stopwords=True)) == set(every)


@FAST
@given(st.from_regex(r"([A-Z][a-z]{1,6}){1,4}", fullmatch=True))
def test_camel_case_parts_are_tokens(word):
    parts = [p.lower() for p in __import__("re").findall(r"[A-Z][a-z]+", word)]
    toks = textmod.tokenize(word, keep_stopwords=True)
    assert all(p in toks for p in parts)
    assert all("".join(parts[i:i + 2]) in toks for i in range(len(parts) - 1))


# --- names and paths ------------------------------------------------------------------------------------------

path_pieces = st.sampled_from(["..", ".", "/", "\\", "~", "%2e", "%2f", "\x00", "\u2024", "\uff0e", "\u2215", "\uff0f",
                               "con", "history", "a", "-", "x", " ", "\n", "\u200b", "\u0455", "A", "1", "é", "*", "$"])
hostile_names = st.one_of(st.text(max_size=80), st.lists(path_pieces, max_size=10).map("".join),
                          st.from_regex(r"[a-z0-9.\-/]{1,70}", fullmatch=True))


@settings(max_examples=150, deadline=None, database=None)
@given(hostile_names)
@example("../../victim")
@example("..")
@example("/etc/passwd")
@example("a/b")
@example("\u2024\u2024")
def test_accepted_names_are_plain_path_components(name):
    try:
        out = check_new_name(name)
    except SkillshelfError:
        return
    assert out == os.path.basename(out) and out not in (".", "..") and out.strip() == out
    assert "/" not in out and "\\" not in out and "\x00" not in out and out.isascii()
    assert skillmod.NAME_RE.match(out) and len(out) <= skillmod.MAX_NAME
    base = Path("/nonexistent-base/workspace")
    for sub in ("", "history", "drafts", "locks"):
        p = Path(os.path.normpath(base / sub / out / "SKILL.md"))
        assert str(p).startswith(str(base / sub) + os.sep)
        assert p.parent.name == out


@FAST
@given(hostile_names)
def test_unsafe_names_in_files_are_reported(name):
    """A name read from a file that is not a plain spec name always comes with an error finding."""
    text = skillmod.Skill(name="placeholder", description="d").render().replace(
        "name: placeholder", "name: " + __import__("json").dumps(name), 1)
    parsed = skillmod.parse(text, folder_name="folder")
    if parsed.skill is None:
        return
    got = parsed.skill.name
    if not (skillmod.NAME_RE.match(got) and len(got) <= skillmod.MAX_NAME):
        assert any(f.rule.startswith("name.") and f.severity in ("error", "fatal") for f in parsed.findings)
