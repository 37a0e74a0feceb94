# Sourced by scripts/run and scripts/test: makes sure Debian's Tesseract OCR and the language
# data of KB_OCR_LANGUAGES (default eng) are installed, so scanned PDFs and images are read
# (docs/ingesting.md "Scans (OCR)"). Without them scans stay INGEST_NO_TEXT_LAYER, never a crash.
KB_OCR_PACKAGES="tesseract-ocr"
for code in $(echo "${KB_OCR_LANGUAGES:-eng}" | tr ',+' '  '); do
    KB_OCR_PACKAGES="$KB_OCR_PACKAGES tesseract-ocr-$(echo "$code" | tr '_A-Z' '-a-z')"
done
source "$(dirname "${BASH_SOURCE[0]}")/debian.sh"
debian_install "Tesseract OCR" $KB_OCR_PACKAGES \
    || echo "==> Tesseract could not be installed: scans will be refused as INGEST_NO_TEXT_LAYER" >&2
