/**
 * Checks the panel's hand-written wire types (src/types.ts, src/api.ts) against the server's
 * openapi.json, with the TypeScript compiler's own view of the types: every field the panel
 * types must exist in the schema with a compatible JSON type (null included), and
 * string-literal unions must list exactly the schema's enum values. (Whether a field is
 * required is not compared: the schemas are validation schemas, where a field with a default
 * is optional, yet the server always sends it.)
 */
import * as path from 'node:path';
import * as ts from 'typescript';

export type Schema = { [key: string]: any };

/** A panel type and where its schema is in openapi.json (a JSON pointer). */
export interface Root {
  name: string;
  pointer: string;
  /** A body the panel sends (not reads): the server may accept null or more than it gets. */
  request?: boolean;
}

export class TypeChecker {
  private readonly program: ts.Program;
  private readonly checker: ts.TypeChecker;
  private readonly file: string;
  private doc: Schema = {};
  private request = false;
  /** Names of the panel's declarations the checks went through. */
  readonly visited = new Set<string>();

  /** ``file``: the module of wire types (compiled once; check it against many documents). */
  constructor(file: string) {
    this.file = path.resolve(file);
    this.program = ts.createProgram([this.file], {
      strict: true,
      skipLibCheck: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      moduleResolution: ts.ModuleResolutionKind.Node10,
      lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
      types: []
    });
    this.checker = this.program.getTypeChecker();
  }

  /** The names the module exports (interfaces and type aliases). */
  exportedTypes(): string[] {
    return this.checker
      .getExportsOfModule(this.checker.getSymbolAtLocation(this.source())!)
      .filter(s => s.flags & (ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias))
      .map(s => s.name);
  }

  /** Every mismatch of ``root`` against the OpenAPI document ``doc``, as readable lines. */
  check(root: Root, doc: Schema): string[] {
    this.doc = doc;
    this.request = root.request ?? false;
    const symbol = this.checker
      .getExportsOfModule(this.checker.getSymbolAtLocation(this.source())!)
      .find(s => s.name === root.name);
    if (!symbol) {
      return [`no exported type ${root.name}`];
    }
    this.visited.add(root.name);
    const type = this.checker.getDeclaredTypeOfSymbol(symbol);
    return this.compare(type, this.pointer(root.pointer), root.name, 0);
  }

  private source(): ts.SourceFile {
    const found = this.program.getSourceFile(this.file);
    if (!found) {
      throw new Error(`cannot read ${this.file}`);
    }
    return found;
  }

  private pointer(pointer: string): Schema {
    let node: any = this.doc;
    for (const part of pointer.replace(/^#\//, '').split('/')) {
      node = node?.[part];
    }
    if (!node) {
      throw new Error(`openapi.json has nothing at ${pointer}`);
    }
    return node;
  }

  /** The alternatives a schema allows, references resolved. */
  private branches(schema: Schema): Schema[] {
    if (schema.$ref) {
      return this.branches(this.pointer(schema.$ref));
    }
    if (schema.allOf && schema.allOf.length === 1) {
      return this.branches(schema.allOf[0]);
    }
    const alternatives = schema.anyOf ?? schema.oneOf;
    if (alternatives) {
      return alternatives.flatMap((s: Schema) => this.branches(s));
    }
    return [schema];
  }

  private compare(type: ts.Type, schema: Schema, where: string, depth: number): string[] {
    if (depth > 30 || type.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) {
      return [];
    }
    const named = type.aliasSymbol?.name ?? type.getSymbol()?.name;
    if (named && !named.startsWith('__') && named !== 'Array' && named !== 'Record') {
      this.visited.add(named);
    }
    const branches = this.branches(schema);
    const members = (type.isUnion() ? type.types : [type]).filter(
      t => !(t.flags & (ts.TypeFlags.Undefined | ts.TypeFlags.Void))
    );
    const errors: string[] = [];
    const literals = members.filter(t => t.isStringLiteral()) as ts.StringLiteralType[];
    if (literals.length) {
      errors.push(...this.compareLiterals(literals.map(t => t.value), branches, where));
    }
    const booleans = members.filter(t => t.flags & ts.TypeFlags.BooleanLiteral);
    const nullable = members.some(t => t.flags & ts.TypeFlags.Null);
    if (!nullable && !this.request && branches.some(b => b.type === 'null')) {
      errors.push(`${where}: may be null in openapi.json, never in the panel`);
    }
    if (booleans.length && !branches.some(b => b.type === 'boolean')) {
      errors.push(`${where}: boolean in the panel, ${describe(branches)} in openapi.json`);
    }
    for (const member of members) {
      if (member.isStringLiteral() || member.flags & ts.TypeFlags.BooleanLiteral) {
        continue;
      }
      const tries = branches.map(b => this.compareOne(member, b, where, depth));
      if (!tries.some(t => t.length === 0)) {
        const fewest = tries.reduce((a, b) => (b.length < a.length ? b : a), tries[0] ?? []);
        errors.push(
          ...(fewest.length
            ? fewest
            : [`${where}: ${this.checker.typeToString(member)} has no match in openapi.json`])
        );
      }
    }
    return errors;
  }

  private compareLiterals(values: string[], branches: Schema[], where: string): string[] {
    const allowed = new Set<string>();
    let free = false;
    for (const b of branches) {
      if (typeof b.const === 'string') {
        allowed.add(b.const);
      } else if (Array.isArray(b.enum)) {
        b.enum.forEach((v: unknown) => typeof v === 'string' && allowed.add(v));
      } else if (b.type === 'string') {
        free = true;
      }
    }
    if (free && !allowed.size) {
      return []; // the server sends any string: the panel's literals are its own reading
    }
    const errors: string[] = [];
    const unknown = values.filter(v => !allowed.has(v));
    const missing = [...allowed].filter(v => !values.includes(v));
    if (unknown.length) {
      errors.push(`${where}: "${unknown.join('", "')}" not in openapi.json's values`);
    }
    if (missing.length && !free) {
      errors.push(`${where}: openapi.json also sends "${missing.join('", "')}"`);
    }
    return errors;
  }

  private compareOne(type: ts.Type, schema: Schema, where: string, depth: number): string[] {
    const kind = schema.type;
    const f = type.flags;
    if (f & ts.TypeFlags.Null) {
      return kind === 'null' || schema.const === null ? [] : [`${where}: nullable in the panel only`];
    }
    if (f & ts.TypeFlags.String) {
      return kind === 'string' ? [] : [`${where}: string in the panel, ${describe([schema])} in openapi.json`];
    }
    if (f & (ts.TypeFlags.Number | ts.TypeFlags.NumberLiteral)) {
      return kind === 'integer' || kind === 'number'
        ? []
        : [`${where}: number in the panel, ${describe([schema])} in openapi.json`];
    }
    if (this.checker.isArrayType(type)) {
      if (kind !== 'array') {
        return [`${where}: array in the panel, ${describe([schema])} in openapi.json`];
      }
      const [item] = this.checker.getTypeArguments(type as ts.TypeReference);
      return schema.items ? this.compare(item, schema.items, `${where}[]`, depth + 1) : [];
    }
    if (this.checker.isTupleType(type)) {
      return kind === 'array' ? [] : [`${where}: tuple in the panel, ${describe([schema])} in openapi.json`];
    }
    if (f & ts.TypeFlags.Object || type.isIntersection()) {
      return this.compareObject(type, schema, where, depth);
    }
    return [`${where}: ${this.checker.typeToString(type)} is not checked`];
  }

  private compareObject(type: ts.Type, schema: Schema, where: string, depth: number): string[] {
    if (schema.type !== 'object' && !schema.properties) {
      return [`${where}: object in the panel, ${describe([schema])} in openapi.json`];
    }
    const errors: string[] = [];
    const properties: Schema = schema.properties ?? {};
    for (const prop of this.checker.getPropertiesOfType(type)) {
      const at = `${where}.${prop.name}`;
      this.noteNames(prop.valueDeclaration);
      const propSchema = properties[prop.name];
      if (!propSchema) {
        if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
          errors.push(...this.compare(this.typeOf(prop), schema.additionalProperties, at, depth + 1));
        } else if (schema.properties || schema.additionalProperties === false) {
          errors.push(`${at}: missing in openapi.json (renamed or removed?)`);
        }
        continue;
      }
      errors.push(...this.compare(this.typeOf(prop), propSchema, at, depth + 1));
    }
    const index = this.checker.getIndexInfosOfType(type).find(i => i.keyType.flags & ts.TypeFlags.String);
    if (index) {
      const values = schema.additionalProperties;
      if (values && typeof values === 'object') {
        errors.push(...this.compare(index.type, values, `${where}[key]`, depth + 1));
      } else if (values === false && !this.request) {
        errors.push(`${where}: a map in the panel, a closed object in openapi.json`);
      }
    }
    return errors;
  }

  /** Records the named types a property's declaration mentions (aliases vanish in unions). */
  private noteNames(node: ts.Node | undefined): void {
    if (!node) {
      return;
    }
    if (ts.isTypeReferenceNode(node)) {
      this.visited.add(node.typeName.getText());
    }
    ts.forEachChild(node, child => this.noteNames(child));
  }

  private typeOf(symbol: ts.Symbol): ts.Type {
    return this.checker.getTypeOfSymbol(symbol);
  }
}

function describe(schemas: Schema[]): string {
  return schemas.map(s => s.type ?? (s.enum ? 'enum' : s.const !== undefined ? 'const' : 'any')).join(' | ');
}
