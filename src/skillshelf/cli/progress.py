"""A sync's progress on stderr: a live display on a terminal, plain lines anywhere else.

The library reports two counts: files read into the lexical index (done of total) and
texts given their vectors (done of total: embedded, or taken from a cache or the team store). A local model embeds the texts of changed skills while the
files are read; what is left after the last file is the phase "embedding (finishing)".
A count not known yet is not shown (no "0/?"); the rate and the time left appear once a
phase has a count and some speed."""

from __future__ import annotations

import threading
import time
from typing import Any

from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn
from rich.table import Column
from rich.text import Text

# a log, a pipe or CI gets a line per phase, and one more at most this often while it lasts
PLAIN_EVERY = 10.0
# finding the files gets its line only when it takes this long (an unchanged sync prints nothing)
PLAIN_FINDING_AFTER = 2.0

# The live line's columns, each of a fixed width and never wrapped: the phase ("embedding (beside
# reading)"), the count ("10,610/10,610"), the rate ("12,345 files/s"), the time taken ("1:26") and
# the time left ("~12:34 left"). The bar takes what the terminal has left, up to BAR_MAX; below
# BAR_MIN cells (an 80-column terminal) there is no bar: the count says as much.
WIDTHS = {"phase": 26, "count": 13, "rate": 14, "elapsed": 5, "left": 11}
BAR_MIN, BAR_MAX = 8, 40


class SyncProgress:
    """The callbacks a sync is given (``on_files``, ``on_texts``), shown on ``console``: live
    and transient (the summary line replaces it) on an interactive terminal, else plain lines.
    An unchanged sync prints nothing."""

    def __init__(self, console: Any, *, embedding: bool):
        self.embedding = embedding
        self.view: _Live | _Plain = _Live(console, embedding) if console.is_interactive else _Plain(console)
        self.files = (0, 0)
        self.texts_done = -1
        self.reading = False       # files are being read
        self.read = False          # the last file was read
        self.lock = threading.Lock()   # a model may report from its own thread

    def __enter__(self) -> "SyncProgress":
        self.view.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.view.stop()

    def on_files(self, done: int, total: int) -> None:
        with self.lock:
            if not self.reading and not self.read:
                self.reading = True
                self.view.reading(total, self.embedding)
            self.view.files(done, total)
            if done >= total and not self.read:
                self.reading, self.read = False, True
                if total and self.embedding:
                    self.view.finishing(self.texts_done >= 0)

    def on_texts(self, done: int, total: int) -> None:
        with self.lock:
            if done < self.texts_done:     # a count of its own (what was left to embed): a new phase
                self.view.embedding(total, restart=True)
            elif self.texts_done < 0:
                self.view.embedding(total, restart=False, beside=self.reading)
            self.texts_done = done
            self.view.texts(done, total, final=not self.reading)


def vectors_said(rep: Any, team: bool) -> str:
    """The end of sync's summary: how many texts had their vectors without the model (from the
    team store, or a local library's vector cache, and those the index held already); nothing
    when there were none."""
    said = [(getattr(rep, "vectors_shared", 0), "from the team store" if team else "from the vector cache"),
            (getattr(rep, "vectors_cached", 0), "already in the index")]
    return "".join(f" · {n:,} vector{'s' * (n != 1)} {where}" for n, where in said if n)


# --- on a terminal ------------------------------------------------------------------------------

def _fixed(width: int, justify: str = "left") -> Column:
    return Column(width=width, no_wrap=True, overflow="crop", justify=justify)  # type: ignore[arg-type]


def bar_width(width: int) -> int:
    """The bar's width on a terminal ``width`` columns wide (0: no bar): what the other
    columns and the spaces between them leave, one column spare."""
    left = width - sum(WIDTHS.values()) - len(WIDTHS) - 1
    return min(left, BAR_MAX) if left >= BAR_MIN else 0


class _Live:
    def __init__(self, console: Any, embedding: bool):
        w = WIDTHS
        bar = bar_width(console.width)
        columns: list[ProgressColumn] = [TextColumn("{task.description}", table_column=_fixed(w["phase"]))]
        if bar:
            columns.append(BarColumn(bar_width=bar))
        columns += [_CountColumn(table_column=_fixed(w["count"], "right")),
                    _RateColumn(table_column=_fixed(w["rate"], "right")),
                    _ElapsedColumn(table_column=_fixed(w["elapsed"], "right")),
                    _LeftColumn(table_column=_fixed(w["left"]))]
        self.prog = Progress(*columns, console=console, transient=True)
        self.scan = self.prog.add_task("finding skill files", total=None)
        self.read = self.prog.add_task("reading · lexical index", total=None, visible=False, unit="files")
        self.embed = self.prog.add_task("embedding", total=None, visible=False, unit="texts", final=False)
        self.since = (time.monotonic(), -1)     # when the texts' phase had its first count, and that count

    def start(self) -> None:
        self.prog.start()

    def stop(self) -> None:
        self.prog.stop()

    def reading(self, total: int, embedding: bool) -> None:
        p = self.prog
        p.update(self.scan, total=1, completed=1, visible=False)
        p.reset(self.read, total=total, completed=0, visible=True)

    def files(self, done: int, total: int) -> None:
        self.prog.update(self.read, completed=done, total=total)

    def finishing(self, counted: bool) -> None:
        p = self.prog
        p.update(self.embed, description="embedding (finishing)", visible=True, final=True)
        if not counted:   # the texts read last are still with the model: time, no count yet
            p.reset(self.embed, total=None, completed=0, visible=True)

    def embedding(self, total: int, *, restart: bool, beside: bool = False) -> None:
        p = self.prog
        self.since = (time.monotonic(), -1)
        if restart:
            # (rich's reset replaces a task's fields: each is given again)
            p.reset(self.embed, total=total, completed=0, visible=True, description="embedding", unit="texts",
                    final=True, rate=None)
        else:
            desc = "embedding (beside reading)" if beside else p.tasks[self.embed].description
            p.reset(self.embed, total=total, completed=0, visible=True, description=desc, unit="texts",
                    final=p.tasks[self.embed].fields.get("final", False), rate=None)

    def texts(self, done: int, total: int, *, final: bool) -> None:
        # rich forgets a task's speed whenever its total changes, and the texts' total grows
        # while files are read: the rate is also counted here, from the phase's first count
        now = time.monotonic()
        t0, d0 = self.since
        if d0 < 0:
            self.since = t0, d0 = now, done
        rate = (done - d0) / (now - t0) if done > d0 and now - t0 >= 0.5 else None
        self.prog.update(self.embed, completed=done, total=total, final=final, rate=rate)


class _CountColumn(ProgressColumn):
    """done/total, once there is a total (an unknown count is not "0/?")."""

    def render(self, task: Any) -> Text:
        if task.total is None:
            return Text("")
        total = f"{int(task.total):,}"
        return Text(f"{int(task.completed):>{len(total)},}/{total}", style="progress.download")


class _RateColumn(ProgressColumn):
    """Items per second of a counted task ("212 texts/s")."""

    def render(self, task: Any) -> Text:
        unit = task.fields.get("unit")
        speed = task.speed or task.fields.get("rate")
        if not unit or task.total is None or not speed:
            return Text("")
        return Text(f"{speed:,.0f} {unit}/s")


class _ElapsedColumn(ProgressColumn):
    """The time the phase has taken ("1:26")."""

    def render(self, task: Any) -> Text:
        elapsed = task.finished_time if task.finished else task.elapsed
        return Text(_clock(elapsed or 0.0), style="progress.elapsed")


class _LeftColumn(ProgressColumn):
    """Time left, once a counted task has a speed and its total is final (the texts to embed
    grow while files are still being read)."""

    def render(self, task: Any) -> Text:
        if task.total is None or task.finished or task.fields.get("final") is False:
            return Text("")
        left = task.time_remaining
        if left is None and task.fields.get("rate"):
            left = (task.total - task.completed) / task.fields["rate"]
        return Text(f"~{_clock(left)} left") if left is not None else Text("")


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 60}:{s % 60:02d}"


# --- a pipe, a log, CI ------------------------------------------------------------------------------

class _Plain:
    """A line when a phase starts, and its count, rate and time left every ``PLAIN_EVERY``
    seconds while it lasts. Finding the files has no count: its line comes only when it has
    taken ``PLAIN_FINDING_AFTER`` seconds, so a log does not sit silent through a large library's
    first look and a quick sync stays quiet."""

    def __init__(self, console: Any):
        self.console = console
        self.phase = ""
        self.unit = ""
        self.started = self.last = 0.0
        self.base = -1
        self.finding: threading.Timer | None = None

    def start(self) -> None:
        self.finding = threading.Timer(PLAIN_FINDING_AFTER, self.console.print, ("finding skill files",))
        self.finding.daemon = True
        self.finding.start()

    def stop(self) -> None:
        self._found()

    def _found(self) -> None:
        if self.finding is not None:
            self.finding.cancel()
            self.finding = None

    def _begin(self, phase: str, unit: str, line: str) -> None:
        self.phase, self.unit = phase, unit
        self.started = self.last = time.monotonic()
        self.base = -1             # the rate counts from the phase's first count
        self.console.print(line)

    def reading(self, total: int, embedding: bool) -> None:
        self._found()
        if total:
            # (vectors a cache or the team store holds are taken, not embedded: the model may embed none)
            beside = " (meanwhile the model embeds what no cache holds)" if embedding else ""
            self._begin("reading", "files", f"reading {total:,} files · lexical index{beside}")

    def files(self, done: int, total: int) -> None:
        if self.phase == "reading":
            self._tick(done, total, final=True)

    def finishing(self, counted: bool) -> None:
        self._begin("embedding (finishing)", "texts", "embedding (finishing): the texts of the files read last that no cache holds")

    def embedding(self, total: int, *, restart: bool, beside: bool = False) -> None:
        if not beside and total and (restart or self.phase != "embedding (finishing)"):
            self._begin("embedding", "texts", f"embedding {total:,} texts")

    def texts(self, done: int, total: int, *, final: bool) -> None:
        if self.phase.startswith("embedding"):
            self._tick(done, total, final=final)

    def _tick(self, done: int, total: int, *, final: bool) -> None:
        now = time.monotonic()
        if self.base < 0:
            self.base, self.started = done, now
        if now - self.last < PLAIN_EVERY or done >= total:
            return
        self.last = now
        line = f"{self.phase}: {done:,}/{total:,} {self.unit}"
        rate = (done - self.base) / (now - self.started) if now > self.started else 0.0
        if rate > 0:
            line += f" · {rate:,.0f} {self.unit}/s"
            if final:
                line += f" · ~{_clock((total - done) / rate)} left"
        self.console.print(line)
