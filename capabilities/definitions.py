"""Parse and validate provider definitions, and compute their static revision. Pure, no ORM.

A definition file (JSON or YAML) holds one provider or a list under `providers`:

    id: billing                      # capability ids are "billing/<name>"
    title: Billing
    namespace: docs                  # where the knowledge targets' sources live
    capabilities:
      - name: refund
        title: Refund a payment
        summary: Give money back for a captured payment.
        knowledge:
          - source: Billing handbook  # a whole source, as a collection
            role: reference
            locale: en
          - source: Billing handbook  # or one document of it, by its ref
            document: refunds.md
            role: howto

An id with a '.' names its namespace, ':' written '.': `tenant.acme.billing` is provider `billing`
of namespace `tenant:acme`, and no other namespace may hold it. A namespace's member defines only
such ids (`capabilities.service.check_provider`), so no id a member picks can be another tenant's;
plain ids are a superuser's. The static revision hashes the normalised definition: reordering does
not change it, any change of content does.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from capabilities.errors import DefinitionInvalid
from kb.errors import ValidationFailed
from kb.revisions import canonical_hash
from kb.vocabulary import CAPABILITY_ID_RE


@dataclass(frozen=True)
class TargetDefinition:
    source: str
    document: str = ""  # a document ref within the source; empty: the whole source
    role: str = "reference"
    locale: str = ""


@dataclass(frozen=True)
class CapabilityDefinition:
    name: str
    title: str
    summary: str
    knowledge: tuple[TargetDefinition, ...]


@dataclass(frozen=True)
class ProviderDefinition:
    id: str
    title: str
    namespace: str
    capabilities: tuple[CapabilityDefinition, ...]

    def canonical_id(self, capability: CapabilityDefinition) -> str:
        return f"{self.id}/{capability.name}"

    def as_dict(self) -> dict:
        """The normalised definition: what is stored and what the revision hashes."""
        return {
            "id": self.id,
            "title": self.title,
            "namespace": self.namespace,
            "capabilities": [
                {
                    "name": c.name,
                    "title": c.title,
                    "summary": c.summary,
                    "knowledge": [
                        {
                            "source": t.source,
                            "document": t.document,
                            "role": t.role,
                            "locale": t.locale,
                        }
                        for t in sorted(set(c.knowledge), key=_target_key)
                    ],
                }
                for c in sorted(self.capabilities, key=lambda c: c.name)
            ],
        }

    @property
    def static_revision(self) -> str:
        return canonical_hash(self.as_dict())


def _target_key(t: TargetDefinition) -> tuple:
    return (t.source, t.document, t.role, t.locale)


def parse_definitions(data) -> list[ProviderDefinition]:
    """One provider or `{"providers": [...]}` → validated definitions; errors name the field."""
    if isinstance(data, dict) and "providers" in data:
        items = data["providers"]
        if not isinstance(items, list):
            raise _invalid("providers", "must be a list")
    else:
        items = [data]
    definitions = [parse_provider(item, f"providers[{i}]") for i, item in enumerate(items)]
    ids = [d.id for d in definitions]
    if len(set(ids)) != len(ids):
        raise _invalid("providers", "a provider id appears twice")
    return definitions


def qualified_id(namespace: str, name: str) -> str:
    """The id of provider `name` of `namespace`: 'tenant.acme.billing' for 'tenant:acme' and
    'billing'.
    Members define only such ids, each in its own namespace: no two namespaces share one, so a
    member's new id is never refused for being another tenant's (which would tell it exists)."""
    return f"{namespace.replace(':', '.')}.{name}"


def namespace_of_id(provider_id: str) -> str | None:
    """The namespace a qualified id names (the inverse of `qualified_id`: namespace slugs hold no
    '.' before their ':' and at most one ':'), None for an id without a '.'."""
    if "." not in provider_id:
        return None
    return provider_id.rsplit(".", 1)[0].replace(".", ":", 1)


def parse_provider(data, where: str = "provider") -> ProviderDefinition:
    if not isinstance(data, dict):
        raise _invalid(where, "must be an object")
    provider_id = _text(data, "id", where, required=True)
    if not CAPABILITY_ID_RE.match(f"{provider_id}/x"):
        raise _invalid(f"{where}.id", "use lowercase letters, digits, '.', '_' or '-'")
    namespace = _text(data, "namespace", where, required=True)
    if "." in provider_id and namespace_of_id(provider_id) != namespace:
        raise _invalid(
            f"{where}.id",
            f"an id with a '.' names its namespace: this one names "
            f"{namespace_of_id(provider_id)!r}; in {namespace!r} use "
            f"'{qualified_id(namespace, provider_id.rsplit('.', 1)[1])}'",
        )
    capabilities = []
    for at, item in _objects(data, "capabilities", where):
        name = _text(item, "name", at, required=True)
        if not CAPABILITY_ID_RE.match(f"{provider_id}/{name}"):
            raise _invalid(f"{at}.name", "use lowercase letters, digits, '.', '_' or '-'")
        targets = [
            TargetDefinition(
                source=_text(target, "source", tat, required=True),
                document=_text(target, "document", tat),
                role=_text(target, "role", tat) or "reference",
                locale=_text(target, "locale", tat),
            )
            for tat, target in _objects(item, "knowledge", at)
        ]
        capabilities.append(
            CapabilityDefinition(
                name=name,
                title=_text(item, "title", at, required=True),
                summary=_text(item, "summary", at),
                knowledge=tuple(targets),
            )
        )
    names = [c.name for c in capabilities]
    if len(set(names)) != len(names):
        raise _invalid(f"{where}.capabilities", "a capability name appears twice")
    return ProviderDefinition(
        provider_id, _text(data, "title", where), namespace, tuple(capabilities)
    )


def _objects(data: dict, key: str, where: str) -> Iterator[tuple[str, dict]]:
    """The optional list of objects under `key`, each with the path its errors name; checked as
    it is read, so the first problem in document order is the one reported."""
    items = data.get(key, [])
    if not isinstance(items, list):
        raise _invalid(f"{where}.{key}", "must be a list")
    for i, item in enumerate(items):
        at = f"{where}.{key}[{i}]"
        if not isinstance(item, dict):
            raise _invalid(at, "must be an object")
        yield at, item


def _text(data: dict, key: str, where: str, required: bool = False) -> str:
    value = data.get(key, "")
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise _invalid(f"{where}.{key}", "must be a string")
    value = value.strip()
    if required and not value:
        raise _invalid(f"{where}.{key}", "is required")
    return value


def _invalid(field: str, problem: str) -> ValidationFailed:
    return DefinitionInvalid(
        f"Invalid provider definition: {field} {problem}.", details={"field": field}
    )
