# An HTTPS origin for the secrets tests: answers every request with exactly what it received (the request line,
# the header lines, then the body with its framing removed), and logs each request to a file for the test to read.
# The path picks the response's form: /gzip, /deflate, /br, /zstd encode it; /chunked sends it in 7-byte chunks;
# /json sends it as a JSON string. Every response carries the request's Authorization back in X-Echo-Authorization.
# A second port serves WebSocket: each message comes back as "echo: " + the message. A third serves the same echo
# over plain HTTP.
import asyncio, json, socketserver, ssl, sys, threading, zlib

import brotli
import websockets
import zstandard

port, ws_port, plain_port = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
cert, key, log_path = sys.argv[4], sys.argv[5], sys.argv[6]
log_lock = threading.Lock()


def log(data):
    with log_lock, open(log_path, "ab") as f:
        f.write(data + b"\n--\n")


def read_line(f):
    line = f.readline(65537)
    if not line.endswith(b"\n"):
        raise EOFError
    return line


def read_body(f, headers):
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while True:
            size = int(read_line(f).split(b";")[0].strip(), 16)
            if size == 0:
                while read_line(f) not in (b"\r\n", b"\n"):
                    pass
                return body
            body += f.read(size)
            read_line(f)
    return f.read(int(headers.get("content-length", "0")))


def encode(path, data):
    if path.startswith("/gzip"):
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        return "gzip", c.compress(data) + c.flush()
    if path.startswith("/deflate"):
        return "deflate", zlib.compress(data)
    if path.startswith("/br"):
        return "br", brotli.compress(data)
    if path.startswith("/zstd"):
        return "zstd", zstandard.ZstdCompressor().compress(data)
    return None, data


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        try:
            while self.one():
                pass
        except (EOFError, ConnectionError, ssl.SSLError, ValueError):
            pass

    def one(self):
        head = b""
        while True:
            line = read_line(self.rfile)
            head += line
            if line in (b"\r\n", b"\n"):
                break
        lines = head.decode("latin-1").split("\r\n")
        path = lines[0].split(" ")[1]
        headers = {}
        for h in lines[1:]:
            if ":" in h:
                k, v = h.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        received = head + read_body(self.rfile, headers)
        log(received)
        body = received
        if path.startswith("/json"):
            body = json.dumps({"received": received.decode("latin-1")}).encode()
        coding, body = encode(path, body)
        out = [b"HTTP/1.1 200 OK", b"Content-Type: text/plain",
               b"X-Echo-Authorization: " + headers.get("authorization", "").encode("latin-1")]
        if coding:
            out.append(b"Content-Encoding: " + coding.encode())
        if path.startswith("/chunked"):
            out.append(b"Transfer-Encoding: chunked")
            chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 7]), body[i:i + 7]) for i in range(0, len(body), 7))
            self.wfile.write(b"\r\n".join(out) + b"\r\n\r\n" + chunks + b"0\r\n\r\n")
        else:
            out.append(b"Content-Length: %d" % len(body))
            self.wfile.write(b"\r\n".join(out) + b"\r\n\r\n" + body)
        self.wfile.flush()
        return headers.get("connection", "").lower() != "close"


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)


async def ws_echo(socket):
    async for message in socket:
        log(b"ws: " + (message.encode() if isinstance(message, str) else message))
        await socket.send("echo: " + message if isinstance(message, str) else b"echo: " + message)


async def ws_main():
    async with websockets.serve(ws_echo, "127.0.0.1", ws_port, ssl=context):
        await asyncio.Future()


threading.Thread(target=lambda: asyncio.run(ws_main()), daemon=True).start()
plain = Server(("127.0.0.1", plain_port), Handler)
threading.Thread(target=plain.serve_forever, daemon=True).start()
server = Server(("127.0.0.1", port), Handler)
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
