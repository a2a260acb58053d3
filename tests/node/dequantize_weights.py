"""The float model a weight-quantized model stands for: every com.microsoft MatMulNBits becomes
MatMul(A, W), every GatherBlockQuantized Gather(table) and every DequantizeLinear of constants becomes its float value, with W decoded here
from the stored bytes (numpy; independent of onnxfold's packer and kernels).

usage: dequantize_weights.py IN.onnx OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def nibbles(raw, count):
    b = np.frombuffer(raw, dtype=np.uint8)
    out = np.empty(b.size * 2, dtype=np.uint8)
    out[0::2] = b & 0x0F
    out[1::2] = b >> 4
    return out[:count]


def tensor_values(t, count=None):
    if t.data_type == 22:  # INT4
        u = nibbles(t.raw_data, count).astype(np.int16)
        return np.where(u >= 8, u - 16, u).astype(np.float64)
    if t.data_type == 21:  # UINT4
        return nibbles(t.raw_data, count).astype(np.float64)
    return numpy_helper.to_array(t).astype(np.float64)


def main(src, dst):
    m = onnx.load(src)
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    nodes = []
    added = []
    for n in g.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        if n.op_type == "MatMulNBits" and n.domain == "com.microsoft":
            k, nn, bs = attrs["K"], attrs["N"], attrs["block_size"]
            assert attrs["bits"] == 4
            blocks = (k + bs - 1) // bs
            q = nibbles(inits[n.input[1]].raw_data, nn * blocks * bs).reshape(nn, blocks * bs)
            s = numpy_helper.to_array(inits[n.input[2]]).astype(np.float64).reshape(nn, blocks)
            if len(n.input) > 3 and n.input[3]:
                z = nibbles(inits[n.input[3]].raw_data, nn * ((blocks + 1) // 2) * 2)
                z = z.reshape(nn, -1)[:, :blocks]
            else:
                z = np.full((nn, blocks), 8)
            w = (q.astype(np.float64) - np.repeat(z, bs, axis=1)) * np.repeat(s, bs, axis=1)
            w = w[:, :k].T.astype(np.float32)  # [K, N]
            name = n.input[1] + "_dequantized"
            added.append(numpy_helper.from_array(w, name))
            nodes.append(helper.make_node("MatMul", [n.input[0], name], list(n.output), name=n.name))
            continue
        if n.op_type == "GatherBlockQuantized" and n.domain == "com.microsoft":
            assert attrs.get("bits", 4) == 4 and attrs.get("gather_axis", 0) == 0
            assert attrs.get("quantize_axis", 1) == 1
            bs = attrs["block_size"]
            s = numpy_helper.to_array(inits[n.input[2]]).astype(np.float64)  # [V, blocks]
            v, blocks = s.shape
            h = blocks * bs
            q = nibbles(inits[n.input[0]].raw_data, v * h).reshape(v, h).astype(np.float64)
            if len(n.input) > 3 and n.input[3]:
                z = nibbles(inits[n.input[3]].raw_data, v * ((blocks + 1) // 2) * 2)
                z = z.reshape(v, -1)[:, :blocks]
            else:
                z = np.full((v, blocks), 8)
            w = (q - np.repeat(z, bs, axis=1)) * np.repeat(s, bs, axis=1)
            name = n.input[0] + "_dequantized"
            added.append(numpy_helper.from_array(w.astype(np.float32), name))
            nodes.append(helper.make_node("Gather", [name, n.input[1]], list(n.output), name=n.name, axis=0))
            continue
        if n.op_type == "DequantizeLinear" and all(i in inits for i in n.input if i):
            x = inits[n.input[0]]
            dims = list(x.dims)
            q = tensor_values(x, int(np.prod(dims))).reshape(dims)
            s = numpy_helper.to_array(inits[n.input[1]]).astype(np.float64)
            z = tensor_values(inits[n.input[2]], s.size).reshape(s.shape) if len(n.input) > 2 and n.input[2] else np.zeros(s.shape)
            axis = attrs.get("axis", 1)
            bs = attrs.get("block_size", 0)
            if s.ndim == 0:
                w = (q - z) * s
            elif bs:
                s = np.repeat(s, bs, axis=axis).take(range(dims[axis]), axis=axis)
                z = np.repeat(z, bs, axis=axis).take(range(dims[axis]), axis=axis)
                w = (q - z) * s
            else:
                shape = [1] * len(dims)
                shape[axis] = dims[axis]
                w = (q - z.reshape(shape)) * s.reshape(shape)
            added.append(numpy_helper.from_array(w.astype(np.float32), n.output[0]))
            continue
        nodes.append(n)
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend(added)
    onnx.save(m, dst)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
