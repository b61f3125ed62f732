"""Schemathesis hooks for run.py: what only Orchard or Apple can mint, so that valid requests are valid for real.

The document says what a well-formed request looks like; some values are well formed and still refused because no
schema can say what makes them good: a session token that Orchard issued, a web-flow `state` that Orchard issued
(and the `__Host-orchard_web_state` cookie that goes with it), a notification that Apple signed, an identity token and code
that Apple issued. So, for the positive test cases only (data the schema accepts), these hooks put real ones in:

- operations with a session (`/v1/session`, `/v1/sessions`, `/v1/session/token`, `/v1/account`, `/v1/account/events`): a fresh user signs in for each test case and the case is
  sent with `Authorization: Bearer TOKEN` (a case may sign out or delete the account, so none is reused);
- `POST /v1/auth/apple/callback`: a live state (and cookie) from `GET /v1/auth/apple/authorize`; every other case
  that is a sign-in (no `error`) also gets an identity token and code the emulator issued for that state's nonce;
- `DELETE /v1/sessions/{id}`: the id of that fresh user's session;
- `POST /v1/apple/notifications`: a notification the emulator signed (for a subject nobody has);
- `POST /v1/auth/apple`: every other case gets a real identity token, code and nonce (the rest stays generated);
  the other half keeps its generated strings, which Orchard must refuse with 401.

Negative cases (data the schema refuses) are sent as generated. run.py sets SCHEMATHESIS_HOOKS to this file and
tells it where the servers are through ORCHARD_SCHEMATHESIS_ORCHARD_URL and ORCHARD_SCHEMATHESIS_APPLE_URL.
"""

import http.client
import itertools
import json
import os
import secrets
import urllib.parse

import schemathesis

ORCHARD = os.environ["ORCHARD_SCHEMATHESIS_ORCHARD_URL"]
APPLE = os.environ["ORCHARD_SCHEMATHESIS_APPLE_URL"]
APP_CLIENT_ID = os.environ["ORCHARD_SCHEMATHESIS_APP_CLIENT_ID"]
WEB_CLIENT_ID = os.environ["ORCHARD_SCHEMATHESIS_WEB_CLIENT_ID"]
CALLBACK = "/v1/auth/apple/callback"

_sign_ins = itertools.count()
_callbacks = itertools.count()


def _request(base, method, path, body=None, headers=None):
    """One request, no redirects followed: (status, headers, body bytes)."""
    url = urllib.parse.urlsplit(base)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=15)
    try:
        headers = dict(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        elif method == "POST":
            data = b""
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


def _json(base, method, path, body=None, expect=(200,)):
    status, _, payload = _request(base, method, path, body)
    if status not in expect:
        raise RuntimeError(f"set-up request {method} {base}{path} answered {status}: {payload[:300]!r}")
    return json.loads(payload)


def _apple_grant(nonce, client_id, redirect_uri=None):
    """An identity token and authorization code from the emulator, for a new user."""
    body = {"nonce": nonce, "client_id": client_id}
    if redirect_uri:
        body["redirect_uri"] = redirect_uri
    return _json(APPLE, "POST", "/_emulator/authorize", body)


def _native_credentials():
    nonce = _json(ORCHARD, "POST", "/v1/auth/apple/nonce", expect=(201,))["nonce"]
    grant = _apple_grant(nonce, APP_CLIENT_ID)
    return {"identity_token": grant["identity_token"], "authorization_code": grant["authorization_code"],
            "nonce": nonce}


def _web_state():
    """A fresh state from GET /v1/auth/apple/authorize: (state, nonce, cookies it set)."""
    status, headers, payload = _request(ORCHARD, "GET", "/v1/auth/apple/authorize")
    if status != 302:
        raise RuntimeError(f"set-up request GET /v1/auth/apple/authorize answered {status}: {payload[:300]!r}")
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(headers["Location"]).query)
    cookies = {}
    for line in headers.get_all("Set-Cookie") or []:
        name, _, rest = line.partition("=")
        cookies[name.strip()] = rest.split(";", 1)[0]
    return query["state"][0], query["nonce"][0], cookies


@schemathesis.auth(refresh_interval=None).apply_to(
    path=["/v1/session", "/v1/account", "/v1/sessions", "/v1/sessions/{id}", "/v1/session/token", "/v1/account/events"]
)
class FreshSession:
    """A session of a user who signed in just now."""

    def get(self, case, ctx):
        credentials = _native_credentials()
        return _json(ORCHARD, "POST", "/v1/auth/apple", credentials)["session"]["token"]

    def set(self, case, data, ctx):
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}


def _user_content_schema(case):
    """The callback's `user` contentSchema, as the document states it."""
    try:
        body = case.operation.definition.raw["requestBody"]["content"]["application/x-www-form-urlencoded"]
        return body["schema"]["properties"]["user"]["contentSchema"]
    except (KeyError, TypeError, AttributeError):
        return None


def _is_apple_user_json(text, schema):
    """Whether `text` is JSON that the document's contentSchema accepts (schemathesis does not generate from it)."""
    import jsonschema_rs  # a dependency of schemathesis

    try:
        value = json.loads(text)
    except ValueError:
        return False
    return schema is None or jsonschema_rs.validator_for(schema).is_valid(value)


def _callback(case):
    if not isinstance(case.body, dict):
        return
    state, nonce, cookies = _web_state()
    body = dict(case.body)
    body["state"] = state
    user = body.get("user")
    if isinstance(user, str) and user and not _is_apple_user_json(user, _user_content_schema(case)):
        del body["user"]  # optional; a generated string is rarely Apple's JSON
    if not body.get("error") and next(_callbacks) % 2 == 0:
        grant = _apple_grant(nonce, WEB_CLIENT_ID, ORCHARD + CALLBACK)
        body["code"] = grant["authorization_code"]
        body["id_token"] = grant["identity_token"]
    case.body = body
    if cookies:
        case.cookies = {**(case.cookies or {}), **cookies}


def _notification(case):
    if not isinstance(case.body, dict):
        return
    signed = _json(APPLE, "POST", "/_emulator/notifications",
                   {"type": "email-disabled", "sub": "000000." + secrets.token_hex(16) + ".0000"})
    case.body = {**case.body, "payload": signed["payload"]}


def _sign_in(case):
    if not isinstance(case.body, dict) or next(_sign_ins) % 2:
        return
    body = {**case.body, **_native_credentials()}
    if "client_id" in body:
        body["client_id"] = APP_CLIENT_ID
    case.body = body


def _own_session(case):
    """The id of the session the case authenticates with (its fresh user has only that one)."""
    authorization = (case.headers or {}).get("Authorization")
    if not authorization:
        return
    status, _, payload = _request(ORCHARD, "GET", "/v1/sessions", headers={"Authorization": authorization})
    if status != 200:
        raise RuntimeError(f"set-up request GET /v1/sessions answered {status}: {payload[:300]!r}")
    case.path_parameters = {**(case.path_parameters or {}), "id": json.loads(payload)["sessions"][0]["id"]}


SUBSTITUTIONS = {
    ("POST", CALLBACK): _callback,
    ("POST", "/v1/apple/notifications"): _notification,
    ("POST", "/v1/auth/apple"): _sign_in,
    ("DELETE", "/v1/sessions/{id}"): _own_session,
}


@schemathesis.hook
def before_call(context, case, kwargs):
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return
    substitute = SUBSTITUTIONS.get((case.method.upper(), case.operation.path))
    if substitute is not None:
        substitute(case)
