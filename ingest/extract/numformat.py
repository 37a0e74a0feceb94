"""Format a spreadsheet cell's number as its number format shows it. Pure, stdlib only.

`0.000%` shows 0.00106 as `0.106%`, `#,##0.00 [$€-407]` shows `1,234.50 €`. A format this does not
render exactly (conditions such as `[<1000]`, fractions, digits mixed with text) gives None, and the
caller shows the plain number: never a wrong one. Dates are `date_text`'s.
"""

from __future__ import annotations

import datetime
import functools
import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

_BRACKET = re.compile(r"\[([^\]]*)\]")
_PLACEHOLDERS = set("0#?")


@functools.lru_cache(maxsize=256)
def _compiled(fmt: str) -> tuple[list[tuple[str, str]] | None, ...]:
    """Each section's tokens, parsed once per format: a sheet has few formats and many cells."""
    return tuple(_tokens(section) for section in _sections(fmt))


def _sections(fmt: str) -> list[str]:
    """The format split at `;` outside quotes, escapes and brackets."""
    sections, current, i = [], [], 0
    while i < len(fmt):
        ch = fmt[i]
        if ch == '"':
            end = fmt.find('"', i + 1)
            end = len(fmt) if end < 0 else end
            current.append(fmt[i : end + 1])
            i = end + 1
            continue
        if ch == "\\" and i + 1 < len(fmt):
            current.append(fmt[i : i + 2])
            i += 2
            continue
        if ch == "[":
            end = fmt.find("]", i)
            end = len(fmt) if end < 0 else end
            current.append(fmt[i : end + 1])
            i = end + 1
            continue
        if ch == ";":
            sections.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    sections.append("".join(current))
    return sections


def _tokens(section: str) -> list[tuple[str, str]] | None:
    """(kind, text) tokens: `lit` for literal text, `num` for the number's own characters
    (placeholders, `.`, `,`, `E+`), `pct` for a percent sign; None for what is not rendered."""
    tokens: list[tuple[str, str]] = []
    i = 0
    while i < len(section):
        ch = section[i]
        if ch == '"':
            end = section.find('"', i + 1)
            end = len(section) if end < 0 else end
            tokens.append(("lit", section[i + 1 : end]))
            i = end + 1
        elif ch == "\\" and i + 1 < len(section):
            tokens.append(("lit", section[i + 1]))
            i += 2
        elif ch == "_" and i + 1 < len(section):
            tokens.append(("lit", " "))  # a space as wide as the next character
            i += 2
        elif ch == "*" and i + 1 < len(section):
            i += 2  # a fill to the cell's width
        elif ch == "[":
            end = section.find("]", i)
            end = len(section) if end < 0 else end
            tag = section[i + 1 : end]
            if tag.startswith("$"):
                tokens.append(("lit", tag[1:].split("-", 1)[0]))
            elif tag[:1] in "<>=" or tag.lower().startswith(("h", "m", "s")):
                return None  # a condition or an elapsed time
            i = end + 1  # a colour or a locale
        elif ch in _PLACEHOLDERS or ch in ".,":
            tokens.append(("num", ch))
            i += 1
        elif ch in "Ee" and section[i + 1 : i + 2] in ("+", "-"):
            tokens.append(("num", section[i : i + 2].upper()))
            i += 2
        elif ch == "%":
            tokens.append(("pct", "%"))
            i += 1
        elif ch in "/@" or ch.lower() in "ymdhs":
            return None  # fractions, text and dates are not numbers' formats
        elif ch in " $-+():!^&'~{}<>=":
            tokens.append(("lit", ch))
            i += 1
        else:
            return None
    return tokens


def format_number(value: float, fmt: str) -> str | None:
    """`value` as `fmt` shows it, or None where the format is General or not rendered here."""
    if not fmt or fmt.lower() == "general":
        return None
    sections = _compiled(fmt)
    tokens, sign = sections[0], "-" if value < 0 else ""
    if value < 0 and len(sections) > 1:
        tokens, sign, value = sections[1], "", -value  # the section writes its own sign
    elif value == 0 and len(sections) > 2:
        tokens = sections[2]
    if tokens is None:
        return None
    where = [i for i, (kind, _) in enumerate(tokens) if kind == "num"]
    if not where:
        text = "".join(t for _, t in tokens)
        return (sign + text) if text.strip() else None
    first, last = where[0], where[-1]
    if any(kind == "lit" and text.strip() for kind, text in tokens[first : last + 1]):
        return None  # digits interleaved with text (000-00-0000)
    pattern = "".join(t for kind, t in tokens[first : last + 1] if kind == "num")
    if not any(ch in _PLACEHOLDERS for ch in pattern):
        return None
    # the shortest decimal that is the float, as a spreadsheet shows 15 digits, not binary noise
    try:
        exact = abs(Decimal(repr(float(value))))
    except (InvalidOperation, ValueError):
        return None
    if not exact.is_finite():
        return None
    number = _number(exact * 100 ** sum(1 for kind, _ in tokens if kind == "pct"), pattern)
    before = "".join(t for _, t in tokens[:first])
    after = "".join(t for _, t in tokens[last + 1 :])
    return (sign + before + number + after).strip()


def _number(value: Decimal, pattern: str) -> str:
    if "E" in pattern:
        mantissa, _, exponent = pattern.partition("E")
        decimals = len(mantissa.partition(".")[2])
        base, _, power = f"{value:.{decimals}E}".partition("E")
        power_value = int(power)
        shown = f"{abs(power_value):0{max(1, len(exponent) - 1)}d}"
        return f"{base}E{'-' if power_value < 0 else ('+' if exponent[:1] == '+' else '')}{shown}"
    integer, _, fraction = pattern.partition(".")
    scaled = len(integer) - len(integer.rstrip(","))  # each trailing comma divides by 1,000
    integer = integer.rstrip(",")
    value = value / 1000**scaled
    grouped = "," in integer
    integer, fraction = integer.replace(",", ""), fraction.replace(",", "")
    decimals = len(fraction)
    required = len(fraction.rstrip("#?"))  # `#` and `?` decimals drop trailing zeros
    rounded = value.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    whole, _, part = f"{rounded:f}".partition(".")
    part = part.rstrip("0")
    part += "0" * (required - len(part))
    minimum = integer.count("0")
    if whole == "0" and not minimum:
        whole = ""  # `#` shows no insignificant zero
    if grouped and whole:
        whole = f"{int(whole):,}"
    whole = whole.zfill(minimum)
    return whole + ("." + part if part else "")


def date_text(value, fmt: str) -> str:
    """A date, time or both as ISO text, showing what the cell's format shows: `hh:mm` shows a
    datetime's time, `d-mmm-yy` its date, seconds only where the format has them; an elapsed
    time (`[h]:mm:ss`) as hours past 24."""
    if isinstance(value, datetime.timedelta):
        seconds = int(value.total_seconds())
        return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
    bare = re.sub(r'"[^"]*"|\\.|\[[^\]]*\]', "", fmt or "").lower().replace("am/pm", "")
    has_date = any(ch in bare for ch in "yd") or "mmm" in bare
    has_time = any(ch in bare for ch in "hs")
    precision = "seconds" if "s" in bare else "minutes"
    if isinstance(value, datetime.datetime):
        if has_time and not has_date:
            return value.time().isoformat(precision)
        if not has_time or value.time() == datetime.time():  # a datetime at midnight is a date
            return (
                value.date().isoformat()
                if has_date or value.time() == datetime.time()
                else value.isoformat(" ", "minutes")
            )
        return value.isoformat(" ", precision)
    if isinstance(value, datetime.time):
        return value.isoformat(precision if has_time else "minutes")
    return value.isoformat()
