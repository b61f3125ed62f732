#!/usr/bin/env python3
"""Writes the fuzzers' seed inputs into CORPUS/<fuzzer>/ from the genuine Apple tokens of the test fixtures.

Each input's first byte picks the fuzzer's mode (see the fuzzers' documentation in Sources/); the rest is the token, the
claims, the JSON body or the form that a real client or Apple sends.
"""
import json
import pathlib
import sys
import urllib.parse

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "Tests" / "AppleIDTests" / "Fixtures"
NOW = 1_738_495_979  # TokenFuzzing.now


def fixtures(prefix):
    for path in sorted(FIXTURES.glob(prefix + "*.json")):
        yield path.stem, json.loads(path.read_text())


def main(corpus):
    seeds = {"FuzzIdentityToken": {}, "FuzzNotification": {}, "FuzzRequestBodies": {}, "FuzzCallbackForm": {}}
    local_claims = {
        "iss": "https://appleid.apple.com", "aud": "com.example.orchard.app", "sub": "000123.fuzz.0456",
        "iat": NOW - 60, "exp": NOW + 86_400, "nonce": "n", "email": "a@privaterelay.appleid.com",
        "email_verified": "true", "is_private_email": True, "real_user_status": 2, "transfer_sub": "t",
    }
    seeds["FuzzIdentityToken"]["local-claims"] = b"\x01" + json.dumps(local_claims).encode()
    for kind in ("idtoken-", "negative-idtoken-"):
        for name, document in fixtures(kind):
            seeds["FuzzIdentityToken"][name] = b"\x00" + document["jwt"].encode()
            seeds["FuzzIdentityToken"][name + "-claims"] = b"\x01" + json.dumps(document["payload"]).encode()
            body = {"identity_token": document["jwt"], "authorization_code": "c0de", "nonce": "n",
                    "user": {"name": {"first_name": "Ada", "last_name": "Lovelace"}}}
            seeds["FuzzRequestBodies"][name] = b"\x00" + json.dumps(body).encode()
            seeds["FuzzRequestBodies"][name + "-plain"] = b"\x03" + json.dumps(body).encode()
            form = urllib.parse.urlencode({
                "code": "c0de", "id_token": document["jwt"], "state": "s",
                "user": json.dumps({"name": {"firstName": "Ada", "lastName": "Lovelace"}, "email": "a@example.com"}),
            })
            seeds["FuzzCallbackForm"][name] = b"\x00" + form.encode()
            seeds["FuzzCallbackForm"][name + "-state"] = b"\x01" + form.replace("state=s&", "").encode()
    for kind in ("s2s-", "negative-s2s-"):
        for name, document in fixtures(kind):
            seeds["FuzzNotification"][name] = b"\x00" + document["jwt"].encode()
            seeds["FuzzNotification"][name + "-claims"] = b"\x01" + json.dumps(document["payload"]).encode()
            seeds["FuzzRequestBodies"][name] = b"\x01" + json.dumps({"payload": document["jwt"]}).encode()
    seeds["FuzzRequestBodies"]["nonce"] = b"\x02{}"
    seeds["FuzzCallbackForm"]["cancelled"] = b"\x01error=user_cancelled_authorize"
    for fuzzer, inputs in seeds.items():
        folder = pathlib.Path(corpus) / fuzzer
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in inputs.items():
            (folder / ("seed-" + name)).write_bytes(data)
        print(f"{fuzzer}: {len(inputs)} seeds in {folder}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(pathlib.Path(__file__).resolve().parent / ".corpus"))
