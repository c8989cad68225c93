"""Rewrite an iotrace jsonl trace (stdin) as another tool would (stdout).

Every line is parsed with Python's json module and written again with
json.dumps: a space after every ':' and ',', non-ASCII as \\uXXXX escapes.
The mode (argv[1]) adds to that:
  default   json.dumps(obj) as it is
  sorted    keys sorted (the "type" key is no longer first)
  reversed  keys in reverse order, CRLF line ends, blank lines and
            indented lines between them, '/' escaped as '\\/'
"""
import json
import sys

mode = sys.argv[1] if len(sys.argv) > 1 else "default"
out = []
for n, line in enumerate(sys.stdin.buffer.read().decode("utf-8").splitlines()):
    if not line.strip():
        continue
    obj = json.loads(line)
    if mode == "sorted":
        text = json.dumps(obj, sort_keys=True)
    elif mode == "reversed":
        text = json.dumps(dict(reversed(list(obj.items())))).replace("/", "\\/")
        if n % 5 == 1:
            text = "  " + text
        if n % 7 == 2:
            text = "\r\n" + text
    else:
        text = json.dumps(obj)
    out.append(text)
end = "\r\n" if mode == "reversed" else "\n"
sys.stdout.write(end.join(out) + end)
