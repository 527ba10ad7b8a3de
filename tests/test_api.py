import skillshelf


def test_public_api_is_pinned():
    assert skillshelf.__all__ == [
        "ConfigError", "ConflictError", "EmbedderError", "Finding", "Hit", "Library", "NotFoundError",
        "PolicyError", "SearchResult", "Skill", "SkillFormatError", "SkillRecord", "SkillshelfError",
        "StoreError", "ValidationError", "WriteError", "__version__",
    ]
    for name in skillshelf.__all__:
        assert hasattr(skillshelf, name), name


def test_errors_share_one_base():
    for name in ("ConfigError", "ConflictError", "EmbedderError", "NotFoundError", "PolicyError",
                 "SkillFormatError", "StoreError", "ValidationError", "WriteError"):
        assert issubclass(getattr(skillshelf, name), skillshelf.SkillshelfError)


def test_error_message_names_fix():
    e = skillshelf.NotFoundError("no skill named 'x'", suggestions=["xy"])
    assert "did you mean: xy" in str(e)
