"""GitHub Actions expressions, evaluated as GitHub documents them ("Evaluate expressions in
workflows and actions"), for what the generated workflows use: literals ('text', numbers,
true, false, null), contexts with property and `*` filter dereference
(github.event.pull_request.labels.*.name), `!`, `==`, `!=` (strings compared ignoring case),
`&&` and `||` (which give one of their operands, not a boolean), parentheses, and the
functions contains, startsWith, endsWith (ignoring case), format, always, success.

    evaluate("github.event.label.name == 'x'", ctx)    the value
    condition(job["if"], ctx)                          an `if:` (with or without ${{ }})
    interpolate("group-${{ github.event.number }}", ctx)   a string with ${{ }} in it

A missing property is null. So the tests ask "does this job run for that event?" and "which
concurrency group does that event get?" of the YAML as generated."""
from __future__ import annotations

import re
from typing import Any

_TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>-?\d+(?:\.\d+)?)|(?P<op>==|!=|&&|\|\||[!(),])"
                    r"|(?P<name>[A-Za-z_][A-Za-z0-9_-]*(?:\.(?:[A-Za-z_][A-Za-z0-9_-]*|\*))*))")


def _tokens(expr: str) -> list[tuple[str, str]]:
    out, pos, expr = [], 0, expr.strip()
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot read the expression at {expr[pos:pos + 30]!r}")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def _truthy(v: Any) -> bool:
    return v not in (None, False, 0, "") and v == v


def _eq(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.lower() == b.lower()
    return a == b


def _lookup(path: str, ctx: dict) -> Any:
    values: list[Any] = [ctx]
    star = False
    for part in path.split("."):
        if part == "*":
            values = [x for v in values if isinstance(v, list) for x in v]
            star = True
            continue
        values = [v.get(part) if isinstance(v, dict) else None for v in values]
    return values if star else values[0]


def _call(name: str, args: list[Any]) -> Any:
    low = name.lower()
    if low == "contains":
        hay, needle = args
        if isinstance(hay, list):
            return any(_eq(x, needle) for x in hay)
        return str(needle or "").lower() in str(hay or "").lower()
    if low in ("startswith", "endswith"):
        s, x = (str(a or "").lower() for a in args)
        return s.startswith(x) if low == "startswith" else s.endswith(x)
    if low == "format":
        return re.sub(r"\{(\d+)\}", lambda m: str(args[1 + int(m.group(1))]), args[0])
    if low in ("always", "success"):
        return True
    raise ValueError(f"function {name}() is not known here")


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], ctx: dict):
        self.t, self.i, self.ctx = tokens, 0, ctx

    def peek(self) -> str | None:
        return self.t[self.i][1] if self.i < len(self.t) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.t[self.i]
        if value is not None and tok[1] != value:
            raise ValueError(f"expected {value!r}, found {tok[1]!r}")
        self.i += 1
        return tok

    def expr(self) -> Any:                  # a || b
        v = self.and_()
        while self.peek() == "||":
            self.take()
            rhs = self.and_()
            v = v if _truthy(v) else rhs
        return v

    def and_(self) -> Any:                  # a && b
        v = self.cmp()
        while self.peek() == "&&":
            self.take()
            rhs = self.cmp()
            v = rhs if _truthy(v) else v
        return v

    def cmp(self) -> Any:
        v = self.unary()
        while self.peek() in ("==", "!="):
            op = self.take()[1]
            rhs = self.unary()
            v = _eq(v, rhs) if op == "==" else not _eq(v, rhs)
        return v

    def unary(self) -> Any:
        if self.peek() == "!":
            self.take()
            return not _truthy(self.unary())
        if self.peek() == "(":
            self.take()
            v = self.expr()
            self.take(")")
            return v
        kind, text = self.take()
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if kind == "num":
            return float(text) if "." in text else int(text)
        if self.peek() == "(":
            self.take()
            args = []
            while self.peek() != ")":
                args.append(self.expr())
                if self.peek() == ",":
                    self.take()
            self.take(")")
            return _call(text, args)
        if text in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[text]
        return _lookup(text, self.ctx)


def evaluate(expr: str, ctx: dict) -> Any:
    p = _Parser(_tokens(expr), ctx)
    v = p.expr()
    if p.i != len(p.t):
        raise ValueError(f"left over in {expr!r}: {p.t[p.i:]}")
    return v


def _as_text(v: Any) -> str:
    return "" if v is None else ("true" if v is True else "false" if v is False else str(v))


def interpolate(text: str, ctx: dict) -> str:
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: _as_text(evaluate(m.group(1), ctx)), text, flags=re.S)


def condition(text: str | None, ctx: dict) -> bool:
    """An `if:`: absent is true; `${{ }}` around it is allowed."""
    if text is None:
        return True
    s = text.strip()
    if s.startswith("${{") and s.endswith("}}") and s.count("${{") == 1:
        s = s[3:-2]
    return _truthy(evaluate(s, ctx))
