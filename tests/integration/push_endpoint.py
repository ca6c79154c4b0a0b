#!/usr/bin/env python3
"""push_endpoint.py — a loopback HTTP endpoint for test_push.sh: records every
request smqd's push pool makes (time, path, headers, body) as one JSON line
each, and answers 204, or 500 to the first request on a path containing
"fail-once" (docs/protocol.md §13.10, §13.12).

Usage: push_endpoint.py LOG PORTFILE [PORT [CERT KEY]] — binds 127.0.0.1
(PORT, default 0 = any free one; with CERT and KEY, PEM files, it serves
HTTPS), writes the port to PORTFILE, and exits by itself after 240 s so that
a crashed suite cannot leave it behind."""
import base64
import json
import os
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG, PORTFILE = sys.argv[1], sys.argv[2]
PORT = int(sys.argv[3]) if len(sys.argv) > 3 else 0
LOCK = threading.Lock()
SEEN = {}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive, as the pool expects

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with LOCK:
            n = SEEN.get(self.path, 0)
            SEEN[self.path] = n + 1
            status = 500 if "fail-once" in self.path and n == 0 else 204
            with open(LOG, "a") as f:
                f.write(json.dumps({
                    "t_ms": int(time.time() * 1000), "path": self.path, "status": status,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body_b64": base64.b64encode(body).decode()}) + "\n")
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
if len(sys.argv) > 5:
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(sys.argv[4], sys.argv[5])
    server.socket = tls.wrap_socket(server.socket, server_side=True)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
# renamed after the bind: the port file appears only once it listens
os.rename(PORTFILE + ".tmp", PORTFILE)
threading.Timer(240, server.shutdown).start()
server.serve_forever()
