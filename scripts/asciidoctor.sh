# Sourced by scripts/run and scripts/test: makes sure Debian's Asciidoctor (MIT; Ruby) is
# installed, so AsciiDoc files of folder and git sources are read (docs/ingesting.md "Git
# repositories"). Without it those files fail alone with INGEST_CONVERTER_MISSING, never a crash.
source "$(dirname "${BASH_SOURCE[0]}")/debian.sh"
if ! command -v asciidoctor >/dev/null 2>&1; then
    debian_install "asciidoctor for AsciiDoc files" asciidoctor \
        || echo "==> asciidoctor could not be installed: AsciiDoc files will fail as INGEST_CONVERTER_MISSING" >&2
fi
