"""The git repositories the tests serve: `git http-backend` on loopback (the benchmark's own
server)."""

from evaluation.git_http import GIT_ENV, GitHttpServer, WorkRepo

__all__ = ["GIT_ENV", "GitHttpServer", "WorkRepo"]
