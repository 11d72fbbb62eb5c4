"""The service's centred Lanczos3 x2 (src/tools/image/lanczos.ts) in torch, edges replicated,
so the network learns only the correction to what the service already computes."""
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


def even_weights():
    w = [_lanczos3(t - 3 + 0.25) for t in range(6)]
    s = sum(w)
    return [v / s for v in w]


_EVEN = torch.tensor(even_weights(), dtype=torch.float32)
# even output 2i takes input offsets -3..+2; odd output 2i+1 the mirror, offsets -2..+3:
# both as 7-tap kernels over offsets -3..+3
_K = torch.stack([torch.cat([_EVEN, torch.zeros(1)]), torch.cat([torch.zeros(1), _EVEN.flip(0)])])


def _pass(x, dim):
    """Doubles x (N,1,H,W) along dim 3 (width) or 2 (height)."""
    if dim == 2:
        return _pass(x.transpose(2, 3), 3).transpose(2, 3)
    n, c, h, w = x.shape
    xp = F.pad(x, (3, 3, 0, 0), mode='replicate')
    y = F.conv2d(xp, _K.view(2, 1, 1, 7).to(x.dtype))  # (N,2,H,W): even, odd
    return y.permute(0, 2, 3, 1).reshape(n, 1, h, w * 2)


def lanczos2x(x):
    return _pass(_pass(x, 3), 2)
