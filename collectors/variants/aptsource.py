"""A private apt configuration for `apt-get source`, derived from the system's own.

stallscope fetches Redis/Valkey Debian source packages from a newer suite than the
machine runs (Debian bookworm carries Redis 7; Redis 8.x and Valkey 9.x are in forky and
sid). It must not change the machine's apt state to do so, so it writes its own
sources.list (deb-src lines for the chosen suite, with the archive URIs, components and
Signed-By keyring copied from the system's sources), its own apt.conf, and keeps the
lists and caches in stallscope's cache directory. The archive host is never written in
stallscope's files: it comes from /etc/apt at run time.
"""
from __future__ import annotations

import fcntl
import os
import re
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from debian.debian_support import Version

from analysis.errors import Failed

# forky (Debian testing when this was written) carries redis 5:8.0.6 and valkey 9.1.2;
# trixie has redis 8.0.2 but valkey 8.1, sid the same as forky but moves daily.
DEFAULT_SUITE = "forky"
# Lists younger than this are reused without contacting the archive, so a cached
# build resolves its version offline.
LISTS_MAX_AGE_S = 24 * 3600


class AptSourceError(Failed):
    """A problem with the apt configuration or a source fetch; the message says what to do."""


@dataclass
class AptEntry:
    """One repository of a sources file (one-line or deb822), with where it came from."""
    types: list[str]
    uris: list[str]
    suites: list[str]
    components: list[str]
    signed_by: str | None = None
    origin: str = ""                       # "file:line" for messages

    def one_line(self) -> list[str]:
        opts = f" [signed-by={self.signed_by}]" if self.signed_by else ""
        return [f"{t}{opts} {u} {s} {' '.join(self.components)}".rstrip()
                for t in self.types for u in self.uris for s in self.suites]


def _parse_one_line(text: str, path: str) -> list[AptEntry]:
    out = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.match(r"^(deb|deb-src)\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)\s*(.*)$", line)
        if not m:
            raise AptSourceError(f"{path}:{n}: cannot parse apt source line: {raw.strip()!r}")
        typ, opts, uri, suite, comps = m.groups()
        signed_by = None
        for opt in (opts or "").split():
            k, _, v = opt.partition("=")
            if k.lower() == "signed-by":
                signed_by = v
        out.append(AptEntry([typ], [uri], [suite], comps.split(), signed_by, f"{path}:{n}"))
    return out


def _parse_deb822(text: str, path: str) -> list[AptEntry]:
    out = []
    stanza: dict[str, str] = {}
    start = 1
    last_key = None

    def flush() -> None:
        if not stanza:
            return
        if stanza.get("enabled", "yes").strip().lower() == "no":
            return
        missing = [k for k in ("types", "uris", "suites") if k not in stanza]
        if missing:
            raise AptSourceError(f"{path}:{start}: deb822 stanza lacks {', '.join(missing)}")
        sb = stanza.get("signed-by", "").strip()
        # An inline armoured key (multi-line) cannot be a path; apt accepts it, so do we
        # by leaving Signed-By out and letting apt use its trusted keyrings.
        signed_by = sb if sb and "\n" not in sb and not sb.startswith("-----") else None
        out.append(AptEntry(stanza["types"].split(), stanza["uris"].split(),
                            stanza["suites"].split(), stanza.get("components", "").split(),
                            signed_by, f"{path}:{start}"))

    for n, raw in enumerate(text.splitlines(), 1):
        if raw.startswith("#"):
            continue
        if not raw.strip():
            flush()
            stanza, last_key = {}, None
            continue
        if raw[0] in " \t":
            if last_key is None:
                raise AptSourceError(f"{path}:{n}: continuation line outside a field")
            stanza[last_key] += "\n" + raw.strip()
            continue
        key, sep, val = raw.partition(":")
        if not sep:
            raise AptSourceError(f"{path}:{n}: expected 'Field: value', got {raw.strip()!r}")
        if not stanza:
            start = n
        last_key = key.strip().lower()
        stanza[last_key] = val.strip()
    flush()
    return out


def read_sources(etc_apt: Path = Path("/etc/apt")) -> list[AptEntry]:
    """Every enabled repository of the system: sources.list and sources.list.d/*.list,*.sources
    (other file names, e.g. *.disabled, are ignored as apt ignores them)."""
    files: list[Path] = []
    main = etc_apt / "sources.list"
    if main.is_file():
        files.append(main)
    parts = etc_apt / "sources.list.d"
    if parts.is_dir():
        files += sorted(p for p in parts.iterdir() if p.suffix in (".list", ".sources") and p.is_file())
    entries: list[AptEntry] = []
    for f in files:
        text = f.read_text(errors="replace")
        entries += _parse_deb822(text, str(f)) if f.suffix == ".sources" else _parse_one_line(text, str(f))
    return entries


def system_codename(os_release: Path = Path("/etc/os-release")) -> str | None:
    try:
        for line in os_release.read_text().splitlines():
            if line.startswith("VERSION_CODENAME="):
                return line.split("=", 1)[1].strip().strip('"') or None
    except OSError:
        pass
    return None


def derive_entries(system: list[AptEntry], suite: str, codename: str | None) -> list[AptEntry]:
    """deb-src entries for `suite` from the system's main-archive repositories.

    The main archive is the repository that carries the release codename itself as a suite
    (bookworm, not bookworm-security or a vendor's 'nodistro'); its URIs, components and
    keyring serve every Debian suite."""
    picked = [e for e in system if codename and codename in e.suites]
    if not picked:
        where = ", ".join(sorted({e.origin.rsplit(":", 1)[0] for e in system})) or "no sources files"
        raise AptSourceError(
            f"no Debian archive found in the system's apt sources ({where}): need an entry whose "
            f"suite is the release codename {codename!r}; add one to /etc/apt/sources.list.d/ "
            f"(e.g. 'Types: deb / URIs: <mirror>/debian / Suites: {codename} / Components: main')")
    out, seen = [], set()
    for e in picked:
        for uri in e.uris:
            key = (uri, tuple(e.components), e.signed_by)
            if key in seen:
                continue
            seen.add(key)
            out.append(AptEntry(["deb-src"], [uri], [suite], e.components or ["main"],
                                e.signed_by, e.origin))
    return out


def _acquire_settings() -> list[str]:
    """The system's network settings for apt (proxies, validity checks), as apt.conf lines,
    so the private configuration reaches the archive the way the system does."""
    try:
        dump = subprocess.run(["apt-config", "dump"], capture_output=True, text=True,
                              timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    keep = re.compile(r"^Acquire::(https?::Proxy|ftp::Proxy|Check-Valid-Until|Check-Date|"
                      r"Retries|ForceIPv4|ForceIPv6|https?::Timeout)\b", re.I)
    return [line if line.endswith(";") else line + ";"
            for line in dump.splitlines() if keep.match(line)]


@dataclass
class AptEnv:
    """A private apt state for one suite under `root` (e.g. <cache>/apt/forky/)."""
    root: Path
    suite: str = DEFAULT_SUITE
    etc_apt: Path = Path("/etc/apt")
    os_release: Path = Path("/etc/os-release")
    entries: list[AptEntry] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.root = Path(self.root)

    @property
    def sources_list(self) -> Path:
        return self.root / "sources.list"

    @property
    def apt_conf(self) -> Path:
        return self.root / "apt.conf"

    def write(self) -> None:
        """(Re)write sources.list and apt.conf from the current system configuration."""
        codename = system_codename(self.os_release)
        self.entries = derive_entries(read_sources(self.etc_apt), self.suite, codename)
        for d in ("lists/partial", "cache/archives/partial", "etc/apt.conf.d",
                  "etc/sources.list.d", "etc/preferences.d", "state"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        (self.root / "state" / "status").touch()
        lines = [f"# private deb-src sources for suite {self.suite}, derived from {self.etc_apt}"]
        for e in self.entries:
            lines.append(f"# from {e.origin}")
            lines += e.one_line()
        self.sources_list.write_text("\n".join(lines) + "\n")
        r = self.root
        conf = [
            "// stallscope's private apt configuration: nothing outside this directory",
            "// is read for sources or written (lists, caches, status, logs).",
            f'Dir::Etc "{r}/etc/";',
            'Dir::Etc::main "/dev/null";',
            f'Dir::Etc::parts "{r}/etc/apt.conf.d/";',
            f'Dir::Etc::sourcelist "{self.sources_list}";',
            f'Dir::Etc::sourceparts "{r}/etc/sources.list.d/";',
            'Dir::Etc::preferences "/dev/null";',
            f'Dir::Etc::preferencesparts "{r}/etc/preferences.d/";',
            f'Dir::Etc::trusted "{self.etc_apt}/trusted.gpg";',
            f'Dir::Etc::trustedparts "{self.etc_apt}/trusted.gpg.d/";',
            f'Dir::State "{r}/state/";',
            f'Dir::State::Lists "{r}/lists/";',
            f'Dir::State::status "{r}/state/status";',
            f'Dir::Cache "{r}/cache/";',
            f'Dir::Log "{r}/log/";',
            'Debug::NoLocking "true";',
            # The cache dir belongs to the invoking user; apt's _apt sandbox could not write it.
            'APT::Sandbox::User "root";' if os.geteuid() == 0 else "",
            'APT::Get::Only-Source "true";',
            'Acquire::Languages "none";',
        ] + _acquire_settings()
        self.apt_conf.write_text("\n".join(c for c in conf if c) + "\n")

    def env(self) -> dict[str, str]:
        # APT_CONFIG is read before apt.conf.d, and it points Dir::Etc::parts away from the
        # system's, so the system's hooks (e.g. post-update cache cleaners) never run.
        return {**os.environ, "APT_CONFIG": str(self.apt_conf), "LC_ALL": "C"}

    def _run(self, args: list[str], cwd: Path | None = None, timeout: float = 900) -> str:
        try:
            p = subprocess.run(args, cwd=cwd, env=self.env(), capture_output=True, text=True,
                               timeout=timeout)
        except FileNotFoundError:
            raise AptSourceError(f"{args[0]} not found: install apt (and dpkg-dev for "
                                 f"'apt-get source': apt-get install dpkg-dev)") from None
        except subprocess.TimeoutExpired:
            raise AptSourceError(f"{shlex.join(args)} took more than {timeout:.0f} s") from None
        if p.returncode != 0:
            tail = "\n".join((p.stderr or p.stdout).strip().splitlines()[-15:])
            raise AptSourceError(f"{shlex.join(args)} failed (exit {p.returncode}) with "
                                 f"APT_CONFIG={self.apt_conf}:\n{tail}")
        return p.stdout

    def _lock(self):
        self.root.mkdir(parents=True, exist_ok=True)
        f = open(self.root / ".lock", "w")
        fcntl.flock(f, fcntl.LOCK_EX)
        return f

    def lists_age_s(self) -> float | None:
        rel = sorted((self.root / "lists").glob("*Release"))
        if not rel:
            return None
        return time.time() - min(p.stat().st_mtime for p in rel)

    def update(self, force: bool = False) -> bool:
        """apt-get update into the private lists; skipped when they are fresh. True if run."""
        with self._lock():
            self.write()
            age = self.lists_age_s()
            if not force and age is not None and age < LISTS_MAX_AGE_S:
                return False
            try:
                self._run(["apt-get", "-q", "update"], timeout=600)
            except AptSourceError:
                if age is None:
                    raise
                # Offline with older lists: they still name the versions we built before.
                return False
            return True

    def versions(self, package: str) -> list[str]:
        """Debian versions of source package `package` in the private lists."""
        out = self._run(["apt-cache", "showsrc", "--only-source", package])
        return [line.split(":", 1)[1].strip() for line in out.splitlines()
                if line.startswith("Version:")]

    def resolve(self, package: str, want: str | None) -> str:
        """The Debian version to fetch: the newest whose upstream part starts with `want`."""
        versions = self.versions(package)
        if not versions:
            raise AptSourceError(f"no source package {package!r} in suite {self.suite} "
                                 f"(sources: {self.sources_list}); try another suite")
        chosen = newest_version(versions, want)
        if chosen is None:
            raise AptSourceError(f"{package} {want} is not in suite {self.suite} (it has "
                                 f"{', '.join(versions)}); pick another suite with "
                                 f"debsrc:{package}/SUITE@{want}")
        return chosen

    def fetch(self, package: str, version: str, dest: Path) -> Path:
        """apt-get source PACKAGE=VERSION into `dest` (unpacked, Debian patches applied).
        Returns the unpacked source tree."""
        dest.mkdir(parents=True, exist_ok=True)
        self._run(["apt-get", "-q", "source", f"{package}={version}"], cwd=dest, timeout=900)
        trees = [p for p in dest.iterdir() if p.is_dir() and p.name.startswith(package + "-")]
        if len(trees) != 1:
            raise AptSourceError(f"apt-get source {package}={version} left {len(trees)} "
                                 f"source trees in {dest}, expected 1")
        return trees[0]


def upstream_version(debian_version: str) -> str:
    """5:8.0.6-3 -> 8.0.6; 8.1.1+dfsg1-3+deb13u2 -> 8.1.1."""
    v = debian_version.split(":", 1)[-1]
    v = v.rsplit("-", 1)[0] if "-" in v else v
    return re.split(r"[+~]", v, 1)[0]


def newest_version(versions: list[str], want: str | None = None) -> str | None:
    """The newest Debian version (dpkg's ordering: epochs first, `~rc1` before the release)
    whose upstream part is `want` or starts with `want.` (or that is `want` exactly); None
    when none matches."""
    if want:
        versions = [v for v in versions if v == want or upstream_version(v) == want
                    or upstream_version(v).startswith(want + ".")]
    return max(versions, key=Version, default=None)
