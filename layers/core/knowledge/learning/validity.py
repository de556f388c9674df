"""When a claim is true, as its evidence states it: `valid_from` and `valid_until` (inclusive local
dates) read from a quote in Portuguese calendar language and resolved against the turn's local date,
never guessed; a duration, a time of day, a weekly schedule or a fraction is no validity.
docs/contract.md, "Validity in time and staleness"."""

from __future__ import annotations

import calendar
import re
import unicodedata
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Callable, Optional

MONTHS = {"janeiro": 1, "fevereiro": 2, "marco": 3, "abril": 4, "maio": 5, "junho": 6, "julho": 7,
          "agosto": 8, "setembro": 9, "outubro": 10, "novembro": 11, "dezembro": 12}
WEEKDAYS = {"segunda": 0, "terca": 1, "quarta": 2, "quinta": 3, "sexta": 4, "sabado": 5, "domingo": 6}
# A date a year without one may be in the recent past ("vai até 10/01" said on 12/01 ended then).
GRACE_DAYS = 7


def _fold(text: str) -> str:
    stripped = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return re.sub(r"[ \t\r\n]+", " ", stripped.casefold())


def easter(year: int) -> date:
    """Easter Sunday (the Gregorian computus)."""
    a, b, c = year % 19, year // 100, year % 100
    d, e = b // 4, b % 4
    g = (8 * b + 13) // 25
    h = (19 * a + b - d - g + 15) % 30
    i, k = c // 4, c % 4
    l = (32 + 2 * e + 2 * i - h - k) % 7  # the computus' own names
    m = (a + 11 * h + 22 * l) // 451
    month, day = divmod(h + l - 7 * m + 114, 31)
    return date(year, month, day + 1)


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    first = date(year, month, 1)
    return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))


def _black_friday(year: int) -> date:
    return _nth_weekday(year, 11, 3, 4) + timedelta(days=1)  # the day after the fourth Thursday


# The national dates of the retail calendar, by year.
EVENTS: dict[str, Callable[[int], date]] = {
    "black friday": _black_friday,
    "cyber monday": lambda y: _black_friday(y) + timedelta(days=3),
    "natal": lambda y: date(y, 12, 25),
    "vespera de natal": lambda y: date(y, 12, 24),
    "reveillon": lambda y: date(y, 12, 31),
    "ano novo": lambda y: date(y, 1, 1),
    "dia das maes": lambda y: _nth_weekday(y, 5, 6, 2),
    "dia dos pais": lambda y: _nth_weekday(y, 8, 6, 2),
    "dia dos namorados": lambda y: date(y, 6, 12),
    "dia das criancas": lambda y: date(y, 10, 12),
    "dia do consumidor": lambda y: date(y, 3, 15),
    "dia do cliente": lambda y: date(y, 9, 15),
    "dia da mulher": lambda y: date(y, 3, 8),
    "carnaval": lambda y: easter(y) - timedelta(days=47),
    "terca de carnaval": lambda y: easter(y) - timedelta(days=47),
    "sexta-feira santa": lambda y: easter(y) - timedelta(days=2),
    "pascoa": easter,
}


@dataclass(frozen=True)
class Validity:
    valid_from: Optional[date] = None
    valid_until: Optional[date] = None

    def __bool__(self) -> bool:
        return self.valid_from is not None or self.valid_until is not None


NOTHING = Validity()

# ------------------------------------------------------------------ date expressions

_MONTH = "|".join(MONTHS)
_EVENT = "|".join(sorted((re.escape(e) for e in EVENTS), key=len, reverse=True))
# A weekday word that is a weekday, not an ordinal ("segunda ordem", "a segunda unidade").
_WEEKDAY = (r"(?P<wd>(?:segunda|terca|quarta|quinta|sexta)(?=-feira| feira|\s*(?:$|[(),.;!?:])"
            r"|\s(?:que vem|agora|as|ao|a noite|de manha|dia|e|ou|para|pra|com|no|na)\b|\s\d)|sabado|domingo)"
            r"(?:-feira| feira)?\b(?! que vem)")
_NUMERIC = r"(?P<d>\d{1,2})/(?P<m>\d{1,2})(?:/(?P<y>\d{4}|\d{2}))?(?![\d/])"
_WRITTEN = rf"(?P<wdd>\d{{1,2}})(?:º|o)?(?: de)? (?P<wm>{_MONTH})(?: de (?P<wy>\d{{4}}))?"
_DAY = r"dia (?P<dd>\d{1,2})(?![\d/])(?! de cada| de todo| do mes seguinte| util| uteis)"
_PERIOD = (r"(?P<period>(?:o )?(?:fim|final) (?:do|deste|desse) (?:mes|ano)|(?:o )?(?:fim|final) (?:da|desta|dessa) semana"
           r"|(?:essa|esta|nessa|nesta) semana|(?:esse|este|nesse|neste) mes|(?:esse|este|nesse|neste) ano)")
_RELATIVE = r"(?P<rel>hoje|amanha)(?! em dia)"
_EVENT_EXPR = rf"(?:o |a )?(?P<ev>{_EVENT})(?: de (?P<evy>\d{{4}}))?"
DATE = rf"(?:{_NUMERIC}|{_WRITTEN}|{_DAY}|{_PERIOD}|{_EVENT_EXPR}|{_WEEKDAY}|{_RELATIVE})"

_ARTICLE = r"(?:(?:o|a|os|as) )?(?:(?:dia|proximo|proxima) )?"
# A time of day between the trigger and the date: "até as 23h59 de domingo".
_TIME = r"(?:(?:as|às) \d{1,2}(?:h\d{0,2}|:\d{2})(?: de| do| da)? )?"
_UNTIL = (r"(?:\bate |\bvalid[oa]s? ate |\btermina(?:m|ra|rao)? (?:em |no |na )?|\bacaba(?:m)? (?:em |no |na )?"
          r"|\bencerra(?:m)? (?:em |no |na )?)")
_FROM = (r"(?:\ba partir d[eoa]s? |\bcomeca(?:m|ra)? (?:em |no |na |a )?|\bcomecou (?:em |no |na )?"
         r"|\binicia(?:m)? (?:em |no |na )?|\bvale(?:m)? a partir d[eoa]s? )")

_RANGE_OPENING = re.compile(r"\b(?:de|entre|do|desde) ")
_SAYS_ENDS = re.compile(r"\b(?:so|somente|apenas|vale|valem|valid[oa]s?|vai|fica|ficam)\b[^.!?]*$")
_RANGE = re.compile(rf"\b(?:de|entre|do|desde) {_ARTICLE}(?P<a>[^,;]{{1,40}}?) (?:a|ate|e|ao) {_ARTICLE}"
                    rf"(?P<b>{DATE.replace('?P<', '?P<b_')})")
_UNTIL_AT = re.compile(rf"{_UNTIL}{_TIME}{_ARTICLE}{DATE}")
_FROM_AT = re.compile(rf"{_FROM}{_ARTICLE}{DATE}")
_ONLY_TODAY = re.compile(r"\b(?:so|somente|apenas|exclusivamente) (?:(?:por|durante) )?hoje\b(?! em dia)"
                         r"|\bhoje (?:e|sera) o ultimo dia\b|\bultimo dia (?:e|sera) hoje\b|\btermina hoje\b")
# "Essa semana tem frete grátis": the week ends on Sunday; "este mês", on its last day.
_THIS_PERIOD = re.compile(r"\b(?:essa|esta|nessa|nesta) (?P<week>semana)\b(?! que vem| passada)"
                          r"|\b(?:esse|este|nesse|neste) (?P<month>mes)\b(?! que vem| passado)")
_TOMORROW_LAST = re.compile(r"\bamanha (?:e|sera) o ultimo dia\b")
_WEEKEND = re.compile(r"\b(?:(?:so|somente|apenas) )?(?:neste|nesse|este|esse|no proximo|neste proximo) fim de semana\b")
# "até domingo (29/11)": the date in brackets says exactly what the words around it mean.
_BRACKETED = re.compile(rf"{_UNTIL}(?:[^\s()]+ ){{0,5}}?\((?:dia )?{_NUMERIC}\)")
_ON_EVENT = re.compile(rf"\b(?:na|no|durante a|durante o) (?P<ev>{_EVENT})(?: de (?P<evy>\d{{4}}))?\b")
# A weekly schedule ("de segunda a sexta", "segunda a sábado") is no validity.
_SCHEDULE = re.compile(r"\b(?:segunda|terca|quarta|quinta|sexta|sabado|domingo)(?:-feira| feira)?s? (?:a|ate|e) "
                       r"(?:segunda|terca|quarta|quinta|sexta|sabado|domingo)")
# A fraction is no date: "1/2 xícara", "até 1/2 do valor", "meia 1/2 cano", "até 3/4 do preço": a
# proper fraction (numerator below denominator) followed by what it measures ("do", "da", "de"…,
# or a unit). With nothing measured after it, "Cupom vale até 1/2." stays a date (1 February).
_FRACTION = re.compile(r"(?<![\d/])(?P<n>\d{1,2})/(?P<q>\d{1,2})(?![\d/])(?=\s*(?:d[eoa]s?|xicaras?|"
                       r"colher(?:es)?|copos?|horas?|polegadas?|duzias?|litros?|kg|quilos?|gramas?|ml|metros?|cm|mm|"
                       r"unidades?|partes?|porc(?:ao|oes)|fatias?|tanque|cano)\b)")


def _without_fractions(folded: str) -> str:
    """`folded` with each fraction's slash made a fraction slash (U+2044): no date rule reads it,
    and every position stays where it was."""

    def mask(match: re.Match) -> str:
        if int(match["n"]) < int(match["q"]):
            return match.group(0).replace("/", "\u2044")
        return match.group(0)

    return _FRACTION.sub(mask, folded)


def _year_for(month: int, day: int, today: date, *, not_before: Optional[date] = None) -> Optional[date]:
    """The first (month, day) on or after `not_before` (default: GRACE_DAYS before today)."""
    start = not_before or today - timedelta(days=GRACE_DAYS)
    for year in (start.year, start.year + 1):
        try:
            candidate = date(year, month, day)
        except ValueError:
            continue
        if candidate >= start:
            return candidate
    return None


def _on_or_before(month: int, day: int, end: date) -> Optional[date]:
    for year in (end.year, end.year - 1):
        try:
            candidate = date(year, month, day)
        except ValueError:
            continue
        if candidate <= end:
            return candidate
    return None


def _groups(match: re.Match, prefix: str = "") -> dict[str, Optional[str]]:
    return {key[len(prefix):]: value for key, value in match.groupdict().items() if key.startswith(prefix)}


def _resolve(g: dict[str, Optional[str]], today: date, role: str) -> Optional[date]:
    """One date expression's date; `role` is "until" or "from" (a weekday start is the next one)."""
    if g.get("d"):
        day, month = int(g["d"]), int(g["m"])
        if g.get("y"):
            year = int(g["y"]) + (2000 if len(g["y"]) == 2 else 0)
            try:
                return date(year, month, day)
            except ValueError:
                return None
        return _year_for(month, day, today) if 1 <= month <= 12 else None
    if g.get("wdd"):
        day, month = int(g["wdd"]), MONTHS[g["wm"]]
        if g.get("wy"):
            try:
                return date(int(g["wy"]), month, day)
            except ValueError:
                return None
        return _year_for(month, day, today)
    if g.get("dd"):
        day = int(g["dd"])
        for step in range(3):
            month, year = (today.month - 1 + step) % 12 + 1, today.year + (today.month - 1 + step) // 12
            try:
                candidate = date(year, month, day)
            except ValueError:
                continue
            if candidate >= today:
                return candidate
        return None
    if g.get("period"):
        period = g["period"]
        if period.endswith("mes"):
            return date(today.year, today.month, calendar.monthrange(today.year, today.month)[1])
        if period.endswith("ano"):
            return date(today.year, 12, 31)
        return today + timedelta(days=6 - today.weekday())  # the week ends on Sunday
    if g.get("ev"):
        rule = EVENTS[g["ev"]]
        if g.get("evy"):
            return rule(int(g["evy"]))
        for year in (today.year, today.year + 1):
            if rule(year) >= today - timedelta(days=GRACE_DAYS if role == "from" else 0):
                return rule(year)
        return None
    if g.get("wd"):
        ahead = (WEEKDAYS[g["wd"]] - today.weekday()) % 7
        if role == "from" and ahead == 0:
            ahead = 7  # "a partir de segunda", said on a Monday: the next one
        return today + timedelta(days=ahead)
    if g.get("rel"):
        return today if g["rel"] == "hoje" else today + timedelta(days=1)
    return None


def _start_of_range(text: str, end: date, today: date) -> Optional[date]:
    """The start of "de X a Y": a day alone takes Y's month, a date without a year the last one before Y."""
    text = text.strip()
    alone = re.fullmatch(r"(\d{1,2})(?:º|o)?", text)
    if alone:
        try:
            return date(end.year, end.month, int(alone.group(1)))
        except ValueError:
            return None
    match = re.fullmatch(DATE, text)
    if match is None:
        return None
    g = _groups(match)
    if g.get("wd") or g.get("rel") or g.get("period"):
        return _resolve(g, today, "from") if g.get("rel") else None
    if g.get("d") and not g.get("y"):
        return _on_or_before(int(g["m"]), int(g["d"]), end)
    if g.get("wdd") and not g.get("wy"):
        return _on_or_before(MONTHS[g["wm"]], int(g["wdd"]), end)
    return _resolve(g, today, "from")


def read_validity(text: str, today: date) -> Validity:
    """The dates `text` states for when its claim is true, resolved against `today` (the turn's
    local date). Several ends: the latest (nothing is dropped while part of it holds); several
    starts: the earliest."""
    folded = _without_fractions(_fold(text))
    schedule = [m.span() for m in _SCHEDULE.finditer(folded)]

    def in_schedule(at: int) -> bool:
        return any(start <= at < end for start, end in schedule)

    starts: list[date] = []
    ends: list[date] = []
    ranged: list[tuple[int, int]] = []
    for opening in _RANGE_OPENING.finditer(folded):
        if any(start <= opening.start() < end for start, end in ranged):
            continue
        match = _RANGE.match(folded, opening.start())
        if match is None or in_schedule(match.start("b")):
            continue
        end = _resolve(_groups(match, "b_"), today, "until")
        start = _start_of_range(match.group("a"), end, today) if end is not None else None
        if start is None or end is None or start > end:
            continue
        starts.append(start)
        ends.append(end)
        ranged.append(match.span())

    def taken(at: int) -> bool:
        return any(start <= at < end for start, end in ranged)

    for match in _BRACKETED.finditer(folded):
        if not taken(match.start()):
            found = _resolve(_groups(match), today, "until")
            if found is not None:
                ends.append(found)
                ranged.append(match.span())
    for match in _UNTIL_AT.finditer(folded):
        if taken(match.start()) or in_schedule(match.start()):
            continue
        g = _groups(match)
        bare = match.group(0).startswith("ate ")
        before = folded[max(0, match.start() - 40):match.start()]
        if bare and g.get("rel") == "hoje" and not _SAYS_ENDS.search(before):
            continue  # a bare "até hoje" is "so far", not an end
        if bare and g.get("rel") == "amanha" and (not before.strip() or re.search(r"[.!?]\s*$", before)):
            continue  # "Até amanhã!" is a goodbye
        found = _resolve(g, today, "until")
        if found is not None:
            ends.append(found)
    for match in _FROM_AT.finditer(folded):
        if taken(match.start()) or in_schedule(match.start()):
            continue
        found = _resolve(_groups(match), today, "from")
        if found is not None:
            starts.append(found)
    if _ONLY_TODAY.search(folded):
        ends.append(today)
    if _TOMORROW_LAST.search(folded):
        ends.append(today + timedelta(days=1))
    for match in _THIS_PERIOD.finditer(folded):
        if not taken(match.start()):
            ends.append(_resolve({"period": match.group(0)}, today, "until"))  # type: ignore[arg-type]
    weekend = _WEEKEND.search(folded)
    if weekend:
        saturday = today + timedelta(days=(5 - today.weekday()) % 7) if today.weekday() != 6 else today - timedelta(days=1)
        starts.append(saturday)
        ends.append(saturday + timedelta(days=1))
    if not starts and not ends:
        for match in _ON_EVENT.finditer(folded):
            day = _resolve(_groups(match), today, "until")
            if day is not None:
                starts.append(day)
                ends.append(day)
    until = max(ends) if ends else None
    since = min(starts) if starts else None
    if since is not None and until is not None and since > until:
        return Validity(None, until)  # a start after the end it was said with: only the end is sure
    return Validity(since, until)
