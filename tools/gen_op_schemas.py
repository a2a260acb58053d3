#!/usr/bin/env python3
"""Writes src/schema/onnx_op_schemas.inc from the ONNX spec's Changelog.md.

The spec's changelog lists every version of every op (default domain and the preview
domains) with its attributes, inputs, outputs and type constraints. onnxfold's validation
reads them from this one generated table instead of restating them by hand.

    tools/gen_op_schemas.py [--changelog PATH] [--check]

--check exits 1 when the committed file differs from what the changelog gives (a test runs it).
One line per op version, tab-separated (parsed by src/schema/op_schema.cpp):

    domain  op  since  deprecated  min_in  max_in  min_out  max_out  attrs  inputs  outputs  types

attrs:   name:code[!|=default],...   code = AttributeProto.AttributeType number, ! = required,
         =default the spec's default of an INT, FLOAT or STRING attribute (list defaults are
         not kept: no kernel reads one from the table)
inputs:  name:T[flags],...  T = a constraint name; flags ? optional, * variadic, ~ heterogeneous
types:   T=tensor/seq/optional-tensor/optional-seq,...  each a hex mask of TensorProto.DataType bits
max_in/max_out: -1 = unbounded
"""
import argparse
import html
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(ROOT, "src", "schema", "onnx_op_schemas.inc")

DTYPES = {
    "float": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7,
    "string": 8, "bool": 9, "float16": 10, "double": 11, "uint32": 12, "uint64": 13,
    "complex64": 14, "complex128": 15, "bfloat16": 16, "float8e4m3fn": 17,
    "float8e4m3fnuz": 18, "float8e5m2": 19, "float8e5m2fnuz": 20, "uint4": 21, "int4": 22,
    "float4e2m1": 23, "float8e8m0": 24, "uint2": 25, "int2": 26,
}
ATTR_TYPES = {
    "float": 1, "int": 2, "string": 3, "tensor": 4, "graph": 5, "sparse_tensor": 11,
    "type_proto": 13, "list of floats": 6, "list of ints": 7, "list of strings": 8,
    "list of tensors": 9, "list of graphs": 10, "list of sparse_tensors": 12,
    "list of type_protos": 14,
}
DOMAINS = {
    "default ONNX": "",
    "'ai.onnx.preview'": "ai.onnx.preview",
    "'ai.onnx.preview.training'": "ai.onnx.preview.training",
}


def type_masks(text, where):
    """'tensor(float), seq(tensor(int64))' -> [tensor, seq, opt_tensor, opt_seq] masks."""
    masks = [0, 0, 0, 0]
    for t in (s.strip() for s in text.split(",")):
        m = re.fullmatch(r"(optional\()?(seq\()?tensor\((\w+)\)\)?\)?", t)
        if not m or m.group(3) not in DTYPES:
            raise SystemExit(f"{where}: unknown type '{t}'")
        masks[(2 if m.group(1) else 0) + (1 if m.group(2) else 0)] |= 1 << DTYPES[m.group(3)]
    return masks


def scalar_default(code, text, where):
    """The spec's default of an INT (2), FLOAT (1) or STRING (3) attribute as the table writes
    it, or None for other types. The changelog prints a float the spec's doc generator found
    too long as "(%e)", so "(3.402823e+38)": the parentheses are dropped (the value is then
    the printed one, 7 significant digits, not the exact float)."""
    if code not in (1, 2, 3):
        return None
    if code == 1 and text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    try:
        if code == 1:
            float(text)
        elif code == 2:
            int(text)
    except ValueError:
        raise SystemExit(f"{where}: cannot read the default '{text}'")
    if any(c in text for c in ",\t\n"):
        raise SystemExit(f"{where}: the default '{text}' cannot be written in the table")
    return text


def parse_count(heading, listed):
    m = re.search(r"\((\d+) - (\d+|&#8734;)\)", heading)
    if not m:
        return listed, listed
    hi = -1 if m.group(2) == "&#8734;" else int(m.group(2))
    return int(m.group(1)), hi


def parse(changelog):
    lines = open(changelog, encoding="utf-8").read().split("\n")
    ops, domain, cur, section = [], None, None, None
    for i, line in enumerate(lines):
        m = re.match(r"## Version (\d+) of the (.*) operator set", line)
        if m:
            domain = DOMAINS.get(m.group(2))
            if domain is None:
                raise SystemExit(f"line {i + 1}: unknown operator set {m.group(2)}")
            continue
        m = re.match(r'### <a name="([^"]+)-(\d+)"></a>\*\*[^*]+\*\*( \(deprecated\))?', line)
        if m:
            name = m.group(1)
            if domain and name.startswith(domain + "."):
                name = name[len(domain) + 1:]
            cur = {"domain": domain, "op": name, "since": int(m.group(2)),
                   "deprecated": bool(m.group(3)), "attrs": [], "inputs": [], "outputs": [],
                   "types": {}, "in_head": "", "out_head": "", "where": f"line {i + 1}"}
            ops.append(cur)
            section = None
            continue
        if cur is None:
            continue
        if line.startswith("#### "):
            section = line[5:].split(" (")[0]
            if section == "Inputs":
                cur["in_head"] = line
            elif section == "Outputs":
                cur["out_head"] = line
            continue
        m = re.match(r"<dt><tt>(.+?)</tt>(.*)</dt>$", line)
        if not m:
            continue
        name, rest = html.unescape(m.group(1)), html.unescape(m.group(2))
        where = f"{changelog}:{i + 1}"
        if section == "Attributes":
            t = re.match(r" : ([a-z_ ]+?)(?: \((required|default is .*)\))?$", rest)
            if not t or t.group(1) not in ATTR_TYPES:
                raise SystemExit(f"{where}: cannot read attribute '{rest}'")
            code = ATTR_TYPES[t.group(1)]
            spec = t.group(2) or ""
            default = None
            if spec.startswith("default is "):
                default = scalar_default(code, spec[len("default is "):], where)
            cur["attrs"].append((name, code, spec == "required", default))
        elif section in ("Inputs", "Outputs"):
            t = re.match(r"(?: \(([^)]*)\))? : (.+)$", rest)
            if not t:
                raise SystemExit(f"{where}: cannot read formal parameter '{rest}'")
            flags = t.group(1) or ""
            tname = t.group(2).strip()
            if "(" in tname:  # a concrete type: its own constraint
                cur["types"].setdefault(tname, type_masks(tname, where))
            f = ("?" if "optional" in flags else "") + ("*" if "variadic" in flags else "") + (
                "~" if "heterogeneous" in flags else "")
            cur["inputs" if section == "Inputs" else "outputs"].append((name, tname, f))
        elif section == "Type Constraints":
            t = re.match(r" : (.+)$", rest)
            cur["types"][name] = type_masks(t.group(1), where)
    return ops


def encode(ops):
    out = []
    for o in ops:
        min_in, max_in = parse_count(o["in_head"], len(o["inputs"]))
        min_out, max_out = parse_count(o["out_head"], len(o["outputs"]))
        for name, tname, _ in o["inputs"] + o["outputs"]:
            if tname not in o["types"]:
                raise SystemExit(f"{o['where']}: {o['op']}: '{name}' has no type constraint {tname}")
        attrs = ",".join(
            f"{n}:{c}{'!' if r else ''}{'' if d is None else '=' + d}" for n, c, r, d in o["attrs"])
        ins = ",".join(f"{n}:{t}{f}" for n, t, f in o["inputs"])
        outs = ",".join(f"{n}:{t}{f}" for n, t, f in o["outputs"])
        types = ",".join(f"{n}=" + "/".join(f"{m:x}" for m in ms) for n, ms in o["types"].items())
        out.append("\t".join(str(x) for x in (
            o["domain"], o["op"], o["since"], int(o["deprecated"]), min_in, max_in, min_out,
            max_out, attrs, ins, outs, types)))
    return out


def render(rows):
    # Raw string pieces under 16 KiB each (a compiler limit on one literal elsewhere than gcc).
    body, chunk = [], []
    size = 0
    for r in rows:
        if size + len(r) > 15000:
            body.append('R"S(' + "\n".join(chunk) + '\n)S"')
            chunk, size = [], 0
        chunk.append(r)
        size += len(r) + 1
    body.append('R"S(' + "\n".join(chunk) + '\n)S"')
    return ("// Generated by tools/gen_op_schemas.py from the ONNX spec's Changelog.md: do not edit.\n"
            "// clang-format off\n" + "\n".join(body) + "\n// clang-format on\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--changelog", default=os.path.join(
        os.environ.get("ONNXFOLD_SHARED", os.path.join(ROOT, "..", "shared")), "onnx-spec",
        "Changelog.md"))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    text = render(encode(parse(args.changelog)))
    if args.check:
        same = os.path.exists(OUT) and open(OUT, encoding="utf-8").read() == text
        if not same:
            print(f"{OUT} is out of date: run tools/gen_op_schemas.py", file=sys.stderr)
        sys.exit(0 if same else 1)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"{OUT}: {len(text)} bytes")


if __name__ == "__main__":
    main()
