"""An IMAP server of the tests' own that may lie (a server is an adversary): on 127.0.0.1 (or ::1), a
port of its own, one thread a connection, speaking just enough IMAP4rev1 for nbtext's reader
and imap-scan (CAPABILITY, LOGIN, AUTHENTICATE PLAIN, EXAMINE/SELECT, LIST, UID FETCH, UID
STORE/COPY/MOVE/EXPUNGE, LOGOUT). A test changes what it says by the attributes of its
instance, or by `answer`, a function (server, tag, command, arguments) that answers a command
in its place (return True) or leaves it to the server. `said` holds the command lines it got;
`sizes` the RFC822.SIZE a listing says where it lies; `stall` (COMMAND, FIRST, GAP, COUNT)
makes its answers to a command line holding COMMAND (b"GREETING": the greeting) a server that stalls: FIRST bytes
sent, then COUNT bytes one at a time GAP seconds apart (GAP None: nothing for 30 s), then the
rest.

    python tests/hostile_imap.py PORT LITERAL_BYTES [COUNT]   (a server of COUNT messages (1),
        each a literal of LITERAL_BYTES bytes sent in pieces without holding them, which its
        listing says are of 0 bytes where COUNT is given: for /usr/bin/time -v)
    python tests/hostile_imap.py PORT --flood LINES EXISTS   (a server that says EXISTS and
        UIDNEXT 4294967295, lists UIDs 1 to LINES, made as they are sent, and sends no message)"""

import socket
import socketserver
import sys
import threading

PIECE = 1 << 20


class HostileImap:
    def __init__(self, messages=None, port=0, host="127.0.0.1"):
        self.messages = dict(messages or {1: b"Subject: hi\r\n\r\nhello\r\n"})  # {UID: bytes, or a size to stream}
        self.capabilities = "IMAP4rev1 UIDPLUS MOVE"
        self.greeting = b"* OK hostile IMAP ready"
        self.uid_validity, self.uid_next = b"7", None  # (None: one above the highest UID)
        self.exists = None  # (None: how many messages)
        self.listing = None  # the lines of a UID listing's answer, else made of `messages`
        self.sizes = {}  # {UID: the RFC822.SIZE the listing says}, where not the message's own (a lie)
        self.answer = None
        self.stall = None
        self.said, self.connections = [], 0
        self.local = threading.local()  # (its connection's output: `out`)
        outer = self

        class Handler(socketserver.StreamRequestHandler):
            # (an answer goes out in several writes: with Nagle's algorithm each one after the first waited
            # for the client's delayed acknowledgement, tens of milliseconds a command)
            disable_nagle_algorithm = True

            def handle(self):
                outer.connections += 1
                outer.local.connection = self.connection
                try:
                    outer._serve(self.rfile, self.wfile)
                except (OSError, ValueError):  # (the client went away)
                    pass

        class Server(socketserver.ThreadingTCPServer):
            allow_reuse_address = True
            daemon_threads = True
            address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

        self.host = host  # (127.0.0.1 or ::1: loopback only)
        self.server = Server((host, port), Handler)
        self.port = self.server.server_address[1]

    def url(self, folder="INBOX", user="alice", host=None):
        host = host or (f"[{self.host}]" if ":" in self.host else self.host)
        return f"imap://{user}@{host}:{self.port}/{folder}"

    def __enter__(self):
        # (shutdown waits for the serving loop's next look at its flag: socketserver's default, every 0.5 s,
        # was most of the time of a test that starts a server for each generated case)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
        return self

    def __exit__(self, *exception):
        self.server.shutdown()
        self.server.server_close()

    # --- the conversation -------------------------------------------------------------------
    @property
    def out(self):
        return self.local.out

    def _serve(self, rfile, wfile):
        self.local.out, self.local.rfile = wfile, rfile  # (rfile: for an `answer` that reads on)
        self.stalling(wfile, b"GREETING")
        self.send(self.greeting)
        while True:
            line = rfile.readline()
            if not line:
                return
            self.said.append(line)
            tag, _, rest = line.rstrip(b"\r\n").partition(b" ")
            command, _, arguments = rest.partition(b" ")
            command = command.upper()
            if command == b"UID":
                sub, _, arguments = arguments.partition(b" ")
                command = b"UID " + sub.upper()
            self.stalling(wfile, line)
            if self.answer is not None and self.answer(self, tag, command, arguments):
                continue
            if command == b"LOGOUT":
                self.send(b"* BYE bye", tag + b" OK done")
                return
            if command == b"AUTHENTICATE":
                self.send(b"+ ")
                self.said.append(rfile.readline())
                self.send(tag + b" OK logged in")
            elif command == b"CAPABILITY":
                self.send(b"* CAPABILITY " + self.capabilities.encode(), tag + b" OK done")
            elif command in (b"EXAMINE", b"SELECT"):
                uids = sorted(self.messages)
                exists = len(uids) if self.exists is None else self.exists
                uid_next = (uids[-1] + 1 if uids else 1) if self.uid_next is None else self.uid_next
                self.send(
                    b"* " + (exists if isinstance(exists, bytes) else b"%d" % exists) + b" EXISTS",
                    b"* OK [UIDVALIDITY " + self.uid_validity + b"] v",
                    b"* OK [UIDNEXT %s] n" % str(uid_next).encode(),
                    tag + (b" OK [READ-ONLY] done" if command == b"EXAMINE" else b" OK [READ-WRITE] done"),
                )
            elif command == b"LIST":
                self.send(b'* LIST () "/" ' + arguments.split(b" ", 1)[1], tag + b" OK done")
            elif command == b"UID FETCH" and arguments.endswith((b"(UID)", b"(UID RFC822.SIZE)")):
                lines = self.listing
                if lines is None:
                    lines = [
                        b"* %d FETCH (UID %d RFC822.SIZE %d)" % (n, u, self.sizes.get(u, self.size(u)))
                        for n, u in enumerate(sorted(self.messages), 1)
                    ]
                self.send(*lines, tag + b" OK done")
            elif command == b"UID FETCH":
                self.fetch(tag, arguments)
            else:  # LOGIN, UID STORE, COPY, MOVE, EXPUNGE, NOOP
                self.send(tag + b" OK done")

    def fetch(self, tag, arguments):
        asked = set()
        for part in arguments.split(b" ", 1)[0].split(b","):
            low, _, high = part.partition(b":")
            asked.update(range(int(low), int(high or low) + 1))
        for n, uid in enumerate(sorted(self.messages), 1):
            if uid in asked:
                body, size = self.messages[uid], self.size(uid)
                self.out.write(b"* %d FETCH (UID %d BODY[] {%d}\r\n" % (n, uid, size))
                if isinstance(body, int):
                    piece = b"x" * PIECE
                    for start in range(0, body, PIECE):
                        self.out.write(piece[: min(PIECE, body - start)])
                else:
                    self.out.write(body)
                self.send(b")")
        self.send(tag + b" OK done")

    def stalling(self, wfile, line):
        """The connection's output for the answer to the command `line`: as `stall` says where
        its COMMAND is in the line, or the plain one."""
        if self.stall is not None and (self.stall[0] in line if line != b"GREETING" else self.stall[0] == line):
            self.local.out = Stalling(wfile, *self.stall[1:])
        else:
            self.local.out = wfile

    def size(self, uid):
        body = self.messages[uid]
        return body if isinstance(body, int) else len(body)

    def hang_up(self):
        """Close this connection (a server that goes away in the middle of an answer)."""
        import socket

        self.local.connection.shutdown(socket.SHUT_RDWR)

    def send(self, *lines):
        for line in lines:
            self.out.write(line + b"\r\n")
        self.out.flush()


class Stalling:
    """An answer's output that sends `first` bytes, then `count` bytes one at a time `gap`
    seconds apart (None: sends nothing for 30 s), then the rest (a server that stalls)."""

    def __init__(self, out, first, gap, count):
        self.file, self.first, self.gap, self.count, self.sent = out, first, gap, count, 0

    def write(self, data):
        import time

        while data:
            if self.first <= self.sent < self.first + self.count:
                self.file.flush()
                time.sleep(30 if self.gap is None else self.gap)
                self.file.write(data[:1])
                self.file.flush()
                self.sent, data = self.sent + 1, data[1:]
                continue
            stop = self.first - self.sent if self.sent < self.first else len(data)
            self.file.write(data[:stop])
            self.sent, data = self.sent + len(data[:stop]), data[stop:]

    def flush(self):
        self.file.flush()


def flood(lines):
    """An answer hook: the UID listing's answer is UIDs 1 to `lines`, made as they are sent; a
    fetch of messages answers none of them."""

    def answer(server, tag, command, arguments):
        if command != b"UID FETCH":
            return False
        if arguments.endswith(b"(UID RFC822.SIZE)"):
            for n in range(1, lines + 1):
                server.out.write(b"* %d FETCH (UID %d RFC822.SIZE 100)\r\n" % (n, n))
        server.send(tag + b" OK done")
        return True

    return answer


if __name__ == "__main__":
    port, arguments = int(sys.argv[1]), sys.argv[2:]
    if arguments[0] == "--flood":
        server = HostileImap(port=port)
        server.exists, server.uid_next, server.answer = int(arguments[2]), (1 << 32) - 1, flood(int(arguments[1]))
    else:
        count = int(arguments[1]) if len(arguments) > 1 else 1
        server = HostileImap(dict.fromkeys(range(1, count + 1), int(arguments[0])), port=port)
        server.sizes = dict.fromkeys(range(1, count + 1), 0) if len(arguments) > 1 else {}
    with server:
        print(server.port, flush=True)
        threading.Event().wait()
