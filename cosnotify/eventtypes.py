"""Event types: normalisation, syntax checks and wildcard matching.

Strategy: one representation, a ``(domain, type)`` pair of strings, shared
by filters (constraint event-type lists, section 2.3) and the channel
(subscription sharing, section 2.6). Any combination of "" and "*" for the
domain with "", "*" or "%ALL" for the type means every type and becomes
:data:`ALL` (section 2.6.6). '*' matches zero or more characters anywhere
in either string (section 2.3). A single empty field is not a wildcard: it
is matched for equality (section 3.2.1; docs/filters.md, decision 37).
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable
from typing import Any

import CosNotifyComm  # omniORB's bundled stub (``import cosnotify`` imported omniORB)

__all__ = ["ALL", "ATTRIBUTE_DOMAIN", "attribute_type", "check_event_types", "normalize",
           "type_matches", "types_match"]

ALL = ("*", "%ALL")
#: The domain of the subscription types that name an attribute a filter tests
#: (``("%ATTRIBUTE", name)``): Elvin's quench, through section 2.6's subscription
#: sharing (docs/grammars/elvin4.md, "Quench").
ATTRIBUTE_DOMAIN = "%ATTRIBUTE"
_SPECIAL = {"%ALL", "%ANY", "%TYPED"}
_BAD_CHARS = re.compile(r"[\x00-\x20\x7f]")


def normalize(domain: str, type_name: str) -> tuple[str, str]:
    """The canonical (domain, type) pair; every-type spellings become ALL.

    Section 2.6.6 defines %ALL with a domain of "" or "*"; with a named domain,
    ``("Telecom", "%ALL")`` means every type of that domain, ``("Telecom", "*")``.
    """
    if domain in ("", "*") and type_name in ("", "*", "%ALL"):
        return ALL
    if type_name == "%ALL":
        return (domain, "*")
    return (domain, type_name)


def _valid_part(text: str) -> bool:
    if _BAD_CHARS.search(text):
        return False
    return "%" not in text or text in _SPECIAL


def attribute_type(name: str) -> tuple[str, str] | None:
    """The subscription type reporting that a filter tests attribute ``name``, or None
    when the name cannot be a type name (whitespace, control characters, '%', '*')."""
    if not name or "*" in name or not _valid_part(name) or "%" in name:
        return None
    return (ATTRIBUTE_DOMAIN, name)


def check_event_types(types: Iterable[Any], *, attributes: bool = False) -> list[tuple[str, str]]:
    """Normalised pairs for an EventTypeSeq, or ``InvalidEventType`` (section 3.3.1.1).

    A name is syntactically invalid if it holds whitespace or control
    characters, or a '%' outside the special names %ALL, %ANY and %TYPED.
    With ``attributes`` (what filters report to their callbacks, never what
    clients declare), ``("%ATTRIBUTE", name)`` is valid too.
    """
    pairs = []
    for event_type in types:
        domain, type_name = event_type.domain_name, event_type.type_name
        if attributes and domain == ATTRIBUTE_DOMAIN and attribute_type(type_name) is not None:
            pairs.append((domain, type_name))
            continue
        if not (_valid_part(domain) and _valid_part(type_name)):
            raise CosNotifyComm.InvalidEventType(event_type)
        pairs.append(normalize(event_type.domain_name, event_type.type_name))
    return pairs


def type_matches(pattern: tuple[str, str], domain: str, type_name: str) -> bool:
    """Does the (possibly wildcard) type ``pattern`` cover this event's type?"""
    if pattern == ALL:
        return True
    pdom, ptype = pattern
    return _glob(pdom, domain) and _glob(ptype, type_name)


def _glob(pattern: str, text: str) -> bool:
    # "" is a name like any other (section 2.8: "The default domain is named by the
    # empty string"), matched for equality; only "*" is a wildcard
    # (section 3.2.1). ("", "") as a whole was made ALL by ``normalize``.
    if pattern == "*":
        return True
    if "*" not in pattern:
        return pattern == text
    return _compiled(pattern)(text) is not None


@functools.lru_cache(maxsize=4096)
def _compiled(pattern: str) -> Any:
    """A regex for a '*' pattern; every other character is literal."""
    return re.compile(fnmatch.translate(pattern.replace("[", "[[]").replace("?", "[?]"))).match


def types_match(patterns: Iterable[tuple[str, str]], domain: str, type_name: str) -> bool:
    """Does any of ``patterns`` cover this event's type? (An empty list covers all.)"""
    found = False
    for pattern in patterns:
        found = True
        if type_matches(pattern, domain, type_name):
            return True
    return not found


