#!/usr/bin/env python3
"""One-off migration (issue 24, "builtins take a narrow host context"): moves what a
builtin may touch out of `Interp` into `builtins::host::Host` (the `host` field).
Run from the repository root on src/interp.rs and src/vm.rs (idempotent enough to be
re-run on another version of those files): it deletes the struct fields, methods and
helpers that now live in src/builtins/host.rs, and rewrites field paths and calls
(`self.meter` -> `self.host.meter`, `self.work(` -> `self.host.work(`).
The struct's `host` field, `Interp::new`, the builtin dispatch and `Callbacks` are
edited by hand (see the commit)."""
import re, sys

FIELDS = ["meter", "heap", "max_mem", "caps", "lim", "gate", "audit_target", "audit_bytes", "pos",
          "budgets", "out", "script_args", "rng", "env", "stdin", "files", "net", "db", "snapshots",
          "slept", "testing"]
METHODS = ["work", "charge_steps", "max_memory", "steps_left", "work_left", "check_time", "check_value",
           "check_list_len", "check_map_len", "check_str_len", "line_cap", "line_too_long", "str_too_long",
           "cow", "make_list", "make_map", "make_str", "index", "to_text", "write_text", "write_text_as",
           "audit_note", "check_memory", "check_memory_after", "budget_fail"]
# Free items now in host.rs (re-exported by interp.rs).
ITEMS = [r"pub fn find_bytes\(", r"pub fn concat_work\(", r"pub fn key_work\(", r"pub fn find_work\(",
         r"pub trait CopyCost", r"impl CopyCost for \w+", r"pub struct RunConfig", r"impl Default for RunConfig",
         r"pub struct SnapshotDir", r"impl Drop for Interp"]


def block_end(lines, i, indent):
    """Index just past the block opened on line i (closed by `indent + '}'`)."""
    if lines[i].rstrip().endswith(";"):
        return i + 1
    j = i
    while not (lines[j].startswith(indent + "}") and len(lines[j].rstrip()) == len(indent) + 1):
        j += 1
    return j + 1


def doc_start(lines, i):
    while i > 0 and re.match(r"\s*(///|#\[)", lines[i - 1]):
        i -= 1
    return i


def delete(lines, pat, indent):
    out, i = [], 0
    rx = re.compile("^" + indent + r"(pub(\(crate\))? )?" + pat)
    while i < len(lines):
        if rx.match(lines[i]):
            s = doc_start(lines, i)
            del out[len(out) - (i - s):]
            i = block_end(lines, i, indent)
            if i < len(lines) and lines[i].strip() == "" and out and out[-1].strip() == "":
                i += 1
            continue
        out.append(lines[i])
        i += 1
    return out


def migrate(text, is_interp):
    lines = text.split("\n")
    if is_interp:
        for m in METHODS:
            lines = delete(lines, "fn " + m + r"\b", "    ")
        for it in ITEMS:
            lines = delete(lines, it, "")
        # The struct's fields that moved (with their doc comments).
        out, i, in_struct = [], 0, False
        while i < len(lines):
            l = lines[i]
            if l.startswith("pub struct Interp<"):
                in_struct = True
            elif in_struct and l == "}":
                in_struct = False
            m = re.match(r"    (pub(\(crate\))? )?(\w+): ", l)
            if in_struct and m and m.group(3) in FIELDS:
                s = doc_start(lines, i)
                del out[len(out) - (i - s):]
                i += 1
                continue
            out.append(l)
            i += 1
        lines = out
    text = "\n".join(lines)
    f = "|".join(FIELDS)
    text = re.sub(r"\b(self|this)\.(" + f + r")\b(?!\()", r"\1.host.\2", text)
    text = re.sub(r"\b(self|this)\.(" + "|".join(METHODS) + r")\(", r"\1.host.\2(", text)
    return text


for path in sys.argv[1:]:
    t = open(path).read()
    open(path, "w").write(migrate(t, path.endswith("interp.rs")))
