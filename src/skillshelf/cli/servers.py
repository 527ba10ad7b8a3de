"""The servers: ``serve`` (MCP, stdio or HTTP) and ``dashboard`` (the web UI)."""

from __future__ import annotations

from typing import Optional

import typer

from .common import _choice, _in_range, _lib, state, store_url

commands = typer.Typer()
STORE_HELP = "a team store, postgresql://USER:PASSWORD@HOST/DB (as the global --store)"


def _store(url: Optional[str]) -> Optional[str]:
    """This command's --store, else the global one (checked the same way)."""
    if url is None:
        return state.store
    return store_url(url)


@commands.command()
def serve(
    http: bool = typer.Option(False, "--http", help="Streamable HTTP instead of stdio"),
    host: str = typer.Option("127.0.0.1", help="HTTP bind address (non-loopback needs SKILLSHELF_HTTP_TOKEN, or a team store's tokens)"),
    port: int = typer.Option(8765, help="HTTP port"),
    write_policy: Optional[str] = typer.Option(None, "--write-policy", help="read-only | propose | open",
                                               callback=_choice("read-only", "propose", "open")),
    store: Optional[str] = typer.Option(None, "--store", metavar="URL", help=STORE_HELP),
) -> None:
    """Run the MCP server (stdio by default; logs go to stderr)."""
    import argparse

    from ..mcp.launch import serve as launch

    launch(argparse.Namespace(home=state.home, root=[str(r) for r in state.roots], client_roots=state.client_roots,
                              http=http, host=host, port=port, write_policy=write_policy,
                              store=_store(store)))


@commands.command()
def dashboard(host: str = typer.Option("127.0.0.1", help="bind address (non-loopback needs SKILLSHELF_HTTP_TOKEN, or a team store's tokens)"),
              port: int = typer.Option(7788, help="port", callback=_in_range(1, 65535, "a port")),
              open_browser: bool = typer.Option(False, "--open", help="open the dashboard in a browser"),
              store: Optional[str] = typer.Option(None, "--store", metavar="URL", help=STORE_HELP)) -> None:
    """The web dashboard: browse, search, review and curate the library."""
    from .. import web  # the web stack is imported only here

    if store is not None:
        state.store = _store(store)

    web.require()       # a broken install is said before a library is opened
    web.serve(_lib(shown=False), host=host, port=port, open_browser=open_browser)
