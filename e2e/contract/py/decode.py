"""Decodes recorded answers of the API with a client that quicktype generated.

Usage: python3 decode.py OPENAPI_JSON GENERATED_MODULE ANSWERS_JSONL

OPENAPI_JSON is the served OpenAPI document, GENERATED_MODULE the Python
module quicktype wrote from its components.schemas (every schema a top-level
type), ANSWERS_JSONL one recorded answer a line: {"name", "method", "path",
"status", "body"} with body the answer's text.

For each answer it finds the operation (method and path template) and the
documented response of the status (or "default"), decodes the body with the
generated module's <schema>_from_dict (for a class, <Type>.from_dict),
re-encodes it with <schema>_to_dict (<Type>.to_dict()) and compares the
result with the answer. It prints a JSON report on stdout; the Go test
(python_test.go) judges it.

Comparison rules (what "nothing was lost" means here):
- every member of the answer must come back with an equal value; a member
  whose value is null may come back absent (the generated classes leave out
  optional members that are None), and a member whose value is absent may
  come back null;
- date-times are compared as instants: the generated code parses them into
  datetime and writes them back with isoformat(), which spells them
  differently ("+00:00" for "Z") and keeps microseconds (Python's datetime
  has no nanoseconds);
- a member the answer carried that the document does not declare for its
  place is reported as undeclared (no generated client can keep it).
"""

import datetime
import importlib.util
import json
import re
import sys
import traceback
import types


def load_module(path):
    # The code quicktype generates for date-times imports python-dateutil
    # (dateutil.parser.parse), which is not in the standard library. When this
    # Python does not have it, a stand-in with the standard library's parser
    # (Python 3.11 reads RFC 3339 date-times) takes its place.
    shimmed = False
    try:
        import dateutil.parser  # noqa: F401
    except ImportError:
        dateutil = types.ModuleType("dateutil")
        parser = types.ModuleType("dateutil.parser")
        parser.parse = datetime.datetime.fromisoformat
        dateutil.parser = parser
        sys.modules["dateutil"] = dateutil
        sys.modules["dateutil.parser"] = parser
        shimmed = True
    spec = importlib.util.spec_from_file_location("quicktype_client", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, shimmed


def squash(name):
    return re.sub(r"[^a-z0-9]", "", name.lower())


class Client:
    """The generated module's top-level functions, by schema name."""

    def __init__(self, module, schema_names):
        by_squashed = {}
        for attr in dir(module):
            if attr.endswith("_from_dict") and attr != "from_dict":
                base = attr[: -len("_from_dict")]
                to = getattr(module, base + "_to_dict", None)
                if to is not None:
                    by_squashed.setdefault(squash(base), []).append((getattr(module, attr), to, base))
        self.functions = {}
        self.missing = []
        for name in schema_names:
            found = by_squashed.get(squash(name), [])
            if len(found) != 1:
                self.missing.append(name)
            else:
                self.functions[name] = found[0]


class Undecodable(Exception):
    pass


def ref_name(ref):
    prefix = "#/components/schemas/"
    if not ref.startswith(prefix):
        raise Undecodable("a reference outside components.schemas: " + ref)
    return ref[len(prefix):]


def decode(client, schema, value, where):
    """Decodes value as schema with the generated code and re-encodes it.

    Only a response's own schema is walked here (a $ref, an array of $refs,
    a discriminated oneOf of $refs, a map); every component is decoded by
    the generated code alone.
    """
    if "$ref" in schema:
        name = ref_name(schema["$ref"])
        if name not in client.functions:
            raise Undecodable("the generated module has no top-level type for " + name)
        from_dict, to_dict, base = client.functions[name]
        try:
            decoded = from_dict(value)
        except Exception as e:  # the generated code asserts without messages
            raise Undecodable("%s_from_dict failed at %s: %s" % (base, where or "the top", describe(e)))
        try:
            return to_dict(decoded), name
        except Exception as e:
            raise Undecodable("%s_to_dict failed at %s: %s" % (base, where or "the top", describe(e)))
    if "oneOf" in schema or "anyOf" in schema:
        members = schema.get("oneOf") or schema.get("anyOf")
        disc = schema.get("discriminator")
        if disc and isinstance(value, dict):
            tag = value.get(disc["propertyName"])
            ref = disc.get("mapping", {}).get(tag)
            if ref is None:
                raise Undecodable("%s: %s=%r is not in the discriminator's mapping" % (where or "the top", disc["propertyName"], tag))
            return decode(client, {"$ref": ref}, value, where)
        errors = []
        for m in members:
            try:
                return decode(client, m, value, where)
            except Undecodable as e:
                errors.append(str(e))
        raise Undecodable("no member of the union decodes it: " + "; ".join(errors))
    t = schema.get("type")
    if t == "array":
        if not isinstance(value, list):
            raise Undecodable("%s: not an array" % (where or "the top"))
        out, names = [], set()
        for i, v in enumerate(value):
            r, n = decode(client, schema.get("items", {}), v, "%s[%d]" % (where, i))
            out.append(r)
            names.add(n)
        return out, "[%s]" % ",".join(sorted(names))
    if t == "object" and "properties" not in schema:
        if not isinstance(value, dict):
            raise Undecodable("%s: not an object" % (where or "the top"))
        addl = schema.get("additionalProperties", {})
        if addl in (True, {}):
            return value, "object"
        out, names = {}, set()
        for k, v in value.items():
            out[k], n = decode(client, addl, v, "%s.%s" % (where, k))
            names.add(n)
        return out, "{%s}" % ",".join(sorted(names))
    primitives = {"string": str, "integer": int, "number": (int, float), "boolean": bool}
    if t in primitives and isinstance(value, primitives[t]) and (t == "boolean" or not isinstance(value, bool)):
        return value, t
    raise Undecodable("%s: a response schema this driver does not know: %s" % (where or "the top", json.dumps(schema)[:200]))


GENERATED = None  # the generated module's file


def describe(e):
    """The exception and the line of generated code that raised it."""
    frames = traceback.extract_tb(e.__traceback__)
    generated = [f for f in frames if f.filename == GENERATED]
    where = ""
    if generated:
        f = generated[-1]
        where = " (line %d, %s: %s)" % (f.lineno, f.name, (f.line or "").strip())
    return "%s%s%s" % (type(e).__name__, (": " + str(e)) if str(e) else "", where)


class Doc:
    def __init__(self, doc):
        self.doc = doc
        self.schemas = doc["components"]["schemas"]
        self.routes = []
        for path, ops in doc["paths"].items():
            pattern = "^" + re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(path)) + "$"
            self.routes.append((path.count("{"), path, re.compile(pattern), ops))
        self.routes.sort(key=lambda r: (r[0], r[1]))

    def operation(self, method, path):
        for _, template, pattern, ops in self.routes:
            if pattern.match(path) and method.lower() in ops:
                return template, ops[method.lower()]
        return None, None

    def resolve(self, obj):
        while isinstance(obj, dict) and "$ref" in obj and obj["$ref"].startswith("#/components/responses/"):
            obj = self.doc["components"]["responses"][obj["$ref"].split("/")[-1]]
        return obj

    def schema(self, obj):
        while isinstance(obj, dict) and "$ref" in obj:
            obj = self.schemas[ref_name(obj["$ref"])]
        return obj

    def declared(self, schema, keys):
        """Whether the document declares the member at keys below schema."""
        if not keys:
            return True
        s = self.schema(schema)
        if not isinstance(s, dict):
            return s is True
        for combo in ("oneOf", "anyOf", "allOf"):
            if any(self.declared(m, keys) for m in s.get(combo, [])):
                return True
        k, rest = keys[0], keys[1:]
        if isinstance(k, int):
            return "items" in s and self.declared(s["items"], rest)
        if k in s.get("properties", {}):
            return self.declared(s["properties"][k], rest)
        addl = s.get("additionalProperties")
        if addl is True:
            return True
        if isinstance(addl, dict):
            return self.declared(addl, rest)
        return False


def as_instant(s):
    if not isinstance(s, str) or not re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d", s):
        return None
    try:
        return datetime.datetime.fromisoformat(s)
    except ValueError:
        return None


def same(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if a == b:
        return True
    ia, ib = as_instant(a), as_instant(b)
    return ia is not None and ib is not None and ia == ib


def compare(orig, back, keys, out):
    """Appends (keys, kind, what) for each difference between orig and back:
    kind is lost (absent or not whole), changed or added."""
    if isinstance(orig, dict):
        if not isinstance(back, dict):
            out.append((keys, "lost", "an object came back as %s" % json.dumps(back)[:200]))
            return
        for k, v in orig.items():
            if k not in back:
                if v is not None:
                    out.append((keys + [k], "lost", "dropped %s" % json.dumps(v)[:200]))
            else:
                compare(v, back[k], keys + [k], out)
        for k, v in back.items():
            if k not in orig and v is not None:
                out.append((keys + [k], "added", "came back with %s, which the answer did not carry" % json.dumps(v)[:200]))
        return
    if isinstance(orig, list):
        if not isinstance(back, list) or len(back) != len(orig):
            out.append((keys, "lost", "an array of %d came back as %s" % (len(orig), json.dumps(back)[:200])))
            return
        for i, (a, b) in enumerate(zip(orig, back)):
            compare(a, b, keys + [i], out)
        return
    if not same(orig, back):
        out.append((keys, "changed", "%s came back as %s" % (json.dumps(orig)[:200], json.dumps(back, default=repr)[:200])))


def at(value, keys):
    for k in keys:
        if isinstance(k, int):
            value = value[k] if isinstance(value, list) and k < len(value) else None
        else:
            value = value.get(k) if isinstance(value, dict) else None
    return value


def settings_in(value, keys, out):
    """Every object at a member named settings, with where it is and the
    gameType of the object that holds it."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "settings" and isinstance(v, dict):
                out.append((keys + [k], value.get("gameType")))
            settings_in(v, keys + [k], out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            settings_in(v, keys + [i], out)


def pointer(keys):
    return "".join("[%d]" % k if isinstance(k, int) else "." + k for k in keys) or "(the answer)"


def label(schema):
    """A response schema's short name: X, [X], {X} or X|Y."""
    if "$ref" in schema:
        return schema["$ref"].split("/")[-1]
    if "oneOf" in schema or "anyOf" in schema:
        return "|".join(label(m) for m in schema.get("oneOf") or schema.get("anyOf"))
    if schema.get("type") == "array":
        return "[%s]" % label(schema.get("items", {}))
    if schema.get("type") == "object" and "properties" not in schema:
        addl = schema.get("additionalProperties", {})
        return "{%s}" % (label(addl) if isinstance(addl, dict) and addl else "any")
    return schema.get("type", json.dumps(schema)[:80])


def main():
    global GENERATED
    if sys.version_info < (3, 10):
        sys.exit("quicktype's default Python output (--python-version 3.10: X | None, list[T]) needs Python 3.10 or newer, not %s"
                 % sys.version.split()[0])
    doc_path, module_path, answers_path = sys.argv[1:4]
    GENERATED = module_path
    with open(doc_path) as f:
        doc = Doc(json.load(f))
    module, shimmed = load_module(module_path)
    client = Client(module, doc.schemas.keys())
    report = {"shimmedDateutil": shimmed, "missingTypes": client.missing, "types": len(client.functions), "answers": []}
    with open(answers_path) as f:
        answers = [json.loads(line) for line in f if line.strip()]
    for a in answers:
        r = {"name": a["name"], "method": a["method"], "path": a["path"], "status": a["status"],
             "errors": [], "undeclared": [], "settings": []}
        report["answers"].append(r)
        template, op = doc.operation(a["method"], a["path"])
        if op is None:
            r["errors"].append("no operation of the document has this method and path")
            continue
        r["operation"] = "%s %s (%s)" % (a["method"], template, op.get("operationId", "?"))
        response = doc.resolve(op["responses"].get(str(a["status"])) or op["responses"].get("default"))
        if response is None:
            r["errors"].append("the document has no response for status %d" % a["status"])
            continue
        content = response.get("content") or {}
        if not content:
            if a["body"].strip():
                r["errors"].append("the document has no body for this answer, which has one: %s" % a["body"][:200])
            else:
                r["schema"] = "(no body)"
            continue
        media = content.get("application/json")
        if media is None:
            r["errors"].append("the document's response is not JSON: %s" % ", ".join(content))
            continue
        try:
            body = json.loads(a["body"])
        except ValueError as e:
            r["errors"].append("the answer is not JSON: %s" % e)
            continue
        r["schema"] = label(media["schema"])
        try:
            back, r["decodedAs"] = decode(client, media["schema"], body, "")
        except Undecodable as e:
            r["errors"].append(str(e))
            continue
        diffs = []
        compare(body, back, [], diffs)
        for keys, kind, what in diffs:
            if kind == "lost" and not doc.declared(media["schema"], keys):
                r["undeclared"].append("%s: %s" % (pointer(keys), what))
            else:
                r["errors"].append("%s %s: %s" % (pointer(keys), kind, what))
        places = []
        settings_in(body, [], places)
        for keys, game_type in places:
            r["settings"].append({"at": pointer(keys), "holderGameType": game_type,
                                  "answer": at(body, keys), "decoded": at(back, keys)})
    json.dump(report, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
