"""The anti-repeat policy spreads different requests over the collection; it must not change
the answer to the same request asked again."""

from conftest import write_skill

from skillshelf import Library
from skillshelf.config import SearchConfig
from skillshelf.embeddings.fake import FakeEmbedder


def _lib(tmp_path, **kw):
    root = tmp_path / "r"
    write_skill(root, "alpha-guide", description="kubernetes pod crash loop debugging")
    write_skill(root, "beta-guide", description="kubernetes pod crash loop debugging steps")
    write_skill(root, "gamma-guide", description="kubernetes pod crash loop debugging with kubectl logs")
    write_skill(root, "delta-guide", description="kubernetes pod restarts and crash loop back-off")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False, **kw)
    lib.sync()
    return lib


def test_asking_the_same_request_again_keeps_its_answer(tmp_path):
    lib = _lib(tmp_path)
    q = "kubernetes pod crash loop debugging"
    answers = [[h.id for h in lib.search(q, limit=3).hits] for _ in range(3)]
    assert answers[0] == answers[1] == answers[2]
    # the same request in other case, spacing and punctuation is the same request
    again = lib.search("  Kubernetes POD crash-loop debugging! ", limit=3)
    assert [h.id for h in again.hits] == answers[0]


def test_a_repeat_sees_the_same_window_as_the_first_ask(tmp_path):
    """With a window of 2 the first ask of A sees B and C; the repeat must not see only C
    (A's own first ask would otherwise push B out of the window)."""
    lib = _lib(tmp_path, search=SearchConfig(recency_window=2))
    lib.search("kubernetes pod crash loop debugging steps", limit=1)       # B
    lib.search("crash loop debugging with kubectl logs", limit=1)          # C
    q = "kubernetes pod crash loop debugging"
    first = [h.id for h in lib.search(q, limit=3).hits]
    assert [h.id for h in lib.search(q, limit=3).hits] == first


def test_different_requests_are_still_spread(tmp_path):
    lib = _lib(tmp_path)
    q = "kubernetes pod crash loop debugging"
    first = lib.search(q, log=False).hits[0].id
    # other requests in other words (a rewording of q would mean the same and count as a repeat)
    for other in ("debug a crash loop", "kubernetes debugging help", "pod debugging"):
        lib.search(other, limit=1)
    assert lib.search(q, log=False).hits[0].id != first


def test_a_worked_report_exempts_every_copy_of_the_skill(tmp_path):
    """The search showed one copy; the outcome was reported by name, which resolves to
    another copy of the same skill: the skill is still exempt from the penalty."""
    root = tmp_path / "r"
    write_skill(root, "deep/a/b/kube-tip", name="kube-tip",
                description="kubernetes pod crash loop debugging, a detailed kubernetes pod crash loop guide",
                body="# Steps\n\nRead the previous container's logs first.\n")
    write_skill(root, "kube-tip", description="kubernetes notes", body="# Notes\n\nCluster upgrade checklist.\n")
    write_skill(root, "other-tip", description="kubernetes pod crash loop notes")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    q = "kubernetes pod crash loop debugging guide"
    hit = lib.search(q, log=False).hits[0]
    assert hit.id == "r:deep/a/b/kube-tip" and lib.get("kube-tip").id == "r:kube-tip"
    for other in ("debug a crash loop", "kubernetes debugging help", "kubernetes guide"):   # other requests
        lib.search(other, limit=1)
    assert lib.search(q, log=False).hits[0].id != hit.id
    lib.report_outcome("kube-tip", True)      # by name: recorded against r:kube-tip
    assert lib.search(q, log=False).hits[0].id == hit.id


def test_the_latest_outcomes_are_asked_only_for_recent_skills_among_the_candidates(tmp_path):
    """Only a candidate can be penalised, so only candidates' outcomes are read: on a team
    store each read is a round trip, and a request unlike the recent ones asks nothing."""
    root = tmp_path / "r"
    write_skill(root, "kube-guide", description="kubernetes pod crash loop debugging")
    write_skill(root, "kube-notes", description="kubernetes pod crash loop notes")
    write_skill(root, "css-grid", description="css grid layout for responsive pages")
    lib = Library(home=tmp_path / "h", roots=[root], embedder="none", auto_sync=False)
    lib.sync()
    asked = []
    real = lib._usage.worked_latest
    lib._usage.worked_latest = lambda ids: asked.append(sorted(ids)) or real(ids)
    lib.search("kubernetes pod crash loop", limit=2)        # logged: the kube skills are recent
    asked.clear()
    lib.search("css grid layout", limit=1)                   # no kube skill is a candidate
    assert asked == []
    lib.search("kubernetes crash loop notes", limit=2)       # they are candidates now
    assert asked and set(asked[0]) <= {"r:kube-guide", "r:kube-notes"}
