// Validates KEDA resources given as a JSON array on stdin against the KEDA CRD schemas shipped in
// @kubernetes-models/keda. Prints one line per resource; exits 1 if any is invalid or of an unknown kind.
// Usage: node deploy/tools/validate-keda.mjs < resources.json   (after `npm ci --prefix deploy/tools`)
import { readFileSync } from "node:fs";
import { ScaledObject, ScaledJob, TriggerAuthentication } from "@kubernetes-models/keda/keda.sh/v1alpha1";

const kinds = { ScaledObject, ScaledJob, TriggerAuthentication };
const resources = JSON.parse(readFileSync(0, "utf8"));
let failed = 0;
for (const resource of resources) {
  const name = `${resource.kind}/${resource.metadata?.name}`;
  const Model = resource.apiVersion === "keda.sh/v1alpha1" ? kinds[resource.kind] : undefined;
  if (!Model) {
    console.log(`FAIL ${name}: no KEDA schema for ${resource.apiVersion} ${resource.kind}`);
    failed += 1;
    continue;
  }
  try {
    new Model(resource).validate();
    console.log(`PASS ${name}`);
  } catch (error) {
    console.log(`FAIL ${name}: ${error.message}`);
    failed += 1;
  }
}
process.exit(failed ? 1 : 0);
