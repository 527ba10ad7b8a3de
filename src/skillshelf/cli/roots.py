"""``roots``: the read-only skill roots saved in config.toml."""

from __future__ import annotations

from pathlib import Path

import typer

from .common import _json, _lib, out

roots_app = typer.Typer(help="Read-only skill roots saved in config.toml (used by every command and the server).",
                        no_args_is_help=True)


@roots_app.command("add")
def roots_add(path: Path = typer.Argument(..., metavar="PATH", help="a folder of skill folders"),
              pin: bool = typer.Option(False, "--pin", help="also pin it: a skill whose files change later is held "
                                                            "from agents until `skillshelf trust NAME`")) -> None:
    """Save a root; run `skillshelf sync` to index it."""
    roots = _lib().add_root(path)
    out.print("roots: " + ", ".join(roots))
    if pin:
        from .trust import pin_root

        pin_root(str(path.expanduser().resolve()))   # opened again: the library now has this root


@roots_app.command("remove")
def roots_remove(path: str = typer.Argument(..., metavar="PATH", help="the saved path (or its label)")) -> None:
    """Forget a root (its skills leave the index at the next sync; files are untouched)."""
    roots = _lib(warn_missing=False).remove_root(path)
    out.print("roots: " + (", ".join(roots) or "none"))


@roots_app.command("list")
def roots_list(json_out: bool = typer.Option(False, "--json")) -> None:
    """The saved roots."""
    lib = _lib(warn_missing=False)
    roots = lib.configured_roots()
    if json_out:
        _json(roots)
        return
    if not roots:
        out.print("no roots saved; add one with `skillshelf roots add PATH`")
    missing = {str(m.path): m for m in lib.missing_roots}
    for r in roots:
        m = missing.get(str(Path(r).expanduser()))
        out.print(f"{r}  ({m.problem}: {m.fix})" if m else r)
