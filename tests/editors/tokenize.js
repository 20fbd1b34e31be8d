// Tokenise Leash scripts with the project's TextMate grammar (vscode-textmate and
// vscode-oniguruma, from NODE_PATH) and print, per file, a JSON list of
// [line, text, scopes] for every token.
const fs = require("fs");
const path = require("path");
const vsctm = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

const wasm = fs.readFileSync(path.join(path.dirname(require.resolve("vscode-oniguruma")), "onig.wasm")).buffer;
const onigLib = oniguruma.loadWASM(wasm).then(() => ({
  createOnigScanner: (p) => new oniguruma.OnigScanner(p),
  createOnigString: (s) => new oniguruma.OnigString(s),
}));
const [grammarFile, ...files] = process.argv.slice(2);
const registry = new vsctm.Registry({
  onigLib,
  loadGrammar: async () => vsctm.parseRawGrammar(fs.readFileSync(grammarFile, "utf8"), grammarFile),
});
registry.loadGrammar("source.leash").then((grammar) => {
  const out = {};
  for (const f of files) {
    let rule = vsctm.INITIAL;
    const toks = [];
    fs.readFileSync(f, "utf8").split("\n").forEach((line, i) => {
      const r = grammar.tokenizeLine(line, rule);
      for (const t of r.tokens) toks.push([i + 1, line.substring(t.startIndex, t.endIndex), t.scopes]);
      rule = r.ruleStack;
    });
    out[f] = toks;
  }
  process.stdout.write(JSON.stringify(out));
});
