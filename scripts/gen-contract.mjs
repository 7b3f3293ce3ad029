// Writes src/generated/cri-descriptor.json: proto/api.proto parsed once, at build time, into
// protobufjs's JSON form, so the shim does not parse the .proto text every time it starts
// (src/cri/contract.ts loads this file). Field names are camelCased here exactly as
// proto-loader does with keepCase: false, the option the generated types were made with.
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const proto = fileURLToPath(new URL('../proto/api.proto', import.meta.url));
const out = new URL('../src/generated/cri-descriptor.json', import.meta.url);

const root = new protobuf.Root();
root.loadSync(proto, { keepCase: false });
root.resolveAll();

mkdirSync(new URL('.', out), { recursive: true });
writeFileSync(out, JSON.stringify(root.toJSON({ keepComments: false })) + '\n');
