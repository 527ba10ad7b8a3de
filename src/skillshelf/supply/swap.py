"""The temporary folders a change of a source is made in, and putting a source's old folder back
when its new one could not take its place.

A temporary folder is ``<home>/sources/.tmp/LABEL-…``, removed when the change ends; one a killed
process left is removed a day later. One that holds the only copy of a source's folder is marked
(``KEEP``) and never removed."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ..errors import SkillshelfError
from . import person_files

STALE_TMP = 86_400      # seconds after which a temporary folder is one a killed process left
KEEP = "KEEP-the-only-copy-of-a-source"     # a marker file: this temporary folder is never removed


@contextlib.contextmanager
def temporary(base: Path, label: str) -> Iterator[Path]:
    """A new folder under ``base/.tmp/`` for one change of the source ``label``."""
    (base / ".tmp").mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        for old in (base / ".tmp").iterdir():
            if time.time() - old.stat().st_mtime > STALE_TMP and not (old / KEEP).exists():
                shutil.rmtree(old, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=base / ".tmp"))
    try:
        yield tmp
    finally:
        if not (tmp / KEEP).exists():
            shutil.rmtree(tmp, ignore_errors=True)
        with contextlib.suppress(OSError):     # (another change still working in it keeps it)
            (base / ".tmp").rmdir()


def put_back(base: Path, label: str, aside: Path, dest: Path) -> None:
    """After a failed change: the source's old folder (moved to ``aside``) back at ``dest``. When
    something made ``dest`` again meanwhile (an editor saving a file of the source), the old folder
    is moved whole to ``sources/.kept/LABEL/`` instead, and a ``SkillshelfError`` says where it is.
    When even that move fails, the old folder stays where it is, the temporary folder is marked
    ``KEEP`` (never removed) and everything else in it goes; the error names it and why."""
    try:
        os.rename(aside, dest)
        return
    except OSError as exc:
        why = exc.strerror or str(exc)
    try:
        kept = person_files.kept_dir(base, label)
        os.rename(aside, kept)      # (onto the new, empty folder)
        also = ""
    except OSError as exc:
        kept = aside
        also = f", and it could not be moved to {base / '.kept'} ({exc.strerror or exc})"
        with contextlib.suppress(OSError):
            (aside.parent / KEEP).touch()
        for other in aside.parent.iterdir():        # (the new files, half made: not a person's)
            if other.name in (aside.name, KEEP):
                continue
            if other.is_dir() and not other.is_symlink():
                shutil.rmtree(other, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    other.unlink()
    raise SkillshelfError(f"the previous folder of the source {label} could not be put back at {dest} ({why}): "
                          f"something wrote there while the update ran{also}; the previous folder is kept whole in "
                          f"{kept}",
                          fix=f"move what is in {dest} elsewhere, move {kept} to {dest}, "
                              + (f"delete {aside.parent}, " if kept == aside else "")
                              + f"then run `skillshelf sources update {label}` again")
