"""`skillshelf sync` says where the vectors it did not embed came from: a second server of a team
(a real PostgreSQL) embeds nothing the first embedded, and its summary says how many vectors it
took from the team store; the progress line does not claim the model embeds every text."""

from __future__ import annotations

import json

from conftest import write_skill
from test_cli_entry import sk


def test_a_second_server_says_its_vectors_came_from_the_team_store(tmp_path, pg_url):
    root = tmp_path / "checkout"
    for i in range(3):
        write_skill(root, f"skill-{i}", description=f"Does task number {i} with tool {i * 7}",
                    body=f"## Steps\n\nRun step {i}, then check the output of tool {i * 7}.\n")
    first, second = tmp_path / "a", tmp_path / "b"
    for home in (first, second):
        p = sk("--store", pg_url, "roots", "add", str(root), home=home, embedder="fake")
        assert p.returncode == 0, p.stderr
    p = sk("--store", pg_url, "sync", "--json", home=first, embedder="fake")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["embedded"] == 6 and d["vectors_shared"] == 0, d          # a metadata and a body text each
    p = sk("--store", pg_url, "sync", home=second, embedder="fake")
    assert p.returncode == 0, p.stderr
    summary = p.stdout.strip().splitlines()[0]
    assert " · embedded 0 · 6 vectors from the team store (" in summary, p.stdout
    # a log's lines do not say the model embeds every text: what a cache holds is taken
    assert p.stderr.splitlines() == ["reading 3 files · lexical index (meanwhile the model embeds what no cache holds)",
                                     "embedding (finishing): the texts of the files read last that no cache holds"], \
        p.stderr
