"""API tokens are issued only by a login (accounts/tokens.py), never by hand: knox's own admin
would let staff create tokens for anyone, without expiry or an audit event."""

from django.contrib import admin
from knox.models import AuthToken

if admin.site.is_registered(AuthToken):
    admin.site.unregister(AuthToken)
