"""The CLI is an adapter: it imports the facade, the error tree, the settings and its own
modules (and starts the MCP and web servers); nothing of it is imported by the services; the
console script starts `serve` without the CLI toolkit or the search stack."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import skillshelf

SRC = Path(skillshelf.__file__).parent
ADAPTER = sorted((SRC / "cli").glob("*.py")) + [SRC / "entry.py", SRC / "mcp" / "launch.py"]
# what an adapter may import (the servers: through their entry functions)
ALLOWED = ("skillshelf.library", "skillshelf.errors", "skillshelf.version", "skillshelf.config", "skillshelf.net",
           "skillshelf.text", "skillshelf.cli", "skillshelf.mcp.launch", "skillshelf.mcp.server",
           "skillshelf.web")
PENDING = "# facade: pending"    # a need the facade has not met yet, named on its line


def _module(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, int]]:
    """(module imported, line) of every skillshelf import in the file, relative ones resolved."""
    text = path.read_text(encoding="utf-8")
    mod = _module(path)
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names if a.name.split(".")[0] == "skillshelf"]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            if base.split(".")[0] != "skillshelf":
                continue
            for a in node.names:         # from pkg import x: x may be a module of pkg
                sub = SRC.parent.joinpath(*f"{base}.{a.name}".split("."))
                is_module = sub.with_suffix(".py").exists() or (sub / "__init__.py").exists()
                found.append((f"{base}.{a.name}" if is_module or node.module is None else base, node.lineno))
    return found


def _allowed(name: str) -> bool:
    return name in ALLOWED or name.startswith("skillshelf.cli.")


def test_the_cli_imports_only_what_an_adapter_may():
    wrong = []
    for path in ADAPTER:
        lines = path.read_text(encoding="utf-8").splitlines()
        for name, line in _imports(path):
            if not _allowed(name) and PENDING not in lines[line - 1]:
                wrong.append(f"{path.name}:{line} imports {name}")
    assert not wrong, wrong


def test_no_circle_between_the_console_script_the_cli_and_the_services():
    by_file = {p: {n for n, _ in _imports(p)} for p in [*ADAPTER, SRC / "onboarding" / "clients.py"]}
    for p, names in by_file.items():
        if p.parent.name == "cli":
            assert "skillshelf.entry" not in names, p
    def cli_or_entry(n: str) -> bool:   # the module or a module in it (skillshelf.onboarding.client_files is neither)
        return any(n == m or n.startswith(m + ".") for m in ("skillshelf.cli", "skillshelf.entry"))

    assert not {n for n in by_file[SRC / "mcp" / "launch.py"] if cli_or_entry(n)}
    assert not {n for n in by_file[SRC / "onboarding" / "clients.py"] if cli_or_entry(n)}


def test_no_module_of_the_cli_is_over_700_lines():
    for path in [*ADAPTER, SRC / "onboarding" / "clients.py"]:
        n = len(path.read_text(encoding="utf-8").splitlines())
        assert n <= 700, (path.name, n)


def test_serve_starts_without_the_cli_toolkit_or_the_search_stack(tmp_path):
    """What is loaded when the console script hands over to the MCP server: the server answers
    tools/list before the library (and numpy, the model) is loaded."""
    code = ("import sys\n"
            "from skillshelf import entry\nfrom skillshelf.mcp import server as mcp_server\n"
            "def serve(factory, **kw):\n"
            "    print(sorted(m for m in ('typer', 'rich', 'numpy', 'onnxruntime', 'skillshelf.cli', "
            "'skillshelf.library') if m in sys.modules))\n"
            "mcp_server.serve = serve\n"
            f"entry.main(['--home', {str(tmp_path / 'h')!r}, 'serve'])\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"
