"""A group of copies is shown as the copy in the request's language (the original
collection's when several are); the other copies stay reachable by id."""

import pytest
from conftest import write_skill

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder

EN_DESC = ("Docker and Docker Compose patterns for local development, container security, networking, "
           "volume strategies, and multi-service orchestration.")
EN_BODY = ("# Docker Patterns\n\nDocker and Docker Compose best practices for containerized development.\n\n"
           "## When to Activate\n\n- Setting up Docker Compose for local development\n"
           "- Designing multi-container architectures\n- Troubleshooting container networking or volume issues\n")
TR_DESC = "Docker Compose kalıpları, Docker ve Docker Compose için yerel geliştirme, ağ ve volume stratejileri."
TR_BODY = ("# Docker Kalıpları\n\nKonteynerize edilmiş geliştirme için Docker ve Docker Compose en iyi "
           "uygulamaları.\n\n## Ne Zaman Aktifleştirmeli\n\n- Yerel geliştirme için Docker Compose kurarken\n")
ZH_DESC = "用于本地开发的Docker和Docker Compose模式，包括容器安全、网络、卷策略和多服务编排。"
ZH_BODY = "# Docker 模式\n\n适用于容器化开发的 Docker 和 Docker Compose 最佳实践。\n\n## 何时启用\n\n* 为本地开发设置 Docker Compose\n"
JA_DESC = "Docker イメージの構築、最適化、マルチステージビルド、ネットワーク、ボリューム管理。Docker Compose のベストプラクティス。"
JA_BODY = "# Docker パターン\n\n本番環境対応のDocker イメージとコンテナ。\n\n## 使用時期\n\n- Dockerfile を書く\n- Docker Compose を使う\n"


@pytest.fixture
def lib(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "ecc/skills/docker-patterns", description=EN_DESC, body=EN_BODY)
    write_skill(root, "ecc/.kiro/skills/docker-patterns", description=EN_DESC + " Use when reviewing Docker setups.",
                body=EN_BODY)
    write_skill(root, "ecc/docs/tr/skills/docker-patterns", description=TR_DESC, body=TR_BODY)
    write_skill(root, "ecc/docs/zh-CN/skills/docker-patterns", description=ZH_DESC, body=ZH_BODY)
    write_skill(root, "ecc/docs/ja-JP/skills/docker-patterns", description=JA_DESC, body=JA_BODY)
    write_skill(root, "ops/k8s-deploy", description="Deploy containers to Kubernetes with Helm charts")
    write_skill(root, "ops/ci-cache", description="Cache dependencies in CI pipelines")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    yield lib
    lib.close()


def _docker_hit(lib, query, **kw):
    hits = [h for h in lib.search(query, log=False, **kw).hits if h.name == "docker-patterns"]
    assert len(hits) == 1 and hits[0].copies == 5
    return hits[0]


def test_an_english_request_is_shown_the_english_original(lib, monkeypatch):
    from skillshelf.search import hits

    # without the language rule, some of these English requests show a translation, or a mirror
    monkeypatch.setattr(hits, "SHOW_COPY", "off")
    requests = ["docker compose", "docker", "set up docker compose for local development"]
    assert any(_docker_hit(lib, q).id != "r:ecc/skills/docker-patterns" for q in requests)
    monkeypatch.undo()
    for q in requests:
        hit = _docker_hit(lib, q)
        assert hit.id == "r:ecc/skills/docker-patterns"     # the original, in English
        assert hit.ref == "docker-patterns" and hit.description.startswith("Docker and Docker Compose")
        assert {"r:ecc/docs/tr/skills/docker-patterns", "r:ecc/docs/zh-CN/skills/docker-patterns",
                "r:ecc/docs/ja-JP/skills/docker-patterns", "r:ecc/.kiro/skills/docker-patterns"} <= set(hit.copy_ids)
    # the other copies stay reachable by id
    assert lib.get("r:ecc/docs/tr/skills/docker-patterns").description == TR_DESC


def test_a_request_in_another_language_is_shown_that_copy(lib):
    assert _docker_hit(lib, "Docker Compose kalıpları için yerel geliştirme nasıl yapılır").id \
        == "r:ecc/docs/tr/skills/docker-patterns"
    ja = _docker_hit(lib, "Docker Compose のベストプラクティスを教えてください")
    assert ja.id == "r:ecc/docs/ja-JP/skills/docker-patterns" and ja.ref == ja.id
    assert _docker_hit(lib, "如何为本地开发设置 Docker Compose 模式").id == "r:ecc/docs/zh-CN/skills/docker-patterns"


def test_a_copy_left_out_by_the_filters_is_never_shown(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "ecc/skills/docker-patterns", description=EN_DESC, body=EN_BODY,
                extra="metadata:\n  status: inactive\n")
    write_skill(root, "ecc/docs/tr/skills/docker-patterns", description=TR_DESC, body=TR_BODY)
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    hit = lib.search("docker compose patterns", log=False).hits[0]
    assert hit.id == "r:ecc/docs/tr/skills/docker-patterns" and hit.active


def test_text_language_guesses():
    from skillshelf.search.pipeline import text_language

    cases = {
        "docker multi-stage build": "en", "my docker image is huge": "en", "asdf qwerty zxcv": "en",
        "": "en", "Fix CORS errors in Next.js API routes": "en",
        TR_DESC: "tr", ZH_DESC: "zh", JA_DESC: "ja", "쿠버네티스 파드가 계속 재시작됩니다": "ko",
        "Как исправить ошибку CORS": "ru", "Cómo arreglar el error de CORS en la API con Next.js": "es",
        "Wie kann ich das Docker-Image für die Produktion verkleinern": "de",
        "Responde dúvidas de legislação trabalhista para equipes de RH e calcula verbas rescisórias com as "
        "tabelas oficiais que não mudam": "pt",
        # an English description quoting other languages' keywords stays English
        "Evaluate demand-forecast quality. Use when the user mentions forecast accuracy, tahmin doğruluğu, "
        "talep tahmini, or asks whether a forecasting process is worth it.": "en",
        "Automate Simla Com tasks via Rube MCP (Composio): search tools first for current schemas, "
        "simla_com toolkit": "en",
        "Translate the UI strings to 中文 and 日本語": "en",
    }
    for text, want in cases.items():
        assert text_language(text) == want, text
