#!/usr/bin/env python3
"""Orchard's hosted account page in a real browser: headless Chromium driven by Selenium.

Starts `orchard apple-emulator` (reached as http://localhost:PORT, Apple's stand-in) and `orchard serve` (reached as
http://127.0.0.1:PORT) with the web flow on, so that Apple's page and the app are different sites, as they are for
real. Then, through the account page:

  1. a user signs in with Apple, sees the account, deletes it, and lands signed out with local storage empty;
  2. a second user signs in; their grant is revoked at the emulator; Orchard's refresh validation (every 2 s here)
     notices, and the next page load shows the signed-out state with the reason;
  3. a third user signs out; then a sign-in cancelled at Apple comes back with the cancellation shown;
  4. a fourth user deletes their account while Apple's /auth/revoke fails: the outcome is 'pending';
  5. login CSRF: an attacker's kept form post (from a second browser profile, scripts off so Apple's page does not
     post it) replayed from the victim's browser is refused with state_invalid and signs nobody in; the attacker's
     own browser can still finish the flow.

A screenshot of each state is saved under --out (test-output/browser/ by default).

Exit status: 0 passed; 1 failed; 77 skipped because no browser (Chromium, chromedriver, selenium) is installed,
which is allowed only outside CI: with CI=true a missing browser is a failure. scripts/ci-setup installs them.

Usage: python3 Tests/browser/account_page_test.py [--orchard .build/debug/orchard] [--out test-output/browser]
                                                [--database-url postgres://…]
"""

import argparse
import base64
import html
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
import urllib.request

from browser_support import find_browser, free_port, make_driver, missing_browser

WEB_CLIENT_ID = "com.example.orchard.web"
CLIENT_IDS = "com.example.orchard.app," + WEB_CLIENT_ID




class Servers:
    """The emulator and Orchard, as separate processes; their logs go to the output folder."""

    def __init__(self, orchard_bin, out, database_url=None):
        self.orchard_bin = orchard_bin
        self.out = out
        self.database_url = database_url
        self.tmp = tempfile.mkdtemp(prefix="orchard-browser-")
        self.processes = []

    def __enter__(self):
        key = os.path.join(self.tmp, "client-key.p8")
        emulator_log = open(os.path.join(self.out, "apple-emulator.log"), "w")
        emulator = subprocess.Popen(
            [self.orchard_bin, "apple-emulator", "--host", "127.0.0.1", "--port", "0", "--team-id", "BROWSER001",
             "--key-id", "BROWSERK01", "--client-ids", CLIENT_IDS, "--write-client-key", key],
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
        self.apple = f"http://localhost:{port}"  # another site than Orchard's 127.0.0.1

        orchard_port = free_port()
        self.orchard = f"http://127.0.0.1:{orchard_port}"
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.tmp,
            "ORCHARD_HOST": "127.0.0.1",
            "ORCHARD_PORT": str(orchard_port),
            "ORCHARD_DATABASE_URL": self.database_url or "sqlite:" + os.path.join(self.tmp, "orchard.sqlite"),
            "ORCHARD_VAULT_KEYS": "k1:" + base64.b64encode(secrets.token_bytes(32)).decode(),
            "ORCHARD_LOG_LEVEL": "info",
            "ORCHARD_REFRESH_VALIDATION_INTERVAL": "2",
            "APPLE_TEAM_ID": "BROWSER001",
            "APPLE_KEY_ID": "BROWSERK01",
            "APPLE_PRIVATE_KEY_FILE": key,
            "APPLE_CLIENT_IDS": CLIENT_IDS,
            "APPLE_WEB_CLIENT_ID": WEB_CLIENT_ID,
            "APPLE_BASE_URL": self.apple,
            "APPLE_REDIRECT_URI": self.orchard + "/v1/auth/apple/callback",
        }
        serve_log = open(os.path.join(self.out, "orchard-serve.log"), "w")
        self.processes.append(subprocess.Popen([self.orchard_bin, "serve"], env=env, stdout=serve_log,
                                               stderr=subprocess.STDOUT, cwd=self.tmp))
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.processes[-1].poll() is not None:
                raise RuntimeError("orchard serve exited; see orchard-serve.log")
            try:
                if urllib.request.urlopen(self.orchard + "/health/ready", timeout=2).status == 200:
                    return self
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.2)
        raise RuntimeError("orchard serve did not become ready")

    def __exit__(self, *exc):
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # The emulator's control API (the same operations as its Swift API).

    def control(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.emulator_control + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read().decode()
            return json.loads(text) if text else None

    def set_web_user(self, email, first, last):
        """Who consents at Apple's page from now on; returns their subject."""
        return self.control("POST", "/_emulator/web-user",
                            {"email": email, "first_name": first, "last_name": last})["sub"]

    def native_sign_in(self, sub, device):
        """A sign-in from the app (POST /v1/auth/apple) for the user `sub` on `device`; returns the session token."""
        def post(url, body):
            request = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else b"",
                                             method="POST", headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read())
        nonce = post(self.orchard + "/v1/auth/apple/nonce", None)["nonce"]
        grant = self.control("POST", "/_emulator/authorize",
                             {"nonce": nonce, "client_id": "com.example.orchard.app", "user": {"sub": sub}})
        body = {"identity_token": grant["identity_token"], "authorization_code": grant["authorization_code"],
                "nonce": nonce, "device": device}
        return post(self.orchard + "/v1/auth/apple", body)["session"]["token"]

    def session_status(self, token):
        """GET /v1/session with the cookie, outside the browser: (status, body)."""
        request = urllib.request.Request(self.orchard + "/v1/session", headers={"Cookie": "__Host-orchard_session=" + token})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")


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

    def by_id(self, element_id):
        from selenium.webdriver.common.by import By
        return self.d.find_element(By.ID, element_id)

    def state(self):
        return self.by_id("page").get_attribute("data-state")

    def storage(self):
        return self.d.execute_script(
            "return {local: Object.assign({}, window.localStorage), session: Object.assign({}, window.sessionStorage)}")

    def shot(self, name, description):
        path = os.path.join(self.out, name + ".png")
        self.d.save_screenshot(path)
        self.shots.append((path, description))
        self.step(f"screenshot {path}: {description}")

    def no_console_errors(self):
        severe = [entry["message"] for entry in self.d.get_log("browser") if entry["level"] == "SEVERE"]
        self.expect(not severe, f"the browser console reported errors: {severe}")

    def open_account_page(self):
        self.d.get(self.s.orchard + "/account")
        self.wait(lambda: self.state() in ("signed-in", "signed-out"), "the account page")

    def sign_in(self, name):
        """From the signed-out page: the button, Apple's page (which consents and posts back), the account."""
        self.expect(self.state() == "signed-out", "the page should be signed out before signing in")
        button = self.by_id("sign-in")
        self.expect(button.text == "Sign in with Apple", f"the button says {button.text!r}")
        button.click()
        self.wait(lambda: self.d.current_url.startswith(self.s.orchard + "/account") and self.state() == "signed-in",
                  "the signed-in account page")
        self.expect(self.by_id("account-name").text == name, f"the page shows {self.by_id('account-name').text!r}")
        cookie = self.d.get_cookie("__Host-orchard_session")
        self.expect(cookie is not None, "no __Host-orchard_session cookie after sign-in")
        self.expect(cookie["httpOnly"] and cookie["secure"] and cookie.get("sameSite") == "Lax" and cookie["path"] == "/",
                    f"the cookie's attributes are {cookie}")
        self.expect("__Host-orchard_session" not in self.d.execute_script("return document.cookie"),
                    "the session cookie is readable from script")
        return cookie


def flow_sign_in_see_delete(c):
    print("Flow 1: sign in, see the account, delete it, land signed out with local storage empty", flush=True)
    c.s.set_web_user("ada.lovelace@privaterelay.appleid.com", "Ada", "Lovelace")
    c.open_account_page()
    c.expect(c.state() == "signed-out", "a new browser should see the signed-out page")
    c.expect(c.storage() == {"local": {}, "session": {}}, "storage should start empty")
    c.shot("01-signed-out", "a fresh browser on /account: the signed-out state with the 'Sign in with Apple' button")

    c.sign_in("Ada Lovelace")
    c.expect("ada.lovelace@privaterelay.appleid.com" in c.by_id("account-email").text, "the email is not shown")
    c.expect(c.by_id("email-forwarding").get_attribute("data-forwarding") == "enabled", "email forwarding is not on")
    c.expect(c.by_id("email-forwarding").text.startswith("On"), "email forwarding does not say On")
    stored = c.storage()
    c.expect(stored["local"].get("orchard.account_id", "").startswith("acct_"), f"local storage holds {stored}")
    c.d.execute_script("window.localStorage.setItem('app.draft', 'unsent message'); "
                       "window.sessionStorage.setItem('app.tab', 'settings');")
    c.shot("02-signed-in", "after Sign in with Apple: name, email (Hide My Email), forwarding on, Sign out and Delete")

    c.by_id("delete-account").click()
    c.wait(lambda: c.d.execute_script("return document.getElementById('confirm-delete').open"), "the confirmation")
    text = c.by_id("confirm-delete-text").text
    c.expect("revokes this app's Sign in with Apple authorization at Apple" in text, f"the confirmation says {text!r}")
    c.shot("03-confirm-delete", "the deletion confirmation, explaining that Apple's authorization is revoked too")
    c.by_id("cancel-delete-button").click()
    c.wait(lambda: not c.d.execute_script("return document.getElementById('confirm-delete').open"), "the dialog to close")
    c.expect(c.state() == "signed-in", "cancelling must leave the account alone")

    c.by_id("delete-account").click()
    c.wait(lambda: c.d.execute_script("return document.getElementById('confirm-delete').open"), "the confirmation")
    c.by_id("confirm-delete-button").click()
    c.wait(lambda: c.state() == "signed-out", "the signed-out state after deletion")
    c.expect(c.by_id("page").get_attribute("data-deletion") == "revoked", "Apple's revocation is not 'revoked'")
    notice = c.by_id("notice").text
    c.expect("deleted" in notice and "Apple has revoked" in notice, f"the outcome says {notice!r}")
    c.expect(c.storage() == {"local": {}, "session": {}}, f"storage after deletion: {c.storage()}")
    c.expect(c.d.get_cookie("__Host-orchard_session") is None, "the session cookie survived the deletion")
    c.shot("04-deleted-signed-out", "after confirming: the outcome 'revoked', signed out, storage and cookie gone")

    c.open_account_page()
    c.expect(c.state() == "signed-out", "a reload after deletion should stay signed out")
    c.expect(c.storage() == {"local": {}, "session": {}}, "storage came back after a reload")
    revokes = [call for call in c.s.control("GET", "/_emulator/calls")["calls"] if call["endpoint"] == "revoke"]
    c.expect(any(call.get("status") == 200 for call in revokes), "Apple never saw the revocation")
    c.no_console_errors()


def flow_revoked_at_apple(c):
    print("Flow 2: a second user's grant is revoked at Apple; the next page load is signed out with the reason",
          flush=True)
    sub = c.s.set_web_user("grace.hopper@example.com", "Grace", "Hopper")
    c.open_account_page()
    cookie = c.sign_in("Grace Hopper")
    c.expect(c.storage()["local"].get("orchard.account_id", "").startswith("acct_"), "nothing in local storage")
    c.shot("05-second-user-signed-in", "a second user, Grace Hopper (her own address, no relay), signed in")

    revoked = c.s.control("POST", "/_emulator/revoke-grant", {"sub": sub})
    c.step(f"revoked at the emulator as from Apple ID settings: {revoked}")
    deadline = time.time() + 30
    while True:
        status, body = c.s.session_status(cookie["value"])
        if status == 401:
            break
        if time.time() > deadline:
            raise AssertionError("Orchard's refresh validation did not end the session within 30 s")
        time.sleep(0.25)
    c.expect(body.get("code") == "session_revoked" and body.get("reason") == "apple_credential_revoked",
             f"the session ended with {body}")
    c.step("Orchard's refresh validation saw invalid_grant and ended the session (apple_credential_revoked)")

    c.d.refresh()
    c.wait(lambda: c.state() in ("signed-in", "signed-out"), "the reloaded page")
    c.expect(c.state() == "signed-out", "the next page load is still signed in")
    c.expect(c.by_id("page").get_attribute("data-reason") == "apple_credential_revoked", "no reason on the page")
    notice = c.by_id("notice").text
    c.expect("revoked at Apple" in notice, f"the reason shown is {notice!r}")
    c.expect(c.storage() == {"local": {}, "session": {}}, f"storage after revocation: {c.storage()}")
    c.expect(c.d.get_cookie("__Host-orchard_session") is None, "the revoked session's cookie is still there")
    c.shot("06-revoked-signed-out", "the next page load after Apple revoked the grant: signed out, with the reason")
    c.no_console_errors()


def flow_sign_out_and_cancel(c):
    print("Flow 3: sign out; then a sign-in cancelled at Apple", flush=True)
    c.s.set_web_user("alan.turing@privaterelay.appleid.com", "Alan", "Turing")
    c.open_account_page()
    c.sign_in("Alan Turing")
    c.by_id("sign-out").click()
    c.wait(lambda: c.state() == "signed-out", "the signed-out state after sign-out")
    c.expect("You signed out." in c.by_id("notice").text, "no sign-out message")
    c.expect(c.storage() == {"local": {}, "session": {}}, "storage after sign-out")
    c.expect(c.d.get_cookie("__Host-orchard_session") is None, "the cookie survived sign-out")
    c.shot("07-signed-out", "after 'Sign out': the signed-out state, storage and cookie gone, nothing sent to Apple")

    c.s.control("POST", "/_emulator/failures",
                {"endpoint": "authorize", "apple_error": "user_cancelled_authorize", "count": 1})
    c.by_id("sign-in").click()
    c.wait(lambda: "error=user_cancelled_authorize" in c.d.current_url and c.state() == "signed-out",
           "the return from a cancelled sign-in")
    c.expect("cancelled" in c.by_id("notice").text, f"the notice says {c.by_id('notice').text!r}")
    c.expect(c.d.get_cookie("__Host-orchard_session") is None, "a cancelled sign-in set a cookie")
    c.shot("08-sign-in-cancelled", "back from Apple after the user cancelled: signed out, 'Signing in … was cancelled'")
    c.no_console_errors()


def flow_sessions_on_devices(c):
    print("Flow 6: the sessions on other devices are listed; one is signed out, then all others", flush=True)
    sub = c.s.set_web_user("dorothy.vaughan@example.com", "Dorothy", "Vaughan")
    c.open_account_page()
    c.sign_in("Dorothy Vaughan")
    phone = c.s.native_sign_in(sub, "Dorothy's iPhone")
    hostile = '<img src=x onerror="document.title=1">'
    tablet = c.s.native_sign_in(sub, hostile)
    c.open_account_page()
    rows = c.d.execute_script(
        "return Array.from(document.querySelectorAll('#sessions li')).map(function (li) {"
        " return {device: li.querySelector('.device').textContent, current: li.dataset.current === 'true'}; });")
    c.expect([row["device"] for row in rows] == [hostile, "Dorothy's iPhone", "Chrome on Linux"],
             f"the sessions listed are {rows}")
    c.expect([row["current"] for row in rows] == [False, False, True], f"the current session is not marked: {rows}")
    c.expect(not c.d.execute_script("return document.querySelector('#sessions img')"), "a device label became markup")
    c.expect("This device" in c.d.execute_script("return document.querySelector('#sessions li[data-current]').textContent"),
             "the current session does not say 'This device'")
    c.shot("11-sessions", "three sessions: a hostile label shown as text, Dorothy's iPhone, and this browser")

    phone_row = c.d.execute_script("return document.querySelectorAll('#sessions li')[1]")
    phone_row.find_element("css selector", "button.end-session").click()
    c.wait(lambda: len(c.d.execute_script("return document.querySelectorAll('#sessions li')")) == 2, "the iPhone's row to go")
    status, body = c.s.session_status(phone)
    c.expect(status == 401 and body.get("reason") == "signed_out", f"the iPhone's session answers {status} {body}")
    c.expect(c.s.session_status(tablet)[0] == 200, "the other device was signed out too")

    c.by_id("sign-out-others").click()
    c.wait(lambda: len(c.d.execute_script("return document.querySelectorAll('#sessions li')")) == 1, "the other rows to go")
    c.expect("1 other device is signed out." in c.by_id("notice").text, f"the notice says {c.by_id('notice').text!r}")
    status, body = c.s.session_status(tablet)
    c.expect(status == 401 and body.get("reason") == "signed_out", f"the tablet's session answers {status} {body}")
    c.expect(c.state() == "signed-in" and not c.by_id("sign-out-others").is_displayed(), "this browser's session ended")
    c.shot("12-other-devices-signed-out", "after 'Sign out of all other devices': only this browser is left")
    c.open_account_page()
    c.expect(c.state() == "signed-in", "this browser's session did not survive")
    # Activity: why each device was signed out, in words; a hostile label shown as text here too.
    activity = c.d.execute_script(
        "return Array.from(document.querySelectorAll('#activity li')).map(function (li) {"
        " return {type: li.dataset.eventType, text: li.textContent}; });")
    # The server validates refresh tokens every few seconds here (Flow 2 needs it), so Apple's verdict on Dorothy's may
    # be listed too, at any moment of this flow: it is not what this flow is about.
    devices = [row for row in activity if row["type"] != "apple_validation"]
    types = [row["type"] for row in devices]
    c.expect(types == ["signed_out", "signed_out", "signed_in", "signed_in", "signed_in"], f"the activity listed is {activity}")
    c.expect(all("Signed out on another device" in row["text"] for row in devices[:2]), f"the activity says {activity}")
    c.expect(any(hostile in row["text"] for row in activity), f"the hostile label is not shown as text: {activity}")
    c.expect(not c.d.execute_script("return document.querySelector('#activity img')"), "a device label became markup in Activity")
    where = c.by_id("forwarding-where").text
    c.expect("Sign in with Apple" in where and "Settings" in where, f"where to change email forwarding says {where!r}")
    c.d.execute_script("document.getElementById('activity-heading').scrollIntoView()")
    c.shot("13-activity", "Activity: this browser's and two apps' sign-ins, and both devices signed out from here")
    c.no_console_errors()


def flow_deletion_while_apple_is_down(c):
    print("Flow 4: a deletion while Apple's /auth/revoke fails shows the outcome 'pending'", flush=True)
    c.s.set_web_user("katherine.johnson@privaterelay.appleid.com", "Katherine", "Johnson")
    c.open_account_page()
    c.sign_in("Katherine Johnson")
    c.s.control("POST", "/_emulator/failures", {"endpoint": "revoke", "status": 503, "count": 2})
    c.by_id("delete-account").click()
    c.wait(lambda: c.d.execute_script("return document.getElementById('confirm-delete').open"), "the confirmation")
    c.by_id("confirm-delete-button").click()
    c.wait(lambda: c.state() == "signed-out", "the signed-out state after deletion")
    c.expect(c.by_id("page").get_attribute("data-deletion") == "pending", "Apple's revocation is not 'pending'")
    c.expect("retried automatically" in c.by_id("notice").text, f"the outcome says {c.by_id('notice').text!r}")
    c.expect(c.storage() == {"local": {}, "session": {}}, "storage after deletion")
    c.shot("09-deleted-pending", "a deletion while Apple answers 503: deleted, and the revocation 'pending' (retried)")
    c.no_console_errors()


def flow_login_csrf(c, binary):
    print("Flow 5: login CSRF: an attacker's kept form post, replayed from the victim's browser, signs nobody in",
          flush=True)
    c.s.set_web_user("mallory@example.com", "Mallory", "Attacker")
    # The attacker's own browser profile, with scripts off, so that Apple's page does not post its form by itself.
    attacker = make_driver(binary, javascript=False)
    try:
        attacker.get(c.s.orchard + "/v1/auth/apple/authorize?return_to=/account")
        c.wait(lambda: attacker.current_url.startswith(c.s.apple), "the attacker's browser on Apple's page")
        from selenium.webdriver.common.by import By
        form = attacker.find_element(By.ID, "apple-form")
        fields = {field.get_attribute("name"): field.get_attribute("value")
                  for field in form.find_elements(By.CSS_SELECTOR, "input[type=hidden]")}
        c.expect({"code", "id_token", "state"} <= set(fields), f"Apple's form holds {sorted(fields)}")

        # The attacker's page, opened in the victim's browser (c.d, a profile of its own), posts the kept form.
        page = os.path.join(c.out, "attacker-page.html")
        inputs = "".join(f'<input type="hidden" name="{html.escape(name)}" value="{html.escape(value)}">' for name, value in fields.items())
        with open(page, "w") as handle:
            handle.write(f'<!DOCTYPE html><html><body><form id="f" method="post" action="{html.escape(form.get_attribute("action"))}">'
                         f'{inputs}</form><script>document.getElementById("f").submit();</script></body></html>')
        c.d.get("file://" + page)
        c.wait(lambda: c.d.current_url.startswith(c.s.orchard + "/v1/auth/apple/callback"), "the replayed post's answer")
        body = c.d.find_element(By.TAG_NAME, "body").text
        c.expect("state_invalid" in body, f"the replayed post answered {body!r}")
        c.expect(c.d.get_cookie("__Host-orchard_session") is None, "the victim's browser was signed in by the replayed post")
        c.shot("10-login-csrf-refused", "an attacker's kept form post replayed from the victim's browser: 400 state_invalid")
        c.open_account_page()
        c.expect(c.state() == "signed-out", "the victim's account page shows someone signed in")

        # Refused for its cookie, the state is not used up: the browser that started the flow can still finish it.
        attacker.find_element(By.CSS_SELECTOR, "#apple-form button").click()
        c.wait(lambda: attacker.current_url.startswith(c.s.orchard + "/account"), "the attacker's own sign-in")
        c.expect(attacker.get_cookie("__Host-orchard_session") is not None, "the flow's own browser could not finish it")
        c.step("the flow's own browser completes it: the state was not used up by the refused replay")
    finally:
        attacker.quit()



def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orchard", default=".build/debug/orchard", help="the orchard executable")
    parser.add_argument("--out", default="test-output/browser", help="where screenshots and server logs go")
    parser.add_argument("--database-url", help="ORCHARD_DATABASE_URL for orchard serve (default: SQLite in a temp dir)")
    args = parser.parse_args()

    binary, missing = find_browser()
    if missing:
        return missing_browser("the browser suite", missing)

    os.makedirs(args.out, exist_ok=True)
    orchard_bin = os.path.abspath(args.orchard)
    with Servers(orchard_bin, args.out, args.database_url) as servers:
        print(f"Apple emulator at {servers.apple}, Orchard at {servers.orchard}", flush=True)
        driver = make_driver(binary)
        check = Check(driver, servers, args.out)
        try:
            flow_sign_in_see_delete(check)
            driver.delete_all_cookies()
            flow_revoked_at_apple(check)
            flow_sign_out_and_cancel(check)
            driver.delete_all_cookies()
            flow_sessions_on_devices(check)
            driver.delete_all_cookies()
            flow_deletion_while_apple_is_down(check)
            driver.delete_all_cookies()
            flow_login_csrf(check, binary)
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
    print(f"PASS: {len(check.shots)} screenshots in {args.out}", flush=True)
    for path, description in check.shots:
        print(f"  {path}: {description}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
