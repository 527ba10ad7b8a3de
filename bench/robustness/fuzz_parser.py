"""A timed fuzz run of the SKILL.md parser: for ``--seconds`` it feeds ``skill.parse`` random
and mutated SKILL.md texts (seeds: the bundled samples, a sample of the real corpus when it is
there, and hand-made hostile frontmatter; mutations: byte flips, hostile YAML and Markdown
pieces, long runs of spaces, hashes and brackets, splices, truncation, line-ending and BOM
changes), then reads the result the way the library does (``headings``, ``section``,
``expires_on``, ``render``). The cases run in a worker process watched by a timer, so a case
that hangs is caught, saved and skipped instead of stopping the run. Reports cases, cases/s,
the slowest case, time percentiles, exceptions by type and hangs; writes JSON and saves every
failing case to a folder. Exits 1 on any exception or hang.

    python bench/robustness/fuzz_parser.py [--seconds 60] [--seed 1] [--case-timeout 5]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus" / "skills"

TOKENS = ["---", "--- ", "\n---\n", ": ", ":", "- ", "#", "## ", "###### ", "```", "~~~", "&a ", "*a", "&b [*a, *a]",
          "!!python/object/apply:os.system ['x']", "!!binary", "!!int", "!!float", "!!timestamp", "!!set", "? ",
          "'", '"', "\\", "\t", "\r", "\r\n", "\x00", "\x1b[2J", "\u2028", "\x85", "\ufeff", "[/bold]", "{", "}",
          "[", "]", "|", ">", "%YAML 1.1\n", "%TAG ! tag:x:\n", "...", "~", "null", "true", "2024-13-45", "1e400",
          "99999999999999999999", "-1", "0x", "é", "\u202e", "\U0001F600", "\ud800", "<<: *a", "=", "@", "`",
          "metadata:\n  ", "description: ", "name: ", "version: ", "ttl-days: ", "created: ", "tags: ",
          "## Lessons Learned\n- v1: ", "\n\n", " " * 64]
HOSTILE = [
    "---\nname: x\ndescription: d\nmetadata:\n  created: 2024-13-45\n---\n\nbody\n",
    "---\nname: x\ndescription: &a [*a]\n---\n",
    "---\nname: x\ndescription: d\nmetadata:\n  version: '99999999999999999999'\n  ttl-days: '99999999999'\n---\n",
    "---\nname: '../../victim'\ndescription: d\n---\n\n# " + " " * 2000 + "\n",
    "---\n" + "".join(f"{c}: &{c} [" + ",".join([f"*{chr(ord(c) - 1)}"] * 9 if c > "a" else ['"lol"'] * 9) + "]\n"
                      for c in "abcdefgh") + "description: *h\n---\n",
    "---\nname: x\ndescription: " + "[" * 5000 + "]" * 5000 + "\n---\n",
    "---\nname: x\ndescription: d\nmetadata: {a: 1, b: [1, 2], c: {d: e}}\n---\n\n## Solution\n\nx\n",
]


def seeds(corpus_sample: int, rng: random.Random) -> list[str]:
    out: list[str] = []
    samples = REPO / "src" / "skillshelf" / "samples"
    out += [p.read_text(encoding="utf-8") for p in sorted(samples.glob("*/SKILL.md"))]
    if corpus_sample and CORPUS.is_dir():
        files = []
        for dirpath, _, names in os.walk(CORPUS):
            if "SKILL.md" in names:
                files.append(Path(dirpath) / "SKILL.md")
            if len(files) > corpus_sample * 20:
                break
        for p in rng.sample(files, min(corpus_sample, len(files))):
            try:
                data = p.read_bytes()
            except OSError:
                continue
            if len(data) < 200_000:
                out.append(data.decode("utf-8", "replace"))
    return out + HOSTILE


def mutate(text: str, rng: random.Random, pool: list[str]) -> str | bytes:
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(12)
        n = len(text)
        pos = rng.randint(0, n)
        if op == 0:        # insert a hostile token
            text = text[:pos] + rng.choice(TOKENS) + text[pos:]
        elif op == 1 and n:   # delete a range
            end = min(n, pos + rng.randint(1, 200))
            text = text[:pos] + text[end:]
        elif op == 2 and n:   # duplicate a range
            end = min(n, pos + rng.randint(1, 400))
            text = text[:pos] + text[pos:end] * rng.randint(2, 20) + text[pos:]
        elif op == 3:      # long run of one character
            text = text[:pos] + rng.choice([" ", "#", "[", "{", "-", "*", "&", "\t", "`", "\n"]) * rng.choice(
                [100, 1000, 5000, 20000]) + text[pos:]
        elif op == 4:      # splice with another seed
            other = rng.choice(pool)
            text = text[:pos] + other[rng.randint(0, len(other)):]
        elif op == 5:      # truncate
            text = text[:pos]
        elif op == 6:      # line endings
            text = text.replace("\n", rng.choice(["\r\n", "\r", "\n\n", "\u2028"]))
        elif op == 7:      # BOM / leading junk
            text = rng.choice(["\ufeff", " ", "\n", "\x00", "-- "]) + text
        elif op == 8:      # random unicode
            text = text[:pos] + "".join(chr(rng.randint(1, 0x2FFFF)) for _ in range(rng.randint(1, 20))) + text[pos:]
        elif op == 9:      # replace a frontmatter value
            lines = text.split("\n")
            i = rng.randrange(len(lines))
            if ":" in lines[i]:
                k = lines[i].split(":", 1)[0]
                lines[i] = f"{k}: {rng.choice(TOKENS)}{rng.choice(TOKENS)}"
            text = "\n".join(lines)
        elif op == 10:     # a heading made of spaces and hashes (between words: cubic for a naive regex)
            text = text[:pos] + "\n" + "#" * rng.randint(1, 7) + rng.choice(["", " x", " a#"]) + \
                rng.choice([" ", "\t", " #", " \t"]) * rng.randint(1, 3000) + rng.choice(["", "y", "#", "# y"]) + \
                "\n" + text[pos:]
        else:              # swap two lines
            lines = text.split("\n")
            if len(lines) > 1:
                i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
                lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
        if len(text) > 3_000_000:
            text = text[:3_000_000]
    if rng.random() < 0.2:   # as bytes, some of them flipped
        data = bytearray(text.encode("utf-8", "surrogatepass"))
        for _ in range(rng.randint(0, 8)):
            if data:
                data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    return text


def random_text(rng: random.Random) -> str:
    return "".join(rng.choice(TOKENS) if rng.random() < 0.5 else chr(rng.randint(1, 0x7F))
                   for _ in range(rng.randint(0, 300)))


def case(seed: int, i: int, pool: list[str]) -> str | bytes:
    rng = random.Random(f"{seed}:{i}")
    if rng.random() < 0.1:
        return random_text(rng)
    return mutate(rng.choice(pool), rng, pool)


def exercise(skill_mod, data: str | bytes) -> None:
    """What the library does with a file it reads."""
    parsed = skill_mod.parse(data, folder_name="fuzz")
    sk = parsed.skill
    if sk is None:
        return
    _ = (sk.version, sk.ttl_days, sk.tags, sk.display_name, sk.skill_type)
    sk.expires_on()
    skill_mod.headings(sk.body)
    skill_mod.section(sk.body, "Solution")
    skill_mod.validate_for_write(sk, sk.name)


def worker(seed: int, start: int, pool: list[str], src: str | None, current, started, out_q) -> None:
    if src:
        sys.path.insert(0, src)
    from skillshelf import skill as skill_mod

    i = start
    batch: list[tuple[int, float, str | None]] = []
    last = time.monotonic()
    while True:
        data = case(seed, i, pool)
        current.value = i
        started.value = time.monotonic()
        t0 = time.perf_counter()
        err = None
        try:
            exercise(skill_mod, data)
        except RecursionError as exc:
            err = f"RecursionError: {str(exc)[:100]}"
        except Exception as exc:  # the point of the run: every exception is a finding
            tb = traceback.extract_tb(exc.__traceback__)
            where = f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else "?"
            err = f"{type(exc).__name__} at {where}: {str(exc)[:100]}"
        batch.append((i, time.perf_counter() - t0, err))
        started.value = 0.0
        i += 1
        if time.monotonic() - last > 0.3:
            out_q.put(batch)
            batch = []
            last = time.monotonic()


def run(seconds: float = 60.0, *, seed: int = 1, case_timeout: float = 5.0, corpus_sample: int = 300,
        src: str | None = None, save_dir: Path | None = None, quiet: bool = False) -> dict:
    rng = random.Random(seed)
    pool = seeds(corpus_sample, rng)
    save_dir = Path(save_dir or tempfile.mkdtemp(prefix="skillshelf-fuzz-"))
    save_dir.mkdir(parents=True, exist_ok=True)
    ctx = mp.get_context("fork")
    out_q = ctx.Queue()
    current = ctx.Value("q", 0)
    started = ctx.Value("d", 0.0)
    times: list[float] = []
    slowest: list[tuple[float, int]] = []
    exceptions: dict[str, list[int]] = {}
    hangs: list[int] = []
    crashes: list[int] = []
    next_start = 0
    t_end = time.monotonic() + seconds
    t0 = time.monotonic()

    def drain() -> None:
        while True:
            try:
                batch = out_q.get_nowait()
            except Exception:
                return
            for i, dt, err in batch:
                times.append(dt)
                slowest.append((dt, i))
                if err:
                    exceptions.setdefault(err, []).append(i)
            slowest.sort(reverse=True)
            del slowest[10:]

    while time.monotonic() < t_end:
        started.value = 0.0
        current.value = next_start
        proc = ctx.Process(target=worker, args=(seed, next_start, pool, src, current, started, out_q), daemon=True)
        proc.start()
        while time.monotonic() < t_end and proc.is_alive():
            time.sleep(0.05)
            drain()
            s = started.value
            if s and time.monotonic() - s > case_timeout:
                hangs.append(current.value)
                if not quiet:
                    print(f"  case {current.value} ran over {case_timeout:.0f} s: skipped", file=sys.stderr)
                break
        died = proc.exitcode is not None and not (hangs and hangs[-1] == current.value)
        proc.kill()
        proc.join()
        drain()
        if died:   # the worker itself died (a crash in C code, or memory): the case is a finding
            crashes.append(current.value)
            exceptions.setdefault(f"worker died (exit {proc.exitcode})", []).append(current.value)
        next_start = current.value + 1
    elapsed = time.monotonic() - t0

    def save(i: int, kind: str) -> str:
        data = case(seed, i, pool)
        p = save_dir / f"{kind}-{i}.md"
        p.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
        return str(p)

    saved = [save(i, "hang") for i in hangs]
    for err, idx in exceptions.items():
        saved += [save(i, "exception") for i in idx[:3]]
    for dt, i in slowest[:3]:
        saved.append(save(i, f"slow-{dt:.3f}s"))
    ts = sorted(times)
    pct = (lambda q: ts[min(len(ts) - 1, int(q * len(ts)))] if ts else 0.0)
    return {"seconds": round(elapsed, 1), "seed": seed, "seeds": len(pool), "cases": len(times),
            "cases_per_s": round(len(times) / elapsed, 1) if elapsed else 0.0,
            "max_case_s": round(ts[-1], 4) if ts else 0.0, "slowest_case": slowest[0][1] if slowest else None,
            "p50_ms": round(pct(0.5) * 1000, 3), "p99_ms": round(pct(0.99) * 1000, 3),
            "mean_ms": round(statistics.mean(ts) * 1000, 3) if ts else 0.0,
            "exceptions": {k: len(v) for k, v in sorted(exceptions.items(), key=lambda kv: -len(kv[1]))},
            "exception_cases": sum(len(v) for v in exceptions.values()), "hangs": len(hangs),
            "hang_cases": hangs, "saved": saved, "save_dir": str(save_dir)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0, help="how long to fuzz (default 60)")
    ap.add_argument("--seed", type=int, default=1, help="the run is reproducible from its seed")
    ap.add_argument("--case-timeout", type=float, default=5.0, help="a case running longer counts as a hang")
    ap.add_argument("--corpus-sample", type=int, default=300, help="seed files taken from ../shared/corpus (0: none)")
    ap.add_argument("--src", help="fuzz another source tree (its src/ folder)")
    ap.add_argument("--save-dir", type=Path, help="where failing and slowest cases are saved (default: a temp folder)")
    ap.add_argument("--json-out", type=Path, help="write the figures as JSON here")
    a = ap.parse_args(argv)
    res = run(a.seconds, seed=a.seed, case_timeout=a.case_timeout, corpus_sample=a.corpus_sample, src=a.src,
              save_dir=a.save_dir)
    print(f"fuzzed skill.parse for {res['seconds']} s (seed {res['seed']}, {res['seeds']} seed files): "
          f"{res['cases']} cases, {res['cases_per_s']} cases/s")
    print(f"time per case: p50 {res['p50_ms']} ms, p99 {res['p99_ms']} ms, max {res['max_case_s']} s "
          f"(case {res['slowest_case']})")
    print(f"exceptions: {res['exception_cases']} cases" + "".join(f"\n  {n:6d}  {k}" for k, n in res["exceptions"].items()))
    print(f"hangs (over {a.case_timeout:.0f} s): {res['hangs']}" + (f" (cases {res['hang_cases'][:10]})" if res["hangs"] else ""))
    print(f"failing and slowest cases saved in {res['save_dir']}")
    if a.json_out:
        a.json_out.write_text(json.dumps(res, indent=1))
    return 1 if res["exception_cases"] or res["hangs"] else 0


if __name__ == "__main__":
    sys.exit(main())
