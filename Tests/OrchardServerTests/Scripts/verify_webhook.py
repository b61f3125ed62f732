"""Verifies one recorded webhook attempt with the reference Standard Webhooks library.

Usage: verify_webhook.py FILE, where FILE is JSON {"secret", "headers", "body"}. Exit 0 when it verifies, 1 when the
library refuses it, 3 when the library is not installed.
"""
import json
import sys

try:
    from standardwebhooks.webhooks import Webhook
except ImportError:
    sys.exit(3)

with open(sys.argv[1]) as handle:
    attempt = json.load(handle)
try:
    Webhook(attempt["secret"]).verify(attempt["body"], attempt["headers"])
except Exception as error:  # the library raises WebhookVerificationError
    print(f"refused: {error}")
    sys.exit(1)
print("verified")
