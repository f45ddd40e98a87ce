"""Key names of an imported suite: what the suite calls its keys, what the dataset calls
them, and the translation of a command's key words from one to the other.

memtier names key n `<key-prefix><n>` (unpadded); redis-benchmark can only fill a key's
number as 12 zero-padded digits (`__rand_int__`), so the dataset keeps the suite's prefix
and pads the number: key n of the suite's preload range [lo, hi] is dataset key n - lo,
`<prefix>%012d`. A command's key words (found with Redis's own key specs,
collectors.workload.command_keys) are translated with that rule: `__key__` becomes
`<prefix>__rand_int__`, a literal key the suite preloads becomes the dataset's name for
it (`MGET __key__ 1 2` over the suite's keys 1..N with prefix "key:" -> `MGET
key:__rand_int__ key:000000000000 key:000000000001`). A literal key the dataset cannot hold is refused, with the reason: the
case would otherwise measure the command on a missing key.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from analysis.errors import UserError
from collectors.workload.command_keys import key_words, recorded_from


class KeyNameError(UserError, ValueError):
    """A key the imported case cannot name; the message says which and why."""


@dataclass
class Naming:
    """How the suite names the keys it preloads, and what the dataset calls them."""
    kind: str = "none"                 # the dataset's kind; "none": nothing stallscope can preload
    keys: int = 0                      # dataset.keys
    dataset_prefix: str = "key:"       # dataset.key_prefix
    suite_prefix: str | None = None    # preloaded keys are suite_prefix + n for n in [lo, hi]
    lo: int = 0
    hi: int = -1
    literal: str | None = None         # the one key init_commands write (dataset key 0)
    preloads: bool = False             # the suite preloads anything at all
    unheld: str = ""                   # why the dataset does not hold what the suite preloads

    def name(self, i: int) -> str:
        return f"{self.dataset_prefix}{i:012d}"

    def number(self, word: str) -> int | None:
        """n when `word` is the suite's name of preloaded key n."""
        if self.suite_prefix is None or not word.startswith(self.suite_prefix):
            return None
        digits = word[len(self.suite_prefix):]
        if not digits.isdigit() or str(int(digits)) != digits:
            return None  # memtier never pads: "01" is not key 1
        n = int(digits)
        return n if self.lo <= n <= self.hi else None

    def describe(self) -> str:
        if self.unheld:
            return self.unheld
        if self.literal is not None:
            return f"the dataset holds one key, {self.name(0)} (the suite's {self.literal!r})"
        if self.kind == "none":
            return "the suite preloads nothing stallscope can load"
        return (f"the dataset holds the suite's keys {self.suite_prefix}<n> for n in [{self.lo}, {self.hi}] "
                f"as {self.name(0)} .. {self.name(self.keys - 1)}")


@dataclass
class Translated:
    words: list[str]
    max_index: int = -1                 # highest dataset key index named literally
    literals: list[tuple[str, str]] = field(default_factory=list)   # (suite word, dataset name)
    kept: list[str] = field(default_factory=list)                    # literal keys left as they are


def translate(words: list[str], naming: Naming, client_prefix: str, tag: str,
              notes: list[str]) -> Translated:
    """One command's words (verb first) with every key word in the dataset's names; notes
    start with `tag` ("get: " in a mix, else ""). Raises KeyNameError when a key cannot
    be named."""
    kw = key_words(words)
    verb = words[0].upper() if words else ""
    if not kw.known:
        notes.append(f"{tag}{verb} is not in the recorded command table (collectors/workload/command_keys.json, "
                     f"{recorded_from()}): its first argument is taken as its only key")
    if kw.incomplete:
        notes.append(f"{tag}{verb} can name more keys than its arguments show (e.g. SORT BY/GET patterns); "
                     "those are neither translated nor preloaded")
    out = Translated(words=[words[0]] if words else [])
    for i, w in enumerate(words[1:], 1):
        if "__key__" in w and i in kw.flags:
            out.words.append(_random_key(w, verb, kw.writes_only(i), naming, client_prefix, tag, notes))
        elif "__key__" in w:
            out.words.append(w.replace("__key__", "__rand_int__"))
            notes.append(f"{tag}__key__ in argument {i} of {verb} is not a key: memtier puts the number n "
                         "there, redis-benchmark 12 zero-padded digits (a different string; an argument Redis "
                         "parses as an integer rejects the leading zeros and the command fails)")
        elif i in kw.flags:
            out.words.append(_literal_key(w, i, verb, kw.writes_only(i), naming, out))
        else:
            out.words.append(w)
    _literal_notes(out, naming, tag, notes)
    return out


def _random_key(w: str, verb: str, writes_only: bool, naming: Naming, client_prefix: str, tag: str,
                notes: list[str]) -> str:
    before, _, after = w.partition("__key__")
    suite_name = f"{before}{client_prefix}<n>{after}"
    if naming.kind == "none" and naming.preloads and not writes_only:
        raise KeyNameError(f"{verb} reads keys {suite_name}, which the dataset cannot hold: {naming.describe()}. "
                           f"The imported case would measure {verb} on missing keys")
    if naming.kind == "none":
        # Nothing preloaded: the workload creates its own keys; keep the suite's shape.
        return f"{before}{client_prefix or ('' if before else 'key:')}__rand_int__{after}"
    if after:
        raise KeyNameError(
            f"key {w!r} names keys {suite_name}: text after the number. The dataset names keys "
            f"<prefix><12 digits> (redis-benchmark fills __rand_int__ only as the number), so it cannot hold "
            "these keys and the case would run on missing keys")
    if naming.suite_prefix is not None and before + client_prefix != naming.suite_prefix:
        notes.append(f"{tag}the client names keys {suite_name!r}, the preload "
                     f"{naming.suite_prefix + '<n>'!r} (they differ in the suite itself); both are the dataset's "
                     f"{naming.dataset_prefix}%012d here")
    return f"{naming.dataset_prefix}__rand_int__"


def _literal_key(w: str, i: int, verb: str, writes_only: bool, naming: Naming, out: Translated) -> str:
    if naming.literal is not None and w == naming.literal:
        out.literals.append((w, naming.name(0)))
        out.max_index = max(out.max_index, 0)
        return naming.name(0)
    n = naming.number(w)
    if n is not None and naming.kind != "none" and n - naming.lo < naming.keys:
        out.literals.append((w, naming.name(n - naming.lo)))
        out.max_index = max(out.max_index, n - naming.lo)
        return naming.name(n - naming.lo)
    if n is None and (writes_only or not naming.preloads):
        out.kept.append(w)  # created by the workload itself (a destination, or a suite without preload)
        return w
    raise KeyNameError(f"{verb} reads key {w!r} (argument {i}), which the dataset cannot hold: "
                       f"{naming.describe()}. The imported case would measure {verb} on a missing key")


def _literal_notes(out: Translated, naming: Naming, tag: str, notes: list[str]) -> None:
    if out.literals:
        pairs = ", ".join(f"{a} -> {b}" for a, b in out.literals[:4])
        more = f" (and {len(out.literals) - 4} more)" if len(out.literals) > 4 else ""
        rule = ("the one preloaded key" if naming.literal is not None else
                f"the suite's {naming.suite_prefix}<n> is the dataset's {naming.dataset_prefix}%012d of n - {naming.lo}")
        notes.append(f"{tag}literal key names translated to the dataset's ({rule}): {pairs}{more}")
    if out.kept:
        why = ("the suite preloads nothing; the workload creates them" if not naming.preloads else
               "written by the command, not read: it creates them")
        notes.append(f"{tag}literal keys kept as written ({why}): {', '.join(dict.fromkeys(out.kept))}")
