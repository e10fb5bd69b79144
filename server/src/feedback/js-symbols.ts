import { createHash } from 'node:crypto';
import ts from 'typescript';

/*
 * Per-declaration symbols of a JavaScript/TypeScript module, for test-impact analysis finer than
 * "which files does a test load". A module is split into its top-level bindings (functions,
 * classes, variables, types, import bindings) and its import-time code; for each we record which
 * top-level bindings it references and which names it reaches through a namespace import
 * (`z.string` through `import * as z`). `js-symbol-graph.ts` turns these records into a graph.
 *
 * What this will not see, by design: references by string (`obj[name]`, registries keyed by
 * strings), `eval`, and callbacks passed to a call in a top-level variable initializer that the
 * callee runs at import time (they count for the declared name, not for import-time code; a
 * change inside such a call is an import-time change, which the selection treats as reaching
 * every importer).
 */

/** What one piece of code uses: top-level bindings, `ns.name` members, modules loaded whole. */
export interface JsUses {
  refs: string[];
  /**
   * `[import binding, member, member?]`, e.g. `['z', 'string']` for `z.string(…)`: for a binding
   * that is a namespace (`import * as z`, or `import { z }` of a re-exported namespace) only the
   * member counts (and in `z.core.$ZodType`, only `$ZodType` when `core` is a namespace too); for
   * any other binding the graph counts the binding itself.
   */
  members: string[][];
  /** Specifiers of `require('x')`, `import('x')` and side-effect imports: the whole module. */
  modules: string[];
}

export interface JsSymbols {
  /** Import bindings; `imported` is a name, `default`, or `*` for `import * as local`. */
  imports: Array<{ local: string; specifier: string; imported: string }>;
  /** Exported names: a local binding, or a re-export (`imported` `*` for `export * as name from`). */
  exports: Array<{ exported: string; local?: string; specifier?: string; imported?: string }>;
  /** Specifiers of `export * from`. */
  stars: string[];
  /** Top-level declarations: a hash of their text (to see which ones a change touched) and their uses. */
  declarations: Array<{ name: string; hash: string; uses: JsUses }>;
  /** Code that runs when the module is loaded (function and method bodies left out). */
  init: JsUses;
  /** CommonJS or `export =`: the analysis cannot list the module's names. */
  opaque: boolean;
}

export function parseJsSymbols(source: ts.SourceFile): JsSymbols {
  const imports: JsSymbols['imports'] = [];
  const exports: JsSymbols['exports'] = [];
  const stars: string[] = [];
  const initUses = new UsesBuilder();
  const declared = new Map<string, { texts: string[]; uses: UsesBuilder }>();
  let opaque = false;

  // First pass: the module's top-level binding names, so uses can be told from other identifiers.
  const bindings = new Set<string>();
  const namespaces = new Set<string>();
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement)) {
      const specifier = literal(statement.moduleSpecifier);
      const clause = statement.importClause;
      if (!specifier) continue;
      if (!clause) {
        initUses.modules.add(specifier);
        continue;
      }
      if (clause.name) imports.push({ local: clause.name.text, specifier, imported: 'default' });
      const named = clause.namedBindings;
      if (named && ts.isNamespaceImport(named)) {
        imports.push({ local: named.name.text, specifier, imported: '*' });
        namespaces.add(named.name.text);
      } else if (named) {
        for (const element of named.elements) imports.push({ local: element.name.text, specifier, imported: (element.propertyName ?? element.name).text });
      }
    } else if (ts.isImportEqualsDeclaration(statement) && ts.isExternalModuleReference(statement.moduleReference)) {
      const specifier = literal(statement.moduleReference.expression);
      if (specifier) imports.push({ local: statement.name.text, specifier, imported: '*' });
    } else {
      for (const name of declaredNames(statement)) bindings.add(name);
    }
  }
  for (const entry of imports) bindings.add(entry.local);
  const scope: Scope = { bindings, namespaces, imports: new Set(imports.map((entry) => entry.local)) };

  /** Records a declaration of `name`; `typeOnly` ones (interfaces, type aliases) use nothing at run time. */
  const declare = (name: string, node: ts.Node, typeOnly = false): void => {
    const entry = declared.get(name) ?? { texts: [], uses: new UsesBuilder() };
    entry.texts.push(node.getText(source));
    if (!typeOnly) collectUses(node, entry.uses, scope, false);
    declared.set(name, entry);
  };
  const exportLocal = (statement: ts.Statement, names: string[]): void => {
    const modifiers = ts.canHaveModifiers(statement) ? ts.getModifiers(statement) : undefined;
    if (!modifiers?.some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword)) return;
    const isDefault = modifiers.some((modifier) => modifier.kind === ts.SyntaxKind.DefaultKeyword);
    for (const name of names) exports.push({ exported: isDefault ? 'default' : name, local: name });
  };

  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement) || ts.isImportEqualsDeclaration(statement)) {
      if (ts.isImportEqualsDeclaration(statement) && !ts.isExternalModuleReference(statement.moduleReference)) declare(statement.name.text, statement);
      continue;
    }
    if (ts.isExportDeclaration(statement)) {
      const specifier = statement.moduleSpecifier ? literal(statement.moduleSpecifier) : undefined;
      const clause = statement.exportClause;
      if (statement.moduleSpecifier && !specifier) continue;
      if (!clause) {
        if (specifier) stars.push(specifier);
      } else if (ts.isNamespaceExport(clause)) {
        if (specifier) exports.push({ exported: clause.name.text, specifier, imported: '*' });
      } else {
        for (const element of clause.elements) {
          const inner = (element.propertyName ?? element.name).text;
          exports.push(specifier ? { exported: element.name.text, specifier, imported: inner } : { exported: element.name.text, local: inner });
        }
      }
      continue;
    }
    if (ts.isExportAssignment(statement)) {
      if (statement.isExportEquals) opaque = true;
      if (ts.isIdentifier(statement.expression) && bindings.has(statement.expression.text)) {
        exports.push({ exported: 'default', local: statement.expression.text });
      } else {
        declare('default', statement);
        exports.push({ exported: 'default', local: 'default' });
      }
      collectUses(statement.expression, initUses, scope, true);
      continue;
    }
    if (ts.isFunctionDeclaration(statement)) {
      const name = statement.name?.text ?? 'default';
      declare(name, statement);
      exportLocal(statement, [name]);
      continue;
    }
    if (ts.isClassDeclaration(statement)) {
      const name = statement.name?.text ?? 'default';
      declare(name, statement);
      exportLocal(statement, [name]);
      // Heritage, decorators and static initializers run when the class is defined.
      collectUses(statement, initUses, scope, true);
      continue;
    }
    if (ts.isVariableStatement(statement)) {
      const names: string[] = [];
      for (const declaration of statement.declarationList.declarations) {
        const declaredHere = bindingNames(declaration.name);
        for (const name of declaredHere) declare(name, declaration);
        if (declaration.initializer && !isStoredReference(declaration.initializer, scope.namespaces)) collectUses(declaration.initializer, initUses, scope, true);
        names.push(...declaredHere);
      }
      exportLocal(statement, names);
      continue;
    }
    if (ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)) {
      declare(statement.name.text, statement, true);
      exportLocal(statement, [statement.name.text]);
      continue;
    }
    if ((ts.isEnumDeclaration(statement) || ts.isModuleDeclaration(statement)) && ts.isIdentifier(statement.name)) {
      declare(statement.name.text, statement);
      exportLocal(statement, [statement.name.text]);
      collectUses(statement, initUses, scope, false);
      continue;
    }
    // Expression statements, loops, conditionals: all of it runs at import time.
    collectUses(statement, initUses, scope, false);
  }
  if (usesCommonJsExports(source)) opaque = true;

  const declarations = [...declared].map(([name, entry]) => ({
    name,
    hash: createHash('sha1').update(entry.texts.join('\0')).digest('base64').slice(0, 16),
    uses: entry.uses.build(),
  }));
  return { imports, exports, stars, declarations, init: initUses.build(), opaque };
}

/** The module's top-level bindings, its `import * as` bindings, and all its import bindings. */
interface Scope {
  bindings: Set<string>;
  namespaces: Set<string>;
  imports: Set<string>;
}

class UsesBuilder {
  readonly refs = new Set<string>();
  readonly members = new Map<string, string[]>();
  readonly modules = new Set<string>();

  build(): JsUses {
    return { refs: [...this.refs], members: [...this.members.values()], modules: [...this.modules] };
  }
}

/**
 * Walks `node` for uses of the module's top-level bindings. A namespace binding used only as
 * `ns.member` (or `ns.Type` in a type) counts member by member; any other use of it (`ns[x]`,
 * passing `ns` along) counts as a use of the whole namespace. With `skipBodies`, the bodies of
 * functions, methods and accessors are left out (what runs at import time).
 */
function collectUses(node: ts.Node, uses: UsesBuilder, scope: Scope, skipBodies: boolean): void {
  const { bindings, namespaces, imports } = scope;
  // Local declarations that shadow a top-level binding (`const checks = …` beside `import * as
  // checks`), counted per name while their scope is being walked.
  const shadowed = new Map<string, number>();
  const isShadowed = (name: string): boolean => (shadowed.get(name) ?? 0) > 0;
  const visit = (current: ts.Node): void => {
    if (ts.isIdentifier(current)) {
      if (bindings.has(current.text) && !isShadowed(current.text) && !isPropertyName(current)) uses.refs.add(current.text);
      return;
    }
    const locals = scopeNames(current).filter((name) => bindings.has(name));
    if (locals.length > 0) {
      for (const name of locals) shadowed.set(name, (shadowed.get(name) ?? 0) + 1);
      visitScope(current);
      for (const name of locals) shadowed.set(name, (shadowed.get(name) ?? 0) - 1);
      return;
    }
    visitScope(current);
  };
  const visitScope = (current: ts.Node): void => {
    // Types do not run: `x: ZodString`, `f<T>()`, `as T` use nothing at run time (heritage
    // `extends Base<T>` does, through its expression).
    if (ts.isTypeNode(current) && !ts.isExpressionWithTypeArguments(current)) return;
    if (skipBodies && isFunctionBody(current)) return;
    // At load time, storing a reference runs nothing: `{ a, b: ns.b, ...ns }`, `[a]` only
    // matter if something later calls them, and that code references the object holding them.
    if (skipBodies && (ts.isObjectLiteralExpression(current) || ts.isArrayLiteralExpression(current))) {
      const elements: readonly ts.Node[] = ts.isObjectLiteralExpression(current) ? current.properties : current.elements;
      for (const element of elements) {
        if (ts.isShorthandPropertyAssignment(element)) continue;
        if (ts.isPropertyAssignment(element)) {
          if (ts.isComputedPropertyName(element.name)) visit(element.name);
          if (!isStoredReference(element.initializer, namespaces)) visit(element.initializer);
        } else if (!isStoredReference(element, namespaces)) visit(element);
      }
      return;
    }
    if (ts.isPropertyAccessExpression(current) || ts.isQualifiedName(current)) {
      const left = ts.isPropertyAccessExpression(current) ? current.expression : current.left;
      const right = ts.isPropertyAccessExpression(current) ? current.name : current.right;
      if (ts.isIdentifier(left) && imports.has(left.text) && !isShadowed(left.text) && ts.isIdentifier(right)) {
        uses.members.set(`${left.text}.${right.text}`, [left.text, right.text]);
        return;
      }
      // `z.core.$ZodType`: a member of a namespace re-exported as a member.
      if (
        ts.isPropertyAccessExpression(current) && ts.isPropertyAccessExpression(left) && ts.isIdentifier(left.expression) &&
        imports.has(left.expression.text) && !isShadowed(left.expression.text)
      ) {
        const path = [left.expression.text, left.name.text, current.name.text];
        uses.members.set(path.join('.'), path);
        return;
      }
      visit(left);
      return;
    }
    if ((ts.isCallExpression(current) && current.arguments.length > 0) || ts.isImportTypeNode(current)) {
      const specifier = moduleCall(current);
      if (specifier) uses.modules.add(specifier);
    }
    ts.forEachChild(current, visit);
  };
  visit(node);
}

/** A binding or `ns.member` (or a spread of a namespace) as a value: reading it runs no code. */
export function isStoredReference(node: ts.Node, namespaces: Set<string>): boolean {
  if (ts.isSpreadElement(node) || ts.isSpreadAssignment(node)) return ts.isIdentifier(node.expression) && namespaces.has(node.expression.text);
  if (ts.isParenthesizedExpression(node) || ts.isAsExpression(node) || ts.isSatisfiesExpression(node)) return isStoredReference(node.expression, namespaces);
  if (ts.isIdentifier(node)) return true;
  return ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.expression) && namespaces.has(node.expression.text);
}

/**
 * Names a scope node declares for its own body (ES modules are strict: `let`, `const`, `class`
 * and block-level functions are block-scoped, `var` and parameters function-scoped).
 */
function scopeNames(node: ts.Node): string[] {
  if (ts.isFunctionLike(node) && !ts.isTypeNode(node)) {
    const names = node.parameters.flatMap((parameter) => bindingNames(parameter.name));
    const body = 'body' in node ? node.body : undefined;
    if (body) names.push(...varNames(body));
    return names;
  }
  if (ts.isBlock(node) || ts.isModuleBlock(node)) return node.statements.flatMap(lexicalNames);
  if (ts.isCaseBlock(node)) return node.clauses.flatMap((clause) => clause.statements.flatMap(lexicalNames));
  if ((ts.isForStatement(node) || ts.isForInStatement(node) || ts.isForOfStatement(node)) && node.initializer && ts.isVariableDeclarationList(node.initializer)) {
    return node.initializer.declarations.flatMap((declaration) => bindingNames(declaration.name));
  }
  if (ts.isCatchClause(node) && node.variableDeclaration) return bindingNames(node.variableDeclaration.name);
  return [];
}

function lexicalNames(statement: ts.Statement): string[] {
  if (ts.isVariableStatement(statement)) return statement.declarationList.declarations.flatMap((declaration) => bindingNames(declaration.name));
  if ((ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement)) && statement.name) return [statement.name.text];
  return [];
}

/** `var` names declared anywhere in a function body, not inside nested functions. */
function varNames(body: ts.Node): string[] {
  const names: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node)) return;
    if (ts.isVariableDeclarationList(node) && !(node.flags & ts.NodeFlags.BlockScoped)) {
      for (const declaration of node.declarations) names.push(...bindingNames(declaration.name));
    }
    ts.forEachChild(node, visit);
  };
  visit(body);
  return names;
}

/** `require('x')`, `import('x')`, `import('x').T` in a type: the specifier. */
function moduleCall(node: ts.CallExpression | ts.ImportTypeNode): string | undefined {
  if (ts.isImportTypeNode(node)) {
    return ts.isLiteralTypeNode(node.argument) ? literal(node.argument.literal) : undefined;
  }
  const callee = node.expression;
  const isLoader = callee.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(callee) && callee.text === 'require');
  return isLoader ? literal(node.arguments[0]) : undefined;
}

function isFunctionBody(node: ts.Node): boolean {
  return (
    ts.isArrowFunction(node) || ts.isFunctionExpression(node) || ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) || ts.isSetAccessorDeclaration(node) || ts.isConstructorDeclaration(node) ||
    (ts.isPropertyDeclaration(node) && !node.modifiers?.some((modifier) => modifier.kind === ts.SyntaxKind.StaticKeyword))
  );
}

/** The name in `{ name: … }`, `obj.name`, a class member or an enum member is not a reference. */
function isPropertyName(node: ts.Identifier): boolean {
  const parent = node.parent;
  if (!parent) return false;
  if (ts.isPropertyAccessExpression(parent) || ts.isQualifiedName(parent)) return (ts.isPropertyAccessExpression(parent) ? parent.name : parent.right) === node;
  if (
    ts.isPropertyAssignment(parent) || ts.isMethodDeclaration(parent) || ts.isPropertyDeclaration(parent) || ts.isPropertySignature(parent) ||
    ts.isMethodSignature(parent) || ts.isGetAccessorDeclaration(parent) || ts.isSetAccessorDeclaration(parent) || ts.isEnumMember(parent)
  ) {
    return parent.name === node;
  }
  return false;
}

/** `module.exports` or `exports` used as a value anywhere (comments and strings do not count). */
function usesCommonJsExports(source: ts.SourceFile): boolean {
  if (!/\bexports\b/.test(source.text)) return false;
  let found = false;
  const visit = (node: ts.Node): void => {
    if (found) return;
    if (ts.isIdentifier(node) && node.text === 'exports' && !isPropertyName(node)) found = true;
    else if (ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'module' && node.name.text === 'exports') found = true;
    else ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function literal(node: ts.Node | undefined): string | undefined {
  return node && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) ? node.text : undefined;
}

function declaredNames(statement: ts.Statement): string[] {
  if (ts.isVariableStatement(statement)) return statement.declarationList.declarations.flatMap((declaration) => bindingNames(declaration.name));
  if (ts.isImportEqualsDeclaration(statement)) return [statement.name.text];
  if (
    (ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement) || ts.isInterfaceDeclaration(statement) ||
      ts.isTypeAliasDeclaration(statement) || ts.isEnumDeclaration(statement) || ts.isModuleDeclaration(statement)) &&
    statement.name && ts.isIdentifier(statement.name)
  ) {
    return [statement.name.text];
  }
  return [];
}

function bindingNames(name: ts.BindingName): string[] {
  if (ts.isIdentifier(name)) return [name.text];
  return name.elements.flatMap((element) => (ts.isOmittedExpression(element) ? [] : bindingNames(element.name)));
}
