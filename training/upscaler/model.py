import torch
import torch.nn as nn


class CorrectionNet(nn.Module):
    """Luma in (N,1,H,W), 0..1; the correction out (N,1,sH,sW), to add to the Lanczos3 result.
    Plain 3x3 convolutions (1->C, six C->C, C->s*s) and a pixel shuffle: cheap per pixel on CPU."""

    def __init__(self, channels=32, depth=6, scale=2):
        super().__init__()
        layers = [nn.Conv2d(1, channels, 3, padding=1), nn.LeakyReLU(0.1)]
        for _ in range(depth):
            layers += [nn.Conv2d(channels, channels, 3, padding=1), nn.LeakyReLU(0.1)]
        layers += [nn.Conv2d(channels, scale * scale, 3, padding=1), nn.PixelShuffle(scale)]
        self.body = nn.Sequential(*layers)
        # start from "no correction"
        nn.init.zeros_(layers[-2].weight)
        nn.init.zeros_(layers[-2].bias)

    def forward(self, x):
        return self.body(x)


class UnshuffleNet(nn.Module):
    """x2 only, for video frames (issue 38 item 3): luma in (N,1,H,W), H and W even; the correction
    out (N,1,2H,2W). The convolutions run on 2x2 blocks of the input (pixel unshuffle: 4 channels at
    half the resolution each way) and the last gives each block's 4x4 output pixels (pixel shuffle by
    4): a quarter of CorrectionNet's positions, so about a fifth of its work for 4 inner layers."""

    def __init__(self, channels=32, depth=4):
        super().__init__()
        layers = [nn.PixelUnshuffle(2), nn.Conv2d(4, channels, 3, padding=1), nn.LeakyReLU(0.1)]
        for _ in range(depth):
            layers += [nn.Conv2d(channels, channels, 3, padding=1), nn.LeakyReLU(0.1)]
        layers += [nn.Conv2d(channels, 16, 3, padding=1), nn.PixelShuffle(4)]
        self.body = nn.Sequential(*layers)
        nn.init.zeros_(layers[-2].weight)
        nn.init.zeros_(layers[-2].bias)

    def forward(self, x):
        # odd sides (whole photos in the held-out measure): the last row / column repeated, then cut off
        h, w = x.shape[-2:]
        if h % 2 or w % 2:
            x = torch.nn.functional.pad(x, (0, w % 2, 0, h % 2), mode='replicate')
        return self.body(x)[..., :2 * h, :2 * w]


def make_net(arch, channels, depth, scale):
    if arch == 'unshuffle':
        assert scale == 2, 'the unshuffled network is x2 only'
        return UnshuffleNet(channels, depth)
    return CorrectionNet(channels, depth, scale)
