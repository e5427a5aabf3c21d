"""A scenario's burn-rate alerts as OpenSLO v1 ``AlertCondition`` and ``AlertPolicy``
documents, and back (with :mod:`gym.inputs.openslo`).

Each alert becomes an ``AlertCondition`` (``kind: burnrate``, ``op: gte``, its threshold,
``lookbackWindow`` its long window, ``alertAfter`` its hold) and an ``AlertPolicy`` that
holds it (OpenSLO allows one condition a policy), which the availability SLO lists in
``alertPolicies``. OpenSLO's condition has one window; the Workbook's second, shorter
window is kept in the annotation ``crawler-slo-gym/short-window`` (annotations are
OpenSLO's place for what an implementation adds). The alert's name is the condition's
``displayName`` (else its ``metadata.name``).

Read back: the conditions of the policies the availability SLO lists (inline or by
reference, and conditions inline or by ``conditionRef``). A policy's notification
targets and its ``alertWhen*`` flags are not used (the replay reports every firing). A
policy on another SLO is refused: the gym's alerts watch the availability budget.
Conditions and policies no SLO lists are not read, and said so in a note.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from gym.core.errors import GymError, Problem
from gym.models import FieldError, Scenario
from gym.models.alerts import BurnRateAlert, seconds

SHORT = "crawler-slo-gym/short-window"
#: Where each of an alert's fields is in its OpenSLO documents.
FIELDS = {
    "name": "metadata.displayName",
    "severity": "spec.severity",
    "burn_rate": "spec.condition.threshold",
    "long_window": "spec.condition.lookbackWindow",
    "short_window": f"metadata.annotations.{SHORT}",
    "alert_after": "spec.condition.alertAfter",
}
#: OpenSLO's duration shorthand the gym reads (months, quarters and years vary in length).
SHORTHAND = re.compile(r"[0-9]+[mhdw]")


def _need(ok: bool, file: str | None, where: str | None, message: str) -> None:
    if not ok:
        raise GymError([Problem(file, where, message)])


def _shorthand(duration: str, where: str, file: str | None) -> str:
    """A gym duration in OpenSLO's shorthand (which has no seconds)."""
    s = seconds(duration)
    for unit, size in (("w", 604_800), ("d", 86_400), ("h", 3600), ("m", 60)):
        if s % size == 0:
            return f"{int(s // size)}{unit}"
    raise GymError.single(
        file, where, f"{duration} is not a whole number of minutes, which OpenSLO cannot say"
    )


def export(
    scenario: Scenario, service: str, label: Callable[[str], str]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The scenario's alerts as documents (named by ``label``, an RFC 1123 label of a
    text), and the policies' names for the availability SLO's ``alertPolicies``."""
    docs: list[dict[str, Any]] = []
    policies: list[str] = []
    file = scenario._source
    named: dict[str, str] = {}
    for i, a in enumerate(scenario.alerts.resolved()):
        at = f"alerts.conditions[{i}]"
        name = label(f"{service}-{a.name}")
        if name in named:
            raise GymError.single(
                file,
                f"{at}.name",
                f"{a.name!r} and {named[name]!r} both become the OpenSLO name {name!r} "
                "(lower case, dashes, at most 63 characters); rename one",
            )
        named[name] = a.name
        condition: dict[str, Any] = {
            "kind": "burnrate",
            "op": "gte",
            "threshold": int(a.burn_rate) if a.burn_rate.is_integer() else a.burn_rate,
            "lookbackWindow": _shorthand(a.long_window, f"{at}.long_window", file),
        }
        condition["alertAfter"] = (
            _shorthand(a.alert_after, f"{at}.alert_after", file) if a.alert_after else "0m"
        )
        metadata: dict[str, Any] = {"name": name, "displayName": a.name}
        if a.short_window:
            metadata["annotations"] = {
                SHORT: _shorthand(a.short_window, f"{at}.short_window", file)
            }
        docs.append(
            {
                "apiVersion": "openslo/v1",
                "kind": "AlertCondition",
                "metadata": metadata,
                "spec": {
                    "description": f"The availability budget burning at {a.burn_rate:g}x or "
                    f"faster over {a.long_window}"
                    + (f" and {a.short_window}" if a.short_window else ""),
                    "severity": a.severity,
                    "condition": condition,
                },
            }
        )
        docs.append(
            {
                "apiVersion": "openslo/v1",
                "kind": "AlertPolicy",
                "metadata": {"name": name, "displayName": a.name},
                "spec": {
                    "alertWhenBreaching": True,
                    "alertWhenResolved": False,
                    "alertWhenNoData": False,
                    "conditions": [{"conditionRef": name}],
                    "notificationTargets": [],
                },
            }
        )
        policies.append(name)
    return docs, policies


class Reader:
    """The alert documents of one file, read as the SLOs refer to them."""

    def __init__(self, file: str | None) -> None:
        self.file = file
        self.conditions: dict[str, tuple[str, dict[str, Any]]] = {}  # name -> (where, doc)
        self.policies: dict[str, tuple[str, dict[str, Any]]] = {}
        self.used: set[tuple[str, str]] = set()
        self.names: set[str] = set()  # the alerts read, by name

    def add(self, kind: str, name: str, where: str, doc: dict[str, Any]) -> None:
        book = self.conditions if kind == "AlertCondition" else self.policies
        _need(name not in book, self.file, f"{where} metadata.name", f"names two {kind}s")
        book[name] = (where, doc)

    def alerts(self, where: str, policies: Any, availability: bool) -> list[dict[str, Any]]:
        """The alerts an SLO's ``alertPolicies`` give."""
        at = f"{where} spec.alertPolicies"
        _need(isinstance(policies, list), self.file, at, "must be a list of alert policies")
        _need(
            availability or not policies,
            self.file,
            at,
            "the gym's alerts watch the availability SLO's error budget; give the policies "
            "on the availability SLO",
        )
        out = []
        for i, item in enumerate(policies):
            policy_where, policy = self._resolve(
                f"{at}[{i}]", item, "alertPolicyRef", "AlertPolicy", self.policies
            )
            spec: Any = policy.get("spec")
            _need(isinstance(spec, dict), self.file, f"{policy_where} spec", "is required")
            conditions = spec.get("conditions")
            _need(
                isinstance(conditions, list) and len(conditions) > 0,
                self.file,
                f"{policy_where} spec.conditions",
                "must list the policy's condition",
            )
            for j, c in enumerate(conditions):
                cond_where, cond = self._resolve(
                    f"{policy_where} spec.conditions[{j}]",
                    c,
                    "conditionRef",
                    "AlertCondition",
                    self.conditions,
                )
                out.append(self._alert(cond_where, cond))
        return out

    def unused(self) -> list[str]:
        """Notes on the alert documents no SLO lists."""
        return [
            f"{kind} {name} is listed by no SLO's alertPolicies: not read"
            for kind, book in (("AlertPolicy", self.policies), ("AlertCondition", self.conditions))
            for name in book
            if (kind, name) not in self.used
        ]

    def _resolve(
        self,
        where: str,
        item: Any,
        ref_key: str,
        kind: str,
        book: dict[str, tuple[str, dict[str, Any]]],
    ) -> tuple[str, dict[str, Any]]:
        """An item that refers to a document (``ref_key``) or holds one inline."""
        _need(isinstance(item, dict), self.file, where, "must be a mapping")
        if ref_key in item:
            ref = item[ref_key]
            _need(
                isinstance(ref, str) and ref in book,
                self.file,
                f"{where}.{ref_key}",
                f"{ref!r} names no {kind} in this file",
            )
            self.used.add((kind, ref))
            return book[ref]
        _need(
            item.get("kind") in (None, kind),
            self.file,
            f"{where}.kind",
            f"must be {kind} (inline) or give {ref_key}",
        )
        return where, item

    def _alert(self, where: str, doc: dict[str, Any]) -> dict[str, Any]:
        """A condition as the scenario's ``alerts.conditions`` item."""
        file = self.file
        metadata: Any = doc.get("metadata") or {}
        _need(isinstance(metadata, dict), file, f"{where} metadata", "must be a mapping")
        name = metadata.get("displayName") or metadata.get("name")
        _need(isinstance(name, str) and name != "", file, f"{where} metadata", "needs a name")
        spec: Any = doc.get("spec")
        _need(isinstance(spec, dict), file, f"{where} spec", "is required (a mapping)")
        severity = spec.get("severity")
        _need(isinstance(severity, str), file, f"{where} spec.severity", "is required (text)")
        cond: Any = spec.get("condition")
        at = f"{where} spec.condition"
        _need(isinstance(cond, dict), file, at, "is required (a mapping)")
        kind = cond.get("kind", "burnrate")
        _need(kind == "burnrate", file, f"{at}.kind", f"{kind!r}: the gym reads burnrate only")
        op = cond.get("op")
        _need(
            op == "gte",
            file,
            f"{at}.op",
            f"{op!r}: an alert fires when the burn rate is at or above its threshold; "
            "write op: gte",
        )
        threshold = cond.get("threshold")
        ok = isinstance(threshold, int | float) and not isinstance(threshold, bool)
        _need(
            ok and 0 < threshold <= 1e6,
            file,
            f"{at}.threshold",
            f"{threshold!r} must be a number > 0",
        )
        out: dict[str, Any] = {
            "name": name,
            "severity": severity,
            "burn_rate": float(threshold),
            "long_window": self._duration(cond.get("lookbackWindow"), f"{at}.lookbackWindow"),
        }
        after = cond.get("alertAfter")
        if after is not None and not re.fullmatch(r"0+[mhdw]", str(after)):
            out["alert_after"] = self._duration(after, f"{at}.alertAfter")
        annotations: Any = metadata.get("annotations") or {}
        if isinstance(annotations, dict) and SHORT in annotations:
            out["short_window"] = self._duration(
                annotations[SHORT], f"{where} metadata.annotations.{SHORT}"
            )
        self._check(where, out)
        _need(
            name not in self.names,
            file,
            f"{where} metadata",
            f"the alert {name!r} is read twice (a policy or condition listed twice, or two "
            "of one name); each alert once",
        )
        self.names.add(name)
        return out

    def _check(self, where: str, alert: dict[str, Any]) -> None:
        """The alert as the scenario checks it, a problem named by its OpenSLO field."""
        try:
            BurnRateAlert.model_validate(alert)
        except ValidationError as exc:
            err = exc.errors()[0]
            cause = (err.get("ctx") or {}).get("error")
            key = cause.field if isinstance(cause, FieldError) else (err["loc"] or [""])[0]
            message = str(cause) if isinstance(cause, FieldError) else err["msg"]
            message = message[:1].lower() + message[1:]  # as the gym's messages read
            raise GymError.single(
                self.file, f"{where} {FIELDS.get(str(key), '')}".strip(), message
            ) from None

    def _duration(self, value: Any, where: str) -> str:
        _need(
            isinstance(value, str) and SHORTHAND.fullmatch(value) is not None,
            self.file,
            where,
            f"{value!r} is not a duration the gym reads: a whole number and m, h, d or w "
            "(months, quarters and years have no fixed length)",
        )
        text = str(value).lstrip("0") or "0"
        _need(not text.startswith(("m", "h", "d", "w")), self.file, where, "must be above 0")
        _need(len(text) <= 8, self.file, where, f"{value!r}: at most 7 digits")
        return text
