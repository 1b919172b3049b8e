"""Extracts the strict Kubernetes JSON Schemas of the given versions from PyPI's
kubernetes-validate wheel into a folder kubeconform reads with -schema-location
(test/support/tools.sh). The schemas' references to kubernetes.io/api/_definitions.json are
made relative to the file, so kubeconform reads nothing from the network.

usage: k8s_schemas.py WHEEL DEST VERSION...
"""
import json, os, shutil, sys, zipfile

wheel, dest, *versions = sys.argv[1:]
partial = dest + ".partial"
shutil.rmtree(partial, ignore_errors=True)

def relative(node):
    if isinstance(node, dict):
        if str(node.get("$ref", "")).startswith("/api/"):
            node["$ref"] = node["$ref"][len("/api/"):]
        for value in node.values():
            relative(value)
    elif isinstance(node, list):
        for value in node:
            relative(value)

with zipfile.ZipFile(wheel) as z:
    for version in versions:
        prefix = f"kubernetes_validate/kubernetes-json-schema/{version}-local-strict/"
        names = [n for n in z.namelist() if n.startswith(prefix) and n.endswith(".json")]
        if not names:
            sys.exit(f"{wheel} has no {prefix}")
        os.makedirs(os.path.join(partial, version + "-local-strict"))
        for name in names:
            schema = json.loads(z.read(name))
            schema.pop("$id", None)  # https://kubernetes.io/api/...: resolve from the file instead
            relative(schema)
            with open(os.path.join(partial, version + "-local-strict", name[len(prefix):]), "w") as f:
                json.dump(schema, f, separators=(",", ":"))
shutil.rmtree(dest, ignore_errors=True)
os.replace(partial, dest)
