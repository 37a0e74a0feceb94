"""The curator's console for eval suites and their runs."""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.forms.fields import InvalidJSONInput
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.views.decorators.http import require_POST

from evaluation.cases import answer_case_targets, make_answer_case
from evaluation.errors import EvalFileError
from evaluation.runner import run_recorded
from evaluation.suites import MAX_CASES_PER_REQUEST, check_own_namespace, parse_suite
from kb import jsonbody, models
from kb.admin_access import NamespaceScoped, ScopedInline
from kb.auth import principal_for
from kb.datafiles import read_data
from kb.errors import BadRequest, Forbidden, KBError


class DefinitionField(forms.JSONField):
    """The definition as typed, read as the API reads a body (`kb.jsonbody`): a lone surrogate
    or deep nesting is a form error, where Django's field would fail on it, or fail to show the
    form again (UTF-8 cannot encode a lone surrogate), with a 500."""

    def to_python(self, value):
        if isinstance(value, str) and value.strip():
            try:
                return jsonbody.parse(value, what="The definition")
            except BadRequest as exc:
                raise forms.ValidationError(exc.message, code="invalid") from exc
        return super().to_python(value)

    def bound_data(self, data, initial):
        if isinstance(data, str) and not self.disabled:
            try:
                return jsonbody.parse(data)
            except BadRequest:
                return InvalidJSONInput(data)  # shown again as typed
        return super().bound_data(data, initial)


class EvalSuiteForm(forms.ModelForm):
    definition = DefinitionField()
    upload = forms.FileField(
        required=False, help_text="A JSON or YAML eval file; replaces the definition."
    )

    class Meta:
        model = models.EvalSuite
        fields = ["name", "namespace", "definition", "upload"]

    def clean(self):
        data = super().clean()
        upload = data.get("upload")
        try:
            if upload:
                text = upload.read().decode("utf-8", errors="replace")
                data["definition"] = read_data(text, upload.name)
            namespace = data.get("namespace")
            parse_suite(data.get("definition"), namespace=namespace.slug if namespace else None)
            if namespace is not None:
                check_own_namespace(data["definition"], namespace.slug)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from exc
        except EvalFileError as exc:
            raise forms.ValidationError(exc.message) from exc
        return data

    def save(self, commit=True):
        self.instance.definition = self.cleaned_data["definition"]
        return super().save(commit)


class AnswerCaseForm(forms.Form):
    """A logged answer made into an answer case: which suite, and what the answer must do."""

    suite = forms.ChoiceField(help_text="A suite of the answer's namespaces that you may change.")
    expect = forms.ChoiceField(
        widget=forms.RadioSelect,
        initial="cite",
        choices=[
            (
                "cite",
                "must cite a document (a sentence the citation checker finds supported cites it)",
            ),
            ("abstain", "must abstain (say the knowledge base does not cover the question)"),
        ],
    )
    document = forms.ChoiceField(
        required=False, help_text="One of the sources the answer was given…"
    )
    ref = forms.CharField(
        required=False,
        max_length=2000,
        label="or a document's ref",
        help_text="…or any document of the suite's namespace, by its ref (a file key or page URL).",
    )

    def __init__(
        self, *args, targets: list[tuple[str, str]], documents: list[tuple[str, str]], **kwargs
    ):
        super().__init__(*args, **kwargs)
        self.fields["suite"].choices = targets
        self.fields["document"].choices = [("", "—")] + documents

    def clean(self):
        data = super().clean()
        if data.get("expect") == "cite" and not (
            data.get("ref", "").strip() or data.get("document")
        ):
            raise forms.ValidationError(
                "Pick the document the answer must cite, or ask it to abstain."
            )
        return data


class EvalRunInline(ScopedInline, admin.TabularInline):
    model = models.EvalRun
    fields = ["run_link", "passed", "failed", "total", "regressed", "created_at"]
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False

    @admin.display(description="run")
    def run_link(self, obj):
        return format_html(
            '<a href="{}">#{}</a>', reverse("admin:kb_evalrun_change", args=[obj.pk]), obj.pk
        )

    @admin.display(description="regressed")
    def regressed(self, obj):
        return ", ".join(obj.regressions()) or "—"


@admin.register(models.EvalSuite)
class EvalSuiteAdmin(NamespaceScoped):
    """A suite searches its own namespace only, and runs with the curator's rights."""

    form = EvalSuiteForm
    list_display = ["name", "namespace", "case_count", "last_result", "created_at"]
    list_filter = ["namespace"]
    inlines = [EvalRunInline]
    actions = ["run_now"]

    @admin.display(description="cases")
    def case_count(self, obj):
        return len(obj.definition.get("cases", []))

    @admin.display(description="last run")
    def last_result(self, obj):
        run = obj.runs.first()
        return f"{run.passed}/{run.total} passed" if run else "—"

    change_form_template = "admin/kb/evalsuite/change_form.html"  # its Run now button

    @admin.action(description="Run now")
    def run_now(self, request, queryset):
        for suite in queryset:
            self._run(request, suite)

    def get_urls(self):
        return [
            path(
                "<int:suite_id>/run/",
                self.admin_site.admin_view(require_POST(self.run_view)),
                name="kb_evalsuite_run",
            ),
            path(
                "from-answer/<int:answer_id>/",
                self.admin_site.admin_view(self.from_answer_view),
                name="kb_evalsuite_from_answer",
            ),
        ] + super().get_urls()

    def from_answer_view(self, request, answer_id):
        """A bad answer of the answer log made into an answer case (docs/answers.md): the curator
        picks the suite and what the answer must do. Reading the answer needs reading each of its
        namespaces (404 otherwise); making the case, changing the suite's namespace (403)."""
        answer = self.admin_site.get_model_admin(models.AnswerLog).scoped_object(request, answer_id)
        principal = self._principal(request)
        targets = answer_case_targets(principal, answer)
        if not targets:
            raise PermissionDenied(
                "Making an eval case needs a membership that may change one of the answer's "
                "namespaces."
            )
        refs = dict(
            models.Document.objects.filter(
                pk__in=[s.get("document_id") for s in answer.sources]
            ).values_list("pk", "ref")
        )
        documents = [
            (refs[s["document_id"]], f"[{s['n']}] {s['title']} ({s['namespace']})")
            for s in answer.sources
            if s.get("document_id") in refs
        ]
        form = AnswerCaseForm(request.POST or None, targets=targets, documents=documents)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                suite, case_id = make_answer_case(
                    principal,
                    answer,
                    data["suite"],
                    must_abstain=data["expect"] == "abstain",
                    cite=data["ref"].strip() or data["document"],
                )
            except Forbidden as exc:
                raise PermissionDenied(exc.message) from exc
            except KBError as exc:
                form.add_error(None, exc.message)
            else:
                self.message_user(
                    request,
                    format_html(
                        'Case {} added to <a href="{}">{}</a>; run the suite to see it '
                        "pass or fail.",
                        case_id,
                        reverse("admin:kb_evalsuite_change", args=[suite.pk]),
                        suite.name,
                    ),
                    messages.SUCCESS,
                )
                return HttpResponseRedirect(reverse("admin:kb_evalsuite_change", args=[suite.pk]))
        return TemplateResponse(
            request,
            "admin/kb/evalsuite/from_answer.html",
            {
                **self.admin_site.each_context(request),
                "title": "Make an eval case from an answer",
                "form": form,
                "answer": answer,
                "opts": self.model._meta,
                "answer_url": reverse("admin:kb_answerlog_change", args=[answer.pk]),
            },
        )

    def run_view(self, request, suite_id):
        """ "Run now" on the suite's own page (docs/evals.md), back to it with the result."""
        suite = self.scoped_object(request, suite_id, write=True)
        self._run(request, suite)
        return HttpResponseRedirect(reverse("admin:kb_evalsuite_change", args=[suite.pk]))

    def _run(self, request, suite):
        try:  # the console's rights, counted as the API counts a session
            run = run_recorded(
                suite, principal=principal_for(request, None), max_cases=MAX_CASES_PER_REQUEST
            )
        except KBError as exc:  # too many cases for one request, or the rate limit
            self.message_user(request, f"{suite.name}: {exc.message}", messages.ERROR)
            return
        regressed = run.regressions()
        level = messages.SUCCESS if not run.failed else messages.WARNING
        self.message_user(
            request,
            format_html(
                '{}: <a href="{}">{} of {} passed</a>{}',
                suite.name,
                reverse("admin:kb_evalrun_change", args=[run.pk]),
                run.passed,
                run.total,
                f"; regressed since the previous run: {', '.join(regressed)}" if regressed else "",
            ),
            level,
        )


@admin.register(models.EvalRun)
class EvalRunAdmin(NamespaceScoped):
    list_display = ["__str__", "suite", "passed", "failed", "total", "created_at"]
    list_filter = ["suite"]
    readonly_fields = [
        "suite",
        "namespace",
        "passed",
        "failed",
        "total",
        "duration_ms",
        "created_at",
        "case_table",
    ]
    exclude = ["results"]

    def has_add_permission(self, request):
        return False

    @admin.display(description="cases")
    def case_table(self, obj):
        regressed = set(obj.regressions())
        rows = format_html_join(
            "",
            '<tr class="{}"><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>',
            (
                (
                    "kb-regressed" if c["id"] in regressed else "",
                    c["id"],
                    "REGRESSED" if c["id"] in regressed else ("pass" if c["passed"] else "fail"),
                    c.get("error") or "; ".join(f"{k['name']}: {k['detail']}" for k in c["checks"]),
                    f"{c['duration_ms']:.0f} ms",
                )
                for c in obj.results.get("cases", [])
            ),
        )
        return format_html(
            "<style>.kb-regressed td {{ background: #fde2e1; font-weight: bold; }}</style>"
            "<table><thead><tr><th>case</th><th>result</th><th>checks</th><th>time</th></tr></thead>"
            "<tbody>{}</tbody></table>",
            rows,
        )
