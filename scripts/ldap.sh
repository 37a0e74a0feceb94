# Sourced by scripts/run and scripts/test before pip runs: python-ldap (LDAP and Active Directory
# sign-in, docs/identity.md) comes from PyPI as source only, so pip builds it against Debian's
# OpenLDAP and SASL headers. With KB_LDAP_SERVERS=1 (scripts/test --all) it also installs
# Debian's slapd and ldap-utils, the directory the sign-in tests start on a loopback port.
KB_LDAP_PACKAGES="gcc libldap2-dev libsasl2-dev"
if [ "${KB_LDAP_SERVERS:-0}" = "1" ]; then KB_LDAP_PACKAGES="$KB_LDAP_PACKAGES slapd ldap-utils"; fi
source "$(dirname "${BASH_SOURCE[0]}")/debian.sh"
# slapd's package starts a system directory of its own where it can; the tests use their own
debian_install "OpenLDAP packages" $KB_LDAP_PACKAGES \
    || echo "==> $KB_LDAP_PACKAGES could not be installed: pip cannot build python-ldap without" \
            "libldap2-dev and libsasl2-dev (install them, then run this again)" >&2
