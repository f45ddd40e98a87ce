"""The third-party actions every generated workflow uses (the PR workflows, the schedule's,
an experiment's), pinned by commit: a tag can be moved to other code after the workflow is
committed, a commit cannot. Each SHA is the commit its release tag points to in the action's
own repository (read with `git rev-parse TAG^{commit}`); the tag is written beside it, in
this file and as a comment on the `uses:` line of the generated YAML (the form Dependabot
and Renovate read to offer updates).

To move to a newer release: take the new tag's commit from the action's repository, replace
the SHA and the tag here, regenerate the workflows."""
from __future__ import annotations

import re

# actions/checkout v4.4.0 (the v4 tag's commit)
CHECKOUT = "actions/checkout@11d5960a326750d5838078e36cf38b85af677262"
# actions/upload-artifact v4.6.2 (the v4 tag's commit)
UPLOAD = "actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02"
# actions/download-artifact v4.3.0 (the v4 tag's commit)
DOWNLOAD = "actions/download-artifact@d3f86a106a0bac45b974a628896c90dbdf5c8093"

TAGS = {CHECKOUT: "v4.4.0", UPLOAD: "v4.6.2", DOWNLOAD: "v4.3.0"}
PINNED = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}$")


def annotate(yaml_text: str) -> str:
    """The dumped workflow with `# TAG` after each pinned `uses:` (YAML comments are not
    data, so PyYAML cannot write them: added to the text)."""
    out = []
    for line in yaml_text.splitlines(keepends=True):
        m = re.match(r"^(\s*(?:- )?uses: )(\S+)$", line.rstrip("\n"))
        if m and m.group(2) in TAGS:
            line = f"{m.group(1)}{m.group(2)} # {TAGS[m.group(2)]}\n"
        out.append(line)
    return "".join(out)
