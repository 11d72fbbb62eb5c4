"""Writes trained weights as ONNX, plus a reference output for the project's test.

The graph takes luma (1,1,H,W), floats 0..1 (the image's BT.601 luma), and gives two outputs:
`correction` (1,1,sH,sW) for scale s (2, or 4 with --scale 4), to add to the service's centred Lanczos3 result, and `luma2x` (`luma4x`), the
Lanczos3 of the luma plus that correction (video frames take this one). With --zero the
correction is exactly 0 (the test that the learned path reproduces the Lanczos3 path)."""
import argparse, json, math
import numpy as np
import torch
import onnx
import torch.nn.functional as F
from lanczos import lanczos_up, unshuffled_x2_kernel
from model import make_net


class Exported(torch.nn.Module):
    def __init__(self, net, scale):
        super().__init__()
        self.net = net
        self.scale = scale

    def forward(self, x):
        c = self.net(x)
        return c, lanczos_up(x, self.scale) + c


class ExportedUnshuffle(torch.nn.Module):
    """The video network (model.py UnshuffleNet): the Lanczos3 base as one convolution over the
    same 2x2 blocks (lanczos.py unshuffled_x2_kernel), added before the pixel shuffle, so the
    graph makes one pass at full output size instead of the separable passes' six."""

    def __init__(self, net):
        super().__init__()
        self.net = net
        self.register_buffer('lanczos_blocks', unshuffled_x2_kernel())

    def forward(self, x):
        # luma2x alone: the video path asks for nothing else, and a second pixel shuffle of the
        # correction would cost ~5% of the run
        f = self.net.body[:-1](x)
        base = F.conv2d(F.pixel_unshuffle(F.pad(x, (4, 4, 4, 4), mode='replicate'), 2), self.lanczos_blocks)
        return F.pixel_shuffle(f + base, 4)


def reference_input():
    """A fixed 24x20 luma: gradients, an edge and a checker, so every layer has work."""
    y, x = np.mgrid[0:20, 0:24].astype(np.float32)
    v = 0.2 + 0.5 * x / 23 + 0.2 * (y > 9) + 0.08 * ((x.astype(int) // 3 + y.astype(int) // 3) % 2)
    v = np.round(v * 255) / 255
    return np.clip(v, 0, 1).astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('weights', nargs='?')
    ap.add_argument('out')
    ap.add_argument('--scale', type=int, default=2, choices=(2, 4))
    ap.add_argument('--arch', default='plain', choices=('plain', 'unshuffle'), help='unshuffle: the video network (x2, even sides)')
    ap.add_argument('--channels', type=int, default=32)
    ap.add_argument('--depth', type=int, default=6)
    ap.add_argument('--zero', action='store_true')
    ap.add_argument('--reference', help='write the reference output (JSON) here')
    args = ap.parse_args()
    net = make_net(args.arch, args.channels, args.depth, args.scale)
    if args.weights and not args.zero:
        net.load_state_dict(torch.load(args.weights))
    net.eval()
    model = ExportedUnshuffle(net) if args.arch == 'unshuffle' else Exported(net, args.scale)
    full_name = f'luma{args.scale}x'
    x = torch.zeros(1, 1, 64, 64)
    outputs = [full_name] if args.arch == 'unshuffle' else ['correction', full_name]
    torch.onnx.export(model, x, args.out, input_names=['luma'], output_names=outputs, opset_version=13,
                      dynamic_axes={'luma': {2: 'h', 3: 'w'}, **{name: {2: 'h2', 3: 'w2'} for name in outputs}})
    onnx.checker.check_model(onnx.load(args.out))
    if args.reference:
        inp = reference_input()
        with torch.no_grad():
            full = model(torch.from_numpy(inp)[None, None])
            if isinstance(full, tuple):
                full = full[1]
        with open(args.reference, 'w') as f:
            json.dump({'width': 24, 'height': 20,
                       'luma255': [int(v) for v in np.round(inp * 255).astype(int).ravel()],
                       full_name + '255': [int(v) for v in np.round(full.clamp(0, 1).numpy() * 255).astype(int).ravel()]}, f)
    print('wrote', args.out)


if __name__ == '__main__':
    main()
