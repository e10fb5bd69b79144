import { createHash } from 'node:crypto';
import type ts from 'typescript';
import { typescript } from './typescript';

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
    if (typescript().isImportDeclaration(statement)) {
      const specifier = literal(statement.moduleSpecifier);
      const clause = statement.importClause;
      if (!specifier) continue;
      if (!clause) {
        initUses.modules.add(specifier);
        continue;
      }
      if (clause.name) imports.push({ local: clause.name.text, specifier, imported: 'default' });
      const named = clause.namedBindings;
      if (named && typescript().isNamespaceImport(named)) {
        imports.push({ local: named.name.text, specifier, imported: '*' });
        namespaces.add(named.name.text);
      } else if (named) {
        for (const element of named.elements) imports.push({ local: element.name.text, specifier, imported: (element.propertyName ?? element.name).text });
      }
    } else if (typescript().isImportEqualsDeclaration(statement) && typescript().isExternalModuleReference(statement.moduleReference)) {
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
    const modifiers = typescript().canHaveModifiers(statement) ? typescript().getModifiers(statement) : undefined;
    if (!modifiers?.some((modifier) => modifier.kind === typescript().SyntaxKind.ExportKeyword)) return;
    const isDefault = modifiers.some((modifier) => modifier.kind === typescript().SyntaxKind.DefaultKeyword);
    for (const name of names) exports.push({ exported: isDefault ? 'default' : name, local: name });
  };

  for (const statement of source.statements) {
    if (typescript().isImportDeclaration(statement) || typescript().isImportEqualsDeclaration(statement)) {
      if (typescript().isImportEqualsDeclaration(statement) && !typescript().isExternalModuleReference(statement.moduleReference)) declare(statement.name.text, statement);
      continue;
    }
    if (typescript().isExportDeclaration(statement)) {
      const specifier = statement.moduleSpecifier ? literal(statement.moduleSpecifier) : undefined;
      const clause = statement.exportClause;
      if (statement.moduleSpecifier && !specifier) continue;
      if (!clause) {
        if (specifier) stars.push(specifier);
      } else if (typescript().isNamespaceExport(clause)) {
        if (specifier) exports.push({ exported: clause.name.text, specifier, imported: '*' });
      } else {
        for (const element of clause.elements) {
          const inner = (element.propertyName ?? element.name).text;
          exports.push(specifier ? { exported: element.name.text, specifier, imported: inner } : { exported: element.name.text, local: inner });
        }
      }
      continue;
    }
    if (typescript().isExportAssignment(statement)) {
      if (statement.isExportEquals) opaque = true;
      if (typescript().isIdentifier(statement.expression) && bindings.has(statement.expression.text)) {
        exports.push({ exported: 'default', local: statement.expression.text });
      } else {
        declare('default', statement);
        exports.push({ exported: 'default', local: 'default' });
      }
      collectUses(statement.expression, initUses, scope, true);
      continue;
    }
    if (typescript().isFunctionDeclaration(statement)) {
      const name = statement.name?.text ?? 'default';
      declare(name, statement);
      exportLocal(statement, [name]);
      continue;
    }
    if (typescript().isClassDeclaration(statement)) {
      const name = statement.name?.text ?? 'default';
      declare(name, statement);
      exportLocal(statement, [name]);
      // Heritage, decorators and static initializers run when the class is defined.
      collectUses(statement, initUses, scope, true);
      continue;
    }
    if (typescript().isVariableStatement(statement)) {
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
    if (typescript().isInterfaceDeclaration(statement) || typescript().isTypeAliasDeclaration(statement)) {
      declare(statement.name.text, statement, true);
      exportLocal(statement, [statement.name.text]);
      continue;
    }
    if ((typescript().isEnumDeclaration(statement) || typescript().isModuleDeclaration(statement)) && typescript().isIdentifier(statement.name)) {
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
    if (typescript().isIdentifier(current)) {
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
    if (typescript().isTypeNode(current) && !typescript().isExpressionWithTypeArguments(current)) return;
    if (skipBodies && isFunctionBody(current)) return;
    // At load time, storing a reference runs nothing: `{ a, b: ns.b, ...ns }`, `[a]` only
    // matter if something later calls them, and that code references the object holding them.
    if (skipBodies && (typescript().isObjectLiteralExpression(current) || typescript().isArrayLiteralExpression(current))) {
      const elements: readonly ts.Node[] = typescript().isObjectLiteralExpression(current) ? current.properties : current.elements;
      for (const element of elements) {
        if (typescript().isShorthandPropertyAssignment(element)) continue;
        if (typescript().isPropertyAssignment(element)) {
          if (typescript().isComputedPropertyName(element.name)) visit(element.name);
          if (!isStoredReference(element.initializer, namespaces)) visit(element.initializer);
        } else if (!isStoredReference(element, namespaces)) visit(element);
      }
      return;
    }
    if (typescript().isPropertyAccessExpression(current) || typescript().isQualifiedName(current)) {
      const left = typescript().isPropertyAccessExpression(current) ? current.expression : current.left;
      const right = typescript().isPropertyAccessExpression(current) ? current.name : current.right;
      if (typescript().isIdentifier(left) && imports.has(left.text) && !isShadowed(left.text) && typescript().isIdentifier(right)) {
        uses.members.set(`${left.text}.${right.text}`, [left.text, right.text]);
        return;
      }
      // `z.core.$ZodType`: a member of a namespace re-exported as a member.
      if (
        typescript().isPropertyAccessExpression(current) && typescript().isPropertyAccessExpression(left) && typescript().isIdentifier(left.expression) &&
        imports.has(left.expression.text) && !isShadowed(left.expression.text)
      ) {
        const path = [left.expression.text, left.name.text, current.name.text];
        uses.members.set(path.join('.'), path);
        return;
      }
      visit(left);
      return;
    }
    if ((typescript().isCallExpression(current) && current.arguments.length > 0) || typescript().isImportTypeNode(current)) {
      const specifier = moduleCall(current);
      if (specifier) uses.modules.add(specifier);
    }
    typescript().forEachChild(current, visit);
  };
  visit(node);
}

/** A binding or `ns.member` (or a spread of a namespace) as a value: reading it runs no code. */
export function isStoredReference(node: ts.Node, namespaces: Set<string>): boolean {
  if (typescript().isSpreadElement(node) || typescript().isSpreadAssignment(node)) return typescript().isIdentifier(node.expression) && namespaces.has(node.expression.text);
  if (typescript().isParenthesizedExpression(node) || typescript().isAsExpression(node) || typescript().isSatisfiesExpression(node)) return isStoredReference(node.expression, namespaces);
  if (typescript().isIdentifier(node)) return true;
  return typescript().isPropertyAccessExpression(node) && typescript().isIdentifier(node.expression) && namespaces.has(node.expression.text);
}

/**
 * Names a scope node declares for its own body (ES modules are strict: `let`, `const`, `class`
 * and block-level functions are block-scoped, `var` and parameters function-scoped).
 */
function scopeNames(node: ts.Node): string[] {
  if (typescript().isFunctionLike(node) && !typescript().isTypeNode(node)) {
    const names = node.parameters.flatMap((parameter) => bindingNames(parameter.name));
    const body = 'body' in node ? node.body : undefined;
    if (body) names.push(...varNames(body));
    return names;
  }
  if (typescript().isBlock(node) || typescript().isModuleBlock(node)) return node.statements.flatMap(lexicalNames);
  if (typescript().isCaseBlock(node)) return node.clauses.flatMap((clause) => clause.statements.flatMap(lexicalNames));
  if ((typescript().isForStatement(node) || typescript().isForInStatement(node) || typescript().isForOfStatement(node)) && node.initializer && typescript().isVariableDeclarationList(node.initializer)) {
    return node.initializer.declarations.flatMap((declaration) => bindingNames(declaration.name));
  }
  if (typescript().isCatchClause(node) && node.variableDeclaration) return bindingNames(node.variableDeclaration.name);
  return [];
}

function lexicalNames(statement: ts.Statement): string[] {
  if (typescript().isVariableStatement(statement)) return statement.declarationList.declarations.flatMap((declaration) => bindingNames(declaration.name));
  if ((typescript().isFunctionDeclaration(statement) || typescript().isClassDeclaration(statement)) && statement.name) return [statement.name.text];
  return [];
}

/** `var` names declared anywhere in a function body, not inside nested functions. */
function varNames(body: ts.Node): string[] {
  const names: string[] = [];
  const visit = (node: ts.Node): void => {
    if (typescript().isFunctionLike(node)) return;
    if (typescript().isVariableDeclarationList(node) && !(node.flags & typescript().NodeFlags.BlockScoped)) {
      for (const declaration of node.declarations) names.push(...bindingNames(declaration.name));
    }
    typescript().forEachChild(node, visit);
  };
  visit(body);
  return names;
}

/** `require('x')`, `import('x')`, `import('x').T` in a type: the specifier. */
function moduleCall(node: ts.CallExpression | ts.ImportTypeNode): string | undefined {
  if (typescript().isImportTypeNode(node)) {
    return typescript().isLiteralTypeNode(node.argument) ? literal(node.argument.literal) : undefined;
  }
  const callee = node.expression;
  const isLoader = callee.kind === typescript().SyntaxKind.ImportKeyword || (typescript().isIdentifier(callee) && callee.text === 'require');
  return isLoader ? literal(node.arguments[0]) : undefined;
}

function isFunctionBody(node: ts.Node): boolean {
  return (
    typescript().isArrowFunction(node) || typescript().isFunctionExpression(node) || typescript().isFunctionDeclaration(node) || typescript().isMethodDeclaration(node) ||
    typescript().isGetAccessorDeclaration(node) || typescript().isSetAccessorDeclaration(node) || typescript().isConstructorDeclaration(node) ||
    (typescript().isPropertyDeclaration(node) && !node.modifiers?.some((modifier) => modifier.kind === typescript().SyntaxKind.StaticKeyword))
  );
}

/** The name in `{ name: … }`, `obj.name`, a class member or an enum member is not a reference. */
function isPropertyName(node: ts.Identifier): boolean {
  const parent = node.parent;
  if (!parent) return false;
  if (typescript().isPropertyAccessExpression(parent) || typescript().isQualifiedName(parent)) return (typescript().isPropertyAccessExpression(parent) ? parent.name : parent.right) === node;
  if (
    typescript().isPropertyAssignment(parent) || typescript().isMethodDeclaration(parent) || typescript().isPropertyDeclaration(parent) || typescript().isPropertySignature(parent) ||
    typescript().isMethodSignature(parent) || typescript().isGetAccessorDeclaration(parent) || typescript().isSetAccessorDeclaration(parent) || typescript().isEnumMember(parent)
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
    if (typescript().isIdentifier(node) && node.text === 'exports' && !isPropertyName(node)) found = true;
    else if (typescript().isPropertyAccessExpression(node) && typescript().isIdentifier(node.expression) && node.expression.text === 'module' && node.name.text === 'exports') found = true;
    else typescript().forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function literal(node: ts.Node | undefined): string | undefined {
  return node && (typescript().isStringLiteral(node) || typescript().isNoSubstitutionTemplateLiteral(node)) ? node.text : undefined;
}

function declaredNames(statement: ts.Statement): string[] {
  if (typescript().isVariableStatement(statement)) return statement.declarationList.declarations.flatMap((declaration) => bindingNames(declaration.name));
  if (typescript().isImportEqualsDeclaration(statement)) return [statement.name.text];
  if (
    (typescript().isFunctionDeclaration(statement) || typescript().isClassDeclaration(statement) || typescript().isInterfaceDeclaration(statement) ||
      typescript().isTypeAliasDeclaration(statement) || typescript().isEnumDeclaration(statement) || typescript().isModuleDeclaration(statement)) &&
    statement.name && typescript().isIdentifier(statement.name)
  ) {
    return [statement.name.text];
  }
  return [];
}

function bindingNames(name: ts.BindingName): string[] {
  if (typescript().isIdentifier(name)) return [name.text];
  return name.elements.flatMap((element) => (typescript().isOmittedExpression(element) ? [] : bindingNames(element.name)));
}
