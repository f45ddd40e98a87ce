"""`stallscope pr check` (docs/pr.md, "Checking the runner groups"): whether a pull
request's code can reach a trusted runner, from the settings that decide it, the
organization's self-hosted runner groups as GitHub's REST API gives them
(collectors/pr/github_api.py: "List self-hosted runner groups for an organization", each
group's `visibility`, `allows_public_repositories`, `restricted_to_workflows` and
`selected_workflows`, and "List repository access to a self-hosted runner group").

A pull request's run (a fork's, once approved) is a run of the repository it targets, from
the pull request's own copy of its workflow files, at the ref `refs/pull/N/merge`: it may use
every group that admits the repository (visibility `all`; `private` for a private one;
`selected` listing it; a public repository only where `allows_public_repositories`), unless
the group is restricted to selected workflows none of which a pull request's run can be (an
entry `OWNER/REPO/.github/workflows/FILE@refs/heads/main` cannot; one with a wildcard or a
`refs/pull/` ref can). Which groups are trusted (the schedule's, an experiment's) and which
is the PR workflow's comes from the workflow files stallscope wrote (collectors/pr/runners.py
reads them) and `--trusted-group` / `--pr-group`. A personal account's repository has no
groups: every workflow of it, a pull request's too, may use every runner registered to it.

Findings: `reachable` (a pull request's code, of this repository or a public one, can run
on a trusted group's runners), `unknown` (a group named by a workflow that the organization
does not have), `check` (settings wider than docs/pr.md asks, or that leave a job waiting),
`ok`, `note` (other groups a pull request can use). Standard library only."""
from __future__ import annotations

from dataclasses import dataclass, field

from collectors.pr.github_api import GitHub
from collectors.pr.runners import EXPERIMENT_ROLE, PR_ROLE, SCHEDULE_ROLE, Target

REACHABLE, UNKNOWN, CHECK, OK, NOTE = "reachable", "unknown", "check", "ok", "note"
FAILING = (REACHABLE, UNKNOWN)
SHORT = {PR_ROLE: "the PR workflow", SCHEDULE_ROLE: "the schedule's workflow",
         EXPERIMENT_ROLE: "an experiment's workflow"}
LISTED = 5          # names shown of a longer list


@dataclass(frozen=True)
class Repo:
    full_name: str
    owner: str
    org: bool                 # owned by an organization (a personal account has no runner groups)
    public: bool
    default_branch: str


@dataclass(frozen=True)
class Group:
    name: str
    visibility: str           # "all", "private" (every private repository) or "selected"
    public: bool              # allows_public_repositories
    restricted: bool          # restricted_to_workflows
    workflows: tuple[str, ...]
    default: bool
    repos: tuple[tuple[str, bool], ...] = ()     # (full name, private) of a selected group's repositories


@dataclass
class Roles:
    """Which runner groups the workflows target: group (as written) -> where."""
    pr: dict[str, list[str]] = field(default_factory=dict)
    trusted: dict[str, list[str]] = field(default_factory=dict)
    files: dict[str, set[str]] = field(default_factory=dict)    # trusted group -> its workflow files
    ungrouped: list[str] = field(default_factory=list)          # targets that name no group

    @classmethod
    def of(cls, targets: list[Target], pr_groups: list[str], trusted_groups: list[str]) -> "Roles":
        r = cls()
        for name in pr_groups:
            r.pr.setdefault(name, []).append("--pr-group")
        for name in trusted_groups:
            r.trusted.setdefault(name, []).append("--trusted-group")
        for t in targets:
            if t.runs_on.group is None:
                r.ungrouped.append(t.where)
                continue
            side = r.pr if t.role == PR_ROLE else r.trusted
            side.setdefault(t.runs_on.group, []).append(f"{SHORT.get(t.role, t.role)}: {t.where}")
            if t.role != PR_ROLE:
                r.files.setdefault(t.runs_on.group, set()).add(t.where.split(",")[0].replace("\\", "/").rsplit("/", 1)[-1])
        return r


@dataclass(frozen=True)
class Finding:
    level: str
    group: str
    text: str

    def __str__(self) -> str:
        return f"{self.level}: runner group {self.group!r}: {self.text}"


def read(gh: GitHub, full_name: str) -> tuple[Repo, list[Group], int | None]:
    """The repository, its organization's runner groups (each selected group with the
    repositories it admits), or for a personal account's repository its runners' count."""
    doc = gh.repository(full_name)
    owner = doc.get("owner") or {}
    repo = Repo(str(doc.get("full_name") or full_name), str(owner.get("login") or full_name.split("/")[0]),
                owner.get("type") == "Organization", not doc.get("private", False),
                str(doc.get("default_branch") or "main"))
    if not repo.org:
        return repo, [], len(gh.repo_runners(repo.full_name))
    groups = []
    for g in gh.runner_groups(repo.owner):
        visibility = str(g.get("visibility") or "")
        repos = tuple((str(x.get("full_name") or ""), bool(x.get("private")))
                      for x in gh.group_repositories(repo.owner, int(g.get("id") or 0))) if visibility == "selected" else ()
        groups.append(Group(str(g.get("name") or ""), visibility, bool(g.get("allows_public_repositories")),
                            bool(g.get("restricted_to_workflows")), tuple(map(str, g.get("selected_workflows") or [])),
                            bool(g.get("default")), repos))
    return repo, groups, None


def admits(g: Group, repo: Repo) -> bool:
    """Whether workflows of `repo` may use the group at all."""
    if repo.public and not g.public:
        return False
    if g.visibility == "all":
        return True
    if g.visibility == "private":
        return not repo.public
    return any(name.casefold() == repo.full_name.casefold() for name, _ in g.repos)


def pr_entry(g: Group) -> str | None:
    """A selected workflow of the group that a pull request's run could be: a wildcard, or a
    `refs/pull/` ref (a pull_request run's workflow ref is refs/pull/N/merge)."""
    for w in g.workflows:
        ref = w.rpartition("@")[2]
        if "*" in w or ref.startswith("refs/pull/") or "@" not in w:
            return w
    return None


def from_prs(g: Group, repo: Repo) -> str | None:
    """Why a pull request's run of `repo` can use the group (None: it cannot)."""
    if not admits(g, repo):
        return None
    if not g.restricted:
        return f"it admits {repo.full_name} ({access(g)}) and every workflow of it (Workflow access: all workflows)"
    w = pr_entry(g)
    return f"it admits {repo.full_name} ({access(g)}), and its selected workflow {w!r} matches a pull request's run" \
        if w else None


def access(g: Group) -> str:
    pub = ", public ones too" if g.public else ""
    if g.visibility == "all":
        return f"every repository of the organization{pub}"
    if g.visibility == "private":
        return "every private repository of the organization"
    names = [n for n, _ in g.repos]
    more = f" and {len(names) - LISTED} more" if len(names) > LISTED else ""
    return f"selected: {', '.join(names[:LISTED]) or 'none'}{more}{pub}"


def _public_open(g: Group) -> bool:
    """Open to a public repository other than by name here: `allows_public_repositories`
    with all repositories, or a selected public one."""
    return g.public and (g.visibility == "all" or any(not private for _, private in g.repos))


def expected(repo: Repo, files: set[str]) -> list[str]:
    return [f"{repo.full_name}/.github/workflows/{f}@refs/heads/{repo.default_branch}" for f in sorted(files)]


def _names_file(w: str, repo: Repo, file: str) -> bool:
    path, _, ref = w.rpartition("@")
    return (path.casefold() == f"{repo.full_name}/.github/workflows/{file}".casefold()
            and ref in (repo.default_branch, f"refs/heads/{repo.default_branch}"))


def trusted(g: Group, repo: Repo, files: set[str]) -> list[Finding]:
    fix = ("restrict it to selected workflows (organization settings → Actions → Runner groups → Workflow "
           f"access): {', '.join(expected(repo, files)) or 'the trusted workflow files, at the default branch'}")
    why = from_prs(g, repo)
    if why:
        return [Finding(REACHABLE, g.name, f"a trusted group, and a pull request's code can run on it: {why}; {fix}")]
    if _public_open(g) and not g.restricted:
        return [Finding(REACHABLE, g.name, f"a trusted group open to public repositories ({access(g)}) and to every "
                                           f"workflow of them: a fork's pull request to one of them can run on it; {fix}")]
    if not g.restricted:
        return [Finding(CHECK, g.name, f"a trusted group not restricted to selected workflows: every workflow of "
                                       f"the repositories it admits ({access(g)}) can run on it; {fix}")]
    out = [Finding(OK, g.name, f"a trusted group, restricted to selected workflows ({', '.join(g.workflows[:LISTED])}); "
                               f"no pull request of {repo.full_name} can use it")]
    missing = [e for f, e in zip(sorted(files), expected(repo, files))
               if not any(_names_file(w, repo, f) for w in g.workflows)]
    if missing:
        out.append(Finding(CHECK, g.name, f"its selected workflows do not name {', '.join(missing)}: those jobs will "
                                          "wait for a runner"))
    return out


def pr_group(g: Group, repo: Repo) -> list[Finding]:
    if not admits(g, repo):
        return [Finding(CHECK, g.name, f"the PR workflow's group does not admit {repo.full_name} ({access(g)}): the "
                                       "measuring job will wait for a runner")]
    others = [n for n, _ in g.repos if n.casefold() != repo.full_name.casefold()]
    if g.visibility != "selected" or others:
        return [Finding(CHECK, g.name, f"the PR workflow's group admits other repositories ({access(g)}): their "
                                       "workflows run on the PR runners too (docs/pr.md, required setting 2: this "
                                       "repository only)")]
    return [Finding(OK, g.name, f"the PR workflow's group admits {repo.full_name} only")]


def judge(repo: Repo, groups: list[Group], roles: Roles, runners: int | None = None) -> list[Finding]:
    if not repo.org:
        return _personal(repo, roles, runners or 0)
    by = {g.name.casefold(): g for g in groups}
    out = [Finding(CHECK, "(none)", f"{w} names no runner group: regenerate it") for w in roles.ungrouped]
    trusted_keys = {k.casefold() for k in roles.trusted}
    for name in roles.trusted:
        g = by.get(name.casefold())
        if g is None:
            out.append(Finding(UNKNOWN, name, f"named by {'; '.join(roles.trusted[name])}, but {repo.owner} has no "
                                              "runner group of that name (a typo, or an enterprise's group not shared "
                                              "with it): nothing here says who may use it"))
        else:
            out += trusted(g, repo, roles.files.get(name, set()))
    for name in roles.pr:
        g = by.get(name.casefold())
        if name.casefold() in trusted_keys:
            out.append(Finding(REACHABLE, name, "the PR workflow and a trusted workflow both target it: "
                                                "give each its own group"))
        elif g is None:
            out.append(Finding(CHECK, name, f"the PR workflow's group is not among {repo.owner}'s runner groups: the "
                                            "measuring job will wait for a runner"))
        else:
            out += pr_group(g, repo)
    named = trusted_keys | {k.casefold() for k in roles.pr}
    for g in groups:
        why = from_prs(g, repo) if g.name.casefold() not in named else None
        if why:
            default = " (the Default group, where new runners go)" if g.default else ""
            out.append(Finding(NOTE, g.name, f"pull requests of {repo.full_name} can run here too{default}: {why}; "
                                             "keep trusted runners out of it"))
    return out


def _personal(repo: Repo, roles: Roles, runners: int) -> list[Finding]:
    where = "; ".join(w for ws in roles.trusted.values() for w in ws)
    text = (f"{repo.owner} is a personal account: its repositories have no runner groups, and every workflow of "
            f"{repo.full_name}, a pull request's own copy included, may use all {runners} self-hosted runners "
            "registered to it")
    if where:
        return [Finding(REACHABLE, "(repository runners)", f"{text}, the trusted workflows' among them ({where}): run "
                                                           "those from a repository that takes no pull requests")]
    return [Finding(NOTE, "(repository runners)", text)]
