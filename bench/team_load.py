"""MCP clients over Streamable HTTP against several ``skillshelf serve --http`` processes on one
team store: throughput, latency and errors.

``--servers`` server processes (real ``skillshelf serve --http``, each with its own home) run on
one PostgreSQL database (a throwaway cluster, or ``SKILLSHELF_TEST_PG``'s server) holding
``--skills`` skills in a read-only root every server scans. ``--clients`` MCP clients, each with
an agent token of its own, spread over the servers (client i talks to server i mod servers),
speak raw JSON-RPC over httpx (one keep-alive connection each, as an MCP client does):
``initialize``, then for ``--duration`` seconds a loop of ``search_skills`` -> ``get_skill`` (the
first hit) -> ``report_outcome`` (with the search's query_id). Every request carries its token,
so each one is checked against the store.

With ``--corpus`` the root is ``--skills`` real SKILL.md files made from the corpus (copies of
it under ``c00/``, ``c01/`` …, as ``bench/large_library.py`` writes them; kept in ``--root`` for
the next run) instead of short generated ones. The first server's home is indexed once (``sync``,
lexical only: the servers run without a model) and copied to every other server's home: the
same root, the same store, so each starts from the index it would have built itself (at 100k
skills one first index takes ~11 minutes here). Each server then starts as usual (the search
state, a rescan of the root, the watcher) and the run begins once every one answers and has
gone idle (``--no-settle``: as soon as they answer, their first rescan still running).

An error is any call that is not a tool result without ``isError``: an HTTP status other than
200, a JSON-RPC error, an ``isError`` result, a timeout or a dropped connection. At the end the
store is asked how many outcomes it holds, under which names: every acknowledged report must be
there, under its client's token name.

    python bench/team_load.py                                  # 50 clients, 2 servers, 60 s
    python bench/team_load.py --clients 20 --duration 30 --json
    python bench/team_load.py --servers 3 --corpus ../shared/corpus --skills 100000 --root .bench-home-load/root
    SKILLSHELF_TEST_PG=postgresql://… python bench/team_load.py
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

EXE = shutil.which("skillshelf") or str(Path(sys.executable).parent / "skillshelf")
WORDS = ("cache", "widget", "queue", "ledger", "router", "parser", "tensor", "bundle", "socket", "schema",
         "cors", "docker", "deploy", "migration", "retry", "index", "token", "upload", "webhook", "cron")
ACCEPT = "application/json, text/event-stream"
PROTOCOL = "2025-11-25"


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * len(xs) + 0.5) - 1))] if xs else float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_root(root: Path, n: int) -> None:
    """``n`` skills, each about two of ``WORDS``."""
    for i in range(n):
        a, b = WORDS[i % len(WORDS)], WORDS[(i * 7 + 3) % len(WORDS)]
        folder = root / f"{a}-{b}-{i}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: {a}-{b}-{i}\ndescription: Keep the {a} and the {b} of service {i} healthy under load\n---\n\n"
            f"## When to Use\n\nWhen the {a} of service {i} misbehaves.\n\n## Solution\n\nTune the {b}: step {i}.\n",
            encoding="utf-8")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its children (Linux)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def start_servers(root: Path, homes: list[Path], env: dict[str, str]) -> list[tuple]:
    """``skillshelf --root ROOT serve --http`` per home; (process, port) once each answers."""
    import httpx

    procs = []
    for home in homes:
        port = free_port()
        p = subprocess.Popen([EXE, "--root", str(root), "serve", "--http", "--port", str(port)],
                             env={**env, "SKILLSHELF_HOME": str(home)}, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        procs.append((p, port))
    for p, port in procs:
        deadline = time.monotonic() + 900     # at 100k skills a start (state, rescan) takes a while
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
                break
            except httpx.HTTPError:
                if p.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"a server did not start: {p.stderr.read().decode(errors='replace')[-2000:]}")
                time.sleep(0.2)
    return procs


def settle(pids: list[int], quiet: float = 3.0, limit: float = 900.0) -> float:
    """Seconds until every server has been idle (under 5 % of a core) for ``quiet`` seconds:
    a server answers as soon as it listens, then rescans its roots and loads its search state
    in the background (at 100k skills, tens of seconds of CPU each)."""
    t0 = time.monotonic()
    calm = None
    last = [cpu_seconds(p) for p in pids]
    while time.monotonic() - t0 < limit:
        time.sleep(0.5)
        now = [cpu_seconds(p) for p in pids]
        busy = any(b - a > 0.025 for a, b in zip(last, now))
        last = now
        if busy:
            calm = None
        elif calm is None:
            calm = time.monotonic()
        elif time.monotonic() - calm >= quiet:
            return time.monotonic() - t0
    raise SystemExit("the servers did not settle")


def peak_rss_mb(pid: int) -> float:
    """Peak resident memory of a process in MB (Linux ``VmHWM``)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def parse(resp) -> dict:
    """The JSON-RPC answer of a POST: a JSON body, or the last ``data:`` event of an SSE one."""
    if resp.headers.get("content-type", "").startswith("text/event-stream"):
        data = [ln[5:].strip() for ln in resp.text.splitlines() if ln.startswith("data:")]
        return json.loads(data[-1]) if data else {}
    return resp.json()


class Agent:
    """One MCP client: its own token, connection and session on one server."""

    def __init__(self, n: int, url: str, token: str, stats: dict, seed: int):
        self.n = n
        self.url = url
        self.token = token
        self.stats = stats
        self.rng = random.Random(seed)
        self.ids = 0
        self.session: str | None = None

    async def post(self, client, body: dict):
        headers = {"Authorization": f"Bearer {self.token}", "Accept": ACCEPT, "Content-Type": "application/json"}
        if self.session:
            headers |= {"mcp-session-id": self.session, "mcp-protocol-version": PROTOCOL}
        return await client.post(self.url, content=json.dumps(body), headers=headers)

    async def rpc(self, client, method: str, params: dict) -> dict:
        self.ids += 1
        resp = await self.post(client, {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        if resp.status_code != 200:
            raise RuntimeError(f"HTTP {resp.status_code}: {resp.text[:200]}")
        if method == "initialize":
            self.session = resp.headers.get("mcp-session-id")
        msg = parse(resp)
        if "error" in msg:
            raise RuntimeError(f"JSON-RPC error {msg['error'].get('code')}: {msg['error'].get('message', '')[:200]}")
        return msg.get("result") or {}

    async def tool(self, client, name: str, args: dict) -> dict:
        t0 = time.perf_counter()
        try:
            res = await self.rpc(client, "tools/call", {"name": name, "arguments": args})
            if res.get("isError"):
                raise RuntimeError("isError: " + " ".join(c.get("text", "") for c in res.get("content", []))[:300])
        except Exception as exc:   # every failure is counted and shown (and raised)
            self.stats["errors"].append(f"{name}: {type(exc).__name__}: {exc}"[:400])
            raise
        finally:
            self.stats["latency"][name].append(time.perf_counter() - t0)
        return res.get("structuredContent") or {}

    async def run(self, until: float) -> None:
        import httpx

        async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=1)) as client:
            await self.rpc(client, "initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                                  "clientInfo": {"name": "load", "version": "1"}})
            await self.post(client, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            while time.monotonic() < until:
                query = f"{self.rng.choice(WORDS)} {self.rng.choice(WORDS)} of a service misbehaves"
                try:
                    found = await self.tool(client, "search_skills", {"query": query, "limit": 5})
                    hits = found.get("hits") or []
                    if not hits:
                        self.stats["no_hits"] += 1
                        continue
                    await self.tool(client, "get_skill", {"name": hits[0]["name"]})
                    await self.tool(client, "report_outcome", {"skill": hits[0]["name"], "worked": self.rng.random()
                                                               < 0.8, "query_id": found.get("query_id")})
                    self.stats["reports"][self.n] += 1
                    self.stats["loops"] += 1
                except Exception:   # noqa: BLE001 — counted in tool(); the loop goes on
                    await asyncio.sleep(0.05)


async def drive(urls: list[str], tokens: list[str], duration: float) -> tuple[dict, float]:
    stats = {"latency": {"search_skills": [], "get_skill": [], "report_outcome": []}, "errors": [],
             "reports": [0] * len(tokens), "loops": 0, "no_hits": 0}
    until = time.monotonic() + duration
    agents = [Agent(i, urls[i % len(urls)], tok, stats, seed=i) for i, tok in enumerate(tokens)]
    t0 = time.monotonic()
    results = await asyncio.gather(*(a.run(until) for a in agents), return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            stats["errors"].append(f"client: {type(r).__name__}: {r}"[:400])
    return stats, time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--servers", type=int, default=2)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--skills", type=int, default=300)
    ap.add_argument("--corpus", type=Path, help="make the root from this corpus' SKILL.md files")
    ap.add_argument("--root", type=Path, help="where the corpus root is written (kept for the next run)")
    ap.add_argument("--no-settle", action="store_true",
                    help="start the clients as soon as the servers answer (their first rescan still running)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    import pgcluster
    import psycopg

    from skillshelf import Library

    stack = contextlib.ExitStack()   # a new database: SKILLSHELF_TEST_PG's server, or a throwaway cluster
    url = stack.enter_context(pgcluster.database("bench/team_load.py"))
    work = Path(tempfile.mkdtemp(prefix="skillshelf-load-"))
    procs: list[tuple] = []
    try:
        if args.corpus:
            from large_library import generate

            root = (args.root or work / "root").resolve()
            generate(args.corpus.resolve(), root, args.skills)
        else:
            root = work / "root"
            write_root(root, args.skills)
        homes = [work / f"server-{i}" for i in range(args.servers)]
        t = time.perf_counter()   # the index built before the servers start: the run measures serving
        with Library(home=homes[0], roots=[root], embedder="none", auto_sync=False, store=url) as lib:
            lib.sync()
            indexed = lib.count()
        index_s = time.perf_counter() - t
        for home in homes[1:]:
            shutil.copytree(homes[0], home)
        with Library(home=homes[0], roots=[root], embedder="none", auto_sync=False, store=url) as lib:
            tokens = [lib.add_token(f"agent-{i:03d}", "agent") for i in range(args.clients)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSHELF_")}
        env |= {"SKILLSHELF_STORE": url, "SKILLSHELF_EMBEDDER": "none"}
        t = time.perf_counter()
        procs = start_servers(root, homes, env)
        if not args.no_settle:
            settle([p.pid for p, _ in procs])
        start_s = time.perf_counter() - t
        urls = [f"http://127.0.0.1:{port}/mcp" for _, port in procs]
        load = os.getloadavg()[0]
        cpu0 = [cpu_seconds(p.pid) for p, _ in procs]
        stats, took = asyncio.run(drive(urls, tokens, args.duration))
        cpu = [cpu_seconds(p.pid) - c for (p, _), c in zip(procs, cpu0)]
        rss = [peak_rss_mb(p.pid) for p, _ in procs]
        with psycopg.connect(url, autocommit=True) as conn:
            stored = dict(conn.execute("SELECT client, count(*) FROM outcomes GROUP BY client").fetchall())
    finally:
        for p, _ in procs:
            p.terminate()
        for p, _ in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)
        stack.close()

    lat = stats["latency"]
    every = [x for xs in lat.values() for x in xs]
    acked = {f"agent-{i:03d}": n for i, n in enumerate(stats["reports"]) if n}
    missing = {k: n - stored.get(k, 0) for k, n in acked.items() if stored.get(k, 0) < n}
    foreign = sorted(set(stored) - {f"agent-{i:03d}" for i in range(args.clients)})
    out = {
        "clients": args.clients, "servers": args.servers, "skills": indexed, "first_index_s": round(index_s, 1),
        "servers_start_s": round(start_s, 1), "seconds": round(took, 1),
        "calls": len(every), "calls_per_s": round(len(every) / took, 1), "loops_per_s": round(stats["loops"] / took, 1),
        "p50_ms": round(1000 * statistics.median(every), 1) if every else None,
        "p99_ms": round(1000 * pct(every, 99), 1) if every else None,
        "per_tool": {k: {"calls": len(v), "p50_ms": round(1000 * statistics.median(v), 1) if v else None,
                         "p99_ms": round(1000 * pct(v, 99), 1) if v else None} for k, v in lat.items()},
        "errors": len(stats["errors"]), "error_samples": sorted(set(stats["errors"]))[:5],
        "searches_without_hits": stats["no_hits"],
        "outcomes_acknowledged": sum(acked.values()), "outcomes_stored": sum(stored.values()),
        "outcomes_missing_by_token": missing, "outcomes_under_other_names": foreign,
        "server_cpu_s": [round(c, 1) for c in cpu],
        "server_peak_rss_mb": [round(r) for r in rss], "cores": os.cpu_count(), "load_before": round(load, 2),
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{args.clients} MCP clients over HTTP, {args.servers} servers on one team store, {took:.0f} s "
          f"({indexed} skills, {os.cpu_count()} cores)")
    print(f"  first index {out['first_index_s']} s (once, copied to every home); servers answering"
          f"{'' if args.no_settle else ' and idle'} after {out['servers_start_s']} s")
    print(f"  {out['calls']} tool calls: {out['calls_per_s']}/s ({out['loops_per_s']} search->get->report loops/s); "
          f"p50 {out['p50_ms']} ms, p99 {out['p99_ms']} ms")
    for k, v in out["per_tool"].items():
        print(f"    {k:15s} {v['calls']:6d} calls  p50 {v['p50_ms']} ms  p99 {v['p99_ms']} ms")
    print(f"  errors: {out['errors']}" + (f"  e.g. {out['error_samples']}" if out["errors"] else ""))
    print(f"  outcomes: {out['outcomes_acknowledged']} acknowledged, {out['outcomes_stored']} in the store"
          f"{', missing ' + str(missing) if missing else ''}{', under other names ' + str(foreign) if foreign else ''}")
    print(f"  server CPU: {out['server_cpu_s']} s; peak RSS {out['server_peak_rss_mb']} MB; load before "
          f"{out['load_before']}")


if __name__ == "__main__":
    main()
