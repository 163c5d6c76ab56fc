// Validates WebSocket frames (one JSON object a line) against the payload
// schemas of an AsyncAPI 3.0 document, with ajv; checks the document with
// @asyncapi/parser first. Prints one JSON report.
//
//   node e2e/contract/frames.mjs asyncapi.json frames.jsonl
import fs from 'node:fs';
import Ajv from 'ajv';
import { Parser } from '@asyncapi/parser';

const [docFile, framesFile] = process.argv.slice(2);
const raw = fs.readFileSync(docFile, 'utf8');
const doc = JSON.parse(raw);
const { diagnostics } = await new Parser().parse(raw);
const parserErrors = diagnostics.filter((d) => d.severity === 0).map((d) => `${d.code} ${d.path.join('.')}: ${d.message}`);

// A frame's message: the one whose payload fixes the frame's type (and
// event or notice) with const.
const resolve = (s) => {
  while (s && s.$ref) s = s.$ref.slice(2).split('/').reduce((v, k) => v[k.replaceAll('~1', '/').replaceAll('~0', '~')], doc);
  return s;
};
const byKey = new Map();
for (const [id, m] of Object.entries(doc.components.messages)) {
  const p = resolve(m.payload).properties || {};
  const type = p.type?.const;
  const sub = p.event?.const ?? p.notice?.const;
  if (type) byKey.set(type + (sub ? ':' + sub : ''), id);
}
const keyOf = (f) => (f.type === 'event' ? `event:${f.event}` : f.type === 'notice' ? `notice:${f.notice}` : f.type);

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema({ ...doc, $id: 'asyncapi' });
const report = { parserErrors, frames: 0, valid: 0, messages: {}, failures: [] };
for (const line of fs.readFileSync(framesFile, 'utf8').split('\n')) {
  if (!line.trim()) continue;
  const frame = JSON.parse(line);
  report.frames++;
  const id = byKey.get(keyOf(frame));
  if (!id) {
    report.failures.push({ frame, message: `no message of the document is ${keyOf(frame)}` });
    continue;
  }
  report.messages[id] = (report.messages[id] || 0) + 1;
  const validate = ajv.getSchema(`asyncapi#/components/messages/${id.replaceAll('~', '~0').replaceAll('/', '~1')}/payload`);
  if (validate(frame)) report.valid++;
  else report.failures.push({ frame, message: id, errors: validate.errors });
}
console.log(JSON.stringify(report));
