"""A long-running library's start: what it says while it starts and stops."""

from conftest import write_skill

from skillshelf import Library
from skillshelf.search.indexer import Stopped


def test_a_catch_up_stopped_by_the_library_closing_says_nothing(tmp_path, capsys):
    """A stdio server refused at start (a wrong token) closes its library while the team
    catch-up runs: that stop is no failure, and the one error line must stay the only line."""
    root = tmp_path / "r"
    for i in range(3):
        write_skill(root, f"s{i}", description=f"topic{i} recipes")
    lib = Library(home=tmp_path / "h", roots=[root], embedder="none", auto_sync=False)
    lib.sync()
    try:
        def stopped(_n):
            raise Stopped()
        lib.indexer.before_read = stopped
        lib.indexer.start()
        for t in lib.indexer._threads:
            t.join(10)
    finally:
        lib.close()
    assert "catching up" not in capsys.readouterr().err
