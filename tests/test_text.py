from skillshelf.text import fts_text, name_key, tokenize


def test_camel_case_and_compounds_split():
    assert tokenize("NextJsApi") == ["next", "js", "nextjs", "api", "jsapi"]
    assert set(tokenize("nextjs api")) <= set(tokenize("NextJsApi"))
    assert {"next", "js", "nextjs"} <= set(tokenize("next.js"))
    assert {"my", "var", "myvar"} - {"my"} <= set(tokenize("my_var"))
    assert {"http", "server"} <= set(tokenize("HTTPServer"))
    assert tokenize("docker-compose") == ["docker", "compose", "dockercompose"]


def test_stopwords_dropped_but_kept_on_request():
    assert tokenize("how do I fix the build") == ["fix", "build"]
    assert "the" in tokenize("the", keep_stopwords=True)


def test_fts_text_keeps_raw_and_adds_expansions():
    t = fts_text("Use NextJsApi here")
    assert t.startswith("Use NextJsApi here") and "nextjs" in t and "jsapi" in t
    assert fts_text("plain words only") == "plain words only"


def test_name_key_joins_copies():
    assert name_key("Spring-Boot_Verification") == name_key("springboot verification") == "springbootverification"
