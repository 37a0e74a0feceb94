# Sourced by scripts/test: makes sure Debian's Chromium and ChromeDriver are installed for the
# end-to-end browser test. Nothing is downloaded by Selenium or Playwright: the test drives
# /usr/bin/chromium through /usr/bin/chromedriver.
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    echo "==> installing Debian's chromium and chromium-driver for the browser test"
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq >/dev/null
    $SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-dejavu-core >/dev/null
fi
