#!/usr/bin/env python3
"""Judge what asp writes into one harness, with that harness itself (opt-in; not in cargo test).

    scripts/judge.sh <claude-code|codex|gemini|pi|qwen|all> [--keep] [--bin DIR] [--timeout S]

One shape for every harness (`all`: each of them in turn, so every direction among them). For the target harness T, asp writes these cases, each into a
home of its own (the whole state, settings and MCP servers included, as `asp-unpack` does):

  restore   samples/T packed and unpacked into an empty home: a backup restored;
  rebuilt   the same sessions without their native files, into that home again: rebuilt from
            their ACP streams, each meets its restored self and is kept beside it;
  from-S    samples/S of every other harness S this build has: a migration;
  state     samples/state.aspstate (a Claude Code and a Codex session, one with the id
            `telegram:42`).

Then the real harness lists and loads every session of each home (scripts/judges/judge_<h>.py,
on judgelib: a scratch copy, no credentials, no network), and the harness's verdict
(scripts/judges/verdict_<h>.py) compares, per written session, what the harness lists and
replays with what asp wrote and with the session it came from. Prints one line per session;
exits 1 when one fails, 2 when the judge cannot run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

# The list-and-load runner of each harness (scripts/judges/judge_<runner>.py), whose verdict is
# scripts/judges/verdict_<runner>.py.
RUNNER = {"claude-code": "claude", "codex": "codex", "gemini": "gemini", "pi": "pi", "qwen": "qwen", "opencode": "opencode", "copilot": "copilot"}
HARNESSES = tuple(RUNNER)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def run(argv, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kw)


def load_sessions(state_dir: Path) -> dict[str, dict]:
    """The sessions of a state directory (asp-unpack --to-dir), with their updates."""
    out = {}
    for meta in sorted((state_dir / "sessions").glob("*.json")):
        s = json.loads(meta.read_text())
        lines = meta.with_suffix(".jsonl").read_text().splitlines()
        s["updates"] = [json.loads(line)["update"] for line in lines if line.strip()]
        out[s["id"]] = s
    return out


class Asp:
    def __init__(self, bin_dir: Path, scratch: Path):
        self.bin = bin_dir
        self.scratch = scratch

    def pack(self, harness: str, home: Path, out: Path, *extra) -> tuple[bool, str]:
        r = run([self.bin / "asp-pack", "--from", harness, "--home", home, "-o", out, "-q", *extra])
        # 0: all carried; 3: carried, some items not (said on stderr).
        return r.returncode in (0, 3) and out.exists(), r.stderr.strip()

    def unpack(self, bundle: Path, harness: str, home: Path) -> dict:
        # No --kinds: the whole state, settings and MCP servers included, as a user imports it.
        r = run([self.bin / "asp-unpack", bundle, "--to", harness, "--home", home, "--json", "-q"])
        # 0: done (what was left out by design is in notTaken); 3: something was lost.
        if r.returncode not in (0, 3):
            raise RuntimeError(f"asp-unpack exit {r.returncode}: {r.stderr.strip()}")
        answer = json.loads(r.stdout)
        answer["_exit"] = r.returncode
        return answer

    def settings_of(self, harness: str, home: Path, name: str) -> dict:
        """The session settings the written home now holds, as asp reads them back."""
        bundle = self.scratch / f"{name}-settings.aspstate"
        r = run([self.bin / "asp-pack", "--from", harness, "--home", home, "-o", bundle, "-q",
                 "--kinds", "settings", "--force"])
        if r.returncode not in (0, 3):
            return {}
        d = self.to_dir(bundle, self.scratch / f"{name}-settings", "--force")
        f = d / "settings.json"
        return json.loads(f.read_text()) if f.exists() else {}

    def to_dir(self, bundle: Path, out: Path, *extra) -> Path:
        r = run([self.bin / "asp-unpack", bundle, "--to-dir", out, "-q", *extra])
        if r.returncode != 0:
            raise RuntimeError(f"asp-unpack --to-dir exit {r.returncode}: {r.stderr.strip()}")
        return out

    def read_back(self, harness: str, home: Path, name: str) -> dict[str, dict]:
        """What asp itself reads from a home it wrote: the sessions, as a state directory."""
        bundle = self.scratch / f"{name}-written.aspstate"
        ok, why = self.pack(harness, home, bundle, "--kinds", "sessions")
        if not ok:
            raise RuntimeError(f"asp-pack of the written home failed: {why}")
        return load_sessions(self.to_dir(bundle, self.scratch / f"{name}-written"))

    def without_native(self, bundle: Path, out: Path) -> Path:
        """The sessions of `bundle` with their native files left out."""
        d = self.to_dir(bundle, self.scratch / "rebuilt-input", "--kinds", "sessions")
        for f in (d / "sessions").iterdir():
            if f.name.endswith(".native"):
                shutil.rmtree(f)
            elif f.suffix == ".json":
                s = json.loads(f.read_text())
                s.pop("native", None)
                f.write_text(json.dumps(s, indent=2))
        r = run([self.bin / "asp-pack", "--from-dir", d, "-o", out, "-q"])
        if r.returncode not in (0, 3):
            raise RuntimeError(f"asp-pack --from-dir: {r.stderr.strip()}")
        return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("harness", choices=HARNESSES + ("all",))
    ap.add_argument("--bin", type=Path, help="directory with asp-pack and asp-unpack "
                    "(default: build this checkout and use target/debug)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch homes")
    ap.add_argument("--timeout", type=float, default=90.0)
    args = ap.parse_args()

    if args.bin is None:
        log("== building asp")
        r = run(["cargo", "build", "-q", "-p", "asp-cli"], cwd=ROOT)
        if r.returncode != 0:
            log(r.stderr)
            return 2
        args.bin = ROOT / "target/debug"
    if args.harness != "all":
        return judge(args.harness, args)
    codes = [judge(t, args) for t in HARNESSES]
    print(f"\nall: {', '.join(f'{t} {c}' for t, c in zip(HARNESSES, codes))} "
          f"(0 = every written session listed and loaded)")
    return max(codes)


def judge(target: str, args) -> int:
    print(f"\n######## into {target}")
    r = run([ROOT / "scripts/judges/install.sh", RUNNER[target]])
    if r.returncode != 0:
        log(r.stdout + r.stderr)
        return 2
    verdict = importlib.import_module(f"verdict_{RUNNER[target]}")

    scratch = Path(tempfile.mkdtemp(prefix=f"asp-judge-{target}-"))
    asp = Asp(args.bin, scratch)
    rows, failures = [], 0
    try:
        own = scratch / f"{target}.aspstate"
        ok, why = asp.pack(target, ROOT / "samples" / target, own)
        if not ok:
            log(f"cannot pack samples/{target}: {why}")
            return 2
        cases = [("restore", target, own, "restore")]
        cases.append(("rebuilt", target, asp.without_native(own, scratch / "rebuilt.aspstate"),
                      "restore"))
        for source in HARNESSES:
            if source == target:
                continue
            b = scratch / f"{source}.aspstate"
            ok, why = asp.pack(source, ROOT / "samples" / source, b)
            if ok:
                cases.append((f"from-{source}", source, b, f"from-{source}"))
            else:
                print(f"note: samples/{source} not packed ({why.splitlines()[-1] if why else 'no bundle'})")
        cases.append(("state", "state.aspstate", ROOT / "samples/state.aspstate", "state"))

        homes: dict[str, list] = {}
        for name, source, bundle, home_name in cases:
            home = scratch / "homes" / home_name
            home.mkdir(parents=True, exist_ok=True)
            answer = asp.unpack(bundle, target, home)
            sources = load_sessions(asp.to_dir(bundle, scratch / f"{name}-src", "--kinds", "sessions"))
            homes.setdefault(home_name, []).append((name, source, answer, sources))

        print(f"asp into {target}: every case carries the whole state (sessions, instructions, "
              f"skills, MCP servers, memory, settings)")
        for home_name, written_cases in homes.items():
            home = scratch / "homes" / home_name
            written = asp.read_back(target, home, home_name)
            r = run([ROOT / "scripts/judges/judge.sh", RUNNER[target], home, "--no-raw",
                     "--timeout", str(args.timeout)]
                    + (["--keep"] if args.keep else []))
            try:
                report = json.loads(r.stdout)
            except ValueError:
                log(r.stderr[-4000:])
                print(f"FAIL  {home_name}: the judge printed no report")
                failures += 1
                continue
            if report.get("errors"):
                print(f"note: {home_name}: judge errors: {json.dumps(report['errors'])[:400]}")
            settings = asp.settings_of(target, home, home_name)
            for name, source, answer, sources in written_cases:
                kinds = ",".join(answer.get("taken", []))
                print(f"\n== {name}: {source} into {target} (the whole state, settings included; "
                      f"asp-unpack exit {answer.get('_exit')}): took {kinds or 'nothing'}; "
                      f"{len(answer.get('notTaken', []))} not taken")
                for n in answer.get("notTaken", []):
                    print(f"   not taken: {n['kind']}: {n['reason'][:160]}")
                print(f"   settings the {target} home holds after it: "
                      f"{json.dumps(settings, sort_keys=True) if settings else 'none'}")
                for old, new, ok, detail in verdict.verdict(home, answer, sources, written, report):
                    ids = old if old == new else f"{old} -> {new}"
                    print(f"{'ok  ' if ok else 'FAIL'}  {name:14} {ids}\n      {detail}")
                    rows.append(ok)
                    failures += 0 if ok else 1
        print(f"\n{len(rows) - failures} of {len(rows)} written sessions listed and loaded as "
              f"intended by {target}, every case having imported the whole state (settings, "
              f"MCP servers, instructions, skills, memory, sessions)")
        return 1 if failures else 0
    finally:
        if args.keep:
            log(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
