"""A skill's trigger evals, as the Agent Skills guide keeps them ("Optimizing skill descriptions").

``evals/eval_queries.json`` in the skill's folder is a JSON list of realistic requests, each
``{"query": "...", "should_trigger": true | false}``. A skill that keeps the guide's split holds
``evals/train_queries.json`` (about 60 %) and ``evals/validation_queries.json`` (about 40 %)
beside it, or instead of it. Every file is read bounded, inside the skill's folder; a file that
is not that shape is a finding naming its line, never an exception."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ValidationError
from ..files import FileRefused, contained, read_text_bounded
from ..skill import Finding

EVALS_DIR = "evals"
# file name -> the split its queries belong to ("all": the whole set)
EVAL_FILES = (("eval_queries.json", "all"), ("train_queries.json", "train"),
              ("validation_queries.json", "validation"))
MAX_EVAL_BYTES = 512_000       # about twenty requests is the guide's size; a thousand long ones fit
MAX_QUERIES = 500              # per file
MAX_QUERY_CHARS = 2_000        # what search reads of a request


@dataclass(frozen=True)
class EvalQuery:
    query: str
    should_trigger: bool
    split: str = "all"          # all | train | validation (the file it came from)


@dataclass
class EvalSet:
    """The trigger evals of one skill: the queries (a query in two files counts once, with the
    split of the first) and what was wrong with the files (``findings``, each with the file in
    its message and the line)."""

    queries: list[EvalQuery] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    @property
    def present(self) -> bool:
        """Whether the skill keeps an eval file at all (a broken one counts)."""
        return bool(self.files)


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _problem(name: str, line: int | None, message: str) -> Finding:
    return Finding("error", "evals.malformed", f"{EVALS_DIR}/{name}: {message}", line)


def parse_queries(text: str, name: str = "eval_queries.json", split: str = "all") \
        -> tuple[list[EvalQuery], list[Finding]]:
    """The queries of one eval file's text and the problems found, each naming its line. The
    list is walked item by item, so one bad item is reported with its own line and the others
    are kept."""
    dec = json.JSONDecoder()
    out: list[EvalQuery] = []
    problems: list[Finding] = []
    n = len(text)

    def skip(i: int) -> int:
        while i < n and text[i] in " \t\r\n":
            i += 1
        return i

    i = skip(0)
    if i >= n or text[i] != "[":
        return [], [_problem(name, _line(text, i), 'the file must be a JSON list: [{"query": "...", '
                                                   '"should_trigger": true}, ...]')]
    i = skip(i + 1)
    if i < n and text[i] == "]":
        i += 1
    else:
        while True:
            start = i
            try:
                item, i = dec.raw_decode(text, i)
            except json.JSONDecodeError as exc:
                problems.append(_problem(name, exc.lineno, f"not valid JSON: {exc.msg}"))
                return out, problems
            except RecursionError:      # arrays nested thousands deep: Python's decoder recurses
                problems.append(_problem(name, _line(text, start), "not valid eval JSON: nested too deeply "
                                                                  "(an item is one object, not lists in lists)"))
                return out, problems
            where = _line(text, start)
            if len(out) >= MAX_QUERIES:
                problems.append(_problem(name, where, f"more than {MAX_QUERIES} queries; the rest are not read"))
                return out, problems
            if not isinstance(item, dict):
                problems.append(_problem(name, where, 'each item must be an object {"query": "...", '
                                                      '"should_trigger": true|false}'))
            elif not isinstance(item.get("query"), str) or not item["query"].strip():
                problems.append(_problem(name, where, '"query" must be a request in words'))
            elif not isinstance(item.get("should_trigger"), bool):
                problems.append(_problem(name, where, '"should_trigger" must be true or false'))
            elif len(item["query"]) > MAX_QUERY_CHARS:
                problems.append(_problem(name, where, f"the query is over {MAX_QUERY_CHARS:,} characters"))
            else:
                out.append(EvalQuery(" ".join(item["query"].split()), item["should_trigger"], split))
            i = skip(i)
            if i < n and text[i] == ",":
                i = skip(i + 1)
                continue
            if i < n and text[i] == "]":
                i += 1
                break
            problems.append(_problem(name, _line(text, i), "expected ',' or ']' after an item"))
            return out, problems
    if skip(i) < n:
        problems.append(_problem(name, _line(text, skip(i)), "text after the end of the list"))
    return out, problems


def read_evals(folder: str | Path) -> EvalSet:
    """The trigger evals kept in a skill's folder (an empty set when it keeps none)."""
    folder = Path(folder)
    res = EvalSet()
    base = folder / EVALS_DIR
    if not base.is_dir():
        return res
    seen: set[str] = set()
    for name, split in EVAL_FILES:
        path = base / name
        if not (path.exists() or path.is_symlink()):
            continue
        res.files.append(f"{EVALS_DIR}/{name}")
        try:
            text = read_text_bounded(contained(folder, path), MAX_EVAL_BYTES)
        except FileRefused as exc:
            res.findings.append(Finding("error", exc.rule, f"{EVALS_DIR}/{name}: {exc.message}"))
            continue
        except ValidationError as exc:       # a link out of the skill's folder
            res.findings.append(Finding("error", "evals.outside", f"{EVALS_DIR}/{name}: {exc.message}"))
            continue
        except OSError as exc:
            res.findings.append(Finding("error", "file.unreadable", f"{EVALS_DIR}/{name}: cannot read: "
                                                                    f"{exc.strerror or exc}"))
            continue
        queries, problems = parse_queries(text, name, split)
        res.findings.extend(problems)
        for q in queries:
            if q.query.lower() not in seen:
                seen.add(q.query.lower())
                res.queries.append(q)
    return res
