# Sourced by the scripts that need Debian packages (ocr.sh, asciidoctor.sh, ldap.sh, browser.sh).
# debian_install WHAT PACKAGE...: installs the packages that are not installed yet, through sudo
# when not root, saying "installing Debian's WHAT". Fails (non-zero) when apt-get does: each
# caller says what the product then lacks.
debian_install() {
    local what="$1"
    shift
    if dpkg -s "$@" >/dev/null 2>&1; then return 0; fi
    echo "==> installing Debian's $what: $*"
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >/dev/null && $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
