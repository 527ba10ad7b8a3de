"""Tokens of a team library (in a real PostgreSQL) and the roles they carry."""

from __future__ import annotations

import pytest

from skillshelf.access import (
    NEEDS,
    ROLES,
    ForbiddenError,
    allows,
    check_role,
    needs,
    require,
)
from skillshelf.errors import (
    ConflictError,
    NotFoundError,
    SkillshelfError,
    StoreError,
    ValidationError,
)


@pytest.fixture
def pg(pg_url):
    from skillshelf.store.postgres import PgStore

    st = PgStore(pg_url)
    yield st
    st.close()


@pytest.fixture
def tokens(pg):
    from skillshelf.store.tokens import Tokens

    return Tokens(pg)


def test_a_new_token_is_shown_once_and_stored_as_its_hash(tokens, pg):
    import hashlib

    tok = tokens.add("alice", "curator")
    assert isinstance(tok, str) and len(tok) >= 43 and tok.isascii()
    assert tokens.add("bob", "reader") != tok
    rows = pg.fetchall("SELECT * FROM tokens")
    assert not any(tok in str(v) for r in rows for v in r)            # never in clear
    assert pg.fetchone("SELECT hash FROM tokens WHERE name = 'alice'")[0] == hashlib.sha256(tok.encode()).hexdigest()
    assert tokens.verify(tok) == ("alice", "curator")


def test_list_shows_names_roles_and_times_never_the_token(tokens):
    assert tokens.list() == []
    tok = tokens.add("zed", "admin")
    tokens.add("Ann", "agent")
    listed = tokens.list()
    assert [(t["name"], t["role"]) for t in listed] == [("Ann", "agent"), ("zed", "admin")]
    assert all(set(t) == {"name", "role", "created", "last_used"} for t in listed)
    assert listed[1]["created"].endswith("+00:00") and listed[1]["last_used"] is None
    tokens.verify(tok)
    used = {t["name"]: t["last_used"] for t in tokens.list()}
    assert used["zed"] is not None and used["Ann"] is None
    assert tok not in repr(tokens.list())


def test_a_wrong_or_revoked_token_is_not_one(tokens):
    tok = tokens.add("ci-agent", "agent")
    for bad in ("", "x", tok[:-1], tok + "x", tok.upper(), None, 42, "a" * 10_000):
        assert tokens.verify(bad) is None
    tokens.revoke("ci-agent")
    assert tokens.verify(tok) is None
    assert tokens.list() == []


def test_revoking_an_unknown_name_says_where_the_names_are(tokens):
    with pytest.raises(NotFoundError) as e:
        tokens.revoke("nobody")
    assert "nobody" in e.value.message and "tokens list" in e.value.fix
    with pytest.raises(NotFoundError):
        tokens.revoke(None)


def test_a_name_taken_is_a_conflict_with_the_fix(tokens):
    first = tokens.add("alice", "reader")
    with pytest.raises(ConflictError) as e:
        tokens.add("alice", "admin")
    assert "alice" in e.value.message and "tokens revoke alice" in e.value.fix
    assert tokens.verify(first) == ("alice", "reader")            # the first one is untouched
    tokens.revoke("alice")
    assert tokens.verify(tokens.add("alice", "admin")) == ("alice", "admin")


@pytest.mark.parametrize("name", ["", " alice", "-alice", "a b", "x" * 65, "ali\x00ce", "al/ice", None])
def test_a_name_that_cannot_name_a_token_is_refused(tokens, name):
    with pytest.raises(ValidationError) as e:
        tokens.add(name, "reader")
    assert "letters, digits" in e.value.fix
    assert tokens.list() == []


@pytest.mark.parametrize("role", ["root", "", "Admin", None])
def test_an_unknown_role_is_refused_naming_the_roles(tokens, role):
    with pytest.raises(ValidationError) as e:
        tokens.add("alice", role)
    assert e.value.fix == "use one of: reader, agent, curator, admin"
    assert tokens.list() == []


def test_last_used_is_written_at_most_once_a_minute(tokens, pg):
    from skillshelf.store.tokens import Tokens

    tok = tokens.add("alice", "agent")
    assert tokens.verify(tok)
    first = pg.fetchone("SELECT last_used FROM tokens")[0]
    assert first is not None
    pg.execute("UPDATE tokens SET last_used = '2000-01-01'")
    for _ in range(20):                       # the same server within the minute: no write
        assert tokens.verify(tok)
    assert pg.fetchone("SELECT last_used FROM tokens")[0].year == 2000
    other = Tokens(pg)                        # another server, more than a minute since: written
    assert other.verify(tok)
    assert pg.fetchone("SELECT last_used FROM tokens")[0].year > 2000
    pg.execute("UPDATE tokens SET last_used = now() - interval '30 seconds'")
    before = pg.fetchone("SELECT last_used FROM tokens")[0]
    assert Tokens(pg).verify(tok)             # a third server within the minute: not written either
    assert pg.fetchone("SELECT last_used FROM tokens")[0] == before


def test_a_read_only_store_still_lets_token_holders_in(pg, pg_url):
    from urllib.parse import urlsplit, urlunsplit

    from skillshelf.store.postgres import PgStore
    from skillshelf.store.tokens import Tokens

    tok = Tokens(pg).add("alice", "reader")
    pg.execute("CREATE ROLE tokens_ro LOGIN")
    pg.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO tokens_ro")
    parts = urlsplit(pg_url)
    ro = PgStore(urlunsplit((parts.scheme, f"tokens_ro@{parts.hostname}:{parts.port}", parts.path, "", "")),
                 migrate=False)
    try:
        assert Tokens(ro).verify(tok) == ("alice", "reader")      # last_used not written, no error
        with pytest.raises(StoreError) as e:
            Tokens(ro).add("bob", "reader")
        assert e.value.fix
    finally:
        ro.close()
        pg.execute("DROP OWNED BY tokens_ro")
        pg.execute("DROP ROLE tokens_ro")


# --- roles ----------------------------------------------------------------------------
def test_roles_are_ordered_each_allowed_what_the_one_below_may():
    assert ROLES == ("reader", "agent", "curator", "admin")
    for i, have in enumerate(ROLES):
        for j, needed in enumerate(ROLES):
            assert allows(have, needed) is (i >= j)
    assert not allows(None, "reader") and not allows("root", "reader")
    with pytest.raises(ValueError):
        allows("admin", "root")


def test_require_names_the_role_needed_and_the_fix():
    require("curator", "agent", "report_outcome")
    require("admin", "admin", "tokens add")
    with pytest.raises(ForbiddenError) as e:
        require("agent", "curator", "approving a draft")
    assert isinstance(e.value, SkillshelfError)
    assert e.value.message == "approving a draft needs the curator role (this token has the agent role)"
    assert e.value.needed == "curator" and "--role curator" in e.value.fix
    with pytest.raises(ForbiddenError, match="no role"):
        require(None, "reader", "search")


def test_each_action_names_its_role_as_the_issue_lists_them():
    assert {a for a, r in NEEDS.items() if r == "reader"} == {"search", "read", "list", "resources", "stats"}
    assert {a for a, r in NEEDS.items() if r == "agent"} == {"report_outcome", "save_skill"}
    # the issue's curator list, plus reindexing, trusting a held or risky skill, reading the held skills'
    # unreviewed text on the Held page, updating a source and running every skill's evals (curator work too)
    assert {a for a, r in NEEDS.items() if r == "curator"} == {"approve", "reject", "edit", "deprecate", "restore",
                                                              "extend_ttl", "rollback", "delete", "reindex", "trust",
                                                              "held", "sources", "run_evals"}
    assert needs("tokens") == "admin" and needs("something new") == "admin"     # closed until given a role
    assert check_role("agent") == "agent"
