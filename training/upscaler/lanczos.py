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
