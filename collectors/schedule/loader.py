"""Read and check a schedule file. The YAML is read with the line of every value
(analysis/inputs/yaml_lines.py) so every error names the file and the line it comes from
(docs/schedule.md, the format)."""
from __future__ import annotations

from pathlib import Path

from croniter import croniter

from analysis.inputs.option_specs import (BUDGET, DEFAULT_BISECT_BUDGET_S, DEFAULT_REPS, MIN_CHANGE,
                                          PAIRED_WINDOWS_OPT, PROFILE_REPS, REPS, SIZE, taken_by)
from analysis.inputs.yaml_lines import Node, parse, read_text
from collectors.pr.runners import group_problem
from collectors.variants.spec import parse_variant
from collectors.schedule.model import (BASELINE_POLICIES, Alert, Baseline, BisectPolicy, Job, Schedule,
                                       ScheduleError)

TOP_KEYS = {"version", "history", "runs-dir", "reports-dir", "defaults", "jobs"}
# reps, profile-reps and size: as `stallscope run` takes them (analysis/inputs/option_specs.py)
SHARED = {o.key: o for o in taken_by("schedule")}
JOB_KEYS = {"cron", "case", "cases", "candidate", "baseline", *SHARED, "runner-labels", "runner-group", "run-args",
            "alerts", "bisect"}
# a job's bisect: block, as `stallscope bisect` takes them
BISECT = {o.key: o for o in taken_by("schedule bisect")}
DEFAULT_KEYS = JOB_KEYS - {"case", "cases", "candidate"}


def load_schedule(path: str | Path) -> Schedule:
    where = str(path)
    doc = parse(read_text(path, "schedule file", ScheduleError), where, ScheduleError)
    if doc is None:
        raise ScheduleError(f"{where}:1: the schedule file is empty; it needs a 'jobs:' mapping")
    top = _mapping(doc, "the file", TOP_KEYS, where)
    if top.get("version") is not None and top["version"].value != 1:
        raise ScheduleError(f"{where}:{top['version'].line}: version must be 1")
    defaults = _mapping(top["defaults"], "defaults", DEFAULT_KEYS, where) if "defaults" in top else {}
    if "jobs" not in top:
        raise ScheduleError(f"{where}:{doc.line}: no 'jobs:' mapping (see docs/schedule.md)")
    jobs = _mapping(top["jobs"], "jobs", None, where)
    if not jobs:
        raise ScheduleError(f"{where}:{top['jobs'].line}: 'jobs:' is empty")
    sched = Schedule(path=where, history=_str(top.get("history"), "history", where, None),
                     runs_dir=_str(top.get("runs-dir"), "runs-dir", where, "runs"),
                     reports_dir=_str(top.get("reports-dir"), "reports-dir", where, "reports"))
    for name, node in jobs.items():
        sched.jobs.append(_job(name, node, defaults, where))
    return sched


def _mapping(node: Node, what: str, allowed: set[str] | None, where: str) -> dict[str, Node]:
    if not isinstance(node.value, dict):
        raise ScheduleError(f"{where}:{node.line}: {what} must be a mapping (key: value lines)")
    if allowed is not None:
        for k, v in node.value.items():
            if k not in allowed:
                raise ScheduleError(f"{where}:{v.line}: unknown key {k!r} in {what}; "
                                    f"known: {', '.join(sorted(allowed))}")
    return node.value


def _str(node: Node | None, what: str, where: str, default: str | None) -> str | None:
    if node is None:
        return default
    if not isinstance(node.value, (str, int)) or isinstance(node.value, bool) or node.value == "":
        raise ScheduleError(f"{where}:{node.line}: {what} must be a non-empty string")
    return str(node.value)


def _int(node: Node | None, what: str, where: str, default: int, least: int) -> int:
    if node is None:
        return default
    if not isinstance(node.value, int) or isinstance(node.value, bool) or node.value < least:
        raise ScheduleError(f"{where}:{node.line}: {what} must be a whole number >= {least}, got {node.value!r}")
    return node.value


def _strs(node: Node | None, what: str, where: str, default: tuple[str, ...]) -> tuple[str, ...]:
    if node is None:
        return default
    items = node.value if isinstance(node.value, list) else [node]
    out = tuple(_str(n, what, where, None) for n in items)
    if not out:
        raise ScheduleError(f"{where}:{node.line}: {what} is empty")
    return out  # type: ignore[return-value]


def _job(name: str, node: Node, defaults: dict[str, Node], where: str) -> Job:
    body = _mapping(node, f"job {name!r}", JOB_KEYS, where)
    get = (lambda k: body.get(k, defaults.get(k)))
    node = Node(body, node.key_line)
    if not name.replace("-", "").replace("_", "").isalnum():
        raise ScheduleError(f"{where}:{node.line}: job name {name!r}: use letters, digits, - and _")
    cron = _str(get("cron"), "cron", where, None)
    if cron is None:
        raise ScheduleError(f"{where}:{node.line}: job {name!r} has no 'cron:' (e.g. cron: \"0 2 * * *\")")
    if not croniter.is_valid(cron):
        raise ScheduleError(f"{where}:{get('cron').line}: cron {cron!r} is not a cron expression "
                            "(five fields: minute hour day-of-month month day-of-week)")
    if "case" in body and "cases" in body:
        raise ScheduleError(f"{where}:{body['cases'].line}: give 'case:' or 'cases:', not both")
    cases = _strs(body.get("cases") or body.get("case"), "cases", where, ())
    if not cases:
        raise ScheduleError(f"{where}:{node.line}: job {name!r} names no case ('cases: [mset-50keys]')")
    if "candidate" not in body:
        raise ScheduleError(f"{where}:{node.line}: job {name!r} has no 'candidate:' variant spec")
    candidate = _spec(body["candidate"], "candidate", where)
    return Job(name=name, cron=cron, cases=cases, candidate=candidate,
               baseline=_baseline(get("baseline"), where),
               reps=_int(get(REPS.key), REPS.key, where, DEFAULT_REPS, 1),
               profile_reps=(_int(get(PROFILE_REPS.key), PROFILE_REPS.key, where, 0, 0)
                             if get(PROFILE_REPS.key) is not None else PROFILE_REPS.default),
               size=_str(get(SIZE.key), SIZE.key, where, SIZE.default) or SIZE.default,
               runner_labels=_strs(get("runner-labels"), "runner-labels", where, ("self-hosted",)),
               runner_group=_group(get("runner-group"), where),
               run_args=_strs(get("run-args"), "run-args", where, ()) if get("run-args") else (),
               alerts=_alerts(get("alerts"), where), bisect=_bisect(get("bisect"), where), line=node.line)


def _group(node: Node | None, where: str) -> str | None:
    name = _str(node, "runner-group", where, None)
    problem = None if name is None else group_problem(name)
    if problem:
        raise ScheduleError(f"{where}:{node.line}: runner-group {name!r}: {problem}")
    return name


def _bisect(node: Node | None, where: str) -> BisectPolicy | None:
    """`bisect: {budget: 1h, min-change: 3%, paired-windows: 16}` (each optional) or
    `bisect: true` (every default); absent or false: no automatic bisection."""
    if node is None or node.value is False:
        return None
    body = {} if node.value is True else _mapping(node, "bisect", set(BISECT), where)
    got = {}
    for key, n in body.items():
        o = BISECT[key]
        if o is PAIRED_WINDOWS_OPT:
            got[o.name] = _int(n, key, where, 0, 2)
            continue
        try:
            got[o.name] = o.parse(str(n.value))
        except ValueError as e:
            raise ScheduleError(f"{where}:{n.line}: bisect {key}: {e}") from None
    return BisectPolicy(budget_s=got.get(BUDGET.name, DEFAULT_BISECT_BUDGET_S),
                        min_change=got.get(MIN_CHANGE.name), paired_windows=got.get(PAIRED_WINDOWS_OPT.name))


def _spec(node: Node, what: str, where: str) -> str:
    text = _str(node, what, where, None) or ""
    try:
        parse_variant(f"x={text}")
    except ValueError as e:
        raise ScheduleError(f"{where}:{node.line}: {what}: {str(e).splitlines()[0]}") from None
    return text


def _baseline(node: Node | None, where: str) -> Baseline:
    if node is None:
        return Baseline("previous")
    if isinstance(node.value, str):
        if node.value not in BASELINE_POLICIES or node.value == "pinned":
            raise ScheduleError(f"{where}:{node.line}: baseline {node.value!r}: use previous, last-good "
                                "or 'pinned: SPEC' (e.g. pinned: debsrc:redis@8.0.6)")
        return Baseline(node.value)
    body = _mapping(node, "baseline", {"pinned"}, where)
    if "pinned" not in body:
        raise ScheduleError(f"{where}:{node.line}: baseline mapping needs 'pinned: SPEC'")
    return Baseline("pinned", _spec(body["pinned"], "baseline pinned", where))


def _alerts(node: Node | None, where: str) -> tuple[Alert, ...]:
    if node is None:
        return ()
    if not isinstance(node.value, list):
        raise ScheduleError(f"{where}:{node.line}: alerts must be a list (- github: owner/repo#12)")
    out = []
    for item in node.value:
        body = _mapping(item, "an alert", {"github", "webhook", "file", "token-env", "token-file", "api-url"}, where)
        kinds = [k for k in ("github", "webhook", "file") if k in body]
        if len(kinds) != 1:
            raise ScheduleError(f"{where}:{item.line}: an alert names exactly one of github:, webhook:, file:")
        kind = kinds[0]
        target = _str(body[kind], kind, where, None) or ""
        if kind == "github" and not _github_target_ok(target):
            raise ScheduleError(f"{where}:{body[kind].line}: github: {target!r}: expected OWNER/REPO#NUMBER "
                                "(an issue or pull request number)")
        if kind == "webhook" and not target.startswith(("http://", "https://")):
            raise ScheduleError(f"{where}:{body[kind].line}: webhook: {target!r} is not an http(s) URL")
        out.append(Alert(kind, target, token_env=_str(body.get("token-env"), "token-env", where, "GITHUB_TOKEN"),
                         token_file=_str(body.get("token-file"), "token-file", where, None),
                         api_url=_str(body.get("api-url"), "api-url", where, "https://api.github.com"),
                         line=item.line))
    return tuple(out)


def _github_target_ok(target: str) -> bool:
    repo, hash_, num = target.partition("#")
    return bool(hash_) and num.isdigit() and repo.count("/") == 1 and all(repo.split("/"))
