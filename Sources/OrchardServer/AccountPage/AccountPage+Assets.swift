extension AccountPage {
    /// The page's style: system fonts, high contrast, visible focus, no external assets.
    static let stylesheet = """
        :root { color-scheme: light dark; font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, sans-serif; }
        body { margin: 0; padding: 2rem 1rem; line-height: 1.5; }
        main { max-width: 34rem; margin: 0 auto; }
        h1 { font-size: 1.75rem; margin: 0 0 1rem; }
        dl { display: grid; grid-template-columns: max-content 1fr; gap: .5rem 1.25rem; margin: 0 0 1.5rem; }
        dt { font-weight: 600; }
        dd { margin: 0; overflow-wrap: anywhere; }
        .hint { color: GrayText; }
        .actions { display: flex; flex-wrap: wrap; gap: .75rem; margin-top: 1rem; }
        button { font: inherit; padding: .6rem 1.2rem; border-radius: .5rem; border: 1px solid currentColor; cursor: pointer;
                 background: Canvas; color: CanvasText; }
        button:focus-visible { outline: 3px solid #0a66d8; outline-offset: 2px; }
        button:disabled { opacity: .6; cursor: progress; }
        button.danger { background: #b3261e; border-color: #b3261e; color: #fff; }
        button.apple { background: #000; border-color: #000; color: #fff; font-weight: 600; min-width: 14rem; }
        .notice { border-left: 4px solid #0a66d8; padding: .25rem 1rem; margin: 0 0 1.5rem; background: rgba(10, 102, 216, .08); }
        .notice.warning { border-color: #b3261e; background: rgba(179, 38, 30, .08); }
        dialog { max-width: 30rem; border-radius: .75rem; border: 1px solid GrayText; padding: 1.5rem; }
        dialog::backdrop { background: rgba(0, 0, 0, .4); }
        dialog h2 { margin-top: 0; }
        h2 { font-size: 1.25rem; margin: 1.5rem 0 .5rem; }
        #sessions { list-style: none; padding: 0; margin: 0; }
        #sessions li { padding: .5rem 0; border-bottom: 1px solid rgba(128, 128, 128, .3); }
        #sessions .device { font-weight: 600; }
        #sessions button { padding: .2rem .8rem; margin-left: .5rem; }
        """

    /// The page's behaviour: sign-out and deletion through the API with the session cookie, the confirmation, the
    /// outcome, and clearing local and session storage whenever the page is or becomes signed out.
    static let script = """
        (function () {
          "use strict";
          var page = document.getElementById("page");
          var notice = document.getElementById("notice");
          var signedIn = document.getElementById("signed-in");
          var signedOut = document.getElementById("signed-out");

          function clearLocalData() {
            try { window.localStorage.clear(); } catch (e) {}
            try { window.sessionStorage.clear(); } catch (e) {}
          }

          function say(message, link, linkText) {
            notice.textContent = "";
            var paragraph = document.createElement("p");
            paragraph.textContent = message;
            if (link && /^https:\\/\\//.test(link)) {
              paragraph.appendChild(document.createTextNode(" "));
              var anchor = document.createElement("a");
              anchor.href = link;
              anchor.id = "manual-revocation-link";
              anchor.rel = "noopener noreferrer";
              anchor.textContent = linkText || link;
              paragraph.appendChild(anchor);
            }
            notice.appendChild(paragraph);
            notice.hidden = false;
          }

          function showSignedOut(message, link, linkText) {
            clearLocalData();
            page.dataset.state = "signed-out";
            signedIn.hidden = true;
            signedOut.hidden = false;
            document.title = "Sign in · Orchard";
            say(message, link, linkText);
            var signIn = document.getElementById("sign-in");
            if (signIn) { signIn.focus(); }
          }

          function problemCode(response) {
            return response.json().then(function (body) { return body && body.code; }, function () { return null; });
          }

          if (page.dataset.state !== "signed-in") {
            clearLocalData();
            return;
          }
          window.localStorage.setItem("orchard.account_id", page.dataset.accountId || "");
          window.sessionStorage.setItem("orchard.signed_in_at", new Date().toISOString());

          var signOutButton = document.getElementById("sign-out");
          var deleteButton = document.getElementById("delete-account");
          var dialog = document.getElementById("confirm-delete");
          var confirmButton = document.getElementById("confirm-delete-button");
          var cancelButton = document.getElementById("cancel-delete-button");

          function busy(flag) {
            [signOutButton, deleteButton, confirmButton, cancelButton].forEach(function (button) { button.disabled = flag; });
          }

          signOutButton.addEventListener("click", function () {
            busy(true);
            fetch("/v1/session", { method: "DELETE", credentials: "same-origin", headers: { "Accept": "application/json" } })
              .then(function (response) {
                if (response.status === 204 || response.status === 401) {
                  showSignedOut("You signed out.");
                } else {
                  busy(false);
                  say("Signing out did not work (HTTP " + response.status + "). Please try again.");
                }
              }, function () {
                busy(false);
                say("The server could not be reached. Please try again.");
              });
          });

          var othersButton = document.getElementById("sign-out-others");

          function endSession(button) {
            var row = button.closest("li");
            if (row.dataset.current === "true") { signOutButton.click(); return; }
            button.disabled = true;
            fetch("/v1/sessions/" + encodeURIComponent(button.dataset.sessionId),
              { method: "DELETE", credentials: "same-origin", headers: { "Accept": "application/json" } })
              .then(function (response) {
                if (response.status === 204 || response.status === 404) {
                  row.remove();
                  othersButton.hidden = !document.querySelector("#sessions li:not([data-current])");
                  say("That device is signed out.");
                } else if (response.status === 401) {
                  showSignedOut("Your session had already ended.");
                } else {
                  button.disabled = false;
                  say("Signing that device out did not work (HTTP " + response.status + "). Please try again.");
                }
              }, function () {
                button.disabled = false;
                say("The server could not be reached. Please try again.");
              });
          }
          document.querySelectorAll("#sessions .end-session").forEach(function (button) {
            button.addEventListener("click", function () { endSession(button); });
          });

          othersButton.addEventListener("click", function () {
            othersButton.disabled = true;
            fetch("/v1/sessions", { method: "DELETE", credentials: "same-origin", headers: { "Accept": "application/json" } })
              .then(function (response) {
                if (response.status === 200) {
                  return response.json().then(function (body) {
                    document.querySelectorAll("#sessions li:not([data-current])").forEach(function (row) { row.remove(); });
                    othersButton.hidden = true;
                    othersButton.disabled = false;
                    say(body.ended === 1 ? "1 other device is signed out." : body.ended + " other devices are signed out.");
                  });
                }
                if (response.status === 401) { return showSignedOut("Your session had already ended."); }
                othersButton.disabled = false;
                say("Signing out the other devices did not work (HTTP " + response.status + "). Please try again.");
              }, function () {
                othersButton.disabled = false;
                say("The server could not be reached. Please try again.");
              });
          });

          deleteButton.addEventListener("click", function () { dialog.showModal(); });
          cancelButton.addEventListener("click", function () { dialog.close(); deleteButton.focus(); });

          confirmButton.addEventListener("click", function () {
            busy(true);
            fetch("/v1/account", { method: "DELETE", credentials: "same-origin", headers: { "Accept": "application/json" } })
              .then(function (response) {
                if (response.status === 200) {
                  return response.json().then(function (body) {
                    dialog.close();
                    page.dataset.deletion = body.apple_revocation;
                    if (body.apple_revocation === "revoked") {
                      showSignedOut("Your account is deleted, and Apple has revoked this app's Sign in with Apple authorization.");
                    } else if (body.apple_revocation === "pending") {
                      showSignedOut("Your account is deleted. Apple could not be reached just now: revoking this app's " +
                        "Sign in with Apple authorization is retried automatically until Apple accepts.");
                    } else {
                      showSignedOut("Your account is deleted. No Apple token was held to revoke, so please stop using " +
                        "Sign in with Apple with this app yourself:", body.manual_revocation_url,
                        "Apple's page on how to stop using Sign in with Apple");
                    }
                  });
                }
                if (response.status === 401) {
                  dialog.close();
                  return problemCode(response).then(function () {
                    showSignedOut("Your session had already ended. Sign in again to delete your account.");
                  });
                }
                dialog.close();
                busy(false);
                say("Deleting your account did not complete (HTTP " + response.status + "). Please try again.");
              }, function () {
                dialog.close();
                busy(false);
                say("The server could not be reached. Reload the page to see where things stand, then try again.");
              });
          });
        })();
        """
}
