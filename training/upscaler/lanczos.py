"""The service's centred Lanczos3 upscale by an integer factor (src/tools/image/lanczos.ts) in
torch, edges replicated, so the network learns only the correction to what the service computes."""
import math
import torch
import torch.nn.functional as F


def _lanczos3(x):
    if x == 0:
        return 1.0
    if abs(x) >= 3:
        return 0.0
    px = math.pi * x
    return 3 * math.sin(px) * math.sin(px / 3) / (px * px)


def phase_weights(scale):
    """Per output phase p (output s*i + p sits at input i + f, f = (p + 0.5) / s - 0.5), the
    normalised Lanczos3 weights of input offsets -3 ... +3."""
    rows = []
    for p in range(scale):
        f = (p + 0.5) / scale - 0.5
        w = [_lanczos3(d - f) for d in range(-3, 4)]
        s = sum(w)
        rows.append([v / s for v in w])
    return torch.tensor(rows, dtype=torch.float32)


def even_weights():
    """The x2 even phase's six weights, offsets -3 ... +2 (what lanczos.ts calls evenPhaseWeights)."""
    return phase_weights(2)[0, :6].tolist()


_KERNELS = {}


def _kernel(scale):
    if scale not in _KERNELS:
        _KERNELS[scale] = phase_weights(scale)
    return _KERNELS[scale]


def _pass(x, dim, scale):
    """Multiplies x (N,1,H,W) by scale along dim 3 (width) or 2 (height)."""
    if dim == 2:
        return _pass(x.transpose(2, 3), 3, scale).transpose(2, 3)
    n, c, h, w = x.shape
    xp = F.pad(x, (3, 3, 0, 0), mode='replicate')
    k = _kernel(scale)
    y = F.conv2d(xp, k.view(scale, 1, 1, 7).to(x.dtype))  # (N,s,H,W): one plane per phase
    return y.permute(0, 2, 3, 1).reshape(n, 1, h, w * scale)


def lanczos_up(x, scale):
    return _pass(_pass(x, 3, scale), 2, scale)


def lanczos2x(x):
    return lanczos_up(x, 2)


def unshuffled_x2_kernel():
    """lanczos_up(x, 2) as one 5x5 convolution over x's 2x2 blocks (pixel unshuffle by 2: channel
    2a + b is pixel (2Y + a, 2X + b)) giving each block's 4x4 output pixels (channel 4i + j is
    output pixel (4Y + i, 4X + j), for a pixel shuffle by 4). Applied to x padded by 4 pixels
    (replicated) without further padding, it is lanczos_up exactly, borders included: the two
    passes' replicated edges are the 2-D replicated edge."""
    k = phase_weights(2)  # output 2s + p from inputs s - 3 ... s + 3

    def w1(o, src):
        """Weight of input `src` in output `o` along one axis."""
        s, p = divmod(o, 2)
        d = src - s
        return float(k[p, d + 3]) if -3 <= d <= 3 else 0.0

    kern = torch.zeros(16, 4, 5, 5)
    for i in range(4):
        for j in range(4):
            for a in range(2):
                for b in range(2):
                    for dy in range(-2, 3):
                        for dx in range(-2, 3):
                            # output (4Y+i, 4X+j) with Y = X = 0; input (2dy + a, 2dx + b)
                            kern[4 * i + j, 2 * a + b, dy + 2, dx + 2] = w1(i, 2 * dy + a) * w1(j, 2 * dx + b)
    return kern


def lanczos2x_unshuffled(x):
    """lanczos_up(x, 2) through unshuffled_x2_kernel(), as the video network's graph computes it
    (before the pixel shuffle): (N,16,H/2,W/2)."""
    xp = F.pad(x, (4, 4, 4, 4), mode='replicate')
    return F.conv2d(F.pixel_unshuffle(xp, 2), unshuffled_x2_kernel().to(x.dtype))
