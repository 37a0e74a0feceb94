# Sourced by scripts/test: makes sure Debian's Chromium and ChromeDriver are installed for the
# end-to-end browser test. Nothing is downloaded by Selenium or Playwright: the test drives
# /usr/bin/chromium through /usr/bin/chromedriver.
source "$(dirname "${BASH_SOURCE[0]}")/debian.sh"
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    debian_install "chromium and chromium-driver for the browser test" chromium chromium-driver fonts-dejavu-core
fi
