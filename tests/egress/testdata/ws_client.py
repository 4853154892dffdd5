# A sandbox's WebSocket client for the interception tests: connects to wss://ws.test/chat through the proxy's port,
# trusting the sandbox's CA, sends a text, a binary and a long text message, prints what comes back, then closes.
# Usage: ws_client.py CA PROXY_PORT deflate|none
import asyncio
import socket
import ssl
import sys

import websockets


async def main():
    ca, port, compression = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    context = ssl.create_default_context(cafile=ca)
    sock = socket.create_connection(("127.0.0.1", port))
    async with websockets.connect("wss://ws.test/chat", sock=sock, ssl=context, server_hostname="ws.test",
                                  max_size=2**24, compression=None if compression == "none" else "deflate") as ws:
        print("extensions:", ws.response_headers.get("Sec-WebSocket-Extensions"))
        await ws.send("my key is isb_placeholder_abc")
        print(await ws.recv())
        await ws.send(b"\x00\x01 isb_placeholder_abc")
        print(await ws.recv())
        await ws.send("isb_placeholder_abc " * 10000)
        long = await ws.recv()
        print(len(long), long.count("isb_placeholder_abc"), long.count("sk-real-value"))
    print("closed", ws.close_code)


asyncio.run(main())
