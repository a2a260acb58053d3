#!/usr/bin/python3
"""CNN benchmark models: torchvision's resnet50 and convnext_tiny architectures with random (seeded)
weights, written directly with onnx.helper (no torch) the way torch.onnx.export(...,
do_constant_folding=False) writes them, so an optimizer has the usual work to do.

    /usr/bin/python3 make_cnn.py --arch resnet50 --out /tmp/resnet50.onnx          # ~102 MB
    /usr/bin/python3 make_cnn.py --arch convnext_tiny --out /tmp/convnext_tiny.onnx  # ~114 MB
    /usr/bin/python3 make_cnn.py --arch convnext_tiny --opset 14 --image 64 --out /tmp/c.onnx
    /usr/bin/python3 make_cnn.py --arch resnet50 --external-data --out /tmp/r.onnx  # + r.onnx.data

Input `input` float32 [batch, 3, image, image] -> output `output` float32 [batch, 1000] (static
shapes, as torch exports without dynamic_axes). Opsets 13 to 17 (17 is the newest that Debian's
python3-onnx 1.12 knows).

resnet50 (torchvision v1.5: the stride in the bottleneck's 3x3), 25,557,032 parameters:
  conv1 7x7/2 -> bn1 -> relu -> maxpool 3x3/2 pad 1; layer1..layer4 = [3, 4, 6, 3] bottlenecks of
  width 64..512, expansion 4 (conv1 1x1, conv2 3x3 with the stride, conv3 1x1, each + BN;
  downsample = 1x1 conv + BN on each stage's first block; Add, Relu); avgpool (GlobalAveragePool),
  Flatten, fc Gemm 2048 -> 1000 (transB=1). Every conv has no bias and is followed by an
  inference-mode BatchNormalization (epsilon 1e-5, momentum 0.9, training_mode 0) whose scale, B,
  running mean and running var are initializers. (torch's exporter folds BN into the conv in eval
  mode even without constant folding; keeping the BN nodes leaves that fold to the optimizer.)
convnext_tiny, 28,589,128 parameters:
  features.0: Conv 4x4/4 (96, bias) + LayerNorm2d; stages of depths [3, 3, 9, 3], dims
  [96, 192, 384, 768], between them LayerNorm2d + Conv 2x2/2 (bias). Block (CNBlock):
  depthwise Conv 7x7 pad 3 (group = dim, bias) -> Transpose to NHWC -> LayerNorm (eps 1e-6) ->
  Linear dim -> 4 dim -> GELU -> Linear 4 dim -> dim -> Transpose to NCHW -> Mul by layer_scale
  [dim, 1, 1] -> Add the block's input (stochastic depth is the identity at inference).
  Head: avgpool (GlobalAveragePool), classifier = LayerNorm2d, Flatten, Linear 768 -> 1000 (Gemm).
  LayerNorm2d is Transpose to NHWC, LayerNorm, Transpose back.
As torch exports them (TorchScript exporter, no constant folding):
  * Linear on a 4-D input: Transpose(weight) -> MatMul -> Add(bias, .); on a 2-D input: Gemm
    with transB=1.
  * LayerNorm: LayerNormalization(axis -1) at opset 17; below, ReduceMean, Sub, Pow(., Constant 2),
    ReduceMean, Add(., Constant eps), Sqrt, Div, Mul(weight), Add(bias).
  * GELU: Div(x, Constant sqrt 2), Erf, Add(., Constant 1), Mul(x, .), Mul(., Constant 0.5).
  * scalars as Constant nodes; node names are module scopes (/layer1/layer1.0/conv1/Conv,
    /features/features.1/features.1.0/block/block.3/MatMul; a module called again gets a _1 suffix:
    /layer1/layer1.0/relu_1/Relu), outputs <node name>_output_0, initializers the state_dict names
    (layer1.0.conv1.weight, layer1.0.bn1.running_var, features.1.0.layer_scale).
Weights: numpy default_rng([seed, crc32(name)]) per tensor, so each tensor depends only on the seed
and its name. Scaled so activations stay finite and non-trivial through the whole network: convs
He-normal (std sqrt(2 / fan_in), sqrt(1 / fan_in) when no ReLU follows), linears std
sqrt(1 / fan_in), BN scale 1 + 0.1 N (0.3 (1 + 0.1 N) for the last BN of a bottleneck, so the
residual stream grows slowly), bias / mean 0.05 N, var exp(0.2 N) > 0, LayerNorm weight 1 + 0.1 N,
bias 0.05 N, layer_scale 0.3 (1 + 0.2 N) (torchvision's 1e-6 would make every block nearly the
identity). Measured at 224 on a uniform [-1, 1) input: every residual stream's rms stays in 0.6-1.3,
logits std 0.6 (resnet50) and 1.0 (convnext_tiny).
The weights are inline in the .onnx (the whole model under protobuf's 2 GB), or with
--external-data (or when over 2 GB) in one file PATH.data next to it. Prints one JSON line: sizes,
parameter and node counts, the op histogram, timings.
"""
import argparse
import collections
import json
import math
import os
import sys
import time
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSETS = range(13, 18)
PROTOBUF_LIMIT = 2 * 1024**3 - 64 * 1024**2  # leave room for the graph itself


class Model:
    """Nodes named like torch's exporter (scope/op, then scope/op_1, ...; outputs <name>_output_0)
    and seeded initializers named like the state_dict."""

    def __init__(self, seed, opset):
        self.seed, self.opset = seed, opset
        self.nodes = []
        self.inits = []
        self.used = collections.Counter()
        self.params = 0     # trainable parameters (what torch's numel() sum counts)
        self.elements = 0   # all initializer elements (adds BN running stats)

    def _name(self, scope, op):
        base = f"{scope}/{op}"
        k = self.used[base]
        self.used[base] += 1
        return base if k == 0 else f"{base}_{k}"

    def op(self, scope, op, inputs, **attrs):
        name = self._name(scope, op)
        out = f"{name}_output_0"
        self.nodes.append(helper.make_node(op, list(inputs), [out], name=name, **attrs))
        return out

    def const(self, scope, value):
        """A float32 scalar Constant node (torch's wrapped numbers)."""
        name = self._name(scope, "Constant")
        out = f"{name}_output_0"
        t = numpy_helper.from_array(np.array(value, dtype=np.float32), out)
        self.nodes.append(helper.make_node("Constant", [], [out], name=name, value=t))
        return out

    def weight(self, name, shape, std=1.0, mean=0.0, kind="normal", trainable=True):
        """Initializer `name`: mean + std * N(0, 1), or exp(std * N(0, 1)) for kind 'lognormal'."""
        rng = np.random.default_rng([self.seed, zlib.crc32(name.encode())])
        a = rng.standard_normal(int(np.prod(shape)), dtype=np.float32)
        if kind == "lognormal":
            a = np.exp(a * np.float32(std))
        else:
            a *= np.float32(std)
            a += np.float32(mean)
        self.inits.append(numpy_helper.from_array(a.reshape(shape), name))
        n = a.size
        self.elements += n
        if trainable:
            self.params += n
        return name


def conv(m, scope, prefix, x, cin, cout, k, stride=1, pad=0, group=1, bias=False, gain=2.0):
    """nn.Conv2d: weight [cout, cin / group, k, k] (He-normal with `gain`), optional bias."""
    fan_in = cin // group * k * k
    inputs = [x, m.weight(prefix + ".weight", [cout, cin // group, k, k], math.sqrt(gain / fan_in))]
    if bias:
        inputs.append(m.weight(prefix + ".bias", [cout], 0.05))
    return m.op(scope, "Conv", inputs, dilations=[1, 1], group=group, kernel_shape=[k, k],
                pads=[pad] * 4, strides=[stride] * 2)


def batch_norm(m, scope, prefix, x, c, scale=1.0):
    """nn.BatchNorm2d in eval mode (running statistics), as opset 14+ torch exports it."""
    inputs = [x, m.weight(prefix + ".weight", [c], 0.1 * scale, scale),
              m.weight(prefix + ".bias", [c], 0.05),
              m.weight(prefix + ".running_mean", [c], 0.05, trainable=False),
              m.weight(prefix + ".running_var", [c], 0.2, kind="lognormal", trainable=False)]
    attrs = dict(epsilon=1e-5, momentum=0.9)
    if m.opset >= 14:
        attrs["training_mode"] = 0
    return m.op(scope, "BatchNormalization", inputs, **attrs)


def layer_norm(m, scope, prefix, x, c, eps):
    """F.layer_norm over the last axis: LayerNormalization, or its decomposition below opset 17."""
    w = m.weight(prefix + ".weight", [c], 0.1, 1.0)
    b = m.weight(prefix + ".bias", [c], 0.05)
    if m.opset >= 17:
        return m.op(scope, "LayerNormalization", [x, w, b], axis=-1, epsilon=eps)
    mean = m.op(scope, "ReduceMean", [x], axes=[-1])
    num = m.op(scope, "Sub", [x, mean])
    var = m.op(scope, "ReduceMean", [m.op(scope, "Pow", [num, m.const(scope, 2.0)])], axes=[-1])
    den = m.op(scope, "Sqrt", [m.op(scope, "Add", [var, m.const(scope, eps)])])
    y = m.op(scope, "Div", [num, den])
    return m.op(scope, "Add", [m.op(scope, "Mul", [y, w]), b])


def layer_norm_2d(m, scope, prefix, x, c, eps=1e-6):
    """torchvision's LayerNorm2d: permute to NHWC, layer_norm, permute back."""
    x = m.op(scope, "Transpose", [x], perm=[0, 2, 3, 1])
    x = layer_norm(m, scope, prefix, x, c, eps)
    return m.op(scope, "Transpose", [x], perm=[0, 3, 1, 2])


def linear_nd(m, scope, prefix, x, cin, cout):
    """nn.Linear on a rank > 2 input: Transpose(weight [out, in]) -> MatMul -> Add(bias, .)."""
    w = m.weight(prefix + ".weight", [cout, cin], math.sqrt(1.0 / cin))
    b = m.weight(prefix + ".bias", [cout], 0.05)
    wt = m.op(scope, "Transpose", [w], perm=[1, 0])
    return m.op(scope, "Add", [b, m.op(scope, "MatMul", [x, wt])])


def gemm(m, scope, prefix, x, cin, cout):
    """nn.Linear on a 2-D input: Gemm(x, weight [out, in], bias) with transB=1."""
    w = m.weight(prefix + ".weight", [cout, cin], math.sqrt(1.0 / cin))
    b = m.weight(prefix + ".bias", [cout], 0.05)
    return m.op(scope, "Gemm", [x, w, b], alpha=1.0, beta=1.0, transB=1)


def gelu(m, scope, x):
    """nn.GELU() (approximate='none') as torch exports it below opset 20."""
    erf = m.op(scope, "Erf", [m.op(scope, "Div", [x, m.const(scope, math.sqrt(2.0))])])
    one_plus = m.op(scope, "Add", [erf, m.const(scope, 1.0)])
    return m.op(scope, "Mul", [m.op(scope, "Mul", [x, one_plus]), m.const(scope, 0.5)])


def resnet50(m, x, classes=1000):
    x = conv(m, "/conv1", "conv1", x, 3, 64, 7, stride=2, pad=3)
    x = batch_norm(m, "/bn1", "bn1", x, 64)
    x = m.op("/relu", "Relu", [x])
    x = m.op("/maxpool", "MaxPool", [x], ceil_mode=0, kernel_shape=[3, 3], pads=[1, 1, 1, 1],
             strides=[2, 2])
    cin = 64
    for li, (blocks, width) in enumerate(zip([3, 4, 6, 3], [64, 128, 256, 512]), start=1):
        for bi in range(blocks):
            stride = 2 if bi == 0 and li > 1 else 1
            s, p = f"/layer{li}/layer{li}.{bi}", f"layer{li}.{bi}"
            cout = width * 4
            y = conv(m, s + "/conv1", p + ".conv1", x, cin, width, 1)
            y = m.op(s + "/relu", "Relu", [batch_norm(m, s + "/bn1", p + ".bn1", y, width)])
            y = conv(m, s + "/conv2", p + ".conv2", y, width, width, 3, stride=stride, pad=1)
            y = m.op(s + "/relu_1", "Relu", [batch_norm(m, s + "/bn2", p + ".bn2", y, width)])
            y = conv(m, s + "/conv3", p + ".conv3", y, width, cout, 1, gain=1.0)
            y = batch_norm(m, s + "/bn3", p + ".bn3", y, cout, scale=0.3)
            if bi == 0:
                sd, pd = s + "/downsample", p + ".downsample"
                x = conv(m, sd + "/downsample.0", pd + ".0", x, cin, cout, 1, stride=stride,
                         gain=1.0)
                x = batch_norm(m, sd + "/downsample.1", pd + ".1", x, cout)
            x = m.op(s + "/relu_2", "Relu", [m.op(s, "Add", [y, x])])
            cin = cout
    x = m.op("/avgpool", "GlobalAveragePool", [x])
    x = m.op("", "Flatten", [x], axis=1)
    return gemm(m, "/fc", "fc", x, 2048, classes)


def convnext_tiny(m, x, classes=1000):
    depths, dims = [3, 3, 9, 3], [96, 192, 384, 768]
    x = conv(m, "/features/features.0/features.0.0", "features.0.0", x, 3, dims[0], 4, stride=4,
             bias=True, gain=1.0)
    x = layer_norm_2d(m, "/features/features.0/features.0.1", "features.0.1", x, dims[0])
    for si, (depth, dim) in enumerate(zip(depths, dims)):
        if si > 0:  # downsampling: features.{2 si}
            f = 2 * si
            s, p = f"/features/features.{f}", f"features.{f}"
            x = layer_norm_2d(m, f"{s}/{p}.0", p + ".0", x, dims[si - 1])
            x = conv(m, f"{s}/{p}.1", p + ".1", x, dims[si - 1], dim, 2, stride=2, bias=True,
                     gain=1.0)
        f = 2 * si + 1
        for bi in range(depth):
            s, p = f"/features/features.{f}/features.{f}.{bi}", f"features.{f}.{bi}"
            sb, pb = s + "/block", p + ".block"
            y = conv(m, sb + "/block.0", pb + ".0", x, dim, dim, 7, pad=3, group=dim, bias=True,
                     gain=1.0)
            y = m.op(sb + "/block.1", "Transpose", [y], perm=[0, 2, 3, 1])
            y = layer_norm(m, sb + "/block.2", pb + ".2", y, dim, 1e-6)
            y = linear_nd(m, sb + "/block.3", pb + ".3", y, dim, 4 * dim)
            y = gelu(m, sb + "/block.4", y)
            y = linear_nd(m, sb + "/block.5", pb + ".5", y, 4 * dim, dim)
            y = m.op(sb + "/block.6", "Transpose", [y], perm=[0, 3, 1, 2])
            gamma = m.weight(p + ".layer_scale", [dim, 1, 1], 0.06, 0.3)
            y = m.op(s, "Mul", [gamma, y])
            x = m.op(s, "Add", [y, x])
    x = m.op("/avgpool", "GlobalAveragePool", [x])
    x = layer_norm_2d(m, "/classifier/classifier.0", "classifier.0", x, dims[-1])
    x = m.op("/classifier/classifier.1", "Flatten", [x], axis=1)
    return gemm(m, "/classifier/classifier.2", "classifier.2", x, dims[-1], classes)


ARCHS = {"resnet50": resnet50, "convnext_tiny": convnext_tiny}


def build(arch, seed, opset, batch, image, classes=1000):
    m = Model(seed, opset)
    ARCHS[arch](m, "input", classes)
    m.nodes[-1].output[0] = "output"  # torch names the graph output after output_names
    inp = helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, image, image])
    out = helper.make_tensor_value_info("output", TensorProto.FLOAT, [batch, classes])
    graph = helper.make_graph(m.nodes, f"{arch}", [inp], [out], initializer=m.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="make_cnn.py", producer_version="1")
    model.ir_version = 8
    model.doc_string = (f"torchvision {arch} architecture, random weights (seed {seed}), "
                        f"{m.params:,} parameters, exported-by-torch form without constant folding")
    cfg = dict(arch=arch, seed=seed, opset=opset, batch=batch, image=image, classes=classes,
               params=m.params)
    e = model.metadata_props.add()
    e.key, e.value = "cnn_config", json.dumps(cfg, sort_keys=True)
    return model, m


def check(path):
    """onnx.checker.check_model(path, full_check=True) without its side effect: python3-onnx 1.12's
    full check runs infer_shapes_path(path), which writes the inferred model (value_info for every
    tensor) back over the file. Same checks: the checker on the file, then strict, type-checking
    shape inference on the graph (the weights are not needed for it)."""
    onnx.checker.check_model(path)
    model = onnx.load(path, load_external_data=False)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", choices=sorted(ARCHS), required=True)
    ap.add_argument("--out", required=True, help="model path (with --external-data, the weights go "
                    "to OUT.data)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--opset", type=int, default=17, choices=OPSETS)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--image", type=int, default=224, help="input height and width")
    ap.add_argument("--external-data", action="store_true",
                    help="weights in OUT.data (default: inline, unless over 2 GB)")
    ap.add_argument("--check", action="store_true",
                    help="after writing, check_model(OUT, full_check=True)'s checks")
    a = ap.parse_args()
    if a.batch < 1 or a.image < 32:
        sys.exit("make_cnn.py: --batch must be >= 1 and --image >= 32 (five stride-2 stages)")

    t0 = time.perf_counter()
    model, m = build(a.arch, a.seed, a.opset, a.batch, a.image)
    t_build = time.perf_counter() - t0
    out = os.path.abspath(a.out)
    data_path = out + ".data"
    os.makedirs(os.path.dirname(out), exist_ok=True)
    for p in (out, data_path):
        if os.path.exists(p):
            os.remove(p)
    weight_bytes = sum(len(t.raw_data) for t in m.inits)
    external = a.external_data or weight_bytes > PROTOBUF_LIMIT
    if external:
        onnx.save_model(model, out, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=os.path.basename(data_path), size_threshold=1024)
    else:
        with open(out, "wb") as f:
            f.write(model.SerializeToString())
    t_write = time.perf_counter() - t0 - t_build
    t_check = None
    if a.check:
        t1 = time.perf_counter()
        check(out)
        t_check = round(time.perf_counter() - t1, 2)
    ops = collections.Counter(n.op_type for n in m.nodes)
    res = {"out": out, "arch": a.arch, "opset": a.opset, "input": [a.batch, 3, a.image, a.image],
           "onnx_bytes": os.path.getsize(out),
           "data_bytes": os.path.getsize(data_path) if external else 0,
           "params": m.params, "initializer_elements": m.elements, "initializers": len(m.inits),
           "nodes": len(m.nodes), "ops": dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))),
           "s_build": round(t_build, 2), "s_write": round(t_write, 2), "s_check": t_check}
    print(json.dumps(res))


if __name__ == "__main__":
    main()
