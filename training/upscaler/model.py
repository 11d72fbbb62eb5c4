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
