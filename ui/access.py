"""Who may reach the chat app (`rag ui`) and the server (`rag serve`): the login and the API key read from
the environment, and the warnings printed when either is missing beyond this machine."""

from __future__ import annotations

import ipaddress
import os

from rag.core.errors import ConfigError


def read_api_key(variable: str, host: str, required: bool) -> str | None:
    """The bearer key the API requires, if set; refusing to start without one where it is `required`."""
    key = os.environ.get(variable, "").strip()
    if not key and required:
        raise ConfigError(
            f"serving on {host}, beyond this machine, needs an API key: set the environment variable {variable} "
            "(ui.api_key_env names it); clients send it as 'Authorization: Bearer KEY'"
        )
    return key or None


def open_page_warning(api_key: str | None, auth: tuple[str, str] | None) -> str | None:
    """A warning when the API needs a key but the page, which answers questions too, has no login."""
    if not api_key or auth:
        return None
    return (
        "WARNING: the API needs a key, but the chat page and its /ask endpoint have NO login: whoever reaches "
        "this server (through a balancer too) can ask there. Set ui.auth_env (or --auth-env) to require one."
    )


def exposure_warning(host: str, share: bool, has_auth: bool) -> str | None:
    """A loud warning when the app is reachable beyond this machine without a login."""
    if has_auth or (not share and is_loopback(host)):
        return None
    reach = "through a public share link" if share else f"on {host}, beyond this machine,"
    return (
        f"WARNING: the chat app is reachable {reach} with NO login: anyone who can reach it can use it.\n"
        "WARNING: set ui.auth_env (or --auth-env) to an environment variable holding 'user:password'."
    )


def read_auth(variable: str | None) -> tuple[str, str] | None:
    """('user', 'password') from the named environment variable; None when no variable is named."""
    if not variable:
        return None
    value = os.environ.get(variable, "")
    user, _, password = value.partition(":")
    if not user or not password:
        state = "is not set" if not value else "is not of the form user:password"
        raise ConfigError(f"ui.auth_env: the environment variable {variable} {state}")
    return user, password


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
