// Every export of src/ has an importer: a name exported and imported nowhere (src, test, bench)
// is either dead or should be the file's own. Read with TypeScript's parser from the sources
// themselves (imports, re-exports, `import('…').Name` types and `require('…')`), so an export
// left behind by a change fails here.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import * as ts from 'typescript';

const ROOT = path.resolve(__dirname, '../../..');
const SRC = path.join(ROOT, 'src');
/** Where importers may be: the sources, their tests and the bench. */
const IMPORTER_ROOTS = ['src', 'test', 'bench'].map((d) => path.join(ROOT, d));
/** Everything a namespace import or a `require` of a file may use. */
const ALL = '*';

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'generated' || e.name === 'fixtures' ? [] : sources(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** The file a relative module specifier names, or none for a package or a file outside the tree. */
function resolveSpec(from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = path.resolve(path.dirname(from), spec);
  for (const candidate of [base, `${base}.ts`, path.join(base, 'index.ts')]) {
    if (candidate.endsWith('.ts') && fs.existsSync(candidate)) return candidate;
  }
  return undefined;
}

const hasExportModifier = (node: ts.Node): boolean =>
  ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);

/** The names a source file exports, each with its line. */
function exportsOf(sf: ts.SourceFile): Map<string, number> {
  const out = new Map<string, number>();
  const line = (n: ts.Node): number => sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
  for (const st of sf.statements) {
    if (ts.isExportDeclaration(st) && st.exportClause && ts.isNamedExports(st.exportClause)) {
      for (const el of st.exportClause.elements) out.set(el.name.text, line(el));
    } else if (ts.isExportAssignment(st)) {
      out.set('default', line(st));
    } else if (hasExportModifier(st)) {
      if (ts.isVariableStatement(st)) {
        for (const d of st.declarationList.declarations) if (ts.isIdentifier(d.name)) out.set(d.name.text, line(d));
      } else if ((ts.isFunctionDeclaration(st) || ts.isClassDeclaration(st) || ts.isInterfaceDeclaration(st) || ts.isTypeAliasDeclaration(st) || ts.isEnumDeclaration(st)) && st.name) {
        out.set(st.name.text, line(st));
      }
    }
  }
  return out;
}

/** What each file is asked for by the others: file -> names (ALL for a namespace import or a require). */
function importedNames(files: readonly string[]): Map<string, Set<string>> {
  const used = new Map<string, Set<string>>();
  const use = (target: string | undefined, name: string): void => {
    if (!target) return;
    if (!used.has(target)) used.set(target, new Set());
    used.get(target)!.add(name);
  };
  for (const file of files) {
    const sf = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, false);
    const visit = (node: ts.Node): void => {
      if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
        const target = resolveSpec(file, node.moduleSpecifier.text);
        if (ts.isImportDeclaration(node)) {
          const clause = node.importClause;
          if (clause?.name) use(target, 'default');
          const bindings = clause?.namedBindings;
          if (bindings && ts.isNamespaceImport(bindings)) use(target, ALL);
          if (bindings && ts.isNamedImports(bindings)) for (const el of bindings.elements) use(target, (el.propertyName ?? el.name).text);
          if (!clause) use(target, ALL);
        } else if (node.exportClause && ts.isNamedExports(node.exportClause)) {
          for (const el of node.exportClause.elements) use(target, (el.propertyName ?? el.name).text);
        } else {
          use(target, ALL);
        }
      } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
        const target = resolveSpec(file, node.argument.literal.text);
        const q = node.qualifier;
        use(target, q === undefined ? ALL : ts.isIdentifier(q) ? q.text : q.getText(sf).split('.')[0]!);
      } else if (ts.isCallExpression(node) && node.arguments.length === 1 && ts.isStringLiteral(node.arguments[0]!) && (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))) {
        use(resolveSpec(file, node.arguments[0].text), ALL);
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return used;
}

describe('the exports of src/', () => {
  it('each has an importer in src, test or bench', () => {
    const files = IMPORTER_ROOTS.filter((d) => fs.existsSync(d)).flatMap(sources);
    const used = importedNames(files);
    const unused: string[] = [];
    let exportCount = 0;
    for (const file of sources(SRC)) {
      const asked = used.get(file) ?? new Set<string>();
      if (asked.has(ALL)) continue;
      const sf = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, false);
      for (const [name, line] of exportsOf(sf)) {
        exportCount++;
        if (!asked.has(name)) unused.push(`${path.relative(ROOT, file)}:${line} ${name}`);
      }
    }
    assert.ok(exportCount > 500, `sees the exports (${exportCount})`);
    assert.ok((used.get(path.join(SRC, 'errors.ts'))?.size ?? 0) > 3, 'sees the imports');
    assert.deepEqual(unused, [], 'exported but imported nowhere: drop the export (or the code)');
  });
});
