# Sourced by scripts/run and scripts/test: makes sure Debian's Asciidoctor (MIT; Ruby) is
# installed, so AsciiDoc files of folder and git sources are read (docs/ingesting.md "Git
# repositories"). Without it those files fail alone with INGEST_CONVERTER_MISSING, never a crash.
if ! command -v asciidoctor >/dev/null 2>&1 || ! dpkg -s asciidoctor >/dev/null 2>&1; then
    echo "==> installing Debian's asciidoctor for AsciiDoc files"
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq >/dev/null
    $SUDO apt-get install -y -qq --no-install-recommends asciidoctor >/dev/null \
        || echo "==> asciidoctor could not be installed: AsciiDoc files will fail as INGEST_CONVERTER_MISSING" >&2
fi
