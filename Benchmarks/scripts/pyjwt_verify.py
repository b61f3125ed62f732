#!/usr/bin/env python3
"""Times PyJWT on the identity token VerifyBenchmark wrote: `pyjwt_verify.py DIR [SECONDS]`.

DIR holds token.jwt, jwks.json and client_id (VerifyBenchmark --out DIR). The loop calls `jwt.decode` with the RSA
public key built once from the JWKS, RS256 only, the audience and Apple's issuer, as django-allauth's Apple provider
does for each sign-in (allauth also reads the unverified header to pick the key by `kid`; that is timed too). For
scale, it also times the bare RSA verification through `cryptography` (OpenSSL) on the same bytes. Prints JSON.
"""

import base64
import json
import sys
import time

import jwt
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding


def rate(seconds, body):
    count, start = 0, time.perf_counter()
    cpu = time.process_time()
    while time.perf_counter() - start < seconds:
        for _ in range(64):
            body()
        count += 64
    return count / (time.perf_counter() - start), time.process_time() - cpu


def main():
    directory = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    token = open(f"{directory}/token.jwt").read().strip()
    client_id = open(f"{directory}/client_id").read().strip()
    jwks = json.load(open(f"{directory}/jwks.json"))
    key = jwt.PyJWK(jwks["keys"][0]).key

    def decode():
        assert jwt.get_unverified_header(token)["kid"] == jwks["keys"][0]["kid"]
        jwt.decode(token, key, algorithms=["RS256"], audience=client_id, issuer="https://appleid.apple.com")

    head, payload, signature = token.split(".")
    signature = base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))
    signed = f"{head}.{payload}".encode()

    def rsa_only():
        key.verify(signature, signed, padding.PKCS1v15(), hashes.SHA256())

    decode()
    pyjwt, pyjwt_cpu = rate(seconds, decode)
    rsa, rsa_cpu = rate(seconds, rsa_only)
    print(json.dumps({"pyjwt_decode_per_s": pyjwt, "pyjwt_cpu_s": pyjwt_cpu, "pyjwt_version": jwt.__version__,
                      "python_openssl_rs256_per_s": rsa, "python_openssl_rs256_cpu_s": rsa_cpu}))


if __name__ == "__main__":
    main()
