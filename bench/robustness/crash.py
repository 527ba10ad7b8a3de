"""Crash safety: kill -9 (SIGKILL to the whole process group) at random points of real
writes — a FIX approved with ``skillshelf review approve``, a FIX through a ``skillshelf serve``
stdio server, ``rollback``, ``deprecate``, a MERGE approved from a draft, and ``sync`` of many
edited files — and check after each kill that every SKILL.md is byte-for-byte the old text or
a complete new one (parses, is exactly what the renderer writes, carries the change), never
mixed, truncated or empty; then that one ``skillshelf sync`` brings the index back in line
with the files (``doctor --json`` ok, versions equal). A second phase deletes the database
(with and without a running server) and overwrites pages in the middle of it, and checks that
the damage is detected with a clear message (no traceback) and that the index is rebuilt from
the files. Prints a table per operation and exits 1 on any torn file, lost file, failed
recovery or traceback.

    python bench/robustness/crash.py [--kills 120] [--seed 1] [--corruptions 8]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import select
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness as H  # noqa: E402

OPS = ("approve-fix", "mcp-fix", "rollback", "deprecate", "merge", "sync")
WEIGHTS = (0.24, 0.18, 0.16, 0.10, 0.14, 0.18)
BIG = 12          # skills with ~150 KB bodies (a wide write window)
SMALL = 300       # small skills (sync has real work to do)


@dataclass
class Kill:
    op: str
    target: str
    delay: float
    killed: bool              # the process was still running when it was killed
    outcome: str = ""         # old | new | n/a
    torn: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    tmp_left: int = 0
    tmp_after_sync: int = 0
    recovered: bool = True
    recovery_note: str = ""
    traceback: bool = False


def _body(topic: str, kb: int) -> str:
    para = (f"When the {topic} job fails, read the log from the bottom, find the first error, and compare it "
            f"with the last green run of {topic}. ")
    reps = max(1, kb * 1024 // len(para))
    return (f"## When to Use\n\nThe {topic} step fails.\n\n## Solution\n\n" + "\n\n".join([para] * reps)
            + "\n\n## Verification\n\nGreen again.\n")


def setup(home: Path, env: dict[str, str]) -> tuple[list[str], list[str]]:
    ws = home / "skills"
    big = [f"big-skill-{i:02d}" for i in range(BIG)]
    small = [f"small-skill-{i:03d}" for i in range(SMALL)]
    for i, n in enumerate(big):
        H.write_skill(ws, n, f"Large skill {n} about build failures number {i}", _body(n, 150))
    for i, n in enumerate(small):
        H.write_skill(ws, n, f"Small skill {n} about topic {i}", _body(n, 1))
    r = H.cli(home, "sync", "--json", env=env, timeout=300)
    if r.rc != 0:
        raise SystemExit(f"initial sync failed: {r.text[-2000:]}")
    return big, small


def read_all(ws: Path) -> dict[str, bytes]:
    out = {}
    for p in ws.rglob("SKILL.md"):
        with contextlib.suppress(OSError):
            out[str(p.relative_to(ws))] = p.read_bytes()
    return out


def _version(skill_mod, data: bytes) -> int | None:
    parsed = skill_mod.parse(data)
    return parsed.skill.version if parsed.skill else None


def complete(skill_mod, data: bytes) -> str:
    """'' when ``data`` is a whole SKILL.md as the renderer writes it, else the reason."""
    if not data.strip():
        return "empty"
    parsed = skill_mod.parse(data)
    if parsed.skill is None:
        return "does not parse: " + parsed.findings[-1].message[:80]
    if parsed.skill.render().encode("utf-8") != data:
        return "not what the renderer writes (torn or mixed)"
    return ""


def spawn_cli(home: Path, env: dict[str, str], args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([H.skillshelf_exe(), "--home", str(home), *args], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)


def kill_after(p: subprocess.Popen, delay: float) -> tuple[bool, str]:
    """SIGKILL the process group after ``delay`` s; (was it still running, its stderr)."""
    try:
        p.wait(delay)
        alive = False
    except subprocess.TimeoutExpired:
        alive = True
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.pid, signal.SIGKILL)
    _, err = p.communicate()
    return alive, (err or b"").decode("utf-8", "replace")


class RawStdio:
    """A stdio server spoken to with raw JSON-RPC lines (so it can be killed mid-call)."""

    def __init__(self, home: Path, env: dict[str, str], errpath: Path):
        self.errf = open(errpath, "ab")
        self.p = subprocess.Popen([H.skillshelf_exe(), "--home", str(home), "serve"], env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errf,
                                  start_new_session=True)
        self.buf = b""

    def send(self, obj: dict) -> None:
        self.p.stdin.write(json.dumps(obj).encode() + b"\n")
        self.p.stdin.flush()

    def recv(self, rid: int, timeout: float) -> dict | None:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                with contextlib.suppress(json.JSONDecodeError):
                    msg = json.loads(line)
                    if msg.get("id") == rid:
                        return msg
            r, _, _ = select.select([self.p.stdout], [], [], 0.05)
            if r:
                chunk = os.read(self.p.stdout.fileno(), 65536)
                if not chunk:
                    return None
                self.buf += chunk
        return None

    def initialize(self, timeout: float = 60) -> None:
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"protocolVersion": H.PROTOCOL, "capabilities": {},
                              "clientInfo": {"name": "crash", "version": "1"}}})
        if self.recv(0, timeout) is None:
            raise RuntimeError("stdio server did not answer initialize")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.p.pid, signal.SIGKILL)
        self.p.wait()
        self.errf.close()


class Crasher:
    def __init__(self, home: Path, env: dict[str, str], workdir: Path, seed: int, skill_mod, lib_mod):
        self.home, self.env, self.workdir = home, env, workdir
        self.ws = home / "skills"
        self.rng = random.Random(seed)
        self.sk = skill_mod
        self.lib_mod = lib_mod
        self.kills: list[Kill] = []
        self.timing: dict[str, float] = {}
        self.big: list[str] = []
        self.small: list[str] = []
        self.n = 0

    # --- preparing each operation -------------------------------------------------------------
    def _draft(self, args: dict) -> str:
        """A draft written the way an agent under the ``propose`` policy writes one."""
        name = args.get("target_skill_name") if args["action"] == "FIX" else args.get("name")
        shutil.rmtree(self.home / "drafts" / str(name), ignore_errors=True)  # left by a killed approve
        lib = self.lib_mod.Library(self.home, embedder="none", write_policy="propose", auto_sync=False)
        try:
            lib.sync(embed=False)
            res = lib.save(args.pop("action"), by="agent", **args)
            return res.name
        finally:
            lib.close()

    def prepare(self, op: str) -> tuple[list[str] | None, str, dict]:
        """(CLI args or None for the MCP op, target, expectations)."""
        self.n += 1
        # a MERGE killed before it wrote leaves its name without a folder
        self.small = [s for s in self.small if (self.ws / s / "SKILL.md").is_file()]
        marker = f"CRASH-{self.n:04d}-{self.rng.randrange(16 ** 6):06x}"
        target = self.rng.choice(self.big)
        if op == "approve-fix":
            name = self._draft({"action": "FIX", "target_skill_name": target, "lesson": f"{marker}: check first"})
            return ["review", "approve", name], target, {"marker": marker}
        if op == "mcp-fix":
            return None, target, {"marker": marker, "args": {"action": "FIX", "target_skill_name": target,
                                                            "lesson": f"{marker}: check first"}}
        if op == "rollback":
            vs = self._versions(target)
            if not vs:
                # a first FIX makes history to roll back to
                self._draft({"action": "FIX", "target_skill_name": target, "lesson": f"{marker}: seed history"})
                r = H.cli(self.home, "review", "approve", target, env=self.env, timeout=60)
                if r.rc != 0:
                    raise RuntimeError(f"could not seed history: {r.text[-500:]}")
                vs = self._versions(target)
            v = self.rng.choice(vs)
            body = self.sk.parse((self.home / "history" / target / f"v{v}.md").read_bytes()).skill.body
            return ["rollback", target, str(v)], target, {"body": body}
        if op == "deprecate":
            return ["deprecate", target, "--reason", marker], target, {"marker": marker}
        if op == "merge":
            a, b = self.rng.sample(self.small, 2)
            new = f"merged-{self.n:04d}"
            name = self._draft({"action": "MERGE", "name": new, "source_skill_names": f"{a}, {b}",
                                "description": f"Merged skill {new} of {a} and {b}"})
            self.small = [s for s in self.small if s not in (a, b)] + [new]
            return ["review", "approve", name], new, {"sources": [a, b]}
        # sync: an editor changed many files since the last sync
        for name in self.rng.sample(self.small, min(120, len(self.small))):
            p = self.ws / name / "SKILL.md"
            data = p.read_bytes()
            H_tmp = p.with_name(".edit.tmp")
            H_tmp.write_bytes(data.rstrip(b"\n") + f"\n\nEdited {marker}.\n".encode())
            os.replace(H_tmp, p)
        return ["sync"], "", {}

    def _versions(self, name: str) -> list[int]:
        d = self.home / "history" / name
        return sorted(int(p.stem[1:]) for p in d.glob("v*.md") if p.stem[1:].isdigit()) if d.is_dir() else []

    # --- running and killing ------------------------------------------------------------------
    def calibrate(self) -> None:
        """The uninterrupted duration of each operation, to aim the kills at its whole span."""
        for op in OPS:
            times = []
            for _ in range(2):
                args, target, exp = self.prepare(op)
                t0 = time.perf_counter()
                if args is None:
                    times.append(self._mcp(exp["args"], None)[0])
                else:
                    r = H.cli(self.home, *args, env=self.env, timeout=120)
                    if r.rc != 0:
                        raise RuntimeError(f"calibration of {op} failed: {r.text[-800:]}")
                    times.append(time.perf_counter() - t0)
            self.timing[op] = statistics.mean(times)

    def _mcp(self, args: dict, delay: float | None) -> tuple[float, bool]:
        srv = RawStdio(self.home, self.env, self.workdir / "mcp.stderr")
        try:
            srv.initialize()
            t0 = time.perf_counter()
            srv.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "save_skill", "arguments": args}})
            if delay is None:
                msg = srv.recv(1, 120)
                if msg is None or msg.get("result", {}).get("isError"):
                    raise RuntimeError(f"calibration MCP FIX failed: {msg}")
                return time.perf_counter() - t0, False
            msg = srv.recv(1, delay)
            return time.perf_counter() - t0, msg is None
        finally:
            srv.kill()

    def one(self) -> Kill:
        op = self.rng.choices(OPS, WEIGHTS)[0]
        args, target, exp = self.prepare(op)
        before = read_all(self.ws)
        span = self.timing[op]
        # aim at the whole run, more often at its second half, where the writes are
        delay = span * (0.15 + 1.0 * self.rng.random() ** 0.6)
        err = ""
        if args is None:
            _, killed = self._mcp(exp["args"], delay)
        else:
            p = spawn_cli(self.home, self.env, args)
            killed, err = kill_after(p, delay)
        k = Kill(op, target, round(delay, 3), killed, traceback=H.has_traceback(err))
        after = read_all(self.ws)
        self.check(k, op, target, exp, before, after)
        k.tmp_left = len(list(self.home.rglob(".tmp-*")))
        self.recover(k)
        return k

    def check(self, k: Kill, op: str, target: str, exp: dict, before: dict, after: dict) -> None:
        changed = []
        for rel in sorted(set(before) | set(after)):
            old, new = before.get(rel), after.get(rel)
            if old == new:
                continue
            if new is None:
                k.lost.append(f"{rel} vanished")
                continue
            why = complete(self.sk, new)
            name = rel.split("/")[0]
            if not why and old is not None:
                vo, vn = _version(self.sk, old), _version(self.sk, new)
                if vo is not None and (vn is None or vn <= vo):
                    why = f"version went from {vo} to {vn}"
            if not why:
                text = new.decode("utf-8", "replace")
                if op in ("approve-fix", "mcp-fix", "deprecate") and name == target and exp["marker"] not in text:
                    why = "changed without the change being made"
                elif op == "rollback" and name == target and self.sk.parse(new).skill.body != exp["body"]:
                    why = "rolled-back body differs from the version it came from"
                elif op == "merge" and name in exp["sources"] and "merged" not in text:
                    why = "source changed but not marked merged"
                elif op == "sync" or (op != "merge" and name != target) or \
                        (op == "merge" and name not in exp["sources"] and name != target):
                    why = "a file this operation does not write changed"
            if why:
                k.torn.append(f"{rel}: {why}")
            changed.append(rel)
        k.outcome = "new" if changed else "old"

    def recover(self, k: Kill) -> None:
        """One sync must bring the index back in line with the files."""
        sync = H.cli(self.home, "sync", "--json", env=self.env, timeout=120)
        doc = H.cli(self.home, "doctor", "--json", env=self.env, timeout=60)
        lst = H.cli(self.home, "list", "--json", env=self.env, timeout=60)
        k.tmp_after_sync = len(list(self.home.rglob(".tmp-*")))
        k.traceback = k.traceback or sync.traceback or doc.traceback or lst.traceback
        notes = []
        try:
            rep = json.loads(doc.out)
            if not rep.get("ok"):
                notes.append("doctor not ok: " + "; ".join(f"{c['name']}: {c['detail']}" for c in rep["checks"]
                                                           if c["status"] != "ok")[:300])
            if not any(c["name"] == "index vs files" and c["status"] == "ok" for c in rep["checks"]):
                notes.append("index does not match the files")
        except (json.JSONDecodeError, KeyError, TypeError):
            notes.append(f"doctor --json failed (rc {doc.rc}): {doc.text[-300:]}")
        try:
            rows = json.loads(lst.out)
            files = read_all(self.ws)
            if len(rows) != len(files):
                notes.append(f"index lists {len(rows)} skills, {len(files)} files on disk")
            for row in rows:
                data = files.get(str(Path(row["path"]).relative_to(self.ws)))
                v = _version(self.sk, data) if data else None
                if v is not None and v != row["version"]:
                    notes.append(f"{row['name']}: index v{row['version']}, file v{v}")
                    break
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            notes.append(f"list --json failed (rc {lst.rc}): {lst.text[-300:]}")
        if sync.rc != 0:
            notes.append(f"sync failed (rc {sync.rc}): {sync.text[-300:]}")
        k.recovered = not notes
        k.recovery_note = "; ".join(notes)


# --- the database: deleted, deleted under a server, corrupted ----------------------------------------

CLEAR = re.compile(r"corrupt|malformed|not a database|damaged|integrity|rebuil|quick_check", re.I)


def _db_files(home: Path) -> list[Path]:
    db = home / "skillshelf.db"
    return [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]


def delete_db(home: Path, env: dict[str, str], n_files: int) -> dict:
    for f in _db_files(home):
        with contextlib.suppress(FileNotFoundError):
            f.unlink()
    doc = H.cli(home, "doctor", "--json", env=env, timeout=120)
    sync = H.cli(home, "sync", "--json", env=env, timeout=300)
    doc2 = H.cli(home, "doctor", "--json", env=env, timeout=120)
    lst = H.cli(home, "list", "--json", env=env, timeout=60)
    count = len(json.loads(lst.out)) if lst.rc == 0 else -1
    ok2 = doc2.rc == 0 and json.loads(doc2.out).get("ok", False)
    return {"case": "database deleted", "tracebacks": sum(r.traceback for r in (doc, sync, doc2, lst)),
            "rebuilt": ok2 and count == n_files, "skills_after": count, "files": n_files,
            "note": "" if ok2 else doc2.text[-300:]}


async def _delete_under_server(home: Path, env: dict[str, str], workdir: Path) -> dict:
    """Delete the database under a running stdio server: the calls right after must not fail
    with 'no such table', and the skills must be served again within a few seconds (the
    server's own rescan), without a restart."""
    srv = H.StdioServer(home, env, workdir, tag="deldb")
    await srv.start()
    try:
        first = await srv.call("search_skills", {"query": "build failures", "limit": 3}, timeout=30)
        for f in _db_files(home):
            with contextlib.suppress(FileNotFoundError):
                f.unlink()
        t0 = time.monotonic()
        results = {}

        def status(r) -> str:
            return "ok" if r.ok else ("timeout" if r.timed_out else f"error: {(r.text or r.exception)[:160]}")
        for name, tool, args in (("search at once", "search_skills", {"query": "build failures", "limit": 3}),
                                 ("get at once", "get_skill", {"name": "big-skill-00"})):
            results[name] = status(await srv.call(tool, args, timeout=60))
        served_after = None
        while time.monotonic() - t0 < 10:
            r = await srv.call("get_skill", {"name": "big-skill-00"}, timeout=30)
            if r.ok:
                served_after = round(time.monotonic() - t0, 1)
                break
            await asyncio.sleep(0.5)
        for name, tool, args in (("fix", "save_skill", {"action": "FIX", "target_skill_name": "big-skill-01",
                                                        "lesson": "after the database was deleted"}),
                                 ("reindex", "reindex", {}),
                                 ("search again", "search_skills", {"query": "build failures", "limit": 3})):
            results[name] = status(await srv.call(tool, args, timeout=60))
        tb = H.has_traceback(srv.stderr_text())
    finally:
        await srv.stop()
    no_table = any("no such table" in v for v in results.values())
    later_ok = all(results[k] == "ok" for k in ("fix", "reindex", "search again"))
    return {"case": "database deleted under a running server", "first_search": first.ok, "calls": results,
            "served_again_after_s": served_after, "tracebacks": int(tb),
            "rebuilt": bool(served_after is not None and later_ok and not no_table)}


def delete_under_server(home: Path, env: dict[str, str], workdir: Path) -> dict:
    return asyncio.run(_delete_under_server(home, env, workdir))


def _quick_check(db: Path) -> str:
    try:
        with contextlib.closing(sqlite3.connect(db)) as c:
            rows = c.execute("PRAGMA quick_check").fetchall()
        return "ok" if rows == [("ok",)] else (rows[0][0] or "damaged")[:120]
    except sqlite3.DatabaseError as exc:
        return f"cannot read: {exc}"[:120]


def _doctor(run: H.Run) -> tuple[bool, str]:
    """(doctor reported a failure, what it said)."""
    try:
        rep = json.loads(run.out)
        bad = [c for c in rep.get("checks", []) if c.get("status") == "fail"]
        return (not rep.get("ok", True)) or bool(bad), json.dumps(bad or rep.get("checks", []))[:600]
    except (json.JSONDecodeError, TypeError, AttributeError):
        return run.rc != 0, (run.err or run.out)[-600:]


def corrupt_db(home: Path, env: dict[str, str], rng: random.Random, n_files: int, pages: int = 4) -> dict:
    """Overwrite the second half of ``pages`` pages in the middle of the database, then run
    doctor / search / list / show. Damage SQLite's quick_check sees, or that makes a command
    fail, must be reported by doctor with a message naming it; every failure must be one
    clear line; the index must come back from the files with one sync, or with the command
    the message names (``skillshelf rebuild``)."""
    db = home / "skillshelf.db"
    with contextlib.closing(sqlite3.connect(db)) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = db.stat().st_size
    with open(db, "rb") as f:
        head = f.read(100)
    page = int.from_bytes(head[16:18], "big") or 65536
    n_pages = size // page
    hit = sorted(rng.sample(range(max(2, n_pages // 4), max(3, 3 * n_pages // 4)), min(pages, max(1, n_pages // 2))))
    with open(db, "r+b") as f:
        for pg in hit:
            f.seek(pg * page + rng.randrange(0, page // 2))
            f.write(rng.randbytes(page // 2))
    quick = _quick_check(db)
    runs = {"doctor": H.cli(home, "doctor", "--json", env=env, timeout=60),
            "search": H.cli(home, "search", "build failures", "--json", env=env, timeout=60),
            "list": H.cli(home, "list", "--json", env=env, timeout=60),
            "show": H.cli(home, "show", "big-skill-02", env=env, timeout=60)}
    tbs = [k for k, r in runs.items() if r.traceback]
    detected, said = _doctor(runs["doctor"])
    failing = {k: r for k, r in runs.items() if r.rc != 0 and k != "doctor"}
    visible = quick != "ok" or bool(failing)
    clear = bool(CLEAR.search(said + runs["doctor"].err)) if detected else False
    unclear = [k for k, r in failing.items() if r.traceback or not r.err.strip()]
    # recovery: one sync (the files are the truth); else the command the message names
    how = None
    for step in (["sync", "--json"], ["rebuild", "--yes"]):
        if step[0] == "rebuild" and not any("skillshelf rebuild" in r.text for r in runs.values()):
            break
        r = H.cli(home, *step, env=env, timeout=300)
        doc2 = H.cli(home, "doctor", "--json", env=env, timeout=60)
        lst = H.cli(home, "list", "--json", env=env, timeout=60)
        try:
            ok2 = not _doctor(doc2)[0] and len(json.loads(lst.out)) == n_files and _quick_check(db) == "ok"
        except (json.JSONDecodeError, TypeError):
            ok2 = False
        if r.traceback or doc2.traceback or lst.traceback:
            tbs.append(f"{step[0]} (recovery)")
        if ok2:
            how = step[0]
            break
    return {"case": f"{len(hit)} pages overwritten (of {n_pages})", "quick_check": quick, "visible": visible,
            "detected": detected, "clear": clear, "tracebacks": len(tbs), "traceback_in": tbs,
            "failing_commands": sorted(failing), "unclear_failures": unclear, "rebuilt_by": how,
            "messages": {k: (r.err.strip().splitlines() or [""])[-1][:200] for k, r in runs.items()}}


def restore_db(home: Path, env: dict[str, str]) -> None:
    """Start the next trial from a sound database (deleted, rebuilt from the files)."""
    for f in _db_files(home):
        with contextlib.suppress(FileNotFoundError):
            f.unlink()
    H.cli(home, "sync", "--json", env=env, timeout=300)


# --- the whole run ---------------------------------------------------------------------------------

@dataclass
class CrashResult:
    kills: list[Kill]
    db_cases: list[dict]
    timing: dict[str, float]
    home: str

    @property
    def problems(self) -> list[str]:
        out = []
        for k in self.kills:
            for t in k.torn:
                out.append(f"torn after kill in {k.op}: {t}")
            for t in k.lost:
                out.append(f"lost after kill in {k.op}: {t}")
            if not k.recovered:
                out.append(f"no recovery after kill in {k.op}: {k.recovery_note[:300]}")
            if k.traceback:
                out.append(f"traceback after kill in {k.op}")
        for d in self.db_cases:
            if d.get("tracebacks"):
                out.append(f"{d['case']}: {d['tracebacks']} tracebacks {d.get('traceback_in', '')}")
            if d.get("visible") and not d["detected"]:
                out.append(f"{d['case']}: doctor says ok, but the damage shows (quick_check: {d['quick_check']}; "
                           f"failing: {', '.join(d['failing_commands']) or '-'})")
            if d.get("detected") and not d["clear"]:
                out.append(f"{d['case']}: doctor's message does not name the damage")
            if d.get("unclear_failures"):
                out.append(f"{d['case']}: commands failed without a clear message: {d['unclear_failures']}")
            if d.get("rebuilt") is False:
                out.append(f"{d['case']}: not rebuilt from the files ({d.get('calls') or d.get('note')})")
            if "rebuilt_by" in d and d["rebuilt_by"] is None:
                out.append(f"{d['case']}: neither `sync` nor the named fix rebuilt the index")
        return out


def run(kills: int = 120, *, seed: int = 1, corruptions: int = 8, keep: bool = False, workdir: Path | None = None,
        src: str | None = None, quiet: bool = False) -> CrashResult:
    base = Path(workdir or tempfile.mkdtemp(prefix="skillshelf-crash-"))
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = H.child_env(home, embedder="none", policy="open", src=src)
    skill_mod = H.import_skillshelf(src)
    import skillshelf.library as lib_mod

    c = Crasher(home, env, base, seed, skill_mod, lib_mod)
    c.big, c.small = setup(home, env)
    c.calibrate()
    if not quiet:
        print("uninterrupted durations: " + ", ".join(f"{k} {v:.2f} s" for k, v in c.timing.items()), file=sys.stderr)
    done = 0
    while done < kills:
        k = c.one()
        c.kills.append(k)
        done += k.killed
        if not quiet and len(c.kills) % 10 == 0:
            print(f"  {len(c.kills)} runs, {done} kills, {sum(bool(x.torn) for x in c.kills)} torn", file=sys.stderr)
    db_cases = []
    n_files = len(read_all(home / "skills"))
    db_cases.append(delete_db(home, env, n_files))
    db_cases.append(delete_under_server(home, env, base / "logs"))
    restore_db(home, env)
    rng = random.Random(seed + 1)
    for i in range(corruptions):
        db_cases.append(corrupt_db(home, env, rng, n_files, pages=1 + i % 6))
        restore_db(home, env)
    res = CrashResult(c.kills, db_cases, c.timing, str(home))
    if not keep and not res.problems:
        shutil.rmtree(base, ignore_errors=True)
    return res


def summary(res: CrashResult) -> str:
    rows = []
    for op in OPS + ("total",):
        ks = [k for k in res.kills if op == "total" or k.op == op]
        if not ks:
            continue
        rows.append([op, len(ks), sum(k.killed for k in ks), sum(k.killed and k.outcome == "old" for k in ks),
                     sum(k.killed and k.outcome == "new" for k in ks), sum(bool(k.torn) for k in ks),
                     sum(bool(k.lost) for k in ks), sum(k.tmp_left > 0 for k in ks),
                     sum(k.tmp_after_sync > 0 for k in ks), sum(not k.recovered for k in ks),
                     sum(k.traceback for k in ks)])
    out = [H.fmt_table(rows, ["operation", "runs", "killed", "killed:old", "killed:new", "torn/mixed", "lost",
                              ".tmp left", ".tmp after sync", "not recovered", "tracebacks"])]
    out.append("")
    out.append("database damage:")
    for d in res.db_cases:
        extra = {k: v for k, v in d.items() if k not in ("case",)}
        out.append(f"  {d['case']}: " + json.dumps(extra, ensure_ascii=False)[:700])
    probs = res.problems
    if probs:
        uniq = list(dict.fromkeys(probs))
        out.append(f"PROBLEMS ({len(probs)}):")
        out += [f"  - {p}" for p in uniq[:30]]
        out.append(f"home kept for inspection: {res.home}")
    else:
        out.append("every file old or new after every kill; every recovery ok")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=120, help="kill -9 of a still-running process to reach (default 120)")
    ap.add_argument("--corruptions", type=int, default=8, help="database corruption trials (default 8)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the temporary home")
    ap.add_argument("--workdir", type=Path, help="use this folder instead of a temporary one")
    ap.add_argument("--src", help="run another source tree (its src/ folder, via PYTHONPATH)")
    ap.add_argument("--json-out", type=Path, help="write every kill and database case as JSON here")
    a = ap.parse_args(argv)
    res = run(a.kills, seed=a.seed, corruptions=a.corruptions, keep=a.keep, workdir=a.workdir, src=a.src)
    print(summary(res))
    if a.json_out:
        a.json_out.write_text(json.dumps({"timing": res.timing, "kills": [k.__dict__ for k in res.kills],
                                          "db_cases": res.db_cases, "problems": res.problems}, indent=1))
    return 1 if res.problems else 0


if __name__ == "__main__":
    sys.exit(main())
