from django.urls import path

from kb.identity import oidc

urlpatterns = [
    path("login/", oidc.start, name="oidc-login"),
    path("callback/", oidc.callback, name="oidc-callback"),
]
