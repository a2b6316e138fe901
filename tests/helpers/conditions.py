"""A step's `if:` condition as GitHub Actions evaluates it, for the workflow replay (replay.py).

Supported: the status functions success(), failure(), always(), cancelled() (a replayed run is never cancelled);
`!`, `&&`, `||`, `==`, `!=` and parentheses; 'string' literals, true, false; dotted names looked up in the given
contexts (a missing one is ''). A condition without a status function is `success() && (condition)`, and an
empty one is `success()`, as on GitHub.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\s*(?:(&&|\|\||==|!=|!|\(|\))|'((?:[^']|'')*)'|([A-Za-z_][\w.-]*)(\(\))?)")
_STATUS = ("success", "failure", "always", "cancelled")


class ConditionError(Exception):
    """A condition the replay cannot evaluate."""


def evaluate(condition: str, failed: bool, contexts: dict[str, dict], where: str) -> bool:
    """Whether a step with this `if:` runs, after earlier steps that did (failed) or did not fail."""
    text = condition.strip()
    if text.startswith("${{") and text.endswith("}}"):
        text = text[3:-2].strip()
    if not text:
        return not failed
    tokens = _tokens(text, where)
    parser = _Parser(tokens, failed, contexts, where)
    value = parser.expression()
    if parser.pos != len(tokens):
        raise ConditionError(f"{where}: cannot read the condition {condition!r} past token {parser.pos + 1}")
    if not any(kind == "call" and word in _STATUS for kind, word in tokens):
        return not failed and _truthy(value)
    return _truthy(value)


def _tokens(text: str, where: str) -> list[tuple[str, str]]:
    tokens, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise ConditionError(f"{where}: unsupported condition text at {text[pos:]!r}")
        operator, literal, name, call = match.groups()
        if operator:
            tokens.append(("op", operator))
        elif literal is not None:
            tokens.append(("str", literal.replace("''", "'")))
        elif call:
            tokens.append(("call", name))
        else:
            tokens.append(("name", name))
        pos = match.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return tokens


def _truthy(value) -> bool:
    return bool(value) and value != "false"


class _Parser:
    def __init__(self, tokens, failed, contexts, where):
        self.tokens, self.failed, self.contexts, self.where, self.pos = tokens, failed, contexts, where, 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, operator: str) -> bool:
        if self.peek() == ("op", operator):
            self.pos += 1
            return True
        return False

    def expression(self):
        value = self.conjunction()
        while self.take("||"):
            right = self.conjunction()
            value = value if _truthy(value) else right
        return value

    def conjunction(self):
        value = self.comparison()
        while self.take("&&"):
            right = self.comparison()
            value = right if _truthy(value) else value
        return value

    def comparison(self):
        value = self.unary()
        for operator in ("==", "!="):
            if self.take(operator):
                right = self.unary()
                same = str(value).lower() == str(right).lower()
                return same if operator == "==" else not same
        return value

    def unary(self):
        if self.take("!"):
            return not _truthy(self.unary())
        if self.take("("):
            value = self.expression()
            if not self.take(")"):
                raise ConditionError(f"{self.where}: a '(' is not closed")
            return value
        token = self.peek()
        if token is None:
            raise ConditionError(f"{self.where}: the condition ends early")
        self.pos += 1
        kind, word = token
        if kind == "str":
            return word
        if kind == "call":
            if word not in _STATUS:
                raise ConditionError(f"{self.where}: unsupported function {word}()")
            return {"success": not self.failed, "failure": self.failed, "always": True, "cancelled": False}[word]
        if kind == "name":
            if word in ("true", "false"):
                return word == "true"
            scope, *path = word.split(".")
            if scope not in self.contexts:
                raise ConditionError(f"{self.where}: unsupported context {scope!r} in a condition")
            value = self.contexts[scope]
            for part in path:
                value = value.get(part, "") if isinstance(value, dict) else ""
            return value
        raise ConditionError(f"{self.where}: unexpected {word!r}")
