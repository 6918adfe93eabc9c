"""Runs a command in a real pseudo-terminal (120x24) and relays bytes: this process's stdin
goes to the terminal as keystrokes, the terminal's output comes out on stdout. Exits with
the command's exit code, or 128 + the signal's number when a signal ended it (named on
stderr). Used by the REPL tests; needs only Python's standard library."""
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios

pid, master = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    os.execvp(sys.argv[1], sys.argv[1:])

stdin_open = True
while True:
    readers = [master] + ([0] if stdin_open else [])
    ready, _, _ = select.select(readers, [], [])
    if 0 in ready:
        data = os.read(0, 4096)
        if data:
            os.write(master, data)
        else:
            stdin_open = False
    if master in ready:
        try:
            data = os.read(master, 65536)
        except OSError:
            data = b""
        if not data:
            break
        os.write(1, data)

_, status = os.waitpid(pid, 0)
if os.WIFSIGNALED(status):
    # Told, as a shell tells it: an abort at exit (a C++ assertion in Node) shows as a signal.
    signal_number = os.WTERMSIG(status)
    core = " (core dumped)" if os.WCOREDUMP(status) else ""
    sys.stderr.write(f"pty-driver: the command was killed by {signal.Signals(signal_number).name}{core}\n")
    sys.exit(128 + signal_number)
sys.exit(os.WEXITSTATUS(status))
