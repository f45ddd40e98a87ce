"""docs/your-change.md's one command, as the README prints it, on a local Redis git history
(issue 46, "Done when"): the Redis source tree the build cache unpacks (Debian's, as
tests/schedule_repo.py makes it) committed, a README edit committed on top, then an
uncommitted edit to t_string.c that adds a function MSET calls. The command, with ~/redis
replaced by that repository and `--size tiny --reps 3 --paired-windows 32` added to keep it short,
builds the parent commit (git:...@HEAD, warned that the work tree has changes it leaves out)
and the work tree as it is (dir:), runs, and writes a report whose focus table, asked for
the new function with --set focus=..., lists it as new in the candidate.

The commits' dates are fixed (tests/schedule_repo.py's `git`), so their builds are found in the
build cache in every later session; the dir: build is keyed by the tree's content, the same
every time too."""
from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from collectors.variants.builder import _fetch_source, _resolve_source, cache_dir, cached_build
from collectors.variants.spec import parse_variant
from tests.conftest import REPO
from tests.conftest_run import cli_env
from tests.schedule_repo import git

pytestmark = pytest.mark.slow

NEW_FUNCTION = "msetYourChange"
ANCHOR = "void msetGenericCommand(client *c, int nx) {\n    int j;\n"
EDIT = (f"/* your change: a little work per MSET, in a function of its own */\n"
        f"__attribute__((noinline)) long {NEW_FUNCTION}(client *c) {{\n"
        f"    volatile long sink = 0;\n"
        f"    for (int i = 0; i < 64 * c->argc; i++) sink += i;\n"
        f"    return sink;\n}}\n\n" + ANCHOR + f"    {NEW_FUNCTION}(c);\n")


def make_history(dest: Path) -> Path:
    """dest/redis: Debian's Redis tree committed, a README edit committed, and an uncommitted
    edit of src/t_string.c (a new function MSET calls)."""
    cache = cache_dir()
    vs = parse_variant("src=debsrc:redis@8.0")
    ident = _resolve_source(vs, cache, lambda _m: None)
    tmp = dest / "_tree"
    _fetch_source(vs, ident, cache, tmp, lambda _m: None)
    shutil.rmtree(tmp / "debian", ignore_errors=True)
    repo = dest / "redis"
    tmp.rename(repo)
    git(repo, "init", "-q", "-b", "unstable")
    git(repo, "add", "-A", "--force")
    git(repo, "commit", "-q", "-m", f"redis {ident['version']} as Debian ships it", when=0)
    (repo / "README.md").write_text((repo / "README.md").read_text() + "\n<!-- an edit, committed -->\n")
    git(repo, "commit", "-q", "-am", "docs: an edit", when=1)
    src = repo / "src" / "t_string.c"
    text = src.read_text()
    assert text.count(ANCHOR) == 1, "t_string.c changed: update ANCHOR"
    src.write_text(text.replace(ANCHOR, EDIT, 1))
    return repo


def readme_command() -> list[str]:
    """The command the README's "Your change" section prints."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Your change"):]
    m = re.search(r"```sh\n(stallscope run [^\n]+)\n```", section)
    assert m, "README.md's Your change section has no ```sh stallscope run ...``` block"
    return shlex.split(m.group(1))


@pytest.mark.timeout(1800)
def test_readme_command_on_a_redis_history_with_an_uncommitted_edit(tmp_path):
    repo = make_history(tmp_path)
    argv = [a.replace("~/redis", str(repo)) for a in readme_command()]
    assert argv[:3] == ["stallscope", "run", "mset-50keys"] and "--report" in argv
    assert f"base=git:{repo}@HEAD" in argv and f"mine=dir:{repo}" in argv
    focus = f"focus=msetGenericCommand,{NEW_FUNCTION},dictFind,lookupKey"
    args = [*argv[2:], "--size", "tiny", "--reps", "3", "--paired-windows", "32", "--set", focus,
            "--out", str(tmp_path / "runs"), "--no-progress"]
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "collectors", "run", *args], cwd=tmp_path, env=cli_env(),
                       capture_output=True, text=True, timeout=1700)
    took = time.monotonic() - t0
    print(f"the README's command at --size tiny --reps 3: {took:.0f} s", file=sys.stderr)
    err = p.stderr
    assert p.returncode == 0, err[-4000:]
    # the parent commit, with the warning said before any build
    assert f"[base] warning: {repo} has uncommitted changes (1 path: src/t_string.c)" in err
    assert f"give dir:{repo}" in err
    assert err.index("uncommitted changes") < err.index("[mine]")
    assert "stallscope run: preflight: perf " in err
    run_dir = Path(p.stdout.strip().splitlines()[0])
    m = json.loads((run_dir / "manifest.json").read_text())
    base, mine = m["variants"]["base"], m["variants"]["mine"]
    assert base["kind"] == "git" and base["commit"] == git(repo, "rev-parse", "HEAD")
    assert mine["kind"] == "dir" and mine["commit"].startswith("dir-") and base["binary_sha256"] != mine["binary_sha256"]
    syms = subprocess.run(["nm", mine["server_bin"]], capture_output=True, text=True).stdout
    assert f" T {NEW_FUNCTION}\n" in syms
    # the report lands under the directory the command ran from, as docs/your-change.md says
    report = tmp_path / "reports" / run_dir.name / "report.md"
    assert f"wrote reports/{run_dir.name}/report.md" in p.stdout
    md = report.read_text()
    assert f"`focus={focus.partition('=')[2].replace(',', ' ')}`" in md
    row = next((l for l in md.splitlines() if l.startswith(f"| {NEW_FUNCTION} (flat)")), "")
    assert row.endswith("| 🆕 new in candidate |"), row or f"{NEW_FUNCTION} is in no table of {report}"
    # an unchanged tree is a cache hit; an edit is a new build (its key is not in the cache)
    assert cached_build(parse_variant(f"mine=dir:{repo}")) == Path(mine["server_bin"]).parents[2]
    src = repo / "src" / "t_string.c"
    src.write_text(src.read_text() + "\n/* one more edit */\n")
    assert cached_build(parse_variant(f"mine=dir:{repo}")) is None
