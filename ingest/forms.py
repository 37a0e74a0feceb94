"""The console's source form, one per kind: only the fields that kind uses, each option as a
field with its help text (stored, as the API stores them, in `Source.options`), and a web
address checked by the SSRF guard at save, so a URL the worker would refuse is refused here
with the allow-list entry it would need."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

from ingest import service as ingest_service
from ingest.errors import FetchBlocked
from ingest.loaders import DEFAULTS
from ingest.uploads import read_upload
from kb import models
from kb.errors import KBError
from kb.http import sent_file_name
from kb.validators import GLOBS, glob_hint, regex_like
from kb.vocabulary import (
    REPOSITORY_KINDS,
    SOURCE_KINDS,
    SOURCE_OPTIONS,
    TEXT_OPTION_MAX_CHARS,
    URL_KINDS,
)

KIND_HELP = {  # what each kind ingests, shown when choosing one and on its form
    "url": "One web page.",
    "sitemap": "Every page a sitemap.xml lists (sitemap indexes included).",
    "crawl": "Pages reached breadth-first from a start page, on the same site.",
    "llms": "Every document an llms.txt file links to.",
    "file": "Uploaded files (PDF, Word, PowerPoint, Excel, OpenDocument, CSV, EPUB, e-mail, "
    "markdown, text, HTML) or a .zip of them.",
    "text": "Text typed here (markdown).",
    "folder": "Every file a directory on the server holds (a mounted share), in the types uploads "
    "take, reStructuredText and notebooks too; files deleted there are removed here. The operator "
    "lists the directories allowed in KB_FOLDER_ROOTS.",
    "git": "The documentation files of a git repository's branch (Markdown, reStructuredText, "
    "notebooks, text, HTML, PDF...): each run fetches what changed since the commit it last "
    "indexed, moves renamed files and removes deleted ones.",
}
LOCATION_LABELS = {
    "url": "Page URL",
    "sitemap": "Sitemap URL",
    "crawl": "Start URL",
    "llms": "llms.txt URL",
    "folder": "Directory",
    "git": "Repository URL",
}
# the model's help is for every kind at once ("URL for web kinds; empty for files and text")
LOCATION_HELP = {
    "url": "The page's http(s) address, e.g. https://docs.example.com/guide/install.html.",
    "sitemap": "The address of the sitemap.xml (or sitemap index), e.g. "
    "https://docs.example.com/sitemap.xml.",
    "crawl": "The page the crawl starts from, e.g. https://docs.example.com/; links are followed "
    "on its host (and the allowed domains below).",
    "llms": "The address of the llms.txt file, e.g. https://docs.example.com/llms.txt.",
    "folder": "The directory's absolute path on the server, e.g. /srv/shares/handbook; it must lie "
    "under one of the operator's KB_FOLDER_ROOTS. Symbolic links in it are not followed.",
    "git": "The repository's https address, e.g. https://github.com/psf/requests.git (ssh:// "
    "addresses and local paths only where the operator allows them with KB_GIT_ALLOW_LOCAL).",
}
REFRESH_HELP = {
    "web": "Fetch it again this often, e.g. 1 00:00:00 for daily or 06:00:00 for every six hours "
    "(empty: only "
    "when you choose Ingest now). Pages that did not change cost a fetch and no extraction.",
    "file": "Uploaded files change only when you upload again, and saving an upload ingests them: "
    "leave empty. (Set, the same files are read again this often, and nothing changes.)",
    "text": "The text changes only when you edit it here, and saving an edit ingests it: leave "
    "empty.",
    "folder": "Look at the folder again this often, e.g. 01:00:00 for hourly. Files whose size and "
    "time did not change are not even opened.",
    "git": "Fetch the branch again this often, e.g. 01:00:00 for hourly. A run with no new commit "
    "costs one fetch and no parse.",
}
OPTION_HELP = {
    "max_depth": "How many links away from the start page the crawl goes (0: the start page only).",
    "max_pages": "At most this many pages are taken per run.",
    "allowed_domains": "Other hosts the crawl may follow links to, one per line (the start page's "
    "host always is).",
    "use_llms_txt": "Look for /llms.txt at the site's root first and take the pages it lists, "
    "when it lists any.",
    "respect_robots": "Skip what the site's robots.txt disallows.",
    "include": "Path patterns, one per line, such as /docs/* (* is any run of characters): only "
    "matching pages are taken. Empty: every page.",
    "exclude": "Path patterns, one per line, such as /genindex*: matching pages are left out.",
    "keep_removed": "Keep documents that disappear from the source (otherwise they are removed "
    "with their chunks).",
    "branch": "The branch to index, e.g. main (empty: the repository's default branch).",
    "token": "For a private repository: NAME, where the operator set the token in the server's "
    "environment as KB_GIT_TOKEN_NAME (the token itself is never stored here).",
    "web_url": "Where the forge shows a file at a commit, with {commit}, {path} and {line}, e.g. "
    "https://github.com/psf/requests/blob/{commit}/{path}#L{line}: citations then open the file at "
    "its line; empty: they open the document view.",
}
REPOSITORY_OPTION_HELP = {  # globs over paths inside the folder or repository, not URL paths
    "include": "File path patterns, one per line, such as docs/* or *.md (* is any run of "
    "characters, / "
    "included): only matching files are taken. Empty: every file of a type that is read.",
    "exclude": "File path patterns, one per line, such as */_build/* or CHANGELOG.md: matching "
    "files are left out.",
}
OPTION_DEFAULTS = DEFAULTS  # what a source without the option gets
OPTION_ORDER = (
    "branch",
    "max_depth",
    "max_pages",
    "allowed_domains",
    "include",
    "exclude",
    "use_llms_txt",
    "respect_robots",
    "token",
    "web_url",
    "keep_removed",
)
COMMON_FIELDS = ("enabled", "priority", "refresh_interval")


def option_names(kind: str) -> tuple[str, ...]:
    return tuple(name for name in OPTION_ORDER if kind in SOURCE_OPTIONS[name][0])


def content_fields(kind: str) -> tuple[str, ...]:
    """The fields that say what a source of `kind` holds."""
    if kind in URL_KINDS + REPOSITORY_KINDS:
        return ("location",)
    return ("files",) if kind == "file" else ("text",)


def option_help(name: str, kind: str) -> str:
    if kind in REPOSITORY_KINDS and name in REPOSITORY_OPTION_HELP:
        return REPOSITORY_OPTION_HELP[name]
    return OPTION_HELP[name]


def _option_field(name: str, kind: str) -> forms.Field:
    _, typ, low, high = SOURCE_OPTIONS[name]
    default = OPTION_DEFAULTS.get(name)
    label = {"web_url": "Web URL of a file"}.get(name, name.replace("_", " ").capitalize())
    help_text = option_help(name, kind)
    if typ is int:
        return forms.IntegerField(
            required=False,
            min_value=low,
            max_value=high,
            label=label,
            help_text=f"{help_text} From {low} to {high}; empty: {default}.",
            widget=forms.NumberInput(attrs={"placeholder": str(default)}),
        )
    if typ is bool:
        return forms.BooleanField(required=False, label=label, help_text=help_text)
    if typ is str:
        return forms.CharField(
            required=False,
            label=label,
            help_text=help_text,
            max_length=TEXT_OPTION_MAX_CHARS,
            widget=forms.TextInput(attrs={"size": 80}),
        )
    return forms.CharField(
        required=False,
        label=label,
        help_text=help_text,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
    )


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, (list, tuple)):
            return [single(d, initial) for d in data if d]
        return [single(data, initial)] if data else []


class SourceForm(forms.ModelForm):
    """The fields every kind shares; `source_form(kind)` adds that kind's."""

    kind: str = ""

    class Meta:
        model = models.Source
        fields = ["namespace", "name", "location", "text", *COMMON_FIELDS]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk is None:
            self.instance.kind = self.kind
        options = self.instance.options or {}
        for name in option_names(self.kind):
            typ = SOURCE_OPTIONS[name][
                1
            ]  # an unset number or list shows empty: the default applies
            value = options.get(name, OPTION_DEFAULTS.get(name) if typ is bool else None)
            if typ is list:
                value = "\n".join(value or ())
            self.initial.setdefault(name, value)
        if "location" in self.fields:
            self.fields["location"].required = True
            self.fields["location"].label = LOCATION_LABELS[self.kind]
            self.fields["location"].help_text = LOCATION_HELP[self.kind]
        if "refresh_interval" in self.fields:
            self.fields["refresh_interval"].help_text = REFRESH_HELP.get(
                self.kind, REFRESH_HELP["web"]
            )
        if "text" in self.fields:
            self.fields["text"].required = True

    def _post_clean(self):
        super()._post_clean()  # the model's checks first: a malformed URL is told as such
        if "location" in self.fields and not self.has_error("location"):
            if self.kind in REPOSITORY_KINDS:
                self._check_repository(self.instance.location)
            else:
                self._check_fetchable(self.instance.location)

    def _check_repository(self, location: str) -> None:
        """A folder outside KB_FOLDER_ROOTS, or a repository address the guard refuses, is the
        form's error with the operator's setting it would need."""
        try:
            ingest_service.check_location(self.kind, location)
        except FetchBlocked:
            self._check_fetchable(location)  # the web's wording, with the allow-list entry
        except KBError as exc:
            self.add_error("location", ValidationError(f"{exc.code}: {exc.message}", code=exc.code))

    def _check_fetchable(self, location: str) -> None:
        try:
            ingest_service.check_fetchable(location)
        except FetchBlocked as exc:
            details = exc.details or {}
            if (
                "rule" not in details
            ):  # not a refusal of the address: the guard's message says it all
                self.add_error(
                    "location", ValidationError(f"{exc.code}: {exc.message}", code="fetch_blocked")
                )
                return
            entry = details.get("allow_entry", "")
            advice = (
                f" To ingest it, add {entry!r} to KB_FETCH_ALLOWED_PRIVATE (comma-separated) "
                "where the server and the worker read their settings, and restart them."
                if entry
                else ""
            )
            self.add_error(
                "location",
                ValidationError(
                    f"{exc.code}: Refusing to "
                    f"fetch {details['url']!r}: {details['host']!r} {details['rule']}.{advice}",
                    code="fetch_blocked",
                ),
            )
        except KBError as exc:  # a malformed allow-list is the operator's to fix: say so here too
            self.add_error("location", ValidationError(f"{exc.code}: {exc.message}", code=exc.code))

    def clean(self):
        cleaned = super().clean()
        options = dict(self.instance.options or {})
        for name in option_names(self.kind):
            value = cleaned.get(name)
            if SOURCE_OPTIONS[name][1] is str:
                value = (value or "").strip() or None
            if SOURCE_OPTIONS[name][1] is list:
                value = [
                    line.strip() for line in (value or "").splitlines() if line.strip()
                ] or None
                if name in ("include", "exclude") and (
                    hints := [glob_hint(v) for v in value or () if regex_like(v)]
                ):
                    # the field's error, not the model's about "options", and stored as it was
                    self.add_error(
                        name,
                        ValidationError(
                            f"These are {GLOBS}, not regular expressions: {'; '.join(hints)}.",
                            code="invalid_options",
                        ),
                    )
                    continue
            if value is None or (value == OPTION_DEFAULTS.get(name) and name not in options):
                options.pop(name, None)  # the default, left unstated so it follows the product's
            else:
                options[name] = value
        self.options_changed = options != (self.instance.options or {})
        self.instance.options = options  # validated with the model (`validate_source_options`)
        self.upload = None
        if cleaned.get(
            "files"
        ):  # read and checked before anything is saved: a refused file is the form's error
            try:
                self.upload = read_upload([(sent_file_name(f), f) for f in cleaned["files"]])
            except KBError as exc:
                self.add_error(
                    "files", ValidationError(f"{exc.code}: {exc.message}", code=exc.code)
                )
        return cleaned

    @property
    def config_changed(self) -> bool:
        """Whether what the source ingests changed (new, another address or text, other options)."""
        changed = set(self.changed_data) | (
            {"options"} if getattr(self, "options_changed", False) else set()
        )
        return self.instance.pk is None or ingest_service.ingests_otherwise(changed)


def source_form(kind: str) -> type[SourceForm]:
    """The form of a source of `kind`."""
    if kind not in SOURCE_KINDS:
        raise ValueError(f"unknown source kind {kind!r}")
    fields = {name: _option_field(name, kind) for name in option_names(kind)}
    if kind == "file":
        fields["files"] = MultipleFileField(
            required=False,
            label="Add files",
            allow_empty_file=True,  # skipped with its code by read_upload
            help_text="One or more files, or a .zip of them; each becomes a document. Saving "
            "ingests them.",
        )
    meta = type(
        "Meta",
        (SourceForm.Meta,),
        {
            "fields": [
                "namespace",
                "name",
                *[f for f in content_fields(kind) if f != "files"],
                *COMMON_FIELDS,
                "audience_groups",
            ]
        },
    )
    return type(f"{kind.title()}SourceForm", (SourceForm,), {"kind": kind, "Meta": meta, **fields})
