"""pprof profiles (gzipped profile.proto) <-> Stacks.

Parca's query API and `go tool pprof` speak this format; reading it lets a Parca
capture be analysed like a perf recording, and writing it lets our perf recordings be
opened in pprof or uploaded to Parca. analysis/profile/profile_pb2.py is generated from
google/pprof's proto (see its header).

Reading: a sample's locations are leaf first; each location's lines are innermost
first (inlined callee before its caller), so a location with lines [memcpy, printf]
becomes the frames printf;memcpy. A location with no line (not symbolised) becomes
`[<mapping file basename>]`, as `pprof -top` groups it by default and as
inferno-collapse-perf names unknown symbols, so both sources agree. If samples carry a "thread_name" or "comm"
label, it becomes the thread frame; otherwise the thread frame is the profile's main
mapping file name (Parca's redis-server profiles are merged over threads).
"""
from __future__ import annotations

import gzip
from pathlib import Path

from google.protobuf.message import DecodeError

from analysis.errors import UserError
from analysis.profile import profile_pb2
from analysis.profile.stacks import Stacks, normalize_stack

THREAD_LABELS = ("thread_name", "comm", "thread")


class PprofError(UserError, ValueError):
    """A pprof file we cannot read; the message names the file."""


def load_profile(path: str | Path) -> profile_pb2.Profile:
    """Parse a (gzipped or plain) profile.proto file."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise PprofError(f"{p}: no such pprof file") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise PprofError(f"{p}: corrupt gzip data: {e}") from None
    prof = profile_pb2.Profile()
    try:
        prof.ParseFromString(raw)
    except DecodeError as e:
        raise PprofError(f"{p}: not a profile.proto message: {e}") from None
    if not prof.string_table or prof.string_table[0] != "":
        raise PprofError(f"{p}: invalid profile (string_table[0] must be \"\")")
    return prof


def sample_types(prof: profile_pb2.Profile) -> list[tuple[str, str]]:
    s = prof.string_table
    return [(s[v.type], s[v.unit]) for v in prof.sample_type]


def _pick_index(prof: profile_pb2.Profile, sample_type: str | None, source: str) -> int:
    types = sample_types(prof)
    if not types:
        raise PprofError(f"{source}: profile has no sample_type")
    if sample_type is None:
        # pprof's rule: default_sample_type if set, else the last type
        if prof.default_sample_type:
            want = prof.string_table[prof.default_sample_type]
            for i, (t, _) in enumerate(types):
                if t == want:
                    return i
        return len(types) - 1
    for i, (t, u) in enumerate(types):
        if sample_type in (t, f"{t}/{u}", u):
            return i
    raise PprofError(f"{source}: no sample type {sample_type!r}; has "
                     f"{', '.join(f'{t}/{u}' for t, u in types)}")


def read_pprof(path: str | Path, *, sample_type: str | None = None) -> Stacks:
    """A pprof file as Stacks. `sample_type` picks the value ("cpu", "samples",
    "cpu/nanoseconds"); by default the profile's default type, else the last one
    (for CPU profiles: cpu nanoseconds)."""
    prof = load_profile(path)
    idx = _pick_index(prof, sample_type, str(path))
    s = prof.string_table
    t_name, t_unit = sample_types(prof)[idx]
    unit = t_unit if t_unit not in ("count", "") else "samples"

    mappings = {m.id: m for m in prof.mapping}
    main_name = Path(s[prof.mapping[0].filename]).name if prof.mapping else "process"
    funcs = {f.id: s[f.name] or s[f.system_name] for f in prof.function}
    loc_frames: dict[int, list[str]] = {}
    for loc in prof.location:
        if loc.line:
            # lines are innermost first; frames are root first
            loc_frames[loc.id] = [funcs.get(ln.function_id, "[unknown]") or "[unknown]"
                                  for ln in reversed(loc.line)]
        else:
            m = mappings.get(loc.mapping_id)
            mname = Path(s[m.filename]).name if m is not None and s[m.filename] else "unknown"
            loc_frames[loc.id] = [f"[{mname}]"]

    thread_keys = {i for i, x in enumerate(s) if x in THREAD_LABELS}
    st = Stacks(unit=unit, thread_frame=True)
    for n, smp in enumerate(prof.sample):
        if len(smp.value) != len(prof.sample_type):
            raise PprofError(f"{path}: sample {n} has {len(smp.value)} values, "
                             f"sample_type has {len(prof.sample_type)}")
        v = smp.value[idx]
        if not v:
            continue
        thread = next((s[lb.str] for lb in smp.label if lb.key in thread_keys and lb.str), main_name)
        frames = [thread]
        for lid in reversed(smp.location_id):
            fr = loc_frames.get(lid)
            if fr is None:
                raise PprofError(f"{path}: sample {n} refers to missing location id {lid}")
            frames.extend(fr)
        st.add(normalize_stack(frames), v)
    return st


def write_pprof(stacks: Stacks, path: str | Path, *, period_ns: int | None = None,
                binary: str | None = None) -> None:
    """Write Stacks as a gzipped profile.proto that pprof and Parca open.

    Each distinct function name becomes one Function and one Location (no addresses:
    the stacks are symbolic). The thread frame is kept as a "thread_name" label, not a
    frame. Sample values: [samples/count, cpu/nanoseconds] when the stacks are in ns
    or `period_ns` says what one sample is worth; else [samples/count] only.
    """
    strings: dict[str, int] = {"": 0}

    def sid(x: str) -> int:
        i = strings.get(x)
        if i is None:
            i = strings[x] = len(strings)
        return i

    prof = profile_pb2.Profile()
    ns = stacks.unit == "nanoseconds"
    if ns and not period_ns:
        raise ValueError("write_pprof: stacks are in nanoseconds; give period_ns "
                         "(ns per sample, e.g. 1001001 for 999 Hz) to recover sample counts")
    two = ns or bool(period_ns)
    prof.sample_type.add(type=sid("samples"), unit=sid("count"))
    if two:
        prof.sample_type.add(type=sid("cpu"), unit=sid("nanoseconds"))
        prof.period_type.type, prof.period_type.unit = sid("cpu"), sid("nanoseconds")
        prof.period = int(period_ns)
    prof.mapping.add(id=1, filename=sid(binary or "stallscope"), has_functions=True)
    fn_ids: dict[str, int] = {}
    for frames, w in sorted(stacks.weights.items()):
        if not w:
            continue
        thread, fns = (frames[0], frames[1:]) if stacks.thread_frame else (None, frames)
        loc_ids = []
        for name in reversed(fns):              # leaf first
            i = fn_ids.get(name)
            if i is None:
                i = fn_ids[name] = len(fn_ids) + 1
                prof.function.add(id=i, name=sid(name), system_name=sid(name))
                loc = prof.location.add(id=i, mapping_id=1)
                loc.line.add(function_id=i)
            loc_ids.append(i)
        smp = prof.sample.add(location_id=loc_ids)
        if ns:
            smp.value.extend([round(w / period_ns), int(round(w))])
        elif two:
            smp.value.extend([int(round(w)), int(round(w * period_ns))])
        else:
            smp.value.append(int(round(w)))
        if thread is not None:
            smp.label.add(key=sid("thread_name"), str=sid(thread))
    prof.string_table.extend(strings)           # dict keeps insertion order = index
    Path(path).write_bytes(gzip.compress(prof.SerializeToString(), mtime=0))
