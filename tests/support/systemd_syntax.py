"""Reads a unit file's ExecStart= and Environment= back as systemd does, for the tests of
`rewake setup` (systemd itself prints no service's environment without a running manager).

The rules implemented, from systemd.syntax(7) "Quoting" and systemd.unit(5) "Specifiers":
- a setting's value is a list of words separated by whitespace;
- a double- or single-quoted part of a word keeps its whitespace; quotes are removed;
- inside and outside quotes a backslash starts a C escape: `\\\\`, `\\"`, `\\'`, `\\n`, `\\t`,
  `\\s` (space), `\\xhh`; any other escape is an error here (systemd warns and drops the line);
- `%%` is a literal `%`; any other `%` specifier is an error here (rewake writes none);
- on a command line (ExecStart=) `$$` is a literal `$` in an argument, and a lone `$` is an
  error here (systemd would expand a variable); the program's path, the first word, has no
  variables, so a `$` there is itself.
"""

from __future__ import annotations

_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "t": "\t", "s": " "}


def words(value: str) -> list[str]:
    """The words of a list setting, quotes and escapes undone (specifiers not expanded)."""
    found: list[str] = []
    current: list[str] | None = None
    quote: str | None = None
    position = 0
    while position < len(value):
        char = value[position]
        if char == "\\":
            escape = value[position + 1 : position + 2]
            if escape == "x":
                current = (current or []) + [chr(int(value[position + 2 : position + 4], 16))]
                position += 4
                continue
            if escape not in _ESCAPES:
                raise ValueError(f"unknown escape \\{escape} in {value!r}")
            current = (current or []) + [_ESCAPES[escape]]
            position += 2
            continue
        if quote is not None:
            if char == quote:
                quote = None
            else:
                current = (current or []) + [char]
        elif char in "\"'":
            quote = char
            current = current or []
        elif char.isspace():
            if current is not None:
                found.append("".join(current))
                current = None
        else:
            current = (current or []) + [char]
        position += 1
    if quote is not None:
        raise ValueError(f"unterminated quote in {value!r}")
    if current is not None:
        found.append("".join(current))
    return found


def _specifiers(word: str) -> str:
    if "%" in word.replace("%%", ""):
        raise ValueError(f"a specifier other than %% in {word!r}")
    return word.replace("%%", "%")


def settings(unit: str, name: str) -> list[str]:
    """The raw values of every `name=` line of the unit, in order."""
    prefix = f"{name}="
    return [line[len(prefix) :] for line in unit.splitlines() if line.startswith(prefix)]


def environment(unit: str) -> dict[str, str]:
    """Every Environment= assignment, as the service would see it."""
    assigned: dict[str, str] = {}
    for value in settings(unit, "Environment"):
        for word in words(value):
            name, equals, content = _specifiers(word).partition("=")
            if not equals:
                raise ValueError(f"no assignment in {word!r}")
            assigned[name] = content
    return assigned


def exec_start(unit: str) -> list[str]:
    """The argv of the unit's one ExecStart=."""
    (value,) = settings(unit, "ExecStart")
    program, *arguments = words(value)
    argv = [_specifiers(program)]
    for word in arguments:
        if "$" in word.replace("$$", ""):
            raise ValueError(f"a variable in {word!r}")
        argv.append(_specifiers(word).replace("$$", "$"))
    return argv
