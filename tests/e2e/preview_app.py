# A sandbox's dev server for the preview tests: answers every path with the request it got (method, path and header
# fields in order, as JSON), sets two cookies (one with a Domain, one named like isb's), and at /ws takes a WebSocket
# upgrade and echoes text frames; at /silent it takes the request and never answers, noting in /tmp/silent.log when
# it took it and when the connection ended. The port is argv[1]. Standard library only.
import base64, hashlib, http.server, json, socketserver, struct, sys

PAGE = b"""<!doctype html><html><head><meta charset="utf-8"><title>preview app</title></head>
<body><p id="origin"></p><script src="/app.js"></script></body></html>"""


def note(what):
    with open("/tmp/silent.log", "a") as f:
        f.write(what + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/ws":
            return self.websocket()
        if self.path == "/silent":
            return self.silent()
        if self.path == "/page":
            return self.send(200, "text/html; charset=utf-8", PAGE)
        if self.path == "/app.js":
            with open("/tmp/app.js", "rb") as f:
                return self.send(200, "text/javascript", f.read())
        body = json.dumps({"method": self.command, "path": self.path, "headers": [[k, v] for k, v in self.headers.items()]})
        self.send(200, "application/json", body.encode(), cookies=True)

    do_POST = do_GET

    def send(self, status, content_type, body, cookies=False):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-App", "preview-app")
        if cookies:
            self.send_header("Set-Cookie", "app=1; Domain=localhost; Path=/; HttpOnly")
            self.send_header("Set-Cookie", "isb_session=from-the-app; Path=/")
        self.end_headers()
        self.wfile.write(body)

    def silent(self):
        note("taken")
        self.rfile.read(1)  # b"" once the other side has closed the connection
        note("ended")
        self.close_connection = True

    def websocket(self):
        key = self.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept.decode())
        self.end_headers()
        self.wfile.flush()
        while True:
            head = self.rfile.read(2)
            if len(head) < 2:
                return
            opcode, size = head[0] & 0x0F, head[1] & 0x7F
            if size == 126:
                size = struct.unpack("!H", self.rfile.read(2))[0]
            mask = self.rfile.read(4) if head[1] & 0x80 else b"\0\0\0\0"
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(size)))
            if opcode == 8:
                return
            reply = b"echo:" + data
            self.wfile.write(bytes([0x81, len(reply)]) + reply)
            self.wfile.flush()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
