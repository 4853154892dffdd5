"""mitmproxy's side of bench/secrets.sh: the placeholder swapped for the value in every request header, and the
value turned back into the placeholder in response bodies as they stream (a match split across two chunks is still
found), as isb's secrets filter does. ISB_BENCH_PLACEHOLDER and ISB_BENCH_VALUE name them. Responses to a path
under /check are left as they are, so the script can see that the value reached the origin."""
import os

PLACEHOLDER = os.environ["ISB_BENCH_PLACEHOLDER"]
VALUE = os.environ["ISB_BENCH_VALUE"]


def _scrubber(value: bytes, placeholder: bytes):
    keep = len(value) - 1  # the most of a match that can end a chunk
    tail = b""

    def scrub(data: bytes) -> bytes:
        nonlocal tail
        text = (tail + data).replace(value, placeholder)
        if not data:  # the end of the body
            tail = b""
            return text
        tail = text[-keep:] if keep else b""
        return text[: len(text) - len(tail)]

    return scrub


class SwapAndScrub:
    def requestheaders(self, flow):
        headers = flow.request.headers
        for name in list(headers.keys()):
            if PLACEHOLDER in headers[name]:
                headers[name] = headers[name].replace(PLACEHOLDER, VALUE)

    def responseheaders(self, flow):
        if not flow.request.path.startswith("/check"):
            flow.response.stream = _scrubber(VALUE.encode(), PLACEHOLDER.encode())


addons = [SwapAndScrub()]
