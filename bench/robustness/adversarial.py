"""Adversarial input: generated hostile cases sent through the CLI (subprocess), MCP (a
``skillshelf serve`` stdio server driven with ``ClientSession.call_tool``) and HTTP (``serve
--http`` on a free loopback port, raw JSON-RPC with httpx): hostile names and paths, names in
frontmatter that climb out of the home, YAML bombs, impossible dates and numbers, huge and
binary files, special files (FIFOs, /dev/zero, loops), bad encodings, control characters,
Rich markup, regex-backtracking headings, malformed JSON-RPC, wrong argument types and
extreme numbers. Every step has a 5 s timeout. Each step is checked for tracebacks (any
"Traceback" in what comes back or in the server's log), hangs, lost data (canary skills in
the home), writes outside the home (a snapshot of the home's parent, which holds a "victim"
folder, before and after), and for the expected outcome (a hostile write refused with a clear
message, a bad file reported while the rest is indexed, the server still answering). Prints a
table per category, writes every result as JSON, exits 1 on any traceback, hang, loss or
write outside.

    python bench/robustness/adversarial.py [--max-per-category N | --quick] [--json-out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness as H  # noqa: E402

TIMEOUT = 5.0
MEMORY_MB = 1500          # a step whose process peaks above this has exhausted memory
SERVER_MEM_LIMIT_MB = 6144
CANARIES = ("cors-fix-nextjs-api", "docker-multi-stage-build", "git-conventional-commits")
PROBE = "probe-skill"
CATEGORIES = ("names", "names-in-files", "yaml-bombs", "dates-numbers-in-files", "huge-binary", "special-files",
              "encodings", "control-chars", "rich-markup", "regex", "json-rpc", "wrong-types", "extreme-numbers",
              "disk")


# --- cases -----------------------------------------------------------------------------------------

@dataclass
class Step:
    channel: str                 # cli | mcp | http | stdio
    label: str
    call: tuple                  # ("cli", argv) | ("tool", name, args) | ("resource", uri) | ("rpc", body, headers)
    expect: str = "any"          # refuse | ok | any
    check: Callable[["Res"], list[str]] | None = None


@dataclass
class Case:
    cat: str
    label: str
    steps: list[Step]
    setup: Callable[[Path, "Env"], None] | None = None   # plants files in a fresh home
    names: list[str] = field(default_factory=list)       # hostile names: their escape paths are watched
    fresh: bool = False
    quick: list[str] | None = None                       # steps run by the short (CI) selection


@dataclass
class Res:
    ok: bool = False             # the call succeeded
    refused: bool = False        # an error came back (exit code, isError, JSON-RPC error, 4xx)
    text: str = ""
    out: str = ""                # CLI stdout only
    seconds: float = 0.0
    hang: bool = False
    traceback: bool = False
    rss_mb: float = 0.0
    status: int | None = None    # HTTP status or CLI exit code
    structured: Any = None
    server_dead: bool = False


@dataclass
class Row:
    cat: str
    case: str
    step: str
    channel: str
    expect: str
    result: str                  # ok | refused | hang
    seconds: float
    traceback: bool
    hang: bool
    lost: list[str]
    outside: list[str]
    wrong: list[str]
    detail: str


@dataclass
class Env:
    base: Path
    zone: Path
    home: Path
    victim: Path
    template: Path
    logs: Path
    env: dict[str, str]
    tok: str


def _clear(res: Res) -> list[str]:
    """A refusal must say something short and readable (an error line the terminal wrapped
    because it quotes a 10,000-character name still counts as one line)."""
    lines = [ln for ln in res.text.strip().splitlines() if ln.strip()]
    if not lines:
        return ["refused without a message" + (f" (HTTP {res.status})" if res.status else "")]
    if len(lines) > 12 and not lines[0].lower().startswith(("error", "usage")):
        return [f"refusal message is {len(lines)} lines long"]
    return []


def cli(label: str, *argv: str, expect: str = "any", check=None) -> Step:
    return Step("cli", label, ("cli", list(argv)), expect, check)


def tool(label: str, name: str, args: Any, expect: str = "any", check=None, channel: str = "mcp") -> Step:
    return Step(channel, label, ("tool", name, args), expect, check)


def rpc(label: str, body: Any, headers: dict | None = None, expect: str = "any", check=None,
        session: bool = True) -> Step:
    return Step("http", label, ("rpc", body, headers or {}, session), expect, check)


def no_esc(res: Res) -> list[str]:
    return ["raw terminal escape printed"] if ("\x1b" in res.out or "\x9b" in res.out) else []


def no_passwd(res: Res) -> list[str]:
    return ["served a file from outside the library"] if "root:x:0:0" in res.text else []


def write(home: Path, rel: str, data: str | bytes) -> Path:
    p = home / "skills" / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    p.write_bytes(data)
    return p


def fm(name: str, description: str = "A planted skill for adversarial tests", meta: str = "", extra: str = "",
       body: str = "## Solution\n\nDo the thing.\n") -> str:
    m = f"metadata:\n{meta}" if meta else ""
    return f"---\nname: {name}\ndescription: {description}\n{extra}{m}---\n\n{body}"


def file_steps(rel: str, *, name: str | None = None, get: bool = True, resource: str | None = None,
               cli_show: bool = False, extra: list[Step] | None = None) -> list[Step]:
    """What every planted file goes through: sync (must succeed: the rest is indexed), validate,
    list, and over MCP: reindex, a save of an unrelated skill (must work), get."""
    folder = rel.split("/")[0]
    steps = [cli("sync", "sync", "--json", expect="ok", check=_canaries_indexed_sync),
             cli("validate", "validate", "--json", "{home}/skills/" + rel),
             cli("list", "list", "--json", expect="ok", check=_canaries_listed),
             tool("mcp reindex", "reindex", {}, expect="ok"),
             tool("mcp unrelated save", "save_skill", {"action": "FIX", "target_skill_name": PROBE,
                                                      "lesson": "unrelated save while a bad file is present {n}"},
                  expect="ok")]
    if get:
        steps.append(tool("mcp get", "get_skill", {"name": name or f"workspace:{folder}"}))
    if resource:
        steps.append(Step("mcp", "mcp read resource", ("resource", f"skill://workspace/{folder}/{resource}")))
    if cli_show:
        steps.append(cli("show", "show", f"workspace:{folder}", check=no_esc))
    return steps + (extra or [])


def _canaries_indexed_sync(res: Res) -> list[str]:
    return [] if res.ok else ["sync failed: one bad file stops indexing"]


def _canaries_listed(res: Res) -> list[str]:
    try:
        names = {r["name"] for r in json.loads(res.out)}
    except (json.JSONDecodeError, TypeError, KeyError):
        return ["list --json did not answer"]
    missing = [c for c in CANARIES + (PROBE,) if c not in names]
    return [f"good skills not indexed: {', '.join(missing)}"] if missing else []


# --- generators, one per category --------------------------------------------------------------------

def hostile_names(e: Env) -> list[str]:
    t = e.tok
    return [f"../../x-{t}", "..", ".", f"../../../../tmp/skillshelf-adv-{t}", f"{e.zone}/abs-{t}", "/etc/passwd",
            f"a/b-{t}", "a\\b", f"nul\x00byte-{t}", "\x1b[31mred\x1b[0m", "\u0455kill-cyrillic", "\uff46\uff55\uff4c\uff4c",
            "zero\u200bwidth", "\ufb01x-ligature", "A" * 10_000, "x" * 65, "con", "history", "--help", " ",
            "name\nnewline", "%2e%2e%2f" + t, "\u202eevil", "drafts"]


def gen_names(e: Env) -> list[Case]:
    cases = []
    for n in hostile_names(e):
        short = repr(n)[:40]
        steps = [tool("mcp ARCHIVE", "save_skill", {"action": "ARCHIVE", "name": n, "description": "hostile name",
                                                    "body": "## Solution\n\nx\n"}, expect="refuse"),
                 tool("mcp DERIVE", "save_skill", {"action": "DERIVE", "name": n, "target_skill_name": PROBE},
                      expect="refuse"),
                 tool("mcp get", "get_skill", {"name": n}, expect="refuse", check=no_passwd),
                 tool("mcp FIX target", "save_skill", {"action": "FIX", "target_skill_name": n, "lesson": "x"},
                      expect="refuse"),
                 tool("http ARCHIVE", "save_skill", {"action": "ARCHIVE", "name": n, "description": "hostile name",
                                                     "body": "## Solution\n\nx\n"}, expect="refuse", channel="http"),
                 tool("http get", "get_skill", {"name": n}, expect="refuse", check=no_passwd, channel="http")]
        if "\x00" not in n:   # an argv cannot hold NUL
            # a name that starts with '-' is an option to the CLI ('--help' prints the usage)
            ex = "any" if n.startswith("-") else "refuse"
            steps += [cli("cli show", "show", n, expect=ex, check=no_passwd),
                      cli("cli deprecate", "deprecate", n, "--reason", "hostile", expect=ex),
                      cli("cli rollback", "rollback", n, "1", expect=ex),
                      cli("cli delete", "delete", n, "--yes", expect=ex)]
        cases.append(Case("names", short, steps, names=[n], quick=QUICK_NAMES.get(len(cases))))
    return cases


def gen_names_in_files(e: Env) -> list[Case]:
    cases = []
    t = e.tok
    for n in ("'../../victim'", "'..'", "'.'", f"'{e.zone}/victim'", "'../history'", "'../../victim/sub'",
              f"'../../../../tmp/skillshelf-adv-{t}'", "'locks'", "'drafts'"):
        raw = n.strip("'")

        def setup(home: Path, env: Env, n=n) -> None:
            write(home, "planted/SKILL.md", fm(n))
        steps = [cli("sync", "sync", "--json", expect="ok"),
                 cli("list", "list", "--json", expect="ok", check=_canaries_listed),
                 cli("deprecate by id", "deprecate", "workspace:planted", "--reason", "hostile"),
                 cli("rollback by id", "rollback", "workspace:planted", "1"),
                 cli("extend-ttl by id", "extend-ttl", "workspace:planted", "5"),
                 tool("mcp FIX by id", "save_skill", {"action": "FIX", "target_skill_name": "workspace:planted",
                                                      "lesson": "hostile"}),
                 tool("mcp DERIVE from it", "save_skill", {"action": "DERIVE", "target_skill_name": "workspace:planted",
                                                           "name": f"derived-{t[:6]}"}),
                 cli("delete by id", "delete", "workspace:planted", "--yes")]
        cases.append(Case("names-in-files", f"name: {n}", steps, setup=setup, names=[raw], fresh=True))
    return cases


def _bomb(levels: int = 9, where: str = "description") -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for i in range(1, levels):
        cur = chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
        prev = cur
    anchors = "\n".join("  " + ln for ln in lines)
    if where == "description":
        return f"---\nname: yaml-bomb\nmetadata:\n{anchors}\ndescription: *{prev}\n---\n\nbody\n"
    if where == "metadata":
        return f"---\nname: yaml-bomb\ndescription: bomb in metadata\nmetadata:\n{anchors}\n  tags: *{prev}\n---\n\nbody\n"
    return f"---\nname: yaml-bomb\ndescription: bomb under an unknown key\nextra:\n{anchors}\n  last: *{prev}\n---\n\nbody\n"


def gen_yaml(e: Env) -> list[Case]:
    texts = {
        "nested aliases in description (441 B style)": _bomb(9, "description"),
        "nested aliases in metadata.tags": _bomb(9, "metadata"),
        "nested aliases under an unknown key": _bomb(9, "extra"),
        "recursive alias list as description": "---\nname: yaml-bomb\ndescription: &a [*a]\n---\n\nbody\n",
        "recursive alias in metadata.tags": "---\nname: yaml-bomb\ndescription: d\nmetadata:\n  tags: &t [x, *t]\n---\n\nb\n",
        "recursive mapping": "---\nname: yaml-bomb\ndescription: d\nmetadata: &m\n  self: *m\n---\n\nb\n",
        "deep nesting 20k": "---\nname: yaml-bomb\ndescription: " + "[" * 20000 + "]" * 20000 + "\n---\n\nb\n",
        "python tag": "---\nname: yaml-bomb\ndescription: !!python/object/apply:os.system ['touch /tmp/pwn']\n---\n\nb\n",
        "100k keys": "---\nname: yaml-bomb\ndescription: d\nmetadata:\n" + "".join(f"  k{i}: v\n" for i in range(100_000)) + "---\n\nb\n",
        # PyYAML's own constructors raise IndexError / KeyError on these
        "explicit !!int with no value": "---\nname: yaml-bomb\ndescription: d\nv: !!int\n---\n\nb\n",
        "explicit !!bool with no value": "---\nname: yaml-bomb\ndescription: d\nv: !!bool\n---\n\nb\n",
        "metadata.version: !!float with no value":
            "---\nname: yaml-bomb\ndescription: d\nmetadata:\n  version: !!float\n---\n\nb\n",
    }
    cases = []
    for label, text in texts.items():
        def setup(home: Path, env: Env, text=text) -> None:
            write(home, "yaml-bomb/SKILL.md", text)
        cases.append(Case("yaml-bombs", label, file_steps("yaml-bomb/SKILL.md"), setup=setup, fresh=True))
    return cases


def gen_dates(e: Env) -> list[Case]:
    metas = {
        "created: 2024-13-45": "  created: 2024-13-45\n",
        "created: 2024-02-30": "  created: 2024-02-30\n",
        "last-modified: 0000-00-00 with ttl": "  last-modified: 0000-00-00\n  ttl-days: '30'\n",
        "version: '99999999999999999999'": "  version: '99999999999999999999'\n",
        "version: 99999999999999999999 (int)": "  version: 99999999999999999999\n",
        "version: '-3'": "  version: '-3'\n",
        "version: 1e400": "  version: 1e400\n",
        "ttl-days: '99999999999'": "  ttl-days: '99999999999'\n  created: '2025-01-01'\n",
        "ttl-days: '-1'": "  ttl-days: '-1'\n",
        "created 9999-12-31 + ttl 1000000": "  created: '9999-12-31'\n  ttl-days: '1000000'\n",
        "top-level date: 2024-13-45": None,
    }
    cases = []
    for label, meta in metas.items():
        def setup(home: Path, env: Env, meta=meta) -> None:
            text = fm("bad-dates", meta=meta) if meta is not None else fm("bad-dates", extra="date: 2024-13-45\n")
            write(home, "bad-dates/SKILL.md", text)
        steps = file_steps("bad-dates/SKILL.md", extra=[
            tool("mcp FIX it", "save_skill", {"action": "FIX", "target_skill_name": "bad-dates", "lesson": "x"}),
            cli("extend-ttl it", "extend-ttl", "bad-dates", "30")])
        cases.append(Case("dates-numbers-in-files", label, steps, setup=setup, fresh=True))
    return cases


def gen_huge(e: Env) -> list[Case]:
    cases = []

    def big_skill(home: Path, env: Env) -> None:
        write(home, "huge/SKILL.md", fm("huge", body="x" * 3_000_000 + "\n"))

    def long_line(home: Path, env: Env) -> None:
        write(home, "huge/SKILL.md", fm("huge", body="word " * 380_000 + "\n"))

    def binary(home: Path, env: Env) -> None:
        write(home, "huge/SKILL.md", random.Random(7).randbytes(65536))

    def png(home: Path, env: Env) -> None:
        write(home, "huge/SKILL.md", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 64)

    def many_lines(home: Path, env: Env) -> None:
        write(home, "huge/SKILL.md", fm("huge", body="## H\n" + "line\n" * 200_000))

    def sparse_ref(home: Path, env: Env) -> None:
        write(home, "huge/SKILL.md", fm("huge"))
        p = home / "skills" / "huge" / "references" / "big.bin"
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "wb") as f:
            f.truncate(300 * 1024 * 1024)

    def node_modules(home: Path, env: Env) -> None:
        write(home, "huge/SKILL.md", fm("huge"))
        nm = home / "skills" / "huge" / "node_modules" / "pkg"
        nm.mkdir(parents=True)
        for i in range(3000):
            (nm / f"f{i}.js").write_text("x")

    for label, setup, kw in (("3 MB SKILL.md", big_skill, {}), ("1.9 MB single line", long_line, {}),
                             ("random binary", binary, {}), ("PNG bytes", png, {}),
                             ("200k lines", many_lines, {}),
                             ("300 MB sparse reference as resource", sparse_ref, {"resource": "references/big.bin"}),
                             ("3,000 files in node_modules", node_modules, {})):
        steps = file_steps("huge/SKILL.md", **kw)
        if label.startswith("3,000"):
            steps.append(tool("mcp get lists files", "get_skill", {"name": "huge"},
                              check=lambda r: ["get_skill lists node_modules"] if r.text.count("node_modules") > 50 else []))
        cases.append(Case("huge-binary", label, steps, setup=setup, fresh=True))
    return cases


def gen_special(e: Env) -> list[Case]:
    def fifo(home: Path, env: Env) -> None:
        (home / "skills" / "special").mkdir(parents=True)
        os.mkfifo(home / "skills" / "special" / "SKILL.md")

    def link(target: str):
        def setup(home: Path, env: Env) -> None:
            (home / "skills" / "special").mkdir(parents=True)
            os.symlink(target, home / "skills" / "special" / "SKILL.md")
        return setup

    def as_dir(home: Path, env: Env) -> None:
        (home / "skills" / "special" / "SKILL.md").mkdir(parents=True)

    def loop(home: Path, env: Env) -> None:
        (home / "skills" / "special").mkdir(parents=True)
        os.symlink("SKILL.md", home / "skills" / "special" / "SKILL.md")

    def ref(kind: str):
        def setup(home: Path, env: Env) -> None:
            write(home, "special/SKILL.md", fm("special"))
            r = home / "skills" / "special" / "references"
            r.mkdir()
            if kind == "fifo":
                os.mkfifo(r / "notes.md")
            elif kind == "zero":
                os.symlink("/dev/zero", r / "notes.md")
            else:
                os.symlink("/etc/passwd", r / "notes.md")
        return setup

    def root_link(home: Path, env: Env) -> None:
        os.symlink("/", home / "skills" / "rootlink")

    def passwd_link(home: Path, env: Env) -> None:
        (home / "skills" / "special").mkdir(parents=True)
        os.symlink("/etc/passwd", home / "skills" / "special" / "SKILL.md")

    cases = [Case("special-files", "FIFO named SKILL.md", file_steps("special/SKILL.md"), setup=fifo, fresh=True),
             Case("special-files", "SKILL.md -> /dev/zero", file_steps("special/SKILL.md"), setup=link("/dev/zero"),
                  fresh=True),
             Case("special-files", "SKILL.md -> /dev/urandom", file_steps("special/SKILL.md"),
                  setup=link("/dev/urandom"), fresh=True),
             Case("special-files", "SKILL.md is a folder", file_steps("special/SKILL.md", get=False), setup=as_dir,
                  fresh=True),
             Case("special-files", "SKILL.md symlink loop", file_steps("special/SKILL.md"), setup=loop, fresh=True),
             Case("special-files", "dangling SKILL.md", file_steps("special/SKILL.md"), setup=link("/nonexistent-x"),
                  fresh=True),
             Case("special-files", "SKILL.md -> /etc/passwd", file_steps("special/SKILL.md", cli_show=True),
                  setup=passwd_link, fresh=True),
             Case("special-files", "FIFO reference as resource",
                  file_steps("special/SKILL.md", resource="references/notes.md"), setup=ref("fifo"), fresh=True),
             Case("special-files", "reference -> /dev/zero as resource",
                  file_steps("special/SKILL.md", resource="references/notes.md"), setup=ref("zero"), fresh=True),
             Case("special-files", "reference -> /etc/passwd as resource",
                  [s if s.label != "mcp read resource" else
                   Step("mcp", "mcp read resource", s.call, "refuse", no_passwd)
                   for s in file_steps("special/SKILL.md", resource="references/notes.md")],
                  setup=ref("passwd"), fresh=True),
             Case("special-files", "folder symlinked to /", [
                 cli("sync", "sync", "--json"), cli("doctor", "doctor", "--json"),
                 tool("mcp reindex", "reindex", {}), tool("mcp search", "search_skills", {"query": "docker"})],
                 setup=root_link, fresh=True)]
    return cases


def gen_encodings(e: Env) -> list[Case]:
    good = fm("enc-skill", description="Encoding test skill with café and naïve words")
    variants = {
        "UTF-16 LE with BOM": good.encode("utf-16"),
        "UTF-16 BE without BOM": good.encode("utf-16-be"),
        "Latin-1 bytes": good.encode("latin-1"),
        "invalid UTF-8 in body": good.encode() + b"\xff\xfe\xfa bad bytes\n",
        "overlong / surrogate bytes": good.encode().replace(b"Do the thing", b"\xc0\xaf\xed\xa0\x80"),
        "BOM + CRLF": b"\xef\xbb\xbf" + good.replace("\n", "\r\n").encode(),
        "lone CR line endings": good.replace("\n", "\r").encode(),
        "NUL bytes in frontmatter": good.replace("Encoding test", "Enc\x00oding").encode(),
    }
    cases = []
    for label, data in variants.items():
        def setup(home: Path, env: Env, data=data) -> None:
            write(home, "enc-skill/SKILL.md", data)
        cases.append(Case("encodings", label, file_steps("enc-skill/SKILL.md", cli_show=True), setup=setup, fresh=True))
    # lone surrogates through JSON (HTTP carries them as \\ud800 escapes)
    steps = [rpc("query with a lone surrogate", '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":'
                 '"search_skills","arguments":{"query":"docker \\ud800 build"}}}'.encode()),
             rpc("ARCHIVE description with a lone surrogate",
                 ('{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"save_skill","arguments":'
                  '{"action":"ARCHIVE","name":"surrogate-%s","description":"bad \\udc80 text","body":"## S\\n\\nx"}}}'
                  % e.tok[:6]).encode(), expect="refuse"),
             rpc("get_skill name with a lone surrogate", '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":'
                 '{"name":"get_skill","arguments":{"name":"\\ud83d"}}}'.encode(), expect="refuse"),
             rpc("report note with a lone surrogate", ('{"jsonrpc":"2.0","id":8,"method":"tools/call","params":'
                 '{"name":"report_outcome","arguments":{"skill":"%s","worked":true,"note":"\\udfff"}}}' % PROBE).encode())]
    cases.append(Case("encodings", "lone surrogates over HTTP", steps))
    return cases


def gen_control(e: Env) -> list[Case]:
    t = e.tok[:6]
    bad = {"NUL": "a\x00b", "ESC clear screen": "x\x1b[2J\x1b[Hy", "BEL": "ding\x07", "C1 CSI": "x\x9b31my",
           "RTL override": "abc\u202edcba", "OSC title": "\x1b]0;owned\x07t", "CR overwrite": "safe\rEVIL"}
    cases = []
    for i, (label, s) in enumerate(bad.items()):
        # a CR in a description is whitespace: folded into a space, which is as good as refusing it
        ex, chk = ("any", _no_raw_cr(e, f"ctrl-{t}-{i}")) if "\r" in s else ("refuse", None)
        steps = [tool("mcp ARCHIVE description", "save_skill", {
                     "action": "ARCHIVE", "name": f"ctrl-{t}-{i}", "description": f"control {s} chars",
                     "body": "## Solution\n\nx\n"}, expect=ex, check=chk)]
        if i < 3:
            steps += [tool("mcp FIX lesson", "save_skill", {"action": "FIX", "target_skill_name": PROBE,
                                                            "lesson": f"lesson {s} here"}, expect="refuse"),
                      tool("http ARCHIVE display_name", "save_skill", {
                          "action": "ARCHIVE", "name": f"ctrl-dn-{t}-{i}", "description": "ok description",
                          "display_name": f"dn {s}", "body": "## Solution\n\nx\n"}, expect="refuse", channel="http")]
        cases.append(Case("control-chars", label, steps))

    def planted(home: Path, env: Env) -> None:
        write(home, "esc-skill/SKILL.md", fm("esc-skill", description='"docker \\e[2J\\e]0;pwned\\a escape \\x9b1m"',
                                             meta="  display-name: \"Esc \\e[31mred\"\n"))
    cases.append(Case("control-chars", "ESC in a file, shown in the terminal", [
        cli("sync", "sync", expect="ok", check=no_esc), cli("show", "show", "esc-skill", check=no_esc),
        cli("search", "search", "docker escape", check=no_esc), cli("list", "list", check=no_esc),
        cli("doctor", "doctor", check=no_esc), cli("history", "history", "esc-skill", check=no_esc)],
        setup=planted, fresh=True))
    return cases


def _no_raw_cr(e: Env, name: str):
    def check(res: Res) -> list[str]:
        p = e.home / "skills" / name / "SKILL.md"
        return ["a raw CR was written"] if p.is_file() and b"\r" in p.read_bytes() else []
    return check


def gen_markup(e: Env) -> list[Case]:
    cases = []
    for label, desc, dn in (("[/bold] description", "'closing [/bold] tag'", None),
                            ("[/etc/hosts] description", "'see [/etc/hosts] for it'", None),
                            ("[/bold] display name", "'plain'", "'[/bold]'"),
                            ("[red] and [link=x] markup", "'[red]red[/red] [link=http://x]x[/link] [bold'", "'[i]'")):
        def setup(home: Path, env: Env, desc=desc, dn=dn) -> None:
            meta = f"  display-name: {dn}\n" if dn else ""
            write(home, "markup-skill/SKILL.md", fm("markup-skill", description=desc, meta=meta,
                                                    body="## Solution\n\n[/bold] and [red]x[/red]\n"))
        cases.append(Case("rich-markup", label, [
            cli("sync", "sync", expect="ok"), cli("show", "show", "markup-skill", expect="ok"),
            cli("search", "search", "markup plain tag hosts", expect="ok"), cli("list", "list", expect="ok"),
            cli("history", "history", "markup-skill"), cli("doctor", "doctor")], setup=setup, fresh=True))
    t = e.tok[:6]
    cases.append(Case("rich-markup", "markup written over MCP, shown by the CLI", [
        tool("mcp ARCHIVE [/bold]", "save_skill", {"action": "ARCHIVE", "name": f"markup-{t}",
                                                   "description": "uses [/bold] and [/etc/hosts] text",
                                                   "display_name": "[/bold]", "body": "## Solution\n\n[/red]\n"}),
        cli("show it", "show", f"markup-{t}"), cli("search it", "search", "bold hosts text")]))
    return cases


def gen_regex(e: Env) -> list[Case]:
    # ``^(#{1,6})\s+(.+?)\s*#*\s*$`` is cubic on spaces between two words
    lines = {"heading: x, 2,000 spaces, y": "# x" + " " * 2000 + "y",
             "heading: 1,500 spaces between words (1.5 KB)": "## a" + " " * 1500 + "b",
             "heading: spaces, #, spaces, x": "#" + " " * 1000 + "#" + " " * 1000 + "x",
             "heading: x, spaces and tabs, y": "# a" + " \t" * 1000 + "b",
             "heading of 2,000 spaces": "#" + " " * 2000, "heading of hashes and spaces": "# " + "# " * 1500 + "x",
             "lesson-like line": "- x" + " " * 3000 + "v1: y"}
    cases = []
    t = e.tok[:6]
    for i, (label, line) in enumerate(lines.items()):
        body = f"## Solution\n\n{line}\n\n## Notes\n\nx\n"

        def setup(home: Path, env: Env, body=body) -> None:
            write(home, "regex-skill/SKILL.md", fm("regex-skill", body=body))
        steps = [tool("mcp ARCHIVE body", "save_skill", {"action": "ARCHIVE", "name": f"regex-{t}-{i}",
                                                         "description": "regex test", "body": body}),
                 tool("mcp FIX lesson", "save_skill", {"action": "FIX", "target_skill_name": PROBE, "lesson": line}),
                 tool("mcp get section", "get_skill", {"name": PROBE, "section": line})]
        cases.append(Case("regex", label, steps))
        cases.append(Case("regex", label + " in a file", [
            cli("sync", "sync", "--json", expect="ok"), cli("show section", "show", "regex-skill", "--section", "Notes"),
            tool("mcp get section", "get_skill", {"name": "regex-skill", "section": "Notes"}),
            tool("mcp unrelated save", "save_skill", {"action": "FIX", "target_skill_name": PROBE,
                                                      "lesson": "unrelated {n}"}, expect="ok")],
            setup=setup, fresh=True))
    return cases


def gen_jsonrpc(e: Env) -> list[Case]:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search_skills",
                                                                          "arguments": {"query": "docker"}}}
    bodies = [
        ("invalid JSON", b"{not json", {}, "refuse"), ("empty body", b"", {}, "refuse"), ("null", b"null", {}, "refuse"),
        ("a string", b'"hello"', {}, "refuse"), ("empty batch", b"[]", {}, "refuse"),
        ("batch of two", json.dumps([call, call]).encode(), {}, "any"),
        ("jsonrpc 1.0", json.dumps({**call, "jsonrpc": "1.0"}).encode(), {}, "refuse"),
        ("no method", b'{"jsonrpc":"2.0","id":1}', {}, "refuse"),
        ("method is a number", b'{"jsonrpc":"2.0","id":1,"method":123}', {}, "refuse"),
        ("unknown method", b'{"jsonrpc":"2.0","id":1,"method":"skills/delete_all"}', {}, "refuse"),
        ("id is an object", json.dumps({**call, "id": {"a": 1}}).encode(), {}, "refuse"),
        ("id 1e400", b'{"jsonrpc":"2.0","id":1e400,"method":"tools/list"}', {}, "any"),
        ("id with 30 digits", b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/list"}', {}, "any"),
        ("params is a string", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}', {}, "refuse"),
        ("params is a list", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1,2]}', {}, "refuse"),
        ("tools/call without name", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}', {}, "refuse"),
        ("unknown tool", json.dumps({**call, "params": {"name": "rm_rf", "arguments": {}}}).encode(), {}, "refuse"),
        ("arguments is a string", json.dumps({**call, "params": {"name": "search_skills", "arguments": "q"}}).encode(),
         {}, "refuse"),
        ("arguments is null", json.dumps({**call, "params": {"name": "search_skills", "arguments": None}}).encode(),
         {}, "refuse"),
        ("nesting 100k deep", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":' + b"[" * 100_000
         + b"]" * 100_000 + b"}", {}, "refuse"),
        ("12 MB body", json.dumps({**call, "params": {"name": "search_skills",
                                                      "arguments": {"query": "x" * 12_000_000}}}).encode(), {}, "any"),
        ("invalid UTF-8 bytes", b'{"jsonrpc":"2.0","id":1,"method":"tools/list","x":"\xff\xfe"}', {}, "any"),
        ("BOM before JSON", b"\xef\xbb\xbf" + json.dumps(call).encode(), {}, "any"),
        ("duplicate keys", b'{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call"}', {}, "any"),
        ("Content-Type text/plain", json.dumps(call).encode(), {"Content-Type": "text/plain"}, "refuse"),
        ("no Accept header", json.dumps(call).encode(), {"Accept": None}, "any"),
        ("Accept text/html", json.dumps(call).encode(), {"Accept": "text/html"}, "refuse"),
        ("wrong session id", json.dumps(call).encode(), {"Mcp-Session-Id": "0" * 32}, "refuse"),
        ("evil Origin", json.dumps(call).encode(), {"Origin": "http://evil.example"}, "refuse"),
        ("evil Host", json.dumps(call).encode(), {"Host": "evil.example"}, "refuse"),
        ("header of 64 KB", json.dumps(call).encode(), {"X-Big": "x" * 65536}, "any"),
        ("protocol version 1999-01-01", json.dumps(call).encode(), {"MCP-Protocol-Version": "1999-01-01"}, "any"),
    ]
    steps = [rpc(label, body, headers, expect) for label, body, headers, expect in bodies]
    steps.append(rpc("no session header", json.dumps(call).encode(), {}, "any", session=False))
    raw = [("stdio garbage line", b"not json at all\n"), ("stdio empty object", b"{}\n"),
           ("stdio 2 MB line", b'{"jsonrpc":"2.0","id":50,"method":"tools/list","x":"' + b"a" * 2_000_000 + b'"}\n'),
           ("stdio invalid UTF-8", b'{"jsonrpc":"2.0","id":51,"method":"\xff\xfe"}\n'),
           ("stdio response to nothing", b'{"jsonrpc":"2.0","id":999,"result":{}}\n'),
           ("stdio unknown notification", b'{"jsonrpc":"2.0","method":"notifications/boom","params":{"x":1}}\n')]
    steps += [Step("stdio", label, ("raw", data)) for label, data in raw]
    return [Case("json-rpc", "malformed JSON-RPC", steps)]


def gen_types(e: Env) -> list[Case]:
    t = e.tok[:6]
    calls = [
        ("search limit 'abc'", "search_skills", {"query": "docker", "limit": "abc"}, "refuse"),
        ("search limit -1", "search_skills", {"query": "docker", "limit": -1}, "any"),
        ("search limit 0", "search_skills", {"query": "docker", "limit": 0}, "any"),
        ("search limit 10**30", "search_skills", {"query": "docker", "limit": 10 ** 30}, "any"),
        ("search limit 1.5", "search_skills", {"query": "docker", "limit": 1.5}, "any"),
        ("search query 123", "search_skills", {"query": 123}, "any"),
        ("search query list", "search_skills", {"query": ["a", "b"]}, "refuse"),
        ("search query empty", "search_skills", {"query": ""}, "any"),
        ("search query null", "search_skills", {"query": None}, "refuse"),
        ("search query 1 MB", "search_skills", {"query": "docker " * 200_000}, "any"),
        ("search mode xx", "search_skills", {"query": "docker", "mode": "xx"}, "refuse"),
        ("search tags 123", "search_skills", {"query": "docker", "tags": 123}, "any"),
        ("search missing query", "search_skills", {}, "refuse"),
        ("search unknown argument", "search_skills", {"query": "docker", "rm": True}, "any"),
        ("get name 123", "get_skill", {"name": 123}, "refuse"),
        ("get name null", "get_skill", {"name": None}, "refuse"),
        ("get name object", "get_skill", {"name": {"a": 1}}, "refuse"),
        ("get section 100k chars", "get_skill", {"name": PROBE, "section": "S" * 100_000}, "refuse"),
        ("save action 123", "save_skill", {"action": 123}, "refuse"),
        ("save action DELETE", "save_skill", {"action": "DELETE", "name": PROBE}, "refuse"),
        ("save action empty", "save_skill", {"action": ""}, "refuse"),
        ("save ttl_days 'x'", "save_skill", {"action": "FIX", "target_skill_name": PROBE, "ttl_days": "x"}, "refuse"),
        ("save ttl_days -1", "save_skill", {"action": "FIX", "target_skill_name": PROBE, "ttl_days": -1}, "refuse"),
        ("save ttl_days 10**30", "save_skill", {"action": "FIX", "target_skill_name": PROBE, "ttl_days": 10 ** 30},
         "refuse"),
        ("save ttl_days 1e308", "save_skill", {"action": "FIX", "target_skill_name": PROBE, "ttl_days": 1e308}, "refuse"),
        ("save sources as a list of 1000", "save_skill", {"action": "MERGE", "name": f"m-{t}",
                                                          "source_skill_names": [PROBE] * 1000}, "refuse"),
        ("save tags as a list", "save_skill", {"action": "FIX", "target_skill_name": PROBE, "tags": ["a", "b"]}, "any"),
        ("save FIX with nothing to change", "save_skill", {"action": "FIX", "target_skill_name": PROBE}, "refuse"),
        ("save body 5 MB", "save_skill", {"action": "ARCHIVE", "name": f"big-{t}", "description": "d",
                                          "body": "x" * 5_000_000}, "refuse"),
        ("save lesson 2 MB", "save_skill", {"action": "FIX", "target_skill_name": PROBE, "lesson": "y" * 2_000_000},
         "refuse"),
        ("report worked 'yes'", "report_outcome", {"skill": PROBE, "worked": "maybe"}, "refuse"),
        ("report worked 2", "report_outcome", {"skill": PROBE, "worked": 2}, "refuse"),
        ("report query_id 30 digits", "report_outcome", {"skill": PROBE, "worked": True, "query_id": "1" * 30},
         "refuse"),
        ("report query_id -1", "report_outcome", {"skill": PROBE, "worked": True, "query_id": "-1"}, "refuse"),
        ("report note 1 MB", "report_outcome", {"skill": PROBE, "worked": True, "note": "n" * 1_000_000}, "refuse"),
        ("stats with arguments", "skill_stats", {"x": 1}, "any"),
    ]
    cases = []
    for channel in ("mcp", "http"):
        steps = [tool(label, name, args, expect, channel=channel) for label, name, args, expect in calls]
        cases.append(Case("wrong-types", f"wrong types over {channel}", steps))
    return cases


def gen_numbers(e: Env) -> list[Case]:
    big = "9" * 30
    steps = [cli("extend-ttl 999999999", "extend-ttl", PROBE, "999999999", expect="refuse"),
             cli("extend-ttl -1", "extend-ttl", PROBE, "-1", expect="refuse"),
             cli("extend-ttl 30 digits", "extend-ttl", PROBE, big, expect="refuse"),
             cli("report-outcome --query-id 30 digits", "report-outcome", PROBE, "--worked", "--query-id", big,
                 expect="refuse"),
             cli("list --limit 30 digits", "list", "--limit", big),
             cli("list --limit -1", "list", "--limit", "-1", expect="refuse"),
             cli("search -n 30 digits", "search", "docker", "-n", big),
             cli("search -n -5", "search", "docker", "-n", "-5"),
             cli("rollback to v<30 digits>", "rollback", PROBE, big, expect="refuse"),
             cli("rollback to v-1", "rollback", PROBE, "-1", expect="refuse"),
             cli("diff 1 <30 digits>", "diff", PROBE, "1", big, expect="refuse"),
             cli("serve --port 70000", "serve", "--http", "--port", "70000", expect="refuse"),
             cli("serve --port -1", "serve", "--http", "--port", "-1", expect="refuse"),
             cli("serve --port 30 digits", "serve", "--http", "--port", big, expect="refuse"),
             cli("stats --since 2024-13-45", "stats", "--since", "2024-13-45", expect="refuse"),
             cli("report --since 99999-01-01", "report", "--since", "99999-01-01", expect="refuse"),
             cli("prune-usage --before 2024-13-45", "prune-usage", "--before", "2024-13-45", "--yes", expect="refuse"),
             cli("--home /proc/x", "--home", "/proc/skillshelf-x", "list", expect="refuse"),
             cli("--home /dev/null", "--home", "/dev/null", "list", expect="refuse"),
             cli("--root /nonexistent", "--root", "/nonexistent-root-x", "list", expect="refuse"),
             cli("show --section 2,000 spaces", "show", PROBE, "--section", " " * 2000)]
    return [Case("extreme-numbers", "extreme numbers on the command line", steps)]


def gen_disk(e: Env) -> list[Case]:
    """A home on a tiny tmpfs that is full, then mounted read-only (needs root and mount)."""
    return [Case("disk", "full disk", [
        cli("show (read)", "show", PROBE, expect="ok"), cli("search (read)", "search", "docker", expect="ok"),
        cli("list (read)", "list", expect="ok"),
        tool("mcp get (read)", "get_skill", {"name": PROBE}, expect="ok"),
        tool("mcp search (read)", "search_skills", {"query": "docker"}, expect="ok"),
        cli("extend-ttl (write)", "extend-ttl", PROBE, "30", expect="refuse"),
        tool("mcp FIX (write)", "save_skill", {"action": "FIX", "target_skill_name": PROBE, "lesson": "disk full"},
             expect="refuse")], setup=_fill_disk, fresh=True),
        Case("disk", "disk fills under a running server", [
            tool("mcp get before (read)", "get_skill", {"name": PROBE}, expect="ok"),
            Step("do", "fill the disk", ("do", _fill)),
            tool("mcp get (read)", "get_skill", {"name": PROBE}, expect="ok"),
            tool("mcp search (read)", "search_skills", {"query": "docker"}, expect="ok"),
            tool("mcp report outcome", "report_outcome", {"skill": PROBE, "worked": True}),
            tool("mcp FIX (write)", "save_skill", {"action": "FIX", "target_skill_name": PROBE, "lesson": "full"},
                 expect="refuse"),
            cli("show (read)", "show", PROBE, expect="ok")], setup=lambda home, env: _tmpfs_home(home, "8m"),
            fresh=True),
        Case("disk", "read-only home", [
            cli("show (read)", "show", PROBE, expect="ok"), cli("search (read)", "search", "docker", expect="ok"),
            tool("mcp get (read)", "get_skill", {"name": PROBE}, expect="ok"),
            cli("extend-ttl (write)", "extend-ttl", PROBE, "30", expect="refuse"),
            tool("mcp FIX (write)", "save_skill", {"action": "FIX", "target_skill_name": PROBE, "lesson": "ro"},
                 expect="refuse")], setup=_read_only, fresh=True)]


def _mounted(home: Path) -> bool:
    return os.path.ismount(home)


def _tmpfs_home(home: Path, size: str) -> None:
    """Move the home onto a tmpfs of ``size`` mounted at the same path."""
    keep = home.with_name(home.name + ".copy")
    shutil.copytree(home, keep, symlinks=True)
    shutil.rmtree(home)
    home.mkdir()
    rc = os.system(f"mount -t tmpfs -o size={size} tmpfs '{home}' 2>/dev/null")
    if rc != 0:
        shutil.rmtree(home)
        keep.rename(home)
        raise RuntimeError("cannot mount a tmpfs (needs root)")
    for p in keep.iterdir():
        (shutil.copytree if p.is_dir() else shutil.copy2)(p, home / p.name)
    shutil.rmtree(keep)


def _fill(home: Path) -> None:
    with contextlib.suppress(OSError), open(home / "filler.bin", "wb") as f:
        while True:
            f.write(b"\0" * 65536)
            f.flush()


def _remount_ro(home: Path) -> None:
    if os.system(f"mount -o remount,ro '{home}' 2>/dev/null") != 0:
        raise RuntimeError("cannot remount read-only")


def _fill_disk(home: Path, env: Env) -> None:
    _tmpfs_home(home, "8m")
    _fill(home)


def _read_only(home: Path, env: Env) -> None:
    _tmpfs_home(home, "16m")
    _remount_ro(home)


def _unmount(home: Path) -> None:
    for _ in range(3):
        if not _mounted(home):
            return
        os.system(f"umount -l '{home}' 2>/dev/null")


# The short selection (``--quick``, tests/test_robustness.py): per case, the steps to run.
QUICK = {
    ("names-in-files", "name: '../../victim'"): ["sync", "deprecate by id", "mcp FIX by id", "delete by id"],
    ("names-in-files", "name: '..'"): ["delete by id"],
    ("yaml-bombs", "nested aliases in description (441 B style)"): ["mcp reindex", "mcp unrelated save"],
    ("yaml-bombs", "recursive alias list as description"): ["sync"],
    ("dates-numbers-in-files", "created: 2024-13-45"): ["mcp reindex", "mcp unrelated save", "mcp FIX it"],
    ("dates-numbers-in-files", "version: '99999999999999999999'"): ["sync"],
    ("huge-binary", "3 MB SKILL.md"): ["sync"],
    ("huge-binary", "300 MB sparse reference as resource"): ["mcp reindex", "mcp read resource"],
    ("special-files", "FIFO named SKILL.md"): ["mcp reindex", "mcp unrelated save"],
    ("special-files", "SKILL.md -> /dev/zero"): ["sync"],
    ("encodings", "invalid UTF-8 in body"): ["sync"],
    ("encodings", "lone surrogates over HTTP"): ["query with a lone surrogate", "ARCHIVE description with a lone surrogate"],
    ("control-chars", "NUL"): ["mcp ARCHIVE description"],
    ("control-chars", "ESC clear screen"): ["mcp ARCHIVE description", "mcp FIX lesson", "http ARCHIVE display_name"],
    ("control-chars", "ESC in a file, shown in the terminal"): ["show"],
    ("rich-markup", "[/bold] description"): ["show", "search"],
    ("regex", "heading: x, 2,000 spaces, y"): ["mcp ARCHIVE body", "mcp FIX lesson", "mcp get section"],
    ("regex", "heading: x, 2,000 spaces, y in a file"): ["sync"],
    ("json-rpc", "malformed JSON-RPC"): ["invalid JSON", "nesting 100k deep", "12 MB body", "evil Origin",
                                         "params is a string", "stdio garbage line"],
    ("wrong-types", "wrong types over mcp"): ["search limit 'abc'", "search limit 10**30", "get name 123",
                                             "save ttl_days 10**30", "report query_id 30 digits"],
    ("wrong-types", "wrong types over http"): ["search limit 10**30", "save action 123"],
    ("extreme-numbers", "extreme numbers on the command line"): [
        "extend-ttl 999999999", "report-outcome --query-id 30 digits", "serve --port 70000", "--home /proc/x"],
}
QUICK_NAMES = {0: ["mcp ARCHIVE", "mcp get", "http ARCHIVE", "http get", "cli delete"], 1: ["mcp ARCHIVE", "mcp DERIVE"]}

GENERATORS = {"names": gen_names, "names-in-files": gen_names_in_files, "yaml-bombs": gen_yaml,
              "dates-numbers-in-files": gen_dates, "huge-binary": gen_huge, "special-files": gen_special,
              "encodings": gen_encodings, "control-chars": gen_control, "rich-markup": gen_markup, "regex": gen_regex,
              "json-rpc": gen_jsonrpc, "wrong-types": gen_types, "extreme-numbers": gen_numbers, "disk": gen_disk}


# --- running ---------------------------------------------------------------------------------------------

def escape_paths(home: Path, name: str) -> list[Path]:
    """Where a path built from ``name`` under the home's folders would land, when outside it."""
    out = []
    if "\x00" in name:
        return out
    for d in (home, home / "skills", home / "history", home / "drafts", home / "locks", home / "skills" / "x"):
        for suffix in ("", "SKILL.md", "v1.md", "changelog.jsonl"):
            with contextlib.suppress(ValueError, OSError):
                p = Path(os.path.normpath(os.path.join(d, name, suffix) if suffix else os.path.join(d, name)))
                hp = os.path.normpath(home)
                if not (str(p) + "/").startswith(hp + "/"):
                    out.append(p)
                lp = Path(os.path.normpath(os.path.join(d, name + ".lock")))
                if not (str(lp) + "/").startswith(hp + "/"):
                    out.append(lp)
    return out


def _exists_map(paths: list[Path]) -> dict[str, tuple]:
    out = {}
    for p in paths:
        try:
            st = os.lstat(p)
            out[str(p)] = (st.st_mtime_ns, st.st_size)
        except (OSError, ValueError):
            out[str(p)] = None
    return out


class Adversary:
    def __init__(self, e: Env, max_per_cat: int | None, seed: int, quiet: bool, quick: bool = False):
        self.e = e
        self.max = max_per_cat
        self.quick = quick
        self.rng = random.Random(seed)
        self.quiet = quiet
        self.rows: list[Row] = []
        self.stdio: H.StdioServer | None = None
        self.http: H.HttpServer | None = None
        self.n = 0
        self.skipped: list[str] = []

    # servers ------------------------------------------------------------------------------------------
    async def ensure_stdio(self) -> H.StdioServer:
        if self.stdio is None:
            self.n += 1
            self.stdio = H.StdioServer(self.e.home, self.e.env, self.e.logs, tag=f"stdio{self.n}",
                                       mem_limit_mb=SERVER_MEM_LIMIT_MB)
            await self.stdio.start(timeout=60)
        return self.stdio

    async def drop_stdio(self) -> None:
        if self.stdio is not None:
            await self.stdio.stop(kill=True)
            self.stdio = None

    def ensure_http(self) -> H.HttpServer:
        if self.http is None:
            self.http = H.HttpServer(self.e.home, self.e.env, self.e.logs).start(timeout=60)
        return self.http

    def drop_http(self) -> None:
        if self.http is not None:
            self.http.stop()
            self.http = None

    # one step -------------------------------------------------------------------------------------------
    def _fmt(self, v: Any) -> Any:
        if isinstance(v, str):
            return v.replace("{home}", str(self.e.home)).replace("{n}", str(self.rng.randrange(10 ** 9)))
        if isinstance(v, dict):
            return {k: self._fmt(x) for k, x in v.items()}
        if isinstance(v, list):
            return [self._fmt(x) for x in v]
        return v

    async def run_step(self, step: Step) -> Res:
        kind = step.call[0]
        if kind == "cli":
            argv = [self._fmt(a) for a in step.call[1]]
            r = await asyncio.to_thread(H.cli, self.e.home, *argv, env=self.e.env, timeout=TIMEOUT)
            return Res(ok=r.rc == 0, refused=r.rc not in (0, None), text=r.text, out=r.out, seconds=r.seconds,
                       hang=r.timed_out, traceback=r.traceback, rss_mb=r.maxrss_mb, status=r.rc)
        if step.channel == "http":
            srv = await asyncio.to_thread(self.ensure_http)
            start = srv.stderr_size()
            if kind == "tool":
                body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                        "params": {"name": step.call[1], "arguments": self._fmt(step.call[2])}}
                st, msgs, text, secs, to = await asyncio.to_thread(srv.post, body, timeout=TIMEOUT)
            else:
                _, body, headers, session = step.call
                st, msgs, text, secs, to = await asyncio.to_thread(srv.post, body, headers=headers, timeout=TIMEOUT,
                                                                   session=session)
            res = _http_res(st, msgs, text, secs, to)
            log = srv.stderr_text()[-(srv.stderr_size() - start):] if srv.stderr_size() > start else ""
            res.traceback = res.traceback or H.has_traceback(log)
            alive = await asyncio.to_thread(srv.alive) if not to else False
            if not alive:
                res.server_dead = srv.proc.poll() is not None
                self.drop_http()
            return res
        if kind == "raw":
            return await asyncio.to_thread(self._raw_stdio, step.call[1])
        srv = await self.ensure_stdio()
        start = srv.stderr_size()
        if kind == "tool":
            c = await srv.call(step.call[1], self._fmt(step.call[2]), timeout=TIMEOUT)
        else:
            c = await srv.read_resource(step.call[1], timeout=TIMEOUT)
        res = Res(ok=c.ok, refused=c.is_error or bool(c.exception), text=c.text or c.exception, seconds=c.seconds,
                  hang=c.timed_out, traceback=H.has_traceback(c.text), structured=c.structured,
                  rss_mb=srv.peak_rss_mb())
        res.traceback = res.traceback or H.has_traceback(srv.stderr_text(start))
        if c.timed_out or c.exception:
            res.server_dead = c.exception != "" and not c.timed_out
            await self.drop_stdio()
        return res

    def _raw_stdio(self, data: bytes) -> Res:
        """Garbage on a stdio server's stdin (after a normal initialize), then a real request:
        it must still answer, within the step's timeout."""
        import select
        import subprocess
        import threading

        errp = self.e.logs / "raw-stdio.stderr"
        with open(errp, "ab") as errf:
            p = subprocess.Popen([H.skillshelf_exe(), "--home", str(self.e.home), "serve"], env=self.e.env,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errf, start_new_session=True)
        start = errp.stat().st_size
        out = b""

        def read_until(marker: bytes, limit: float) -> bool:
            nonlocal out
            t = time.perf_counter()
            while time.perf_counter() - t < limit:
                r, _, _ = select.select([p.stdout], [], [], 0.1)
                if r:
                    chunk = os.read(p.stdout.fileno(), 1 << 20)
                    if not chunk:
                        return False
                    out += chunk
                    if marker in out:
                        return True
            return False

        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": H.PROTOCOL, "capabilities": {}, "clientInfo": {"name": "a", "version": "1"}}}
        try:
            p.stdin.write((json.dumps(init) + "\n").encode())
            p.stdin.flush()
            if not read_until(b'"id":0', 60):
                return Res(refused=True, text="the stdio server did not answer initialize")
            out = b""
            payload = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n' + data \
                + b'{"jsonrpc":"2.0","id":77,"method":"tools/list"}\n'

            def feed() -> None:
                with contextlib.suppress(OSError):
                    p.stdin.write(payload)
                    p.stdin.flush()
            threading.Thread(target=feed, daemon=True).start()
            t0 = time.perf_counter()
            ok = read_until(b'"id":77', TIMEOUT) and b'"tools"' in out
            secs = time.perf_counter() - t0
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, 9)
            p.wait()
        log = errp.read_bytes()[start:].decode("utf-8", "replace")
        text = out.decode("utf-8", "replace")
        return Res(ok=ok, refused=not ok, text=text[-2000:] + log[-2000:], seconds=secs,
                   hang=not ok and secs >= TIMEOUT, traceback=H.has_traceback(text, log))

    # one case ---------------------------------------------------------------------------------------------
    async def run_case(self, case: Case, steps: list[Step]) -> None:
        e = self.e
        if case.fresh:
            await self.drop_stdio()
            self.drop_http()
            reset_home(e)
            try:
                if case.setup:
                    case.setup(e.home, e)
            except RuntimeError as exc:
                self.skipped.append(f"{case.cat} / {case.label}: {exc}")
                reset_home(e)
                return
        canary_paths = [e.home / "skills" / c for c in CANARIES]
        watch = [p for n in case.names for p in escape_paths(e.home, n)]
        for step in steps:
            if step.call[0] == "do":   # a change to the world between steps, not a case
                try:
                    step.call[1](e.home)
                except (RuntimeError, OSError) as exc:
                    self.skipped.append(f"{case.cat} / {case.label}: {exc}")
                    break
                continue
            before = H.snapshot(e.base, exclude=[e.home])
            canaries = H.tree_digest(canary_paths)
            exists = _exists_map(watch)
            try:
                res = await self.run_step(step)
            except Exception as exc:  # the harness itself: reported, never hides the case
                res = Res(text=f"harness error: {type(exc).__name__}: {exc}", refused=True)
                await self.drop_stdio()
                self.drop_http()
            outside = H.diff_snapshots(before, H.snapshot(e.base, exclude=[e.home]))
            outside += [f"created or changed {p}" for p, v in _exists_map(watch).items() if v != exists.get(p)]
            lost = [f"{Path(p).relative_to(e.home)}: {'gone' if h == 'missing' else 'changed'}"
                    for p, h in canaries.items() if H.tree_digest([Path(p)]).get(p) != h]
            if not all(p.exists() for p in canary_paths) and not lost:
                lost = ["canary skill folders gone"]
            wrong: list[str] = []
            if res.hang:
                pass
            elif step.expect == "refuse" and res.ok:
                wrong.append("accepted what must be refused")
            elif step.expect == "refuse":
                wrong += _clear(res)
            elif step.expect == "ok" and not res.ok:
                wrong.append("failed where it must work: " + _first_line(res.text))
            if step.check and not res.hang:
                wrong += step.check(res)
            if res.rss_mb > MEMORY_MB:
                wrong.append(f"memory peaked at {res.rss_mb:.0f} MB")
            if res.server_dead:
                wrong.append("the server died")
            result = "hang" if res.hang else ("ok" if res.ok else "refused")
            self.rows.append(Row(case.cat, case.label, step.label, step.channel, step.expect, result,
                                 round(res.seconds, 3), res.traceback, res.hang, lost, outside, wrong,
                                 _first_line(res.text)))
            if lost:   # the home is damaged: later steps would report the same loss
                reset_home(e)
                await self.drop_stdio()
                self.drop_http()
        if case.fresh:
            await self.drop_stdio()
            self.drop_http()
            _unmount(e.home)
            reset_home(e)

    async def main(self, categories: list[str]) -> None:
        reset_home(self.e)
        try:
            for cat in categories:
                cases = GENERATORS[cat](self.e)
                budget = self.max
                for case in cases:
                    case.quick = QUICK.get((cat, case.label), case.quick)
                    if self.quick:
                        if case.quick is None:
                            continue
                        steps = [st for st in case.steps if st.label in case.quick] if case.quick else case.steps
                    else:
                        steps = case.steps if budget is None else case.steps[:budget]
                    if budget is not None:
                        if budget <= 0:
                            break
                        budget -= len(steps)
                    t0 = time.perf_counter()
                    await self.run_case(case, steps)
                    if not self.quiet:
                        bad = [r for r in self.rows[-len(steps):] if r.traceback or r.hang or r.lost or r.outside]
                        print(f"  {cat:24} {case.label[:44]:44} {len(steps):3} steps {time.perf_counter() - t0:5.1f} s"
                              f"{'  <-- ' + str(len(bad)) + ' bad' if bad else ''}", file=sys.stderr)
        finally:
            await self.drop_stdio()
            self.drop_http()
            _unmount(self.e.home)


def _first_line(text: str) -> str:
    for ln in (text or "").splitlines():
        if ln.strip():
            return ln.strip()[:200]
    return ""


def _http_res(st: int | None, msgs: list[dict], text: str, secs: float, timed_out: bool) -> Res:
    res = Res(seconds=secs, hang=timed_out, status=st, traceback=H.has_traceback(text))
    if timed_out or st is None:
        res.refused = not timed_out
        res.text = text
        return res
    err = [m for m in msgs if "error" in m]
    is_err = [m for m in msgs if isinstance(m.get("result"), dict) and m["result"].get("isError")]
    good = [m for m in msgs if "result" in m and m not in is_err]
    res.ok = st < 400 and bool(good) and not err and not is_err
    res.refused = st >= 400 or bool(err) or bool(is_err)
    if err:
        res.text = json.dumps(err[0].get("error"))[:2000]
    elif is_err:
        res.text = " ".join(c.get("text", "") for c in is_err[0]["result"].get("content", []))[:2000]
    else:
        res.text = text[:2000] if st >= 400 or not msgs else json.dumps(msgs[0])[:2000]
    if st >= 500:
        res.text = f"HTTP {st}: " + res.text
    return res


def reset_home(e: Env) -> None:
    _unmount(e.home)
    if e.home.exists():
        shutil.rmtree(e.home, ignore_errors=True)
    shutil.copytree(e.template, e.home, symlinks=True)


def make_env(base: Path | None, src: str | None) -> Env:
    base = Path(base or tempfile.mkdtemp(prefix="skillshelf-adv-"))
    zone = base / "zone"
    home = zone / "home"
    victim = zone / "victim"
    template = base / "template"
    logs = Path(tempfile.mkdtemp(prefix="skillshelf-adv-logs-"))
    for d in (zone, victim / "sub"):
        d.mkdir(parents=True, exist_ok=True)
    (victim / "precious.txt").write_text("the victim's data\n")
    (victim / "sub" / "more.txt").write_text("more data\n")
    (victim / "v1.md").write_text(H.skill_text("victim", "A file outside the library", "## Solution\n\nx\n"))
    (victim / "SKILL.md").write_text(H.skill_text("victim", "A skill outside the library", "## Solution\n\nx\n"))
    tok = f"{random.randrange(16 ** 8):08x}"
    env = H.child_env(template, embedder="none", policy="open", src=src)
    env.pop("SKILLSHELF_HOME", None)
    r = H.cli(template, "init", env=env, timeout=120)
    if r.rc != 0:
        raise SystemExit(f"init failed: {r.text[-1500:]}")
    H.write_skill(template / "skills", PROBE, "Probe skill that adversarial saves may change", H.DEFAULT_BODY.format(topic="probe"))
    H.cli(template, "sync", env=env, timeout=120)
    H.cli(template, "extend-ttl", PROBE, "30", env=env, timeout=120)  # history for rollbacks
    return Env(base, zone, home, victim, template, logs, env, tok)


@dataclass
class AdvResult:
    rows: list[Row]
    skipped: list[str]
    base: str
    logs: str

    def tally(self) -> dict[str, H.Tally]:
        t: dict[str, H.Tally] = defaultdict(H.Tally)
        for r in self.rows:
            x = t[r.cat]
            x.cases += 1
            x.tracebacks += r.traceback
            x.hangs += r.hang
            x.lost += bool(r.lost)
            x.outside += bool(r.outside)
            x.wrong += bool(r.wrong)
        return t

    def count(self, attr: str) -> int:
        return sum(getattr(v, attr) for v in self.tally().values())

    @property
    def failed(self) -> bool:
        return any(self.count(a) for a in ("tracebacks", "hangs", "lost", "outside"))

    def by_channel(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for r in self.rows:
            out[r.channel] += 1
        return dict(out)

    def as_dict(self) -> dict:
        return {"base": self.base, "logs": self.logs, "skipped": self.skipped,
                "totals": {a: self.count(a) for a in ("cases", "tracebacks", "hangs", "lost", "outside", "wrong")},
                "by_channel": self.by_channel(),
                "per_category": {k: {a: getattr(v, a) for a in ("cases", "tracebacks", "hangs", "lost", "outside",
                                                                 "wrong")} for k, v in self.tally().items()},
                "rows": [asdict(r) for r in self.rows]}


def run(*, categories: list[str] | None = None, max_per_category: int | None = None, quick: bool = False,
        seed: int = 1, workdir: Path | None = None, src: str | None = None, keep: bool = False,
        quiet: bool = False) -> AdvResult:
    """``quick``: the short selection (about 60 steps, every category but disk) CI runs."""
    e = make_env(workdir, src)
    cats = list(categories or CATEGORIES)
    if (os.geteuid() != 0 or quick) and "disk" in cats:
        cats.remove("disk")
    adv = Adversary(e, max_per_category, seed, quiet, quick)
    asyncio.run(adv.main(cats))
    res = AdvResult(adv.rows, adv.skipped, str(e.base), str(e.logs))
    if not keep and not res.failed:
        shutil.rmtree(e.base, ignore_errors=True)
        shutil.rmtree(e.logs, ignore_errors=True)
    return res


def summary(res: AdvResult, *, details: int = 60) -> str:
    t = res.tally()
    rows = [[cat, v.cases, v.tracebacks, v.hangs, v.lost, v.outside, v.wrong] for cat, v in
            sorted(t.items(), key=lambda kv: CATEGORIES.index(kv[0]) if kv[0] in CATEGORIES else 99)]
    rows.append(["total", *(res.count(a) for a in ("cases", "tracebacks", "hangs", "lost", "outside", "wrong"))])
    out = [H.fmt_table(rows, ["category", "cases", "tracebacks", "hangs", "data lost", "writes outside",
                              "wrong outcome"])]
    out.append("by channel: " + ", ".join(f"{k} {v}" for k, v in sorted(res.by_channel().items())))
    if res.skipped:
        out.append("skipped: " + "; ".join(res.skipped))
    bad = [r for r in res.rows if r.traceback or r.hang or r.lost or r.outside or r.wrong]
    if bad:
        out.append(f"\nfailures ({len(bad)}; first {min(details, len(bad))}):")
        for r in bad[:details]:
            flags = [f for f, on in (("TRACEBACK", r.traceback), ("HANG", r.hang), ("LOST", r.lost),
                                     ("OUTSIDE", r.outside)) if on]
            why = "; ".join(r.wrong + r.lost[:2] + r.outside[:2])
            out.append(f"  [{r.cat}] {r.case[:40]} / {r.step} ({r.channel}): {' '.join(flags)} {why}"
                       f" :: {r.detail[:120]}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--category", action="append", choices=CATEGORIES, help="only these categories (repeatable)")
    ap.add_argument("--max-per-category", type=int, help="at most this many steps per category")
    ap.add_argument("--quick", action="store_true", help="the short selection CI runs (about 60 steps)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the temporary homes and logs")
    ap.add_argument("--workdir", type=Path, help="use this folder instead of a temporary one")
    ap.add_argument("--src", help="run another source tree (its src/ folder, via PYTHONPATH)")
    ap.add_argument("--json-out", type=Path, default=Path(tempfile.gettempdir()) / "skillshelf-adversarial.json",
                    help="where to write every result as JSON (default: %(default)s)")
    ap.add_argument("--details", type=int, default=60, help="failures listed in the summary")
    a = ap.parse_args(argv)
    res = run(categories=a.category, max_per_category=a.max_per_category, quick=a.quick, seed=a.seed,
              workdir=a.workdir, src=a.src, keep=a.keep)
    print(summary(res, details=a.details))
    a.json_out.write_text(json.dumps(res.as_dict(), indent=1, ensure_ascii=False))
    print(f"results: {a.json_out}")
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())
