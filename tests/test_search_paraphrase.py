"""The anti-repeat policy and paraphrases: a recent request that means the same as this one
(its vector is ``search.recency_same_meaning`` close) is a repeat, like the same text, and
does not push this request's answer down; a different request is still spread. With the
bundled MiniLM model, as a user runs it."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import write_skill

from skillshelf import Library
from skillshelf.config import SearchConfig
from skillshelf.usage.log import Usage, logged_request_vectors

# the case: after an agent asked about CORS in Next.js in other words, this wording
# got nextjs-best-practices above cors-fix-nextjs-api
PARAPHRASE = "my Next.js API route is blocked by CORS"
# the same need asked before, and requests for other needs in between
LOGGED = ["fix CORS in next.js", "make my docker image smaller", "CORS error from my Next.js API",
          "write pytest fixtures", "set up postgres backups", "Next.js API: preflight OPTIONS fails with CORS"]
# a different need (cosine 0.67 with "fix CORS in next.js": under the threshold) whose best
# skill here is the same one: the penalty still spreads it
DIFFERENT = "fix CORS in an Express server"


def _root(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "cors-fix-nextjs-api",
                description="Fix CORS errors in Next.js API routes, answer the preflight OPTIONS request and set "
                            "Access-Control-Allow-Origin headers",
                body="# Fix\n\nAdd the CORS headers in the route handler or in middleware; answer OPTIONS with 204.\n")
    write_skill(root, "nextjs-best-practices",
                description="Next.js best practices for the app router, server components, data fetching, API routes, "
                            "middleware and headers",
                body="# Practices\n\nPrefer server components. Keep API routes thin. Configure headers in "
                     "next.config.js.\n")
    write_skill(root, "docker-slim-images", description="Make Docker images smaller with multi-stage builds and slim "
                                                        "base images",
                body="# Steps\n\nUse a builder stage; copy only the artefacts.\n")
    write_skill(root, "pytest-fixtures", description="Write pytest fixtures and parametrized tests in Python",
                body="# Fixtures\n\nPut shared fixtures in conftest.py.\n")
    write_skill(root, "postgres-backups", description="Schedule PostgreSQL backups with pg_dump and test restoring them",
                body="# Backups\n\nRun pg_dump nightly; restore into a scratch database weekly.\n")
    return root


def _lib(tmp_path, root, **kw) -> Library:
    lib = Library(home=tmp_path / "h", roots=[root], auto_sync=False, **kw)    # the bundled MiniLM model
    lib.sync()
    status = lib.embedder_status()
    assert status["ok"] and status["name"] == "minilm" and status["vectors"] == 5
    return lib


def _top(lib, q) -> str:
    return lib.search(q, log=False).hits[0].name


def test_a_paraphrase_of_recent_requests_keeps_its_answer(tmp_path):
    lib = _lib(tmp_path, _root(tmp_path))
    first = {q: _top(lib, q) for q in (PARAPHRASE, DIFFERENT, LOGGED[0])}
    assert first == {PARAPHRASE: "cors-fix-nextjs-api", DIFFERENT: "cors-fix-nextjs-api",
                     LOGGED[0]: "cors-fix-nextjs-api"}
    for q in LOGGED:
        lib.search(q, limit=1)          # logged: cors-fix-nextjs-api three times, the others once
    assert lib._usage.recent_counts(10)["r:cors-fix-nextjs-api"] == 3
    # the same need in other words: not pushed down by the requests that meant the same
    res = lib.search(PARAPHRASE, log=False)
    assert [h.name for h in res.hits[:2]] == ["cors-fix-nextjs-api", "nextjs-best-practices"]
    assert _top(lib, LOGGED[0]) == "cors-fix-nextjs-api"
    # a different need is still spread over the collection
    assert _top(lib, DIFFERENT) != "cors-fix-nextjs-api"


def test_without_the_same_meaning_check_the_paraphrase_is_pushed_down(tmp_path):
    """The issue, with the check turned off (``recency_same_meaning`` above 1): only the same
    text is a repeat, and the paraphrase loses its best skill."""
    lib = _lib(tmp_path, _root(tmp_path), search=SearchConfig(recency_same_meaning=1.01))
    for q in LOGGED:
        lib.search(q, limit=1)
    assert _top(lib, PARAPHRASE) == "nextjs-best-practices"


def test_a_paraphrase_is_recognised_by_a_new_process(tmp_path):
    """A one-shot CLI search, or an MCP server started for a new session, has not seen the
    earlier searches: their logged texts are embedded (once) to compare them."""
    root = _root(tmp_path)
    lib = _lib(tmp_path, root)
    for q in LOGGED:
        lib.search(q, limit=1)
    lib.close()
    again = _lib(tmp_path, root)
    assert again._learning.request_vectors == {}
    assert _top(again, PARAPHRASE) == "cors-fix-nextjs-api"
    assert _top(again, DIFFERENT) != "cors-fix-nextjs-api"
    assert len(again._learning.request_vectors) == len(LOGGED)     # embedded once, kept for the next search


def test_hashed_requests_of_another_process_are_compared_by_text_only(tmp_path):
    """With ``hash_queries`` the log keeps no text: the process that searched kept the vectors,
    a new one has nothing to compare but the text hash."""
    root = _root(tmp_path)
    lib = _lib(tmp_path, root, hash_queries=True)
    for q in LOGGED:
        lib.search(q, limit=1)
    assert _top(lib, PARAPHRASE) == "cors-fix-nextjs-api"     # this process kept the vectors
    lib.close()
    again = _lib(tmp_path, root, hash_queries=True)
    assert _top(again, PARAPHRASE) == "nextjs-best-practices"


# --- the counting, with given vectors ------------------------------------------------------
class _Log:
    """The two reads ``Usage.recent_counts`` makes, over rows given newest first."""

    def __init__(self, rows):
        self.rows = rows
        self.reads = []

    def recent_requests(self, n, *, skip_hash=""):
        self.reads.append(n)
        return [r for r in self.rows if r.get("hash") != skip_hash][:n]

    def recent_counts(self, window, *, skip_hash=""):
        out = {}
        for r in self.recent_requests(window, skip_hash=skip_hash):
            for s in r["skills"]:
                out[s] = out.get(s, 0) + 1
        return out


def _unit(*xs):
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture
def counts():
    same, near, other = _unit(1, 0, 0), _unit(1, 0.3, 0), _unit(0, 1, 0)      # near: cosine 0.96
    rows = [{"id": 6, "text": "t6", "skills": ["s:a"]}, {"id": 5, "text": "t5", "skills": ["s:b"]},
            {"id": 4, "text": None, "skills": ["s:a"]}, {"id": 3, "text": "t3", "skills": ["s:c"]},
            {"id": 2, "text": "t2", "skills": ["s:a", "s:d"]}, {"id": 1, "text": "t1", "skills": ["s:e"]}]
    known = {6: near, 5: other, 3: other, 2: same, 1: other}        # 4: hashed, from another process
    log = _Log(rows)
    usage = Usage(log, skills=list)

    def run(window, qvec=same, threshold=0.7, embed=None):
        return usage.recent_counts(window, exclude_request="q", request_vector=qvec, same_meaning=threshold,
                                   vectors=logged_request_vectors(known, embed))
    return run, log, known


def test_paraphrases_are_left_out_and_the_window_counted_without_them(counts):
    run, log, _ = counts
    # 6 and 2 mean the same: left out; the window of 3 is 5, 4 (no vector: counted), 3
    assert run(3) == {"s:b": 1, "s:a": 1, "s:c": 1}
    assert log.reads == [6]                                    # one read, of twice the window
    assert run(10) == {"s:b": 1, "s:a": 1, "s:c": 1, "s:e": 1}
    assert run(3, threshold=0.99) == {"s:a": 2, "s:b": 1}      # 6 is near, not the same at 0.99
    assert run(3, threshold=1.01) == {"s:a": 2, "s:b": 1}      # off: text repeats only
    assert run(3, qvec=None) == {"s:a": 2, "s:b": 1}           # no embedder: text repeats only
    assert run(0) == {}


def test_a_request_without_a_known_vector_is_embedded_from_its_logged_text(counts):
    run, _, known = counts
    del known[6]
    embedded = []

    def embed(texts):
        embedded.extend(texts)
        return np.stack([_unit(2, 0, 0)] * len(texts))       # not unit: normalised

    assert run(3, embed=embed) == {"s:b": 1, "s:a": 1, "s:c": 1}
    assert embedded == ["t6"]                                   # only what was missing, hashed 4 has no text
