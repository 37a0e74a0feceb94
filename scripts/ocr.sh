# Sourced by scripts/run and scripts/test: makes sure Debian's Tesseract OCR and the language
# data of KB_OCR_LANGUAGES (default eng) are installed, so scanned PDFs and images are read
# (docs/ingesting.md "Scans (OCR)"). Without them scans stay INGEST_NO_TEXT_LAYER, never a crash.
KB_OCR_PACKAGES="tesseract-ocr"
for code in $(echo "${KB_OCR_LANGUAGES:-eng}" | tr ',+' '  '); do
    KB_OCR_PACKAGES="$KB_OCR_PACKAGES tesseract-ocr-$(echo "$code" | tr '_A-Z' '-a-z')"
done
if ! command -v tesseract >/dev/null 2>&1 || ! dpkg -s $KB_OCR_PACKAGES >/dev/null 2>&1; then
    echo "==> installing Debian's Tesseract OCR: $KB_OCR_PACKAGES"
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq >/dev/null
    $SUDO apt-get install -y -qq --no-install-recommends $KB_OCR_PACKAGES >/dev/null \
        || echo "==> Tesseract could not be installed: scans will be refused as INGEST_NO_TEXT_LAYER" >&2
fi
