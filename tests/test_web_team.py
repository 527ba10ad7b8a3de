"""The dashboard and its JSON API on a team store (a real PostgreSQL): every request needs a
token of its own (Bearer header or the login page's session cookie), on loopback too; each
role may do what ``access.NEEDS`` gives it and no more (403 naming the role needed, on a page
and in the API); what is changed through the dashboard is recorded under the token's name.
The browser walk through the login form is in test_web_team_browser.py."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import quote

import pytest

pytest.importorskip("fastapi", reason="the web extra is not installed (pip install 'skillshelf[web]')")

from conftest import write_skill
from fastapi.testclient import TestClient

from skillshelf import Library

BASE = "http://127.0.0.1:7788"
PEOPLE = {"reader": "rita", "agent": "ci-agent", "curator": "alice", "admin": "ops"}


def make_team_lib(tmp_path: Path, url: str) -> Library:
    root = tmp_path / "root"
    write_skill(root, "web/cors-fix", description="Fix CORS errors in Next.js API routes and preflight OPTIONS",
                body="## Solution\n\nAdd Access-Control-Allow-Origin headers.\n")
    lib = Library(home=tmp_path / "home", roots=[root], embedder="none", auto_sync=False, store=url)
    lib.sync()
    lib.save("ARCHIVE", name="deploy-previews", description="Preview environments per pull request",
             body="## Solution\n\nfly deploy\n", skill_type="WORKFLOW", by="person", author="setup")
    lib.save("FIX", target_skill_name="deploy-previews", body="## Solution\n\nfly deploy --app pr-$PR\n",
             reason="one app per PR", by="person", replace_body=True, author="setup")
    # an agent's draft (the default write policy is propose)
    lib.save("FIX", target_skill_name="deploy-previews", lesson="tear the app down on close", reason="cleanup",
             author="claude-code")
    return lib


@pytest.fixture
def team(tmp_path, pg_url):
    lib = make_team_lib(tmp_path, pg_url)
    assert lib.team
    tokens = {role: lib.add_token(name, role) for role, name in PEOPLE.items()}
    yield lib, tokens
    lib.close()


@pytest.fixture
def app(team):
    from skillshelf.web import create_app

    return create_app(team[0], port=7788)


def client(app, base: str = BASE) -> TestClient:
    return TestClient(app, base_url=base, follow_redirects=False)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def sign_in(c: TestClient, token: str) -> None:
    """Through the login form, as a person does: the page (and its CSRF cookie), then the post."""
    assert c.get("/login").status_code == 200
    r = c.post("/login", data={"token": token, "next": "/", "csrf_token": c.cookies.get("skillshelf_csrf")},
               headers={"Origin": BASE})
    assert r.status_code == 303, r.text
    assert c.cookies.get("skillshelf_session")


def form(c: TestClient, **fields) -> dict:
    return {"csrf_token": c.cookies.get("skillshelf_csrf"), **fields}


def changelog(lib: Library, name: str) -> list[dict]:
    return lib.history(name)["changelog"]


def rid(lib: Library, name: str) -> str:
    return lib.get(name).id


# --- a token on every request -----------------------------------------------------------------

def test_without_a_token_the_api_is_401_and_pages_go_to_the_login(app):
    c = client(app)
    r = c.get("/api/skills")
    assert r.status_code == 401
    assert r.headers["www-authenticate"].startswith("Bearer")
    err = r.json()["error"]
    assert err["message"] == "this team library needs a token"
    assert "Authorization: Bearer <token>" in err["fix"] and "skillshelf tokens add" in err["fix"]
    for path in ("/api/search?q=cors", "/api/drafts", "/api/me", "/openapi.json"):
        assert c.get(path).status_code == 401, path
    assert c.post("/api/deprecate", json={"skill": "deploy-previews", "reason": "x"}).status_code == 401

    # a page: to the login, which brings the person back to where they were going
    r = c.get("/skill/workspace:deploy-previews?tab=history")
    assert r.status_code == 303
    assert r.headers["location"] == "/login?next=" + quote("/skill/workspace:deploy-previews?tab=history", safe="")
    for path in ("/", "/skills", "/review", "/curate", "/new"):
        assert c.get(path).headers["location"].startswith("/login"), path
    # htmx is sent to the login page by a header (a redirect would be swapped into the page)
    r = c.get("/skills?q=cors", headers={"HX-Request": "true", "HX-Target": "results"})
    assert r.status_code == 401 and r.headers["hx-redirect"].startswith("/login?next=")
    # a form posted without a session goes there too, and changes nothing
    r = c.post("/act/deprecate", data={"skill": "deploy-previews", "reason": "x"}, headers={"Origin": BASE})
    assert r.status_code == 303 and r.headers["location"] == "/login"
    # what answers anyone holds no library data: the login page and the static files
    assert c.get("/login").status_code == 200
    assert c.get("/static/app.css").status_code == 200
    assert "deploy-previews" not in c.get("/login").text
    assert app.state.lib.get("deploy-previews").active


def test_a_wrong_token_is_401_however_it_is_sent(app, team):
    lib, tokens = team
    c = client(app)
    for bad in ("nope", tokens["admin"][:-1], tokens["admin"] + "x", "", "x" * 5000):
        r = c.get("/api/skills", headers=bearer(bad))
        assert r.status_code == 401, bad
        assert "not valid" in r.json()["error"]["message"]
    # another scheme, or a token sent without one
    assert c.get("/api/skills", headers={"Authorization": f"Basic {tokens['admin']}"}).status_code == 401
    assert c.get("/api/skills", headers={"Authorization": tokens["admin"]}).status_code == 401
    # a script asking for a page with a wrong header: 401, not a login page to parse
    r = c.get("/", headers=bearer("nope"))
    assert r.status_code == 401 and "not valid" in r.text
    # a wrong header is not saved by a good cookie riding along
    sign_in(c, tokens["reader"])
    assert c.get("/api/skills").status_code == 200
    assert c.get("/api/skills", headers=bearer("nope")).status_code == 401
    # a cookie that is not a token: back to the login, the cookie dropped
    c2 = client(app)
    c2.cookies.set("skillshelf_session", "forged")
    r = c2.get("/skills")
    assert r.status_code == 303 and "expired=1" in r.headers["location"]
    assert 'skillshelf_session=""' in r.headers["set-cookie"] or "Max-Age=0" in r.headers["set-cookie"]
    # the SKILLSHELF_HTTP_TOKEN of a local dashboard opens nothing here
    from skillshelf.web import create_app

    c3 = client(create_app(lib, token="a-shared-token-of-old-0123456789", port=7788))
    assert c3.get("/api/skills", headers=bearer("a-shared-token-of-old-0123456789")).status_code == 401
    assert c3.get("/?token=a-shared-token-of-old-0123456789").headers["location"].startswith("/login")


def test_a_good_token_is_let_in_on_any_host_and_says_who_it_is(app, team):
    _lib, tokens = team
    c = client(app, "http://skills.example.test")       # behind a proxy: the token is the protection
    r = c.get("/api/me", headers=bearer(tokens["curator"]))
    assert r.status_code == 200
    me = r.json()
    assert (me["name"], me["role"]) == ("alice", "curator")
    assert "approve" in me["may"] and "tokens" not in me["may"]
    got = c.get("/api/skills", headers=bearer(tokens["reader"])).json()
    assert {i["name"] for i in got["items"]} >= {"deploy-previews", "cors-fix"}


# --- roles ------------------------------------------------------------------------------------

def test_a_reader_reads_but_cannot_approve_deprecate_or_save_in_the_api(app, team):
    lib, tokens = team
    c = client(app)
    h = bearer(tokens["reader"])
    assert c.get("/api/skills", headers=h).status_code == 200
    assert c.get("/api/skill/deploy-previews", headers=h).status_code == 200
    assert c.get("/api/drafts", headers=h).json()[0]["name"] == "deploy-previews"
    refused = [
        c.post("/api/drafts/deploy-previews/approve", headers=h),
        c.post("/api/drafts/deploy-previews/reject", json={"reason": "no"}, headers=h),
        c.post("/api/deprecate", json={"skill": "deploy-previews", "reason": "old"}, headers=h),
        c.post("/api/restore", json={"skill": "deploy-previews"}, headers=h),
        c.post("/api/extend-ttl", json={"skill": "deploy-previews", "days": 5}, headers=h),
        c.post("/api/rollback", json={"skill": "deploy-previews", "version": 1}, headers=h),
        c.post("/api/delete", json={"skill": "deploy-previews"}, headers=h),
    ]
    for r in refused:
        assert r.status_code == 403, r.text
        err = r.json()["error"]
        assert err["type"] == "ForbiddenError" and err["needed"] == "curator"
        assert "needs the curator role" in err["message"] and "reader" in err["message"]
        assert "tokens add" in err["fix"]
    r = c.post("/api/skills", json={"action": "ARCHIVE", "name": "x-skill", "description": "d", "body": "b"},
               headers=h)
    assert r.status_code == 403 and r.json()["error"]["needed"] == "agent"
    assert c.get("/api/tokens", headers=h).json()["error"]["needed"] == "admin"
    # nothing changed
    assert lib.get("deploy-previews").active and lib.get("deploy-previews").version == 2
    assert [d["name"] for d in lib.review.list()] == ["deploy-previews"]


def test_a_reader_signed_in_gets_403_pages_naming_the_curator_role(app, team):
    lib, tokens = team
    c = client(app)
    sign_in(c, tokens["reader"])
    sid = rid(lib, "deploy-previews")
    for path, data in (("/act/approve", {"name": "deploy-previews"}),
                       ("/act/reject", {"name": "deploy-previews", "reason": "no"}),
                       ("/act/deprecate", {"skill": sid, "reason": "old"}),
                       ("/act/deprecate-many", {"skill": sid, "reason": "old"}),
                       ("/act/restore-many", {"skill": sid}),
                       ("/act/rollback", {"skill": sid, "version": "1"}),
                       ("/curate/evals", {})):      # every skill's evals: one search per query
        r = c.post(path, data=form(c, **data), headers={"Origin": BASE})
        assert r.status_code == 403, path
        assert "needs the curator role" in r.text and "this token has the reader role" in r.text
        assert "<h1>" in r.text            # the dashboard's error page, not a bare text
    assert c.get("/new").status_code == 403
    assert "needs the agent role" in c.get("/edit/" + sid).text
    assert c.get("/tokens").status_code == 403
    assert lib.get("deploy-previews").active and lib.review.list()


def test_buttons_a_role_cannot_use_are_hidden(app, team):
    lib, tokens = team
    sid = rid(lib, "deploy-previews")
    reader, curator, admin = client(app), client(app), client(app)
    sign_in(reader, tokens["reader"])
    sign_in(curator, tokens["curator"])
    sign_in(admin, tokens["admin"])

    page = reader.get("/skill/" + sid).text
    assert "rita" in page and "reader" in page and "Sign out" in page
    for action in ("/act/deprecate", "/act/extend-ttl", "/act/delete", "/edit/", ">New skill<", "Derive"):
        assert action not in page, action
    page = reader.get("/skill/" + sid + "?tab=history").text
    assert "/act/rollback" not in page and "Roll back" not in page
    page = reader.get("/review/deploy-previews").text
    assert "/act/approve" not in page and "A curator approves" in page
    page = reader.get("/curate").text
    assert "/act/deprecate-many" in page or "Deprecating needs the curator role" in page
    assert "Deprecate ticked" not in page
    assert "/curate/evals" not in page and "run them now" not in page
    assert "/curate/evals" in curator.get("/curate").text

    page = curator.get("/skill/" + sid).text
    for action in ("/act/deprecate", "/act/extend-ttl", "/act/delete", "/edit/", "New skill"):
        assert action in page, action
    assert "Roll back to v1" in curator.get("/skill/" + sid + "?tab=history").text
    assert "/act/approve" in curator.get("/review/deploy-previews").text
    assert 'href="/tokens"' not in page
    assert 'href="/tokens"' in admin.get("/").text


# --- who did it -------------------------------------------------------------------------------

def test_a_curator_approves_and_edits_and_the_changelog_names_the_token(app, team):
    lib, tokens = team
    c = client(app)
    sign_in(c, tokens["curator"])
    sid = rid(lib, "deploy-previews")

    r = c.post("/act/approve", data=form(c, name="deploy-previews"), headers={"Origin": BASE})
    assert r.status_code == 303 and r.headers["location"].startswith("/skill/")
    last = changelog(lib, "deploy-previews")[-1]
    assert last["to_version"] == 3 and "(approved by alice)" in last["reason"]
    assert lib.review.list() == []

    # the editor: a curator's save is direct, under the token's name
    body = "## Solution\n\nfly deploy --app pr-$PR --ha=false\n"
    r = c.post("/save", data=form(c, action="FIX", target_skill_name=sid, name="deploy-previews",
                                   description="Preview environments per pull request", body=body,
                                   reason="one machine is enough", author="mallory"),
               headers={"Origin": BASE})
    assert r.status_code == 303, r.text
    last = changelog(lib, "deploy-previews")[-1]
    assert (last["to_version"], last["author"], last["trigger"]) == (4, "alice", "person")

    # the API: the author a client sends is not who is recorded
    h = bearer(tokens["curator"])
    r = c.post("/api/skills", json={"action": "FIX", "target_skill_name": "deploy-previews", "lesson": "use --ha",
                                    "reason": "lesson", "author": "mallory"}, headers=h)
    assert r.status_code == 200 and r.json()["status"] == "saved"
    assert changelog(lib, "deploy-previews")[-1]["author"] == "alice"
    r = c.post("/api/rollback", json={"skill": "deploy-previews", "version": 2}, headers=h)
    assert r.status_code == 200
    last = changelog(lib, "deploy-previews")[-1]
    assert (last["action"], last["author"]) == ("ROLLBACK", "alice")

    # and the curator's other rights
    assert c.post("/api/extend-ttl", json={"skill": "deploy-previews", "days": 30}, headers=h).status_code == 200
    r = c.post("/act/deprecate", data=form(c, skill=sid, reason="superseded"), headers={"Origin": BASE})
    assert r.status_code == 303 and not lib.get("deploy-previews").active
    assert c.post("/api/restore", json={"skill": "deploy-previews"}, headers=h).status_code == 200
    assert lib.get("deploy-previews").active


def test_an_agent_saves_through_the_write_policy_under_its_name(app, team):
    lib, tokens = team
    c = client(app)
    sign_in(c, tokens["curator"])
    c.post("/act/reject", data=form(c, name="deploy-previews", reason="stale"), headers={"Origin": BASE})
    assert lib.review.list() == []

    agent = client(app)
    sign_in(agent, tokens["agent"])
    sid = rid(lib, "deploy-previews")
    page = agent.get("/edit/" + sid).text
    assert "saves as an agent does" in page
    r = agent.post("/save", data=form(agent, action="FIX", target_skill_name=sid, name="deploy-previews",
                                      description="Preview environments per pull request",
                                      body="## Solution\n\nfly deploy --app pr-$PR --remote-only\n",
                                      reason="build remotely", author="mallory"),
                   headers={"Origin": BASE})
    assert r.status_code == 303 and r.headers["location"] == "/review/deploy-previews"
    drafts = lib.review.list()
    assert [(d["name"], d["author"]) for d in drafts] == [("deploy-previews", "ci-agent")]
    assert lib.get("deploy-previews").version == 2          # a draft: nothing applied
    r = agent.post("/api/skills", json={"action": "ARCHIVE", "name": "new-one", "description": "a new skill",
                                        "body": "## Solution\n\nx\n", "author": "mallory"},
                   headers=bearer(tokens["agent"]))
    assert r.status_code == 200 and r.json()["status"] == "draft"
    assert {d["name"]: d["author"] for d in lib.review.list()}["new-one"] == "ci-agent"
    # an agent is no curator
    r = agent.post("/act/deprecate", data=form(agent, skill=sid, reason="x"), headers={"Origin": BASE})
    assert r.status_code == 403 and "needs the curator role" in r.text


# --- the session cookie -----------------------------------------------------------------------

def test_the_login_page_sets_the_session_cookie_and_logout_ends_it(app, team):
    lib, tokens = team
    c = client(app)
    r = c.get("/login?next=/review")
    assert r.status_code == 200 and 'name="token"' in r.text and 'type="password"' in r.text
    assert "/review" in r.text
    csrf = c.cookies.get("skillshelf_csrf")

    # a wrong token: the form again, 401, no cookie
    r = c.post("/login", data={"token": "wrong", "next": "/review", "csrf_token": csrf}, headers={"Origin": BASE})
    assert r.status_code == 401 and "not a valid token" in r.text
    assert not c.cookies.get("skillshelf_session")
    # the login form is a state change like any other: CSRF token and same origin
    r = c.post("/login", data={"token": tokens["curator"], "next": "/review"}, headers={"Origin": BASE})
    assert r.status_code == 403 and not c.cookies.get("skillshelf_session")
    r = c.post("/login", data={"token": tokens["curator"], "next": "/review", "csrf_token": csrf},
               headers={"Origin": "https://evil.example"})
    assert r.status_code == 403 and not c.cookies.get("skillshelf_session")

    r = c.post("/login", data={"token": tokens["curator"], "next": "/review", "csrf_token": csrf},
               headers={"Origin": BASE})
    assert r.status_code == 303 and r.headers["location"] == "/review"
    cookie = next(v for v in r.headers.get_list("set-cookie") if v.startswith("skillshelf_session="))
    attrs = [a.strip().lower() for a in cookie.split(";")]
    assert "httponly" in attrs and "samesite=strict" in attrs and "path=/" in attrs
    assert "secure" not in attrs            # plain http: a Secure cookie would never come back
    page = c.get("/review")
    assert page.status_code == 200 and "signed in as alice (curator)" in page.text
    assert c.get("/").status_code == 200
    assert c.get("/skill/" + rid(lib, "deploy-previews")).status_code == 200
    assert c.get("/api/skills").status_code == 200          # the API answers the session too

    # a next that leaves the site is not followed
    for away in ("//evil.example/x", "/\t/evil.example", "https://evil.example/", "/\\evil.example"):
        r = c.post("/login", data={"token": tokens["curator"], "next": away, "csrf_token": csrf},
                   headers={"Origin": BASE})
        assert r.headers["location"] == "/", away

    r = c.post("/logout", data=form(c), headers={"Origin": BASE})
    assert r.status_code == 303 and r.headers["location"] == "/login"
    assert not c.cookies.get("skillshelf_session")
    assert c.get("/").headers["location"].startswith("/login")
    assert c.get("/api/skills").status_code == 401


def test_over_https_the_cookie_is_secure(app, team):
    _lib, tokens = team
    c = client(app, "https://skills.example.test")
    c.get("/login")
    r = c.post("/login", data={"token": tokens["reader"], "csrf_token": c.cookies.get("skillshelf_csrf")},
               headers={"Origin": "https://skills.example.test"})
    assert r.status_code == 303
    cookie = next(v for v in r.headers.get_list("set-cookie") if v.startswith("skillshelf_session="))
    assert "secure" in [a.strip().lower() for a in cookie.split(";")]
    assert c.get("/skills").status_code == 200


def test_a_revoked_token_ends_its_session_at_once(app, team):
    lib, tokens = team
    c = client(app)
    sign_in(c, tokens["agent"])
    assert c.get("/skills").status_code == 200
    lib.revoke_token("ci-agent")
    r = c.get("/skills")
    assert r.status_code == 303 and r.headers["location"].endswith("expired=1")
    assert "no longer valid" in c.get(r.headers["location"]).text
    assert c.get("/api/skills", headers=bearer(tokens["agent"])).status_code == 401


# --- tokens (admin) ---------------------------------------------------------------------------

def test_an_admin_lists_adds_and_revokes_tokens(app, team):
    lib, tokens = team
    c = client(app)
    sign_in(c, tokens["admin"])
    page = c.get("/tokens").text
    for name in PEOPLE.values():
        assert name in page
    assert not any(t in page for t in tokens.values())         # never a token

    r = c.post("/act/token-add", data=form(c, name="bob", role="curator"), headers={"Origin": BASE})
    assert r.status_code == 201
    import re

    new = re.search(r'<pre class="source break" id="newtoken">([^<]+)</pre>', r.text).group(1)
    assert lib.verify_token(new).name == "bob" and lib.verify_token(new).role == "curator"
    assert new not in c.get("/tokens").text                    # shown once
    assert new not in str(r.headers)                            # not in a cookie either

    r = c.post("/act/token-add", data=form(c, name="bob", role="reader"), headers={"Origin": BASE})
    assert r.status_code == 409 and "bob" in r.text
    r = c.post("/act/token-add", data=form(c, name="eve", role="king"), headers={"Origin": BASE})
    assert r.status_code == 400 and "not a role" in r.text

    r = c.post("/act/token-revoke", data=form(c, name="bob"), headers={"Origin": BASE})
    assert r.status_code == 303 and lib.verify_token(new) is None

    # the API
    h = bearer(tokens["admin"])
    r = c.post("/api/tokens", json={"name": "ci-2", "role": "agent"}, headers=h)
    assert r.status_code == 201 and lib.verify_token(r.json()["token"]).name == "ci-2"
    assert "ci-2" in {t["name"] for t in c.get("/api/tokens", headers=h).json()}
    assert c.post("/api/tokens/ci-2/revoke", headers=h).json() == {"name": "ci-2", "revoked": True}
    # a curator is no admin
    h = bearer(tokens["curator"])
    r = c.post("/api/tokens", json={"name": "sneaky", "role": "admin"}, headers=h)
    assert r.status_code == 403 and r.json()["error"]["needed"] == "admin"
    assert c.post("/api/tokens/ops/revoke", headers=h).status_code == 403
    assert lib.verify_token(tokens["admin"]) is not None


# --- every route names its action ---------------------------------------------------------------

def test_every_route_names_the_action_it_needs(app):
    """A route added later without a role would be open to any token: each one carries
    ``auth.need(action)``, except signing in and out (and the icon)."""
    from fastapi.routing import APIRoute

    from skillshelf.web.auth import WHAT

    def api_routes(routes):
        for route in routes:
            if isinstance(route, APIRoute):
                yield route
            inner = getattr(route, "original_router", None)       # an included router, kept whole
            if inner is not None:
                yield from api_routes(inner.routes)

    open_routes = {"/login", "/logout", "/favicon.ico"}
    named = {}
    for route in api_routes(app.routes):
        if route.path in open_routes:
            continue
        actions = [d.call.skillshelf_action for d in route.dependant.dependencies
                   if hasattr(d.call, "skillshelf_action")]
        assert len(actions) == 1, f"{sorted(route.methods)} {route.path} names no action"
        named[route.path] = actions[0]
        assert actions[0] in WHAT, actions[0]
    assert len(named) >= 40
    assert named["/act/approve"] == "approve" and named["/api/tokens"] == "tokens"
    assert named["/save"] == "save_skill" and named["/skills"] == "search"


# --- the store out of reach -------------------------------------------------------------------

def test_a_store_out_of_reach_lets_nobody_in_and_says_why(app, team, pg_url):
    """PostgreSQL refusing this database's connections (and cutting the open ones): no token
    can be checked, so every request is 503 naming the store and the fix, never let in; once
    it answers again, so does the dashboard, without a restart."""
    import psycopg

    _lib, tokens = team
    c = client(app)
    sign_in(c, tokens["reader"])
    name = pg_url.rsplit("/", 1)[1]
    admin = psycopg.connect(pg_url.rsplit("/", 1)[0] + "/postgres", autocommit=True)
    try:
        admin.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
        r = c.get("/api/skills", headers=bearer(tokens["reader"]))
        assert r.status_code == 503
        err = r.json()["error"]
        assert err["type"] == "StoreError"
        assert err["message"].startswith("cannot check the token: ") and "team store" in err["message"]
        assert err["fix"]
        r = c.get("/skills")                    # the session's page: not the library, not the login
        assert r.status_code == 503 and "cannot check the token" in r.text
    finally:
        admin.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")
        admin.close()
    deadline = time.monotonic() + 15
    while c.get("/skills").status_code != 200:
        assert time.monotonic() < deadline, "the dashboard did not come back with the store"
        time.sleep(0.2)
