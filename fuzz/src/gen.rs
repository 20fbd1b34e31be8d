//! A structure-aware generator of Leash programs (for the `eval` target): from the fuzzer's
//! bytes (`arbitrary::Unstructured`) it writes a program that is valid Leash most of the
//! time: functions, blocks of every kind, expressions of every operator, and calls of
//! every builtin in the table (`leash::builtins::all()`, so a new builtin is fuzzed
//! without touching this file) with arguments of every type, odd ones included.

use arbitrary::{Result, Unstructured};

const VARS: &[&str] = &["a", "b", "c", "xs", "m", "s"];
const MODULES: &[&str] = &["cgi", "path", "args"];

/// Values that sit on edges: zero, signs, integer limits, float limits, big and tiny.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "7",
    "10",
    "-0",
    "0.5",
    "-0.5",
    "1.5",
    "255",
    "256",
    "1024",
    "65535",
    "65536",
    "16384",
    "16385",
    "1048576",
    "4294967295",
    "4294967296",
    "9007199254740992",
    "9007199254740993",
    "-9007199254740992",
    "1e308",
    "-1e308",
    "1.7976931348623157e308",
    "5e-324",
    "1e-300",
    "1e21",
    "1e-7",
    "0xff",
    "0x7fffffff",
    "0xffffffffffffffff",
    "8210266876799",
    "-8334601228800",
    "86399",
    "-86400",
    "100",
    "599",
    "64",
    "65",
    "128",
    "129",
    "3.14159",
    "2e9",
    "1e15",
];

/// Strings: empty, ASCII, multi-byte UTF-8, invalid UTF-8, control bytes, format and
/// pattern and date and URL and JSON and CSV syntax.
const STRINGS: &[&str] = &[
    r#""""#,
    r#""a""#,
    r#""abc""#,
    r#"" a b ""#,
    r#""\n""#,
    r#""\r\n""#,
    r#""\t""#,
    r#""\0""#,
    r#""\xff""#,
    r#""\xc3""#,
    r#""\u{e9}""#,
    r#""\u{10ffff}""#,
    r#""\u{1f600}""#,
    r#""%""#,
    r#""%zz""#,
    r#""%41%C3%A9""#,
    r#""a=b&c=d+e""#,
    r#""http://u:p@h:8080/p?q#f""#,
    r#""[::1]""#,
    r#""2024-02-29T12:34:56Z""#,
    r#""2024-02-29T14:34:56.5+02:00""#,
    r#""%Y-%m-%d %H:%M:%S""#,
    r#""%s""#,
    r#""%.f %z %::z %j %a""#,
    r#""(a+)+$""#,
    r#""[a-z]{3}[0-9]""#,
    r#""\\w{41}""#,
    r#""(?P<n>x)|y""#,
    r#""$1\${n}$$""#,
    r#""\\p{L}+""#,
    r#""[""#,
    r#""{\"k\": [1, 2.5, null, true, \"x\"]}""#,
    r#""[[[[]]]]""#,
    r#""1e400""#,
    r#""a,b\n1,2\n""#,
    r#""\"q\"\"\",x""#,
    r#""header""#,
    r#""delimiter""#,
    r#""Content-Type""#,
    r#""Status""#,
    r#""x\ny""#,
    r#"'raw ${not} \n'"#,
    r#""${1 + 1}""#,
    r#""<&>\"'""#,
    r#""/a/../b/./c""#,
    r#""--flag=1""#,
];

/// Block strings (SPEC 3), each ending with the line break after its closing delimiter:
/// they stand only where a bracket is open (an argument or a list item), so that the
/// statement goes on after them.
const BLOCKS: &[&str] = &[
    "\"\"\"\n  a\n  \"\"\"\n",
    "\"\"\"\n\"\"\"\n",
    "\"\"\"\n    <p class=\"x\">\n      \\t${1 + 2} # not a comment \\\n    joined\n\n    </p>\n\n    \"\"\"\n",
    "'''\n\traw ${x} \\q \"\n\t'''\n",
    "\"\"\"\n  SELECT 1;\n    \n  \"\"\"\n",
];

pub struct Gen<'a, 'b> {
    u: &'b mut Unstructured<'a>,
    out: String,
    indent: usize,
    /// Inside an interpolation: the expression must stay on its line.
    interp: u32,
    loops: usize,
    in_fn: bool,
    /// Inside an anonymous function's body: no in-place builtin (it cannot change anything).
    in_lambda: u32,
    fns: Vec<usize>,
    modules: Vec<&'static str>,
    builtins: &'static [&'static leash::builtins::Builtin],
}

fn builtins() -> &'static [&'static leash::builtins::Builtin] {
    static ALL: std::sync::OnceLock<Vec<&'static leash::builtins::Builtin>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| leash::builtins::all().collect())
}

/// A program from the fuzzer's bytes.
pub fn program(u: &mut Unstructured<'_>) -> Result<String> {
    let mut g = Gen {
        u,
        out: String::new(),
        indent: 0,
        interp: 0,
        loops: 0,
        in_lambda: 0,
        in_fn: false,
        fns: vec![],
        modules: vec![],
        builtins: builtins(),
    };
    g.program()?;
    Ok(g.out)
}

impl Gen<'_, '_> {
    fn line(&mut self, s: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> Result<T> {
        Ok(*self.u.choose(xs)?)
    }

    fn program(&mut self) -> Result<()> {
        // Importing a module parses it (hundreds of lines): now and then, not often.
        for m in MODULES {
            if self.u.ratio(1, 24)? {
                self.line(&format!("import {m}"));
                self.modules.push(m);
            }
        }
        let nfns = self.u.int_in_range(0..=3)?;
        self.fns = (0..nfns).map(|_| self.u.int_in_range(0..=3)).collect::<Result<_>>()?;
        for (i, &arity) in self.fns.clone().iter().enumerate() {
            let params: Vec<String> = (0..arity).map(|j| VARS[j].to_string()).collect();
            self.line(&format!("fn f{i}({})", params.join(", ")));
            self.indent += 1;
            self.in_fn = true;
            if self.u.ratio(1, 4)? {
                self.line("global s");
            }
            for v in &VARS[arity..] {
                let e = self.literal()?;
                self.line(&format!("{v} = {e}"));
            }
            let n = self.u.int_in_range(1..=8)?;
            for _ in 0..n {
                if self.u.is_empty() {
                    break;
                }
                self.wrapped(3)?;
            }
            let e = self.expr(3)?;
            self.line(&format!("return {e}"));
            self.in_fn = false;
            self.indent -= 1;
            self.line("end");
        }
        // Give the variables values first, so that more of the program gets going.
        for v in VARS {
            let e = self.literal()?;
            self.line(&format!("{v} = {e}"));
        }
        // Main: many statements, most in a `try` of their own, so that one error (most
        // odd calls are one) does not end the run before the rest is reached.
        let n = self.u.int_in_range(1..=40)?;
        for _ in 0..n {
            if self.u.is_empty() {
                break;
            }
            self.wrapped(4)?;
        }
        Ok(())
    }

    /// A statement, most of the time in a `try` of its own.
    fn wrapped(&mut self, depth: u32) -> Result<()> {
        if self.u.ratio(7, 8)? {
            self.line("try");
            self.indent += 1;
            self.stmt(depth)?;
            self.indent -= 1;
            self.line("catch e");
            self.line("end");
            Ok(())
        } else {
            self.stmt(depth)
        }
    }

    fn block(&mut self, depth: u32) -> Result<()> {
        let n = self.u.int_in_range(1..=6)?;
        for _ in 0..n {
            if self.u.is_empty() {
                break;
            }
            self.stmt(depth)?;
        }
        Ok(())
    }

    fn stmt(&mut self, depth: u32) -> Result<()> {
        let choice = if depth == 0 { self.u.int_in_range(0..=4)? } else { self.u.int_in_range(0..=14)? };
        match choice {
            0 | 1 if self.u.ratio(1, 6)? => {
                // Parallel assignment or unpacking (round 3), now and then a swap.
                let (v, w) = (self.pick(VARS)?, self.pick(VARS)?);
                let rhs = match self.u.int_in_range(0..=2)? {
                    0 => format!("{w}, {v}"),
                    1 => format!("{}, {}", self.expr(2)?, self.expr(2)?),
                    _ => self.expr(2)?,
                };
                self.line(&format!("{v}, {w} = {rhs}"));
            }
            0 | 1 => {
                let v = self.pick(VARS)?;
                let e = self.expr(3)?;
                self.line(&format!("{v} = {e}"));
            }
            2 if self.u.ratio(1, 4)? => {
                // The shapes the resolver turns into idiom nodes (`m[k] = get(m, k, d) + n`,
                // `x = get(m, k)`), with every arity of `get` from 0 to 4: a node that read
                // its arguments before the arity check crashed on `m[k] = get(m) + 1`.
                let v = self.pick(VARS)?;
                let k = self.atom()?;
                let n = self.u.int_in_range(0..=4)?;
                let mut args: Vec<String> = vec![v.to_string(), k.clone()];
                if n > 2 {
                    args.push(self.literal()?);
                }
                if n > 3 {
                    args.push(self.atom()?);
                }
                args.truncate(n);
                let op = self.pick(&["+", "-", "*"])?;
                let d = self.literal()?;
                if self.u.ratio(1, 2)? {
                    self.line(&format!("{v}[{k}] = get({}) {op} {d}", args.join(", ")));
                } else {
                    self.line(&format!("{v} = get({})", args.join(", ")));
                }
            }
            2 => {
                let p = self.place()?;
                let op = self.pick(&["=", "+=", "-=", "*=", "/=", "//=", "%=", "..="])?;
                let e = self.expr(2)?;
                self.line(&format!("{p} {op} {e}"));
            }
            3 | 4 => {
                let c = self.call(2)?;
                self.line(&c);
            }
            5 => {
                let c = self.expr(2)?;
                self.line(&format!("if {c}"));
                self.nested(depth)?;
                // (At most 3: `ratio` is true forever once the bytes run out.)
                for _ in 0..3 {
                    if self.u.is_empty() || !self.u.ratio(1, 3)? {
                        break;
                    }
                    let c = self.expr(2)?;
                    self.line(&format!("elif {c}"));
                    self.nested(depth)?;
                }
                if self.u.ratio(1, 2)? {
                    self.line("else");
                    self.nested(depth)?;
                }
                self.line("end");
            }
            6 => {
                // A loop that ends on its own most of the time; the budgets end the rest.
                let v = self.pick(VARS)?;
                let n = self.u.int_in_range(0..=20)?;
                self.line(&format!("{v} = 0"));
                self.line(&format!("while {v} < {n}"));
                self.indent += 1;
                self.line(&format!("{v} += 1"));
                self.indent -= 1;
                self.loop_body(depth)?;
                self.line("end");
            }
            7 => {
                let v = self.pick(VARS)?;
                let a = self.expr(1)?;
                let b = self.expr(1)?;
                if self.u.ratio(1, 2)? {
                    let s = self.expr(1)?;
                    self.line(&format!("for {v} = {a} to {b} step {s}"));
                } else {
                    self.line(&format!("for {v} = {a} to {b}"));
                }
                self.loop_body(depth)?;
                self.line("end");
            }
            8 => {
                let e = self.expr(2)?;
                if self.u.ratio(1, 2)? {
                    let k = self.pick(VARS)?;
                    self.line(&format!("for {k}, i in {e}"));
                } else {
                    let v = self.pick(VARS)?;
                    self.line(&format!("for {v} in {e}"));
                }
                self.loop_body(depth)?;
                self.line("end");
            }
            9 => {
                self.line("try");
                self.nested(depth)?;
                let v = self.pick(VARS)?;
                self.line(&format!("catch {v}"));
                self.nested(depth)?;
                self.line("end");
            }
            10 => {
                let e = self.expr(2)?;
                self.line(&format!("throw {e}"));
            }
            11 => {
                if self.loops > 0 {
                    let w = self.pick(&["break", "continue"])?;
                    self.line(w);
                } else if self.in_fn {
                    let e = self.expr(2)?;
                    self.line(&format!("return {e}"));
                } else {
                    let e = self.expr(2)?;
                    self.line(&format!("print({e})"));
                }
            }
            12 => {
                let e = self.expr(2)?;
                self.line(&format!("s = str({e})"));
            }
            13 => {
                // Grow a value fast: the memory and value limits.
                let v = self.pick(VARS)?;
                let e = self.expr(1)?;
                let grow = self.pick(&[
                    "{v} = repeat(str({e}), 100000)",
                    "{v} = range(16384)",
                    "{v} = [{e}, {v}, {v}, {v}]",
                    "{v} = {v} .. {v}",
                    "push({v}, {v})",
                    // (A list the variable alone holds changed in place: `Builtin::fast`.)
                    "push({v}, {e})",
                    "{v} = pop({v})",
                    "{v} = split(repeat(\"a,\", 20000), \",\")",
                ])?;
                self.line(&grow.replace("{v}", v).replace("{e}", &e));
            }
            _ => {
                let v = self.pick(VARS)?;
                let c = self.call(2)?;
                self.line(&format!("{v} = {c}"));
            }
        }
        Ok(())
    }

    fn nested(&mut self, depth: u32) -> Result<()> {
        self.indent += 1;
        self.block(depth - 1)?;
        self.indent -= 1;
        Ok(())
    }

    fn loop_body(&mut self, depth: u32) -> Result<()> {
        self.loops += 1;
        let r = self.nested(depth);
        self.loops -= 1;
        r
    }

    fn place(&mut self) -> Result<String> {
        let mut p = self.pick(VARS)?.to_string();
        for _ in 0..self.u.int_in_range(0..=2)? {
            if self.u.ratio(1, 2)? {
                let i = self.expr(1)?;
                p.push_str(&format!("[{i}]"));
            } else {
                let f = self.pick(&["k", "x", "name"])?;
                p.push_str(&format!(".{f}"));
            }
        }
        Ok(p)
    }

    fn call(&mut self, depth: u32) -> Result<String> {
        if !self.fns.is_empty() && self.u.ratio(1, 5)? {
            let i = self.u.choose_index(self.fns.len())?;
            let n = self.fns[i];
            let args = self.args(n, depth)?;
            return Ok(format!("f{i}({args})"));
        }
        if !self.modules.is_empty() && self.u.ratio(1, 8)? {
            // A module function (the stdlib, written in Leash).
            let m = self.pick(&self.modules.clone())?;
            let fs: &[(&str, usize)] = match m {
                "cgi" => &[
                    ("query", 0),
                    ("cookies", 0),
                    ("method", 0),
                    ("escape", 1),
                    ("headers", 1),
                    ("make_cookie", 3),
                    ("status_text", 1),
                    ("header", 1),
                    ("env", 1),
                    ("redirect", 1),
                ],
                "path" => &[
                    ("join", 2),
                    ("normalize", 1),
                    ("split", 1),
                    ("extension", 1),
                    ("basename", 1),
                    ("dirname", 1),
                    ("stem", 1),
                    ("is_absolute", 1),
                ],
                _ => &[("parse", 2), ("usage", 1), ("help", 1), ("try_parse", 2)],
            };
            let (f, n) = self.pick(fs)?;
            let args = self.args(n, depth)?;
            return Ok(format!("{m}.{f}({args})"));
        }
        let b = loop {
            let b = *self.u.choose(self.builtins)?;
            // Gated builtins fail on their gate (no capability is granted): now and then.
            // A builtin that needs a function argument: only when a function of the
            // arity it calls is defined (else the program would not load).
            if b.is_place() && self.in_lambda > 0 {
                continue;
            }
            if b.cap.is_none() || self.u.ratio(1, 8)? {
                break b;
            }
        };
        let max = if b.max == leash::builtins::VARIADIC { b.min as usize + 4 } else { b.max as usize };
        let mut n = self.u.int_in_range(b.min as usize..=max)?;
        // Odd arities now and then (a load error: the arity check).
        if self.u.ratio(1, 1000)? {
            n = if n > 0 && self.u.ratio(1, 2)? { n - 1 } else { n + 1 };
        }
        if b.is_place() && n > 0 {
            let p = self.place()?;
            let rest = self.args(n - 1, depth)?;
            return Ok(if rest.is_empty() { format!("{}({p})", b.name) } else { format!("{}({p}, {rest})", b.name) });
        }
        if let Some(fp) = b.fnp {
            let pos = fp.pos as usize;
            if n > pos {
                // A function argument (SPEC 10): an anonymous function (round 3), or the
                // bare name of a user function.
                let lambda = self.fn_of(fp.arity as usize).is_none() || self.u.ratio(1, 2)?;
                match self.fn_of(fp.arity as usize) {
                    _ if lambda && (fp.only || self.u.ratio(1, 2)?) => {
                        let mut v = Vec::with_capacity(n);
                        for k in 0..n {
                            v.push(if k == pos { self.lambda(fp.arity as usize, depth)? } else { self.expr(depth)? });
                        }
                        return Ok(format!("{}({})", b.name, v.join(", ")));
                    }
                    Some(i) if fp.only || self.u.ratio(1, 2)? => {
                        let mut v = Vec::with_capacity(n);
                        for k in 0..n {
                            v.push(if k == pos { format!("f{i}") } else { self.expr(depth)? });
                        }
                        return Ok(format!("{}({})", b.name, v.join(", ")));
                    }
                    None if fp.only => n = pos,
                    _ => {}
                }
            }
        }
        let args = self.args(n, depth)?;
        Ok(format!("{}({args})", b.name))
    }

    /// An anonymous function of `arity` parameters (`p0`, `p1`) whose body reads them and
    /// captures what else it reads.
    fn lambda(&mut self, arity: usize, depth: u32) -> Result<String> {
        let params: Vec<String> = (0..arity).map(|i| format!("p{i}")).collect();
        self.in_lambda += 1;
        let e = self.expr(depth.saturating_sub(1));
        self.in_lambda -= 1;
        let p = params.first().cloned().unwrap_or_else(|| "nil".into());
        let body = match self.u.int_in_range(0..=2)? {
            0 => e?,
            1 => format!("[{}, {}]", params.join(", "), e?),
            _ => format!("{p} if {} else {p}", e?),
        };
        Ok(format!("fn({}) => {body}", params.join(", ")))
    }

    /// A generated function taking `arity` parameters, if there is one.
    fn fn_of(&self, arity: usize) -> Option<usize> {
        self.fns.iter().position(|&a| a == arity)
    }

    fn args(&mut self, n: usize, depth: u32) -> Result<String> {
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            // Now and then a block string (outside interpolations, which stay on a line).
            if self.interp == 0 && self.u.ratio(1, 24)? {
                v.push(self.pick(BLOCKS)?.to_string());
                continue;
            }
            v.push(self.expr(depth)?);
        }
        // Now and then the arguments over several lines (one statement: SPEC 2).
        let sep = if self.interp == 0 && self.u.ratio(1, 12)? { ",\n  # between\n\n" } else { ", " };
        Ok(v.join(sep))
    }

    fn expr(&mut self, depth: u32) -> Result<String> {
        if depth == 0 || self.u.ratio(1, 3)? {
            return self.atom();
        }
        let d = depth - 1;
        Ok(match self.u.int_in_range(0..=9)? {
            0 | 1 => {
                let op = self.pick(&[
                    "+", "-", "*", "/", "//", "%", "**", "..", "==", "!=", "<", "<=", ">", ">=", "in", "not in", "and",
                    "or",
                ])?;
                let a = self.expr(d)?;
                let b = self.expr(d)?;
                format!("({a} {op} {b})")
            }
            2 => {
                let op = self.pick(&["-", "not "])?;
                let a = self.expr(d)?;
                format!("({op}{a})")
            }
            3 | 4 => self.call(d)?,
            5 => {
                let n = self.u.int_in_range(0..=4)?;
                let a = self.args(n, d)?;
                format!("[{a}]")
            }
            6 => {
                let n = self.u.int_in_range(0..=3)?;
                let mut items = vec![];
                for _ in 0..n {
                    let k = self.pick(&["k", "x", "name", "\"header\"", "\"delimiter\"", "\"a b\"", "\"\""])?;
                    let v = self.expr(d)?;
                    items.push(format!("{k}: {v}"));
                }
                format!("{{{}}}", items.join(", "))
            }
            7 if self.u.ratio(1, 3)? => {
                // The conditional expression (round 3).
                let (a, c, b) = (self.expr(d)?, self.expr(d)?, self.expr(d)?);
                format!("({a} if {c} else {b})")
            }
            7 => {
                let a = self.expr(d)?;
                let i = self.expr(d)?;
                format!("{a}[{i}]")
            }
            8 => {
                let a = self.pick(VARS)?;
                let f = self.pick(&["k", "x", "name"])?;
                format!("{a}.{f}")
            }
            _ => {
                self.interp += 1;
                let a = self.expr(d);
                self.interp -= 1;
                format!("\"<${{{}}}>\"", a?)
            }
        })
    }

    /// An atom that is not a variable.
    fn literal(&mut self) -> Result<String> {
        loop {
            let a = self.atom()?;
            if !VARS.contains(&a.as_str()) {
                return Ok(a);
            }
            if self.u.is_empty() {
                return Ok("0".into());
            }
        }
    }

    fn atom(&mut self) -> Result<String> {
        Ok(match self.u.int_in_range(0..=7)? {
            0 | 1 => self.pick(NUMBERS)?.to_string(),
            2 | 3 => self.pick(STRINGS)?.to_string(),
            4 => self.pick(&["nil", "true", "false"])?.to_string(),
            5 => {
                // A short literal from the fuzzer's own bytes, escaped.
                let n = self.u.int_in_range(0..=8)?;
                let bytes = self.u.bytes(n)?;
                let mut s = String::from("\"");
                for &c in bytes {
                    match c {
                        b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b' ' | b',' | b'=' | b'&' | b'%' | b'/' | b'.' => {
                            s.push(c as char)
                        }
                        _ => s.push_str(&format!("\\x{c:02x}")),
                    }
                }
                s.push('"');
                s
            }
            6 => format!("{}", self.u.arbitrary::<i32>()?),
            _ => self.pick(VARS)?.to_string(),
        })
    }
}
