# A WebSocket origin over TLS for the interception tests: answers each message with what it received and its
# length, and prints each message it received as it arrives, one a line: a short one's repr, a long text's length
# and how many values it holds.
# Usage: ws_origin.py CERT KEY PORT deflate|none
import asyncio
import ssl
import sys

import websockets


async def answer(ws, path):
    async for message in ws:
        if len(message) < 100:
            print(repr(message), flush=True)
        else:
            print(len(message), "long,", message.count("sk-real-value"), "values", flush=True)
        if isinstance(message, str):
            await ws.send(f"origin got {len(message)}: {message}")
        else:
            await ws.send(b"origin got bytes: " + message)


async def main():
    cert, key, port, compression = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    async with websockets.serve(answer, "127.0.0.1", port, ssl=context, max_size=2**24,
                                compression=None if compression == "none" else "deflate"):
        await asyncio.Future()


asyncio.run(main())
