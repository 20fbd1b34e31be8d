# Are We Fast Yet "Json": a hand-written recursive-descent JSON parser (in the manner
# of minimal-json) parses stdin (ops.json, ~22 KB) N times (first argument; default
# 40). Prints the number of operations and the objects, arrays, strings, numbers and
# literals of one parse. Numbers are kept as their text, as in the original.
import sys

ESCAPES = {'"': '"', "/": "/", "\\": "\\", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class ParseError(Exception):
    pass


class Parser:
    def __init__(self, text):
        self.input = text
        self.index = -1
        self.current = ""
        self.counts = {"objects": 0, "arrays": 0, "strings": 0, "numbers": 0, "literals": 0}

    def parse(self):
        self.read()
        self.skip_white_space()
        result = self.read_value()
        self.skip_white_space()
        if self.current != "":
            raise ParseError("unexpected character at %d" % self.index)
        return result

    def read(self):
        self.index += 1
        if self.index < len(self.input):
            self.current = self.input[self.index]
        else:
            self.current = ""

    def skip_white_space(self):
        while self.current in (" ", "\t", "\n", "\r") and self.current != "":
            self.read()

    def is_digit(self):
        return "0" <= self.current <= "9" and self.current != ""

    def read_required(self, ch):
        if self.current != ch:
            raise ParseError("expected '%s' at %d" % (ch, self.index))
        self.read()

    def read_value(self):
        c = self.current
        if c == "n":
            self.read()
            for ch in "ull":
                self.read_required(ch)
            self.counts["literals"] += 1
            return None
        if c == "t":
            self.read()
            for ch in "rue":
                self.read_required(ch)
            self.counts["literals"] += 1
            return True
        if c == "f":
            self.read()
            for ch in "alse":
                self.read_required(ch)
            self.counts["literals"] += 1
            return False
        if c == '"':
            self.counts["strings"] += 1
            return self.read_string()
        if c == "[":
            return self.read_array()
        if c == "{":
            return self.read_object()
        if c == "-" or self.is_digit():
            return self.read_number()
        raise ParseError("expected a value at %d" % self.index)

    def read_array(self):
        self.counts["arrays"] += 1
        self.read()
        array = []
        self.skip_white_space()
        if self.current == "]":
            self.read()
            return array
        while True:
            self.skip_white_space()
            array.append(self.read_value())
            self.skip_white_space()
            if self.current != ",":
                break
            self.read()
        self.read_required("]")
        return array

    def read_object(self):
        self.counts["objects"] += 1
        self.read()
        obj = {}
        self.skip_white_space()
        if self.current == "}":
            self.read()
            return obj
        while True:
            self.skip_white_space()
            if self.current != '"':
                raise ParseError("expected a name at %d" % self.index)
            name = self.read_string()
            self.skip_white_space()
            self.read_required(":")
            self.skip_white_space()
            obj[name] = self.read_value()
            self.skip_white_space()
            if self.current != ",":
                break
            self.read()
        self.read_required("}")
        return obj

    def read_string(self):
        self.read()
        start = self.index
        parts = []
        while self.current != '"':
            if self.current == "":
                raise ParseError("unterminated string")
            if self.current == "\\":
                parts.append(self.input[start:self.index])
                self.read()
                if self.current not in ESCAPES or self.current == "":
                    raise ParseError("expected a valid escape sequence at %d" % self.index)
                parts.append(ESCAPES[self.current])
                self.read()
                start = self.index
            else:
                self.read()
        parts.append(self.input[start:self.index])
        self.read()
        return "".join(parts)

    def read_digits(self):
        if not self.is_digit():
            raise ParseError("expected a digit at %d" % self.index)
        while self.is_digit():
            self.read()

    def read_number(self):
        self.counts["numbers"] += 1
        start = self.index
        if self.current == "-":
            self.read()
        if self.current == "0":
            self.read()
        else:
            self.read_digits()
        if self.current == ".":
            self.read()
            self.read_digits()
        if self.current in ("e", "E") and self.current != "":
            self.read()
            if self.current in ("+", "-") and self.current != "":
                self.read()
            self.read_digits()
        return self.input[start:self.index]


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    text = sys.stdin.read()
    ops, counts = 0, None
    for _ in range(rounds):
        p = Parser(text)
        ops = len(p.parse()["operations"])
        counts = p.counts
    print(ops, counts["objects"], counts["arrays"], counts["strings"], counts["numbers"],
          counts["literals"])


main()
