"""Who sees what in the curator's console: the base classes every app's admin builds on.

One rule, applied by construction: a staff user who is not a superuser sees only objects of the
namespaces they are a member of (`NamespaceMembership`) and writes only to those their membership
may change. `SCOPE` says how every model reaches its namespace; querysets, foreign-key and
many-to-many choices, list filters, inlines, raw-id labels and actions all go through it, and a
model missing from `SCOPE` offers a member nothing at all. An object drawing on several namespaces
(an answer over several, `SPANS`) is seen only by a member of every one of them.
"""

from django.contrib import admin
from django.contrib.admin.widgets import ForeignKeyRawIdWidget
from django.core.exceptions import ImproperlyConfigured, PermissionDenied, ValidationError
from django.db.models import Model, QuerySet
from django.http import Http404

from kb import models
from kb.audiences import document_filter
from kb.auth import Principal, staff_principal

SCOPE: dict[type[Model], str] = {  # model -> lookup from it to its Namespace ("": it is one)
    models.Namespace: "",
    models.Source: "namespace",
    models.SourceFile: "source__namespace",
    models.Document: "namespace",
    models.Chunk: "namespace",
    models.IngestRun: "source__namespace",
    models.IngestItem: "run__source__namespace",
    models.Provider: "namespace",
    models.ProviderRevision: "provider__namespace",
    models.Capability: "provider__namespace",
    models.KnowledgeTarget: "capability__provider__namespace",
    models.QueryLog: "namespace",
    models.AnswerLog: "query_log__namespace",
    models.EvalSuite: "namespace",
    models.EvalRun: "namespace",
    models.FusionCalibration: "namespace",
    models.GroupRule: "namespace",
}
# model -> lookup from it to the object whose audience it shares ("": it has one itself)
AUDIENCED: dict[type[Model], str] = {
    models.Source: "",
    models.SourceFile: "source__",
    models.Document: "",
    models.Chunk: "",
    models.IngestItem: "run__source__",
}
SPANS: dict[type[Model], str] = {  # model -> its array field of every namespace one object draws on
    # an answer searched them all: readable only by a reader of each
    models.AnswerLog: "namespaces",
}


def scoped(queryset: QuerySet, slugs: frozenset[str] | None) -> QuerySet:
    """`queryset` limited to objects of the namespaces `slugs` (None: every namespace). A model
    without a namespace (not in SCOPE) yields nothing unless every namespace is allowed."""
    if slugs is None:
        return queryset
    if queryset.model not in SCOPE:
        return queryset.none()
    lookup = SCOPE[queryset.model]
    queryset = queryset.filter(**{f"{lookup}__slug__in" if lookup else "slug__in": sorted(slugs)})
    if queryset.model in SPANS:
        queryset = queryset.filter(**{f"{SPANS[queryset.model]}__contained_by": sorted(slugs)})
    return queryset


def heard(queryset: QuerySet, principal: Principal) -> QuerySet:
    """`queryset` limited to what `principal`'s audiences let it read (`kb.audiences`): a
    restricted source, its files and runs' items, a restricted document and its chunks only for
    its audience and the namespace's curators."""
    if queryset.model not in AUDIENCED:
        return queryset
    return queryset.filter(document_filter(principal.audiences, AUDIENCED[queryset.model]))


def namespace_of(obj: Model) -> str | None:
    """The slug of the namespace `obj` belongs to (None when it belongs to none)."""
    value = obj
    for part in SCOPE[type(obj)].split("__") if SCOPE[type(obj)] else ():
        value = getattr(value, part, None)
        if value is None:
            return None
    return value.slug


def namespaces_of(obj: Model) -> set[str | None]:
    """Every namespace `obj` draws on: its own and, for a model in SPANS, each one it names.
    Reading it needs all of them."""
    return (
        {namespace_of(obj), *getattr(obj, SPANS[type(obj)], ())}
        if type(obj) in SPANS
        else {namespace_of(obj)}
    )


def _readable(principal: Principal) -> frozenset[str] | None:
    return None if principal.kind == "staff" else frozenset(principal.namespaces or ())


def _writable(principal: Principal) -> frozenset[str] | None:
    return None if principal.kind == "staff" else principal.writable


def request_principal(request) -> Principal:
    """The signed-in user's principal, read once per request and kept on it: a console page asks
    for it in every permission check of every admin in its menu, 38 times a page on average in
    tests/hostile/test_console_walk.py, and each reading is a handful of queries. Like Django's
    own permission cache, a membership changed during a request counts from the next one."""
    kept = getattr(request, "_kb_principal", None)
    if kept is None or kept[0] is not request.user:  # signing in replaces request.user
        kept = (request.user, staff_principal(request.user))
        request._kb_principal = kept
    return kept[1]


class ScopedRawIdWidget(ForeignKeyRawIdWidget):
    """A raw-id input whose label names an object only when the curator may see it."""

    def __init__(self, rel, admin_site, *, queryset: QuerySet, **kwargs):
        super().__init__(rel, admin_site, **kwargs)
        self.queryset = queryset

    def label_and_url_for_value(self, value):
        key = self.rel.get_related_field().name
        try:
            if not self.queryset.filter(**{key: value}).exists():
                return "", ""
        except (ValueError, ValidationError):
            return "", ""
        return super().label_and_url_for_value(value)


class ScopedFields:
    """Foreign-key and many-to-many choices limited to what the curator may write, raw-id labels to
    what they may read. Shared by the scoped model admins and their inlines."""

    def _principal(self, request) -> Principal:
        return request_principal(request)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        principal = self._principal(request)
        choices = scoped(db_field.related_model._default_manager.all(), _writable(principal))
        kwargs.setdefault("queryset", choices)
        if db_field.name in self.raw_id_fields and "widget" not in kwargs:
            kwargs["widget"] = ScopedRawIdWidget(
                db_field.remote_field,
                self.admin_site,
                using=kwargs.get("using"),
                queryset=scoped(
                    db_field.related_model._default_manager.all(), _readable(principal)
                ),
            )
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        principal = self._principal(request)
        kwargs.setdefault(
            "queryset", scoped(db_field.related_model._default_manager.all(), _writable(principal))
        )
        return super().formfield_for_manytomany(db_field, request, **kwargs)


class ScopedInline(ScopedFields):
    """The base of every inline on a scoped admin: its rows and choices are scoped too."""

    def get_queryset(self, request):
        principal = self._principal(request)
        return heard(scoped(super().get_queryset(request), _readable(principal)), principal)


def parent_id(request) -> int | None:
    """The id of the object whose change page is being shown (what an inline belongs to)."""
    match = getattr(request, "resolver_match", None)
    object_id = str((match.kwargs if match else {}).get("object_id", ""))
    return int(object_id) if object_id.isdigit() else None


class ScopedRelatedFilter(admin.RelatedFieldListFilter):
    """A list filter over a relation offering only the related objects the curator may read."""

    def field_choices(self, field, request, model_admin):
        ordering = self.field_admin_ordering(field, request, model_admin)
        principal = request_principal(request)
        related = heard(
            scoped(field.related_model._default_manager.all(), _readable(principal)), principal
        )
        if ordering:
            related = related.order_by(*ordering)
        return [(obj.pk, str(obj)) for obj in related]


class NamespaceScoped(ScopedFields, admin.ModelAdmin):
    """The base of every admin of a namespaced model (see the module's rule). Reading needs
    membership of the object's namespace, writing (change, delete, every action) a membership
    that may write it; adding needs one such membership. Custom views fetch their object with
    `scoped_object`."""

    def get_queryset(self, request):
        principal = self._principal(request)
        return heard(scoped(super().get_queryset(request), _readable(principal)), principal)

    def _may(self, request, obj, write: bool) -> bool:
        principal = self._principal(request)
        allowed = (_writable if write else _readable)(principal)
        if allowed is None:
            return True
        if obj is None:
            return bool(allowed)
        return namespaces_of(obj) <= allowed

    # Membership is the permission: a staff user reads what a membership lets them read and writes
    # what a writing one lets them write, with no Django model permissions to tick besides
    # (docs/getting-started.md); superusers may do everything.
    @staticmethod
    def _staff(request) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_module_permission(self, request):
        return self._staff(request) and self._may(request, None, write=False)

    def has_view_permission(self, request, obj=None):
        return self._staff(request) and self._may(request, obj, write=False)

    def has_add_permission(self, request):
        return self._staff(request) and self._may(request, None, write=True)

    def has_change_permission(self, request, obj=None):
        return self._staff(request) and self._may(request, obj, write=True)

    def has_delete_permission(self, request, obj=None):
        return self._staff(request) and self._may(request, obj, write=True)

    def scoped_object(self, request, object_id, *, write: bool = False):
        """The object of a custom view: missing (404) unless the curator may read it, forbidden
        (403) when `write` and they may not change it."""
        obj = self.get_object(request, str(object_id))
        if obj is None or not self.has_view_permission(request, obj):
            raise Http404
        if write and not self.has_change_permission(request, obj):
            raise PermissionDenied
        return obj

    def get_list_filter(self, request):
        """Every filter over a relation offers only what the curator may read."""
        filters = []
        for entry in super().get_list_filter(request):
            if isinstance(entry, str) and self._is_relation(entry):
                entry = (entry, ScopedRelatedFilter)
            filters.append(entry)
        return filters

    def _is_relation(self, path: str) -> bool:
        model = self.model
        for part in path.split("__"):
            field = model._meta.get_field(part)
            if not field.is_relation:
                return False
            model = field.related_model
        return True

    def get_inline_instances(self, request, obj=None):
        inlines = super().get_inline_instances(request, obj)
        for inline in inlines:
            if not isinstance(inline, ScopedInline):
                raise ImproperlyConfigured(
                    f"{type(inline).__name__} is an inline of the scoped {type(self).__name__}; "
                    "base it on kb.admin_access.ScopedInline."
                )
        return inlines

    def get_action(self, action):
        """Every action writes: it runs only when the curator may change each selected object."""
        found = super().get_action(action)
        if found is None:
            return None
        func, name, description = found

        def guarded(modeladmin, request, queryset):
            allowed = _writable(modeladmin._principal(request))
            if (
                allowed is not None
                and queryset.exclude(pk__in=scoped(queryset, allowed).values("pk")).exists()
            ):
                raise PermissionDenied
            return func(modeladmin, request, queryset)

        guarded.allowed_permissions = getattr(func, "allowed_permissions", None) or ("change",)
        guarded.__name__ = name
        return guarded, name, description


class ReadOnlyInConsole:
    """Objects only the pipeline writes (documents, chunks): the console shows them and may delete
    them."""

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class SuperuserOnly(admin.ModelAdmin):
    """Only superusers see or change these: who may read what (memberships), and API tokens,
    which can name any namespace."""

    def has_module_permission(self, request):
        return request.user.is_superuser

    def has_view_permission(self, request, obj=None):
        return request.user.is_superuser

    has_change_permission = has_add_permission = has_delete_permission = has_view_permission

    def history_view(self, request, object_id, extra_context=None):
        """Refused before the object is looked up: Django's own view redirects for a missing id
        and refuses an existing one, which would tell a member which ids exist."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        return super().history_view(request, object_id, extra_context)
