"""A source's or document's audience in the console: the groups a curator may choose, and a saved
change applied at once."""

from django.contrib.auth.models import Group
from django.db.models import QuerySet

from kb import models
from kb.auth import staff_principal
from kb.identity.rules import group_key


class AudienceSetting:
    """The `audience_groups` field of sources and documents, and a saved change applied at once
    to the object, its documents and their chunks (`kb.audiences`). Groups belong to no
    namespace, and their names are a superuser's to see: a curator chooses among the groups
    their namespaces already know (`audience_choices`)."""

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        if db_field.name == "audience_groups":
            kwargs["queryset"] = audience_choices(request.user)
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        if "audience_groups" in form.changed_data:
            self.apply_audience(form.instance)

    def apply_audience(self, obj) -> None:  # the admin's own: apply_source or apply_document
        raise NotImplementedError


def audience_choices(user) -> QuerySet:
    """The groups `user` may name as an audience: every group for a superuser; for a curator,
    the groups named like a group rule's group of a namespace they curate (what single sign-on
    fills), those already an audience there, and their own."""
    if user.is_superuser:
        return Group.objects.order_by("name")
    curated = staff_principal(user).writable
    named = {
        group_key(group)
        for group in models.GroupRule.objects.filter(namespace__slug__in=curated).values_list(
            "group", flat=True
        )
    }
    ids = {pk for pk, name in Group.objects.values_list("pk", "name") if group_key(name) in named}
    ids |= set(user.groups.values_list("pk", flat=True))
    ids |= set(
        models.Audience.objects.filter(namespace__slug__in=curated).values_list("groups", flat=True)
    )
    return Group.objects.filter(pk__in=ids - {None}).order_by("name")
