"""Source and run endpoints. Thin: check access, call the services, shape."""

from ninja import Router, Status

from ingest import sources
from ingest.schemas import RunOut, SourceIn, SourceOut, SourcePatch, UploadOut
from ingest.service import start_ingest
from kb.audiences import document_filter
from kb.auth import require_readable
from kb.errors import NotFound, ValidationFailed
from kb.http import sent_file_name
from kb.models import IngestRun, Source

router = Router(tags=["sources"])


@router.get("/sources", response=list[SourceOut])
def list_sources(request, namespace: str | None = None):
    if namespace:
        request.auth.check(namespace)
    visible = request.auth.readable_namespaces()
    queryset = (
        Source.objects.filter(document_filter(request.auth.audiences), namespace__in=visible)
        .select_related("namespace")
        .order_by("id")
    )
    if namespace:
        queryset = queryset.filter(namespace__slug=namespace)
    return [sources.source_out(s) for s in queryset[:500]]


@router.post("/sources", response={201: SourceOut})
def create_source(request, data: SourceIn):
    return Status(201, sources.saved_out(sources.create_source(request.auth, data.dict())))


@router.patch("/sources/{source_id}", response=SourceOut)
def update_source(request, source_id: int, data: SourcePatch):
    return sources.saved_out(
        sources.update_source(request.auth, source_id, data.dict(exclude_unset=True))
    )


@router.delete("/sources/{source_id}", response={204: None})
def delete_source(request, source_id: int):
    sources.delete_source(request.auth, source_id)
    return Status(204, None)


@router.post("/sources/{source_id}/ingest", response={202: RunOut})
def ingest_source(request, source_id: int):
    source = sources.get_source(request.auth, source_id, write=True)
    return Status(202, sources.run_out(start_ingest(source)))


UPLOAD_SCHEMA = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["files"],
                    "properties": {
                        "files": {"type": "array", "items": {"type": "string", "format": "binary"}}
                    },
                }
            }
        },
    }
}


@router.post("/sources/{source_id}/files", response={201: UploadOut}, openapi_extra=UPLOAD_SCHEMA)
def upload_files(request, source_id: int):
    """Multipart upload of one or more files (field `files`), or .zip archives, into a file
    source; then ingest. The caller is authorised, and a body over the archive limit refused,
    before a byte of the body is read."""
    source = sources.upload_target(request.auth, source_id, request.META.get("CONTENT_LENGTH"))
    files = request.FILES.getlist("files")
    if not files:
        raise ValidationFailed("No files: send them as multipart/form-data in the field 'files'.")
    return Status(
        201,
        sources.upload_to_source(request.auth, source.pk, [(sent_file_name(f), f) for f in files]),
    )


@router.get("/runs/{run_id}", response=RunOut)
def get_run(request, run_id: int):
    run = IngestRun.objects.select_related("source__namespace").filter(pk=run_id).first()
    missing = NotFound(f"No run {run_id}.")
    if run is None:
        raise missing
    require_readable(request.auth, run.source.namespace.slug, missing)
    return sources.run_out(run)
