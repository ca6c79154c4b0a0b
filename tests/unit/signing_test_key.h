/*
 * signing_test_key.h — the push signer's test key and its certificate
 * (docs/protocol.md §13.11), shared by test_crypto_signer.c and
 * test_push.c, and read by tests/integration/node/push-verifier.test.js.
 * Made with
 *   openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out key.pem
 *   openssl req -new -x509 -key key.pem -subj /CN=smqd-test -days 36500 -sha256 -out cert.pem
 */
#ifndef SMQD_SIGNING_TEST_KEY_H
#define SMQD_SIGNING_TEST_KEY_H

static const char KEY[] =
    "-----BEGIN PRIVATE KEY-----\n"
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDiKrN4NgiGJJPX\n"
    "3clejnzon9JUEzOKzqrxqFlTrlfv/1nzQToy8/htFqAoLADcOXvRFLPPK93QFzsX\n"
    "oAdmksONCxRENzvnCuHXK3u/RGMIqZYDRxgUX+fpvCwrgjZbq2H8LT6qdbOox9Ww\n"
    "2hPbOXi3Df7JvOGIQqBfu4Uh6ZKXUFu59/LbDxbEs/8C58tpWe+GgCv65ER3yn5t\n"
    "L1+cbCe/NBvjxaqauBLSRTaBpf61/Wi8rJcmS4J63y61XDcZULDNxWZzkSfclORT\n"
    "HfXQk+k9LJBQZ9BYb5BolvYNrlR6Nj5Wuzv/GTUr3EpmAgtCdVtaSLoEd359lo4n\n"
    "RXgkAjezAgMBAAECggEAGhhb3W/mleEHNJire6nXHFlsbDT29STEBolVHS74Myx0\n"
    "VXkzh4jXeMbBM0FjLAXElSrdVaG1wHpzCqvKjs7k7z4rAsqYsnTH+rVSsY6Tb/7D\n"
    "3JxJrqLONbgiJIxWofG+ptkVlOzAY6YDBZpz62R7MCvWN7KqbGK7nFrHkVJ2OS0I\n"
    "kFArr/uT6yfJpvwdDAAjsZ5Ag/YV6Z0HtwNY+js4gfzl31ID/2QJUALfrVpuaYlV\n"
    "sBEue/xKdWunDgkrA1BZRdWB2XLbW/1+NgspqxVlBtV7o4PQb6UCkvI4o7asHuyB\n"
    "KNBPa1ZGhN0xugq3FTi4VPQRcbvj6NfjNvQZV9SnoQKBgQDzxyUcfYJ6TJib8/oF\n"
    "r7jc87GLKoZzUwmSB5NwTsl9mEOsCRo6ZSOhzkdyJn0zMrNnHMcHUuhbVKadytqh\n"
    "Hg5U+pc446uTUeOuRXg8Jodypn7LCl4S2dFY/qyYB/ni7XJCiQuvZ/50HiGrQTJr\n"
    "aEuCMcXxypJv80bd7mU0F0NIIwKBgQDtgYUeHDYjPllb/YYkJ2/nJU+LGw2BhuDn\n"
    "vvvvvxC/Te0oYQKPGAX3nCyiAhgz44k6gomgfO3ozzuEl5OYVcONTazUL7xuLY/s\n"
    "xeJ+TuLrYWhc+k/MkS2S1b09yISzznITB0p+2IXMECR0cda1CUj0G0hYpZlBnScd\n"
    "6uuEqKMDMQKBgFzY75CPWR+9hq53WTXLPMyi4G9Rzg2khdOhoQ04ZNO6J6Qhf2TY\n"
    "Wp7pExst/6d9Wwkd08w9TpRihGc6+NQ+v1SscOZRCGs+2Enq2aWHQzVupoIsu7HQ\n"
    "VkTgEtqAxzMgHtGqotG2+Ro+07IHTe3Mtl2rGWpDLk0HSmmCv/b8GTsjAoGAOKLG\n"
    "J6P6lPTtQi52qnBtEuWmzjkpQ1Xyk9DLKySYzcW7ZAGeJplH8v/e9NMjClycAMPY\n"
    "JdkksnuYacnrfEwXUb7QE9k+Sde7lm6p0Aznt9GGnYVjOhj0kSs+8Vi7rFTyhu8a\n"
    "KJ1haoP+7XWoCYupReyrl9gFb8wV4+B9QSkllkECgYEA0rt+rlq138zSrxZ2bs6G\n"
    "WKVRI2mU8oOs1M3RKU6vAqJubL+Nca/pphm/LeLclLrpFlN3bfzxGa2G16hI8X0k\n"
    "dfiNOLKicOU0hhlDnBoHFhwsf5ONQGxV0LpifbzFNHai9Tpa8KUm/RZLj0Pc6P6O\n"
    "qGQKvtjhlwmWMzL6y3C8W2I=\n"
    "-----END PRIVATE KEY-----\n";
static const char CERT[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIDCzCCAfOgAwIBAgIUIi3OwzgHjh+Z+cS1foggzUWD8UAwDQYJKoZIhvcNAQEL\n"
    "BQAwFDESMBAGA1UEAwwJc21xZC10ZXN0MCAXDTI2MTIwNzE5MDAyOFoYDzIxMjYx\n"
    "MTEzMTkwMDI4WjAUMRIwEAYDVQQDDAlzbXFkLXRlc3QwggEiMA0GCSqGSIb3DQEB\n"
    "AQUAA4IBDwAwggEKAoIBAQDiKrN4NgiGJJPX3clejnzon9JUEzOKzqrxqFlTrlfv\n"
    "/1nzQToy8/htFqAoLADcOXvRFLPPK93QFzsXoAdmksONCxRENzvnCuHXK3u/RGMI\n"
    "qZYDRxgUX+fpvCwrgjZbq2H8LT6qdbOox9Ww2hPbOXi3Df7JvOGIQqBfu4Uh6ZKX\n"
    "UFu59/LbDxbEs/8C58tpWe+GgCv65ER3yn5tL1+cbCe/NBvjxaqauBLSRTaBpf61\n"
    "/Wi8rJcmS4J63y61XDcZULDNxWZzkSfclORTHfXQk+k9LJBQZ9BYb5BolvYNrlR6\n"
    "Nj5Wuzv/GTUr3EpmAgtCdVtaSLoEd359lo4nRXgkAjezAgMBAAGjUzBRMB0GA1Ud\n"
    "DgQWBBSTybuaP4XXYVHk/k0gMqPbGAp2SzAfBgNVHSMEGDAWgBSTybuaP4XXYVHk\n"
    "/k0gMqPbGAp2SzAPBgNVHRMBAf8EBTADAQH/MA0GCSqGSIb3DQEBCwUAA4IBAQCl\n"
    "CcR2LIb1U/tKM3PPxnIxG4ixhVP2dsmNSY5L1Vm/703PMz7WpO+kvm2fv0A6O1D7\n"
    "25Ygozqm65INPrIakj5TnhMpEiKUe3iiuBR28BmlCYpu4J7hyLIlybsGky0jPX9g\n"
    "sp8EgEfcJb86zs34lwS2sY7HSdhjHBzcTvy9jJC1WJfZhj0AgUWNBXTw+uqYveI4\n"
    "9K+OLnQzErRQYNAKJhrbTRd4RpLw0AC8eVg3FhyHJ8NgYe38MBMFFxiz47i/8Rvz\n"
    "gL+SNjFpsvPH7SZ9bJOwIXDvT7VQAefcQTFpfqTC1fNhfiv7g77sQy/UEG1plcRM\n"
    "H7GbChSBoNNGgASB0W2h\n"
    "-----END CERTIFICATE-----\n";

#endif
