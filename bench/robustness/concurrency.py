"""Concurrency: N MCP stdio servers (``skillshelf serve``, write policy ``open``, one shared
temporary home) driven by the official ``mcp`` SDK client run FIX / DERIVE / MERGE / ARCHIVE
on a few shared skills — half of the servers address skills by name, half by id
(``workspace:<name>``) — plus searches, while CLI edits (``extend-ttl``, ``deprecate``,
``rollback``) run as subprocesses, for a fixed duration. Every FIX carries a unique lesson
marker, every CLI edit a unique reason. Afterwards it checks that every acknowledged change
is in the final file or in a history version, that acknowledged version numbers are unique
per skill and history versions contiguous, that every SKILL.md parses, that ``doctor`` is
consistent with the files, and that no write reported as failed actually happened. It prints
a summary table and exits 1 on any loss or inconsistency.

    python bench/robustness/concurrency.py [--servers 8] [--seconds 60] [--embedder none|minilm]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness as H  # noqa: E402

SHARED = ("shared-alpha", "shared-beta", "shared-gamma")
WORDS = ("cache", "docker", "lockfile", "retry", "timeout", "proxy", "certificate", "migration", "webpack", "cors")


@dataclass
class Op:
    kind: str                 # FIX | DERIVE | ARCHIVE | MERGE | SEARCH | extend-ttl | deprecate | rollback
    worker: str
    by: str                   # name | id
    skill: str                # the skill written (FIX target, new name, CLI target)
    marker: str = ""
    sources: list[str] = field(default_factory=list)
    status: str = ""          # ok | failed | timeout
    version: int | None = None
    message: str = ""
    seconds: float = 0.0
    # filled by the verification
    verdict: str = ""         # present | lost | failed-not-written | failed-but-written | unknown | n/a


@dataclass
class Result:
    servers: int
    seconds: float
    home: str
    ops: list[Op]
    checks: dict
    problems: list[str]
    tracebacks: int
    started: int

    @property
    def ok(self) -> bool:
        return not self.problems

    def count(self, verdict: str, kinds: tuple[str, ...] | None = None) -> int:
        return sum(1 for o in self.ops if o.verdict == verdict and (kinds is None or o.kind in kinds))

    @property
    def lost(self) -> int:
        return self.count("lost")

    @property
    def failed_but_written(self) -> int:
        return self.count("failed-but-written")

    def as_dict(self) -> dict:
        return {"servers": self.servers, "seconds": self.seconds, "home": self.home, "checks": self.checks,
                "problems": self.problems, "tracebacks": self.tracebacks, "started": self.started,
                "ops": [asdict(o) for o in self.ops]}


def _ref(name: str, by: str) -> str:
    return f"workspace:{name}" if by == "id" else name


def setup_home(home: Path, env: dict[str, str]) -> None:
    ws = home / "skills"
    for i, name in enumerate(SHARED):
        H.write_skill(ws, name, f"Shared skill {name}: fix flaky {WORDS[i]} steps in CI pipelines",
                      H.DEFAULT_BODY.format(topic=WORDS[i]))
    r = H.cli(home, "sync", "--json", env=env, timeout=120)
    if r.rc != 0:
        raise SystemExit(f"initial sync failed: {r.err[-2000:]}")


class Runner:
    def __init__(self, home: Path, env: dict[str, str], workdir: Path, servers: int, seconds: float, seed: int,
                 cli_edits: bool, call_timeout: float):
        self.home, self.env, self.workdir = home, env, workdir
        self.n, self.seconds, self.cli_edits = servers, seconds, cli_edits
        self.call_timeout = call_timeout
        self.rng = random.Random(seed)
        self.ops: list[Op] = []
        self.own: dict[int, list[str]] = defaultdict(list)
        self.servers: list[H.StdioServer] = []
        self.ready = 0
        self.failed_start: list[str] = []
        self.go: asyncio.Event | None = None
        self.deadline = 0.0
        self.cli_outputs: list[str] = []

    async def worker(self, i: int) -> None:
        by = "id" if i % 2 else "name"
        rng = random.Random(self.rng.random())
        srv = H.StdioServer(self.home, self.env, self.workdir, tag=f"w{i}")
        self.servers.append(srv)
        try:
            await srv.start(timeout=120)
        except BaseException as exc:
            self.failed_start.append(f"server w{i} did not start: {type(exc).__name__}: {exc}")
            self.ready += 1
            await srv.stop(kill=True)
            return
        self.ready += 1
        await self.go.wait()
        k = 0
        try:
            while time.monotonic() < self.deadline:
                k += 1
                op = self._pick(rng, i, by, k)
                await self._run_op(srv, op, rng)
        finally:
            await srv.stop()

    def _pick(self, rng: random.Random, i: int, by: str, k: int) -> Op:
        w = f"w{i}"
        roll = rng.random()
        own = self.own[i]
        if roll < 0.55:
            target = rng.choice(SHARED)
            return Op("FIX", w, by, target, marker=f"LM-{w}-{k:05d}-{rng.randrange(16 ** 6):06x}")
        if roll < 0.68:
            return Op("SEARCH", w, by, "")
        if roll < 0.78:
            return Op("DERIVE", w, by, f"der-{w}-{k}", sources=[rng.choice(SHARED)])
        if roll < 0.90 or len(own) < 2:
            return Op("ARCHIVE", w, by, f"arc-{w}-{k}")
        if rng.random() < 0.5:
            srcs = rng.sample(own, 2)
        else:
            srcs = [rng.choice(own), rng.choice(SHARED)]
        for s in srcs:
            if s in own:
                own.remove(s)
        return Op("MERGE", w, by, f"mrg-{w}-{k}", sources=srcs)

    async def _run_op(self, srv: H.StdioServer, op: Op, rng: random.Random) -> None:
        word = rng.choice(WORDS)
        if op.kind == "SEARCH":
            res = await srv.call("search_skills", {"query": f"{word} step fails in CI", "limit": 5},
                                 timeout=self.call_timeout)
        else:
            args: dict = {"action": op.kind}
            if op.kind == "FIX":
                args.update(target_skill_name=_ref(op.skill, op.by), lesson=f"{op.marker}: check the {word} first",
                            reason=op.marker)
            elif op.kind == "ARCHIVE":
                args.update(name=op.skill, description=f"Archived {op.skill}: handle {word} errors in builds",
                            body=H.DEFAULT_BODY.format(topic=f"{word} {op.skill}"), tags="bench, " + word)
            elif op.kind == "DERIVE":
                args.update(name=op.skill, target_skill_name=_ref(op.sources[0], op.by),
                            description=f"Derived {op.skill}: {word} variant of {op.sources[0]}")
            elif op.kind == "MERGE":
                args.update(name=op.skill, source_skill_names=", ".join(_ref(s, op.by) for s in op.sources),
                            description=f"Merged {op.skill}: {word} handling from several skills")
            res = await srv.call("save_skill", args, timeout=self.call_timeout)
        op.seconds = res.seconds
        if res.timed_out:
            op.status, op.message = "timeout", f"no answer in {self.call_timeout:.0f} s"
        elif res.ok:
            op.status = "ok"
            if res.structured and isinstance(res.structured.get("version"), int):
                op.version = res.structured["version"]
            if op.kind in ("ARCHIVE", "DERIVE", "MERGE"):
                self.own[int(op.worker[1:])].append(op.skill)
        else:
            op.status = "failed"
            op.message = (res.text or res.exception)[:300]
        self.ops.append(op)

    async def cli_task(self) -> None:
        """One CLI edit at a time (a person at a terminal), addressing by name and by id in turn."""
        await self.go.wait()
        k = 0
        rng = random.Random(self.rng.random())
        while time.monotonic() < self.deadline:
            k += 1
            by = "id" if k % 2 else "name"
            target = rng.choice(SHARED)
            kind = rng.choice(("extend-ttl", "deprecate", "rollback"))
            op = Op(kind, "cli", by, target)
            if kind == "extend-ttl":
                days = 100 + k
                op.marker = f"TTL extended by {days} days"
                argv = ["extend-ttl", _ref(target, by), str(days)]
            elif kind == "deprecate":
                op.marker = f"DEP-{k:04d}-{rng.randrange(16 ** 6):06x}"
                argv = ["deprecate", _ref(target, by), "--reason", op.marker]
            else:
                versions = sorted(int(p.stem[1:]) for p in (self.home / "history" / target).glob("v*.md")
                                  if p.stem[1:].isdigit())
                if not versions:
                    await asyncio.sleep(0.2)
                    continue
                v = rng.choice(versions[: max(1, len(versions) // 2)])
                op.marker = f"rolled back to v{v}"
                argv = ["rollback", _ref(target, by), str(v)]
            t0 = time.perf_counter()
            proc = await asyncio.create_subprocess_exec(
                H.skillshelf_exe(), "--home", str(self.home), *argv, env=self.env,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            try:
                out, err = await asyncio.wait_for(proc.communicate(), timeout=self.call_timeout)
            except asyncio.TimeoutError:
                proc.kill()
                await proc.wait()
                op.status, op.message = "timeout", "CLI edit timed out"
                op.seconds = time.perf_counter() - t0
                self.ops.append(op)
                continue
            op.seconds = time.perf_counter() - t0
            text = out.decode("utf-8", "replace") + err.decode("utf-8", "replace")
            self.cli_outputs.append(text)
            if proc.returncode == 0:
                op.status = "ok"
                m = re.search(r"is now v(\d+)", text)
                if m:
                    op.version = int(m.group(1))
            else:
                op.status, op.message = "failed", text.strip()[:300]
            self.ops.append(op)

    async def main(self) -> None:
        self.go = asyncio.Event()
        tasks = [asyncio.create_task(self.worker(i)) for i in range(self.n)]
        t0 = time.monotonic()
        while self.ready < self.n and time.monotonic() - t0 < 180:
            await asyncio.sleep(0.05)
        self.deadline = time.monotonic() + self.seconds
        if self.cli_edits:
            tasks.append(asyncio.create_task(self.cli_task()))
        self.go.set()
        await asyncio.gather(*tasks, return_exceptions=True)


# --- verification ---------------------------------------------------------------------------------

class Disk:
    """What the home holds for one skill: current text, history versions, changelog."""

    def __init__(self, home: Path, name: str):
        p = home / "skills" / name / "SKILL.md"
        self.current = p.read_text(encoding="utf-8", errors="replace") if p.is_file() else None
        hdir = home / "history" / name
        self.history: dict[int, str] = {}
        if hdir.is_dir():
            for f in hdir.glob("v*.md"):
                if f.stem[1:].isdigit():
                    self.history[int(f.stem[1:])] = f.read_text(encoding="utf-8", errors="replace")
        self.changelog: list[dict] = []
        cl = hdir / "changelog.jsonl"
        if cl.is_file():
            for line in cl.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    self.changelog.append(json.loads(line))
                except json.JSONDecodeError:
                    self.changelog.append({"corrupt": line[:200]})
        self.all_text = "\n".join([self.current or ""] + list(self.history.values()))

    @property
    def exists(self) -> bool:
        return self.current is not None or bool(self.history)

    def has(self, needle: str, *, changelog: bool = False) -> bool:
        """``needle`` in the file or a history version (or, with ``changelog``, in a changelog
        reason: an extend-ttl leaves its trace only there). A FIX's lesson must be in the text:
        a changelog line saying a FIX happened does not keep its lesson."""
        return needle in self.all_text or (changelog and any(needle in str(e.get("reason", "")) for e in self.changelog))


def _file_version(text: str | None) -> int | None:
    if text is None:
        return None
    m = re.search(r"^\s+version:\s*'?(\d+)'?\s*$", text.split("\n---", 1)[0], re.M)
    return int(m.group(1)) if m else None


def verify(home: Path, env: dict[str, str], ops: list[Op], skill_mod) -> tuple[dict, list[str]]:
    problems: list[str] = []
    disks: dict[str, Disk] = {}

    def disk(name: str) -> Disk:
        if name not in disks:
            disks[name] = Disk(home, name)
        return disks[name]

    for op in ops:
        if op.kind == "SEARCH":
            op.verdict = "n/a"
            continue
        d = disk(op.skill)
        if op.kind == "FIX":
            landed = d.has(op.marker)
        elif op.kind in ("ARCHIVE", "DERIVE"):
            landed = d.exists
        elif op.kind == "MERGE":
            landed = d.exists
            if op.status == "ok":
                for s in op.sources:
                    if not disk(s).has(f"merged-into: {op.skill}"):
                        problems.append(f"MERGE {op.skill} acknowledged, but source {s} was never marked merged into it")
                        landed = False
        elif op.kind == "extend-ttl":
            landed = d.has(op.marker, changelog=True)
        elif op.kind == "deprecate":
            landed = d.has(op.marker)
        elif op.kind == "rollback":
            landed = op.version is not None and op.version in d.history
            if op.status != "ok":
                op.verdict = "unknown"
                continue
        else:
            landed = False
        if op.status == "ok":
            op.verdict = "present" if landed else "lost"
        elif op.status == "failed":
            op.verdict = "failed-but-written" if landed else "failed-not-written"
        else:
            op.verdict = "unknown"
    for op in ops:
        if op.verdict == "lost":
            problems.append(f"lost: {op.kind} {op.skill} by {op.by} ({op.worker}) acknowledged"
                            + (f" as v{op.version}" if op.version else "") + (f", marker {op.marker}" if op.marker else ""))
        elif op.verdict == "failed-but-written":
            problems.append(f"reported failed but written: {op.kind} {op.skill} by {op.by}: {op.message[:120]}")

    # acknowledged versions: unique per skill; an acknowledged FIX's version holds its marker
    acked: dict[str, Counter] = defaultdict(Counter)
    mismatched = 0
    for op in ops:
        if op.status == "ok" and op.version is not None and op.kind != "SEARCH":
            acked[op.skill][op.version] += 1
            if op.kind == "FIX":
                text = disk(op.skill).history.get(op.version)
                if text is not None and op.marker not in text:
                    mismatched += 1
    dup_versions = sum(c - 1 for cnt in acked.values() for c in cnt.values() if c > 1)
    if dup_versions:
        problems.append(f"{dup_versions} acknowledged version numbers were given to more than one write")
    if mismatched:
        problems.append(f"{mismatched} acknowledged FIX versions whose history file holds another write's text")

    # history: contiguous versions, the file at the newest, one changelog entry per version
    gaps, head_mismatch, cl_dups, cl_missing = [], [], 0, 0
    for hdir in sorted((home / "history").glob("*")) if (home / "history").is_dir() else []:
        if not hdir.is_dir():
            continue
        d = disk(hdir.name)
        vs = sorted(d.history)
        if not vs:
            continue
        missing = sorted(set(range(1, vs[-1] + 1)) - set(vs))
        if missing:
            gaps.append(f"{hdir.name}: missing v{', v'.join(map(str, missing[:10]))}")
        fv = _file_version(d.current)
        if d.current is not None and fv != vs[-1]:
            head_mismatch.append(f"{hdir.name}: file v{fv}, newest history v{vs[-1]}")
        tos = Counter(e.get("to_version") for e in d.changelog if "to_version" in e)
        cl_dups += sum(c - 1 for c in tos.values() if c > 1)
        cl_missing += len([v for v in vs if v > 1 and v not in tos])
    if gaps:
        problems.append(f"history gaps in {len(gaps)} skills: " + "; ".join(gaps[:5]))
    if head_mismatch:
        problems.append(f"{len(head_mismatch)} skills whose file is not the newest history version: "
                        + "; ".join(head_mismatch[:5]))
    if cl_dups:
        problems.append(f"{cl_dups} changelog entries repeat a version number")

    # every SKILL.md and history version parses
    unparsable = []
    files = sorted((home / "skills").rglob("SKILL.md")) + sorted((home / "history").rglob("v*.md"))
    for f in files:
        parsed = skill_mod.parse(f.read_bytes(), folder_name=f.parent.name)
        if parsed.skill is None:
            unparsable.append(f"{f.relative_to(home)}: {parsed.findings[-1].message}")
    if unparsable:
        problems.append(f"{len(unparsable)} files do not parse: " + "; ".join(unparsable[:5]))
    leftovers = [str(p.relative_to(home)) for p in home.rglob(".tmp-*")]

    # the index agrees with the files after one sync; doctor says so
    sync = H.cli(home, "sync", "--json", env=env, timeout=120)
    doc = H.cli(home, "doctor", "--json", env=env, timeout=120)
    lst = H.cli(home, "list", "--json", env=env, timeout=120)
    doctor_ok, index_ok, version_mismatch = False, False, []
    try:
        rep = json.loads(doc.out)
        doctor_ok = bool(rep.get("ok"))
        index_ok = any(c["name"] == "index vs files" and c["status"] == "ok" for c in rep["checks"])
    except (json.JSONDecodeError, KeyError, TypeError):
        problems.append(f"doctor --json did not answer JSON (rc {doc.rc}): {doc.text[-300:]}")
    if not doctor_ok:
        problems.append(f"doctor is not ok after sync: {doc.out[-600:] or doc.err[-600:]}")
    if not index_ok:
        problems.append("doctor: the index does not match the files after one sync")
    try:
        rows = json.loads(lst.out)
        n_files = len(list((home / "skills").rglob("SKILL.md")))
        if len(rows) != n_files:
            problems.append(f"list shows {len(rows)} skills, the workspace holds {n_files} SKILL.md files")
        for row in rows:
            fv = _file_version(Path(row["path"]).read_text(encoding="utf-8", errors="replace")) \
                if Path(row["path"]).is_file() else None
            if fv is not None and fv != row["version"]:
                version_mismatch.append(f"{row['name']}: index v{row['version']}, file v{fv}")
    except (json.JSONDecodeError, KeyError, TypeError):
        problems.append(f"list --json did not answer JSON (rc {lst.rc}): {lst.text[-300:]}")
    if version_mismatch:
        problems.append(f"{len(version_mismatch)} index versions differ from the files: " + "; ".join(version_mismatch[:5]))
    for r in (sync, doc, lst):
        if r.traceback:
            problems.append(f"traceback in `skillshelf {r.argv[3]}`: {r.err[-400:]}")
    checks = {"acknowledged_versions_duplicated": dup_versions, "fix_version_holds_other_text": mismatched,
              "history_gaps": len(gaps), "file_not_newest_history": len(head_mismatch),
              "changelog_duplicate_versions": cl_dups, "changelog_missing_versions": cl_missing,
              "unparsable_files": len(unparsable), "files_checked": len(files), "tmp_leftovers": len(leftovers),
              "doctor_ok": doctor_ok, "index_matches_files": index_ok, "index_version_mismatch": len(version_mismatch),
              "skills_in_workspace": len(list((home / "skills").rglob("SKILL.md")))}
    return checks, problems


def run(servers: int = 8, seconds: float = 60.0, *, embedder: str = "none", seed: int = 1, cli_edits: bool = True,
        call_timeout: float = 60.0, keep: bool = False, workdir: Path | None = None, src: str | None = None,
        quiet: bool = False) -> Result:
    """Run the scenario and verify it; the home is removed afterwards unless ``keep``
    (or a problem was found)."""
    base = Path(workdir or tempfile.mkdtemp(prefix="skillshelf-conc-"))
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = H.child_env(home, embedder=embedder, policy="open", src=src)
    skill_mod = H.import_skillshelf(src)
    setup_home(home, env)
    runner = Runner(home, env, base / "logs", servers, seconds, seed, cli_edits, call_timeout)
    if not quiet:
        print(f"home {home}: {servers} servers for {seconds:.0f} s (embedder {embedder})", file=sys.stderr)
    asyncio.run(runner.main())
    checks, problems = verify(home, env, runner.ops, skill_mod)
    problems = runner.failed_start + problems
    tracebacks = 0
    for srv in runner.servers:
        n = srv.stderr_text().count("Traceback (most recent call last)")
        tracebacks += n
    cli_tbs = [t for t in runner.cli_outputs if H.has_traceback(t)]
    tracebacks += len(cli_tbs)
    for t in cli_tbs[:3]:
        last = [ln for ln in t.strip().splitlines() if ln.strip()][-3:]
        problems.append("CLI traceback: " + " | ".join(x.strip(" │╰─╯") for x in last))
    for srv in runner.servers:
        text = srv.stderr_text()
        if H.has_traceback(text):
            tail = text[text.find("Traceback"):][-600:]
            problems.append(f"server {srv.tag} traceback: ...{tail[-300:]}")
    if tracebacks:
        problems.append(f"{tracebacks} tracebacks in server logs / CLI output (logs in {base / 'logs'})")
    started = servers - len(runner.failed_start)
    res = Result(servers, seconds, str(home), runner.ops, checks, problems, tracebacks, started)
    if not keep and res.ok:
        shutil.rmtree(base, ignore_errors=True)
    return res


def summary(res: Result) -> str:
    kinds = ["FIX", "DERIVE", "ARCHIVE", "MERGE", "SEARCH", "extend-ttl", "deprecate", "rollback"]
    rows = []
    for kind in kinds:
        for by in ("name", "id"):
            ops = [o for o in res.ops if o.kind == kind and o.by == by]
            if not ops:
                continue
            prefix = "cli " if kind in ("extend-ttl", "deprecate", "rollback") else ""
            rows.append([f"{prefix}{kind} by {by}", len(ops), sum(o.status == "ok" for o in ops),
                         sum(o.status == "failed" for o in ops), sum(o.status == "timeout" for o in ops),
                         sum(o.verdict == "lost" for o in ops), sum(o.verdict == "failed-but-written" for o in ops),
                         f"{max((o.seconds for o in ops), default=0):.1f}"])
    tot = [o for o in res.ops]
    rows.append(["total", len(tot), sum(o.status == "ok" for o in tot), sum(o.status == "failed" for o in tot),
                 sum(o.status == "timeout" for o in tot), res.lost, res.failed_but_written,
                 f"{max((o.seconds for o in tot), default=0):.1f}"])
    out = [H.fmt_table(rows, ["operation", "tried", "acked", "failed", "timeout", "lost", "failed-but-written",
                              "max s"])]
    out.append("")
    out.append("checks: " + ", ".join(f"{k}={v}" for k, v in res.checks.items()))
    out.append(f"server tracebacks: {res.tracebacks}; servers started: {res.started}/{res.servers}")
    msgs = Counter(re.sub(r"\d+", "N", o.message)[:90] for o in res.ops if o.status == "failed")
    if msgs:
        out.append("failure messages (most common):")
        out += [f"  {n:4d}  {m}" for m, n in msgs.most_common(8)]
    if res.problems:
        out.append(f"PROBLEMS ({len(res.problems)}):")
        out += [f"  - {p}" for p in res.problems[:40]]
        if len(res.problems) > 40:
            out.append(f"  ... and {len(res.problems) - 40} more")
        out.append(f"home kept for inspection: {res.home}")
    else:
        out.append("no lost or inconsistent changes")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--servers", type=int, default=8, help="MCP stdio servers writing at once (default 8)")
    ap.add_argument("--seconds", type=float, default=60.0, help="duration of the write phase (default 60)")
    ap.add_argument("--embedder", default="none", help="SKILLSHELF_EMBEDDER for the servers: none (default) or "
                                                       "minilm (the real bundled model)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-cli", action="store_true", help="no CLI edits beside the servers")
    ap.add_argument("--call-timeout", type=float, default=60.0, help="seconds before a call counts as hung")
    ap.add_argument("--keep", action="store_true", help="keep the temporary home")
    ap.add_argument("--workdir", type=Path, help="use this folder instead of a temporary one")
    ap.add_argument("--src", help="run another source tree (its src/ folder, via PYTHONPATH)")
    ap.add_argument("--json-out", type=Path, help="write every operation and check as JSON here")
    a = ap.parse_args(argv)
    res = run(a.servers, a.seconds, embedder=a.embedder, seed=a.seed, cli_edits=not a.no_cli,
              call_timeout=a.call_timeout, keep=a.keep, workdir=a.workdir, src=a.src)
    print(summary(res))
    if a.json_out:
        a.json_out.write_text(json.dumps(res.as_dict(), indent=1))
    return 0 if res.ok else 1


if __name__ == "__main__":
    sys.exit(main())
