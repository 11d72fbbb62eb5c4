"""Int8 static quantisation of an exported upscaler (export.py's ONNX, x2 or x4) into a QDQ model.

    cd training/upscaler
    /usr/bin/python3 quantize.py ../../models/upscaler-x2.onnx /tmp/int8/upscaler-x2-int8.onnx
    # options: --act uint8|int8, --per-tensor (weights), --weight-bits 7|8, --percentile 99.99
    #          (activation ranges), --float-first (keep the first Conv float), --quantize-last (the
    #          last Conv is float by default), --input-scale-255, --patches 400 --patch 64 --seed 1

Calibration: the network branch (the Conv/LeakyRelu stack, initializers net.body.K.weight/bias)
is rebuilt in torch and run on input patches drawn as train.py draws them (training photos only,
../../../shared/datasets/sr/train, reduced the three ways, sometimes degraded; eval/ is never
used). Per tensor it records min/max (or a percentile of each tail). The output graph keeps every
node of the float model and adds QuantizeLinear/DequantizeLinear pairs (opset 13): activations per
tensor (uint8 or int8, asymmetric), weights int8 symmetric per output channel (axis 0) within +-63
(7 bits, --weight-bits; see the option), biases int32 with scale x_scale*w_scale, so that ONNX
Runtime's QDQ transformer fuses DQ->Conv->Q into QLinearConv and DQ->LeakyRelu->Q into
QLinearLeakyRelu. The Lanczos branch stays float and exact.
"""
import argparse, os, random, sys, time
import numpy as np
import onnx
from onnx import helper, numpy_helper
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import load_truths, make_pairs, batch  # noqa: E402


def net_nodes(graph):
    """The network branch in order: [(conv node, leaky node or None)], and the DepthToSpace."""
    inits = {i.name for i in graph.initializer}
    consumers = {}
    for n in graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    convs = [n for n in graph.node if n.op_type == 'Conv' and len(n.input) > 1 and n.input[1].startswith('net.body.') and n.input[1] in inits]
    layers = []
    for c in convs:
        nxt = consumers.get(c.output[0], [])
        leaky = nxt[0] if len(nxt) == 1 and nxt[0].op_type == 'LeakyRelu' else None
        layers.append((c, leaky))
    last_out = layers[-1][0].output[0]
    # the DepthToSpace after it (the video network adds its Lanczos3 base in between)
    after = consumers[last_out]
    if len(after) == 1 and after[0].op_type == 'Add':
        after = consumers[after[0].output[0]]
    assert len(after) == 1 and after[0].op_type == 'DepthToSpace', [n.op_type for n in after]
    return layers, after[0]


def unshuffled(layers, inits):
    """Whether the network runs on 2x2 blocks of the luma (model.py UnshuffleNet: 4 input channels)."""
    return inits[layers[0][0].input[1]].dims[1] == 4


def calibrate(layers, inits, args, scale):
    """Per activation tensor name: a sample of its values on training patches."""
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    truths = load_truths(args.data, args.folders.split(','), scale)
    truths = [t for i, t in enumerate(truths) if i % 16 != 7][::args.photo_step]
    pairs = make_pairs(truths, scale)
    print(f'calibrating on {len(truths)} photos x 3 reductions, {args.patches} patches of {args.patch}', flush=True)
    params = []
    for c, leaky in layers:
        w = torch.from_numpy(numpy_helper.to_array(inits[c.input[1]]).copy())
        b = torch.from_numpy(numpy_helper.to_array(inits[c.input[2]]).copy())
        alpha = None
        if leaky is not None:
            alpha = [a.f for a in leaky.attribute if a.name == 'alpha'][0]
        params.append((c, leaky, w, b, alpha))
    samples = {}
    keep = args.sample_per_batch

    def record(name, t):
        v = t.flatten().numpy()
        if v.size > keep:
            v = v[np.random.randint(0, v.size, keep)]
        samples.setdefault(name, []).append(v.copy())
        # exact extremes as well (the sample may miss them)
        samples.setdefault(name + '#ext', []).append(np.array([t.min().item(), t.max().item()], dtype=np.float32))

    done = 0
    with torch.no_grad():
        while done < args.patches:
            n = min(args.batch, args.patches - done)
            x, _ = batch(pairs, rng, n, args.patch, scale)
            h = F.pixel_unshuffle(x, 2) if unshuffled(layers, inits) else x
            record(layers[0][0].input[0], h)
            for c, leaky, w, b, alpha in params:
                h = F.conv2d(h, w, b, padding=1)
                record(c.output[0], h)
                if leaky is not None:
                    h = F.leaky_relu(h, alpha)
                    record(leaky.output[0], h)
            done += n
    return {k: np.concatenate(v) for k, v in samples.items()}


def act_params(values, ext, pct, dtype):
    if pct >= 100:
        lo, hi = float(ext.min()), float(ext.max())
    else:
        lo, hi = float(np.percentile(values, 100 - pct)), float(np.percentile(values, pct))
    lo, hi = min(lo, 0.0), max(hi, 0.0)  # zero must be exact (padding)
    qmin, qmax = (0, 255) if dtype == 'uint8' else (-128, 127)
    s = (hi - lo) / (qmax - qmin) or 1.0
    zp = int(round(qmin - lo / s))
    zp = max(qmin, min(qmax, zp))
    return np.float32(s), zp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('model')
    ap.add_argument('out')
    ap.add_argument('--data', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../../shared/datasets/sr/train'))
    ap.add_argument('--folders', default='urban100,t91,sunhays,mate')
    ap.add_argument('--act', default='uint8', choices=('uint8', 'int8'))
    ap.add_argument('--per-tensor', action='store_true', help='one weight scale per Conv instead of per output channel')
    ap.add_argument('--weight-bits', type=int, default=7, choices=(7, 8),
                    help='7: weights within +-63, so that x86 kernels without VNNI (AVX2 VPMADDUBSW, whose pairs of u8 x s8 products '
                         'add into a saturating int16) never saturate and every CPU computes the same output; 8: +-127')
    ap.add_argument('--percentile', type=float, default=100.0, help='activation range: this percentile of each tail (100: min/max)')
    ap.add_argument('--input-scale-255', action='store_true', help='quantise the luma input with scale 1/255, zero point 0')
    ap.add_argument('--float-first', action='store_true', help='keep the first Conv float')
    ap.add_argument('--quantize-last', action='store_true', help='quantise the last Conv too, and its output (the correction before DepthToSpace)')
    ap.add_argument('--patches', type=int, default=400)
    ap.add_argument('--patch', type=int, default=64)
    ap.add_argument('--batch', type=int, default=16)
    ap.add_argument('--photo-step', type=int, default=1, help='use every n-th training photo')
    ap.add_argument('--sample-per-batch', type=int, default=200000)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--threads', type=int, default=2)
    args = ap.parse_args()
    t0 = time.time()

    model = onnx.load(args.model)
    g = model.graph
    assert max(o.version for o in model.opset_import if o.domain in ('', 'ai.onnx')) >= 13, 'needs opset 13 (per-channel DequantizeLinear)'
    inits = {i.name: i for i in g.initializer}
    layers, d2s = net_nodes(g)
    scale = [a.i for a in d2s.attribute if a.name == 'blocksize'][0] // (2 if unshuffled(layers, inits) else 1)
    print(f'{len(layers)} convolutions, scale {scale}', flush=True)
    samples = calibrate(layers, inits, args, scale)

    new_inits, qparams = [], {}

    def const(name, arr):
        new_inits.append(numpy_helper.from_array(arr, name))
        return name

    def act_qparams(name):
        if name not in qparams:
            if args.input_scale_255 and name == layers[0][0].input[0]:
                s, zp = np.float32(1 / 255), (0 if args.act == 'uint8' else -128)
            else:
                s, zp = act_params(samples[name], samples[name + '#ext'], args.percentile, args.act)
            zarr = np.array(zp, dtype=np.uint8 if args.act == 'uint8' else np.int8)
            qparams[name] = (s, const(name + '_scale', np.array(s, dtype=np.float32)), const(name + '_zp', zarr))
        return qparams[name]

    qdq_nodes = []

    def qdq(name):
        """Q then DQ of tensor `name`; returns the name of the dequantised tensor."""
        _, sname, zname = act_qparams(name)
        qdq_nodes.append(helper.make_node('QuantizeLinear', [name, sname, zname], [name + '_q'], name=name + '_Q'))
        qdq_nodes.append(helper.make_node('DequantizeLinear', [name + '_q', sname, zname], [name + '_dq'], name=name + '_DQ'))
        return name + '_dq'

    report = []
    nconv = len(layers)
    wmax = 2 ** (args.weight_bits - 1) - 1  # the largest weight, either sign
    for k, (c, leaky) in enumerate(layers):
        quant = not ((k == 0 and args.float_first) or (k == nconv - 1 and not args.quantize_last))
        wname, bname = c.input[1], c.input[2]
        w = numpy_helper.to_array(inits[wname]).astype(np.float32)
        b = numpy_helper.to_array(inits[bname]).astype(np.float32)
        xin = c.input[0]
        if quant:
            xs, _, _ = act_qparams(xin)
            c.input[0] = qdq(xin)
            if args.per_tensor:
                ws = np.full(w.shape[0], np.abs(w).max() / wmax, dtype=np.float32)
            else:
                ws = (np.abs(w).reshape(w.shape[0], -1).max(1) / wmax).astype(np.float32)
            ws[ws == 0] = 1e-8
            wq = np.clip(np.round(w / ws[:, None, None, None]), -wmax, wmax).astype(np.int8)
            bs = (np.float32(xs) * ws).astype(np.float32)
            bq = np.round(b / bs).astype(np.int64)
            assert np.abs(bq).max() < 2**31
            const(wname + '_quantized', wq)
            const(wname + '_scale', ws)
            const(wname + '_zp', np.zeros(w.shape[0], dtype=np.int8))
            const(bname + '_quantized', bq.astype(np.int32))
            const(bname + '_scale', bs)
            const(bname + '_zp', np.zeros(w.shape[0], dtype=np.int32))
            qdq_nodes.append(helper.make_node('DequantizeLinear', [wname + '_quantized', wname + '_scale', wname + '_zp'], [wname + '_dq'], name=wname + '_DQ', axis=0))
            qdq_nodes.append(helper.make_node('DequantizeLinear', [bname + '_quantized', bname + '_scale', bname + '_zp'], [bname + '_dq'], name=bname + '_DQ', axis=0))
            c.input[1], c.input[2] = wname + '_dq', bname + '_dq'
            err = np.abs(wq.astype(np.float32) * ws[:, None, None, None] - w).max()
            report.append(f'conv {k}: {args.weight_bits}-bit weights (max error {err:.2e}), input scale {xs:.3e}')
            # the output: Q/DQ before its consumer (LeakyRelu, or DepthToSpace for the last)
            if leaky is not None:
                leaky.input[0] = qdq(c.output[0])
            else:
                assert d2s.input[0] == c.output[0], '--quantize-last needs the plain network'
                d2s.input[0] = qdq(c.output[0])
        else:
            report.append(f'conv {k}: float')
        # a LeakyRelu whose conv is quantised but whose next conv is float: quantise its output anyway
        # (so DQ->LeakyRelu->Q fuses); the float conv reads the DQ. (A quantised next conv does this itself.)
        if leaky is not None and quant and k + 1 < nconv:
            nxt_quant = not (k + 1 == nconv - 1 and not args.quantize_last)
            if not nxt_quant:
                layers[k + 1][0].input[0] = qdq(leaky.output[0])

    # the initializers replaced
    replaced = set()
    for c, _ in layers:
        if c.input[1].endswith('_dq'):
            replaced.add(c.input[1][:-3])
            replaced.add(c.input[2][:-3])
    keep_inits = [i for i in g.initializer if i.name not in replaced]
    del g.initializer[:]
    g.initializer.extend(keep_inits + new_inits)

    # insert the Q/DQ nodes before their consumers: rebuild the node list in topological order
    nodes = list(g.node) + qdq_nodes
    produced = {i.name for i in g.input} | {i.name for i in g.initializer} | {''}
    ordered, pending = [], nodes
    while pending:
        rest = []
        for n in pending:
            if all(i in produced for i in n.input):
                ordered.append(n)
                produced.update(n.output)
            else:
                rest.append(n)
        if len(rest) == len(pending):
            raise RuntimeError('cycle or missing input: ' + ', '.join(n.name or n.op_type for n in rest))
        pending = rest
    del g.node[:]
    g.node.extend(ordered)
    model.doc_string = ('int8 QDQ of ' + os.path.basename(args.model) + ': ' + ' '.join(sys.argv[3:])).strip()
    onnx.checker.check_model(model)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    onnx.save(model, args.out)
    for line in report:
        print(line)
    for name, (s, _, z) in qparams.items():
        zp = numpy_helper.to_array([i for i in new_inits if i.name == z][0])
        print(f'  {name}: scale {s:.4e} zp {int(zp)}')
    print(f'wrote {args.out} in {time.time() - t0:.0f} s')


if __name__ == '__main__':
    main()
