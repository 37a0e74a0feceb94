"""django-q2 entry points for capabilities. They take primary keys and are idempotent."""

from capabilities.backends import index_capabilities
from kb.models import Provider


def index_provider(provider_id: int) -> str:
    """Embed the capabilities of a provider whose index is behind its current revision."""
    provider = Provider.objects.filter(pk=provider_id).first()
    if provider is None:
        return f"provider {provider_id}: gone"
    return f"provider {provider.slug}: {index_capabilities(provider)} capabilities indexed"
