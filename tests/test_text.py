from skillshelf.text import name_key, tokenize


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


def test_lexical_terms_are_stemmed_on_both_sides():
    from skillshelf.search.lexical import terms

    assert terms("Building Docker images") == terms("build docker image")
    assert "nextj" in terms("NextJsApi") or "nextjs" in terms("NextJsApi")


def test_name_key_joins_copies():
    assert name_key("Spring-Boot_Verification") == name_key("springboot verification") == "springbootverification"
