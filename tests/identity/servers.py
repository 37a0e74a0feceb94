"""Real identity servers for the tests, each started as its own process on a loopback port:
OpenLDAP's slapd (Debian's, installed by scripts/ldap.sh) with a temporary configuration and
database, and the OpenID Connect provider of tests/identity/oidc_provider. Nothing is mocked:
the product talks LDAP and OpenID Connect to them over TCP."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.pgserver import REPO, free_port

SUFFIX = "dc=example,dc=org"
ROOT_DN = f"cn=admin,{SUFFIX}"
PEOPLE = f"ou=people,{SUFFIX}"
GROUPS = f"ou=groups,{SUFFIX}"
SLAPD = "/usr/sbin/slapd"
PROVIDER = REPO / "tests" / "identity" / "oidc_provider" / "provider.py"

SLAPD_CONF = """\
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
pidfile {root}/slapd.pid
modulepath /usr/lib/ldap
moduleload back_mdb
database mdb
maxsize 10485760
suffix "{suffix}"
rootdn "{rootdn}"
rootpw {rootpw}
directory {root}/db
access to attrs=userPassword by self =xw by anonymous auth by * none
access to * by * read
"""


def _wait(condition, seconds: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{what} did not start in {seconds:.0f} "
                f"s:\n{log.read_text(errors='replace')[-3000:]}"
            )
        time.sleep(0.1)


@dataclass
class Slapd:
    """OpenLDAP on 127.0.0.1:<port> with people under ou=people and groupOfNames under ou=groups."""

    root: Path
    port: int = field(default_factory=free_port)
    password: str = "directory-admin-secret"
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"ldap://127.0.0.1:{self.port}"

    def start(self) -> Slapd:
        if not Path(SLAPD).exists():
            pytest.fail("slapd is missing: scripts/test --all installs it (scripts/ldap.sh)")
        (self.root / "db").mkdir(parents=True)
        conf = self.root / "slapd.conf"
        conf.write_text(
            SLAPD_CONF.format(root=self.root, suffix=SUFFIX, rootdn=ROOT_DN, rootpw=self.password)
        )
        log = self.root / "slapd.log"
        # -d 0: stay in the foreground, this test's own child, logging nothing but errors
        self.process = subprocess.Popen(
            [SLAPD, "-f", str(conf), "-h", f"{self.url}/", "-d", "0"],
            stdout=open(log, "wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        _wait(self._answers, 30, "slapd", log)
        self._add(SUFFIX, objectClass=["dcObject", "organization"], dc=["example"], o=["Example"])
        self._add(PEOPLE, objectClass=["organizationalUnit"], ou=["people"])
        self._add(GROUPS, objectClass=["organizationalUnit"], ou=["groups"])
        return self

    def _answers(self) -> bool:
        import ldap

        if self.process.poll() is not None:
            raise AssertionError(f"slapd exited with {self.process.returncode}")
        try:
            self._connection().unbind_s()
            return True
        except ldap.LDAPError:
            return False

    def _connection(self):
        import ldap

        connection = ldap.initialize(self.url)
        connection.set_option(ldap.OPT_NETWORK_TIMEOUT, 5)
        connection.simple_bind_s(ROOT_DN, self.password)
        return connection

    def _add(self, dn: str, **attributes: list[str]) -> None:
        connection = self._connection()
        try:
            connection.add_s(
                dn,
                [
                    (name, [value.encode() for value in values])
                    for name, values in attributes.items()
                ],
            )
        finally:
            connection.unbind_s()

    def person(self, uid: str, password: str, *, given: str = "", mail: str = "") -> str:
        dn = f"uid={uid},{PEOPLE}"
        self._add(
            dn,
            objectClass=["inetOrgPerson"],
            uid=[uid],
            cn=[uid],
            sn=[uid],
            givenName=[given or uid],
            mail=[mail or f"{uid}@example.org"],
            userPassword=[password],
        )
        return dn

    def group(self, cn: str, *members: str) -> str:
        """A groupOfNames with exactly these member DNs (made, or its members replaced)."""
        import ldap

        dn = f"cn={cn},{GROUPS}"
        connection = self._connection()
        try:
            values = [member.encode() for member in members] or [
                ROOT_DN.encode()
            ]  # groupOfNames needs one
            try:
                connection.add_s(
                    dn,
                    [("objectClass", [b"groupOfNames"]), ("cn", [cn.encode()]), ("member", values)],
                )
            except ldap.ALREADY_EXISTS:
                connection.modify_s(dn, [(ldap.MOD_REPLACE, "member", values)])
        finally:
            connection.unbind_s()
        return dn

    def remove(self, dn: str) -> None:
        connection = self._connection()
        try:
            connection.delete_s(dn)
        finally:
            connection.unbind_s()

    def settings(self) -> dict[str, str]:
        """The product's environment for this directory (what an operator sets)."""
        return {
            "KB_LDAP_URL": self.url,
            "KB_LDAP_BIND_DN": ROOT_DN,
            "KB_LDAP_BIND_PASSWORD": self.password,
            "KB_LDAP_USER_BASE": PEOPLE,
            "KB_LDAP_GROUP_BASE": GROUPS,
            "KB_LDAP_GROUP_TYPE": "groupOfNames",
        }

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclass
class OidcProvider:
    """django-oidc-provider on 127.0.0.1:<port> (tests/identity/oidc_provider), with one registered
    confidential client whose redirect URI is the product's callback at `product_base`."""

    root: Path
    product_base: str
    port: int = field(default_factory=free_port)
    client_id: str = "kb-test-client"
    client_secret: str = "provider-client-secret"
    id_token_seconds: int = 600  # how long its ID tokens live (negative: expired when issued)
    process: subprocess.Popen | None = None

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}/openid"

    def _env(self) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("KB_", "DJANGO_", "OP_"))
        }
        env.update(
            OP_DB=str(self.root / "provider.sqlite3"),
            OP_ISSUER=self.issuer,
            PYTHONUNBUFFERED="1",
            OP_IDTOKEN_EXPIRE=str(self.id_token_seconds),
        )
        return env

    def _run(self, *arguments: str) -> None:
        result = subprocess.run(
            [sys.executable, str(PROVIDER), *arguments],
            env=self._env(),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr[-3000:]

    def start(self) -> OidcProvider:
        self.root.mkdir(parents=True, exist_ok=True)
        self._run(
            "init",
            f"{self.product_base}/accounts/oidc/callback/",
            self.client_id,
            self.client_secret,
        )
        log = self.root / "provider.log"
        self.process = subprocess.Popen(
            [sys.executable, str(PROVIDER), "serve", str(self.port)],
            env=self._env(),
            cwd=REPO,
            stdout=open(log, "wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        _wait(self._answers, 60, "the OpenID Connect provider", log)
        return self

    def _answers(self) -> bool:
        import urllib.request

        if self.process.poll() is not None:
            raise AssertionError(f"the provider exited with {self.process.returncode}")
        try:
            with urllib.request.urlopen(
                f"{self.issuer}/.well-known/openid-configuration", timeout=2
            ) as response:
                return response.status == 200
        except OSError:
            return False

    def person(self, username: str, password: str, *groups: str) -> None:
        """Create or change a person at the provider, with exactly these groups."""
        self._run("person", username, password, ",".join(groups))

    def settings(self) -> dict[str, str]:
        return {
            "KB_OIDC_ISSUER": self.issuer,
            "KB_OIDC_CLIENT_ID": self.client_id,
            "KB_OIDC_CLIENT_SECRET": self.client_secret,
            "KB_OIDC_SCOPES": "openid email profile groups",
            "KB_OIDC_NAME": "Example SSO",
        }

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def slapd_available() -> bool:
    return Path(SLAPD).exists() and shutil.which("ldapsearch") is not None
