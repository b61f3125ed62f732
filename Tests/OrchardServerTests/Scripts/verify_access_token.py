"""Verifies Orchard's access tokens with PyJWT (an independent JOSE library) against the key set Orchard serves.

Usage: verify_access_token.py CASES.json, where the file holds {"jwks_url", "cases": [{"token", "issuer", "audience",
"seconds_later"}]}; a case with "seconds_later" checks exp as that many seconds from now (PyJWT's leeway, negated; iat and nbf, which a
negative leeway would move the other way, are left to the other cases).
Each case is verified with a fresh PyJWKClient (so the key set is fetched again, as a verifier does on an unknown kid):
the header's typ must be at+jwt, the signature must verify with the key of its kid, and iss, aud, exp, iat and nbf are
checked by PyJWT. Prints one JSON array: {"ok": true, "sub", "kid"} or {"ok": false, "error"} per case. Exit 3 when
PyJWT (with its cryptography backend) is not installed.
"""

import json
import sys

try:
    import jwt
    from jwt import PyJWKClient
    import cryptography  # noqa: F401 (ES256 needs it)
except ImportError:
    sys.exit(3)


def verify(jwks_url, case):
    token = case["token"]
    header = jwt.get_unverified_header(token)
    if header.get("typ") != "at+jwt":
        raise ValueError(f"typ is {header.get('typ')!r}, not at+jwt")
    later = int(case.get("seconds_later", "0"))
    client = PyJWKClient(jwks_url, cache_jwk_set=False, cache_keys=False)
    key = client.get_signing_key_from_jwt(token)
    claims = jwt.decode(
        token,
        key.key,
        algorithms=["ES256"],
        audience=case["audience"],
        issuer=case["issuer"],
        leeway=-later,
        options={"require": ["exp", "iat", "nbf", "iss", "aud", "sub", "jti"], "verify_iat": later == 0,
                 "verify_nbf": later == 0},
    )
    return {"ok": True, "sub": claims["sub"], "kid": header["kid"]}


def main():
    with open(sys.argv[1]) as file:
        spec = json.load(file)
    results = []
    for case in spec["cases"]:
        try:
            results.append(verify(spec["jwks_url"], case))
        except Exception as error:  # every failure is a result the Swift test reads
            results.append({"ok": False, "error": f"{type(error).__name__}: {error}"})
    print(json.dumps(results))


if __name__ == "__main__":
    main()
