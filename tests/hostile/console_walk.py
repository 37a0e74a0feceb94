"""A walk through the whole curator's console as one user, collecting every sign of another tenant.

`walk(client, user, site)` visits the admin index and every app's index, then every admin
registered on `site` (so a new admin is walked without editing anything here): its changelist
and every `?` link on it (list filters' choices, sorting, pages), its add form, the change,
history and delete pages of its own objects and of the other tenant's, every custom URL of
`get_urls()` with its own and the other tenant's ids, every action on its own objects and on
the other tenant's, and every change form posted back with each relation pointed at the other
tenant's object. Last, the autocomplete view (`admin:autocomplete`) for every relation of every
model (registered or an inline's), with the other tenant's words and ids and an empty term as
search terms. The other tenant's objects carry `FOREIGN_NAME` in their names and ids from
`FOREIGN_IDS` (see `bump_ids`), so a page that shows
one of them is caught by a substring; `snapshot` and `cross_references` catch effects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.db import connection
from django.test import RequestFactory
from django.urls import URLPattern, reverse

from kb.admin_access import SCOPE, namespace_of

FOREIGN_NAME = "zebra"  # in the name or title of every object of the other tenant
FOREIGN_ID_START = 7_700_000  # the other tenant's objects get ids from here (`bump_ids`)
FOREIGN_IDS = re.compile(r"(?<![\d.])77\d{5}(?![\d.])")
LOCAL_ID_START = 500_000  # ids of objects created after the other tenant's
STANDARD_VIEWS = {"changelist", "add", "history", "delete", "change"}
MAX_LINKS = 60  # `?` links followed per changelist
MISSING_ID = 10**9 - 7
CONSOLE_APPS = ("kb", "auth", "django_q")  # the apps whose models the autocomplete walk covers


def bump_ids(start: int) -> None:
    """Every sequence of the database continues from `start`, so rows created next are told
    apart by their ids."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT sequence_schema, sequence_name FROM information_schema.sequences")
        for schema, name in cursor.fetchall():
            cursor.execute("SELECT setval(%s, %s, false)", [f'"{schema}"."{name}"', start])


@dataclass
class Walk:
    violations: list[str] = field(default_factory=list)
    visited: int = 0
    autocompleted: int = 0  # autocomplete answers that listed (scoped) results

    def look(self, where: str, response, *, ids: bool = True) -> None:
        self.visited += 1
        if response.status_code >= 500:
            self.violations.append(f"{where}: answered {response.status_code}")
            return
        body = response.content.decode("utf-8", "replace")
        body += " " + response.get("Location", "")
        if FOREIGN_NAME in body.lower():
            at = body.lower().index(FOREIGN_NAME)
            self.violations.append(f"{where}: shows {body[max(0, at - 80) : at + 40]!r}")
        if ids and (found := FOREIGN_IDS.search(body)):
            self.violations.append(
                f"{where}: shows foreign id {found.group()} in "
                f"{body[max(0, found.start() - 80) : found.end() + 20]!r}"
            )


def _name(model) -> str:
    return f"{model._meta.app_label}_{model._meta.model_name}"


def _objects(model, own: frozenset[str]):
    """(own, foreign) pks of `model`: own in the walker's namespaces, foreign in none of them."""
    if model not in SCOPE:
        return [], [
            pk
            for pk in model._default_manager.values_list("pk", flat=True)
            if isinstance(pk, int) and pk >= FOREIGN_ID_START
        ]
    mine, theirs = [], []
    for obj in model._default_manager.all():
        (mine if namespace_of(obj) in own else theirs).append(obj.pk)
    return mine, theirs


def walk(client, user, site, own: frozenset[str], models=None) -> Walk:
    """Every page of `site` (of `models` only, when given) as `user`, looked at for the other
    tenant's names and ids."""
    seen = Walk()
    factory = RequestFactory()
    for url in [reverse("admin:index")] + sorted(
        {reverse("admin:app_list", args=[model._meta.app_label]) for model in site._registry}
    ):
        seen.look(url, client.get(url))
    for model, model_admin in list(site._registry.items()):
        if models is not None and model not in models:
            continue
        request = factory.get("/")
        request.user = user
        name = _name(model)
        mine, theirs = _objects(model, own)
        changelist = reverse(f"admin:{name}_changelist")
        response = client.get(changelist)
        seen.look(changelist, response)
        if response.status_code == 200:
            links = sorted(set(re.findall(r'href="(\?[^"]*)"', response.content.decode())))[
                :MAX_LINKS
            ]
            for link in links:
                link = link.replace("&amp;", "&")
                seen.look(changelist + link, client.get(changelist + link))
        seen.look(f"{name} add", client.get(reverse(f"admin:{name}_add")))
        for view in ("change", "history", "delete"):
            for pk in mine[:2]:
                url = reverse(f"admin:{name}_{view}", args=[pk])
                seen.look(url, client.get(url))
            _same_as_missing(seen, client, f"admin:{name}_{view}", theirs[:2])
        for pattern in model_admin.get_urls():
            if (
                isinstance(pattern, URLPattern)
                and pattern.name
                and pattern.name.removeprefix(f"{name}_") not in (STANDARD_VIEWS)
                and "object_id" not in pattern.pattern.converters
            ):
                _custom(seen, client, pattern, mine, theirs)
        for pk in mine[:1]:
            _post_foreign_relations(seen, client, model, pk, own)
        for action in model_admin.get_actions(request):
            for selected in (theirs[:2], mine[:1]):
                if not selected:
                    continue
                response = client.post(changelist, {"action": action, "_selected_action": selected})
                seen.look(f"{changelist} action {action} on {selected}", response)
    _autocomplete(seen, client, own)
    return seen


def autocomplete_fields() -> list[tuple[str, str, str]]:
    """(app_label, model_name, field_name) of every relation of every model of `CONSOLE_APPS`: the
    autocomplete view answers for any of them whose target has an admin with search fields,
    whether or not a form declares it in `autocomplete_fields`."""
    from django.apps import apps

    return [
        (model._meta.app_label, model._meta.model_name, field.name)
        for model in apps.get_models()
        if model._meta.app_label in CONSOLE_APPS
        for field in model._meta.get_fields()
        if field.concrete and (field.many_to_one or field.many_to_many or field.one_to_one)
    ]


def _autocomplete(seen: Walk, client, own: frozenset[str]) -> None:
    from django.apps import apps

    url = reverse("admin:autocomplete")
    for app_label, model_name, field_name in autocomplete_fields():
        related = apps.get_model(app_label, model_name)._meta.get_field(field_name).related_model
        _, foreign = _objects(related, own)
        for term in ("", FOREIGN_NAME, *[str(pk) for pk in foreign[:1]]):
            query = {
                "app_label": app_label,
                "model_name": model_name,
                "field_name": field_name,
                "term": term,
            }
            response = client.get(url, query)
            seen.look(f"{url} {query}", response)
            seen.autocompleted += response.status_code == 200


def _same_as_missing(seen: Walk, client, view: str, foreign: list[int]) -> None:
    missing = client.get(reverse(view, args=[MISSING_ID]))
    for pk in foreign:
        response = client.get(reverse(view, args=[pk]))
        seen.look(f"{view} of foreign {pk}", response, ids=False)
        if (response.status_code, response.get("Location")) != (
            missing.status_code,
            missing.get("Location"),
        ):
            seen.violations.append(
                f"{view} of foreign {pk} answers {response.status_code} "
                f"{response.get('Location')}, a missing id {missing.status_code} "
                f"{missing.get('Location')}"
            )


def _custom(seen: Walk, client, pattern: URLPattern, mine: list[int], theirs: list[int]) -> None:
    """A custom view, with the walker's own ids and the other tenant's, got and posted."""
    params = list(pattern.pattern.converters)
    view = f"admin:{pattern.name}"
    if not params:
        for method in (client.get, client.post):
            seen.look(f"{view} {method.__name__}", method(reverse(view)))
        return
    for method in (client.get, client.post):
        missing = method(reverse(view, args=[MISSING_ID] * len(params)))
        for pk in mine[:1]:
            seen.look(
                f"{view} {method.__name__} own {pk}", method(reverse(view, args=[pk] * len(params)))
            )
        for pk in theirs[:2]:
            response = method(reverse(view, args=[pk] * len(params)))
            seen.look(f"{view} {method.__name__} foreign {pk}", response, ids=False)
            if response.status_code != missing.status_code:
                seen.violations.append(
                    f"{view} {method.__name__} of foreign {pk} answers {response.status_code}, "
                    f"a missing id {missing.status_code}"
                )


def _post_foreign_relations(seen: Walk, client, model, pk: int, own: frozenset[str]) -> None:
    """The change form posted back as rendered, with each relation pointed at a foreign object."""
    url = reverse(f"admin:{_name(model)}_change", args=[pk])
    page = client.get(url)
    if page.status_code != 200 or page.context is None or "adminform" not in page.context:
        return
    data, relations = form_data(page.context)
    for key, related in relations.items():
        _, foreign = _objects(related, own)
        if not foreign:
            continue
        seen.look(
            f"{url} posted with {key}={foreign[0]}",
            client.post(url, {**data, key: str(foreign[0])}),
            ids=False,
        )


def form_data(context) -> tuple[dict, dict]:
    """(the POST data of a rendered change form and its inlines, {field key: related model} of
    every editable relation)."""
    data, relations = {}, {}

    def add(form):
        for name, bound in ((n, form[n]) for n in form.fields):
            value = bound.value()
            field = form.fields[name]
            if getattr(field, "queryset", None) is not None:
                relations[form.add_prefix(name)] = field.queryset.model
            if isinstance(value, bool):
                if value:
                    data[form.add_prefix(name)] = "on"
            elif isinstance(value, (list, tuple)):
                data[form.add_prefix(name)] = [str(v) for v in value]
            elif value is not None:
                data[form.add_prefix(name)] = str(value)

    add(context["adminform"].form)
    for inline in context.get("inline_admin_formsets", []):
        formset = inline.formset
        for name, value in formset.management_form.initial.items():
            data[f"{formset.prefix}-{name}"] = str(value)
        for form in formset.forms:
            add(form)
    data["_save"] = "Save"
    return data, relations


def snapshot(namespaces: set[str] | None = None) -> dict:
    """Every row of every namespaced model (of `namespaces`, or all), and of the models that belong
    to no namespace (with `namespaces`, those created with the other tenant); compared before and
    after a walk to catch its effects."""
    from django.apps import apps

    rows = {}
    for model in apps.get_models():
        if model._meta.app_label not in ("kb", "auth", "django_q"):
            continue
        values = list(model._default_manager.order_by("pk").values())
        if model in SCOPE and namespaces is not None:
            keep = {
                obj.pk for obj in model._default_manager.all() if namespace_of(obj) in namespaces
            }
            values = [v for v in values if v.get("id", v.get("pk")) in keep]
        elif namespaces is not None:  # rows of no namespace: those created with the other tenant
            values = [
                v for v in values if isinstance(v.get("id"), int) and v["id"] >= FOREIGN_ID_START
            ]
        for row in values:  # bookkeeping a visit may touch
            for noisy in (
                "last_login",
                "last_used_at",
                "search_vector",
                "embedding",
                "indexed_embedding",
            ):
                row.pop(noisy, None)
        rows[model._meta.label] = values
    return rows


def cross_references() -> list[str]:
    """Rows whose relation points at an object of another namespace than their own."""
    found = []
    for model in SCOPE:
        for obj in model._default_manager.all():
            home = namespace_of(obj)
            for relation in model._meta.get_fields():
                if not (
                    relation.many_to_one and relation.concrete and relation.related_model in SCOPE
                ):
                    continue
                target = getattr(obj, relation.name, None)
                if (
                    target is not None
                    and home is not None
                    and namespace_of(target) not in (home, None)
                ):
                    found.append(
                        f"{model._meta.label} {obj.pk} ({home}) -> {relation.name} {target.pk} "
                        f"({namespace_of(target)})"
                    )
    return found
