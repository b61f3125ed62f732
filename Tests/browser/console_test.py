#!/usr/bin/env python3
"""Orchard's operator console in a real browser: headless Chromium driven by Selenium.

Starts `orchard apple-emulator` (Apple's stand-in, which also posts Apple's notifications to Orchard) and
`orchard serve` with the operator listener on (ORCHARD_ADMIN_PORT, reached as http://127.0.0.1:PORT) and webhooks
going to a small receiver this script runs (it answers 503, then 204 once told to), with a retry window of 1 second,
so that a delivery is given up quickly. Two users sign in from the app (the native flow, through the API); an
operator is made with `orchard operators add`. Then, in the console:

  1. the sign-in form; a wrong token is refused (401, the notice); the right one signs in (the cookie's attributes);
  2. a search by email in another letter case finds the user; the account page lists the sessions, a device label
     holding markup shown as text (also at a phone's width, with nothing wider than the screen);
  3. 'End all sessions' goes through a confirmation page (Cancel leaves everything), then ends every session: the
     app's token is refused with 401 signed_out;
  4. 'Delete account', confirmed: the account is gone, Apple's token revoked;
  5. the account.deleted webhook, answered 503, is marked failed after its 1-second window; the receiver is switched
     to 204 and Retry sends it again with the same webhook-id (and a valid signature);
  6. notifications and their delivery counts, the audit log (every action, by the operator, never the search text);
  7. every console page carries a Content-Security-Policy with script-src 'none' and frame-ancestors 'none'; a
     cross-site post is refused; sign-out ends the login (the old cookie no longer works) and shows the form again.

A screenshot of each state is saved under --out (test-output/console/ by default).

Exit status: 0 passed; 1 failed; 77 skipped because no browser (Chromium, chromedriver, selenium) is installed,
which is allowed only outside CI: with CI=true a missing browser is a failure. scripts/ci-setup installs them.

Usage: python3 Tests/browser/console_test.py [--orchard .build/debug/orchard] [--out test-output/console]
                                           [--database-url postgres://…]
"""

import argparse
import base64
import hashlib
import hmac
import http.server
import json
import os
import queue
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from browser_support import find_browser, free_port, make_driver, missing_browser

CLIENT_ID = "com.example.orchard.app"
TEAM_ID = "CONSOLE001"
OPERATOR = "console-ops"
DESKTOP = (1200, 900)
PHONE = (390, 844)
HOSTILE_LABEL = '<b id="injected">Eve</b>'




class WebhookReceiver:
    """The app's other backend: records every delivery and answers with `status` (503 until told otherwise)."""

    def __init__(self):
        self.status = 503
        self.deliveries = []  # dicts: id, timestamp, signature, body, answered
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode()
                with receiver.lock:
                    answered = receiver.status
                    receiver.deliveries.append({
                        "id": self.headers.get("webhook-id"), "timestamp": self.headers.get("webhook-timestamp"),
                        "signature": self.headers.get("webhook-signature"), "body": body, "answered": answered,
                    })
                self.send_response(answered)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/orchard"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, status):
        with self.lock:
            self.status = status

    def received(self):
        with self.lock:
            return list(self.deliveries)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class Servers:
    """The emulator, Orchard and the webhook receiver; the servers' logs go to the output folder."""

    def __init__(self, orchard_bin, out, database_url=None):
        self.orchard_bin = orchard_bin
        self.out = out
        self.database_url = database_url
        self.tmp = tempfile.mkdtemp(prefix="orchard-console-")
        self.processes = []
        self.webhook_secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
        self.receiver = None

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def start(self):
        self.receiver = WebhookReceiver()
        orchard_port = free_port()
        admin_port = free_port()
        while admin_port == orchard_port:
            admin_port = free_port()
        self.orchard = f"http://127.0.0.1:{orchard_port}"
        self.console = f"http://127.0.0.1:{admin_port}"

        key = os.path.join(self.tmp, "client-key.p8")
        emulator_log = open(os.path.join(self.out, "apple-emulator.log"), "w")
        emulator = subprocess.Popen(
            [self.orchard_bin, "apple-emulator", "--host", "127.0.0.1", "--port", "0", "--team-id", TEAM_ID,
             "--key-id", "CONSOLEK01", "--client-ids", CLIENT_ID, "--write-client-key", key,
             "--notify-url", self.orchard + "/v1/apple/notifications"],
            stdout=subprocess.PIPE, stderr=emulator_log, text=True, cwd=self.tmp)
        self.processes.append(emulator)
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in emulator.stdout], daemon=True).start()
        deadline = time.time() + 60
        base = None
        while base is None and time.time() < deadline:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                if emulator.poll() is not None:
                    raise RuntimeError("orchard apple-emulator exited")
                continue
            if line.strip().startswith("APPLE_BASE_URL="):
                base = line.strip().split("=", 1)[1]
        if base is None:
            raise RuntimeError("orchard apple-emulator did not print its URL")
        port = int(base.rsplit(":", 1)[1])
        self.emulator_control = f"http://127.0.0.1:{port}"

        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.tmp,
            "ORCHARD_HOST": "127.0.0.1",
            "ORCHARD_PORT": str(orchard_port),
            "ORCHARD_ADMIN_HOST": "127.0.0.1",
            "ORCHARD_ADMIN_PORT": str(admin_port),
            "ORCHARD_DATABASE_URL": self.database_url or "sqlite:" + os.path.join(self.tmp, "orchard.sqlite"),
            "ORCHARD_VAULT_KEYS": "k1:" + base64.b64encode(secrets.token_bytes(32)).decode(),
            "ORCHARD_LOG_LEVEL": "info",
            "ORCHARD_WEBHOOK_URLS": self.receiver.url,
            "ORCHARD_WEBHOOK_SECRET": self.webhook_secret,
            "ORCHARD_WEBHOOK_RETRY_WINDOW": "1",
            "APPLE_TEAM_ID": TEAM_ID,
            "APPLE_KEY_ID": "CONSOLEK01",
            "APPLE_PRIVATE_KEY_FILE": key,
            "APPLE_CLIENT_IDS": CLIENT_ID,
            "APPLE_BASE_URL": f"http://localhost:{port}",
        }
        serve_log = open(os.path.join(self.out, "orchard-serve.log"), "w")
        self.processes.append(subprocess.Popen([self.orchard_bin, "serve"], env=self.env, stdout=serve_log,
                                               stderr=subprocess.STDOUT, cwd=self.tmp))
        deadline = time.time() + 60
        ready = set()
        while len(ready) < 2:
            if self.processes[-1].poll() is not None:
                raise RuntimeError("orchard serve exited; see orchard-serve.log")
            if time.time() > deadline:
                raise RuntimeError(f"orchard serve did not become ready (ready: {sorted(ready)})")
            for name, url in (("api", self.orchard + "/health/ready"), ("console", self.console + "/admin")):
                if name in ready:
                    continue
                try:
                    if urllib.request.urlopen(url, timeout=2).status == 200:
                        ready.add(name)
                except (urllib.error.URLError, ConnectionError, OSError):
                    pass
            time.sleep(0.2)
        self.operator_token = self.add_operator(OPERATOR)
        return self

    def __exit__(self, *exc):
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        if self.receiver is not None:
            self.receiver.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def add_operator(self, name):
        """`orchard operators add NAME`, in serve's environment: the token, alone on standard output."""
        result = subprocess.run([self.orchard_bin, "operators", "add", name], env=self.env, cwd=self.tmp,
                                capture_output=True, text=True, timeout=120)
        with open(os.path.join(self.out, "operators-add.log"), "w") as log:
            log.write(result.stderr)
        if result.returncode != 0:
            raise RuntimeError(f"orchard operators add exited {result.returncode}: {result.stderr.strip()}")
        lines = result.stdout.splitlines()
        if len(lines) != 1 or not lines[0].strip():
            raise RuntimeError(f"orchard operators add printed {len(lines)} lines on stdout, not the token alone")
        return lines[0].strip()

    # The emulator's control API and the app's API.

    def control(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.emulator_control + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read().decode()
            return json.loads(text) if text else None

    def native_sign_in(self, user, device, name=None):
        """The app's sign-in (nonce, Apple's answer from the emulator, POST /v1/auth/apple): (sub, account id, token).

        `user` is the emulator's user input: {"sub"} for a known user, or a new user's email and name."""
        def post(url, body):
            request = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else b"",
                                             method="POST", headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read())
        nonce = post(self.orchard + "/v1/auth/apple/nonce", None)["nonce"]
        grant = self.control("POST", "/_emulator/authorize", {"nonce": nonce, "client_id": CLIENT_ID, "user": user})
        body = {"identity_token": grant["identity_token"], "authorization_code": grant["authorization_code"],
                "nonce": nonce, "device": device}
        if name is not None:
            body["user"] = {"name": {"first_name": name[0], "last_name": name[1]}}
        signed_in = post(self.orchard + "/v1/auth/apple", body)
        return grant["sub"], signed_in["account"]["id"], signed_in["session"]["token"]

    def session_status(self, token):
        """GET /v1/session with the app's token, outside the browser: (status, body)."""
        request = urllib.request.Request(self.orchard + "/v1/session",
                                         headers={"Cookie": "__Host-orchard_session=" + token})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    def console_fetch(self, method, path, cookie=None, form=None, headers=None):
        """A console request outside the browser, redirects not followed: (status, headers, body text)."""
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        request = urllib.request.Request(self.console + path, data=data, method=method, headers=dict(headers or {}))
        if form is not None:
            request.add_header("Content-Type", "application/x-www-form-urlencoded")
        if cookie is not None:
            request.add_header("Cookie", "__Host-orchard_admin=" + cookie)
        opener = urllib.request.build_opener(NoRedirect)
        try:
            with opener.open(request, timeout=10) as response:
                return response.status, response.headers, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.headers, error.read().decode()


class Check:
    """Steps and assertions, printed as they go."""

    def __init__(self, driver, servers, out):
        self.d = driver
        self.s = servers
        self.out = out
        self.shots = []

    def step(self, text):
        print(f"  - {text}", flush=True)

    def expect(self, condition, message):
        if not condition:
            raise AssertionError(message)

    def wait(self, predicate, what, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if predicate():
                    return
            except Exception:  # the page may be between loads
                pass
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what} (at {self.d.current_url})")

    def find(self, selector):
        from selenium.webdriver.common.by import By
        return self.d.find_element(By.CSS_SELECTOR, selector)

    def find_all(self, selector):
        from selenium.webdriver.common.by import By
        return self.d.find_elements(By.CSS_SELECTOR, selector)

    def exists(self, selector):
        return len(self.find_all(selector)) > 0

    def heading(self):
        return self.find("h1").text

    def notice(self):
        found = self.find_all("p#notice")
        return found[0].text if found else None

    def open(self, path):
        self.d.get(self.s.console + path)
        self.wait(lambda: self.exists("h1"), f"the console page {path}")

    def click_and_load(self, selector, what):
        """Clicks a link or a form's button and waits for the next page."""
        old = self.find("html")
        self.find(selector).click()
        from selenium.common.exceptions import StaleElementReferenceException

        def replaced():
            try:
                old.tag_name
                return False
            except StaleElementReferenceException:
                return self.d.execute_script("return document.readyState") == "complete"
        self.wait(replaced, what)
        self.refused_as_cross_site(what)
        self.wait(lambda: self.exists("h1"), what)

    def refused_as_cross_site(self, what):
        """Fails at once, saying why, when the console refused the browser's own form post as cross-site."""
        text = self.find("body").text
        if '"csrf_rejected"' in text:
            raise AssertionError(
                f"{what}: the console refused its own form's post from Chromium as cross-site (403 csrf_rejected). "
                "Its pages set Referrer-Policy: no-referrer (header and <meta name=referrer>), so Chromium sends "
                "'Origin: null' on a same-origin form post, which OperatorMiddleware.isSameOrigin does not accept.")

    def table(self, table_id):
        """The rows of table#ID as lists of cell texts (none when the table is replaced by its 'empty' hint)."""
        return self.d.execute_script(
            "var t = document.getElementById(arguments[0]); if (!t) return null;"
            "return Array.from(t.tBodies[0].rows).map(function (r) {"
            " return Array.from(r.cells).map(function (c) { return c.textContent.trim(); }); });", table_id)

    def shot(self, name, description):
        path = os.path.join(self.out, name + ".png")
        self.d.save_screenshot(path)
        self.shots.append((path, description))
        self.step(f"screenshot {path}: {description}")

    def no_console_errors(self, expected=()):
        """No error in the browser's console (a Content-Security-Policy violation would be one), but the answers
        this test asked for: `expected` holds (URL, status) pairs; the favicon the console does not have is one."""
        allowed = [(self.s.console + "/favicon.ico", 404)] + list(expected)

        def wanted(message):
            return any(message.startswith(f"{url} - Failed to load resource: the server responded with a status of {status} ")
                       for url, status in allowed)
        severe = [entry["message"] for entry in self.d.get_log("browser")
                  if entry["level"] == "SEVERE" and not wanted(entry["message"])]
        self.expect(not severe, f"the browser console reported errors: {severe}")

    def no_horizontal_overflow(self, what):
        sizes = self.d.execute_script(
            "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        self.expect(sizes[0] <= sizes[1], f"{what} is wider than the screen: {sizes[0]} px in {sizes[1]} px")

    def admin_cookie(self):
        return self.d.get_cookie("__Host-orchard_admin")


def check_headers(c, status, headers, what):
    """An HTML console page's security headers."""
    policy = headers.get("Content-Security-Policy") or ""
    directives = [part.strip() for part in policy.split(";")]
    c.expect("script-src 'none'" in directives, f"{what} ({status}): its Content-Security-Policy is {policy!r}")
    c.expect("frame-ancestors 'none'" in directives, f"{what} ({status}): its Content-Security-Policy is {policy!r}")
    c.expect((headers.get("Content-Type") or "").startswith("text/html"), f"{what}: Content-Type {headers.get('Content-Type')}")
    c.expect(headers.get("Cache-Control") == "no-store", f"{what}: Cache-Control {headers.get('Cache-Control')}")
    c.expect(headers.get("X-Frame-Options") == "DENY", f"{what}: X-Frame-Options {headers.get('X-Frame-Options')}")


def flow_sign_in(c):
    print("Console 1: the sign-in form; a wrong token is refused; the right one signs in", flush=True)
    c.d.set_window_size(*DESKTOP)
    c.open("/admin")
    c.expect(c.exists("input#token") and c.exists("button#sign-in"), "no sign-in form on /admin")
    c.expect(not c.exists("nav"), "the sign-in form shows the console's navigation")
    c.shot("console-sign-in", "/admin signed out: the operator token form")

    status, headers, body = c.s.console_fetch("POST", "/admin/login", form={"token": "orc_not-a-token"})
    c.expect(status == 401, f"a wrong token answered {status}")
    check_headers(c, status, headers, "the refused login")
    c.find("input#token").send_keys("orc_wrong-" + secrets.token_hex(8))
    c.click_and_load("button#sign-in", "the answer to a wrong token")
    c.expect(c.notice() == "That is not an operator's token.", f"a wrong token's notice says {c.notice()!r}")
    c.expect(c.exists("input#token"), "the sign-in form is not shown again after a wrong token")
    c.expect(c.admin_cookie() is None, "a wrong token set the console cookie")
    c.step("a wrong token: 401 and the notice 'That is not an operator's token.', no cookie")

    c.find("input#token").send_keys(c.s.operator_token)
    c.click_and_load("button#sign-in", "the console after signing in")
    c.expect(c.d.current_url == c.s.console + "/admin", f"signing in landed on {c.d.current_url}")
    c.expect(c.exists("input#q") and c.exists("button#search"), "no search form after signing in")
    cookie = c.admin_cookie()
    c.expect(cookie is not None, "no __Host-orchard_admin cookie after signing in")
    c.expect(cookie["httpOnly"] and cookie["secure"] and cookie.get("sameSite") == "Strict" and cookie["path"] == "/",
             f"the console cookie's attributes are {cookie}")
    c.expect("__Host-orchard_admin" not in c.d.execute_script("return document.cookie"), "the console cookie is readable from script")
    sign_out = c.find("button#sign-out").text
    c.expect(sign_out == f"Sign out {OPERATOR}", f"the sign-out button says {sign_out!r}")
    c.step(f"signed in as {OPERATOR}: HttpOnly, Secure, SameSite=Strict cookie; the search form")
    return cookie["value"]


def flow_search_and_account(c, ada, grace):
    print("Console 2: find Ada by her email in another case; her account, sessions with a hostile label as text",
          flush=True)
    query = "ada.lovelace@EXAMPLE.com"
    c.find("input#q").send_keys(query)
    c.click_and_load("button#search", "the search results")
    rows = c.table("results")
    c.expect(rows is not None and len(rows) == 1, f"the search for {query!r} found {rows}")
    c.expect(rows[0][0] == ada["id"] and rows[0][1] == "Ada.Lovelace@example.com",
             f"the search found {rows[0]}, not Ada ({ada['id']})")
    c.expect(grace["id"] not in c.find("table#results").text, "the search found Grace too")
    c.shot("console-search", f"a search for {query!r} (another letter case) finds Ada's account")

    c.click_and_load(f"table#results a[href='/admin/accounts/{ada['id']}']", "Ada's account page")
    c.expect(c.heading() == "Account", f"the account page's heading is {c.heading()!r}")
    fields = dict(zip([e.text for e in c.find_all("dl#account dt")], [e.text for e in c.find_all("dl#account dd")]))
    c.expect(fields.get("Account id") == ada["id"] and fields.get("Name") == "Ada Lovelace"
             and fields.get("Email") == "Ada.Lovelace@example.com", f"the account shows {fields}")
    sessions = c.table("sessions")
    devices = sorted(row[0] for row in sessions or [])
    c.expect(devices == sorted(["Ada's iPhone", HOSTILE_LABEL]), f"the sessions listed are {sessions}")
    c.expect(not c.exists("#injected") and not c.exists("table#sessions b"),
             "a device label's markup became an element on the account page")
    c.step(f"the sessions table shows 'Ada's iPhone' and {HOSTILE_LABEL!r} as text (no element made)")
    c.expect(c.exists("a#end-sessions") and c.exists("a#delete-account"), "no end-sessions or delete link")
    c.shot("console-account", "Ada's account: fields, the End all sessions and Delete account links, two sessions")

    # A phone: its viewport (the page's <meta name=viewport> applies), then back to the desktop window.
    c.d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                        {"width": PHONE[0], "height": PHONE[1], "deviceScaleFactor": 2, "mobile": True})
    try:
        c.d.refresh()
        c.wait(lambda: c.exists("dl#account"), "the account page at a phone's width")
        width = c.d.execute_script("return window.innerWidth")
        c.expect(width == PHONE[0], f"the phone's viewport is {width} px wide")
        c.no_horizontal_overflow("the account page at a phone's width")
        c.shot("console-account-phone", f"the same account page on a phone ({PHONE[0]}x{PHONE[1]} CSS px)")
    finally:
        c.d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    c.d.refresh()
    c.wait(lambda: c.exists("dl#account"), "the account page at a desktop's width")
    return c.d.current_url


def flow_headers(c, cookie, ada):
    print("Console 3: every console page's security headers; a cross-site post is refused", flush=True)
    pages = [
        ("GET", "/admin", None, 200), ("GET", "/admin/accounts/" + ada["id"], None, 200),
        ("GET", f"/admin/accounts/{ada['id']}/end-sessions", None, 200),
        ("GET", f"/admin/accounts/{ada['id']}/delete", None, 200),
        ("GET", "/admin/accounts/acct_doesnotexist", None, 404), ("GET", "/admin/revocations", None, 200),
        ("GET", "/admin/webhooks", None, 200), ("GET", "/admin/delivery", None, 200),
        ("GET", "/admin/notifications", None, 200), ("GET", "/admin/notifications?before=x", None, None),
        ("GET", "/admin/audit", None, 200), ("POST", "/admin/search", {"q": "ada.lovelace@example.com"}, 200),
        ("POST", "/admin/search", {"q": ""}, 400),
    ]
    for method, path, form, expected in pages:
        # As a browser does: a post carries the page's origin.
        own = {"Origin": c.s.console} if method == "POST" else None
        status, headers, body = c.s.console_fetch(method, path, cookie=cookie, form=form, headers=own)
        if expected is not None:
            c.expect(status == expected, f"{method} {path} answered {status}, not {expected}")
        check_headers(c, status, headers, f"{method} {path}")
        c.expect(body.lstrip().lower().startswith("<!doctype html>"), f"{method} {path} is not a page")
        c.expect("<script" not in body.lower(), f"{method} {path} holds a script element")
    status, headers, _ = c.s.console_fetch("GET", "/admin")
    check_headers(c, status, headers, "GET /admin signed out")
    c.step(f"{len(pages) + 2} console pages (200, 400, 401, 404): script-src 'none', frame-ancestors 'none', "
           "no-store, DENY")

    status, headers, _ = c.s.console_fetch("GET", "/admin/audit")
    c.expect(status == 303 and headers.get("Location") == "/admin", f"a page without a login answered {status}")
    status, _, body = c.s.console_fetch("POST", "/admin/search", cookie=cookie, form={"q": "ada.lovelace@example.com"},
                                        headers={"Origin": "http://evil.example"})
    c.expect(status == 403 and "csrf_rejected" in body, f"a cross-site post answered {status} {body[:200]}")
    # Browsers send Origin with every post: one without it is not the console's own.
    status, _, body = c.s.console_fetch("POST", "/admin/search", cookie=cookie, form={"q": "ada.lovelace@example.com"})
    c.expect(status == 403 and "csrf_rejected" in body, f"a post without Origin answered {status} {body[:200]}")
    c.step("without a login a page redirects to the sign-in form; a post from another origin is 403 csrf_rejected")


def flow_end_sessions(c, ada, account_url):
    print("Console 4: End all sessions, through its confirmation page; the app's token is refused", flush=True)
    c.click_and_load("a#end-sessions", "the confirmation page")
    c.expect(c.heading() == "End all sessions?", f"the confirmation's heading is {c.heading()!r}")
    c.expect(ada["id"] in c.find("main").text, "the confirmation does not name the account")
    c.expect(c.exists("button#confirm") and c.exists("a#cancel"), "no Confirm or Cancel on the confirmation")
    c.shot("console-confirm-end-sessions", "the confirmation before ending every session of Ada's account")
    c.click_and_load("a#cancel", "the account page after Cancel")
    c.expect(c.d.current_url == account_url and len(c.table("sessions") or []) == 2, "Cancel did not leave the sessions")
    c.expect(c.s.session_status(ada["token"])[0] == 200, "Cancel ended a session")

    c.click_and_load("a#end-sessions", "the confirmation page")
    c.click_and_load("button#confirm", "the account page after ending the sessions")
    c.expect(c.d.current_url == account_url + "?done=ended", f"ending the sessions landed on {c.d.current_url}")
    c.expect((c.notice() or "").startswith("Every session of this account has ended"), f"the notice says {c.notice()!r}")
    c.expect(c.table("sessions") is None and c.exists("#sessions-empty"), "sessions are still listed")
    for token in (ada["token"], ada["other_token"]):
        status, body = c.s.session_status(token)
        c.expect(status == 401 and body.get("reason") == "signed_out", f"Ada's session answers {status} {body}")
    c.step("both of Ada's sessions answer 401 with reason signed_out")
    events = c.table("events") or []
    c.expect(sum(1 for row in events if row[1] == "signed_out") == 2, f"the history lists {events}")
    c.expect(any(row[3] == HOSTILE_LABEL for row in events), f"the hostile label is not in the history: {events}")
    c.expect(not c.exists("#injected") and not c.exists("table#events b"), "a device label became markup in the history")


def flow_delete(c, ada, grace):
    print("Console 5: Delete account, confirmed", flush=True)
    c.click_and_load("a#delete-account", "the deletion's confirmation")
    c.expect(c.heading() == "Delete this account?", f"the confirmation's heading is {c.heading()!r}")
    c.expect("cannot be undone" in c.find("main").text, "the confirmation does not warn")
    c.click_and_load("button#confirm", "the deleted page")
    c.expect(c.heading() == "Account deleted", f"the deleted page's heading is {c.heading()!r}")
    deleted = c.find("p#deleted").text
    c.expect(ada["id"] in deleted and "Apple accepted the revocation" in deleted, f"the deleted page says {deleted!r}")
    c.shot("console-deleted", "after confirming the deletion: the account is gone and Apple's token revoked")
    c.open("/admin/accounts/" + ada["id"])
    c.expect(c.heading() == "Not found" and c.notice() == "There is no account with that id.",
             f"the deleted account's page shows {c.heading()!r} / {c.notice()!r}")
    c.expect(c.s.session_status(grace["token"])[0] == 200, "Grace's session ended with Ada's account")
    revocations = c.s.control("GET", "/_emulator/revocations")["revocations"]
    c.expect(len(revocations) >= 1, "Apple never saw the revocation")
    c.step("the account's page is now 'Not found'; Grace is still signed in; Apple saw the revocation")


def verify_signature(c, delivery):
    secret = base64.b64decode(c.s.webhook_secret[len("whsec_"):])
    signed = f"{delivery['id']}.{delivery['timestamp']}.{delivery['body']}".encode()
    expected = "v1," + base64.b64encode(hmac.new(secret, signed, hashlib.sha256).digest()).decode()
    c.expect(delivery["signature"] == expected, f"the webhook's signature {delivery['signature']!r} is not {expected!r}")


def flow_webhooks(c, ada):
    print("Console 6: the account.deleted webhook is given up after 1 s of 503s; Retry delivers it (same webhook-id)",
          flush=True)
    receiver = c.s.receiver

    def ada_row():
        for row in c.table("failed-webhooks") or []:
            if row[0] == "account.deleted" and row[1] == ada["id"]:
                return row
        return None

    def attempts():
        return [d for d in receiver.received()
                if json.loads(d["body"]).get("type") == "account.deleted" and json.loads(d["body"]).get("account_id") == ada["id"]]

    # Reloaded once a second (each load is an audit entry) after the receiver has seen the first attempt.
    c.wait(lambda: attempts(), "the account.deleted webhook's first attempt at the receiver", timeout=30)
    deadline = time.time() + 90
    c.open("/admin/webhooks")
    while ada_row() is None:
        if time.time() > deadline:
            raise AssertionError(f"the account.deleted webhook was not marked failed within 90 s: "
                                 f"{c.table('failed-webhooks')}, receiver got {receiver.received()}")
        time.sleep(1)
        c.open("/admin/webhooks")
    row = ada_row()
    c.expect(row[2] == receiver.url and row[4] == "503", f"the failed delivery's row is {row}")
    c.expect(not c.exists("#notice"), "a notice before any retry")
    attempts = attempts()
    c.expect(attempts and all(d["answered"] == 503 for d in attempts), f"the receiver got {attempts}")
    webhook_id = attempts[0]["id"]
    c.expect(webhook_id and all(d["id"] == webhook_id for d in attempts), f"the attempts' ids differ: {attempts}")
    for delivery in attempts:
        verify_signature(c, delivery)
    c.expect(row[3] == str(len(attempts)), f"the row counts {row[3]} attempts; the receiver got {len(attempts)}")
    c.step(f"given up after {len(attempts)} attempt(s) answered 503 (webhook-id {webhook_id}, signatures valid)")
    c.shot("console-webhooks", "Webhooks: the account.deleted delivery given up after 503s, with its Retry button")

    others = [other[:2] for other in c.table("failed-webhooks") if other[:2] != row[:2]]
    receiver.answer(204)
    before = len(receiver.received())
    action = c.d.execute_script(
        "var id = arguments[0]; return Array.from(document.querySelectorAll('#failed-webhooks tbody tr')).filter("
        "function (r) { return r.cells[0].textContent === 'account.deleted' && r.cells[1].textContent === id; })"
        ".map(function (r) { return r.querySelector('form').getAttribute('action'); });", ada["id"])
    c.expect(len(action) == 1 and action[0].startswith("/admin/webhooks/whd_") and action[0].endswith("/retry"),
             f"the account.deleted row's Retry forms post to {action}")
    c.click_and_load(f"form[action='{action[0]}'] button.retry", "the webhooks page after Retry")
    c.expect(c.d.current_url == c.s.console + "/admin/webhooks?done=retried", f"Retry landed on {c.d.current_url}")
    c.expect(c.notice() == "The delivery is being tried again.", f"the notice says {c.notice()!r}")

    def delivered():
        return [d for d in receiver.received()[before:] if d["id"] == webhook_id and d["answered"] == 204]
    c.wait(lambda: delivered(), "the retried delivery at the receiver", timeout=30)
    retried = delivered()[0]
    c.expect(json.loads(retried["body"]) == json.loads(attempts[0]["body"]), "the retried body differs")
    verify_signature(c, retried)
    c.step(f"Retry: the receiver got webhook-id {webhook_id} again, answered 204, signed afresh")
    c.open("/admin/webhooks")
    c.expect(ada_row() is None, f"the delivered webhook is still listed as failed: {c.table('failed-webhooks')}")
    still = [row[:2] for row in c.table("failed-webhooks") or []]
    c.expect(all(other in still for other in others), f"Retry took other failed deliveries: {others} → {still}")
    c.step(f"the delivered row left the failed list; the other failed deliveries stay: {others}")


def flow_notifications_delivery(c, grace):
    print("Console 7: Apple's notifications and their delivery counts", flush=True)
    c.open("/admin/notifications")
    rows = c.table("notifications") or []
    c.expect(any(row[1] == CLIENT_ID and row[2] == "email-disabled" and row[4] == grace["id"] for row in rows),
             f"the notifications listed are {rows}")
    c.shot("console-notifications", "Notifications: Apple's email-disabled for Grace, processed")
    c.open("/admin/delivery")
    rows = c.table("delivery") or []
    c.expect(len(rows) == 1 and rows[0][0] == TEAM_ID and rows[0][1] == CLIENT_ID, f"the delivery table is {rows}")
    c.expect(rows[0][3] == "1" and rows[0][4] == "1" and rows[0][2] != "—", f"the delivery counts are {rows[0]}")
    c.shot("console-delivery", "Notification delivery: one received in 24 h for the configured client id")


def flow_audit(c, ada):
    print("Console 8: the audit log names the operator and every action, never the search text", flush=True)
    c.open("/admin/audit")
    c.shot("console-audit", f"the audit log: {OPERATOR}'s login, search, account views, end sessions, delete, retry")
    rows = []
    pages = 0
    while True:  # every page of it, newest first, following 'Older'
        pages += 1
        rows += c.table("audit") or []
        source = c.d.page_source.lower()
        c.expect("ada.lovelace@" not in source and "example.com" not in source,
                 "the audit log shows what was searched for")
        older = [a for a in c.find_all("main a") if a.text == "Older"]
        if not older or pages > 20:
            break
        c.click_and_load("main a[href^='/admin/audit?before=']", "the audit log's older page")
    c.expect(rows and all(row[1] == OPERATOR for row in rows), f"the audit rows' operators are {[r[1] for r in rows]}")
    actions = {(row[2], row[3], row[4], row[5]) for row in rows}
    for action in [("POST", "/admin/login", "—", "303"), ("POST", "/admin/search", "—", "200"),
                   ("GET", "/admin/accounts/{id}", ada["id"], "200"),
                   ("POST", "/admin/accounts/{id}/end-sessions", ada["id"], "303"),
                   ("POST", "/admin/accounts/{id}/delete", ada["id"], "200"),
                   ("POST", "/admin/webhooks/{id}/retry", "—", "303"),
                   ("POST", "/admin/search", "—", "403")]:
        c.expect(action in actions, f"no audit entry {action}; the log holds {sorted(actions)}")
    c.step(f"{len(rows)} audit entries on {pages} page(s), all by {OPERATOR}; no search text anywhere")


def flow_sign_out(c, cookie):
    print("Console 9: sign out; the form again, and the old cookie no longer works", flush=True)
    c.click_and_load("button#sign-out", "the page after signing out")
    c.expect(c.d.current_url == c.s.console + "/admin", f"signing out landed on {c.d.current_url}")
    c.expect(c.exists("input#token") and c.exists("button#sign-in") and not c.exists("input#q"),
             "/admin does not show the sign-in form after signing out")
    c.expect(c.admin_cookie() is None, "the console cookie survived signing out")
    c.open("/admin/audit")
    c.expect(c.d.current_url == c.s.console + "/admin" and c.exists("input#token"), "a page opened after signing out")
    status, _, body = c.s.console_fetch("GET", "/admin", cookie=cookie)
    c.expect(status == 200 and 'id="token"' in body and 'id="q"' not in body, "the old cookie still signs in")
    status, _, _ = c.s.console_fetch("GET", "/admin/audit", cookie=cookie)
    c.expect(status == 303, f"the old cookie opened the audit log ({status})")
    c.step("signed out: the sign-in form; the old cookie value is refused by the server too")


def run(c):
    s = c.s
    sub, ada_id, ada_token = s.native_sign_in(
        {"email": "Ada.Lovelace@example.com", "first_name": "Ada", "last_name": "Lovelace",
         "is_private_email": False, "email_verified": True}, "Ada's iPhone", name=("Ada", "Lovelace"))
    _, _, ada_other = s.native_sign_in({"sub": sub}, HOSTILE_LABEL)
    grace_sub, grace_id, grace_token = s.native_sign_in(
        {"email": "grace.hopper@example.com", "first_name": "Grace", "last_name": "Hopper", "is_private_email": False},
        "Grace's iPad", name=("Grace", "Hopper"))
    ada = {"id": ada_id, "sub": sub, "token": ada_token, "other_token": ada_other}
    grace = {"id": grace_id, "sub": grace_sub, "token": grace_token}
    print(f"Signed in through the API: Ada {ada_id} (two sessions), Grace {grace_id}", flush=True)
    sent = s.control("POST", "/_emulator/notifications", {"type": "email-disabled", "sub": grace_sub, "send": True})
    if sent.get("status") != 200:
        raise AssertionError(f"Apple's notification to Orchard answered {sent}")

    cookie = flow_sign_in(c)
    account_url = flow_search_and_account(c, ada, grace)
    flow_headers(c, cookie, ada)
    flow_end_sessions(c, ada, account_url)
    flow_delete(c, ada, grace)
    flow_webhooks(c, ada)
    flow_notifications_delivery(c, grace)
    flow_audit(c, ada)
    flow_sign_out(c, cookie)
    c.no_console_errors(expected=[(s.console + "/admin/login", 401), (s.console + "/admin/accounts/" + ada_id, 404)])



def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orchard", default=".build/debug/orchard", help="the orchard executable")
    parser.add_argument("--out", default="test-output/console", help="where screenshots and server logs go")
    parser.add_argument("--database-url", help="ORCHARD_DATABASE_URL for orchard serve (default: SQLite in a temp dir)")
    args = parser.parse_args()

    binary, missing = find_browser()
    if missing:
        return missing_browser("the console browser suite", missing)

    os.makedirs(args.out, exist_ok=True)
    orchard_bin = os.path.abspath(args.orchard)
    try:
        servers = Servers(orchard_bin, args.out, args.database_url).__enter__()
    except Exception as error:
        print(f"FAIL: could not start the servers: {type(error).__name__}: {error}", flush=True)
        return 1
    try:
        print(f"Orchard at {servers.orchard}, its console at {servers.console}, webhooks to {servers.receiver.url}",
              flush=True)
        driver = make_driver(binary, window=DESKTOP)
        check = Check(driver, servers, args.out)
        try:
            run(check)
        except Exception as error:
            failure = os.path.join(args.out, "failure.png")
            try:
                driver.save_screenshot(failure)
                print(f"FAILED at {driver.current_url}; screenshot {failure}", flush=True)
            except Exception:
                pass
            print(f"FAIL: {type(error).__name__}: {error}", flush=True)
            return 1
        finally:
            driver.quit()
    finally:
        servers.__exit__(None, None, None)
    print(f"PASS: {len(check.shots)} screenshots in {args.out}", flush=True)
    for path, description in check.shots:
        print(f"  {path}: {description}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
