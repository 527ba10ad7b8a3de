"""For ``doctor``: saved roots that point into another skillshelf home's ``sources/``.

A home saves its sources' folders relative to itself (``config.add_root``), so a moved or copied
home reads its own. An older home saved them absolute: after a move they are read as this home's
(``config.anchored``), and said so; after a copy they still name the original home's folder, and
the copy would read that home's files: said, with the commands that fix it."""

from __future__ import annotations

from pathlib import Path

from .. import config as configmod
from ..checks import Check
from ..errors import SkillshelfError


def checks(home: Path) -> list[Check]:
    try:
        entries = configmod.saved_entries(home)
    except SkillshelfError:
        return []             # (the config's own check names a broken file)
    here = Path(home).resolve()
    out = []
    for raw in entries:
        other = raw.parent.parent
        if not raw.is_absolute() or raw.parent.name != "sources" or other.resolve() == here:
            continue
        mine = here / "sources" / raw.name
        fix = f"`skillshelf roots remove {raw}`, then `skillshelf roots add {mine}` (saved relative to this home)"
        read = configmod.anchored(home, raw)
        if read != raw:
            out.append(Check("sources", "warn", f"config.toml names {raw}, which has gone (the home was moved): it is "
                                                f"read as {mine}; {fix}"))
        elif not raw.exists():
            out.append(Check("sources", "warn", f"the root {raw} does not exist: config.toml names a folder of another "
                                                f"skillshelf home ({other}), not this home's; `skillshelf roots remove "
                                                f"{raw}`" + (f", or `skillshelf roots add {mine}`" if mine.is_dir() else "")))
        elif mine.is_dir() or (other / "skillshelf.lock").is_file() or (other / "config.toml").is_file():
            out.append(Check("sources", "warn", f"the root {raw} is in another skillshelf home ({other}): this home "
                                                f"reads that home's files" + (f", not its own {mine}; {fix}"
                                                                               if mine.is_dir() else "")))
    return out
