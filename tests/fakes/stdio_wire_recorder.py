"""A stdio pass-through that records the wire of the server it starts (stdlib only):
`python stdio_wire_recorder.py LOG -- COMMAND [ARGS...]`. Every line in either direction goes
on unchanged and is appended to LOG as one JSON line `{"t": <time.time()>, "from": "host" |
"server", "message": <the parsed message, or the raw text>}`. SIGINT and SIGTERM go on to the
server; the recorder ends when the server's stdout closes, with the server's exit status."""

import json
import signal
import subprocess
import sys
import threading
import time

log_path = sys.argv[1]
command = sys.argv[sys.argv.index("--") + 1:]
log = open(log_path, "a", buffering=1)  # noqa: SIM115 - open for the life of the process
lock = threading.Lock()
server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def record(source: str, line: bytes) -> None:
    text = line.decode("utf-8", "replace").rstrip("\n")
    try:
        message = json.loads(text)
    except ValueError:
        message = text
    with lock:
        log.write(json.dumps({"t": time.time(), "from": source, "message": message}) + "\n")


def host_to_server() -> None:
    for line in sys.stdin.buffer:
        record("host", line)
        try:
            server.stdin.write(line)
            server.stdin.flush()
        except (BrokenPipeError, ValueError):
            break
    try:
        server.stdin.close()
    except BrokenPipeError:
        pass


def forward(number: int, frame: object) -> None:
    server.send_signal(number)


signal.signal(signal.SIGINT, forward)
signal.signal(signal.SIGTERM, forward)
threading.Thread(target=host_to_server, daemon=True).start()
for line in server.stdout:
    record("server", line)
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
sys.exit(server.wait())
