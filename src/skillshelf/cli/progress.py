"""A sync's progress on stderr, one line per phase on an interactive terminal."""

from __future__ import annotations

from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
from rich.text import Text


class SyncProgress:
    """A sync's phases on stderr, one line each: finding the files, reading them into the
    lexical index (files done of total, files/s, time left), and embedding (texts done of
    total, texts/s, time left). The model embeds changed skills while they are read; what is
    left after the last file shows as "embedding (finishing)" until the library reports
    counts. Transient: the summary line replaces it. Only on an interactive terminal."""

    def __init__(self, console: Any, *, embedding: bool):
        self.embedding = embedding
        self.prog = Progress(TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(),
                             _RateColumn(), TimeElapsedColumn(), _LeftColumn(), console=console, transient=True,
                             # where stderr is no terminal (a pipe, a log, CI) nothing is drawn, and Rich
                             # would end the display with an empty line ahead of the summary
                             disable=not console.is_interactive)
        self.scan = self.prog.add_task("finding skill files", total=None)
        self.read = self.prog.add_task("reading · lexical index", total=None, visible=False, unit="files")
        self.embed = self.prog.add_task("embedding", total=None, visible=False, unit="texts")
        self.counting = False

    def __enter__(self) -> "SyncProgress":
        self.prog.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.prog.__exit__(*exc)

    def on_files(self, done: int, total: int) -> None:
        p = self.prog
        if not p.tasks[self.read].visible:
            p.update(self.scan, total=1, completed=1, visible=False)
            p.update(self.read, visible=True)
            p.reset(self.read, total=total, completed=done, visible=True)
            if self.embedding and total:
                p.update(self.embed, description="embedding (beside reading)", visible=True)
        p.update(self.read, completed=done, total=total)
        if total and done >= total and self.embedding and not self.counting:
            p.update(self.embed, description="embedding (finishing)", visible=True)

    def on_texts(self, done: int, total: int) -> None:
        p = self.prog
        if not self.counting:
            self.counting = True
            p.reset(self.embed, total=total, completed=0, visible=True, description="embedding")
        p.update(self.embed, completed=done, total=total)


class _RateColumn(ProgressColumn):
    """Items per second of a counted task ("212 texts/s")."""

    def render(self, task: Any) -> Text:
        unit = task.fields.get("unit")
        if not unit or task.total is None or not task.speed:
            return Text("")
        return Text(f"{task.speed:,.0f} {unit}/s")


class _LeftColumn(ProgressColumn):
    """Time left, once a counted task has a speed."""

    def render(self, task: Any) -> Text:
        if task.total is None or task.finished or task.time_remaining is None:
            return Text("")
        left = int(task.time_remaining)
        return Text(f"~{left // 60}:{left % 60:02d} left")
