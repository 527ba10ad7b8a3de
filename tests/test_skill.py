import pytest

from skillshelf import skill, text
from skillshelf.errors import SkillFormatError


def rules(parsed):
    return {f.rule for f in parsed.findings}


def test_parse_valid_roundtrip():
    text = "---\nname: my-skill\ndescription: Does things.\nmetadata:\n  skill-type: WORKFLOW\n  tags: a, b\n---\n\n# T\n\nbody\n"
    p = skill.parse(text, folder_name="my-skill")
    assert p.usable and p.findings == []
    s = p.skill
    assert s.skill_type == "WORKFLOW" and s.tags == ["a", "b"] and s.version == 1
    again = skill.parse(s.render(), folder_name="my-skill").skill
    assert again == s


def test_lenient_read_of_messy_file():
    text = ("\ufeff---\r\nname: My Skill\r\ndescription: >\r\n  folded\r\n  text\r\nskill-type: RULE\r\n"
            "tags: [x, y]\r\nweird: 1\r\n---\r\nbody\r\n")
    p = skill.parse(text, folder_name="other")
    assert p.usable
    r = rules(p)
    assert {"encoding.bom", "encoding.crlf", "name.case", "name.folder-mismatch", "keys.seed-top-level",
            "keys.unknown"} <= r
    assert p.skill.description == "folded text"
    assert p.skill.skill_type == "RULE" and p.skill.tags == ["x", "y"]
    assert "weird" in p.skill.extra


def test_fatal_cases_report_line_and_reason():
    p = skill.parse("---\nname: a\ndescription: bad: colon: here\n---\n")
    assert not p.usable and p.findings[-1].rule == "yaml.invalid" and p.findings[-1].line == 3
    assert "quote values that contain ': '" in p.findings[-1].message
    tab = skill.parse("---\nname: a\ndescription: d\n\tversion: 1\n---\n").findings[-1]
    assert tab.rule == "yaml.invalid" and "indent with spaces, not tabs" in tab.message and "': '" not in tab.message
    assert not skill.parse("no frontmatter").usable
    assert skill.parse("---\nname: a\n---\n").findings[-1].rule == "description.missing"
    assert skill.parse(b"\xff\xfe---").findings[-1].rule == "encoding.utf8"
    assert skill.parse("---\n- a\n- b\n---\n").findings[-1].rule == "frontmatter.not-mapping"
    with pytest.raises(SkillFormatError) as exc:
        skill.parse_strict("---\nname: a\n---\n", path="x/SKILL.md")
    assert "x/SKILL.md" in str(exc.value)


@pytest.mark.parametrize("name,ok", [("good-name", True), ("a", True), ("Bad", False), ("two--hy", False),
                                     ("-lead", False), ("trail-", False), ("sp ace", False), ("x" * 65, False),
                                     ("dots.no", False), ("ünï", False)])
def test_name_rules(name, ok):
    assert (skill.check_name(name) == []) is ok


def test_long_description_and_compat_are_errors():
    p = skill.parse(f"---\nname: a\ndescription: {'x' * 1100}\ncompatibility: {'y' * 600}\n---\n", folder_name="a")
    assert p.usable
    assert {"description.too-long", "compatibility.too-long"} <= rules(p)


def test_validate_for_write_is_strict():
    good = skill.Skill(name="ok-name", description="d", body="b", metadata={"skill-type": "RULE"})
    assert skill.validate_for_write(good, "ok-name") == []
    bad = skill.Skill(name="Bad Name", description="", body="b", metadata={"skill-type": "NOPE"})
    found = {f.rule for f in skill.validate_for_write(bad, "x")}
    assert {"name.case", "description.missing", "metadata.skill-type", "name.folder-mismatch"} <= found


def test_sections_and_headings_skip_code_fences():
    body = "# T\n\n## Solution\n\nfix\n```\n## not a heading\n```\n### Sub\n\nmore\n\n## Lessons Learned\n\n- v1\n"
    assert [h for _, h in text.headings(body)] == ["T", "Solution", "Sub", "Lessons Learned"]
    sol = text.section(body, "solution")
    assert sol.startswith("## Solution") and "### Sub" in sol and "Lessons" not in sol
    assert text.section(body, "missing") is None


def test_a_fence_closes_only_with_its_own_kind_at_least_as_long():
    """A ```` block holding a template with ``` blocks and headings is one block (CommonMark):
    its headings are not sections, and a section runs past it to the next real heading."""
    body = ("## Section Templates\n\n````markdown\n## Risks\n\n```yaml\nrisk: high\n```\n\n"
            "## Implementation Plan\n````\n\nAfter the template.\n\n~~~\n## tilde\n```\n## still code\n~~~\n\n"
            "## Validation Rules\n\nrules\n")
    assert [h for _, h in text.headings(body)] == ["Section Templates", "Validation Rules"]
    tpl = text.section(body, "Section Templates")
    assert tpl.rstrip().endswith("~~~") and "After the template." in tpl and "Validation" not in tpl
    assert text.section(body, "Risks") is None
    assert text.section(body, "validation rules") == "## Validation Rules\n\nrules"
    # ``` with a backtick in its info string is no fence; an unclosed fence runs to the end
    assert [h for _, h in text.headings("``` a`b\n## real\n")] == ["real"]
    assert text.headings("```\n## code\n") == []


def test_ttl_expiry():
    s = skill.Skill(name="a", description="d", metadata={"ttl-days": "10", "last-modified": "2026-01-01"})
    assert s.expires_on().isoformat() == "2026-01-11"
    assert skill.Skill(name="a", description="d").expires_on() is None


def test_every_problem_of_a_bad_name_is_named():
    """"Broken Skill" has capitals and a space: both are said, not only the first."""
    found = dict(skill.check_name("Broken Skill"))
    assert set(found) == {"name.case", "name.chars"}
    assert "spaces" in found["name.chars"]
    assert set(dict(skill.check_name("a_b--"))) == {"name.chars", "name.hyphens"}
    assert "underscores" in dict(skill.check_name("a_b"))["name.chars"]
    p = skill.parse("---\nname: Broken Skill\ndescription: d\n---\n", folder_name="Broken Skill")
    assert {"name.case", "name.chars"} <= rules(p)


def test_after_a_yaml_error_what_can_be_checked_is_still_checked():
    text = ("---\nname: Broken Skill\ndescription: fixes: things\nrequires: [git]\ntags: a, b\n"
            "metadata:\n  skill-type: RULE\n---\nbody\n")
    p = skill.parse(text, folder_name="broken-skill")
    assert not p.usable
    by = {f.rule: f for f in p.findings}
    assert {"name.case", "name.chars", "name.folder-mismatch", "keys.unknown", "keys.seed-top-level",
            "yaml.invalid"} <= set(by)
    assert by["name.case"].line == 2 and by["keys.unknown"].line == 4 and by["keys.seed-top-level"].line == 5
    # the reason the file cannot be used comes last, and is the only fatal finding
    assert p.findings[-1].rule == "yaml.invalid" and p.findings[-1].line == 3
    assert [f.severity for f in p.findings].count("fatal") == 1
    # a value the loader would read some other way is not guessed at
    p = skill.parse("---\nname: {a: b\ndescription: d\n---\n")
    assert not {"name.case", "name.chars"} & rules(p)
    # a quoted name is read; a missing description is said
    p = skill.parse("---\nname: 'My Tool'\nnote: : x\n---\n")
    assert {"name.case", "name.chars", "description.missing", "keys.unknown"} <= rules(p)
    assert p.findings[-1].severity == "fatal"


def test_a_missing_description_does_not_hide_the_other_findings():
    p = skill.parse("---\nname: Broken Skill\nweird: 1\n---\n", folder_name="broken-skill")
    assert not p.usable and p.findings[-1].rule == "description.missing"
    assert {"name.case", "name.chars", "name.folder-mismatch", "keys.unknown"} <= rules(p)
    with pytest.raises(SkillFormatError, match="no description"):
        skill.parse_strict("---\nname: Broken Skill\n---\n")


def test_a_frontmatter_never_closed_is_named_as_such():
    found = skill.parse("---\nname: a\ndescription: b\n\n# Body\n").findings
    assert [f.rule for f in found] == ["frontmatter.unclosed"] and "add a line '---'" in found[0].message
    assert [f.rule for f in skill.parse("# Body\n").findings] == ["frontmatter.missing"]


def test_fences_follow_indentation_as_commonmark_does():
    # a closing run indented four past its opening fence is the code's, not the fence's end
    tpl = "```markdown\n1. Run:\n\n    ```bash\n    make\n    ```\n\n## In the template\n```\n\n## Real\n"
    assert [h for _, h in text.headings(tpl)] == ["Real"]
    # a run indented four past the text before it (not in a list) is an indented code line
    ind = "A fence starts with:\n\n    ```\n\nThen text.\n\n## Lessons Learned\n\n- v1: a\n"
    assert [h for _, h in text.headings(ind)] == ["Lessons Learned"]
    # in a list item, an indented fence is a fence
    item = "1. Run:\n\n    ```bash\n    ## not a heading\n    ```\n\n## After\n"
    assert [h for _, h in text.headings(item)] == ["After"]
    assert text.fences("x\n```bash\nmake\n``` end\n".split("\n"))[1] == 1     # never closed
