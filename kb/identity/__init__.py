"""Single sign-on (docs/identity.md): OpenID Connect (`oidc`) and LDAP or Active Directory
(`ldap`) sign people in; `accounts` makes their account at the first sign-in and keeps their
namespace memberships in line with the group rules curators write (`rules`, pure); `middleware`
reads a live session's groups again when due; `signins` keeps the sign-in log."""
