"""MCP start-up: time from spawn to the tools/list answer, skillshelf vs a bare MCPServer
in the same environment, and time from spawn to the first search answer on an indexed
library.

    python bench/mcp_startup.py --home .bench-home [--root ../shared/corpus/skills] [--runs 7] [--pycache DIR]

``--pycache DIR``: both servers keep their compiled modules in DIR, as an installed package
has them, where the environment sets PYTHONDONTWRITEBYTECODE (then every start compiles the
project's modules from source again: ~0.2 s of CPU before the first search, none for the bare server).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

BARE = '''
from mcp.server import MCPServer
s = MCPServer("bare")

@s.tool()
def echo(text: str) -> str:
    """Echo."""
    return text

s.run("stdio")
'''


async def _time(params: StdioServerParameters, search: str | None) -> tuple[float, float | None]:
    t0 = time.perf_counter()
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            await s.list_tools()
            t_list = time.perf_counter() - t0
            t_search = None
            if search:
                res = await s.call_tool("search_skills", {"query": search})
                assert not res.is_error, res.content
                t_search = time.perf_counter() - t0
    return t_list, t_search


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", required=True, type=Path)
    ap.add_argument("--root", action="append", default=[])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--pycache", type=Path)
    args = ap.parse_args()
    bare = Path(tempfile.mkdtemp()) / "bare.py"
    bare.write_text(BARE)
    exe = shutil.which("skillshelf") or str(Path(sys.executable).parent / "skillshelf")
    env = {**os.environ, "SKILLSHELF_HOME": str(args.home.resolve())}
    if args.pycache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(args.pycache.resolve())
    roots = [a for r in args.root for a in ("--root", str(Path(r).resolve()))]
    bare_p = StdioServerParameters(command=sys.executable, args=[str(bare)], env=env)
    ours_p = StdioServerParameters(command=exe, args=[*roots, "serve"], env=env)
    b, o, s = [], [], []
    for _ in range(args.runs):
        b.append(anyio.run(_time, bare_p, None)[0])
        lt, st = anyio.run(_time, ours_p, "my Next.js API route fails with a CORS error")
        o.append(lt)
        s.append(st)
    mb, mo = statistics.median(b), statistics.median(o)
    print(f"bare MCPServer tools/list after spawn: median {mb:.3f}s  {[round(x, 3) for x in b]}")
    print(f"skillshelf serve tools/list after spawn: median {mo:.3f}s  {[round(x, 3) for x in o]}")
    print(f"ratio {mo / mb:.2f} (target <= 1.2)")
    print(f"first search answered after spawn: median {statistics.median(s):.3f}s  max {max(s):.3f}s (target <= 1.5)")


if __name__ == "__main__":
    main()
