"""What the browser suites share: finding Chromium, chromedriver and selenium, a free port, a headless driver, and
the loud skip (or, under CI=true, the failure) when the browser is missing. Imported by account_page_test.py and
console_test.py, which Python runs with this folder on its path."""

import os
import shutil
import socket

SKIPPED = 77
CHROMEDRIVER = "/usr/bin/chromedriver"


def find_browser():
    """The Chromium binary, chromedriver and selenium, or the reason one is missing."""
    binary = next((shutil.which(name) for name in ("chromium", "chromium-browser") if shutil.which(name)), None)
    if binary is None:
        return None, "no chromium on PATH (Debian package 'chromium')"
    if not os.access(CHROMEDRIVER, os.X_OK):
        return None, f"no {CHROMEDRIVER} (Debian package 'chromium-driver')"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return None, "the Python package 'selenium' is not installed (pip install selenium)"
    return binary, None


def missing_browser(suite, missing):
    """The exit status when the browser is missing: a failure under CI=true, a loud skip (77) elsewhere."""
    if os.environ.get("CI") == "true":
        print(f"FAIL: {suite} must run under CI=true, but {missing}. Run scripts/ci-setup.", flush=True)
        return 1
    print("\n" + "!" * 100 + f"\n!!! {suite.upper()} SKIPPED: {missing}.\n"
          "!!! Install them with scripts/ci-setup (Debian chromium + chromium-driver, PyPI selenium).\n"
          + "!" * 100 + "\n", flush=True)
    return SKIPPED


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def make_driver(binary, window=(1000, 760), javascript=True):
    """Headless Chromium at `window`, keeping the browser console's messages; without JavaScript if told."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = binary
    for argument in ("--headless=new", "--disable-dev-shm-usage", f"--window-size={window[0]},{window[1]}", "--lang=en-US"):
        options.add_argument(argument)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        options.add_argument("--no-sandbox")  # Chromium refuses to run as root with its sandbox
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    if not javascript:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
